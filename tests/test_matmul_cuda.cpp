// The CUDA matmul variants (kernels/cuda/matmul.cu) against an f64 reference on the host: every
// variant, for every compute mode and output dtype it takes, in the layouts NN, NT, TN and a padded,
// offset NN (no row and no operand 16-byte aligned), on awkward shapes (1x1x1, odd, not multiples
// of any tile, k = 1, long k). C starts as NaN; the storage around and between its rows must stay
// untouched. The GPU tests skip with the runtime's reason where no GPU can run them; the reasons a
// variant gives for problems it cannot take, which do not depend on a GPU, are checked everywhere.
//
// The reference is a local f64 triple loop until kernels::matmul_reference (branch matmul-cpu) is
// merged; then compute_reference below should call it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flopscope/compute_mode.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;
using kernels::MatmulProblem;
using kernels::MatmulVariant;

namespace {

struct Layout {
  const char* name;
  bool a_transposed, b_transposed;  // the operand is the transposed view of a row-major array
  std::int64_t pad, offset;         // elements added to every row, and before the first
};

constexpr Layout kLayouts[] = {
    {"NN", false, false, 0, 0},
    {"NT", false, true, 0, 0},
    {"TN", true, false, 0, 0},
    {"NN_padded", false, false, 3, 1},
};

struct MatmulShape {
  std::int64_t m, n, k;
};

// 1x1x1; odd; past the 128x128 tiles and the 32 and 8 k steps; k = 1; long k (n and k multiples of
// 16, as fp8 needs); whole tiles (the aligned fast paths).
constexpr MatmulShape kShapes[] = {{1, 1, 1}, {17, 23, 29}, {129, 130, 67}, {64, 48, 1}, {33, 80, 4096}, {256, 128, 96}};

constexpr float kFp8ScaleA = 0.5f, kFp8ScaleB = 4.0f;

bool is_fp8(ComputeMode mode) { return compute_mode_info(mode).peak_key == "f8"; }

// The dtypes C may have for a mode: its accumulation's (f64 or f32), and f16/bf16's own.
std::vector<DType> output_dtypes(ComputeMode mode) {
  if (mode == ComputeMode::f64) return {DType::f64};
  if (mode == ComputeMode::f16 || mode == ComputeMode::bf16) return {DType::f32, compute_mode_info(mode).a};
  return {DType::f32};
}

// A (rows x cols) view: row-major with `pad` more elements a row, or the transposed view of such a
// (cols x rows) array; `offset` elements in.
TensorRef view(void* data, DType dtype, std::int64_t rows, std::int64_t cols, bool transposed, const Layout& layout,
               Device device) {
  const std::int64_t sizes[] = {rows, cols};
  const std::int64_t row_major[] = {cols + layout.pad, 1};
  const std::int64_t column_major[] = {1, rows + layout.pad};
  return TensorRef::strided(data, dtype, sizes, transposed ? column_major : row_major, layout.offset, device);
}

std::size_t storage_bytes(const TensorRef& t) { return std::size_t(t.storage_elements()) * t.element_size(); }

double element(const TensorRef& t, std::int64_t i, std::int64_t j) {
  return load_element(static_cast<const unsigned char*>(t.element_data()) +
                          (i * t.strides[0] + j * t.strides[1]) * std::int64_t(t.element_size()),
                      t.dtype);
}

// The expected C of row-major values a (m x k) and b (k x n), and the sum of |products| of each
// element, which the error bounds scale with.
struct Reference {
  std::vector<double> c, magnitude;
};

Reference compute_reference(const std::vector<double>& a, const std::vector<double>& b, const MatmulShape& s, double scale) {
  Reference r{std::vector<double>(std::size_t(s.m * s.n)), std::vector<double>(std::size_t(s.m * s.n))};
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      double sum = 0, magnitude = 0;
      for (std::int64_t kk = 0; kk < s.k; ++kk) {
        const double product = a[std::size_t(i * s.k + kk)] * b[std::size_t(kk * s.n + j)];
        sum += product;
        magnitude += std::fabs(product);
      }
      r.c[std::size_t(i * s.n + j)] = sum * scale;
      r.magnitude[std::size_t(i * s.n + j)] = magnitude * std::fabs(scale);
    }
  return r;
}

