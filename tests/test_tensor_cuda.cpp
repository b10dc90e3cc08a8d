// Tensors on CUDA devices: to(Device::cuda(0)) and back keeps values and layouts, device views
// share storage, and without a GPU the error says why. Skipped (with the reason) without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "flopscope/broadcast.hpp"
#include "flopscope/einops.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/tensor_storage.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope {
namespace {

class TensorCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels::cuda::register_tensor_storage();
    if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  }
};

TEST(TensorCudaUnavailable, ErrorSaysWhy) {
  kernels::cuda::register_tensor_storage();
  auto reason = kernels::cuda::unavailable_reason(0);
  if (!reason) GTEST_SKIP() << "a GPU is present: nothing to refuse";
  try {
    arange(4).to(Device::cuda(0));
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(*reason), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
}

TEST_F(TensorCuda, RoundTripKeepsValuesAndLayouts) {
  for (DType dtype : kAllDTypes) {
    Tensor x = arange(12, {dtype}).view({3, 4});
    Tensor d = x.to(Device::cuda(0));
    EXPECT_EQ(d.device(), Device::cuda(0));
    EXPECT_EQ(d.to_vector(), x.to_vector()) << dtype_name(dtype);
    EXPECT_EQ(d.to(Device::cpu()).to_vector(), x.to_vector()) << dtype_name(dtype);
  }
  Tensor x = arange(12).view({3, 4});
  Tensor t = x.t().to(Device::cuda(0));  // dense: strides kept
  EXPECT_EQ(t.strides(), (Strides{1, 4}));
  EXPECT_EQ(t.to_vector(), x.t().to_vector());
  Tensor s = x.slice(1, 0, 4, 2).to(Device::cuda(0));  // not dense: row-major
  EXPECT_EQ(s.strides(), (Strides{2, 1}));
  EXPECT_EQ(s.to(Device::cpu()).to_vector(), x.slice(1, 0, 4, 2).to_vector());
}

TEST_F(TensorCuda, DeviceViewsShareStorage) {
  Tensor d = arange(6, {DType::f32, Device::cuda(0)}).view({2, 3});
  EXPECT_EQ(d.device(), Device::cuda(0));
  Tensor row = d[1], column = d.index({Slice{}, std::int64_t{2}}), transposed = d.t();
  EXPECT_TRUE(row.same_storage(d));
  d.set({1, 2}, 50);
  EXPECT_EQ(row.to_vector(), (std::vector<double>{3, 4, 50}));
  EXPECT_EQ(column.at({1}), 50);
  EXPECT_EQ(transposed.at({2, 1}), 50);
  EXPECT_THROW(transposed.view({6}), ShapeError);
  Tensor copy = transposed.contiguous();
  EXPECT_EQ(copy.device(), Device::cuda(0));
  EXPECT_FALSE(copy.same_storage(d));
  EXPECT_EQ(copy.to_vector(), (std::vector<double>{0, 3, 1, 4, 2, 50}));
  column.fill_(-1);
  EXPECT_EQ(d.to_vector(), (std::vector<double>{0, 1, -1, 3, 4, -1}));
}

TEST_F(TensorCuda, ReferenceOpsOnDeviceTensors) {
  Tensor a = randn({2, 3, 4}, 1, {DType::f64, Device::cuda(0)});
  Tensor b = randn({2, 5, 4}, 2, {DType::f64, Device::cuda(0)});
  Tensor c = matmul(a, b.transpose(-2, -1));
  EXPECT_EQ(c.device(), Device::cuda(0));
  Tensor e = einsum(a, b, "bij,bkj->bik");
  EXPECT_EQ(e.device(), Device::cuda(0));
  const auto cv = c.to_vector(), ev = e.to_vector();
  for (std::size_t i = 0; i < cv.size(); ++i) EXPECT_NEAR(cv[i], ev[i], 1e-12);
  EXPECT_EQ((a + a).to_vector(), (a.to(Device::cpu()) * full({}, 2, {DType::f64})).to_vector());
  EXPECT_EQ(randn({8}, 3, {DType::f32, Device::cuda(0)}).to_vector(), randn({8}, 3).to_vector());
}

}  // namespace
}  // namespace flopscope
