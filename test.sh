#!/usr/bin/env bash
# Command two: the same set-up as ./bench.sh, then every test: C++ (ctest) and Python (pytest).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
build=${FLOPSCOPE_BUILD_DIR:-build}
status=0
echo "== C++ tests (ctest)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" || status=1
echo "== Python tests (pytest)"
FLOPSCOPE_BUILD_DIR=$build .venv/bin/python -m pytest -q analysis/tests tests/python || status=1
exit $status
