// vendor_direct VENDOR DTYPE M N K REPS: the vendors' own time for the calls that bench_matmul's `openblas` and
// `onednn` variants make, with nothing of flopscope around them: row-major C = A·B (NN, C in f32), operands
// filled once, cblas_sgemm and oneDNN's matmul primitive (created once, as the variant does)
// called REPS times back to back after one warm-up call, each call timed by steady_clock. VENDOR is
// openblas (f32) or onednn (f32, bf16); one per process, so that neither's idle threads (OpenBLAS's
// spin, OpenMP's) take cores from the other. Prints one JSON object: {"vendor", "dtype", "m", "n", "k", "median_s", "min_s"}.
// scripts/checks/reference_check.py --matmul sets these beside bench_matmul's medians (flopscope's
// overhead is its harness: the target is within 2%). Built where oneDNN and OpenBLAS are found.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cblas.h>

#include <dnnl.hpp>

namespace {

struct Times {
  double median_s, min_s;
};

Times time_calls(int reps, const std::function<void()>& call) {
  call();  // warm-up: first-touch pages, JIT, thread pool start
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2], seconds.front()};
}

void print(const char* vendor, const char* dtype, long m, long n, long k, Times t) {
  std::printf("{\"vendor\": \"%s\", \"dtype\": \"%s\", \"m\": %ld, \"n\": %ld, \"k\": %ld, \"median_s\": %.9g, "
              "\"min_s\": %.9g}\n", vendor, dtype, m, n, k, t.median_s, t.min_s);
  std::fflush(stdout);
}

// oneDNN's matmul primitive on row-major A and B of `type` and C in f32 (bench_matmul's output
// for every narrow mode), as kernels/cpu/matmul_vendor.cpp builds it: one primitive, one stream.
void onednn(dnnl::memory::data_type type, const char* dtype, long m, long n, long k, int reps) {
  using tag = dnnl::memory::format_tag;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc a_md({m, k}, type, tag::ab), b_md({k, n}, type, tag::ab), c_md({m, n}, dnnl::memory::data_type::f32, tag::ab);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  } catch (const dnnl::error& e) {
    std::printf("{\"vendor\": \"onednn\", \"dtype\": \"%s\", \"skipped\": \"%s\"}\n", dtype, e.what());
    return;
  }
  dnnl::memory a(a_md, engine), b(b_md, engine), c(c_md, engine);
  const std::size_t element = type == dnnl::memory::data_type::f32 ? 4 : 2;
  std::fill_n(static_cast<unsigned char*>(a.get_data_handle()), m * k * element, 0x3c);  // small finite values
  std::fill_n(static_cast<unsigned char*>(b.get_data_handle()), k * n * element, 0x3c);
  const dnnl::matmul matmul(pd);
  print("onednn", dtype, m, n, k, time_calls(reps, [&] {
          matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
          stream.wait();
        }));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string vendor = argc == 7 ? argv[1] : "", dtype = argc == 7 ? argv[2] : "";
  const bool known = (vendor == "openblas" && dtype == "f32") || (vendor == "onednn" && (dtype == "f32" || dtype == "bf16"));
  if (!known) {
    std::fprintf(stderr, "usage: vendor_direct openblas f32|onednn f32|onednn bf16 M N K REPS\n");
    return 2;
  }
  const long m = std::atol(argv[3]), n = std::atol(argv[4]), k = std::atol(argv[5]);
  const int reps = std::atoi(argv[6]);
  if (m <= 0 || n <= 0 || k <= 0 || reps <= 0 || m > 65536 || n > 65536 || k > 65536 || reps > 100000) {
    std::fprintf(stderr, "vendor_direct: sizes must be 1..65536 and REPS 1..100000\n");
    return 2;
  }
  if (vendor == "onednn") {
    onednn(dtype == "f32" ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16, dtype.c_str(), m, n, k, reps);
    return 0;
  }
  std::vector<float> a(std::size_t(m * k), 0.5f), b(std::size_t(k * n), 0.25f), c(std::size_t(m * n));
  print("openblas", "f32", m, n, k, time_calls(reps, [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, a.data(), int(k),
                      b.data(), int(n), 0.0f, c.data(), int(n));
        }));
  return 0;
}
