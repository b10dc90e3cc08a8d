// Strided copies on a CUDA device: dst (contiguous) = src (any view), .contiguous() of a view.
// strided.hpp says how a problem becomes a plan of rows, a transpose or a gather; elements move
// as bits (unsigned integers of their size).
//
// Variants:
//   naive        one thread per output element (grid-stride), its index decoded over the plan's
//                dimensions (in 32 bits where every index fits), one element read at src's
//                strides: coalesced writes, reads as scattered as the view. Every kind of view.
//   smem         transposes through 32 x 32 shared-memory tiles (blocks of 32 x 8 threads, 4
//                elements each): reads along src rows and writes along dst rows, both coalesced;
//                the tile's columns are read with 32-way bank conflicts. Other views: naive.
//   smem_padded  smem with tile rows of 33 elements: the column reads hit 32 different banks.
//   smem_vec     transposes in padded tiles of 32 src rows x 8 16-byte vectors, one 16-byte load
//                and one 16-byte store per thread (coarsened: 16 / element size elements each,
//                packed from a column of the tile), the best published scheme; rows (split and
//                merge heads) copied in 16-byte vectors. Where operands are not 16-byte aligned
//                (row pitches, starts), smem_padded's transpose and naive's rows; gathers: naive.
//   cublas_geam  cuBLAS's geam, C = 1 * A^T + 0 * C, on f32 and f64 2-D transposes (the vendor's
//                transpose; it computes, so NaNs come out canonical).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "flopscope/kernels/index_width.hpp"
#include "flopscope/kernels/strided.hpp"
#include "launch.cuh"

namespace flopscope::kernels {

namespace {

constexpr int kThreads = 256;

// A StridedPlan with plain arrays (std::array's operator[] is host code).
struct DevicePlan {
  int dims;
  std::int64_t numel;
  std::int64_t sizes[kMaxDims], src_strides[kMaxDims];
};

DevicePlan device_plan(const StridedPlan& plan) {
  DevicePlan d{plan.dims, plan.numel, {}, {}};
  for (int i = 0; i < plan.dims; ++i) {
    d.sizes[i] = plan.sizes[i];
    d.src_strides[i] = plan.src_strides[i];
  }
  return d;
}

// ---- naive ----

// Index: int32 where every index fits (fits_int32), else int64; the plan's sizes and strides are
// narrowed to it in the loop (a size-1 dimension's stride is multiplied by 0 only).
template <class T, class Index>
__global__ void naive_kernel(T* __restrict__ dst, const T* __restrict__ src, DevicePlan plan) {
  const Index numel = Index(plan.numel);
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); i < numel;
       i += Index(gridDim.x) * Index(blockDim.x)) {
    Index rest = i, offset = 0;
    for (int d = plan.dims - 1; d >= 0; --d) {
      const Index size = Index(plan.sizes[d]);
      offset += rest % size * Index(plan.src_strides[d]);
      rest /= size;
    }
    dst[i] = src[offset];
  }
}

template <class T>
void run_naive(const StridedPlan& plan, void* dst, const void* src, cudaStream_t stream) {
  const unsigned blocks = grid_blocks(plan.numel, kThreads);
  DevicePlan device = device_plan(plan);
  std::int64_t largest = 0;
  for (int d = 0; d < device.dims; ++d) {
    if (device.sizes[d] == 1) device.src_strides[d] = 0;
    largest += (device.sizes[d] - 1) * device.src_strides[d];
  }
  if (fits_int32(plan.numel, std::int64_t(blocks) * kThreads, std::max(largest, plan.numel)))
    naive_kernel<T, std::int32_t><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), device);
  else
    naive_kernel<T, std::int64_t><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), device);
}

// ---- transposes ----

// out[r][c] = in[c * S + r] over the pivot (r < rows) and innermost (c < cols) dimensions, for
// each index of the other (batch) dimensions.
struct TransposeArgs {
  std::int64_t rows, cols, S, D;
  int batch_dims;
  std::int64_t batch;  // product of the batch sizes
  std::int64_t batch_sizes[kMaxDims], batch_src[kMaxDims], batch_dst[kMaxDims];
};