// Unit roundoff of a dtype.
double roundoff(DType dtype) {
  switch (dtype) {
    case DType::f64: return std::ldexp(1.0, -53);
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
    case DType::f8e4m3: return std::ldexp(1.0, -4);
    case DType::f8e5m2: return std::ldexp(1.0, -3);
  }
  return 1;
}

// |out - ref| <= relative·Σ|a·b| + u_out·|ref| + atol. The inputs hold exact values of their
// dtypes, so the error is the accumulation's (k + 2 roundings of the accumulator per element;
// x4 for tensor cores, whose f32 sums truncate) plus one rounding to C's dtype; tf32 also rounds
// (or truncates) its inputs to 10 bits (2^-9 per product), and fp8 tensor cores keep partial sums
// with about 14 bits between promotions to f32 (2^-9 covers both accumulation modes).
struct Bound {
  double relative, output, absolute;
};

Bound error_bound(ComputeMode mode, DType out, std::int64_t k) {
  const double steps = double(k + 2);
  double relative = mode == ComputeMode::f64 ? 4 * steps * roundoff(DType::f64) : 4 * steps * roundoff(DType::f32);
  if (mode == ComputeMode::tf32 || is_fp8(mode)) relative += std::ldexp(1.0, -9);
  const double absolute = out == DType::f16 ? std::ldexp(1.0, -24) : out == DType::f64 ? 0.0 : 1e-37;
  return {relative, roundoff(out), absolute};
}

// nullopt when every element of the (host) view c is within the bound of the reference, else the
// first few that are not, with their indices.
std::optional<std::string> mismatches(const TensorRef& c, const Reference& ref, const Bound& bound) {
  std::string out;
  int count = 0;
  for (std::int64_t i = 0; i < c.sizes[0]; ++i)
    for (std::int64_t j = 0; j < c.sizes[1]; ++j) {
      const std::size_t at = std::size_t(i * c.sizes[1] + j);
      const double got = element(c, i, j), expected = ref.c[at];
      const double allowed = bound.relative * ref.magnitude[at] + bound.output * std::fabs(expected) + bound.absolute;
      if (std::fabs(got - expected) <= allowed) continue;  // false for NaN: an element never written
      if (++count <= 5)
        out += " C(" + std::to_string(i) + "," + std::to_string(j) + ") = " + std::to_string(got) + ", expected " +
               std::to_string(expected) + " +- " + std::to_string(allowed) + ";";
    }
  if (count == 0) return std::nullopt;
  return std::to_string(count) + " elements off:" + out;
}

// The storage bytes of c that are outside its view (padding between rows, the offset, the tail)
// and differ from `poison`: what a store through a wrong stride or past the end would leave.
std::optional<std::string> touched_outside(const TensorRef& c, const std::vector<unsigned char>& bytes,
                                           unsigned char poison) {
  std::vector<bool> inside(bytes.size() / c.element_size(), false);
  for (std::int64_t i = 0; i < c.sizes[0]; ++i)
    for (std::int64_t j = 0; j < c.sizes[1]; ++j)
      inside[std::size_t(c.offset + i * c.strides[0] + j * c.strides[1])] = true;
  for (std::size_t e = 0; e < inside.size(); ++e)
    for (std::size_t byte = 0; !inside[e] && byte < c.element_size(); ++byte)
      if (bytes[e * c.element_size() + byte] != poison) return "storage element " + std::to_string(e) + " written";
  return std::nullopt;
}

// Row-major values of a (rows x cols) operand of `dtype`, uniform in [-1, 1) rounded to it.
std::vector<double> random_values(DType dtype, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::vector<unsigned char> bytes(std::size_t(rows * cols) * dtype_size(dtype));
  const std::int64_t sizes[] = {rows, cols};
  const TensorRef t = TensorRef::contiguous(bytes.data(), dtype, sizes);
  kernels::fill_uniform(t, seed);
  std::vector<double> values;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) values.push_back(element(t, i, j));
  return values;
}

