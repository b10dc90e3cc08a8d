// The matmul kernels of the CPU (kernels/cpu/matmul.cpp, matmul_vendor.cpp) against the f64
// reference: every variant, compute mode, layout and awkward shape, with the bound of
// matmul_tolerance; the bound itself (it passes correct results and fails wrong ones); the
// reference on hand-computed cases.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "flopscope/compare.hpp"
#include "flopscope/cpu_info.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;
using kernels::MatmulProblem;
using kernels::MatmulVariant;

namespace {

enum class Layout { NN, NT, TN };
const char* layout_name(Layout l) { return l == Layout::NN ? "NN" : l == Layout::NT ? "NT" : "TN"; }

constexpr int kGuard = 64;  // bytes around every operand that no kernel may touch
constexpr unsigned char kPoison = 0xA5;

// One operand's storage: a view of `sizes` (row-major, or the transpose of a row-major array
// when `transposed`), starting `offset` elements in, with `pad` extra elements per row of the
// array under it, between guard bytes.
struct Storage {
  std::vector<unsigned char> buffer;
  TensorRef view;
  std::size_t bytes = 0;

  Storage(DType dtype, std::int64_t rows, std::int64_t cols, bool transposed, std::int64_t offset, std::int64_t pad) {
    const std::int64_t array_rows = transposed ? cols : rows, array_cols = transposed ? rows : cols;
    const std::int64_t leading = array_cols + pad;
    const std::int64_t elements = offset + array_rows * leading;
    bytes = std::size_t(elements) * dtype_size(dtype);
    buffer.assign(bytes + 2 * kGuard, kPoison);
    const std::int64_t sizes[] = {rows, cols};
    const std::int64_t row_major[] = {leading, 1}, column_major[] = {1, leading};
    view = TensorRef::strided(buffer.data() + kGuard, dtype, sizes, transposed ? column_major : row_major, offset);
  }
  bool guards_intact() const {
    for (int i = 0; i < kGuard; ++i)
      if (buffer[std::size_t(i)] != kPoison || buffer[kGuard + bytes + std::size_t(i)] != kPoison) return false;
    return true;
  }
};

struct Case {
  std::int64_t m, n, k;
  ComputeMode mode = ComputeMode::f32;
  Layout layout = Layout::NN;
  std::int64_t offset = 0, pad = 0;
  std::optional<DType> c_dtype;  // default: f64 for f64, f32 otherwise
  bool c_transposed = false;
  float scale_a = 1, scale_b = 1;

  std::string str() const {
    return std::string(compute_mode_name(mode)) + " " + layout_name(layout) + " m=" + std::to_string(m) +
           " n=" + std::to_string(n) + " k=" + std::to_string(k) + " offset=" + std::to_string(offset) +
           " pad=" + std::to_string(pad) + (c_transposed ? " C transposed" : "") +
           (c_dtype ? " C " + std::string(dtype_name(*c_dtype)) : "");
  }
};

// Values uniform in [-1, 1), rounded to the view's dtype (serial: the tests make thousands of
// small operands, and a parallel region costs more than it saves there).
void fill(const TensorRef& view, std::uint64_t seed) {
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto* base = static_cast<unsigned char*>(view.element_data());
  for (std::int64_t i = 0; i < view.sizes[0]; ++i)
    for (std::int64_t j = 0; j < view.sizes[1]; ++j) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const double value = double(state >> 11) * std::ldexp(1.0, -52) - 1.0;
      store_element(base + (i * view.strides[0] + j * view.strides[1]) * std::int64_t(view.element_size()), view.dtype,
                    value);
    }
}

struct Operands {
  Storage a, b, c;
  MatmulProblem problem;

  explicit Operands(const Case& t)
      : a(compute_mode_info(t.mode).a, t.m, t.k, t.layout == Layout::TN, t.offset, t.pad),
        b(compute_mode_info(t.mode).b, t.k, t.n, t.layout == Layout::NT, 2 * t.offset + 1, t.pad),
        c(t.c_dtype.value_or(t.mode == ComputeMode::f64 ? DType::f64 : DType::f32), t.m, t.n, t.c_transposed,
          t.offset + 3, t.pad) {
    fill(a.view, 7 + std::uint64_t(t.m));
    fill(b.view, 11 + std::uint64_t(t.n));
    problem = {a.view, b.view, c.view, t.mode, t.scale_a, t.scale_b};
  }
};

