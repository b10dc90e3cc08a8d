// backward/<variant>/<dtype>/<device>/<shape>/net=<linear|mlp>/pass=<fwd|bwd|step>[/opt=<optimizer>]:
// a linear network's forward pass, backward pass, or training step (forward, backward and the
// optimizer's update), through one matmul variant of the device's table (kernels/network.hpp).
// - net=linear, shape m=<tokens>,k=<in>,n=<out>: one linear layer inside a network (its backward
//   computes dW and dX: twice the forward's FLOPs). Defaults: none on the CPU (the FFN block below
//   runs the same products there); on CUDA GPT-2 small's and XL's FFN up and down projections at
//   8 x 1024 tokens.
// - net=mlp, shape m=<tokens>,d=<width>,layers=<L>: the lecture's deep linear MLP ("Cruncher"), L
//   layers d x d, the first computing no dX (backward (2L - 1) / L times the forward).
// - net=ffn, shape m=<tokens>,d=<d_model>,d_ff=<d_ff>: GPT-2's feed-forward block, d -> d_ff, GELU
//   (tanh), d_ff -> d, inside a network (dX computed); GPT-2 small's on the CPU at 2 x 1024 tokens,
//   small's and XL's on CUDA at 8 x 1024. Its GELUs are in full_flops, not in flops.
// - <dtype>: f32, or f16/bf16 in mixed precision (network.hpp: narrow activations and working
//   weights, f32 accumulation, products and weight gradients, f32 master weights updated by the
//   step and rounded to the working copy). --optimizers: sgd, momentum, adamw (step only).
// - Variants: the matmul family's, but naive (a reference loop: no network of these sizes).
// - Given any of --linears, --mlps, --ffns, only the kinds of net given run.
// Counters: flops is PyTorch's flop counter's count of the pass (the matmuls: 2·m·n·k forward,
// both gradients backward; nothing for the optimizer), full_flops adds the optimizer's (Note
// [optimizer FLOPs]); pct_peak_flops is the pass's MFU against the device's peak for the mode;
// flop_ratio is the pass's FLOPs over the forward's (2.0 for a layer inside a network; the report
// sets the measured bwd/fwd time ratio beside it); bytes sums each step's fewest bytes.
// Validation: every step of the validated run against its own stored inputs (check_network): the
// products within matmul_tolerance of an f64 product (sampled rows above 64), the roundings and
// the updates' narrow copies bit for bit, the updates against an f64 reference.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "flopscope/compute_mode.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/kernels/network.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

std::span<const kernels::MatmulVariant> matmul_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_matmul_variants() : kernels::cuda_matmul_variants();
}

// Every matmul variant but the reference (a network of f64 triple loops would take minutes).
std::vector<VariantRow> variant_names(Device::Kind kind) {
  std::vector<VariantRow> rows;
  for (auto& row : table_rows(matmul_variants(kind)))
    if (row.role != kernels::Role::reference) rows.push_back(std::move(row));
  return rows;
}

std::optional<kernels::NetworkPass> parse_pass(const std::string& text) {
  for (auto pass : {kernels::NetworkPass::forward, kernels::NetworkPass::backward, kernels::NetworkPass::step})
    if (kernels::network_pass_name(pass) == text) return pass;
  return std::nullopt;
}

