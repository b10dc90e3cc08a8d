#include "flags.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope::bench {

namespace {

// The items between separators; an empty item is kept ("1,,2", "0,1,": its parser names it as
// malformed instead of running less than was asked), an empty text has none ("--sizes is empty").
std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find(separator, start);
    out.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

template <class T>
void push_unique(std::vector<T>& values, T value) {  // duplicates are merged, first order kept
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(std::move(value));
}

std::string dtype_names(const std::vector<DType>& dtypes) {
  std::vector<std::string> names;
  for (DType d : dtypes) names.emplace_back(dtype_name(d));
  return join(names);
}

// An integer as parse_count reads it, at least `minimum`; error naming `what` otherwise.
std::int64_t integer(const std::string& binary, const std::string& text, const Axis& axis, const std::string& what) {
  auto count = parse_count(text);
  if (!count)
    usage_error(binary, "malformed " + what + " '" + text + "' in --" + axis.flag + " (" + axis.help +
                            ", e.g. 4096, 2^28, 256Mi, 1e6)");
  if (*count < axis.minimum)
    usage_error(binary, what + " '" + text + "' in --" + axis.flag + " is below " + std::to_string(axis.minimum));
  return *count;
}

// The comma-separated words of --<flag>, each one of `accepted`, repeated ones once.
std::vector<std::string> words(const std::string& binary, const std::string& what, const std::string& flag,
                               const std::string& text, const std::vector<std::string>& accepted) {
  std::vector<std::string> out;
  for (const auto& word : split(text, ',')) {
    if (std::find(accepted.begin(), accepted.end(), word) == accepted.end())
      usage_error(binary, "unknown " + what + " '" + word + "' (accepted: " + join(accepted) + ")");
    push_unique(out, word);
  }
  if (out.empty()) usage_error(binary, "--" + flag + " is empty (accepted: " + join(accepted) + ")");
  return out;
}

std::vector<AxisValue> parse_axis(const std::string& binary, const Axis& axis, const std::string& text) {
  std::vector<AxisValue> values;
  switch (axis.kind) {
    case Axis::Kind::integers:
      for (const auto& item : split(text, ',')) push_unique(values, AxisValue{std::vector{integer(binary, item, axis, "size")}});
      break;
    case Axis::Kind::shapes:
      for (const auto& item : split(text, ';')) {
        std::vector<std::int64_t> dims;
        for (const auto& dim : split(item, item.find('x') != std::string::npos ? 'x' : ','))
          dims.push_back(integer(binary, dim, axis, "dimension"));
        if (dims.empty()) usage_error(binary, "empty shape in --" + axis.flag + "=" + text);
        if (!axis.keys.empty() && dims.size() != axis.keys.size())
          usage_error(binary, "shape '" + item + "' in --" + axis.flag + " has " + std::to_string(dims.size()) +
                                  " dimensions, expected " + std::to_string(axis.keys.size()) + " (" +
                                  join(axis.keys, "x") + ")");
        push_unique(values, AxisValue{dims});
      }
      break;
    case Axis::Kind::choices:
      for (const auto& item : split(text, ',')) {
        if (std::find(axis.choices.begin(), axis.choices.end(), item) == axis.choices.end())
          usage_error(binary, "unknown value '" + item + "' in --" + axis.flag + " (accepted: " + join(axis.choices) + ")");
        push_unique(values, AxisValue{item});
      }
      break;
    case Axis::Kind::permutation:
      for (const auto& item : split(text, ';')) {
        std::vector<std::int64_t> order;
        for (const auto& index : split(item, ',')) {
          auto value = parse_count(index);
          if (!value) usage_error(binary, "malformed index '" + index + "' in --" + axis.flag + "=" + item);
          order.push_back(*value);
        }
        std::vector<std::int64_t> sorted = order, identity(order.size());
        std::sort(sorted.begin(), sorted.end());
        std::iota(identity.begin(), identity.end(), 0);
        if (order.empty() || sorted != identity)
          usage_error(binary, "--" + axis.flag + "=" + item + " is not a permutation of 0.." +
                                  std::to_string(std::max<std::size_t>(order.size(), 1) - 1));
        push_unique(values, AxisValue{order});
      }
      break;
  }
  if (values.empty()) usage_error(binary, "--" + axis.flag + " is empty");
  return values;
}

}  // namespace

