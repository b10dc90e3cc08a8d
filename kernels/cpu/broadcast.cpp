// Elementwise binary ops on broadcast operands on the CPU (broadcast.hpp): out = a + b, a * b.
//
// Variants (each on every OpenMP thread but the reference):
//   reference  binary_reference: lib's strided iterator, one element at a time in double (timed
//              too: what a plain loop over a general view costs).
//   simd       the plan's rows in chunks of 4096 elements, chunk by chunk across all rows, so a
//              broadcast operand's chunk stays in L1/L2 while every row that reads it is done;
//              inner loops at the widest vector width (AVX-512: 16 f32 or 8 f64 lanes; AVX2: 8
//              and 4) for each of a and b read contiguously or as one repeated element; f16 and
//              bf16 loaded narrow, widened to f32 (F16C / a 16-bit shift), rounded back to nearest
//              even; non-temporal stores when the operands exceed the last-level cache. AVX-512 or
//              AVX2 chosen at run time.
//   onednn     oneDNN's binary primitive (binary_add, binary_mul) with its broadcast of the second
//              operand (the operands swapped where only the first one broadcasts; a and b both
//              broadcast, as in (N,1) + (1,M), is a skip). f32 and bf16; f16 where this CPU's
//              oneDNN has it; no f64.
#include "flopscope/kernels/broadcast.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "flopscope/kernels/copy.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/shape.hpp"
#include "flopscope/strided.hpp"
#include "flopscope/tensor.hpp"
#include "isa.hpp"
#include "parallel.hpp"
#ifdef FLOPSCOPE_HAVE_ONEDNN
#include "dnnl_util.hpp"
#endif

// GCC 12 reports its own _mm512_undefined_*() placeholders inside the intrinsic headers as
// uninitialized (GCC bug 105593); nothing of ours is.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace flopscope::kernels {

std::string_view binary_op_name(BinaryOp op) { return op == BinaryOp::add ? "add" : "mul"; }

TensorRef broadcast_view(const TensorRef& operand, std::span<const std::int64_t> shape) {
  const auto dims = static_cast<int>(shape.size());
  if (operand.dims > dims)
    throw ShapeError("broadcast_view: " + shape_str(operand.shape()) + " has more dimensions than " + shape_str(shape));
  Strides strides(shape.size(), 0);
  for (int i = 1; i <= operand.dims; ++i) {  // from the right
    const std::int64_t size = operand.sizes[operand.dims - i], target = shape[std::size_t(dims - i)];
    if (size != target && size != 1)
      throw ShapeError("broadcast_view: " + shape_str(operand.shape()) + " does not broadcast to " + shape_str(shape));
    strides[std::size_t(dims - i)] = size == 1 ? 0 : operand.strides[operand.dims - i];
  }
  return TensorRef::strided(operand.data, operand.dtype, shape, strides, operand.offset, operand.device);
}

void binary_reference(const BinaryProblem& p) {
  const Shape shape(p.out.shape().begin(), p.out.shape().end());
  auto strides = [](const TensorRef& t) { return Strides(t.stride_list().begin(), t.stride_list().end()); };
  const auto size = static_cast<std::int64_t>(p.out.element_size());
  auto* out = static_cast<unsigned char*>(p.out.data);
  const auto* a = static_cast<const unsigned char*>(p.a.data);
  const auto* b = static_cast<const unsigned char*>(p.b.data);
  for (StridedIterator it(shape, {strides(p.out), strides(p.a), strides(p.b)}, {p.out.offset, p.a.offset, p.b.offset});
       !it.done(); it.next()) {
    const double x = load_element(a + it.offset(1) * size, p.a.dtype);
    const double y = load_element(b + it.offset(2) * size, p.b.dtype);
    store_element(out + it.offset(0) * size, p.out.dtype, p.op == BinaryOp::add ? x + y : x * y);
  }
}

