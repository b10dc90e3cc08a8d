#!/usr/bin/env bash
# Builds the GPU device bundle on this machine (no GPU needed; the CUDA 13 toolkit and the Debian
# packages of scripts/setup.sh): every bench_* binary, every test_* binary and the flopscope tool,
# for sm_80, sm_89 and sm_90 (CMake preset gpu-bundle, in build-gpu-bundle/), copied into
# build-gpu-bundle/bundle/ with the shared libraries that a GPU machine lacks (Google Benchmark,
# libgomp). There they need only the driver, CUDA 13's cuBLAS and NCCL (bench_collectives; 200 MiB,
# from the machine: CUDA 13 or PyTorch's nvidia-nccl-cu13 wheel): the CUDA runtime is linked
# statically, GoogleTest is static, warnings are not errors (FLOPSCOPE_WERROR=OFF), no oneDNN or
# OpenBLAS. bench/gpu_check.sh runs it there (README: "On a machine with a GPU").
#
#   bench/gpu_bundle.sh                 # configure, build (FLOPSCOPE_JOBS, default nproc), bundle, check
#   bench/gpu_bundle.sh --check DIR     # only the check, of a bundle anywhere (tests/python/test_gpu_bundle.py)
#
# What comes back: build-gpu-bundle/bundle/ with bin/ (the binaries), lib/ (their own libraries)
# and BUNDLE.txt (commit, toolchain, architectures, what each binary needs), under 48 MiB. The
# check prints one line per file of what ldd resolves it to and fails when anything resolves
# outside the bundle, glibc, libstdc++/libgcc and the CUDA libraries, or is not found.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# What a binary of the bundle may load from the machine it runs on: glibc, the GCC runtime
# (every Linux machine with a C++ toolchain's programs has them) and NVIDIA's driver and CUDA
# libraries (the GPU machine's own CUDA 13). Everything else must come from the bundle's lib/.
system_libraries='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'
cuda_libraries='^(libcuda\.so\.1|libcudart\.so\.13|libcublas\.so\.13|libcublasLt\.so\.13|libnccl\.so\.2|libnvToolsExt\.so\.1|libnvtx3interop\.so\.1)$'
max_bundle_bytes=$((48 * 1024 * 1024))

