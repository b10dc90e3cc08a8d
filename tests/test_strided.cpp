// Strided copies (.contiguous() of a view): the plan of each view kind by hand, and every CPU and
// CUDA variant against copy_reference on every view kind, dtype and awkward shape (sizes 0 and 1,
// odd sizes, sizes off the tile and vector widths, starts off alignment through a storage
// offset), bit for bit, with the bytes around the destination untouched. CUDA cases skip, with
// the runtime's reason, where there is no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "flopscope/compare.hpp"
#include "flopscope/cpu_info.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/kernels/index_width.hpp"
#include "flopscope/kernels/strided.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;
using kernels::CopyProblem;
using kernels::StridedPlan;

namespace {

// A view and what it is, for messages.
struct View {
  std::string name;
  Tensor tensor;
};

// A tensor of `shape` whose storage holds random bits (NaN patterns included: copies move bits).
Tensor random_tensor(Shape shape, DType dtype, std::uint64_t seed) {
  Tensor t = empty(std::move(shape), {dtype});
  kernels::fill_random_bytes(t.storage()->data(), t.storage()->bytes(), seed);
  return t;
}

// Every view kind of the strided family, at awkward sizes, over bases of `dtype`.
std::vector<View> views(DType dtype) {
  std::vector<View> out;
  std::uint64_t seed = 1;
  auto add = [&](std::string name, const Tensor& t) { out.push_back({std::move(name), t}); };
  for (auto [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {0, 5}, {1, 1}, {1, 7}, {7, 1}, {3, 5}, {16, 16}, {17, 33}, {64, 64}, {65, 129}, {100, 37}, {250, 3},
           // 32 x 32 16-bit tiles with edges on both sides; a pitch off the line (300 elements) and more
           // dst rows (517) than one L1-sized block holds.
           {31, 33}, {96, 97}, {300, 517}}) {
    const Tensor x = random_tensor({m, n}, dtype, seed++);
    add("transpose " + shape_str(x.shape()), x.t());
    // A start off alignment: columns 1.. of a wider matrix (storage offset 1, row pitch n + 1).
    const Tensor wide = random_tensor({m, n + 1}, dtype, seed++);
    add("transpose of narrow(1, 1, n) " + shape_str(wide.shape()), wide.narrow(1, 1, n).t());
  }
  for (Shape bthd : std::vector<Shape>{{2, 5, 3, 4}, {1, 7, 2, 16}, {2, 33, 3, 17}, {1, 1, 1, 1}}) {
    const Tensor x = random_tensor(bthd, dtype, seed++);
    add("split heads " + shape_str(bthd), x.permute({0, 2, 1, 3}));
    add("merge heads " + shape_str(bthd), x.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3}));
  }
  for (std::int64_t k : {1, 2, 3, 4, 5, 8, 12, 16}) {
    const Tensor x = random_tensor({17, 67}, dtype, seed++);
    add("x[:, ::" + std::to_string(k) + "] of [17, 67]", x.slice(1, std::nullopt, std::nullopt, k));
    add("x[1:, 3::" + std::to_string(k) + "] of [17, 67]", x.slice(0, 1).slice(1, 3, std::nullopt, k));
  }
  const Tensor row = random_tensor({37}, dtype, seed++), column = random_tensor({19, 1}, dtype, seed++);
  add("expand [37] -> [19, 37]", row.expand({19, 37}));
  add("expand [19, 1] -> [19, 37]", column.expand({19, 37}));
  add("expand [5, 37] -> [3, 5, 37]", random_tensor({5, 37}, dtype, seed++).expand({3, 5, 37}));
  add("expand [] -> [4, 6]", random_tensor({1}, dtype, seed++).squeeze().expand({4, 6}));
  const Tensor nchw = random_tensor({2, 3, 17, 19}, dtype, seed++);
  add("permute(0, 2, 3, 1) of [2, 3, 17, 19]", nchw.permute({0, 2, 3, 1}));
  add("permute(3, 2, 1, 0) of [2, 3, 17, 19]", nchw.permute({3, 2, 1, 0}));
  add("permute(2, 0, 1) of [9, 33, 40]", random_tensor({9, 33, 40}, dtype, seed++).permute({2, 0, 1}));
  add("permute(1, 0, 2) of [9, 33, 40], sliced", random_tensor({9, 33, 40}, dtype, seed++).permute({1, 0, 2}).slice(2, 1, 39, 3));
  add("permute(4, 2, 0, 3, 1) of [3, 4, 5, 6, 7]", random_tensor({3, 4, 5, 6, 7}, dtype, seed++).permute({4, 2, 0, 3, 1}));
  add("0-d", random_tensor({3}, dtype, seed++)[2]);
  return out;
}

