// The linear network's passes (kernels/network.hpp), what the backward family of benchmarks times:
// gradients against finite differences of the loss in f64, the lecture's example by hand, the
// optimizers against their published formulas, mixed precision judged step by step (and a
// corrupted result caught), and the FLOP counts against lib/'s layer accounting. The CUDA test
// skips with the runtime's reason where no GPU can run it; everything else runs on every CPU
// (microkernel at the widest ISA the CPU has; naive everywhere).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/kernels/network.hpp"
#include "flopscope/model.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;
using namespace flopscope::kernels;

namespace {

// A pass's buffers as host tensors, its steps on them, and runs by a CPU matmul variant.
struct HostNetwork {
  NetworkSpec spec;
  NetworkPass pass;
  std::vector<NetworkBuffer> buffers;
  std::vector<Tensor> tensors;
  std::vector<TensorRef> refs;

  HostNetwork(NetworkSpec s, NetworkPass p) : spec(std::move(s)), pass(p), buffers(network_buffers(spec, pass)) {
    std::uint64_t seed = 100;
    for (const NetworkBuffer& b : buffers) {
      tensors.push_back(empty(b.sizes, {b.dtype}));
      refs.push_back(tensors.back().ref());
      fill_network_buffer(b, refs.back(), ++seed);
    }
  }
  const TensorRef& at(const std::string& name) const {
    for (std::size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].name == name) return refs[i];
    throw std::logic_error("no buffer " + name);
  }
  double get(const std::string& name, std::int64_t i) const {
    const TensorRef& t = at(name);
    return load_element(static_cast<unsigned char*>(t.element_data()) + i * std::int64_t(t.element_size()), t.dtype);
  }
  void set(const std::string& name, std::int64_t i, double value) const {
    const TensorRef& t = at(name);
    store_element(static_cast<unsigned char*>(t.element_data()) + i * std::int64_t(t.element_size()), t.dtype, value);
  }
  std::vector<NetworkStep> steps() const { return network_steps(spec, pass, refs); }
  // Runs the pass by `variant`; false (the caller skips) where it cannot run here.
  bool run(const std::string& variant, std::string* why = nullptr) const {
    const MatmulVariant& matmul = variant_named(cpu_matmul_variants(), variant);
    const auto s = steps();
    if (auto reason = network_unavailable(s, matmul, Device::Kind::cpu)) {
      if (why) *why = *reason;
      return false;
    }
    prepare_network(s, matmul, Device::Kind::cpu)(nullptr);
    return true;
  }
};

// Σ y ⊙ g over the last layer's output y (a loss whose gradient with respect to y is g).
double loss(const HostNetwork& forward, const std::vector<double>& g) {
  const std::string y = "y" + std::to_string(forward.spec.layers());
  double sum = 0;
  for (std::size_t i = 0; i < g.size(); ++i) sum += forward.get(y, std::int64_t(i)) * g[i];
  return sum;
}

