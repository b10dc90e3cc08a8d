#include "flopscope/model.hpp"

#include <array>
#include <stdexcept>
#include <utility>

#include "flopscope/accounting.hpp"
#include "flopscope/checked.hpp"

namespace flopscope {

// ---- names ----

namespace {

template <class Kind, std::size_t N>
std::optional<Kind> parse_name(std::string_view text, const std::array<std::pair<std::string_view, Kind>, N>& names) {
  for (const auto& [name, kind] : names)
    if (name == text) return kind;
  return std::nullopt;
}

template <class Kind, std::size_t N>
std::string_view name_of(Kind kind, const std::array<std::pair<std::string_view, Kind>, N>& names) {
  for (const auto& [name, each] : names)
    if (each == kind) return name;
  return "?";
}

constexpr std::array<std::pair<std::string_view, FfnKind>, 3> kFfnNames = {
    {{"gelu", FfnKind::gelu}, {"swiglu", FfnKind::swiglu}, {"geglu", FfnKind::geglu}}};
constexpr std::array<std::pair<std::string_view, NormKind>, 2> kNormNames = {
    {{"layernorm", NormKind::layer_norm}, {"rmsnorm", NormKind::rms_norm}}};
constexpr std::array<std::pair<std::string_view, PositionKind>, 3> kPositionNames = {
    {{"learned", PositionKind::learned}, {"rope", PositionKind::rope}, {"none", PositionKind::none}}};
constexpr std::array<std::pair<std::string_view, AttentionKind>, 2> kAttentionNames = {
    {{"math", AttentionKind::math}, {"fused", AttentionKind::fused}}};
constexpr std::array<std::pair<std::string_view, WeightLayout>, 2> kLayoutNames = {
    {{"out_in", WeightLayout::out_in}, {"in_out", WeightLayout::in_out}}};

}  // namespace

std::string_view ffn_kind_name(FfnKind kind) { return name_of(kind, kFfnNames); }
std::string_view norm_kind_name(NormKind kind) { return name_of(kind, kNormNames); }
std::string_view position_kind_name(PositionKind kind) { return name_of(kind, kPositionNames); }
std::string_view attention_kind_name(AttentionKind kind) { return name_of(kind, kAttentionNames); }
std::string_view weight_layout_name(WeightLayout layout) { return name_of(layout, kLayoutNames); }
std::optional<FfnKind> parse_ffn_kind(std::string_view text) { return parse_name(text, kFfnNames); }
std::optional<NormKind> parse_norm_kind(std::string_view text) { return parse_name(text, kNormNames); }
std::optional<PositionKind> parse_position_kind(std::string_view text) { return parse_name(text, kPositionNames); }
std::optional<AttentionKind> parse_attention_kind(std::string_view text) { return parse_name(text, kAttentionNames); }
std::optional<WeightLayout> parse_weight_layout(std::string_view text) { return parse_name(text, kLayoutNames); }

// ---- one layer on paper ----

namespace {

std::int64_t product(std::int64_t a, std::int64_t b, std::string_view what) { return checked_mul(a, b, what); }

void require_positive(std::string_view what, std::int64_t value) {
  if (value <= 0) throw std::invalid_argument(std::string(what) + " must be positive (got " + std::to_string(value) + ")");
}

// Collects one layer's records in its own counter (and in any counter open around it), under its
// module name, and sums them into a LayerAccount.
class LayerBuilder {
 public:
  LayerBuilder(std::string_view name, std::string kind, DType dtype)
      : counting_(counter_), module_(name), dtype_(dtype) {
    account_.name = std::string(name);
    account_.kind = std::move(kind);
  }

  DType dtype() const { return dtype_; }

  void parameters(std::int64_t count) {
    account_.parameters = checked_add(account_.parameters, count, "parameter count");
  }
  // Parameters one token uses, where fewer than all (a MoE layer).
  void active_parameters(std::int64_t count) { active_ = count; }

  void save(std::string name, std::int64_t elements, DType dtype) {
    const std::int64_t bytes = checked_bytes(elements, dtype_size(dtype), "activation bytes");
    account_.activation_bytes = checked_add(account_.activation_bytes, bytes, "activation bytes");
    account_.saved.push_back({std::move(name), elements, bytes});
  }
  void save(std::string name, std::int64_t elements) { save(std::move(name), elements, dtype_); }
  // Token ids and other int64 tensors (no int64 DType: counted as 8 bytes each).
  void save_int64(std::string name, std::int64_t elements) {
    const std::int64_t bytes = checked_mul<std::int64_t>(elements, 8, "activation bytes");
    account_.activation_bytes = checked_add(account_.activation_bytes, bytes, "activation bytes");
    account_.saved.push_back({std::move(name), elements, bytes});
  }

