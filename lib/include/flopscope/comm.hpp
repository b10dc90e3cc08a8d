// Communication accounting: what a collective moves and how its bandwidth is reported, by the
// rules of nccl-tests (doc/PERFORMANCE.md), and the communication of a data-parallel training step.
//
// Note [algbw and busbw]: a collective of `bytes` (nccl-tests' "size") that took t seconds has
// algbw = bytes / t. busbw = algbw x factor(collective, n ranks) is the rate each rank's link had
// to sustain in the optimal (ring) algorithm, comparable with the link's peak whatever n is:
//   all_reduce                              2(n-1)/n  (a reduce-scatter and an all-gather)
//   all_gather, reduce_scatter, all_to_all   (n-1)/n  (each rank receives n-1 of n pieces)
//   broadcast, reduce, send_recv             1
// `bytes` is the whole buffer: all_reduce, broadcast, reduce, send_recv: the buffer each rank
// holds; all_gather: the gathered output (each rank sends bytes/n); reduce_scatter: the input
// (each rank keeps bytes/n); all_to_all: each rank's send buffer (n pieces of bytes/n).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/dtype.hpp"

namespace flopscope {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv };
inline constexpr std::array kAllCollectives = {Collective::all_reduce, Collective::all_gather,
                                               Collective::reduce_scatter, Collective::broadcast,
                                               Collective::reduce, Collective::all_to_all, Collective::send_recv};

std::string_view collective_name(Collective c);  // "all_reduce"
std::optional<Collective> parse_collective(std::string_view text);
bool collective_reduces(Collective c);  // all_reduce, reduce_scatter, reduce: take a reduction op

// busbw / algbw for `ranks` ranks (Note [algbw and busbw]); ranks >= 1.
double bus_bandwidth_factor(Collective c, std::int64_t ranks);

// One rank's buffers of a collective of `count` elements (nccl-tests' count: bytes / dtype size).
struct CollectiveLayout {
  std::int64_t send_elements = 0, recv_elements = 0;
};
// Throws std::invalid_argument when `count` is not divisible by `ranks` where the collective
// splits its buffer in n pieces (divisible_by_ranks says which).
CollectiveLayout collective_layout(Collective c, std::int64_t count, std::int64_t ranks);
bool splits_by_ranks(Collective c);  // all_gather, reduce_scatter, all_to_all
// nullopt, or why `count` elements cannot be split over `ranks` ("1000 elements not divisible by 3 ranks").
std::optional<std::string> layout_problem(Collective c, std::int64_t count, std::int64_t ranks);

// bytes: count x dtype size (what algbw divides by the time); flops: the reduction's additions
// on one rank in the ring algorithm ((n-1)/n x count for all_reduce, reduce_scatter and reduce).
Cost collective_cost(Collective c, std::int64_t count, DType dtype, std::int64_t ranks);

// Seconds a collective of `bytes` takes at bus bandwidth `busbw` (bytes/s): bytes x factor / busbw.
double collective_seconds(Collective c, std::int64_t bytes, std::int64_t ranks, double busbw);

// ---- data parallelism ----

// How the training state is sharded over the data-parallel ranks (ZeRO, DeepSpeed; FSDP's
// SHARD_GRAD_OP is stage 2, FULL_SHARD stage 3). Note [data-parallel communication]:
//   ddp     every rank holds everything; gradients all-reduced: 2(n-1)/n x G per rank
//   zero1   optimizer state sharded; gradients all-reduced (each rank then updates its shard and
//           the parameters are all-gathered: DeepSpeed does reduce-scatter + all-gather, the same
//           2(n-1)/n volume as an all-reduce when parameters and gradients share a dtype)
//   zero2   + gradients sharded: reduce-scatter of G + all-gather of the parameters P
//   zero3   + parameters sharded: all-gather of P before the forward, again before the backward,
//           reduce-scatter of G: 3(n-1)/n x P when P = G, 1.5x DDP
enum class Sharding { ddp, zero1, zero2, zero3 };
std::string_view sharding_name(Sharding s);  // "ddp", "zero1", ...
std::optional<Sharding> parse_sharding(std::string_view text);  // also "fsdp" (= zero3), "0".."3"

// One collective of a step: which, on what buffer, and its time at the step's busbw.
struct StepCollective {
  std::string what;  // "gradients", "parameters (forward)"
  Collective collective = Collective::all_reduce;
  std::int64_t bytes = 0;        // the collective's size (Note [algbw and busbw])
  std::int64_t link_bytes = 0;   // bytes x factor: what each rank's link carries
  double seconds = 0;
};

struct DataParallelStep {
  std::int64_t ranks = 0;
  Sharding sharding = Sharding::ddp;
  std::int64_t gradient_bytes = 0;   // parameters x gradient dtype size (what one rank computes)
  std::int64_t parameter_bytes = 0;  // parameters x parameter dtype size
  std::vector<StepCollective> collectives;
  std::int64_t link_bytes = 0;   // the sum: bytes each rank's link carries per step
  double comm_seconds = 0;       // the collectives one after another at busbw
  double compute_seconds = 0;    // the step's compute on one rank (given)
  double step_seconds_serial = 0;      // compute + comm: no overlap
  double step_seconds_overlapped = 0;  // max(compute, comm): communication fully hidden behind backward
  double comm_fraction_serial = 0;     // comm / (compute + comm)
};

// The communication of a data-parallel step of `parameters` parameters on `ranks` ranks at bus
// bandwidth `busbw` (bytes/s), beside `compute_seconds` of compute per rank. Throws
// std::invalid_argument for ranks < 1, busbw <= 0 or a negative compute time.
DataParallelStep data_parallel_step(std::int64_t parameters, DType parameter_dtype, DType gradient_dtype,
                                    std::int64_t ranks, Sharding sharding, double busbw, double compute_seconds);

}  // namespace flopscope
