// Contiguous copy on the CPU.
//
// Variants:
//   memcpy      libc memcpy, one call on one thread: what a user writes; the baseline.
//   memcpy_omp  libc memcpy on one chunk per OpenMP thread: the baseline, threaded.
//   rep_movsb   `rep movsb` on one chunk per OpenMP thread: the string instruction that glibc's
//               memcpy itself uses for large blocks on CPUs with ERMS (fast strings); the
//               microcode picks its own access width and store protocol.
//   simd        own kernel: one chunk per OpenMP thread, the widest vectors the CPU has
//               (AVX-512, else AVX2, chosen at run time), and non-temporal (streaming) stores
//               when source and destination together exceed the last-level cache, so that the destination
//               is not read for ownership (write-allocate) and does not evict the source.
#include "flopscope/kernels/copy.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "flopscope/cpu_info.hpp"
#include "flopscope/strided.hpp"
#include "parallel.hpp"

namespace flopscope::kernels {

void copy_reference(const CopyProblem& problem) {
  const TensorRef &dst = problem.dst, &src = problem.src;
  if (!std::equal(dst.shape().begin(), dst.shape().end(), src.shape().begin(), src.shape().end()) ||
      dst.element_size() != src.element_size())
    throw std::invalid_argument("copy_reference: " + dst.str() + " <- " + src.str());
  const std::int64_t size = static_cast<std::int64_t>(dst.element_size());
  auto* out = static_cast<unsigned char*>(dst.data);
  const auto* in = static_cast<const unsigned char*>(src.data);
  const Shape shape(dst.shape().begin(), dst.shape().end());
  StridedIterator it(shape, {Strides(dst.stride_list().begin(), dst.stride_list().end()),
                             Strides(src.stride_list().begin(), src.stride_list().end())},
                     {dst.offset, src.offset});
  for (; !it.done(); it.next())
    for (std::int64_t b = 0; b < size; ++b) out[it.offset(0) * size + b] = in[it.offset(1) * size + b];
}

std::optional<std::string> needs_contiguous(const CopyProblem& problem) {
  const TensorRef &dst = problem.dst, &src = problem.src;
  if (!dst.is_contiguous() || !src.is_contiguous())
    return "needs contiguous operands (" + dst.str() + " <- " + src.str() + ")";
  if (dst.numel() != src.numel() || dst.element_size() != src.element_size())
    return "operands differ in size (" + dst.str() + " <- " + src.str() + ")";
  return std::nullopt;
}

std::size_t cpu_streaming_threshold_bytes() {
  static const std::size_t threshold = [] {
    const CpuInfo& cpu = this_cpu();
    std::size_t llc = cpu.l3_bytes ? cpu.l3_bytes : cpu.l2_bytes;
    return llc ? llc : std::size_t{32} << 20;
  }();
  return threshold;
}

namespace {

// One chunk per thread, boundaries on cache lines; small copies stay on one thread.
template <typename ChunkFn>
void for_each_thread_chunk(std::size_t bytes, ChunkFn&& chunk_fn) {
  parallel_chunks(bytes, 64, std::size_t{1} << 16, chunk_fn);
}

std::size_t bytes_of(const CopyProblem& p) { return std::size_t(p.src.numel()) * p.src.element_size(); }

void copy_memcpy(const CopyProblem& p, Stream) {
  if (const std::size_t bytes = bytes_of(p)) std::memcpy(p.dst.element_data(), p.src.element_data(), bytes);
}

void memcpy_threaded(unsigned char* out, const unsigned char* in, std::size_t bytes) {
  for_each_thread_chunk(bytes, [&](std::size_t begin, std::size_t n) { std::memcpy(out + begin, in + begin, n); });
}

void copy_memcpy_omp(const CopyProblem& p, Stream) {
  memcpy_threaded(p.dst.ptr<unsigned char>(), p.src.ptr<unsigned char>(), bytes_of(p));
}

void copy_rep_movsb(const CopyProblem& p, Stream) {
  auto* out = p.dst.ptr<unsigned char>();
  const auto* in = p.src.ptr<unsigned char>();
  for_each_thread_chunk(bytes_of(p), [&](std::size_t begin, std::size_t n) {
    unsigned char* d = out + begin;
    const unsigned char* s = in + begin;
    asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
  });
}

// Copies the bytes before `out` reaches `alignment`, returns how many.
std::size_t copy_head(unsigned char* out, const unsigned char* in, std::size_t bytes, std::size_t alignment) {
  std::size_t misalignment = reinterpret_cast<std::uintptr_t>(out) & (alignment - 1);
  std::size_t head = misalignment ? std::min(bytes, alignment - misalignment) : 0;
  std::memcpy(out, in, head);
  return head;
}

__attribute__((target("avx512f"))) void chunk_avx512(unsigned char* out, const unsigned char* in,
                                                      std::size_t bytes, bool streaming) {
  std::size_t i = copy_head(out, in, bytes, 64);
  // Four 64-byte vectors per iteration: enough loads in flight to cover the memory latency.
  if (streaming) {
    for (; i + 256 <= bytes; i += 256) {
      __m512i a = _mm512_loadu_si512(in + i), b = _mm512_loadu_si512(in + i + 64);
      __m512i c = _mm512_loadu_si512(in + i + 128), d = _mm512_loadu_si512(in + i + 192);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i), a);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i + 64), b);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i + 128), c);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i + 192), d);
    }
    _mm_sfence();  // streaming stores are weakly ordered: fence before anyone reads dst
  } else {
    for (; i + 256 <= bytes; i += 256) {
      __m512i a = _mm512_loadu_si512(in + i), b = _mm512_loadu_si512(in + i + 64);
      __m512i c = _mm512_loadu_si512(in + i + 128), d = _mm512_loadu_si512(in + i + 192);
      _mm512_store_si512(out + i, a);
      _mm512_store_si512(out + i + 64, b);
      _mm512_store_si512(out + i + 128, c);
      _mm512_store_si512(out + i + 192, d);
    }
  }
  std::memcpy(out + i, in + i, bytes - i);
}

