#!/usr/bin/env bash
# Paired A/B timing of a change: builds the merge base of BASE_REF and HEAD, and HEAD, each in
# its own git worktree and build directory, then runs the chosen bench binary's cases of both
# interleaved (A B, B A, ...) and compares them (flopscope-analysis ab: U test over 9 repetitions
# a side; a slowdown beyond 10% fails, exit 1).
#   scripts/ab.sh BASE_REF [BINARY (default bench_copy)] [FILTER (default: every case)]
# Keep it small on a shared machine: one binary and a filter (matched against names without
# /real_time, e.g. 'copy/[^/]+/f32/cpu/n=(4096|65536)'); each run of a case costs the binary's
# start-up (about 7 s here: the clock measurement), so 2 cases take about 90 s.
set -euo pipefail
cd "$(dirname "$0")/.."
base_ref=${1:?usage: scripts/ab.sh BASE_REF [BINARY] [FILTER]}
binary=${2:-bench_copy}
filter=${3:-.}
base=$(git merge-base "$base_ref" HEAD) || { echo "ab: no merge base of $base_ref and HEAD" >&2; exit 2; }
work=${FLOPSCOPE_AB_DIR:-$(mktemp -d -t flopscope-ab.XXXXXX)}
build_one() {  # $1: a commit, $2: its worktree
  git worktree add --detach --force "$2" "$1" >/dev/null
  # shellcheck disable=SC2086,SC2015  # FLOPSCOPE_CMAKE_ARGS is a list of flags; either failing is the error
  cmake -S "$2" -B "$2/build" -DCMAKE_BUILD_TYPE=Release ${FLOPSCOPE_CMAKE_ARGS:-} >"$2.cmake.log" 2>&1 \
    && cmake --build "$2/build" --target "$binary" -j "$(nproc)" >"$2.build.log" 2>&1 \
    || { echo "ab: $1 does not build (log: $2.build.log)" >&2; return 1; }
}
trap 'git worktree remove --force "$work/base" 2>/dev/null || true; git worktree remove --force "$work/head" 2>/dev/null || true' EXIT
build_one "$base" "$work/base" || exit 2
build_one HEAD "$work/head" || exit 2
find_binary() { find "$1/build" -name "$binary" -type f -perm -u+x | head -n 1; }
.venv/bin/python -m flopscope_analysis ab --a "$(find_binary "$work/base")" --b "$(find_binary "$work/head")" \
  --filter "$filter" --out "$work/runs" ${FLOPSCOPE_AB_MARKDOWN:+--markdown "$FLOPSCOPE_AB_MARKDOWN"}
