// Memory accounting: bytes of a tensor of a shape and dtype, and of a model's training state.
// All counts are exact integers; a count that overflows int64 throws SizeOverflow (checked.hpp),
// whose message names the operands.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flopscope/checked.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/sizes.hpp"  // format_thousands, format_bytes_binary / _decimal

namespace flopscope {

// "49152x12288", "2^28", "4Kix4Ki", "7" (each dimension as parse_count reads it); nullopt when a
// dimension does not parse. A 0-d tensor is written "" -> {} (1 element).
std::optional<std::vector<std::int64_t>> parse_shape(std::string_view text);
std::string format_shape(std::span<const std::int64_t> shape);  // "49152x12288"

// Element count: checked_numel (checked.hpp).
std::int64_t tensor_bytes(std::span<const std::int64_t> shape, DType dtype);

enum class Optimizer { sgd, sgd_momentum, adamw };
std::optional<Optimizer> parse_optimizer(std::string_view text);  // "sgd", "momentum", "adam", "adamw"
std::string_view optimizer_name(Optimizer optimizer);

// Note [training state]: what a data-parallel-free, activation-free training step keeps per
// parameter. Parameters and gradients are in the parameter dtype. SGD keeps no state, SGD with
// momentum one f32 buffer, Adam/AdamW two f32 moments (exp_avg, exp_avg_sq), as PyTorch's
// optimizers do for f32 parameters and as mixed-precision recipes do. With parameters narrower
// than f32 (mixed precision), the optimizer updates an f32 master copy of the weights (on by
// default; `master_weights = false` models pure low-precision training). bf16 + AdamW + master
// weights is the usual 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter (ZeRO paper, section 3.1).
// Activations, temporary buffers and allocator overhead are not counted.
struct MemoryComponent {
  std::string name;     // "parameters", "gradients", "adamw exp_avg", ...
  DType dtype;
  std::int64_t bytes_per_parameter;
  std::int64_t bytes;
};

struct TrainingMemory {
  std::vector<MemoryComponent> components;
  std::int64_t bytes_per_parameter = 0;
  std::int64_t total_bytes = 0;
};

// SizeOverflow when a total overflows int64; std::invalid_argument for a negative count.
TrainingMemory training_memory(std::int64_t parameters, DType parameter_dtype, Optimizer optimizer,
                               bool master_weights = true);

// "2,415,919,104 B (2.25 GiB, 2.42 GB)"
std::string format_bytes_both(std::int64_t bytes);

}  // namespace flopscope
