// Matmul on a CUDA device (matmul.hpp): C = A·B for A (m x k), B (k x n), C (m x n) of any strides.
// Own kernels climb the ladder of siboehm's SGEMM_CUDA; the vendor variants are PyTorch's calls.
//
//   naive     one thread per output, A and B read from global memory through their strides,
//             products summed in the accumulate dtype (f64 for f64, else f32; fp8 scaled once
//             after the sum): every mode but tf32, any strides. The baseline.
//   smem      32x32 tiles of A and B staged in shared memory: each element loaded once is used 32
//             times from there (f32, f64; any strides).
//   regblock  128x128x8 block tile, 8x8 outputs per thread in registers (2-D register blocking: 64
//             FMAs per 4 shared-memory loads of 16 bytes), float4 global loads where an operand
//             has a unit stride and 16-byte aligned rows (f32; any strides).
//   mma       tensor cores by warp-level mma.sync.m16n8k16, the Ampere (sm_80) instruction, not
//             Hopper's wgmma/TMA: on an H100/H200 expect well below cuBLAS, which uses wgmma
//             (f16, bf16; f32 accumulation; f32 or the operands' dtype out): 128x128x32 block tile, 4 warps of 64x64, a 3-stage cp.async pipeline,
//             ldmatrix from XOR-swizzled shared memory; A and B row- or column-major.
//   cublas    cublasGemmEx (f64, f32, tf32 by CUBLAS_COMPUTE_32F_FAST_TF32, f16, bf16): what
//             torch.matmul calls. Handle and workspace are made in prepare(); the call is timed.
//   cublaslt  cublasLtMatmul with its heuristic's first algorithm (written to problem.choice) on
//             the tensor-core modes: tf32, f16, bf16, and fp8 (e4m3 x e4m3, e5m2 x e4m3,
//             e4m3 x e5m2; no e5m2 x e5m2 in cuBLASLt) with per-tensor scales as device pointers,
//             sm_89+, NT layout; CUBLASLT_MATMUL_DESC_FAST_ACCUM set exactly when
//             problem.fast_accum (fp8 only).
//
// The own kernels do their index math in int32 where every index they form fits, else in int64:
// one template parameter, Index, chosen at one point per kernel (with_index, from fits_int32 of
// the kernel's tiling, index_width.hpp).
//
// Note [row-major operands, column-major BLAS]: cuBLAS reads element (i, j) of a matrix at
// i + j·ld. A flopscope operand X (r x c) with strides (s0, 1) (row-major) is, in that memory, the
// column-major X^T (c x r, ld = s0); with strides (1, s1) it is the column-major X (r x c,
// ld = s1). A row-major C (m x n) is the column-major C^T (n x m, ldc = C.s0), so it is computed
// as C^T = B^T·A^T: cuBLAS's m, n are our n, m and its first operand is our B.
//
//   layout  A (m x k)   B (k x n)   transa  A of cuBLAS (lda)       transb  B of cuBLAS (ldb)
//   NN      row-major   row-major   N       B^T, n x k (B.s0)       N       A^T, k x m (A.s0)
//   NT      row-major   col-major   T       B,   k x n (B.s1)       N       A^T, k x m (A.s0)
//   TN      col-major   row-major   N       B^T, n x k (B.s0)       T       A,   m x k (A.s1)
//   TT      col-major   col-major   T       B,   k x n (B.s1)       T       A,   m x k (A.s1)
//
// (cuBLAS's m, n, k = our n, m, k; ldc = C.s0.) flopscope's NT, x·W^T with W row-major n x k
// as in torch.nn.Linear, is cuBLAS's "TN", the only layout of its fp8 GEMMs. A column-major C is
// computed as C = A·B directly (transa T where A is row-major, transb T where B is row-major).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/index_width.hpp"
#include "flopscope/kernels/matmul.hpp"

namespace flopscope::kernels {

namespace {

// ---- operands --------------------------------------------------------------------------------

// Sizes and strides in the kernel's Index type (std::int64_t, or std::int32_t where with_index
// found that every index fits); each pointer at its operand's element (0, 0).
template <class TA, class TB, class TC, class Index = std::int64_t>
struct Args {
  const TA* a;
  const TB* b;
  TC* c;
  Index m, n, k;
  Index as0, as1, bs0, bs1, cs0, cs1;  // strides in elements
};

template <class TA, class TB, class TC, class Index = std::int64_t>
Args<TA, TB, TC, Index> args_of(const MatmulProblem& p) {
  return {p.a.ptr<const TA>(), p.b.ptr<const TB>(), p.c.ptr<TC>(), Index(p.m()), Index(p.n()), Index(p.k()),
          Index(p.a.strides[0]), Index(p.a.strides[1]), Index(p.b.strides[0]), Index(p.b.strides[1]),
          Index(p.c.strides[0]), Index(p.c.strides[1])};
}

// Calls f.template operator()<Index>() with Index = std::int32_t where every index a kernel of
// `tiling` forms for the problem fits (fits_int32), else std::int64_t: each own kernel's one
// dispatch point on its index width. A size-1 dimension's stride that fits_int32 passes over may
// narrow to any value: it multiplies index 0 only.
template <class F>
void with_index(const MatmulProblem& p, const MatmulTiling& tiling, F&& f) {
  const MatmulExtents extents{p.m(), p.n(), p.k(), p.a.strides[0], p.a.strides[1], p.b.strides[0], p.b.strides[1],
                              p.c.strides[0], p.c.strides[1]};
  if (fits_int32(extents, tiling))
    f.template operator()<std::int32_t>();
  else
    f.template operator()<std::int64_t>();
}

bool is_fp8(ComputeMode mode) {
  return mode == ComputeMode::f8e4m3 || mode == ComputeMode::f8e5m2 || mode == ComputeMode::f8e4m3_e5m2 ||
         mode == ComputeMode::f8e5m2_e4m3;
}

// Calls f.template operator()<TA, TB, TC>() with the CUDA element types of the problem's
// operands (the problem is well-formed: matmul_problem_error checked it).
template <class F>
void with_types(const MatmulProblem& p, F&& f) {
  const bool narrow_c = p.c.dtype != DType::f32 && p.c.dtype != DType::f64;
  switch (p.mode) {
    case ComputeMode::f64: return f.template operator()<double, double, double>();
    case ComputeMode::f32:
    case ComputeMode::tf32: return f.template operator()<float, float, float>();
    case ComputeMode::f16:
      if (narrow_c) return f.template operator()<__half, __half, __half>();
      return f.template operator()<__half, __half, float>();
    case ComputeMode::bf16:
      if (narrow_c) return f.template operator()<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>();
      return f.template operator()<__nv_bfloat16, __nv_bfloat16, float>();
    case ComputeMode::f8e4m3: return f.template operator()<__nv_fp8_e4m3, __nv_fp8_e4m3, float>();
    case ComputeMode::f8e5m2: return f.template operator()<__nv_fp8_e5m2, __nv_fp8_e5m2, float>();
    case ComputeMode::f8e4m3_e5m2: return f.template operator()<__nv_fp8_e4m3, __nv_fp8_e5m2, float>();
    case ComputeMode::f8e5m2_e4m3: return f.template operator()<__nv_fp8_e5m2, __nv_fp8_e4m3, float>();
  }
}

template <class Acc, class T>
__device__ __forceinline__ Acc value(T x) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return static_cast<Acc>(x);
  else
    return static_cast<Acc>(static_cast<float>(x));
}

template <class T, class Acc>
__device__ __forceinline__ T stored(Acc x) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(static_cast<float>(x));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(x));
  else
    return static_cast<T>(x);
}

