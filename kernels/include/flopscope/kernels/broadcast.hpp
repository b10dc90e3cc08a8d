// Elementwise binary ops on broadcast operands, by PyTorch's rules: out = a (op) b, where a and b
// are views of out's shape whose broadcast dimensions have stride 0 (broadcast_view makes them
// from operands of their own shapes: (T,D) against (B,T,D) is read with strides (0, D, 1)), so a
// broadcast operand is one TensorRef, read in place. out is contiguous; all three share one dtype,
// f64, f32, f16 or bf16: narrow dtypes are loaded narrow, computed in f32 and stored narrow
// (rounded to nearest even), which for one add or multiply is the correctly rounded result, what
// the reference computes in double. Variants per device: kernels/cpu/broadcast.cpp,
// kernels/cuda/broadcast.cu.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "flopscope/kernels/variant.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

enum class BinaryOp { add, mul };
inline constexpr std::array<BinaryOp, 2> kBinaryOps = {BinaryOp::add, BinaryOp::mul};
std::string_view binary_op_name(BinaryOp op);  // "add", "mul"

struct BinaryProblem {
  TensorRef out;
  TensorRef a;  // out's shape, stride 0 where broadcast
  TensorRef b;
  BinaryOp op = BinaryOp::add;
};
using BinaryVariant = Variant<BinaryProblem>;

// `operand` (of its own shape) as a view of `shape`: dimensions aligned from the right, missing
// and size-1 dimensions given stride 0 (Tensor::expand's rule). ShapeError where it does not
// broadcast to `shape`.
TensorRef broadcast_view(const TensorRef& operand, std::span<const std::int64_t> shape);

// The reference: one element at a time through lib's strided iterator, computed in double and
// rounded once to the dtype (lib's add and mul). Host operands. Deliberately simple.
void binary_reference(const BinaryProblem& problem);

// nullopt where out is contiguous, a and b have its shape and dtype, and the dtype is f64, f32,
// f16 or bf16: what every variant takes; else why not.
std::optional<std::string> needs_broadcast_operands(const BinaryProblem& problem);

// A binary op in its simplest form, what every variant walks: size-1 dimensions dropped and
// neighbours merged where a and b both continue one into the next ((B,T,D) + (D) becomes rows
// of D with b's row stride 0; (B,T,D) + (T,D) rows of T·D). out's strides are row-major.
struct BinaryPlan {
  int dims = 0;  // 0: one element, or none (numel 0)
  std::array<std::int64_t, kMaxDims> sizes{};
  std::array<std::int64_t, kMaxDims> a_strides{};
  std::array<std::int64_t, kMaxDims> b_strides{};
  std::int64_t numel = 0;
};
BinaryPlan plan_binary(const BinaryProblem& problem);

// CPU variants (kernels/cpu/broadcast.cpp) and CUDA variants (kernels/cuda/broadcast.cu; an
// empty table in builds without CUDA). CUDA variants enqueue on the stream and do not wait.
std::span<const BinaryVariant> cpu_broadcast_variants();
std::span<const BinaryVariant> cuda_broadcast_variants();

}  // namespace flopscope::kernels
