// The one shape of a kernel table, for every op family and every device (BabelStream's kernel
// table, llm.c's numbered variants): each variant is a name, a one-line description, the device it
// runs on, whether it can run a given problem here (and why not), and how to run it. A family
// declares its problem type (the TensorRefs and options of one call) in its kernels/ header and
// lists its variants in one table per device file, so that adding a variant is one function and
// one row. CUDA tables live in the .cu files; builds without CUDA get empty ones, so no name is
// written twice.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "flopscope/device.hpp"

namespace flopscope::kernels {

// Where device work is queued: a cudaStream_t on a CUDA device (passed as void* so that plain C++
// can hold it), nullptr on the CPU, whose kernels run synchronously.
using Stream = void*;

// The timed call of one prepared problem: everything a variant does once per problem (plans,
// descriptors, workspaces) is done before, and what the call does is what is measured.
using Runner = std::function<void(Stream)>;

// `Info` is what a family records of each variant beyond the common shape (peak kernels: their
// instruction and chain count); most families have none.
struct NoInfo {};

// What a variant is there for, beside the others of its table (the report sets own kernels
// against the vendor's and the baseline's; a reference validates and is rarely timed):
//   own        flopscope's kernel (the default)
//   vendor     a library's call: oneDNN, OpenBLAS, cuBLAS, cuBLASLt
//   reference  the deliberately simple loop the others are checked against
//   baseline   what the others of the family are set against (memcpy beside the copies)
enum class Role { own, vendor, reference, baseline };

constexpr std::string_view role_name(Role role) {
  switch (role) {
    case Role::vendor: return "vendor";
    case Role::reference: return "reference";
    case Role::baseline: return "baseline";
    case Role::own: break;
  }
  return "own";
}

// What code outside a family's own bench picks a row by, so that no name is typed twice:
//   speed            0: never picked for speed. Else, among the rows that take a problem and can
//                    run it here, the highest is "the fastest" (fastest()): what networks run
//                    through, the copy measured beside other families, --roles=fastest.
//   checker          validates the family's cases past the reference's size limit (fast, and
//                    checked against the reference by the tests).
//   values_not_bits  computes its output (a vendor's 1·A^T) rather than moving bits, so NaN
//                    payloads may change: its inputs are ordinary numbers, not random bits.
struct RowTraits {
  int speed = 0;
  bool checker = false;
  bool values_not_bits = false;
  // The kernel shares memory between threads (shared-memory tiles, barriers, mma fragments staged
  // through shared memory): compute-sanitizer's racecheck and synccheck cover these rows (the
  // suites select them by `--roles=shares_memory`).
  bool shares_memory = false;
};

template <class Problem, class Info = NoInfo>
struct Variant {
  std::string_view name;         // [a-z0-9_]+: in case names and --variants
  std::string_view description;  // one line: what it changes, and why
  Device::Kind device;
  // nullopt where this variant can run `problem` here; else why not, one line ("this CPU lacks
  // avx512_bf16", "cuBLASLt has no f8e5m2 x f8e5m2 GEMM"): the case is then a skip saying so.
  std::optional<std::string> (*unavailable)(const Problem& problem);
  // Prepares `problem` and returns its timed call. Throws std::runtime_error (with the vendor's
  // message) where preparation fails on a problem that unavailable() accepted.
  Runner (*prepare)(const Problem& problem);
  // nullptr: the variant takes every problem of its family. Else false for a combination that
  // does not exist at all (an f16-only conversion asked for bf16), which a suite leaves out
  // rather than lists as a skip. Availability on this machine is unavailable()'s business.
  bool (*applies)(const Problem& problem) = nullptr;
  Info info{};
  Role role = Role::own;
  RowTraits traits{};

  bool takes(const Problem& problem) const { return applies == nullptr || applies(problem); }
};

// For the many variants that need no preparation: Fn(problem, stream) wrapped as a Runner.
//   {"simd", "...", Device::Kind::cpu, always, direct<Problem, copy_simd>}
template <class Problem, void (*Fn)(const Problem&, Stream)>
Runner direct(const Problem& problem) {
  return [problem](Stream stream) { Fn(problem, stream); };
}

template <class Problem>
std::optional<std::string> always(const Problem&) {
  return std::nullopt;
}

// The (first) variant of `role` in `table`, or nullptr: the baseline of a family, say.
template <class V>
const V* find_role(std::span<const V> table, Role role) {
  for (const auto& variant : table)
    if (variant.role == role) return &variant;
  return nullptr;
}

// The fastest row of `table` for `problem` (RowTraits::speed, the first of equal speed) among
// those that take it and can run it here; nullptr where none is marked or none can.
template <class V, class Problem>
const V* fastest(std::span<const V> table, const Problem& problem) {
  const V* best = nullptr;
  for (const auto& variant : table)
    if (variant.traits.speed > 0 && (!best || variant.traits.speed > best->traits.speed) && variant.takes(problem) &&
        !variant.unavailable(problem))
      best = &variant;
  return best;
}

// The row of `table` with the highest RowTraits::speed (the first of equal speed), whatever the
// problem: for a table of one kernel per device, or where availability is checked after; nullptr
// where no row is marked.
template <class V>
const V* fastest_row(std::span<const V> table) {
  const V* best = nullptr;
  for (const auto& variant : table)
    if (variant.traits.speed > 0 && (!best || variant.traits.speed > best->traits.speed)) best = &variant;
  return best;
}

// The row of `table` that validates past the reference's size limit (RowTraits::checker):
// std::logic_error where the table marks none.
template <class V>
const V& checker(std::span<const V> table) {
  for (const auto& variant : table)
    if (variant.traits.checker) return variant;
  throw std::logic_error("no row of this table is marked as its checker");
}

// The (first) variant called `name` in `table`, or nullptr.
template <class V>
const V* find_variant(std::span<const V> table, std::string_view name) {
  for (const auto& variant : table)
    if (variant.name == name) return &variant;
  return nullptr;
}

// The same, for code that knows the variant exists: std::logic_error naming it otherwise.
template <class V>
const V& variant_named(std::span<const V> table, std::string_view name) {
  if (const auto* variant = find_variant(table, name)) return *variant;
  throw std::logic_error("no variant '" + std::string(name) + "'");
}

}  // namespace flopscope::kernels