template <class T>
constexpr bool is_one_of_f32_f64 = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
constexpr bool is_f16_or_bf16 = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Size 1 or stride 1: the dimension can be read as contiguous.
bool unit(const TensorRef& x, int dim) { return x.sizes[dim] == 1 || x.strides[dim] == 1; }

bool aligned16(const void* address) { return reinterpret_cast<std::uintptr_t>(address) % 16 == 0; }

unsigned int blocks(std::int64_t count, std::int64_t per_block) {
  return static_cast<unsigned int>((count + per_block - 1) / per_block);
}

// The grid's y dimension (row blocks) is limited to 65535.
std::optional<std::string> grid_error(const MatmulProblem& p, std::int64_t rows_per_block) {
  if ((p.m() + rows_per_block - 1) / rows_per_block > 65535)
    return "m = " + std::to_string(p.m()) + " needs more than 65535 row blocks of " + std::to_string(rows_per_block);
  return std::nullopt;
}

// ---- naive -----------------------------------------------------------------------------------

template <class Acc, class TA, class TB, class TC, class Index>
__global__ void naive_kernel(Args<TA, TB, TC, Index> p, Acc alpha) {
  const Index j = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
  const Index i = Index(blockIdx.y) * Index(blockDim.y) + Index(threadIdx.y);
  if (i >= p.m || j >= p.n) return;
  const TA* a = p.a + i * p.as0;
  const TB* b = p.b + j * p.bs1;
  Acc sum = 0;
  for (Index kk = 0; kk < p.k; ++kk) sum += value<Acc>(a[kk * p.as1]) * value<Acc>(b[kk * p.bs0]);
  p.c[i * p.cs0 + j * p.cs1] = stored<TC>(sum * alpha);
}

constexpr int kNaiveX = 32, kNaiveY = 8;
constexpr MatmulTiling kNaiveTiling{kNaiveY, kNaiveX, 1};

void run_naive(const MatmulProblem& p, Stream stream) {
  if (p.m() == 0 || p.n() == 0) return;
  with_types(p, [&]<class TA, class TB, class TC>() {
    using Acc = std::conditional_t<std::is_same_v<TA, double>, double, float>;
    const Acc alpha = is_fp8(p.mode) ? Acc(p.scale_a) * Acc(p.scale_b) : Acc(1);
    const dim3 grid(blocks(p.n(), kNaiveX), blocks(p.m(), kNaiveY)), block(kNaiveX, kNaiveY);
    with_index(p, kNaiveTiling, [&]<class Index>() {
      naive_kernel<Acc><<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(args_of<TA, TB, TC, Index>(p), alpha);
    });
  });
}

// ---- smem: 32x32 tiles in shared memory ------------------------------------------------------

constexpr int kSmemTile = 32;
constexpr MatmulTiling kSmemTiling{kSmemTile, kSmemTile, kSmemTile};

// Thread (tx, ty) computes C(row0 + ty, col0 + tx). Each tile is loaded with consecutive threads
// on consecutive addresses: along k for a row-major operand, along m (n) for a column-major one;
// the padding column keeps the transposed stores free of bank conflicts.
template <class T, class Index>
__global__ void __launch_bounds__(kSmemTile * kSmemTile)
    smem_kernel(Args<T, T, T, Index> p, bool a_column_major, bool b_column_major) {
  __shared__ T a_tile[kSmemTile][kSmemTile + 1];  // [row][k]
  __shared__ T b_tile[kSmemTile][kSmemTile + 1];  // [k][col]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const Index row0 = Index(blockIdx.y) * kSmemTile, col0 = Index(blockIdx.x) * kSmemTile;
  const int a_row = a_column_major ? tx : ty, a_k = a_column_major ? ty : tx;
  const int b_k = b_column_major ? tx : ty, b_col = b_column_major ? ty : tx;
  T sum = 0;
  for (Index k0 = 0; k0 < p.k; k0 += kSmemTile) {
    const Index ai = row0 + a_row, ak = k0 + a_k, bk = k0 + b_k, bj = col0 + b_col;
    a_tile[a_row][a_k] = ai < p.m && ak < p.k ? p.a[ai * p.as0 + ak * p.as1] : T(0);
    b_tile[b_k][b_col] = bk < p.k && bj < p.n ? p.b[bk * p.bs0 + bj * p.bs1] : T(0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kSmemTile; ++kk) sum += a_tile[ty][kk] * b_tile[kk][tx];
    __syncthreads();
  }
  const Index i = row0 + ty, j = col0 + tx;
  if (i < p.m && j < p.n) p.c[i * p.cs0 + j * p.cs1] = sum;
}

void run_smem(const MatmulProblem& p, Stream stream) {
  if (p.m() == 0 || p.n() == 0) return;
  with_types(p, [&]<class TA, class TB, class TC>() {
    if constexpr (std::is_same_v<TA, TB> && std::is_same_v<TA, TC> && is_one_of_f32_f64<TA>) {
      const dim3 grid(blocks(p.n(), kSmemTile), blocks(p.m(), kSmemTile)), block(kSmemTile, kSmemTile);
      const bool a_column_major = p.a.strides[0] == 1 && p.a.strides[1] != 1;
      const bool b_column_major = p.b.strides[0] == 1 && p.b.strides[1] != 1;
      with_index(p, kSmemTiling, [&]<class Index>() {
        smem_kernel<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(args_of<TA, TA, TA, Index>(p),
                                                                           a_column_major, b_column_major);
      });
    }
  });
}

// ---- regblock: 2-D register blocking, vectorized loads (f32) --------------------------------

