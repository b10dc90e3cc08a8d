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

#include "flopscope/compare.hpp"
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
  std::string_view library;       // a vendor's (Role::vendor): "oneDNN", "OpenBLAS", "cuBLASLt"; empty for own kernels
  // Narrow operands (f16, bf16, fp8) decoded to f32 while packing and multiplied with f32 FMAs:
  // "emulated" in the case's label, and the f32 rate is the peak that applies.
  bool emulated = false;
  // Products summed in the operands' narrow dtype over this many k steps before each promotion
  // to the f32 accumulators (AVX512-FP16's f16 FMAs); 0: accumulated in f32 (or f64) throughout.
  int narrow_accumulation = 0;
  // Honours MatmulProblem::fast_accum (and the fp8 scales): what bench_peak's tensor-core
  // ceilings run through.
  bool fast_accum = false;
  // Products and sums in f64 whatever the mode (the CPU reference loop): its compute is f64.
  bool sums_in_f64 = false;
};
using MatmulVariant = Variant<MatmulProblem, MatmulInfo>;

// nullopt for a well-formed problem (2-D operands of matching sizes, dtypes those of the mode),
// else what is wrong with it; every variant checks this first.
std::optional<std::string> matmul_problem_error(const MatmulProblem& problem);

// The reference: a plain triple loop over host operands, products and sums in f64 (inputs read
// as their dtype's values; tf32 rounds the inputs to 10 mantissa bits first), C written rounded
// once to its dtype. fp8 modes multiply by scale_a·scale_b. Deliberately simple.
void matmul_reference(const MatmulProblem& problem);

// The same loop for the rows `rows` of C, into f64 host arrays of rows.size() x n (row-major):
// sums = A·B and abs_sums = Σ|a·b| (the scale of compare_close's bound), both times the fp8
// scales. The inputs are taken as stored (tf32 is not rounded: the error of its rounding then
// shows in the comparison, and matmul_tolerance allows for it). OpenMP over the rows.
void matmul_reference_rows(const MatmulProblem& problem, std::span<const std::int64_t> rows, double* sums,
                           double* abs_sums);

// The same sums and sums of |products| for every element of C (m x n arrays), by a vendor f64
// GEMM: OpenBLAS cblas_dgemm on A and B decoded to f64, then on |A| and |B| (f64 products of
// the narrow and f32 inputs are exact, and an f64 sum of k of them is off by at most k·2^-53
// of their scale: far below any bound of a narrower type). For shapes where the loop above is
// too slow; the tests check it against it. False, writing nothing, in builds without OpenBLAS.
bool matmul_reference_blas(const MatmulProblem& problem, double* sums, double* abs_sums);

// The bound on |C - A·B| relative to Σ|a·b| per element of C (compare_close's scale) for
// `variant`'s way of computing `problem`, against exact sums of the stored inputs:
// accumulation_tolerance() of the mode's operand, accumulate and C dtypes and k; plus, for
// tf32, the rounding of both inputs (2·2^-10: tensor cores may truncate); plus, for a variant
// that sums products in a narrow dtype (MatmulInfo::narrow_accumulation), that sum's rounding.
// Never a fixed tolerance: it grows with k and follows from the dtypes' epsilons.
Tolerance matmul_tolerance(const MatmulProblem& problem, const MatmulInfo& variant);

// CPU variants (kernels/cpu/matmul.cpp) and CUDA variants (kernels/cuda/matmul.cu; empty
// without CUDA), one table each.
std::span<const MatmulVariant> cpu_matmul_variants();
std::span<const MatmulVariant> cuda_matmul_variants();

}  // namespace flopscope::kernels