std::optional<std::string> needs_broadcast_operands(const BinaryProblem& p) {
  const std::string operands = p.out.str() + " = " + p.a.str() + " " + std::string(binary_op_name(p.op)) + " " + p.b.str();
  if (!p.out.is_contiguous()) return "needs a contiguous output (" + operands + ")";
  auto same_shape = [&](const TensorRef& t) {
    return std::equal(t.shape().begin(), t.shape().end(), p.out.shape().begin(), p.out.shape().end());
  };
  if (!same_shape(p.a) || !same_shape(p.b)) return "needs operands viewed at the output's shape (" + operands + ")";
  if (p.a.dtype != p.out.dtype || p.b.dtype != p.out.dtype) return "needs one dtype (" + operands + ")";
  const DType t = p.out.dtype;
  if (t != DType::f64 && t != DType::f32 && t != DType::f16 && t != DType::bf16)
    return "no " + std::string(dtype_name(t)) + " arithmetic (f64, f32, f16, bf16)";
  return std::nullopt;
}

BinaryPlan plan_binary(const BinaryProblem& p) {
  BinaryPlan plan;
  plan.numel = p.out.numel();
  if (plan.numel == 0) return plan;
  std::array<std::int64_t, kMaxDims> sizes{}, as{}, bs{};
  int n = 0;
  for (int d = p.out.dims - 1; d >= 0; --d) {  // innermost first
    if (p.out.sizes[d] == 1) continue;
    if (n > 0 && p.a.strides[d] == as[n - 1] * sizes[n - 1] && p.b.strides[d] == bs[n - 1] * sizes[n - 1]) {
      sizes[n - 1] *= p.out.sizes[d];
      continue;
    }
    sizes[n] = p.out.sizes[d];
    as[n] = p.a.strides[d];
    bs[n] = p.b.strides[d];
    ++n;
  }
  plan.dims = n;
  for (int i = 0; i < n; ++i) {
    plan.sizes[i] = sizes[n - 1 - i];
    plan.a_strides[i] = as[n - 1 - i];
    plan.b_strides[i] = bs[n - 1 - i];
  }
  return plan;
}

namespace {

// ---- element types: what is loaded, what is computed ----

struct F16 {
  std::uint16_t bits;
};
struct BF16 {
  std::uint16_t bits;
};

// Scalar loads and stores (loop tails, general strides): to the compute type and back.
inline float widen(F16 h) { return fast::decode_f32<fast::F16>(h.bits); }
inline float widen(BF16 h) { return fast::decode_f32<fast::BF16>(h.bits); }
inline float widen(float x) { return x; }
inline double widen(double x) { return x; }
template <class T, class C>
T narrow(C x) {
  if constexpr (std::is_same_v<T, F16>) return {static_cast<std::uint16_t>(fast::encode_f32<fast::F16>(x, false))};
  else if constexpr (std::is_same_v<T, BF16>) return {static_cast<std::uint16_t>(fast::encode_f32<fast::BF16>(x, false))};
  else return x;
}
template <BinaryOp Op, class C>
C apply(C x, C y) {
  return Op == BinaryOp::add ? x + y : x * y;
}

#define FLOPSCOPE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,bmi2,f16c,fma")))
#define FLOPSCOPE_AVX2 __attribute__((target("avx2,f16c,fma")))

// ---- vectors: one struct per (ISA, element type) ----
// lanes; V (the compute register); load, splat (one element repeated), op, store, stream
// (non-temporal; `out` aligned to the store's width).

struct Avx512F32 {
  static constexpr int lanes = 16;
  using V = __m512;
  FLOPSCOPE_AVX512 static V load(const float* p) { return _mm512_loadu_ps(p); }
  FLOPSCOPE_AVX512 static V splat(float x) { return _mm512_set1_ps(x); }
  FLOPSCOPE_AVX512 static V add(V x, V y) { return _mm512_add_ps(x, y); }
  FLOPSCOPE_AVX512 static V mul(V x, V y) { return _mm512_mul_ps(x, y); }
  FLOPSCOPE_AVX512 static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
  FLOPSCOPE_AVX512 static void stream(float* p, V x) { _mm512_stream_ps(p, x); }
};

struct Avx512F64 {
  static constexpr int lanes = 8;
  using V = __m512d;
  FLOPSCOPE_AVX512 static V load(const double* p) { return _mm512_loadu_pd(p); }
  FLOPSCOPE_AVX512 static V splat(double x) { return _mm512_set1_pd(x); }
  FLOPSCOPE_AVX512 static V add(V x, V y) { return _mm512_add_pd(x, y); }
  FLOPSCOPE_AVX512 static V mul(V x, V y) { return _mm512_mul_pd(x, y); }
  FLOPSCOPE_AVX512 static void store(double* p, V x) { _mm512_storeu_pd(p, x); }
  FLOPSCOPE_AVX512 static void stream(double* p, V x) { _mm512_stream_pd(p, x); }
};

struct Avx512F16 : Avx512F32 {
  FLOPSCOPE_AVX512 static V load(const F16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  FLOPSCOPE_AVX512 static __m256i pack(V x) { return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  FLOPSCOPE_AVX512 static void store(F16* p, V x) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), pack(x)); }
  FLOPSCOPE_AVX512 static void stream(F16* p, V x) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), pack(x)); }
};

