#!/usr/bin/env python3
"""PyTorch beside a run: the one piece of code that times PyTorch for flopscope.

`torch_peer.py RUN_DIR` reads the planned cases of RUN_DIR's bench_matmul.json and
bench_strided.json (their context, analysis/FORMAT.md) and times PyTorch's own call for each
CPU case it has one for, once per case name:
  - matmul/<v>/{f32,bf16}/cpu/m=n=k/layout=NN (a square): torch.mm(a, b), inputs uniform [-1, 1);
  - strided/<v>/<dtype>/cpu/.../view=transpose|split_heads|merge_heads: y.copy_(view), y allocated
    once (as flopscope's destination is): `x.t()`, `x.permute(0, 2, 1, 3)`.
It writes RUN_DIR/torch_beside.json, Google Benchmark-shaped (FORMAT.md "torch_beside.json"):
the same case names with the variant `torch` (role `peer`), each repeated by the harness's
stopping rule (bench/harness/rounds.hpp): repetitions of at least 0.05 s in rounds interleaved
across the cases still open, at least 6, until the 95% order-statistic CI of the median is
within +-3% (analysis/flopscope_analysis/stats.py), at most 20; with the median and cv
aggregates. Threads: as many as the CPU
has cores (torch.set_num_threads), as flopscope's OpenMP. Where torch does not import it writes
nothing and prints one line saying why (exit 0).

Other scripts time PyTorch through measure(): scripts/checks/matmul_check.py and torch_beside.py.
Usage: python scripts/torch_peer.py RUN_DIR [--repetitions N (a fixed count instead)] [--min-time 0.05]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

NAME = re.compile(r"^(?P<family>[a-z0-9_]+)/(?P<variant>[a-z0-9_]+)/(?P<dtype>[a-z0-9_]+)/cpu/(?P<shape>[^/]+)(?P<extras>(/[^/]+)*)$")
BINARIES = ("bench_matmul", "bench_strided")
VIEWS = ("transpose", "split_heads", "merge_heads")
ELEMENT_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8}
# The stopping rule's numbers, as bench/harness/rounds.hpp's kMinRepetitions, kMaxRepetitions
# and kRuleMinTime.
MIN_REPETITIONS, MAX_REPETITIONS, MIN_TIME = 6, 20, 0.05


def _load_stats():
    """analysis' stats module, by path (this script runs in whatever Python has torch, where
    the analysis package need not be installed); it needs the standard library only."""
    path = Path(__file__).resolve().parents[1] / "analysis" / "flopscope_analysis" / "stats.py"
    spec = importlib.util.spec_from_file_location("flopscope_stats", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


stats = _load_stats()


def resolved(seconds: list[float]) -> bool:
    """Whether the stopping rule is met: at least MIN_REPETITIONS, and the 95% CI of the median
    within stats.RESOLVED_WITHIN of it (as the harness's MedianCI::resolved)."""
    if len(seconds) < MIN_REPETITIONS:
        return False
    ci = stats.median_ci(seconds)
    return ci is not None and ci.resolved


def peer_name(name: str) -> str | None:
    """The torch peer's name of a planned case that PyTorch has a call for, else None."""
    match = NAME.match(name)
    if not match or match["dtype"] not in ELEMENT_BYTES:
        return None
    shape = dict(kv.split("=") for kv in match["shape"].split(","))
    extras = dict(kv.split("=", 1) for kv in match["extras"].split("/")[1:])
    if match["family"] == "matmul":
        square = shape.keys() == {"m", "n", "k"} and len(set(shape.values())) == 1
        if not (square and extras == {"layout": "NN"} and match["dtype"] in ("f32", "bf16")):
            return None
    elif match["family"] != "strided" or extras.get("view") not in VIEWS or len(extras) != 1:
        return None
    return name.replace(f"/{match['variant']}/", "/torch/", 1)


def planned_peers(run_dir: Path) -> list[str]:
    names: list[str] = []
    for binary in BINARIES:
        path = run_dir / f"{binary}.json"
        if not path.exists():
            continue
        context = json.loads(json.loads(path.read_text())["context"]["flopscope"])
        for case in context.get("cases") or []:
            peer = peer_name(case["name"]) if not case.get("skip") else None
            if peer and peer not in names:
                names.append(peer)
    return names


def setup(torch, name: str):
    """(call, flops, bytes, elements) for a torch peer case name."""
    match = NAME.match(name)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}[match["dtype"]]
    shape = {k: int(v) for k, v in (kv.split("=") for kv in match["shape"].split(","))}
    size = ELEMENT_BYTES[match["dtype"]]
    uniform = lambda *dims: (torch.rand(*dims) * 2 - 1).to(dtype)  # noqa: E731
    if match["family"] == "matmul":
        n = shape["m"]
        a, b = uniform(n, n), uniform(n, n)
        return (lambda: torch.mm(a, b)), 2.0 * n ** 3, 3.0 * n * n * size, None
    view = match["extras"].split("view=")[1]
    if view == "transpose":
        x = uniform(shape["m"], shape["n"])
        source = x.t()
    else:  # split_heads: (b, t, h, d) -> (b, h, t, d); merge_heads: (b, h, t, d) -> (b, t, h, d)
        dims = [shape[k] for k in (("b", "t", "h", "d") if view == "split_heads" else ("b", "h", "t", "d"))]
        source = uniform(*dims).permute(0, 2, 1, 3)
    y = torch.empty(source.shape, dtype=dtype)
    elements = source.numel()
    return (lambda: y.copy_(source)), 0.0, 2.0 * elements * size, elements


