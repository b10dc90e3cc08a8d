// Conversion between f32 and the narrow dtypes on the CPU, both directions.
//
// Variants (one row each in kVariants below; every variant converts both ways, the direction
// following the operands' dtypes):
//   scalar      every narrow dtype: one element at a time through the inline f32 paths of
//               numerics.hpp; the baseline (threaded like the others).
//   f16c        f16 only: AVX + F16C vcvtps2ph / vcvtph2ps, 8 lanes; runs on AVX2-era CPUs.
//   avx512      every narrow dtype: f16 by AVX512F vcvtps2ph / vcvtph2ps (16 lanes); bf16 and
//               fp8 in software, the rounding of numerics.hpp (fast::encode_f32) on 16 lanes.
//   avx512bf16  bf16 only: AVX512_BF16 vcvtne2ps2bf16 (32 results per instruction).
//   avx512fp16  f16 only: AVX512-FP16 vcvtps2phx / vcvtph2psx.
// Every vector variant: one chunk per OpenMP thread above kParallelMinimum elements; the output
// is aligned to 64 bytes by a scalar head; when input plus output exceed
// convert_streaming_threshold_bytes() it is written with non-temporal stores (no read for ownership, no eviction of the input).
//
// Note [hardware conversion fix-ups]: the instructions round to nearest even like the
// reference, but differ from it in three places, fixed around them so that all variants agree
// bit for bit: (1) NaN payloads: the instructions keep them, the reference writes one canonical
// NaN (Note [NaN encoding]); NaN inputs are replaced by the canonical f32 NaN before encoding and
// NaN results replaced after decoding. (2) Saturation: the instructions overflow to inf; with
// `saturate` the input is clamped to +/- the largest finite value first (clamping cannot change
// a rounding, since everything between max and the overflow threshold rounds to max anyway).
// (3) vcvtne2ps2bf16 treats f32 subnormal inputs as zero (DAZ) whatever MXCSR says, whereas the
// reference keeps them (they are bf16 subnormals, e.g. 1e-39 -> 0x000b); a block that contains
// one is converted in software instead. F16C and AVX512-FP16 handle subnormals correctly in
// the default MXCSR (DAZ and FTZ off), which the software paths also assume.
#include "flopscope/kernels/convert.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "flopscope/cpu_info.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/numerics.hpp"
#include "parallel.hpp"

// GCC 12 reports its own _mm512_undefined_*() placeholders inside the intrinsic headers as
// uninitialized (GCC bug 105593); nothing of ours is.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace flopscope::kernels {

namespace f = flopscope::fast;

// Stores one code where the output may be misaligned for T (a conversion writes to any byte
// address): memcpy is one plain store, without the undefined behaviour of a misaligned T lvalue.
template <class T>
inline void store_code(T* out, std::uint32_t code) {
  const auto value = static_cast<T>(code);
  std::memcpy(out, &value, sizeof value);
}

std::optional<std::string> convert_problem_error(const ConvertProblem& p) {
  const bool narrow_known = std::find(kNarrowDTypes.begin(), kNarrowDTypes.end(), p.narrow()) != kNarrowDTypes.end();
  if ((p.src.dtype == DType::f32) == (p.dst.dtype == DType::f32) || !narrow_known)
    return "converts f32 to and from f16, bf16, f8e4m3, f8e5m2, not " + std::string(dtype_name(p.src.dtype)) + "->" +
           std::string(dtype_name(p.dst.dtype));
  if (!p.src.is_contiguous() || !p.dst.is_contiguous() || p.src.numel() != p.dst.numel())
    return "needs contiguous operands of one element count (" + p.dst.str() + " <- " + p.src.str() + ")";
  return std::nullopt;
}

void convert_reference(const ConvertProblem& p) {
  if (auto error = convert_problem_error(p)) throw std::invalid_argument("convert_reference: " + *error);
  const auto count = static_cast<std::size_t>(p.src.numel());
  if (p.encodes())
    encode_reference(p.src.ptr<float>(), p.dst.element_data(), count, p.dst.dtype, p.saturate);
  else
    decode_reference(p.src.element_data(), p.dst.ptr<float>(), count, p.src.dtype);
}

