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
#include "table.hpp"
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

// The per-layer table: in JSON ("layers") one row per layer; in text (print_network) one row per
// distinct layer ("x": how many), then the total.
Table layer_table() {
  return {.columns = {{"name", {"layer"}},
                      {"", {"x"}},
                      {"kind", {}},
                      {"parameters", {"parameters"}, kThousands},
                      {"active_parameters", {}},
                      {"forward.pytorch_flops", {"forward FLOPs", "pytorch"}, kThousands},
                      {"forward.flops", {"", "full"}, kThousands},
                      {"forward.bytes", {}},
                      {"backward.pytorch_flops", {"backward FLOPs", "pytorch"}, kThousands},
                      {"backward.flops", {"", "full"}, kThousands},
                      {"backward.bytes", {}},
                      {"activation_bytes", {"activation bytes"}, kThousands},
                      {"saved", {}},
                      {"matmuls", {}}}};
}

// A row of layer_table() for a layer, or for `repeats` layers with the same figures.
Row layer_row(std::string label, Cell repeats, const LayerAccount& layer) {
  json saved = json::array(), matmuls = json::array();
  for (const auto& s : layer.saved) saved.push_back({{"name", s.name}, {"elements", s.elements}, {"bytes", s.bytes}});
  for (const auto& m : layer.matmuls)
    matmuls.push_back({{"name", m.name}, {"role", matmul_role_name(m.role)},
                       {"layout", matmul_layout_name(m.layout)}, {"batch", m.batch}, {"m", m.m}, {"n", m.n},
                       {"k", m.k}, {"flops", m.flops()}});
  const FlopTotals &f = layer.forward, &b = layer.backward;
  return {std::move(label), std::move(repeats), layer.kind, layer.parameters, layer.active_parameters,
          f.pytorch_flops, f.flops, f.bytes, b.pytorch_flops, b.flops, b.bytes, layer.activation_bytes,
          Cell::json(std::move(saved)), Cell::json(std::move(matmuls))};
}

// The text's last row of layer_table(): the whole network's figures.
Row total_row(const LayerTotals& t) {
  const FlopTotals &f = t.forward, &b = t.backward;
  return {"total", {}, {}, t.parameters, {}, f.pytorch_flops, f.flops, f.bytes, b.pytorch_flops, b.flops, b.bytes,
          t.activation_bytes, {}, {}};
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
  Table layers = layer_table();
  for (const auto& layer : network.layers) layers.rows.push_back(layer_row(layer.name, {}, layer));
  out["layers"] = table_json(layers);
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
  Table table = layer_table();
  for (const auto& [name, layers] : groups) {
    const LayerAccount& l = *layers.front();
    std::string label = l.name;
    if (layers.size() > 1)
      label = name.prefix +
              (layers.size() == instances[name.prefix + name.suffix]
                   ? "*"
                   : split_repeated(l.name).index + "-" + split_repeated(layers.back()->name).index) +
              name.suffix;
    table.rows.push_back(layer_row(label, layers.size(), l));
  }
  const LayerTotals& t = network.totals;
  table.rows.push_back(total_row(t));
  print_text(table);
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
  // In JSON each preset is its whole config (config_json, every key) and its parameters.
  Table table = {.columns = {{"name", {"preset"}},
                             {"parameters", {"parameters"}, kThousands},
                             {"vocab", {"vocab"}},
                             {"context", {"context"}},
                             {"d_model", {"d_model"}},
                             {"layers", {"layers"}},
                             {"heads", {"heads"}},
                             {"d_ff", {"d_ff"}},
                             {"ffn", {"ffn"}},
                             {"norm", {"norm"}},
                             {"", {"embeddings"}},
                             {.key = "", .header = {}, .merge = true}}};
  for (const auto& c : transformer_presets())
    table.rows.push_back({c.name, transformer_parameters(c), c.vocab, c.context, c.d_model, c.layers, c.heads, c.d_ff,
                          std::string(ffn_kind_name(c.ffn)), std::string(norm_kind_name(c.norm)),
                          c.tied_embeddings ? "tied" : "untied", Cell::json(config_json(c))});
  if (as_json) {
    std::printf("%s\n", table_json(table).dump(2).c_str());
    return;
  }
  print_text(table);
  std::printf("sources:\n");
  std::string last;
  for (const auto& c : transformer_presets())
    if (c.source != last) std::printf("  %s\n", (last = c.source).c_str());
}

void print_rules(bool as_json) {
  // The text shows the FLOPs; the JSON also the reads, the writes and how each was counted.
  Table table = {.columns = {{"op", {"op"}},
                             {"forward.flops_per_element", {"forward", "per element"}},
                             {"forward.flops_per_row", {"", "per row"}},
                             {"backward.flops_per_element", {"backward", "per element"}},
                             {"backward.flops_per_row", {"", "per row"}},
                             {"forward.reads_per_element", {}},
                             {"forward.reads_per_row", {}},
                             {"forward.writes_per_element", {}},
                             {"forward.writes_per_row", {}},
                             {"backward.reads_per_element", {}},
                             {"backward.reads_per_row", {}},
                             {"backward.writes_per_element", {}},
                             {"backward.writes_per_row", {}},
                             {"forward_formula", {}},
                             {"backward_formula", {}}}};
  for (const auto& r : elementwise_rules())
    table.rows.push_back({std::string(r.name), r.forward.flops_per_element, r.forward.flops_per_row,
                          r.backward.flops_per_element, r.backward.flops_per_row, r.forward.reads_per_element,
                          r.forward.reads_per_row, r.forward.writes_per_element, r.forward.writes_per_row,
                          r.backward.reads_per_element, r.backward.reads_per_row, r.backward.writes_per_element,
                          r.backward.writes_per_row, std::string(r.forward_formula), std::string(r.backward_formula)});
  if (as_json) {
    std::printf("%s\n", table_json(table).dump(2).c_str());
    return;
  }
  std::printf("The full count's per-element costs (FLOPs; a row is the last dimension, which softmax and the norms "
              "reduce over).\nMatmul-class ops (mm, bmm, addmm, attention) count 2 per multiply-add in both "
              "conventions.\n\n");
  print_text(table);
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
