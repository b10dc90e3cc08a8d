#!/usr/bin/env bash
# Installs what flopscope needs on a fresh Debian machine (as root), creates the Python virtual
# environment in .venv/ and configures + builds into build/. Idempotent: a second run only
# rebuilds what changed. Used by ./bench.sh and ./test.sh; not meant to be called by hand.
#   --fuzz           also install clang and its libFuzzer and OpenMP runtimes (scripts/fuzz.sh)
#   --packages-only  stop after the Debian packages (scripts/sanitize.sh and fuzz.sh build elsewhere)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

debian_packages=(cmake g++ make git pkg-config libbenchmark-dev libbenchmark-tools libgtest-dev
                 nlohmann-json3-dev likwid python3-venv libdnnl-dev libopenblas-dev
                 openmpi-bin libopenmpi-dev)  # MPI: bench_collectives (optional at build time)
packages_only=0
for arg in "$@"; do
  case $arg in
    --fuzz) debian_packages+=(clang-14 libclang-rt-14-dev libomp-14-dev) ;;
    --packages-only) packages_only=1 ;;
    *) echo "flopscope setup: unknown option '$arg' (expected --fuzz, --packages-only)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "flopscope setup: installing Debian packages: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "flopscope setup: need root to install ${missing[*]} (or install them yourself)" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
((packages_only)) && exit 0

python=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  echo "flopscope setup: creating .venv"
  "$python" -m venv .venv
fi
stamp=.venv/.flopscope-requirements
if [[ ! -f $stamp ]] || ! cmp -s analysis/requirements.txt "$stamp"; then
  echo "flopscope setup: installing Python packages into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r analysis/requirements.txt
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e analysis
  cp analysis/requirements.txt "$stamp"
fi

build=${FLOPSCOPE_BUILD_DIR:-build}
jobs=${FLOPSCOPE_JOBS:-$(nproc)}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${FLOPSCOPE_CMAKE_ARGS:-} >/dev/null
fi
echo "flopscope setup: building in $build/ ($jobs jobs)"
cmake --build "$build" -j "$jobs" 2>&1 | grep -v -E '^\[ *[0-9]+%\] (Building|Linking|Built)' || true
# grep hides the progress lines; a failed build must still fail:
cmake --build "$build" -j "$jobs" >/dev/null
