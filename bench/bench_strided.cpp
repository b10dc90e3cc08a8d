// strided/<variant>/<dtype>/<device>/<source shape>/view=<kind>[/step=k][/perm=...]: .contiguous()
// of a view, src (the view) -> dst (contiguous). The shape is the source tensor's (the one the view
// is taken of, in its own order of dimensions); the extras say which view:
//   m=,n=/view=transpose             x.t() of an m x n matrix: an n x m result
//   b=,t=,h=,d=/view=split_heads     (B,T,H,d) -> (B,H,T,d): x.permute(0, 2, 1, 3)
//   b=,h=,t=,d=/view=merge_heads     (B,H,T,d) -> (B,T,H,d): the same permute, undone
//   m=,n=/view=slice/step=k          x[:, ::k] of an m x n matrix
//   m=,n=/view=expand_row            a row of n expanded to m x n (stride 0 across rows)
//   m=,n=/view=expand_col            a column of m expanded to m x n (stride 0 along rows)
//   d0=,d1=,.../view=permute/perm=0.2.3.1   any permutation (--shape=, --perm=) through the one
//                                    N-d strided kernel of each variant
// Beside them, strided/copy/<dtype>/<device>/n=<elements>: a contiguous copy of as many elements
// as each view has (copy_cases.hpp's baseline_copy: the fastest CPU copy, the GPU's driver copy), measured in
// the same process, so that each view's cost is set against the copy of the same bytes
// (--benchmark_enable_random_interleaving=true interleaves their repetitions).
// Counters: bytes (lib's strided_copy_cost: each element of the view read once, an expanded
// source once, dst written once), bytes_touched (lib's cache-line model: the whole 64-byte lines,
// 32-byte sectors on a GPU, that the view's elements and dst lie in) and elements (of dst: the
// n of the matching copy baseline).
// Validation before timing, bit for bit: against kernels::copy_reference up to 4Mi elements,
// above that against the CPU row marked checker (tiles through an L1 buffer: seconds less than the
// reference on a large transpose), which the tests check against the reference on every view
// kind. Sources hold random bits (NaN patterns included), except for a row marked
// values_not_bits (cuBLAS's geam computes 1 * a + 0 * b and so canonicalizes NaNs): finite values.
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "copy_cases.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/kernels/strided.hpp"
#include "harness/flags.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

constexpr std::int64_t kReferenceLimit = std::int64_t{1} << 22;

// A view of a contiguous source tensor, and how its case is named.
struct ViewSpec {
  std::vector<std::pair<std::string, std::int64_t>> shape;  // the source's dims, for the name
  std::vector<std::pair<std::string, std::string>> extras;
  Shape sizes;
  Strides strides;
};

// permute(order) of a contiguous tensor of `source`.
ViewSpec permuted(const Shape& source, const std::vector<std::int64_t>& order) {
  const Strides strides = contiguous_strides(source);
  ViewSpec v;
  for (std::int64_t d : order) {
    v.sizes.push_back(source[std::size_t(d)]);
    v.strides.push_back(strides[std::size_t(d)]);
  }
  return v;
}

// The view kinds and the axes each reads.
struct ViewGroup {
  std::string name;
  std::vector<std::string> views;
  std::vector<std::string> axes;  // besides "view"
};

const std::vector<ViewGroup> kGroups = {
    {"transposes", {"transpose"}, {"matrix"}},
    {"heads", {"split_heads", "merge_heads"}, {"heads"}},
    {"slices", {"slice"}, {"slice_matrix", "step"}},
    {"expands", {"expand_row", "expand_col"}, {"expand_matrix"}},
    {"permutes", {"permute"}, {"shape", "perm"}},
};

std::vector<std::string> all_views() {
  std::vector<std::string> views;
  for (const auto& g : kGroups) views.insert(views.end(), g.views.begin(), g.views.end());
  return views;
}

