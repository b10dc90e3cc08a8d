// matmul/<variant>/<mode>/<device>/m=<m>,n=<n>,k=<k>/layout=<NN|NT|TN>: C (m x n) = A (m x k) · B
// (k x n), every variant of the CPU table (kernels/cpu/matmul.cpp) and the CUDA table
// (kernels/cuda/matmul.cu) on its device.
// - <mode> is the compute mode (compute_mode.hpp): f64, f32, tf32 (CUDA), f16, bf16, f8e4m3,
//   f8e5m2, f8e5m2_e4m3, ... --dtypes picks A's dtype, --modes the modes (default per device:
//   the dtype's own, plus tf32 for f32 and e5m2 x e4m3 for e5m2 on CUDA, whose cuBLASLt has no
//   e5m2 x e5m2); a mode that no variant of a device takes is left out (tf32 on the CPU).
// - Layouts are views: NT's B is the transpose of a row-major n x k array, TN's A of a k x m one.
// - Shapes: --squares (default: CPU 128 .. 4096, CUDA 256 .. 16384, x2 steps), --shapes=m,n,k;...
//   (any list), --model=gpt2-small,... (lib/model.hpp's presets): the forward matmuls of a block
//   and the LM head at 8 x 1024 tokens, named /model=<preset>/site=<qkv|attn_out|ffn_up|ffn_down|
//   lm_head> (--sites picks some). Given --shapes or --model, the squares run only if --squares
//   is given too.
// - Output: f64 for f64, f32 for every other mode (narrow modes accumulate in f32); the label
//   says out=, and "emulated" where a narrow dtype is decoded to f32 and multiplied at the f32
//   rate (whose peak then applies).
// Inputs: fill_uniform's values, uniform in [-1, 1) rounded to the dtype, from one seed per
// operand: the same values in every layout and variant.
// Counters: flops = 2mnk, bytes = A, B read once and C written once (lib's matmul_cost), and the
// accuracy of the dtype: max_rel_error and mean_rel_error, |C - ref| / Σ|a·b| (error_stats with
// the dot product's scale) over the elements checked, where ref is A·B in f64 of the random
// inputs before they were rounded to the dtype: the error includes what rounding the inputs
// costs, not only the accumulation. Divided by Σ|a·b| rather than |ref|, an output near zero,
// where a sum cancels, does not turn a small error into a huge relative one.
// Validation: a case fails, untimed, when an element is off the f64 product of its stored
// inputs by more than matmul_tolerance (k·u of the accumulation and the output's rounding)
// times its scale Σ|a·b|. References (Note [checking large matmuls]): the f64 loop for every
// element up to m·n·k = 2^27, OpenBLAS dgemm in f64 up to 2^36 (4096^3), sampled rows and
// columns above.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/kernels/hash.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/model.hpp"
#include "flopscope/tensor.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

constexpr double kNaiveLimit = double(std::int64_t{1} << 27);          // naive: at most 512^3
constexpr double kLoopReferenceLimit = double(std::int64_t{1} << 27);  // the f64 loop, every element
constexpr double kBlasReferenceLimit = double(std::int64_t{1} << 36);  // dgemm, every element

// Full checks up to kBlasReferenceLimit, or up to $FLOPSCOPE_MATMUL_FULL_CHECK (a number of
// multiply-adds; 0 samples every case: how the tests reach the sampled check on small shapes).
double full_check_limit() {
  static const double limit = [] {
    const char* value = std::getenv("FLOPSCOPE_MATMUL_FULL_CHECK");
    return value ? std::atof(value) : kBlasReferenceLimit;
  }();
  return limit;
}
constexpr std::int64_t kSampledLines = 16;  // rows, and as many columns, above both

std::span<const kernels::MatmulVariant> matmul_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_matmul_variants() : kernels::cuda_matmul_variants();
}

