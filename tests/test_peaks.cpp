#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "flopscope/peaks.hpp"

using namespace flopscope;

// Every computed GPU peak agrees with the datasheet's (dense) figure. The datasheets round to
// two or three significant figures (H100 SXM f64: 132 x 128 x 1.98 GHz = 33.45, printed "34"),
// so the bound is 2%.
TEST(GpuPeaks, FormulaMatchesDatasheetForEveryRow) {
  ASSERT_FALSE(gpu_spec_table().empty());
  for (const auto& spec : gpu_spec_table()) {
    DevicePeaks peaks = gpu_peaks(spec);
    for (const auto& row : spec.rows) {
      const ComputePeak* peak = peaks.find(row.compute);
      if (row.flops_per_clock_per_sm == 0) {
        EXPECT_EQ(peak, nullptr) << spec.name << " " << row.compute;
        continue;
      }
      ASSERT_NE(peak, nullptr) << spec.name << " " << row.compute;
      double datasheet = row.datasheet_tflops * 1e12;
      EXPECT_NEAR(peak->flops_per_second / datasheet, 1.0, 0.02) << spec.name << " " << row.compute;
    }
  }
}

TEST(GpuPeaks, HopperTensorPeakUsesTheTensorClock) {
  const GpuSpec* h100 = find_gpu_spec("NVIDIA H100 80GB HBM3");
  ASSERT_NE(h100, nullptr);
  DevicePeaks peaks = gpu_peaks(*h100);
  // 132 x 4096 x 1.83e9 = 989.4 TFLOP/s, not 1070 (the 1.98 GHz boost).
  EXPECT_DOUBLE_EQ(peaks.find("bf16")->flops_per_second, 132.0 * 4096 * 1.83e9);
  EXPECT_NEAR(peaks.find("bf16")->flops_per_second / 1e12, 989.4, 0.1);
  EXPECT_NEAR(peaks.find("f8")->flops_per_second / 1e12, 1978.9, 0.1);
  EXPECT_NEAR(peaks.find("f32")->flops_per_second / 1e12, 66.9, 0.1);
  EXPECT_DOUBLE_EQ(peaks.memory_bytes_per_second, 3.35e12);
}

