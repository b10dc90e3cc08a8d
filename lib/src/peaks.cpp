#include "flopscope/peaks.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <sched.h>

namespace flopscope {

const ComputePeak* DevicePeaks::find(std::string_view compute_mode) const {
  for (const auto& peak : compute)
    if (peak.compute == compute_mode) return &peak;
  return nullptr;
}

// ---- GPUs ------------------------------------------------------------------------------------
// Note [GPU peak table]: FLOPs per clock per SM are the architecture's dense rates (CUDA-core
// FMA = 2 FLOPs per lane; tensor cores per the whitepaper). The clocks are the ones the datasheet
// figure assumes: on Hopper, CUDA-core figures use the 1.98 GHz boost, tensor-core figures the
// 1.83 GHz "max tensor" clock (132 x 4096 x 1.83e9 = 989.4 TFLOP/s bf16). Each row carries the
// datasheet's dense figure; tests check formula against datasheet.

namespace {

constexpr std::array<GpuComputeRow, 7> kA100Rows = {{
    {"f64", 64, 1.41, 9.7},
    {"f64_tensor", 128, 1.41, 19.5},
    {"f32", 128, 1.41, 19.5},
    {"tf32", 1024, 1.41, 156},
    {"f16", 2048, 1.41, 312},
    {"bf16", 2048, 1.41, 312},
    {"f8", 0, 1.41, 0},  // no fp8 tensor cores before sm_89
}};

constexpr std::array<GpuComputeRow, 7> kH100SxmRows = {{
    {"f64", 128, 1.98, 34},
    {"f64_tensor", 256, 1.98, 67},
    {"f32", 256, 1.98, 67},
    {"tf32", 2048, 1.83, 494.7},
    {"f16", 4096, 1.83, 989.4},
    {"bf16", 4096, 1.83, 989.4},
    {"f8", 8192, 1.83, 1978.9},
}};

constexpr std::array<GpuComputeRow, 7> kH100PcieRows = {{
    {"f64", 128, 1.755, 25.6},
    {"f64_tensor", 256, 1.755, 51.2},
    {"f32", 256, 1.755, 51.2},
    {"tf32", 2048, 1.62, 378},
    {"f16", 4096, 1.62, 756},
    {"bf16", 4096, 1.62, 756},
    {"f8", 8192, 1.62, 1513},
}};

// B200 (HGX B200, one of its 8 GPUs, 1000 W): the datasheet gives the 8-GPU board's sparse figures;
// dense per GPU is half of one eighth: bf16 36 PF / 8 / 2 = 2.25 PF, tf32 1.125 PF, fp8 4.5 PF; fp32
// 75 TF, fp64 and fp64 tensor 37 TF (296 TF / 8). 148 SMs (2 dies x 74). NVIDIA publishes no
// clocks for it: the CUDA-core clock 1.98 GHz and the tensor clock 1.856 GHz here are the
// datasheet figures divided by SMs x FLOPs per clock (128 fp32 lanes; tensor cores twice Hopper's
// per SM), so this row checks the datasheet's arithmetic, not a measured clock.
constexpr std::array<GpuComputeRow, 7> kB200Rows = {{
    {"f64", 128, 1.98, 37},
    {"f64_tensor", 128, 1.98, 37},
    {"f32", 256, 1.98, 75},
    {"tf32", 4096, 1.856, 1125},
    {"f16", 8192, 1.856, 2250},
    {"bf16", 8192, 1.856, 2250},
    {"f8", 16384, 1.856, 4500},
}};

// L4 (AD104, 58 SMs, 2.04 GHz boost): datasheet fp32 30.3 TF; tensor figures are given with
// sparsity (tf32 120, bf16/f16 242, fp8 485 TF): dense is half. No fp64 figure (Ada: 1/64 rate).
constexpr std::array<GpuComputeRow, 5> kL4Rows = {{
    {"f32", 256, 2.04, 30.3},
    {"tf32", 512, 2.04, 60},
    {"f16", 1024, 2.04, 121},
    {"bf16", 1024, 2.04, 121},
    {"f8", 2048, 2.04, 242.5},
}};

// GeForce RTX 4090 (AD102, 128 SMs, 2.52 GHz boost): Ada whitepaper appendix, dense, with f32
// accumulation (GeForce runs f16/bf16/fp8 x f32-accumulate at half the f16-accumulate rate):
// fp32 82.6, tf32 82.6, f16/bf16 165.2, fp8 330.3 TF. No fp64 figure (1/64 rate).
constexpr std::array<GpuComputeRow, 5> kRtx4090Rows = {{
    {"f32", 256, 2.52, 82.6},
    {"tf32", 256, 2.52, 82.6},
    {"f16", 512, 2.52, 165.2},
    {"bf16", 512, 2.52, 165.2},
    {"f8", 1024, 2.52, 330.3},
}};

// Note [GPU names match exactly]: a row is found by the device's whole name (cudaDeviceProp::name
// less its "NVIDIA " prefix), never a part of it: "H200" is the SXM part alone, while "H200 NVL"
// (600 W PCIe card, lower clocks) and "GH200 480GB" (the Grace Hopper superchip's GPU, other
// memory) are other devices with other figures. A device without a row of its own gets no
// theoretical peak (its results show measured ceilings only) rather than another device's. The
// H200 NVL and GH200 have no rows yet: their SM counts and clocks are not checked against a datasheet.
constexpr std::array<GpuSpec, 9> kGpuSpecs = {{
    {"A100 SXM4 40GB", "A100-SXM4-40GB", 108, 1555,
     "NVIDIA A100 datasheet (2021); A100 whitepaper table 1", kA100Rows},
    {"A100 SXM4 80GB", "A100-SXM4-80GB", 108, 2039,
     "NVIDIA A100 datasheet (2021); A100 whitepaper table 1", kA100Rows},
    {"A100 PCIe 80GB", "A100 80GB PCIe", 108, 1935,
     "NVIDIA A100 datasheet (2021); A100 whitepaper table 1", kA100Rows},
    {"H100 PCIe", "H100 PCIe", 114, 2000,
     "NVIDIA H100 datasheet (2023), PCIe column; H100 whitepaper table 2", kH100PcieRows},
    {"H100 SXM", "H100 80GB HBM3", 132, 3350,
     "NVIDIA H100 datasheet (2023), SXM column; H100 whitepaper table 2", kH100SxmRows},
    {"H200 SXM", "H200", 132, 4800,
     "NVIDIA H200 datasheet (2024), SXM column (compute as H100 SXM)", kH100SxmRows},
    {"B200", "B200", 148, 8000,
     "NVIDIA HGX B200 datasheet (2024): 8 GPUs, 64 TB/s; per GPU one eighth, dense half the sparse figure",
     kB200Rows},
    {"L4", "L4", 58, 300, "NVIDIA L4 Tensor Core GPU datasheet (2023); tensor figures sparse, dense half",
     kL4Rows},
    {"RTX 4090", "GeForce RTX 4090", 128, 1008,
     "NVIDIA Ada Lovelace GPU architecture whitepaper v2.1 (2023), appendix table 2: GeForce RTX 4090",
     kRtx4090Rows},
}};

std::string format_number(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::span<const GpuSpec> gpu_spec_table() { return kGpuSpecs; }

const GpuSpec* find_gpu_spec(std::string_view cuda_device_name) {
  std::string_view name = cuda_device_name;
  while (name.ends_with(' ')) name.remove_suffix(1);
  constexpr std::string_view vendor = "NVIDIA ";
  if (name.starts_with(vendor)) name.remove_prefix(vendor.size());
  for (const auto& spec : kGpuSpecs)
    if (name == spec.match) return &spec;
  return nullptr;
}

DevicePeaks gpu_peaks(const GpuSpec& spec) {
  DevicePeaks peaks;
  peaks.device_name = std::string(spec.name);
  for (const auto& row : spec.rows) {
    if (row.flops_per_clock_per_sm == 0) continue;
    peaks.compute.push_back({
        std::string(row.compute),
        spec.sms * row.flops_per_clock_per_sm * row.clock_ghz * 1e9,
        std::to_string(spec.sms) + " SMs x " + format_number("%.0f", row.flops_per_clock_per_sm) +
            " FLOP/clk/SM x " + format_number("%.3g", row.clock_ghz) + " GHz",
        std::string(spec.source),
    });
  }
  peaks.memory_bytes_per_second = spec.memory_gbytes_per_second * 1e9;
  peaks.memory_source = std::string(spec.source);
  return peaks;
}

// ---- CPU -------------------------------------------------------------------------------------

int cpu_fma_units(const CpuInfo& cpu) {
  if (const char* text = std::getenv("FLOPSCOPE_CPU_FMA_UNITS")) {
    int units = std::atoi(text);
    if (units > 0) return units;
  }
  return cpu.vector_isa() == "scalar" ? 1 : 2;
}

DevicePeaks cpu_peaks(const CpuInfo& cpu, double clock_hz, int fma_units) {
  DevicePeaks peaks;
  peaks.device_name = cpu.model_name;
  const int bits = cpu.fma_datapath_bits();
  const std::string ghz = format_number("%.3f", clock_hz / 1e9);
  const std::string datapath =
      bits < cpu.vector_bits() ? ", " + std::to_string(bits) + "-bit units: a " + std::to_string(cpu.vector_bits()) +
                                     "-bit operation issues as " + std::to_string(cpu.vector_bits() / bits) + " parts"
                               : "";
  auto add = [&](std::string compute, int lanes, int flops_per_lane, std::string what) {
    what += datapath;
    double value = double(cpu.cores) * clock_hz * fma_units * lanes * flops_per_lane;
    peaks.compute.push_back({
        std::move(compute), value,
        std::to_string(cpu.cores) + " cores x " + ghz + " GHz x " + std::to_string(fma_units) +
            " FMA units x " + std::to_string(lanes) + " lanes x " + std::to_string(flops_per_lane) +
            " FLOP (" + what + ")",
        "computed from detected ISA (" + cpu.vector_isa() + ") and measured clock",
    });
  };
  add("f64", bits / 64, 2, cpu.vector_isa() + " FMA");
  add("f32", bits / 32, 2, cpu.vector_isa() + " FMA");
  if (cpu.amx_bf16) {
    // AMX: one tile unit a core; TDPBF16PS (16 x 16 x 32 multiply-adds) issues every 16 cycles,
    // 1024 bf16 FLOP a cycle a core (Intel's optimization reference manual, AMX chapter).
    peaks.compute.push_back({"bf16", double(cpu.cores) * clock_hz * 1024,
                             std::to_string(cpu.cores) + " cores x " + ghz +
                                 " GHz x 1024 FLOP (AMX TDPBF16PS: 16x16x32 multiply-adds every 16 cycles)",
                             "computed from detected ISA (amx_bf16) and measured clock"});
  } else if (cpu.avx512_bf16) {
    add("bf16", bits / 32, 4, "vdpbf16ps: 2 multiply-adds per f32 lane");
  }
  if (cpu.avx512_fp16) add("f16", bits / 16, 2, "avx512-fp16 vfmadd*ph");
  if (const char* text = std::getenv("FLOPSCOPE_CPU_MEMORY_GBS")) {
    peaks.memory_bytes_per_second = std::atof(text) * 1e9;
    peaks.memory_source = "FLOPSCOPE_CPU_MEMORY_GBS";
  } else {
    peaks.memory_source = "unknown: set FLOPSCOPE_CPU_MEMORY_GBS (channels x MT/s x 8 bytes)";
  }
  return peaks;
}

}  // namespace flopscope