const std::vector<SuiteInfo> kSuites = {
    {"default", "scripts/run_suite.py's default suite: every family at its default sizes, 6 to 20 repetitions a case "
     "by the stopping rule",
     {"--benchmark_min_time=0.05"}},
    {"quick", "scripts/run_suite.py --quick: one or a few sizes of each family, in a few minutes",
     {"--benchmark_repetitions=2", "--benchmark_min_time=0.02"}},
    {"gpu", "bench/gpu_check.sh on cuda:0: the GPU's cases that fit its time budget (gpu_check.sh --plan)",
     {"--devices=cuda:0"}, true},
    // One timed run per case: a case is set up, run once, validated, warmed up (3 runs) and timed
    // once; the figures mean nothing, the validation does.
    {"smoke", "bench/gpu_check.sh's first step and its memcheck: every CUDA kernel of the family once at a tiny size, validated",
     {"--devices=cuda:0", "--benchmark_repetitions=1", "--benchmark_min_time=0.001"}, true},
    {"sync", "bench/gpu_check.sh's racecheck and synccheck: the CUDA kernels that share memory between threads "
             "(shared-memory tiles, barriers, mma fragments) at small sizes",
     {"--devices=cuda:0", "--benchmark_repetitions=1", "--benchmark_min_time=0.001"}, true},
};

const std::vector<std::string> kRoleWords = {"own", "vendor", "reference", "baseline", "fastest",
                                            "shares_memory"};

bool selected(const Selection& selection, const VariantRow& row) {
  const auto has = [](const std::vector<std::string>& list, std::string_view word) {
    return std::find(list.begin(), list.end(), word) != list.end();
  };
  if (!selection.variants.empty() && !has(selection.variants, row.name)) return false;
  if (selection.roles.empty()) return true;
  return has(selection.roles, kernels::role_name(row.role)) || (row.speed > 0 && has(selection.roles, "fastest")) ||
         (row.shares_memory && has(selection.roles, "shares_memory"));
}

bool takes_suite(const Family& family, const SuiteInfo& suite) {
  return !suite.own_entry_only || family.suites.contains(suite.name);
}

void usage_error(const std::string& binary, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", binary.c_str(), message.c_str());
  std::exit(2);
}

std::vector<std::string> family_variants(const Family& family) {
  std::vector<std::string> names;
  for (Device::Kind kind : {Device::Kind::cpu, Device::Kind::cuda})
    for (const Bench& bench : family.benches)
      for (auto& row : bench.variants(kind)) push_unique(names, row.name);
  return names;
}

Selection parse_flags(int argc, char** argv, const Family& family) {
  const std::string& binary = family.binary;
  Selection selection;
  for (int i = 0; i < argc; ++i) selection.argv.emplace_back(argv[i]);
  selection.benchmark_args.push_back(selection.argv.front());
  // --suite=NAME stands for its flags, read before the rest of the command line (which can
  // override them: the last --dtypes wins).
  std::vector<std::string> args = {selection.argv.front()};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--suite=", 0) != 0) continue;
    const std::string name = arg.substr(8);
    const auto suite = std::find_if(kSuites.begin(), kSuites.end(), [&](const SuiteInfo& s) { return s.name == name; });
    std::vector<std::string> names;  // the suites this binary takes
    for (const auto& s : kSuites)
      if (takes_suite(family, s)) names.push_back(s.name);
    if (suite == kSuites.end())
      usage_error(binary, "unknown suite '" + name + "' (accepted: " + join(names) + ")");
    if (!takes_suite(family, *suite))
      usage_error(binary, "has no " + name + " suite (its suites: " + join(names) + ")");
    if (selection.suite && *selection.suite != name) usage_error(binary, "two suites: --suite=" + *selection.suite + " and " + arg);
    selection.suite = name;
    args.insert(args.end(), suite->common.begin(), suite->common.end());
    if (auto own = family.suites.find(name); own != family.suites.end()) args.insert(args.end(), own->second.begin(), own->second.end());
  }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--suite=", 0) != 0) args.emplace_back(argv[i]);
  selection.dtypes = family.default_dtypes;
  // Every CUDA device present; where there is none but CUDA was built, cuda:0 anyway, so that its
  // cases show up as skips with the runtime's reason rather than vanish.
  selection.devices = {Device::cpu()};
  for (int i = 0; i < kernels::cuda::device_count(); ++i) selection.devices.push_back(Device::cuda(i));