// The view of point `p` (whose view is one of `group`'s).
ViewSpec view_spec(const Point& p, const std::string& view) {
  if (view == "transpose") {
    const auto& mn = p.ints("matrix");
    ViewSpec v = permuted({mn[0], mn[1]}, {1, 0});
    v.shape = {{"m", mn[0]}, {"n", mn[1]}};
    v.extras = {{"view", view}};
    return v;
  }
  if (view == "split_heads" || view == "merge_heads") {
    const auto& bthd = p.ints("heads");
    const std::int64_t b = bthd[0], t = bthd[1], h = bthd[2], d = bthd[3];
    const bool split = view == "split_heads";
    ViewSpec v = permuted(split ? Shape{b, t, h, d} : Shape{b, h, t, d}, {0, 2, 1, 3});
    v.shape = split ? decltype(v.shape){{"b", b}, {"t", t}, {"h", h}, {"d", d}}
                    : decltype(v.shape){{"b", b}, {"h", h}, {"t", t}, {"d", d}};
    v.extras = {{"view", view}};
    return v;
  }
  if (view == "slice") {
    const auto& mn = p.ints("slice_matrix");
    const std::int64_t m = mn[0], n = mn[1], k = p.integer("step");
    // ceil(n / k) columns, without n + k - 1 (which overflows for a step near 2^63); n, k >= 1.
    ViewSpec v{{{"m", m}, {"n", n}}, {{"view", view}, {"step", std::to_string(k)}}, {m, (n - 1) / k + 1}, {n, k}};
    return v;
  }
  if (view == "expand_row" || view == "expand_col") {
    const auto& mn = p.ints("expand_matrix");
    const std::int64_t m = mn[0], n = mn[1];
    return {{{"m", m}, {"n", n}}, {{"view", view}}, {m, n}, view == "expand_row" ? Strides{0, 1} : Strides{1, 0}};
  }
  // permute (main() has checked that every order fits every shape)
  const auto& source = p.ints("shape");
  const auto& order = p.ints("perm");
  ViewSpec v = permuted(source, order);
  std::string perm;
  for (std::size_t i = 0; i < source.size(); ++i) {
    v.shape.emplace_back("d" + std::to_string(i), source[i]);
    perm += (i ? "." : "") + std::to_string(order[i]);
  }
  v.extras = {{"view", view}, {"perm", perm}};
  return v;
}

// The view of point `p` if it belongs to `group`.
std::optional<ViewSpec> view_of(const Point& p, const ViewGroup& group) {
  const std::string& view = p.choice("view");
  if (std::find(group.views.begin(), group.views.end(), view) == group.views.end()) return std::nullopt;
  return view_spec(p, view);
}

std::span<const kernels::CopyVariant> strided_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_strided_variants() : kernels::cuda_strided_variants();
}

std::vector<VariantRow> strided_names(Device::Kind kind) { return table_rows(strided_variants(kind)); }

// The contiguous copy of as many elements as the view has.
std::optional<Case> build_baseline(const Point& p, const ViewGroup& group) {
  const auto view = view_of(p, group);
  if (!view) return std::nullopt;
  return copy_baseline("strided", p.dtype, shape_numel(view->sizes), p.device->device);
}

std::optional<Case> build_strided(const Point& p, const ViewGroup& group) {
  const auto view = view_of(p, group);
  if (!view) return std::nullopt;
  const Device device = p.device->device;
  const DType dtype = p.dtype;
  const Strides dst_strides = contiguous_strides(view->sizes);
  const std::int64_t numel = shape_numel(view->sizes);
  Case c;
  c.name = {"strided", p.variant, std::string(dtype_name(dtype)), device.str(), view->shape, view->extras};
  c.cost = strided_copy_cost(view->sizes, view->strides, dtype);
  c.bound = Bound::memory;
  Operand src{"src", dtype, view->sizes, view->strides, 0, false, Fill::random_bits, {}};
  const auto& variant = kernels::variant_named(strided_variants(device.kind), p.variant);
  if (variant.traits.values_not_bits) src.fill = Fill::uniform;
  c.operands = {Operand::output_of("dst", dtype, view->sizes), src};
  const std::int64_t touched = strided_copy_bytes_touched(view->sizes, dst_strides, 0, view->strides, 0, dtype,
                                                          device.is_cpu() ? kCpuCacheLineBytes : kCudaSectorBytes);
  c.validation.check = [touched, numel](std::span<const TensorRef> host, Counters& counters) -> std::optional<std::string> {
    counters["bytes_touched"] = double(touched);
    counters["elements"] = double(numel);
    const TensorRef &dst = host[0], &source = host[1];
    kernels::HostBuffer buffer(std::size_t(numel) * dst.element_size());
    TensorRef expected = dst;
    expected.data = buffer.data;
    if (numel <= kReferenceLimit)
      kernels::copy_reference({expected, source});
    else
      kernels::checker(kernels::cpu_strided_variants()).prepare({expected, source})(nullptr);
    if (auto mismatch = compare_exact(dst, expected)) return "dst: " + *mismatch;
    return std::nullopt;
  };
  if (!bind_variant(c, variant, device, [](std::span<const TensorRef> ops) { return kernels::CopyProblem{ops[0], ops[1]}; }))
    return std::nullopt;
  return c;
}

