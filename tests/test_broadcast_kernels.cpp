// Elementwise binary ops on broadcast operands (kernels/broadcast.hpp): broadcast views and plans
// by hand, the reference against lib's add and mul, and every CPU and CUDA variant against the
// reference, bit for bit (one add or multiply computed in f32 and rounded to f16/bf16 is the
// correctly rounded result), on every broadcast pattern, dtype, op and awkward shape (sizes 0 and
// 1, odd, off the vector width and the chunk, operands starting off alignment). CUDA cases skip,
// with the runtime's reason, where there is no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "flopscope/broadcast.hpp"
#include "flopscope/compare.hpp"
#include "flopscope/kernels/broadcast.hpp"
#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;
using kernels::BinaryOp;
using kernels::BinaryPlan;
using kernels::BinaryProblem;

namespace {

constexpr DType kDTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

// Operands of their own shapes, holding values uniform in [-1, 1), each one element into its
// storage (a start off alignment).
Tensor operand(const Shape& shape, DType dtype, std::uint64_t seed) {
  Tensor storage = empty({shape_numel(shape) + 1}, {dtype});
  Tensor t = storage.narrow(0, 1, shape_numel(shape)).view(shape);
  kernels::fill_uniform(t.ref(), seed);
  return t;
}

struct Pattern {
  std::string name;
  Shape a, b;
};

std::vector<Pattern> patterns() {
  std::vector<Pattern> out;
  for (Shape btd : std::vector<Shape>{{2, 3, 5}, {3, 7, 33}, {2, 5, 4097}, {1, 1, 1}, {4, 1, 17}, {0, 3, 5}, {2, 2, 9000}}) {
    const std::int64_t b = btd[0], t = btd[1], d = btd[2];
    out.push_back({"(B,T,D)+(T,D) " + shape_str(btd), btd, {t, d}});
    out.push_back({"(B,T,D)+(D) " + shape_str(btd), btd, {d}});
    out.push_back({"(B,T,D)+(B,T,1) " + shape_str(btd), btd, {b, t, 1}});
    out.push_back({"(B,T,D)+(B,T,D) " + shape_str(btd), btd, btd});
    out.push_back({"(D)+(B,T,D) " + shape_str(btd), {d}, btd});
  }
  for (auto [n, m] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {5, 3}, {17, 33}, {100, 4100}, {3, 0}})
    out.push_back({"(N,1)+(1,M) " + std::to_string(n) + "x" + std::to_string(m), {n, 1}, {1, m}});
  return out;
}

// Runs `variant` (host operands, or copies of them on `device`) and compares its output, and the
// poisoned bytes around it, with binary_reference's.
void check(const kernels::BinaryVariant& variant, const Pattern& pattern, DType dtype, BinaryOp op,
           Device device = Device::cpu()) {
  const Tensor a = operand(pattern.a, dtype, 1), b = operand(pattern.b, dtype, 2);
  const Shape shape = broadcast_shapes(pattern.a, pattern.b);
  const std::size_t size = dtype_size(dtype), bytes = std::size_t(shape_numel(shape)) * size + 2 * size;
  kernels::HostBuffer out(bytes), expected(bytes);
  std::memset(out.data, 0xA5, bytes);
  std::memset(expected.data, 0xA5, bytes);
  const Strides strides = contiguous_strides(shape);
  const TensorRef expected_ref = TensorRef::strided(expected.data, dtype, shape, strides, 1);
  kernels::binary_reference({expected_ref, kernels::broadcast_view(a.ref(), shape), kernels::broadcast_view(b.ref(), shape), op});
  const std::string what = std::string(variant.name) + " " + std::string(dtype_name(dtype)) + " " +
                           std::string(kernels::binary_op_name(op)) + " " + pattern.name;
  if (device.is_cpu()) {
    const BinaryProblem problem{TensorRef::strided(out.data, dtype, shape, strides, 1),
                                kernels::broadcast_view(a.ref(), shape), kernels::broadcast_view(b.ref(), shape), op};
    if (auto reason = variant.unavailable(problem)) {
      // Only oneDNN refuses, and only f64, f16 (where it has none) and two broadcast operands.
      ASSERT_EQ(variant.name, "onednn") << what << ": " << *reason;
#ifndef FLOPSCOPE_HAVE_ONEDNN
      if (*reason == "built without oneDNN") return;  // the device bundle
#endif
      EXPECT_TRUE(dtype == DType::f64 || dtype == DType::f16 || pattern.name.rfind("(N,1)", 0) == 0) << what << ": " << *reason;
      return;
    }
    variant.prepare(problem)(nullptr);
  } else {
    auto to_device = [&](const Tensor& t, kernels::cuda::DeviceMemory& memory) {
      kernels::cuda::copy_to_device(memory.data, t.storage()->data(), t.storage()->bytes());
      TensorRef ref = t.ref();
      ref.data = memory.data;
      ref.device = device;
      return kernels::broadcast_view(ref, shape);
    };
    kernels::cuda::DeviceMemory device_a(a.storage()->bytes()), device_b(b.storage()->bytes()), device_out(bytes);
    kernels::cuda::copy_to_device(device_out.data, out.data, bytes);
    const BinaryProblem problem{TensorRef::strided(device_out.data, dtype, shape, strides, 1, device),
                                to_device(a, device_a), to_device(b, device_b), op};
    ASSERT_EQ(variant.unavailable(problem), std::nullopt) << what;
    variant.prepare(problem)(nullptr);
    kernels::cuda::synchronize();
    kernels::cuda::copy_to_host(out.data, device_out.data, bytes);
  }
  if (std::memcmp(out.data, expected.data, bytes) != 0) {
    const auto inside = compare_exact(TensorRef::strided(out.data, dtype, shape, strides, 1), expected_ref);
    FAIL() << what << ": " << inside.value_or("the bytes around the output were written");
  }
}

}  // namespace

