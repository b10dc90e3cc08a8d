// collectives/<variant>/<dtype>/<device>/n=<elements>/coll=<collective>[/op=<op>]/place=<out|in>/ranks=<n>:
// one collective of n elements (nccl-tests' count: all_gather's gathered output, reduce_scatter's
// input, all_to_all's send buffer; lib/comm.hpp's Note [algbw and busbw]) over the ranks that
// mpirun started:
//   mpi    MPI on the CPU (ranks = processes: mpirun --allow-run-as-root -np 2 --mca btl self,vader)
//   nccl   NCCL on the GPUs, one rank per GPU: under mpirun one process per GPU, the communicator
//          bootstrapped through MPI; outside mpirun (or built without MPI: the GPU bundle) this one
//          process drives every visible GPU (ncclCommInitAll, nccl-tests' -g), the rank count the
//          GPUs'. With one GPU, send_recv and the collectives whose busbw factor is 0 (nothing
//          crosses a link) are named skips; broadcast and reduce run (NCCL's one-rank copy).
// Counters: bytes_per_second = algbw = bytes / time; busbw = algbw x factor(collective, ranks);
// wrong = elements that differ from the expected result after the validated run (a case with any
// is failed, never timed). Time = the slowest rank's: every iteration starts after a barrier and
// reports the maximum over the ranks (MPI_Allreduce, MPI_MAX) as Google Benchmark's manual time,
// so every rank makes the same iteration-count decisions. Only rank 0 reports and writes the
// JSON, rewritten whole after every case (a rank that dies loses only the case in flight); a case
// that takes longer than FLOPSCOPE_COLLECTIVE_TIMEOUT_S (default 120 s) ends the run with one line
// instead of hanging. With one MPI rank every mpi case is a named skip (a collective needs 2); a
// size a split collective cannot divide by the ranks is a named skip; a build without MPI skips
// the mpi cases, one without NCCL (no CUDA) has no GPU cases.
//
// Each rank's input is small integers (1..3, or 1..2 for prod) that depend on the rank and the
// index, so every sum, product, max and min is exact in every dtype and the expected result is
// computed on each rank for the part it holds.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <thread>
#include <tuple>
#include <variant>
#include <unistd.h>
#include <vector>

#include "flopscope/comm.hpp"
#include "flopscope/numerics.hpp"
#include "harness/context.hpp"
#include "harness/describe.hpp"
#include "harness/harness.hpp"
#include "harness/json_file.hpp"
#include "harness/report.hpp"

#ifdef FLOPSCOPE_HAVE_MPI
#include <mpi.h>
#endif
#ifdef FLOPSCOPE_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

using namespace flopscope;
using namespace flopscope::bench;

namespace {

constexpr std::array kOps = {"sum", "prod", "max", "min"};

// How many ranks this run has (1 outside mpirun or without MPI) and which this process is.
int g_rank = 0, g_ranks = 1;

// ---- the case as data -----------------------------------------------------------------------

struct Spec {
  Collective collective = Collective::all_reduce;
  std::string op;  // sum, prod, max, min (reducing collectives)
  bool in_place = false;
  std::int64_t count = 0;
  DType dtype = DType::f32;
  std::string backend;  // mpi, nccl
};

// The rank's input element i.
double input_value(const Spec& s, int rank, std::int64_t i) {
  return s.op == "prod" ? double(1 + (i + rank) % 2) : double(1 + (i + rank) % 3);
}

double reduce_values(const Spec& s, std::int64_t i, int ranks) {
  double acc = input_value(s, 0, i);
  for (int r = 1; r < ranks; ++r) {
    const double v = input_value(s, r, i);
    if (s.op == "sum") acc += v;
    else if (s.op == "prod") acc *= v;
    else if (s.op == "max") acc = std::max(acc, v);
    else acc = std::min(acc, v);
  }
  return acc;
}

[[maybe_unused]] void store(void* data, DType dtype, std::int64_t i, double value) {
  const std::uint64_t bits = encode_bits(dtype, value);
  std::memcpy(static_cast<char*>(data) + i * std::int64_t(dtype_size(dtype)), &bits, dtype_size(dtype));
}

[[maybe_unused]] double load(const void* data, DType dtype, std::int64_t i) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const char*>(data) + i * std::int64_t(dtype_size(dtype)), dtype_size(dtype));
  return decode_bits(dtype, bits);
}

// One rank's buffers: where its input goes and where its result is read (element offsets into
// one or two allocations), nccl-tests' in-place layouts.
struct Buffers {
  std::int64_t send_elements = 0, recv_elements = 0;
  bool same = false;                  // in place: one allocation of recv_elements
  std::int64_t input_offset = 0;      // in place: where the input starts in the one buffer
  std::int64_t input_elements = 0;
  std::int64_t result_offset = 0, result_elements = 0;
  bool checked = true;                // reduce: only the root has a result
};