// Exact sums of products of the stored inputs and their scale (Σ|a·b|), as f64 m x n tensors.
struct Expected {
  Tensor sums, scale;
  explicit Expected(const MatmulProblem& p) : sums(empty({p.m(), p.n()}, {DType::f64})), scale(empty({p.m(), p.n()}, {DType::f64})) {
    std::vector<std::int64_t> rows;
    for (std::int64_t i = 0; i < p.m(); ++i) rows.push_back(i);
    kernels::matmul_reference_rows(p, rows, static_cast<double*>(sums.data_ptr()), static_cast<double*>(scale.data_ptr()));
  }
};

// Runs `variant` on the case (nullopt when it ran and matched), or says why not ("skip: ...").
std::optional<std::string> check(const MatmulVariant& variant, const Case& t) {
  Operands ops(t);
  if (!variant.takes(ops.problem)) return "skip: does not take " + t.str();
  if (auto reason = variant.unavailable(ops.problem)) return "skip: " + *reason;
  variant.prepare(ops.problem)(nullptr);
  if (!ops.a.guards_intact() || !ops.b.guards_intact() || !ops.c.guards_intact())
    return std::string(variant.name) + " wrote outside its operands: " + t.str();
  const Expected expected(ops.problem);
  const TensorRef scale = expected.scale.ref();
  if (auto mismatch = compare_close(ops.problem.c, expected.sums.ref(),
                                    kernels::matmul_tolerance(ops.problem, variant.info), &scale))
    return std::string(variant.name) + " " + t.str() + ": " + *mismatch;
  return std::nullopt;
}

// Every CPU variant on `cases`: each runs or is skipped (counted); a mismatch fails.
void check_all(const std::vector<Case>& cases, const char* what) {
  int ran = 0;
  for (const auto& variant : kernels::cpu_matmul_variants())
    for (const Case& t : cases) {
      const auto result = check(variant, t);
      if (!result) {
        ++ran;
        continue;
      }
      ASSERT_EQ(result->rfind("skip: ", 0), 0u) << *result;
    }
  EXPECT_GT(ran, 0) << what;
}

const std::vector<ComputeMode> kCpuModes = {ComputeMode::f64,    ComputeMode::f32,    ComputeMode::f16,
                                            ComputeMode::bf16,   ComputeMode::f8e4m3, ComputeMode::f8e5m2,
                                            ComputeMode::f8e4m3_e5m2, ComputeMode::f8e5m2_e4m3};

// Awkward shapes: empty (m, n or k = 0), 1 x 1 x 1, k = 1, odd sizes and sizes off the
// micro-tiles (6 x 64, 6 x 32, 6 x 16, 4 x 16, 8 x 32, AMX's 32 x 32 and its 32-k chunks), k across
// k blocks (Note [blocking]: kc from the L1, a few hundred, or on AVX-512 from the L2, 1024 for
// f32 and 2048 for bf16 on Zen 4's 1 MiB L2, 512 and 1024 on the Xeon's 2 MiB), m across an A
// panel (at most 256 slivers: 1536 rows at 6, 8192 at 32), n across B blocks (nc from the L2: 192
// to 1344 columns), a long k whose last k block is odd (bf16 pairs: 5001 = 2 x 2048 + 905), and
// AMX's A read in place (k a multiple of 32 within one k block: two whole 32-row slivers, then an
// edge of 6 rows; two threads splitting C by columns, an edge of 8).
const std::vector<std::array<std::int64_t, 3>> kShapes = {
    {0, 5, 3},     {4, 0, 3},     {4, 5, 0},   {1, 1, 1},      {1, 7, 1},   {5, 1, 3},
    {3, 5, 2},     {13, 33, 17},  {15, 31, 1}, {14, 32, 64},   {33, 31, 33}, {29, 65, 385},
    {17, 97, 800}, {6, 64, 64},   {7, 129, 700}, {3600, 3, 2},  {8200, 2, 40}, {3, 1400, 5}, {2, 3, 5001},
    {10, 128, 40}, {8, 192, 33},  // an edge of 4 and of 2 rows across whole AVX-512 slivers
    {70, 200, 160},
};

}  // namespace

