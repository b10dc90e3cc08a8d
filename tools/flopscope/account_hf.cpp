// flopscope account --hf-config PATH: a transformer from a Hugging Face config.json (the file, or a
// folder holding it) of model type llama, mistral, qwen2, gemma, gpt2 or mixtral.
//
// Note [Hugging Face keys]: every key of the file is one of three kinds, per model type:
// - read: it changes a count (sizes, heads, biases, tying, experts, the activation);
// - accepted: it cannot change a count in either convention (token ids, dropout, epsilons, rope
//   frequencies, the sliding window: eager and SDPA attention compute the whole score matrix and
//   mask it, so the count is the same; initialisation; the generic PretrainedConfig keys);
// - anything else: a one-line error naming the key (it may change the count: never ignored).
// A key whose value would change the model beyond what flopscope counts (a GPT-2 with cross
// attention, an activation it has no rule for) is an error naming it too. Missing keys take
// transformers' defaults where the class has one that keeps the count (num_key_value_heads =
// num_attention_heads, head_dim = hidden_size / num_attention_heads, no biases, tied embeddings as
// PretrainedConfig's default); the sizes are required.

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "account.hpp"
#include "commands.hpp"
#include "flopscope/model.hpp"

namespace flopscope::cli {

using nlohmann::json;

namespace {

// Keys any config may hold that change no count (PretrainedConfig's own, and the usual extras).
constexpr std::array<std::string_view, 67> kGenericKeys = {
    "_name_or_path", "architectures", "model_type", "transformers_version", "torch_dtype", "dtype",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "initializer_range", "use_cache", "return_dict", "output_hidden_states", "output_attentions",
    "torchscript", "use_bfloat16", "tf_legacy_loss", "pruned_heads", "chunk_size_feed_forward",
    "is_encoder_decoder", "is_decoder", "cross_attention_hidden_size", "tie_encoder_decoder",
    "finetuning_task", "id2label", "label2id", "tokenizer_class", "prefix", "task_specific_params",
    "problem_type", "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
    "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p", "typical_p",
    "repetition_penalty", "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size",
    "bad_words_ids", "num_return_sequences", "output_scores", "return_dict_in_generate",
    "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
    "suppress_tokens", "begin_suppress_tokens", "quantization_config", "attn_implementation",
    "_attn_implementation_autoset", "pretraining_tp", "rms_norm_eps", "rope_theta", "rope_scaling",
    "attention_dropout", "layer_norm_eps", "rope_parameters"};

struct ModelType {
  std::string_view name;
  std::vector<std::string_view> read, accepted;
};

const std::vector<ModelType>& model_types() {
  static const std::vector<std::string_view> llama_read = {
      "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
      "num_key_value_heads", "head_dim", "max_position_embeddings", "tie_word_embeddings", "hidden_act"};
  auto with = [](std::vector<std::string_view> base, std::vector<std::string_view> more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  static const std::vector<ModelType> table = {
      {"llama", with(llama_read, {"attention_bias", "mlp_bias"}), {}},
      {"mistral", llama_read, {"sliding_window"}},
      {"qwen2", llama_read, {"sliding_window", "use_sliding_window", "max_window_layers", "layer_types"}},
      {"gemma", with(llama_read, {"attention_bias", "hidden_activation"}), {"use_bidirectional_attention"}},
      {"mixtral", with(llama_read, {"num_local_experts", "num_experts_per_tok"}),
       {"sliding_window", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise"}},
      {"gpt2",
       {"vocab_size", "n_embd", "n_layer", "n_head", "n_positions", "n_inner", "activation_function",
        "tie_word_embeddings", "add_cross_attention", "scale_attn_by_inverse_layer_idx"},
       {"n_ctx", "resid_pdrop", "embd_pdrop", "attn_pdrop", "layer_norm_epsilon", "summary_type",
        "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
        "scale_attn_weights", "reorder_and_upcast_attn", "n_special", "predict_special_tokens"}},
  };
  return table;
}

std::string type_list() {
  std::string out;
  for (const auto& type : model_types()) out += (out.empty() ? "" : ", ") + std::string(type.name);
  return out;
}

class HfReader {
 public:
  HfReader(const json& config, std::string where) : config_(config), where_(std::move(where)) {}

  bool has(std::string_view key) const { return config_.contains(key) && !config_[std::string(key)].is_null(); }

  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    throw UsageError{where_ + ": '" + std::string(key) + "' " + what};
  }

  std::int64_t size(std::string_view key) const {
    if (!has(key)) throw UsageError{where_ + ": missing '" + std::string(key) + "'"};
    const json& value = config_[std::string(key)];
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      fail(key, value.dump() + " overflows a 64-bit count");
    if (!value.is_number_integer()) fail(key, "must be an integer (got " + value.dump() + ")");
    const std::int64_t n = value.get<std::int64_t>();
    if (n <= 0) fail(key, "must be positive (got " + std::to_string(n) + ")");
    return n;
  }
  std::int64_t size_or(std::string_view key, std::int64_t fallback) const { return has(key) ? size(key) : fallback; }

  bool flag_or(std::string_view key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& value = config_[std::string(key)];
    if (!value.is_boolean()) fail(key, "must be true or false (got " + value.dump() + ")");
    return value.get<bool>();
  }

  std::string text_or(std::string_view key, std::string fallback) const {
    if (!has(key)) return fallback;
    const json& value = config_[std::string(key)];
    if (!value.is_string()) fail(key, "must be a string (got " + value.dump() + ")");
    return value.get<std::string>();
  }

  // `a` divides `b` (both keys of the file).
  void divides(std::string_view a, std::int64_t a_value, std::string_view b, std::int64_t b_value) const {
    if (b_value % a_value != 0)
      throw UsageError{where_ + ": '" + std::string(a) + "' " + std::to_string(a_value) + " does not divide '" +
                       std::string(b) + "' " + std::to_string(b_value)};
  }

 private:
  const json& config_;
  std::string where_;
};

// The activation's FFN kind: gated (SiLU or GELU-tanh) for the Llama family.
FfnKind gated_ffn(const HfReader& hf, std::string_view key, const std::string& act) {
  if (act == "silu" || act == "swish") return FfnKind::swiglu;
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu") return FfnKind::geglu;
  hf.fail(key, "'" + act + "' has no rule in flopscope's count (known: silu, gelu_pytorch_tanh)");
}

}  // namespace

TransformerConfig read_hf_config(const std::string& path) {
  std::error_code error_code;
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(file, error_code)) file /= "config.json";
  std::ifstream in(file);
  if (!in) throw UsageError{"--hf-config: cannot read '" + file.string() + "'"};
  const std::string where = "--hf-config " + file.string();
  json config;
  try {
    config = json::parse(in);
  } catch (const json::parse_error& error) {
    throw UsageError{where + ": not JSON (" + error.what() + ")"};
  }
  if (!config.is_object()) throw UsageError{where + ": expected a JSON object"};
  if (!config.contains("model_type") || !config["model_type"].is_string())
    throw UsageError{where + ": missing 'model_type' (known: " + type_list() + ")"};
  const std::string model_type = config["model_type"].get<std::string>();
  const auto& types = model_types();
  const auto type = std::find_if(types.begin(), types.end(), [&](const ModelType& t) { return t.name == model_type; });
  if (type == types.end())
    throw UsageError{where + ": 'model_type' '" + model_type + "' is not one flopscope counts (known: " + type_list() + ")"};
  for (const auto& item : config.items()) {
    const std::string_view key = item.key();
    auto in_list = [&](const auto& list) { return std::find(list.begin(), list.end(), key) != list.end(); };
    if (!in_list(type->read) && !in_list(type->accepted) && !in_list(kGenericKeys))
      throw UsageError{where + ": unknown key '" + item.key() + "' for model_type " + model_type +
                       " (it may change the count; flopscope reads only keys it knows)"};
  }

  const HfReader hf(config, where);
  TransformerConfig c;
  c.name = hf.text_or("_name_or_path", "");
  if (c.name.empty()) c.name = model_type + " (" + file.string() + ")";
  c.source = file.string();
  c.norm = NormKind::rms_norm;
  c.positions = PositionKind::rope;
  c.fused_qkv = false;
  c.layout = WeightLayout::out_in;
  c.attention = AttentionKind::math;
  c.bias = false;
  if (model_type == "gpt2") {
    c.vocab = hf.size("vocab_size");
    c.d_model = hf.size("n_embd");
    c.layers = hf.size("n_layer");
    c.heads = hf.size("n_head");
    c.context = hf.size("n_positions");
    c.d_ff = hf.size_or("n_inner", 4 * c.d_model);
    hf.divides("n_head", c.heads, "n_embd", c.d_model);
    const std::string act = hf.text_or("activation_function", "gelu_new");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
      hf.fail("activation_function", "'" + act + "' has no rule in flopscope's count (known: gelu_new)");
    if (hf.flag_or("add_cross_attention", false)) hf.fail("add_cross_attention", "true: cross attention is not counted");
    if (hf.flag_or("scale_attn_by_inverse_layer_idx", false))
      hf.fail("scale_attn_by_inverse_layer_idx", "true: the extra scale is not counted");
    c.tied_embeddings = hf.flag_or("tie_word_embeddings", true);
    c.ffn = FfnKind::gelu;
    c.norm = NormKind::layer_norm;
    c.positions = PositionKind::learned;
    c.bias = true;
    c.fused_qkv = true;
    c.layout = WeightLayout::in_out;  // Conv1D
  } else {
    c.vocab = hf.size("vocab_size");
    c.d_model = hf.size("hidden_size");
    c.d_ff = hf.size("intermediate_size");
    c.layers = hf.size("num_hidden_layers");
    c.heads = hf.size("num_attention_heads");
    c.context = hf.size("max_position_embeddings");
    c.kv_heads = hf.size_or("num_key_value_heads", c.heads);
    hf.divides("num_key_value_heads", c.kv_heads, "num_attention_heads", c.heads);
    if (hf.has("head_dim")) c.head_dim = hf.size("head_dim");
    else hf.divides("num_attention_heads", c.heads, "hidden_size", c.d_model);
    // PretrainedConfig's default is tied; LlamaConfig and its kin write false when untied.
    c.tied_embeddings = hf.flag_or("tie_word_embeddings", model_type == "gemma");
    const bool gemma = model_type == "gemma";
    std::string act_key = "hidden_act";
    if (gemma && hf.has("hidden_activation")) act_key = "hidden_activation";
    c.ffn = gated_ffn(hf, act_key, hf.text_or(act_key, gemma ? "gelu_pytorch_tanh" : "silu"));
    if (model_type == "llama" || gemma) {
      const bool attention_bias = hf.flag_or("attention_bias", false);
      c.qkv_bias = c.out_bias = attention_bias;
      c.mlp_bias = hf.flag_or("mlp_bias", false);
    }
    if (model_type == "qwen2") c.qkv_bias = true;  // Qwen2Attention: q, k, v with bias, o without
    if (gemma) c.scaled_embedding = true;
    if (model_type == "mixtral") {
      c.experts = hf.size("num_local_experts");
      c.experts_per_token = hf.size("num_experts_per_tok");
      if (c.experts_per_token > c.experts)
        throw UsageError{where + ": 'num_experts_per_tok' " + std::to_string(c.experts_per_token) +
                         " exceeds 'num_local_experts' " + std::to_string(c.experts)};
    }
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& error) {
    throw UsageError{where + ": " + error.what()};
  }
  return c;
}

}  // namespace flopscope::cli
