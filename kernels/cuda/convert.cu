// Conversion between f32 and the narrow dtypes on a CUDA device, with the toolkit's intrinsics.
//
// Variant (one): grid-stride kernels, one element per thread per step, per dtype:
//   f16   __float2half_rn / __half2float          (cuda_fp16.h)
//   bf16  __float2bfloat16_rn / __bfloat162float  (cuda_bf16.h)
//   fp8   __nv_cvt_float_to_fp8(x, __NV_SATFINITE or __NV_NOSAT, __NV_E4M3 or __NV_E5M2) /
//         __nv_cvt_fp8_to_halfraw                 (cuda_fp8.h)
//
// Note [CUDA conversion fix-ups]: as on the CPU (kernels/cpu/convert.cpp), the reference's
// canonical NaN and saturation are applied around the intrinsics so that results agree bit for
// bit: (1) NaN inputs are written as the canonical NaN with the input's sign (the intrinsics
// return 0x7fff for f16, keep or drop payload and sign for fp8 depending on the path).
// (2) With `saturate`, f16 and bf16 inputs are clamped to +/- max finite first (their
// intrinsics have no saturating form). (3) fp8 overflow: cuda_fp8.hpp's __NV_NOSAT path
// (software, every architecture: the PTX cvt to e4m3/e5m2 exists only with .satfinite) sends
// e4m3 values above 464 = 448 + half an ulp to NaN (0x7f | sign) and e5m2 values from 61440 to
// inf, exactly the reference's rounding; __NV_SATFINITE (PTX cvt.rn.satfinite on sm_89+,
// software before) sends them, and infinities, to +/- max finite. Both agree with the reference.
// Decoded NaNs are replaced by the canonical f32 NaN with their sign.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "flopscope/kernels/convert.hpp"

namespace flopscope::kernels {

namespace {

__device__ __forceinline__ bool is_nan_bits(std::uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

template <DType To>
__device__ __forceinline__ std::uint32_t encode_one(float x, bool saturate) {
  const std::uint32_t u = __float_as_uint(x);
  const std::uint32_t sign = u >> 31;
  if constexpr (To == DType::f16) {
    if (is_nan_bits(u)) return (sign << 15) | 0x7e00u;
    if (saturate) x = fminf(fmaxf(x, -65504.0f), 65504.0f);
    return __half_as_ushort(__float2half_rn(x));
  } else if constexpr (To == DType::bf16) {
    if (is_nan_bits(u)) return (sign << 15) | 0x7fc0u;
    const float max = __uint_as_float(0x7f7f0000u);
    if (saturate) x = fminf(fmaxf(x, -max), max);
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  } else {
    constexpr bool e4m3 = To == DType::f8e4m3;
    if (is_nan_bits(u)) return (sign << 7) | (e4m3 ? 0x7fu : 0x7eu);
    return __nv_cvt_float_to_fp8(x, saturate ? __NV_SATFINITE : __NV_NOSAT, e4m3 ? __NV_E4M3 : __NV_E5M2);
  }
}

template <DType From>
__device__ __forceinline__ float decode_one(std::uint32_t h) {
  float y;
  if constexpr (From == DType::f16) {
    y = __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
  } else if constexpr (From == DType::bf16) {
    y = __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(h)));
  } else {
    const __half_raw raw = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(h),
                                                   From == DType::f8e4m3 ? __NV_E4M3 : __NV_E5M2);
    y = __half2float(__half(raw));
  }
  const std::uint32_t u = __float_as_uint(y);
  return is_nan_bits(u) ? __uint_as_float((u & 0x80000000u) | 0x7fc00000u) : y;
}

template <DType To, class T>
__global__ void encode_kernel(const float* __restrict__ in, T* __restrict__ out, std::size_t count, bool saturate) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<T>(encode_one<To>(in[i], saturate));
}

template <DType From, class T>
__global__ void decode_kernel(const T* __restrict__ in, float* __restrict__ out, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = decode_one<From>(in[i]);
}

constexpr int kThreads = 256;

// 8 blocks per SM of the current device (read at every launch: cheap, and right on a machine
// whose GPUs differ), fewer for a small count.
unsigned int grid_for(std::size_t count) {
  int device = 0, sms = 1;
  cudaGetDevice(&device);
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1) sms = 1;
  const int most = sms * 8;
  const std::size_t needed = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(needed < std::size_t(most) ? needed : std::size_t(most));
}


// Launch errors are not checked here: the caller (the bench harness, convert_host) checks the
// stream after the work, so that an error left over from earlier work is never blamed on this call.
void encode(const float* in, void* out, std::size_t count, DType to, bool saturate, cudaStream_t s) {
  if (count == 0) return;
  const unsigned int grid = grid_for(count);
  switch (to) {
    case DType::f16: encode_kernel<DType::f16><<<grid, kThreads, 0, s>>>(in, static_cast<std::uint16_t*>(out), count, saturate); break;
    case DType::bf16: encode_kernel<DType::bf16><<<grid, kThreads, 0, s>>>(in, static_cast<std::uint16_t*>(out), count, saturate); break;
    case DType::f8e4m3: encode_kernel<DType::f8e4m3><<<grid, kThreads, 0, s>>>(in, static_cast<std::uint8_t*>(out), count, saturate); break;
    case DType::f8e5m2: encode_kernel<DType::f8e5m2><<<grid, kThreads, 0, s>>>(in, static_cast<std::uint8_t*>(out), count, saturate); break;
    default: break;
  }
}

void decode(const void* in, float* out, std::size_t count, DType from, cudaStream_t s) {
  if (count == 0) return;
  const unsigned int grid = grid_for(count);
  switch (from) {
    case DType::f16: decode_kernel<DType::f16><<<grid, kThreads, 0, s>>>(static_cast<const std::uint16_t*>(in), out, count); break;
    case DType::bf16: decode_kernel<DType::bf16><<<grid, kThreads, 0, s>>>(static_cast<const std::uint16_t*>(in), out, count); break;
    case DType::f8e4m3: decode_kernel<DType::f8e4m3><<<grid, kThreads, 0, s>>>(static_cast<const std::uint8_t*>(in), out, count); break;
    case DType::f8e5m2: decode_kernel<DType::f8e5m2><<<grid, kThreads, 0, s>>>(static_cast<const std::uint8_t*>(in), out, count); break;
    default: break;
  }
}

void convert_intrinsics(const ConvertProblem& p, Stream stream) {
  const auto count = static_cast<std::size_t>(p.src.numel());
  auto s = static_cast<cudaStream_t>(stream);
  if (p.encodes())
    encode(p.src.ptr<float>(), p.dst.element_data(), count, p.dst.dtype, p.saturate, s);
  else
    decode(p.src.element_data(), p.dst.ptr<float>(), count, p.src.dtype, s);
}

const std::array<ConvertVariant, 1> kVariants = {{
    {"intrinsics", "grid-stride kernels on the toolkit's conversion intrinsics, one element per thread per step",
     Device::Kind::cuda, convert_problem_error, direct<ConvertProblem, convert_intrinsics>, nullptr, {}, Role::own,
     {.speed = 1}},
}};

}  // namespace

std::span<const ConvertVariant> cuda_convert_variants() { return kVariants; }

}  // namespace flopscope::kernels