TEST(BroadcastView, AlignsFromTheRightWithStrideZero) {
  const Tensor td = empty({1024, 768});
  const TensorRef v = kernels::broadcast_view(td.ref(), std::vector<std::int64_t>{8, 1024, 768});
  EXPECT_EQ(std::vector<std::int64_t>(v.stride_list().begin(), v.stride_list().end()), (std::vector<std::int64_t>{0, 768, 1}));
  const Tensor bt1 = empty({8, 1024, 1});
  const TensorRef w = kernels::broadcast_view(bt1.ref(), std::vector<std::int64_t>{8, 1024, 768});
  EXPECT_EQ(std::vector<std::int64_t>(w.stride_list().begin(), w.stride_list().end()), (std::vector<std::int64_t>{1024, 1, 0}));
  EXPECT_THROW(kernels::broadcast_view(empty({3, 4}).ref(), std::vector<std::int64_t>{2, 4, 4}), ShapeError);
  EXPECT_THROW(kernels::broadcast_view(empty({2, 3, 4}).ref(), std::vector<std::int64_t>{3, 4}), ShapeError);
}

TEST(BinaryPlan, MergesWhatBothOperandsContinue) {
  auto plan = [](const Shape& a, const Shape& b) {
    const Shape shape = broadcast_shapes(a, b);
    return kernels::plan_binary({empty(shape).ref(), kernels::broadcast_view(empty(a).ref(), shape),
                                 kernels::broadcast_view(empty(b).ref(), shape), BinaryOp::add});
  };
  const BinaryPlan d = plan({8, 1024, 768}, {768});  // rows of D, b's row stride 0
  EXPECT_EQ(d.dims, 2);
  EXPECT_EQ(d.sizes[0], 8 * 1024);
  EXPECT_EQ(d.b_strides[0], 0);
  EXPECT_EQ(d.b_strides[1], 1);
  const BinaryPlan td = plan({8, 1024, 768}, {1024, 768});  // rows of T*D
  EXPECT_EQ(td.dims, 2);
  EXPECT_EQ(td.sizes[1], 1024 * 768);
  const BinaryPlan bt1 = plan({8, 1024, 768}, {8, 1024, 1});  // b one element per row
  EXPECT_EQ(bt1.dims, 2);
  EXPECT_EQ(bt1.b_strides[0], 1);
  EXPECT_EQ(bt1.b_strides[1], 0);
  const BinaryPlan outer = plan({4096, 1}, {1, 4096});
  EXPECT_EQ(outer.dims, 2);
  EXPECT_EQ(outer.a_strides[1], 0);
  EXPECT_EQ(outer.b_strides[0], 0);
  EXPECT_EQ(plan({8, 1024, 768}, {8, 1024, 768}).dims, 1);
}

