#!/usr/bin/env bash
# `karyamorph microbench` on a GPU machine, three times for repeatability: the default forms
# (FFMA and a representative set), the tensor cores (wgmma, mma.sync) and every memory benchmark
# (bulk/TMA copies among them). Writes, under OUTDIR:
#   microbench.duckdb                      the three sessions
#   datasets/microbench/<arch>/            figures.csv, sessions.csv, README.md, plots (PNG):
#                                          copy this folder into the repository's datasets/microbench/
#   summary.md                             headline figures, spread over the sessions, published figures
#   run{1,2,3}.txt, tests.txt, timings.txt the logs
# then checks the fresh dataset (the CPU test, pointed at it) and runs the GPU tests of the kernels.
#   usage: benchmarks/microbench_gpu.sh OUTDIR [extra microbench options]   (run from the project root)
# Expected wall time on an H200: about 3 minutes (each session: ~15 s worker start, ~10 s assembly
# on 16 cores, ~15 s on the GPU; then ~40 s of tests).
set -u
out=${1:-${OUT:-gpu-logs}}
shift || true
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
km() { "$py" -m karyamorph.cli "$@"; }
stamp() { date +%s.%N; }
took() { awk "BEGIN {printf \"%.1f\", $2 - $1}"; }

arch=$("$py" -c 'from karyamorph.harness.gpu.device import current_device as d; i = d(); print(i.arch if i else "")')
if [[ -z $arch ]]; then
  echo "no CUDA device: the microbenchmarks need a GPU" >&2
  exit 2
fi
db="$out/microbench.duckdb"
data="$out/datasets/microbench"
rm -f "$db" "$db.wal"
: > "$out/timings.txt"
km device | tee "$out/device.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>/dev/null \
  | tee -a "$out/device.txt"

status=0
for run in 1 2 3; do
  t0=$(stamp)
  km microbench --db "$db" --out "$data" --repeats 3 "$@" > "$out/run$run.txt" 2>&1
  rc=$?
  t1=$(stamp)
  [[ $rc -ne 0 ]] && status=$rc
  echo "session $run: exit $rc, $(took "$t0" "$t1") s" | tee -a "$out/timings.txt"
  grep -E '^(assembled|planned|instr|tensor|chase|bandwidth|banks|atomics|barriers|flight|turnover|bulk|stored|error)' \
    "$out/run$run.txt" \
    | sed 's/^/  /' | tee -a "$out/timings.txt"
done
sed -n '/^== instructions/,$p' "$out/run3.txt" | head -150

t0=$(stamp)
km microbench --export-only --db "$db" --out "$data" --arch "$arch" --summary "$out/summary.md" > /dev/null 2>&1
echo "export and plots: $(took "$t0" "$(stamp)") s" | tee -a "$out/timings.txt"
echo
cat "$out/summary.md"
echo

t0=$(stamp)
echo "== the dataset check (CPU test) on $data/$arch" | tee "$out/tests.txt"
KARYAMORPH_MICROBENCH_DATA="$data/$arch" "$py" -m pytest -q -p no:cacheprovider -rs \
  tests/microbench/test_dataset.py >> "$out/tests.txt" 2>&1 || status=1
echo "== GPU tests of the microbenchmark kernels" >> "$out/tests.txt"
"$py" -m pytest -q -p no:cacheprovider -rs -m gpu tests/microbench >> "$out/tests.txt" 2>&1 || status=1
tail -40 "$out/tests.txt"
echo "tests: $(took "$t0" "$(stamp)") s" | tee -a "$out/timings.txt"
ls -la "$data/$arch"
exit $status
