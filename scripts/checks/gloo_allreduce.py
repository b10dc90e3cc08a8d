#!/usr/bin/env python3
"""torch.distributed's gloo all-reduce beside bench_collectives (optional: needs PyTorch).

Two processes on this machine (torch.multiprocessing, TCP store on localhost), f32 sum, out of
place as bench_collectives' mpi cases (each call reduces a fresh copy: gloo reduces in place, so
the copy is made outside the timed region). Each rank's input is bench_collectives' (1 + (i +
rank) % 3), and the first call's result is checked exactly (`wrong`: elements that differ, over
the ranks). Per size: 5 warm-up calls, then calls until 0.2 s (at least 10), each after a
barrier, the time the slowest rank's, as bench_collectives and mpi_allreduce_loop time them.

Two outputs:
  scripts/checks/gloo_allreduce.py [--ranks 2] 1024 1048576
      one JSON line per size with mpi_allreduce_loop's fields: n, bytes, calls, seconds (mean),
      algbw, busbw, wrong (scripts/checks/collectives_beside.py reads them)
  scripts/checks/gloo_allreduce.py --run-dir RUN_DIR
      the suite's (scripts/run_suite.py): the sizes of RUN_DIR/bench_collectives.json's f32 sum
      out-of-place all_reduce cases, written as RUN_DIR/torch_gloo.json in bench_collectives'
      Google Benchmark JSON (collectives/gloo/f32/cpu/n=N/coll=all_reduce/op=sum/place=out/ranks=2,
      role baseline; analysis/FORMAT.md); without PyTorch every case is a named skip there.
"""
import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path

OUT_NAME = "torch_gloo.json"
SKIP_NO_TORCH = "skipped: PyTorch is not installed (pip install -r analysis/requirements-torch.txt)"


def worker(rank, ranks, sizes, port, results):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ranks, timeout=datetime.timedelta(seconds=120))
    torch.set_num_threads(1)
    for n in sizes:
        index = torch.arange(n, dtype=torch.int64)
        source = (1 + (index + rank) % 3).to(torch.float32)
        expected = sum((1 + (index + r) % 3) for r in range(ranks)).to(torch.float32)
        buffer = source.clone()

        def timed_call():
            buffer.copy_(source)
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buffer)
            seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
            return float(seconds)

        timed_call()
        wrong = torch.tensor([int((buffer != expected).sum())], dtype=torch.int64)
        dist.all_reduce(wrong)
        for _ in range(4):
            timed_call()
        total, calls = 0.0, 0
        while calls < 10 or total < 0.2:
            total += timed_call()
            calls += 1
        if rank == 0:
            mean = total / calls
            algbw = 4 * n / mean
            row = {"n": n, "bytes": 4 * n, "calls": calls, "seconds": mean, "algbw": algbw,
                   "busbw": algbw * 2 * (ranks - 1) / ranks, "wrong": int(wrong)}
            if results is None:
                print(json.dumps(row), flush=True)
            else:
                results.put(row)
    dist.destroy_process_group()


def torch_version():
    """PyTorch's version where it is installed, else None."""
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def measure(sizes, ranks, port, collect):
    """Runs the workers; the rows rank 0 measured where `collect`, else they are printed."""
    import multiprocessing
    if not port:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    results = context.SimpleQueue() if collect else None
    workers = [context.Process(target=worker, args=(rank, ranks, sizes, port, results)) for rank in range(ranks)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    failed = [w.exitcode for w in workers if w.exitcode != 0]
    if failed:
        raise SystemExit(f"gloo_allreduce: a worker exited {failed[0]}")
    rows = []
    while collect and not results.empty():
        rows.append(results.get())
    return rows


def case_name(n, ranks):
    return f"collectives/gloo/f32/cpu/n={n}/coll=all_reduce/op=sum/place=out/ranks={ranks}"


def suite_sizes(collectives_json):
    """The element counts of bench_collectives' f32 sum out-of-place all_reduce cases (run or skipped)."""
    sizes = []
    for b in json.loads(collectives_json.read_text().replace(": NaN", ": null"))["benchmarks"]:
        parts = b.get("run_name", b["name"]).split("/")
        extras = dict(p.split("=", 1) for p in parts[5:] if "=" in p)
        if parts[2] == "f32" and extras.get("coll") == "all_reduce" and extras.get("op") == "sum" \
                and extras.get("place") == "out" and b.get("run_type", "iteration") == "iteration":
            n = int(parts[4].split("=")[1])
            if n not in sizes:
                sizes.append(n)
    return sizes


def entry(n, ranks, row=None, skip=None):
    name = case_name(n, ranks) + "/manual_time"
    common = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
              "threads": 1, "time_unit": "us"}
    if skip or row["wrong"]:
        message = skip or f"failed: gloo: {row['wrong']} elements differ from the expected result"
        return {**common, "iterations": 0, "real_time": 0, "cpu_time": 0, "error_occurred": True,
                "error_message": message, **({} if skip else {"wrong": row["wrong"]})}
    factor = 2 * (ranks - 1) / ranks
    return {**common, "iterations": row["calls"], "real_time": row["seconds"] * 1e6, "cpu_time": row["seconds"] * 1e6,
            "bytes": row["bytes"], "bytes_per_second": row["algbw"], "algbw": row["algbw"],
            "busbw": row["algbw"] * factor, "bus_factor": factor, "ranks": ranks, "wrong": 0}


