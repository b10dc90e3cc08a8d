#include <gtest/gtest.h>

#include <limits>

#include "flopscope/memory.hpp"
#include "test_util.hpp"

namespace flopscope {
namespace {

using test_util::error_of;

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
  EXPECT_FALSE(parse_shape("3xx4"));
  EXPECT_FALSE(parse_shape("3x-4"));
  EXPECT_FALSE(parse_shape("abc"));
}

TEST(Memory, OverflowingCountsAreErrorsNamingTheOperands) {
  // 2^40 x 2^30 elements fit (2^70 does not): the element count itself overflows.
  EXPECT_EQ(error_of([] { tensor_bytes(std::vector<std::int64_t>{std::int64_t{1} << 40, std::int64_t{1} << 30}, DType::f32); }),
            "element count: 1099511627776 x 1073741824 overflows 64 bits");
  // 2^61 elements fit, their f32 bytes (2^63) do not; in f8 they do.
  const std::vector<std::int64_t> huge{std::int64_t{1} << 61};
  EXPECT_EQ(error_of([&] { tensor_bytes(huge, DType::f32); }),
            "bytes of f32 elements: 2305843009213693952 x 4 overflows 64 bits");
  EXPECT_EQ(tensor_bytes(huge, DType::f8e4m3), std::int64_t{1} << 61);
  EXPECT_EQ(error_of([] { training_memory(std::int64_t{1} << 62, DType::f32, Optimizer::adamw); }),
            "bytes of parameters: 4611686018427387904 x 4 overflows 64 bits");
  // Each component fits (2^60 x 4 = 2^62) but their sum does not.
  EXPECT_EQ(error_of([] { training_memory(std::int64_t{1} << 60, DType::f32, Optimizer::adamw); }),
            "bytes of the training state: 4611686018427387904 + 4611686018427387904 overflows 64 bits");
  EXPECT_THROW(training_memory(-1, DType::f32, Optimizer::sgd), std::invalid_argument);
}

TEST(Memory, TrainingStateAdamW) {
  const std::int64_t params = 7'000'000'000;
  const auto f32 = training_memory(params, DType::f32, Optimizer::adamw);
  EXPECT_EQ(f32.bytes_per_parameter, 16);  // 4 params + 4 grads + 4 + 4 moments
  EXPECT_EQ(f32.total_bytes, 112'000'000'000);
  EXPECT_EQ(f32.components.size(), 4u);
  const auto mixed = training_memory(params, DType::bf16, Optimizer::adamw);
  EXPECT_EQ(mixed.bytes_per_parameter, 16);  // 2 + 2 + 4 master + 4 + 4
  EXPECT_EQ(mixed.components.size(), 5u);
  const auto pure = training_memory(params, DType::bf16, Optimizer::adamw, false);
  EXPECT_EQ(pure.bytes_per_parameter, 12);
  EXPECT_EQ(training_memory(params, DType::f32, Optimizer::sgd).bytes_per_parameter, 8);
  EXPECT_EQ(training_memory(params, DType::f32, Optimizer::sgd_momentum).bytes_per_parameter, 12);
  EXPECT_EQ(parse_optimizer("adam"), Optimizer::adamw);
  EXPECT_FALSE(parse_optimizer("lion"));
}

TEST(Memory, Formatting) {
  EXPECT_EQ(format_thousands(0), "0");
  EXPECT_EQ(format_thousands(999), "999");
  EXPECT_EQ(format_thousands(1000), "1,000");
  EXPECT_EQ(format_thousands(112'000'000'000), "112,000,000,000");
  EXPECT_EQ(format_thousands(-1234), "-1,234");
  // The most negative int64 has no positive counterpart: its digits come out all the same.
  EXPECT_EQ(format_thousands(std::numeric_limits<std::int64_t>::min()), "-9,223,372,036,854,775,808");
  EXPECT_EQ(format_bytes_decimal(512), "512 B");
  EXPECT_EQ(format_bytes_decimal(112e9), "112.00 GB");
}

}  // namespace
}  // namespace flopscope