std::optional<Case> network_case(const Point& p, kernels::NetworkSpec spec, const std::string& net,
                                 std::vector<std::pair<std::string, std::int64_t>> shape) {
  const kernels::NetworkPass pass = *parse_pass(p.choice("pass"));
  spec.dtype = p.dtype;
  spec.optimizer = *parse_optimizer(p.choice("optimizer"));
  if (kernels::network_spec_error(spec, pass)) return std::nullopt;
  const Device device = p.device->device;
  const auto* variant = kernels::find_variant(matmul_variants(device.kind), p.variant);
  if (!variant) return std::nullopt;

  const std::vector<kernels::NetworkBuffer> buffers = kernels::network_buffers(spec, pass);
  Case c;
  std::vector<std::pair<std::string, std::string>> extras = {{"net", net}, {"pass", p.choice("pass")}};
  if (pass == kernels::NetworkPass::step) extras.emplace_back("opt", p.choice("optimizer"));
  c.name = {"backward", p.variant, std::string(dtype_name(p.dtype)), device.str(), std::move(shape), extras};
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const kernels::NetworkBuffer& b = buffers[i];
    if (b.output) {
      c.operands.push_back(Operand::output_of(b.name, b.dtype, b.sizes));
      continue;
    }
    Operand input = Operand::input(b.name, b.dtype, b.sizes, Fill::custom);
    input.custom_fill = [b, seed = 1 + i](const TensorRef& host) { kernels::fill_network_buffer(b, host, seed); };
    c.operands.push_back(std::move(input));
  }
  const auto dry = dry_refs(c.operands, device);
  const auto dry_steps = kernels::network_steps(spec, pass, dry);
  if (!kernels::network_takes(dry_steps, *variant)) return std::nullopt;
  if (auto reason = kernels::network_unavailable(dry_steps, *variant, device.kind)) c.skip = *reason;

  const kernels::NetworkCost cost = kernels::network_cost(spec, pass);
  const std::int64_t forward_flops = kernels::network_cost(spec, kernels::NetworkPass::forward).cost.flops;
  c.cost = cost.cost;
  c.bound = Bound::compute;
  const ComputeModeInfo& mode = compute_mode_info(natural_compute_mode(p.dtype));
  const bool emulated = mode.accumulate != mode.a && variant->info.emulated;
  c.compute = emulated ? "f32" : std::string(mode.peak_key);
  std::string words = "out=" + std::string(dtype_name(spec.dtype == DType::f64 ? DType::f64 : DType::f32));
  if (spec.dtype == DType::f16 || spec.dtype == DType::bf16) words += " mixed=f32-master";
  if (emulated) words += " emulated";
  if (variant->role == kernels::Role::vendor) words += " library=" + std::string(variant->info.library);
  c.label = [words] { return words; };
  c.prepare = [spec, pass, variant, kind = device.kind](std::span<const TensorRef> operands) {
    return kernels::prepare_network(kernels::network_steps(spec, pass, operands), *variant, kind);
  };
  c.validation.check = [spec, pass, info = variant->info, cost, forward_flops](std::span<const TensorRef> host,
                                                                                Counters& counters) {
    counters["full_flops"] = double(cost.full_flops);
    counters["flop_ratio"] = double(cost.cost.flops) / double(forward_flops);
    return kernels::check_network(kernels::network_steps(spec, pass, host), info);
  };
  return c;
}

std::optional<Case> build_ffn(const Point& p) {
  const auto& dims = p.ints("ffn");
  kernels::NetworkSpec spec;
  spec.rows = dims[0];
  spec.widths = {dims[1], dims[2], dims[1]};
  spec.input_grad = true;
  spec.gelu = true;
  return network_case(p, spec, "ffn", {{"m", dims[0]}, {"d", dims[1]}, {"d_ff", dims[2]}});
}

std::optional<Case> build_linear(const Point& p) {
  const auto& dims = p.ints("linear");
  kernels::NetworkSpec spec;
  spec.rows = dims[0];
  spec.widths = {dims[1], dims[2]};
  spec.input_grad = true;
  return network_case(p, spec, "linear", {{"m", dims[0]}, {"k", dims[1]}, {"n", dims[2]}});
}

constexpr std::int64_t kMaxLayers = 4096;

std::optional<Case> build_mlp(const Point& p) {
  const auto& dims = p.ints("mlp");
  if (dims[2] > kMaxLayers)
    throw std::invalid_argument("--mlps: at most " + std::to_string(kMaxLayers) + " layers, not " + std::to_string(dims[2]));
  kernels::NetworkSpec spec;
  spec.rows = dims[0];
  spec.widths.assign(std::size_t(dims[2]) + 1, dims[1]);
  return network_case(p, spec, "mlp", {{"m", dims[0]}, {"d", dims[1]}, {"layers", dims[2]}});
}

