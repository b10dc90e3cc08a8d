// The linear network's passes as steps (network.hpp): buffers, steps, costs, how they run and
// how they are judged. Device-agnostic: the kernels are the tables' variants.
#include "flopscope/kernels/network.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

#include "flopscope/compute_mode.hpp"
#include "flopscope/kernels/hash.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope::kernels {

namespace {

bool is_narrow(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }
// What the products are written in: f64 for f64, else f32 (the matmul family's outputs).
DType product_dtype(DType dtype) { return dtype == DType::f64 ? DType::f64 : DType::f32; }
bool runs_forward(NetworkPass pass) { return pass != NetworkPass::backward; }
bool runs_backward(NetworkPass pass) { return pass != NetworkPass::forward; }
bool computes_dx(const NetworkSpec& spec, std::int64_t layer) { return layer > 0 || spec.input_grad; }

std::string index_name(const char* prefix, std::int64_t i) { return prefix + std::to_string(i); }

// Whether a GELU sits on activation i (between layer i - 1 and layer i).
bool gelu_at(const NetworkSpec& spec, std::int64_t i) { return spec.gelu && i >= 1 && i < spec.layers(); }

// Names of the tensors the passes share: activation i (the input of layer i) and the gradient of
// activation i, in the network's dtype: the product itself (y, dx), its GELU (h, gh), or, in mixed
// precision, either rounded (a, g).
std::string activation(const NetworkSpec& spec, std::int64_t i) {
  if (i == 0) return "x";
  return index_name(is_narrow(spec.dtype) ? "a" : gelu_at(spec, i) ? "h" : "y", i);
}
std::string gradient(const NetworkSpec& spec, std::int64_t i) {
  if (i == spec.layers()) return "dy";
  return index_name(is_narrow(spec.dtype) ? "g" : gelu_at(spec, i) ? "gh" : "dx", i);
}
std::string weight(std::int64_t i) { return index_name("w", i); }
// The f32 weights an update reads: the master copy in mixed precision, else the weights.
std::string master(const NetworkSpec& spec, std::int64_t i) {
  return is_narrow(spec.dtype) ? weight(i) + ".master" : weight(i);
}

}  // namespace

std::string_view network_pass_name(NetworkPass pass) {
  switch (pass) {
    case NetworkPass::forward: return "fwd";
    case NetworkPass::backward: return "bwd";
    case NetworkPass::step: return "step";
  }
  return "?";
}

std::optional<std::string> network_spec_error(const NetworkSpec& spec, NetworkPass pass) {
  if (spec.layers() < 1) return std::string("a network has at least one layer (two widths)");
  if (spec.rows < 1) return std::string("a network needs at least one row");
  for (std::int64_t width : spec.widths)
    if (width < 1) return "every width is at least 1, not " + std::to_string(width);
  if (spec.dtype != DType::f64 && spec.dtype != DType::f32 && !is_narrow(spec.dtype))
    return "runs in f64, f32, f16 or bf16, not " + std::string(dtype_name(spec.dtype));
  if (pass == NetworkPass::step && spec.dtype == DType::f64)
    return std::string("the step updates f32 master weights: f32, f16 or bf16, not f64");
  return std::nullopt;
}

