// A case is data (as in ggml's test-backend-ops): its name, what it costs, its operands, how it
// runs and how its result is judged. A family file builds cases from the points of its axes; the
// harness (run_case.cpp) does everything else, once for every family: it allocates the operands
// on the case's device, fills the inputs with random values, poisons the outputs, runs the case
// once and validates it against its reference, times it (CPU clock or CUDA events), and sets its
// counters. A case that cannot run here is a named skip; one that fails validation is never
// timed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/compare.hpp"
#include "flopscope/kernels/variant.hpp"
#include "flopscope/shape.hpp"
#include "flopscope/tensor_ref.hpp"
#include "naming.hpp"

namespace flopscope::bench {

enum class Bound { memory, compute };

// A ceiling by kind and name, as the ceilings file keys it: {memory, "copy"}, {memory, "triad"},
// {compute, "f32"}. Written "memory:copy" in a bench_peak case's label.
struct CeilingRef {
  Bound kind = Bound::memory;
  std::string name;

  std::string str() const { return std::string(kind == Bound::memory ? "memory:" : "compute:") + name; }
  bool operator==(const CeilingRef&) const = default;
};

// How the harness fills an input before the validated run (seeded by the case, reproducibly).
enum class Fill {
  random_bits,     // random bytes (every bit pattern, NaNs included): copies, conversions' decode
  uniform,         // values uniform in [-1, 1) rounded to the dtype: arithmetic
  small_integers,  // integers in [-2, 2]: sums of products exact in f32
  custom,          // Operand::custom_fill
};

// One tensor of a case. The harness allocates storage for the view (TensorRef::storage_elements of
// sizes/strides/offset) on the case's device and hands kernels a TensorRef of it.
struct Operand {
  std::string name;  // "dst", "src", "a"
  DType dtype = DType::f32;
  Shape sizes;
  Strides strides;  // in elements; empty: row-major contiguous
  std::int64_t offset = 0;
  bool output = false;  // outputs are poisoned (0xA5 bytes) before the validated run
  Fill fill = Fill::random_bits;
  std::function<void(const TensorRef& host)> custom_fill;  // Fill::custom: fills a host view

  static Operand input(std::string name, DType dtype, Shape sizes, Fill fill = Fill::random_bits) {
    return {std::move(name), dtype, std::move(sizes), {}, 0, false, fill, {}};
  }
  static Operand output_of(std::string name, DType dtype, Shape sizes) {
    return {std::move(name), dtype, std::move(sizes), {}, 0, true, Fill::random_bits, {}};
  }
};

// Extra counters a check reports (a matmul's max_rel_error), by name.
using Counters = std::map<std::string, double>;

// One element of an operand, as its raw bits (elements of at most 8 bytes): the operand's index in
// the case, the element's index in its storage.
using ElementReader = std::function<std::uint64_t(std::size_t operand, std::int64_t index)>;

// How a case's result is judged, on host copies of its operands after one run.
struct Validation {
  // The reference: given host operands whose inputs hold what the case ran on, writes the
  // expected values into their outputs (the harness passes copies: the case's own outputs are
  // compared with them). Deliberately simple implementations (lib/ or kernels/ *_reference).
  std::function<void(std::span<const TensorRef> host)> reference;
  // nullopt: outputs must equal the reference bit for bit; else |out - ref| <= atol + rtol |ref|.
  std::optional<Tolerance> tolerance;
  // Instead of reference + comparison: judges the outputs itself (a sampled check of a huge
  // GEMM, error statistics against an f64 reference), may add counters; nullopt when they pass,
  // else one line saying what is wrong.
  std::function<std::optional<std::string>(std::span<const TensorRef> host, Counters& counters)> check;
  // Set for a case that needs no host copy of its operands on a CUDA device (bench_peak's copy
  // and triad, arrays of GiBs): there the harness fills its inputs on the device with the values
  // the host fill gives (random_bits; small_integers of f32), poisons its outputs on the device,
  // asks for no host memory (no MemAvailable skip), and judges the run with this, which reads
  // sampled elements back one by one; nullopt when they pass, else one line. CPU runs use the
  // reference or check above.
  std::function<std::optional<std::string>(const ElementReader& read)> sampled;
};

struct Case {
  CaseName name;
  Cost cost;                 // FLOPs and bytes of one run, from lib/'s accounting
  Bound bound = Bound::memory;
  std::string compute;       // peak key whose rate applies ("f32", "f8", ...); empty: none
  std::optional<CeilingRef> measures;  // bench_peak only: the ceiling this case measures
  kernels::Role role = kernels::Role::own;  // its variant's (set by the harness from the bench's rows)
  std::string group;         // the bench it comes from ("conversions", "f32 copy baseline"; set by the harness)
  // The name of the baseline it is set against ("strided/copy/f32/cpu/n=16777216": the copy of its
  // bytes); empty: none. The stopping rule runs the two in one block's rounds (rounds.hpp), and
  // the JSON context says it, so that the report pairs them without deriving the pair again.
  std::string beside;
  std::optional<std::string> skip;  // a named skip: listed with its reason, never run
  // Words added to the label after bound= and compute= ("out=f32 emulated"), asked when the
  // counters are set (after the timed run, so a choice made in prepare() can be one). May be empty.
  std::function<std::string()> label;
  std::vector<Operand> operands;
  // The timed call, prepared for the operands (TensorRefs on the case's device, in order).
  std::function<kernels::Runner(std::span<const TensorRef> operands)> prepare;
  Validation validation;
};

// The ceiling a case is set against (the report's pct_ceiling_*): none for one that measures a
// ceiling itself; memory bandwidth ({memory, "best"}: the ceilings file's best memory rate) for a
// memory-bound case; its compute key's FLOP/s for a compute-bound one with a key.
std::optional<CeilingRef> set_against(const Case& c);

// The bytes of storage the harness allocates for an operand's view.
std::size_t storage_bytes(const Operand& op);

// The seed the harness fills operand `index` of a case from (42 + index), and the raw bits of
// element `element` (of `element_size` bytes) of a Fill::random_bits operand of `total_bytes`
// (kernels::fill_random_bytes's): what a sampled validation expects of an input.
std::uint64_t fill_seed(std::size_t index);
std::uint64_t random_bits_element(std::uint64_t seed, std::int64_t element, std::size_t element_size,
                                  std::size_t total_bytes);

// The operands' views with no storage behind them (data null) on `device`: what a variant's
// unavailable() and applies() look at (dtypes, shapes, strides, device), before allocation.
std::vector<TensorRef> dry_refs(const std::vector<Operand>& operands, Device device);

// Binds a kernel-table variant to a case whose operands are set: the case runs `variant` on the
// problem make_problem() builds from its operands, and is a named skip where the variant cannot
// run it here ("avx512fp16: this CPU lacks avx512_fp16"). False where the variant does not take
// the problem at all (a combination that does not exist: the family leaves the case out).
template <class Variant, class MakeProblem>
bool bind_variant(Case& c, const Variant& variant, Device device, MakeProblem make_problem) {
  const auto dry = make_problem(std::span<const TensorRef>(dry_refs(c.operands, device)));
  if (!variant.takes(dry)) return false;
  if (auto reason = variant.unavailable(dry)) c.skip = std::string(variant.name) + ": " + *reason;
  c.prepare = [&variant, make_problem](std::span<const TensorRef> operands) {
    return variant.prepare(make_problem(operands));
  };
  return true;
}

}  // namespace flopscope::bench
