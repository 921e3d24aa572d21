"""Calls and warp synchronisation: ``call``, ``trap`` and ``bar.warp.sync``.

``call`` (PTX ISA, "Control Flow Instructions: call") never executes in the model: before a
kernel runs, every call is expanded in place (:mod:`karyamorph.model.interp.inline`), argument
and return ``.param`` variables become registers, the callee's ``ret`` a branch to the return
point. The declaration is here so that a module with calls decodes, and so that a call that
somehow reaches a driver says what happened instead of doing nothing.

``trap`` aborts the kernel (PTX ISA, "Miscellaneous Instructions: trap"): the interpreter raises
an execution error naming the line; the checker ends the thread's path there (as ``exit``: an
over-approximation, since every other thread stops too on the GPU). An indirect call whose
target matches no function of the module ends in a ``trap``.

``bar.warp.sync membermask`` (PTX ISA, "Parallel Synchronization and Communication
Instructions: bar.warp.sync") makes the named lanes wait for each other. The interpreter runs the
lanes of a warp together, so it only checks that every named lane executes the instruction (a
vote over the membermask does that check); the two-thread encoding orders the lanes of a warp
by it when its mask names the whole warp (:mod:`karyamorph.model.check.warpsync`).
"""

from __future__ import annotations

from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U32


def _call(x: Exec[V, B]) -> None:
    raise x.operand_error("call is expanded before execution; this one was not (a bug in the caller)")


def _trap(x: Exec[V, B]) -> None:
    x.trap()


def _warp_sync(x: Exec[V, B]) -> None:
    x.vote("all", x.D.bconst(True), x.read("mask", U32))


_CALL_OPERANDS = tuple(Slot(name, optional=True) for name in ("a", "b", "c", "d"))

CALLS: tuple[Instr, ...] = (
    Instr("call", (), _CALL_OPERANDS, _call, {"uni": ("uni",)}, ntypes=0, kind="control",
          doc="call a .func (expanded in place before execution)"),
    Instr("trap", (), (), _trap, ntypes=0, kind="control", doc="abort the kernel"),
    Instr("bar", (), (Slot("mask"),), _warp_sync, fixed=("warp", "sync"), ntypes=0, kind="warp",
          min_ptx="6.0", min_target="sm_30", doc="__syncwarp: the lanes of membermask wait for each other"),
)  # fmt: skip
