// broadcast/<variant>/<dtype>/<device>/<shape>/op=<add|mul>/bcast=<pattern>: out = a op b with
// PyTorch's broadcasting. The shape is the output's; bcast names the operands:
//   b=,t=,d=/bcast=td      (B,T,D) op (T,D)
//   b=,t=,d=/bcast=d       (B,T,D) op (D)        (a bias)
//   b=,t=,d=/bcast=bt1     (B,T,D) op (B,T,1)    (a per-token scale)
//   b=,t=,d=/bcast=none    (B,T,D) op (B,T,D)    the same op on the materialized broadcast
//   n=,m=/bcast=outer      (N,1) op (1,M)        an outer sum or product
//   n=,m=/bcast=none       (N,M) op (N,M)        ... materialized
// Beside them, broadcast/copy/<dtype>/<device>/n=<elements>: a contiguous copy of the same bytes
// (bytes / 2 / element size elements; copy_cases.hpp's baseline_copy), measured in the same
// process: the ceiling each case is set against.
// Counters: flops (one per output element: lib's elementwise_binary_cost) and bytes (each operand
// read once, a broadcast one at its own size, the output written once).
// Inputs: values uniform in [-1, 1) rounded to the dtype. Validation before timing, bit for bit,
// against kernels::binary_reference (lib's strided iterator in double, rounded once: one add or
// multiply computed in f32 and rounded to f16 or bf16 gives the same bits).
#include <algorithm>
#include <string>
#include <vector>

#include "copy_cases.hpp"
#include "flopscope/broadcast.hpp"
#include "flopscope/kernels/broadcast.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

struct Operands {
  std::vector<std::pair<std::string, std::int64_t>> shape;  // the output's, for the name
  Shape a, b;
};

// The operands of point `p` if its pattern is one of `patterns`, with the shape axis `axis`.
std::optional<Operands> operands_of(const Point& p, const std::vector<std::string>& patterns, const std::string& axis) {
  const std::string& bcast = p.choice("bcast");
  if (std::find(patterns.begin(), patterns.end(), bcast) == patterns.end()) return std::nullopt;
  const auto& dims = p.ints(axis);
  if (axis == "btd") {
    const std::int64_t b = dims[0], t = dims[1], d = dims[2];
    const Shape full{b, t, d};
    const Shape other = bcast == "td" ? Shape{t, d} : bcast == "d" ? Shape{d} : bcast == "bt1" ? Shape{b, t, 1} : full;
    return Operands{{{"b", b}, {"t", t}, {"d", d}}, full, other};
  }
  const std::int64_t n = dims[0], m = dims[1];
  if (bcast == "outer") return Operands{{{"n", n}, {"m", m}}, {n, 1}, {1, m}};
  return Operands{{{"n", n}, {"m", m}}, {n, m}, {n, m}};
}

struct PatternGroup {
  std::string name;
  std::vector<std::string> patterns;
  std::string axis;
};

const std::vector<PatternGroup> kGroups = {
    {"(B,T,D) patterns", {"td", "d", "bt1", "none"}, "btd"},
    {"(N,M) patterns", {"outer", "none"}, "outer"},
};

std::span<const kernels::BinaryVariant> binary_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_broadcast_variants() : kernels::cuda_broadcast_variants();
}

std::vector<VariantRow> binary_names(Device::Kind kind) { return table_rows(binary_variants(kind)); }

kernels::BinaryOp op_of(const Point& p) { return p.choice("op") == "add" ? kernels::BinaryOp::add : kernels::BinaryOp::mul; }

// The contiguous copy that moves as many bytes as the case.
std::optional<Case> build_baseline(const Point& p, const PatternGroup& group) {
  const auto operands = operands_of(p, group.patterns, group.axis);
  if (!operands) return std::nullopt;
  const std::int64_t bytes = elementwise_binary_cost(operands->a, operands->b, p.dtype).bytes;
  return copy_baseline("broadcast", p.dtype, bytes / 2 / std::int64_t(dtype_size(p.dtype)), p.device->device);
}