// The gradient of Σ y ⊙ g with respect to `name` (x or a weight) by the backward pass, and by
// central differences of forward passes in f64, elementwise; the largest difference relative to
// the largest gradient.
double gradient_error(const NetworkSpec& spec, const std::string& name, const std::string& variant) {
  NetworkSpec f64_spec = spec;
  f64_spec.dtype = DType::f64;
  HostNetwork forward(f64_spec, NetworkPass::forward);
  HostNetwork backward(spec, NetworkPass::backward);
  // The same inputs on both sides: x and weights as the backward pass holds them, dy as g.
  for (const NetworkBuffer& b : forward.buffers) {
    if (b.output) continue;
    for (std::int64_t i = 0; i < forward.at(b.name).numel(); ++i) forward.set(b.name, i, backward.get(b.name, i));
  }
  // The backward pass's saved tensors (activations, GELU inputs) are the forward's (computed in
  // f64, stored in spec's dtype).
  forward.run("naive");
  for (const NetworkBuffer& b : backward.buffers) {
    const bool saved = !b.output && b.name != "dy" && std::any_of(forward.buffers.begin(), forward.buffers.end(),
                                                                  [&](const NetworkBuffer& f) { return f.name == b.name; });
    if (saved)
      for (std::int64_t i = 0; i < backward.at(b.name).numel(); ++i) backward.set(b.name, i, forward.get(b.name, i));
  }
  std::vector<double> g(std::size_t(backward.at("dy").numel()));
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = backward.get("dy", std::int64_t(i));
  EXPECT_TRUE(backward.run(variant));
  const std::string result = name == "x" ? "dx0" : "d" + name;
  const double h = 1e-4;
  double worst = 0, largest = 0;
  for (std::int64_t i = 0; i < forward.at(name).numel(); ++i) {
    const double value = forward.get(name, i);
    forward.set(name, i, value + h);
    forward.run("naive");
    const double up = loss(forward, g);
    forward.set(name, i, value - h);
    forward.run("naive");
    const double down = loss(forward, g);
    forward.set(name, i, value);
    const double numeric = (up - down) / (2 * h), analytic = backward.get(result, i);
    worst = std::max(worst, std::abs(numeric - analytic));
    largest = std::max(largest, std::abs(numeric));
  }
  EXPECT_GT(largest, 0);
  return worst / largest;
}

NetworkSpec small_mlp(DType dtype) {
  NetworkSpec spec;
  spec.rows = 3;
  spec.widths = {5, 4, 3, 2};
  spec.input_grad = true;
  spec.dtype = dtype;
  return spec;
}

}  // namespace

// The lecture's example: x = [1, 2, 3], w = [1, 1, 1], loss 0.5·(x·w - 5)^2: x·w = 6, so
// dloss/dy = 1 and w.grad = x = [1, 2, 3]. Forward and backward through the network's steps.
TEST(Backward, LectureExample) {
  for (const char* variant : {"naive", "microkernel"}) {
    SCOPED_TRACE(variant);
    NetworkSpec spec;
    spec.rows = 1;
    spec.widths = {3, 1};
    HostNetwork forward(spec, NetworkPass::forward);
    for (std::int64_t i = 0; i < 3; ++i) {
      forward.set("x", i, double(i + 1));
      forward.set("w0", i, 1);
    }
    std::string why;
    if (!forward.run(variant, &why)) GTEST_SKIP() << why;
    const double y = forward.get("y1", 0);
    EXPECT_EQ(y, 6);
    HostNetwork backward(spec, NetworkPass::backward);
    for (std::int64_t i = 0; i < 3; ++i) {
      backward.set("x", i, double(i + 1));
      backward.set("w0", i, 1);
    }
    backward.set("dy", 0, y - 5);  // d(0.5·(y - 5)^2)/dy
    ASSERT_TRUE(backward.run(variant));
    for (std::int64_t i = 0; i < 3; ++i) EXPECT_EQ(backward.get("dw0", i), double(i + 1)) << "w.grad[" << i << "]";
    EXPECT_EQ(backward.steps().size(), 1u);  // the network's input gets no gradient
  }
}

// Every weight's and the input's gradient against central differences of f64 forward passes: the
// backward pass's products (their transposed views, their order) are the gradient.
TEST(Backward, GradientsMatchFiniteDifferences) {
  for (const char* name : {"x", "w0", "w1", "w2"}) {
    SCOPED_TRACE(name);
    EXPECT_LT(gradient_error(small_mlp(DType::f64), name, "naive"), 1e-9);
    EXPECT_LT(gradient_error(small_mlp(DType::f32), name, "microkernel"), 1e-5);
  }
}

// The same through GPT-2's feed-forward block (a GELU between two layers): the GELU's backward,
// recomputed from its saved input, is the derivative of its forward.
TEST(Backward, FeedForwardGradientsMatchFiniteDifferences) {
  NetworkSpec spec = small_mlp(DType::f64);
  spec.widths = {5, 7, 5};
  spec.gelu = true;
  for (const char* name : {"x", "w0", "w1"}) {
    SCOPED_TRACE(name);
    EXPECT_LT(gradient_error(spec, name, "naive"), 1e-8);
    spec.dtype = DType::f32;
    EXPECT_LT(gradient_error(spec, name, "microkernel"), 1e-5);
    spec.dtype = DType::f64;
  }
}