// Runs `variant` on `src` into a contiguous destination `dst_offset` elements past a 64-byte
// boundary (by default one: misaligned), surrounded by poison, and compares every byte (poison
// included) with copy_reference's. The simd variant streams its stores only into a 64-byte aligned
// destination: a test of those passes dst_offset = 64 / element size.
void check(const kernels::CopyVariant& variant, const View& view, Device device = Device::cpu(),
           std::int64_t dst_offset = 1) {
  const Tensor& src = view.tensor;
  const std::size_t size = src.element_size();
  const std::size_t bytes = std::size_t(src.numel() + dst_offset + 1) * size + 64;
  const Shape shape = src.shape();
  kernels::HostBuffer dst(bytes), expected(bytes);
  std::memset(dst.data, 0xA5, bytes);
  std::memset(expected.data, 0xA5, bytes);
  const Strides strides = contiguous_strides(shape);
  const TensorRef expected_ref = TensorRef::strided(expected.data, src.dtype(), shape, strides, dst_offset);
  kernels::copy_reference({expected_ref, src.ref()});
  const std::string what = std::string(variant.name) + " " + std::string(dtype_name(src.dtype())) + " " + view.name;
  if (device.is_cpu()) {
    const CopyProblem problem{TensorRef::strided(dst.data, src.dtype(), shape, strides, dst_offset), src.ref()};
    ASSERT_EQ(variant.unavailable(problem), std::nullopt) << what;
    variant.prepare(problem)(nullptr);
  } else {
    // The source's whole storage on the device, viewed with the same sizes, strides and offset.
    const std::size_t storage = src.storage()->bytes();
    kernels::cuda::DeviceMemory device_src(std::max<std::size_t>(storage, 1)), device_dst(bytes);
    kernels::cuda::copy_to_device(device_src.data, src.storage()->data(), storage);
    kernels::cuda::copy_to_device(device_dst.data, dst.data, bytes);
    const CopyProblem problem{TensorRef::strided(device_dst.data, src.dtype(), shape, strides, dst_offset, device),
                              TensorRef::strided(device_src.data, src.dtype(), shape, src.strides(), src.storage_offset(), device)};
    if (!variant.takes(problem)) return;
    ASSERT_EQ(variant.unavailable(problem), std::nullopt) << what;
    variant.prepare(problem)(nullptr);
    kernels::cuda::synchronize();
    kernels::cuda::copy_to_host(dst.data, device_dst.data, bytes);
  }
  if (std::memcmp(dst.data, expected.data, bytes) != 0) {
    const auto inside = compare_exact(TensorRef::strided(dst.data, src.dtype(), shape, strides, dst_offset), expected_ref);
    FAIL() << what << ": " << inside.value_or("the bytes around the destination were written");
  }
}

}  // namespace

// ---- plans ----

TEST(StridedPlan, ATransposeTransposesItsTwoDimensions) {
  const Tensor x = empty({4095, 4097});
  const StridedPlan plan = kernels::plan_strided_copy({empty({4097, 4095}).ref(), x.t().ref()});
  EXPECT_EQ(plan.kind, StridedPlan::Kind::transpose);
  EXPECT_EQ(plan.dims, 2);
  EXPECT_EQ(plan.pivot, 0);
  EXPECT_EQ(plan.sizes[0], 4097);
  EXPECT_EQ(plan.sizes[1], 4095);
  EXPECT_EQ(plan.src_strides[1], 4097);
  EXPECT_EQ(plan.dst_strides[0], 4095);
}

