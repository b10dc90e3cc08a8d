#!/usr/bin/env bash
# The GPU check: runs the device bundle (bench/gpu_bundle.sh builds it on a machine without a GPU)
# on a machine with an NVIDIA GPU, its driver and CUDA 13's cuBLAS, and python3 with numpy and
# matplotlib; nothing is built or installed there. In order:
#   1. where the CUDA libraries are (ldd; else CUDA 13 under /usr/local or the nvidia-* wheels of
#      python3, put on LD_LIBRARY_PATH), and nvidia-smi's clocks and state;
#   2. every test binary of the bundle, whole (CPU and CUDA tests), each under `timeout`;
#   3. compute-sanitizer memcheck on the CUDA copy and conversion tests;
#   4. every bench binary of the bundle on cuda:0, bench_peak first (the ceilings it writes feed
#      the others' pct_ceiling counters),
#      each under `timeout` and within the time budget, its JSON written straight into OUT_DIR;
#   5. nvidia-smi again, the report (python3 -m flopscope_analysis report), and the pack.
# A step that fails is reported and the script goes on; the exit code is 1 if any failed. Where
# nvidia-smi or compute-sanitizer is missing (a dry run without a GPU) that step is skipped with
# the reason, and every CUDA case is a skip.
#
#   bench/gpu_check.sh OUT_DIR      # from the repository root, with build-gpu-bundle/bundle present
#
# Environment: FLOPSCOPE_BUNDLE (default build-gpu-bundle/bundle), FLOPSCOPE_GPU_CHECK_BUDGET_S
# (default 360: every step's time limit is cut to what is left of it, 40 s kept for the report,
# so that the whole script ends within about 6 minutes; a step left without time is named and
# counts as a failure), PYTHON (default python3).
#
# What comes back, in OUT_DIR (at most 8 files, for the device tool): gpu_check.log (every
# step's full output, nvidia-smi, the summary table), report.md, and results.tar.gz (each bench
# binary's Google Benchmark JSON, report.md, plots/, the measured ceilings: unpack it into
# results/gpu/<device>-<date>/). While the binaries run, their JSON files lie loose in OUT_DIR;
# a JSON that is not whole (a crash, a timeout) is kept as NAME.json.partial. The console gets
# one line per step and per binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -ne 1 || $1 == -* ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
fi
mkdir -p -- "$1"
out=$(cd -- "$1" && pwd)
if [[ -n $(ls -A -- "$out") ]]; then
  echo "gpu_check: $out is not empty (its files would be taken for this run's): give a new or empty folder" >&2
  exit 2
fi
bundle=${FLOPSCOPE_BUNDLE:-$root/build-gpu-bundle/bundle}
budget=${FLOPSCOPE_GPU_CHECK_BUDGET_S:-360}
python=${PYTHON:-python3}
log=$out/gpu_check.log
scratch=$(mktemp -d)
trap 'rm -rf -- "$scratch"' EXIT
export PYTHONPATH="$root/analysis${PYTHONPATH:+:$PYTHONPATH}"
export FLOPSCOPE_CEILINGS_DIR=$scratch/ceilings  # this run's own bench_peak, never stale files
export FLOPSCOPE_WARMUP_S=${FLOPSCOPE_WARMUP_S:-0.5}
mkdir -p "$FLOPSCOPE_CEILINGS_DIR"
: >"$log"
failures=()

# Per bench binary: its flags (beside --devices=cuda:0 and the JSON output) and its time limit
# in seconds. A family not listed runs with the defaults; add a line for a new one.
# Each binary's flags on the GPU are its own suite data: --suite=gpu (`BINARY --describe` lists them).
declare -A bench_limit_s=([bench_peak]=120 [bench_copy]=60 [bench_convert]=60 [bench_matmul]=90 [bench_strided]=60
                          [bench_broadcast]=45 [bench_backward]=60)
default_limit_s=60
test_limit_s=180
memcheck_limit_s=240
memcheck_filter='*CudaCopy*:*CudaConvert*'
report_reserve_s=40  # kept back from the budget for nvidia-smi, the report and the pack

say() { printf '%s\n' "$*" | tee -a "$log"; }
log_only() { printf '%s\n' "$*" >>"$log"; }
record_failure() { failures+=("$1"); }
elapsed() { printf '%d s' "$SECONDS"; }
# The time limit of the next step: its own, or what is left of the budget (then 0 when under 5 s:
# the step is not run, and says so).
limit_for() {  # $1: the step's own limit in seconds
  local left=$((budget - report_reserve_s - SECONDS))
  if ((left < 5)); then echo 0; elif (($1 < left)); then echo "$1"; else echo "$left"; fi
}

