#!/usr/bin/env python3
"""bench_collectives' 2-rank all-reduce beside a plain MPI_Allreduce loop (mpi_allreduce_loop) and,
where PyTorch is installed, torch.distributed's gloo (gloo_allreduce.py): the same f32 sizes, the
tools run alternately for --rounds rounds, the median busbw of each per size and the ratios.
  scripts/checks/collectives_beside.py [--rounds 3] [--sizes 1024,65536,1048576,16777216]
The table is printed and written to results/baselines/collectives-beside-<date>-<host>.md (--out-dir)
with the command, the host, the CPU and the load average at the start and end (a loaded machine
makes every column slower, the ratios less so: the tools alternate within each round).
"""
import argparse
import datetime
import json
import os
import socket
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_common import cpu_model  # noqa: E402
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "--mca", "btl", "self,vader"]


def lines_json(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def run_bench(bench, sizes):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        subprocess.run([*MPIRUN, str(bench), "--devices=cpu", "--collectives=all_reduce", "--ops=sum",
                        "--placements=out", "--dtypes=f32", "--sizes=" + ",".join(map(str, sizes)),
                        "--benchmark_min_time=0.2", f"--benchmark_out={out}"],
                       check=True, capture_output=True, timeout=600, env=dict(os.environ, FLOPSCOPE_WARMUP_S="0.05"))
        data = json.loads(out.read_text())
    return {int(b["run_name"].split("/")[4].split("=")[1]): b["busbw"] for b in data["benchmarks"]
            if not b.get("error_occurred")}


def run_lines(command):
    proc = subprocess.run(command, check=True, capture_output=True, text=True, timeout=600)
    return {row["n"]: row["busbw"] for row in lines_json(proc.stdout)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1024,65536,1048576,16777216")
    parser.add_argument("--build-dir", default=os.environ.get("FLOPSCOPE_BUILD_DIR", "build"))
    parser.add_argument("--out-dir", default=str(ROOT / "results" / "baselines"))
    args = parser.parse_args()
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    sizes = [int(s) for s in args.sizes.split(",")]
    bench = ROOT / args.build_dir / "bench" / "bench_collectives"
    loop = ROOT / args.build_dir / "bench" / "mpi_allreduce_loop"
    if not shutil.which("mpirun") or not bench.exists() or not loop.exists():
        print("collectives_beside: needs mpirun, bench_collectives and mpi_allreduce_loop (built with MPI)",
              file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
        tools = ["bench_collectives", "mpi_loop", "gloo"]
    except ImportError:
        tools = ["bench_collectives", "mpi_loop"]
    samples = {t: {n: [] for n in sizes} for t in tools}
    for _ in range(args.rounds):
        for tool in tools:
            if tool == "bench_collectives":
                got = run_bench(bench, sizes)
            elif tool == "mpi_loop":
                got = run_lines([*MPIRUN, str(loop), *map(str, sizes)])
            else:
                got = run_lines([sys.executable, str(ROOT / "scripts" / "checks" / "gloo_allreduce.py"), *map(str, sizes)])
            for n, busbw in got.items():
                samples[tool][n].append(busbw)
    lines = [f"# bench_collectives beside a plain MPI loop{' and gloo' if 'gloo' in tools else ''}", "",
             f"Command: `scripts/checks/collectives_beside.py --rounds {args.rounds} --sizes {args.sizes}`  ",
             f"Host: `{socket.gethostname()}`, {cpu_model()}, {os.cpu_count()} CPUs; {datetime.date.today()}; "
             f"load average {load_before} at the start, {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end.", "",
             "| f32 elements | bytes | " + " | ".join(f"{t} busbw GB/s" for t in tools) + " | bench / loop |" +
             (" bench / gloo |" if "gloo" in tools else ""),
             "|---" * (3 + len(tools) + ("gloo" in tools)) + "|"]
    for n in sizes:
        med = {t: statistics.median(samples[t][n]) for t in tools}
        row = [str(n), str(4 * n)] + [f"{med[t] / 1e9:.3g}" for t in tools] + [f"{med['bench_collectives'] / med['mpi_loop']:.2f}"]
        if "gloo" in tools:
            row.append(f"{med['bench_collectives'] / med['gloo']:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"Median busbw over {args.rounds} rounds, the tools alternating within each round; 2 ranks on "
              "shared memory (Open MPI btl self,vader; gloo over TCP on localhost); all_reduce sum, f32, out of "
              "place; busbw = algbw x 2(n-1)/n = algbw for 2 ranks. Every tool times each call as the slowest "
              "rank's, after a barrier."]
    if max(os.getloadavg()[0], float(load_before.split()[0])) >= (os.cpu_count() or 1):
        lines += ["", f"**The machine was loaded** (load average at or above its {os.cpu_count()} CPUs): 2 ranks "
                  "then wait for cores, so these figures measure the load more than the tools; the ratios alternate "
                  "within rounds but stay noisy. Redo on a quiet machine with the command above."]
    text = "\n".join(lines) + "\n"
    print(text)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"collectives-beside-{datetime.date.today()}-{socket.gethostname().split('.')[0]}.md"
    partial = target.with_name("." + target.name + ".partial")
    partial.write_text(text)
    os.replace(partial, target)
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
