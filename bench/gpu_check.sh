#!/usr/bin/env bash
# The GPU check: runs the device bundle (bench/gpu_bundle.sh builds it on a machine without a GPU)
# on a machine with an NVIDIA GPU, its driver and CUDA 13's cuBLAS, and python3 with numpy and
# matplotlib; nothing is built or installed there. One try on a short lease must bring back what
# matters most, so the steps run in that order, each under its own time limit (bench/gpu_plan.py
# plans them from each binary's own suite data and a stated cost model; `--plan` prints it):
#   1. where the CUDA libraries are (ldd; else CUDA 13 under /usr/local or the nvidia-* wheels of
#      python3, put on LD_LIBRARY_PATH), and nvidia-smi's clocks and state;
#   2. smoke: every bench binary's --suite=smoke on cuda:0, every CUDA kernel once at a tiny size,
#      validated (under a minute);
#   3. bench: every bench binary's --suite=gpu on cuda:0, bench_peak first (the ceilings it writes
#      feed the others' pct_ceiling counters), then matmul, copy, strided, convert, broadcast,
#      backward (bench_gpu_plan.py's BENCH_ORDER), their JSON written straight into OUT_DIR; then
#      nvidia-smi again;
#   4. compute-sanitizer: memcheck over every smoke suite, racecheck and synccheck over every
#      --suite=sync (the shared-memory transposes, the mma matmul), with --disable-blocking-kernel;
#   5. tests: the CUDA tests (*Cuda*) of each test binary, in the time that is left only;
#   6. the report (python3 -m flopscope_analysis report) and the pack.
# A step that fails is reported on one line and the script goes on; the exit code is 1 if any
# failed. Where there is no GPU (nvidia-smi missing or listing none: a dry run) the GPU-only steps
# are skipped with the reason and every CUDA case is a named skip.
#
#   bench/gpu_check.sh OUT_DIR      # from the repository root, with build-gpu-bundle/bundle present
#   bench/gpu_check.sh --plan       # each step's planned seconds and the total; runs nothing, needs no GPU
#
# Environment: FLOPSCOPE_BUNDLE (default build-gpu-bundle/bundle), FLOPSCOPE_GPU_CHECK_BUDGET_S
# (default 480: every step's limit is cut to what is left of it, 40 s kept for the report, so
# that the whole script ends within about 8 minutes; a step left without time is named and counts
# as a failure, except the tests), PYTHON (default python3).
#
# What comes back, in OUT_DIR (at most 8 files, for the device tool): gpu_check.log (every
# step's full output, the plan, nvidia-smi, the summary table), report.md, and results.tar.gz
# (each bench binary's Google Benchmark JSON, report.md, plots/, the measured ceilings, smoke/
# with the smoke suites' JSON: unpack it into results/gpu/<device>-<date>/). The bench binaries
# rewrite their JSON whole after every case, so a binary that is killed leaves every case it
# finished. The console gets one line per step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${FLOPSCOPE_BUNDLE:-$root/build-gpu-bundle/bundle}
budget=${FLOPSCOPE_GPU_CHECK_BUDGET_S:-480}
python=${PYTHON:-python3}
if [[ $# -eq 1 && $1 == --plan ]]; then
  if [[ ! -d $bundle/bin ]]; then
    echo "gpu_check: no bundle in $bundle (build it with bench/gpu_bundle.sh)" >&2
    exit 1
  fi
  exec "$python" "$root/bench/gpu_plan.py" "$bundle/bin" --budget "$budget"
fi
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
log=$out/gpu_check.log
scratch=$(mktemp -d)
trap 'rm -rf -- "$scratch"' EXIT
export PYTHONPATH="$root/analysis${PYTHONPATH:+:$PYTHONPATH}"
export FLOPSCOPE_CEILINGS_DIR=$scratch/ceilings  # this run's own bench_peak, never stale files
export FLOPSCOPE_WARMUP_S=${FLOPSCOPE_WARMUP_S:-0.5}
mkdir -p "$FLOPSCOPE_CEILINGS_DIR" "$scratch/smoke"
: >"$log"
failures=()
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
# One console line of a step: kind, binary, verdict, the rest.
step_line() {  # $1: kind, $2: binary, $3: verdict (ok, FAILED, NOT RUN, skipped), $4: the rest
  say "$(printf '%-9s %-22s %-7s %s' "$1" "$2" "$3" "$4")"
}

# ---- 0. the bundle -------------------------------------------------------------------------
say "gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), output in $out, budget $budget s"
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

sanitizer=$(command -v compute-sanitizer ||
  find /usr/local/cuda*/bin/ /usr/local/cuda*/compute-sanitizer/ -maxdepth 1 -name compute-sanitizer -print -quit 2>/dev/null ||
  true)
if [[ -z $sanitizer ]] && command -v nvcc >/dev/null; then  # beside the toolkit's nvcc
  nvcc_dir=$(dirname "$(readlink -f "$(command -v nvcc)")")
  sanitizer=$(find "$nvcc_dir" "$nvcc_dir/../compute-sanitizer" -maxdepth 1 -name compute-sanitizer -print -quit 2>/dev/null || true)
fi

# ---- 2. the plan -------------------------------------------------------------------------------
# One tab-separated line per step (bench/gpu_plan.py --steps): kind, binary, suite, cases, planned
# seconds, own limit, extra flags or a note ('-': none); the last line the total.
steps=$scratch/steps.tsv
if "$python" "$root/bench/gpu_plan.py" "$bundle/bin" --budget "$budget" --steps --table "$scratch/plan.txt" \
  >"$steps" 2>"$scratch/plan.err"; then
  cat "$scratch/plan.txt" >>"$log"
  say "plan: $(awk -F'\t' '$1 == "total" {print $5}' "$steps") s planned of $budget s, $(grep -vc "^total" "$steps") steps ($SECONDS s to plan; the table in gpu_check.log)"
else
  # Without a plan (python3 missing, a binary that cannot describe itself): every bench binary's
  # gpu suite, in name order, each under an even share of the budget.
  say "plan: FAILED: $(tail -n 1 "$scratch/plan.err") (the bench binaries run in name order, no smoke or sanitizer step)"
  record_failure "plan"
  : >"$steps"
  for binary in "$bundle"/bin/bench_*; do
    printf 'bench\t%s\tgpu\t0\t0\t120\t-\n' "$(basename "$binary")" >>"$steps"
  done
fi

# ---- 3. the steps -------------------------------------------------------------------------------
# One line per binary from its JSON: cases that ran, were skipped, failed, and the first reason.
# A JSON cut short (a binary of before issue 23 killed mid-write) is cut again after its last whole
# case and closed, so that the report shows what finished.
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

# A bench binary's suite on cuda:0, alone or under compute-sanitizer: under its limit, its JSON
# in $json, one console line.
bench_step() {  # $1: kind, $2: binary name, $3: suite, $4: own limit, $5: JSON path; then extra flags
  local kind=$1 name=$2 suite=$3 own=$4 json=$5 limit rc took whole summary line skipped_devices failed_cases memory
  shift 5
  local command=("$bundle/bin/$name" "--suite=$suite" "$@")
  if [[ $kind == bench && $name == bench_peak ]]; then command+=("--write-ceilings=$FLOPSCOPE_CEILINGS_DIR"); fi
  if [[ $kind == memcheck || $kind == racecheck || $kind == synccheck ]]; then
    command=("$sanitizer" --tool "$kind" --error-exitcode 86 --print-limit 20 "${command[@]}")
  fi
  limit=$(limit_for "$own")
  if ((limit == 0)); then
    step_line "$kind" "$name" "NOT RUN" "the time budget ($budget s) is spent"
    record_failure "$kind $name (not run: time budget)"
    return 0
  fi
  log_only "==== $kind $name: ${command[*]} (limit $limit s)"
  local start=$SECONDS output=$scratch/$kind-$name.out
  set +e
  timeout --kill-after=10 "$limit" "${command[@]}" --benchmark_out="$json" --benchmark_out_format=json >"$output" 2>&1
  rc=$?
  set -e
  cat "$output" >>"$log"
  took="$((SECONDS - start)) s (plan ${planned_s:-?} s)"
  memory=$(sed -n '/ERROR SUMMARY/{s/^=* *//;p;q}' "$output")  # compute-sanitizer's verdict
  whole=1
  if ! summary=$(json_line "$json" 2>>"$log"); then
    whole=0
    if [[ -e $json ]]; then mv -- "$json" "$json.partial"; fi
    summary="no whole JSON$( [[ -e $json.partial ]] && echo " (kept as $(basename "$json").partial)"); $(grep -v '^\s*$' "$output" | tail -n 1 | cut -c 1-160)"
  fi
  line=$(head -n 1 <<<"$summary")${memory:+; $memory}
  skipped_devices=$(sed -n 's/^SKIPPED_DEVICES //p' <<<"$summary")
  failed_cases=$(sed -n 's/^FAILED_CASES //p' <<<"$summary")
  if ((rc == 124 || rc == 137)); then
    step_line "$kind" "$name" FAILED "timed out after $limit s (plan ${planned_s:-?} s): $line"
    record_failure "$kind $name (timed out)"
  elif ((rc == 86)); then
    step_line "$kind" "$name" FAILED "$kind found errors: $line, $took"
    record_failure "$kind $name (errors)"
  elif ((rc != 0 || !whole)); then
    step_line "$kind" "$name" FAILED "exit $rc: $line, $took"
    record_failure "$kind $name (exit $rc)"
  elif [[ ${failed_cases:-0} != 0 ]]; then
    step_line "$kind" "$name" FAILED "$line, $took"
    record_failure "$kind $name ($failed_cases cases failed)"
  elif ((gpu_present)) && [[ -n $skipped_devices ]]; then
    step_line "$kind" "$name" FAILED "a GPU is present but $skipped_devices, $took"
    record_failure "$kind $name (cuda:0 skipped on a machine with a GPU)"
  else
    step_line "$kind" "$name" ok "$line, $took"
  fi
  if [[ $kind == bench && $name == bench_peak ]]; then
    local written
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
}

# A test binary's CUDA tests in the time that is left: one line with its counts; left out (no
# failure) where no time is left.
gtest_line() {  # $1: output file
  local passed skipped failed reason
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  reason=$(sed -n '/: Skipped$/{n;p;q}' "$1" | cut -c 1-100)
  printf '%s passed, %s skipped%s, %s failed' "${passed:-0}" "${skipped:-0}" "${reason:+ ($reason)}" "${failed:-0}"
}
cuda_tests='*Cuda*:*CUDA*'
test_step() {  # $1: binary name
  local name=$1 binary=$bundle/bin/$1 listing limit rc start output=$scratch/test-$1.out
  if listing=$("$binary" --gtest_list_tests --gtest_filter="$cuda_tests" 2>&1); then
    grep -q '^  ' <<<"$listing" || return 0  # no CUDA test in it
  fi
  limit=$(limit_for 100000)
  if ((limit == 0)); then
    step_line tests "$name" "NOT RUN" "no time left in the budget (the smoke suites ran every CUDA kernel)"
    return 0
  fi
  log_only "==== tests $name --gtest_filter=$cuda_tests (limit $limit s)"
  start=$SECONDS
  set +e
  timeout --kill-after=10 "$limit" "$binary" --gtest_filter="$cuda_tests" --gtest_color=no >"$output" 2>&1
  rc=$?
  set -e
  cat "$output" >>"$log"
  local line
  line="$(gtest_line "$output"), $((SECONDS - start)) s"
  if ((rc == 0)); then
    step_line tests "$name" ok "$line"
  elif ((rc == 124 || rc == 137)); then
    step_line tests "$name" "NOT DONE" "stopped at the end of the budget ($limit s): $line"
  else
    step_line tests "$name" FAILED "exit $rc: $line"
    record_failure "tests $name (exit $rc)"
  fi
}

after_done=0
sanitizer_said=()
while IFS=$'\t' read -r kind name suite _ planned_s own extra; do
  [[ $kind == total ]] && continue
  [[ $extra == - ]] && extra=
  if [[ $kind != smoke && $kind != bench ]] && ((!after_done)); then
    gpu_state after  # the clocks and state right after the measurements
    after_done=1
  fi
  if [[ $extra == ERROR:* ]]; then
    step_line "$kind" "$name" FAILED "${extra#ERROR: }"
    record_failure "$kind $name (cannot describe itself)"
    continue
  fi
  if [[ $extra == "no $suite suite" ]]; then
    step_line "$kind" "$name" skipped "it has no --suite=$suite"
    continue
  fi
  read -r -a flags <<<"$extra"
  case $kind in
    smoke) bench_step smoke "$name" smoke "$own" "$scratch/smoke/$name.json" "${flags[@]}" ;;
    bench) bench_step bench "$name" gpu "$own" "$out/$name.json" "${flags[@]}" ;;
    memcheck | racecheck | synccheck)
      if [[ -z $sanitizer || $gpu_present == 0 ]]; then
        if [[ " ${sanitizer_said[*]} " != *" $kind "* ]]; then
          sanitizer_said+=("$kind")
          if [[ -z $sanitizer ]]; then
            say "$kind: skipped: compute-sanitizer not found (PATH, /usr/local/cuda*/bin, beside nvcc)"
          else
            say "$kind: skipped: no GPU: $gpu_reason"
          fi
        fi
        continue
      fi
      mkdir -p "$scratch/$kind"
      bench_step "$kind" "$name" "$suite" "$own" "$scratch/$kind/$name.json" "${flags[@]}"
      ;;
    tests) test_step "$name" ;;
    *) say "gpu_check: unknown step '$kind' in the plan" ;;
  esac
done <"$steps"
((after_done)) || gpu_state after

# ---- 4. the report and the pack ---------------------------------------------------------------
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
cp -r -- "$scratch/smoke" "$out/smoke"
pack+=(smoke)
if tar -czf "$out/results.tar.gz.part" -C "$out" "${pack[@]}" && mv -- "$out/results.tar.gz.part" "$out/results.tar.gz"; then
  rm -rf -- "${jsons[@]}" "$out/plots" "$out/ceilings" "$out/smoke"
  say "pack: $out/results.tar.gz ($(du -k "$out/results.tar.gz" | cut -f1) KiB: ${pack[*]})"
else
  say "pack: FAILED: the JSON stay loose in $out"
  rm -rf -- "$out/ceilings" "$out/smoke"
  record_failure "pack"
fi

if ((${#failures[@]})); then
  say "gpu_check: FAILED in $(elapsed): ${failures[*]}"
  exit 1
fi
say "gpu_check: passed in $(elapsed)$( ((gpu_present)) || echo " (dry run: no GPU, every CUDA case skipped)")"