void convert_host(const ConvertVariant& variant, const void* in, DType from, void* out, DType to, std::size_t count,
                  bool saturate) {
  const std::int64_t sizes[] = {static_cast<std::int64_t>(count)};
  if (variant.device == Device::Kind::cpu) {
    variant.prepare({TensorRef::contiguous(out, to, sizes), TensorRef::contiguous(const_cast<void*>(in), from, sizes),
                     saturate})(nullptr);
    return;
  }
  const std::size_t in_bytes = count * dtype_size(from), out_bytes = count * dtype_size(to);
  cuda::DeviceMemory device_in(in_bytes), device_out(out_bytes);
  cuda::copy_to_device(device_in.data, in, in_bytes);
  variant.prepare({TensorRef::contiguous(device_out.data, to, sizes, Device::cuda(0)),
                   TensorRef::contiguous(device_in.data, from, sizes, Device::cuda(0)), saturate})(nullptr);
  cuda::synchronize();
  cuda::copy_to_host(out, device_out.data, out_bytes);
}

// ---- reference -------------------------------------------------------------------------------

// Element by element through lib's encode_bits/decode_bits; both threads on a large count (the
// conversions' validation at 64Mi elements, and every network step's rounding).
void encode_reference(const float* in, void* out, std::size_t count, DType to, bool saturate) {
  const bool two_bytes = dtype_size(to) == 2;
  const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(static) if (n >= (std::int64_t{1} << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t bits = encode_bits(to, in[i], saturate);
    if (two_bytes)
      static_cast<std::uint16_t*>(out)[i] = static_cast<std::uint16_t>(bits);
    else
      static_cast<std::uint8_t*>(out)[i] = static_cast<std::uint8_t>(bits);
  }
}

void decode_reference(const void* in, float* out, std::size_t count, DType from) {
  const bool two_bytes = dtype_size(from) == 2;
  const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(static) if (n >= (std::int64_t{1} << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t bits =
        two_bytes ? static_cast<const std::uint16_t*>(in)[i] : static_cast<const std::uint8_t*>(in)[i];
    out[i] = static_cast<float>(decode_bits(from, bits));
  }
}

// ---- common ----------------------------------------------------------------------------------

namespace {

std::atomic<std::size_t> g_streaming_threshold{0};

constexpr std::size_t kParallelMinimum = std::size_t{1} << 15;

void require_narrow(DType dtype) {
  if (std::find(kNarrowDTypes.begin(), kNarrowDTypes.end(), dtype) == kNarrowDTypes.end())
    throw std::invalid_argument("convert: " + std::string(dtype_name(dtype)) + " is not a narrow dtype");
}

// Streaming stores once input and output together exceed half the last-level cache: a shared
// LLC (a VM's 480 MiB L3 is the whole socket's) does not hold the arrays, the output would only
// evict the input, and its read for ownership costs bandwidth (measured: +5-10% at 2^26 f32).
bool streaming_for(std::size_t count, DType dtype, bool /*decode*/) {
  const std::size_t working_set = count * (sizeof(float) + dtype_size(dtype));
  return 2 * working_set > convert_streaming_threshold_bytes();
}

template <class F>
std::uint32_t scalar_encode(float x, bool saturate) { return f::encode_f32<F>(x, saturate); }
template <class F>
float scalar_decode(std::uint32_t h) { return f::decode_f32<F>(h); }

// A narrow dtype's codes as stored: the unsigned integer of its size (from the dtype table).
template <DType D>
using CodeOf = std::conditional_t<dtype_row(D).size == 2, std::uint16_t, std::uint8_t>;

// Dispatches on the narrow dtype to Kernel::template encode/decode<Format, Code>(...), for the
// dtypes a variant supports.
template <class Kernel, DType... Supported>
void encode_dispatch(const float* in, void* out, std::size_t count, DType to, bool saturate) {
  require_narrow(to);
  const bool streaming = streaming_for(count, to, false);
  if (((to != Supported) && ...)) throw std::invalid_argument("convert: variant does not convert " + std::string(dtype_name(to)));
  auto go = [&]<DType D>() {
    using T = CodeOf<D>;
    T* dst = static_cast<T*>(out);
    parallel_chunks(count, 64, kParallelMinimum, [&](std::size_t begin, std::size_t n) {
      Kernel::template encode<f::FormatOf<D>, T>(in + begin, dst + begin, n, saturate, streaming);
    });
  };
  ((to == Supported && (go.template operator()<Supported>(), true)) || ...);
}

template <class Kernel, DType... Supported>
void decode_dispatch(const void* in, float* out, std::size_t count, DType from) {
  require_narrow(from);
  const bool streaming = streaming_for(count, from, true);
  if (((from != Supported) && ...)) throw std::invalid_argument("convert: variant does not convert " + std::string(dtype_name(from)));
  auto go = [&]<DType D>() {
    using T = CodeOf<D>;
    const T* src = static_cast<const T*>(in);
    parallel_chunks(count, 64, kParallelMinimum, [&](std::size_t begin, std::size_t n) {
      Kernel::template decode<f::FormatOf<D>, T>(src + begin, out + begin, n, streaming);
    });
  };
  ((from == Supported && (go.template operator()<Supported>(), true)) || ...);
}

// ---- scalar ----------------------------------------------------------------------------------

struct ScalarKernel {
  template <class F, class T>
  static void encode(const float* in, T* out, std::size_t n, bool saturate, bool) {
    for (std::size_t i = 0; i < n; ++i) store_code(out + i, f::encode_f32<F>(in[i], saturate));
  }
  template <class F, class T>
  static void decode(const T* in, float* out, std::size_t n, bool) {
    for (std::size_t i = 0; i < n; ++i) out[i] = f::decode_f32<F>(in[i]);
  }
};

// ---- AVX-512 building blocks -----------------------------------------------------------------

#define FLOPSCOPE_AVX512 __attribute__((target("avx512f")))

FLOPSCOPE_AVX512 inline __m512i splat(std::uint32_t value) { return _mm512_set1_epi32(static_cast<int>(value)); }

// 16 f32 -> 16 codes (in 32-bit lanes) by the integer rounding of numerics.hpp (fast::encode_f32).
template <class F>
FLOPSCOPE_AVX512 inline __m512i software_codes(__m512 x, bool saturate) {
  constexpr int shift = 23 - F::mantissa_bits;
  const __m512i u = _mm512_castps_si512(x);
  const __m512i a = _mm512_and_si512(u, splat(0x7fffffffu));
  const __m512i sign = _mm512_slli_epi32(_mm512_srli_epi32(u, 31), F::exponent_bits + F::mantissa_bits);
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(a, splat(0x7f800000u));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(a, shift), splat(1));
  __m512i r = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(a, splat(F::f32_rebias + F::f32_half_ulp_minus_one)), odd), shift);
  if constexpr (F::bias != 127) {  // bf16 shares f32's exponent range: the above covers subnormals too
    // Results below the smallest normal, as fast::encode_f32: |x| + 2^(1 - bias - M + 23) rounds
    // |x| to a multiple of the smallest subnormal (the hardware's round to nearest even) and
    // leaves that multiple in the low bits. The sum is a normal f32; only an f32 subnormal input
    // (rare in tensors) can cost a microcode assist, on some x86 cores. Three instructions where
    // rounding in integers took twelve (variable shifts, remainder, tie test).
    const __mmask16 is_small = _mm512_cmplt_epu32_mask(a, splat(F::f32_min_normal));
    const __m512 magic = _mm512_castsi512_ps(splat(F::f32_subnormal_magic));
    const __m512i rounded = _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), magic));
    r = _mm512_mask_sub_epi32(r, is_small, rounded, splat(F::f32_subnormal_magic));
  }
  const __mmask16 over = _mm512_cmpgt_epu32_mask(r, splat(F::max_finite));
  r = _mm512_mask_mov_epi32(r, over, splat(saturate ? F::max_finite : F::overflow));
  r = _mm512_mask_mov_epi32(r, is_nan, splat(F::nan));
  return _mm512_or_si512(r, sign);
}

