// flopscope's own flags of a bench binary, read before Google Benchmark's: the dtypes, devices
// and variants to run, the family's typed axes, --hot, and bench_peak's ceilings flags. A bad
// value is a one-line error naming it and what is accepted, exit code 2.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "family.hpp"
#include "flopscope/device.hpp"
#include "flopscope/dtype.hpp"

namespace flopscope::bench {

struct Selection {
  std::vector<DType> dtypes;
  std::vector<Device> devices;
  std::vector<std::string> variants;                     // empty: every variant
  std::vector<std::string> roles;                        // --roles: empty, every role (kRoleWords)
  std::map<std::string, std::vector<AxisValue>> axes;    // by axis name; absent: the defaults
  bool hot = false;                                      // --hot: no L2 flush between device iterations
  bool huge_pages = false;                               // --huge-pages: host operands >= 2 MiB in THP
  bool blocking = true;                                  // false: --disable-blocking-kernel
  std::optional<std::string> write_ceilings;             // --write-ceilings=DIR (bench_peak)
  bool keep_ceilings = false;                            // --keep-ceilings: only fill in missing files
  std::optional<std::string> suite;                      // --suite=NAME (its flags are in what follows)
  bool describe = false;                                 // --describe: print the JSON description, run nothing
  std::vector<std::string> argv;                         // as given, for the context
  std::vector<std::string> benchmark_args;               // argv[0] and Google Benchmark's own flags
};

// Every variant name the family knows on this build (the kernel tables', CPU then CUDA).
std::vector<std::string> family_variants(const Family& family);

// What --roles takes: the four roles, and "fastest" (the own rows that RowTraits::speed
// marks) and "shares_memory" (the rows RowTraits::shares_memory marks).
extern const std::vector<std::string> kRoleWords;

// Whether the selection's --variants and --roles keep `row`.
bool selected(const Selection& selection, const VariantRow& row);

// Reads flopscope's flags from argv, leaving Google Benchmark's; exits 2 with one line on stderr
// for a bad value, 0 after --help.
Selection parse_flags(int argc, char** argv, const Family& family);

[[noreturn]] void usage_error(const std::string& binary, const std::string& message);

}  // namespace flopscope::bench