std::vector<VariantRow> variant_names(Device::Kind kind) { return table_rows(matmul_variants(kind)); }

// Plain own kernels (own rows not marked fast: a second a call at 2048^3).
std::string slow_own_cpu_variants() { return slow_own_alternative(kernels::cpu_matmul_variants()); }

// Kernels that do not run bf16 at its own rate: own kernels that decode narrow dtypes to f32
// (MatmulInfo::emulated: their bf16 case says nothing that the f32 case does not) and the f64
// reference loop (a skip at these sizes).
std::string not_bf16_rate_cpu_variants() {
  return names_alternative(kernels::cpu_matmul_variants(), [](const kernels::MatmulVariant& v) {
    return (v.role == kernels::Role::own && v.info.emulated) || v.role == kernels::Role::reference;
  });
}

// ---- inputs and checking ----

// Each input is fill_uniform's values from its own seed: uniform in [-1, 1), then rounded to the
// dtype. uniform_value() is the value before rounding (as fill.cpp computes it; the f64 cases'
// max_rel_error, which tests/python/test_bench_matmul.py bounds, would show any difference).
constexpr std::uint64_t kSeedA = 1, kSeedB = 2;

double uniform_value(std::uint64_t seed, std::int64_t index) {
  return 2 * (double(kernels::hash_index(seed, std::uint64_t(index)) >> 11) * 0x1p-53) - 1;
}

// The inputs before rounding, as f64 row-major tensors of A's and B's shapes.
Tensor unrounded(std::uint64_t seed, std::int64_t rows, std::int64_t cols) {
  Tensor t = empty({rows, cols}, {DType::f64});
  auto* values = static_cast<double*>(t.data_ptr());
  const std::int64_t count = rows * cols;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) values[i] = uniform_value(seed, i);
  return t;
}

// Note [checking large matmuls]: up to m·n·k = 2^27 every element is checked against the f64
// loop (matmul_reference_rows), up to 2^36 (4096^3) against OpenBLAS dgemm in f64
// (matmul_reference_blas, which the tests check against the loop); above (CUDA's large squares,
// or without OpenBLAS) against the loop on 16 rows and 16 columns of C: the first, the last and
// 14 spread by a hash. A wrong kernel is wrong in a pattern (a tile edge, a k block, a thread's
// share, a warp's fragment, a missing tail): a full row crosses every column tile and every k
// block, a full column every row tile, and the first and last lines every edge. What sampling
// misses is an error confined to elements off the sampled lines (one element, or one tile
// elsewhere); the errors reported are then those of the sampled lines.