// 16 codes (zero-extended to 32-bit lanes) -> 16 f32, exact, as fast::decode_f32: integer
// rebias for normal codes, mantissa x smallest subnormal for subnormal codes (never arithmetic
// on f32 subnormals, which costs a microcode assist per instruction on x86).
template <class F>
FLOPSCOPE_AVX512 inline __m512 software_decode(__m512i h) {
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(h, splat(F::sign_bit)),
                                         31 - F::exponent_bits - F::mantissa_bits);
  const __m512i a = _mm512_and_si512(h, splat(F::abs_mask));
  __m512i bits;
  if constexpr (F::bias == 127) {
    bits = _mm512_slli_epi32(a, 16);  // bf16: the top half of an f32
  } else {
    bits = _mm512_add_epi32(_mm512_slli_epi32(a, 23 - F::mantissa_bits), splat(F::f32_decode_rebias));
    const __mmask16 subnormal = _mm512_cmplt_epu32_mask(a, splat(1u << F::mantissa_bits));
    const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(a), _mm512_castsi512_ps(splat(F::f32_smallest_subnormal)));
    bits = _mm512_mask_mov_epi32(bits, subnormal, _mm512_castps_si512(scaled));
  }
  if constexpr (F::ieee) {
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epu32_mask(a, splat(F::inf)), splat(0x7f800000u));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpgt_epu32_mask(a, splat(F::inf)), splat(0x7fc00000u));
  } else {
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epu32_mask(a, splat(F::abs_mask)), splat(0x7fc00000u));
  }
  return _mm512_castsi512_ps(_mm512_or_si512(bits, sign));
}