// ---- the reference ----

TEST(MatmulReference, HandComputedProduct) {
  // [1 2 3; 4 5 6] · [7 8; 9 10; 11 12] = [58 64; 139 154]
  Tensor a = arange(1, 7).view({2, 3}), b = arange(7, 13).view({3, 2}), c = empty({2, 2});
  kernels::matmul_reference({a.ref(), b.ref(), c.ref(), ComputeMode::f32});
  EXPECT_EQ(c.to_vector(), (std::vector<double>{58, 64, 139, 154}));
}

TEST(MatmulReference, TransposedViewsGiveTheProductOfTheirValues) {
  // A = [1 3 5; 2 4 6], B = [7 10; 8 11; 9 12], both transposed views of row-major arrays.
  Tensor a = arange(1, 7).view({3, 2}).t(), b = arange(7, 13).view({2, 3}).t(), c = empty({2, 2});
  kernels::matmul_reference({a.ref(), b.ref(), c.ref(), ComputeMode::f32});
  EXPECT_EQ(c.to_vector(), (std::vector<double>{76, 103, 100, 136}));
}

TEST(MatmulReference, RowsGiveSumsAndTheSumOfAbsoluteProducts) {
  Tensor a = from_values({1, -2, 3, 4}, {2, 2}), b = from_values({5, 6, -7, 8}, {2, 2}), c = empty({2, 2});
  const std::int64_t rows[] = {1};
  double sums[2], abs_sums[2];
  kernels::matmul_reference_rows({a.ref(), b.ref(), c.ref(), ComputeMode::f32}, rows, sums, abs_sums);
  EXPECT_EQ(sums[0], 3 * 5 + 4 * -7);
  EXPECT_EQ(sums[1], 3 * 6 + 4 * 8);
  EXPECT_EQ(abs_sums[0], 3 * 5 + 4 * 7);
  EXPECT_EQ(abs_sums[1], 3 * 6 + 4 * 8);
}

TEST(MatmulReference, Fp8ScalesMultiplyTheProduct) {
  Tensor a = from_values({1, 2}, {1, 2}).to(DType::f8e4m3), b = from_values({3, 4}, {2, 1}).to(DType::f8e4m3);
  Tensor c = empty({1, 1});
  kernels::matmul_reference({a.ref(), b.ref(), c.ref(), ComputeMode::f8e4m3, 0.5f, 4.0f});
  EXPECT_EQ(c.item(), 2.0 * (1 * 3 + 2 * 4));
}

TEST(MatmulReference, Tf32RoundsTheInputsAndRowsDoNot) {
  const double x = 1 + std::ldexp(1.0, -12);  // between two tf32 values: rounds to 1
  Tensor a = from_values({x}, {1, 1}), b = from_values({1}, {1, 1}), c = empty({1, 1});
  kernels::matmul_reference({a.ref(), b.ref(), c.ref(), ComputeMode::tf32});
  EXPECT_EQ(c.item(), 1.0);
  const std::int64_t rows[] = {0};
  double sum, abs_sum;
  kernels::matmul_reference_rows({a.ref(), b.ref(), c.ref(), ComputeMode::tf32}, rows, &sum, &abs_sum);
  EXPECT_EQ(sum, double(float(x)));
}