// The rows (or columns) sampled out of `count`.
std::vector<std::int64_t> sampled_lines(std::int64_t count, std::uint64_t salt) {
  std::vector<std::int64_t> lines = {0, count - 1};
  for (std::uint64_t i = 0; std::int64_t(lines.size()) < std::min<std::int64_t>(kSampledLines, count); ++i) {
    const auto line = std::int64_t(kernels::hash_index(salt, i) % std::uint64_t(count));
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  return lines;
}

// A's and B's roles swapped, for the columns of C: Cᵀ = Bᵀ·Aᵀ.
kernels::MatmulProblem transposed_problem(const kernels::MatmulProblem& p) {
  ComputeMode mode = p.mode;
  if (mode == ComputeMode::f8e4m3_e5m2) mode = ComputeMode::f8e5m2_e4m3;
  else if (mode == ComputeMode::f8e5m2_e4m3) mode = ComputeMode::f8e4m3_e5m2;
  return {p.b.transposed(0, 1), p.a.transposed(0, 1), p.c.transposed(0, 1), mode, p.scale_b, p.scale_a};
}

// Some lines of C beside two references, as f64 tensors: `exact` is A·B of the stored inputs
// (with `scale` = Σ|a·b|, what the bound applies to), `ideal` A·B of the inputs before rounding
// (what the error counters measure: the dtype's rounding of the inputs and the accumulation).
struct Judged {
  Tensor got, exact, scale, ideal;
};

// Note [one reference per product]: the variants of a shape multiply the same inputs (above:
// the same values in every layout and variant), so their references are the same, and a 4096^3
// case's are three dgemms in f64 (~4 s on 2 cores, against ~0.4 s for the case's 6 timed
// runs). The last references computed are kept, keyed by everything they are computed from:
// the sizes, the dtypes, the lines, alpha (fp8's scales) and a hash of A's and B's values in
// logical order, so a case whose inputs differ in any element computes its own.
struct References {
  Tensor sums, abs_sums;
};

struct ReferenceKey {
  std::int64_t m = 0, n = 0, k = 0;
  DType a = DType::f64, b = DType::f64;  // what the hashed bytes are
  double alpha = 0;
  std::uint64_t values = 0;
  std::optional<std::vector<std::int64_t>> rows;
  bool operator==(const ReferenceKey&) const = default;
};

// A hash of t's elements in logical (row-major) order: their bytes as the dtype stores them.
std::uint64_t values_hash(const TensorRef& t) {
  const std::int64_t rows = t.sizes[0], cols = t.sizes[1], size = std::int64_t(t.element_size());
  const auto* base = static_cast<const unsigned char*>(t.element_data());
  std::vector<std::uint64_t> row_hashes(static_cast<std::size_t>(rows));
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint64_t h = kernels::hash_index(std::uint64_t(size), std::uint64_t(r));
    for (std::int64_t c = 0; c < cols; ++c) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, base + (r * t.strides[0] + c * t.strides[1]) * size, std::size_t(size));
      h = kernels::hash_index(h, bits);
    }
    row_hashes[std::size_t(r)] = h;
  }
  std::uint64_t h = kernels::hash_index(std::uint64_t(rows), std::uint64_t(cols));
  for (std::uint64_t row : row_hashes) h = kernels::hash_index(h, row);
  return h;
}

constexpr std::size_t kKeptReferences = 4;  // the exact and ideal references of two dtypes

// The f64 sums and absolute sums of `rows` of p's C (nullopt: every row, by the loop up to
// kLoopReferenceLimit, by dgemm above); nullopt where dgemm is not there to do it.
std::optional<References> references(const kernels::MatmulProblem& p,
                                      const std::optional<std::vector<std::int64_t>>& rows) {
  static std::vector<std::pair<ReferenceKey, References>> kept;  // most recent first
  const ReferenceKey key{p.m(), p.n(), p.k(), p.a.dtype, p.b.dtype, double(p.scale_a) * double(p.scale_b),
                         kernels::hash_index(values_hash(p.a), values_hash(p.b)), rows};
  for (auto it = kept.begin(); it != kept.end(); ++it)
    if (it->first == key) {
      std::rotate(kept.begin(), it, it + 1);
      return kept.front().second;
    }
  const std::int64_t n = p.n(), count = rows ? std::int64_t(rows->size()) : p.m();
  References out{empty({count, n}, {DType::f64}), empty({count, n}, {DType::f64})};
  auto* sums = static_cast<double*>(out.sums.data_ptr());
  auto* abs_sums = static_cast<double*>(out.abs_sums.data_ptr());
  if (!rows && double(p.m()) * double(n) * double(p.k()) > kLoopReferenceLimit) {
    if (!kernels::matmul_reference_blas(p, sums, abs_sums)) return std::nullopt;
  } else {
    std::vector<std::int64_t> all;
    if (!rows)
      for (std::int64_t i = 0; i < p.m(); ++i) all.push_back(i);
    kernels::matmul_reference_rows(p, rows ? *rows : all, sums, abs_sums);
  }
  kept.insert(kept.begin(), {key, out});
  if (kept.size() > kKeptReferences) kept.pop_back();
  return out;
}