[[maybe_unused]] Buffers buffers_of(const Spec& s, int rank, int ranks) {
  const CollectiveLayout layout = collective_layout(s.collective, s.count, ranks);
  Buffers b{.send_elements = layout.send_elements, .recv_elements = layout.recv_elements, .same = s.in_place};
  b.input_elements = layout.send_elements;
  b.result_elements = layout.recv_elements;
  const std::int64_t piece = s.count / ranks;
  if (s.in_place) {
    b.recv_elements = std::max(layout.send_elements, layout.recv_elements);
    if (s.collective == Collective::all_gather) b.input_offset = rank * piece;
    // NCCL's in-place reduce-scatter leaves the rank's piece where it was; MPI's at the start.
    if (s.collective == Collective::reduce_scatter && s.backend == "nccl") b.result_offset = rank * piece;
  }
  if (s.collective == Collective::reduce) b.checked = rank == 0;
  return b;
}

// The expected result element j on `rank`.
[[maybe_unused]] double expected_value(const Spec& s, int rank, int ranks, std::int64_t j) {
  const std::int64_t piece = s.count / ranks;
  switch (s.collective) {
    case Collective::all_reduce:
    case Collective::reduce: return reduce_values(s, j, ranks);
    case Collective::all_gather: return input_value(s, int(j / piece), j % piece);
    case Collective::reduce_scatter: return reduce_values(s, rank * piece + j, ranks);
    case Collective::broadcast: return input_value(s, 0, j);
    case Collective::all_to_all: return input_value(s, int(j / piece), rank * piece + j % piece);
    case Collective::send_recv: return input_value(s, (rank - 1 + ranks) % ranks, j);
  }
  return 0;
}

// nullopt, or why this backend cannot run the spec (the same answer on every rank).
std::optional<std::string> unsupported(const Spec& s) {
  const bool half = s.dtype == DType::f16 || s.dtype == DType::bf16;
  if (s.backend == "mpi" && collective_reduces(s.collective) && half)
    return "MPI has no " + std::string(dtype_name(s.dtype)) + " reduction";
  if (s.backend == "mpi" && s.collective == Collective::broadcast && !s.in_place)
    return "MPI_Bcast has one buffer: broadcast runs in place only";
  if (s.collective == Collective::send_recv && s.in_place) return "send_recv has no in-place form";
  if (s.backend == "nccl" && s.collective == Collective::all_to_all && s.in_place)
    return "NCCL has no in-place all_to_all";
  return std::nullopt;
}

// ---- the world: the ranks that mpirun started, or this process alone ----------------------------

#ifdef FLOPSCOPE_HAVE_MPI
// Whether MPI was started: only under a launcher (launched()); a process started alone never calls
// MPI, since Open MPI's singleton start needs its daemon (orted, from openmpi-bin) on PATH.
bool g_mpi = false;

bool launched() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(variable)) return true;
  return false;
}

// Whether `ok` holds on every rank (used where a rank's own failure must skip the case on all).
[[maybe_unused]] bool all_ranks(bool ok) {
  int value = ok;
  if (g_mpi) MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return value != 0;
}
double slowest_rank(double seconds) {
  if (g_mpi) MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}
std::int64_t over_ranks(std::int64_t count) {
  if (g_mpi) MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return count;
}
void barrier() {
  if (g_mpi) MPI_Barrier(MPI_COMM_WORLD);
}
#else
[[maybe_unused]] bool all_ranks(bool ok) { return ok; }
double slowest_rank(double seconds) { return seconds; }
std::int64_t over_ranks(std::int64_t count) { return count; }
void barrier() {}
#endif

// ---- backends ---------------------------------------------------------------------------------

// One collective on this rank's buffers (device pointers for NCCL), and the wait for its end.
using Call = std::function<void()>;

#ifdef FLOPSCOPE_HAVE_MPI
MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f64: return MPI_DOUBLE;
    case DType::f32: return MPI_FLOAT;
    default: return MPI_BYTE;  // moved as bytes (counts scaled), never reduced (unsupported())
  }
}

MPI_Op mpi_op(const std::string& op) {
  if (op == "prod") return MPI_PROD;
  if (op == "max") return MPI_MAX;
  if (op == "min") return MPI_MIN;
  return MPI_SUM;
}