struct Avx512BF16 : Avx512F32 {
  FLOPSCOPE_AVX512 static V load(const BF16* p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  // Round to nearest even: add 0x7fff plus the lowest kept bit, keep the high half; NaNs stay
  // (quiet) NaNs.
  FLOPSCOPE_AVX512 static __m256i pack(V x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
  }
  FLOPSCOPE_AVX512 static void store(BF16* p, V x) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), pack(x)); }
  FLOPSCOPE_AVX512 static void stream(BF16* p, V x) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), pack(x)); }
};

struct Avx2F32 {
  static constexpr int lanes = 8;
  using V = __m256;
  FLOPSCOPE_AVX2 static V load(const float* p) { return _mm256_loadu_ps(p); }
  FLOPSCOPE_AVX2 static V splat(float x) { return _mm256_set1_ps(x); }
  FLOPSCOPE_AVX2 static V add(V x, V y) { return _mm256_add_ps(x, y); }
  FLOPSCOPE_AVX2 static V mul(V x, V y) { return _mm256_mul_ps(x, y); }
  FLOPSCOPE_AVX2 static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
  FLOPSCOPE_AVX2 static void stream(float* p, V x) { _mm256_stream_ps(p, x); }
};

struct Avx2F64 {
  static constexpr int lanes = 4;
  using V = __m256d;
  FLOPSCOPE_AVX2 static V load(const double* p) { return _mm256_loadu_pd(p); }
  FLOPSCOPE_AVX2 static V splat(double x) { return _mm256_set1_pd(x); }
  FLOPSCOPE_AVX2 static V add(V x, V y) { return _mm256_add_pd(x, y); }
  FLOPSCOPE_AVX2 static V mul(V x, V y) { return _mm256_mul_pd(x, y); }
  FLOPSCOPE_AVX2 static void store(double* p, V x) { _mm256_storeu_pd(p, x); }
  FLOPSCOPE_AVX2 static void stream(double* p, V x) { _mm256_stream_pd(p, x); }
};

struct Avx2F16 : Avx2F32 {
  FLOPSCOPE_AVX2 static V load(const F16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  FLOPSCOPE_AVX2 static __m128i pack(V x) { return _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  FLOPSCOPE_AVX2 static void store(F16* p, V x) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), pack(x)); }
  FLOPSCOPE_AVX2 static void stream(F16* p, V x) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), pack(x)); }
};

struct Avx2BF16 : Avx2F32 {
  FLOPSCOPE_AVX2 static V load(const BF16* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  FLOPSCOPE_AVX2 static __m128i pack(V x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, quiet, _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
    // 8 x 32 -> 8 x 16: packus within 128-bit lanes, then the two lanes' low halves together.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    return _mm256_castsi256_si128(packed);
  }
  FLOPSCOPE_AVX2 static void store(BF16* p, V x) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), pack(x)); }
  FLOPSCOPE_AVX2 static void stream(BF16* p, V x) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), pack(x)); }
};