// The references of `rows` of C (nullopt: every row, if the loop or dgemm can do it).
std::optional<Judged> judge(const kernels::MatmulProblem& p, const kernels::MatmulProblem& ideal,
                            const std::optional<std::vector<std::int64_t>>& rows) {
  const std::int64_t m = p.m(), n = p.n();
  const std::int64_t count = rows ? std::int64_t(rows->size()) : m;
  const double work = double(m) * double(n) * double(p.k());
  if (!rows && (work > full_check_limit() || work > kBlasReferenceLimit)) return std::nullopt;
  const auto exact = references(p, rows);
  if (!exact) return std::nullopt;
  Judged j{empty({count, n}, {DType::f64}), exact->sums, exact->abs_sums, references(ideal, rows)->sums};
  double* got = static_cast<double*>(j.got.data_ptr());
  const auto* c = static_cast<const unsigned char*>(p.c.element_data());
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t i = rows ? (*rows)[std::size_t(r)] : r;
    for (std::int64_t col = 0; col < n; ++col)
      got[r * n + col] =
          load_element(c + (i * p.c.strides[0] + col * p.c.strides[1]) * std::int64_t(p.c.element_size()), p.c.dtype);
  }
  return j;
}

// Validation::check of a matmul case: within matmul_tolerance of the exact product of the
// stored inputs; the error counters against the product of the inputs before rounding.
std::optional<std::string> check_matmul(const kernels::MatmulProblem& p, const kernels::MatmulInfo& info,
                                        Counters& counters) {
  const Tensor ideal_a = unrounded(kSeedA, p.m(), p.k()), ideal_b = unrounded(kSeedB, p.k(), p.n());
  const Tensor ideal_c = empty({p.m(), p.n()}, {DType::f64});  // shape only: the references write elsewhere
  const kernels::MatmulProblem ideal{ideal_a.ref(), ideal_b.ref(), ideal_c.ref(), ComputeMode::f64};
  std::vector<Judged> parts;
  if (auto all = judge(p, ideal, std::nullopt)) {
    parts.push_back(std::move(*all));
  } else {
    parts.push_back(*judge(p, ideal, sampled_lines(p.m(), 1)));
    parts.push_back(*judge(transposed_problem(p), transposed_problem(ideal), sampled_lines(p.n(), 2)));
  }
  const Tolerance bound = kernels::matmul_tolerance(p, info);
  double max_rel = 0, sum_rel = 0;
  std::int64_t count = 0;
  for (const Judged& part : parts) {
    const TensorRef scale = part.scale.ref();
    if (auto mismatch = compare_close(part.got.ref(), part.exact.ref(), bound, &scale))
      return "C is off the f64 reference by more than its bound (matmul_tolerance): " + *mismatch +
             (parts.size() > 1 ? " (of the sampled rows, then columns)" : "");
    const ErrorStats stats = error_stats(part.got.ref(), part.ideal.ref(), &scale);
    max_rel = std::max(max_rel, stats.max_rel);
    sum_rel += stats.mean_rel * double(stats.count);
    count += stats.count;
  }
  counters["max_rel_error"] = max_rel;
  counters["mean_rel_error"] = count ? sum_rel / double(count) : 0;
  return std::nullopt;
}

// ---- cases ----

// The default modes of a dtype on a device (Note at the top: --modes).
std::vector<AxisValue> default_modes(const DeviceContext& device, DType dtype) {
  std::vector<AxisValue> modes = {std::string(compute_mode_name(natural_compute_mode(dtype)))};
  if (device.device.is_cuda() && dtype == DType::f32) modes.emplace_back(std::string("tf32"));
  if (device.device.is_cuda() && dtype == DType::f8e5m2) modes = {std::string("f8e5m2_e4m3")};
  return modes;
}

std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (const auto& info : compute_modes()) names.emplace_back(info.name);
  return names;
}