# check DIR: one line per file of DIR/bin and DIR/lib; non-zero if any dependency is not found
# or resolves outside DIR/lib, the system libraries and the CUDA libraries.
check() {
  local dir bad=0 file name path where line
  dir=$(realpath -- "$1")
  for file in "$dir"/bin/* "$dir"/lib/*; do
    [[ -f $file ]] || continue
    where=()
    while read -r line; do
      # "libfoo.so.1 => /path/libfoo.so.1 (0x...)", "libfoo.so.1 => not found", "/lib64/ld-linux... (0x...)"
      name=${line%% *}
      name=${name##*/}
      path=$(sed -n 's/.*=> \(.*\) (0x[0-9a-f]*)$/\1/p' <<<"$line")
      [[ -n $path ]] && path=$(realpath -m -- "$path")
      if [[ $line == *"not found"* ]]; then
        where+=("$name:NOT-FOUND")
        bad=1
      elif [[ $path == "$dir"/lib/* ]]; then
        where+=("$name:bundle")
      elif [[ $name =~ $system_libraries ]]; then
        continue
      elif [[ $name =~ $cuda_libraries ]]; then
        where+=("$name:cuda")
      else
        where+=("$name:OUTSIDE(${path:-?})")
        bad=1
      fi
    done < <(ldd "$file" 2>&1 | sed 's/^[[:space:]]*//')
    printf '  %-26s %s\n' "${file#"$dir"/}" "${where[*]:-glibc/libstdc++ only}"
  done
  return $bad
}

if [[ ${1:-} == --check ]]; then
  [[ $# -eq 2 ]] || { echo "usage: $0 --check BUNDLE_DIR" >&2; exit 2; }
  echo "gpu_bundle: ldd of $2 (bundle = its lib/, cuda = the machine's NVIDIA libraries)"
  if check "$2"; then
    echo "gpu_bundle: every dependency is in the bundle, glibc/libstdc++/libgcc or CUDA"
  else
    echo "gpu_bundle: FAILED: a dependency is missing or outside the bundle (above)" >&2
    exit 1
  fi
  exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: $0 [--check BUNDLE_DIR]" >&2; exit 2; }

cd "$root"
build="build-gpu-bundle"
bundle=$build/bundle
jobs=${FLOPSCOPE_JOBS:-$(nproc)}
started=$SECONDS

echo "gpu_bundle: configuring $build/ (preset gpu-bundle)"
if ! configure_log=$(cmake --preset gpu-bundle 2>&1); then
  printf '%s\n' "$configure_log" >&2
  exit 1
fi
# Every bench binary, every test binary and the tool, as CMake knows them (new families are
# picked up without an edit here).
mapfile -t targets < <(cmake --build "$build" --target help |
  sed -n -E 's/^(\.\.\. )?((bench|test)_[A-Za-z0-9_]+|flopscope)(:.*)?$/\2/p' | sort -u)
((${#targets[@]})) || { echo "gpu_bundle: no bench_*, test_* or flopscope target in $build" >&2; exit 1; }
echo "gpu_bundle: building ${#targets[@]} targets with $jobs jobs: ${targets[*]}"
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for target in "${targets[@]}"; do
  binary=$(find "$build" -path "$build/bundle" -prune -o -path '*/CMakeFiles' -prune -o \
    -type f -name "$target" -perm -u+x -print -quit)
  [[ -n $binary ]] || { echo "gpu_bundle: built $target but found no binary of it" >&2; exit 1; }
  cp "$binary" "$bundle/bin/"
  # Without the static symbol table (the dynamic one, the CUDA fatbins and the unwind tables stay):
  # 19% smaller (bench_matmul 3.4 -> 2.8 MB); unstripped the bundle outgrew 48 MiB (49, 2026-12-06).
  strip --strip-unneeded "$bundle/bin/$target"
done

# The shared libraries the binaries load that are neither the system's nor CUDA's, copied under
# their sonames (the binaries' RUNPATH is $ORIGIN/../lib first); then theirs, until none is new.
while :; do
  copied=0
  for file in "$bundle"/bin/* "$bundle"/lib/*; do
    [[ -f $file ]] || continue
    while read -r name path; do
      [[ $name =~ $system_libraries || $name =~ $cuda_libraries || -e $bundle/lib/$name ]] && continue
      cp -L "$path" "$bundle/lib/$name"
      echo "gpu_bundle: bundled $name (from $path)"
      copied=1
    done < <(ldd "$file" | sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) (0x[0-9a-f]*)$/\1 \2/p')
  done
  ((copied)) || break
done

{
  echo "flopscope GPU bundle"
  echo "commit:        $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built:         $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"')"
  echo "compilers:     $(c++ --version | head -n 1); nvcc $(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')"
  echo "architectures: $(sed -n 's/^FLOPSCOPE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")"
  echo "needs:         $(objdump -T "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)," \
       "$(objdump -T "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -n 1)," \
       "the NVIDIA driver (CUDA 13), libcublas.so.13/libcublasLt.so.13 and libnccl.so.2 (CUDA 13 or its pip wheels)"
  echo "run:           bench/gpu_check.sh OUT_DIR (from the repository root)"
  echo
  echo "ldd (bundle = lib/ here, cuda = the machine's NVIDIA libraries):"
  check "$bundle"
} >"$bundle/BUNDLE.txt" || { cat "$bundle/BUNDLE.txt"; echo "gpu_bundle: FAILED: see the ldd lines above" >&2; exit 1; }

bytes=$(du -sb "$bundle" | cut -f1)
cat "$bundle/BUNDLE.txt"
echo "gpu_bundle: $bundle: $(find "$bundle/bin" -type f | wc -l) binaries, $(find "$bundle/lib" -type f | wc -l) libraries," \
     "$((bytes / 1024 / 1024)) MiB, built in $((SECONDS - started)) s"
if ((bytes > max_bundle_bytes)); then
  echo "gpu_bundle: FAILED: the bundle is over $((max_bundle_bytes / 1024 / 1024)) MiB (the device tool carries 64 MiB in all)" >&2
  exit 1
fi
