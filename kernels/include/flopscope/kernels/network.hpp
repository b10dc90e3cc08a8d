// A chain of linear layers, forward, backward and a training step, as a list of steps that run
// through the kernel tables: the matmul family's variants for every product, the convert table
// for mixed precision's roundings, the optimizer table for the update. What the backward family
// of benchmarks times (bench/bench_backward.cpp), and what tests/test_backward.cpp checks
// against finite differences.
//
// The network: layer i maps d_i -> d_{i+1}, Y = X·W with W stored (d_i, d_{i+1}) (the lecture's
// x @ w), no bias: the lecture's deep linear MLP ("Cruncher") of L layers, one linear layer
// (L = 1), or, with `gelu`, GPT-2's feed-forward block (widths d, d_ff, d: a GELU between the two
// layers; activation.hpp). Its backward pass, given dY of the last layer's output:
//   dW_i = X_iᵀ·dY_i      (a TN product: X_i's transposed view)
//   dX_i = dY_i·W_iᵀ      (an NT product), for every layer but the first unless input_grad
//   dY_{i-1} = gelu'(Y_{i-1}) ⊙ dX_i where a GELU sits between (its saved input recomputed)
// each product 2·rows·d_i·d_{i+1} FLOPs, so backward is twice the forward (minus the first layer's
// dX); the GELUs are elementwise (the full count only).
//
// dtypes: f64 and f32 run in their own type throughout. f16 and bf16 are mixed precision as in
// torch.autocast: activations, their gradients and the working weights are narrow, products
// accumulate in f32 and are written as f32 (the matmul family's narrow modes), then rounded to the
// narrow dtype for the next layer (a convert step); weight gradients stay f32, and the step
// updates f32 master weights and writes their narrow working copy.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/kernels/activation.hpp"
#include "flopscope/kernels/convert.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/kernels/optimizer.hpp"
#include "flopscope/shape.hpp"

namespace flopscope::kernels {

struct NetworkSpec {
  std::int64_t rows = 0;             // tokens
  std::vector<std::int64_t> widths;  // d_0 .. d_L
  bool input_grad = false;           // the first layer computes dX (true for a layer inside a network)
  bool gelu = false;                 // a GELU (tanh) after every layer but the last
  DType dtype = DType::f32;          // f64, f32, f16 or bf16 (mixed precision)
  Optimizer optimizer = Optimizer::sgd;  // the step's
  OptimizerHyper hyper;

  std::int64_t layers() const { return std::int64_t(widths.size()) - 1; }
};

enum class NetworkPass { forward, backward, step };  // step: forward, backward, optimizer update
std::string_view network_pass_name(NetworkPass pass);  // "fwd", "bwd", "step"

// nullopt for a network that can be built (at least one layer, positive sizes, a dtype above, a
// step on f32, f16 or bf16), else what is wrong, one line.
std::optional<std::string> network_spec_error(const NetworkSpec& spec, NetworkPass pass);

// One tensor of a pass: an input (filled before the run) or an output (written by it). Inputs are
// filled with values uniform in [-scale, scale) (|.| where positive): weights at sqrt(3 / d_in), so
// that every layer keeps its activations' variance (no f16 overflow deep in the net).
struct NetworkBuffer {
  std::string name;  // "x", "w0", "y1", "h1", "a1", "dy", "dw0", "dx1", "gh1", "g1", "w0.master", "w0.m", ...
  DType dtype = DType::f32;
  Shape sizes;
  bool output = false;
  double scale = 1;
  bool positive = false;  // AdamW's second moment
};
std::vector<NetworkBuffer> network_buffers(const NetworkSpec& spec, NetworkPass pass);

// Fills an input buffer's host view (NetworkBuffer's values), a pure function of seed and index.
void fill_network_buffer(const NetworkBuffer& buffer, const TensorRef& host, std::uint64_t seed);

struct NetworkStep {
  enum class Kind { matmul, convert, update, activation };
  Kind kind = Kind::matmul;
  std::string what;  // "y1 = x · w0", "dw0 = xᵀ · dy": for messages
  MatmulProblem matmul;
  ConvertProblem convert;
  OptimizerProblem update;
  GeluProblem activation;
};
// The pass's steps in the order they run, on `buffers` (views of network_buffers' tensors, in
// that order, on one device).
std::vector<NetworkStep> network_steps(const NetworkSpec& spec, NetworkPass pass, std::span<const TensorRef> buffers);

// What one pass costs: `cost.flops` is the matmuls' 2·m·n·k each (PyTorch's flop counter's count
// of these layers: linear_layer's pytorch FLOPs, as tests/test_backward.cpp checks), `full_flops`
// adds the optimizer's (Note [optimizer FLOPs]); `cost.bytes` sums each step's fewest bytes
// (matmul_cost, convert_cost, optimizer_step_cost, the GELU's elementwise_op_cost), and the GELUs'
// FLOPs are in `full_flops` only, as PyTorch's counter counts no elementwise op.
struct NetworkCost {
  Cost cost;
  std::int64_t full_flops = 0;
};
NetworkCost network_cost(const NetworkSpec& spec, NetworkPass pass);

// Whether `matmul` takes every product of the steps (false: the combination does not exist, as
// microkernel_dpbf16 on f32), and if so why it, the convert or the optimizer table cannot run them
// on `device` here (nullopt: it can).
bool network_takes(std::span<const NetworkStep> steps, const MatmulVariant& matmul);
std::optional<std::string> network_unavailable(std::span<const NetworkStep> steps, const MatmulVariant& matmul,
                                               Device::Kind device);

// The timed call: every step, in order, products by `matmul`, roundings by the device's fastest
// conversion, updates by its optimizer variant, GELUs by its GELU variant (each prepared once, here).
Runner prepare_network(std::span<const NetworkStep> steps, const MatmulVariant& matmul, Device::Kind device);

// Judges a run on host operands, step by step against each step's own stored inputs: products
// within matmul_tolerance of the f64 product (every row up to 64 rows, else 16 sampled rows
// including the first and the last), roundings bit for bit (convert_reference), updates against
// optimizer_reference (within 2^-18 relative) and their narrow copies bit for bit, GELUs against
// gelu_reference (2^-18 relative in f32, 2^-40 in f64). nullopt when
// every step passes, else the first failure, one line.
std::optional<std::string> check_network(std::span<const NetworkStep> host_steps, const MatmulInfo& matmul);

// Every step by its reference (matmul_reference, convert_reference, optimizer_reference,
// gelu_reference), on host
// operands: for tests.
void run_network_reference(std::span<const NetworkStep> host_steps);

}  // namespace flopscope::kernels