TEST(StridedPlan, SplitHeadsMovesRowsOfHeadDim) {
  // (B,T,H,d) -> (B,H,T,d): rows of d elements; B and H stay apart, nothing merges.
  const Tensor x = empty({8, 1024, 12, 64});
  const StridedPlan plan = kernels::plan_strided_copy({empty({8, 12, 1024, 64}).ref(), x.permute({0, 2, 1, 3}).ref()});
  EXPECT_EQ(plan.kind, StridedPlan::Kind::rows);
  EXPECT_EQ(plan.dims, 4);
  EXPECT_EQ(plan.sizes[3], 64);
  EXPECT_EQ(plan.src_strides[1], 64);
  EXPECT_EQ(plan.src_strides[2], 12 * 64);
}

TEST(StridedPlan, ContiguousAndSizeOneDimensionsCollapse) {
  const Tensor x = empty({3, 1, 5, 7});
  const StridedPlan plan = kernels::plan_strided_copy({empty({3, 1, 5, 7}).ref(), x.ref()});
  EXPECT_EQ(plan.kind, StridedPlan::Kind::rows);
  EXPECT_EQ(plan.dims, 1);
  EXPECT_EQ(plan.sizes[0], 105);
  // NCHW -> NHWC: H and W merge, C becomes the innermost dimension, HW the pivot.
  const Tensor nchw = empty({2, 3, 4, 5});
  const StridedPlan nhwc = kernels::plan_strided_copy({empty({2, 4, 5, 3}).ref(), nchw.permute({0, 2, 3, 1}).ref()});
  EXPECT_EQ(nhwc.kind, StridedPlan::Kind::transpose);
  EXPECT_EQ(nhwc.dims, 3);
  EXPECT_EQ(nhwc.sizes[1], 20);
  EXPECT_EQ(nhwc.pivot, 1);
}

TEST(StridedPlan, StepsAndExpandedColumnsGather) {
  // x[:, ::4] of a (16, 66) matrix: rows of 17 elements 4 apart, 66 apart from row to row.
  const Tensor x = empty({16, 66});
  const StridedPlan slice = kernels::plan_strided_copy({empty({16, 17}).ref(), x.slice(1, std::nullopt, std::nullopt, 4).ref()});
  EXPECT_EQ(slice.kind, StridedPlan::Kind::gather);
  EXPECT_EQ(slice.dims, 2);
  EXPECT_EQ(slice.src_strides[1], 4);
  // Of a (16, 64) one, each row continues the last: one run of 256 elements 4 apart.
  const StridedPlan merged = kernels::plan_strided_copy({empty({16, 16}).ref(), empty({16, 64}).slice(1, std::nullopt, std::nullopt, 4).ref()});
  EXPECT_EQ(merged.kind, StridedPlan::Kind::gather);
  EXPECT_EQ(merged.dims, 1);
  EXPECT_EQ(merged.sizes[0], 256);
  const StridedPlan column = kernels::plan_strided_copy({empty({16, 64}).ref(), empty({16, 1}).expand({16, 64}).ref()});
  EXPECT_EQ(column.kind, StridedPlan::Kind::gather);
  EXPECT_EQ(column.src_strides[1], 0);
  const StridedPlan row = kernels::plan_strided_copy({empty({16, 64}).ref(), empty({64}).expand({16, 64}).ref()});
  EXPECT_EQ(row.kind, StridedPlan::Kind::rows);
  EXPECT_EQ(row.src_strides[0], 0);
}

// ---- CPU ----

TEST(CpuStrided, EveryVariantMatchesTheReferenceOnEveryViewKindDtypeAndShape) {
  ASSERT_EQ(kernels::cpu_strided_variants().size(), 4u);
  for (const auto& variant : kernels::cpu_strided_variants()) {
    for (DType dtype : kAllDTypes)
      for (const View& view : views(dtype)) {
        const CopyProblem dry{empty(view.tensor.shape(), {dtype}).ref(), view.tensor.ref()};
        if (variant.name == "reorder" && variant.unavailable(dry)) continue;  // ReorderRunsEveryViewItCan
        check(variant, view);
        if (HasFatalFailure()) return;
      }
  }
}

