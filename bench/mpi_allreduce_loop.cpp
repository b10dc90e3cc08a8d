// The hand-written check beside bench_collectives: a plain MPI_Allreduce timing loop (f32, sum,
// out of place), no harness. Per size: 5 warm-up calls, then calls until 0.2 s have passed (at
// least 10), each after a barrier and timed as the slowest rank's (MPI_Allreduce of the time with
// MPI_MAX), as bench_collectives times them. Rank 0 prints one JSON line per size:
//   {"n": elements, "bytes": ..., "calls": ..., "seconds": mean, "algbw": ..., "busbw": ...}
//   mpirun --allow-run-as-root -np 2 --mca btl self,vader build/bench/mpi_allreduce_loop 1024 1048576
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (int a = 1; a < argc; ++a) {
    const long n = std::atol(argv[a]);
    if (n < 1) {
      if (rank == 0) std::fprintf(stderr, "mpi_allreduce_loop: '%s' is not a positive element count\n", argv[a]);
      MPI_Finalize();
      return 2;
    }
    std::vector<float> send(static_cast<std::size_t>(n), 1.0f), recv(static_cast<std::size_t>(n));
    auto timed_call = [&] {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = std::chrono::steady_clock::now();
      MPI_Allreduce(send.data(), recv.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return seconds;
    };
    for (int i = 0; i < 5; ++i) timed_call();
    double total = 0;
    long calls = 0;
    while (calls < 10 || total < 0.2) total += timed_call(), ++calls;  // the same total on every rank
    const double bytes = 4.0 * double(n), mean = total / double(calls), algbw = bytes / mean;
    if (rank == 0)
      std::printf("{\"n\": %ld, \"bytes\": %.0f, \"calls\": %ld, \"seconds\": %.9g, \"algbw\": %.6g, \"busbw\": %.6g}\n",
                  n, bytes, calls, mean, algbw, algbw * 2.0 * (ranks - 1) / ranks);
  }
  MPI_Finalize();
  return 0;
}
