// flopscope account (no subcommand): a network's per-layer table, its JSON, the presets and the
// full count's rules.

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
          {"active_parameters", layer.active_parameters},
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
                   {"active_parameters", network.totals.active_parameters},
                   {"forward", totals_json(network.totals.forward)},
                   {"backward", totals_json(network.totals.backward)},
                   {"step", totals_json(network.step())},
                   {"activation_bytes", network.totals.activation_bytes},
                   {"six_n_t", json_count(six_n_t(network.totals.active_parameters, network.tokens))}};
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
  // 6·N·T with N the parameters a token uses (a MoE model's active ones).
  const Count128 six = six_n_t(network.totals.active_parameters, network.tokens);
  std::printf("parameters     %s\n", format_thousands(network.totals.parameters).c_str());
  if (network.totals.active_parameters != network.totals.parameters)
    std::printf("  active       %s per token (the router and the chosen experts)\n",
                format_thousands(network.totals.active_parameters).c_str());
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

}  // namespace

int account_model(const Args& args) {
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
    else if (name == "--hf-config") config = read_hf_config(options.take_value());
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