// Note [hardware conversion fix-ups] (1) and (2): NaN -> canonical f32 NaN, clamp when saturating.
FLOPSCOPE_AVX512 inline __m512 prepare_for_hardware(__m512 x, bool saturate, float max_finite) {
  const __mmask16 is_nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512i canonical = _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(x), splat(0x80000000u)),
                                            splat(0x7fc00000u));
  if (saturate) x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-max_finite)), _mm512_set1_ps(max_finite));
  return _mm512_mask_mov_ps(x, is_nan, _mm512_castsi512_ps(canonical));
}

FLOPSCOPE_AVX512 inline __m512 canonicalize_nan(__m512 y) {
  const __mmask16 is_nan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
  const __m512i canonical = _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(y), splat(0x80000000u)),
                                            splat(0x7fc00000u));
  return _mm512_mask_mov_ps(y, is_nan, _mm512_castsi512_ps(canonical));
}

FLOPSCOPE_AVX512 inline void store64(void* p, __m512i v, bool streaming) {
  if (streaming)
    _mm512_stream_si512(static_cast<__m512i*>(p), v);
  else
    _mm512_store_si512(p, v);
}

// The chunk driver: scalar head to a 64-byte aligned output, 64-byte blocks, scalar tail.
// Block::encode(const float* in, bool saturate) -> __m512i of 64 bytes of codes;
// Block::decode(const T* in) -> __m512 of 16 f32.
template <class F, class T, class Block>
FLOPSCOPE_AVX512 void encode_blocks(const float* in, T* out, std::size_t n, bool saturate, bool streaming) {
  constexpr std::size_t per_block = 64 / sizeof(T);
  std::size_t i = 0;
  const bool alignable = reinterpret_cast<std::uintptr_t>(out) % sizeof(T) == 0;
  if (alignable)
    for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % 64 != 0; ++i)
      out[i] = static_cast<T>(f::encode_f32<F>(in[i], saturate));
  if (alignable) {
    for (; i + per_block <= n; i += per_block) store64(out + i, Block::template encode<F>(in + i, saturate), streaming);
    if (streaming) _mm_sfence();
  } else {
    for (; i + per_block <= n; i += per_block) _mm512_storeu_si512(out + i, Block::template encode<F>(in + i, saturate));
  }
  for (; i < n; ++i) store_code(out + i, f::encode_f32<F>(in[i], saturate));
}

