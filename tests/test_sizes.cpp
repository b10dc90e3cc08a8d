#include <gtest/gtest.h>

#include "flopscope/device.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/sizes.hpp"

using namespace flopscope;

TEST(ParseCount, AcceptsTheWrittenForms) {
  EXPECT_EQ(parse_count("4096"), 4096);
  EXPECT_EQ(parse_count("2^28"), std::int64_t{1} << 28);
  EXPECT_EQ(parse_count("256Mi"), std::int64_t{256} << 20);
  EXPECT_EQ(parse_count("1Gi"), std::int64_t{1} << 30);
  EXPECT_EQ(parse_count("64Ki"), 65536);
  EXPECT_EQ(parse_count("3M"), 3'000'000);
  EXPECT_EQ(parse_count("1e6"), 1'000'000);
  EXPECT_EQ(parse_count("0"), 0);
}

TEST(ParseCount, RejectsMalformedAndOverflowing) {
  for (const char* bad : {"", "-1", "abc", "12x", "2^", "^3", "Mi", "1.5Mi", "2^63", "9Ti9", "10Ti10",
                          "9999999999Ti", "1e19"})
    EXPECT_FALSE(parse_count(bad).has_value()) << bad;
}

TEST(FormatCount, IsTheShortestExactFormAndRoundTrips) {
  EXPECT_EQ(format_count(std::int64_t{1} << 28), "256Mi");
  EXPECT_EQ(format_count(1000), "1000");
  EXPECT_EQ(format_count(4096), "4Ki");
  EXPECT_EQ(format_count(0), "0");
  for (std::int64_t n : {1LL, 17LL, 1024LL, 3LL << 20, 5LL << 30, 1'000'000LL})
    EXPECT_EQ(parse_count(format_count(n)), n) << n;
}

TEST(FormatBytes, UsesBinaryUnits) {
  EXPECT_EQ(format_bytes_binary(512), "512 B");
  EXPECT_EQ(format_bytes_binary(1024.0 * 1024 * 1024), "1.00 GiB");
  EXPECT_EQ(format_bytes_binary(3.5 * 1024 * 1024), "3.50 MiB");
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(1).str(), "cuda:1");
  for (const char* bad : {"", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "CPU"})
    EXPECT_FALSE(parse_device(bad).has_value()) << bad;
}

TEST(DType, NamesRoundTripAndSizesAreRight) {
  for (DType dtype : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("FP16"), DType::f16);
  EXPECT_FALSE(parse_dtype("tf32").has_value());  // a compute mode, not a storage type
  EXPECT_FALSE(parse_dtype("f128").has_value());
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f8e5m2), 1u);
}