// ---- the row kernel ----

template <class T, BinaryOp Op>
void row_general(T* out, const T* a, std::int64_t as, const T* b, std::int64_t bs, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) out[j] = narrow<T>(apply<Op>(widen(a[j * as]), widen(b[j * bs])));
}

using RowFn = void (*)(void* out, const void* a, std::int64_t as, const void* b, std::int64_t bs, std::int64_t n, bool nt);

// NAME<Vec, T, Op>: out[j] = a[j * as] op b[j * bs] for j < n, vectorized where as and bs are each 0
// (one element repeated) or 1; BODY is the loop for constant steps AS, BS. One per ISA, so that
// every intrinsic is compiled for its target.
#define FLOPSCOPE_ROW(NAME, TARGET)                                                                              \
  template <class Vec, class T, BinaryOp Op, int AS, int BS>                                                    \
  TARGET void NAME##_body(T* out, const T* a, const T* b, std::int64_t n, bool nt) {                            \
    using V = typename Vec::V;                                                                                  \
    constexpr std::int64_t L = Vec::lanes;                                                                      \
    std::int64_t j = 0;                                                                                         \
    if (nt) /* scalar head up to the store width's alignment, then non-temporal stores */                       \
      for (; j < n && (reinterpret_cast<std::uintptr_t>(out + j) & (L * sizeof(T) - 1)) != 0; ++j)             \
        out[j] = narrow<T>(apply<Op>(widen(a[j * AS]), widen(b[j * BS])));                                      \
    const V a_splat = Vec::splat(widen(a[0])), b_splat = Vec::splat(widen(b[0]));                               \
    for (; j + L <= n; j += L) {                                                                                \
      const V x = AS ? Vec::load(a + j) : a_splat;                                                              \
      const V y = BS ? Vec::load(b + j) : b_splat;                                                              \
      const V z = Op == BinaryOp::add ? Vec::add(x, y) : Vec::mul(x, y);                                        \
      if (nt) Vec::stream(out + j, z);                                                                          \
      else Vec::store(out + j, z);                                                                              \
    }                                                                                                           \
    for (; j < n; ++j) out[j] = narrow<T>(apply<Op>(widen(a[j * AS]), widen(b[j * BS])));                       \
  }                                                                                                             \
  template <class Vec, class T, BinaryOp Op>                                                                    \
  TARGET void NAME(void* out_, const void* a_, std::int64_t as, const void* b_, std::int64_t bs, std::int64_t n, \
                   bool nt) {                                                                                   \
    auto* out = static_cast<T*>(out_);                                                                          \
    const auto* a = static_cast<const T*>(a_);                                                                  \
    const auto* b = static_cast<const T*>(b_);                                                                  \
    if (as == 1 && bs == 1) NAME##_body<Vec, T, Op, 1, 1>(out, a, b, n, nt);                                    \
    else if (as == 1 && bs == 0) NAME##_body<Vec, T, Op, 1, 0>(out, a, b, n, nt);                               \
    else if (as == 0 && bs == 1) NAME##_body<Vec, T, Op, 0, 1>(out, a, b, n, nt);                               \
    else row_general<T, Op>(out, a, as, b, bs, n);                                                              \
  }
FLOPSCOPE_ROW(row_avx512, FLOPSCOPE_AVX512)
FLOPSCOPE_ROW(row_avx2, FLOPSCOPE_AVX2)
#undef FLOPSCOPE_ROW

template <BinaryOp Op>
RowFn row_for(DType dtype, VectorIsa isa) {
  const bool wide = isa == VectorIsa::avx512;
  switch (dtype) {
    case DType::f32: return wide ? row_avx512<Avx512F32, float, Op> : row_avx2<Avx2F32, float, Op>;
    case DType::f64: return wide ? row_avx512<Avx512F64, double, Op> : row_avx2<Avx2F64, double, Op>;
    case DType::f16: return wide ? row_avx512<Avx512F16, F16, Op> : row_avx2<Avx2F16, F16, Op>;
    case DType::bf16: return wide ? row_avx512<Avx512BF16, BF16, Op> : row_avx2<Avx2BF16, BF16, Op>;
    default: throw std::invalid_argument("broadcast simd: no " + std::string(dtype_name(dtype)) + " kernel");
  }
}

