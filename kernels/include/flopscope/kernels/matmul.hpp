// Matmul: C = A · B for 2-D operands, A (m x k), B (k x n), C (m x n), of any strides: a layout is
// a view (NT: B is the transposed view of a row-major n x k array, so a matmul on a transposed
// view and one on a contiguous copy are the same call with different strides). The compute mode
// says what math runs (f64, f32, tf32, f16, bf16, fp8 pairs): A's and B's dtypes are its a and b,
// accumulation is in its accumulate dtype (f32 for every narrow mode), C's dtype is the output
// dtype (f32, or the operands' for f16/bf16; stated in the case's label).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "flopscope/compute_mode.hpp"
#include "flopscope/kernels/variant.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

struct MatmulProblem {
  TensorRef a, b, c;
  ComputeMode mode = ComputeMode::f32;
  // fp8 only: per-tensor scales (C = scale_a·scale_b·A·B), and cuBLASLt's fast accumulation
  // (CUBLASLT_MATMUL_DESC_FAST_ACCUM: partial sums kept at lower precision between promotions).
  float scale_a = 1, scale_b = 1;
  bool fast_accum = false;
  // Out, optional: where prepare() of a variant that chooses an algorithm writes its choice for
  // this problem, as key=value words for the case's label (cuBLASLt: "algo=.. tile=.. stages=..
  // splitk=.. cluster=.. workspace=.."; tile, stages and cluster are the ids of cublasLt.h's
  // enums, workspace the bytes the algorithm needs). The caller owns the string.
  std::string* choice = nullptr;

  std::int64_t m() const { return a.sizes[0]; }
  std::int64_t k() const { return a.sizes[1]; }
  std::int64_t n() const { return b.sizes[1]; }
};

struct MatmulInfo {
  bool vendor = false;            // a vendor library's call (oneDNN, OpenBLAS, cuBLAS, cuBLASLt)
  std::string_view library;       // "oneDNN 2.6", "OpenBLAS", "cuBLASLt"; empty for own kernels
};
using MatmulVariant = Variant<MatmulProblem, MatmulInfo>;

// nullopt for a well-formed problem (2-D operands of matching sizes, dtypes those of the mode),
// else what is wrong with it; every variant checks this first.
std::optional<std::string> matmul_problem_error(const MatmulProblem& problem);

// The reference: a plain triple loop over host operands, products and sums in f64 (inputs read
// as their dtype's values; tf32 rounds the inputs to 10 mantissa bits first), C written rounded
// once to its dtype. Deliberately simple.
void matmul_reference(const MatmulProblem& problem);

// CPU variants (kernels/cpu/matmul.cpp) and CUDA variants (kernels/cuda/matmul.cu; empty
// without CUDA), one table each.
std::span<const MatmulVariant> cpu_matmul_variants();
std::span<const MatmulVariant> cuda_matmul_variants();

}  // namespace flopscope::kernels
