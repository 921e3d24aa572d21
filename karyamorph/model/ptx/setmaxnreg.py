"""Hopper's per-warpgroup register budget: ``setmaxnreg``.

PTX ISA, "Miscellaneous Instructions: setmaxnreg" (PTX 8.0, sm_90a)::

    setmaxnreg.inc.sync.aligned.u32 imm-reg-count;
    setmaxnreg.dec.sync.aligned.u32 imm-reg-count;

Every thread of the executing warpgroup (``.sync.aligned``: all four warps, each converged)
raises (``.inc``) or lowers (``.dec``) the number of registers it holds to ``imm-reg-count``, a
multiple of 8 from 24 to 256. Warp-specialised kernels lower the producer warpgroup's budget and
raise the consumers' so that the consumers can hold larger accumulator tiles. It changes no
register's value, memory or control flow: what is left for the model is the immediate's range and
that the whole warpgroup executes it. Whether the SM can grant an ``.inc`` (it waits until
registers are free) is a matter of occupancy, not of values, and is not modeled.
"""

from __future__ import annotations

from karyamorph.model.ptx.wgmma import in_warpgroup
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot

LOWEST, HIGHEST, STEP = 24, 256, 8
"""The register counts ``imm-reg-count`` may name."""


def _setmaxnreg(x: Exec[V, B]) -> None:
    count = x.imm("count")
    if not (LOWEST <= count <= HIGHEST and count % STEP == 0):
        raise x.operand_error(
            f"register count {count} is not a multiple of {STEP} from {LOWEST} to {HIGHEST}"
        )
    in_warpgroup(x, x.D.bconst(True), "")


def _declare(action: str, doc: str) -> Instr:
    return Instr("setmaxnreg", ("u32",), (Slot("count", "imm"),), _setmaxnreg,
                 fixed=(action, "sync", "aligned"), kind="warp", min_ptx="8.0", min_target="sm_90a",
                 doc=doc)  # fmt: skip


SETMAXNREG: tuple[Instr, ...] = (
    _declare("inc", "raise the warpgroup's registers a thread to the count (values unchanged)"),
    _declare("dec", "lower the warpgroup's registers a thread to the count (values unchanged)"),
)
