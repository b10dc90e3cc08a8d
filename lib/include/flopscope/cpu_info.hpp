// What the CPU has: model, vendor, vector ISA and the features kernels choose by at run time,
// core count and cache sizes, read from CPUID (__builtin_cpu_supports), /proc/cpuinfo and sysfs.
// peaks.hpp turns it into a theoretical peak; kernels/ and bench/ read it to pick and skip variants.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace flopscope {

struct CpuInfo {
  std::string model_name;
  std::string vendor;  // /proc/cpuinfo vendor_id: "GenuineIntel", "AuthenticAMD"
  int family = 0;      // /proc/cpuinfo "cpu family" (AMD: 25 = Zen 3/4, 26 = Zen 5)
  int cores = 1;  // logical CPUs this process may run on
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512_bf16 = false, avx512_fp16 = false, amx_bf16 = false;
  std::size_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // per instance, from sysfs
  std::set<std::string> flags;  // /proc/cpuinfo's, as the kernel names them: "avx512_bf16", "amx_bf16"
  bool has(std::string_view flag) const;
  std::string vector_isa() const;  // "avx512", "avx2" or "scalar"
  int vector_bits() const;         // 512, 256 or 64
  // The width at which the FMA units execute vector_bits() operations: vector_bits(), except on
  // AMD family 25 (Zen 4), whose AVX-512 runs on 256-bit units, a 512-bit operation taking two
  // halves (so a zmm FMA per unit counts 8 f32 lanes, not 16). FLOPSCOPE_CPU_FMA_BITS overrides.
  int fma_datapath_bits() const;
  // AMD's cache hierarchy (Zen 3, Zen 4): an L3 that is a victim cache of the L2s, and prefetchers
  // that follow a stream only past a page's worth. Measured to want a matmul B block filling the
  // whole L2 and strided runs of 64 KiB, where the Intel Xeon wants a quarter of the L2 and runs of
  // 4 KiB (kernels/cpu/matmul.cpp cache_blocking, kernels/cpu/strided.cpp merge_run_bytes).
  bool amd_caches() const;
};

CpuInfo detect_cpu();
// detect_cpu() of this process, read once.
const CpuInfo& this_cpu();

// nullopt where this CPU has every flag (as /proc/cpuinfo names them: "avx2", "fma", "avx512f",
// "avx512bw", "avx512_bf16", "avx512_fp16", "amx_bf16"), else "this CPU lacks avx512_bf16": the
// reason a kernel variant that needs them is skipped.
std::optional<std::string> cpu_lacks(std::initializer_list<std::string_view> flags);

}  // namespace flopscope