TEST(MatmulReference, BlasAgreesWithTheLoopOnEveryElement) {
  for (ComputeMode mode : {ComputeMode::f64, ComputeMode::f32, ComputeMode::bf16, ComputeMode::f8e5m2_e4m3})
    for (Layout layout : {Layout::NN, Layout::NT, Layout::TN}) {
      const Case t{37, 53, 61, mode, layout, 2, 1, std::nullopt, false, 0.5f, 2.0f};
      SCOPED_TRACE(t.str());
      Operands ops(t);
      const Expected loop(ops.problem);
      Tensor sums = empty({t.m, t.n}, {DType::f64}), abs_sums = empty({t.m, t.n}, {DType::f64});
      if (!kernels::matmul_reference_blas(ops.problem, static_cast<double*>(sums.data_ptr()),
                                          static_cast<double*>(abs_sums.data_ptr())))
        GTEST_SKIP() << "built without OpenBLAS";
      // f64 sums of exact products in another order: equal to far below any bound.
      const TensorRef scale = loop.scale.ref();
      EXPECT_EQ(compare_close(sums.ref(), loop.sums.ref(), {0, 1e-14}, &scale), std::nullopt);
      EXPECT_EQ(compare_close(abs_sums.ref(), loop.scale.ref(), {0, 1e-14}), std::nullopt);
    }
}

TEST(MatmulProblem, MalformedProblemsAreNamed) {
  Tensor a = empty({2, 3}), b = empty({4, 2}), c = empty({2, 2});
  EXPECT_NE(kernels::matmul_problem_error({a.ref(), b.ref(), c.ref()})->find("A (m x k), B (k x n)"), std::string::npos);
  Tensor b16 = empty({3, 2}, {DType::bf16});
  EXPECT_NE(kernels::matmul_problem_error({a.ref(), b16.ref(), c.ref(), ComputeMode::f32})->find("f32 multiplies f32 by f32"),
            std::string::npos);
  for (const auto& variant : kernels::cpu_matmul_variants()) {
    const auto reason = variant.unavailable({a.ref(), b.ref(), c.ref()});
    ASSERT_TRUE(reason) << variant.name;
  }
}

// ---- every variant against the reference ----

TEST(CpuMatmul, EveryVariantModeLayoutAndAwkwardShape) {
  std::vector<Case> cases;
  for (ComputeMode mode : kCpuModes)
    for (Layout layout : {Layout::NN, Layout::NT, Layout::TN})
      for (const auto& [m, n, k] : kShapes) cases.push_back({m, n, k, mode, layout});
  check_all(cases, "every mode, layout and shape");
}

TEST(CpuMatmul, MisalignedStartsPaddedRowsAndStridedOrNarrowOutputs) {
  std::vector<Case> cases;
  for (ComputeMode mode : kCpuModes)
    for (Layout layout : {Layout::NN, Layout::NT, Layout::TN}) {
      cases.push_back({37, 45, 29, mode, layout, 3, 5});
      cases.push_back({37, 45, 29, mode, layout, 1, 0, std::nullopt, true});
    }
  for (ComputeMode mode : {ComputeMode::f16, ComputeMode::bf16})
    cases.push_back({33, 47, 70, mode, Layout::NN, 0, 0, compute_mode_info(mode).a});
  // AMX's A in place at an odd start and row pitch, two threads splitting C by rows (n < 128).
  for (Layout layout : {Layout::NN, Layout::NT}) cases.push_back({200, 45, 64, ComputeMode::bf16, layout, 3, 5});
  check_all(cases, "offsets, padding, transposed and narrow C");
}

TEST(CpuMatmul, Fp8ScalesApply) {
  std::vector<Case> cases;
  for (ComputeMode mode : {ComputeMode::f8e4m3, ComputeMode::f8e5m2, ComputeMode::f8e5m2_e4m3})
    cases.push_back({19, 40, 33, mode, Layout::NN, 0, 0, std::nullopt, false, 0.5f, 4.0f});
  check_all(cases, "fp8 scales");
}