TransposeArgs transpose_args(const StridedPlan& plan) {
  TransposeArgs t{};
  const int p = plan.pivot, in = plan.dims - 1;
  t.rows = plan.sizes[p];
  t.cols = plan.sizes[in];
  t.S = plan.src_strides[in];
  t.D = plan.dst_strides[p];
  t.batch = 1;
  for (int d = 0; d < plan.dims; ++d) {
    if (d == p || d == in) continue;
    t.batch_sizes[t.batch_dims] = plan.sizes[d];
    t.batch_src[t.batch_dims] = plan.src_strides[d];
    t.batch_dst[t.batch_dims] = plan.dst_strides[d];
    t.batch *= plan.sizes[d];
    ++t.batch_dims;
  }
  return t;
}

__device__ __forceinline__ void batch_offsets(const TransposeArgs& t, std::int64_t b, std::int64_t& src,
                                              std::int64_t& dst) {
  src = dst = 0;
  for (int d = t.batch_dims - 1; d >= 0; --d) {
    const std::int64_t i = b % t.batch_sizes[d];
    b /= t.batch_sizes[d];
    src += i * t.batch_src[d];
    dst += i * t.batch_dst[d];
  }
}

constexpr int kTile = 32, kTileRows = 8;  // 32 x 32 tiles, 32 x 8 threads

// One 32 x 32 tile at (r0, c0), element by element, rows below r_end only; PITCH 32 (smem) or 33
// (padded). 32 x 8 threads.
template <class T, int PITCH>
__device__ __forceinline__ void transpose_tile(T* __restrict__ dst, const T* __restrict__ src, const TransposeArgs& t,
                                               std::int64_t r0, std::int64_t c0, std::int64_t r_end, T (*tile)[PITCH]) {
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (int j = ty; j < kTile; j += kTileRows) {  // src row c0 + j, elements r0 + tx
    const std::int64_t c = c0 + j, r = r0 + tx;
    if (c < t.cols && r < r_end) tile[j][tx] = src[c * t.S + r];
  }
  __syncthreads();
  for (int j = ty; j < kTile; j += kTileRows) {  // dst row r0 + j, elements c0 + tx
    const std::int64_t r = r0 + j, c = c0 + tx;
    if (r < r_end && c < t.cols) dst[r * t.D + c] = tile[tx][j];
  }
  __syncthreads();
}

template <class T, int PITCH>
__global__ void __launch_bounds__(kTile* kTileRows) transpose_kernel(T* __restrict__ dst, const T* __restrict__ src,
                                                                       TransposeArgs t) {
  __shared__ T tile[kTile][PITCH];
  const std::int64_t row_tiles = (t.rows + kTile - 1) / kTile, col_tiles = (t.cols + kTile - 1) / kTile;
  for (std::int64_t item = blockIdx.x; item < t.batch * row_tiles * col_tiles; item += gridDim.x) {
    const std::int64_t ct = item % col_tiles, rt = item / col_tiles % row_tiles, b = item / col_tiles / row_tiles;
    std::int64_t src_offset, dst_offset;
    batch_offsets(t, b, src_offset, dst_offset);
    transpose_tile<T, PITCH>(dst + dst_offset, src + src_offset, t, rt * kTile, ct * kTile, t.rows, tile);
  }
}

template <class T, int PITCH>
void run_transpose(const StridedPlan& plan, void* dst, const void* src, cudaStream_t stream) {
  const TransposeArgs t = transpose_args(plan);
  const std::int64_t tiles = t.batch * ((t.rows + kTile - 1) / kTile) * ((t.cols + kTile - 1) / kTile);
  transpose_kernel<T, PITCH><<<grid_blocks(tiles, 1), kTile * kTileRows, 0, stream>>>(static_cast<T*>(dst),
                                                                                 static_cast<const T*>(src), t);
}

