// GELU (GPT-2's tanh approximation) forward and backward on a product written in f32 (or f64):
//   forward   out = 0.5·x·(1 + tanh(c·(x + 0.044715·x³))),  c = sqrt(2/pi)
//   backward  out = grad · gelu'(x),  gelu'(x) = 0.5·(1 + t) + 0.5·x·(1 - t²)·c·(1 + 3·0.044715·x²)
// with t = tanh(c·(x + 0.044715·x³)) recomputed from the saved input, as autograd does
// (accounting.hpp's Note [full count]: gelu_tanh). Mixed precision rounds the result to the narrow
// dtype afterwards (a convert step of network.hpp).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "flopscope/kernels/variant.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

// out, x and (backward) grad: one dtype, f32 or f64, contiguous, one element count.
struct GeluProblem {
  bool backward = false;
  TensorRef out, x, grad;
};
using GeluVariant = Variant<GeluProblem>;

std::optional<std::string> gelu_problem_error(const GeluProblem& problem);

// The reference: the formulas above in f64, element by element, on host operands.
void gelu_reference(const GeluProblem& problem);

// CPU (kernels/cpu/activation.cpp, OpenMP) and CUDA (kernels/cuda/activation.cu; empty without
// CUDA): one variant each, "plain".
std::span<const GeluVariant> cpu_gelu_variants();
std::span<const GeluVariant> cuda_gelu_variants();

}  // namespace flopscope::kernels