std::vector<AxisValue> default_squares(const DeviceContext& device) {
  std::vector<AxisValue> squares;
  const std::int64_t first = device.device.is_cpu() ? 128 : 256, last = device.device.is_cpu() ? 4096 : 16384;
  for (std::int64_t size = first; size <= last; size *= 2) squares.emplace_back(std::vector{size});
  return squares;
}

// What a case's label says beyond bound= and compute=.
std::string label_words(const kernels::MatmulVariant& variant, ComputeMode mode, DType out, bool emulated) {
  std::string words = "out=" + std::string(dtype_name(out));
  if (variant.info.sums_in_f64) words += " accumulate=f64";
  if (emulated) words += " emulated";
  if (variant.info.narrow_accumulation > 0)
    words += " accumulate=" + std::string(dtype_name(compute_mode_info(mode).a)) + "x" +
             std::to_string(variant.info.narrow_accumulation) + "+f32";
  if (variant.role == kernels::Role::vendor) words += " library=" + std::string(variant.info.library);
  return words;
}

std::optional<Case> matmul_case(const Point& p, std::int64_t m, std::int64_t n, std::int64_t k,
                                std::vector<std::pair<std::string, std::string>> extras) {
  const std::optional<ComputeMode> parsed = parse_compute_mode(p.choice("mode"));
  const ComputeMode mode = *parsed;
  const ComputeModeInfo& info = compute_mode_info(mode);
  if (info.a != p.dtype) return std::nullopt;  // --modes' other dtypes
  const Device device = p.device->device;
  const auto* variant = kernels::find_variant(matmul_variants(device.kind), p.variant);
  if (!variant) return std::nullopt;
  const std::string layout = p.choice("layout");
  const DType out = info.accumulate == DType::f64 ? DType::f64 : DType::f32;
  Case c;
  extras.insert(extras.begin(), {"layout", layout});
  c.name = {"matmul", p.variant, std::string(info.name), device.str(), {{"m", m}, {"n", n}, {"k", k}}, extras};
  c.cost = matmul_cost(m, n, k, info.a, info.b, out);
  c.bound = Bound::compute;
  Operand a = Operand::input("a", info.a, {m, k}, Fill::custom), b = Operand::input("b", info.b, {k, n}, Fill::custom);
  a.custom_fill = [](const TensorRef& host) { kernels::fill_uniform(host, kSeedA); };
  b.custom_fill = [](const TensorRef& host) { kernels::fill_uniform(host, kSeedB); };
  if (layout == "TN") a.strides = {1, m};
  if (layout == "NT") b.strides = {1, k};
  c.operands = {a, b, Operand::output_of("c", out, {m, n})};
  // A vendor's chosen algorithm (cuBLASLt) is written here by prepare() and joins the label.
  auto choice = std::make_shared<std::string>();
  const auto problem = [mode, choice](std::span<const TensorRef> ops) {
    kernels::MatmulProblem made{ops[0], ops[1], ops[2], mode};
    made.choice = choice.get();
    return made;
  };
  if (!bind_variant(c, *variant, device, problem)) return std::nullopt;
  const bool narrow = info.accumulate != info.a;
  const bool emulated = narrow && variant->info.emulated;
  c.compute = variant->info.sums_in_f64 ? "f64" : emulated ? "f32" : std::string(info.peak_key);
  c.label = [words = label_words(*variant, mode, out, emulated), choice] {
    return choice->empty() ? words : words + " " + *choice;
  };
  c.validation.check = [problem, info = variant->info](std::span<const TensorRef> host, Counters& counters) {
    return check_matmul(problem(host), info, counters);
  };
  if (variant->role == kernels::Role::reference && !c.skip && double(m) * double(n) * double(k) > kNaiveLimit)
    c.skip = std::string(variant->name) + ": runs up to m·n·k = 2^27 (512^3); the f64 reference loop would take seconds a call here";
  return c;
}