template <class F, class T, class Block>
FLOPSCOPE_AVX512 void decode_blocks(const T* in, float* out, std::size_t n, bool streaming) {
  std::size_t i = 0;
  const bool alignable = reinterpret_cast<std::uintptr_t>(out) % sizeof(float) == 0;
  if (alignable)
    for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % 64 != 0; ++i) out[i] = f::decode_f32<F>(in[i]);
  if (alignable && streaming) {
    for (; i + 64 <= n; i += 64)
      for (std::size_t k = 0; k < 64; k += 16) _mm512_stream_ps(out + i + k, Block::template decode<F>(in + i + k));
    _mm_sfence();
  } else if (alignable) {
    for (; i + 64 <= n; i += 64)
      for (std::size_t k = 0; k < 64; k += 16) _mm512_store_ps(out + i + k, Block::template decode<F>(in + i + k));
  } else {
    for (; i + 64 <= n; i += 64)
      for (std::size_t k = 0; k < 64; k += 16) _mm512_storeu_ps(out + i + k, Block::template decode<F>(in + i + k));
  }
  for (; i < n; ++i) out[i] = f::decode_f32<F>(in[i]);
}

FLOPSCOPE_AVX512 inline __m512i load16_u16(const std::uint16_t* p) {
  return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
FLOPSCOPE_AVX512 inline __m512i load16_u8(const std::uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Software blocks for every format; f16 by AVX512F's vcvtps2ph / vcvtph2ps.
struct Avx512Block {
  template <class F>
  FLOPSCOPE_AVX512 static __m512i encode(const float* in, bool saturate) {
    if constexpr (std::is_same_v<F, f::F16>) {
      constexpr float max = 65504.0f;
      const __m256i lo = _mm512_cvtps_ph(prepare_for_hardware(_mm512_loadu_ps(in), saturate, max), _MM_FROUND_TO_NEAREST_INT);
      const __m256i hi = _mm512_cvtps_ph(prepare_for_hardware(_mm512_loadu_ps(in + 16), saturate, max), _MM_FROUND_TO_NEAREST_INT);
      return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    } else if constexpr (F::sign_bit == 0x8000u) {  // bf16
      const __m256i lo = _mm512_cvtepi32_epi16(software_codes<F>(_mm512_loadu_ps(in), saturate));
      const __m256i hi = _mm512_cvtepi32_epi16(software_codes<F>(_mm512_loadu_ps(in + 16), saturate));
      return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    } else {  // fp8: 64 codes
      __m512i out = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(software_codes<F>(_mm512_loadu_ps(in), saturate)));
      out = _mm512_inserti32x4(out, _mm512_cvtepi32_epi8(software_codes<F>(_mm512_loadu_ps(in + 16), saturate)), 1);
      out = _mm512_inserti32x4(out, _mm512_cvtepi32_epi8(software_codes<F>(_mm512_loadu_ps(in + 32), saturate)), 2);
      return _mm512_inserti32x4(out, _mm512_cvtepi32_epi8(software_codes<F>(_mm512_loadu_ps(in + 48), saturate)), 3);
    }
  }
  template <class F, class T>
  FLOPSCOPE_AVX512 static __m512 decode(const T* in) {
    if constexpr (std::is_same_v<F, f::F16>) {
      return canonicalize_nan(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in))));
    } else if constexpr (sizeof(T) == 2) {
      return software_decode<F>(load16_u16(in));
    } else {
      return software_decode<F>(load16_u8(in));
    }
  }
};

struct Avx512Kernel {
  template <class F, class T>
  FLOPSCOPE_AVX512 static void encode(const float* in, T* out, std::size_t n, bool saturate, bool streaming) {
    encode_blocks<F, T, Avx512Block>(in, out, n, saturate, streaming);
  }
  template <class F, class T>
  FLOPSCOPE_AVX512 static void decode(const T* in, float* out, std::size_t n, bool streaming) {
    decode_blocks<F, T, Avx512Block>(in, out, n, streaming);
  }
};

