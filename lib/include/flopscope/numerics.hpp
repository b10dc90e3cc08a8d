// Bit-exact encoding and decoding of every storage dtype (see dtype.hpp).
// Bit patterns are returned in the low bits of a uint64 (8 bits for fp8, 16 for f16/bf16, ...).
#pragma once

#include <cstdint>

#include "flopscope/dtype.hpp"

namespace flopscope {

// Round-to-nearest-even from a double, with correct subnormals, signed zeros and NaN kept a NaN.
// Overflow: without `saturate` as PyTorch and ml_dtypes do it (f16, bf16, e5m2 go to +/-inf;
// e4m3, which has no infinity, goes to NaN); with `saturate`, to +/- the largest finite value.
std::uint64_t encode_bits(DType dtype, double value, bool saturate = false);

// Exact: every pattern of every dtype is representable in double.
double decode_bits(DType dtype, std::uint64_t bits);

}  // namespace flopscope