std::optional<Case> build_square(const Point& p) {
  const std::int64_t size = p.integer("square");
  return matmul_case(p, size, size, size, {});
}

std::optional<Case> build_shape(const Point& p) {
  const auto& dims = p.ints("shape");
  return matmul_case(p, dims[0], dims[1], dims[2], {});
}

// ---- a model's matmuls ----

constexpr std::int64_t kModelBatch = 8, kModelSeq = 1024;  // 8 x 1024 tokens

// The forward matmuls of one transformer block and the LM head, by their role: the matmul of
// the first block's account (lib/model.hpp) named here, the first that exists (models with q, k
// and v apart, or SwiGLU's w1 and w3, have three or two of one shape: one runs).
struct Site {
  std::string role;
  std::string layer_kind;                 // "attention", "ffn", "lm_head"
  std::vector<std::string> matmul_names;  // the first of these in that layer
};
const std::vector<Site> kSites = {
    {"qkv", "attention", {"qkv", "q"}},     {"attn_out", "attention", {"proj"}}, {"ffn_up", "ffn", {"fc", "w1"}},
    {"ffn_down", "ffn", {"proj", "w2"}}, {"lm_head", "lm_head", {"logits"}},
};

std::vector<std::string> site_names() {
  std::vector<std::string> names;
  for (const Site& site : kSites) names.push_back(site.role);
  return names;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : transformer_presets()) names.push_back(preset.name);
  return names;
}

// m, n, k of `role`'s forward matmul in `model` at 8 x 1024 tokens.
std::array<std::int64_t, 3> model_matmul(const std::string& model, const std::string& role) {
  const TransformerConfig* config = find_preset(model);
  const auto site = std::find_if(kSites.begin(), kSites.end(), [&](const Site& s) { return s.role == role; });
  const ModelAccount account = transformer_account(*config, kModelBatch, kModelSeq, DType::f32);
  for (const std::string& name : site->matmul_names)
    for (const LayerAccount& layer : account.layers) {
      if (layer.kind != site->layer_kind || (layer.kind != "lm_head" && layer.name.rfind("h.0.", 0) != 0)) continue;
      for (const MatmulShape& shape : layer.matmuls)
        if (shape.role == MatmulRole::forward && shape.batch == 1 && shape.name == name) return {shape.m, shape.n, shape.k};
    }
  throw std::logic_error(model + " has no " + role + " matmul in its account");
}