TEST(GpuPeaks, FindsDevicesByTheirCudaNames) {
  EXPECT_EQ(find_gpu_spec("NVIDIA H200")->name, "H200 SXM");
  EXPECT_EQ(find_gpu_spec("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(find_gpu_spec("NVIDIA A100-SXM4-80GB")->name, "A100 SXM4 80GB");
  EXPECT_EQ(find_gpu_spec("NVIDIA A100-SXM4-40GB")->name, "A100 SXM4 40GB");
  EXPECT_EQ(find_gpu_spec("NVIDIA GeForce GTX 1080"), nullptr);
  EXPECT_EQ(find_gpu_spec("NVIDIA B200")->name, "B200");
  EXPECT_EQ(find_gpu_spec("NVIDIA L4")->name, "L4");
  EXPECT_EQ(find_gpu_spec("NVIDIA GeForce RTX 4090")->name, "RTX 4090");
  EXPECT_EQ(find_gpu_spec("NVIDIA L40S"), nullptr);  // another card, whose name starts with L4
  EXPECT_EQ(find_gpu_spec("NVIDIA GeForce RTX 4090 D"), nullptr);
  // The datasheets' dense bf16 and memory figures (the B200's per GPU of an HGX B200).
  EXPECT_NEAR(gpu_peaks(*find_gpu_spec("NVIDIA B200")).find("bf16")->flops_per_second / 1e12, 2250, 5);
  EXPECT_DOUBLE_EQ(gpu_peaks(*find_gpu_spec("NVIDIA B200")).memory_bytes_per_second, 8e12);
  EXPECT_NEAR(gpu_peaks(*find_gpu_spec("NVIDIA L4")).find("bf16")->flops_per_second / 1e12, 121, 0.5);
  EXPECT_DOUBLE_EQ(gpu_peaks(*find_gpu_spec("NVIDIA L4")).memory_bytes_per_second, 300e9);
  EXPECT_NEAR(gpu_peaks(*find_gpu_spec("NVIDIA GeForce RTX 4090")).find("bf16")->flops_per_second / 1e12, 165.2, 0.1);
  EXPECT_EQ(gpu_peaks(*find_gpu_spec("NVIDIA GeForce RTX 4090")).find("f64"), nullptr);  // not rated
  EXPECT_EQ(gpu_peaks(*find_gpu_spec("NVIDIA H200")).memory_bytes_per_second, 4.8e12);
  EXPECT_EQ(gpu_peaks(*find_gpu_spec("NVIDIA A100-SXM4-80GB")).find("f8"), nullptr);
}

// A row is found by the whole device name: the H200 NVL (600 W PCIe card) and the GH200
// superchip's GPU have other clocks and memory than the H200 SXM, and get no theoretical peak
// rather than its figures; so do other parts that merely contain a row's name.
TEST(GpuPeaks, MatchesWholeNamesOnly) {
  for (const char* other : {"NVIDIA H200 NVL", "NVIDIA GH200 480GB", "NVIDIA GH200 144G HBM3e", "NVIDIA H100 NVL",
                            "NVIDIA H100", "NVIDIA H100 80GB HBM3e", "NVIDIA A100-SXM4-80GB MIG 1g.10gb",
                            "NVIDIA", ""})
    EXPECT_EQ(find_gpu_spec(other), nullptr) << other;
  // The runtime's names with and without the vendor prefix, and with trailing blanks.
  EXPECT_EQ(find_gpu_spec("H100 80GB HBM3")->name, "H100 SXM");
  EXPECT_EQ(find_gpu_spec("NVIDIA H200 ")->name, "H200 SXM");
  EXPECT_EQ(find_gpu_spec("NVIDIA A100 80GB PCIe")->name, "A100 PCIe 80GB");
  // Every row is found by its own name, and by no other row's.
  for (const auto& spec : gpu_spec_table())
    EXPECT_EQ(find_gpu_spec("NVIDIA " + std::string(spec.match)), &spec) << spec.name;
}

TEST(CpuPeaks, FormulaIsCoresTimesClockTimesUnitsTimesLanesTimesTwo) {
  CpuInfo cpu;
  cpu.model_name = "test CPU";
  cpu.cores = 4;
  cpu.avx2 = cpu.fma = true;
  DevicePeaks avx2 = cpu_peaks(cpu, 3e9, 2);
  EXPECT_DOUBLE_EQ(avx2.find("f32")->flops_per_second, 4 * 3e9 * 2 * 8 * 2);
  EXPECT_DOUBLE_EQ(avx2.find("f64")->flops_per_second, 4 * 3e9 * 2 * 4 * 2);
  EXPECT_EQ(avx2.find("bf16"), nullptr);
  EXPECT_EQ(avx2.find("f16"), nullptr);

  cpu.avx512f = cpu.avx512_bf16 = cpu.avx512_fp16 = true;
  DevicePeaks avx512 = cpu_peaks(cpu, 2.5e9, 2);
  EXPECT_DOUBLE_EQ(avx512.find("f32")->flops_per_second, 4 * 2.5e9 * 2 * 16 * 2);
  EXPECT_DOUBLE_EQ(avx512.find("f64")->flops_per_second, 4 * 2.5e9 * 2 * 8 * 2);
  EXPECT_DOUBLE_EQ(avx512.find("bf16")->flops_per_second, 4 * 2.5e9 * 2 * 16 * 4);
  EXPECT_DOUBLE_EQ(avx512.find("f16")->flops_per_second, 4 * 2.5e9 * 2 * 32 * 2);
  EXPECT_NE(avx512.find("f32")->formula.find("4 cores x 2.500 GHz x 2 FMA units x 16 lanes"), std::string::npos);

  // With AMX the bf16 peak is the tile unit's: one TDPBF16PS (16 x 16 x 32 multiply-adds, 16384
  // FLOP) every 16 cycles a core, 1024 FLOP a cycle (Intel's optimization manual).
  cpu.amx_bf16 = true;
  DevicePeaks amx = cpu_peaks(cpu, 2.5e9, 2);
  EXPECT_DOUBLE_EQ(amx.find("bf16")->flops_per_second, 4 * 2.5e9 * (16 * 16 * 32 * 2) / 16);
  EXPECT_NE(amx.find("bf16")->formula.find("AMX"), std::string::npos);
  EXPECT_DOUBLE_EQ(amx.find("f32")->flops_per_second, avx512.find("f32")->flops_per_second);
}

// Zen 4 (AMD family 25) runs AVX-512 on 256-bit FMA units: a zmm FMA per unit per cycle is 8 f32
// lanes, half of what a 512-bit Xeon does (likwid-bench peakflops_sp_avx512_fma measures
// 32 FLOP/cycle/core on Zen 4, as cores x clock x 2 x 8 x 2 says).
TEST(CpuPeaks, Zen4CountsItsAvx512OnTheHalfWidthDatapath) {
  CpuInfo cpu;
  cpu.cores = 2;
  cpu.avx2 = cpu.fma = cpu.avx512f = cpu.avx512_bf16 = true;
  cpu.vendor = "AuthenticAMD";
  cpu.family = 25;
  EXPECT_EQ(cpu.vector_bits(), 512);
  EXPECT_EQ(cpu.fma_datapath_bits(), 256);
  EXPECT_TRUE(cpu.amd_caches());  // the kernels' B block and strided runs as tuned on Zen 4
  DevicePeaks zen4 = cpu_peaks(cpu, 3.5e9, 2);
  EXPECT_DOUBLE_EQ(zen4.find("f32")->flops_per_second, 2 * 3.5e9 * 2 * 8 * 2);
  EXPECT_DOUBLE_EQ(zen4.find("f64")->flops_per_second, 2 * 3.5e9 * 2 * 4 * 2);
  EXPECT_DOUBLE_EQ(zen4.find("bf16")->flops_per_second, 2 * 3.5e9 * 2 * 8 * 4);
  EXPECT_NE(zen4.find("f32")->formula.find("256-bit units"), std::string::npos);

  cpu.family = 26;  // Zen 5: full-width AVX-512
  EXPECT_EQ(cpu.fma_datapath_bits(), 512);
  EXPECT_DOUBLE_EQ(cpu_peaks(cpu, 3.5e9, 2).find("f32")->flops_per_second, 2 * 3.5e9 * 2 * 16 * 2);
  cpu.vendor = "GenuineIntel";
  cpu.family = 6;
  EXPECT_EQ(cpu.fma_datapath_bits(), 512);
  EXPECT_FALSE(cpu.amd_caches());
  EXPECT_EQ(cpu_peaks(cpu, 3.5e9, 2).find("f32")->formula.find("units:"), std::string::npos);
}

TEST(CpuInfo, DetectsSomethingSensible) {
  CpuInfo cpu = detect_cpu();
  EXPECT_GE(cpu.cores, 1);
  EXPECT_FALSE(cpu.model_name.empty());
  EXPECT_GT(cpu.l1d_bytes, 0u);
  EXPECT_FALSE(cpu.vendor.empty());
  EXPECT_GT(cpu.family, 0);
  if (cpu.avx512f) {
    EXPECT_EQ(cpu.vector_bits(), 512);
  }
  EXPECT_LE(cpu.fma_datapath_bits(), cpu.vector_bits());
}
