"""Name the memory levels of recorded microbenchmark sessions again with the current rules, from
their own pointer-chase curves: the plateaus are found anew (``plateaus``) and each stored
plateau row gets the name ``label_levels`` gives it now. No figure changes, only names; the
GPU is not needed.

    python benchmarks/microbench_relabel.py microbench.duckdb
"""

from __future__ import annotations

import json
import sys

import duckdb

from karyamorph.microbench.plateaus import label_levels, plateaus


def relabel(path: str) -> int:
    con = duckdb.connect(path)
    changed = 0
    for session, environment in con.execute(
        "SELECT microbench_id, environment FROM microbench_runs"
    ).fetchall():
        l2_bytes = int(json.loads(environment)["device"]["l2_cache_bytes"])
        found = {}
        for variant in ("global.ca", "global.cg"):
            rows = con.execute(
                "SELECT parameter_value, value FROM microbench WHERE microbench_id = ? AND kind = 'chase' "
                "AND name = ? AND status = 'ok' ORDER BY parameter_value",
                [session, variant],
            ).fetchall()
            found[variant] = plateaus([r[0] for r in rows], [r[1] for r in rows])
        names = label_levels(found["global.ca"], found["global.cg"], l2_bytes)
        for variant, levels in found.items():
            for j, level in enumerate(levels):
                label = names.get((variant, j), f"level {j}")
                changed += con.execute(
                    "UPDATE microbench SET name = ?, detail = json_merge_patch(detail, ?) "
                    "WHERE microbench_id = ? AND kind = 'plateau' AND name LIKE ? AND parameter_value = ? "
                    "AND name <> ?",
                    [f"{variant}:{label}", json.dumps({"label": label}), session, variant + ":%", level.first,
                     f"{variant}:{label}"]).fetchone()[0]  # fmt: skip
    con.close()
    return changed


if __name__ == "__main__":
    print(f"{relabel(sys.argv[1])} plateau rows renamed")