std::vector<AxisValue> shapes(std::initializer_list<std::vector<std::int64_t>> list) {
  return {list.begin(), list.end()};
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16, DType::f16};
  const auto words = [](std::vector<std::string> list) {
    return [list](const DeviceContext&, DType) { return std::vector<AxisValue>(list.begin(), list.end()); };
  };
  const Family family{
      .binary = "bench_backward",
      .summary = "A linear layer, a deep linear MLP and a GELU feed-forward block, forward, backward and a training "
                 "step, through the matmul family's variants, in f32 and mixed precision.",
      .dtypes = dtypes,
      .default_dtypes = dtypes,
      .axes = {{.name = "pass", .flag = "passes", .kind = Axis::Kind::choices,
                .help = "fwd, bwd, step (forward + backward + the optimizer's update)",
                .choices = {"fwd", "bwd", "step"}, .defaults = words({"fwd", "bwd", "step"})},
               {.name = "optimizer", .flag = "optimizers", .kind = Axis::Kind::choices,
                .help = "the step's optimizer (default adamw)", .choices = {"sgd", "momentum", "adamw"},
                .defaults = words({"adamw"})},
               {.name = "linear", .flag = "linears", .kind = Axis::Kind::shapes,
                .help = "linear layers: tokens x in x out (default: none on the CPU; on CUDA GPT-2 small's and XL's FFN "
                        "up and down)",
                .keys = {"m", "k", "n"},
                .defaults = [](const DeviceContext& device, DType) {
                  // None by default on the CPU: the default FFN block runs the same two products.
                  if (device.device.is_cpu()) return shapes({});
                  return shapes({{8192, 768, 3072}, {8192, 3072, 768}, {8192, 1600, 6400}, {8192, 6400, 1600}});
                },
                // Given any of --linears, --mlps, --ffns, the kinds of net not given do not run.
                .none_if_given = {"mlp", "ffn"}},
               {.name = "mlp", .flag = "mlps", .kind = Axis::Kind::shapes,
                .help = "deep linear MLPs: tokens x width x layers", .keys = {"m", "d", "layers"},
                .defaults = [](const DeviceContext& device, DType) {
                  return device.device.is_cpu() ? shapes({{1024, 1024, 4}}) : shapes({{8192, 4096, 4}});
                },
                .none_if_given = {"linear", "ffn"}},
               {.name = "ffn", .flag = "ffns", .kind = Axis::Kind::shapes,
                .help = "feed-forward blocks (GELU): tokens x d_model x d_ff (default: GPT-2 small's; on CUDA also XL's)",
                .keys = {"m", "d", "d_ff"},
                .defaults = [](const DeviceContext& device, DType) {
                  if (device.device.is_cpu()) return shapes({{2048, 768, 3072}});
                  return shapes({{8192, 768, 3072}, {8192, 1600, 6400}});
                },
                .none_if_given = {"linear", "mlp"}}},
      .benches = {{.name = "linear layers", .variants = variant_names, .axes = {"pass", "optimizer", "linear"},
                   .build = build_linear},
                  {.name = "deep linear MLPs", .variants = variant_names, .axes = {"pass", "optimizer", "mlp"},
                   .build = build_mlp},
                  {.name = "feed-forward blocks", .variants = variant_names, .axes = {"pass", "optimizer", "ffn"},
                   .build = build_ffn}},
      // GPT-2 small's FFN block and the Cruncher (on CUDA also linear layers and XL's FFN), fwd,
      // bwd and an AdamW step, f32 and bf16 mixed precision, through the fastest own matmul and
      // the vendors', under the harness's stopping rule (one call is tens of milliseconds here: a
      // repetition is a call or two).
      .suites = {{"default",
                  {"--dtypes=f32,bf16",
                   "--roles=fastest,vendor"}},
                 {"quick",
                  {"--dtypes=f32,bf16", "--linears=512x256x512", "--mlps=512x256x2", "--ffns=512x256x1024",
                   "--roles=fastest,vendor"}},
                 // GPT-2 small's FFN block at 8192 tokens, fwd, bwd and an AdamW step in bf16 mixed
                 // precision: own mma beside cuBLAS(Lt) (gpu_check.sh --plan: within its budget).
                 {"gpu",
                  {"--dtypes=bf16", "--roles=fastest,vendor", "--ffns=8192x768x3072", "--benchmark_repetitions=2",
                   "--benchmark_min_time=0.05"}},
                 // Every kind of net, pass and optimizer, small.
                 {"smoke",
                  {"--dtypes=f32,bf16", "--roles=fastest,vendor", "--linears=256x128x192", "--mlps=256x128x2",
                   "--ffns=256x128x512", "--optimizers=sgd,momentum,adamw"}}},
  };
  return run_family(argc, argv, family);
}
