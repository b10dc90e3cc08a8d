#include "flopscope/inference.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace flopscope {

// Note [inference roofline]: a decode step of a batch reads every weight once whatever the
// batch (the batch shares them), so its bytes are W + batch · context · kv while its FLOPs are
// batch · f: at batch 1 decode is memory-bound by far (intensity ≈ 2 FLOPs per weight byte-size),
// and the batch at which batch · f / peak reaches (W + batch · context · kv) / bandwidth is the
// crossover. Each sequence's KV read adds bytes as fast as FLOPs, so when
// f / peak <= context · kv / bandwidth no batch makes decode compute-bound. Prefill reads the
// weights once for all its batch · prompt tokens and is compute-bound beyond a few hundred tokens.

namespace {

std::int64_t mul(std::int64_t a, std::int64_t b, const char* what) { return checked_mul<std::int64_t>(a, b, what); }
std::int64_t add(std::int64_t a, std::int64_t b, const char* what) { return checked_add<std::int64_t>(a, b, what); }

void require_positive(const char* what, std::int64_t value) {
  if (value <= 0) throw std::invalid_argument(std::string(what) + " must be positive (got " + std::to_string(value) + ")");
}

}  // namespace

std::int64_t kv_cache_bytes_per_token(const TransformerConfig& config, DType kv_dtype) {
  config.validate();
  const std::int64_t elements =
      mul(mul(mul(2, config.layers, "KV cache"), config.key_value_heads(), "KV cache"), config.head_size(), "KV cache");
  return mul(elements, static_cast<std::int64_t>(dtype_size(kv_dtype)), "KV cache bytes");
}

FlopTotals decode_token_flops(const TransformerConfig& config, std::int64_t context) {
  require_positive("context", context);
  if (context > config.context)
    throw std::invalid_argument("context " + std::to_string(context) + " exceeds the model's context " +
                                std::to_string(config.context));
  const FlopTotals one = transformer_account(config, 1, 1, DType::bf16).forward;
  if (context == 1) return {one.pytorch_flops, one.flops, 0};
  // forward(s) = A·s + B·s²: B = (forward(2) - 2·forward(1)) / 2, and one token at `context`
  // keys costs A + B·context = forward(1) + B·(context - 1).
  const FlopTotals two = transformer_account(config, 1, 2, DType::bf16).forward;
  auto step = [&](Count128 f1, Count128 f2) {
    const Count128 twice_b = f2 - 2 * f1;
    if (twice_b < 0 || twice_b % 2 != 0)
      throw std::logic_error("decode FLOPs: the forward pass is not A·s + B·s² in the sequence length");
    return checked_add<Count128>(f1, checked_mul<Count128>(twice_b / 2, context - 1, "decode FLOPs"), "decode FLOPs");
  };
  return {step(one.pytorch_flops, two.pytorch_flops), step(one.flops, two.flops), 0};
}

std::int64_t weight_bytes_read(const TransformerConfig& config, std::int64_t tokens, DType weight_dtype) {
  require_positive("tokens", tokens);
  std::int64_t parameters = 0;
  for (const LayerAccount& layer : transformer_account(config, 1, 1, weight_dtype).layers) {
    std::int64_t read = layer.parameters;
    if (layer.kind == "embedding") {
      // The token table: all of it when the LM head shares it (read there), else a row per token.
      read = config.tied_embeddings ? mul(config.vocab, config.d_model, "weights")
                                    : mul(std::min(tokens, config.vocab), config.d_model, "weights");
      if (config.positions == PositionKind::learned)
        read = add(read, mul(std::min(tokens, config.context), config.d_model, "weights"), "weights");
    } else if (layer.kind == "moe") {
      const std::int64_t router = mul(config.d_model, config.experts, "weights");
      const std::int64_t one_expert = (layer.parameters - router) / config.experts;
      const std::int64_t touched = std::min(config.experts, mul(tokens, config.experts_per_token, "experts"));
      read = add(router, mul(touched, one_expert, "weights"), "weights");
    }
    parameters = add(parameters, read, "weights");
  }
  return mul(parameters, static_cast<std::int64_t>(dtype_size(weight_dtype)), "weight bytes");
}

namespace {

StepBound bound(StepBound step, const Roofline& device) {
  if (!(device.flops_per_second > 0) || !(device.bytes_per_second > 0))
    throw std::invalid_argument("the roofline needs a positive peak and bandwidth");
  const Count128 bytes = checked_add<Count128>(step.weight_bytes, step.kv_bytes, "step bytes");
  step.flops.bytes = bytes;
  step.intensity = static_cast<double>(step.flops.pytorch_flops) / static_cast<double>(bytes);
  step.compute_seconds = static_cast<double>(step.flops.pytorch_flops) / device.flops_per_second;
  step.memory_seconds = static_cast<double>(bytes) / device.bytes_per_second;
  return step;
}

}  // namespace

StepBound decode_step(const TransformerConfig& config, std::int64_t batch, std::int64_t context, DType weight_dtype,
                      DType kv_dtype, const Roofline& device) {
  require_positive("batch", batch);
  StepBound step{.batch = batch, .tokens = batch};
  step.flops = decode_token_flops(config, context).times(batch);
  step.weight_bytes = weight_bytes_read(config, batch, weight_dtype);
  step.kv_bytes = mul(mul(batch, context, "KV bytes"), kv_cache_bytes_per_token(config, kv_dtype), "KV bytes");
  return bound(step, device);
}

StepBound prefill_step(const TransformerConfig& config, std::int64_t batch, std::int64_t prompt, DType weight_dtype,
                       DType kv_dtype, const Roofline& device) {
  require_positive("batch", batch);
  const std::int64_t tokens = mul(batch, prompt, "prefill tokens");
  StepBound step{.batch = batch, .tokens = tokens};
  const FlopTotals forward = transformer_account(config, 1, prompt, DType::bf16).forward;
  step.flops = FlopTotals{forward.pytorch_flops, forward.flops, 0}.times(batch);
  step.weight_bytes = weight_bytes_read(config, tokens, weight_dtype);
  step.kv_bytes = mul(tokens, kv_cache_bytes_per_token(config, kv_dtype), "KV bytes");
  return bound(step, device);
}

std::optional<std::int64_t> decode_crossover_batch(const TransformerConfig& config, std::int64_t context,
                                                   DType weight_dtype, DType kv_dtype, const Roofline& device) {
  // In doubles: the bytes of a batch of 2^40 overflow int64; the predicate needs only the times.
  const double flops = static_cast<double>(decode_token_flops(config, context).pytorch_flops);
  const double kv = static_cast<double>(context) * static_cast<double>(kv_cache_bytes_per_token(config, kv_dtype));
  auto compute_bound = [&](std::int64_t batch) {
    const auto sequences = static_cast<double>(batch);
    const double bytes = static_cast<double>(weight_bytes_read(config, batch, weight_dtype)) + sequences * kv;
    return sequences * flops / device.flops_per_second > bytes / device.bytes_per_second;
  };
  constexpr std::int64_t kLimit = std::int64_t{1} << 40;
  std::int64_t high = 1;
  while (!compute_bound(high)) {
    if (high >= kLimit) return std::nullopt;
    high *= 2;
  }
  std::int64_t low = high / 2;  // memory-bound (or 0)
  while (high - low > 1) {
    const std::int64_t middle = low + (high - low) / 2;
    (compute_bound(middle) ? high : low) = middle;
  }
  return high;
}

}  // namespace flopscope