  // One matmul (batch > 1: a bmm): what PyTorch counts and the full count alike.
  void matmul(std::string op, Pass pass, MatmulShape shape) {
    const std::vector<std::int64_t> a{shape.batch, shape.m, shape.k}, b{shape.batch, shape.k, shape.n};
    const Cost cost = matmul_cost(a, b, dtype_, dtype_, dtype_);
    report({.op = std::move(op), .module = {}, .pass = pass, .shapes = {a, b}, .dtype = dtype_,
            .pytorch_flops = cost.flops, .flops = cost.flops, .bytes = cost.bytes, .matmuls = {shape}});
  }

  // An elementwise op of accounting.hpp's table, forward and backward (a pass that costs nothing,
  // as add's backward, is not recorded).
  void elementwise(ElementwiseKind kind, std::int64_t rows, std::int64_t row_length) {
    for (Pass pass : {Pass::forward, Pass::backward})
      if (elementwise_op_cost(kind, pass, rows, row_length, dtype_) != Cost{})
        report_elementwise(kind, pass, rows, row_length, dtype_);
  }

  // A linear layer's parameters and its matmuls, forward and backward (the caller saves X).
  void linear(std::string_view what, const LinearSpec& spec, std::int64_t rows) {
    require_positive(std::string(what) + " input features", spec.in);
    require_positive(std::string(what) + " output features", spec.out);
    parameters(product(spec.in, spec.out, "linear parameters"));
    if (spec.bias) parameters(spec.out);
    const bool out_in = spec.layout == WeightLayout::out_in;
    const std::string name(what);
    // Y = X·Wᵀ (W stored out x in) or X·W (in x out).
    matmul(name, Pass::forward,
           {name, MatmulRole::forward, out_in ? MatmulLayout::NT : MatmulLayout::NN, 1, rows, spec.out, spec.in});
    if (spec.bias) elementwise(ElementwiseKind::bias, rows, spec.out);
    // dX = dY·W (out_in) or dY·Wᵀ (in_out): rows x in, contracting out.
    if (spec.input_grad)
      matmul(name + ".grad_input", Pass::backward,
             {name, MatmulRole::backward_input, out_in ? MatmulLayout::NN : MatmulLayout::NT, 1, rows, spec.in,
              spec.out});
    // dW = dYᵀ·X (out x in) or Xᵀ·dY (in x out): contracting the rows.
    matmul(name + ".grad_weight", Pass::backward,
           {name, MatmulRole::backward_weight, MatmulLayout::TN, 1, out_in ? spec.out : spec.in,
            out_in ? spec.in : spec.out, rows});
  }

  // x + f(x): the add, and in the backward pass x's gradient summed from both paths.
  void residual(std::int64_t rows, std::int64_t width) {
    elementwise(ElementwiseKind::add, rows, width);
    elementwise(ElementwiseKind::grad_accumulate, rows, width);
  }

  LayerAccount finish() {
    account_.forward = counter_.totals(Pass::forward);
    account_.backward = counter_.totals(Pass::backward);
    account_.ops = counter_.records();
    account_.active_parameters = active_.value_or(account_.parameters);
    for (const auto& record : account_.ops)
      account_.matmuls.insert(account_.matmuls.end(), record.matmuls.begin(), record.matmuls.end());
    return std::move(account_);
  }

