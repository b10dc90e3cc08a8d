#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang-14, ASan + UBSan, every report halts) in
# build-fuzz/ and runs each for a bounded time, starting from its committed seed corpus and
# dictionary. What a run learns stays in build-fuzz/corpus/ (not committed). An input that
# crashes a target or fails one of its checks is saved as fuzz/regressions/<target>/crash-<hash>
# (or timeout-, oom-): commit it with the fix; ctest replays it in every build from then on.
#   scripts/fuzz.sh [target...]          every target in fuzz/CMakeLists.txt when none are named
#   FLOPSCOPE_FUZZ_SECONDS  seconds per target (default 60)
#   FLOPSCOPE_FUZZ_JOBS     targets run side by side (default: the number of cores)
# Exit status: 0 when every target ran clean, 1 when one found something (the summary says which).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh --fuzz --packages-only

seconds=${FLOPSCOPE_FUZZ_SECONDS:-60}
jobs=${FLOPSCOPE_FUZZ_JOBS:-$(nproc)}
build=build-fuzz  # CMakePresets.json's "fuzz" preset
[[ -f $build/CMakeCache.txt ]] || cmake --preset fuzz >/dev/null
echo "flopscope fuzz: building in $build/"
if ! cmake --build --preset fuzz -j "$(nproc)" >"$build/build.log" 2>&1; then
  grep -E -A5 'error' "$build/build.log" | head -n 60
  echo "flopscope fuzz: the build failed (log: $build/build.log)" >&2
  exit 1
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(sed -n 's/^flopscope_fuzz(\([a-z_]*\).*/\1/p' fuzz/CMakeLists.txt)
fi
mkdir -p "$build/logs"
run_one() {  # target: runs it, prints one summary line, exits 1 when it found something
  local target=$1 found=fuzz/regressions/$1
  mkdir -p "$build/corpus/$target" "$found"
  local dict=() status=0
  [[ -f fuzz/$target.dict ]] && dict=(-dict="fuzz/$target.dict")
  "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=512 \
      -print_final_stats=1 -artifact_prefix="$found/" "${dict[@]}" \
      "$build/corpus/$target" "fuzz/corpus/$target" >"$build/logs/$target.log" 2>&1 || status=$?
  rmdir "$found" 2>/dev/null || true  # nothing found: no empty folder left behind
  local runs coverage
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/logs/$target.log" | tail -n 1)
  coverage=$(grep -o 'cov: [0-9]*' "$build/logs/$target.log" | tail -n 1)
  if ((status == 0)); then
    echo "fuzz_$target: clean, ${runs:-?} runs in ${seconds} s, ${coverage:-cov: ?} edges"
  else
    echo "fuzz_$target: FOUND SOMETHING (exit $status): $(ls "$found" 2>/dev/null | tr '\n' ' ')(log: $build/logs/$target.log)"
    grep -m 3 -E 'ERROR|FUZZ_CHECK|runtime error|terminate called' "$build/logs/$target.log" | sed 's/^/    /'
    return 1
  fi
}
export -f run_one
export build seconds
echo "flopscope fuzz: ${#targets[@]} targets, ${seconds} s each, $jobs at a time"
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' && exit 0
echo "flopscope fuzz: inputs that failed are in fuzz/regressions/ (replay one: $build/fuzz/fuzz_<target> <file>)"
exit 1
