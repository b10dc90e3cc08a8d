// A bench binary of a made-up family `probe`, for tests/python/test_harness.py: one axis of each
// kind, and cases that pass, skip, fail validation, throw while preparing or while running, so
// that the harness's own behaviour (flags, expansion, the case skeleton, counters, the JSON) is
// tested end to end, the way every family uses it.
//   probe/<variant>/f32/cpu/n=<n>/view=<view>/perm=<p0p1...>   (shape axis: m x k, only with --shapes)
//   variants: copy (a real copy: passes), skip (unavailable), wrong (adds 1 to one element:
//   fails validation), throws (prepare throws), explodes (the timed call throws on its 3rd call),
//   counted (a copy that says "probe: prepared <name>" on stderr each time it is set up)
// `harness_probe --idle-cpu` instead runs an OpenMP region and an OpenBLAS dgemm, then prints
// the process's CPU time while this thread sleeps 0.25 s: what the idle thread pools burn
// (bench/harness/thread_pools.cpp, Note [idle thread pools]).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "copy_cases.hpp"
#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/tensor.hpp"
#include "harness/harness.hpp"
#include "harness/thread_pools.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

std::string perm_text(const std::vector<std::int64_t>& order) {
  std::string text;
  for (auto i : order) text += std::to_string(i);
  return text;
}

std::optional<Case> build(const Point& p) {
  const std::int64_t n = p.integer("n");
  CaseName name{"probe", p.variant, "f32", p.device->device.str(), {{"n", n}},
                {{"view", p.choice("view")}, {"perm", perm_text(p.ints("perm"))}}};
  if (p.values.count("shape")) {
    const auto& dims = p.ints("shape");
    name.shape = {{"m", dims[0]}, {"k", dims[1]}};
  }
  Case c = copy_case(name, kernels::variant_named(kernels::cpu_copy_variants(), "simd"), DType::f32, n, p.device->device);
  if (p.variant == "skip") c.skip = "probe: skipped on purpose";
  if (p.variant == "wrong") {
    c.prepare = [](std::span<const TensorRef> ops) -> kernels::Runner {
      return [dst = ops[0], src = ops[1]](kernels::Stream) {
        std::memcpy(dst.element_data(), src.element_data(), std::size_t(src.numel()) * 4);
        dst.ptr<float>()[src.numel() / 2] += 1.0f;
      };
    };
  }
  if (p.variant == "counted") {
    c.prepare = [inner = c.prepare, text = name.str()](std::span<const TensorRef> ops) {
      std::fprintf(stderr, "probe: prepared %s\n", text.c_str());
      return inner(ops);
    };
  }
  if (p.variant == "throws")
    c.prepare = [](std::span<const TensorRef>) -> kernels::Runner { throw std::runtime_error("probe: no plan"); };
  if (p.variant == "explodes") {
    c.prepare = [](std::span<const TensorRef> ops) -> kernels::Runner {
      auto calls = std::make_shared<int>(0);
      return [dst = ops[0], src = ops[1], calls](kernels::Stream) {
        if (++*calls == 3) throw std::runtime_error("probe: exploded in the timed loop");
        std::memcpy(dst.element_data(), src.element_data(), std::size_t(src.numel()) * 4);
      };
    };
  }
  return c;
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

int idle_cpu() {
  const std::int64_t n = 256;
  Tensor a = empty({n, n}, {DType::f32}), b = empty({n, n}, {DType::f32}), c = empty({n, n}, {DType::f32});
  Tensor sums = empty({n, n}, {DType::f64}), scale = empty({n, n}, {DType::f64});
  auto* pa = static_cast<float*>(a.data_ptr());
  auto* pb = static_cast<float*>(b.data_ptr());
#pragma omp parallel for
  for (std::int64_t i = 0; i < n * n; ++i) pa[i] = pb[i] = float(i % 7);
  const bool blas = kernels::matmul_reference_blas({a.ref(), b.ref(), c.ref(), ComputeMode::f32},
                                                   static_cast<double*>(sums.data_ptr()), static_cast<double*>(scale.data_ptr()));
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  std::printf("openblas=%d idle_cpu_ms=%.1f\n", blas ? 1 : 0, 1e3 * (cpu_seconds() - before));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cap_idle_spin(argv);
  if (argc == 2 && std::string(argv[1]) == "--idle-cpu") return idle_cpu();
  const Family family{
      .binary = "harness_probe",
      .summary = "The harness's own test family.",
      .dtypes = {DType::f32},
      .default_dtypes = {DType::f32},
      .axes = {{.name = "n", .flag = "sizes", .help = "element counts",
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{std::vector<std::int64_t>{1024}}; }},
               {.name = "view", .flag = "views", .kind = Axis::Kind::choices, .help = "view kinds",
                .choices = {"transpose", "slice"},
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{std::string("transpose")}; }},
               {.name = "perm", .flag = "perm", .kind = Axis::Kind::permutation, .help = "a permutation",
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{std::vector<std::int64_t>{0, 1}}; }},
               {.name = "shape", .flag = "shapes", .kind = Axis::Kind::shapes, .help = "m x k", .keys = {"m", "k"},
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{}; }}},
      .benches = {{.name = "probe",
                   .variants = [](Device::Kind kind) {
                     return kind == Device::Kind::cpu
                                ? std::vector<VariantRow>{{"copy"}, {"skip"}, {"wrong"}, {"throws"}, {"explodes"}, {"counted"}}
                                : std::vector<VariantRow>{};
                   },
                   .axes = {"n", "view", "perm"},
                   .build = build},
                  {.name = "shaped",
                   .variants = [](Device::Kind kind) {
                     return kind == Device::Kind::cpu ? std::vector<VariantRow>{{"copy"}} : std::vector<VariantRow>{};
                   },
                   .axes = {"n", "view", "perm", "shape"},
                   .build = build}},
  };
  return run_family(argc, argv, family);
}
