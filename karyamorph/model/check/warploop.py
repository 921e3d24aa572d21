"""The one loop around a warp's store: which counted loop, run once for a free iteration, covers
every execution of a store inside a loop, so that the lanes of a warp can be compared there.

A store inside a loop is made once per iteration by each lane. The race check pairs two lanes'
stores that passed as many barriers, so the same-value proof must compare the lanes' stores of one
iteration, and its run of the body must cover every iteration. Both hold when the store's only
loop is a counted loop (:mod:`karyamorph.model.check.loops`, warp instructions allowed: the lanes
are all run) that every iteration passes a barrier in, the store is in no nested cycle, and the
barriers passed before the loop are one count for every lane: a lane's barrier count at the store
is then ``start + k * barriers`` with the same ``start`` for every lane, so equal counts mean one
iteration ``k`` (iteration numbers below ``2**64 / barriers``).
"""

from __future__ import annotations

import networkx as nx
import z3

from karyamorph.model.check.loops import CountedLoop, counted_loops
from karyamorph.model.check.terms import uninterpreted
from karyamorph.model.interp.program import Program
from karyamorph.model.semantics.symbolic import BitVec


def enclosing_loop(program: Program, pc: int) -> tuple[CountedLoop | None, str]:
    """The counted loop whose single run for a free iteration covers every store at ``pc``
    (None with the reason when there is none such).

    Parameters
    ----------
    program
        The kernel as the model runs it.
    pc
        Index of the store instruction, inside some loop.

    Returns
    -------
    tuple[CountedLoop | None, str]
        The loop and an empty string, or None and why the store cannot be compared per iteration.
    """
    cfg = program.cfg
    home = cfg.block_of[pc]
    components: list[set[int]] = list(nx.strongly_connected_components(cfg.graph))
    cycle = next((c for c in components if home in c), set())
    loops = counted_loops(program.decoded, program.labels, warp=True)
    for loop in loops.values():
        blocks = {cfg.block_of[i] for i in range(loop.header, loop.back_edge + 1)}
        if home not in blocks:
            continue
        if blocks != cycle:
            return None, "the loop is nested in another loop"
        if not loop.barriers:
            return None, "the loop has no barrier every iteration passes"
        inner = nx.DiGraph(cfg.graph.subgraph(blocks))
        inner.remove_edge(cfg.block_of[loop.back_edge], cfg.block_of[loop.header])
        if inner.has_edge(home, home) or any(
            home in c and len(c) > 1 for c in nx.strongly_connected_components(inner)
        ):
            return None, "the store is in a loop nested in the loop"
        return loop, ""
    return None, "the loop is not a counted loop"


def same_start(epoch: BitVec, k: BitVec, lane: BitVec) -> bool:
    """Whether a lane's barrier count ``epoch`` at a store inside the loop of iteration ``k`` (a
    term of the lane ``lane``) grows with ``k`` from a start that no lane's own values change (the
    barriers before the loop are one count for every lane)."""
    if not any(t.eq(k) for t in uninterpreted(epoch, constants=True, applications=True)):
        return False  # not reached in the run of the body for a free iteration
    start = z3.simplify(z3.substitute(epoch, (k, z3.BitVecVal(0, 64))))
    return not any(t.eq(lane) for t in uninterpreted(start))
