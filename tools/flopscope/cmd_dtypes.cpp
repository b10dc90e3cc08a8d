// flopscope dtypes: every dtype's properties (computed from its bit layout), the compute modes,
// and what chosen values become in each dtype.
//   flopscope dtypes [--value V]... [--saturate] [--json]
//   flopscope dtypes --accumulate [--count N] [--term V] [--seed S] [--json]
// --accumulate sums many small values in f16 / bf16 with an accumulator of the same dtype and
// with an f32 accumulator, and prints each sum's relative error: the reason for f32 accumulation.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope::cli {

namespace {

using nlohmann::json;

constexpr const char* kDefaultValues[] = {"1e-8", "1e-5", "65504", "70000", "448", "500"};

std::string g(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

json number_or_text(double value) {
  if (std::isfinite(value)) return value;
  return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
}

json properties_json(const DTypeInfo& info) {
  return {{"dtype", dtype_name(info.dtype)},
          {"bits", info.bits},
          {"bytes", info.bytes},
          {"exponent_bits", info.exponent_bits},
          {"mantissa_bits", info.mantissa_bits},
          {"exponent_bias", info.exponent_bias},
          {"largest_finite", info.largest_finite},
          {"smallest_normal", info.smallest_normal},
          {"smallest_subnormal", info.smallest_subnormal},
          {"epsilon", info.epsilon},
          {"decimal_digits", info.decimal_digits},
          {"significant_digits", info.significant_digits},
          {"has_inf", info.has_inf},
          {"has_nan", info.has_nan},
          {"aliases", dtype_row(info.dtype).aliases}};
}

void print_properties() {
  std::printf("%-7s %4s %5s %3s %4s %5s %13s %13s %13s %11s %6s %3s %3s\n", "dtype", "bits", "bytes", "exp",
              "mant", "bias", "largest", "small normal", "small subnorm", "epsilon", "digits", "inf", "nan");
  for (DType dtype : kAllDTypes) {
    const DTypeInfo i = dtype_info(dtype);
    std::printf("%-7.*s %4d %5d %3d %4d %5d %13s %13s %13s %11s %6d %3s %3s\n", int(dtype_name(dtype).size()),
                dtype_name(dtype).data(), i.bits, i.bytes, i.exponent_bits, i.mantissa_bits, i.exponent_bias,
                g(i.largest_finite).c_str(), g(i.smallest_normal).c_str(), g(i.smallest_subnormal).c_str(),
                g(i.epsilon).c_str(), i.decimal_digits, i.has_inf ? "yes" : "no", i.has_nan ? "yes" : "no");
  }
  std::printf("\n(exp, mant: exponent and stored mantissa bits; epsilon: 1 to the next value; digits: decimal\n"
              " digits that always survive a round trip. f8e4m3 is OCP E4M3FN: no inf, NaN = S.1111.111.)\n");
  std::printf("also spelled (--dtype, --to take these; \"torch.\" may lead; fp8 alone is two of them):\n");
  for (const DTypeRow& row : dtype_rows())
    std::printf("  %-7.*s %.*s\n", int(row.name.size()), row.name.data(), int(row.aliases.size()), row.aliases.data());
  std::printf("\n");
  std::printf("compute modes (what the arithmetic units use; not all are storage types):\n");
  for (const ComputeModeInfo& mode : compute_modes())
    std::printf("  %-11.*s operands stored as %-13.*s %d exponent + %2d mantissa bits, accumulate in %.*s: %.*s\n",
                int(mode.name.size()), mode.name.data(), int(mode.storage.size()), mode.storage.data(),
                mode.exponent_bits(), mode.mantissa_bits(), int(dtype_name(mode.accumulate).size()), dtype_name(mode.accumulate).data(),
                int(mode.description.size()), mode.description.data());
}

// ---- accumulation ------------------------------------------------------------------------------

struct AccumulationRow {
  std::string inputs, accumulator;
  double sum, relative_error;
};

// Sums `terms`, each first stored in `input` (rounded once), with an accumulator of dtype
// `accumulator`: after each addition the running sum is rounded to it. The addition itself is
// exact in double (two values of at most 24 significant bits), so each step is one correctly
// rounded add in the accumulator's dtype, as hardware does it.
double accumulate(const std::vector<double>& terms, DType input, DType accumulator) {
  double sum = 0;
  for (double term : terms) {
    const double stored = decode_bits(input, encode_bits(input, term));
    sum = decode_bits(accumulator, encode_bits(accumulator, sum + stored));
  }
  return sum;
}

std::vector<AccumulationRow> accumulation_rows(const std::vector<double>& terms) {
  double exact = 0;
  for (double term : terms) exact += term;  // f64: close enough to exact for a reference
  std::vector<AccumulationRow> rows;
  const std::pair<DType, DType> cases[] = {{DType::f16, DType::f16},   {DType::f16, DType::f32},
                                           {DType::bf16, DType::bf16}, {DType::bf16, DType::f32},
                                           {DType::f32, DType::f32}};
  for (auto [input, accumulator] : cases) {
    const double sum = accumulate(terms, input, accumulator);
    rows.push_back({std::string(dtype_name(input)), std::string(dtype_name(accumulator)), sum,
                    std::fabs(sum - exact) / std::fabs(exact)});
  }
  return rows;
}

int run_accumulate(std::int64_t count, double term, std::uint64_t seed, bool as_json) {
  std::vector<double> repeated(static_cast<std::size_t>(count), term);
  std::vector<double> random(static_cast<std::size_t>(count));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 2 * term);
  for (double& value : random) value = uniform(rng);
  struct Experiment {
    std::string title;
    const std::vector<double>* terms;
  };
  const Experiment experiments[] = {
      {std::to_string(count) + " x " + shortest(term, DType::f64) + " (exact sum " +
           shortest(term * double(count), DType::f64) + ")", &repeated},
      {std::to_string(count) + " uniform random values in [0, " + shortest(2 * term, DType::f64) + "), seed " +
           std::to_string(seed), &random},
  };
  json out = json::array();
  for (const Experiment& experiment : experiments) {
    const auto rows = accumulation_rows(*experiment.terms);
    if (as_json) {
      json entry = {{"experiment", experiment.title}, {"rows", json::array()}};
      for (const auto& row : rows)
        entry["rows"].push_back({{"inputs", row.inputs}, {"accumulator", row.accumulator}, {"sum", row.sum},
                                 {"relative_error", row.relative_error}});
      out.push_back(entry);
      continue;
    }
    std::printf("sum of %s:\n", experiment.title.c_str());
    std::printf("  %-7s %-12s %16s %15s\n", "inputs", "accumulator", "sum", "relative error");
    for (const auto& row : rows)
      std::printf("  %-7s %-12s %16.9g %15.3e\n", row.inputs.c_str(), row.accumulator.c_str(), row.sum,
                  row.relative_error);
    std::printf("\n");
  }
  if (as_json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("A low-precision accumulator stops growing once each term is below half an ulp of the\n"
                "running sum (f16 near 0.25 has ulp 2^-12 = 2.4e-4); with f32 accumulation only the\n"
                "rounding of the inputs themselves remains. Hence: store in f16/bf16, accumulate in f32.\n");
  }
  return 0;
}

}  // namespace