// ---- AVX512_BF16 -----------------------------------------------------------------------------

#define FLOPSCOPE_AVX512BF16 __attribute__((target("avx512f,avx512bf16")))

struct Avx512Bf16Block {
  template <class F>
  FLOPSCOPE_AVX512BF16 static __m512i encode(const float* in, bool saturate) {
    constexpr float max = std::bit_cast<float>(0x7f7f0000u);  // largest finite bf16
    const __m512 lo = _mm512_loadu_ps(in), hi = _mm512_loadu_ps(in + 16);
    // Note [hardware conversion fix-ups] (3): f32 subnormals (exponent 0, nonzero) are read as 0.
    const __m512i exponent = splat(0x7f800000u), magnitude = splat(0x7fffffffu);
    const __mmask16 sub_lo = _mm512_testn_epi32_mask(_mm512_castps_si512(lo), exponent) &
                             _mm512_test_epi32_mask(_mm512_castps_si512(lo), magnitude);
    const __mmask16 sub_hi = _mm512_testn_epi32_mask(_mm512_castps_si512(hi), exponent) &
                             _mm512_test_epi32_mask(_mm512_castps_si512(hi), magnitude);
    if (__builtin_expect((sub_lo | sub_hi) != 0, 0)) return Avx512Block::encode<F>(in, saturate);
    const __m512bh packed = _mm512_cvtne2ps_pbh(prepare_for_hardware(hi, saturate, max),
                                                prepare_for_hardware(lo, saturate, max));
    return (__m512i)packed;  // same 64 bytes, as a vector of ints
  }
  template <class F, class T>
  FLOPSCOPE_AVX512BF16 static __m512 decode(const T* in) {
    return software_decode<F>(load16_u16(in));  // a shift: there is no faster instruction
  }
};

struct Avx512Bf16Kernel {
  template <class F, class T>
  FLOPSCOPE_AVX512BF16 static void encode(const float* in, T* out, std::size_t n, bool saturate, bool streaming) {
    encode_blocks<F, T, Avx512Bf16Block>(in, out, n, saturate, streaming);
  }
  template <class F, class T>
  FLOPSCOPE_AVX512BF16 static void decode(const T* in, float* out, std::size_t n, bool streaming) {
    decode_blocks<F, T, Avx512Bf16Block>(in, out, n, streaming);
  }
};

// ---- AVX512-FP16 -----------------------------------------------------------------------------

#define FLOPSCOPE_AVX512FP16 __attribute__((target("avx512f,avx512vl,avx512fp16")))

struct Avx512Fp16Block {
  template <class F>
  FLOPSCOPE_AVX512FP16 static __m512i encode(const float* in, bool saturate) {
    constexpr float max = 65504.0f;
    const __m256h lo = _mm512_cvtxps_ph(prepare_for_hardware(_mm512_loadu_ps(in), saturate, max));
    const __m256h hi = _mm512_cvtxps_ph(prepare_for_hardware(_mm512_loadu_ps(in + 16), saturate, max));
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castph_si256(lo)), _mm256_castph_si256(hi), 1);
  }
  template <class F, class T>
  FLOPSCOPE_AVX512FP16 static __m512 decode(const T* in) {
    const __m256h h = _mm256_castsi256_ph(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
    return canonicalize_nan(_mm512_cvtxph_ps(h));
  }
};

struct Avx512Fp16Kernel {
  template <class F, class T>
  FLOPSCOPE_AVX512FP16 static void encode(const float* in, T* out, std::size_t n, bool saturate, bool streaming) {
    encode_blocks<F, T, Avx512Fp16Block>(in, out, n, saturate, streaming);
  }
  template <class F, class T>
  FLOPSCOPE_AVX512FP16 static void decode(const T* in, float* out, std::size_t n, bool streaming) {
    decode_blocks<F, T, Avx512Fp16Block>(in, out, n, streaming);
  }
};

// ---- F16C (AVX, 8 lanes) ---------------------------------------------------------------------

