#!/usr/bin/env bash
# The README's two recipes ("Adding a variant, adding a family"), checked by doing them: a build of
# its own (build-recipes/, CUDA off, -DFLOPSCOPE_THROWAWAY=ON) compiles one more row into the CPU
# copy table (kernels/cpu/copy.cpp, under #ifdef) and one more family (tests/throwaway/), and this
# script finds both, with nothing else edited, in:
#   - BINARY --describe (the variant and its role; the family and its axes),
#   - --suite=quick's cases (--benchmark_list_tests),
#   - the report of a quick run of those binaries (scripts/run_suite.py --quick --only ...), the
#     family in its generic table,
#   - flopscope-analysis compare of that run against itself.
# Usage: scripts/recipes_check.sh [BUILD_DIR] (default build-recipes); KEEP=1 keeps the run directory.
# Exit 0: found everywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-recipes}
python=.venv/bin/python
start=$SECONDS
fail() { echo "recipes_check: $*" >&2; exit 1; }

# Through ccache where there is one (the workflow installs it; setup.sh does not: without it, none).
launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLOPSCOPE_CUDA=OFF -DFLOPSCOPE_TESTS=OFF -DFLOPSCOPE_MPI=OFF \
  -DFLOPSCOPE_THROWAWAY=ON "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_copy bench_throwaway >/dev/null

# The new row and the new family, as the binaries describe themselves (their names come from the
# rows: this script reads them from there, as every other tool does).
variant=$(grep -A1 '^#ifdef FLOPSCOPE_THROWAWAY_VARIANT' kernels/cpu/copy.cpp | grep -oE '\{"[a-z0-9_]+"' | tr -d '{"')
[[ -n $variant ]] || fail "no throwaway row under #ifdef FLOPSCOPE_THROWAWAY_VARIANT in kernels/cpu/copy.cpp"
"$build/bench/bench_copy" --describe | "$python" -c '
import json, sys
doc, name = json.load(sys.stdin), sys.argv[1]
rows = [v for v in doc["variants"] if v["name"] == name]
assert rows and rows[0]["role"] == "own" and rows[0]["dtypes"], f"--describe: {name} missing or without role/dtypes"
' "$variant" || fail "bench_copy --describe does not list $variant"
"$build/bench/bench_throwaway" --describe | "$python" -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["family"] == "throwaway" and doc["axes"][0]["flag"] == "--sizes" and doc["variants"], doc
' || fail "bench_throwaway --describe does not describe its family"

"$build/bench/bench_copy" --suite=quick --benchmark_list_tests | grep -q "^copy/$variant/" \
  || fail "bench_copy --suite=quick selects no case of $variant"
"$build/bench/bench_throwaway" --suite=quick --benchmark_list_tests | grep -q '^throwaway/' \
  || fail "bench_throwaway --suite=quick selects no case"

runs=$(mktemp -d)
trap '[[ ${KEEP:-} ]] || rm -rf "$runs"' EXIT
FLOPSCOPE_WARMUP_S=0.05 FLOPSCOPE_BUILD_DIR=$build "$python" scripts/run_suite.py --quick --build-dir "$build" \
  --runs-dir "$runs" --only bench_copy,bench_throwaway >"$runs/log" 2>&1 || { cat "$runs/log"; fail "the quick run failed"; }
run=$(find "$runs" -mindepth 1 -maxdepth 1 -type d | head -n 1)
grep -q "^| $variant | f32 |" "$run/report.md" || fail "$run/report.md has no row of $variant"
grep -q '^### throwaway on cpu' "$run/report.md" || fail "$run/report.md has no table of the throwaway family"
PYTHONPATH=analysis "$python" -m flopscope_analysis compare "$run" "$run" --all --no-timing-gate >"$runs/compare.txt" \
  || fail "compare of the run against itself failed"
grep -q "copy/$variant/" "$runs/compare.txt" || fail "compare's output does not name copy/$variant/"
grep -q 'throwaway/' "$runs/compare.txt" || fail "compare's output has no case of the throwaway family"
echo "recipes_check: variant $variant and family throwaway found in --describe, --suite=quick, the report and compare ($((SECONDS - start)) s)"