TEST(CpuMatmul, NarrowerKernelsOfTheMicrokernelVariant) {
  // The AVX2 kernels (Zen 3 and older Intel run them) and the plain one, on an AVX-512 machine.
  const auto& micro = kernels::variant_named(kernels::cpu_matmul_variants(), "microkernel");
  for (const char* isa : {"avx2", "plain"}) {
    if (std::string(isa) == "avx2" && cpu_lacks({"avx2", "fma"})) continue;
    setenv("FLOPSCOPE_MATMUL_ISA", isa, 1);
    for (ComputeMode mode : {ComputeMode::f64, ComputeMode::f32, ComputeMode::bf16})
      for (Layout layout : {Layout::NN, Layout::NT, Layout::TN})
        for (const auto& [m, n, k] : kShapes) {
          const Case t{m, n, k, mode, layout};
          EXPECT_EQ(check(micro, t), std::nullopt) << isa << " " << t.str();
        }
    unsetenv("FLOPSCOPE_MATMUL_ISA");
  }
}

TEST(CpuMatmul, TheIsaCapSkipsTheAvx512VariantsAndTheLabelSaysWhichKernelRan) {
  const auto& variants = kernels::cpu_matmul_variants();
  const auto choice = [&](const char* name, const Case& t) {
    Operands ops(t);
    std::string words;
    ops.problem.choice = &words;
    const auto& variant = kernels::variant_named(variants, name);
    if (variant.unavailable(ops.problem)) return std::string("unavailable");
    variant.prepare(ops.problem);
    return words;
  };
  const Case f32{40, 40, 40, ComputeMode::f32}, bf16{40, 40, 40, ComputeMode::bf16};
  if (!cpu_lacks({"avx512f"})) {
    EXPECT_EQ(choice("microkernel", f32).rfind("isa=avx512 ukr=6x64 kc=", 0), 0u);
  }
  if (!cpu_lacks({"avx512f", "avx512_bf16"})) {
    EXPECT_EQ(choice("microkernel_dpbf16", bf16).rfind("isa=avx512_bf16 ukr=6x64 kc=", 0), 0u);
  }
  if (!cpu_lacks({"amx_tile", "amx_bf16"})) {
    EXPECT_EQ(choice("microkernel_amx", bf16).rfind("isa=amx_bf16 ukr=32x32 kc=", 0), 0u);
  }
  if (cpu_lacks({"avx2", "fma"})) GTEST_SKIP() << "no AVX2 to cap to";
  setenv("FLOPSCOPE_MATMUL_ISA", "avx2", 1);
  EXPECT_EQ(choice("microkernel", f32).rfind("isa=avx2 ukr=6x16 kc=", 0), 0u);
  for (const char* name : {"microkernel_dpbf16", "microkernel_amx", "microkernel_fp16"}) {
    Operands ops(name == std::string("microkernel_fp16") ? Case{8, 8, 8, ComputeMode::f16} : bf16);
    const auto reason = kernels::variant_named(variants, name).unavailable(ops.problem);
    ASSERT_TRUE(reason.has_value()) << name;
    EXPECT_TRUE(reason->find("FLOPSCOPE_MATMUL_ISA=avx2 caps") != std::string::npos || reason->find("lacks") != std::string::npos)
        << name << ": " << *reason;
  }
  unsetenv("FLOPSCOPE_MATMUL_ISA");
}

TEST(CpuMatmul, AnyThreadCountSplitsTheWorkCorrectly) {
  const int threads = omp_get_max_threads();
  for (int count : {1, 2, 3, 5}) {
    omp_set_num_threads(count);
    check_all({{61, 130, 40, ComputeMode::f32}, {130, 20, 40, ComputeMode::f32}, {3, 3, 3, ComputeMode::f64},
               {45, 200, 41, ComputeMode::bf16}},
              "thread counts");
  }
  omp_set_num_threads(threads);
}

