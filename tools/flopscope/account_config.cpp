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

}  // namespace

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

}  // namespace flopscope::cli
