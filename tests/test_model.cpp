// Model accounting: every layer's parameters and FLOPs against hand-computed values and against
// closed forms written independently of the layer code; GPT-2 presets against the published
// parameter counts; the lecture's arithmetic (2mkn forward, 4mkn backward, 6·N·T); exact integers
// at GPT-3 scale and an overflow that is an error; training arithmetic and step prediction.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "flopscope/model.hpp"
#include "flopscope/predict.hpp"
#include "flopscope/training.hpp"
#include "test_util.hpp"

namespace flopscope {
namespace {

using test_util::error_of;

// Sum of the layer's matmul FLOPs in one pass: the independent count of what PyTorch counts.
Count128 matmul_sum(const LayerAccount& layer, Pass pass) {
  Count128 sum = 0;
  for (const auto& op : layer.ops)
    if (op.pass == pass)
      for (const auto& shape : op.matmuls) sum += shape.flops();
  return sum;
}

std::int64_t per_element(ElementwiseKind kind, Pass pass) {
  const auto& rule = elementwise_rule(kind);
  return (pass == Pass::forward ? rule.forward : rule.backward).flops_per_element;
}

std::int64_t per_row(ElementwiseKind kind, Pass pass) {
  const auto& rule = elementwise_rule(kind);
  return (pass == Pass::forward ? rule.forward : rule.backward).flops_per_row;
}

// PyTorch's count of a layer is the sum of its matmul shapes' 2·batch·m·n·k, pass by pass.
void expect_pytorch_is_matmuls(const LayerAccount& layer) {
  EXPECT_EQ(layer.forward.pytorch_flops, matmul_sum(layer, Pass::forward)) << layer.name;
  EXPECT_EQ(layer.backward.pytorch_flops, matmul_sum(layer, Pass::backward)) << layer.name;
}

// ---- the lecture ----

TEST(Lecture, LinearIsTwoMknForwardFourMknBackward) {
  // X (8 x 3) · W, W 3 -> 5 with bias, stored (out, in) as nn.Linear's.
  const LayerAccount linear = linear_layer("fc", {.in = 3, .out = 5, .bias = true}, 8, DType::f32);
  EXPECT_EQ(linear.parameters, 3 * 5 + 5);
  EXPECT_EQ(linear.forward.pytorch_flops, 2 * 8 * 3 * 5);
  EXPECT_EQ(linear.backward.pytorch_flops, 4 * 8 * 3 * 5);
  EXPECT_EQ(linear.forward.flops, 2 * 8 * 3 * 5 + 8 * 5);    // + the bias add
  EXPECT_EQ(linear.backward.flops, 4 * 8 * 3 * 5 + 8 * 5);   // + the bias gradient's sum
  EXPECT_EQ(linear.forward.bytes, (8 * 3 + 3 * 5 + 8 * 5) * 4);
  EXPECT_EQ(linear.activation_bytes, 8 * 3 * 4);  // X, for dW
  EXPECT_EQ(linear.matmuls, (std::vector<MatmulShape>{
                                {"linear", MatmulRole::forward, MatmulLayout::NT, 1, 8, 5, 3},
                                {"linear", MatmulRole::backward_input, MatmulLayout::NN, 1, 8, 3, 5},
                                {"linear", MatmulRole::backward_weight, MatmulLayout::TN, 1, 5, 3, 8},
                            }));
  // The first layer of a network: no gradient of its input, so backward = forward.
  const LayerAccount first =
      linear_layer("fc", {.in = 3, .out = 5, .bias = false, .input_grad = false}, 8, DType::f32);
  EXPECT_EQ(first.parameters, 15);
  EXPECT_EQ(first.backward.pytorch_flops, first.forward.pytorch_flops);
  EXPECT_EQ(first.backward.flops, 2 * 8 * 3 * 5);
  // Weights stored (in, out), as x @ w: forward NN, dX = dY·Wᵀ NT, dW = Xᵀ·dY TN.
  const LayerAccount in_out =
      linear_layer("fc", {.in = 3, .out = 5, .bias = false, .layout = WeightLayout::in_out}, 8, DType::f32);
  EXPECT_EQ(in_out.matmuls, (std::vector<MatmulShape>{
                                {"linear", MatmulRole::forward, MatmulLayout::NN, 1, 8, 5, 3},
                                {"linear", MatmulRole::backward_input, MatmulLayout::NT, 1, 8, 3, 5},
                                {"linear", MatmulRole::backward_weight, MatmulLayout::TN, 1, 3, 5, 8},
                            }));
}

TEST(Lecture, CruncherStepIsSixNTLessTheFirstLayersInputGradient) {
  // The lecture's deep linear network: D = 4, 2 layers, batch 3, then D -> 1.
  const std::int64_t D = 4, B = 3;
  const auto layers = deep_linear_mlp(D, 2, B, DType::f32);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].name, "layers.0");
  EXPECT_EQ(layers[2].name, "final");
  EXPECT_EQ(layers[0].forward.pytorch_flops, 2 * B * D * D);
  EXPECT_EQ(layers[0].backward.pytorch_flops, 2 * B * D * D);  // dW only: x is the data
  EXPECT_EQ(layers[1].backward.pytorch_flops, 4 * B * D * D);
  EXPECT_EQ(layers[2].forward.pytorch_flops, 2 * B * D);
  EXPECT_EQ(layers[2].backward.pytorch_flops, 4 * B * D);
  std::int64_t parameters = 0;
  Count128 step = 0;
  for (const auto& layer : layers) {
    parameters += layer.parameters;
    step += layer.forward.pytorch_flops + layer.backward.pytorch_flops;
    EXPECT_EQ(layer.forward.flops, layer.forward.pytorch_flops);  // no bias, no activation: all matmul
  }
  EXPECT_EQ(parameters, D * D * 2 + D);
  EXPECT_EQ(step, six_n_t(parameters, B) - 2 * B * D * D);
}

