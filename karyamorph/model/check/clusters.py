"""Which thread-block clusters the checker encodes, and the verdicts that stand where it cannot.

The two-thread encoding follows a cluster of CTAs (:mod:`karyamorph.model.check.clusterwindow`):
an access of the cluster's shared window (``mapa``, ``ld``/``st``/``atom`` of
``.shared::cluster``) reaches the shared memory of the CTA its rank field names, and two
threads of different CTAs of a cluster are ordered exactly when they passed different numbers of
``barrier.cluster.wait``. An arrive is taken at its wait, which is exact when the thread arrives
(``.release``, the default) right before it waits, with no memory access or label between: the
form compilers emit for ``cluster.sync()``. Outside it the encoding would order too much, so
every verdict is ``unknown`` with :func:`cluster_reason`:

- an arrive whose wait is not next to it: what a thread does between them is unordered with what
  the others do after their wait (PTX ISA, barrier.cluster), while the encoding's barrier at the
  wait would order it;
- ``barrier.cluster.arrive.relaxed``: it orders no memory access at all;
- an ``.explicitcluster`` kernel without ``.reqnctapercluster`` whose launch gives no cluster
  shape.

The barrier property holds the threads of a block to each cluster barrier, as to a CTA barrier
(the encoding's ordering within a block rests on it); a thread of another CTA that never arrives
holds the cluster's wait only until it exits (PTX ISA: the wait is for the non-exited threads).

``--any-launch`` does not follow clusters of more than one CTA (:func:`any_launch_reason`).
What neither encodes, a CTA that exits while another CTA of its cluster still reads its shared
memory, the interpreter shows (:mod:`karyamorph.model.interp.clusters`).
"""

from __future__ import annotations

from karyamorph.model.interp.program import Program
from karyamorph.model.ptx.cluster import Dim3, cluster_shape

_WINDOW_OPCODES = ("ld", "st", "atom", "red", "mapa")


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


def _across(program: Program) -> list[str]:
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
    return why


def cluster_reason(program: Program, given: Dim3 | None = None) -> str | None:
    """Why the checker cannot encode ``program``'s clusters, naming the lines; None when it can.
    ``given``: the launch's cluster shape (for an ``.explicitcluster`` kernel)."""
    fn = program.fn
    if cluster_shape(fn, given) is None:
        return (
            f"clusters of launch-given CTAs (.explicitcluster at line {fn.loc.line} without "
            ".reqnctapercluster): the checker is not given the launch's cluster shape"
        )
    split = _split_barriers(program)
    return "; ".join(split) if split else None


def any_launch_reason(program: Program) -> str | None:
    """Why ``--any-launch`` cannot encode ``program``'s clusters (None when it can): it follows
    one CTA's shared memory and takes ``barrier.cluster`` for a CTA barrier."""
    why = _across(program)
    if why:
        return (
            f"{' and '.join(why)}: the any-launch encoding has one CTA's shared memory and no "
            "barrier.cluster between CTAs, so races and bounds across the CTAs of a cluster are not encoded"
        )
    return cluster_reason(program)