// ---- smem_vec: 16-byte vectors ----
//
// A tile is 32 src rows (c) x 8 vectors of VEC = 16 / sizeof(T) elements (r): 256 threads, each
// loads one 16-byte vector of a src row (a warp: 4 rows x 8 vectors, 128 coalesced bytes a row)
// into a shared tile of rows 8 * VEC + 4 / sizeof(T) elements long (one 4-byte word of padding,
// 8 bytes for f64): row pitch 33 words for 1-, 2- and 4-byte elements, so the packing reads below
// of 4-byte elements hit 32 banks. Each thread then packs VEC elements of a tile column into one
// 16-byte vector of a dst row (a dst row of 32 elements is 2 * sizeof(T) vectors) and stores it.

template <class T>
struct VecTile {
  static constexpr int vec = 16 / int(sizeof(T));
  static constexpr int pad = sizeof(T) < 4 ? 4 / int(sizeof(T)) : 1;
  static constexpr int width = 8 * vec;  // src elements (r) per tile row
  static constexpr int pitch = width + pad;
  static constexpr int dst_vectors = 2 * int(sizeof(T));  // 16-byte vectors per dst row of 32
};

template <class T>
union Pack16 {
  uint4 vector;
  T elements[VecTile<T>::vec];
  std::uint32_t words[4];
};

template <class T>
__global__ void __launch_bounds__(kThreads) transpose_vec_kernel(T* __restrict__ dst, const T* __restrict__ src,
                                                                   TransposeArgs t) {
  using V = VecTile<T>;
  __shared__ __align__(16) T tile[kTile][V::pitch];
  __shared__ T edge[kTile][kTile + 1];
  const std::int64_t row_tiles = (t.rows + V::width - 1) / V::width, col_tiles = (t.cols + kTile - 1) / kTile;
  for (std::int64_t item = blockIdx.x; item < t.batch * row_tiles * col_tiles; item += gridDim.x) {
    const std::int64_t ct = item % col_tiles, rt = item / col_tiles % row_tiles, b = item / col_tiles / row_tiles;
    std::int64_t src_offset, dst_offset;
    batch_offsets(t, b, src_offset, dst_offset);
    const std::int64_t r0 = rt * V::width, c0 = ct * kTile;
    if (r0 + V::width > t.rows || c0 + kTile > t.cols) {  // a partial tile: 32 x 32 element tiles
      const std::int64_t r_end = r0 + V::width < t.rows ? r0 + V::width : t.rows;
      for (int r = 0; r < V::width; r += kTile)
        transpose_tile<T, kTile + 1>(dst + dst_offset, src + src_offset, t, r0 + r, c0, r_end, edge);
      continue;
    }
    {  // load: thread -> src row c0 + threadIdx.x / 8, vector threadIdx.x % 8
      const int c = threadIdx.x / 8, v = threadIdx.x % 8;
      Pack16<T> in;
      in.vector = *reinterpret_cast<const uint4*>(src + src_offset + (c0 + c) * t.S + r0 + v * V::vec);
      auto* row = reinterpret_cast<std::uint32_t*>(&tile[c][0]);
      for (int w = 0; w < 4; ++w) row[v * 4 + w] = in.words[w];
    }
    __syncthreads();
    {  // store: thread -> dst row r0 + threadIdx.x / dst_vectors, vector threadIdx.x % dst_vectors
      const int r = threadIdx.x / V::dst_vectors, j = threadIdx.x % V::dst_vectors;
      Pack16<T> out;
      for (int k = 0; k < V::vec; ++k) out.elements[k] = tile[j * V::vec + k][r];
      *reinterpret_cast<uint4*>(dst + dst_offset + (r0 + r) * t.D + c0 + j * V::vec) = out.vector;
    }
    __syncthreads();
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

// smem_vec's transpose needs 16-byte aligned src and dst rows.
bool vec_transpose_applies(const StridedPlan& plan, const void* dst, const void* src) {
  const TransposeArgs t = transpose_args(plan);
  const std::int64_t e = plan.element_size;
  bool aligned = aligned16(dst) && aligned16(src) && (t.S * e) % 16 == 0 && (t.D * e) % 16 == 0;
  for (int d = 0; d < t.batch_dims; ++d)
    aligned = aligned && (t.batch_src[d] * e) % 16 == 0 && (t.batch_dst[d] * e) % 16 == 0;
  return aligned;
}

template <class T>
void run_transpose_vec(const StridedPlan& plan, void* dst, const void* src, cudaStream_t stream) {
  const TransposeArgs t = transpose_args(plan);
  const std::int64_t tiles = t.batch * ((t.rows + VecTile<T>::width - 1) / VecTile<T>::width) * ((t.cols + kTile - 1) / kTile);
  transpose_vec_kernel<T><<<grid_blocks(tiles, 1), kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), t);
}