# ---- 0. the bundle -------------------------------------------------------------------------
say "gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), output in $out"
if [[ ! -d $bundle/bin ]]; then
  say "gpu_check: FAILED: no bundle in $bundle (build it with bench/gpu_bundle.sh on any machine with the CUDA toolkit, and carry it)"
  exit 1
fi
say "bundle: $bundle: $(sed -n 's/^commit: *//p' "$bundle/BUNDLE.txt" 2>/dev/null || echo '?'), $(find "$bundle/bin" -type f | wc -l) binaries"
log_only "$(cat "$bundle/BUNDLE.txt" 2>/dev/null)"

# ---- 1. CUDA libraries and the GPU's state ---------------------------------------------------
missing_libraries() {
  local binary
  for binary in "$bundle"/bin/*; do ldd "$binary" 2>/dev/null | awk '/not found/ {print $1}'; done | sort -u
}
mapfile -t missing < <(missing_libraries)
if ((${#missing[@]})); then
  # CUDA 13 of the machine, then the nvidia-* wheels of its python3 (PyTorch's cu13 wheels).
  search=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64)
  mapfile -t -O "${#search[@]}" search < <("$python" -c '
import importlib.util
spec = importlib.util.find_spec("nvidia")
print("\n".join(spec.submodule_search_locations if spec else []))' 2>/dev/null || true)
  for library in "${missing[@]}"; do
    for dir in "${search[@]}"; do
      [[ -d $dir ]] || continue
      found=$(find "$dir" -maxdepth 4 -name "$library" -print -quit 2>/dev/null)
      if [[ -n $found ]]; then
        dir=$(dirname "$found")
        export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        say "libraries: $library from $dir"
        break
      fi
    done
  done
  mapfile -t missing < <(missing_libraries)
  if ((${#missing[@]})); then
    say "libraries: FAILED: not found anywhere: ${missing[*]} (binaries that need them cannot start)"
    record_failure "libraries: ${missing[*]} not found"
  fi
else
  say "libraries: every binary's libraries resolve (bundle, system, CUDA)"
fi

gpu_present=0
gpu_reason="nvidia-smi not found (no NVIDIA driver here)"
if command -v nvidia-smi >/dev/null; then
  if gpus=$(nvidia-smi -L 2>&1) && grep -q '^GPU ' <<<"$gpus"; then
    gpu_present=1
  else
    gpu_reason="nvidia-smi -L lists no GPU: ${gpus//$'\n'/ }"
  fi
fi

gpu_state() {  # $1: before | after
  if ((!gpu_present)); then
    say "nvidia-smi $1: skipped: $gpu_reason"
    return 0
  fi
  local fields=name,pci.bus_id,driver_version,pstate,temperature.gpu,power.draw,power.limit
  fields+=,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,utilization.gpu,memory.used,memory.total
  local state
  if state=$(nvidia-smi --query-gpu="$fields" --format=csv,noheader 2>&1); then
    log_only "nvidia-smi $1: $fields"
    while read -r line; do say "nvidia-smi $1: $line"; done <<<"$state"
  else
    say "nvidia-smi $1: query failed: ${state//$'\n'/ }"
  fi
  # Clock event reasons (power, thermal, applications clocks) for the log.
  nvidia-smi -q -d CLOCK,PERFORMANCE >>"$log" 2>&1 || log_only "nvidia-smi -q failed"
}
gpu_state before

# ---- 2. tests ---------------------------------------------------------------------------------
# One line per binary: its counts and the first skip's reason; the whole output in the log.
gtest_line() {  # $1: output file
  local passed skipped failed reason
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  reason=$(sed -n '/: Skipped$/{n;p;q}' "$1" | cut -c 1-100)
  printf '%s passed, %s skipped%s, %s failed' "${passed:-0}" "${skipped:-0}" "${reason:+ ($reason)}" "${failed:-0}"
}
# One step per test binary (alone or under compute-sanitizer): within the budget, under timeout,
# the whole output in the log, one line on the console.
gtest_step() {  # $1: kind (test, memchk), $2: binary name, $3: its own limit in seconds; then the command
  local kind=$1 name=$2 limit rc start line memory output=$scratch/$1-$2.out
  limit=$(limit_for "$3")
  shift 3
  if ((limit == 0)); then
    say "$(printf '%-6s %-24s NOT RUN the time budget (%s s) is spent' "$kind" "$name" "$budget")"
    record_failure "$kind $name (not run: time budget)"
    return 0
  fi
  log_only "==== $kind $name: $*"
  start=$SECONDS
  set +e
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log" >"$output"
  rc=${PIPESTATUS[0]}
  set -e
  memory=$(sed -n '/ERROR SUMMARY/{s/^=* *//;p;q}' "$output")  # compute-sanitizer's verdict
  line="$(gtest_line "$output")${memory:+; $memory}, $((SECONDS - start)) s"
  if ((rc == 0)); then
    say "$(printf '%-6s %-24s ok      %s' "$kind" "$name" "$line")"
    return 0
  fi
  if ((rc == 86)); then line="memory errors; $line"; fi
  if ((rc == 124 || rc == 137)); then line="timed out after $limit s; $line"; fi
  say "$(printf '%-6s %-24s FAILED  exit %s: %s' "$kind" "$name" "$rc" "$line")"
  record_failure "$kind $name (exit $rc)"
}

