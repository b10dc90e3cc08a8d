// Broadcasting, the strided iterator, elementwise ops and matmul against explicit loops.
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "flopscope/broadcast.hpp"

namespace flopscope {
namespace {

using test_util::error_of;

TEST(Broadcast, Shapes) {
  EXPECT_EQ(broadcast_shapes(Shape{2, 1, 3}, Shape{4, 1}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{3}), (Shape{3}));
  EXPECT_EQ(broadcast_shapes(Shape{5, 0}, Shape{1}), (Shape{5, 0}));
  EXPECT_EQ(broadcast_shapes(Shape{1}, Shape{0}), (Shape{0}));
  const std::vector<Shape> three = {{8, 1, 6, 1}, {7, 1, 5}, {1, 1}};
  EXPECT_EQ(broadcast_shapes(three), (Shape{8, 7, 6, 5}));
  const std::string m = error_of([] { broadcast_shapes(Shape{2, 3}, Shape{4}); });
  EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  EXPECT_NE(m.find("non-singleton dimension 1"), std::string::npos) << m;
}

TEST(Broadcast, IteratorVisitsRowMajorWithStrideZero) {
  // Operand 0 a transposed [3, 2] (strides [1, 3]); operand 1 a broadcast row (strides [0, 1]).
  std::vector<std::pair<std::int64_t, std::int64_t>> seen;
  for (StridedIterator it({3, 2}, {{1, 3}, {0, 1}}, {10, 0}); !it.done(); it.next()) seen.emplace_back(it.offset(0), it.offset(1));
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {{10, 0}, {13, 1}, {11, 0}, {14, 1}, {12, 0}, {15, 1}};
  EXPECT_EQ(seen, expected);
  int count = 0;
  for (StridedIterator it({}, {{}}, {5}); !it.done(); it.next()) {
    EXPECT_EQ(it.offset(0), 5);
    ++count;
  }
  EXPECT_EQ(count, 1);  // a 0-d shape has one element
  for (StridedIterator it({3, 0}, {{1, 1}}, {0}); !it.done(); it.next()) ADD_FAILURE() << "empty shape visited";
}

// a op b against explicit loops over the broadcast index, with a non-contiguous operand.
void check_binary(const std::function<Tensor(const Tensor&, const Tensor&)>& op,
                  const std::function<double(double, double)>& reference, const char* name) {
  Tensor a = randn({4, 1, 3}, 1, {DType::f64});                     // [4, 1, 3]
  Tensor b = randn({3, 5}, 2, {DType::f64}).t().unsqueeze(0).expand({2, 5, 3});  // [2, 5, 3], strides [0, 1, 5]
  b = b.index({Slice{}, Slice{}, Slice{}});
  Tensor out = op(a.unsqueeze(0), b.unsqueeze(1));  // [1, 4, 1, 3] with [2, 1, 5, 3] -> [2, 4, 5, 3]
  ASSERT_EQ(out.shape(), (Shape{2, 4, 5, 3})) << name;
  EXPECT_TRUE(out.is_contiguous());
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      for (std::int64_t k = 0; k < 5; ++k)
        for (std::int64_t l = 0; l < 3; ++l)
          ASSERT_EQ(out.at({i, j, k, l}), reference(a.at({j, 0, l}), b.at({i, k, l}))) << name;
}

TEST(Broadcast, ElementwiseOpsAgainstLoops) {
  check_binary([](const Tensor& a, const Tensor& b) { return a + b; }, std::plus<double>(), "add");
  check_binary([](const Tensor& a, const Tensor& b) { return sub(a, b); }, std::minus<double>(), "sub");
  check_binary([](const Tensor& a, const Tensor& b) { return a * b; }, std::multiplies<double>(), "mul");
  check_binary([](const Tensor& a, const Tensor& b) { return div(a, b); }, std::divides<double>(), "div");
}

TEST(Broadcast, DtypesAndRounding) {
  Tensor a = from_values({1, 2}, {2}, {DType::f16});
  Tensor b = from_values({1e-4}, {1}, {DType::f16});
  Tensor sum = a + b;
  EXPECT_EQ(sum.dtype(), DType::f16);
  EXPECT_EQ(sum.to_vector(), (std::vector<double>{1, 2}));  // 1 + 1e-4 rounds to 1 in f16
  EXPECT_EQ((a + from_values({0.5}, {1}, {DType::bf16})).dtype(), DType::f32);
  EXPECT_EQ((a + from_values({0.5}, {1}, {DType::f64})).dtype(), DType::f64);
  EXPECT_THROW(a + from_values({0.5}, {1}, {DType::f8e4m3}), std::invalid_argument);
  Tensor f = from_values({1, 3}, {2});
  EXPECT_EQ((f / from_values({3}, {1})).at({0}), static_cast<double>(1.0f / 3.0f));
  const std::string m = error_of([] { add(zeros({2, 3}), zeros({2})); });
  EXPECT_NE(m.find("add: shapes [2, 3] and [2]"), std::string::npos) << m;
}

TEST(Broadcast, Accounting) {
  EXPECT_EQ(elementwise_flops(Shape{4, 1}, Shape{3}), 12);
  // A broadcast operand is read once: 4 + 3 elements read, 12 written.
  EXPECT_EQ(elementwise_bytes(Shape{4, 1}, Shape{3}, DType::f32), (4 + 3 + 12) * 4);
}

TEST(Matmul, AgainstLoopsWithBatchBroadcast) {
  Tensor a = randn({2, 1, 3, 4}, 3, {DType::f64});
  Tensor b = randn({5, 2, 4}, 4, {DType::f64}).transpose(-1, -2);  // [5, 4, 2], not contiguous
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 5, 3, 2}));
  for (std::int64_t p = 0; p < 2; ++p)
    for (std::int64_t q = 0; q < 5; ++q)
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 2; ++j) {
          double sum = 0;
          for (std::int64_t k = 0; k < 4; ++k) sum += a.at({p, 0, i, k}) * b.at({q, k, j});
          ASSERT_NEAR(c.at({p, q, i, j}), sum, 1e-12);
        }
  EXPECT_EQ(matmul_flops(Shape{2, 1, 3, 4}, Shape{5, 4, 2}), 2 * 10 * 3 * 4 * 2);
}

TEST(Matmul, ShapesAsTorch) {
  EXPECT_EQ(matmul_shape(Shape{3}, Shape{3}), (Shape{}));
  EXPECT_EQ(matmul_shape(Shape{2, 3}, Shape{3}), (Shape{2}));
  EXPECT_EQ(matmul_shape(Shape{3}, Shape{3, 4}), (Shape{4}));
  EXPECT_EQ(matmul_shape(Shape{7, 2, 3}, Shape{3}), (Shape{7, 2}));
  EXPECT_EQ(matmul_shape(Shape{3}, Shape{7, 3, 4}), (Shape{7, 4}));
  EXPECT_EQ(matmul_flops(Shape{2, 3}, Shape{3, 4}), 48);
  Tensor v = from_values({1, 2, 3});
  EXPECT_EQ(matmul(v, v).item(), 14);
  EXPECT_EQ(matmul(arange(6).view({2, 3}), v).to_vector(), (std::vector<double>{8, 26}));
  const std::string m = error_of([] { matmul_shape(Shape{2, 3}, Shape{4, 5}); });
  EXPECT_NE(m.find("matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"), std::string::npos) << m;
  EXPECT_THROW(matmul_shape(Shape{2, 2, 3}, Shape{3, 3, 4}), ShapeError);
  EXPECT_THROW(matmul_shape(Shape{}, Shape{3}), ShapeError);
}

}  // namespace
}  // namespace flopscope