// ---- default axis values ----

std::vector<AxisValue> one(std::vector<std::int64_t> value) { return {AxisValue{std::move(value)}}; }

// Squares from L2-resident (source and result in L2) to past 4x the last-level cache, sides x2;
// then a tall-skinny and a non-power-of-two matrix.
std::vector<AxisValue> default_matrices(const DeviceContext& device, DType dtype) {
  const auto size = std::int64_t(dtype_size(dtype));
  const auto l2 = std::int64_t(std::max<std::size_t>(device.l2_bytes, 256 << 10));
  const auto llc = std::int64_t(device.last_level_cache());
  std::int64_t side = 64;
  while (2 * (2 * side) * (2 * side) * size <= l2) side *= 2;
  std::vector<AxisValue> values;
  for (;; side *= 2) {
    values.emplace_back(std::vector<std::int64_t>{side, side});
    if (2 * side * side * size > 4 * llc) break;
  }
  values.emplace_back(std::vector<std::int64_t>{65536, 64});
  values.emplace_back(std::vector<std::int64_t>{4095, 4097});
  return values;
}

// Besides f32, the default suite runs bf16, for one case only: the 8192^2 transpose (issue 25's
// 16-bit target, 128 MiB each way; 5 cases of 0.1-0.3 s with validation). These are bf16's
// defaults wherever --views and --matrices are not given.
constexpr DType kDefaultExtraDType = DType::bf16;

std::vector<AxisValue> default_views(const DeviceContext&, DType dtype) {
  if (dtype == kDefaultExtraDType) return {AxisValue{std::string("transpose")}};
  const auto views = all_views();
  return {views.begin(), views.end()};
}

std::vector<AxisValue> default_matrices_of(const DeviceContext& device, DType dtype) {
  if (dtype == kDefaultExtraDType) return one({8192, 8192});
  return default_matrices(device, dtype);
}

// 4096 rows, 64 MiB in all (past the last-level cache of the CPUs flopscope meets).
std::vector<AxisValue> default_wide(const DeviceContext&, DType dtype) {
  return one({4096, (std::int64_t{64} << 20) / 4096 / std::int64_t(dtype_size(dtype))});
}

// Exits 2 with one line, before anything runs, where a --perm has not as many indices as a
// --shape has dimensions (and permutes are selected).
void check_permutations(int argc, char** argv, const Family& family) {
  const Selection selection = parse_flags(argc, argv, family);
  auto values = [&](const std::string& name) {
    if (auto given = selection.axes.find(name); given != selection.axes.end()) return given->second;
    for (const Axis& axis : family.axes)
      if (axis.name == name) return axis.defaults(DeviceContext{}, DType::f32);
    return std::vector<AxisValue>{};
  };
  const auto views = values("view");
  if (std::find(views.begin(), views.end(), AxisValue{std::string("permute")}) == views.end()) return;
  for (const AxisValue& shape : values("shape"))
    for (const AxisValue& perm : values("perm")) {
      const auto& dims = std::get<std::vector<std::int64_t>>(shape);
      const auto& order = std::get<std::vector<std::int64_t>>(perm);
      if (dims.size() == order.size()) continue;
      std::string text;
      for (std::int64_t i : order) text += (text.empty() ? "" : ",") + std::to_string(i);
      const bool perm_given = selection.axes.count("perm") > 0, shape_given = selection.axes.count("shape") > 0;
      usage_error(family.binary, (perm_given ? "--perm=" : "the default permutation ") + text + " has " +
                                     std::to_string(order.size()) + " indices but " +
                                     (shape_given ? "--shape=" : "the default shape ") + shape_str(dims) + " has " +
                                     std::to_string(dims.size()) + " dimensions" +
                                     (perm_given ? "" : ": give a --perm of as many indices"));
    }
}

}  // namespace