for binary in "$bundle"/bin/test_*; do
  [[ -x $binary ]] || continue
  gtest_step test "$(basename "$binary")" "$test_limit_s" "$binary" --gtest_color=no
done

# ---- 3. memcheck --------------------------------------------------------------------------------
sanitizer=$(command -v compute-sanitizer ||
  find /usr/local/cuda*/bin/ /usr/local/cuda*/compute-sanitizer/ -maxdepth 1 -name compute-sanitizer -print -quit 2>/dev/null ||
  true)
if [[ -z $sanitizer ]]; then
  say "memcheck: skipped: compute-sanitizer not found (PATH, /usr/local/cuda*/bin, /usr/local/cuda*/compute-sanitizer)"
elif ((!gpu_present)); then
  say "memcheck: skipped: no GPU: $gpu_reason"
else
  for binary in "$bundle"/bin/test_*; do
    # Only binaries that have such tests (one that cannot even list its tests is run: its step fails).
    if listing=$("$binary" --gtest_list_tests --gtest_filter="$memcheck_filter" 2>&1); then
      grep -q '^  ' <<<"$listing" || continue
    fi
    gtest_step memchk "$(basename "$binary")" "$memcheck_limit_s" "$sanitizer" --tool memcheck --error-exitcode 86 \
      --print-limit 20 "$binary" --gtest_filter="$memcheck_filter" --gtest_color=no
  done
fi