constexpr int kRbM = 128, kRbN = 128, kRbK = 8, kRbThreads = 256;
constexpr MatmulTiling kRbTiling{kRbM, kRbN, kRbK};

// base[(start + e) * stride] for e = 0..3, zero at and past `end`; one float4 load where `vector`
// (stride 1, 16-byte aligned base, start a multiple of 4) and all four are in range.
template <class Index>
__device__ __forceinline__ float4 load_quad(const float* base, Index stride, Index start, Index end, bool vector) {
  if (vector && start + 3 < end) return *reinterpret_cast<const float4*>(base + start);
  float v[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v[e] = start + e < end ? base[(start + e) * stride] : 0.0f;
  return make_float4(v[0], v[1], v[2], v[3]);
}

template <class Index>
__device__ __forceinline__ void store_quad(float* base, Index stride, Index start, Index end, bool vector, float4 q) {
  if (vector && start + 3 < end) {
    *reinterpret_cast<float4*>(base + start) = q;
    return;
  }
  const float v[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (start + e < end) base[(start + e) * stride] = v[e];
}

// One thread's quad of an operand's 128 (m or n) x 8 (k) tile, staged into tile[k][mn]. With a
// unit stride along mn (MnUnit): 4 consecutive mn of one k, stored as they are; otherwise: 4
// consecutive k of one mn (a float4 where the k stride is 1), stored transposed.
template <bool MnUnit, class Index>
__device__ __forceinline__ void stage_quad(float (&tile)[kRbK][kRbM], const float* x, Index s_mn, Index s_k, Index mn0,
                                           Index k0, Index mn_size, Index k_size, bool vector, int t) {
  if constexpr (MnUnit) {
    const int kk = t / 32, mq = (t % 32) * 4;
    const Index gk = k0 + kk;
    const float4 q = gk < k_size ? load_quad(x + gk * s_k, s_mn, mn0 + mq, mn_size, vector) : float4{};
    *reinterpret_cast<float4*>(&tile[kk][mq]) = q;
  } else {
    const int mn = t / 2, kq = (t % 2) * 4;
    const Index g = mn0 + mn;
    const float4 q = g < mn_size ? load_quad(x + g * s_mn, s_k, k0 + kq, k_size, vector) : float4{};
    tile[kq + 0][mn] = q.x;
    tile[kq + 1][mn] = q.y;
    tile[kq + 2][mn] = q.z;
    tile[kq + 3][mn] = q.w;
  }
}

// Block (bx, by) computes the 128x128 tile of C at (by·128, bx·128); thread t = 16·ty + tx owns rows
// {ty·4 + i, 64 + ty·4 + i} and columns {tx·4 + j, 64 + tx·4 + j} (i, j < 4), so that a quarter
// warp's float4 reads of the shared tiles are 128 contiguous bytes (no bank conflict) and its C
// stores are coalesced. Each thread stages one quad of A and one of B per k step of 8 (stage_quad):
// AMUnit where A has a unit m stride (column-major), BNUnit where B has a unit n stride (row-major).
template <bool AMUnit, bool BNUnit, class Index>
__global__ void __launch_bounds__(kRbThreads)
    regblock_kernel(Args<float, float, float, Index> p, bool a_vector, bool b_vector, bool c_vector) {
  __shared__ __align__(16) float a_tile[kRbK][kRbM];  // [k][m]
  __shared__ __align__(16) float b_tile[kRbK][kRbN];  // [k][n]
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const Index row0 = Index(blockIdx.y) * kRbM, col0 = Index(blockIdx.x) * kRbN;
  float acc[8][8] = {};
  for (Index k0 = 0; k0 < p.k; k0 += kRbK) {
    stage_quad<AMUnit>(a_tile, p.a, p.as0, p.as1, row0, k0, p.m, p.k, a_vector, t);
    stage_quad<BNUnit>(b_tile, p.b, p.bs1, p.bs0, col0, k0, p.n, p.k, b_vector, t);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kRbK; ++kk) {
      const float4 a_lo = *reinterpret_cast<const float4*>(&a_tile[kk][ty * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&a_tile[kk][64 + ty * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&b_tile[kk][tx * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&b_tile[kk][64 + tx * 4]);
      const float am[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      const float bn[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(am[i], bn[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const Index row = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (row >= p.m) continue;
    float* c_row = p.c + row * p.cs0;
    store_quad(c_row, p.cs1, col0 + tx * 4, p.n, c_vector, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
    store_quad(c_row, p.cs1, col0 + 64 + tx * 4, p.n, c_vector,
               make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]));
  }
}

void run_regblock(const MatmulProblem& p, Stream stream) {
  if (p.m() == 0 || p.n() == 0) return;
  const auto args = args_of<float, float, float>(p);
  // Staged along m where A is column-major, along n where B is row-major (or has no unit stride).
  const bool a_m_unit = p.a.strides[0] == 1 && p.a.strides[1] != 1 && p.m() > 1;
  const bool b_n_unit = !(p.b.strides[0] == 1 && p.b.strides[1] != 1 && p.n() > 1);
  // A float4 covers 4 elements along the unit stride; every row (column) must start 16-byte aligned.
  const bool a_vector = aligned16(args.a) && (a_m_unit ? args.as1 % 4 == 0 : args.as1 == 1 && args.as0 % 4 == 0);
  const bool b_vector = aligned16(args.b) && (b_n_unit ? args.bs1 == 1 && args.bs0 % 4 == 0 : args.bs1 % 4 == 0);
  const bool c_vector = aligned16(args.c) && args.cs1 == 1 && args.cs0 % 4 == 0;
  const dim3 grid(blocks(p.n(), kRbN), blocks(p.m(), kRbM));
  auto s = static_cast<cudaStream_t>(stream);
  with_index(p, kRbTiling, [&]<class Index>() {
    const auto indexed = args_of<float, float, float, Index>(p);
    if (a_m_unit && b_n_unit)
      regblock_kernel<true, true><<<grid, kRbThreads, 0, s>>>(indexed, a_vector, b_vector, c_vector);
    else if (a_m_unit)
      regblock_kernel<true, false><<<grid, kRbThreads, 0, s>>>(indexed, a_vector, b_vector, c_vector);
    else if (b_n_unit)
      regblock_kernel<false, true><<<grid, kRbThreads, 0, s>>>(indexed, a_vector, b_vector, c_vector);
    else
      regblock_kernel<false, false><<<grid, kRbThreads, 0, s>>>(indexed, a_vector, b_vector, c_vector);
  });
}

// ---- mma: tensor cores by mma.sync (f16, bf16) ------------------------------------------------

constexpr int kMmaM = 128, kMmaN = 128, kMmaK = 32, kMmaStages = 3, kMmaThreads = 128;
constexpr int kMmaTile = kMmaM * kMmaK;  // 16-bit elements of one operand's tile (kMmaM == kMmaN)
// Offsets past the edges: load_mma_tile forms each chunk's address before it checks its length.
constexpr MatmulTiling kMmaTiling{kMmaM, kMmaN, kMmaK, /*offsets_past_edge=*/true};

// Note [mma shared-memory tiles]: a tile holds 128 (m or n) x 32 (k) 16-bit elements in 16-byte
// chunks of 8, in one of two forms, each XOR-swizzled so that the 8 rows an ldmatrix phase reads
// (8 rows, one chunk each) land in 8 distinct 16-byte bank groups:
//   k-major   (operand with a unit k stride: row-major A, column-major B): 128 rows of 32 k,
//             4 chunks a row (64 bytes); chunk c of row r stored at c ^ ((r >> 1) & 3);
//   mn-major  (unit m or n stride: column-major A, row-major B): 32 rows (k) of 128,
//             16 chunks a row (256 bytes); chunk c of row r stored at c ^ (r & 7).
// Both are filled by 16-byte cp.async copies along the unit stride, and read by ldmatrix (k-major)
// or ldmatrix.trans (mn-major), which deliver the same fragments.
__device__ __forceinline__ int kmajor_offset(int row, int k) {
  const int chunk = k >> 3;  // 0..3
  return row * kMmaK + ((chunk ^ ((row >> 1) & 3)) << 3) + (k & 7);
}

__device__ __forceinline__ int mnmajor_offset(int k, int col) {
  const int chunk = col >> 3;  // 0..15; the XOR changes its low 3 bits only
  return k * kMmaM + ((chunk ^ (k & 7)) << 3) + (col & 7);
}

// Elements of a chunk of 8 that lie before the operand's end, `left` elements away.
template <class Index>
__device__ __forceinline__ int chunk_length(Index left) { return left >= 8 ? 8 : left > 0 ? int(left) : 0; }

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void cp_async16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)), "l"(global) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}

// D = A·B + D for one 16x8x16 fragment, f32 accumulators (PTX ISA, "mma.m16n8k16").
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)d, (void)a, (void)b;
  __trap();  // unavailable() refuses devices older than sm_80
#endif
}

// A chunk of `length` (< 8, or unaligned) elements global[e·step], zeros after, into its 16 bytes of
// shared memory. Out of line: inlined, its registers pushed the mma kernel past 255 and into
// spills (330 bytes a thread); as a call the kernel needs 220-230 and none.
__device__ __noinline__ void load_chunk_elementwise(std::uint16_t* shared, const std::uint16_t* global,
                                                    std::int64_t step, int length) {
  std::uint32_t words[4];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const std::uint32_t lo = 2 * w < length ? global[(2 * w) * step] : 0;
    const std::uint32_t hi = 2 * w + 1 < length ? global[(2 * w + 1) * step] : 0;
    words[w] = lo | (hi << 16);
  }
  *reinterpret_cast<uint4*>(shared) = make_uint4(words[0], words[1], words[2], words[3]);
}

// One operand's tile (128 mn x 32 k, from (mn0, k0)) into shared memory, 4 chunks of 8 elements a
// thread. A chunk wholly inside the operand, with `aligned` (unit stride along the chunk, 16-byte
// aligned base and other stride a multiple of 8), is one cp.async; any other is read element by
// element (zeros outside the operand) and stored directly: visible, like the copies, after the
// barrier that precedes its use.
template <bool KMajor, class Index>
__device__ __forceinline__ void load_mma_tile(std::uint16_t* tile, const std::uint16_t* x, Index s_mn, Index s_k,
                                              Index mn0, Index k0, Index mn_size, Index k_size, bool aligned, int tid) {
#pragma unroll
  for (int i = 0; i < kMmaTile / 8 / kMmaThreads; ++i) {
    const int chunk = tid + i * kMmaThreads;
    Index mn, k;
    int length;  // elements of the chunk inside the operand, along its unit stride
    std::uint16_t* shared;
    if constexpr (KMajor) {
      const int row = chunk >> 2, kc = chunk & 3;
      mn = mn0 + row;
      k = k0 + kc * 8;
      length = mn < mn_size ? chunk_length(k_size - k) : 0;
      shared = tile + kmajor_offset(row, kc * 8);
    } else {
      const int row = chunk >> 4, mc = chunk & 15;
      k = k0 + row;
      mn = mn0 + mc * 8;
      length = k < k_size ? chunk_length(mn_size - mn) : 0;
      shared = tile + mnmajor_offset(row, mc * 8);
    }
    const std::uint16_t* global = x + mn * s_mn + k * s_k;
    if (aligned && length == 8)
      cp_async16(shared, global);
    else
      load_chunk_elementwise(shared, global, KMajor ? s_k : s_mn, length);
  }
}

// Block (bx, by) computes the 128x128 tile of C at (by·128, bx·128); warp w computes its 64x64
// quarter at ((w >> 1)·64, (w & 1)·64) as 4 x 8 fragments of 16x8. Fragment layouts are those of
// the PTX ISA for mma.m16n8k16 (lane = 4·group + t): A's four registers hold rows (group,
// group + 8) x k (2t, 2t + 1, + 8), B's two k (2t, 2t + 1, + 8) x column group, C's four rows
// (group, group + 8) x columns (2t, 2t + 1); ldmatrix's matrix i (addressed by lanes 8i..8i+7)
// lands in register i.
template <class T, class TC, bool AKMajor, bool BKMajor, class Index>
__global__ void __launch_bounds__(kMmaThreads)
    mma_kernel(Args<T, T, TC, Index> p, bool a_aligned, bool b_aligned) {
  __shared__ __align__(128) std::uint16_t a_tiles[kMmaStages][kMmaTile];
  __shared__ __align__(128) std::uint16_t b_tiles[kMmaStages][kMmaTile];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = (warp >> 1) * 64, warp_n = (warp & 1) * 64;
  const Index row0 = Index(blockIdx.y) * kMmaM, col0 = Index(blockIdx.x) * kMmaN;
  const auto* a = reinterpret_cast<const std::uint16_t*>(p.a);
  const auto* b = reinterpret_cast<const std::uint16_t*>(p.b);
  const int k_tiles = int((std::int64_t(p.k) + kMmaK - 1) / kMmaK);

  auto load_stage = [&](int stage, int k_tile) {
    const Index k0 = Index(k_tile) * kMmaK;
    load_mma_tile<AKMajor>(a_tiles[stage], a, p.as0, p.as1, row0, k0, p.m, p.k, a_aligned, tid);
    load_mma_tile<BKMajor>(b_tiles[stage], b, p.bs1, p.bs0, col0, k0, p.n, p.k, b_aligned, tid);
  };

  float acc[4][8][4] = {};
#pragma unroll
  for (int s = 0; s < kMmaStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    // Groups committed so far: kMmaStages - 1 + kt; tile kt's is complete when at most
    // kMmaStages - 2 are pending. The barrier makes every thread's copies visible and ends the
    // reads of stage (kt - 1) % kMmaStages, which the next load overwrites.
    cp_async_wait<kMmaStages - 2>();
    __syncthreads();
    const int next = kt + kMmaStages - 1;
    if (next < k_tiles) load_stage(next % kMmaStages, next);
    cp_async_commit();
    const std::uint16_t* a_tile = a_tiles[kt % kMmaStages];
    const std::uint16_t* b_tile = b_tiles[kt % kMmaStages];
#pragma unroll
    for (int ks = 0; ks < kMmaK; ks += 16) {
      const int quad = lane >> 3, r = lane & 7;
      unsigned a_frag[4][4], b_frag[8][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int m = warp_m + mi * 16;
        if constexpr (AKMajor)  // matrices: (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15)
          ldmatrix_x4(a_frag[mi], a_tile + kmajor_offset(m + r + (quad & 1) * 8, ks + (quad >> 1) * 8));
        else  // stored [k][m], transposed on load; matrices in the same order
          ldmatrix_x4_trans(a_frag[mi], a_tile + mnmajor_offset(ks + r + (quad >> 1) * 8, m + (quad & 1) * 8));
      }
#pragma unroll
      for (int pair = 0; pair < 4; ++pair) {  // n fragments 2·pair and 2·pair + 1
        const int n = warp_n + pair * 16;
        unsigned regs[4];
        if constexpr (BKMajor)  // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
          ldmatrix_x4(regs, b_tile + kmajor_offset(n + r + (quad >> 1) * 8, ks + (quad & 1) * 8));
        else  // stored [k][n], transposed on load; matrices in the same order
          ldmatrix_x4_trans(regs, b_tile + mnmajor_offset(ks + r + (quad & 1) * 8, n + (quad >> 1) * 8));
        b_frag[2 * pair][0] = regs[0];
        b_frag[2 * pair][1] = regs[1];
        b_frag[2 * pair + 1][0] = regs[2];
        b_frag[2 * pair + 1][1] = regs[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 8; ++ni) mma_16816<T>(acc[mi][ni], a_frag[mi], b_frag[ni]);
    }
  }
  const int group = lane >> 2, t2 = (lane & 3) * 2;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const Index row = row0 + warp_m + mi * 16 + group + half * 8;
      if (row >= p.m) continue;
#pragma unroll
      for (int ni = 0; ni < 8; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const Index col = col0 + warp_n + ni * 8 + t2 + e;
          if (col < p.n) p.c[row * p.cs0 + col * p.cs1] = stored<TC>(acc[mi][ni][half * 2 + e]);
        }
    }
}

void run_mma(const MatmulProblem& p, Stream stream) {
  if (p.m() == 0 || p.n() == 0) return;
  with_types(p, [&]<class TA, class TB, class TC>() {
    if constexpr (std::is_same_v<TA, TB> && is_f16_or_bf16<TA>) {
      const auto args = args_of<TA, TA, TC>(p);
      const bool a_k_major = p.a.strides[1] == 1, b_k_major = p.b.strides[0] == 1;
      // cp.async copies 16 bytes along the unit stride: the base and every row must be 16-byte aligned.
      const bool a_aligned = aligned16(args.a) && (a_k_major ? args.as0 % 8 == 0 : args.as0 == 1 && args.as1 % 8 == 0);
      const bool b_aligned = aligned16(args.b) && (b_k_major ? args.bs1 % 8 == 0 : args.bs1 == 1 && args.bs0 % 8 == 0);
      const dim3 grid(blocks(p.n(), kMmaN), blocks(p.m(), kMmaM));
      auto s = static_cast<cudaStream_t>(stream);
      with_index(p, kMmaTiling, [&]<class Index>() {
        const auto indexed = args_of<TA, TA, TC, Index>(p);
        if (a_k_major && b_k_major)
          mma_kernel<TA, TC, true, true><<<grid, kMmaThreads, 0, s>>>(indexed, a_aligned, b_aligned);
        else if (a_k_major)
          mma_kernel<TA, TC, true, false><<<grid, kMmaThreads, 0, s>>>(indexed, a_aligned, b_aligned);
        else if (b_k_major)
          mma_kernel<TA, TC, false, true><<<grid, kMmaThreads, 0, s>>>(indexed, a_aligned, b_aligned);
        else
          mma_kernel<TA, TC, false, false><<<grid, kMmaThreads, 0, s>>>(indexed, a_aligned, b_aligned);
      });
    }
  });
}

// ---- availability ----------------------------------------------------------------------------

constexpr const char* kFastAccumIsLtFp8 =
    "fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM) is an option of cuBLASLt's fp8 GEMMs";

struct DeviceInfo {
  std::string name;
  int sm = 0;  // 90 for sm_90
};

const DeviceInfo& device_info(int ordinal) {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> cache;
  std::lock_guard lock(mutex);
  auto [it, inserted] = cache.try_emplace(ordinal);
  if (inserted) {
    const cuda::DeviceProperties properties = cuda::device_properties(ordinal);
    it->second = {properties.name, properties.sm_major * 10 + properties.sm_minor};
  }
  return it->second;
}

// What every variant checks first: a well-formed problem, on a CUDA device.
std::optional<std::string> problem_error(const MatmulProblem& p) {
  if (auto error = matmul_problem_error(p)) return error;
  if (!p.c.device.is_cuda()) return "runs on a CUDA device, not on " + p.c.device.str();
  return std::nullopt;
}

// What every variant checks last: the device can run it (`what` needs sm_<min_sm> or newer).
std::optional<std::string> device_error(const MatmulProblem& p, int min_sm, const std::string& what) {
  const int ordinal = p.c.device.index;
  if (auto reason = cuda::unavailable_reason(ordinal)) return reason;
  const DeviceInfo& device = device_info(ordinal);
  if (device.sm < min_sm)
    return what + " need sm_" + std::to_string(min_sm) + " or newer; " + device.name + " is sm_" +
           std::to_string(device.sm);
  return std::nullopt;
}

std::optional<std::string> own_kernel_unavailable(const MatmulProblem& p, std::int64_t rows_per_block) {
  if (auto error = problem_error(p)) return error;
  if (p.fast_accum) return kFastAccumIsLtFp8;
  if (auto error = grid_error(p, rows_per_block)) return error;
  return device_error(p, 0, "");
}

std::optional<std::string> naive_unavailable(const MatmulProblem& p) { return own_kernel_unavailable(p, kNaiveY); }
std::optional<std::string> smem_unavailable(const MatmulProblem& p) { return own_kernel_unavailable(p, kSmemTile); }
std::optional<std::string> regblock_unavailable(const MatmulProblem& p) { return own_kernel_unavailable(p, kRbM); }

std::optional<std::string> mma_unavailable(const MatmulProblem& p) {
  if (auto error = problem_error(p)) return error;
  if (p.fast_accum) return kFastAccumIsLtFp8;
  for (const TensorRef* x : {&p.a, &p.b})
    if (!unit(*x, 0) && !unit(*x, 1))
      return "ldmatrix tiles need A and B row- or column-major (one unit stride each), not " + x->str();
  if (auto error = grid_error(p, kMmaM)) return error;
  return device_error(p, 80, "mma.sync's f16 and bf16 fragments");
}

bool takes_naive(const MatmulProblem& p) { return p.mode != ComputeMode::tf32; }
bool takes_smem(const MatmulProblem& p) { return p.mode == ComputeMode::f32 || p.mode == ComputeMode::f64; }
bool takes_regblock(const MatmulProblem& p) { return p.mode == ComputeMode::f32; }
bool takes_mma(const MatmulProblem& p) { return p.mode == ComputeMode::f16 || p.mode == ComputeMode::bf16; }
bool takes_cublas(const MatmulProblem& p) { return !is_fp8(p.mode); }
bool takes_cublaslt(const MatmulProblem& p) {
  return p.mode == ComputeMode::tf32 || p.mode == ComputeMode::f16 || p.mode == ComputeMode::bf16 || is_fp8(p.mode);
}

// ---- cuBLAS and cuBLASLt ---------------------------------------------------------------------

// X (r x c) as a column-major BLAS matrix: `transposed` where the memory holds X^T (X row-major:
// c x r, ld = s0), else X itself (X column-major: r x c, ld = s1); row-major where both fit (a
// dimension of size 1, whose stride is then irrelevant). nullopt where neither stride is 1, or
// rows overlap (ld smaller than a row).
struct ColumnMajor {
  bool transposed = false;
  std::int64_t rows = 0, cols = 0, ld = 0;
};

std::optional<ColumnMajor> column_major(const TensorRef& x) {
  const std::int64_t r = x.sizes[0], c = x.sizes[1];
  if (unit(x, 1)) {
    const std::int64_t ld = r <= 1 ? std::max<std::int64_t>(c, 1) : x.strides[0];
    if (ld >= std::max<std::int64_t>(c, 1)) return ColumnMajor{true, c, r, ld};
  }
  if (unit(x, 0)) {
    const std::int64_t ld = c <= 1 ? std::max<std::int64_t>(r, 1) : x.strides[1];
    if (ld >= std::max<std::int64_t>(r, 1)) return ColumnMajor{false, r, c, ld};
  }
  return std::nullopt;
}

// One column-major GEMM D (rows x cols, ld_out) = op(first) (rows x depth) · op(second)
// (depth x cols), per Note [row-major operands, column-major BLAS]: `swapped` (C row-major) is
// C^T = B^T·A^T with first = B, second = A; otherwise C = A·B.
struct BlasCall {
  bool swapped = false;
  cublasOperation_t op_first = CUBLAS_OP_N, op_second = CUBLAS_OP_N;
  std::int64_t rows = 0, cols = 0, depth = 0;
  ColumnMajor first, second;  // as stored
  const void* first_data = nullptr;
  const void* second_data = nullptr;
  void* out = nullptr;
  std::int64_t ld_out = 0;
  DType first_dtype = DType::f32, second_dtype = DType::f32;
  float first_scale = 1, second_scale = 1;
};

std::optional<BlasCall> blas_call(const MatmulProblem& p) {
  const auto c = column_major(p.c);
  if (!c) return std::nullopt;
  BlasCall call;
  call.swapped = c->transposed;
  const TensorRef& first = call.swapped ? p.b : p.a;
  const TensorRef& second = call.swapped ? p.a : p.b;
  const auto first_stored = column_major(first), second_stored = column_major(second);
  if (!first_stored || !second_stored) return std::nullopt;
  call.first = *first_stored;
  call.second = *second_stored;
  // op(stored) must be first^T when swapped, first otherwise: the stored form is first^T where
  // `transposed`, so no operation is needed exactly when the two agree.
  call.op_first = first_stored->transposed == call.swapped ? CUBLAS_OP_N : CUBLAS_OP_T;
  call.op_second = second_stored->transposed == call.swapped ? CUBLAS_OP_N : CUBLAS_OP_T;
  call.rows = c->rows;
  call.cols = c->cols;
  call.depth = p.k();
  call.first_data = first.element_data();
  call.second_data = second.element_data();
  call.out = p.c.element_data();
  call.ld_out = c->ld;
  call.first_dtype = first.dtype;
  call.second_dtype = second.dtype;
  call.first_scale = call.swapped ? p.scale_b : p.scale_a;
  call.second_scale = call.swapped ? p.scale_a : p.scale_b;
  return call;
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f64: return CUDA_R_64F;
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f8e4m3: return CUDA_R_8F_E4M3;
    case DType::f8e5m2: return CUDA_R_8F_E5M2;
  }
  throw std::logic_error("cuda_type: unknown dtype");
}

cublasComputeType_t compute_type(ComputeMode mode) {
  if (mode == ComputeMode::f64) return CUBLAS_COMPUTE_64F;
  if (mode == ComputeMode::tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;  // f32, and f32 accumulation of f16, bf16 and fp8
}

std::string status_text(cublasStatus_t status) {
  return std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + status_text(status));
}

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // not sticky: clear it so that later calls report their own
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// NVIDIA's recommended workspace for Hopper (cuBLAS docs, cublasSetWorkspace); more than enough
// before it.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

std::optional<std::string> blas_unavailable(const MatmulProblem& p, const std::optional<BlasCall>& call) {
  if (p.m() < 1 || p.n() < 1 || p.k() < 1) return "needs m, n and k of at least 1";
  if (!call)
    return "needs A, B and C row- or column-major (one unit stride, the other at least the size across it), not A " +
           p.a.str() + ", B " + p.b.str() + ", C " + p.c.str();
  return std::nullopt;
}

std::optional<std::string> cublas_unavailable(const MatmulProblem& p) {
  if (auto error = problem_error(p)) return error;
  if (p.fast_accum) return kFastAccumIsLtFp8;
  const auto call = blas_call(p);
  if (auto error = blas_unavailable(p, call)) return error;
  for (std::int64_t size : {call->rows, call->cols, call->depth, call->first.ld, call->second.ld, call->ld_out})
    if (size > INT_MAX) return "cublasGemmEx takes sizes and leading dimensions below 2^31";
  const bool tensor_cores = p.mode == ComputeMode::tf32 || p.mode == ComputeMode::bf16;
  return device_error(p, tensor_cores ? 80 : 0, std::string(compute_mode_name(p.mode)) + " GEMMs");
}

struct CublasPlan {
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
  CublasPlan() = default;
  CublasPlan(const CublasPlan&) = delete;
  CublasPlan& operator=(const CublasPlan&) = delete;
  ~CublasPlan() {
    if (handle) cublasDestroy(handle);
    cudaFree(workspace);
  }
};

Runner prepare_cublas(const MatmulProblem& p) {
  const BlasCall call = blas_call(p).value();
  check_cuda(cudaSetDevice(p.c.device.index), "cudaSetDevice");
  auto plan = std::make_shared<CublasPlan>();
  check_cublas(cublasCreate(&plan->handle), "cublasCreate");
  check_cuda(cudaMalloc(&plan->workspace, kWorkspaceBytes), "cudaMalloc of the cuBLAS workspace");
  const cudaDataType_t first_type = cuda_type(call.first_dtype), second_type = cuda_type(call.second_dtype),
                       out_type = cuda_type(p.c.dtype);
  const cublasComputeType_t compute = compute_type(p.mode);
  const bool f64 = p.mode == ComputeMode::f64;
  return [plan, call, first_type, second_type, out_type, compute, f64](Stream stream) {
    // cublasSetStream resets the workspace to the handle's default pool: set ours after it. Neither
    // allocates nor synchronizes.
    check_cublas(cublasSetStream(plan->handle, static_cast<cudaStream_t>(stream)), "cublasSetStream");
    check_cublas(cublasSetWorkspace(plan->handle, plan->workspace, kWorkspaceBytes), "cublasSetWorkspace");
    const double alpha64 = 1, beta64 = 0;
    const float alpha32 = 1, beta32 = 0;
    const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
    check_cublas(cublasGemmEx(plan->handle, call.op_first, call.op_second, int(call.rows), int(call.cols),
                              int(call.depth), alpha, call.first_data, first_type, int(call.first.ld),
                              call.second_data, second_type, int(call.second.ld), beta, call.out, out_type,
                              int(call.ld_out), compute, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  };
}

std::optional<std::string> cublaslt_unavailable(const MatmulProblem& p) {
  if (auto error = problem_error(p)) return error;
  const bool fp8 = is_fp8(p.mode);
  if (p.fast_accum && !fp8) return kFastAccumIsLtFp8;
  if (p.mode == ComputeMode::f8e5m2)
    return "cuBLASLt has no f8e5m2 x f8e5m2 GEMM (it pairs e5m2 with e4m3: f8e5m2_e4m3, f8e4m3_e5m2)";
  const auto call = blas_call(p);
  if (auto error = blas_unavailable(p, call)) return error;
  if (!fp8) return device_error(p, 80, std::string(compute_mode_name(p.mode)) + " tensor cores");
  // cuBLASLt's fp8 requirements (cuBLAS docs, cublasLtMatmul; PyTorch's _scaled_mm checks the same).
  if (call->op_first != CUBLAS_OP_T || call->op_second != CUBLAS_OP_N)
    return "cuBLASLt's fp8 GEMMs take A row-major and B column-major only (flopscope's NT, cuBLAS's TN: k "
           "contiguous in both), not A " + p.a.str() + ", B " + p.b.str();
  if (call->rows % 16 != 0 || call->depth % 16 != 0)  // cuBLAS's m and k
    return "cuBLASLt's fp8 GEMMs need k and n (m for a column-major C) multiples of 16, not m = " +
           std::to_string(p.m()) + ", n = " + std::to_string(p.n()) + ", k = " + std::to_string(p.k());
  if (call->first.ld % 16 != 0 || call->second.ld % 16 != 0 || (call->ld_out * 4) % 16 != 0 ||
      !aligned16(call->first_data) || !aligned16(call->second_data) || !aligned16(call->out))
    return "cuBLASLt's fp8 GEMMs need 16-byte aligned operands and rows, not A " + p.a.str() + ", B " +
           p.b.str() + ", C " + p.c.str();
  return device_error(p, 89, "fp8 tensor cores");
}

// Largest power of two (up to 256, cuBLASLt's default assumption) dividing the address.
std::uint32_t alignment_of(const void* address) {
  std::uint32_t alignment = 256;
  while (alignment > 1 && reinterpret_cast<std::uintptr_t>(address) % alignment != 0) alignment /= 2;
  return alignment;
}

struct LtPlan {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  void* workspace = nullptr;
  float* scales = nullptr;  // device: the first and the second operand's (fp8)
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (first) cublasLtMatrixLayoutDestroy(first);
    if (second) cublasLtMatrixLayoutDestroy(second);
    if (out) cublasLtMatrixLayoutDestroy(out);
    if (op) cublasLtMatmulDescDestroy(op);
    if (handle) cublasLtDestroy(handle);
    cudaFree(workspace);
    cudaFree(scales);
  }
};

// "algo=.. tile=.. stages=.. splitk=.. cluster=.. workspace=..": the heuristic's choice.
std::string choice_of(const cublasLtMatmulHeuristicResult_t& heuristic) {
  std::int32_t id = 0, splitk = 1;
  std::uint32_t tile = 0, stages = 0;
  std::uint16_t cluster = 0;
  std::size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&heuristic.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&heuristic.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&heuristic.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&heuristic.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&heuristic.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                       sizeof cluster, &written);
  return "algo=" + std::to_string(id) + " tile=" + std::to_string(tile) + " stages=" + std::to_string(stages) +
         " splitk=" + std::to_string(splitk) + " cluster=" + std::to_string(cluster) +
         " workspace=" + std::to_string(heuristic.workspaceSize);
}

Runner prepare_cublaslt(const MatmulProblem& p) {
  const BlasCall call = blas_call(p).value();
  check_cuda(cudaSetDevice(p.c.device.index), "cudaSetDevice");
  auto plan = std::make_shared<LtPlan>();
  check_cublas(cublasLtCreate(&plan->handle), "cublasLtCreate");
  check_cublas(cublasLtMatmulDescCreate(&plan->op, compute_type(p.mode), CUDA_R_32F), "cublasLtMatmulDescCreate");
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value, const char* what) {
    check_cublas(cublasLtMatmulDescSetAttribute(plan->op, attribute, &value, sizeof value), what);
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, call.op_first, "CUBLASLT_MATMUL_DESC_TRANSA");
  set(CUBLASLT_MATMUL_DESC_TRANSB, call.op_second, "CUBLASLT_MATMUL_DESC_TRANSB");
  if (is_fp8(p.mode)) {
    // Per-tensor scales: device pointers to f32 (the compute type), D = scale_first·scale_second·op(first)·op(second).
    check_cuda(cudaMalloc(&plan->scales, 2 * sizeof(float)), "cudaMalloc of the fp8 scales");
    const float scales[2] = {call.first_scale, call.second_scale};
    check_cuda(cudaMemcpy(plan->scales, scales, sizeof scales, cudaMemcpyHostToDevice), "cudaMemcpy of the fp8 scales");
    const float* first_scale = plan->scales;
    const float* second_scale = plan->scales + 1;
    set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, first_scale, "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER");
    set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, second_scale, "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER");
    const std::int8_t fast_accum = p.fast_accum ? 1 : 0;
    set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum, "CUBLASLT_MATMUL_DESC_FAST_ACCUM");
  }
  check_cublas(cublasLtMatrixLayoutCreate(&plan->first, cuda_type(call.first_dtype), std::uint64_t(call.first.rows),
                                          std::uint64_t(call.first.cols), call.first.ld),
               "cublasLtMatrixLayoutCreate (A)");
  check_cublas(cublasLtMatrixLayoutCreate(&plan->second, cuda_type(call.second_dtype),
                                          std::uint64_t(call.second.rows), std::uint64_t(call.second.cols),
                                          call.second.ld),
               "cublasLtMatrixLayoutCreate (B)");
  // C (beta = 0, never read) and D are the same matrix: f32, or the f16/bf16 operands' dtype.
  check_cublas(cublasLtMatrixLayoutCreate(&plan->out, cuda_type(p.c.dtype), std::uint64_t(call.rows),
                                          std::uint64_t(call.cols), call.ld_out),
               "cublasLtMatrixLayoutCreate (D)");
  check_cublas(cublasLtMatmulPreferenceCreate(&plan->preference), "cublasLtMatmulPreferenceCreate");
  auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value, const char* what) {
    check_cublas(cublasLtMatmulPreferenceSetAttribute(plan->preference, attribute, &value, sizeof value), what);
  };
  const std::uint64_t workspace_bytes = kWorkspaceBytes;
  prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes, "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES");
  // The heuristic assumes 256-byte aligned matrices unless told: tell it what these are.
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(call.first_data), "MIN_ALIGNMENT_A_BYTES");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(call.second_data), "MIN_ALIGNMENT_B_BYTES");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(call.out), "MIN_ALIGNMENT_C_BYTES");
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(call.out), "MIN_ALIGNMENT_D_BYTES");
  check_cuda(cudaMalloc(&plan->workspace, kWorkspaceBytes), "cudaMalloc of the cuBLASLt workspace");
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(plan->handle, plan->op, plan->first, plan->second, plan->out, plan->out,
                                     plan->preference, 1, &plan->heuristic, &found);
  const std::string what = "cuBLASLt " + std::string(compute_mode_name(p.mode)) + " GEMM of m = " +
                           std::to_string(p.m()) + ", n = " + std::to_string(p.n()) + ", k = " + std::to_string(p.k());
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(what + ": cublasLtMatmulAlgoGetHeuristic: " + status_text(status));
  if (found == 0) throw std::runtime_error(what + ": cublasLtMatmulAlgoGetHeuristic found no algorithm");
  if (p.choice) *p.choice = choice_of(plan->heuristic);
  return [plan, call](Stream stream) {
    const float alpha = 1, beta = 0;
    check_cublas(cublasLtMatmul(plan->handle, plan->op, &alpha, call.first_data, plan->first, call.second_data,
                                plan->second, &beta, call.out, plan->out, call.out, plan->out, &plan->heuristic.algo,
                                plan->workspace, kWorkspaceBytes, static_cast<cudaStream_t>(stream)),
                 "cublasLtMatmul");
  };
}