int cmd_dtypes(const Args& args) {
  std::vector<std::string> values;
  bool saturate = false, as_json = false, accumulate_mode = false;
  std::int64_t count = 10000;
  double term = 1e-4;
  std::uint64_t seed = 0;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    if (name == "--value") {
      values.push_back(options.take_value());
      if (!parse_number(values.back())) throw UsageError{"--value: cannot parse '" + values.back() + "'"};
    } else if (name == "--saturate") {
      saturate = (options.take_flag(), true);
    } else if (name == "--json") {
      as_json = (options.take_flag(), true);
    } else if (name == "--accumulate") {
      accumulate_mode = (options.take_flag(), true);
    } else if (name == "--count") {
      const std::string text = options.take_value();
      auto parsed = parse_count(text);
      // 1e7 sums take seconds; more would only take longer to say the same.
      if (!parsed || *parsed < 1 || *parsed > 10'000'000) throw UsageError{"--count: expected 1 to 1e7, got '" + text + "'"};
      count = *parsed;
    } else if (name == "--term") {
      const std::string text = options.take_value();
      auto parsed = parse_number(text);
      if (!parsed || !std::isfinite(parsed->value) || parsed->value <= 0)
        throw UsageError{"--term: expected a positive number, got '" + text + "'"};
      term = parsed->value;
    } else if (name == "--seed") {
      const std::string text = options.take_value();
      auto parsed = parse_count(text);
      if (!parsed) throw UsageError{"--seed: expected a non-negative integer, got '" + text + "'"};
      seed = static_cast<std::uint64_t>(*parsed);
    } else if (name.empty()) {
      throw UsageError{"unexpected argument '" + options.take_positional() + "' (values go after --value)"};
    } else {
      options.unknown();
    }
  }
  if (accumulate_mode) {
    if (!values.empty() || saturate) throw UsageError{"--accumulate takes --count, --term, --seed and --json only"};
    // The random terms lie in [0, 2 term): their exact sum must be a finite double.
    if (!std::isfinite(2 * term * static_cast<double>(count)))
      throw UsageError{"--term: " + shortest(term, DType::f64) + " x " + std::to_string(count) +
                       " terms: the sum overflows f64 (expected a smaller --term or --count)"};
    return run_accumulate(count, term, seed, as_json);
  }
  if (values.empty()) values.assign(std::begin(kDefaultValues), std::end(kDefaultValues));

  if (as_json) {
    json out = {{"dtypes", json::array()}, {"compute_modes", json::array()}, {"values", json::array()},
                {"saturate", saturate}};
    for (DType dtype : kAllDTypes) out["dtypes"].push_back(properties_json(dtype_info(dtype)));
    for (const ComputeModeInfo& mode : compute_modes())
      out["compute_modes"].push_back({{"name", mode.name}, {"storage", mode.storage},
                                      {"exponent_bits", mode.exponent_bits()}, {"mantissa_bits", mode.mantissa_bits()},
                                      {"accumulate", dtype_name(mode.accumulate)}, {"description", mode.description}});
    for (const std::string& text : values) {
      const Number number = *parse_number(text);
      json results = json::object();
      for (DType dtype : kAllDTypes) {
        const Conversion c = convert_number(dtype, number, saturate);
        results[std::string(dtype_name(dtype))] = {{"bits", hex_bits(c.bits, dtype)},
                                                   {"value", number_or_text(c.value)},
                                                   {"text", shortest(c.value, dtype)},
                                                   {"flag", conversion_flag_name(c.flag)}};
      }
      out["values"].push_back({{"input", text}, {"value", number_or_text(number.value)}, {"results", results}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }

  print_properties();
  std::printf("\nwhat values become%s:\n", saturate ? " (saturating)" : "");
  for (const std::string& text : values) {
    const Number number = *parse_number(text);
    std::printf("  %s\n", text.c_str());
    for (DType dtype : kAllDTypes) {
      const Conversion c = convert_number(dtype, number, saturate);
      std::printf("    %-7.*s %-20s %-18s %s\n", int(dtype_name(dtype).size()), dtype_name(dtype).data(),
                  shortest(c.value, dtype).c_str(), hex_bits(c.bits, dtype).c_str(),
                  std::string(conversion_flag_name(c.flag)).c_str());
    }
  }
  return 0;
}

}  // namespace flopscope::cli
