#include "run_case.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "flopscope/checked.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/kernels/hash.hpp"
#include "flopscope/sizes.hpp"
#include "report.hpp"
#include "rounds.hpp"
#ifdef FLOPSCOPE_HAVE_CUDA
#include "cuda.hpp"
#endif

namespace flopscope::bench {

namespace {

constexpr int kPoison = 0xA5;
constexpr std::uint64_t kSeed = 42;  // operand i is filled from seed 42 + i (fill_seed)
double cuda_budget_seconds = 0.5;

TensorRef view(const Operand& op, void* data, Device device) {
  const Strides strides = op.strides.empty() ? contiguous_strides(op.sizes) : op.strides;
  return TensorRef::strided(data, op.dtype, op.sizes, strides, op.offset, device);
}

void fill(const Operand& op, const TensorRef& host, std::size_t bytes, std::uint64_t seed) {
  if (op.output) {
    std::memset(host.data, kPoison, bytes);
    return;
  }
  switch (op.fill) {
    case Fill::random_bits: kernels::fill_random_bytes(host.data, bytes, seed); break;
    case Fill::uniform: kernels::fill_uniform(host, seed); break;
    case Fill::small_integers: kernels::fill_small_integers(host, seed); break;
    case Fill::custom: op.custom_fill(host); break;
  }
}

// Host memory for the operands, filled; and the views of it.
struct HostOperands {
  std::vector<std::unique_ptr<kernels::HostBuffer>> buffers;
  std::vector<TensorRef> refs;
};

HostOperands host_operands(const Case& c, const std::vector<std::size_t>& bytes, bool filled) {
  HostOperands host;
  for (std::size_t i = 0; i < c.operands.size(); ++i) {
    host.buffers.push_back(std::make_unique<kernels::HostBuffer>(bytes[i]));
    host.refs.push_back(view(c.operands[i], host.buffers.back()->data, Device::cpu()));
    if (filled) fill(c.operands[i], host.refs.back(), bytes[i], fill_seed(i));
  }
  return host;
}

// nullopt, or why the outputs differ from the reference's.
std::optional<std::string> validate(const Case& c, const HostOperands& host, const std::vector<std::size_t>& bytes,
                                    Counters& counters) {
  if (c.validation.check) return c.validation.check(host.refs, counters);
  if (!c.validation.reference) throw std::logic_error(c.name.str() + " has no validation");
  // The reference writes into copies of the outputs (poisoned alike), reading the same inputs.
  std::vector<std::unique_ptr<kernels::HostBuffer>> expected_buffers;
  std::vector<TensorRef> expected = host.refs;
  for (std::size_t i = 0; i < c.operands.size(); ++i) {
    if (!c.operands[i].output) continue;
    expected_buffers.push_back(std::make_unique<kernels::HostBuffer>(bytes[i]));
    std::memset(expected_buffers.back()->data, kPoison, bytes[i]);
    expected[i] = view(c.operands[i], expected_buffers.back()->data, Device::cpu());
  }
  c.validation.reference(expected);
  for (std::size_t i = 0; i < c.operands.size(); ++i) {
    if (!c.operands[i].output) continue;
    const auto mismatch = c.validation.tolerance ? compare_close(host.refs[i], expected[i], *c.validation.tolerance)
                                                 : compare_exact(host.refs[i], expected[i]);
    if (mismatch) return c.operands[i].name + ": " + *mismatch;
  }
  return std::nullopt;
}

// True (and the case skipped with the reason) where `needed` bytes do not fit in what `device`
// has available, leaving 10% headroom.
bool skip_if_too_large(benchmark::State& state, const DeviceContext& device, std::size_t needed, const char* what) {
  const auto available = available_memory(device);
  if (!available || double(needed) <= 0.9 * double(*available)) return false;
  skip(state, "needs " + format_bytes_binary(double(needed)) + " of " + what + ", " + device.device.str() + " has " +
                  format_bytes_binary(double(*available)) + " available");
  return true;
}

// CPU cases set up and validated, kept for the next calls of the same case. Google Benchmark
// calls a case's function for its warm-up, for each trial of its iteration count and for each
// repetition, and the stopping rule's rounds (rounds.hpp) call a block's cases in turn (A B C,
// A B C, ...); a large case's set-up (allocation, fill, the validated run and its reference)
// takes longer than its timing: an 8192 x 8192 transpose's, 0.3 s against 0.15. So the last few
// are kept, most recent first, within kPreparedBytes of operands; the least recent go first when
// another case is set up.
struct PreparedCpuCase {
  const Case* c = nullptr;
  HostOperands host;
  kernels::Runner run;
  Counters counters;
  std::size_t bytes = 0;
};
std::list<PreparedCpuCase> prepared_cpu_cases;

PreparedCpuCase* prepared_cpu(const Case& c) {
  for (auto it = prepared_cpu_cases.begin(); it != prepared_cpu_cases.end(); ++it)
    if (it->c == &c) {
      prepared_cpu_cases.splice(prepared_cpu_cases.begin(), prepared_cpu_cases, it);
      return &prepared_cpu_cases.front();
    }
  return nullptr;
}

// Drops the least recent prepared cases until one of `bytes` fits beside the rest.
void make_room(std::size_t bytes) {
  std::size_t held = 0;
  for (const auto& p : prepared_cpu_cases) held += p.bytes;
  while (!prepared_cpu_cases.empty() && (prepared_cpu_cases.size() >= kPreparedCases || held + bytes > kPreparedBytes)) {
    held -= prepared_cpu_cases.back().bytes;
    prepared_cpu_cases.pop_back();
  }
}

void forget_prepared_cpu(const Case& c) {
  prepared_cpu_cases.remove_if([&](const PreparedCpuCase& p) { return p.c == &c; });
}

// Sets `c` up on the CPU (operands, fill, the validated run), kept first among the prepared
// cases; false, with the case failed, where its outputs differ from the reference's.
bool prepare_on_cpu(benchmark::State& state, const Case& c, const std::vector<std::size_t>& bytes) {
  PreparedCpuCase prepared{.c = &c, .host = host_operands(c, bytes, true)};
  for (std::size_t b : bytes) prepared.bytes += b;
  prepared.run = c.prepare(prepared.host.refs);
  prepared.run(nullptr);
  if (auto mismatch = validate(c, prepared.host, bytes, prepared.counters)) {
    fail(state, c.name.variant + ": " + *mismatch);
    return false;
  }
  prepared_cpu_cases.push_front(std::move(prepared));
  return true;
}

void time_prepared_cpu_case(benchmark::State& state, const DeviceContext& device, const PreparedCpuCase& prepared) {
  {
    NvtxRange timed("timed");
    time_cpu(state, prepared.run);
  }
  set_counters(state, device, *prepared.c, prepared.counters);
}

#ifdef FLOPSCOPE_HAVE_CUDA
// Fails the case with a CUDA error; a sticky one also marks the device unusable for the cases
// after, and says so once on the console.
void cuda_failure(benchmark::State& state, const DeviceContext& device, const Case& c, const cuda::Error& error,
                  const std::string& during) {
  const std::string message = "CUDA error " + during + ": " + error.message;
  if (error.sticky && !device.broken) {
    device.broken = error.message + " (in " + c.name.str() + ")";
    std::fprintf(stderr, "%s is unusable after a sticky CUDA error: %s; its remaining cases are not run\n",
                 device.device.str().c_str(), device.broken->c_str());
  }
  fail(state, c.name.variant + ": " + message);
}

// A CUDA case set up once (device operands filled and uploaded, the validated run, the timing
// resources, the warm-up) and kept for Google Benchmark's next calls of the same case, as on the
// CPU; its host copies are dropped once validated. A case set up again (random interleaving
// runs other cases between its repetitions) is not validated again: the counters of its first
// validation are kept.
struct PreparedCudaCase {
  const Case* c = nullptr;
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> buffers;
  kernels::Runner run;
  std::unique_ptr<cuda::Timer> timer;
  double setup_seconds = 0;  // wall time of the set-up, reported with the first call after it
};
std::optional<PreparedCudaCase> prepared_cuda_case;
std::map<const Case*, Counters> validated_cuda_cases;

// Sets `c` up on its device as prepared_cuda_case; false, with the case skipped or failed, where
// it cannot be (memory, a CUDA error, outputs that differ from the reference's).
bool prepare_on_cuda(benchmark::State& state, const DeviceContext& device, const Case& c,
                     const std::vector<std::size_t>& bytes, CudaTiming timing) {
  const auto start = std::chrono::steady_clock::now();
  const int ordinal = device.device.index;
  const bool validated = validated_cuda_cases.count(&c) != 0;
  PreparedCudaCase prepared{.c = &c};
  // No host copies for a case validated by samples: filled and poisoned on the device.
  const bool device_only = bool(c.validation.sampled);
  {
    HostOperands host = device_only ? HostOperands{} : host_operands(c, bytes, true);
    std::vector<TensorRef> refs;
    for (std::size_t i = 0; i < c.operands.size(); ++i) {
      prepared.buffers.push_back(std::make_unique<cuda::DeviceBuffer>(bytes[i], ordinal));
      const auto& buffer = *prepared.buffers.back();
      if (!buffer.error.empty()) {
        if (buffer.out_of_memory)
          skip(state, "cudaMalloc of " + format_bytes_binary(double(bytes[i])) + " for " + c.operands[i].name + ": " +
                          buffer.error);
        else
          cuda_failure(state, device, c, {buffer.error, cuda::take_error(ordinal).value_or(cuda::Error{}).sticky},
                       "allocating " + c.operands[i].name);
        return false;
      }
      if (!device_only) {
        cuda::upload(buffer.data, host.buffers[i]->data, bytes[i]);
      } else if (c.operands[i].output) {
        cuda::fill_bytes(buffer.data, kPoison, bytes[i]);
      } else if (c.operands[i].fill == Fill::random_bits) {
        cuda::fill_random_bytes(buffer.data, bytes[i], fill_seed(i));
      } else if (c.operands[i].fill == Fill::small_integers && c.operands[i].dtype == DType::f32) {
        cuda::fill_small_integers_f32(buffer.data, std::int64_t(bytes[i] / 4), fill_seed(i));
      } else {
        throw std::logic_error(c.name.str() + ": operand " + c.operands[i].name +
                               " cannot be filled on the device (random_bits, or small_integers of f32)");
      }
      refs.push_back(view(c.operands[i], buffer.data, device.device));
    }
    if (auto error = cuda::take_error(ordinal)) {
      cuda_failure(state, device, c, *error, device_only ? "filling the operands on the device" : "uploading the operands");
      return false;
    }
    prepared.run = c.prepare(refs);
    prepared.run(nullptr);
    if (!validated && !device_only)
      for (std::size_t i = 0; i < c.operands.size(); ++i)
        if (c.operands[i].output) cuda::download(host.buffers[i]->data, prepared.buffers[i]->data, bytes[i]);
    if (auto error = cuda::take_error(ordinal)) {
      cuda_failure(state, device, c, *error, "in the validated run");
      return false;
    }
    if (!validated) {
      Counters counters;
      const auto& buffers = prepared.buffers;
      const ElementReader read = [&](std::size_t operand, std::int64_t index) {
        const std::size_t size = dtype_size(c.operands.at(operand).dtype);
        return cuda::read_element(static_cast<const unsigned char*>(buffers.at(operand)->data) + std::size_t(index) * size,
                                  size);
      };
      auto mismatch = device_only ? c.validation.sampled(read) : validate(c, host, bytes, counters);
      if (auto error = cuda::take_error(ordinal)) {
        cuda_failure(state, device, c, *error, "reading the outputs back");
        return false;
      }
      if (mismatch) {
        fail(state, c.name.variant + ": " + *mismatch);
        return false;
      }
      validated_cuda_cases[&c] = counters;
    }
  }
  prepared.timer = std::make_unique<cuda::Timer>(device, timing.hot, timing.blocking);
  std::optional<cuda::Error> error = prepared.timer->error();
  // 50 ms, or the timing's own budget where that is shorter (the smoke suite's one timed run).
  if (!error) error = prepared.timer->warm_up(prepared.run, std::min(0.05, cuda_budget_seconds));
  if (error && error->out_of_memory) {
    skip(state, error->message);
    return false;
  }
  if (error) {
    cuda_failure(state, device, c, *error, "setting up the timing");
    return false;
  }
  prepared.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  prepared_cuda_case = std::move(prepared);
  return true;
}

void time_prepared_cuda_case(benchmark::State& state, const DeviceContext& device, double budget_seconds) {
  PreparedCudaCase& prepared = *prepared_cuda_case;
  const Case& c = *prepared.c;
  const auto start = std::chrono::steady_clock::now();
  std::int64_t timed_runs = 0;
  std::optional<cuda::Error> error;
  {
    NvtxRange timed("timed");
    error = prepared.timer->time(state, prepared.run, budget_seconds, timed_runs);
  }
  if (error) {
    prepared_cuda_case.reset();
    if (error->out_of_memory) return skip(state, error->message);
    return cuda_failure(state, device, c, *error, "while timing");
  }
  set_counters(state, device, c, validated_cuda_cases.at(&c));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["wall_seconds"] = benchmark::Counter(wall + prepared.setup_seconds);
  state.counters["timed_runs"] = benchmark::Counter(double(timed_runs));
  prepared.setup_seconds = 0;
}
#endif

void run_case_body(benchmark::State& state, const DeviceContext& device, const Case& c, CudaTiming timing) {
  if (device.unavailable) return skip(state, *device.unavailable);
  if (c.skip) return skip(state, *c.skip);
  NvtxRange range(c.name.str());
  if (device.device.is_cpu())
    if (const PreparedCpuCase* prepared = prepared_cpu(c)) return time_prepared_cpu_case(state, device, *prepared);
#ifdef FLOPSCOPE_HAVE_CUDA
  if (device.device.is_cuda() && prepared_cuda_case && prepared_cuda_case->c == &c && !device.broken)
    return time_prepared_cuda_case(state, device, cuda_budget_seconds);
  prepared_cuda_case.reset();
#endif
  if (device.broken)
    return fail(state, "not run: " + device.device.str() + " is unusable after an earlier error: " + *device.broken);
  std::vector<std::size_t> bytes;
  std::size_t operand_bytes = 0, output_bytes = 0;
  for (const Operand& op : c.operands) {
    bytes.push_back(storage_bytes(op));
    operand_bytes = to_size(checked_add<std::int64_t>(std::int64_t(operand_bytes), std::int64_t(bytes.back()), "case bytes"));
    if (op.output) output_bytes += bytes.back();
  }
  make_room(device.device.is_cpu() ? operand_bytes : kPreparedBytes);  // a CUDA case: its host copies
  // Host: the operands (CPU) or their host copies (CUDA), and the reference's outputs; none for
  // a CUDA case validated by samples.
  const DeviceContext host_device{.device = Device::cpu()};
  const bool needs_host = device.device.is_cpu() || !c.validation.sampled;
  if (needs_host && skip_if_too_large(state, device.device.is_cpu() ? device : host_device, operand_bytes + output_bytes,
                                      "host memory"))
    return;
  if (device.device.is_cpu()) {
    if (prepare_on_cpu(state, c, bytes)) time_prepared_cpu_case(state, device, prepared_cpu_cases.front());
    return;
  }
#ifdef FLOPSCOPE_HAVE_CUDA
  if (skip_if_too_large(state, device, operand_bytes + 2 * device.l2_bytes, "device memory")) return;
  if (prepare_on_cuda(state, device, c, bytes, timing)) time_prepared_cuda_case(state, device, cuda_budget_seconds);
#else
  (void)timing;
  skip(state, "built without CUDA");
#endif
}

}  // namespace

std::uint64_t fill_seed(std::size_t index) { return kSeed + index; }

std::uint64_t random_bits_element(std::uint64_t seed, std::int64_t element, std::size_t element_size,
                                  std::size_t total_bytes) {
  std::uint64_t bits = 0;
  for (std::size_t b = 0; b < element_size; ++b) {
    const std::size_t at = std::size_t(element) * element_size + b;
    const std::uint64_t byte = at < total_bytes / 8 * 8 ? kernels::hash_index(seed, at / 8) >> (8 * (at % 8)) & 0xFF
                                                        : std::uint64_t(static_cast<unsigned char>(0x5A + at));
    bits |= byte << (8 * b);
  }
  return bits;
}

std::size_t storage_bytes(const Operand& op) {
  return to_size(checked_bytes(view(op, nullptr, Device::cpu()).storage_elements(), dtype_size(op.dtype),
                               "bytes of operand " + op.name));
}

std::size_t case_bytes(const Case& c) {
  try {
    std::int64_t total = 0;
    for (const Operand& op : c.operands) total = checked_add<std::int64_t>(total, std::int64_t(storage_bytes(op)), "case bytes");
    return to_size(total);
  } catch (const std::exception&) {
    return SIZE_MAX;
  }
}

std::vector<TensorRef> dry_refs(const std::vector<Operand>& operands, Device device) {
  std::vector<TensorRef> refs;
  for (const Operand& op : operands) refs.push_back(view(op, nullptr, device));
  return refs;
}

void time_cpu(benchmark::State& state, const kernels::Runner& run) {
  // One untimed run first where it costs at most half the timed ones: the caches, TLB and clock of
  // this case, not of the case before it in the round (the stopping rule's later rounds have no
  // other warm-up: harness.cpp).
  if (state.max_iterations > 1) {
    run(nullptr);
    benchmark::ClobberMemory();
  }
  for (auto _ : state) {
    run(nullptr);
    benchmark::ClobberMemory();
  }
}

void set_cuda_budget(double seconds) { cuda_budget_seconds = seconds; }

void run_case(benchmark::State& state, const DeviceContext& device, const Case& c, CudaTiming timing) {
  try {
    run_case_body(state, device, c, timing);
    return;
  } catch (const std::bad_alloc&) {
    skip(state, "out of host memory");
  } catch (const std::exception& error) {
    fail(state, c.name.variant + ": " + error.what());
  }
  forget_prepared_cpu(c);  // a call that threw is not to be timed again on what it left
#ifdef FLOPSCOPE_HAVE_CUDA
  prepared_cuda_case.reset();
#endif
}

}  // namespace flopscope::bench