// A wrong backward would be caught: the difference test sees a transposed weight.
TEST(Backward, FiniteDifferencesSeeAWrongGradient) {
  NetworkSpec spec = small_mlp(DType::f64);
  spec.widths = {4, 4};
  HostNetwork backward(spec, NetworkPass::backward);
  ASSERT_TRUE(backward.run("naive"));
  // Transposing dW (4 x 4) is what a swapped operand order gives; its entries differ.
  double differs = 0;
  for (std::int64_t r = 0; r < 4; ++r)
    for (std::int64_t c = 0; c < 4; ++c) differs += std::abs(backward.get("dw0", r * 4 + c) - backward.get("dw0", c * 4 + r));
  EXPECT_GT(differs, 0.1);
}

// Mixed precision (bf16, f16) and f32, a whole step with each optimizer: every step judged against
// its own inputs passes; a corrupted product, rounding or update is named.
TEST(Backward, StepIsJudgedStepByStep) {
  const MatmulVariant& matmul = variant_named(cpu_matmul_variants(), "microkernel");
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (Optimizer optimizer : {Optimizer::sgd, Optimizer::sgd_momentum, Optimizer::adamw}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::string(optimizer_name(optimizer)));
      NetworkSpec spec;
      spec.rows = 96;  // past the 64 rows that are all checked: sampled rows
      spec.widths = {48, 80, 33};
      spec.dtype = dtype;
      spec.optimizer = optimizer;
      HostNetwork step(spec, NetworkPass::step);
      std::string why;
      if (!step.run("microkernel", &why)) GTEST_SKIP() << why;
      EXPECT_EQ(check_network(step.steps(), matmul.info), std::nullopt);
      // The last row of dw0 is always checked.
      const double saved = step.get("dw0", 47 * 80 + 5);
      step.set("dw0", 47 * 80 + 5, saved + 0.5);
      const auto error = check_network(step.steps(), matmul.info);
      ASSERT_TRUE(error.has_value());
      EXPECT_NE(error->find("dw0 = "), std::string::npos) << *error;
      step.set("dw0", 47 * 80 + 5, saved);
      const std::string updated = dtype == DType::f32 ? "w1.new" : "w1.master.new";
      step.set(updated, 7, step.get(updated, 7) + 1e-3);
      const auto update_error = check_network(step.steps(), matmul.info);
      ASSERT_TRUE(update_error.has_value());
      EXPECT_NE(update_error->find("update of w1"), std::string::npos) << *update_error;
      step.set(updated, 7, step.get(updated, 7) - 1e-3);
      if (dtype != DType::f32) {
        step.set("a1", 3, step.get("a1", 3) * 2 + 1);
        const auto rounding_error = check_network(step.steps(), matmul.info);
        ASSERT_TRUE(rounding_error.has_value());
        EXPECT_NE(rounding_error->find("a1 = "), std::string::npos) << *rounding_error;
      }
    }
  }
}