TEST(Lecture, SixNTAtGpt3ScaleIsExact) {
  // 175B parameters x 300B tokens = 3.15e23 FLOPs: past int64 (9.2e18), exact in 128 bits.
  EXPECT_EQ(count_str(six_n_t(175'000'000'000, 300'000'000'000)), "315000000000000000000000");
  // Past 128 bits is an error, never a wrap.
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  EXPECT_THROW(six_n_t(most, most), SizeOverflow);
  EXPECT_THROW(six_n_t(-1, 5), std::invalid_argument);
}

// ---- layers against closed forms ----

TEST(Layers, GeluFeedForward) {
  const std::int64_t T = 6, d = 4, f = 16;
  const LayerAccount ffn = ffn_layer("mlp", {.d_model = d, .d_ff = f, .kind = FfnKind::gelu, .bias = true}, T,
                                     DType::f32);
  EXPECT_EQ(ffn.parameters, 2 * d * f + f + d);
  EXPECT_EQ(ffn.forward.pytorch_flops, 4 * T * d * f);
  EXPECT_EQ(ffn.backward.pytorch_flops, 8 * T * d * f);
  // + biases, GELU (9 per element), the residual add.
  EXPECT_EQ(ffn.forward.flops, 4 * T * d * f + (T * f + T * d) + 9 * T * f + T * d);
  // + bias gradients, GELU's backward (18), the residual's gradient sum.
  EXPECT_EQ(ffn.backward.flops, 8 * T * d * f + (T * f + T * d) + 18 * T * f + T * d);
  EXPECT_EQ(ffn.activation_bytes, (T * d + 2 * T * f) * 4);
  expect_pytorch_is_matmuls(ffn);
}

TEST(Layers, SwigluFeedForward) {
  const std::int64_t T = 5, d = 8, f = 32;
  const LayerAccount ffn = ffn_layer("mlp", {.d_model = d, .d_ff = f, .kind = FfnKind::swiglu, .bias = false}, T,
                                     DType::bf16);
  EXPECT_EQ(ffn.parameters, 3 * d * f);
  EXPECT_EQ(ffn.forward.pytorch_flops, 6 * T * d * f);
  EXPECT_EQ(ffn.backward.pytorch_flops, 12 * T * d * f);
  EXPECT_EQ(ffn.forward.flops, 6 * T * d * f + 4 * T * f + T * f + T * d);  // silu, gate mul, residual
  // x feeds w1 and w3 (one gradient sum), silu 9, mul 2, the residual's sum.
  EXPECT_EQ(ffn.backward.flops, 12 * T * d * f + T * d + 9 * T * f + 2 * T * f + T * d);
  EXPECT_EQ(ffn.activation_bytes, (T * d + 4 * T * f) * 2);
  expect_pytorch_is_matmuls(ffn);
  EXPECT_EQ(ffn.matmuls.size(), 9u);  // three linears, three matmuls each
}