std::optional<Case> build_model(const Point& p) {
  const std::string& model = p.choice("model");
  const std::string& role = p.choice("site");
  const auto [m, n, k] = model_matmul(model, role);
  return matmul_case(p, m, n, k, {{"model", model}, {"site", role}});
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<DType> dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::f8e4m3, DType::f8e5m2};
  const std::vector<std::string> modes = mode_names();
  const Family family{
      .binary = "bench_matmul",
      .summary = "C = A·B on every device and compute mode: own kernels beside oneDNN, OpenBLAS, cuBLAS and cuBLASLt, "
                 "with the error against an f64 reference.",
      .dtypes = dtypes,
      .default_dtypes = dtypes,
      .axes = {{.name = "mode",
                .flag = "modes",
                .kind = Axis::Kind::choices,
                .help = "compute modes (default: each dtype's own; on CUDA also tf32 for f32, e5m2 x e4m3 for e5m2)",
                .choices = modes,
                .defaults = default_modes},
               {.name = "layout",
                .flag = "layouts",
                .kind = Axis::Kind::choices,
                .help = "operand layouts (T: a transposed view)",
                .choices = {"NN", "NT", "TN"},
                .defaults = [](const DeviceContext&, DType) {
                  return std::vector<AxisValue>{std::string("NN"), std::string("NT"), std::string("TN")};
                }},
               {.name = "square",
                .flag = "squares",
                .help = "m = n = k of square matmuls (default: CPU 128 .. 4096, CUDA 256 .. 16384)",
                .defaults = [](const DeviceContext& device, DType) { return default_squares(device); },
                // Squares by default, unless other shapes are asked for.
                .none_if_given = {"shape", "model"}},
               {.name = "shape",
                .flag = "shapes",
                .kind = Axis::Kind::shapes,
                .help = "matmul shapes m,n,k or MxNxK, ';'-separated",
                .keys = {"m", "n", "k"},
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{}; }},
               {.name = "model",
                .flag = "model",
                .kind = Axis::Kind::choices,
                .help = "transformer presets whose matmuls run at 8 x 1024 tokens",
                .choices = preset_names(),
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{}; }},
               {.name = "site",
                .flag = "sites",
                .kind = Axis::Kind::choices,
                .help = "which of a model's matmuls (default: all five)",
                .choices = site_names(),
                .defaults = [](const DeviceContext&, DType) {
                  std::vector<AxisValue> sites;
                  for (const Site& site : kSites) sites.emplace_back(site.role);
                  return sites;
                }}},
      .benches = {{.name = "squares", .variants = variant_names, .axes = {"mode", "layout", "square"}, .build = build_square},
                  {.name = "shapes", .variants = variant_names, .axes = {"mode", "layout", "shape"}, .build = build_shape},
                  {.name = "model", .variants = variant_names, .axes = {"mode", "layout", "model", "site"}, .build = build_model}},
      .suites =
          {// CPU: every variant and mode at 256 and 1024 NN, f32 and bf16 also NT and TN at 1024 (but
           // the plain-C++ own kernels, which pack every layout alike: 3 s a case at 1024); at
           // 2048 NN f32 and bf16 only (own kernels against oneDNN and OpenBLAS near the FMA
           // ceiling), without the plain-C++ own kernels (a second a call); at 4096 NN the same
           // without bf16 decoded to f32 (the f32 case says its speed). Each case is validated
           // once against f64 references, which the variants of a shape share. CUDA devices: every
           // default square.
           {"default",
            {"--benchmark_enable_random_interleaving=true",
             "--benchmark_filter=-(/cpu/m=(128|512),"
             "|/cpu/m=(256,n=256,k=256|2048,n=2048,k=2048|4096,n=4096,k=4096)/layout=(NT|TN)"
             "|^matmul/([^/]+/(f64|f16|f8e4m3|f8e5m2)|" + slow_own_cpu_variants() + "/[^/]+)/cpu/m=1024,n=1024,k=1024/layout=(NT|TN)"
             "|^matmul/(" + slow_own_cpu_variants() + "/[^/]+|[^/]+/(f64|f16|f8e4m3|f8e5m2))/cpu/m=(2048|4096),"
             "|^matmul/" + not_bf16_rate_cpu_variants() + "/bf16/cpu/m=4096,)"}},
           {"quick", {"--dtypes=f32,bf16", "--squares=512", "--layouts=NN", "--benchmark_enable_random_interleaving=true"}},
           // The tensor cores: own mma beside cuBLAS and cuBLASLt in bf16, cuBLASLt's fp8 (e4m3), at
           // 4096 and 8192 (gpu_check.sh --plan: within its budget).
           {"gpu",
            {"--dtypes=bf16,f8e4m3", "--roles=fastest,vendor", "--squares=4096,8192", "--layouts=NN,NT",
             "--benchmark_repetitions=2", "--benchmark_min_time=0.05", "--benchmark_enable_random_interleaving=true"}},
           // Every mode and layout at a size of whole tiles and tiles cut at the edges.
           {"smoke", {"--squares=200"}},
           // The kernels that stage tiles in shared memory (mma: cp.async, ldmatrix, mma.sync), for
           // racecheck and synccheck.
           {"sync", {"--dtypes=f32,bf16", "--roles=shares_memory", "--squares=200", "--layouts=NN,NT"}}},
  };
  return run_family(argc, argv, family);
}