// ---- the table -------------------------------------------------------------------------------

const MatmulInfo kOwn{};

const std::array<MatmulVariant, 6> kVariants = {{
    {"naive", "one thread per output, operands read through their strides from global memory", Device::Kind::cuda,
     naive_unavailable, direct<MatmulProblem, run_naive>, takes_naive, kOwn, Role::reference},
    {"smem", "32x32 tiles of A and B in shared memory, each element reused 32 times", Device::Kind::cuda,
     smem_unavailable, direct<MatmulProblem, run_smem>, takes_smem, kOwn, Role::own, {.shares_memory = true}},
    {"regblock", "128x128x8 block tiles, 8x8 outputs per thread in registers, float4 loads", Device::Kind::cuda,
     regblock_unavailable, direct<MatmulProblem, run_regblock>, takes_regblock, kOwn, Role::own,
     {.shares_memory = true}},
    {"mma", "tensor cores by warp-level mma.sync m16n8k16 (Ampere-style, not Hopper's wgmma/TMA), 128x128x32 tiles, "
            "3-stage cp.async, ldmatrix",
     Device::Kind::cuda,
     mma_unavailable, direct<MatmulProblem, run_mma>, takes_mma, kOwn, Role::own, {.speed = 1, .shares_memory = true}},
    {"cublas", "cublasGemmEx (torch.matmul's call), tf32 by CUBLAS_COMPUTE_32F_FAST_TF32", Device::Kind::cuda,
     cublas_unavailable, prepare_cublas, takes_cublas, {.library = "cuBLAS"}, Role::vendor},
    {"cublaslt", "cublasLtMatmul, the heuristic's first algorithm; fp8 with per-tensor scales", Device::Kind::cuda,
     cublaslt_unavailable, prepare_cublaslt, takes_cublaslt, {.library = "cuBLASLt", .fast_accum = true}, Role::vendor},
}};

}  // namespace

std::span<const MatmulVariant> cuda_matmul_variants() { return kVariants; }

}  // namespace flopscope::kernels
