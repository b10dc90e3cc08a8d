// How long the thread pools of a bench process spin when idle: Note [idle thread pools].
#pragma once

#include <nlohmann/json.hpp>

namespace flopscope::bench {

// Where the environment lacks the idle-spin caps, sets them and executes this binary again with
// the same arguments (the runtimes read them as they load, before main); returns where nothing
// was missing, or where that fails (the run then goes on with the runtimes' own spins, and
// thread_pool_settings() shows them unset). Call first thing in main.
void cap_idle_spin(char** argv);

// The idle-spin settings in effect, for the JSON context's run.thread_pools:
// {"OPENBLAS_THREAD_TIMEOUT": "20", "GOMP_SPINCOUNT": "10000"} (the harness's, or the caller's
// where the environment set them; null where unset).
nlohmann::json thread_pool_settings();

}  // namespace flopscope::bench