TEST(CpuMatmul, OwnVariantsRunWhereTheCpuAllows) {
  const auto& variants = kernels::cpu_matmul_variants();
  Case t{20, 40, 30, ComputeMode::f32};
  for (const char* name : {"naive", "blocked"}) EXPECT_EQ(check(kernels::variant_named(variants, name), t), std::nullopt);
  const auto micro = check(kernels::variant_named(variants, "microkernel"), t);
  if (cpu_lacks({"avx2", "fma"}) && cpu_lacks({"avx512f"}))
    EXPECT_EQ(*micro, "skip: " + *cpu_lacks({"avx2", "fma"}));
  else
    EXPECT_EQ(micro, std::nullopt);
  const auto dpbf16 = check(kernels::variant_named(variants, "microkernel_dpbf16"), {20, 40, 30, ComputeMode::bf16});
  if (auto lacks = cpu_lacks({"avx512f", "avx512_bf16"}))
    EXPECT_EQ(*dpbf16, "skip: " + *lacks);
  else
    EXPECT_EQ(dpbf16, std::nullopt);
  const auto amx = check(kernels::variant_named(variants, "microkernel_amx"), {20, 40, 30, ComputeMode::bf16});
  if (auto lacks = cpu_lacks({"amx_tile", "amx_bf16"}))
    EXPECT_EQ(*amx, "skip: " + *lacks);
  else  // the OS may still refuse the tile data: then the skip says so
    EXPECT_TRUE(!amx || amx->find("arch_prctl") != std::string::npos) << *amx;
  const auto fp16 = check(kernels::variant_named(variants, "microkernel_fp16"), {20, 40, 30, ComputeMode::f16});
  if (auto lacks = cpu_lacks({"avx512f", "avx512bw", "avx512_fp16"}))
    EXPECT_EQ(*fp16, "skip: " + *lacks);
  else
    EXPECT_EQ(fp16, std::nullopt);
  // tf32 is a GPU mode: no CPU variant takes it.
  const Case tf32{4, 4, 4, ComputeMode::tf32};
  for (const auto& variant : variants) EXPECT_EQ(check(variant, tf32), "skip: does not take " + tf32.str()) << variant.name;
}

TEST(CpuMatmul, VendorsRunOrSayWhyNot) {
  const auto& variants = kernels::cpu_matmul_variants();
  const auto& onednn = kernels::variant_named(variants, "onednn");
  const auto& openblas = kernels::variant_named(variants, "openblas");
#ifdef FLOPSCOPE_HAVE_OPENBLAS
  for (ComputeMode mode : {ComputeMode::f32, ComputeMode::f64})
    for (Layout layout : {Layout::NN, Layout::NT, Layout::TN})
      EXPECT_EQ(check(openblas, {70, 90, 50, mode, layout, 1, 3}), std::nullopt);
  EXPECT_NE(check(openblas, {8, 8, 8, ComputeMode::bf16})->find("sgemm and dgemm"), std::string::npos);
  EXPECT_NE(check(openblas, {8, 8, 8, ComputeMode::f32, Layout::NN, 0, 0, std::nullopt, true})->find("C row-major"),
            std::string::npos);
#else
  EXPECT_NE(check(openblas, {8, 8, 8})->find("built without OpenBLAS"), std::string::npos);
#endif
#ifdef FLOPSCOPE_HAVE_ONEDNN
  for (Layout layout : {Layout::NN, Layout::NT, Layout::TN})
    EXPECT_EQ(check(onednn, {70, 90, 50, ComputeMode::f32, layout, 1, 3}), std::nullopt);
  EXPECT_NE(check(onednn, {8, 8, 8, ComputeMode::f64})->find("has no f64 data type"), std::string::npos);
  EXPECT_NE(check(onednn, {8, 8, 8, ComputeMode::f8e4m3})->find("has no f8e4m3 data type"), std::string::npos);
  // bf16: runs, or a skip quoting oneDNN's own failure to create the primitive.
  const auto bf16 = check(onednn, {70, 90, 50, ComputeMode::bf16});
  if (bf16) {
    EXPECT_NE(bf16->find("could not create a primitive descriptor"), std::string::npos) << *bf16;
  }
  if (!cpu_lacks({"avx512_bf16"})) {
    EXPECT_EQ(bf16, std::nullopt);
  }
#else
  EXPECT_NE(check(onednn, {8, 8, 8})->find("built without oneDNN"), std::string::npos);
#endif
}

// ---- the bound ----