// An operand on the device: host bytes in its layout (with a 64-byte tail), copied over.
struct DeviceOperand {
  std::vector<unsigned char> host;
  std::optional<kernels::cuda::DeviceMemory> memory;
  TensorRef device_ref;

  DeviceOperand(const TensorRef& layout, const std::vector<double>* values, unsigned char poison) {
    host.assign(storage_bytes(layout) + 64, poison);
    TensorRef host_ref = layout;
    host_ref.data = host.data();
    if (values)
      for (std::int64_t i = 0; i < layout.sizes[0]; ++i)
        for (std::int64_t j = 0; j < layout.sizes[1]; ++j)
          store_element(static_cast<unsigned char*>(host_ref.element_data()) +
                            (i * layout.strides[0] + j * layout.strides[1]) * std::int64_t(layout.element_size()),
                        layout.dtype, (*values)[std::size_t(i * layout.sizes[1] + j)]);
    memory.emplace(host.size());
    kernels::cuda::copy_to_device(memory->data, host.data(), host.size());
    device_ref = layout;
    device_ref.data = memory->data;
    device_ref.device = Device::cuda(0);
  }
  // The device's bytes back in `host`, and a host view of them.
  TensorRef fetch() {
    kernels::cuda::copy_to_host(host.data(), memory->data, host.size());
    TensorRef host_ref = device_ref;
    host_ref.data = host.data();
    host_ref.device = Device::cpu();
    return host_ref;
  }
};

// Whether `variant` must take `p` on a GPU of `sm` (the test fails where it refuses one of these):
// every own kernel and cuBLAS take every layout; cuBLASLt takes every layout for tf32/f16/bf16,
// and for fp8 (sm_89+, not e5m2 x e5m2) the NT layout with n and k multiples of 16, aligned.
bool must_take(const MatmulVariant& variant, const MatmulProblem& p, const Layout& layout, int sm) {
  if (variant.name == "mma" && sm < 80) return false;
  if (variant.name != "cublaslt") return true;
  if (!is_fp8(p.mode)) return sm >= 80;
  return sm >= 89 && p.mode != ComputeMode::f8e5m2 && std::string(layout.name) == "NT" && p.n() % 16 == 0 &&
         p.k() % 16 == 0;
}

MatmulProblem dry_problem(ComputeMode mode, DType out, const MatmulShape& s, const Layout& layout, Device device) {
  const ComputeModeInfo& info = compute_mode_info(mode);
  MatmulProblem p{view(nullptr, info.a, s.m, s.k, layout.a_transposed, layout, device),
                  view(nullptr, info.b, s.k, s.n, layout.b_transposed, layout, device),
                  view(nullptr, out, s.m, s.n, false, layout, device), mode};
  if (is_fp8(mode)) {
    p.scale_a = kFp8ScaleA;
    p.scale_b = kFp8ScaleB;
  }
  return p;
}

const MatmulVariant& cuda_variant(const char* name) {
  return kernels::variant_named(kernels::cuda_matmul_variants(), name);
}

std::optional<std::string> reason_of(const char* variant, const MatmulProblem& p) {
  return cuda_variant(variant).unavailable(p);
}

bool says(const std::optional<std::string>& reason, const std::string& words) {
  return reason && reason->find(words) != std::string::npos;
}

#ifdef FLOPSCOPE_HAVE_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

}  // namespace

TEST(CudaMatmulTable, ListsTheLadderAndTheVendors) {
  if (!kBuiltWithCuda) GTEST_SKIP() << "built without CUDA: the table is empty";
  std::vector<std::string> names;
  for (const auto& variant : kernels::cuda_matmul_variants()) {
    names.emplace_back(variant.name);
    EXPECT_EQ(variant.device, Device::Kind::cuda);
    EXPECT_EQ(variant.role == kernels::Role::vendor, variant.name == "cublas" || variant.name == "cublaslt") << variant.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"naive", "smem", "regblock", "mma", "cublas", "cublaslt"}));
}

