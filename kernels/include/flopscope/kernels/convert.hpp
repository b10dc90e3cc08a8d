// Bulk conversion between f32 and the narrow dtypes (f16, bf16, f8e4m3, f8e5m2), both ways.
// "encode": f32 -> narrow (rounding to nearest even, Note [saturation] in numerics.hpp);
// "decode": narrow -> f32 (exact). Narrow elements are their bit patterns: uint16_t for f16 and
// bf16, uint8_t for fp8. Every variant agrees bit for bit with flopscope::encode_bits /
// decode_bits, NaNs included (Note [NaN encoding]).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "flopscope/dtype.hpp"

namespace flopscope::kernels {

inline constexpr std::array<DType, 4> kNarrowDTypes = {DType::f16, DType::bf16, DType::f8e4m3, DType::f8e5m2};

using EncodeFn = void (*)(const float* in, void* out, std::size_t count, DType to, bool saturate);
using DecodeFn = void (*)(const void* in, float* out, std::size_t count, DType from);

struct ConvertVariant {
  std::string_view name;
  std::string_view description;
  std::span<const DType> dtypes;  // the narrow dtypes it converts, both directions
  EncodeFn encode;                // threaded with OpenMP above a few thousand elements
  DecodeFn decode;
  std::optional<std::string> (*unavailable)();  // nullopt where this CPU can run it, else why not

  bool supports(DType dtype) const;
  bool available() const { return !unavailable(); }
};

// CPU variants (kernels/cpu/convert.cpp), in one table.
std::span<const ConvertVariant> cpu_convert_variants();
const ConvertVariant* find_cpu_convert_variant(std::string_view name);
// The fastest variant this CPU can run for `dtype` (never null for a narrow dtype).
const ConvertVariant& best_cpu_convert_variant(DType dtype);

// The reference: one element at a time through flopscope::encode_bits / decode_bits.
// Deliberately simple and slow.
void encode_reference(const float* in, void* out, std::size_t count, DType to, bool saturate);
void decode_reference(const void* in, float* out, std::size_t count, DType from);

// Outputs of more bytes than this are written with non-temporal (streaming) stores by the
// vector variants. Default: the last-level cache size (32 MiB where unknown). Tests lower it
// to exercise the streaming path on small arrays.
std::size_t convert_streaming_threshold_bytes();
void set_convert_streaming_threshold_bytes(std::size_t bytes);

}  // namespace flopscope::kernels

#ifdef FLOPSCOPE_HAVE_CUDA
namespace flopscope::kernels::cuda {

// CUDA conversion (kernels/cuda/convert.cu) with the toolkit's intrinsics: __float2half_rn,
// __float2bfloat16_rn, __nv_cvt_float_to_fp8 (__NV_SATFINITE / __NV_NOSAT), and back.
// `in` and `out` are device pointers; the kernel is enqueued on `stream` (a cudaStream_t passed
// as void*) and not waited for. Throws std::runtime_error on a launch error.
void encode(const float* in, void* out, std::size_t count, DType to, bool saturate, void* stream = nullptr);
void decode(const void* in, float* out, std::size_t count, DType from, void* stream = nullptr);

// The same on host arrays: copies in, converts, copies back, synchronizes. For tests and tools.
void encode_host(const float* in, void* out, std::size_t count, DType to, bool saturate);
void decode_host(const void* in, float* out, std::size_t count, DType from);

}  // namespace flopscope::kernels::cuda
#endif
