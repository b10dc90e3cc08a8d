// Optimizer steps on f32 master weights (accounting.hpp's Note [optimizer FLOPs]): SGD, SGD with
// momentum and AdamW with PyTorch's formulas, and, for mixed precision, the updated weights rounded to the narrow
// working copy that the next forward pass reads. The updated tensors are written to their own
// outputs (new_weight, new_m, new_v), so that every timed repetition runs the same step on the
// same values; an in-place update reads and writes the same bytes.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "flopscope/accounting.hpp"
#include "flopscope/kernels/variant.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

struct OptimizerHyper {
  float lr = 1e-3f, momentum = 0.9f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
  int step = 1;  // AdamW's t (bias corrections 1 - beta^t)
};

// AdamW's per-element constants, folded ahead as PyTorch does: w·decay; m = b1·m + c1·g;
// v = b2·v + c2·g²; w -= step_size · m / (sqrt(v)·inv_sqrt_bc2 + eps).
struct AdamWConstants {
  float decay, b1, c1, b2, c2, step_size, inv_sqrt_bc2, eps;
};
AdamWConstants adamw_constants(const OptimizerHyper& hyper);

// Every tensor f32 (but new_copy), contiguous, of one element count. m and new_m are the momentum
// buffer (SGD with momentum) or AdamW's first moment, v and new_v AdamW's second; ignored where
// the optimizer keeps no such state. With has_copy, new_copy is new_weight rounded to nearest even
// to f16 or bf16 (encode_bits' rounding: overflow to inf).
struct OptimizerProblem {
  Optimizer optimizer = Optimizer::sgd;
  TensorRef weight, grad, m, v;
  TensorRef new_weight, new_m, new_v, new_copy;
  bool has_copy = false;
  OptimizerHyper hyper;
};
using OptimizerVariant = Variant<OptimizerProblem>;

// nullopt for a well-formed problem, else what is wrong with it (every variant checks this first).
std::optional<std::string> optimizer_problem_error(const OptimizerProblem& problem);

// The reference: the same formula per element in f64 from the f32 inputs, on host operands.
void optimizer_reference(const OptimizerProblem& problem);

// CPU (kernels/cpu/optimizer.cpp, OpenMP) and CUDA (kernels/cuda/optimizer.cu; empty without
// CUDA): one variant each, "plain", one pass over the elements.
std::span<const OptimizerVariant> cpu_optimizer_variants();
std::span<const OptimizerVariant> cuda_optimizer_variants();

}  // namespace flopscope::kernels