// Rows of `length` elements (16-byte multiples, aligned): one 16-byte vector per thread per step.
struct RowArgs {
  std::int64_t vectors, row_vectors;  // all of them, per row
  int outer_dims;
  std::int64_t outer_sizes[kMaxDims], outer_src[kMaxDims];  // in 16-byte vectors
};

__global__ void rows_vec_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, RowArgs a) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < a.vectors;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t row = i / a.row_vectors, offset = i % a.row_vectors;
    for (int d = a.outer_dims - 1; d >= 0; --d) {
      offset += row % a.outer_sizes[d] * a.outer_src[d];
      row /= a.outer_sizes[d];
    }
    dst[i] = src[offset];
  }
}

// The rows of a plan in 16-byte vectors, or nullopt where they are not whole aligned vectors.
std::optional<RowArgs> row_args(const StridedPlan& plan, const void* dst, const void* src) {
  const std::int64_t e = plan.element_size;
  const int inner = plan.dims - 1;
  if (inner < 0 || (plan.sizes[inner] * e) % 16 != 0 || !aligned16(dst) || !aligned16(src)) return std::nullopt;
  RowArgs a{};
  a.vectors = plan.numel * e / 16;
  a.row_vectors = plan.sizes[inner] * e / 16;
  for (int d = 0; d < inner; ++d) {
    if ((plan.src_strides[d] * e) % 16 != 0) return std::nullopt;
    a.outer_sizes[a.outer_dims] = plan.sizes[d];
    a.outer_src[a.outer_dims] = plan.src_strides[d] * e / 16;
    ++a.outer_dims;
  }
  return a;
}

// ---- the variants ----

enum class Scheme { naive, smem, smem_padded, smem_vec };

template <class T>
void run_scheme(Scheme scheme, const StridedPlan& plan, void* dst, const void* src, cudaStream_t stream) {
  if (plan.kind == StridedPlan::Kind::transpose && scheme != Scheme::naive) {
    if (scheme == Scheme::smem) return run_transpose<T, kTile>(plan, dst, src, stream);
    if (scheme == Scheme::smem_vec && vec_transpose_applies(plan, dst, src))
      return run_transpose_vec<T>(plan, dst, src, stream);
    return run_transpose<T, kTile + 1>(plan, dst, src, stream);
  }
  if (plan.kind == StridedPlan::Kind::rows && scheme == Scheme::smem_vec)
    if (const auto rows = row_args(plan, dst, src)) {
      rows_vec_kernel<<<grid_blocks(rows->vectors, kThreads), kThreads, 0, stream>>>(static_cast<uint4*>(dst),
                                                                                static_cast<const uint4*>(src), *rows);
      return;
    }
  run_naive<T>(plan, dst, src, stream);
}