def write_suite_file(run_dir, ranks, port):
    source = run_dir / "bench_collectives.json"
    if not source.exists():
        print(f"gloo_allreduce: skipped: {source} does not exist (bench_collectives did not finish)", file=sys.stderr)
        return 0
    sizes = suite_sizes(source)
    if not sizes:
        print(f"gloo_allreduce: skipped: {source} has no f32 sum out-of-place all_reduce case", file=sys.stderr)
        return 0
    version = torch_version()  # found without importing it here (seconds): only the workers do
    rows = {r["n"]: r for r in measure(sizes, ranks, port, collect=True)} if version else {}
    out = write_file(run_dir, sizes, ranks, rows, version)
    ran = sum(1 for n in sizes if n in rows)
    print(f"gloo_allreduce: {ran} of {len(sizes)} sizes ran into {out}" + ("" if version else f" ({SKIP_NO_TORCH})"),
          file=sys.stderr)
    return 0


def write_file(run_dir, sizes, ranks, rows, torch_version):
    """RUN_DIR/torch_gloo.json: a case per size, measured (rows[n]) or skipped (PyTorch missing)."""
    benchmarks = [entry(n, ranks, rows[n]) if n in rows else entry(n, ranks, skip=SKIP_NO_TORCH) for n in sizes]
    flopscope = {"schema": 2, "binary": "torch_gloo", "suite": "default",
                 "build": {"compiler": f"PyTorch {torch_version}" if torch_version else None, "build_type": None},
                 "run": {"argv": sys.argv, "hot": False},
                 "variants": [{"name": "gloo", "device": "cpu", "role": "baseline",
                               "description": "torch.distributed's gloo all_reduce (scripts/checks/gloo_allreduce.py)"}],
                 "cases": [{"name": case_name(n, ranks), "variant": "gloo", "role": "baseline", "dtype": "f32"}
                           for n in sizes]}
    context = {"date": datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(timespec="seconds"),
               "host_name": socket.gethostname(), "executable": sys.argv[0], "num_cpus": os.cpu_count(),
               "flopscope": json.dumps(flopscope)}
    out = Path(run_dir) / OUT_NAME
    partial = out.with_name(f".{OUT_NAME}.partial")
    partial.write_text(json.dumps({"context": context, "benchmarks": benchmarks}, indent=1))
    os.replace(partial, out)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--port", type=int, default=0, help="the TCP store's port (default: a free one)")
    parser.add_argument("--run-dir", type=Path, help="write RUN_DIR/torch_gloo.json for bench_collectives' sizes")
    parser.add_argument("sizes", type=int, nargs="*", help="f32 element counts")
    args = parser.parse_args()
    if args.ranks < 2:
        print("gloo_allreduce: --ranks must be at least 2", file=sys.stderr)
        return 2
    if args.run_dir is not None:
        if args.sizes or not args.run_dir.is_dir():
            print("gloo_allreduce: --run-dir takes an existing run directory and no sizes", file=sys.stderr)
            return 2
        return write_suite_file(args.run_dir, args.ranks, args.port)
    if not args.sizes or any(n < 1 for n in args.sizes):
        print("gloo_allreduce: sizes must be positive element counts", file=sys.stderr)
        return 2
    if torch_version() is None:
        print("gloo_allreduce: skipped: PyTorch is not installed", file=sys.stderr)
        return 0
    measure(args.sizes, args.ranks, args.port, collect=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
