"""A parsed PTX module in brief: version, target, entries with their parameters and registers,
and an instruction histogram (what ``karyamorph ptx info`` prints)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from karyamorph.isa import ast


def module_info(module: ast.Module) -> dict[str, Any]:
    """The module's header, each function (kind, name, linkage, instruction count, parameters,
    register declarations, attributes) and the opcode histogram over all functions, as a
    JSON-ready dict."""
    functions = []
    hist: Counter[str] = Counter()
    for f in module.functions:
        regs = [
            {"name": n, "type": s.type, "count": s.count or 1}
            for s in f.body or ()
            if isinstance(s, ast.VarDecl) and s.space == "reg"
            for n in s.names
        ]
        count = 0
        for ins in f.instructions():
            hist[ins.opcode] += 1
            count += 1
        functions.append({
            "kind": f.kind, "name": f.name, "linkage": list(f.linkage), "instructions": count,
            "params": [{"name": p.name, "type": p.type, "pointer": p.is_ptr} for p in f.params],
            "registers": regs, "attributes": {k: list(v) for k, v in f.attributes},
        })  # fmt: skip
    return {
        "version": module.version,
        "target": list(module.target),
        "address_size": module.address_size,
        "functions": functions,
        "histogram": dict(hist),
    }