#define FLOPSCOPE_F16C __attribute__((target("avx,f16c")))

// mask ? a : b, lane-wise, with bitwise operations (GCC 12 scalarizes _mm256_blendv_ps here).
FLOPSCOPE_F16C inline __m256 select(__m256 mask, __m256 a, __m256 b) {
  return _mm256_or_ps(_mm256_and_ps(mask, a), _mm256_andnot_ps(mask, b));
}

FLOPSCOPE_F16C inline __m256 prepare_for_f16c(__m256 x, bool saturate) {
  const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 canonical = _mm256_or_ps(_mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))),
                                        _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)));
  if (saturate) x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-65504.0f)), _mm256_set1_ps(65504.0f));
  return select(is_nan, canonical, x);
}

struct F16cKernel {
  template <class F, class T>
  FLOPSCOPE_F16C static void encode(const float* in, T* out, std::size_t n, bool saturate, bool streaming) {
    std::size_t i = 0;
    const bool alignable = reinterpret_cast<std::uintptr_t>(out) % sizeof(T) == 0;
    if (alignable)
      for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % 32 != 0; ++i)
        out[i] = static_cast<T>(f::encode_f32<F>(in[i], saturate));
    for (; i + 16 <= n; i += 16) {
      const __m128i lo = _mm256_cvtps_ph(prepare_for_f16c(_mm256_loadu_ps(in + i), saturate), _MM_FROUND_TO_NEAREST_INT);
      const __m128i hi = _mm256_cvtps_ph(prepare_for_f16c(_mm256_loadu_ps(in + i + 8), saturate), _MM_FROUND_TO_NEAREST_INT);
      const __m256i both = _mm256_insertf128_si256(_mm256_castsi128_si256(lo), hi, 1);
      auto* p = reinterpret_cast<__m256i*>(out + i);
      if (alignable && streaming)
        _mm256_stream_si256(p, both);
      else
        _mm256_storeu_si256(p, both);
    }
    if (alignable && streaming) _mm_sfence();
    for (; i < n; ++i) store_code(out + i, f::encode_f32<F>(in[i], saturate));
  }
  template <class F, class T>
  FLOPSCOPE_F16C static void decode(const T* in, float* out, std::size_t n, bool streaming) {
    std::size_t i = 0;
    const bool alignable = reinterpret_cast<std::uintptr_t>(out) % sizeof(float) == 0;
    if (alignable)
      for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % 32 != 0; ++i) out[i] = f::decode_f32<F>(in[i]);
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN));
    const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
    for (; i + 8 <= n; i += 8) {
      __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
      y = select(_mm256_cmp_ps(y, y, _CMP_UNORD_Q), _mm256_or_ps(_mm256_and_ps(y, sign), qnan), y);
      if (alignable && streaming)
        _mm256_stream_ps(out + i, y);
      else
        _mm256_storeu_ps(out + i, y);
    }
    if (alignable && streaming) _mm_sfence();
    for (; i < n; ++i) out[i] = f::decode_f32<F>(in[i]);
  }
};

// ---- the table -------------------------------------------------------------------------------

// One variant's call: the direction follows the operands (f32 source: encode).
template <class Kernel, DType... Supported>
void convert_run(const ConvertProblem& p, Stream) {
  const auto count = static_cast<std::size_t>(p.src.numel());
  if (p.encodes())
    encode_dispatch<Kernel, Supported...>(p.src.ptr<float>(), p.dst.element_data(), count, p.dst.dtype, p.saturate);
  else
    decode_dispatch<Kernel, Supported...>(p.src.element_data(), p.dst.ptr<float>(), count, p.src.dtype);
}

// Whether a variant converts this narrow dtype at all (an f16-only variant asked for bf16: not a
// combination that exists, so not a skip).
template <DType... Supported>
bool converts(const ConvertProblem& p) {
  return ((p.narrow() == Supported) || ...);
}

