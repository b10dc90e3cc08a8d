// The linear network's passes as steps (network.hpp): buffers, steps, costs, how they run and
// how they are judged. Device-agnostic: the kernels are the tables' variants.
#include "flopscope/kernels/network.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// The tensors of a pass, each declared once by a Builder that lists it as a buffer (name, dtype,
// sizes, fill) and binds it to its view where there are views, so that the steps take tensors by
// member, never by a string key. The names are for messages and operand names only.
struct Named {
  std::string name;  // empty: the pass has no such tensor
  TensorRef ref;
  bool present() const { return !name.empty(); }
};

class Builder {
 public:
  explicit Builder(std::span<const TensorRef> views = {}) : views_(views) {}
  Named add(std::string name, DType dtype, Shape sizes, bool output, double scale = 1, bool positive = false) {
    const std::size_t index = buffers_.size();
    buffers_.push_back({name, dtype, std::move(sizes), output, scale, positive});
    const TensorRef ref = index < views_.size() ? views_[index] : TensorRef::contiguous(nullptr, dtype, buffers_.back().sizes);
    return {std::move(name), ref};
  }
  std::vector<NetworkBuffer>& buffers() { return buffers_; }

 private:
  std::span<const TensorRef> views_;
  std::vector<NetworkBuffer> buffers_;
};

// Layer i: y = activation i · w, then its GELU and, in mixed precision, its rounding (activation
// i + 1); dW, and the gradient of activation i through the GELU and rounding; the update of w.
struct Layer {
  Named weight;                     // w_i, in the network's dtype
  Named product, gelu, rounded;     // activation i + 1: y (f32 or f64), h = gelu(y), a = dtype(h or y)
  Named dw;                         // dW_i (f32 or f64)
  Named dx, dgelu, drounded;        // the gradient of activation i: dx, gh = gelu'(y_i) ⊙ dx, g = dtype(..)
  Named master, new_master, new_weight, m, new_m, v, new_v;  // the step (master: the weight outside mixed precision)

  // Activation i + 1 as the next layer reads it.
  const Named& hands_on() const { return rounded.present() ? rounded : gelu.present() ? gelu : product; }
  // The gradient of activation i as layer i - 1 reads it.
  const Named& gradient() const { return drounded.present() ? drounded : dgelu.present() ? dgelu : dx; }
};

struct Tensors {
  Named x, dy;
  std::vector<Layer> layers;
  const Named& activation(std::int64_t i) const { return i == 0 ? x : layers[std::size_t(i - 1)].hands_on(); }
  const Named& gradient(std::int64_t i) const {
    return i == std::int64_t(layers.size()) ? dy : layers[std::size_t(i)].gradient();
  }
};