// What a variant says it cannot take does not depend on a GPU: these run everywhere.
TEST(CudaMatmulTable, SaysWhatEachVariantCannotTake) {
  if (!kBuiltWithCuda) GTEST_SKIP() << "built without CUDA: the table is empty";
  const Device gpu = Device::cuda(0);
  const Layout nn = kLayouts[0], nt = kLayouts[1];
  const MatmulShape square{256, 128, 96};

  // fp8 in cuBLASLt: NT only, n and k multiples of 16, aligned; no e5m2 x e5m2.
  EXPECT_TRUE(says(reason_of("cublaslt", dry_problem(ComputeMode::f8e4m3, DType::f32, square, nn, gpu)), "NT"));
  EXPECT_TRUE(says(reason_of("cublaslt", dry_problem(ComputeMode::f8e4m3, DType::f32, {256, 128, 72}, nt, gpu)),
                   "multiples of 16"));
  EXPECT_TRUE(says(reason_of("cublaslt", dry_problem(ComputeMode::f8e5m2_e4m3, DType::f32, square,
                                                     {"NT_padded", false, true, 16, 1}, gpu)),
                   "16-byte aligned"));
  EXPECT_TRUE(says(reason_of("cublaslt", dry_problem(ComputeMode::f8e5m2, DType::f32, square, nt, gpu)),
                   "no f8e5m2 x f8e5m2"));
  // A well-formed fp8 problem is refused for the device alone (no GPU, or one older than sm_89).
  const auto fp8 = reason_of("cublaslt", dry_problem(ComputeMode::f8e4m3_e5m2, DType::f32, square, nt, gpu));
  if (fp8) {
    EXPECT_FALSE(says(fp8, "NT") || says(fp8, "16")) << *fp8;
  }

  // Fast accumulation belongs to cuBLASLt's fp8 GEMMs.
  for (const char* name : {"naive", "mma", "cublas"}) {
    const ComputeMode mode = std::string(name) == "naive" ? ComputeMode::f8e4m3 : ComputeMode::bf16;
    MatmulProblem p = dry_problem(mode, DType::f32, square, nt, gpu);
    p.fast_accum = true;
    EXPECT_TRUE(says(reason_of(name, p), "fast accumulation")) << name;
  }
  MatmulProblem bf16_fast = dry_problem(ComputeMode::bf16, DType::f32, square, nt, gpu);
  bf16_fast.fast_accum = true;
  EXPECT_TRUE(says(reason_of("cublaslt", bf16_fast), "fast accumulation"));

  // Operands with no unit stride: mma and the BLAS calls refuse them, naive takes any strides.
  MatmulProblem strided = dry_problem(ComputeMode::bf16, DType::f32, {64, 64, 64}, nn, gpu);
  const std::int64_t sizes[] = {64, 64}, every_other[] = {128, 2};
  strided.a = TensorRef::strided(nullptr, DType::bf16, sizes, every_other, 0, gpu);
  EXPECT_TRUE(says(reason_of("mma", strided), "row- or column-major"));
  EXPECT_TRUE(says(reason_of("cublas", strided), "row- or column-major"));
  EXPECT_TRUE(says(reason_of("cublaslt", strided), "row- or column-major"));
  const auto naive = reason_of("naive", strided);
  if (naive) {
    EXPECT_FALSE(says(naive, "major")) << *naive;
  }

  // Every variant: operands on the CPU, and shapes that do not match.
  for (const auto& variant : kernels::cuda_matmul_variants()) {
    for (ComputeMode mode : {ComputeMode::f32, ComputeMode::bf16, ComputeMode::f8e4m3}) {
      MatmulProblem on_cpu = dry_problem(mode, DType::f32, square, nt, Device::cpu());
      if (!variant.takes(on_cpu)) continue;
      EXPECT_TRUE(says(variant.unavailable(on_cpu), "CUDA device")) << variant.name;
      MatmulProblem mismatched = dry_problem(mode, DType::f32, square, nt, gpu);
      mismatched.b = dry_problem(mode, DType::f32, {256, 128, 95}, nt, gpu).b;
      EXPECT_TRUE(says(variant.unavailable(mismatched), "matmul needs A (m x k)")) << variant.name;
    }
  }
}

