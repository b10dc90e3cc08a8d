// Training arithmetic: FLOPs of a run, its wall-clock time on a number of devices, the largest
// model whose training state fits a memory, and MFU from a measured step time.
//
// FLOP counts are exact 128-bit integers (checked.hpp: an overflow is a SizeOverflow). Times and
// MFU are doubles, computed once from the exact counts at the end.
//
// Note [6NT]: a training step costs about 6 FLOPs per parameter per token: 2 forward (one
// multiply-add per weight) and 4 backward (the gradients of the input and of the weight). The
// exact count (transformer_account) adds the attention term (q·kᵀ and p·v: 4·batch·seq²·d_model
// per layer forward, which no parameter accounts for) and differs from 6·N·T by the parameters
// that do no matmul (position embeddings, norms, biases) and by the LM head, which costs FLOPs even
// when its weight is the embedding's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "flopscope/checked.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/memory.hpp"
#include "flopscope/model.hpp"
#include "flopscope/peaks.hpp"

namespace flopscope {

// 6·N·T, exact.
Count128 six_n_t(std::int64_t parameters, std::int64_t tokens);

// The exact count of training on `tokens` tokens in sequences of `seq`: the FLOPs of one
// sequence's training step (forward + backward, in the convention chosen) times tokens / seq,
// rounded down to a whole FLOP when seq does not divide tokens.
struct RunFlops {
  Count128 pytorch_flops = 0, flops = 0;
  bool rounded = false;  // seq does not divide tokens
};
RunFlops run_flops(const TransformerConfig& config, std::int64_t tokens, std::int64_t seq);

// A GPU of peaks.hpp's table by a short name: the table's name lower-cased with '-' for spaces
// ("h100-sxm", "a100-sxm4-80gb"), or a prefix of it, preferring the SXM part ("h100" is H100 SXM,
// "a100" the first A100 SXM4). nullptr when none matches.
const GpuSpec* find_gpu_by_name(std::string_view name);
std::string gpu_name_list();  // "a100-sxm4-40gb, ..., h200-sxm"
// The dense peak of `compute` ("bf16") on that GPU, FLOP/s; 0 when the GPU has none.
double gpu_peak_flops(const GpuSpec& gpu, std::string_view compute);

// Seconds to run `flops` on `devices` devices of `peak_flops_per_second` each at `mfu` (0, 1].
double training_seconds(Count128 flops, double peak_flops_per_second, std::int64_t devices, double mfu);

// MFU of a step of `step_flops` that took `step_seconds` on `devices` devices.
double model_flops_utilization(Count128 step_flops, double step_seconds, double peak_flops_per_second,
                               std::int64_t devices);

// The most parameters whose training state (memory.hpp's Note [training state]: parameters,
// gradients, optimizer state, master weights; no activations) fits `memory_bytes`.
struct LargestModel {
  std::int64_t parameters = 0;
  std::int64_t bytes_per_parameter = 0;
  TrainingMemory memory;  // of that model
};
LargestModel largest_trainable_model(std::int64_t memory_bytes, DType parameter_dtype, Optimizer optimizer,
                                     bool master_weights = true);

}  // namespace flopscope
