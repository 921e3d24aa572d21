#!/usr/bin/env bash
# The search on a GPU: each shipped template searched with `karyamorph search run` (budget
# ${BUDGET:-200}, the default strategy), its leaderboard and best-so-far curve, the winner's
# ratio to torch, all in one database; then a summary table for benchmarks/RESULTS.md. A
# TEMPLATE may be a spec with a [search] table (datasets/searches/examples/sgemm_tiled.toml);
# SEARCH_ARGS adds options to every `search run` (e.g. "--cost-prior 10").
#   usage: OUT=dir benchmarks/search_gpu.sh [TEMPLATE...]   (run from the project root)
set -u
out=${OUT:-search-logs}
mkdir -p "$out/winners"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
km() { "$py" -m karyamorph.cli "$@"; }
db="$out/searches.duckdb"
arch=$("$py" -c "from karyamorph.harness.gpu.device import current_device as d; print(d().arch)")
templates=("$@")
[[ ${#templates[@]} -gt 0 ]] || templates=(vadd reduction transpose sgemm hgemm)
names=()
for template in "${templates[@]}"; do
  t=$(basename "$template" .toml)
  t=${t%.py}
  names+=("$t")
  start=$(date +%s)
  km search run "$template" --arch "$arch" --budget "${BUDGET:-200}" --strategy "${STRATEGY:-model}" ${SEARCH_ARGS:-} \
    --db "$db" --out "$out/winners" --label "search_gpu.sh" --format json > "$out/$t.json" 2> "$out/$t.log"
  echo "$t: exit $? in $(( $(date +%s) - start )) s" | tee -a "$out/times.txt"
  id=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['search_id'])" "$out/$t.json" 2>/dev/null)
  [[ -n $id ]] && km search show "$id" --db "$db" --plot "$out/$t.png" > "$out/$t.show.txt" 2>&1
done
"$py" - "$out" "${names[@]}" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print("| template | evaluations (measured) | rejected | winner | ours | torch | ratio | vs baseline |")
print("|---|---|---|---|---|---|---|---|")
for t in sys.argv[2:]:
    try:
        s = json.loads((out / f"{t}.json").read_text())
    except (OSError, ValueError):
        print(f"| {t} | failed: see {t}.log | | | | | | |")
        continue
    w, torch, base = s.get("winner") or {}, s.get("torch") or {}, s.get("baseline") or {}
    unit, key = ("TB/s", "tb_per_s") if "tb_per_s" in w else ("TFLOP/s", "tflop_per_s")
    ours, theirs = w.get(key), torch.get(key)
    fmt = lambda v: "-" if v is None else f"{v:.3g} {unit}"
    print(f"| {t} | {s['evaluations']} ({s['measured']}) | {s['failures']} | {w.get('config')} | {fmt(ours)} | "
          f"{fmt(theirs)} | {s.get('ratio_vs_torch', float('nan')):.3f} | {base.get('speedup', float('nan')):.3f}x |")
PY
