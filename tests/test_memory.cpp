#include <gtest/gtest.h>

#include "flopscope/memory.hpp"

namespace flopscope {
namespace {

TEST(Memory, Gpt3FeedForwardMatrix) {
  const auto shape = parse_shape("49152x12288");
  ASSERT_TRUE(shape);
  EXPECT_EQ(format_shape(*shape), "49152x12288");
  EXPECT_EQ(tensor_bytes(*shape, DType::f32), 2'415'919'104);
  EXPECT_EQ(tensor_bytes(*shape, DType::f16), 2'415'919'104 / 2);
  EXPECT_EQ(tensor_bytes(*shape, DType::bf16), 2'415'919'104 / 2);
  EXPECT_EQ(tensor_bytes(*shape, DType::f8e4m3), 2'415'919'104 / 4);
  EXPECT_EQ(tensor_bytes(*shape, DType::f8e5m2), 2'415'919'104 / 4);
  EXPECT_EQ(format_bytes_both(2'415'919'104), "2,415,919,104 B (2.25 GiB, 2.42 GB)");
}

TEST(Memory, Shapes) {
  EXPECT_EQ(parse_shape("4Kix2^10"), (std::vector<std::int64_t>{4096, 1024}));
  EXPECT_EQ(parse_shape("7"), (std::vector<std::int64_t>{7}));
  EXPECT_EQ(parse_shape(""), (std::vector<std::int64_t>{}));
  EXPECT_EQ(element_count(std::vector<std::int64_t>{}), 1);
  EXPECT_FALSE(parse_shape("3xx4"));
  EXPECT_FALSE(parse_shape("3x-4"));
  EXPECT_FALSE(parse_shape("abc"));
  EXPECT_FALSE(tensor_bytes(std::vector<std::int64_t>{std::int64_t{1} << 40, std::int64_t{1} << 30}, DType::f32));
}

TEST(Memory, TrainingStateAdamW) {
  const std::int64_t params = 7'000'000'000;
  const auto f32 = training_memory(params, DType::f32, Optimizer::adamw);
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->bytes_per_parameter, 16);  // 4 params + 4 grads + 4 + 4 moments
  EXPECT_EQ(f32->total_bytes, 112'000'000'000);
  EXPECT_EQ(f32->components.size(), 4u);
  const auto mixed = training_memory(params, DType::bf16, Optimizer::adamw);
  ASSERT_TRUE(mixed);
  EXPECT_EQ(mixed->bytes_per_parameter, 16);  // 2 + 2 + 4 master + 4 + 4
  EXPECT_EQ(mixed->components.size(), 5u);
  const auto pure = training_memory(params, DType::bf16, Optimizer::adamw, false);
  EXPECT_EQ(pure->bytes_per_parameter, 12);
  EXPECT_EQ(training_memory(params, DType::f32, Optimizer::sgd)->bytes_per_parameter, 8);
  EXPECT_EQ(training_memory(params, DType::f32, Optimizer::sgd_momentum)->bytes_per_parameter, 12);
  EXPECT_FALSE(training_memory(std::int64_t{1} << 62, DType::f32, Optimizer::adamw));
  EXPECT_EQ(parse_optimizer("adam"), Optimizer::adamw);
  EXPECT_FALSE(parse_optimizer("lion"));
}

TEST(Memory, Formatting) {
  EXPECT_EQ(format_thousands(0), "0");
  EXPECT_EQ(format_thousands(999), "999");
  EXPECT_EQ(format_thousands(1000), "1,000");
  EXPECT_EQ(format_thousands(112'000'000'000), "112,000,000,000");
  EXPECT_EQ(format_bytes_decimal(512), "512 B");
  EXPECT_EQ(format_bytes_decimal(112e9), "112.00 GB");
}

}  // namespace
}  // namespace flopscope