std::vector<NetworkBuffer> network_buffers(const NetworkSpec& spec, NetworkPass pass) {
  if (auto error = network_spec_error(spec, pass)) throw std::invalid_argument("network: " + *error);
  const DType t = spec.dtype, o = product_dtype(t);
  const bool narrow = is_narrow(t);
  const std::int64_t layers = spec.layers(), rows = spec.rows;
  const auto& d = spec.widths;
  std::vector<NetworkBuffer> buffers;
  const auto add = [&](std::string name, DType dtype, Shape sizes, bool output, double scale = 1) {
    buffers.push_back({std::move(name), dtype, std::move(sizes), output, scale, false});
  };
  add("x", t, {rows, d[0]}, false);
  for (std::int64_t i = 0; i < layers; ++i) add(weight(i), t, {d[i], d[i + 1]}, false, std::sqrt(3.0 / double(d[i])));
  if (runs_forward(pass)) {
    for (std::int64_t i = 0; i < layers; ++i) {
      add(index_name("y", i + 1), o, {rows, d[i + 1]}, true);
      if (gelu_at(spec, i + 1)) add(index_name("h", i + 1), o, {rows, d[i + 1]}, true);
      if (narrow) add(index_name("a", i + 1), t, {rows, d[i + 1]}, true);
    }
  } else {
    for (std::int64_t i = 1; i < layers; ++i) {
      if (gelu_at(spec, i)) add(index_name("y", i), o, {rows, d[i]}, false);  // the GELU's saved input
      add(activation(spec, i), t, {rows, d[i]}, false);
    }
  }
  if (runs_backward(pass)) {
    add("dy", t, {rows, d[layers]}, false);
    for (std::int64_t i = layers - 1; i >= 0; --i) {
      add(index_name("dw", i), o, {d[i], d[i + 1]}, true);
      if (!computes_dx(spec, i)) continue;
      add(index_name("dx", i), o, {rows, d[i]}, true);
      if (gelu_at(spec, i)) add(index_name("gh", i), o, {rows, d[i]}, true);
      if (narrow) add(index_name("g", i), t, {rows, d[i]}, true);
    }
  }
  if (pass == NetworkPass::step) {
    for (std::int64_t i = 0; i < layers; ++i) {
      const Shape w = {d[i], d[i + 1]};
      if (narrow) add(master(spec, i), DType::f32, w, false, std::sqrt(3.0 / double(d[i])));
      add(master(spec, i) + ".new", DType::f32, w, true);
      if (narrow) add(weight(i) + ".new", t, w, true);
      if (spec.optimizer != Optimizer::sgd) {
        add(weight(i) + ".m", DType::f32, w, false, 1e-2);
        add(weight(i) + ".m.new", DType::f32, w, true);
      }
      if (spec.optimizer == Optimizer::adamw) {
        add(weight(i) + ".v", DType::f32, w, false, 1e-4);
        buffers.back().positive = true;
        add(weight(i) + ".v.new", DType::f32, w, true);
      }
    }
  }
  return buffers;
}

void fill_network_buffer(const NetworkBuffer& buffer, const TensorRef& host, std::uint64_t seed) {
  const std::int64_t count = host.numel();
  auto* base = static_cast<unsigned char*>(host.element_data());
  const auto size = std::int64_t(host.element_size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    double value = 2 * (double(hash_index(seed, std::uint64_t(i)) >> 11) * 0x1p-53) - 1;  // [-1, 1)
    if (buffer.positive) value = std::abs(value);
    store_element(base + i * size, host.dtype, value * buffer.scale);
  }
}

std::vector<NetworkStep> network_steps(const NetworkSpec& spec, NetworkPass pass, std::span<const TensorRef> views) {
  const std::vector<NetworkBuffer> buffers = network_buffers(spec, pass);
  if (views.size() != buffers.size())
    throw std::invalid_argument("network_steps: " + std::to_string(buffers.size()) + " buffers expected, got " +
                                std::to_string(views.size()));
  std::map<std::string, TensorRef> by_name;
  for (std::size_t i = 0; i < buffers.size(); ++i) by_name[buffers[i].name] = views[i];
  const auto at = [&](const std::string& name) -> const TensorRef& { return by_name.at(name); };
  const bool narrow = is_narrow(spec.dtype);
  const ComputeMode mode = natural_compute_mode(spec.dtype);
  const std::int64_t layers = spec.layers();
  std::vector<NetworkStep> steps;
  const auto product = [&](std::string what, const TensorRef& a, const TensorRef& b, const TensorRef& c) {
    NetworkStep step;
    step.what = std::move(what);
    step.matmul = {a, b, c, mode};
    steps.push_back(std::move(step));
  };
  // A product written in f32 (or f64) and, in mixed precision, rounded to `rounded`.
  const auto round = [&](const std::string& from, const std::string& to) {
    NetworkStep step;
    step.kind = NetworkStep::Kind::convert;
    step.what = to + " = " + std::string(dtype_name(spec.dtype)) + "(" + from + ")";
    step.convert = {at(to), at(from)};
    steps.push_back(std::move(step));
  };
  const auto gelu = [&](const std::string& out, const std::string& x, const std::string& grad) {
    NetworkStep step;
    step.kind = NetworkStep::Kind::activation;
    step.what = out + (grad.empty() ? " = gelu(" + x + ")" : " = gelu'(" + x + ") ⊙ " + grad);
    step.activation = {!grad.empty(), at(out), at(x), grad.empty() ? TensorRef{} : at(grad)};
    steps.push_back(std::move(step));
  };
  if (runs_forward(pass)) {
    for (std::int64_t i = 0; i < layers; ++i) {
      std::string y = index_name("y", i + 1);
      product(y + " = " + activation(spec, i) + " · " + weight(i), at(activation(spec, i)), at(weight(i)), at(y));
      if (gelu_at(spec, i + 1)) {
        gelu(index_name("h", i + 1), y, "");
        y = index_name("h", i + 1);
      }
      if (narrow) round(y, activation(spec, i + 1));
    }
  }
  if (runs_backward(pass)) {
    for (std::int64_t i = layers - 1; i >= 0; --i) {
      const std::string dw = index_name("dw", i), g = gradient(spec, i + 1), x = activation(spec, i);
      product(dw + " = " + x + "ᵀ · " + g, at(x).transposed(0, 1), at(g), at(dw));
      if (!computes_dx(spec, i)) continue;
      std::string dx = index_name("dx", i);
      product(dx + " = " + g + " · " + weight(i) + "ᵀ", at(g), at(weight(i)).transposed(0, 1), at(dx));
      if (gelu_at(spec, i)) {
        gelu(index_name("gh", i), index_name("y", i), dx);
        dx = index_name("gh", i);
      }
      if (narrow) round(dx, gradient(spec, i));
    }
  }
  if (pass == NetworkPass::step) {
    for (std::int64_t i = 0; i < layers; ++i) {
      NetworkStep step;
      step.kind = NetworkStep::Kind::update;
      step.what = std::string(optimizer_name(spec.optimizer)) + " update of " + weight(i);
      OptimizerProblem& u = step.update;
      u.optimizer = spec.optimizer;
      u.hyper = spec.hyper;
      u.weight = at(master(spec, i));
      u.grad = at(index_name("dw", i));
      u.new_weight = at(master(spec, i) + ".new");
      if (narrow) {
        u.new_copy = at(weight(i) + ".new");
        u.has_copy = true;
      }
      if (spec.optimizer != Optimizer::sgd) {
        u.m = at(weight(i) + ".m");
        u.new_m = at(weight(i) + ".m.new");
      }
      if (spec.optimizer == Optimizer::adamw) {
        u.v = at(weight(i) + ".v");
        u.new_v = at(weight(i) + ".v.new");
      }
      steps.push_back(std::move(step));
    }
  }
  return steps;
}

