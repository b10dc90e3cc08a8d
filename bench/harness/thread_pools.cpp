#include "thread_pools.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// Note [idle thread pools]
// A bench process runs kernels of two thread runtimes side by side: libgomp's OpenMP pool (own
// kernels, oneDNN) and OpenBLAS's pthreads pool (its variants, and the f64 references of the
// checks). After a call, each pool's workers keep spinning for a while: libgomp 300,000 PAUSE
// loops by default (about 10 ms where PAUSE takes ~140 cycles), OpenBLAS 2^28 TSC cycles (0.1 s
// at 2.6 GHz). With as many cores as threads, the spinning pool of one runtime takes the cores
// from the case that runs next under the other, which runs at about half speed until the spin
// ends. Measured on a 2-core Xeon VM (2026-12-06): own f32 1024^3 matmul calls interleaved with
// OpenBLAS's in one process, 30-41% of the own kernel's calls over 1.15x its median (p90 2.3x);
// with the caps below 5% (p90 1.08x). Under the stopping rule the own kernel's repetitions were
// 1.3-1.9x the median one round in four, so it ran all 20 and stayed unresolved beside vendors
// that resolved in 6. Default suites, defaults set by hand against the caps, one run each:
// bench_backward 82 -> 72 s, 9 -> 3 of 42 cases unresolved; bench_matmul 115 -> 109 s, 8 -> 2 of 71.
//
// So each bench process runs with both spins capped at a few tenths of a millisecond: long enough
// for the back-to-back calls of one case (gaps of microseconds), short enough to end inside the
// untimed call that opens each repetition. The runtimes read their settings as they load, before
// main, so main sets them and executes the binary again; a caller's own values are kept, and the
// values in effect go into the JSON context (run.thread_pools).
namespace {

constexpr const char* kSettings[][2] = {
    {"OPENBLAS_THREAD_TIMEOUT", "20"},  // 2^20 TSC cycles: 0.4 ms at 2.6 GHz
    {"GOMP_SPINCOUNT", "10000"},        // 10,000 PAUSE loops: about 0.3 ms
};

}  // namespace

namespace flopscope::bench {

void cap_idle_spin(char** argv) {
  std::vector<const char*> added;
  for (const auto& setting : kSettings)
    if (!std::getenv(setting[0])) {
      setenv(setting[0], setting[1], /*overwrite=*/0);
      added.push_back(setting[0]);
    }
  if (added.empty()) return;
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "%s: cannot execute itself again with the idle-spin caps (%s): thread pools spin as they default\n",
               argv[0], std::strerror(errno));
  for (const char* name : added) unsetenv(name);
}

nlohmann::json thread_pool_settings() {
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& setting : kSettings) {
    const char* value = std::getenv(setting[0]);
    settings[setting[0]] = value ? nlohmann::json(value) : nlohmann::json();
  }
  return settings;
}

}  // namespace flopscope::bench