Call mpi_call(const Spec& s, char* send, char* recv, int rank, int ranks) {
  MPI_Datatype type = mpi_type(s.dtype);
  const int scale = type == MPI_BYTE ? int(dtype_size(s.dtype)) : 1;
  const int piece = int(s.count / ranks * scale), count = int(s.count * scale);
  const MPI_Op op = mpi_op(s.op);
  const void* in = s.in_place ? MPI_IN_PLACE : send;
  switch (s.collective) {
    case Collective::all_reduce: return [=] { MPI_Allreduce(in, recv, count, type, op, MPI_COMM_WORLD); };
    case Collective::all_gather:
      return [=] { MPI_Allgather(s.in_place ? MPI_IN_PLACE : send, piece, type, recv, piece, type, MPI_COMM_WORLD); };
    case Collective::reduce_scatter:
      return [=] { MPI_Reduce_scatter_block(s.in_place ? MPI_IN_PLACE : send, recv, piece, type, op, MPI_COMM_WORLD); };
    case Collective::broadcast: return [=] { MPI_Bcast(recv, count, type, 0, MPI_COMM_WORLD); };
    case Collective::reduce:
      return [=] {
        MPI_Reduce(s.in_place && rank == 0 ? MPI_IN_PLACE : (s.in_place ? recv : send), recv, count, type, op, 0,
                   MPI_COMM_WORLD);
      };
    case Collective::all_to_all:
      return [=] { MPI_Alltoall(s.in_place ? MPI_IN_PLACE : send, piece, type, recv, piece, type, MPI_COMM_WORLD); };
    case Collective::send_recv:
      return [=] {
        MPI_Sendrecv(send, count, type, (rank + 1) % ranks, 0, recv, count, type, (rank - 1 + ranks) % ranks, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      };
  }
  return [] {};
}
#endif

#ifdef FLOPSCOPE_HAVE_NCCL
int visible_gpus() {
  static const int gpus = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
  }();
  return gpus;
}

// One NCCL rank that this process drives: its GPU, communicator and stream.
struct NcclRank {
  int rank = 0, gpu = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

struct Nccl {
  std::vector<NcclRank> local;  // under mpirun this process's one rank; alone every GPU's
  std::optional<std::string> unavailable;
};

// The communicator's ranks: mpirun's, or outside it this process's every visible GPU.
int nccl_ranks() { return g_ranks > 1 ? g_ranks : std::max(1, visible_gpus()); }

// The communicators, made once: under mpirun rank r on GPU (local rank), the unique id from rank 0
// through MPI; alone, ncclCommInitAll over every visible GPU.
Nccl& nccl() {
  static Nccl n = [] {
    Nccl made;
    const int gpus = visible_gpus();
    if (g_ranks > 1) {
#ifdef FLOPSCOPE_HAVE_MPI
      int local_ranks = 1, local_rank = 0;
      MPI_Comm local;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
      MPI_Comm_size(local, &local_ranks);
      MPI_Comm_rank(local, &local_rank);
      MPI_Comm_free(&local);
      int fewest = gpus - local_ranks;
      MPI_Allreduce(MPI_IN_PLACE, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (fewest < 0) {
        made.unavailable = "one rank per GPU: " + std::to_string(local_ranks) + " ranks on a machine with " +
                           std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s");
        return made;
      }
      NcclRank mine{.rank = g_rank, .gpu = local_rank};
      cudaSetDevice(mine.gpu);
      ncclUniqueId id;
      if (g_rank == 0) ncclGetUniqueId(&id);
      MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
      const bool ok = ncclCommInitRank(&mine.comm, g_ranks, id, g_rank) == ncclSuccess &&
                      cudaStreamCreate(&mine.stream) == cudaSuccess;
      if (!all_ranks(ok)) made.unavailable = "ncclCommInitRank failed on a rank";
      else made.local.push_back(mine);
#endif
      return made;
    }
    if (gpus < 1) {
      made.unavailable = "no CUDA GPU visible";
      return made;
    }
    std::vector<ncclComm_t> comms(std::size_t(gpus), nullptr);
    std::vector<int> list(static_cast<std::size_t>(gpus));
    std::iota(list.begin(), list.end(), 0);
    if (const ncclResult_t result = ncclCommInitAll(comms.data(), gpus, list.data()); result != ncclSuccess) {
      made.unavailable = "ncclCommInitAll over " + std::to_string(gpus) + " GPUs failed: " + ncclGetErrorString(result);
      return made;
    }
    for (int gpu = 0; gpu < gpus; ++gpu) {
      NcclRank rank{.rank = gpu, .gpu = gpu, .comm = comms[std::size_t(gpu)]};
      if (cudaSetDevice(gpu) != cudaSuccess || cudaStreamCreate(&rank.stream) != cudaSuccess) {
        made.unavailable = "cudaStreamCreate failed on GPU " + std::to_string(gpu);
        made.local.clear();
        return made;
      }
      made.local.push_back(rank);
    }
    return made;
  }();
  return n;
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f64: return ncclFloat64;
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    default: return ncclUint8;
  }
}

ncclRedOp_t nccl_op(const std::string& op) {
  if (op == "prod") return ncclProd;
  if (op == "max") return ncclMax;
  if (op == "min") return ncclMin;
  return ncclSum;
}

// Queues one rank's part of the collective on its stream (inside the caller's group).
void nccl_issue(const Spec& s, const NcclRank& r, char* send, char* recv, int ranks) {
  const ncclDataType_t type = nccl_type(s.dtype);
  const std::size_t size = dtype_size(s.dtype), count = std::size_t(s.count), piece = count / std::size_t(ranks);
  const ncclRedOp_t op = nccl_op(s.op);
  char* in = s.in_place ? recv : send;
  switch (s.collective) {
    case Collective::all_reduce: ncclAllReduce(in, recv, count, type, op, r.comm, r.stream); return;
    case Collective::all_gather:
      ncclAllGather(s.in_place ? recv + std::size_t(r.rank) * piece * size : send, recv, piece, type, r.comm, r.stream);
      return;
    case Collective::reduce_scatter:
      ncclReduceScatter(in, s.in_place ? recv + std::size_t(r.rank) * piece * size : recv, piece, type, op, r.comm,
                        r.stream);
      return;
    case Collective::broadcast: ncclBroadcast(in, recv, count, type, 0, r.comm, r.stream); return;
    case Collective::reduce: ncclReduce(in, recv, count, type, op, 0, r.comm, r.stream); return;
    case Collective::all_to_all:
      for (int peer = 0; peer < ranks; ++peer) {
        ncclSend(send + std::size_t(peer) * piece * size, piece, type, peer, r.comm, r.stream);
        ncclRecv(recv + std::size_t(peer) * piece * size, piece, type, peer, r.comm, r.stream);
      }
      return;
    case Collective::send_recv:
      ncclSend(send, count, type, (r.rank + 1) % ranks, r.comm, r.stream);
      ncclRecv(recv, count, type, (r.rank - 1 + ranks) % ranks, r.comm, r.stream);
      return;
  }
}
#endif

// ---- running a case on every rank -------------------------------------------------------------

std::atomic<double> g_deadline{0};  // steady-clock seconds; 0: no case in flight
std::string g_case_in_flight;
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Ends the run with one line when a case outlives the timeout (a rank died or hangs): mpirun then
// stops the other ranks; rank 0's JSON holds every finished case.
[[maybe_unused]] void start_watchdog() {
  std::thread([] {
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const double deadline = g_deadline.load();
      if (deadline > 0 && now_seconds() > deadline) {
        std::fprintf(stderr, "bench_collectives: rank %d: %s did not finish within the timeout "
                             "(FLOPSCOPE_COLLECTIVE_TIMEOUT_S): a rank died or hangs; stopping\n",
                     g_rank, g_case_in_flight.c_str());
        std::fflush(stderr);
        _exit(3);
      }
    }
  }).detach();
}

