"""From zero to a measured kernel with the API: compile, SASS, sanitize, correctness against
torch, timing and Nsight Compute metrics of the CUDA C kernel in vadd.toml, in one call."""

import sys
from pathlib import Path

import karyamorph as km

stages = ["compile", "sass", "sanitize", "correctness", "timing", "metrics"]
r = km.run(Path(__file__).with_name("vadd.toml"), stages=stages, store=False)
if r["timing"].status == km.Status.SKIP:
    sys.exit(f"api.py: {r['timing'].log}")  # "no CUDA device" on a machine without a GPU
print({stage: r[stage].status.value for stage in r}, r["sanitize"].data.get("findings", []))
print("median", r["timing"].data.get("median_ns"), "ns;", r["metrics"].data.get("curated"))
print(r.sass)