// The checker itself: one element off by twice its bound, or never written, is reported.
TEST(CudaMatmulTable, ErrorBoundCatchesOneWrongElement) {
  const MatmulShape s{3, 4, 1000};
  const std::vector<double> a = random_values(DType::bf16, s.m, s.k, 1), b = random_values(DType::bf16, s.k, s.n, 2);
  const Reference ref = compute_reference(a, b, s, 1);
  const Bound bound = error_bound(ComputeMode::bf16, DType::f32, s.k);
  std::vector<float> c(std::size_t(s.m * s.n));
  for (std::size_t e = 0; e < c.size(); ++e) c[e] = float(ref.c[e]);
  const std::int64_t sizes[] = {s.m, s.n};
  const TensorRef view_c = TensorRef::contiguous(c.data(), DType::f32, sizes);
  EXPECT_EQ(mismatches(view_c, ref, bound), std::nullopt);
  const double allowed = bound.relative * ref.magnitude[5] + bound.output * std::fabs(ref.c[5]);
  c[5] = float(ref.c[5] + 2 * allowed);
  EXPECT_TRUE(says(mismatches(view_c, ref, bound), "C(1,1)"));
  c[5] = std::nanf("");
  EXPECT_TRUE(says(mismatches(view_c, ref, bound), "1 elements off"));
}

TEST(CudaMatmul, EveryVariantMatchesTheF64ReferenceInEveryModeLayoutAndShape) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  const kernels::cuda::DeviceProperties device = kernels::cuda::device_properties(0);
  const int sm = device.sm_major * 10 + device.sm_minor;
  constexpr unsigned char kPoison = 0xFF;  // NaN in every float dtype
  std::map<std::string, int> ran;
  for (const ComputeModeInfo& info : compute_modes()) {
    for (const MatmulShape& shape : kShapes) {
      const std::vector<double> a_values = random_values(info.a, shape.m, shape.k, 11);
      const std::vector<double> b_values = random_values(info.b, shape.k, shape.n, 12);
      const double scale = is_fp8(info.mode) ? double(kFp8ScaleA) * kFp8ScaleB : 1.0;
      const Reference ref = compute_reference(a_values, b_values, shape, scale);
      for (const Layout& layout : kLayouts) {
        const MatmulProblem dry = dry_problem(info.mode, DType::f32, shape, layout, Device::cuda(0));
        DeviceOperand a(dry.a, &a_values, 0), b(dry.b, &b_values, 0);
        for (DType out : output_dtypes(info.mode)) {
          for (const auto& variant : kernels::cuda_matmul_variants()) {
            for (bool fast_accum : {false, true}) {
              if (fast_accum && !(variant.name == "cublaslt" && is_fp8(info.mode))) continue;
              const std::string what = std::string(variant.name) + " " + std::string(info.name) + " -> " +
                                       std::string(dtype_name(out)) + (fast_accum ? " fast_accum" : "") + ", " +
                                       layout.name + ", m=" + std::to_string(shape.m) + " n=" +
                                       std::to_string(shape.n) + " k=" + std::to_string(shape.k);
              SCOPED_TRACE(what);
              const MatmulProblem out_layout = dry_problem(info.mode, out, shape, layout, Device::cuda(0));
              DeviceOperand c(out_layout.c, nullptr, kPoison);
              MatmulProblem p = out_layout;
              p.a = a.device_ref;
              p.b = b.device_ref;
              p.c = c.device_ref;
              p.fast_accum = fast_accum;
              if (!variant.takes(p)) continue;
              const auto reason = variant.unavailable(p);
              if (reason) {
                EXPECT_FALSE(must_take(variant, p, layout, sm)) << "refused: " << *reason;
                continue;
              }
              std::string choice;
              p.choice = &choice;
              try {
                variant.prepare(p)(nullptr);
                kernels::cuda::synchronize(0);
              } catch (const std::exception& error) {
                // cuBLASLt may have no algorithm for operands that are not 16-byte aligned (its
                // prepare() then says so with cuBLAS's status): allowed there, and reported.
                const bool unaligned = layout.offset != 0;
                if (variant.name == "cublaslt" && unaligned && says(error.what(), "cublasLtMatmulAlgoGetHeuristic")) {
                  std::printf("no cuBLASLt algorithm for %s: %s\n", what.c_str(), error.what());
                  continue;
                }
                ADD_FAILURE() << error.what();
                continue;
              }
              ++ran[std::string(variant.name)];
              const TensorRef host_c = c.fetch();
              EXPECT_EQ(mismatches(host_c, ref, error_bound(info.mode, out, shape.k)), std::nullopt);
              EXPECT_EQ(touched_outside(host_c, c.host, kPoison), std::nullopt);
              if (variant.name == "cublaslt") {
                EXPECT_NE(choice.find("algo="), std::string::npos) << choice;
              }
            }
          }
        }
      }
    }
  }
  // Every variant ran: a table entry that refuses everything fails here.
  for (const auto& variant : kernels::cuda_matmul_variants())
    EXPECT_GT(ran[std::string(variant.name)], 0) << variant.name << " never ran";
  std::string counts;
  for (const auto& [name, count] : ran) counts += " " + name + "=" + std::to_string(count);
  std::printf("cases run per variant:%s\n", counts.c_str());
}