NetworkCost network_cost(const NetworkSpec& spec, NetworkPass pass) {
  const std::vector<NetworkBuffer> buffers = network_buffers(spec, pass);
  std::vector<TensorRef> dry;
  for (const NetworkBuffer& b : buffers) dry.push_back(TensorRef::contiguous(nullptr, b.dtype, b.sizes));
  NetworkCost total;
  const char* what = "network cost";
  for (const NetworkStep& step : network_steps(spec, pass, dry)) {
    Cost cost;
    switch (step.kind) {
      case NetworkStep::Kind::matmul: {
        const MatmulProblem& p = step.matmul;
        cost = matmul_cost(p.m(), p.n(), p.k(), p.a.dtype, p.b.dtype, p.c.dtype);
        break;
      }
      case NetworkStep::Kind::convert:
        cost = convert_cost(step.convert.src.numel(), step.convert.src.dtype, step.convert.dst.dtype);
        break;
      case NetworkStep::Kind::update:
      case NetworkStep::Kind::activation: {
        if (step.kind == NetworkStep::Kind::update) {
          const OptimizerProblem& u = step.update;
          cost = optimizer_step_cost(u.optimizer, u.weight.numel(), u.has_copy ? u.new_copy.dtype : DType::f32);
        } else {
          const GeluProblem& g = step.activation;
          cost = elementwise_op_cost(ElementwiseKind::gelu_tanh, g.backward ? Pass::backward : Pass::forward,
                                     g.out.sizes[0], g.out.sizes[1], g.out.dtype);
        }
        total.full_flops = checked_add(total.full_flops, cost.flops, what);
        total.cost.bytes = checked_add(total.cost.bytes, cost.bytes, what);
        continue;  // PyTorch's convention counts no optimizer and no elementwise FLOPs
      }
    }
    total.cost.flops = checked_add(total.cost.flops, cost.flops, what);
    total.full_flops = checked_add(total.full_flops, cost.flops, what);
    total.cost.bytes = checked_add(total.cost.bytes, cost.bytes, what);
  }
  return total;
}

