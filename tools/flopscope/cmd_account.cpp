// flopscope account: parameters, FLOPs in two conventions, activation memory and matmul shapes of
// a transformer, per layer; the arithmetic of a training run; a step predicted from measured
// matmuls (account_predict.cpp).
//   flopscope account --model gpt2-small [--batch 8] [--seq 1024] [--dtype bf16] [--json]
//   flopscope account --config FILE.json [...]         any config (keys: see read_config)
//   flopscope account --mlp 4096x8 [--batch 1024]      the lecture's deep linear network
//   flopscope account --list | --rules [--json]        the presets; the full count's table
//   flopscope account --predict RUN_DIR --model gpt2-small --batch 8 --seq 1024 [--json]
//   flopscope account train --params 70e9 --tokens 15e12 --device h100 --mfu 0.5 --devices 1024
//   flopscope account train --model gpt2-small --tokens 300e9 [--seq 1024] ...  (+ the exact count)
//   flopscope account train --memory 8x80GB [--dtype bf16] [--optimizer adamw] [--no-master-weights]
//   flopscope account train --step-time 0.35s --model gpt2-small --batch 8 --seq 1024 --device h100
// Conventions: model.hpp (layers, activations), accounting.hpp (Note [PyTorch's flop counter],
// Note [full count]), training.hpp (Note [6NT]). Every count is exact; a value that does not fit
// is a one-line error naming it.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "account.hpp"
#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/accounting.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/memory.hpp"
#include "flopscope/model.hpp"
#include "flopscope/sizes.hpp"
#include "flopscope/training.hpp"
#include "account_comm.hpp"