// The own kernels' 64-bit index path (index_width.hpp): A of one row whose row stride is 2^33
// elements. Its one row is all that is read, so naive, smem and regblock index it in int32; mma
// forms A's offsets over a whole 128-row tile, past 2^31, so it runs its int64 path. (An int64 run
// of the others needs an operand of more than 2^31 elements.)
TEST(CudaMatmul, OwnKernelsTakeOneRowAtAHugeRowStride) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  const kernels::cuda::DeviceProperties device = kernels::cuda::device_properties(0);
  const int sm = device.sm_major * 10 + device.sm_minor;
  constexpr unsigned char kPoison = 0xFF;
  const MatmulShape shape{1, 72, 96};
  const std::int64_t a_sizes[] = {1, shape.k}, a_strides[] = {std::int64_t{1} << 33, 1};
  for (ComputeMode mode : {ComputeMode::f32, ComputeMode::bf16}) {
    const ComputeModeInfo& info = compute_mode_info(mode);
    const std::vector<double> a_values = random_values(info.a, shape.m, shape.k, 21);
    const std::vector<double> b_values = random_values(info.b, shape.k, shape.n, 22);
    const Reference ref = compute_reference(a_values, b_values, shape, 1.0);
    const MatmulProblem dry = dry_problem(mode, DType::f32, shape, kLayouts[0], Device::cuda(0));
    DeviceOperand a(TensorRef::strided(nullptr, info.a, a_sizes, a_strides, 0, Device::cuda(0)), &a_values, 0);
    DeviceOperand b(dry.b, &b_values, 0);
    for (const char* name : {"naive", "smem", "regblock", "mma"}) {
      SCOPED_TRACE(std::string(name) + " " + std::string(info.name));
      const MatmulVariant& variant = cuda_variant(name);
      DeviceOperand c(dry.c, nullptr, kPoison);
      MatmulProblem p = dry;
      p.a = a.device_ref;
      p.b = b.device_ref;
      p.c = c.device_ref;
      if (!variant.takes(p)) continue;
      if (auto reason = variant.unavailable(p)) {
        EXPECT_FALSE(must_take(variant, p, kLayouts[0], sm)) << "refused: " << *reason;
        continue;
      }
      variant.prepare(p)(nullptr);
      kernels::cuda::synchronize(0);
      const TensorRef host_c = c.fetch();
      EXPECT_EQ(mismatches(host_c, ref, error_bound(mode, DType::f32, shape.k)), std::nullopt);
      EXPECT_EQ(touched_outside(host_c, c.host, kPoison), std::nullopt);
    }
  }
}
