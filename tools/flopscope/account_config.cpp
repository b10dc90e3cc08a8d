// flopscope account: a transformer from --model (a preset) or --config (a JSON file of the keys
// below), and back to JSON.

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

namespace flopscope::cli {

using nlohmann::json;
namespace {

std::int64_t config_int(const json& value, const std::string& where, std::string_view key) {
  const std::string k(key);
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    throw UsageError{where + ": '" + k + "' " + value.dump() + " overflows a 64-bit count"};
  if (!value.is_number_integer()) throw UsageError{where + ": '" + k + "' must be an integer (got " + value.dump() + ")"};
  return value.get<std::int64_t>();
}

bool config_bool(const json& value, const std::string& where, std::string_view key) {
  if (!value.is_boolean())
    throw UsageError{where + ": '" + std::string(key) + "' must be true or false (got " + value.dump() + ")"};
  return value.get<bool>();
}

std::string config_string(const json& value, const std::string& where, std::string_view key) {
  if (!value.is_string()) throw UsageError{where + ": '" + std::string(key) + "' must be a string (got " + value.dump() + ")"};
  return value.get<std::string>();
}

template <class Kind>
Kind config_choice(const json& value, const std::string& where, std::string_view key,
                   std::optional<Kind> (*parse)(std::string_view), const char* choices) {
  std::optional<Kind> kind;
  if (value.is_string()) kind = parse(value.get<std::string>());
  if (!kind)
    throw UsageError{where + ": '" + std::string(key) + "' must be one of " + choices + " (got " + value.dump() + ")"};
  return *kind;
}

// Note [config keys]: the one list of --config's keys. Each reads its value into the config and
// writes it back (config_json); `account --help` lists them. A key not here is an error.
struct ConfigKey {
  std::string_view name;
  bool required;
  std::string_view help;
  void (*read)(TransformerConfig&, const json&, const std::string& where);
  json (*write)(const TransformerConfig&);
};

#define FLOPSCOPE_INT_KEY(key, field, required, help)                                                         \
  ConfigKey {                                                                                                 \
    key, required, help, [](TransformerConfig& c, const json& v, const std::string& w) { c.field = config_int(v, w, key); }, \
        [](const TransformerConfig& c) { return json(c.field); }                                              \
  }
#define FLOPSCOPE_BOOL_KEY(key, field, help)                                                                   \
  ConfigKey {                                                                                                 \
    key, false, help, [](TransformerConfig& c, const json& v, const std::string& w) { c.field = config_bool(v, w, key); }, \
        [](const TransformerConfig& c) { return json(bool(c.field)); }                                        \
  }
#define FLOPSCOPE_OPTIONAL_BOOL_KEY(key, field, help)                                                          \
  ConfigKey {                                                                                                 \
    key, false, help, [](TransformerConfig& c, const json& v, const std::string& w) { c.field = config_bool(v, w, key); }, \
        [](const TransformerConfig& c) { return json(c.field.value_or(c.bias)); }                             \
  }
#define FLOPSCOPE_CHOICE_KEY(key, field, parse, name_of, choices, help)                                        \
  ConfigKey {                                                                                                 \
    key, false, help,                                                                                         \
        [](TransformerConfig& c, const json& v, const std::string& w) { c.field = config_choice(v, w, key, parse, choices); }, \
        [](const TransformerConfig& c) { return json(std::string(name_of(c.field))); }                       \
  }

const std::array<ConfigKey, 24> kConfigKeys = {{
    {"name", false, "the model's name (default: the file's path)",
     [](TransformerConfig& c, const json& v, const std::string& w) { c.name = config_string(v, w, "name"); },
     [](const TransformerConfig& c) { return json(c.name); }},
    FLOPSCOPE_INT_KEY("vocab", vocab, true, "vocabulary size"),
    FLOPSCOPE_INT_KEY("context", context, true, "longest sequence (the largest --seq)"),
    FLOPSCOPE_INT_KEY("d_model", d_model, true, "model width"),
    FLOPSCOPE_INT_KEY("layers", layers, true, "transformer blocks"),
    FLOPSCOPE_INT_KEY("heads", heads, true, "query heads"),
    FLOPSCOPE_INT_KEY("kv_heads", kv_heads, false, "key/value heads (default heads; 1: multi-query)"),
    FLOPSCOPE_INT_KEY("head_dim", head_dim, false, "width of a head (default d_model / heads)"),
    FLOPSCOPE_INT_KEY("d_ff", d_ff, false, "FFN hidden width (default 4 x d_model)"),
    FLOPSCOPE_INT_KEY("experts", experts, false, "experts of a MoE FFN (default 0: dense)"),
    FLOPSCOPE_INT_KEY("experts_per_token", experts_per_token, false, "experts each token is routed to"),
    FLOPSCOPE_BOOL_KEY("tied_embeddings", tied_embeddings, "LM head shares the token embedding (default true)"),
    FLOPSCOPE_CHOICE_KEY("ffn", ffn, parse_ffn_kind, ffn_kind_name, "gelu, swiglu, geglu", "FFN kind (default gelu)"),
    FLOPSCOPE_CHOICE_KEY("norm", norm, parse_norm_kind, norm_kind_name, "layernorm, rmsnorm",
                         "norm kind (default layernorm)"),
    FLOPSCOPE_BOOL_KEY("bias", bias, "biases in the linear layers (default true)"),
    FLOPSCOPE_OPTIONAL_BOOL_KEY("qkv_bias", qkv_bias, "biases on q, k, v (default: bias)"),
    FLOPSCOPE_OPTIONAL_BOOL_KEY("out_bias", out_bias, "bias on the attention output (default: bias)"),
    FLOPSCOPE_OPTIONAL_BOOL_KEY("mlp_bias", mlp_bias, "biases in the FFN (default: bias)"),
    FLOPSCOPE_CHOICE_KEY("positions", positions, parse_position_kind, position_kind_name, "learned, rope, none",
                         "position encoding (default learned)"),
    FLOPSCOPE_BOOL_KEY("fused_qkv", fused_qkv, "one q/k/v projection (default true)"),
    FLOPSCOPE_CHOICE_KEY("attention", attention, parse_attention_kind, attention_kind_name, "math, fused",
                         "attention kernel (default math)"),
    FLOPSCOPE_CHOICE_KEY("weight_layout", layout, parse_weight_layout, weight_layout_name, "out_in, in_out",
                         "weights stored (out, in) as nn.Linear or (in, out) (default out_in)"),
    FLOPSCOPE_BOOL_KEY("scaled_embedding", scaled_embedding, "embeddings times sqrt(d_model), Gemma (default false)"),
    {"source", false, "where the numbers come from",
     [](TransformerConfig& c, const json& v, const std::string& w) { c.source = config_string(v, w, "source"); },
     [](const TransformerConfig& c) { return json(c.source); }},
}};

#undef FLOPSCOPE_INT_KEY
#undef FLOPSCOPE_BOOL_KEY
#undef FLOPSCOPE_OPTIONAL_BOOL_KEY
#undef FLOPSCOPE_CHOICE_KEY

std::string config_key_list() {
  std::string out;
  for (const ConfigKey& key : kConfigKeys) out += (out.empty() ? "" : ", ") + std::string(key.name);
  return out;
}

}  // namespace

std::string config_key_help() {
  std::string out;
  for (const ConfigKey& key : kConfigKeys)
    out += "  " + std::string(key.name) + std::string(key.name.size() < 18 ? 18 - key.name.size() : 1, ' ') +
           std::string(key.help) + (key.required ? " (required)" : "") + "\n";
  return out;
}

// A JSON object of kConfigKeys; the required ones must be there, the rest default to GPT-2's
// choices (d_ff = 4 x d_model).
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
    if (std::none_of(kConfigKeys.begin(), kConfigKeys.end(), [&](const ConfigKey& key) { return key.name == item.key(); }))
      throw UsageError{where + ": unknown key '" + item.key() + "' (known: " + config_key_list() + ")"};
  for (const ConfigKey& key : kConfigKeys)
    if (key.required && !config.contains(key.name)) throw UsageError{where + ": missing '" + std::string(key.name) + "'"};
  TransformerConfig c;
  c.name = c.source = path;
  for (const ConfigKey& key : kConfigKeys)
    if (config.contains(key.name)) key.read(c, config[std::string(key.name)], where);
  if (!config.contains("d_ff") && __builtin_mul_overflow(c.d_model, std::int64_t{4}, &c.d_ff))
    throw UsageError{where + ": d_ff = 4 x d_model overflows a 64-bit count"};
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
  json out = json::object();
  for (const ConfigKey& key : kConfigKeys) out[std::string(key.name)] = key.write(c);
  return out;
}

}  // namespace flopscope::cli
