// flopscope init: why parameters are initialized with 1/sqrt(input_dim) (the lecture's point).
//   flopscope init --input-dim 16384 --output-dim 32 [--batch 1] [--seed 0] [--dtype f32] [--json]
// x = randn(batch, input_dim); for each initialization of w (input_dim x output_dim), prints the
// standard deviation of w and of the outputs x @ w: ~sqrt(input_dim) for plain randn, ~1 with
// Xavier scaling (randn / sqrt(input_dim)) and with trunc_normal(std = 1/sqrt(input_dim), [-3, 3]).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/broadcast.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/init.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope::cli {

namespace {

struct Row {
  std::string name;
  std::string expected_text;
  double expected;
  Moments weights, outputs;
};

}  // namespace

int cmd_init(const Args& args) {
  std::optional<std::int64_t> input_dim, output_dim;
  std::int64_t batch = 1;
  std::uint64_t seed = 0;
  DType dtype = DType::f32;
  bool json = false;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    if (name == "--input-dim") {
      input_dim = positive_count("--input-dim", options.take_value());
    } else if (name == "--output-dim") {
      output_dim = positive_count("--output-dim", options.take_value());
    } else if (name == "--batch") {
      batch = positive_count("--batch", options.take_value());
    } else if (name == "--seed") {
      const std::string text = options.take_value();
      auto value = parse_count(text);
      if (!value) throw UsageError{"--seed: expected a non-negative integer (got '" + text + "')"};
      seed = static_cast<std::uint64_t>(*value);
    } else if (name == "--dtype") {
      dtype = dtype_option(options.take_value());
    } else if (name == "--json") {
      json = (options.take_flag(), true);
    } else if (name.empty()) {
      throw UsageError{"unexpected argument '" + options.take_positional() + "'"};
    } else {
      options.unknown();
    }
  }
  if (!input_dim || !output_dim) throw UsageError{"needs --input-dim N and --output-dim M (e.g. --input-dim 16384 --output-dim 32)"};
  // A plain reference matmul over tensors generated element by element: 2^24 multiply-adds take
  // about 10 s on one core, and the time and memory grow in proportion.
  constexpr std::int64_t kLimit = std::int64_t{1} << 24;
  const std::optional<std::int64_t> weights = try_mul(*input_dim, *output_dim);
  const std::optional<std::int64_t> work = weights ? try_mul(*weights, batch) : std::nullopt;
  if (!work || *work > kLimit)
    throw UsageError{"input_dim x output_dim x batch = " + std::to_string(*input_dim) + " x " +
                     std::to_string(*output_dim) + " x " + std::to_string(batch) +
                     (work ? " = " + std::to_string(*work) : std::string(" overflows 64 bits, and")) +
                     " exceeds the limit 2^24 = 16777216 (a plain reference matmul)"};

  const double d = static_cast<double>(*input_dim), n_out = static_cast<double>(*output_dim);
  const TensorOptions opt{dtype, Device::cpu()};
  const Tensor x = randn({batch, *input_dim}, seed, opt);
  const Tensor scale = full({}, 1 / std::sqrt(d), {DType::f64});
  std::vector<Row> rows;
  auto add = [&](std::string name, const Tensor& w, double expected, std::string expected_text) {
    rows.push_back({std::move(name), std::move(expected_text), expected, moments(w), moments(matmul(x, w))});
  };
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "sqrt(%lld) = %.4g", static_cast<long long>(*input_dim), std::sqrt(d));
  const Tensor w = randn({*input_dim, *output_dim}, seed + 1, opt);
  add("randn", w, std::sqrt(d), buffer);
  add("randn / sqrt(input_dim)  (Xavier)", (w * scale).to(dtype), 1, "1");
  add("trunc_normal(std=1/sqrt(input_dim), a=-3, b=3)",
      trunc_normal({*input_dim, *output_dim}, 0, 1 / std::sqrt(d), -3, 3, seed + 2, opt), 1, "1");
  // PyTorch's fans for a [input_dim, output_dim] tensor: fan_in = output_dim, fan_out = input_dim.
  const double torch_expected = std::sqrt(d * 2 / (d + n_out));
  std::snprintf(buffer, sizeof buffer, "sqrt(2 in / (in + out)) = %.4g", torch_expected);
  add("xavier_normal (torch fans, gain 1)", xavier_normal({*input_dim, *output_dim}, 1.0, seed + 3, opt), torch_expected, buffer);

  const auto samples = batch * *output_dim;
  if (json) {
    nlohmann::json out = {{"input_dim", *input_dim}, {"output_dim", *output_dim}, {"batch", batch},
                          {"seed", seed}, {"dtype", std::string(dtype_name(dtype))}, {"samples", samples}};
    for (const auto& r : rows)
      out["inits"].push_back({{"name", r.name}, {"weight_std", r.weights.std}, {"output_std", r.outputs.std},
                              {"expected_output_std", r.expected}, {"weight_min", r.weights.min}, {"weight_max", r.weights.max}});
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("x = randn(%lld, %lld) (seed %llu), output = x @ w with w of shape [%lld, %lld], %s\n",
              static_cast<long long>(batch), static_cast<long long>(*input_dim), static_cast<unsigned long long>(seed),
              static_cast<long long>(*input_dim), static_cast<long long>(*output_dim),
              std::string(dtype_name(dtype)).c_str());
  std::printf("%-50s %12s %12s   %s\n", "init of w", "std(w)", "std(x @ w)", "expected std(x @ w)");
  for (const auto& r : rows)
    std::printf("%-50s %12.5g %12.5g   %s\n", r.name.c_str(), r.weights.std, r.outputs.std, r.expected_text.c_str());
  std::printf("(std over %lld outputs: expect about +/-%.0f%% sampling noise; --batch B for more)\n",
              static_cast<long long>(samples), 100 / std::sqrt(2.0 * static_cast<double>(samples)));
  std::printf("plain randn grows like sqrt(input_dim); scaled by 1/sqrt(input_dim) it stays near 1 whatever input_dim.\n");
  return 0;
}

}  // namespace flopscope::cli
