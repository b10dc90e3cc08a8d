#!/usr/bin/env bash
# Paired A/B timing of a change, before pushing or in CI: builds the merge base of BASE_REF and
# HEAD, and HEAD, each in its own git worktree and build directory (bench targets only), then runs
# the quick suite of every bench binary of both, interleaved block by block (A B, B A, ...), and
# compares them (flopscope-analysis ab: U test over 9 repetitions a side; a slowdown beyond 10%
# fails, exit 1).
#   scripts/ab.sh BASE_REF            # the whole quick suite (27 min on the loaded 2-core VM)
#   scripts/ab.sh BASE_REF FILTER     # the cases whose names FILTER (a regex) finds, e.g. '^copy/'
# A merge base that does not build, or has no case of the suite, is a named skip (exit 0): not
# the change's fault. HEAD that does not build fails (exit 1). FLOPSCOPE_AB_MARKDOWN=FILE also
# writes the Markdown (CI's pull request comment), FLOPSCOPE_AB_DIR keeps the worktrees and runs,
# FLOPSCOPE_AB_FULL names where the full comparison is when the Markdown is cut; FLOPSCOPE_AB_KEEP=1
# keeps the two worktrees, so that `flopscope-analysis ab --a DIR/base/build --b DIR/head/build`
# can pair them again without building.
set -euo pipefail
cd "$(dirname "$0")/.."
base_ref=${1:?usage: scripts/ab.sh BASE_REF [FILTER]}
filter=${2:-.}
skip() {  # a named skip: one line, in the Markdown too, exit 0
  echo "ab: skipped: $1"
  if [[ -n ${FLOPSCOPE_AB_MARKDOWN:-} ]]; then echo "*Paired timing skipped: $1.*" >"$FLOPSCOPE_AB_MARKDOWN"; fi
  exit 0
}
git rev-parse --verify --quiet "$base_ref^{commit}" >/dev/null || { echo "ab: $base_ref is not a commit here" >&2; exit 2; }
base=$(git merge-base "$base_ref" HEAD) || skip "no merge base of $base_ref and HEAD"
work=${FLOPSCOPE_AB_DIR:-$(mktemp -d -t flopscope-ab.XXXXXX)}
mkdir -p "$work"
build_one() {  # $1: a commit, $2: its worktree; the bench_* targets of its build
  git worktree add --detach --force "$2" "$1" >/dev/null 2>&1 || return 1
  # shellcheck disable=SC2086  # FLOPSCOPE_CMAKE_ARGS is a list of flags
  cmake -S "$2" -B "$2/build" -DCMAKE_BUILD_TYPE=Release ${FLOPSCOPE_CMAKE_ARGS:-} >"$2.build.log" 2>&1 || return 1
  local targets
  mapfile -t targets < <(cmake --build "$2/build" --target help | sed -n 's/^\.\.\. \(bench_[A-Za-z0-9_]*\).*/\1/p')
  ((${#targets[@]})) || return 1
  cmake --build "$2/build" -j "$(nproc)" --target "${targets[@]}" >>"$2.build.log" 2>&1
}
[[ -n ${FLOPSCOPE_AB_KEEP:-} ]] || trap 'git worktree remove --force "$work/base" 2>/dev/null || true; git worktree remove --force "$work/head" 2>/dev/null || true' EXIT
start=$SECONDS
build_one "$base" "$work/base" || skip "the merge base ${base:0:10} does not build (log: $work/base.build.log)"
build_one HEAD "$work/head" || { tail -n 20 "$work/head.build.log"; echo "ab: HEAD does not build (log: $work/head.build.log)" >&2; exit 1; }
echo "ab: built the merge base ${base:0:10} and HEAD in $((SECONDS - start)) s"
start=$SECONDS
status=0
PYTHONPATH="$PWD/analysis${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m flopscope_analysis ab --a "$work/base/build" --b "$work/head/build" --filter "$filter" \
  --out "$work/runs" ${FLOPSCOPE_AB_MARKDOWN:+--markdown "$FLOPSCOPE_AB_MARKDOWN"} \
  ${FLOPSCOPE_AB_LIMIT:+--markdown-limit "$FLOPSCOPE_AB_LIMIT"} ${FLOPSCOPE_AB_FULL:+--full "$FLOPSCOPE_AB_FULL"} || status=$?
echo "ab: paired runs and comparison in $((SECONDS - start)) s"
exit "$status"