namespace {

const ConvertVariant* convert_variant(DType narrow, Device::Kind device) {
  if (device == Device::Kind::cpu) return &best_cpu_convert_variant(narrow);
  for (const ConvertVariant& v : cuda_convert_variants()) return &v;
  return nullptr;
}

const OptimizerVariant* optimizer_variant(Device::Kind device) {
  const auto table = device == Device::Kind::cpu ? cpu_optimizer_variants() : cuda_optimizer_variants();
  return table.empty() ? nullptr : &table.front();
}

const GeluVariant* gelu_variant(Device::Kind device) {
  const auto table = device == Device::Kind::cpu ? cpu_gelu_variants() : cuda_gelu_variants();
  return table.empty() ? nullptr : &table.front();
}

}  // namespace

bool network_takes(std::span<const NetworkStep> steps, const MatmulVariant& matmul) {
  return std::all_of(steps.begin(), steps.end(), [&](const NetworkStep& step) {
    return step.kind != NetworkStep::Kind::matmul || matmul.takes(step.matmul);
  });
}

std::optional<std::string> network_unavailable(std::span<const NetworkStep> steps, const MatmulVariant& matmul,
                                               Device::Kind device) {
  const std::string where = device == Device::Kind::cpu ? "CPU" : "CUDA";
  for (const NetworkStep& step : steps) {
    switch (step.kind) {
      case NetworkStep::Kind::matmul:
        if (auto reason = matmul.unavailable(step.matmul)) return std::string(matmul.name) + ": " + *reason;
        break;
      case NetworkStep::Kind::convert: {
        const ConvertVariant* v = convert_variant(step.convert.narrow(), device);
        if (!v) return "no " + where + " conversion variant in this build";
        if (auto reason = v->unavailable(step.convert)) return std::string(v->name) + ": " + *reason;
        break;
      }
      case NetworkStep::Kind::update: {
        const OptimizerVariant* v = optimizer_variant(device);
        if (!v) return "no " + where + " optimizer variant in this build";
        if (auto reason = v->unavailable(step.update)) return std::string(v->name) + ": " + *reason;
        break;
      }
      case NetworkStep::Kind::activation: {
        const GeluVariant* v = gelu_variant(device);
        if (!v) return "no " + where + " GELU variant in this build";
        if (auto reason = v->unavailable(step.activation)) return std::string(v->name) + ": " + *reason;
        break;
      }
    }
  }
  return std::nullopt;
}

Runner prepare_network(std::span<const NetworkStep> steps, const MatmulVariant& matmul, Device::Kind device) {
  if (auto reason = network_unavailable(steps, matmul, device)) throw std::runtime_error("network: " + *reason);
  std::vector<Runner> runners;
  for (const NetworkStep& step : steps) {
    switch (step.kind) {
      case NetworkStep::Kind::matmul: runners.push_back(matmul.prepare(step.matmul)); break;
      case NetworkStep::Kind::convert:
        runners.push_back(convert_variant(step.convert.narrow(), device)->prepare(step.convert));
        break;
      case NetworkStep::Kind::update: runners.push_back(optimizer_variant(device)->prepare(step.update)); break;
      case NetworkStep::Kind::activation: runners.push_back(gelu_variant(device)->prepare(step.activation)); break;
    }
  }
  return [runners = std::move(runners)](Stream stream) {
    for (const Runner& run : runners) run(stream);
  };
}

