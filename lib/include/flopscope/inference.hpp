// Serving arithmetic of a transformer: the KV cache, prefill and decode FLOPs and bytes, and the
// roofline bound on tokens per second of one device.
//
// Conventions (Note [inference roofline] in inference.cpp):
// - The KV cache holds, per token, a key and a value vector per layer and kv head:
//   2 · layers · kv_heads · head_dim elements in the KV dtype.
// - Prefill of a prompt of P tokens is the forward pass of transformer_account at seq P, in both
//   conventions: the full P x P score matrix counted (as PyTorch's counter counts it), the LM head
//   at every position (the full count also has the loss's elementwise work).
// - One decode step of one sequence is the forward pass of one new token that attends to
//   `context` keys (the cached context - 1 and its own): exactly A + B · context, where the
//   transformer's forward at seq s is A · s + B · s² (every op is per token, per row or per score
//   element), so A and B come from the transformer account at seq 1 and 2.
// - A step of a batch reads every weight once (a MoE layer: the router and at most
//   min(experts, tokens · experts_per_token) experts), the whole KV context of each sequence and
//   writes the new tokens' keys and values. Activations are not counted (they are small beside
//   these at decode). The token (and learned position) embedding tables are gathered, not read:
//   a row per token, unless tied to the LM head, which reads the whole table.
// - Time bound: max(pytorch FLOPs / peak, bytes / bandwidth); the matmul FLOPs (PyTorch's
//   convention) are what the tensor-core peak rates.
#pragma once

#include <cstdint>
#include <optional>

#include "flopscope/checked.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/flop_counter.hpp"
#include "flopscope/model.hpp"

namespace flopscope {

// 2 · layers · kv_heads · head_dim · bytes of `kv_dtype`.
std::int64_t kv_cache_bytes_per_token(const TransformerConfig& config, DType kv_dtype);

// The forward FLOPs of one decode step of one sequence, the new token attending to `context` keys
// (1 <= context <= config.context); bytes left 0 (see decode_step).
FlopTotals decode_token_flops(const TransformerConfig& config, std::int64_t context);

// The weights one forward step over `tokens` tokens reads, in bytes of `weight_dtype`.
std::int64_t weight_bytes_read(const TransformerConfig& config, std::int64_t tokens, DType weight_dtype);

struct Roofline {
  double flops_per_second = 0;  // the dense peak of the weights' compute mode
  double bytes_per_second = 0;  // memory bandwidth
};

// One step of a batch, bounded by the roofline.
struct StepBound {
  std::int64_t batch = 0;
  std::int64_t tokens = 0;           // tokens the step produces (decode: batch) or reads (prefill)
  FlopTotals flops;                  // pytorch_flops and flops of the whole step; bytes = weight + kv
  std::int64_t weight_bytes = 0, kv_bytes = 0;
  double intensity = 0;              // pytorch FLOPs per byte
  double compute_seconds = 0, memory_seconds = 0;
  double seconds() const { return compute_seconds > memory_seconds ? compute_seconds : memory_seconds; }
  bool memory_bound() const { return memory_seconds >= compute_seconds; }
  double tokens_per_second() const { return static_cast<double>(tokens) / seconds(); }
};

// `batch` sequences each generating one token at `context` keys: the KV read of context - 1
// tokens and the write of one, per sequence.
StepBound decode_step(const TransformerConfig& config, std::int64_t batch, std::int64_t context, DType weight_dtype,
                      DType kv_dtype, const Roofline& device);
// `batch` prompts of `prompt` tokens: the KV write of all of them.
StepBound prefill_step(const TransformerConfig& config, std::int64_t batch, std::int64_t prompt, DType weight_dtype,
                       DType kv_dtype, const Roofline& device);

// The smallest batch at which decode at `context` is compute-bound; nullopt when no batch up to
// 2^40 is (each sequence's KV read costs more time than its FLOPs: long contexts stay
// memory-bound at any batch).
std::optional<std::int64_t> decode_crossover_batch(const TransformerConfig& config, std::int64_t context,
                                                   DType weight_dtype, DType kv_dtype, const Roofline& device);

}  // namespace flopscope