TEST(Layers, MathAttention) {
  const std::int64_t B = 2, s = 8, d = 12, h = 3;
  const std::int64_t T = B * s, scores = B * h * s * s;
  const LayerAccount attn = attention_layer("attn", {.d_model = d, .heads = h}, B, s, DType::f32);
  EXPECT_EQ(attn.parameters, 4 * d * d + 4 * d);
  EXPECT_EQ(attn.forward.pytorch_flops, 8 * T * d * d + 4 * B * s * s * d);
  EXPECT_EQ(attn.backward.pytorch_flops, 16 * T * d * d + 8 * B * s * s * d);
  // + biases (3d and d), scale, mask (no FLOPs), softmax (5), residual add.
  EXPECT_EQ(attn.forward.flops, 8 * T * d * d + 4 * B * s * s * d + 4 * T * d + scores + 5 * scores + T * d);
  EXPECT_EQ(attn.backward.flops, 16 * T * d * d + 8 * B * s * s * d + 4 * T * d + scores + 4 * scores + T * d);
  EXPECT_EQ(attn.activation_bytes, (5 * T * d + scores) * 4);
  expect_pytorch_is_matmuls(attn);
}

TEST(Layers, FusedAttentionRecomputesTheScores) {
  const std::int64_t B = 2, s = 8, d = 12, h = 3;
  const LayerAccount math = attention_layer("attn", {.d_model = d, .heads = h}, B, s, DType::f32);
  const LayerAccount fused =
      attention_layer("attn", {.d_model = d, .heads = h, .kind = AttentionKind::fused}, B, s, DType::f32);
  EXPECT_EQ(fused.forward.pytorch_flops, math.forward.pytorch_flops);
  // PyTorch's sdpa backward: five bmm where the math form has four.
  EXPECT_EQ(fused.backward.pytorch_flops, math.backward.pytorch_flops + 2 * B * s * s * d);
  // Its full count: the forward's elementwise work again (recomputed) on top of the math form's.
  const std::int64_t scores = B * h * s * s;
  EXPECT_EQ(fused.backward.flops - fused.backward.pytorch_flops,
            math.backward.flops - math.backward.pytorch_flops + scores + 5 * scores);
  expect_pytorch_is_matmuls(fused);
  // It saves its output and logsumexp instead of the s x s probabilities.
  EXPECT_EQ(fused.activation_bytes, (6 * B * s * d) * 4 + B * h * s * 4);
}

TEST(Layers, SeparateProjectionsRopeNoBias) {
  const std::int64_t B = 1, s = 4, d = 8, h = 2, T = B * s;
  const LayerAccount attn = attention_layer(
      "attn", {.d_model = d, .heads = h, .bias = false, .fused_qkv = false, .positions = PositionKind::rope}, B, s,
      DType::f32);
  EXPECT_EQ(attn.parameters, 4 * d * d);
  EXPECT_EQ(attn.forward.pytorch_flops, 8 * T * d * d + 4 * B * s * s * d);
  const std::int64_t scores = B * h * s * s;
  // rope on q and k (3 per element each way), two gradient sums for x feeding q, k and v.
  EXPECT_EQ(attn.forward.flops, attn.forward.pytorch_flops + 6 * T * d + 6 * scores + T * d);
  EXPECT_EQ(attn.backward.flops, attn.backward.pytorch_flops + 6 * T * d + 2 * T * d + 5 * scores + T * d);
  EXPECT_EQ(error_of([] { attention_layer("attn", {.d_model = 768, .heads = 5}, 1, 1, DType::f32); }),
            "heads 5 does not divide d_model 768");
}