#ifdef FLOPSCOPE_HAVE_CUDA
  if (selection.devices.size() == 1) selection.devices.push_back(Device::cuda(0));
#endif
  const std::vector<std::string> variants = family_variants(family);
  std::vector<std::string> flags = {"--dtypes=", "--devices=", "--variants=", "--roles="};
  for (const Axis& axis : family.axes) flags.push_back("--" + axis.flag + "=");
  std::string suite_names;
  for (const auto& s : kSuites)
    if (takes_suite(family, s)) suite_names += (suite_names.empty() ? "" : "|") + s.name;
  flags.insert(flags.end(),
               {"--hot", "--huge-pages", "--disable-blocking-kernel", "--suite=" + suite_names, "--describe"});
  if (family.measures_ceilings) flags.insert(flags.end(), {"--write-ceilings=DIR", "--keep-ceilings"});

  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value_of = [&](const std::string& flag) -> std::optional<std::string> {
      if (arg.rfind("--" + flag + "=", 0) == 0) return arg.substr(flag.size() + 3);
      return std::nullopt;
    };
    const Axis* axis = nullptr;
    for (const Axis& a : family.axes)
      if (value_of(a.flag)) axis = &a;
    if (auto v = value_of("dtypes")) {
      selection.dtypes.clear();
      for (const auto& name : split(*v, ',')) {
        if (name == "all") {
          for (DType d : family.dtypes) push_unique(selection.dtypes, d);
          continue;
        }
        auto dtype = parse_dtype(name);
        if (!dtype || std::find(family.dtypes.begin(), family.dtypes.end(), *dtype) == family.dtypes.end())
          usage_error(binary, "unknown dtype '" + name + "' (accepted: " + dtype_names(family.dtypes) + ", all)");
        push_unique(selection.dtypes, *dtype);
      }
      if (selection.dtypes.empty()) usage_error(binary, "--dtypes is empty (accepted: " + dtype_names(family.dtypes) + ")");
    } else if (auto devices = value_of("devices")) {
      selection.devices.clear();
      for (const auto& name : split(*devices, ',')) {
        auto device = parse_device(name);
        if (!device) usage_error(binary, "unknown device '" + name + "' (accepted: cpu, cuda, cuda:N)");
        push_unique(selection.devices, *device);
      }
      if (selection.devices.empty()) usage_error(binary, "--devices is empty (accepted: cpu, cuda:N)");
    } else if (auto names = value_of("variants")) {
      selection.variants = words(binary, "variant", "variants", *names, variants);
    } else if (auto roles = value_of("roles")) {
      selection.roles = words(binary, "role", "roles", *roles, kRoleWords);
    } else if (axis) {
      selection.axes[axis->name] = parse_axis(binary, *axis, *value_of(axis->flag));
    } else if (arg == "--hot") {
      selection.hot = true;
    } else if (arg == "--huge-pages") {
      const std::string mode = kernels::transparent_huge_pages_mode();
      if (mode.empty() || mode == "never")
        usage_error(binary, "--huge-pages: this system grants no transparent huge pages (" +
                                (mode.empty() ? std::string("no /sys/kernel/mm/transparent_hugepage/enabled")
                                              : "transparent_hugepage/enabled is never") + ")");
      selection.huge_pages = true;
    } else if (arg == "--disable-blocking-kernel") {
      selection.blocking = false;
    } else if (arg == "--describe") {
      selection.describe = true;
    } else if (family.measures_ceilings && value_of("write-ceilings")) {
      selection.write_ceilings = *value_of("write-ceilings");
      if (selection.write_ceilings->empty()) usage_error(binary, "--write-ceilings is empty (a directory)");
    } else if (family.measures_ceilings && arg == "--keep-ceilings") {
      selection.keep_ceilings = true;
    } else if (arg.rfind("--benchmark_", 0) == 0 || arg.rfind("--v=", 0) == 0) {
      selection.benchmark_args.push_back(arg);  // Google Benchmark's own
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s [flopscope flags] [--benchmark_* flags]\n%s\n\n", binary.c_str(), family.summary.c_str());
      std::printf("  --dtypes=%s|all\n  --devices=cpu,cuda:N\n  --variants=%s\n", dtype_names(family.dtypes).c_str(),
                  join(variants, ",").c_str());
      std::printf("  --roles=%s  the variants of these roles (fastest: the own rows marked fastest;\n"
                  "      shares_memory: the CUDA kernels that share memory between threads)\n",
                  join(kRoleWords, ",").c_str());
      for (const Axis& a : family.axes)
        std::printf("  --%s=...  %s%s\n", a.flag.c_str(), a.help.c_str(),
                    a.kind == Axis::Kind::choices ? (" (" + join(a.choices, ",") + ")").c_str() : "");
      std::printf("  --hot  no L2 flush between CUDA iterations\n");
      std::printf("  --huge-pages  host operands of 2 MiB or more in 2 MiB transparent huge pages (madvise; default:\n"
                  "      the system's pages): what TLB reach costs strided views (run.huge_pages in the context)\n");
      std::printf("  --disable-blocking-kernel  CUDA runs not queued behind a blocking kernel (host launch gaps are timed;\n"
                  "      for tools that serialize launches, such as compute-sanitizer, where it would wait to its timeout)\n");
      for (const auto& suite : kSuites)
        if (takes_suite(family, suite)) std::printf("  --suite=%s  %s\n", suite.name.c_str(), suite.description.c_str());
      std::printf("  --describe  print this binary's variants, axes, suites and the selected cases as JSON "
                  "(analysis/FORMAT.md), run nothing\n");
      if (family.measures_ceilings)
        std::printf("  --write-ceilings=DIR  write DIR/<device key>.json from this run's ceiling cases\n"
                    "  --keep-ceilings  with --write-ceilings: only for devices that have no file yet\n");
      std::printf("Sizes take 4096, 2^28, 256Mi (binary), 64K (decimal), 1e6; repeated values run once.\n");
      std::exit(0);
    } else {
      usage_error(binary, "unknown flag '" + arg + "' (flopscope flags: " + join(flags, " ") + "; and --benchmark_*)");
    }
  }
  if (selection.keep_ceilings && !selection.write_ceilings)
    usage_error(binary, "--keep-ceilings needs --write-ceilings=DIR");
  if (selection.describe) {  // it writes nothing but its JSON on stdout, and runs nothing
    for (const char* flag : {"--benchmark_out", "--benchmark_list_tests", "--benchmark_format", "--benchmark_dry_run"})
      for (const auto& arg : selection.benchmark_args)
        if (arg.rfind(flag, 0) == 0) usage_error(binary, "--describe runs nothing and prints JSON: it takes no " + arg);
    if (selection.write_ceilings) usage_error(binary, "--describe runs nothing: it takes no --write-ceilings");
  }
  return selection;
}

}  // namespace flopscope::bench
