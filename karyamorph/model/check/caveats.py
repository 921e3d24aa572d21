"""What the two-thread race encoding does not order, and the race verdicts that therefore stand.

Two constructs are ordered by the encoding where it can follow them, and otherwise fall back to
a rule that is exact for bounds and barriers but not for races:

- ``cp.async`` copies land at some point before the wait that completes their group
  (:mod:`karyamorph.model.check.asynccopies`). Where the encoding cannot follow the groups (a
  loop abstracted with a free iteration variable, the any-launch encoding), the copies are
  encoded where they are issued; when a copy may then still be in flight at a barrier (issued,
  and no ``cp.async.wait_all`` / ``wait_group 0`` on every path to the barrier), its write may
  fall into a later barrier interval than the encoding puts it: a race verdict that involves it
  is unknown.
- ``bar.warp.sync`` orders the lanes of a warp (:mod:`karyamorph.model.check.warpsync`). Where
  a mask does not name the whole warp, or the encoding does not count warp barriers, a verdict
  about two lanes of one warp is unknown under independent thread scheduling.
- mbarrier waits (``mbarrier.test_wait``/``try_wait``) order the accesses before an arrival
  with those after the wait, which the encoding does not know: a refutation is unknown (a
  proof, made with fewer orderings than the kernel has, stands).
- bulk copies (``cp.async.bulk``, and tensor copies, ``cp.async.bulk.tensor``) land when
  their mbarrier's phase, or their bulk group, completes. Their bytes are logged where the
  copy is issued (so the bounds check covers them); a copy on a one-phase mbarrier is ordered
  by the encoding (:mod:`karyamorph.model.check.mbarrierphase`), and while any other is left,
  every race verdict of the kernel is unknown (a proof would take a later barrier for the
  landing).

Verdicts these limits cannot touch are kept: a refutation between two threads of different
warps, or between accesses none of which is an in-flight copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.model.check.verdict import ThreadId, Verdict
from karyamorph.model.interp.program import Program


@dataclass(frozen=True, slots=True)
class RaceCaveats:
    """Lines of copies in flight at barriers (and those barriers), and of warp barriers."""

    copies_in_flight: tuple[int, ...] = ()
    at_barriers: tuple[int, ...] = ()
    warp_barriers: tuple[int, ...] = ()
    mbarrier_waits: tuple[int, ...] = ()
    bulk_copies: tuple[int, ...] = ()
    bulk_why: tuple[str, ...] = ()  # why the encoding does not order those bulk copies

    def encoded(
        self, copies: bool, warp_barriers: bool, bulk: Mapping[int, str] | None = None
    ) -> RaceCaveats:
        """These caveats less those the encoding has ordered itself: the copies (``copies``),
        the warp barriers (``warp_barriers``), the bulk copies but those of ``bulk`` (why each
        line left is untracked; None: every bulk copy is left)."""
        left = self.bulk_copies if bulk is None else tuple(ln for ln in self.bulk_copies if ln in bulk)
        return dataclasses.replace(
            self,
            copies_in_flight=() if copies else self.copies_in_flight,
            at_barriers=() if copies else self.at_barriers,
            warp_barriers=() if warp_barriers else self.warp_barriers,
            bulk_copies=left,
            bulk_why=tuple(dict.fromkeys(bulk[ln] for ln in left)) if bulk is not None else (),
        )

    def reason(self) -> str:
        out = []
        if self.copies_in_flight:
            out.append(
                f"cp.async at line(s) {_lines(self.copies_in_flight)} may still be in flight at the "
                f"barrier(s) at line(s) {_lines(self.at_barriers)} (copies are encoded where they are "
                "issued, not where they land)"
            )
        if self.warp_barriers:
            out.append(
                f"bar.warp.sync at line(s) {_lines(self.warp_barriers)} orders lanes of a warp, which "
                "the two-thread encoding does not encode"
            )
        if self.bulk_copies:
            why = f" ({'; '.join(self.bulk_why)})" if self.bulk_why else ""
            out.append(
                f"bulk copies at line(s) {_lines(self.bulk_copies)} land when their mbarrier phase or "
                f"bulk group completes, which the two-thread encoding does not order{why}"
            )
        if self.mbarrier_waits:
            out.append(
                f"mbarrier waits at line(s) {_lines(self.mbarrier_waits)} order threads, which the "
                "two-thread encoding does not encode"
            )
        return "; ".join(out)


MBARRIER_WAITS = ("mbarrier.test_wait", "mbarrier.try_wait")
BULK_COPIES = ("cp.async.bulk", "cp.async.bulk.tensor")


def _lines(lines: tuple[int, ...]) -> str:
    return ", ".join(map(str, lines))


def _successors(program: Program, pc: int) -> list[int]:
    ins = program.decoded[pc].source
    guarded = ins.guard is not None
    if ins.opcode == "bra":
        target = ins.operands[0]
        label = program.labels.get(target.name, -1) if isinstance(target, ast.Symbol) else -1
        return [label, pc + 1] if guarded else [label]
    if ins.opcode in ("ret", "exit", "trap"):
        return [pc + 1] if guarded else []
    return [pc + 1]


InFlight = tuple[frozenset[int], frozenset[int]]  # lines of copies: uncommitted, committed


def _transfer(program: Program, pc: int, state: InFlight) -> InFlight:
    """(uncommitted, committed-maybe-pending) copy lines after instruction ``pc``."""
    dec = program.decoded[pc]
    name = dec.instr.name
    uncommitted, pending = state
    if name == "cp.async":
        new = (uncommitted | {dec.line}, pending)
    elif name == "cp.async.commit_group":
        new = (frozenset(), pending | uncommitted)
    elif name == "cp.async.wait_all":
        new = (frozenset(), frozenset())
    elif name == "cp.async.wait_group" and dec.source.operands == (ast.Immediate("0"),):
        new = (uncommitted, frozenset())
    else:
        return state
    if dec.source.guard is not None:  # the effect may not happen: keep what was in flight too
        return (new[0] | uncommitted, new[1] | pending)
    return new


def race_caveats(program: Program, scheduling: str) -> RaceCaveats:
    """The caveats of a kernel's race verdicts (empty when the encoding is exact for it)."""
    warp = tuple(d.line for d in program.decoded if d.instr.name == "bar.warp.sync")
    waits = tuple(d.line for d in program.decoded if d.instr.name.startswith(MBARRIER_WAITS))
    bulk = tuple(d.line for d in program.decoded if d.instr.name in BULK_COPIES)
    if not any(d.instr.name.startswith("cp.async") for d in program.decoded):
        return RaceCaveats(warp_barriers=warp if scheduling == "its" else (), mbarrier_waits=waits)
    n = len(program.decoded)
    empty: InFlight = (frozenset(), frozenset())
    state: dict[int, InFlight] = {0: empty}
    todo = [0]
    while todo:
        pc = todo.pop()
        out = _transfer(program, pc, state[pc])
        for nxt in _successors(program, pc):
            if not 0 <= nxt < n:
                continue
            old = state.get(nxt)
            merged = out if old is None else (old[0] | out[0], old[1] | out[1])
            if merged != old:
                state[nxt] = merged
                todo.append(nxt)
    copies: set[int] = set()
    barriers: set[int] = set()
    for pc, (uncommitted, pending) in state.items():
        dec = program.decoded[pc]
        if dec.instr.kind == "barrier" and (uncommitted or pending):
            copies |= uncommitted | pending
            barriers.add(dec.line)
    its = warp if scheduling == "its" else ()
    return RaceCaveats(tuple(sorted(copies)), tuple(sorted(barriers)), its, waits, bulk)