TEST(BinaryReference, EqualsLibsAddAndMul) {
  for (DType dtype : kDTypes)
    for (const Pattern& p : patterns()) {
      if (shape_numel(broadcast_shapes(p.a, p.b)) > 100000) continue;
      const Tensor a = operand(p.a, dtype, 3), b = operand(p.b, dtype, 4);
      for (BinaryOp op : kernels::kBinaryOps) {
        const Tensor lib = op == BinaryOp::add ? add(a, b) : mul(a, b);
        const Tensor out = empty(lib.shape(), {dtype});
        kernels::binary_reference({out.ref(), kernels::broadcast_view(a.ref(), lib.shape()),
                                   kernels::broadcast_view(b.ref(), lib.shape()), op});
        ASSERT_EQ(compare_exact(out.ref(), lib.ref()), std::nullopt) << dtype_name(dtype) << " " << p.name;
      }
    }
}

TEST(CpuBroadcast, EveryVariantMatchesTheReferenceOnEveryPatternDtypeAndShape) {
  ASSERT_EQ(kernels::cpu_broadcast_variants().size(), 3u);
  for (const auto& variant : kernels::cpu_broadcast_variants()) {
    if (variant.name == "reference") continue;  // binary_reference itself: BinaryReference.EqualsLibsAddAndMul
    for (DType dtype : kDTypes)
      for (BinaryOp op : kernels::kBinaryOps)
        for (const Pattern& p : patterns()) {
          check(variant, p, dtype, op);
          if (HasFatalFailure()) return;
        }
  }
}

TEST(CpuBroadcast, StreamingStoresAboveTheLastLevelCacheAreExact) {
  // Three operands of (B,T,D) together past the streaming threshold.
  const auto threshold = static_cast<std::int64_t>(kernels::cpu_streaming_threshold_bytes());
  const std::int64_t t = threshold / (4 * 1000) / 2 + 3;
  const auto& simd = kernels::variant_named(kernels::cpu_broadcast_variants(), "simd");
  for (DType dtype : {DType::f32, DType::bf16}) {
    check(simd, {"(B,T,D)+(D) large", {2, t, 1000}, {1000}}, dtype, BinaryOp::add);
    check(simd, {"(B,T,D)+(T,D) large", {2, t, 1000}, {t, 1000}}, dtype, BinaryOp::mul);
  }
}

TEST(CpuBroadcast, OperandsMustMatchTheOutput) {
  const Tensor x = empty({4, 6}), y = empty({4, 6}, {DType::f16});
  for (const auto& variant : kernels::cpu_broadcast_variants()) {
    EXPECT_TRUE(variant.unavailable({x.ref(), x.ref(), y.ref(), BinaryOp::add}).has_value()) << variant.name;
    EXPECT_TRUE(variant.unavailable({x.t().ref(), x.t().ref(), x.t().ref(), BinaryOp::add}).has_value()) << variant.name;
    const Tensor f8 = empty({4, 6}, {DType::f8e4m3});
    const auto reason = variant.unavailable({f8.ref(), f8.ref(), f8.ref(), BinaryOp::add});
    ASSERT_TRUE(reason.has_value()) << variant.name;
#ifndef FLOPSCOPE_HAVE_ONEDNN
    if (variant.name == "onednn" && *reason == "built without oneDNN") continue;  // the device bundle
#endif
    EXPECT_NE(reason->find("no f8e4m3 arithmetic"), std::string::npos) << *reason;
  }
}

TEST(CudaBroadcast, EveryVariantMatchesTheReferenceOnEveryPatternDtypeAndShape) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  ASSERT_FALSE(kernels::cuda_broadcast_variants().empty());
  for (const auto& variant : kernels::cuda_broadcast_variants())
    for (DType dtype : kDTypes)
      for (BinaryOp op : kernels::kBinaryOps)
        for (const Pattern& p : patterns()) {
          check(variant, p, dtype, op, Device::cuda(0));
          if (HasFatalFailure()) return;
        }
}