template <Scheme S>
void strided_cuda(const CopyProblem& p, Stream stream) {
  const StridedPlan plan = plan_strided_copy(p);
  if (plan.numel == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  void* dst = p.dst.element_data();
  const void* src = p.src.element_data();
  switch (plan.element_size) {
    case 1: return run_scheme<std::uint8_t>(S, plan, dst, src, s);
    case 2: return run_scheme<std::uint16_t>(S, plan, dst, src, s);
    case 4: return run_scheme<std::uint32_t>(S, plan, dst, src, s);
    case 8: return run_scheme<std::uint64_t>(S, plan, dst, src, s);
  }
  throw std::invalid_argument("strided copy: elements of " + std::to_string(plan.element_size) + " bytes");
}

// ---- cuBLAS geam ----

std::string cublas_error(const char* call, cublasStatus_t status) {
  return std::string(call) + ": " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")";
}

// A 2-D transpose of f32 or f64 whose sizes and leading dimensions fit cuBLAS's ints.
bool geam_applies(const CopyProblem& p) {
  if (p.src.dtype != DType::f32 && p.src.dtype != DType::f64) return false;
  const StridedPlan plan = plan_strided_copy(p);
  return plan.kind == StridedPlan::Kind::transpose && plan.dims == 2 && plan.sizes[0] <= INT_MAX &&
         plan.sizes[1] <= INT_MAX && plan.src_strides[1] <= INT_MAX;
}

Runner geam_prepare(const CopyProblem& p) {
  const StridedPlan plan = plan_strided_copy(p);
  cublasHandle_t raw = nullptr;
  if (const cublasStatus_t status = cublasCreate(&raw); status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(cublas_error("cublasCreate", status));
  const std::shared_ptr<cublasContext> handle(raw, cublasDestroy);
  // dst (rows x cols, row-major) is column-major cols x rows, ld cols; src (element (r, c) at
  // c * S + r) is column-major rows x cols, ld S, transposed. C = B (in place, allowed with
  // transb = N and ldb = ldc) with beta = 0.
  const int rows = static_cast<int>(plan.sizes[0]), cols = static_cast<int>(plan.sizes[1]);
  const int lda = static_cast<int>(plan.src_strides[1]);
  void* dst = p.dst.element_data();
  const void* src = p.src.element_data();
  const bool f64 = p.src.dtype == DType::f64;
  return [handle, rows, cols, lda, dst, src, f64](Stream stream) {
    cublasSetStream(handle.get(), static_cast<cudaStream_t>(stream));
    cublasStatus_t status;
    if (f64) {
      const double one = 1, zero = 0;
      auto* c = static_cast<double*>(dst);
      status = cublasDgeam(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, cols, rows, &one, static_cast<const double*>(src),
                           lda, &zero, c, cols, c, cols);
    } else {
      const float one = 1, zero = 0;
      auto* c = static_cast<float*>(dst);
      status = cublasSgeam(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, cols, rows, &one, static_cast<const float*>(src),
                           lda, &zero, c, cols, c, cols);
    }
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(cublas_error("cublas geam", status));
  };
}

constexpr std::array<CopyVariant, 5> kVariants = {{
    {"naive", "one thread per output element, src read at its strides", Device::Kind::cuda,
     needs_contiguous_destination, direct<CopyProblem, strided_cuda<Scheme::naive>>},
    {"smem", "transposes through 32 x 32 shared-memory tiles (bank conflicts); others naive", Device::Kind::cuda,
     needs_contiguous_destination, direct<CopyProblem, strided_cuda<Scheme::smem>>, nullptr, {}, Role::own,
     {.shares_memory = true}},
    {"smem_padded", "transposes through 32 x 33 shared-memory tiles (no bank conflicts); others naive",
     Device::Kind::cuda, needs_contiguous_destination, direct<CopyProblem, strided_cuda<Scheme::smem_padded>>, nullptr, {},
     Role::own, {.shares_memory = true}},
    {"smem_vec", "padded tiles, 16-byte loads and stores, 16 bytes of elements per thread; rows in 16-byte vectors",
     Device::Kind::cuda, needs_contiguous_destination, direct<CopyProblem, strided_cuda<Scheme::smem_vec>>, nullptr, {},
     Role::own, {.shares_memory = true}},
    {"cublas_geam", "cuBLAS geam (C = A^T), f32 and f64 2-D transposes (vendor)", Device::Kind::cuda,
     needs_contiguous_destination, geam_prepare, geam_applies, {}, Role::vendor, {.values_not_bits = true}},
}};

}  // namespace

std::span<const CopyVariant> cuda_strided_variants() { return kVariants; }

}  // namespace flopscope::kernels