TEST(CpuStrided, ReorderRunsEveryViewItCan) {
#ifndef FLOPSCOPE_HAVE_ONEDNN
  GTEST_SKIP() << "built without oneDNN";
#else
  const auto& reorder = kernels::variant_named(kernels::cpu_strided_variants(), "reorder");
  int ran = 0;
  for (DType dtype : kAllDTypes)
    for (const View& view : views(dtype)) {
      const CopyProblem dry{empty(view.tensor.shape(), {dtype}).ref(), view.tensor.ref()};
      const auto reason = reorder.unavailable(dry);
      // oneDNN takes every view whose strides each span the dimensions inside them: not
      // x[:, ::k] of a (17, 67) matrix (row pitch 67 < 67 / k rounded up, times k). It says so.
      if (reason) {
        const auto& shape = view.tensor.shape();
        const auto& strides = view.tensor.strides();
        EXPECT_TRUE(shape.size() == 2 && strides[0] < shape[1] * strides[1]) << view.name << ": " << *reason;
        EXPECT_EQ(reason->rfind("oneDNN: ", 0), 0u) << *reason;
        continue;
      }
      ++ran;
    }
  EXPECT_GT(ran, 100);
#endif
}

TEST(CpuStrided, StreamingStoresAboveTheLastLevelCacheAreExact) {
  // Source and destination together past the streaming threshold: non-temporal stores in simd,
  // for a transpose (tiles), split heads (rows), an expanded row and slices (vector gathers, with
  // an unaligned start through the storage offset of slice(1, 1, ...)).
  const auto threshold = static_cast<std::int64_t>(kernels::cpu_streaming_threshold_bytes());
  std::int64_t side = 64;
  while (2 * side * side * 4 <= threshold) side *= 2;
  const Tensor x = random_tensor({side, side + 16}, DType::f32, 7);
  const Tensor heads = random_tensor({2, side / 16, 8, 64}, DType::f32, 8);
  // Merge heads walk in tiles of t (Walker::in_dst_tiles) where t's rows spread past L1: runs of
  // up to 64 KiB of src rows on AMD, 4 KiB elsewhere (merge_run_bytes), a power of two of them
  // that divides T (on AMD all of T here; 8 rows at T = 200, 8 bf16 rows at T = 600).
  const Tensor merged = random_tensor({2, 8, side / 16, 64}, DType::f32, 19);
  const Tensor merged_odd = random_tensor({2, 5, 200, 64}, DType::f32, 20);
  const Tensor merged16 = random_tensor({2, 3, 600, 64}, DType::bf16, 21);
  const Tensor row = random_tensor({side + 16}, DType::f32, 9);
  const Tensor wide = random_tensor({side / 4, 4 * side + 37}, DType::f32, 10);  // ::2 of it: past the threshold
  const Tensor wide64 = random_tensor({side / 4, 2 * side + 19}, DType::f64, 11);
  // Tall and skinny: fewer dst rows than a block is long, so blocks take more src rows.
  const Tensor tall = random_tensor({side * side / 64 + 16, 64}, DType::f32, 12);
  const Tensor tall_odd = random_tensor({side * side / 40 + 5, 40}, DType::f32, 13);
  const Tensor tall64 = random_tensor({side * side / 48 + 8, 24}, DType::f64, 14);
  // 2- and 1-byte transposes on a pitch of whole lines go through strips of an L1 buffer: a last
  // strip of fewer than 16 rows (side + 3), and, in the 3-d permute (a pitch of 32 x 33 elements,
  // 33 columns), a strip's last columns no micro-tile wide.
  const Tensor x16 = random_tensor({side, side + 3}, DType::bf16, 15);
  const Tensor x8 = random_tensor({side, side + 3}, DType::f8e4m3, 16);
  const Tensor cube16 = random_tensor({33, 32, threshold / 4000 + 3}, DType::bf16, 17);
  // The same for f32 and bf16 through whole-line micro-tiles (16 x 16 f32, 32 x 32 bf16 with
  // AVX-512): a pitch of whole lines, but batches 33 elements apart, off the line.
  const Tensor cube32 = random_tensor({33, 32, threshold / 8000 + 3}, DType::f32, 18);
  for (const auto& variant : kernels::cpu_strided_variants()) {
    if (variant.name != "simd" && variant.name != "blocked") continue;
    const Device cpu = Device::cpu();
    check(variant, {"large transpose", x.t()}, cpu, 16);
    check(variant, {"large transpose of narrow(1, 0, side)", x.narrow(1, 0, side).t()}, cpu, 16);
    check(variant, {"large tall transpose", tall.t()}, cpu, 16);
    check(variant, {"large tall transpose, 40 columns", tall_odd.t()}, cpu, 16);
    check(variant, {"large tall f64 transpose", tall64.t()}, cpu, 8);
    check(variant, {"large bf16 transpose", x16.t()}, cpu, 32);
    check(variant, {"large f8 transpose", x8.t()}, cpu, 64);
    check(variant, {"large bf16 permute(2, 1, 0)", cube16.permute({2, 1, 0})}, cpu, 32);
    check(variant, {"large f32 permute(2, 1, 0)", cube32.permute({2, 1, 0})}, cpu, 16);
    check(variant, {"large split heads", heads.permute({0, 2, 1, 3})}, cpu, 16);
    check(variant, {"large merge heads", merged.permute({0, 2, 1, 3})}, cpu, 16);
    check(variant, {"merge heads, T = 200", merged_odd.permute({0, 2, 1, 3})}, cpu, 16);
    check(variant, {"bf16 merge heads, T = 600", merged16.permute({0, 2, 1, 3})}, cpu, 32);
    check(variant, {"large expanded row", row.expand({side / 2, side + 16})}, cpu, 16);
    for (std::int64_t step : {2, 3, 7, 8, 16, 32})
      check(variant, {"large slice ::" + std::to_string(step), wide.slice(1, 1, std::nullopt, step)}, cpu, 16);
    for (std::int64_t step : {2, 8, 9})
      check(variant, {"large f64 slice ::" + std::to_string(step), wide64.slice(1, 1, std::nullopt, step)}, cpu, 8);
    check(variant, {"large bf16 slice ::16", x16.slice(1, 1, std::nullopt, 16)}, cpu, 32);
    check(variant, {"large slice ::2, misaligned", wide.slice(1, 1, std::nullopt, 2)});
  }
}