// The result of `variant` on a case, the exact sums and the bound, for perturbing.
struct Judged {
  Operands ops;
  Expected expected;
  Tolerance bound;
  Judged(const Case& t, const MatmulVariant& variant)
      : ops(t), expected((variant.prepare(ops.problem)(nullptr), ops.problem)),
        bound(kernels::matmul_tolerance(ops.problem, variant.info)) {}
  std::optional<std::string> compare() const {
    const TensorRef scale = expected.scale.ref();
    return compare_close(ops.problem.c, expected.sums.ref(), bound, &scale);
  }
  // Moves C(i, j) away from the exact sum by `relative` x its scale (C is f32 or f64).
  void perturb(std::int64_t i, std::int64_t j, double relative) {
    const TensorRef& c = ops.problem.c;
    auto* address = static_cast<unsigned char*>(c.element_data()) + (i * c.strides[0] + j * c.strides[1]) * std::int64_t(c.element_size());
    const double exact = expected.sums.at({i, j}), scale = expected.scale.at({i, j});
    store_element(address, c.dtype, exact + relative * scale);
  }
};

TEST(MatmulBound, GrowsWithKAndFollowsTheDtypes) {
  Tensor a = empty({4, 16}), b = empty({16, 4}), c = empty({4, 4});
  Tensor a2 = empty({4, 1024}), b2 = empty({1024, 4});
  const kernels::MatmulInfo own{};
  const double short_k = kernels::matmul_tolerance({a.ref(), b.ref(), c.ref()}, own).rtol;
  const double long_k = kernels::matmul_tolerance({a2.ref(), b2.ref(), c.ref()}, own).rtol;
  EXPECT_DOUBLE_EQ(short_k, 16 * unit_roundoff(DType::f32) + unit_roundoff(DType::f32));
  EXPECT_DOUBLE_EQ(long_k, 1024 * unit_roundoff(DType::f32) + unit_roundoff(DType::f32));
  EXPECT_DOUBLE_EQ(kernels::matmul_tolerance({a.ref(), b.ref(), c.ref(), ComputeMode::tf32}, own).rtol,
                   short_k + 2 * std::ldexp(1.0, -10));
  // f16 sums over blocks of 16, then f32.
  Tensor h1 = empty({4, 1024}, {DType::f16}), h2 = empty({1024, 4}, {DType::f16});
  EXPECT_DOUBLE_EQ(kernels::matmul_tolerance({h1.ref(), h2.ref(), c.ref(), ComputeMode::f16}, {.narrow_accumulation = 16}).rtol,
                   16 * unit_roundoff(DType::f16) + unit_roundoff(DType::f32) + 64 * unit_roundoff(DType::f32));
}

TEST(MatmulBound, PassesCorrectResultsAndFailsAnElementOffByOneNarrowUlpTimesK) {
  const auto& micro = kernels::variant_named(kernels::cpu_matmul_variants(), "microkernel");
  if (cpu_lacks({"avx512f"}) && cpu_lacks({"avx2", "fma"})) GTEST_SKIP() << "microkernel: " << *cpu_lacks({"avx2", "fma"});
  for (ComputeMode mode : kCpuModes)
    for (std::int64_t k : {1, 16, 1000}) {
      const Case t{9, 35, k, mode};
      SCOPED_TRACE(t.str());
      Judged judged(t, micro);
      ASSERT_EQ(judged.compare(), std::nullopt);
      // Half the bound on one element passes; twice the bound fails (the bound is not loose).
      judged.perturb(4, 17, 0.5 * judged.bound.rtol);
      EXPECT_EQ(judged.compare(), std::nullopt);
      judged.perturb(4, 17, 2 * judged.bound.rtol);
      EXPECT_NE(judged.compare(), std::nullopt);
      // An element off by k ulps of the operands' dtype (what summing in that dtype could cost).
      if (mode != ComputeMode::f64 && mode != ComputeMode::f32) {
        judged.perturb(4, 17, double(k) * dtype_info(compute_mode_info(mode).a).epsilon);
        const auto message = judged.compare();
        ASSERT_NE(message, std::nullopt);
        EXPECT_NE(message->find("1 of 315 elements differ"), std::string::npos) << *message;
      }
    }
}
