// Serving arithmetic (inference.hpp) against hand computations and the transformer account: the
// KV cache of Llama-3-8B, decode FLOPs as the account's forward pass at one token plus the score
// terms (checked to be exactly A·s + B·s² at other lengths), the weights a step reads (dense and
// MoE), and the crossover batch against its closed form.
#include <gtest/gtest.h>

#include <cmath>

#include "flopscope/inference.hpp"
#include "flopscope/model.hpp"

namespace flopscope {
namespace {

const TransformerConfig& preset(const char* name) {
  const TransformerConfig* config = find_preset(name);
  EXPECT_NE(config, nullptr) << name;
  return *config;
}

TEST(Inference, KvCacheOfLlama3) {
  // 2 (k and v) x 32 layers x 8 kv heads x 128 head_dim x 2 bytes (bf16).
  EXPECT_EQ(kv_cache_bytes_per_token(preset("llama-3-8b"), DType::bf16), 2 * 32 * 8 * 128 * 2);
  EXPECT_EQ(kv_cache_bytes_per_token(preset("llama-3-8b"), DType::f8e4m3), 2 * 32 * 8 * 128);
  // GPT-2 small: multi-head, 12 layers x 12 heads x 64.
  EXPECT_EQ(kv_cache_bytes_per_token(preset("gpt2-small"), DType::f32), 2 * 12 * 12 * 64 * 4);
}

TEST(Inference, DecodeIsTheForwardPassAtOneTokenPlusItsScores) {
  for (const char* name : {"gpt2-small", "llama-3-8b", "mixtral-8x7b", "cs336-small"}) {
    const TransformerConfig& c = preset(name);
    const FlopTotals one = transformer_account(c, 1, 1, DType::bf16).forward;
    EXPECT_EQ(decode_token_flops(c, 1).pytorch_flops, one.pytorch_flops) << name;
    EXPECT_EQ(decode_token_flops(c, 1).flops, one.flops) << name;
    // A + B·ctx from decode at 1 and 2 keys; the account's forward at s tokens is A·s + B·s².
    const FlopTotals d1 = decode_token_flops(c, 1), d2 = decode_token_flops(c, 2);
    for (std::int64_t s : {3, 7, 64}) {
      const FlopTotals forward = transformer_account(c, 1, s, DType::bf16).forward;
      const Count128 b_pytorch = d2.pytorch_flops - d1.pytorch_flops, b_full = d2.flops - d1.flops;
      EXPECT_EQ(forward.pytorch_flops, (d1.pytorch_flops - b_pytorch) * s + b_pytorch * s * s) << name << " s=" << s;
      EXPECT_EQ(forward.flops, (d1.flops - b_full) * s + b_full * s * s) << name << " s=" << s;
    }
  }
}

TEST(Inference, Llama3DecodeFlopsAndBytesByHand) {
  const TransformerConfig& c = preset("llama-3-8b");
  const std::int64_t n = 8'030'261'248, vocab = 128'256, d = 4096, ctx = 1024;
  ASSERT_EQ(transformer_parameters(c), n);  // the model card's count
  // Every parameter but the (gathered) token embedding and the 65 RMSNorm weights does one
  // multiply-add per token; the scores and the weighted sum 2 x 2·32 heads·128 per key per layer.
  const Count128 matmul_parameters = n - vocab * d - 65 * d;
  EXPECT_EQ(decode_token_flops(c, ctx).pytorch_flops, 2 * matmul_parameters + Count128{4} * 32 * 32 * 128 * ctx);
  const Roofline h100{989.4e12, 3.35e12};
  const StepBound one = decode_step(c, 1, ctx, DType::bf16, DType::bf16, h100);
  EXPECT_EQ(one.weight_bytes, (n - vocab * d + d) * 2);  // one embedding row gathered
  EXPECT_EQ(one.kv_bytes, ctx * 131'072);
  EXPECT_TRUE(one.memory_bound());
  const StepBound many = decode_step(c, 64, ctx, DType::bf16, DType::bf16, h100);
  EXPECT_EQ(many.weight_bytes, (n - vocab * d + 64 * d) * 2);
  EXPECT_EQ(many.kv_bytes, 64 * ctx * 131'072);
  EXPECT_EQ(many.flops.pytorch_flops, 64 * decode_token_flops(c, ctx).pytorch_flops);
  EXPECT_DOUBLE_EQ(many.memory_seconds, static_cast<double>(many.weight_bytes + many.kv_bytes) / 3.35e12);
  const StepBound prefill = prefill_step(c, 1, ctx, DType::bf16, DType::bf16, h100);
  EXPECT_EQ(prefill.flops.pytorch_flops, transformer_account(c, 1, ctx, DType::bf16).forward.pytorch_flops);
  EXPECT_FALSE(prefill.memory_bound());
}

TEST(Inference, CrossoverBatchAgainstItsClosedForm) {
  const TransformerConfig& c = preset("llama-3-8b");
  const Roofline h100{989.4e12, 3.35e12};
  for (std::int64_t ctx : {1, 64, 128, 256}) {
    const double f = static_cast<double>(decode_token_flops(c, ctx).pytorch_flops);
    const double kv = static_cast<double>(ctx) * 131'072;
    const double w = (8'030'261'248.0 - 128'256.0 * 4096) * 2;  // + batch·d·2 gathered rows
    // Smallest B with B·f/peak > (w + B·(2d + kv))/bw.
    const double per_sequence = f / h100.flops_per_second - (kv + 2 * 4096) / h100.bytes_per_second;
    const auto expected = static_cast<std::int64_t>(std::floor(w / h100.bytes_per_second / per_sequence)) + 1;
    const auto crossover = decode_crossover_batch(c, ctx, DType::bf16, DType::bf16, h100);
    ASSERT_TRUE(crossover.has_value()) << ctx;
    EXPECT_EQ(*crossover, expected) << ctx;
    EXPECT_FALSE(decode_step(c, *crossover, ctx, DType::bf16, DType::bf16, h100).memory_bound());
    EXPECT_TRUE(decode_step(c, *crossover - 1, ctx, DType::bf16, DType::bf16, h100).memory_bound());
  }
  // At 512 keys each sequence reads 64 MiB of KV (20 us at 3.35 TB/s) for 1.5e10 FLOPs (15 us at
  // 989 TFLOP/s): no batch makes decode compute-bound on an H100; nor at 8192 keys.
  EXPECT_FALSE(decode_crossover_batch(c, 512, DType::bf16, DType::bf16, h100).has_value());
  EXPECT_FALSE(decode_crossover_batch(c, 8192, DType::bf16, DType::bf16, h100).has_value());
}

TEST(Inference, MoeStepReadsTheExpertsItsTokensChoose) {
  const TransformerConfig& c = preset("mixtral-8x7b");  // 8 experts, 2 per token, untied
  const ModelAccount one = transformer_account(c, 1, 1, DType::bf16);
  const std::int64_t embedding = c.vocab * c.d_model;
  // One token: the router and its 2 experts per layer (the active parameters).
  EXPECT_EQ(weight_bytes_read(c, 1, DType::bf16), (one.active_parameters - embedding + c.d_model) * 2);
  // Four tokens can touch all 8 experts: every parameter but the embedding table.
  EXPECT_EQ(weight_bytes_read(c, 4, DType::bf16), (one.parameters - embedding + 4 * c.d_model) * 2);
  EXPECT_EQ(weight_bytes_read(c, 1000, DType::f8e4m3), one.parameters - embedding + 1000 * c.d_model);
}

TEST(Inference, BadInputIsAnError) {
  const TransformerConfig& c = preset("gpt2-small");
  EXPECT_THROW(decode_token_flops(c, 0), std::invalid_argument);
  EXPECT_THROW(decode_token_flops(c, 1025), std::invalid_argument);
  EXPECT_THROW(decode_step(c, 1, 16, DType::bf16, DType::bf16, Roofline{0, 1}), std::invalid_argument);
  EXPECT_THROW(weight_bytes_read(c, 0, DType::bf16), std::invalid_argument);
}

}  // namespace
}  // namespace flopscope
