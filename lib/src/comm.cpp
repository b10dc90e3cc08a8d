#include "flopscope/comm.hpp"

#include <algorithm>
#include <stdexcept>

#include "flopscope/checked.hpp"

namespace flopscope {

namespace {

constexpr std::array<std::string_view, kAllCollectives.size()> kCollectiveNames = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv"};

void require_ranks(std::int64_t ranks) {
  if (ranks < 1) throw std::invalid_argument("ranks must be at least 1, not " + std::to_string(ranks));
}

}  // namespace

std::string_view collective_name(Collective c) { return kCollectiveNames[static_cast<std::size_t>(c)]; }

std::optional<Collective> parse_collective(std::string_view text) {
  for (Collective c : kAllCollectives)
    if (collective_name(c) == text) return c;
  return std::nullopt;
}

bool collective_reduces(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter || c == Collective::reduce;
}

bool splits_by_ranks(Collective c) {
  return c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_to_all;
}

double bus_bandwidth_factor(Collective c, std::int64_t ranks) {
  require_ranks(ranks);
  const double n = static_cast<double>(ranks);
  switch (c) {
    case Collective::all_reduce: return 2 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (n - 1) / n;
    case Collective::broadcast:
    case Collective::reduce:
    case Collective::send_recv: return 1;
  }
  return 1;
}

std::optional<std::string> layout_problem(Collective c, std::int64_t count, std::int64_t ranks) {
  require_ranks(ranks);
  if (count < 1) return std::to_string(count) + " elements: a collective needs at least 1";
  if (splits_by_ranks(c) && count % ranks != 0)
    return std::to_string(count) + " elements not divisible by " + std::to_string(ranks) + " ranks (" +
           std::string(collective_name(c)) + " splits its buffer in one piece per rank)";
  return std::nullopt;
}

CollectiveLayout collective_layout(Collective c, std::int64_t count, std::int64_t ranks) {
  if (auto problem = layout_problem(c, count, ranks)) throw std::invalid_argument(*problem);
  switch (c) {
    case Collective::all_gather: return {count / ranks, count};
    case Collective::reduce_scatter: return {count, count / ranks};
    default: return {count, count};
  }
}

Cost collective_cost(Collective c, std::int64_t count, DType dtype, std::int64_t ranks) {
  if (auto problem = layout_problem(c, count, ranks)) throw std::invalid_argument(*problem);
  Cost cost;
  cost.bytes = checked_bytes(count, dtype_size(dtype), "bytes of a collective");
  // The ring algorithm adds each of the n pieces n-1 times over the n ranks: (n-1)/n x count
  // additions per rank (a reduce to one root does the same n-1 additions per element in all).
  if (collective_reduces(c)) cost.flops = count / ranks * (ranks - 1) + (count % ranks) * (ranks - 1) / ranks;
  return cost;
}

double collective_seconds(Collective c, std::int64_t bytes, std::int64_t ranks, double busbw) {
  if (!(busbw > 0)) throw std::invalid_argument("bus bandwidth must be positive");
  return static_cast<double>(bytes) * bus_bandwidth_factor(c, ranks) / busbw;
}

std::string_view sharding_name(Sharding s) {
  switch (s) {
    case Sharding::ddp: return "ddp";
    case Sharding::zero1: return "zero1";
    case Sharding::zero2: return "zero2";
    case Sharding::zero3: return "zero3";
  }
  return "ddp";
}

std::optional<Sharding> parse_sharding(std::string_view text) {
  if (text == "ddp" || text == "0") return Sharding::ddp;
  if (text == "zero1" || text == "1") return Sharding::zero1;
  if (text == "zero2" || text == "2") return Sharding::zero2;
  if (text == "zero3" || text == "3" || text == "fsdp") return Sharding::zero3;
  return std::nullopt;
}

DataParallelStep data_parallel_step(std::int64_t parameters, DType parameter_dtype, DType gradient_dtype,
                                    std::int64_t ranks, Sharding sharding, double busbw, double compute_seconds) {
  require_ranks(ranks);
  if (parameters < 1) throw std::invalid_argument("parameters must be at least 1");
  if (!(busbw > 0)) throw std::invalid_argument("bus bandwidth must be positive");
  if (!(compute_seconds >= 0)) throw std::invalid_argument("compute time must not be negative");
  DataParallelStep step;
  step.ranks = ranks;
  step.sharding = sharding;
  step.gradient_bytes = checked_bytes(parameters, dtype_size(gradient_dtype), "gradient bytes");
  step.parameter_bytes = checked_bytes(parameters, dtype_size(parameter_dtype), "parameter bytes");
  auto add = [&](std::string what, Collective c, std::int64_t bytes) {
    const double factor = bus_bandwidth_factor(c, ranks);
    StepCollective s{std::move(what), c, bytes, static_cast<std::int64_t>(static_cast<double>(bytes) * factor + 0.5),
                     collective_seconds(c, bytes, ranks, busbw)};
    step.link_bytes += s.link_bytes;
    step.comm_seconds += s.seconds;
    step.collectives.push_back(std::move(s));
  };
  switch (sharding) {
    case Sharding::ddp:
    case Sharding::zero1: add("gradients", Collective::all_reduce, step.gradient_bytes); break;
    case Sharding::zero2:
      add("gradients", Collective::reduce_scatter, step.gradient_bytes);
      add("parameters (after the update)", Collective::all_gather, step.parameter_bytes);
      break;
    case Sharding::zero3:
      add("parameters (forward)", Collective::all_gather, step.parameter_bytes);
      add("parameters (backward)", Collective::all_gather, step.parameter_bytes);
      add("gradients", Collective::reduce_scatter, step.gradient_bytes);
      break;
  }
  if (ranks == 1) step.collectives.clear();  // nothing to communicate (every factor is 0)
  step.compute_seconds = compute_seconds;
  step.step_seconds_serial = compute_seconds + step.comm_seconds;
  step.step_seconds_overlapped = std::max(compute_seconds, step.comm_seconds);
  step.comm_fraction_serial = step.step_seconds_serial > 0 ? step.comm_seconds / step.step_seconds_serial : 0;
  return step;
}

}  // namespace flopscope