TEST(Layers, NormsEmbeddingAndHead) {
  const std::int64_t T = 10, d = 6, V = 50;
  const LayerAccount ln = norm_layer("ln", NormKind::layer_norm, d, T, DType::f32);
  const LayerAccount rms = norm_layer("ln", NormKind::rms_norm, d, T, DType::f32);
  EXPECT_EQ(ln.parameters, 2 * d);
  EXPECT_EQ(rms.parameters, d);
  EXPECT_EQ(ln.forward.pytorch_flops + rms.forward.pytorch_flops + ln.backward.pytorch_flops, 0);
  for (Pass pass : {Pass::forward, Pass::backward}) {
    const FlopTotals& l = pass == Pass::forward ? ln.forward : ln.backward;
    const FlopTotals& r = pass == Pass::forward ? rms.forward : rms.backward;
    EXPECT_EQ(l.flops, per_element(ElementwiseKind::layer_norm, pass) * T * d +
                           per_row(ElementwiseKind::layer_norm, pass) * T);
    EXPECT_EQ(r.flops, per_element(ElementwiseKind::rms_norm, pass) * T * d + per_row(ElementwiseKind::rms_norm, pass) * T);
  }
  EXPECT_EQ(ln.activation_bytes, T * d * 4 + 2 * T * 4);

  const LayerAccount embed = embedding_layer("embedding", V, d, PositionKind::learned, 16, 2, 5, DType::f32);
  EXPECT_EQ(embed.parameters, V * d + 16 * d);
  EXPECT_EQ(embed.forward.pytorch_flops + embed.backward.pytorch_flops, 0);
  EXPECT_EQ(embed.forward.flops, T * d);       // the position add; gathers cost no FLOPs
  EXPECT_EQ(embed.backward.flops, 2 * T * d);  // two scatter-adds
  EXPECT_EQ(embed.activation_bytes, 8 * T + 8 * 5);

  const LayerAccount tied = lm_head_layer("lm_head", V, d, true, T, DType::f32);
  const LayerAccount untied = lm_head_layer("lm_head", V, d, false, T, DType::f32);
  EXPECT_EQ(tied.parameters, 0);
  EXPECT_EQ(untied.parameters, V * d);
  EXPECT_EQ(tied.forward.pytorch_flops, 2 * T * d * V);
  EXPECT_EQ(tied.backward.pytorch_flops, 4 * T * d * V);
  EXPECT_EQ(tied.forward.flops, 2 * T * d * V + 5 * T * V + T + T);           // log_softmax, nll
  EXPECT_EQ(tied.backward.flops, 4 * T * d * V + V * d + 4 * T * V + T);      // + the shared weight's sum
  EXPECT_EQ(untied.backward.flops, tied.backward.flops - V * d);
  EXPECT_EQ(tied.activation_bytes, (T * d + T * V) * 4 + 8 * T);
}

// ---- transformers ----

