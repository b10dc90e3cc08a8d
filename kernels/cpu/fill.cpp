#include "flopscope/kernels/fill.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <atomic>
#include <fstream>
#include <regex>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "flopscope/kernels/hash.hpp"
#include "flopscope/strided.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope::kernels {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
std::atomic<bool> huge_pages_on{false};
}  // namespace

void set_huge_pages(bool on) { huge_pages_on = on; }
bool huge_pages() { return huge_pages_on; }

std::string transparent_huge_pages_mode() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!file || !std::getline(file, line)) return "";
  std::smatch chosen;  // "always [madvise] never": the bracketed word is the mode
  return std::regex_search(line, chosen, std::regex(R"(\[(\w+)\])")) ? chosen[1].str() : "";
}

HostBuffer::HostBuffer(std::size_t size) : bytes(size) {
  const bool huge = huge_pages() && size >= kHugePage;
  const std::size_t unit = huge ? kHugePage : 64;
  const std::size_t rounded = (std::max<std::size_t>(size, 1) + unit - 1) / unit * unit;
  if (rounded < size) throw std::bad_alloc();  // the rounding wrapped
  data = static_cast<unsigned char*>(std::aligned_alloc(unit, rounded));
  if (!data) throw std::bad_alloc();
  if (huge) madvise(data, rounded, MADV_HUGEPAGE);  // a request: where refused, the system's pages
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < rounded; i += 4096) data[i] = 0;
}

HostBuffer::~HostBuffer() { std::free(data); }

void fill_random_bytes(void* data, std::size_t bytes, std::uint64_t seed) {
  auto* out = static_cast<unsigned char*>(data);
  const std::size_t words = bytes / 8;
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint64_t z = hash_index(seed, i);
    std::memcpy(out + i * 8, &z, 8);
  }
  for (std::size_t i = words * 8; i < bytes; ++i) out[i] = static_cast<unsigned char>(0x5A + i);
}

namespace {

// Calls set(address, row-major index) for every element of `tensor`, in parallel over the
// outermost dimension where there is one.
template <class Set>
void for_each_element(const TensorRef& tensor, Set&& set) {
  const auto size = static_cast<std::int64_t>(tensor.element_size());
  auto* base = static_cast<unsigned char*>(tensor.data);
  if (tensor.is_contiguous()) {
    const std::int64_t count = tensor.numel();
    unsigned char* first = base + tensor.offset * size;
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < count; ++i) set(first + i * size, i);
    return;
  }
  const Shape shape(tensor.shape().begin(), tensor.shape().end());
  std::int64_t index = 0;
  for (StridedIterator it(shape, {Strides(tensor.stride_list().begin(), tensor.stride_list().end())}, {tensor.offset});
       !it.done(); it.next())
    set(base + it.offset(0) * size, index++);
}

}  // namespace

void fill_uniform(const TensorRef& tensor, std::uint64_t seed) {
  for_each_element(tensor, [&](unsigned char* address, std::int64_t i) {
    const double unit = double(hash_index(seed, std::uint64_t(i)) >> 11) * 0x1p-53;  // [0, 1)
    store_element(address, tensor.dtype, 2 * unit - 1);
  });
}

void fill_small_integers(const TensorRef& tensor, std::uint64_t seed) {
  for_each_element(tensor, [&](unsigned char* address, std::int64_t i) {
    store_element(address, tensor.dtype, small_integer(std::uint64_t(i), seed));
  });
}

}  // namespace flopscope::kernels
