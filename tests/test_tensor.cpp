// Tensors, views and strides: the lecture's examples, then PyTorch's semantics case by case
// (the strides in the comments are what PyTorch gives for the same calls).
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "flopscope/checked.hpp"
#include "flopscope/random.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope {
namespace {

using test_util::Values;

// The lecture's x = torch.tensor([[1., 2, 3], [4, 5, 6]]).
Tensor lecture_x() { return from_values({1, 2, 3, 4, 5, 6}, {2, 3}); }

using test_util::error_of;

// ---- the lecture -----------------------------------------------------------------------------

TEST(Lecture, RowIsAView) {
  Tensor x = lecture_x();
  Tensor y = x[0];
  EXPECT_EQ(y.to_vector(), (Values{1, 2, 3}));
  EXPECT_TRUE(y.same_storage(x));
  EXPECT_EQ(y.strides(), (Strides{1}));
  EXPECT_EQ(y.storage_offset(), 0);
}

TEST(Lecture, ColumnIsAView) {
  Tensor x = lecture_x();
  Tensor y = x.index({Slice{}, std::int64_t{1}});
  EXPECT_EQ(y.to_vector(), (Values{2, 5}));
  EXPECT_TRUE(y.same_storage(x));
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(y.strides(), (Strides{3}));
  EXPECT_EQ(y.storage_offset(), 1);
}

TEST(Lecture, ViewThreeByTwo) {
  Tensor x = lecture_x();
  Tensor y = x.view({3, 2});
  EXPECT_EQ(y.to_vector(), (Values{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(y.at({2, 0}), 5);
  EXPECT_TRUE(y.same_storage(x));
  EXPECT_EQ(y.strides(), (Strides{2, 1}));
}

TEST(Lecture, TransposeIsAView) {
  Tensor x = lecture_x();
  Tensor y = x.transpose(1, 0);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.strides(), (Strides{1, 3}));
  EXPECT_EQ(y.to_vector(), (Values{1, 4, 2, 5, 3, 6}));
  EXPECT_TRUE(y.same_storage(x));
  EXPECT_FALSE(y.is_contiguous());
}

TEST(Lecture, WriteToXIsSeenThroughEveryView) {
  Tensor x = lecture_x();
  Tensor row = x[0], column = x.index({Slice{}, std::int64_t{1}}), viewed = x.view({3, 2}), transposed = x.transpose(1, 0);
  x.set({0, 0}, 100);
  x.set({1, 1}, 50);
  EXPECT_EQ(row.at({0}), 100);
  EXPECT_EQ(viewed.at({0, 0}), 100);
  EXPECT_EQ(transposed.at({0, 0}), 100);
  EXPECT_EQ(column.at({1}), 50);
  EXPECT_EQ(transposed.at({1, 1}), 50);
  // And the other way: a write through a view is seen by x.
  transposed.set({2, 0}, -3);
  EXPECT_EQ(x.at({0, 2}), -3);
  x[1].fill_(7);
  EXPECT_EQ(column.to_vector(), (Values{2, 7}));  // x[0][1], x[1][1]
}

TEST(Lecture, ViewOfTransposeFailsWithPyTorchsMessage) {
  Tensor y = lecture_x().transpose(1, 0);
  const std::string message = error_of([&] { y.view({2, 3}); });
  EXPECT_NE(message.find("view size is not compatible with input tensor's size and stride (at least one dimension spans "
                         "across two contiguous subspaces). Use .reshape(...) instead."),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("view([2, 3])"), std::string::npos) << message;
  EXPECT_NE(message.find("shape [3, 2] and strides [1, 3]"), std::string::npos) << message;
  EXPECT_THROW(y.view({2, 3}), ShapeError);
}

TEST(Lecture, ContiguousThenViewDoesNotShareStorage) {
  Tensor x = lecture_x();
  Tensor y = x.transpose(1, 0).contiguous().view({2, 3});
  EXPECT_FALSE(y.same_storage(x));
  EXPECT_EQ(y.to_vector(), (Values{1, 4, 2, 5, 3, 6}));
  x.set({0, 0}, 100);
  EXPECT_EQ(y.at({0, 0}), 1);
}

TEST(Lecture, ReshapeMinusOne) {
  Tensor x = arange(16).view({4, 4});
  Tensor y = x.reshape({2, -1});
  EXPECT_EQ(y.shape(), (Shape{2, 8}));
  EXPECT_TRUE(y.same_storage(x));
  // Where no view exists, reshape copies.
  Tensor z = x.t().reshape({2, -1});
  EXPECT_EQ(z.shape(), (Shape{2, 8}));
  EXPECT_FALSE(z.same_storage(x));
  EXPECT_EQ(z.at({0, 1}), 4);
}

// ---- views -----------------------------------------------------------------------------------

TEST(Views, TransposeAndPermuteStrides) {
  Tensor x = arange(24).view({2, 3, 4});
  EXPECT_EQ(x.strides(), (Strides{12, 4, 1}));
  EXPECT_EQ(x.transpose(0, 2).strides(), (Strides{1, 4, 12}));
  EXPECT_EQ(x.transpose(-1, -2).shape(), (Shape{2, 4, 3}));
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Strides{1, 12, 4}));
  EXPECT_EQ(p.at({3, 1, 2}), x.at({1, 2, 3}));
  EXPECT_TRUE(p.same_storage(x));
}

TEST(Views, SlicesAsPython) {
  Tensor x = arange(10);
  Tensor even = x.slice(0, std::nullopt, std::nullopt, 2);  // x[::2]
  EXPECT_EQ(even.to_vector(), (Values{0, 2, 4, 6, 8}));
  EXPECT_EQ(even.strides(), (Strides{2}));
  EXPECT_EQ(x.slice(0, -3).to_vector(), (Values{7, 8, 9}));            // x[-3:]
  EXPECT_EQ(x.slice(0, 1, -7).to_vector(), (Values{1, 2}));            // x[1:-7]
  EXPECT_EQ(x.slice(0, 7, 100).to_vector(), (Values{7, 8, 9}));        // clamps
  EXPECT_EQ(x.slice(0, 20, 30).numel(), 0);                            // empty, not an error
  EXPECT_EQ(x.slice(0, 5, 2).numel(), 0);
  EXPECT_EQ(x.slice(0, -100, 2).to_vector(), (Values{0, 1}));
  EXPECT_EQ(x.slice(0, 1, 8, 3).to_vector(), (Values{1, 4, 7}));        // x[1:8:3]
  EXPECT_THROW(x.slice(0, 0, 5, 0), ShapeError);
  EXPECT_THROW(x.slice(0, 0, 5, -1), ShapeError);

  Tensor m = arange(12).view({3, 4});
  Tensor s = m.index({Slice{1, std::nullopt}, Slice{std::nullopt, std::nullopt, 2}});  // m[1:, ::2]
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.strides(), (Strides{4, 2}));
  EXPECT_EQ(s.storage_offset(), 4);
  EXPECT_EQ(s.to_vector(), (Values{4, 6, 8, 10}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(m.index({Ellipsis{}, std::int64_t{-1}}).to_vector(), (Values{3, 7, 11}));  // m[..., -1]
  EXPECT_EQ(m[-1].to_vector(), (Values{8, 9, 10, 11}));
  EXPECT_EQ(m.narrow(1, 1, 2).to_vector(), (Values{1, 2, 5, 6, 9, 10}));
}

TEST(Views, SqueezeUnsqueezeFlattenUnflatten) {
  Tensor x = arange(6).view({2, 3});
  Tensor u = x.unsqueeze(1);
  EXPECT_EQ(u.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(u.strides(), (Strides{3, 3, 1}));
  EXPECT_EQ(x.unsqueeze(-1).strides(), (Strides{3, 1, 1}));
  EXPECT_EQ(x.unsqueeze(0).strides(), (Strides{6, 3, 1}));
  EXPECT_EQ(u.squeeze().shape(), (Shape{2, 3}));
  EXPECT_EQ(u.squeeze(1).shape(), (Shape{2, 3}));
  EXPECT_EQ(u.squeeze(0).shape(), (Shape{2, 1, 3}));  // not size 1: unchanged
  EXPECT_TRUE(u.same_storage(x));

  Tensor y = arange(24).view({2, 3, 4});
  EXPECT_EQ(y.flatten().shape(), (Shape{24}));
  EXPECT_EQ(y.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(y.flatten(0, 1).shape(), (Shape{6, 4}));
  EXPECT_TRUE(y.flatten(1).same_storage(y));
  EXPECT_FALSE(y.transpose(0, 2).flatten().same_storage(y));  // flatten = reshape: copies here
  EXPECT_EQ(full({}, 3).flatten().shape(), (Shape{1}));

  Tensor z = y.unflatten(2, {2, -1});
  EXPECT_EQ(z.shape(), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(z.strides(), (Strides{12, 4, 2, 1}));
  EXPECT_TRUE(z.same_storage(y));
  // Unflattening a transposed dimension is still a view.
  Tensor t = y.transpose(0, 2).unflatten(0, {2, 2});
  EXPECT_EQ(t.shape(), (Shape{2, 2, 3, 2}));
  EXPECT_EQ(t.strides(), (Strides{2, 1, 4, 12}));
  const std::string message = error_of([&] { y.unflatten(1, {2, 2}); });
  EXPECT_NE(message.find("don't multiply up to the size of dim 1 (3)"), std::string::npos) << message;
}

TEST(Views, ExpandHasStrideZero) {
  Tensor x = from_values({1, 2, 3}, {3, 1});
  Tensor e = x.expand({3, 4});
  EXPECT_EQ(e.strides(), (Strides{1, 0}));
  EXPECT_EQ(e.to_vector(), (Values{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  EXPECT_TRUE(e.same_storage(x));
  Tensor b = x.broadcast_to({2, 3, 4});
  EXPECT_EQ(b.strides(), (Strides{0, 1, 0}));
  EXPECT_EQ(x.expand({-1, 5}).shape(), (Shape{3, 5}));
  // A new leading dimension of size 1 takes the next one's extent, as in PyTorch
  // (torch.zeros(2, 3).expand(2, 1, 2, 3).stride() == (0, 6, 3, 1); a 0-d tensor's are all 0).
  EXPECT_EQ(zeros({2, 3}).expand({2, 1, 2, 3}).strides(), (Strides{0, 6, 3, 1}));
  EXPECT_EQ(zeros({5, 5, 1}).expand({1, 1, -1, -1, 4}).strides(), (Strides{25, 25, 5, 1, 0}));
  EXPECT_EQ(zeros({}).expand({1, 3}).strides(), (Strides{0, 0}));
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_FALSE(e.is_non_overlapping_and_dense());
  x.set({1, 0}, 20);
  EXPECT_EQ(b.at({1, 1, 3}), 20);
  const std::string message = error_of([&] { x.expand({2, 4}); });
  EXPECT_NE(message.find("The expanded size of the tensor (2) must match the existing size (3) at non-singleton "
                         "dimension 0.  Target sizes: [2, 4].  Tensor sizes: [3, 1]"),
            std::string::npos)
      << message;
  EXPECT_THROW(x.expand({4}), ShapeError);
  EXPECT_THROW(x.expand({-1, 3, 4}), ShapeError);
}

TEST(Views, ViewRules) {
  // Splitting and merging contiguous dimensions are views; PyTorch's computeStride decides.
  Tensor x = arange(12).view({3, 4});
  Tensor t = x.t();  // shape [4, 3], strides [1, 4]
  EXPECT_EQ(t.view({4, 3, 1}).strides(), (Strides{1, 4, 4}));
  EXPECT_EQ(t.view({2, 2, 3}).strides(), (Strides{2, 1, 4}));
  EXPECT_THROW(t.view({12}), ShapeError);
  EXPECT_THROW(t.view({3, 4}), ShapeError);
  // Size-1 dimensions never block a view.
  Tensor y = arange(6).view({2, 1, 3});
  Tensor odd = y.as_strided({2, 1, 3}, {3, 100, 1});
  EXPECT_TRUE(odd.is_contiguous());
  EXPECT_EQ(odd.view({6}).strides(), (Strides{1}));
  // A column slice: rows stay one chunk apart.
  Tensor c = x.index({Slice{}, Slice{0, 2}});  // [3, 2], strides [4, 1]
  EXPECT_EQ(c.view({3, 2, 1}).strides(), (Strides{4, 1, 1}));
  EXPECT_EQ(c.view({3, 1, 2}).strides(), (Strides{4, 2, 1}));
  EXPECT_THROW(c.view({6}), ShapeError);
  EXPECT_FALSE(c.reshape({6}).same_storage(x));
  // 0-d and empty tensors.
  Tensor s = full({}, 5);
  EXPECT_EQ(s.view({1, 1}).strides(), (Strides{1, 1}));
  EXPECT_EQ(s.item(), 5);
  Tensor e = empty({0, 3});
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(e.view({3, 0}).strides(), (Strides{1, 1}));
  EXPECT_EQ(e.view({-1, 6}).shape(), (Shape{0, 6}));
  EXPECT_THROW(e.view({-1, 0}), ShapeError);  // ambiguous
  // -1 errors.
  const std::string bad = error_of([&] { x.view({5, -1}); });
  EXPECT_NE(bad.find("shape '[5, -1]' is invalid for input of size 12"), std::string::npos) << bad;
  EXPECT_NE(error_of([&] { x.view({-1, -1}); }).find("only one dimension can be inferred"), std::string::npos);
}

TEST(Views, Contiguity) {
  EXPECT_TRUE(is_contiguous(Shape{2, 3}, Strides{3, 1}));
  EXPECT_FALSE(is_contiguous(Shape{2, 3}, Strides{1, 2}));
  EXPECT_TRUE(is_contiguous(Shape{1, 3}, Strides{7, 1}));   // size-1 ignored
  EXPECT_TRUE(is_contiguous(Shape{0, 3}, Strides{5, 9}));   // empty
  EXPECT_TRUE(is_contiguous(Shape{}, Strides{}));
  EXPECT_TRUE(is_non_overlapping_and_dense(Shape{2, 3}, Strides{1, 2}));
  EXPECT_FALSE(is_non_overlapping_and_dense(Shape{2, 3}, Strides{1, 3}));
  EXPECT_FALSE(is_non_overlapping_and_dense(Shape{2, 3}, Strides{0, 1}));
  EXPECT_EQ(contiguous_strides(Shape{2, 0, 3}), (Strides{3, 3, 1}));
  Tensor x = arange(6).view({2, 3});
  EXPECT_TRUE(x.contiguous().same_storage(x));  // no copy when not needed
  EXPECT_FALSE(x.t().contiguous().same_storage(x));
  EXPECT_TRUE(x.t().contiguous().is_contiguous());
}

TEST(Views, CopiesKeepDenseLayouts) {
  // clone and to(dtype) keep the strides of a dense tensor (preserve_format), as PyTorch.
  Tensor x = arange(6).view({2, 3});
  EXPECT_EQ(x.t().clone().strides(), (Strides{1, 3}));
  EXPECT_EQ(x.t().to(DType::f64).strides(), (Strides{1, 3}));
  EXPECT_EQ(x.t().to(DType::f64).to_vector(), (Values{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(x.slice(1, 0, 3, 2).clone().strides(), (Strides{2, 1}));  // not dense: row-major
  EXPECT_TRUE(x.to(DType::f32).same_storage(x));
  EXPECT_FALSE(x.clone().same_storage(x));
  EXPECT_TRUE(x.to(Device::cpu()).same_storage(x));
}

TEST(Views, ErrorsNameTheOperationAndShapes) {
  Tensor x = arange(6).view({2, 3});
  std::string m = error_of([&] { x.transpose(0, 2); });
  EXPECT_NE(m.find("transpose(0, 2) of a tensor of shape [2, 3]"), std::string::npos) << m;
  EXPECT_NE(m.find("Dimension out of range (expected to be in range of [-2, 1], but got 2)"), std::string::npos) << m;
  m = error_of([&] { x.select(0, 2); });
  EXPECT_NE(m.find("index 2 out of range for tensor of size [2, 3] at dimension 0"), std::string::npos) << m;
  m = error_of([&] { x.permute({0, 0}); });
  EXPECT_NE(m.find("duplicate dims"), std::string::npos) << m;
  m = error_of([&] { x.permute({0}); });
  EXPECT_NE(m.find("input.dim() = 2 is not equal to len(dims) = 1"), std::string::npos) << m;
  m = error_of([&] { x.index({std::int64_t{0}, std::int64_t{0}, std::int64_t{0}}); });
  EXPECT_NE(m.find("too many indices"), std::string::npos) << m;
  m = error_of([&] { full({}, 1)[0]; });
  EXPECT_NE(m.find("0-dim"), std::string::npos) << m;
  m = error_of([&] { x.item(); });
  EXPECT_NE(m.find("shape [2, 3]"), std::string::npos) << m;
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.stride(-2), 3);
  EXPECT_THROW(x.size(2), ShapeError);
  EXPECT_THROW(full({}, 1).size(0), ShapeError);
  EXPECT_THROW(x.at({2, 0}), ShapeError);
  EXPECT_THROW(x.unsqueeze(3), ShapeError);
  EXPECT_EQ(x.unsqueeze(2).shape(), (Shape{2, 3, 1}));
  m = error_of([&] { x.copy_(arange(4)); });
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
}

// ---- elements, dtypes, factories -------------------------------------------------------------

TEST(Elements, EveryDtypeRoundsToNearestEven) {
  EXPECT_EQ(from_values({1.0 / 3}, {}, {DType::bf16}).item(), 0.333984375);
  EXPECT_EQ(from_values({0.1}, {}, {DType::f16}).item(), 0.0999755859375);
  EXPECT_EQ(from_values({0.1}, {}, {DType::f32}).item(), static_cast<double>(0.1f));
  EXPECT_EQ(from_values({0.1}, {}, {DType::f64}).item(), 0.1);
  EXPECT_EQ(from_values({448}, {}, {DType::f8e4m3}).item(), 448);
  EXPECT_TRUE(std::isnan(from_values({1000}, {}, {DType::f8e4m3}).item()));  // no inf in e4m3
  EXPECT_TRUE(std::isinf(from_values({1e6}, {}, {DType::f8e5m2}).item()));
  Tensor x = from_values({1.0 / 3, 2.0 / 3}, {2}, {DType::f64});
  Tensor h = x.to(DType::f16);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.element_size(), 2u);
  EXPECT_EQ(h.to_vector(), (Values{0.333251953125, 0.66650390625}));
  EXPECT_EQ(h.to(DType::f64).to_vector(), h.to_vector());
  for (DType dtype : kAllDTypes) {
    Tensor t = arange(4, {dtype}).view({2, 2}).t();
    EXPECT_EQ(t.to_vector(), (Values{0, 2, 1, 3})) << dtype_name(dtype);
    EXPECT_EQ(t.contiguous().to_vector(), (Values{0, 2, 1, 3})) << dtype_name(dtype);
  }
}

TEST(Factories, Basics) {
  EXPECT_EQ(zeros({2, 2}).to_vector(), (Values{0, 0, 0, 0}));
  EXPECT_EQ(ones({3}, {DType::bf16}).to_vector(), (Values{1, 1, 1}));
  EXPECT_EQ(full({2}, 2.5).to_vector(), (Values{2.5, 2.5}));
  EXPECT_EQ(arange(0, 1, 0.25).to_vector(), (Values{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(arange(5, 0, -2).to_vector(), (Values{5, 3, 1}));
  EXPECT_EQ(arange(0).numel(), 0);
  EXPECT_THROW(arange(0, 1, 0), ShapeError);
  Tensor v = from_values({1, 2, 3, 4, 5, 6}, {3, -1});
  EXPECT_EQ(v.shape(), (Shape{3, 2}));
  EXPECT_EQ(from_values({1, 2, 3}).shape(), (Shape{3}));
  const std::string m = error_of([] { from_values({1, 2, 3}, {2, 2}); });
  EXPECT_NE(m.find("shape '[2, 2]' is invalid for input of size 3"), std::string::npos) << m;
  EXPECT_EQ(empty({2, 3}, {DType::f16}).storage()->bytes(), 12u);
  EXPECT_EQ(empty({2, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(full({}, 1).dim(), 0);
  EXPECT_EQ(full({}, 1).numel(), 1);
  EXPECT_EQ(from_values({1, 2}, {2}).str(), "tensor([1, 2], dtype=f32)");
  EXPECT_EQ(arange(4, {DType::bf16}).view({2, 2}).t().str(), "tensor([[0, 2], [1, 3]], dtype=bf16)");
}

TEST(Factories, SizesThatOverflowAreErrorsNotSmallAllocations) {
  // 2^40 x 2^40 elements: the element count wraps; 2^61 f32 elements: the bytes wrap to 2^63.
  EXPECT_EQ(error_of([] { empty({std::int64_t{1} << 40, std::int64_t{1} << 40}); }),
            "element count: 1099511627776 x 1099511627776 overflows 64 bits");
  EXPECT_EQ(error_of([] { empty({std::int64_t{1} << 61}); }), "storage bytes: 2305843009213693952 x 4 overflows 64 bits");
  EXPECT_THROW(empty_strided({4, 4}, {std::int64_t{1} << 62, 1}), SizeOverflow);
  EXPECT_THROW(empty_strided({4}, {1, 1}), ShapeError);
  EXPECT_THROW(zeros({std::int64_t{1} << 62, 4}), SizeOverflow);
  EXPECT_NE(error_of([] { arange(0, 1e30, 1); }).find("do not fit int64"), std::string::npos);
  // Views whose extent overflows never reach the storage.
  Tensor x = zeros({4});
  EXPECT_THROW(x.as_strided({3, 3}, {std::int64_t{1} << 62, std::int64_t{1} << 62}), SizeOverflow);
  // An empty view's strides as resize gives them (20 x 2^62) do not fit: an error, not a wrapped
  // stride (fuzz/regressions/rearrange).
  const Tensor empty_view = zeros({1}).expand({0, std::int64_t{1} << 62, 20});
  EXPECT_EQ(empty_view.numel(), 0);
  EXPECT_THROW(empty_view.reshape({0, 20, std::int64_t{1} << 62}), SizeOverflow);
}

// ---- random ----------------------------------------------------------------------------------

// Known-answer vectors of Random123 (kat_vectors, philox4x32_10).
TEST(Random, PhiloxKnownAnswers) {
  using Block = std::array<std::uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Random, UniformIsExactIntegerArithmetic) {
  // Draw 0 of seed 0 is the first known-answer block, high bits first.
  const std::uint64_t word = (std::uint64_t{0xe169c58d} << 32) | 0x6627e8d5;
  EXPECT_EQ(uniform(0, 0), std::ldexp(static_cast<double>(word >> 11), -53));
  EXPECT_EQ(uniform(0, 0, 8), std::ldexp(static_cast<double>(word >> 56), -8));
  // Narrow dtypes never round up to 1.
  for (DType dtype : kAllDTypes) {
    const auto values = rand({4096}, 3, {dtype}).to_vector();
    for (double v : values) {
      ASSERT_GE(v, 0) << dtype_name(dtype);
      ASSERT_LT(v, 1) << dtype_name(dtype);
    }
  }
}

TEST(Random, ReproducibleAndSeeded) {
  EXPECT_EQ(randn({100}, 7).to_vector(), randn({100}, 7).to_vector());
  EXPECT_NE(randn({100}, 7).to_vector(), randn({100}, 8).to_vector());
  // Element i depends on (seed, i) only, not on the shape.
  EXPECT_EQ(randn({10, 10}, 7).to_vector(), randn({100}, 7).to_vector());
  EXPECT_EQ(randn({5}, 7).to_vector(), randn({100}, 7).slice(0, 0, 5).to_vector());
}

TEST(Random, MomentsWithinSampleBounds) {
  // n draws: the sample mean is within 6 sigma/sqrt(n), the sample std within 6 sigma/sqrt(2n)
  // (normal) of the truth; fixed seeds make this deterministic, the bounds make it meaningful.
  const double n = 200000;
  for (std::uint64_t seed : {0u, 1u, 12345u}) {
    const auto values = randn({200000}, seed, {DType::f64}).to_vector();
    double sum = 0, squares = 0;
    for (double v : values) sum += v;
    const double mean = sum / n;
    for (double v : values) squares += (v - mean) * (v - mean);
    EXPECT_NEAR(mean, 0, 6 / std::sqrt(n)) << seed;
    EXPECT_NEAR(std::sqrt(squares / n), 1, 6 / std::sqrt(2 * n)) << seed;
    const auto u = rand({200000}, seed, {DType::f64}).to_vector();
    double usum = 0;
    for (double v : u) usum += v;
    EXPECT_NEAR(usum / n, 0.5, 6 * std::sqrt(1.0 / 12) / std::sqrt(n)) << seed;
  }
}

TEST(Random, Erfinv) {
  for (double y : {-0.999999, -0.9, -0.5, -1e-9, 0.0, 0.3, 0.7, 0.99, 0.999999999}) EXPECT_NEAR(std::erf(erfinv(y)), y, 1e-15) << y;
  EXPECT_TRUE(std::isinf(erfinv(1)));
  EXPECT_TRUE(std::isnan(erfinv(2)));
}

}  // namespace
}  // namespace flopscope