int main(int argc, char** argv) {
  Family family{
      .binary = "bench_strided",
      .summary = ".contiguous() of views (transpose, heads, slices, expand, any permutation) beside a copy of the same bytes.",
      .dtypes = {kAllDTypes.begin(), kAllDTypes.end()},
      .default_dtypes = {DType::f32},
      .axes = {{.name = "view", .flag = "views", .kind = Axis::Kind::choices, .help = "view kinds (bf16's default: transpose)",
                .choices = all_views(), .defaults = default_views},
               {.name = "matrix", .flag = "matrices", .kind = Axis::Kind::shapes,
                .help = "transposes: source matrices MxN (bf16's default: 8192x8192)", .keys = {"m", "n"}, .defaults = default_matrices_of},
               {.name = "heads", .flag = "heads", .kind = Axis::Kind::shapes,
                .help = "split/merge heads: BxTxHxD", .keys = {"b", "t", "h", "d"},
                .defaults = [](const DeviceContext&, DType) {
                  return std::vector<AxisValue>{std::vector<std::int64_t>{8, 1024, 12, 64},
                                                std::vector<std::int64_t>{8, 1024, 25, 64}};
                }},
               {.name = "slice_matrix", .flag = "slices", .kind = Axis::Kind::shapes,
                .help = "slices x[:, ::k]: source matrices MxN", .keys = {"m", "n"}, .defaults = default_wide},
               {.name = "step", .flag = "steps", .help = "slice steps k",
                .defaults = [](const DeviceContext&, DType) {
                  std::vector<AxisValue> steps;
                  for (std::int64_t k : {1, 2, 4, 8, 16}) steps.emplace_back(std::vector{k});
                  return steps;
                }},
               {.name = "expand_matrix", .flag = "expands", .kind = Axis::Kind::shapes,
                .help = "expands: results MxN", .keys = {"m", "n"}, .defaults = default_wide},
               {.name = "shape", .flag = "shape", .kind = Axis::Kind::shapes,
                .help = "permute: source shapes, e.g. 8x1024x12x64", .defaults = [](const DeviceContext&, DType) {
                  return one({8, 1024, 12, 64});
                }},
               {.name = "perm", .flag = "perm", .kind = Axis::Kind::permutation,
                .help = "permute: orders, e.g. 0,2,3,1 (as many indices as --shape has dims)",
                .defaults = [](const DeviceContext&, DType) { return one({0, 2, 3, 1}); }}},
  };
  std::vector<BaselinedGroup> groups;
  for (const ViewGroup& group : kGroups) {
    // The view innermost: a shape's views run next to each other (split and merge heads of one
    // shape share a block of the stopping rule's rounds, and with it their copy: rounds.hpp).
    std::vector<std::string> axes = group.axes;
    axes.push_back("view");
    groups.push_back({group.name, axes, [&group](const Point& p) { return build_baseline(p, group); },
                      [&group](const Point& p) { return build_strided(p, group); }});
  }
  family.benches = benches_with_baselines(groups, strided_names);
  // Each view and the copy of the same bytes it is set against, interleaved; the plain own
  // kernels (not marked fast) stop short of a square of 5-digit sides (16384^2 where the LLC
  // makes it a default: one call 0.3-2.3 s, 6 repetitions at least; the 8192^2 cases say how
  // they scale).
  family.suites = {{"default", {"--dtypes=" + std::string(dtype_name(DType::f32)) + "," + std::string(dtype_name(kDefaultExtraDType)),
                                "--benchmark_filter=-^strided/" + slow_own_alternative(kernels::cpu_strided_variants()) +
                                    "/[^/]+/cpu/m=[0-9]{5,},n=[0-9]{5,}/view=transpose",
                                "--benchmark_enable_random_interleaving=true"}},
                   // One case of each view kind.
                   {"quick",
                    {"--matrices=1024x1024", "--heads=8x256x12x64", "--slices=1024x1024", "--steps=4",
                     "--expands=1024x1024", "--shape=8x256x12x64", "--perm=0,2,3,1",
                     "--benchmark_enable_random_interleaving=true"}},
                   // The transpose at 8192^2 (past the 60 MB L2), every CUDA variant beside the copy
                   // of its bytes (gpu_check.sh --plan: within its budget).
                   {"gpu",
                    {"--dtypes=f32,bf16", "--views=transpose", "--matrices=8192x8192", "--benchmark_repetitions=2",
                     "--benchmark_min_time=0.05", "--benchmark_enable_random_interleaving=true"}},
                   // Every view kind in elements of 8, 4, 2 and 1 bytes, tiles cut at the edges.
                   {"smoke",
                    {"--dtypes=f64,f32,bf16,f8e4m3", "--matrices=33x65", "--heads=2x16x3x64", "--slices=64x128", "--steps=3",
                     "--expands=64x128", "--shape=2x16x3x64", "--perm=0,2,3,1"}},
                   // The shared-memory transposes, for racecheck and synccheck.
                   {"sync",
                    {"--dtypes=f32,bf16,f8e4m3", "--roles=shares_memory", "--views=transpose",
                     "--matrices=33x65"}}};
  check_permutations(argc, argv, family);
  return run_family(argc, argv, family);
}