namespace {

constexpr std::int64_t kSampledRows = 16, kFullRows = 64;

// The rows of a product that are checked: all up to kFullRows, else the first, the last and 14
// spread by a hash.
std::vector<std::int64_t> checked_rows(std::int64_t m, std::uint64_t salt) {
  std::vector<std::int64_t> rows;
  if (m <= kFullRows) {
    for (std::int64_t i = 0; i < m; ++i) rows.push_back(i);
    return rows;
  }
  rows = {0, m - 1};
  for (std::uint64_t i = 0; std::int64_t(rows.size()) < kSampledRows; ++i) {
    const auto row = std::int64_t(hash_index(salt, i) % std::uint64_t(m));
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::optional<std::string> check_product(const MatmulProblem& p, const MatmulInfo& info, std::uint64_t salt) {
  const std::vector<std::int64_t> rows = checked_rows(p.m(), salt);
  const std::int64_t count = std::int64_t(rows.size()), n = p.n();
  Tensor got = empty({count, n}, {DType::f64}), exact = empty({count, n}, {DType::f64}),
         scale = empty({count, n}, {DType::f64});
  matmul_reference_rows(p, rows, static_cast<double*>(exact.data_ptr()), static_cast<double*>(scale.data_ptr()));
  auto* values = static_cast<double*>(got.data_ptr());
  const auto* c = static_cast<const unsigned char*>(p.c.element_data());
  const auto size = std::int64_t(p.c.element_size());
  for (std::int64_t r = 0; r < count; ++r)
    for (std::int64_t col = 0; col < n; ++col)
      values[r * n + col] = load_element(c + (rows[std::size_t(r)] * p.c.strides[0] + col * p.c.strides[1]) * size, p.c.dtype);
  const TensorRef scale_ref = scale.ref();
  return compare_close(got.ref(), exact.ref(), matmul_tolerance(p, info), &scale_ref);
}

// A host tensor of `like`'s dtype and sizes (contiguous), and its view.
struct Scratch {
  Tensor tensor;
  TensorRef ref;
  explicit Scratch(const TensorRef& like)
      : tensor(empty(Shape(like.shape().begin(), like.shape().end()), {like.dtype})), ref(tensor.ref()) {}
};

std::optional<std::string> check_convert(const ConvertProblem& p) {
  Scratch expected(p.dst);
  convert_reference({expected.ref, p.src, p.saturate});
  if (std::memcmp(expected.ref.element_data(), p.dst.element_data(), std::size_t(p.dst.numel()) * p.dst.element_size()))
    return std::string("not the reference rounding (convert_reference) bit for bit");
  return std::nullopt;
}

std::optional<std::string> check_update(const OptimizerProblem& p) {
  Scratch weight(p.new_weight), m(p.new_m), v(p.new_v);
  OptimizerProblem reference = p;
  reference.new_weight = weight.ref;
  reference.has_copy = false;
  if (p.optimizer != Optimizer::sgd) reference.new_m = m.ref;
  if (p.optimizer == Optimizer::adamw) reference.new_v = v.ref;
  optimizer_reference(reference);
  const auto close = [](const TensorRef& got, const TensorRef& expected, const char* name) -> std::optional<std::string> {
    double largest = 0;
    for (std::int64_t i = 0; i < expected.numel(); ++i) largest = std::max(largest, std::abs(double(expected.ptr<float>()[i])));
    if (auto error = compare_close(got, expected, {0x1p-18 * largest, 0x1p-18})) return std::string(name) + ": " + *error;
    return std::nullopt;
  };
  if (auto error = close(p.new_weight, weight.ref, "new weights")) return error;
  if (p.optimizer != Optimizer::sgd)
    if (auto error = close(p.new_m, m.ref, "new m")) return error;
  if (p.optimizer == Optimizer::adamw)
    if (auto error = close(p.new_v, v.ref, "new v")) return error;
  if (p.has_copy) {
    const ConvertProblem rounding{p.new_copy, p.new_weight};
    if (auto error = check_convert(rounding)) return "narrow copy of the new weights: " + *error;
  }
  return std::nullopt;
}

std::optional<std::string> check_gelu(const GeluProblem& p) {
  Scratch expected(p.out);
  GeluProblem reference = p;
  reference.out = expected.ref;
  gelu_reference(reference);
  double largest = 0;
  for (std::int64_t i = 0; i < p.out.numel(); ++i)
    largest = std::max(largest, std::abs(load_element(static_cast<const unsigned char*>(expected.ref.element_data()) +
                                                          i * std::int64_t(p.out.element_size()),
                                                      p.out.dtype)));
  const double rtol = p.out.dtype == DType::f64 ? 0x1p-40 : 0x1p-18;
  return compare_close(p.out, expected.ref, {rtol * largest, rtol});
}

}  // namespace

std::optional<std::string> check_network(std::span<const NetworkStep> host_steps, const MatmulInfo& matmul) {
  std::uint64_t salt = 0;
  for (const NetworkStep& step : host_steps) {
    std::optional<std::string> error;
    switch (step.kind) {
      case NetworkStep::Kind::matmul: error = check_product(step.matmul, matmul, ++salt); break;
      case NetworkStep::Kind::convert: error = check_convert(step.convert); break;
      case NetworkStep::Kind::update: error = check_update(step.update); break;
      case NetworkStep::Kind::activation: error = check_gelu(step.activation); break;
    }
    if (error) return step.what + ": " + *error;
  }
  return std::nullopt;
}

void run_network_reference(std::span<const NetworkStep> host_steps) {
  for (const NetworkStep& step : host_steps) {
    switch (step.kind) {
      case NetworkStep::Kind::matmul: matmul_reference(step.matmul); break;
      case NetworkStep::Kind::convert: convert_reference(step.convert); break;
      case NetworkStep::Kind::update: optimizer_reference(step.update); break;
      case NetworkStep::Kind::activation: gelu_reference(step.activation); break;
    }
  }
}

}  // namespace flopscope::kernels
