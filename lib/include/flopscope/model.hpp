// Model accounting: parameters, forward and backward FLOPs in both conventions, activation memory
// and matmul shapes of the layers of a network and of whole transformers, as exact integers.
//
// A layer is accounted by running it on paper: each op of its forward and of its backward pass is
// reported into a FlopCounter (flop_counter.hpp) under the layer's module name, with its cost from
// accounting.hpp's rules, and the layer's figures are the sums of its records. A CountingScope
// open around these functions sees every op too.
//
// Conventions:
// - rows = tokens = batch x seq; the activations and their gradients are in `dtype`.
// - A linear layer computes Y (rows x out) = X (rows x in) · W (+ bias). Its backward pass is
//   dW = Xᵀ·dY and, unless X is the network's input (input_grad = false), dX = dY·Wᵀ: each
//   2·rows·in·out FLOPs. The weight is stored (out, in) as nn.Linear's (WeightLayout::out_in:
//   forward NT) or (in, out) as the lecture's x @ w and GPT-2's Conv1D (in_out: forward NN).
// - Attention is causal multi-head attention with the full s x s score matrix counted, as
//   PyTorch's counter counts it (a causal kernel skips half of it; neither convention does).
//   AttentionKind::math is q·kᵀ, scale, mask, softmax, ·v as separate ops (PyTorch counts two bmm
//   forward, four backward); AttentionKind::fused is one scaled_dot_product_attention (PyTorch
//   counts two bmm forward, five backward: flash attention recomputes the scores).
// - Activation memory is what autograd saves for the backward pass of these ops, no
//   recomputation, no dropout: each tensor once, however many ops save it (Note [saved tensors]
//   in model.cpp). Per-row norm statistics and attention's logsumexp are f32; token ids int64.
// - Every count is checked (checked.hpp): an overflow is a SizeOverflow, never a wrap.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flopscope/dtype.hpp"
#include "flopscope/flop_counter.hpp"