[[maybe_unused]] Spec spec_of(const Case& c) {
  Spec s;
  s.backend = c.name.variant;
  s.dtype = *parse_dtype(c.name.dtype);
  s.count = c.name.dim("n");
  for (const auto& [key, value] : c.name.extras) {
    if (key == "coll") s.collective = *parse_collective(value);
    if (key == "op") s.op = value;
    if (key == "place") s.in_place = value == "in";
  }
  return s;
}

// Test hooks: FLOPSCOPE_COLLECTIVES_DIE=<rank>:<case number> ends that rank at the start of that
// case (counted from 0 in registration order), as a crashed rank would; _STALL=<rank>:<case>
// makes it wait forever there, as a hung one would (the watchdog must end the run).
bool hook_matches(const char* variable, int case_number) {
  const char* value = std::getenv(variable);
  int rank = -1, number = -1;
  return value && std::sscanf(value, "%d:%d", &rank, &number) == 2 && rank == g_rank && number == case_number;
}

void maybe_die(int case_number) {
  if (hook_matches("FLOPSCOPE_COLLECTIVES_DIE", case_number)) _exit(1);
  if (hook_matches("FLOPSCOPE_COLLECTIVES_STALL", case_number))
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// The ranks of a backend's collectives: mpi: the processes mpirun started; nccl: those, or the
// GPUs of this one process outside mpirun.
int ranks_of(const std::string& backend) {
#ifdef FLOPSCOPE_HAVE_NCCL
  if (backend == "nccl") return nccl_ranks();
#endif
  return backend == "mpi" ? g_ranks : 1;
}

// One rank's part that this process holds: its host buffers (MPI's operands; NCCL's staging) and,
// for NCCL, its device buffers.
struct Part {
  int rank = 0;
  Buffers b;
  std::vector<char> host_send, host_recv;
  char *device_send = nullptr, *device_recv = nullptr;
  Part() = default;
  Part(const Part&) = delete;
  Part& operator=(const Part&) = delete;
  ~Part() {
#ifdef FLOPSCOPE_HAVE_NCCL
    cudaFree(device_send), cudaFree(device_recv);
#endif
  }
};

std::unique_ptr<Part> make_part(const Spec& s, int rank, int ranks) {
  auto p = std::make_unique<Part>();
  p->rank = rank;
  p->b = buffers_of(s, rank, ranks);
  const std::size_t size = dtype_size(s.dtype);
  p->host_send.resize(std::size_t(p->b.same ? 0 : p->b.send_elements) * size);
  p->host_recv.resize(std::size_t(p->b.recv_elements) * size);
  char* input = p->b.same ? p->host_recv.data() + p->b.input_offset * std::int64_t(size) : p->host_send.data();
  std::memset(p->host_recv.data(), 0xA5, p->host_recv.size());
  // The broadcast's root holds the data (in place: in the one buffer).
  if (s.collective != Collective::broadcast || rank == 0)
    for (std::int64_t i = 0; i < p->b.input_elements; ++i) store(input, s.dtype, i, input_value(s, rank, i));
  return p;
}

using Parts = std::vector<std::unique_ptr<Part>>;

// The collective over this process's parts, or why it cannot run (the same answer on every rank).
std::variant<Call, std::string> make_call(const Spec& s, const Parts& parts, int ranks) {
  if (s.backend == "mpi") {
#ifdef FLOPSCOPE_HAVE_MPI
    return mpi_call(s, parts[0]->host_send.data(), parts[0]->host_recv.data(), parts[0]->rank, ranks);
#endif
  }
#ifdef FLOPSCOPE_HAVE_NCCL
  if (s.backend == "nccl") {
    bool ok = true;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Part* p = parts[i].get();
      ok = ok && cudaSetDevice(nccl().local[i].gpu) == cudaSuccess &&
           cudaMalloc(&p->device_recv, p->host_recv.size()) == cudaSuccess &&
           (p->b.same || cudaMalloc(&p->device_send, p->host_send.size()) == cudaSuccess) &&
           cudaMemcpy(p->device_recv, p->host_recv.data(), p->host_recv.size(), cudaMemcpyHostToDevice) == cudaSuccess &&
           (p->b.same ||
            cudaMemcpy(p->device_send, p->host_send.data(), p->host_send.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    }
    if (!all_ranks(ok)) return std::string("cudaMalloc/cudaMemcpy of the buffers failed on a rank");
    std::vector<std::tuple<NcclRank, char*, char*>> issued;
    for (std::size_t i = 0; i < parts.size(); ++i)
      issued.emplace_back(nccl().local[i], parts[i]->device_send, parts[i]->device_recv);
    return Call([s, issued, ranks] {
      ncclGroupStart();
      for (const auto& [r, send, recv] : issued) nccl_issue(s, r, send, recv, ranks);
      ncclGroupEnd();
      for (const auto& [r, send, recv] : issued) cudaStreamSynchronize(r.stream);
    });
  }
#endif
  (void)parts, (void)ranks;
  return s.backend + ": not built";
}

// The case set up last: its buffers and call, validated. Google Benchmark runs a case's function
// several times (its iteration-count trials, the warm-up), and each run used to set the case up
// and check it again: at 64 MiB that was 1.7 s a case for 0.05 s timed, half of the default
// suite's 44 s (Xeon VM, 2026-12-06). Kept until the next case is set up; every rank runs the
// same sequence, so every rank keeps the same case.
struct Prepared {
  int case_number = -1;
  Parts parts;
  Call call;
};
Prepared g_prepared;

// Why a case does not run: skipped (it cannot run here) or failed (it ran wrong).
struct Refusal {
  bool skipped;
  std::string why;
};

// Sets up and checks the case on every rank into g_prepared, or says why it does not run.
std::optional<Refusal> prepare(benchmark::State& state, const Spec& s, int ranks, int case_number) {
  g_prepared = {};  // the last case's buffers go first
  // This process's ranks: its own (MPI; NCCL under mpirun) or every GPU's (NCCL alone).
  std::vector<int> mine = {g_rank};
#ifdef FLOPSCOPE_HAVE_NCCL
  if (s.backend == "nccl") {
    if (nccl().unavailable) return Refusal{true, *nccl().unavailable};
    mine.clear();
    for (const NcclRank& r : nccl().local) mine.push_back(r.rank);
  }
#endif
  Parts parts;
  for (int rank : mine) parts.push_back(make_part(s, rank, ranks));
  auto made = make_call(s, parts, ranks);
  if (auto* why = std::get_if<std::string>(&made)) return Refusal{true, *why};
  const Call call = std::get<Call>(made);
  call();
#ifdef FLOPSCOPE_HAVE_NCCL
  if (s.backend == "nccl")
    for (std::size_t i = 0; i < parts.size(); ++i) {
      cudaSetDevice(nccl().local[i].gpu);
      cudaMemcpy(parts[i]->host_recv.data(), parts[i]->device_recv, parts[i]->host_recv.size(), cudaMemcpyDeviceToHost);
    }
#endif
  // A test hook: FLOPSCOPE_COLLECTIVES_CORRUPT=<rank> changes that rank's first result element,
  // as a broken transport would (the case must then fail with #wrong = 1).
  const char* corrupt = std::getenv("FLOPSCOPE_COLLECTIVES_CORRUPT");
  // #wrong over every rank's result.
  std::int64_t wrong = 0;
  for (auto& p : parts) {
    if (!p->b.checked) continue;
    if (corrupt && std::atoi(corrupt) == p->rank) store(p->host_recv.data(), s.dtype, p->b.result_offset, 1000);
    for (std::int64_t j = 0; j < p->b.result_elements; ++j)
      wrong += load(p->host_recv.data(), s.dtype, p->b.result_offset + j) != expected_value(s, p->rank, ranks, j);
  }
  wrong = over_ranks(wrong);
  if (wrong > 0) {
    state.counters["wrong"] = double(wrong);
    return Refusal{false, s.backend + ": " + std::to_string(wrong) + " elements differ from the expected result"};
  }
  g_prepared = {case_number, std::move(parts), call};
  return std::nullopt;
}

void run_collective(benchmark::State& state, const DeviceContext& device, const Case& c, int case_number) {
  maybe_die(case_number);
  if (device.unavailable) return skip(state, *device.unavailable);
  if (c.skip) return skip(state, *c.skip);
  const Spec s = spec_of(c);
  const int ranks = ranks_of(s.backend);
  if (g_prepared.case_number != case_number)
    if (auto refused = prepare(state, s, ranks, case_number))
      return refused->skipped ? skip(state, refused->why) : fail(state, refused->why);
  const Call call = g_prepared.call;
  for (auto _ : state) {
    barrier();
    const auto start = std::chrono::steady_clock::now();
    call();
    state.SetIterationTime(slowest_rank(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  }
  set_counters(state, device, c, {{"wrong", 0}, {"ranks", double(ranks)}});
  const double factor = bus_bandwidth_factor(s.collective, ranks);
  using benchmark::Counter;
  state.counters["algbw"] = Counter(double(c.cost.bytes), Counter::kIsIterationInvariantRate);
  state.counters["busbw"] = Counter(double(c.cost.bytes) * factor, Counter::kIsIterationInvariantRate);
  state.counters["bus_factor"] = factor;
}

// ---- the family -------------------------------------------------------------------------------

std::vector<AxisValue> words(std::initializer_list<const char*> list) {
  std::vector<AxisValue> values;
  for (const char* w : list) values.emplace_back(std::string(w));
  return values;
}

// 4 KiB .. 64 MiB in x4 steps on the CPU: from latency- to bandwidth-bound (the 64 MiB of
// torch.distributed's gloo figure in the issue); on GPUs on to 256 MiB, where NVLink's busbw levels.
std::vector<AxisValue> default_counts(const DeviceContext& device, DType dtype) {
  std::vector<AxisValue> counts;
  const std::int64_t largest = std::int64_t{device.device.is_cpu() ? 64 : 256} << 20;
  for (std::int64_t bytes = 4096; bytes <= largest; bytes *= 4)
    counts.emplace_back(std::vector{bytes / std::int64_t(dtype_size(dtype))});
  return counts;
}

std::vector<std::string> collective_names() {
  std::vector<std::string> names;
  for (Collective c : kAllCollectives) names.emplace_back(collective_name(c));
  return names;
}

// nullopt, or why `ranks` ranks of the backend cannot run the spec: a build without the backend;
// one MPI rank (outside mpirun); one GPU, where send_recv has no peer and a collective whose busbw
// factor is 0 moves nothing across a link (broadcast and reduce run: NCCL's one-rank copy).
std::optional<std::string> one_rank_problem(const Spec& s, int ranks) {
  if (s.backend == "mpi") {
#ifndef FLOPSCOPE_HAVE_MPI
    return "built without MPI (install libopenmpi-dev and reconfigure: scripts/setup.sh)";
#endif
    if (ranks < 2) return "needs 2 ranks, this run has 1 (start it under mpirun -np 2)";
    return std::nullopt;
  }
#ifndef FLOPSCOPE_HAVE_NCCL
  return "built without NCCL (it comes with the CUDA toolkit: a build with CUDA links it)";
#endif
  if (ranks >= 2) return std::nullopt;
  if (s.collective == Collective::send_recv) return "send_recv needs 2 GPUs (a peer), this machine shows 1";
  if (bus_bandwidth_factor(s.collective, ranks) == 0)
    return "needs 2 GPUs: with 1, " + std::string(collective_name(s.collective)) +
           " moves nothing across a link (busbw factor 0)";
  return std::nullopt;
}

std::optional<Case> build(const Point& p) {
  Spec s;
  s.backend = p.variant;
  s.collective = *parse_collective(p.choice("coll"));
  s.in_place = p.choice("place") == "in";
  s.count = p.integer("n");
  s.dtype = p.dtype;
  if (collective_reduces(s.collective)) s.op = p.choice("op");
  std::vector<std::pair<std::string, std::string>> extras = {{"coll", std::string(collective_name(s.collective))}};
  if (!s.op.empty()) extras.emplace_back("op", s.op);
  extras.emplace_back("place", s.in_place ? "in" : "out");
  const int ranks = ranks_of(s.backend);
  extras.emplace_back("ranks", std::to_string(ranks));
  Case c;
  c.name = {"collectives", p.variant, std::string(dtype_name(p.dtype)), p.device->device.str(), {{"n", s.count}}, extras};
  c.bound = Bound::memory;
  if (auto problem = layout_problem(s.collective, s.count, ranks)) {
    c.skip = *problem;
    return c;
  }
  c.cost = collective_cost(s.collective, s.count, s.dtype, ranks);
  c.skip = one_rank_problem(s, ranks);
  if (!c.skip) c.skip = unsupported(s);
  return c;
}

Family collectives_family() {
  return Family{
      .binary = "bench_collectives",
      .summary = "Collectives over MPI (CPU ranks, under mpirun) and NCCL (one rank per GPU): algbw, busbw, #wrong.",
      .dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16},
      .default_dtypes = {DType::f32},
      .axes = {{.name = "coll", .flag = "collectives", .kind = Axis::Kind::choices, .help = "collectives",
                .choices = collective_names(),
                .defaults = [](const DeviceContext&, DType) {
                  std::vector<AxisValue> all;
                  for (const auto& n : collective_names()) all.emplace_back(n);
                  return all;
                }},
               {.name = "op", .flag = "ops", .kind = Axis::Kind::choices, .help = "reductions",
                .choices = {kOps.begin(), kOps.end()},
                .defaults = [](const DeviceContext&, DType) { return words({"sum"}); }},
               {.name = "place", .flag = "placements", .kind = Axis::Kind::choices,
                .help = "out (separate buffers) or in (in place)", .choices = {"out", "in"},
                .defaults = [](const DeviceContext&, DType) { return words({"out", "in"}); }},
               {.name = "n", .flag = "sizes", .help = "element counts (nccl-tests' count)", .defaults = default_counts}},
      .benches = {{.name = "collectives",
                   .variants = [](Device::Kind kind) {
                     return kind == Device::Kind::cpu
                                ? std::vector<VariantRow>{{"mpi", "the MPI library's collective", kernels::Role::vendor}}
                                : std::vector<VariantRow>{{"nccl", "NCCL's collective, one rank per GPU", kernels::Role::vendor}};
                   },
                   .axes = {"coll", "op", "place", "n"},
                   .build = build}},
      // default: every collective, 4 KiB to 64 MiB, one repetition of 0.05 s, no warm-up run: the
      // case's set-up runs it once (its validated call) and Google Benchmark's iteration-count
      // trials run it again before the timed run. Each timed iteration also costs a barrier and an
      // all-reduce of its time over the ranks, so each untimed second is dear: with 0.02 s of
      // warm-up the sweep took 21.4 s here, without 17.5 s, busbw per size within noise (median
      // ratios 1.01-1.08, one repetition each; Xeon VM, 2026-12-06).
      .suites = {{"default", {"--devices=cpu", "--benchmark_min_time=0.05", "--benchmark_min_warmup_time=0"}},
                 {"quick",
                  {"--devices=cpu", "--collectives=all_reduce,all_gather,send_recv", "--sizes=1Ki,1Mi",
                   "--placements=out"}},
                 // bf16 gradients from 1 MiB to 256 MiB (gpu_check.sh --plan: within its budget;
                 // on one GPU most are named skips, on eight each is milliseconds).
                 {"gpu", {"--devices=cuda:0", "--dtypes=bf16", "--placements=out", "--sizes=512Ki,16Mi,128Mi"}}},
  };
}

// Google Benchmark's console table without its context block (the device lines are printed
// instead, as every bench binary does).
class ConsoleTable : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;
  bool ReportContext(const Context& context) override {
    name_field_width_ = context.name_field_width;
    return true;
  }
};

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  std::string value;
  for (const auto& arg : args)
    if (arg.rfind(flag + "=", 0) == 0) value = arg.substr(flag.size() + 1);
  return value;
}

// The harness's flags and reporting, with every rank running every case (rank 0 reports).
int run_collectives(int argc, char** argv, const Family& family) {
  Selection selection = parse_flags(argc, argv, family);
  const std::string out = flag_value(selection.benchmark_args, "--benchmark_out");
  if (g_rank == 0 && !out.empty() && !std::ofstream(out, std::ios::app))
    usage_error(family.binary, "cannot write --benchmark_out=" + out);
  const char* warmup = std::getenv("FLOPSCOPE_WARMUP_S");
  std::vector<DeviceContext> devices;
  for (const Device& device : selection.devices)
    devices.push_back(device.is_cpu() ? probe_cpu(warmup ? std::atof(warmup) : 0.2) : probe_cuda(device));
  std::vector<std::pair<const DeviceContext*, Case>> cases;
  try {
    cases = expand(family, selection, devices);
  } catch (const std::exception& error) {
    usage_error(family.binary, error.what());
  }
  if (cases.empty()) usage_error(family.binary, "no case selected (check --variants, --dtypes and --devices)");
  if (selection.describe) {
    if (g_rank == 0) std::printf("%s\n", describe_json(family, selection, devices, cases).dump(1).c_str());
    return 0;
  }
  const std::string context = context_json(family.binary, selection, devices, variants_json(family, devices, cases),
                                           cases_json(cases));
  int number = 0;
  for (auto& [device, c] : cases) {
    auto shared = std::make_shared<const Case>(std::move(c));
    const DeviceContext* ctx = device;
    const int case_number = number++;
    benchmark::RegisterBenchmark(shared->name.str().c_str(),
                                 [shared, ctx, case_number](benchmark::State& state) {
                                   g_case_in_flight = shared->name.str();
                                   const char* limit = std::getenv("FLOPSCOPE_COLLECTIVE_TIMEOUT_S");
                                   g_deadline = now_seconds() + (limit ? std::atof(limit) : 120.0);
                                   try {
                                     run_collective(state, *ctx, *shared, case_number);
                                   } catch (const std::exception& error) {
                                     fail(state, shared->name.variant + ": " + error.what());
                                   }
                                   g_deadline = 0;
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  // Every rank runs the same cases with the same flags; only rank 0 reports and writes the file.
  std::vector<std::string> kept;
  for (const auto& arg : selection.benchmark_args)
    if (arg.rfind("--benchmark_out", 0) != 0 || g_rank == 0) kept.push_back(arg);
  if (flag_value(kept, "--benchmark_min_warmup_time").empty()) kept.push_back("--benchmark_min_warmup_time=0.05");
  std::vector<char*> args;
  for (auto& arg : kept) args.push_back(arg.data());
  int benchmark_argc = int(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&benchmark_argc, args.data());
  benchmark::AddCustomContext("flopscope", context);
  benchmark::AddCustomContext("collectives_ranks", std::to_string(g_ranks));
  start_watchdog();
  int status = 0;
  if (g_rank == 0) {
    for (const auto& line : device_lines(devices)) std::fprintf(stderr, "%s: %s\n", family.binary.c_str(), line.c_str());
    std::fprintf(stderr, "%s: %d MPI rank%s\n", family.binary.c_str(), g_ranks, g_ranks == 1 ? "" : "s");
    ConsoleTable console(benchmark::ConsoleReporter::OO_Tabular);
    if (out.empty()) {
      benchmark::RunSpecifiedBenchmarks(&console);
    } else {
      WholeJsonFile file(out);  // rewritten whole after every case, as by every bench binary
      benchmark::RunSpecifiedBenchmarks(&console, &file);
      if (file.error()) {
        std::fprintf(stderr, "%s: %s\n", family.binary.c_str(), file.error()->c_str());
        status = 2;
      }
    }
  } else {
    NullReporter none;
    benchmark::RunSpecifiedBenchmarks(&none);
  }
  g_prepared = {};  // device buffers freed while CUDA is up
  benchmark::Shutdown();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef FLOPSCOPE_HAVE_MPI
  // Outside a launcher this process runs alone without MPI (--help, --describe, NCCL over this
  // machine's GPUs; its mpi cases are named skips), whether or not mpirun is installed.
  if (!launched()) return run_collectives(argc, argv, collectives_family());
  MPI_Init(&argc, &argv);
  g_mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
  const int code = run_collectives(argc, argv, collectives_family());
  MPI_Finalize();
  return code;
#else
  return run_collectives(argc, argv, collectives_family());
#endif
}