std::optional<Case> build_binary(const Point& p, const PatternGroup& group) {
  const auto operands = operands_of(p, group.patterns, group.axis);
  if (!operands) return std::nullopt;
  const Device device = p.device->device;
  const kernels::BinaryOp op = op_of(p);
  const Shape shape = broadcast_shapes(operands->a, operands->b);
  Case c;
  c.name = {"broadcast", p.variant, std::string(dtype_name(p.dtype)), device.str(), operands->shape,
            {{"op", std::string(kernels::binary_op_name(op))}, {"bcast", p.choice("bcast")}}};
  c.cost = elementwise_binary_cost(operands->a, operands->b, p.dtype);
  c.bound = Bound::memory;
  c.operands = {Operand::output_of("out", p.dtype, shape), Operand::input("a", p.dtype, operands->a, Fill::uniform),
                Operand::input("b", p.dtype, operands->b, Fill::uniform)};
  const auto problem = [shape, op](std::span<const TensorRef> ops) {
    return kernels::BinaryProblem{ops[0], kernels::broadcast_view(ops[1], shape), kernels::broadcast_view(ops[2], shape), op};
  };
  c.validation.reference = [problem](std::span<const TensorRef> ops) { kernels::binary_reference(problem(ops)); };
  const auto& variant = kernels::variant_named(binary_variants(device.kind), p.variant);
  if (!bind_variant(c, variant, device, problem)) return std::nullopt;
  return c;
}

std::vector<AxisValue> values(std::vector<std::vector<std::int64_t>> list) {
  return std::vector<AxisValue>(list.begin(), list.end());
}

}  // namespace

int main(int argc, char** argv) {
  auto words = [](std::vector<std::string> list) {
    return [list](const DeviceContext&, DType) { return std::vector<AxisValue>(list.begin(), list.end()); };
  };
  Family family{
      .binary = "bench_broadcast",
      .summary = "Elementwise add and mul with PyTorch broadcasting, beside the materialized broadcast and a copy of the same bytes.",
      .dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16},
      .default_dtypes = {DType::f32},
      .axes = {{.name = "op", .flag = "ops", .kind = Axis::Kind::choices, .help = "operations",
                .choices = {"add", "mul"}, .defaults = words({"add", "mul"})},
               {.name = "bcast", .flag = "bcasts", .kind = Axis::Kind::choices,
                .help = "patterns: (B,T,D) op td|d|bt1|none, (N,1) op (1,M) outer, none: both full",
                .choices = {"td", "d", "bt1", "outer", "none"}, .defaults = words({"td", "d", "bt1", "outer", "none"})},
               {.name = "btd", .flag = "btd", .kind = Axis::Kind::shapes, .help = "(B,T,D) output shapes BxTxD",
                .keys = {"b", "t", "d"}, .defaults = [](const DeviceContext&, DType) { return values({{8, 1024, 768}}); }},
               {.name = "outer", .flag = "outer", .kind = Axis::Kind::shapes, .help = "outer output shapes NxM",
                .keys = {"n", "m"}, .defaults = [](const DeviceContext&, DType) { return values({{4096, 4096}}); }}},
  };
  std::vector<BaselinedGroup> groups;
  for (const PatternGroup& group : kGroups)
    groups.push_back({group.name, {"op", "bcast", group.axis}, [&group](const Point& p) { return build_baseline(p, group); },
                      [&group](const Point& p) { return build_binary(p, group); }});
  family.benches = benches_with_baselines(groups, binary_names);
  // Each broadcast and the copy of the same bytes it is set against, interleaved; add only (mul
  // moves the same bytes). The reference (lib's iterator in double, 10x slower) validates every
  // case but is not timed in the default suite.
  family.suites = {{"default",
                    {"--ops=add", "--roles=own,vendor,baseline", "--benchmark_enable_random_interleaving=true"}},
                   {"quick", {"--btd=8x256x768", "--outer=1024x1024", "--ops=add", "--benchmark_enable_random_interleaving=true"}},
                   {"gpu",
                    {"--dtypes=f32", "--ops=add", "--roles=own,vendor,baseline", "--benchmark_repetitions=2",
                     "--benchmark_min_time=0.05", "--benchmark_enable_random_interleaving=true"}},
                   {"smoke", {"--dtypes=all", "--ops=add", "--roles=own,vendor,baseline", "--btd=2x33x64", "--outer=65x130"}}};
  return run_family(argc, argv, family);
}