__attribute__((target("avx2"))) void chunk_avx2(unsigned char* out, const unsigned char* in, std::size_t bytes,
                                                bool streaming) {
  std::size_t i = copy_head(out, in, bytes, 32);
  if (streaming) {
    for (; i + 128 <= bytes; i += 128) {
      __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
      __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 32));
      __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 64));
      __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 96));
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i), a);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i + 32), b);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i + 64), c);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i + 96), d);
    }
    _mm_sfence();
  } else {
    for (; i + 128 <= bytes; i += 128) {
      __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
      __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 32));
      __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 64));
      __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 96));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + i), a);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + i + 32), b);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + i + 64), c);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + i + 96), d);
    }
  }
  std::memcpy(out + i, in + i, bytes - i);
}

void copy_simd(const CopyProblem& p, Stream) {
  auto* out = p.dst.ptr<unsigned char>();
  const auto* in = p.src.ptr<unsigned char>();
  const std::size_t bytes = bytes_of(p);
  const bool streaming = 2 * bytes > cpu_streaming_threshold_bytes();  // src + dst do not fit
  static const auto chunk = !cpu_lacks({"avx512f"}) ? chunk_avx512 : !cpu_lacks({"avx2"}) ? chunk_avx2 : nullptr;
  if (!chunk) {
    memcpy_threaded(out, in, bytes);
    return;
  }
  for_each_thread_chunk(bytes, [&](std::size_t begin, std::size_t chunk_bytes) {
    chunk(out + begin, in + begin, chunk_bytes, streaming);
  });
}

constexpr CopyVariant kVariants[] = {
    {"memcpy", "libc memcpy, one call on one thread (baseline)", Device::Kind::cpu, needs_contiguous,
     direct<CopyProblem, copy_memcpy>, nullptr, {}, Role::baseline},
    {"memcpy_omp", "libc memcpy, one chunk per OpenMP thread", Device::Kind::cpu, needs_contiguous,
     direct<CopyProblem, copy_memcpy_omp>},
    {"rep_movsb", "rep movsb (ERMS fast strings) on one chunk per OpenMP thread", Device::Kind::cpu, needs_contiguous,
     direct<CopyProblem, copy_rep_movsb>},
    {"simd", "AVX-512/AVX2 loads and stores per OpenMP thread, streaming stores above the LLC size",
     Device::Kind::cpu, needs_contiguous, direct<CopyProblem, copy_simd>, nullptr, {}, Role::own, {.speed = 1}},
#ifdef FLOPSCOPE_THROWAWAY_VARIANT  // the README's variant recipe, done by scripts/recipes_check.sh's build only
    {"throwaway_copy", "memcpy_omp's function in a row of its own", Device::Kind::cpu, needs_contiguous,
     direct<CopyProblem, copy_memcpy_omp>},
#endif
};

}  // namespace

std::span<const CopyVariant> cpu_copy_variants() { return kVariants; }

}  // namespace flopscope::kernels
