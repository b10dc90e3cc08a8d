#!/usr/bin/env python3
"""torch.distributed's gloo all-reduce beside bench_collectives (optional: needs PyTorch).

Two processes on this machine (torch.multiprocessing, TCP store on localhost), f32 sum, out of
place as bench_collectives' mpi cases (each call reduces a fresh copy: gloo reduces in place, so
the copy is made outside the timed region). Per size: 5 warm-up calls, then calls until 0.2 s
(at least 10), each after a barrier, the time the slowest rank's. Prints one JSON line per size
with the fields of mpi_allreduce_loop: n, bytes, calls, seconds (mean), algbw, busbw.
  scripts/checks/gloo_allreduce.py [--ranks 2] 1024 1048576
"""
import argparse
import json
import os
import sys
import time


def worker(rank, ranks, sizes, port):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    torch.set_num_threads(1)
    for n in sizes:
        source = torch.ones(n, dtype=torch.float32)
        buffer = source.clone()

        def timed_call():
            buffer.copy_(source)
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buffer)
            seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
            return float(seconds)

        for _ in range(5):
            timed_call()
        total, calls = 0.0, 0
        while calls < 10 or total < 0.2:
            total += timed_call()
            calls += 1
        if rank == 0:
            mean = total / calls
            algbw = 4 * n / mean
            print(json.dumps({"n": n, "bytes": 4 * n, "calls": calls, "seconds": mean, "algbw": algbw,
                              "busbw": algbw * 2 * (ranks - 1) / ranks}), flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--port", type=int, default=29533)
    parser.add_argument("sizes", type=int, nargs="+", help="f32 element counts")
    args = parser.parse_args()
    if any(n < 1 for n in args.sizes):
        print("gloo_allreduce: sizes must be positive element counts", file=sys.stderr)
        return 2
    try:
        import torch.multiprocessing as mp
    except ImportError:
        print("gloo_allreduce: skipped: PyTorch is not installed", file=sys.stderr)
        return 0
    mp.spawn(worker, args=(args.ranks, args.sizes, args.port), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
