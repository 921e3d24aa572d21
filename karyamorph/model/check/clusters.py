"""What the checker does not encode of thread-block clusters, and the verdicts that therefore stand.

The two-thread encoding has one CTA's shared memory, and takes ``barrier.cluster.wait`` for a
CTA barrier. That is exact for a cluster of one CTA whose threads arrive (``.release``, the
default) right before they wait, with no memory access or label between: the form compilers emit
for ``cluster.sync()``. Outside it the encoding would order too much, so every verdict is
``unknown`` with :func:`cluster_reason`:

- a kernel launched in clusters of more than one CTA, or one that reaches a cluster's shared
  window (``mapa``, ``ld``/``st`` of ``.shared::cluster``): a race between CTAs of a cluster
  ordered (or not) by ``barrier.cluster``, and the bounds of an access to another CTA's shared
  memory, have no terms;
- an arrive whose wait is not next to it: what a thread does between them is unordered with what
  the others do after their wait (PTX ISA, barrier.cluster), while a CTA barrier at the wait
  would order it;
- ``barrier.cluster.arrive.relaxed``: it orders no memory access at all.

The interpreter runs all of these (its randomized order lets the CTAs of a cluster meet at
``barrier.cluster`` in any order), which is where a missing cluster barrier shows
(:mod:`karyamorph.model.interp.clusters`).
"""

from __future__ import annotations

from karyamorph.model.interp.program import Program
from karyamorph.model.ptx.cluster import cluster_shape

_WINDOW_OPCODES = ("ld", "st", "mapa")


def _lines(lines: list[int]) -> str:
    return ", ".join(map(str, lines[:8])) + (", ..." if len(lines) > 8 else "")


def _split_barriers(program: Program) -> list[str]:
    """Arrives that are relaxed, or whose wait does not follow with only register work between."""
    out = []
    decoded = program.decoded
    targets = set(program.labels.values())
    for pc, d in enumerate(decoded):
        if d.source.opcode != "barrier" or d.source.modifiers[:2] != ("cluster", "arrive"):
            continue
        if "relaxed" in d.source.modifiers:
            out.append(f"barrier.cluster.arrive.relaxed at line {d.line} orders no memory access")
            continue
        nxt = pc + 1
        while nxt < len(decoded) and nxt not in targets and decoded[nxt].instr.kind == "compute":
            nxt += 1
        after = decoded[nxt] if nxt < len(decoded) else None
        if after is None or nxt in targets or "wait" not in after.source.modifiers:
            where = f"line {after.line}" if after is not None else "the end"
            out.append(
                f"barrier.cluster.arrive at line {d.line} is apart from its wait (memory, control or a "
                f"label at {where} between): the encoding's CTA barrier would order what lies between"
            )
    return out


def cluster_reason(program: Program) -> str | None:
    """Why the checker cannot encode ``program``'s clusters, naming the lines; None when it can."""
    fn = program.fn
    shape = cluster_shape(fn)
    why = []
    if shape is None or shape[0] * shape[1] * shape[2] > 1:
        dims = "launch-given" if shape is None else "x".join(map(str, shape))
        why.append(f"clusters of {dims} CTAs (line {fn.loc.line})")
    lines = [
        ins.loc.line
        for ins in fn.instructions()
        if ins.opcode in _WINDOW_OPCODES and (ins.opcode == "mapa" or "shared::cluster" in ins.modifiers)
    ]
    if lines:
        why.append(f"the cluster's shared window at line(s) {_lines(lines)}")
    if why:
        return (
            f"{' and '.join(why)}: the two-thread encoding has one CTA's shared memory and no "
            "barrier.cluster between CTAs, so races and bounds across the CTAs of a cluster are not encoded"
        )
    split = _split_barriers(program)
    return "; ".join(split) if split else None