namespace flopscope::cli {

using nlohmann::json;

// ---- exact numbers ----

std::string exact_and_short(Count128 value) {
  if (value < 10000 && value > -10000) return count_str(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2e", static_cast<double>(value));
  std::string text = buffer;  // "6.30e+24" -> "6.30e24"
  if (const auto e = text.find("e+"); e != std::string::npos) text.erase(e + 1, 1);
  return format_thousands128(value) + " (" + text + ")";
}

namespace {

// Note [exact JSON counts]: nlohmann::json holds 64-bit integers only. A larger count goes into
// the tree as a string with this prefix, and dump_exact writes it back without the quotes.
constexpr std::string_view kCountMarker = "\x01" "count:";

}  // namespace

json json_count(Count128 value) {
  if (value >= std::numeric_limits<std::int64_t>::min() && value <= std::numeric_limits<std::int64_t>::max())
    return static_cast<std::int64_t>(value);
  return std::string(kCountMarker) + count_str(value);
}

std::string dump_exact(const json& value) {
  std::string text = value.dump(2);
  // The marker dumps as "\u0001count:" inside the quotes.
  const std::string open = "\"\\u0001count:";
  for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const std::size_t close = text.find('"', at + open.size());
    text = text.substr(0, at) + text.substr(at + open.size(), close - at - open.size()) + text.substr(close + 1);
  }
  return text;
}

namespace {

// value = mantissa x 10^exponent, from "15e12", "1.5e9", "0.35", "70".
struct Decimal {
  Count128 mantissa = 0;
  int exponent = 0;
};

std::optional<Decimal> parse_decimal(std::string_view text) {
  Decimal out;
  std::size_t i = 0, digits = 0;
  auto digit = [&](char c) { return c >= '0' && c <= '9'; };
  auto take_digit = [&](char c) {
    if (__builtin_mul_overflow(out.mantissa, Count128{10}, &out.mantissa) ||
        __builtin_add_overflow(out.mantissa, Count128{c - '0'}, &out.mantissa))
      return false;
    ++digits;
    return true;
  };
  for (; i < text.size() && digit(text[i]); ++i)
    if (!take_digit(text[i])) return std::nullopt;
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && digit(text[i]); ++i) {
      if (!take_digit(text[i])) return std::nullopt;
      --out.exponent;
    }
  if (digits == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int exponent = 0;
    const std::size_t start = i;
    for (; i < text.size() && digit(text[i]) && exponent < 10000; ++i) exponent = exponent * 10 + (text[i] - '0');
    if (i == start) return std::nullopt;
    out.exponent += negative ? -exponent : exponent;
  }
  if (i != text.size()) return std::nullopt;
  return out;
}

// `text` (a count as parse_count reads it, or a decimal such as 1.5e12) times `unit`, as an exact
// non-negative int64; UsageError naming the option and the text otherwise.
std::int64_t exact_count(const std::string& option, const std::string& text, std::int64_t unit = 1) {
  if (text.starts_with('-')) throw UsageError{option + ": negative value '" + text + "'"};
  Count128 value = 0;
  const std::string overflow = option + ": '" + text + "' overflows a 64-bit count";
  if (auto count = parse_count(text)) {
    value = *count;
  } else if (auto decimal = parse_decimal(text)) {
    value = decimal->mantissa;
    for (int e = 0; e < decimal->exponent; ++e)
      if (__builtin_mul_overflow(value, Count128{10}, &value)) throw UsageError{overflow};
    Count128 divisor = 1;
    for (int e = decimal->exponent; e < 0; ++e)
      if (__builtin_mul_overflow(divisor, Count128{10}, &divisor)) throw UsageError{option + ": cannot parse '" + text + "'"};
    if (__builtin_mul_overflow(value, Count128{unit}, &value)) throw UsageError{overflow};
    if (value % divisor != 0) throw UsageError{option + ": '" + text + "' is not a whole number"};
    value /= divisor;
    unit = 1;
  } else {
    throw UsageError{option + ": cannot parse '" + text + "' (expected e.g. 70e9, 1.5e12, 8192, 64Ki)"};
  }
  if (__builtin_mul_overflow(value, Count128{unit}, &value) || value > std::numeric_limits<std::int64_t>::max())
    throw UsageError{overflow};
  return static_cast<std::int64_t>(value);
}

std::int64_t positive_exact_count(const std::string& option, const std::string& text) {
  const std::int64_t value = exact_count(option, text);
  if (value == 0) throw UsageError{option + ": expected a positive count (got '" + text + "')"};
  return value;
}

// parse_number's double alone (a decimal out of f64's range is +/-inf or 0, refused below).
std::optional<double> parse_number_value(std::string_view text) {
  const auto number = parse_number(text);
  return number ? std::optional<double>(number->value) : std::nullopt;
}

// A fraction in (0, 1]: "0.5" or "50%".
double fraction_option(const std::string& option, const std::string& text) {
  std::string number = text;
  double scale = 1;
  if (number.ends_with('%')) {
    number.pop_back();
    scale = 100;
  }
  auto value = parse_number_value(number);
  if (!value || !std::isfinite(*value) || *value / scale <= 0 || *value / scale > 1)
    throw UsageError{option + ": expected a fraction in (0, 1] such as 0.5 or 50% (got '" + text + "')"};
  return *value / scale;
}

// "0.35s", "350ms", "350us", "0.35" (seconds).
double seconds_option(const std::string& option, const std::string& text) {
  std::string number = text;
  double scale = 1;
  for (const auto& [suffix, factor] : {std::pair<const char*, double>{"ms", 1e-3}, {"us", 1e-6}, {"s", 1.0}})
    if (number.ends_with(suffix)) {
      number.resize(number.size() - std::string_view(suffix).size());
      scale = factor;
      break;
    }
  auto value = parse_number_value(number);
  if (!value || !std::isfinite(*value) || *value <= 0)
    throw UsageError{option + ": expected a positive time such as 0.35s or 350ms (got '" + text + "')"};
  return *value * scale;
}

// "8x80GB", "80GB", "640GiB", "1.5TB": bytes, exact.
std::int64_t memory_option(const std::string& option, const std::string& text) {
  std::string size = text;
  std::int64_t count = 1;
  if (const auto x = text.find('x'); x != std::string::npos) {
    count = positive_exact_count(option + " (device count)", text.substr(0, x));
    size = text.substr(x + 1);
  }
  static const std::pair<const char*, std::int64_t> units[] = {
      {"KiB", std::int64_t{1} << 10}, {"MiB", std::int64_t{1} << 20}, {"GiB", std::int64_t{1} << 30},
      {"TiB", std::int64_t{1} << 40}, {"KB", 1'000},                  {"MB", 1'000'000},
      {"GB", 1'000'000'000},          {"TB", 1'000'000'000'000},      {"B", 1}};
  const std::string expected = option + ": cannot parse '" + text + "' (expected e.g. 8x80GB, 80GB, 640GiB)";
  for (const auto& [suffix, unit] : units) {
    if (!size.ends_with(suffix)) continue;
    const std::string number = size.substr(0, size.size() - std::string_view(suffix).size());
    if (!parse_count(number) && !parse_decimal(number)) throw UsageError{expected};
    const std::int64_t each = exact_count(option, number, unit);
    std::int64_t total = 0;
    if (__builtin_mul_overflow(each, count, &total)) throw UsageError{option + ": '" + text + "' overflows a 64-bit count"};
    if (total == 0) throw UsageError{option + ": expected a positive size (got '" + text + "')"};
    return total;
  }
  throw UsageError{expected};
}

// ---- configs ----

constexpr std::array<std::string_view, 16> kConfigKeys = {
    "name", "vocab", "context", "d_model", "layers", "heads", "d_ff", "tied_embeddings", "ffn", "norm", "bias",
    "positions", "fused_qkv", "attention", "weight_layout", "source"};

std::string config_key_list() {
  std::string out;
  for (std::string_view key : kConfigKeys) out += (out.empty() ? "" : ", ") + std::string(key);
  return out;
}

std::int64_t config_int(const json& config, const std::string& where, const char* key) {
  const json& value = config.at(key);
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    throw UsageError{where + ": '" + key + "' " + value.dump() + " overflows a 64-bit count"};
  if (!value.is_number_integer()) throw UsageError{where + ": '" + key + "' must be an integer (got " + value.dump() + ")"};
  return value.get<std::int64_t>();
}

bool config_bool(const json& config, const std::string& where, const char* key) {
  const json& value = config.at(key);
  if (!value.is_boolean()) throw UsageError{where + ": '" + key + "' must be true or false (got " + value.dump() + ")"};
  return value.get<bool>();
}

template <class Kind>
Kind config_choice(const json& config, const std::string& where, const char* key,
                   std::optional<Kind> (*parse)(std::string_view), const char* choices) {
  const json& value = config.at(key);
  std::optional<Kind> kind;
  if (value.is_string()) kind = parse(value.get<std::string>());
  if (!kind) throw UsageError{where + ": '" + key + "' must be one of " + choices + " (got " + value.dump() + ")"};
  return *kind;
}

// A JSON object of kConfigKeys; vocab, context, d_model, layers and heads are required, the rest
// default to GPT-2's choices (d_ff = 4 x d_model).
TransformerConfig read_config(const std::string& path) {
  std::error_code error_code;
  if (std::filesystem::is_directory(path, error_code)) throw UsageError{"--config: '" + path + "' is a directory"};
  std::ifstream file(path);
  if (!file) throw UsageError{"--config: cannot read '" + path + "'"};
  json config;
  try {
    config = json::parse(file);
  } catch (const json::parse_error& error) {
    throw UsageError{"--config " + path + ": not JSON (" + error.what() + ")"};
  }
  const std::string where = "--config " + path;
  if (!config.is_object()) throw UsageError{where + ": expected a JSON object"};
  for (const auto& item : config.items())
    if (std::find(kConfigKeys.begin(), kConfigKeys.end(), item.key()) == kConfigKeys.end())
      throw UsageError{where + ": unknown key '" + item.key() + "' (known: " + config_key_list() + ")"};
  for (const char* key : {"vocab", "context", "d_model", "layers", "heads"})
    if (!config.contains(key)) throw UsageError{where + ": missing '" + key + "'"};
  TransformerConfig c;
  c.name = config.contains("name") && config["name"].is_string() ? config["name"].get<std::string>() : path;
  c.vocab = config_int(config, where, "vocab");
  c.context = config_int(config, where, "context");
  c.d_model = config_int(config, where, "d_model");
  c.layers = config_int(config, where, "layers");
  c.heads = config_int(config, where, "heads");
  if (config.contains("d_ff")) c.d_ff = config_int(config, where, "d_ff");
  else if (__builtin_mul_overflow(c.d_model, std::int64_t{4}, &c.d_ff))
    throw UsageError{where + ": d_ff = 4 x d_model overflows a 64-bit count"};
  if (config.contains("tied_embeddings")) c.tied_embeddings = config_bool(config, where, "tied_embeddings");
  if (config.contains("bias")) c.bias = config_bool(config, where, "bias");
  if (config.contains("fused_qkv")) c.fused_qkv = config_bool(config, where, "fused_qkv");
  if (config.contains("ffn")) c.ffn = config_choice<FfnKind>(config, where, "ffn", parse_ffn_kind, "gelu, swiglu");
  if (config.contains("norm"))
    c.norm = config_choice<NormKind>(config, where, "norm", parse_norm_kind, "layernorm, rmsnorm");
  if (config.contains("positions"))
    c.positions = config_choice<PositionKind>(config, where, "positions", parse_position_kind, "learned, rope, none");
  if (config.contains("attention"))
    c.attention = config_choice<AttentionKind>(config, where, "attention", parse_attention_kind, "math, fused");
  if (config.contains("weight_layout"))
    c.layout = config_choice<WeightLayout>(config, where, "weight_layout", parse_weight_layout, "out_in, in_out");
  c.source = config.contains("source") && config["source"].is_string() ? config["source"].get<std::string>() : path;
  try {
    c.validate();
  } catch (const std::invalid_argument& error) {
    throw UsageError{where + ": " + error.what()};
  }
  return c;
}

TransformerConfig preset_option(const std::string& name) {
  const TransformerConfig* preset = find_preset(name);
  if (!preset) throw UsageError{"--model: unknown preset '" + name + "' (known: " + preset_list() + ")"};
  return *preset;
}

json config_json(const TransformerConfig& c) {
  return {{"name", c.name},
          {"vocab", c.vocab},
          {"context", c.context},
          {"d_model", c.d_model},
          {"layers", c.layers},
          {"heads", c.heads},
          {"d_ff", c.d_ff},
          {"tied_embeddings", c.tied_embeddings},
          {"ffn", ffn_kind_name(c.ffn)},
          {"norm", norm_kind_name(c.norm)},
          {"bias", c.bias},
          {"positions", position_kind_name(c.positions)},
          {"fused_qkv", c.fused_qkv},
          {"attention", attention_kind_name(c.attention)},
          {"weight_layout", weight_layout_name(c.layout)},
          {"source", c.source}};
}

json totals_json(const FlopTotals& totals) {
  return {{"pytorch_flops", json_count(totals.pytorch_flops)},
          {"flops", json_count(totals.flops)},
          {"bytes", json_count(totals.bytes)}};
}

json layer_json(const LayerAccount& layer) {
  json saved = json::array(), matmuls = json::array();
  for (const auto& s : layer.saved) saved.push_back({{"name", s.name}, {"elements", s.elements}, {"bytes", s.bytes}});
  for (const auto& m : layer.matmuls)
    matmuls.push_back({{"name", m.name}, {"role", matmul_role_name(m.role)},
                       {"layout", matmul_layout_name(m.layout)}, {"batch", m.batch}, {"m", m.m}, {"n", m.n},
                       {"k", m.k}, {"flops", m.flops()}});
  return {{"name", layer.name},
          {"kind", layer.kind},
          {"parameters", layer.parameters},
          {"forward", totals_json(layer.forward)},
          {"backward", totals_json(layer.backward)},
          {"activation_bytes", layer.activation_bytes},
          {"saved", saved},
          {"matmuls", matmuls}};
}

constexpr const char* kPytorchConvention =
    "torch.utils.flop_counter's count: 2 FLOPs per multiply-add of mm, bmm, addmm, baddbmm, scaled dot-product "
    "attention and convolution, forward and backward; nothing for elementwise ops, bias, softmax, norms";
constexpr const char* kFullConvention =
    "the PyTorch count plus elementwise ops, bias, softmax, norms, activations, embeddings and the loss at the "
    "per-element costs of `flopscope account --rules`";

}  // namespace

json network_json(const Network& network) {
  json out = network.head;
  out["conventions"] = {{"pytorch_flops", kPytorchConvention}, {"flops", kFullConvention}};
  out["layers"] = json::array();
  for (const auto& layer : network.layers) out["layers"].push_back(layer_json(layer));
  out["totals"] = {{"parameters", network.totals.parameters},
                   {"forward", totals_json(network.totals.forward)},
                   {"backward", totals_json(network.totals.backward)},
                   {"step", totals_json(network.step())},
                   {"activation_bytes", network.totals.activation_bytes},
                   {"six_n_t", json_count(six_n_t(network.totals.parameters, network.tokens))}};
  return out;
}

namespace {

// ---- networks ----

Network with_totals(Network network) {
  network.totals = sum_layers(network.layers);
  return network;
}

Network transformer_network(const TransformerConfig& c, std::int64_t batch, std::int64_t seq, DType dtype) {
  ModelAccount model = transformer_account(c, batch, seq, dtype);
  char line[512];
  std::snprintf(line, sizeof line,
                "%s (vocab %lld, context %lld, d_model %lld, %lld layers, %lld heads, d_ff %lld, %s, %s, %s "
                "positions, %s embeddings, %s attention), batch %lld x seq %lld, activations in %s",
                c.name.c_str(), static_cast<long long>(c.vocab), static_cast<long long>(c.context),
                static_cast<long long>(c.d_model), static_cast<long long>(c.layers), static_cast<long long>(c.heads),
                static_cast<long long>(c.d_ff), std::string(ffn_kind_name(c.ffn)).c_str(),
                std::string(norm_kind_name(c.norm)).c_str(), std::string(position_kind_name(c.positions)).c_str(),
                c.tied_embeddings ? "tied" : "untied", std::string(attention_kind_name(c.attention)).c_str(),
                static_cast<long long>(batch), static_cast<long long>(seq), std::string(dtype_name(dtype)).c_str());
  return with_totals({.name = c.name,
                     .description = line,
                     .head = {{"model", config_json(c)}, {"batch", batch}, {"seq", seq}, {"tokens", model.tokens()},
                              {"dtype", dtype_name(dtype)}},
                     .layers = std::move(model.layers),
                     .tokens = model.tokens()});
}

// --mlp DIMxLAYERS: the lecture's Cruncher.
Network mlp_network(const std::string& text, std::int64_t batch, DType dtype) {
  const auto x = text.find('x');
  const auto dim = x == std::string::npos ? std::nullopt : parse_count(text.substr(0, x));
  const auto layers = x == std::string::npos ? std::nullopt : parse_count(text.substr(x + 1));
  if (!dim || !layers || *dim <= 0 || *layers <= 0)
    throw UsageError{"--mlp: expected DIMxLAYERS such as 4096x8 (got '" + text + "')"};
  const std::string name = "mlp-" + std::to_string(*dim) + "x" + std::to_string(*layers);
  return with_totals(
      {.name = name,
       .description = name + " (the lecture's deep linear network: " + std::to_string(*layers) + " layers " +
                      std::to_string(*dim) + " x " + std::to_string(*dim) + ", then " + std::to_string(*dim) +
                      " -> 1; no bias; x @ w), batch " + std::to_string(batch) + ", activations in " +
                      std::string(dtype_name(dtype)),
       .head = {{"mlp", {{"dim", *dim}, {"layers", *layers}}}, {"batch", batch}, {"tokens", batch},
                {"dtype", dtype_name(dtype)}},
       .layers = deep_linear_mlp(*dim, *layers, batch, dtype),
       .tokens = batch});
}

// ---- the per-layer table ----

// Right-aligned columns but the first; widths from the contents.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - row[i].size(), ' ');
      line += i == 0 ? row[i] + pad : "  " + pad + row[i];
    }
    while (line.ends_with(' ')) line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

// A name of a repeated layer split around its index: "h.3.attn" -> {"h.", "3", ".attn"},
// "layers.3" -> {"layers.", "3", ""}; other names have no index.
struct RepeatedName {
  std::string prefix, index, suffix;
};

RepeatedName split_repeated(const std::string& name) {
  for (const std::string prefix : {"h.", "layers."}) {
    if (!name.starts_with(prefix)) continue;
    const std::size_t dot = std::min(name.find('.', prefix.size()), name.size());
    return {prefix, name.substr(prefix.size(), dot - prefix.size()), name.substr(dot)};
  }
  return {name, "", ""};
}

bool same_figures(const LayerAccount& a, const LayerAccount& b) {
  return a.parameters == b.parameters && a.forward == b.forward && a.backward == b.backward &&
         a.activation_bytes == b.activation_bytes;
}

void print_network(const Network& network) {
  std::printf("%s\n\n", network.description.c_str());
  // One row per distinct layer: repeated layers with the same figures are one row, named
  // "h.*.attn" when it covers them all, else by its first and last index ("layers.1-7").
  struct Group {
    RepeatedName name;
    std::vector<const LayerAccount*> layers;
  };
  std::vector<Group> groups;
  std::map<std::string, std::size_t> instances;  // prefix + suffix -> how many layers
  for (const auto& layer : network.layers) {
    const RepeatedName name = split_repeated(layer.name);
    ++instances[name.prefix + name.suffix];
    auto group = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return !name.index.empty() && g.name.prefix == name.prefix && g.name.suffix == name.suffix &&
             same_figures(*g.layers.front(), layer);
    });
    if (group != groups.end()) group->layers.push_back(&layer);
    else groups.push_back({name, {&layer}});
  }
  std::vector<std::vector<std::string>> rows = {
      {"", "", "", "forward FLOPs", "", "backward FLOPs", "", ""},
      {"layer", "x", "parameters", "pytorch", "full", "pytorch", "full", "activation bytes"}};
  for (const auto& [name, layers] : groups) {
    const LayerAccount& l = *layers.front();
    std::string label = l.name;
    if (layers.size() > 1)
      label = name.prefix +
              (layers.size() == instances[name.prefix + name.suffix]
                   ? "*"
                   : split_repeated(l.name).index + "-" + split_repeated(layers.back()->name).index) +
              name.suffix;
    rows.push_back({label, std::to_string(layers.size()), format_thousands(l.parameters),
                    format_thousands128(l.forward.pytorch_flops), format_thousands128(l.forward.flops),
                    format_thousands128(l.backward.pytorch_flops), format_thousands128(l.backward.flops),
                    format_thousands(l.activation_bytes)});
  }
  const LayerTotals& t = network.totals;
  rows.push_back({"total", "", format_thousands(t.parameters), format_thousands128(t.forward.pytorch_flops),
                  format_thousands128(t.forward.flops), format_thousands128(t.backward.pytorch_flops),
                  format_thousands128(t.backward.flops), format_thousands(t.activation_bytes)});
  print_table(rows);
  std::printf("(figures per layer; x: how many identical layers; total: the whole network)\n\n");

  const FlopTotals step = network.step();
  const Count128 six = six_n_t(network.totals.parameters, network.tokens);
  std::printf("parameters     %s\n", format_thousands(network.totals.parameters).c_str());
  std::printf("step FLOPs     pytorch %s\n               full    %s\n", exact_and_short(step.pytorch_flops).c_str(),
              exact_and_short(step.flops).c_str());
  std::printf("6·N·T          %s (pytorch / 6·N·T = %.4f)\n", exact_and_short(six).c_str(),
              static_cast<double>(step.pytorch_flops) / static_cast<double>(six));
  std::printf("activations    %s saved for the backward pass\n", format_bytes_both(t.activation_bytes).c_str());
  std::printf("conventions:\n  pytorch: %s;\n  full:    %s.\n", kPytorchConvention, kFullConvention);
}

void print_presets(bool as_json) {
  json out = json::array();
  std::vector<std::vector<std::string>> rows = {
      {"preset", "parameters", "vocab", "context", "d_model", "layers", "heads", "d_ff", "ffn", "norm", "embeddings"}};
  for (const auto& c : transformer_presets()) {
    const std::int64_t parameters = transformer_parameters(c);
    json entry = config_json(c);
    entry["parameters"] = parameters;
    out.push_back(entry);
    rows.push_back({c.name, format_thousands(parameters), std::to_string(c.vocab), std::to_string(c.context),
                    std::to_string(c.d_model), std::to_string(c.layers), std::to_string(c.heads),
                    std::to_string(c.d_ff), std::string(ffn_kind_name(c.ffn)), std::string(norm_kind_name(c.norm)),
                    c.tied_embeddings ? "tied" : "untied"});
  }
  if (as_json) {
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  print_table(rows);
  std::printf("sources:\n");
  std::string last;
  for (const auto& c : transformer_presets())
    if (c.source != last) std::printf("  %s\n", (last = c.source).c_str());
}

void print_rules(bool as_json) {
  json out = json::array();
  std::vector<std::vector<std::string>> rows = {{"", "forward", "", "backward", "", ""},
                                                {"op", "per element", "per row", "per element", "per row", ""}};
  for (const auto& r : elementwise_rules()) {
    auto pass = [](const PassRule& p) {
      return json{{"flops_per_element", p.flops_per_element}, {"flops_per_row", p.flops_per_row},
                  {"reads_per_element", p.reads_per_element}, {"reads_per_row", p.reads_per_row},
                  {"writes_per_element", p.writes_per_element}, {"writes_per_row", p.writes_per_row}};
    };
    out.push_back({{"op", r.name}, {"forward", pass(r.forward)}, {"backward", pass(r.backward)},
                   {"forward_formula", r.forward_formula}, {"backward_formula", r.backward_formula}});
    rows.push_back({std::string(r.name), std::to_string(r.forward.flops_per_element),
                    std::to_string(r.forward.flops_per_row), std::to_string(r.backward.flops_per_element),
                    std::to_string(r.backward.flops_per_row), ""});
  }
  if (as_json) {
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("The full count's per-element costs (FLOPs; a row is the last dimension, which softmax and the norms "
              "reduce over).\nMatmul-class ops (mm, bmm, addmm, attention) count 2 per multiply-add in both "
              "conventions.\n\n");
  print_table(rows);
  std::printf("\nhow each was counted (one FLOP per arithmetic operation or transcendental):\n");
  for (const auto& r : elementwise_rules())
    std::printf("  %-16.*s forward: %.*s\n  %-16s backward: %.*s\n", int(r.name.size()), r.name.data(),
                int(r.forward_formula.size()), r.forward_formula.data(), "", int(r.backward_formula.size()),
                r.backward_formula.data());
}

// ---- train ----

struct TrainOptions {
  std::optional<std::int64_t> params, tokens, seq, batch, memory, devices;
  std::optional<TransformerConfig> model;
  std::optional<double> mfu, step_seconds;
  const GpuSpec* device = nullptr;
  DType dtype = DType::bf16;
  Optimizer optimizer = Optimizer::adamw;
  bool master_weights = true;
  bool json = false;
};

TrainOptions read_train_options(const Args& args) {
  TrainOptions o;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    const std::string option(name);
    if (name == "--params") o.params = positive_exact_count(option, options.take_value());
    else if (name == "--tokens") o.tokens = positive_exact_count(option, options.take_value());
    else if (name == "--seq") o.seq = positive_count(option, options.take_value());
    else if (name == "--batch") o.batch = positive_count(option, options.take_value());
    else if (name == "--devices") o.devices = positive_exact_count(option, options.take_value());
    else if (name == "--memory") o.memory = memory_option(option, options.take_value());
    else if (name == "--mfu") o.mfu = fraction_option(option, options.take_value());
    else if (name == "--step-time") o.step_seconds = seconds_option(option, options.take_value());
    else if (name == "--model") o.model = preset_option(options.take_value());
    else if (name == "--config") o.model = read_config(options.take_value());
    else if (name == "--dtype") o.dtype = dtype_option(options.take_value());
    else if (name == "--json") o.json = (options.take_flag(), true);
    else if (name == "--no-master-weights") o.master_weights = (options.take_flag(), false);
    else if (name == "--optimizer") {
      const std::string text = options.take_value();
      auto parsed = parse_optimizer(text);
      if (!parsed) throw UsageError{"--optimizer: unknown '" + text + "' (known: sgd, momentum, adam, adamw)"};
      o.optimizer = *parsed;
    } else if (name == "--device") {
      const std::string text = options.take_value();
      o.device = find_gpu_by_name(text);
      if (!o.device) throw UsageError{"--device: unknown device '" + text + "' (known: " + gpu_name_list() + ")"};
    } else if (name.empty()) {
      throw UsageError{"unexpected argument '" + options.take_positional() + "'"};
    } else {
      options.unknown();
    }
  }
  if (!o.tokens && !o.memory && !o.step_seconds)
    throw UsageError{"train needs --tokens T (with --params N or --model), --memory 8x80GB or --step-time 0.35s"};
  return o;
}

// The device's dense peak for the dtype's compute mode; UsageError when it has none.
double device_peak(const TrainOptions& o, std::string* description) {
  const std::string compute(peak_key(natural_compute_mode(o.dtype)));
  const DevicePeaks peaks = gpu_peaks(*o.device);
  const ComputePeak* peak = peaks.find(compute);
  if (!peak) throw UsageError{"--device: " + std::string(o.device->name) + " has no " + compute + " peak"};
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "%s, %s dense peak %.1f TFLOP/s (%s)", std::string(o.device->name).c_str(),
                compute.c_str(), peak->flops_per_second / 1e12, peak->formula.c_str());
  *description = buffer;
  return peak->flops_per_second;
}

json run_json(const TrainOptions& o, std::int64_t parameters, std::optional<RunFlops> exact, double peak,
              std::int64_t devices) {
  json out = {{"parameters", parameters}, {"tokens", *o.tokens},
              {"six_n_t", json_count(six_n_t(parameters, *o.tokens))}};
  if (exact)
    out["exact"] = {{"model", o.model->name}, {"seq", *o.seq}, {"pytorch_flops", json_count(exact->pytorch_flops)},
                    {"flops", json_count(exact->flops)}, {"rounded", exact->rounded}};
  if (peak > 0 && o.mfu) {
    const double seconds = training_seconds(six_n_t(parameters, *o.tokens), peak, devices, *o.mfu);
    out["device"] = {{"name", o.device->name}, {"peak_flops_per_second", peak}, {"devices", devices}, {"mfu", *o.mfu}};
    out["seconds"] = seconds;
    out["days"] = seconds / 86400;
    if (exact) out["exact"]["days"] = training_seconds(exact->pytorch_flops, peak, devices, *o.mfu) / 86400;
  }
  return out;
}

void print_run(const TrainOptions& o, std::int64_t parameters, std::optional<RunFlops> exact, double peak,
               const std::string& peak_text, std::int64_t devices) {
  const Count128 six = six_n_t(parameters, *o.tokens);
  std::printf("run: %s parameters x %s tokens\n", format_thousands(parameters).c_str(),
              format_thousands(*o.tokens).c_str());
  std::printf("  FLOPs 6·N·T            %s\n", exact_and_short(six).c_str());
  if (exact) {
    std::printf("  FLOPs exact, pytorch   %s  (%s at seq %s: with the attention term%s)\n",
                exact_and_short(exact->pytorch_flops).c_str(), o.model->name.c_str(),
                format_thousands(*o.seq).c_str(), exact->rounded ? "; tokens / seq rounded down" : "");
    std::printf("  FLOPs exact, full      %s\n", exact_and_short(exact->flops).c_str());
  }
  if (peak > 0 && o.mfu) {
    std::printf("  device                 %s\n", peak_text.c_str());
    std::printf("                         x %s devices at %.1f%% MFU\n", format_thousands(devices).c_str(),
                100 * *o.mfu);
    const double seconds = training_seconds(six, peak, devices, *o.mfu);
    std::printf("  wall-clock (6·N·T)     %.4g s = %.1f days\n", seconds, seconds / 86400);
    if (exact) {
      const double exact_seconds = training_seconds(exact->pytorch_flops, peak, devices, *o.mfu);
      std::printf("  wall-clock (exact)     %.4g s = %.1f days\n", exact_seconds, exact_seconds / 86400);
    }
  } else {
    std::printf("  (add --device h100 --mfu 0.5 [--devices N] for the wall-clock time)\n");
  }
}

json largest_json(const LargestModel& largest, std::int64_t memory) {
  json components = json::array();
  for (const auto& c : largest.memory.components)
    components.push_back({{"name", c.name}, {"dtype", dtype_name(c.dtype)}, {"bytes_per_parameter", c.bytes_per_parameter}});
  return {{"memory_bytes", memory}, {"bytes_per_parameter", largest.bytes_per_parameter},
          {"components", components}, {"largest_parameters", largest.parameters},
          {"state_bytes", largest.memory.total_bytes}};
}

void print_largest(const TrainOptions& o, const LargestModel& largest) {
  std::printf("memory: %s\n", format_bytes_both(*o.memory).c_str());
  std::printf("training state per parameter (%s parameters, %s%s): %lld B =", std::string(dtype_name(o.dtype)).c_str(),
              std::string(optimizer_name(o.optimizer)).c_str(),
              dtype_size(o.dtype) < 4 ? (o.master_weights ? ", f32 master weights" : ", no master weights") : "",
              static_cast<long long>(largest.bytes_per_parameter));
  for (std::size_t i = 0; i < largest.memory.components.size(); ++i) {
    const auto& c = largest.memory.components[i];
    std::printf("%s %s %lld", i ? " +" : "", c.name.c_str(), static_cast<long long>(c.bytes_per_parameter));
  }
  std::printf("\nlargest model whose training state fits: %s parameters\n",
              exact_and_short(largest.parameters).c_str());
  std::printf("its training state: %s\n", format_bytes_both(largest.memory.total_bytes).c_str());
  std::printf("(activations, temporary buffers and allocator fragmentation are not counted: a real run fits fewer)\n");
}

json mfu_json(const ModelAccount& model, double seconds, double peak, std::int64_t devices) {
  const FlopTotals step = model.step();
  const Count128 six = six_n_t(model.parameters, model.tokens());
  return {{"model", model.config.name}, {"batch", model.batch}, {"seq", model.seq}, {"step_seconds", seconds},
          {"devices", devices}, {"peak_flops_per_second", peak},
          {"step_pytorch_flops", json_count(step.pytorch_flops)}, {"step_flops", json_count(step.flops)},
          {"six_n_t", json_count(six)},
          {"mfu", model_flops_utilization(step.pytorch_flops, seconds, peak, devices)},
          {"mfu_full", model_flops_utilization(step.flops, seconds, peak, devices)},
          {"mfu_six_n_t", model_flops_utilization(six, seconds, peak, devices)},
          {"tokens_per_second", static_cast<double>(model.tokens()) / seconds}};
}

void print_mfu(const ModelAccount& model, double seconds, double peak, const std::string& peak_text,
               std::int64_t devices) {
  const FlopTotals step = model.step();
  const Count128 six = six_n_t(model.parameters, model.tokens());
  std::printf("step: %s, batch %s x seq %s = %s tokens in %.6g s on %s device%s\n", model.config.name.c_str(),
              format_thousands(model.batch).c_str(), format_thousands(model.seq).c_str(),
              format_thousands(model.tokens()).c_str(), seconds, format_thousands(devices).c_str(),
              devices == 1 ? "" : "s");
  std::printf("  device        %s\n", peak_text.c_str());
  std::printf("  MFU           %.2f%%  (step FLOPs, pytorch convention: %s)\n",
              100 * model_flops_utilization(step.pytorch_flops, seconds, peak, devices),
              exact_and_short(step.pytorch_flops).c_str());
  std::printf("  full count    %.2f%%  (%s)\n", 100 * model_flops_utilization(step.flops, seconds, peak, devices),
              exact_and_short(step.flops).c_str());
  std::printf("  6·N·T         %.2f%%  (%s)\n", 100 * model_flops_utilization(six, seconds, peak, devices),
              exact_and_short(six).c_str());
  std::printf("  throughput    %.1f tokens/s\n", static_cast<double>(model.tokens()) / seconds);
}

int cmd_train(const Args& args) {
  if (wants_data_parallel(args)) return cmd_train_data_parallel(args);  // --busbw: account_comm.cpp
  TrainOptions o = read_train_options(args);
  std::string peak_text;
  const double peak = o.device ? device_peak(o, &peak_text) : 0;
  const std::int64_t devices = o.devices.value_or(1);
  json out = json::object();
  bool printed = false;
  auto separate = [&] {
    if (printed && !o.json) std::printf("\n");
    printed = true;
  };
  if (o.tokens) {
    if (!o.params && !o.model) throw UsageError{"--tokens needs --params N or --model NAME / --config FILE"};
    if (o.mfu && !o.device) throw UsageError{"--mfu needs --device (known: " + gpu_name_list() + ")"};
    std::optional<RunFlops> exact;
    if (o.model) {
      if (!o.seq) o.seq = o.model->context;
      exact = run_flops(*o.model, *o.tokens, *o.seq);
    }
    const std::int64_t parameters = o.params ? *o.params : transformer_parameters(*o.model);
    separate();
    if (o.json) out["run"] = run_json(o, parameters, exact, peak, devices);
    else print_run(o, parameters, exact, peak, peak_text, devices);
  }
  if (o.memory) {
    const LargestModel largest = largest_trainable_model(*o.memory, o.dtype, o.optimizer, o.master_weights);
    separate();
    if (o.json) out["memory"] = largest_json(largest, *o.memory);
    else print_largest(o, largest);
  }
  if (o.step_seconds) {
    if (!o.model || !o.batch || !o.seq || !o.device)
      throw UsageError{"--step-time needs --model (or --config), --batch, --seq and --device"};
    const ModelAccount model = transformer_account(*o.model, *o.batch, *o.seq, o.dtype);
    separate();
    if (o.json) out["step"] = mfu_json(model, *o.step_seconds, peak, devices);
    else print_mfu(model, *o.step_seconds, peak, peak_text, devices);
  }
  if (o.json) std::printf("%s\n", dump_exact(out).c_str());
  return 0;
}

}  // namespace

