#!/usr/bin/env bash
# Every GPU check, for a machine with a CUDA GPU: the gpu-marked tests, every example and planted
# bug through `karyamorph run`, `model validate` against the GPU, and the GPU benchmarks.
# Logs go to ${OUT:-gpu-logs}.
#   usage: benchmarks/gpu_check.sh [tests|runs|validate|bench|cost|gaming|all]   (from the project root)
# `cost`: the cost model's GPU side alone: the cp.async wavefront counts (the recording
# tests/model/interp/test_copy_wavefronts.py reads), the prediction tests and the demo's predictions.
set -u
out=${OUT:-gpu-logs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
what=${1:-all}
km() { "$py" -m karyamorph.cli "$@"; }

if [[ $what == tests || $what == all ]]; then
  km device | tee "$out/device.txt"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$out/device.txt"
  "$py" -m pytest -m gpu -q -p no:cacheprovider -rs tests 2>&1 | tee "$out/pytest_gpu.txt"
fi

if [[ $what == runs || $what == all ]]; then
  db="$out/gpu.duckdb"
  km demo --db "$db" 2>&1 | tee "$out/demo.txt"
  # pytest -m gpu covers every planted bug stage by stage; these two show the command surviving
  # a crashing and a hanging kernel.
  for spec in tests/harness/data/{illegal_address,hang}.toml; do
    echo "== $spec"
    km run "$spec" --db "$db" --timeout 15
    echo "exit status $?"
  done 2>&1 | tee "$out/planted.txt"
  km query "SELECT r.entry, s.stage, s.status, round(s.seconds, 2) AS s FROM runs r JOIN stages s USING (run_id) ORDER BY r.created_at, s.position" --db "$db" > "$out/stages.txt" 2>&1
fi

if [[ $what == validate || $what == all ]]; then
  OUT="$out" PYTHON="$py" bash benchmarks/validate_gpu.sh 2>&1 | tee "$out/validate.txt"
fi

if [[ $what == cost || $what == all ]]; then
  "$py" benchmarks/ldgsts_wavefronts.py --json "$out/copy_wavefronts_h200.json" 2>&1 | tee "$out/copy_wavefronts.txt"
  "$py" -m pytest -m gpu -q -p no:cacheprovider -rs tests/harness/stages/test_predict_gpu.py \
    tests/search/test_search_gpu.py 2>&1 | tee "$out/pytest_cost.txt"
  km demo --db "$out/demo.duckdb" 2>&1 | tee "$out/demo_cost.txt"
fi

# `gaming`: the measurement's defences: the gaming kernels caught (tests and `karyamorph run`), no
# false alarm on the examples, the corpus and the searches, and what the checks cost.
if [[ $what == gaming || $what == all ]]; then
  km device | tee "$out/device.txt"
  "$py" -m pytest -m gpu -q -p no:cacheprovider -rs tests/harness/test_gaming_gpu.py \
    tests/harness/stages/test_gpu_stages.py tests/harness/test_corpus_gpu.py 2>&1 | tee "$out/pytest_gaming.txt"
  for spec in tests/harness/gaming/*.toml; do
    echo "== $spec"
    km run "$spec" --db "$out/gaming.duckdb" --skip model,predict,metrics
    echo "exit status $?"
  done 2>&1 | tee "$out/gaming_runs.txt"
fi

if [[ $what == gaming-cost || $what == all ]]; then
  "$py" -m pytest -m gpu -q -p no:cacheprovider -rs tests/search/test_search_gpu.py 2>&1 | tee "$out/pytest_search.txt"
  "$py" benchmarks/timed_checks.py --json "$out/timed_checks.json" 2>&1 | tee "$out/timed_checks.txt"
  km demo --db "$out/demo.duckdb" 2>&1 | tee "$out/demo.txt"
fi

if [[ $what == bench || $what == all ]]; then
  "$py" benchmarks/gpu.py 2>&1 | tee "$out/bench_gpu.txt"
  "$py" benchmarks/harness_throughput.py --json "$out/throughput.json" 2>&1 | tee "$out/throughput.txt"
fi
