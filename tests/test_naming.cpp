#include <gtest/gtest.h>

#include "harness/naming.hpp"

using flopscope::bench::CaseName;
using flopscope::bench::parse_case_name;

TEST(CaseName, RoundTripsThroughItsString) {
  std::vector<CaseName> names = {
      {"copy", "simd", "f32", "cpu", {{"n", 268435456}}, {}},
      {"matmul", "cublas", "bf16", "cuda:0", {{"m", 8192}, {"n", 8192}, {"k", 8192}}, {}},
      {"convert", "hw", "f32->bf16", "cpu", {{"n", 1024}}, {{"saturate", "1"}, {"layout", "nt-x.2:3"}}},
  };
  for (const auto& name : names) {
    auto parsed = parse_case_name(name.str());
    ASSERT_TRUE(parsed.has_value()) << name.str();
    EXPECT_EQ(*parsed, name);
    EXPECT_EQ(parsed->str(), name.str());
  }
  EXPECT_EQ(names[0].str(), "copy/simd/f32/cpu/n=268435456");
  EXPECT_EQ(names[1].str(), "matmul/cublas/bf16/cuda:0/m=8192,n=8192,k=8192");
  EXPECT_EQ(names[1].dim("k"), 8192);
  EXPECT_THROW(names[1].dim("batch"), std::invalid_argument);
}

TEST(CaseName, RejectsNamesOutsideTheGrammar) {
  for (const char* bad : {"", "copy", "copy/simd/f32/cpu", "Copy/simd/f32/cpu/n=1", "copy/si-md/f32/cpu/n=1",
                          "copy/simd/f32/gpu/n=1", "copy/simd/f32/cuda:/n=1", "copy/simd/f32/cpu/n",
                          "copy/simd/f32/cpu/n=1x", "copy/simd/f32/cpu/1=1", "copy/simd/f32/cpu/n=1/extra",
                          "copy/simd/f32->/cpu/n=1", "copy/simd/f32/cpu/n=1/k=a b", "copy/simd/f32/cpu/n=1,"}) {
    std::string error;
    EXPECT_FALSE(parse_case_name(bad, &error).has_value()) << bad;
    EXPECT_NE(error.find(bad), std::string::npos) << "error names the input: " << error;
  }
}