namespace flopscope {

enum class FfnKind { gelu, swiglu, geglu };
enum class NormKind { layer_norm, rms_norm };
enum class PositionKind { learned, rope, none };
enum class AttentionKind { math, fused };
enum class WeightLayout { out_in, in_out };

std::string_view ffn_kind_name(FfnKind kind);            // "gelu", "swiglu", "geglu"
std::string_view norm_kind_name(NormKind kind);          // "layernorm", "rmsnorm"
std::string_view position_kind_name(PositionKind kind);  // "learned", "rope", "none"
std::string_view attention_kind_name(AttentionKind kind);  // "math", "fused"
std::string_view weight_layout_name(WeightLayout layout);  // "out_in", "in_out"
std::optional<FfnKind> parse_ffn_kind(std::string_view text);
std::optional<NormKind> parse_norm_kind(std::string_view text);
std::optional<PositionKind> parse_position_kind(std::string_view text);
std::optional<AttentionKind> parse_attention_kind(std::string_view text);
std::optional<WeightLayout> parse_weight_layout(std::string_view text);

// One tensor that the backward pass needs.
struct SavedTensor {
  std::string name;
  std::int64_t elements = 0;
  std::int64_t bytes = 0;
};

struct LayerAccount {
  std::string name;  // its module path: "h.0.attn"
  std::string kind;  // "linear", "attention", "ffn", "norm", "embedding", "lm_head"
  std::int64_t parameters = 0;
  std::int64_t active_parameters = 0;  // those one token uses: all but a MoE layer's unchosen experts
  FlopTotals forward, backward;
  std::vector<SavedTensor> saved;
  std::int64_t activation_bytes = 0;  // sum of saved
  std::vector<MatmulShape> matmuls;   // forward, backward-input and backward-weight
  std::vector<OpRecord> ops;          // every op it reported, both passes
};

// The sums over a network's layers.
struct LayerTotals {
  std::int64_t parameters = 0, active_parameters = 0;
  FlopTotals forward, backward;
  std::int64_t activation_bytes = 0;
};
LayerTotals sum_layers(std::span<const LayerAccount> layers);

// ---- layers ----

struct LinearSpec {
  std::int64_t in = 0, out = 0;
  bool bias = true;
  bool input_grad = true;  // false for the first layer of a network: its input needs no gradient
  WeightLayout layout = WeightLayout::out_in;
};
LayerAccount linear_layer(std::string_view name, const LinearSpec& spec, std::int64_t rows, DType dtype);

// The lecture's Cruncher: num_layers linear layers d x d without bias on x (rows x d), then a
// d -> 1 layer; weights stored (in, out) as its x @ w. The first layer computes no dX.
std::vector<LayerAccount> deep_linear_mlp(std::int64_t dim, std::int64_t num_layers, std::int64_t rows, DType dtype);

struct FfnSpec {
  std::int64_t d_model = 0, d_ff = 0;
  FfnKind kind = FfnKind::gelu;
  bool bias = true;
  WeightLayout layout = WeightLayout::out_in;
  bool residual = true;  // x + ffn(x): the add, and the gradient of x summed from both paths
};
// gelu: fc (d -> d_ff), GELU (tanh), proj (d_ff -> d). swiglu: w2(silu(w1 x) · w3 x), w1 and w3
// d -> d_ff, w2 d_ff -> d; geglu: the same with GELU (tanh) for SiLU (Gemma).
LayerAccount ffn_layer(std::string_view name, const FfnSpec& spec, std::int64_t rows, DType dtype);

struct MoeSpec {
  FfnSpec expert;  // each expert's FFN (Mixtral's: swiglu, no bias)
  std::int64_t experts = 0, experts_per_token = 0;
};
// Mixture of experts as Hugging Face's Mixtral computes it: a router (d -> experts, no bias),
// softmax, the top experts_per_token of each token, their weights renormalized; each token through
// its chosen experts, their outputs weighted and summed. Every token meets exactly
// experts_per_token distinct experts, so the expert matmuls add up to rows·experts_per_token rows
// whatever the routing: the count is exact. active_parameters: router + experts_per_token experts.
LayerAccount moe_layer(std::string_view name, const MoeSpec& spec, std::int64_t rows, DType dtype);

struct AttentionSpec {
  std::int64_t d_model = 0, heads = 0;
  bool bias = true;  // q, k, v and the output projection, unless qkv_bias / out_bias say otherwise
  bool fused_qkv = true;  // one d -> 3d projection (GPT-2's c_attn) or three d -> d
  PositionKind positions = PositionKind::learned;  // rope rotates q and k
  AttentionKind kind = AttentionKind::math;
  WeightLayout layout = WeightLayout::out_in;
  bool residual = true;
  std::int64_t kv_heads = 0;  // grouped-query attention: k and v heads (0: heads; 1: multi-query)
  std::int64_t head_dim = 0;  // 0: d_model / heads
  std::optional<bool> qkv_bias, out_bias;
};
// Projections (q: d -> heads·head_dim, k and v: d -> kv_heads·head_dim, out: heads·head_dim -> d),
// scores q·kᵀ per head, scale by 1/sqrt(head_dim), causal mask, softmax, weighted sum with v,
// output projection. With kv_heads < heads each k, v head serves heads / kv_heads query heads:
// the scores and the weighted sum are counted over all heads (Hugging Face repeats k and v before
// the matmuls), and k's and v's gradients are summed over the group (full count). heads must
// divide d_model unless head_dim is given; kv_heads must divide heads.
LayerAccount attention_layer(std::string_view name, const AttentionSpec& spec, std::int64_t batch, std::int64_t seq,
                             DType dtype);

// LayerNorm (weight and bias: 2·d parameters) or RMSNorm (weight: d).
LayerAccount norm_layer(std::string_view name, NormKind kind, std::int64_t d_model, std::int64_t rows, DType dtype);

// Token embedding (vocab x d) and, for PositionKind::learned, position embedding (context x d)
// added to it; scaled: times sqrt(d) (Gemma).
LayerAccount embedding_layer(std::string_view name, std::int64_t vocab, std::int64_t d_model, PositionKind positions,
                             std::int64_t context, std::int64_t batch, std::int64_t seq, DType dtype,
                             bool scaled = false);

// The LM head (d -> vocab, no bias, weight stored (vocab, d) as nn.Linear's and as the token
// embedding it may share) and the cross-entropy loss (log_softmax, nll) over every position.
// Tied: its weight is the token embedding's (no parameters of its own; the two gradients of the
// shared weight are summed).
LayerAccount lm_head_layer(std::string_view name, std::int64_t vocab, std::int64_t d_model, bool tied,
                           std::int64_t rows, DType dtype);

// ---- transformers ----

struct TransformerConfig {
  std::string name;  // "gpt2-small"
  std::int64_t vocab = 0, context = 0, d_model = 0, layers = 0, heads = 0, d_ff = 0;
  bool tied_embeddings = true;
  FfnKind ffn = FfnKind::gelu;
  NormKind norm = NormKind::layer_norm;
  bool bias = true;  // in the linear layers
  PositionKind positions = PositionKind::learned;
  bool fused_qkv = true;
  AttentionKind attention = AttentionKind::math;
  WeightLayout layout = WeightLayout::out_in;
  std::string source;  // where the numbers come from
  std::int64_t kv_heads = 0;  // 0: heads (multi-head); 1: multi-query; else grouped-query
  std::int64_t head_dim = 0;  // 0: d_model / heads
  std::optional<bool> qkv_bias, out_bias, mlp_bias;  // unset: `bias`
  std::int64_t experts = 0, experts_per_token = 0;    // experts > 1: a MoE FFN in every block
  bool scaled_embedding = false;  // Gemma multiplies the embeddings by sqrt(d_model) (full count)

  std::int64_t key_value_heads() const { return kv_heads ? kv_heads : heads; }
  std::int64_t head_size() const { return head_dim ? head_dim : (heads ? d_model / heads : 0); }
  bool moe() const { return experts > 1; }

  // std::invalid_argument naming the value: a size that is not positive, heads not dividing
  // d_model (without head_dim), kv_heads not dividing heads, experts_per_token not in
  // [1, experts].
  void validate() const;
};

// GPT-2 small/medium/large/xl and the CS336 sizes (small ... 2.7B), with their sources.
std::span<const TransformerConfig> transformer_presets();
const TransformerConfig* find_preset(std::string_view name);
std::string preset_list();  // "gpt2-small, gpt2-medium, ..."

struct ModelAccount {
  TransformerConfig config;
  std::int64_t batch = 0, seq = 0;
  DType dtype = DType::bf16;
  // embedding, then per block h.<i>.ln_1, h.<i>.attn, h.<i>.ln_2, h.<i>.mlp, then ln_f, lm_head.
  std::vector<LayerAccount> layers;
  std::int64_t parameters = 0, active_parameters = 0;
  FlopTotals forward, backward;
  std::int64_t activation_bytes = 0;
  std::int64_t tokens() const { return batch * seq; }
  FlopTotals step() const { return forward + backward; }
};

// Pre-norm transformer (GPT-2's order): x = embed; per block x += attn(ln_1(x)), x += mlp(ln_2(x));
// logits = lm_head(ln_f(x)). seq must not exceed config.context.
ModelAccount transformer_account(const TransformerConfig& config, std::int64_t batch, std::int64_t seq, DType dtype);

// The parameter count alone (transformer_account at one token).
std::int64_t transformer_parameters(const TransformerConfig& config);

}  // namespace flopscope