TEST(CpuStrided, TransposesPastTheL2CachesAreExact) {
  // simd's transposes stream their stores once src and dst together exceed the L2 caches of all
  // cores: straight from registers where dst rows start on lines (4- and 2-byte elements, AVX-512
  // 32 x 32 for 2-byte), through L1 strips where they do not (a pitch of an odd number of
  // elements; 4-byte ones on AVX-512 by micro-tile rows shifted onto the lines, in bands of rows:
  // side + 3 rows make two), with edges on every side.
  const CpuInfo& cpu = this_cpu();
  const auto l2 = std::int64_t(std::max<std::size_t>(cpu.l2_bytes, 256 << 10)) * std::max(1, cpu.cores);
  std::int64_t side = 64;
  while (2 * side * side * 2 <= l2) side *= 2;  // bf16 past it, f32 twice past it
  std::uint64_t seed = 40;
  const auto& simd = kernels::variant_named(kernels::cpu_strided_variants(), "simd");
  for (DType dtype : {DType::f32, DType::bf16, DType::f64, DType::f8e4m3}) {
    const std::int64_t aligned = 64 / std::int64_t(dtype_size(dtype));
    for (auto [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{{side + 3, side + 5}, {side, side + 7}, {side + 1, side}}) {
      const Tensor x = random_tensor({m, n}, dtype, seed++);
      check(simd, {"transpose " + shape_str(x.shape()), x.t()}, Device::cpu(), aligned);
      check(simd, {"transpose, dst misaligned " + shape_str(x.shape()), x.t()});
    }
    const Tensor cube = random_tensor({33, 32, side * side / 1024 + 3}, dtype, seed++);
    check(simd, {"permute(2, 1, 0) of " + shape_str(cube.shape()), cube.permute({2, 1, 0})}, Device::cpu(), aligned);
  }
  // Blocks of a page of dst rows go in columns of two passes (Note [columns]), micro-tiles two
  // wide: with AVX-512, 33 tiles' src rows leave a last column one 16 x 16 tile wide (AVX2's
  // columns, 16 f32, leave none on a pitch of whole lines).
  std::int64_t n = 1024;
  while (16 * 33 * n * 8 <= l2) n *= 2;
  const Tensor odd = random_tensor({16 * 33, n}, DType::f32, seed++);
  check(simd, {"transpose " + shape_str(odd.shape()), odd.t()}, Device::cpu(), 16);
}

TEST(CpuStrided, VariantsRefuseANonContiguousDestination) {
  const Tensor x = empty({4, 6});
  for (const auto& variant : kernels::cpu_strided_variants()) {
    const auto reason = variant.unavailable({empty({6, 4}).t().ref(), x.ref()});
    ASSERT_TRUE(reason.has_value()) << variant.name;
#ifndef FLOPSCOPE_HAVE_ONEDNN
    if (variant.name == "reorder" && *reason == "built without oneDNN") continue;  // the device bundle
#endif
    EXPECT_NE(reason->find("needs a contiguous destination"), std::string::npos) << *reason;
    const auto mismatch = variant.unavailable({empty({4, 5}).ref(), x.ref()});
    ASSERT_TRUE(mismatch.has_value()) << variant.name;
  }
}

// ---- CUDA ----

TEST(CudaStrided, EveryVariantMatchesTheReferenceOnEveryViewKindDtypeAndShape) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  ASSERT_FALSE(kernels::cuda_strided_variants().empty());
  for (const auto& variant : kernels::cuda_strided_variants()) {
    for (DType dtype : kAllDTypes) {
      for (View view : views(dtype)) {
        // cuBLAS computes 1 * a + 0 * b, which canonicalizes NaNs: finite values for it.
        if (variant.name == "cublas_geam" && view.tensor.numel() > 0)
          kernels::fill_uniform(view.tensor.as_strided({std::int64_t(view.tensor.storage()->bytes() / view.tensor.element_size())}, {1}, 0).ref(), 3);
        check(variant, view, Device::cuda(0));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(CudaStrided, LargeTransposesAndHeadsMatchTheReference) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  for (DType dtype : {DType::f32, DType::bf16, DType::f8e4m3, DType::f64}) {
    const Tensor x = random_tensor({1024 + 3, 2048 + 5}, dtype, 11);
    const Tensor aligned = random_tensor({1024, 2048}, dtype, 12);
    const Tensor heads = random_tensor({2, 256, 12, 64}, dtype, 13);
    for (const auto& variant : kernels::cuda_strided_variants()) {
      if (variant.name == "cublas_geam") {
        kernels::fill_uniform(aligned.ref(), 5);
        kernels::fill_uniform(x.ref(), 6);
      }
      check(variant, {"transpose [1027, 2053]", x.t()}, Device::cuda(0));
      check(variant, {"transpose [1024, 2048]", aligned.t()}, Device::cuda(0));
      check(variant, {"split heads [2, 256, 12, 64]", heads.permute({0, 2, 1, 3})}, Device::cuda(0));
    }
  }
}

// The index width of the naive and plain CUDA kernels (index_width.hpp): 32 bits exactly where
// the loop counter's last value and every offset stay within int32.
TEST(IndexWidth, Int32WhereEveryIndexFits) {
  constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
  const std::int64_t threads = 132 * 128 * 256;  // an H200's most grid-stride threads (launch.cuh)
  EXPECT_TRUE(kernels::fits_int32(0, threads, 0));
  EXPECT_TRUE(kernels::fits_int32(std::int64_t{1} << 28, threads, (std::int64_t{1} << 28) - 1));
  EXPECT_TRUE(kernels::fits_int32(most - threads, threads, most));
  EXPECT_FALSE(kernels::fits_int32(most - threads + 1, threads, 0));   // i += stride would pass int32
  EXPECT_FALSE(kernels::fits_int32(1024, threads, most + 1));          // a strided read past 2^31
  EXPECT_FALSE(kernels::fits_int32(std::int64_t{8192} * 8192 * 64, threads, 0));
  EXPECT_FALSE(kernels::fits_int32(-1, threads, 0));
}

// The index width of the tiled CUDA matmul kernels (matmul.cu, their tilings): 32 bits exactly
// where the row, column and k counters, rounded up to whole tiles, and every offset row·s0 +
// col·s1 the kernel forms stay within int32. A view's storage offset is not among the extents:
// it is added to the operand's pointer on the host.
TEST(IndexWidth, MatmulInt32WhereEveryIndexFits) {
  using kernels::MatmulExtents;
  using kernels::fits_int32;
  constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
  const kernels::MatmulTiling naive{8, 32, 1}, regblock{128, 128, 8}, mma{128, 128, 32, true};
  // Row-major A, B and C, rows unpadded: strides (k, 1), (n, 1), (n, 1).
  auto nn = [](std::int64_t m, std::int64_t n, std::int64_t k) { return MatmulExtents{m, n, k, k, 1, n, 1, n, 1}; };
  EXPECT_TRUE(fits_int32(nn(4096, 4096, 4096), mma));
  EXPECT_TRUE(fits_int32(nn(0, 0, 0), naive));
  // A's last element at 32767·65536 + 65535 = 2^31 - 1; one row more passes int32.
  EXPECT_TRUE(fits_int32(nn(32768, 1, 65536), regblock));
  EXPECT_FALSE(fits_int32(nn(32769, 1, 65536), regblock));
  // A padded to a row pitch of 65537: its last element fits, but mma forms offsets over whole
  // 128-row tiles, and row 32767 of m = 32767's last tile would be at 2^31 + 32766.
  const MatmulExtents padded{32767, 8, 65536, 65537, 1, 8, 1, 8, 1};
  EXPECT_TRUE(fits_int32(padded, naive));
  EXPECT_TRUE(fits_int32(padded, regblock));
  EXPECT_FALSE(fits_int32(padded, mma));
  // C column-major (strides (1, m)): its last element alone decides.
  EXPECT_TRUE(fits_int32(MatmulExtents{65536, 32768, 1, 1, 65536, 32768, 1, 1, 65536}, naive));
  EXPECT_FALSE(fits_int32(MatmulExtents{65536, 32769, 1, 1, 65536, 32769, 1, 1, 65536}, naive));
  // Counters: n = 2^31 - 32 is whole tiles of naive's 32 columns, not of regblock's 128.
  EXPECT_TRUE(fits_int32(nn(1, most - 31, 1), naive));
  EXPECT_FALSE(fits_int32(nn(1, most - 31, 1), regblock));
  EXPECT_TRUE(fits_int32(nn(1, 1, most), naive));  // the k loop ends at k
  EXPECT_FALSE(fits_int32(nn(1, 1, most - 6), regblock));
  // A size-1 dimension's stride is multiplied by 0 only, except past the edge (mma's tiles).
  const MatmulExtents one_row{1, 8, 8, std::int64_t{1} << 40, 1, 8, 1, 8, 1};
  EXPECT_TRUE(fits_int32(one_row, regblock));
  EXPECT_FALSE(fits_int32(one_row, mma));
  EXPECT_FALSE(fits_int32(MatmulExtents{8, 8, 8, 8, -1, 8, 1, 8, 1}, naive));
  EXPECT_FALSE(fits_int32(nn(-1, 8, 8), naive));
}
