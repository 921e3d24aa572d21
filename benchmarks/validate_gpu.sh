#!/usr/bin/env bash
# `karyamorph model validate` on a GPU machine: every modeled instruction form run on the GPU,
# compared bit for bit with the model, recorded under datasets/validation/<arch>/ for the CPU
# replay test (tests/validation/test_validation_replay.py), with the wall time.
#   usage: benchmarks/validate_gpu.sh [extra model-validate options]   (run from the project root)
# Logs, the JSON report, the DuckDB file and a copy of the recording go to ${OUT:-gpu-logs}.
set -u
out=${OUT:-gpu-logs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}

arch=$("$py" -c 'from karyamorph.harness.gpu.device import current_device as d; i = d(); print(i.arch if i else "")')
if [[ -z $arch ]]; then
  echo "no CUDA device: model validate needs a GPU" >&2
  exit 2
fi
record="datasets/validation/$arch"
start=$(date +%s.%N)
"$py" -m karyamorph.cli model validate --record "$record" --format json --db "$out/validate.duckdb" "$@" \
  > "$out/validate_$arch.json" 2> "$out/validate_$arch.stderr"
status=$?
end=$(date +%s.%N)
cat "$out/validate_$arch.stderr"
"$py" - "$out/validate_$arch.json" <<'EOF'
import json, sys
from collections import Counter
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as exc:
    sys.exit(f"no JSON report ({exc})")
e = r["environment"]
print(f"{e.get('device_name')} {r['arch']}, driver {e.get('driver_release')} (CUDA {e.get('cuda_driver')}), "
      f"ptxas {e.get('ptxas')}, cuda-python {e.get('cuda_python')}, torch {e.get('torch')}")
print("forms:", r["summary"], " cases:", sum(f["cases"] for f in r["forms"]))
print("phases (s):", {k: round(v, 2) for k, v in r["seconds"].items()})
failed = [f for f in r["forms"] if f["status"] == "fail"]
for f in failed:
    print(f"FAIL {f['form']}: {f['disagreements']}/{f['cases']} cases, max {f['max_ulp']} ulp")
kinds = Counter(d["kind"] for d in r["disagreements"])
print("disagreement rows by kind:", dict(kinds))
for d in [d for d in r["disagreements"] if d["kind"] not in ("nan-bits", "unspecified")][:30]:
    print("  ", d["form"], d["kind"], d["operands"], "gpu", d["gpu"], "model", d["model"])
EOF
echo "model validate exit status $status; wall time $(awk "BEGIN {printf \"%.1f\", $end - $start}") s"
# The recording is written in the working tree; keep a copy with the logs so it travels back.
if [[ -d $record ]]; then
  rm -rf "$out/validation_$arch" && cp -r "$record" "$out/validation_$arch"
  du -sh "$record"
  "$py" -m pytest -q -p no:cacheprovider tests/validation/test_validation_replay.py 2>&1 | tail -3
fi
exit $status
