// Theoretical peaks of devices: a table of the GPUs people use, computed from SMs x clock x
// FLOPs per clock per SM and checked against the datasheet, and a formula for the CPU
// (cores x clock x FMA units x vector lanes x 2).
//
// Compute modes are named by the math they do, not by storage: "f64", "f64_tensor", "f32",
// "tf32", "f16", "bf16", "f8" (e4m3 and e5m2 share one rate). All figures are dense (no 2:4
// sparsity) and in FLOP/s; memory bandwidth is in bytes/s.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flopscope/cpu_info.hpp"

namespace flopscope {

struct ComputePeak {
  std::string compute;      // "f32", "bf16", ...
  double flops_per_second;  // dense
  std::string formula;      // how it was computed, with the numbers: "132 SMs x 4096 FLOP/clk x 1.83 GHz"
  std::string source;       // where the inputs came from: "datasheet", "computed from detected ISA", ...
};

struct DevicePeaks {
  std::string device_name;
  std::vector<ComputePeak> compute;
  double memory_bytes_per_second = 0;  // 0 when unknown (a VM does not say what DIMMs it has)
  std::string memory_source;
  const ComputePeak* find(std::string_view compute_mode) const;
};

// ---- GPUs ------------------------------------------------------------------------------------

struct GpuComputeRow {
  std::string_view compute;
  double flops_per_clock_per_sm;  // dense, one multiply-add = 2 FLOPs
  double clock_ghz;               // the clock the datasheet's figure assumes
  double datasheet_tflops;        // dense datasheet figure, the check on the row
};

struct GpuSpec {
  std::string_view name;          // "H100 SXM"
  std::string_view match;         // cudaDeviceProp::name less "NVIDIA ", whole: "H100 80GB HBM3"
  int sms;
  double memory_gbytes_per_second;  // datasheet, 1 GB = 1e9 bytes
  std::string_view source;        // datasheet / whitepaper the numbers come from
  std::span<const GpuComputeRow> rows;
};

std::span<const GpuSpec> gpu_spec_table();
// The row whose `match` is the whole CUDA device name less a leading "NVIDIA " ("NVIDIA H100
// 80GB HBM3" is "H100 80GB HBM3"), if any: "NVIDIA H200 NVL" is not "H200" (Note [GPU names
// match exactly] in peaks.cpp).
const GpuSpec* find_gpu_spec(std::string_view cuda_device_name);
DevicePeaks gpu_peaks(const GpuSpec& spec);

// ---- CPU -------------------------------------------------------------------------------------


// FMA units per core: 2 on server Xeons with AVX-512 and on AVX2 cores since Haswell. CPUID
// does not say; FLOPSCOPE_CPU_FMA_UNITS overrides.
int cpu_fma_units(const CpuInfo& cpu);

// cores x clock x FMA units x lanes x 2 for f64 and f32 at the widest ISA, lanes counted over
// fma_datapath_bits(); bf16 (AVX512_BF16
// dot product: 2 multiply-adds per f32 lane) and f16 (AVX512-FP16: 32 lanes) where present.
// Memory bandwidth is taken from FLOPSCOPE_CPU_MEMORY_GBS when set, else left unknown.
DevicePeaks cpu_peaks(const CpuInfo& cpu, double clock_hz, int fma_units);

}  // namespace flopscope