constexpr std::int64_t kChunk = 4096;  // elements of a row done across all rows before the next

void broadcast_simd(const BinaryProblem& p, Stream) {
  const BinaryPlan plan = plan_binary(p);
  if (plan.numel == 0) return;
  const RowFn row = p.op == BinaryOp::add ? row_for<BinaryOp::add>(p.out.dtype, vector_isa())
                                          : row_for<BinaryOp::mul>(p.out.dtype, vector_isa());
  const auto size = static_cast<std::int64_t>(p.out.element_size());
  const int inner = plan.dims - 1;  // -1: a single element
  const std::int64_t n = inner >= 0 ? plan.sizes[inner] : 1;
  const std::int64_t as = inner >= 0 ? plan.a_strides[inner] : 0, bs = inner >= 0 ? plan.b_strides[inner] : 0;
  const std::int64_t rows = plan.numel / n, chunks = (n + kChunk - 1) / kChunk;
  const bool nt = 3 * plan.numel * size > static_cast<std::int64_t>(cpu_streaming_threshold_bytes());
  auto* out = static_cast<unsigned char*>(p.out.element_data());
  const auto* a = static_cast<const unsigned char*>(p.a.element_data());
  const auto* b = static_cast<const unsigned char*>(p.b.element_data());
  // Work items: (chunk, row), chunk-major, so that one thread does a chunk for every row in turn.
  parallel_chunks(std::size_t(chunks * rows), 1, std::size_t(std::max<std::int64_t>(1, (std::int64_t{1} << 14) / std::min(n, kChunk))),
                  [&](std::size_t begin, std::size_t count) {
                    std::array<std::int64_t, kMaxDims> index{};
                    for (std::size_t i = begin; i < begin + count; ++i) {
                      const std::int64_t chunk = std::int64_t(i) / rows, r = std::int64_t(i) % rows;
                      std::int64_t a_offset = 0, b_offset = 0, linear = r;
                      for (int d = inner - 1; d >= 0; --d) {  // the row's index over the outer dims
                        index[std::size_t(d)] = linear % plan.sizes[d];
                        linear /= plan.sizes[d];
                        a_offset += index[std::size_t(d)] * plan.a_strides[d];
                        b_offset += index[std::size_t(d)] * plan.b_strides[d];
                      }
                      const std::int64_t j0 = chunk * kChunk, length = std::min(kChunk, n - j0);
                      row(out + (r * n + j0) * size, a + (a_offset + j0 * as) * size, as,
                          b + (b_offset + j0 * bs) * size, bs, length, nt);
                    }
                    _mm_sfence();
                  });
}

std::optional<std::string> simd_unavailable(const BinaryProblem& p) {
  if (auto reason = needs_broadcast_operands(p)) return reason;
  if (auto reason = lacks_avx2()) return reason;
  if (p.out.dtype == DType::f16 && vector_isa() == VectorIsa::avx2) return cpu_lacks({"f16c"});
  return std::nullopt;
}

void broadcast_reference(const BinaryProblem& p, Stream) { binary_reference(p); }

// ---- oneDNN ----

#ifdef FLOPSCOPE_HAVE_ONEDNN
struct BinaryDescs {
  dnnl::memory::desc src0, src1, dst;
  bool swapped = false;  // src0 is b
};