// The CPU GELU in f32 (vector arithmetic, its own exp) against the f64 reference rounded to f32,
// forward and backward, on 240,001 points of [-12, 12] and the extremes: within
// 2^-20 (1 + 4 |u| (1 - s)) |ref| + 2^-40 |x|, u = c (x + 0.044715 x^3), s = sigmoid(2u) (|ref|:
// backward, the size of gelu's two terms times |grad|). Where x
// is negative, s = e^2u / (1 + e^2u) carries the f32 rounding of u times 2|u| (1.5e-6 relative at
// x = -4.4); the second term is for the reference's own 1 + tanh(u), which cancels in f64 (0 at
// x = -9.25, where gelu is -1e-30). The old f32 tanh form, 0 at x = -5.75 (gelu: -7.4e-10),
// fails it. NaN stays NaN.
TEST(Gelu, CpuF32MatchesTheReferenceEverywhere) {
  std::vector<float> x;
  for (int i = -120000; i <= 120000; ++i) x.push_back(float(i) * 1e-4f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 30.0f, -30.0f, 1e6f, -1e6f, 1e30f, -1e30f, 3.4e38f, -3.4e38f})
    x.push_back(v);
  std::vector<float> grad(x.size());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = float(int(i % 7) - 3) * 0.37f + 0.11f;
  const std::int64_t n[] = {std::int64_t(x.size())};
  const auto ref = [&](float* data) { return TensorRef::contiguous(data, DType::f32, n, Device::cpu()); };
  const GeluVariant& plain = cpu_gelu_variants()[0];
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    std::vector<float> out(x.size()), expected(x.size());
    const GeluProblem problem{backward, ref(out.data()), ref(x.data()), backward ? ref(grad.data()) : TensorRef{}};
    ASSERT_EQ(plain.unavailable(problem), std::nullopt);
    plain.prepare(problem)(nullptr);
    GeluProblem reference = problem;
    reference.out = ref(expected.data());
    gelu_reference(reference);
    int bad = 0;
    for (std::size_t i = 0; i < x.size() && bad < 5; ++i) {
      const double v = x[i], u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      const double s = 1 / (1 + std::exp(-2 * u)), one_minus_s = 1 / (1 + std::exp(2 * u));
      // backward: the size of gelu'(x)'s two terms, not of their sum (which crosses 0 near x = -0.75)
      const double terms = std::abs(grad[i]) * (s + std::abs(2 * v * s * one_minus_s * 0.7978845608028654 *
                                                               (1 + 3 * 0.044715 * v * v)));
      const double scale = backward ? terms : std::abs(expected[i]);
      const double bound = 0x1p-20 * (1 + 4 * std::abs(u) * one_minus_s) * scale +
                           0x1p-40 * std::abs(v) * (backward ? std::abs(grad[i]) : 1) + 1e-37;
      if (!(std::abs(double(out[i]) - expected[i]) <= bound)) {
        ADD_FAILURE() << "x = " << x[i] << ": " << out[i] << ", reference " << expected[i];
        ++bad;
      }
    }
  }
  float nan = std::nanf(""), out = 0, one = 1;
  const std::int64_t n1[] = {1};
  const auto one_ref = [&](float* data) { return TensorRef::contiguous(data, DType::f32, n1, Device::cpu()); };
  plain.prepare({false, one_ref(&out), one_ref(&nan), {}})(nullptr);
  EXPECT_TRUE(std::isnan(out));
  plain.prepare({true, one_ref(&out), one_ref(&nan), one_ref(&one)})(nullptr);
  EXPECT_TRUE(std::isnan(out));
}

// A feed-forward block's step, f32 and bf16: judged step by step, a wrong GELU named.
TEST(Backward, FeedForwardStepIsJudged) {
  const MatmulVariant& matmul = variant_named(cpu_matmul_variants(), "microkernel");
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    NetworkSpec spec;
    spec.rows = 80;
    spec.widths = {32, 128, 32};
    spec.gelu = true;
    spec.input_grad = true;
    spec.dtype = dtype;
    spec.optimizer = Optimizer::adamw;
    HostNetwork step(spec, NetworkPass::step);
    std::string why;
    if (!step.run("microkernel", &why)) GTEST_SKIP() << why;
    EXPECT_EQ(check_network(step.steps(), matmul.info), std::nullopt);
    step.set("h1", 11, step.get("h1", 11) + 0.01);
    const auto error = check_network(step.steps(), matmul.info);
    ASSERT_TRUE(error.has_value());
    EXPECT_NE(error->find("h1 = gelu(y1)"), std::string::npos) << *error;
    step.set("h1", 11, step.get("h1", 11) - 0.01);
    step.set("gh1", 5, -step.get("gh1", 5) + 1);
    const auto backward_error = check_network(step.steps(), matmul.info);
    ASSERT_TRUE(backward_error.has_value());
    EXPECT_NE(backward_error->find("gh1 = gelu'(y1)"), std::string::npos) << *backward_error;
  }
}

