// Bulk conversion between f32 and the narrow dtypes (f16, bf16, f8e4m3, f8e5m2), both ways.
// "encode": f32 -> narrow (rounding to nearest even, Note [saturation] in numerics.hpp);
// "decode": narrow -> f32 (exact). The direction follows the operands' dtypes. Narrow elements
// are their bit patterns: uint16_t for f16 and bf16, uint8_t for fp8. Every variant agrees bit for
// bit with flopscope::encode_bits / decode_bits, NaNs included (Note [NaN encoding]).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "flopscope/dtype.hpp"
#include "flopscope/kernels/variant.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

inline constexpr std::array<DType, 4> kNarrowDTypes = {DType::f16, DType::bf16, DType::f8e4m3, DType::f8e5m2};

// dst and src: contiguous, one element count; one of them f32, the other a narrow dtype.
struct ConvertProblem {
  TensorRef dst;
  TensorRef src;
  bool saturate = false;  // overflow to +/- max finite instead of inf/NaN (encode only)

  bool encodes() const { return src.dtype == DType::f32; }
  DType narrow() const { return encodes() ? dst.dtype : src.dtype; }
};
using ConvertVariant = Variant<ConvertProblem>;

// nullopt for a well-formed problem, else what is wrong with it (every variant checks this first).
std::optional<std::string> convert_problem_error(const ConvertProblem& problem);

// CPU variants (kernels/cpu/convert.cpp) and CUDA variants (kernels/cuda/convert.cu; empty
// without CUDA), one table each. CPU variants run threaded with OpenMP above a few thousand
// elements.
std::span<const ConvertVariant> cpu_convert_variants();
std::span<const ConvertVariant> cuda_convert_variants();
// The fastest CPU variant this CPU can run for `dtype` (never null for a narrow dtype).
const ConvertVariant& best_cpu_convert_variant(DType dtype);

// The reference: one element at a time through flopscope::encode_bits / decode_bits.
// Deliberately simple and slow. Host operands.
void convert_reference(const ConvertProblem& problem);
void encode_reference(const float* in, void* out, std::size_t count, DType to, bool saturate);
void decode_reference(const void* in, float* out, std::size_t count, DType from);

// Runs `variant` on host arrays (a CPU variant directly; a CUDA one copies in, converts, copies
// back and synchronizes): for tests and tools.
void convert_host(const ConvertVariant& variant, const void* in, DType from, void* out, DType to,
                  std::size_t count, bool saturate = false);

// Outputs of more bytes than this are written with non-temporal (streaming) stores by the
// vector variants. Default: the last-level cache size (32 MiB where unknown). Tests lower it
// to exercise the streaming path on small arrays.
std::size_t convert_streaming_threshold_bytes();
void set_convert_streaming_threshold_bytes(std::size_t bytes);

}  // namespace flopscope::kernels