// Declares the pass's tensors through `b`, in the order network_buffers lists them.
Tensors network_tensors(const NetworkSpec& spec, NetworkPass pass, Builder& b) {
  if (auto error = network_spec_error(spec, pass)) throw std::invalid_argument("network: " + *error);
  const DType t = spec.dtype, o = product_dtype(t);
  const bool narrow = is_narrow(t);
  const std::int64_t layers = spec.layers(), rows = spec.rows;
  const auto& d = spec.widths;
  Tensors n;
  n.layers.resize(std::size_t(layers));
  const auto layer = [&](std::int64_t i) -> Layer& { return n.layers[std::size_t(i)]; };
  n.x = b.add("x", t, {rows, d[0]}, false);
  for (std::int64_t i = 0; i < layers; ++i)
    layer(i).weight = b.add(index_name("w", i), t, {d[i], d[i + 1]}, false, std::sqrt(3.0 / double(d[i])));
  if (runs_forward(pass)) {
    for (std::int64_t i = 0; i < layers; ++i) {
      Layer& l = layer(i);
      l.product = b.add(index_name("y", i + 1), o, {rows, d[i + 1]}, true);
      if (gelu_at(spec, i + 1)) l.gelu = b.add(index_name("h", i + 1), o, {rows, d[i + 1]}, true);
      if (narrow) l.rounded = b.add(index_name("a", i + 1), t, {rows, d[i + 1]}, true);
    }
  } else {  // the activations a backward pass reads, as inputs
    for (std::int64_t i = 1; i < layers; ++i) {
      Layer& l = layer(i - 1);
      const Shape shape = {rows, d[i]};
      if (gelu_at(spec, i)) l.product = b.add(index_name("y", i), o, shape, false);  // the GELU's saved input
      if (narrow) l.rounded = b.add(index_name("a", i), t, shape, false);
      else if (gelu_at(spec, i)) l.gelu = b.add(index_name("h", i), t, shape, false);
      else l.product = b.add(index_name("y", i), t, shape, false);
    }
  }
  if (runs_backward(pass)) {
    n.dy = b.add("dy", t, {rows, d[layers]}, false);
    for (std::int64_t i = layers - 1; i >= 0; --i) {
      Layer& l = layer(i);
      l.dw = b.add(index_name("dw", i), o, {d[i], d[i + 1]}, true);
      if (!computes_dx(spec, i)) continue;
      l.dx = b.add(index_name("dx", i), o, {rows, d[i]}, true);
      if (gelu_at(spec, i)) l.dgelu = b.add(index_name("gh", i), o, {rows, d[i]}, true);
      if (narrow) l.drounded = b.add(index_name("g", i), t, {rows, d[i]}, true);
    }
  }
  if (pass == NetworkPass::step) {
    for (std::int64_t i = 0; i < layers; ++i) {
      Layer& l = layer(i);
      const Shape w = {d[i], d[i + 1]};
      const std::string name = l.weight.name;
      l.master = narrow ? b.add(name + ".master", DType::f32, w, false, std::sqrt(3.0 / double(d[i]))) : l.weight;
      l.new_master = b.add(l.master.name + ".new", DType::f32, w, true);
      if (narrow) l.new_weight = b.add(name + ".new", t, w, true);
      if (spec.optimizer != Optimizer::sgd) {
        l.m = b.add(name + ".m", DType::f32, w, false, 1e-2);
        l.new_m = b.add(name + ".m.new", DType::f32, w, true);
      }
      if (spec.optimizer == Optimizer::adamw) {
        l.v = b.add(name + ".v", DType::f32, w, false, 1e-4, true);
        l.new_v = b.add(name + ".v.new", DType::f32, w, true);
      }
    }
  }
  return n;
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
  Builder builder;
  network_tensors(spec, pass, builder);
  return std::move(builder.buffers());
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
  Builder builder(views);
  const Tensors n = network_tensors(spec, pass, builder);
  if (views.size() != builder.buffers().size())
    throw std::invalid_argument("network_steps: " + std::to_string(builder.buffers().size()) + " buffers expected, got " +
                                std::to_string(views.size()));
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
  // A product written in f32 (or f64) and, in mixed precision, rounded to `to`.
  const auto round = [&](const Named& from, const Named& to) {
    NetworkStep step;
    step.kind = NetworkStep::Kind::convert;
    step.what = to.name + " = " + std::string(dtype_name(spec.dtype)) + "(" + from.name + ")";
    step.convert = {to.ref, from.ref};
    steps.push_back(std::move(step));
  };
  const auto gelu = [&](const Named& out, const Named& x, const Named* grad) {
    NetworkStep step;
    step.kind = NetworkStep::Kind::activation;
    step.what = out.name + (grad ? " = gelu'(" + x.name + ") ⊙ " + grad->name : " = gelu(" + x.name + ")");
    step.activation = {grad != nullptr, out.ref, x.ref, grad ? grad->ref : TensorRef{}};
    steps.push_back(std::move(step));
  };
  if (runs_forward(pass)) {
    for (std::int64_t i = 0; i < layers; ++i) {
      const Layer& l = n.layers[std::size_t(i)];
      const Named& x = n.activation(i);
      product(l.product.name + " = " + x.name + " · " + l.weight.name, x.ref, l.weight.ref, l.product.ref);
      if (l.gelu.present()) gelu(l.gelu, l.product, nullptr);
      if (narrow) round(l.gelu.present() ? l.gelu : l.product, l.rounded);
    }
  }
  if (runs_backward(pass)) {
    for (std::int64_t i = layers - 1; i >= 0; --i) {
      const Layer& l = n.layers[std::size_t(i)];
      const Named &g = n.gradient(i + 1), &x = n.activation(i);
      product(l.dw.name + " = " + x.name + "ᵀ · " + g.name, x.ref.transposed(0, 1), g.ref, l.dw.ref);
      if (!l.dx.present()) continue;
      product(l.dx.name + " = " + g.name + " · " + l.weight.name + "ᵀ", g.ref, l.weight.ref.transposed(0, 1), l.dx.ref);
      // the GELU's saved input: layer i - 1's product
      if (l.dgelu.present()) gelu(l.dgelu, n.layers[std::size_t(i - 1)].product, &l.dx);
      if (narrow) round(l.dgelu.present() ? l.dgelu : l.dx, l.drounded);
    }
  }
  if (pass == NetworkPass::step) {
    for (const Layer& l : n.layers) {
      NetworkStep step;
      step.kind = NetworkStep::Kind::update;
      step.what = std::string(optimizer_name(spec.optimizer)) + " update of " + l.weight.name;
      OptimizerProblem& u = step.update;
      u.optimizer = spec.optimizer;
      u.hyper = spec.hyper;
      u.weight = l.master.ref;
      u.grad = l.dw.ref;
      u.new_weight = l.new_master.ref;
      if (l.new_weight.present()) {
        u.new_copy = l.new_weight.ref;
        u.has_copy = true;
      }
      if (l.m.present()) {
        u.m = l.m.ref;
        u.new_m = l.new_m.ref;
      }
      if (l.v.present()) {
        u.v = l.v.ref;
        u.new_v = l.new_v.ref;
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
  return fastest_row(cuda_convert_variants());
}

const OptimizerVariant* optimizer_variant(Device::Kind device) {
  return fastest_row(device == Device::Kind::cpu ? cpu_optimizer_variants() : cuda_optimizer_variants());
}

const GeluVariant* gelu_variant(Device::Kind device) {
  return fastest_row(device == Device::Kind::cpu ? cpu_gelu_variants() : cuda_gelu_variants());
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
    const float* values = expected.ptr<float>();
    for (std::int64_t i = 0, n = expected.numel(); i < n; ++i) largest = std::max(largest, std::abs(double(values[i])));
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
  const auto* values = static_cast<const unsigned char*>(expected.ref.element_data());
  const auto size = std::int64_t(p.out.element_size());
  for (std::int64_t i = 0, n = p.out.numel(); i < n; ++i)
    largest = std::max(largest, std::abs(load_element(values + i * size, p.out.dtype)));
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