// An operand's own dims (1 where it broadcasts) and strides, as a memory descriptor.
dnnl::memory::desc operand_desc(const TensorRef& t, dnnl::memory::data_type type) {
  dnnl::memory::dims dims, strides;
  for (int d = 0; d < t.dims; ++d) {
    dims.push_back(t.strides[d] == 0 ? 1 : t.sizes[d]);
    strides.push_back(t.strides[d]);
  }
  std::int64_t inner = 1;  // a broadcast dimension's stride: anything valid, the row-major one
  for (int d = t.dims - 1; d >= 0; --d) {
    if (dims[std::size_t(d)] == 1) strides[std::size_t(d)] = inner;
    inner *= dims[std::size_t(d)];
  }
  return dnnl::memory::desc(dims, type, strides);
}

bool broadcasts(const TensorRef& t) {
  for (int d = 0; d < t.dims; ++d)
    if (t.strides[d] == 0 && t.sizes[d] > 1) return true;
  return false;
}

BinaryDescs binary_descs(const BinaryProblem& p) {
  using dt = dnnl::memory::data_type;
  const dt type = p.out.dtype == DType::f32 ? dt::f32 : p.out.dtype == DType::bf16 ? dt::bf16 : dt::f16;
  const bool swapped = broadcasts(p.a);
  const TensorRef& first = swapped ? p.b : p.a;
  const TensorRef& second = swapped ? p.a : p.b;
  return {operand_desc(first, type), operand_desc(second, type), operand_desc(p.out, type), swapped};
}

dnnl::binary::primitive_desc binary_pd(const BinaryProblem& p, const BinaryDescs& d) {
  const auto algorithm = p.op == BinaryOp::add ? dnnl::algorithm::binary_add : dnnl::algorithm::binary_mul;
  return dnnl::binary::primitive_desc(dnnl::binary::desc(algorithm, d.src0, d.src1, d.dst), dnnl_cpu_engine());
}

std::optional<std::string> onednn_unavailable(const BinaryProblem& p) {
  if (auto reason = needs_broadcast_operands(p)) return reason;
  if (p.out.dtype == DType::f64) return "oneDNN has no f64 binary";
  if (broadcasts(p.a) && broadcasts(p.b))
    return "oneDNN's binary broadcasts its second operand only; here both operands broadcast";
  if (p.out.numel() == 0) return std::nullopt;
  return dnnl_refusal([&] { binary_pd(p, binary_descs(p)); });
}

Runner onednn_prepare(const BinaryProblem& p) {
  if (p.out.numel() == 0) return [](Stream) {};
  const BinaryDescs d = binary_descs(p);
  const TensorRef& first = d.swapped ? p.b : p.a;
  const TensorRef& second = d.swapped ? p.a : p.b;
  return dnnl_runner(dnnl::binary(binary_pd(p, d)),
                     {{DNNL_ARG_SRC_0, dnnl::memory(d.src0, dnnl_cpu_engine(), first.element_data())},
                      {DNNL_ARG_SRC_1, dnnl::memory(d.src1, dnnl_cpu_engine(), second.element_data())},
                      {DNNL_ARG_DST, dnnl::memory(d.dst, dnnl_cpu_engine(), p.out.element_data())}});
}
#else
std::optional<std::string> onednn_unavailable(const BinaryProblem&) { return "built without oneDNN"; }
Runner onednn_prepare(const BinaryProblem&) { throw std::logic_error("onednn: built without oneDNN"); }
#endif

constexpr std::array<BinaryVariant, 3> kVariants = {{
    {"reference", "lib's strided iterator, one element at a time in double", Device::Kind::cpu,
     needs_broadcast_operands, direct<BinaryProblem, broadcast_reference>, nullptr, {}, Role::reference},
    {"simd", "AVX-512/AVX2 rows, chunk by chunk across rows (broadcast operand stays in cache), streaming stores",
     Device::Kind::cpu, simd_unavailable, direct<BinaryProblem, broadcast_simd>},
    {"onednn", "oneDNN's binary primitive, broadcasting its second operand (vendor)", Device::Kind::cpu,
     onednn_unavailable, onednn_prepare, nullptr, {}, Role::vendor},
}};

}  // namespace

std::span<const BinaryVariant> cpu_broadcast_variants() { return kVariants; }

}  // namespace flopscope::kernels