// What the CPU must have, as /proc/cpuinfo names it, then whether the problem is well formed.
template <const char*... Flags>
std::optional<std::string> cpu_needs(const ConvertProblem& p) {
  if (auto error = convert_problem_error(p)) return error;
  return cpu_lacks({std::string_view(Flags)...});
}

constexpr char kAvx[] = "avx", kF16c[] = "f16c", kAvx512f[] = "avx512f", kAvx512Bf16[] = "avx512_bf16",
               kAvx512Vl[] = "avx512vl", kAvx512Fp16[] = "avx512_fp16";

constexpr DType kF16 = DType::f16, kBf16 = DType::bf16, kE4M3 = DType::f8e4m3, kE5M2 = DType::f8e5m2;

const std::array<ConvertVariant, 5> kVariants = {{
    {"scalar", "one element at a time through the inline f32 paths (numerics.hpp)", Device::Kind::cpu, cpu_needs<>,
     direct<ConvertProblem, convert_run<ScalarKernel, kF16, kBf16, kE4M3, kE5M2>>, nullptr, {}, Role::own,
     {.checker = true}},
    {"f16c", "AVX + F16C vcvtps2ph / vcvtph2ps, 8 lanes", Device::Kind::cpu, cpu_needs<kAvx, kF16c>,
     direct<ConvertProblem, convert_run<F16cKernel, kF16>>, converts<kF16>, {}, Role::own, {.speed = 1}},
    {"avx512", "AVX512F: f16 by vcvtps2ph / vcvtph2ps, bf16 and fp8 by integer rounding on 16 lanes",
     Device::Kind::cpu, cpu_needs<kAvx512f>, direct<ConvertProblem, convert_run<Avx512Kernel, kF16, kBf16, kE4M3, kE5M2>>,
     nullptr, {}, Role::own, {.speed = 3}},
    {"avx512bf16", "AVX512_BF16 vcvtne2ps2bf16 (subnormal inputs in software)", Device::Kind::cpu,
     cpu_needs<kAvx512f, kAvx512Bf16>, direct<ConvertProblem, convert_run<Avx512Bf16Kernel, kBf16>>, converts<kBf16>, {}, Role::own,
     {.speed = 4}},
    {"avx512fp16", "AVX512-FP16 vcvtps2phx / vcvtph2psx", Device::Kind::cpu, cpu_needs<kAvx512Vl, kAvx512Fp16>,
     direct<ConvertProblem, convert_run<Avx512Fp16Kernel, kF16>>, converts<kF16>, {}, Role::own,
     {.speed = 2}},
}};

}  // namespace

std::span<const ConvertVariant> cpu_convert_variants() { return kVariants; }

const ConvertVariant& best_cpu_convert_variant(DType dtype) {
  // The rows' speed, as measured with bench_convert at 256 MiB on a Sapphire Rapids VM: bf16 by
  // vcvtne2ps2bf16 >= software; f16 by AVX512F vcvtps2ph >= AVX512-FP16 vcvtps2phx > F16C; the
  // scalar paths (speed 0) where none of them runs here.
  float in = 0;
  std::uint16_t out = 0;
  const std::int64_t one[] = {1};
  const ConvertProblem problem{TensorRef::contiguous(&out, dtype, one), TensorRef::contiguous(&in, DType::f32, one)};
  if (const ConvertVariant* variant = fastest(cpu_convert_variants(), problem)) return *variant;
  return checker(cpu_convert_variants());
}

std::size_t convert_streaming_threshold_bytes() {
  std::size_t threshold = g_streaming_threshold.load(std::memory_order_relaxed);
  if (threshold == 0) {
    const CpuInfo& cpu = this_cpu();
    const std::size_t llc = cpu.l3_bytes ? cpu.l3_bytes : cpu.l2_bytes;
    threshold = llc ? llc : std::size_t{32} << 20;
    g_streaming_threshold.store(threshold, std::memory_order_relaxed);
  }
  return threshold;
}

void set_convert_streaming_threshold_bytes(std::size_t bytes) {
  g_streaming_threshold.store(bytes == 0 ? 1 : bytes, std::memory_order_relaxed);
}

}  // namespace flopscope::kernels