int cmd_account(const Args& args) {
  if (!args.empty() && args[0] == "train") return cmd_train(Args(args.begin() + 1, args.end()));
  std::optional<TransformerConfig> config;
  std::optional<std::int64_t> batch, seq;
  std::optional<std::string> predict, mlp;
  DType dtype = DType::bf16;
  bool json_output = false, list = false, rules = false;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    const std::string option(name);
    if (name == "--model") config = preset_option(options.take_value());
    else if (name == "--config") config = read_config(options.take_value());
    else if (name == "--mlp") mlp = options.take_value();
    else if (name == "--batch") batch = positive_count(option, options.take_value());
    else if (name == "--seq") seq = positive_count(option, options.take_value());
    else if (name == "--dtype") dtype = dtype_option(options.take_value());
    else if (name == "--predict") predict = options.take_value();
    else if (name == "--json") json_output = (options.take_flag(), true);
    else if (name == "--list") list = (options.take_flag(), true);
    else if (name == "--rules") rules = (options.take_flag(), true);
    else if (name.empty()) throw UsageError{"unexpected argument '" + options.take_positional() + "'"};
    else options.unknown();
  }
  if (list) return print_presets(json_output), 0;
  if (rules) return print_rules(json_output), 0;
  if (!config && !mlp)
    throw UsageError{"needs --model NAME, --config FILE.json or --mlp DIMxLAYERS (presets: " + preset_list() + ")"};
  if (config && mlp) throw UsageError{"--mlp and --model/--config: one network at a time"};
  if (mlp && seq) throw UsageError{"--seq: the MLP has no sequence (its rows are --batch)"};
  Network network;
  try {
    network = config ? transformer_network(*config, batch.value_or(1), seq.value_or(config->context), dtype)
                     : mlp_network(*mlp, batch.value_or(1), dtype);
  } catch (const SizeOverflow& error) {  // say which input made a count too large
    throw UsageError{(config ? config->name : "--mlp " + *mlp) + " at batch " + std::to_string(batch.value_or(1)) +
                     (config ? " x seq " + std::to_string(seq.value_or(config->context)) : "") + ": " + error.what()};
  }
  if (predict) return account_predict(*predict, network, json_output);
  if (json_output) std::printf("%s\n", dump_exact(network_json(network)).c_str());
  else print_network(network);
  return 0;
}

}  // namespace flopscope::cli
