#include "flopscope/compute_mode.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace flopscope {

namespace {

constexpr std::array<ComputeModeInfo, 9> kModes = {{
    {ComputeMode::f64, "f64", "f64", DType::f64, DType::f64, DType::f64, "f64", "IEEE binary64 arithmetic"},
    {ComputeMode::f32, "f32", "f32", DType::f32, DType::f32, DType::f32, "f32",
     "IEEE binary32 arithmetic (CUDA cores, CPU FMA)"},
    {ComputeMode::tf32, "tf32", "f32", DType::f32, DType::f32, DType::f32, "tf32",
     "matmul mode of NVIDIA tensor cores (sm_80+): f32 operands rounded to 10 mantissa bits, f32 "
     "accumulation; not a storage type (PyTorch: allow_tf32 / set_float32_matmul_precision('high'))",
     10},
    {ComputeMode::f16, "f16", "f16", DType::f16, DType::f16, DType::f32, "f16",
     "f16 operands, f32 accumulation (tensor cores; AVX512-FP16 can also accumulate in f16)"},
    {ComputeMode::bf16, "bf16", "bf16", DType::bf16, DType::bf16, DType::f32, "bf16",
     "bf16 operands, f32 accumulation (tensor cores, AVX512_BF16 vdpbf16ps, AMX)"},
    {ComputeMode::f8e4m3, "f8e4m3", "f8e4m3", DType::f8e4m3, DType::f8e4m3, DType::f32, "f8",
     "fp8 operands with per-tensor scales, f32 accumulation (sm_89+)"},
    {ComputeMode::f8e5m2, "f8e5m2", "f8e5m2", DType::f8e5m2, DType::f8e5m2, DType::f32, "f8",
     "fp8 operands (gradients), f32 accumulation (no e5m2 x e5m2 GEMM in cuBLASLt: it pairs e5m2 with e4m3)"},
    {ComputeMode::f8e4m3_e5m2, "f8e4m3_e5m2", "f8e4m3,f8e5m2", DType::f8e4m3, DType::f8e5m2, DType::f32, "f8",
     "e4m3 x e5m2 (activations x gradients), f32 accumulation (sm_89+)"},
    {ComputeMode::f8e5m2_e4m3, "f8e5m2_e4m3", "f8e5m2,f8e4m3", DType::f8e5m2, DType::f8e4m3, DType::f32, "f8",
     "e5m2 x e4m3 (gradients x weights), f32 accumulation (sm_89+)"},
}};
}  // namespace

std::span<const ComputeModeInfo> compute_modes() { return kModes; }

const ComputeModeInfo& compute_mode_info(ComputeMode mode) {
  for (const auto& info : kModes)
    if (info.mode == mode) return info;
  throw std::logic_error("compute_mode_info: unknown mode");
}

std::string_view compute_mode_name(ComputeMode mode) { return compute_mode_info(mode).name; }

std::optional<ComputeMode> parse_compute_mode(std::string_view text) {
  for (const auto& info : kModes)
    if (info.name == text) return info.mode;
  if (auto dtype = parse_dtype(text)) return natural_compute_mode(*dtype);
  return std::nullopt;
}

std::string compute_mode_list() {
  std::string out;
  for (const auto& info : kModes) out += (out.empty() ? "" : ", ") + std::string(info.name);
  return out;
}

ComputeMode natural_compute_mode(DType dtype) {
  const std::string_view name = dtype_row(dtype).natural_compute;  // Note [one dtype table]
  for (const auto& info : kModes)
    if (info.name == name) return info.mode;
  throw std::logic_error("natural_compute_mode: no compute mode '" + std::string(name) + "'");
}

std::string_view peak_key(ComputeMode mode) { return compute_mode_info(mode).peak_key; }

}  // namespace flopscope