def repeat(calls: dict, repetitions: int | None = None, min_time: float = MIN_TIME,
           clock=time.perf_counter) -> dict[str, list[float]]:
    """{name: [per-call time of each repetition]} of `calls` ({name: a function}): each repetition
    calls until min_time has passed, in rounds of one repetition of each case still open.
    `repetitions` fixes the count (the check scripts); else the stopping rule (resolved())."""
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    still_open = list(calls)
    for _ in range(repetitions or MAX_REPETITIONS):
        for name in still_open:
            count, start = 0, clock()
            while True:
                calls[name]()
                count += 1
                elapsed = clock() - start
                if elapsed >= min_time:
                    break
            seconds[name].append(elapsed / count)
        if repetitions is None:
            still_open = [name for name in still_open if not resolved(seconds[name])]
            if not still_open:
                break
    return seconds


def measure(torch, names: list[str], repetitions: int | None = None, min_time: float = MIN_TIME) -> dict[str, dict]:
    """{name: {"seconds": [per-call time of each repetition], "flops", "bytes", "elements"}}, timed
    by repeat() after one warm-up call each."""
    torch.set_num_threads(os.cpu_count() or 1)
    cases, calls = {}, {}
    for name in names:
        call, flops, nbytes, elements = setup(torch, name)
        call()  # warm-up
        calls[name] = call
        cases[name] = {"flops": flops, "bytes": nbytes, "elements": elements}
    for name, seconds in repeat(calls, repetitions, min_time).items():
        cases[name]["seconds"] = seconds
    return cases


def entries(name: str, case: dict, label: str) -> list[dict]:
    """Google Benchmark entries: one per repetition, then the median and cv aggregates."""
    def counters(seconds: float) -> dict:
        out = {"bytes": case["bytes"], "bytes_per_second": case["bytes"] / seconds}
        if case["flops"]:
            out |= {"flops": case["flops"], "flops_per_second": case["flops"] / seconds}
        if case["elements"]:
            out["elements"] = case["elements"]
        return out

    seconds = case["seconds"]
    common = {"run_name": name, "run_type": "iteration", "repetitions": len(seconds), "threads": 1,
              "time_unit": "s", "label": label}
    out = [dict(common, name=name, repetition_index=i, iterations=1, real_time=s, cpu_time=s, **counters(s))
           for i, s in enumerate(seconds)]
    median = statistics.median(seconds)
    out.append(dict(common, name=f"{name}_median", run_type="aggregate", aggregate_name="median",
                    aggregate_unit="time", iterations=len(seconds), real_time=median, cpu_time=median,
                    **counters(median)))
    if len(seconds) > 1:
        cv = statistics.stdev(seconds) / statistics.mean(seconds)
        out.append(dict(common, name=f"{name}_cv", run_type="aggregate", aggregate_name="cv",
                        aggregate_unit="percentage", iterations=len(seconds), real_time=cv, cpu_time=cv))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repetitions", type=int, default=None,
                        help="a fixed count (default: the stopping rule, 6 to 20)")
    parser.add_argument("--min-time", type=float, default=MIN_TIME)
    args = parser.parse_args()
    if not args.run_dir.is_dir():
        print(f"torch_peer: {args.run_dir}: not a directory", file=sys.stderr)
        return 2
    names = planned_peers(args.run_dir)
    if not names:
        print("flopscope: torch_beside: skipped: the run has no case that PyTorch has a call for", flush=True)
        return 0
    try:
        import torch
    except Exception as error:  # noqa: BLE001: any import failure is a skip with its reason
        print(f"flopscope: torch_beside: skipped: torch does not import in {sys.executable} "
              f"({type(error).__name__}: {error})", flush=True)
        return 0
    start = time.monotonic()
    cases = measure(torch, names, args.repetitions, args.min_time)
    version = torch.__version__.split("+")[0]
    benchmarks = []
    for name, case in cases.items():
        bound = "compute compute=" + NAME.match(name)["dtype"] if case["flops"] else "memory"
        call = "torch.mm" if case["flops"] else "y.copy_(view)"
        benchmarks += entries(name, case, f"bound={bound} library=PyTorch-{version} call={call}")
    flopscope = {"schema": 2, "binary": "torch_beside", "suite": None,
                 "build": {"compiler": f"PyTorch {torch.__version__}", "build_type": None},
                 "run": {"argv": sys.argv, "torch": torch.__version__, "threads": torch.get_num_threads()},
                 "variants": [{"name": "torch", "device": "cpu", "role": "peer",
                               "description": "PyTorch's own call for the case (torch.mm, y.copy_(view))"}],
                 "cases": [{"name": name, "variant": "torch", "role": "peer", "device": "cpu",
                            "dtype": NAME.match(name)["dtype"], "skip": None} for name in cases]}
    document = {"context": {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "executable": sys.executable,
                            "flopscope": json.dumps(flopscope)},
                "benchmarks": benchmarks}
    out = args.run_dir / "torch_beside.json"
    partial = args.run_dir / ".torch_beside.json.partial"
    partial.write_text(json.dumps(document, indent=1))
    os.replace(partial, out)
    print(f"flopscope: torch_beside: {len(cases)} cases in {time.monotonic() - start:.0f} s -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
