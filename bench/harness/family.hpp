// What a bench binary declares: its family's typed axes and the benches (groups of variants that
// share axes, as in nvbench) that turn each point of those axes into a case. The harness parses
// the axes from flags, expands the cartesian product per device (variant innermost), drops
// combinations that do not exist and merges duplicates, and registers the cases. A family file
// holds no loop over devices and no timing code.
//
//   family/variant/dtype/device/shape/extras: the point's device, variant and dtype, the shape
//   and extras the bench's build() writes into the case's name.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "case.hpp"
#include "devices.hpp"
#include "flopscope/dtype.hpp"

namespace flopscope::bench {

// One value of an axis: a list of integers (a size, a shape's dims, a permutation) or a word.
using AxisValue = std::variant<std::vector<std::int64_t>, std::string>;

struct Axis {
  enum class Kind {
    integers,     // --flag=4096,2^28,256Mi        one integer per value (parse_count forms)
    shapes,       // --flag=4096x4096x64;1024x768   dims per value, "x"-separated, `keys` names them
    choices,      // --flag=transpose,split_heads   one of `choices` per value
    permutation,  // --flag=0,2,1,3;1,0             a permutation of 0..n-1 per value
  };
  std::string name;  // how build() asks for it: point.integer("n")
  std::string flag;  // --<flag>=
  Kind kind = Kind::integers;
  std::string help;  // "element counts"
  std::vector<std::string> keys;     // shapes: the dims' names ("m", "n", "k"), or empty for any length
  std::vector<std::string> choices;  // choices: every accepted word
  // Values when the flag is not given, per device (a copy sweeps past that device's last-level
  // cache) and dtype (element counts of a byte size).
  std::function<std::vector<AxisValue>(const DeviceContext&, DType)> defaults;
  std::int64_t minimum = 1;  // integers and shape dims below this are rejected
  // Other axes (by name) whose flag, given, empties this one's defaults: bench_matmul's squares
  // run by default only without --shapes or --model.
  std::vector<std::string> none_if_given;
};

// One point of a bench's product: what build() makes a case of.
struct Point {
  const DeviceContext* device = nullptr;
  std::string variant;
  DType dtype = DType::f32;
  std::map<std::string, AxisValue> values;

  std::int64_t integer(const std::string& axis) const;                 // an integers axis
  const std::vector<std::int64_t>& ints(const std::string& axis) const;  // shapes, permutation
  const std::string& choice(const std::string& axis) const;            // choices
};

// A variant as a bench lists it: a kernel-table row's name, description, role and speed
// (RowTraits; table_rows()), or a bench's own (the copy baseline beside views and conversions).
struct VariantRow {
  std::string name;
  std::string description;
  kernels::Role role = kernels::Role::own;
  int speed = 0;
  bool shares_memory = false;
};

// The rows of a kernel table, in its order, each name once (the first row of a name wins).
template <class V>
std::vector<VariantRow> table_rows(std::span<const V> table) {
  std::vector<VariantRow> rows;
  for (const auto& v : table) {
    bool seen = false;
    for (const auto& row : rows) seen = seen || row.name == v.name;
    if (!seen) rows.push_back({std::string(v.name), std::string(v.description), v.role, v.traits.speed,
                      v.traits.shares_memory});
  }
  return rows;
}

// The names of a kernel table's rows that `keep` picks, as a regex alternative "(a|b)" for a
// suite's --benchmark_filter: a suite names its variants by their traits, never by typing them.
template <class V, class Keep>
std::string names_alternative(std::span<const V> table, Keep keep) {
  std::string names;
  for (const auto& v : table)
    if (keep(v)) names += (names.empty() ? "" : "|") + std::string(v.name);
  return "(" + names + ")";
}

// The plain own kernels: own rows not marked fast (RowTraits::speed 0), which a default suite
// leaves out of its largest sizes.
template <class V>
std::string slow_own_alternative(std::span<const V> table) {
  return names_alternative(table, [](const V& v) { return v.role == kernels::Role::own && v.traits.speed == 0; });
}

struct Bench {
  std::string name;  // for --help: "conversions", "memory ceilings"
  // The variants on one kind of device, in the order they run (from the kernel tables).
  std::function<std::vector<VariantRow>(Device::Kind)> variants;
  bool uses_dtypes = true;         // false: one pass per point, whatever --dtypes says
  std::vector<std::string> axes;   // the family's axes it takes, by name, outermost first
  // A case for the point, or nullopt where the combination does not exist (an f16-only variant
  // asked for bf16). A combination that exists but cannot run here is a case with `skip` set.
  std::function<std::optional<Case>(const Point&)> build;
};

struct Family {
  std::string binary;  // "bench_copy"
  std::string summary;  // one line for --help
  std::vector<DType> dtypes;          // every dtype --dtypes accepts
  std::vector<DType> default_dtypes;  // what runs without --dtypes
  std::vector<Axis> axes;
  std::vector<Bench> benches;
  bool measures_ceilings = false;  // bench_peak: accepts --write-ceilings=DIR and --keep-ceilings
  // --suite=<name>: this binary's flags in each suite (kSuites), after the suite's common flags
  // and before the command line's own. A suite not listed: its common flags alone, except a
  // suite that only a family's own entry opens (SuiteInfo::own_entry_only: gpu, smoke, sync),
  // which the binary then refuses (exit 2) and --describe does not list.
  std::map<std::string, std::vector<std::string>> suites;
};

// The suites every binary takes: what --suite=<name> is for, and the flags it gives every binary.
struct SuiteInfo {
  std::string name;
  std::string description;
  std::vector<std::string> common;
  bool own_entry_only = false;  // taken only by a binary whose Family::suites has an entry for it
};

// Whether `family` takes --suite=`suite` (a suite it has an entry for, or one open to all).
bool takes_suite(const Family& family, const SuiteInfo& suite);
extern const std::vector<SuiteInfo> kSuites;

}  // namespace flopscope::bench