// The optimizers' first step by the published formulas (PyTorch's SGD, SGD with momentum, AdamW
// at t = 1 from zero state: m̂ = g, v̂ = g², so the step is lr·g / (|g| + eps) after the decay).
TEST(Backward, OptimizersFollowTheirFormulas) {
  const float w = 0.75f, g = -0.5f;
  const OptimizerHyper h;
  for (Optimizer optimizer : {Optimizer::sgd, Optimizer::sgd_momentum, Optimizer::adamw}) {
    SCOPED_TRACE(std::string(optimizer_name(optimizer)));
    float weight[1] = {w}, grad[1] = {g}, m[1] = {0}, v[1] = {0}, new_weight[1], new_m[1], new_v[1];
    std::uint16_t copy[1];
    const std::int64_t one[] = {1};
    const auto ref = [&](float* data) { return TensorRef::contiguous(data, DType::f32, one); };
    OptimizerProblem p{optimizer, ref(weight), ref(grad), ref(m), ref(v), ref(new_weight), ref(new_m), ref(new_v),
                       TensorRef::contiguous(copy, DType::bf16, one), true, h};
    cpu_optimizer_variants()[0].prepare(p)(nullptr);
    double expected = w - double(h.lr) * g;  // SGD; momentum's first buffer is g
    if (optimizer == Optimizer::adamw) expected = w * (1 - double(h.lr) * h.weight_decay) - h.lr * g / (std::abs(g) + h.eps);
    EXPECT_NEAR(new_weight[0], expected, 1e-6);
    if (optimizer == Optimizer::sgd_momentum) {
      EXPECT_EQ(new_m[0], g);
    }
    if (optimizer == Optimizer::adamw) {
      EXPECT_NEAR(new_m[0], (1 - h.beta1) * g, 1e-8);
      EXPECT_NEAR(new_v[0], (1 - h.beta2) * g * g, 1e-10);
    }
    EXPECT_EQ(copy[0], std::uint16_t(encode_bits(DType::bf16, new_weight[0])));
  }
}

// FLOPs: the products' 2·m·n·k, equal to lib/'s linear layers' PyTorch-convention count forward
// and backward (an independent computation: model.cpp's accounting); the step adds the
// optimizer's FLOPs to the full count only; bytes are the steps' own.
TEST(Backward, CostsMatchLayerAccounting) {
  for (bool input_grad : {false, true}) {
    NetworkSpec spec;
    spec.rows = 2048;
    spec.widths = {768, 3072, 768, 1024};
    spec.input_grad = input_grad;
    spec.optimizer = Optimizer::adamw;
    std::int64_t forward = 0, backward = 0, params = 0;
    for (std::int64_t i = 0; i < spec.layers(); ++i) {
      const LayerAccount layer = linear_layer("l" + std::to_string(i),
                                              {spec.widths[i], spec.widths[i + 1], false, i > 0 || input_grad,
                                               WeightLayout::in_out},
                                              spec.rows, DType::f32);
      forward += std::int64_t(layer.forward.pytorch_flops);
      backward += std::int64_t(layer.backward.pytorch_flops);
      params += layer.parameters;
    }
    EXPECT_EQ(network_cost(spec, NetworkPass::forward).cost.flops, forward);
    EXPECT_EQ(network_cost(spec, NetworkPass::backward).cost.flops, backward);
    const NetworkCost step = network_cost(spec, NetworkPass::step);
    EXPECT_EQ(step.cost.flops, forward + backward);
    EXPECT_EQ(step.full_flops, forward + backward + 14 * params);
    // Forward bytes: each layer reads X and W and writes Y, f32.
    std::int64_t bytes = 0;
    for (std::int64_t i = 0; i < spec.layers(); ++i)
      bytes += 4 * (spec.rows * spec.widths[i] + spec.widths[i] * spec.widths[i + 1] + spec.rows * spec.widths[i + 1]);
    EXPECT_EQ(network_cost(spec, NetworkPass::forward).cost.bytes, bytes);
  }
  // A feed-forward block: the GELU is in the full count only, at the rule table's per-element
  // FLOPs (gelu_tanh: 9 forward, 18 backward).
  NetworkSpec ffn;
  ffn.rows = 1024;
  ffn.widths = {768, 3072, 768};
  ffn.gelu = true;
  ffn.input_grad = true;
  const std::int64_t ffn_matmuls = std::int64_t{2} * 2 * 1024 * 768 * 3072;
  EXPECT_EQ(network_cost(ffn, NetworkPass::forward).cost.flops, ffn_matmuls);
  EXPECT_EQ(network_cost(ffn, NetworkPass::forward).full_flops, ffn_matmuls + std::int64_t{9} * 1024 * 3072);
  EXPECT_EQ(network_cost(ffn, NetworkPass::backward).full_flops, 2 * ffn_matmuls + std::int64_t{18} * 1024 * 3072);
  // The backward/forward FLOP ratio: 2 inside a network, (2L - 1) / L for the Cruncher.
  NetworkSpec cruncher;
  cruncher.rows = 1024;
  cruncher.widths = {1024, 1024, 1024, 1024, 1024};
  EXPECT_EQ(network_cost(cruncher, NetworkPass::backward).cost.flops * 4,
            network_cost(cruncher, NetworkPass::forward).cost.flops * 7);
}