 private:
  FlopCounter counter_;
  CountingScope counting_;
  ModuleScope module_;
  DType dtype_;
  LayerAccount account_;
  std::optional<std::int64_t> active_;
};

}  // namespace

LayerTotals sum_layers(std::span<const LayerAccount> layers) {
  LayerTotals totals;
  for (const auto& layer : layers) {
    totals.parameters = checked_add(totals.parameters, layer.parameters, "parameter count");
    totals.active_parameters = checked_add(totals.active_parameters, layer.active_parameters, "parameter count");
    totals.forward += layer.forward;
    totals.backward += layer.backward;
    totals.activation_bytes = checked_add(totals.activation_bytes, layer.activation_bytes, "activation bytes");
  }
  return totals;
}

// Note [saved tensors]: what eager PyTorch keeps for the backward pass, each tensor once:
// - linear: its input X (for dW; dX needs only W, a parameter); a bias saves nothing;
// - GELU, SiLU: their input; mul: both operands; softmax, log_softmax: their output;
// - LayerNorm: input, mean and rstd per row (f32); RMSNorm: input and rstd per row (f32);
// - math attention: q, k, v (for the two bmm's backward), the softmax output (also the second
//   bmm's left operand), the merged heads (the output projection's input); the scale by a
//   constant and the causal mask (a buffer) save nothing;
// - fused attention: q, k, v, its output and logsumexp per row (f32), and the merged heads;
// - embedding: the token ids (and position ids); cross-entropy: the log-probabilities and the
//   targets;
// - adds, residuals and views save nothing. A tensor that two ops save (the input of w1 and w3,
//   of q, k and v) is counted once.
// This is what the backward pass needs, no more: an eager implementation can keep more (torch.matmul
// on transposed per-head views of q and k saves contiguous copies of them).

LayerAccount linear_layer(std::string_view name, const LinearSpec& spec, std::int64_t rows, DType dtype) {
  require_positive("rows", rows);
  LayerBuilder layer(name, "linear", dtype);
  layer.linear("linear", spec, rows);
  layer.save("input", product(rows, spec.in, "activations"));
  return layer.finish();
}

std::vector<LayerAccount> deep_linear_mlp(std::int64_t dim, std::int64_t num_layers, std::int64_t rows, DType dtype) {
  require_positive("dim", dim);
  require_positive("num_layers", num_layers);
  std::vector<LayerAccount> layers;
  for (std::int64_t i = 0; i < num_layers; ++i)
    layers.push_back(linear_layer("layers." + std::to_string(i),
                                  {.in = dim, .out = dim, .bias = false, .input_grad = i > 0,
                                   .layout = WeightLayout::in_out},
                                  rows, dtype));
  layers.push_back(linear_layer(
      "final", {.in = dim, .out = 1, .bias = false, .input_grad = true, .layout = WeightLayout::in_out}, rows, dtype));
  return layers;
}

LayerAccount ffn_layer(std::string_view name, const FfnSpec& spec, std::int64_t rows, DType dtype) {
  require_positive("rows", rows);
  require_positive("d_model", spec.d_model);
  require_positive("d_ff", spec.d_ff);
  const std::int64_t d = spec.d_model, f = spec.d_ff;
  const std::int64_t model_width = product(rows, d, "activations"), hidden = product(rows, f, "activations");
  LayerBuilder layer(name, "ffn", dtype);
  const LinearSpec up{.in = d, .out = f, .bias = spec.bias, .input_grad = true, .layout = spec.layout};
  const LinearSpec down{.in = f, .out = d, .bias = spec.bias, .input_grad = true, .layout = spec.layout};
  layer.save("input", model_width);
  if (spec.kind == FfnKind::gelu) {
    layer.linear("fc", up, rows);
    layer.elementwise(ElementwiseKind::gelu_tanh, rows, f);
    layer.linear("proj", down, rows);
    layer.save("fc output (GELU input)", hidden);
    layer.save("GELU output (proj input)", hidden);
  } else {
    layer.linear("w1", up, rows);
    layer.linear("w3", up, rows);
    layer.elementwise(ElementwiseKind::grad_accumulate, rows, d);  // x feeds w1 and w3
    layer.elementwise(spec.kind == FfnKind::geglu ? ElementwiseKind::gelu_tanh : ElementwiseKind::silu, rows, f);
    layer.elementwise(ElementwiseKind::mul, rows, f);
    layer.linear("w2", down, rows);
    layer.save("w1 output (activation input)", hidden);
    layer.save("activation output (gate)", hidden);
    layer.save("w3 output", hidden);
    layer.save("gate · w3 output (w2 input)", hidden);
  }
  if (spec.residual) layer.residual(rows, d);
  return layer.finish();
}

LayerAccount attention_layer(std::string_view name, const AttentionSpec& spec, std::int64_t batch, std::int64_t seq,
                             DType dtype) {
  require_positive("batch", batch);
  require_positive("seq", seq);
  require_positive("d_model", spec.d_model);
  require_positive("heads", spec.heads);
  if (spec.head_dim < 0) throw std::invalid_argument("head_dim must be positive (got " + std::to_string(spec.head_dim) + ")");
  if (spec.kv_heads < 0) throw std::invalid_argument("kv_heads must be positive (got " + std::to_string(spec.kv_heads) + ")");
  if (spec.head_dim == 0 && spec.d_model % spec.heads != 0)
    throw std::invalid_argument("heads " + std::to_string(spec.heads) + " does not divide d_model " +
                                std::to_string(spec.d_model));
  const std::int64_t kv_heads = spec.kv_heads ? spec.kv_heads : spec.heads;
  if (spec.heads % kv_heads != 0)
    throw std::invalid_argument("kv_heads " + std::to_string(kv_heads) + " does not divide heads " +
                                std::to_string(spec.heads));
  const std::int64_t d = spec.d_model, head_dim = spec.head_dim ? spec.head_dim : d / spec.heads;
  const std::int64_t q_width = product(spec.heads, head_dim, "q width"), kv_width = product(kv_heads, head_dim, "kv width");
  const std::int64_t rows = product(batch, seq, "tokens");
  const std::int64_t bh = product(batch, spec.heads, "batch x heads"), score_rows = product(bh, seq, "score rows");
  const std::int64_t model_width = product(rows, d, "activations"), q_elements = product(rows, q_width, "activations");
  const std::int64_t kv_elements = product(rows, kv_width, "activations");
  const bool qkv_bias = spec.qkv_bias.value_or(spec.bias), out_bias = spec.out_bias.value_or(spec.bias);
  LayerBuilder layer(name, "attention", dtype);
  auto projection = [&](std::int64_t in, std::int64_t out, bool bias) {
    return LinearSpec{.in = in, .out = out, .bias = bias, .input_grad = true, .layout = spec.layout};
  };

  layer.save("input (q, k, v projections)", model_width);
  if (spec.fused_qkv) {
    const std::int64_t qkv_width = checked_add(q_width, product(2, kv_width, "kv width"), "qkv width");
    layer.linear("qkv", projection(d, qkv_width, qkv_bias), rows);
  } else {
    layer.linear("q", projection(d, q_width, qkv_bias), rows);
    layer.linear("k", projection(d, kv_width, qkv_bias), rows);
    layer.linear("v", projection(d, kv_width, qkv_bias), rows);
    layer.elementwise(ElementwiseKind::grad_accumulate, rows, d);  // x feeds q, k and v: two sums
    layer.elementwise(ElementwiseKind::grad_accumulate, rows, d);
  }
  if (spec.positions == PositionKind::rope) {
    layer.elementwise(ElementwiseKind::rope, rows, q_width);   // q
    layer.elementwise(ElementwiseKind::rope, rows, kv_width);  // k
  }
  if (kv_heads != spec.heads) {
    // k and v repeated to every query head: their gradients summed over each group.
    const std::int64_t repeats = spec.heads / kv_heads - 1;
    for (int i = 0; i < 2; ++i)
      layer.elementwise(ElementwiseKind::grad_accumulate, rows, product(kv_width, repeats, "kv width"));
  }
  layer.save("q, k, v", checked_add(q_elements, product(2, kv_elements, "activations"), "activations"));

  if (spec.kind == AttentionKind::math) {
    // scores = q·kᵀ; p = softmax(mask(scores / sqrt(d_head))); context = p·v.
    layer.matmul("scores", Pass::forward, {"scores", MatmulRole::forward, MatmulLayout::NT, bh, seq, seq, head_dim});
    layer.elementwise(ElementwiseKind::scale, score_rows, seq);
    layer.elementwise(ElementwiseKind::mask, score_rows, seq);
    layer.elementwise(ElementwiseKind::softmax, score_rows, seq);
    layer.matmul("context", Pass::forward, {"context", MatmulRole::forward, MatmulLayout::NN, bh, seq, head_dim, seq});
    // context: dP = dO·vᵀ, dV = pᵀ·dO; scores: dQ = dS·k, dK = dSᵀ·q.
    layer.matmul("context.grad_p", Pass::backward,
                 {"context", MatmulRole::backward_input, MatmulLayout::NT, bh, seq, seq, head_dim});
    layer.matmul("context.grad_v", Pass::backward,
                 {"context", MatmulRole::backward_input, MatmulLayout::TN, bh, seq, head_dim, seq});
    layer.matmul("scores.grad_q", Pass::backward,
                 {"scores", MatmulRole::backward_input, MatmulLayout::NN, bh, seq, head_dim, seq});
    layer.matmul("scores.grad_k", Pass::backward,
                 {"scores", MatmulRole::backward_input, MatmulLayout::TN, bh, seq, head_dim, seq});
    layer.save("attention probabilities", product(score_rows, seq, "activations"));
  } else {
    // One scaled_dot_product_attention: PyTorch's count plus the elementwise work inside it
    // (scale, mask, softmax forward; backward: the same recomputed, then their gradients).
    auto inside = [&](Pass pass) {
      std::int64_t flops = 0;
      for (ElementwiseKind kind : {ElementwiseKind::scale, ElementwiseKind::mask, ElementwiseKind::softmax}) {
        flops = checked_add(flops, elementwise_op_cost(kind, Pass::forward, score_rows, seq, dtype).flops, "attention");
        if (pass == Pass::backward)
          flops = checked_add(flops, elementwise_op_cost(kind, Pass::backward, score_rows, seq, dtype).flops, "attention");
      }
      return flops;
    };
    const Cost forward = sdpa_forward_cost(batch, spec.heads, seq, seq, head_dim, head_dim, dtype);
    const Cost backward = sdpa_backward_cost(batch, spec.heads, seq, seq, head_dim, head_dim, dtype);
    const std::vector<std::int64_t> qkv_shape{batch, spec.heads, seq, head_dim};
    report({.op = "sdpa", .module = {}, .pass = Pass::forward, .shapes = {qkv_shape, qkv_shape, qkv_shape},
            .dtype = dtype, .pytorch_flops = forward.flops,
            .flops = checked_add(forward.flops, inside(Pass::forward), "attention"), .bytes = forward.bytes,
            .matmuls = {{"scores", MatmulRole::forward, MatmulLayout::NT, bh, seq, seq, head_dim},
                        {"context", MatmulRole::forward, MatmulLayout::NN, bh, seq, head_dim, seq}}});
    report({.op = "sdpa_backward", .module = {}, .pass = Pass::backward,
            .shapes = {qkv_shape, qkv_shape, qkv_shape, qkv_shape}, .dtype = dtype, .pytorch_flops = backward.flops,
            .flops = checked_add(backward.flops, inside(Pass::backward), "attention"), .bytes = backward.bytes,
            .matmuls = {{"scores", MatmulRole::recompute, MatmulLayout::NT, bh, seq, seq, head_dim},
                        {"context", MatmulRole::backward_input, MatmulLayout::NT, bh, seq, seq, head_dim},
                        {"context", MatmulRole::backward_input, MatmulLayout::TN, bh, seq, head_dim, seq},
                        {"scores", MatmulRole::backward_input, MatmulLayout::NN, bh, seq, head_dim, seq},
                        {"scores", MatmulRole::backward_input, MatmulLayout::TN, bh, seq, head_dim, seq}}});
    layer.save("attention output", q_elements);
    layer.save("logsumexp (f32)", score_rows, DType::f32);
  }
  layer.linear("proj", projection(q_width, d, out_bias), rows);
  layer.save("merged heads (proj input)", q_elements);
  if (spec.residual) layer.residual(rows, d);
  return layer.finish();
}

LayerAccount moe_layer(std::string_view name, const MoeSpec& spec, std::int64_t rows, DType dtype) {
  require_positive("rows", rows);
  require_positive("d_model", spec.expert.d_model);
  require_positive("d_ff", spec.expert.d_ff);
  require_positive("experts", spec.experts);
  require_positive("experts_per_token", spec.experts_per_token);
  if (spec.experts_per_token > spec.experts)
    throw std::invalid_argument("experts_per_token " + std::to_string(spec.experts_per_token) + " exceeds experts " +
                                std::to_string(spec.experts));
  const std::int64_t d = spec.expert.d_model, f = spec.expert.d_ff, k = spec.experts_per_token;
  const std::int64_t routed = product(rows, k, "routed rows");  // token-expert pairs
  LayerBuilder layer(name, "moe", dtype);
  layer.save("input (router)", product(rows, d, "activations"));
  layer.linear("router", {.in = d, .out = spec.experts, .bias = false, .input_grad = true, .layout = spec.expert.layout},
               rows);
  layer.elementwise(ElementwiseKind::softmax, rows, spec.experts);  // in f32, as Mixtral
  layer.save("router probabilities (f32)", product(rows, spec.experts, "activations"), DType::f32);
  layer.elementwise(ElementwiseKind::mul, rows, k);  // the chosen weights renormalized (a division each)
  layer.save_int64("chosen experts", routed);
  // The experts' linear layers over all routed rows: rows_e summed over experts is rows·k.
  const std::int64_t width = product(routed, d, "activations"), hidden = product(routed, f, "activations");
  const LinearSpec up{.in = d, .out = f, .bias = spec.expert.bias, .input_grad = true, .layout = spec.expert.layout};
  const LinearSpec down{.in = f, .out = d, .bias = spec.expert.bias, .input_grad = true, .layout = spec.expert.layout};
  const bool gated = spec.expert.kind != FfnKind::gelu;
  layer.save("routed input", width);
  layer.linear("experts.w1", up, routed);
  if (gated) {
    layer.linear("experts.w3", up, routed);
    layer.elementwise(ElementwiseKind::grad_accumulate, routed, d);
    layer.elementwise(spec.expert.kind == FfnKind::geglu ? ElementwiseKind::gelu_tanh : ElementwiseKind::silu, routed,
                      f);
    layer.elementwise(ElementwiseKind::mul, routed, f);
    layer.save("w1 output (activation input)", hidden);
    layer.save("activation output (gate)", hidden);
    layer.save("w3 output", hidden);
    layer.save("gate · w3 output (w2 input)", hidden);
  } else {
    layer.elementwise(ElementwiseKind::gelu_tanh, routed, f);
    layer.save("w1 output (GELU input)", hidden);
    layer.save("GELU output (w2 input)", hidden);
  }
  layer.linear("experts.w2", down, routed);
  // Each expert's output times its weight, summed into the token's output; x's gradient summed
  // from the router and its k experts.
  layer.elementwise(ElementwiseKind::mul, routed, d);
  layer.save("expert outputs", width);
  layer.save("routing weights", routed);
  layer.elementwise(ElementwiseKind::add, routed, d);
  for (std::int64_t i = 0; i < k; ++i) layer.elementwise(ElementwiseKind::grad_accumulate, rows, d);
  if (spec.expert.residual) layer.residual(rows, d);
  // The parameters: linear() counted one expert's once; there are `experts` of them.
  const std::int64_t router = product(d, spec.experts, "router parameters");
  std::int64_t one_expert = product(product(gated ? 3 : 2, d, "expert parameters"), f, "expert parameters");
  if (spec.expert.bias) one_expert = checked_add(one_expert, checked_add(product(gated ? 2 : 1, f, "expert parameters"), d, "expert parameters"), "expert parameters");
  layer.parameters(product(one_expert, spec.experts - 1, "expert parameters"));
  layer.active_parameters(checked_add(router, product(one_expert, k, "expert parameters"), "expert parameters"));
  return layer.finish();
}

LayerAccount norm_layer(std::string_view name, NormKind kind, std::int64_t d_model, std::int64_t rows, DType dtype) {
  require_positive("rows", rows);
  require_positive("d_model", d_model);
  LayerBuilder layer(name, "norm", dtype);
  const bool layer_norm = kind == NormKind::layer_norm;
  layer.parameters(layer_norm ? product(2, d_model, "norm parameters") : d_model);
  layer.elementwise(layer_norm ? ElementwiseKind::layer_norm : ElementwiseKind::rms_norm, rows, d_model);
  layer.save("input", product(rows, d_model, "activations"));
  layer.save(layer_norm ? "mean, rstd (f32)" : "rstd (f32)", layer_norm ? product(2, rows, "activations") : rows,
             DType::f32);
  return layer.finish();
}

LayerAccount embedding_layer(std::string_view name, std::int64_t vocab, std::int64_t d_model, PositionKind positions,
                             std::int64_t context, std::int64_t batch, std::int64_t seq, DType dtype,
                             bool scaled) {
  require_positive("vocab", vocab);
  require_positive("d_model", d_model);
  require_positive("batch", batch);
  require_positive("seq", seq);
  const std::int64_t rows = product(batch, seq, "tokens");
  LayerBuilder layer(name, "embedding", dtype);
  layer.parameters(product(vocab, d_model, "embedding parameters"));
  layer.elementwise(ElementwiseKind::embedding, rows, d_model);  // tokens
  layer.save_int64("token ids", rows);
  if (scaled) layer.elementwise(ElementwiseKind::scale, rows, d_model);  // x sqrt(d_model)
  if (positions == PositionKind::learned) {
    require_positive("context", context);
    layer.parameters(product(context, d_model, "position embedding parameters"));
    layer.elementwise(ElementwiseKind::embedding, rows, d_model);  // positions (the batch shares them)
    layer.elementwise(ElementwiseKind::add, rows, d_model);
    layer.save_int64("position ids", seq);
  }
  return layer.finish();
}

LayerAccount lm_head_layer(std::string_view name, std::int64_t vocab, std::int64_t d_model, bool tied,
                           std::int64_t rows, DType dtype) {
  require_positive("rows", rows);
  LayerBuilder layer(name, "lm_head", dtype);
  layer.linear("logits", {.in = d_model, .out = vocab, .bias = false, .input_grad = true}, rows);
  if (tied) {
    layer.parameters(-product(d_model, vocab, "LM head parameters"));  // the embedding's weight
    layer.elementwise(ElementwiseKind::grad_accumulate, vocab, d_model);
  }
  layer.elementwise(ElementwiseKind::log_softmax, rows, vocab);
  layer.elementwise(ElementwiseKind::nll_loss, rows, vocab);
  layer.save("input", product(rows, d_model, "activations"));
  layer.save("log-probabilities", product(rows, vocab, "activations"));
  layer.save_int64("targets", rows);
  return layer.finish();
}

// ---- transformers ----

void TransformerConfig::validate() const {
  const std::string prefix = name.empty() ? "" : name + ": ";
  auto positive = [&](const char* what, std::int64_t value) {
    if (value <= 0)
      throw std::invalid_argument(prefix + what + " must be positive (got " + std::to_string(value) + ")");
  };
  positive("vocab", vocab);
  positive("context", context);
  positive("d_model", d_model);
  positive("layers", layers);
  positive("heads", heads);
  positive("d_ff", d_ff);
  if (head_dim < 0) positive("head_dim", head_dim);
  if (kv_heads < 0) positive("kv_heads", kv_heads);
  if (head_dim == 0 && d_model % heads != 0)
    throw std::invalid_argument(prefix + "heads " + std::to_string(heads) + " does not divide d_model " +
                                std::to_string(d_model));
  if (heads % key_value_heads() != 0)
    throw std::invalid_argument(prefix + "kv_heads " + std::to_string(kv_heads) + " does not divide heads " +
                                std::to_string(heads));
  if (experts < 0) positive("experts", experts);
  if (moe()) {
    positive("experts_per_token", experts_per_token);
    if (experts_per_token > experts)
      throw std::invalid_argument(prefix + "experts_per_token " + std::to_string(experts_per_token) +
                                  " exceeds experts " + std::to_string(experts));
  } else if (experts_per_token > 1) {
    throw std::invalid_argument(prefix + "experts_per_token " + std::to_string(experts_per_token) +
                                " needs experts > 1 (got " + std::to_string(experts) + ")");
  }
}

namespace {

// Note [presets]: sources of the preset numbers.
// GPT-2: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners", table 2
// (layers, d_model); the released checkpoints' configs (openai/gpt-2 hparams.json, Hugging Face
// gpt2, gpt2-medium, gpt2-large, gpt2-xl config.json): vocab 50257, n_ctx 1024, heads 12/16/20/25,
// d_ff = 4·d_model, GELU (tanh), LayerNorm, biases, learned positions, LM head tied to the token
// embedding, one fused c_attn projection, Conv1D weights stored (in, out). Their parameter counts
// are 124M/355M/774M/1558M (the paper's table says 117M/345M/762M/1542M, a known miscount).
// CS336 (Stanford, Spring 2025), assignment 2 (systems), section 1.1.2, table 1: d_model, d_ff,
// layers, heads of small/medium/large/xl/2.7B, with vocabulary 10,000; the model is assignment
// 1's (cs336_basics BasicsTransformerLM): RMSNorm, SwiGLU, RoPE, no biases, q/k/v/output
// projections apart, LM head untied, weights stored (out, in). The context length is varied in
// the assignment; 1024 here is the preset's limit (--seq picks the length).
// Llama, Mistral, Mixtral: their Hugging Face config.json (meta-llama/Llama-2-7b-hf,
// meta-llama/Meta-Llama-3-8B, mistralai/Mistral-7B-v0.1, mistralai/Mixtral-8x7B-v0.1): RMSNorm,
// SwiGLU, RoPE, no biases, q/k/v/o apart, untied LM head, max_position_embeddings as context. Their
// parameter counts, from the checkpoints' safetensors (total_size / 2 bytes): 6,738,415,616,
// 8,030,261,248, 7,241,732,096 and 46,702,792,704 (12,879,925,248 active per token).
TransformerConfig gpt2(std::string name, std::int64_t d_model, std::int64_t layers, std::int64_t heads) {
  return {.name = std::move(name), .vocab = 50257, .context = 1024, .d_model = d_model, .layers = layers,
          .heads = heads, .d_ff = 4 * d_model, .tied_embeddings = true, .ffn = FfnKind::gelu,
          .norm = NormKind::layer_norm, .bias = true, .positions = PositionKind::learned, .fused_qkv = true,
          .attention = AttentionKind::math, .layout = WeightLayout::in_out,
          .source = "GPT-2 (Radford et al. 2019; released configs: vocab 50257, context 1024, tied embeddings)"};
}

TransformerConfig cs336(std::string name, std::int64_t d_model, std::int64_t layers, std::int64_t heads) {
  return {.name = std::move(name), .vocab = 10000, .context = 1024, .d_model = d_model, .layers = layers,
          .heads = heads, .d_ff = 4 * d_model, .tied_embeddings = false, .ffn = FfnKind::swiglu,
          .norm = NormKind::rms_norm, .bias = false, .positions = PositionKind::rope, .fused_qkv = false,
          .attention = AttentionKind::math, .layout = WeightLayout::out_in,
          .source = "CS336 Spring 2025 assignment 2, table 1 (vocab 10000; assignment 1's model: RMSNorm, "
                    "SwiGLU, RoPE, no biases, untied LM head)"};
}

TransformerConfig llama(std::string name, std::int64_t vocab, std::int64_t context, std::int64_t d_ff,
                        std::int64_t kv_heads, std::string source, std::int64_t experts = 0,
                        std::int64_t experts_per_token = 0) {
  return {.name = std::move(name), .vocab = vocab, .context = context, .d_model = 4096, .layers = 32, .heads = 32,
          .d_ff = d_ff, .tied_embeddings = false, .ffn = FfnKind::swiglu, .norm = NormKind::rms_norm, .bias = false,
          .positions = PositionKind::rope, .fused_qkv = false, .attention = AttentionKind::math,
          .layout = WeightLayout::out_in, .source = std::move(source), .kv_heads = kv_heads,
          .experts = experts, .experts_per_token = experts_per_token};
}

const std::vector<TransformerConfig>& presets() {
  static const std::vector<TransformerConfig> table = {
      gpt2("gpt2-small", 768, 12, 12),     gpt2("gpt2-medium", 1024, 24, 16), gpt2("gpt2-large", 1280, 36, 20),
      gpt2("gpt2-xl", 1600, 48, 25),       cs336("cs336-small", 768, 12, 12), cs336("cs336-medium", 1024, 24, 16),
      cs336("cs336-large", 1280, 36, 20),  cs336("cs336-xl", 1600, 48, 25),   cs336("cs336-2.7b", 2560, 32, 32),
      llama("llama-2-7b", 32000, 4096, 11008, 32, "meta-llama/Llama-2-7b-hf config.json"),
      llama("llama-3-8b", 128256, 8192, 14336, 8, "meta-llama/Meta-Llama-3-8B config.json"),
      llama("mistral-7b", 32000, 32768, 14336, 8, "mistralai/Mistral-7B-v0.1 config.json"),
      llama("mixtral-8x7b", 32000, 32768, 14336, 8, "mistralai/Mixtral-8x7B-v0.1 config.json", 8, 2),
  };
  return table;
}

}  // namespace

std::span<const TransformerConfig> transformer_presets() { return presets(); }

const TransformerConfig* find_preset(std::string_view name) {
  for (const auto& config : presets())
    if (config.name == name) return &config;
  return nullptr;
}

std::string preset_list() {
  std::string out;
  for (const auto& config : presets()) out += (out.empty() ? "" : ", ") + config.name;
  return out;
}

ModelAccount transformer_account(const TransformerConfig& config, std::int64_t batch, std::int64_t seq, DType dtype) {
  config.validate();
  require_positive("batch", batch);
  require_positive("seq", seq);
  if (seq > config.context)
    throw std::invalid_argument("seq " + std::to_string(seq) + " exceeds the model's context " +
                                std::to_string(config.context));
  ModelAccount model{.config = config, .batch = batch, .seq = seq, .dtype = dtype};
  const std::int64_t rows = product(batch, seq, "tokens");
  const AttentionSpec attention{.d_model = config.d_model, .heads = config.heads, .bias = config.bias,
                                .fused_qkv = config.fused_qkv, .positions = config.positions,
                                .kind = config.attention, .layout = config.layout, .residual = true,
                                .kv_heads = config.kv_heads, .head_dim = config.head_dim,
                                .qkv_bias = config.qkv_bias, .out_bias = config.out_bias};
  const FfnSpec ffn{.d_model = config.d_model, .d_ff = config.d_ff, .kind = config.ffn,
                    .bias = config.mlp_bias.value_or(config.bias), .layout = config.layout, .residual = true};
  const MoeSpec moe{.expert = ffn, .experts = config.experts, .experts_per_token = config.experts_per_token};
  model.layers.push_back(embedding_layer("embedding", config.vocab, config.d_model, config.positions, config.context,
                                         batch, seq, dtype, config.scaled_embedding));
  for (std::int64_t i = 0; i < config.layers; ++i) {
    const std::string block = "h." + std::to_string(i) + ".";
    model.layers.push_back(norm_layer(block + "ln_1", config.norm, config.d_model, rows, dtype));
    model.layers.push_back(attention_layer(block + "attn", attention, batch, seq, dtype));
    model.layers.push_back(norm_layer(block + "ln_2", config.norm, config.d_model, rows, dtype));
    model.layers.push_back(config.moe() ? moe_layer(block + "mlp", moe, rows, dtype)
                                        : ffn_layer(block + "mlp", ffn, rows, dtype));
  }
  model.layers.push_back(norm_layer("ln_f", config.norm, config.d_model, rows, dtype));
  model.layers.push_back(lm_head_layer("lm_head", config.vocab, config.d_model, config.tied_embeddings, rows, dtype));
  const LayerTotals totals = sum_layers(model.layers);
  model.parameters = totals.parameters;
  model.active_parameters = totals.active_parameters;
  model.forward = totals.forward;
  model.backward = totals.backward;
  model.activation_bytes = totals.activation_bytes;
  return model;
}

std::int64_t transformer_parameters(const TransformerConfig& config) {
  return transformer_account(config, 1, 1, DType::f32).parameters;
}

}  // namespace flopscope