TEST(Transformer, Gpt2PresetsMatchThePublishedParameterCounts) {
  // Released GPT-2 checkpoints: 124M, 355M, 774M, 1558M (vocab 50257, context 1024, tied).
  const std::pair<const char*, std::int64_t> published[] = {
      {"gpt2-small", 124}, {"gpt2-medium", 355}, {"gpt2-large", 774}, {"gpt2-xl", 1558}};
  for (const auto& [name, millions] : published) {
    const TransformerConfig* config = find_preset(name);
    ASSERT_NE(config, nullptr) << name;
    const std::int64_t parameters = transformer_parameters(*config);
    EXPECT_EQ((parameters + 500'000) / 1'000'000, millions) << name;
    // The closed form: wte + wpe + L (12 d² + 13 d) + ln_f.
    const std::int64_t V = config->vocab, C = config->context, d = config->d_model, L = config->layers;
    EXPECT_EQ(parameters, V * d + C * d + L * (12 * d * d + 13 * d) + 2 * d) << name;
  }
  EXPECT_EQ(transformer_parameters(*find_preset("gpt2-small")), 124'439'808);
  EXPECT_EQ(transformer_parameters(*find_preset("gpt2-xl")), 1'557'611'200);
}

TEST(Transformer, Cs336PresetsAgainstTheirClosedForm) {
  // Untied embedding and LM head, L (4 d² + 3 d d_ff + 2 d) with RMSNorm weights, final norm.
  for (const char* name : {"cs336-small", "cs336-medium", "cs336-large", "cs336-xl", "cs336-2.7b"}) {
    const TransformerConfig* c = find_preset(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->d_ff, 4 * c->d_model);
    EXPECT_EQ(transformer_parameters(*c),
              2 * c->vocab * c->d_model + c->layers * (4 * c->d_model * c->d_model + 3 * c->d_model * c->d_ff +
                                                       2 * c->d_model) + c->d_model)
        << name;
  }
  EXPECT_EQ(find_preset("cs336-2.7b")->heads, 32);
  EXPECT_EQ(find_preset("gpt3"), nullptr);
}

TEST(Transformer, StepFlopsAgainstTheClosedForm) {
  // Forward, PyTorch convention: per layer 2T(3d² + d²) + 2·2T·d·d_ff + 4·B·s²·d, plus the LM head.
  for (const char* name : {"gpt2-small", "cs336-medium"}) {
    const TransformerConfig& c = *find_preset(name);
    const std::int64_t B = 2, s = 256, T = B * s, d = c.d_model;
    const ModelAccount model = transformer_account(c, B, s, DType::bf16);
    const std::int64_t ffn_matmuls = c.ffn == FfnKind::swiglu ? 3 : 2;
    const Count128 forward =
        Count128{c.layers} * (8 * T * d * d + 2 * ffn_matmuls * T * d * c.d_ff + 4 * B * s * s * d) + 2 * T * d * c.vocab;
    EXPECT_EQ(model.forward.pytorch_flops, forward) << name;
    EXPECT_EQ(model.backward.pytorch_flops, 2 * forward) << name;
    EXPECT_GT(model.forward.flops, model.forward.pytorch_flops);
    EXPECT_EQ(model.layers.size(), static_cast<std::size_t>(4 * c.layers + 3));
    for (const auto& layer : model.layers) expect_pytorch_is_matmuls(layer);
  }
}

TEST(Transformer, LlamaMistralMixtralMatchTheirCheckpoints) {
  // The checkpoints' safetensors total_size / 2 bytes (bf16); Mixtral's active count by hand:
  // 32 (attention 41,943,040 + router 32,768 + 2 experts x 176,160,768 + norms 8,192) + 2 x
  // 131,072,000 + 4,096.
  EXPECT_EQ(transformer_parameters(*find_preset("llama-2-7b")), 6'738'415'616);
  EXPECT_EQ(transformer_parameters(*find_preset("llama-3-8b")), 8'030'261'248);
  EXPECT_EQ(transformer_parameters(*find_preset("mistral-7b")), 7'241'732'096);
  const ModelAccount mixtral = transformer_account(*find_preset("mixtral-8x7b"), 1, 1, DType::bf16);
  EXPECT_EQ(mixtral.parameters, 46'702'792'704);
  EXPECT_EQ(mixtral.active_parameters, 12'879'925'248);
  const ModelAccount llama = transformer_account(*find_preset("llama-3-8b"), 1, 1, DType::bf16);
  EXPECT_EQ(llama.active_parameters, llama.parameters);
}

TEST(Transformer, GroupedQueryAndMoeFlopsAgainstTheClosedForm) {
  // Forward, PyTorch convention, per layer: q and o 2T·d·(h·hd), k and v 2T·d·(kv·hd), scores and
  // context 2·2·B·h·s²·hd over all query heads, FFN: router 2T·d·E and 3 matmuls over T·k rows;
  // then the LM head. Backward: twice (every linear computes dX and dW; four bmm's).
  for (const std::int64_t kv : {1, 2, 8}) {
    for (const std::int64_t experts : {0, 4}) {
      const std::int64_t B = 2, s = 16, T = B * s, d = 64, h = 8, hd = 16, f = 96, V = 50, L = 3, k = 2;
      TransformerConfig c{.name = "gqa", .vocab = V, .context = 64, .d_model = d, .layers = L, .heads = h, .d_ff = f,
                          .tied_embeddings = false, .ffn = FfnKind::swiglu, .norm = NormKind::rms_norm,
                          .bias = false, .positions = PositionKind::rope, .fused_qkv = false,
                          .layout = WeightLayout::out_in, .kv_heads = kv, .head_dim = hd};
      if (experts) c.experts = experts, c.experts_per_token = k;
      const ModelAccount model = transformer_account(c, B, s, DType::bf16);
      const Count128 ffn = experts ? 2 * T * d * experts + 3 * 2 * T * k * d * f : 3 * 2 * T * d * f;
      const Count128 layer = 2 * 2 * T * d * h * hd + 2 * 2 * T * d * kv * hd + 2 * 2 * B * h * s * s * hd + ffn;
      const Count128 forward = L * layer + 2 * T * d * V;
      EXPECT_EQ(model.forward.pytorch_flops, forward) << kv << " " << experts;
      EXPECT_EQ(model.backward.pytorch_flops, 2 * forward) << kv << " " << experts;
      EXPECT_GT(model.forward.flops, model.forward.pytorch_flops);
      const std::int64_t attention = 2 * d * h * hd + 2 * d * kv * hd, expert = 3 * d * f;
      const std::int64_t norms = 2 * d;
      const std::int64_t total = experts ? attention + d * experts + experts * expert + norms : attention + expert + norms;
      const std::int64_t active = experts ? attention + d * experts + k * expert + norms : total;
      EXPECT_EQ(model.parameters, L * total + 2 * V * d + d);
      EXPECT_EQ(model.active_parameters, L * active + 2 * V * d + d);
      for (const auto& each : model.layers) expect_pytorch_is_matmuls(each);
    }
  }
}

// What autograd saves (model.hpp: each tensor once), by hand, for grouped-query attention and a
// mixture of experts in bf16: k and v are kv_heads wide, the scores and probabilities are over all
// query heads; a MoE layer saves per token its router input and f32 probabilities, and per routed
// row (T·k of them) its input, the four SwiGLU hidden tensors, its output and its routing weight.
TEST(Transformer, GroupedQueryAndMoeActivationsByHand) {
  const std::int64_t B = 2, s = 16, T = B * s, d = 64, h = 8, hd = 16, f = 96, E = 4, k = 2, R = T * k;
  for (const std::int64_t kv : {1, 2, 8}) {
    for (const AttentionKind kind : {AttentionKind::math, AttentionKind::fused}) {
      const AttentionSpec spec{.d_model = d, .heads = h, .bias = false, .fused_qkv = false,
                               .positions = PositionKind::rope, .kind = kind, .kv_heads = kv, .head_dim = hd};
      const std::int64_t qkv = T * (h * hd + 2 * kv * hd);
      const std::int64_t scores = kind == AttentionKind::math ? 2 * B * h * s * s       // probabilities
                                                              : 2 * T * h * hd + 4 * B * h * s;  // output, f32 lse
      EXPECT_EQ(attention_layer("attn", spec, B, s, DType::bf16).activation_bytes,
                2 * (T * d + qkv + T * h * hd) + scores)
          << kv;
    }
  }
  const MoeSpec moe{.expert = {.d_model = d, .d_ff = f, .kind = FfnKind::swiglu, .bias = false}, .experts = E,
                    .experts_per_token = k};
  EXPECT_EQ(moe_layer("mlp", moe, T, DType::bf16).activation_bytes,
            2 * (T * d + R * d + 4 * R * f + R * d + R) + 4 * T * E + 8 * R);
}

TEST(Transformer, ACounterOpenAroundTheAccountSeesEveryOp) {
  const TransformerConfig tiny{.name = "tiny", .vocab = 64, .context = 16, .d_model = 32, .layers = 2, .heads = 4,
                               .d_ff = 128};
  FlopCounter counter;
  ModelAccount model;
  {
    CountingScope counting(counter);
    ModuleScope root("model");
    model = transformer_account(tiny, 2, 16, DType::f32);
  }
  EXPECT_EQ(counter.totals(Pass::forward), model.forward);
  EXPECT_EQ(counter.totals(Pass::backward), model.backward);
  EXPECT_EQ(counter.totals("model.h.1.attn", Pass::forward), model.layers[6].forward);
  EXPECT_EQ(model.layers[6].name, "h.1.attn");
  std::size_t ops = 0;
  for (const auto& layer : model.layers) ops += layer.ops.size();
  EXPECT_EQ(counter.records().size(), ops);
}

TEST(Transformer, RunFlopsAtGpt3ScaleAreExact) {
  // GPT-3 175B's shape (Brown et al. 2020, table 2.1) over 300B tokens in sequences of 2048.
  const TransformerConfig gpt3{.name = "gpt3", .vocab = 50257, .context = 2048, .d_model = 12288, .layers = 96,
                               .heads = 96, .d_ff = 4 * 12288};
  const std::int64_t s = 2048, d = 12288, tokens = 300'000'000'000;
  const RunFlops run = run_flops(gpt3, tokens, s);
  const Count128 per_sequence =
      3 * (Count128{96} * (24 * s * d * d + 4 * s * s * d) + Count128{2} * s * d * gpt3.vocab);
  EXPECT_FALSE(run.rounded);  // 300e9 = 2048 x 146,484,375
  EXPECT_EQ(run.pytorch_flops, per_sequence * 146'484'375);
  EXPECT_GT(run.pytorch_flops, Count128{std::numeric_limits<std::int64_t>::max()});
  // 6·N·T misses the attention term and the LM head: a few percent.
  const Count128 six = six_n_t(transformer_parameters(gpt3), tokens);
  EXPECT_GT(run.pytorch_flops, six);
  EXPECT_LT(static_cast<double>(run.pytorch_flops) / static_cast<double>(six), 1.1);
}

TEST(Transformer, BadConfigsAreErrorsNamingTheValue) {
  TransformerConfig c = *find_preset("gpt2-small");
  c.heads = 5;
  EXPECT_EQ(error_of([&] { c.validate(); }), "gpt2-small: heads 5 does not divide d_model 768");
  c = *find_preset("gpt2-small");
  c.d_model = -768;
  EXPECT_EQ(error_of([&] { c.validate(); }), "gpt2-small: d_model must be positive (got -768)");
  EXPECT_EQ(error_of([] { transformer_account(*find_preset("gpt2-small"), 1, 2048, DType::bf16); }),
            "seq 2048 exceeds the model's context 1024");
  c = *find_preset("llama-3-8b");
  c.kv_heads = 5;
  EXPECT_EQ(error_of([&] { c.validate(); }), "llama-3-8b: kv_heads 5 does not divide heads 32");
  c = *find_preset("mixtral-8x7b");
  c.experts_per_token = 9;
  EXPECT_EQ(error_of([&] { c.validate(); }), "mixtral-8x7b: experts_per_token 9 exceeds experts 8");
  c.experts_per_token = 0;
  EXPECT_EQ(error_of([&] { c.validate(); }), "mixtral-8x7b: experts_per_token must be positive (got 0)");
  c = *find_preset("llama-3-8b");
  c.heads = 24;
  c.kv_heads = 8;
  c.head_dim = 128;  // heads x head_dim need not be d_model (Gemma's 7B: 16 x 256 on 3072)
  EXPECT_NO_THROW(c.validate());
  c.head_dim = -1;
  EXPECT_EQ(error_of([&] { c.validate(); }), "llama-3-8b: head_dim must be positive (got -1)");
  // d_model 2^32: a weight of d² = 2^64 elements overflows, an error rather than a wrap.
  const TransformerConfig huge{.name = "huge", .vocab = 2, .context = 1, .d_model = std::int64_t{1} << 32,
                               .layers = 1, .heads = 1, .d_ff = 1};
  EXPECT_THROW(transformer_account(huge, 1, 1, DType::bf16), SizeOverflow);
}

// ---- training arithmetic ----

TEST(Training, DaysMemoryAndMfu) {
  const GpuSpec* h100 = find_gpu_by_name("h100");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->name, "H100 SXM");
  EXPECT_EQ(find_gpu_by_name("H100-PCIe")->name, "H100 PCIe");
  EXPECT_EQ(find_gpu_by_name("a100")->name, "A100 SXM4 40GB");
  EXPECT_EQ(find_gpu_by_name("v100"), nullptr);
  const double peak = gpu_peak_flops(*h100, "bf16");
  EXPECT_DOUBLE_EQ(peak, 132 * 4096 * 1.83e9);
  // 70B parameters, 15T tokens, 1024 H100 at 50% MFU: 6.3e24 / (1024 x 989.4e12 x 0.5) s.
  const double days = training_seconds(six_n_t(70'000'000'000, 15'000'000'000'000), peak, 1024, 0.5) / 86400;
  EXPECT_NEAR(days, 6.3e24 / (1024 * peak * 0.5) / 86400, 1e-9);
  EXPECT_NEAR(days, 143.9, 0.05);
  EXPECT_THROW(training_seconds(1, peak, 1, 1.5), std::invalid_argument);
  // 8 x 80 GB with bf16 + AdamW + f32 master weights: 16 bytes per parameter.
  const LargestModel largest = largest_trainable_model(640'000'000'000, DType::bf16, Optimizer::adamw);
  EXPECT_EQ(largest.bytes_per_parameter, 16);
  EXPECT_EQ(largest.parameters, 40'000'000'000);
  EXPECT_EQ(largest.memory.total_bytes, 640'000'000'000);
  EXPECT_EQ(largest_trainable_model(640'000'000'001, DType::bf16, Optimizer::sgd).parameters, 80'000'000'000);
  EXPECT_DOUBLE_EQ(model_flops_utilization(1'000'000'000'000, 1.0, 2e12, 1), 0.5);
  EXPECT_DOUBLE_EQ(model_flops_utilization(1'000'000'000'000, 0.25, 2e12, 4), 0.5);
}

// ---- prediction ----

TEST(Predict, MeasuredBestVariantInterpolatedBetween) {
  const MatmulRates rates({
      {"cuda:0", "bf16", "own", MatmulLayout::NN, 64, 64, 64, 100e9},
      {"cuda:0", "bf16", "cublas", MatmulLayout::NN, 64, 64, 64, 150e9},
      {"cuda:0", "bf16", "cublas", MatmulLayout::NN, 256, 256, 256, 300e9},
      {"cuda:0", "bf16", "cublas", MatmulLayout::NT, 512, 512, 512, 400e9},
      {"cuda:0", "bf16", "broken", MatmulLayout::NN, 128, 128, 128, 0},  // not a rate: left out
  });
  const RateEstimate measured = rates.estimate("cuda:0", "bf16", MatmulLayout::NN, 64, 64, 64);
  EXPECT_TRUE(measured.measured);
  EXPECT_EQ(measured.variant, "cublas");
  EXPECT_EQ(measured.flops_per_second, 150e9);
  // 128³ lies as far from 64³ as from 256³ in log2 space: the mean of the two NN rates.
  const RateEstimate between = rates.estimate("cuda:0", "bf16", MatmulLayout::NN, 128, 128, 128);
  EXPECT_FALSE(between.measured);
  EXPECT_EQ(between.neighbours, 2);
  EXPECT_DOUBLE_EQ(between.flops_per_second, 225e9);
  // TN was never measured: the other layouts' shapes stand in, and the estimate says so.
  const RateEstimate other = rates.estimate("cuda:0", "bf16", MatmulLayout::TN, 512, 512, 512);
  EXPECT_TRUE(other.other_layout);
  EXPECT_EQ(other.flops_per_second, 400e9);
  EXPECT_THROW(rates.estimate("cuda:1", "bf16", MatmulLayout::NN, 1, 1, 1), std::invalid_argument);
}

TEST(Predict, AConstantRateGivesFlopsOverRate) {
  const TransformerConfig tiny{.name = "tiny", .vocab = 64, .context = 16, .d_model = 32, .layers = 2, .heads = 4,
                               .d_ff = 128};
  for (AttentionKind kind : {AttentionKind::math, AttentionKind::fused}) {
    TransformerConfig c = tiny;
    c.attention = kind;
    const ModelAccount model = transformer_account(c, 2, 16, DType::bf16);
    std::vector<MatmulMeasurement> grid;
    for (MatmulLayout layout : {MatmulLayout::NN, MatmulLayout::NT, MatmulLayout::TN})
      for (std::int64_t size : {8, 64, 512}) grid.push_back({"cpu", "bf16", "own", layout, size, size, size, 1e11});
    const StepPrediction p = predict_step(model.layers, MatmulRates(grid), "cpu", "bf16");
    EXPECT_EQ(p.matmul_flops, model.step().pytorch_flops);  // every PyTorch FLOP is a timed matmul
    EXPECT_NEAR(p.step_seconds(), static_cast<double>(model.step().pytorch_flops) / 1e11, 1e-15);
    EXPECT_NEAR(p.forward_seconds, static_cast<double>(model.forward.pytorch_flops) / 1e11, 1e-15);
    EXPECT_EQ(p.measured_shapes, 0);
    std::int64_t occurrences = 0;
    for (const auto& row : p.matmuls) occurrences += row.count;
    std::size_t shapes = 0;
    for (const auto& layer : model.layers) shapes += layer.matmuls.size();
    EXPECT_EQ(occurrences, static_cast<std::int64_t>(shapes));
  }
}

}  // namespace
}  // namespace flopscope
