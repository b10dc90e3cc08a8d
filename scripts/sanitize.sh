#!/usr/bin/env bash
# The whole ctest suite under AddressSanitizer and UndefinedBehaviorSanitizer: CMakePresets.json's
# "asan" preset, built in build-asan/ (-DFLOPSCOPE_SANITIZE=address,undefined with
# -fno-sanitize-recover, ASAN_OPTIONS/UBSAN_OPTIONS halt_on_error=1: every report fails its test).
# CUDA is off in this build: device code is not instrumented, and the CUDA tests skip anyway
# where no GPU is present. The suite includes the fuzz targets replaying their corpus and
# regression inputs (fuzz.*).
#   scripts/sanitize.sh [ctest args...]    e.g. -R fuzz
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh --packages-only

build=build-asan  # the preset's binaryDir
jobs=${FLOPSCOPE_JOBS:-$(nproc)}
[[ -f $build/CMakeCache.txt ]] || cmake --preset asan >/dev/null
echo "flopscope sanitize: building in $build/ ($jobs jobs)"
if ! cmake --build --preset asan -j "$jobs" >"$build/build.log" 2>&1; then
  grep -E -A5 'error' "$build/build.log" | head -n 60
  echo "flopscope sanitize: the build failed (log: $build/build.log)" >&2
  exit 1
fi
echo "flopscope sanitize: ctest under ASan + UBSan"
ctest --preset asan -j "$jobs" "$@"