def _linear(t: ThreadId, block: tuple[int, int, int]) -> int:
    return t.thread[0] + block[0] * (t.thread[1] + block[1] * t.thread[2])


def apply_race_caveats(
    v: Verdict, caveats: RaceCaveats, block: tuple[int, int, int], warp_size: int
) -> Verdict:
    """``v`` (a race verdict), or an unknown verdict when the caveats may have decided it."""
    # A race the interpreter's landing check confirmed stands: that check follows the phases.
    landed = v.replay is not None and v.replay.landed
    refuted_past_waits = v.verdict == "refuted" and bool(caveats.mbarrier_waits) and not landed
    if v.verdict == "unknown" and caveats.bulk_copies:  # the copies left untracked, and why
        bulk = dataclasses.replace(caveats, copies_in_flight=(), warp_barriers=(), mbarrier_waits=())
        return dataclasses.replace(v, reason="; ".join(x for x in (v.reason, bulk.reason()) if x))
    if v.verdict == "unknown" or not (
        caveats.copies_in_flight or caveats.warp_barriers or refuted_past_waits or caveats.bulk_copies
    ):
        return v
    w = v.witness
    if w is not None and len(w.threads) == 2 and not caveats.bulk_copies:
        a, b = w.threads
        same_warp = a.block == b.block and _linear(a, block) // warp_size == _linear(b, block) // warp_size
        copy_involved = any(line in caveats.copies_in_flight for line in w.lines)
        warp_involved = same_warp and bool(caveats.warp_barriers)
        if not copy_involved and not warp_involved and not refuted_past_waits:
            return v
    # The replay goes with the witness: it replayed a verdict that no longer stands.
    return dataclasses.replace(
        v, verdict="unknown", k=None, witness=None, replay=None, reason=caveats.reason()
    )