TEST(Backward, BadSpecsAreNamed) {
  NetworkSpec spec;
  spec.rows = 4;
  spec.widths = {8};
  EXPECT_NE(network_spec_error(spec, NetworkPass::forward), std::nullopt);
  spec.widths = {8, 0};
  EXPECT_NE(network_spec_error(spec, NetworkPass::forward), std::nullopt);
  spec.widths = {8, 8};
  spec.dtype = DType::f64;
  EXPECT_EQ(network_spec_error(spec, NetworkPass::backward), std::nullopt);
  EXPECT_NE(network_spec_error(spec, NetworkPass::step), std::nullopt);
  spec.dtype = DType::f8e4m3;
  EXPECT_NE(network_spec_error(spec, NetworkPass::forward), std::nullopt);
  EXPECT_THROW(network_buffers(spec, NetworkPass::forward), std::invalid_argument);
}

// A bf16 step through cuBLAS and the CUDA conversion and optimizer kernels, judged on the host.
TEST(BackwardCuda, StepThroughCublas) {
  if (auto reason = cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  NetworkSpec spec;
  spec.rows = 96;
  spec.widths = {48, 80, 32};
  spec.dtype = DType::bf16;
  spec.optimizer = Optimizer::adamw;
  HostNetwork host(spec, NetworkPass::step);
  std::vector<std::unique_ptr<cuda::DeviceMemory>> memory;
  std::vector<TensorRef> device_refs;
  for (const TensorRef& r : host.refs) {
    const std::size_t bytes = std::size_t(r.numel()) * r.element_size();
    memory.push_back(std::make_unique<cuda::DeviceMemory>(bytes));
    cuda::copy_to_device(memory.back()->data, r.element_data(), bytes);
    device_refs.push_back(TensorRef::contiguous(memory.back()->data, r.dtype, r.shape(), Device::cuda(0)));
  }
  const MatmulVariant& cublas = variant_named(cuda_matmul_variants(), "cublas");
  const auto steps = network_steps(spec, NetworkPass::step, device_refs);
  ASSERT_EQ(network_unavailable(steps, cublas, Device::Kind::cuda), std::nullopt);
  prepare_network(steps, cublas, Device::Kind::cuda)(nullptr);
  cuda::synchronize();
  for (std::size_t i = 0; i < host.refs.size(); ++i)
    cuda::copy_to_host(host.refs[i].element_data(), memory[i]->data,
                       std::size_t(host.refs[i].numel()) * host.refs[i].element_size());
  EXPECT_EQ(check_network(host.steps(), cublas.info), std::nullopt);
}