# ---- 4. bench binaries ----------------------------------------------------------------------------
# One line per binary from its JSON: cases that ran, were skipped, failed, and the first reason.
# A JSON cut short (the binary timed out or crashed: Google Benchmark writes it through a buffer)
# is cut again after its last whole case and closed, so that the report shows what finished.
json_line() {  # $1: JSON file
  "$python" - "$1" <<'PY'
import json, sys
path = sys.argv[1]
text = open(path).read()
try:
    data = json.loads(text)
    cut = ""
except ValueError:
    start, end = text.find('"benchmarks": ['), text.rfind("\n    }")
    if start < 0 or end < start:
        raise
    data = json.loads(text[:end + 6] + "\n  ]\n}\n")
    with open(path, "w") as out:
        json.dump(data, out, indent=2)
    cut = f"; JSON cut short, kept its {len(data['benchmarks'])} whole entries"
rows = [b for b in data.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
names = {}
for b in rows:
    message = b.get("error_message", "") if b.get("error_occurred") else ""
    status = "skipped" if message.startswith("skipped:") else "failed" if message else "ran"
    names.setdefault(b["run_name"], (status, message))
counts = {s: sum(1 for st, _ in names.values() if st == s) for s in ("ran", "skipped", "failed")}
first = next((m for st, m in names.values() if st == "failed"), None) or next((m for st, m in names.values() if st == "skipped"), "")
context = json.loads(data.get("context", {}).get("flopscope", "{}"))
skipped_devices = context.get("skipped_devices", {})
print(f"{len(names)} cases: {counts['ran']} ran, {counts['skipped']} skipped, {counts['failed']} failed"
      + (f" (first: {first[:110]})" if first else "") + cut)
print("SKIPPED_DEVICES " + "; ".join(f"{d}: {r}" for d, r in sorted(skipped_devices.items())))
print("FAILED_CASES " + str(counts["failed"]))
PY
}

mapfile -t benches < <(find "$bundle/bin" -maxdepth 1 -type f -name 'bench_*' -printf '%f\n' | sort)
# bench_peak first: the ceilings file it leaves is what the others' pct_ceiling counters read.
ordered=()
for name in "${benches[@]}"; do
  if [[ $name == bench_peak ]]; then ordered=("$name" "${ordered[@]}"); else ordered+=("$name"); fi
done

for name in "${ordered[@]}"; do
  binary=$bundle/bin/$name
  json=$out/$name.json
  limit=$(limit_for "${bench_limit_s[$name]:-$default_limit_s}")
  if ((limit == 0)); then
    say "$(printf 'bench  %-24s NOT RUN the time budget (%s s) is spent' "$name" "$budget")"
    record_failure "$name (not run: time budget)"
    continue
  fi
  flags=(--suite=gpu)
  if [[ $name == bench_peak ]]; then flags+=("--write-ceilings=$FLOPSCOPE_CEILINGS_DIR"); fi
  log_only "==== $name --devices=cuda:0 ${flags[*]} (limit $limit s)"
  start=$SECONDS
  set +e
  timeout --kill-after=10 "$limit" "$binary" --devices=cuda:0 "${flags[@]}" \
    --benchmark_out="$json" --benchmark_out_format=json >>"$log" 2>&1
  rc=$?
  set -e
  took=$((SECONDS - start))
  whole=1
  if ! summary=$(json_line "$json" 2>>"$log"); then
    whole=0
    if [[ -e $json ]]; then mv -- "$json" "$json.partial"; fi
    summary="no whole JSON (kept as $name.json.partial where there was one)"
  fi
  line=$(head -n 1 <<<"$summary")
  skipped_devices=$(sed -n 's/^SKIPPED_DEVICES //p' <<<"$summary")
  failed_cases=$(sed -n 's/^FAILED_CASES //p' <<<"$summary")
  if ((rc == 124 || rc == 137)); then
    say "$(printf 'bench  %-24s FAILED  timed out after %s s: %s' "$name" "$limit" "$line")"
    record_failure "$name (timed out)"
  elif ((rc != 0 || !whole)); then
    say "$(printf 'bench  %-24s FAILED  exit %s: %s, %s s' "$name" "$rc" "$line" "$took")"
    record_failure "$name (exit $rc)"
  elif [[ ${failed_cases:-0} != 0 ]]; then
    say "$(printf 'bench  %-24s FAILED  %s, %s s' "$name" "$line" "$took")"
    record_failure "$name ($failed_cases cases failed)"
  elif ((gpu_present)) && [[ -n $skipped_devices ]]; then
    say "$(printf 'bench  %-24s FAILED  a GPU is present but %s, %s s' "$name" "$skipped_devices" "$took")"
    record_failure "$name (cuda:0 skipped on a machine with a GPU)"
  else
    say "$(printf 'bench  %-24s ok      %s, %s s' "$name" "$line" "$took")"
  fi
  if [[ $name == bench_peak ]]; then
    written=$(find "$FLOPSCOPE_CEILINGS_DIR" -name '*.json' -printf '%f ')
    if [[ -n $written ]]; then
      say "ceilings: $written(bench_peak --write-ceilings; the binaries after it read them)"
    elif ((gpu_present)); then
      say "ceilings: FAILED: bench_peak wrote none (see gpu_check.log)"
      record_failure "ceilings"
    else
      say "ceilings: none written (no ceiling case ran)"
    fi
  fi
done

# ---- 5. after: the GPU's state, the report, the pack ---------------------------------------------
gpu_state after
shopt -s nullglob
jsons=("$out"/*.json)
if ((${#jsons[@]} == 0)); then
  say "report: FAILED: no bench JSON in $out"
  record_failure "report (no JSON)"
elif report=$("$python" -m flopscope_analysis report "$out" 2>&1); then
  say "report: ${report//$'\n'/ }"
  # The whole table in the log; the ceilings (bench_peak's cases) on the console too.
  log_only "==== summary"
  if "$python" -m flopscope_analysis summary "$out" >"$scratch/summary.txt" 2>&1; then
    cat "$scratch/summary.txt" >>"$log"
    sed -n '2,3p; /^peak\//p' "$scratch/summary.txt"
  else
    log_only "$(cat "$scratch/summary.txt")"
    say "summary: failed (see gpu_check.log)"
  fi
else
  say "report: FAILED: ${report//$'\n'/ }"
  record_failure "report"
fi
# Everything that belongs in results/gpu/<device>-<date>/ in one file (the device tool brings
# back at most 8); the loose JSON and plots go once they are in it.
pack=("${jsons[@]##*/}")
[[ -f $out/report.md ]] && pack+=(report.md)
[[ -d $out/plots ]] && pack+=(plots)
cp -r -- "$FLOPSCOPE_CEILINGS_DIR" "$out/ceilings"
pack+=(ceilings)
if tar -czf "$out/results.tar.gz.part" -C "$out" "${pack[@]}" && mv -- "$out/results.tar.gz.part" "$out/results.tar.gz"; then
  rm -rf -- "${jsons[@]}" "$out/plots" "$out/ceilings"
  say "pack: $out/results.tar.gz ($(du -k "$out/results.tar.gz" | cut -f1) KiB: ${pack[*]})"
else
  say "pack: FAILED: the JSON stay loose in $out"
  rm -rf -- "$out/ceilings"
  record_failure "pack"
fi

if ((${#failures[@]})); then
  say "gpu_check: FAILED in $(elapsed): ${failures[*]}"
  exit 1
fi
say "gpu_check: passed in $(elapsed)$( ((gpu_present)) || echo " (dry run: no GPU, every CUDA case skipped)")"
