"""Verdicts of the z3 checks: proved, proved up to k, refuted with a concrete witness, or unknown."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

VERDICTS = ("proved", "proved-up-to-k", "refuted", "unknown")
PROPERTIES = ("bounds", "race", "barrier", "equiv")
REPLAY_STATUSES = ("confirmed", "not confirmed", "not replayable")


@dataclass(frozen=True, slots=True)
class ThreadId:
    """One thread of a launch: its block (``%ctaid``) and thread (``%tid``) coordinates."""

    block: tuple[int, int, int]
    thread: tuple[int, int, int]

    def __str__(self) -> str:
        b, t = self.block, self.thread
        return f"block ({b[0]},{b[1]},{b[2]}) thread ({t[0]},{t[1]},{t[2]})"


@dataclass(frozen=True, slots=True)
class Witness:
    """A concrete counterexample taken from a z3 model.

    Attributes
    ----------
    threads : tuple of ThreadId
        The thread that goes wrong (bounds), or the two threads involved (race, barrier).
    lines : tuple of int
        PTX line of the instruction each thread executes (same order as ``threads``).
    instructions : tuple of str
        The opcodes at those lines (``st.shared.u32``).
    space : str or None
        State space of the access (``global``, ``shared``, ``local``).
    buffer : str or None
        The parameter or ``.shared`` variable the access goes to (None: outside every allocation).
    address : int or None
        Byte offset of the access inside ``buffer`` (or the raw address when ``buffer`` is None).
    inputs : tuple of (str, int)
        Input values the witness needs: free scalars (``n``) and loaded elements (``x[12]``);
        float values are given as bit patterns.
    sources : tuple of str
        The source ``file:line`` of each PTX line (from ``.loc`` directives), ``""`` where the
        PTX carries none; empty when not known.
    launch : tuple of (grid, block) or None
        The launch the witness needs, each a tuple of 3 ints, when the check covered many
        (``check --any-launch``); None: the checked launch.
    served : tuple of bool
        Whether each thread's access goes where the ticket an atomic serves it sends it
        (:mod:`karyamorph.model.check.tickets`): which thread draws that ticket depends on the
        order, so the thread named is one that may (empty: none does).
    """

    threads: tuple[ThreadId, ...]
    lines: tuple[int, ...]
    instructions: tuple[str, ...] = ()
    space: str | None = None
    buffer: str | None = None
    address: int | None = None
    inputs: tuple[tuple[str, int], ...] = ()
    sources: tuple[str, ...] = ()
    launch: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None
    served: tuple[bool, ...] = ()

    def as_dict(self) -> dict[str, Any]:  # Any: a JSON row of strings, numbers and lists
        launch = (
            {}
            if self.launch is None
            else {"launch": {"grid": list(self.launch[0]), "block": list(self.launch[1])}}
        )
        return {
            "threads": [{"block": list(t.block), "thread": list(t.thread)} for t in self.threads],
            "lines": list(self.lines),
            "instructions": list(self.instructions),
            "space": self.space,
            "buffer": self.buffer,
            "address": self.address,
            "inputs": dict(self.inputs),
            "sources": list(self.sources),
            **({"served": list(self.served)} if any(self.served) else {}),
            **launch,
        }

    def __str__(self) -> str:
        drew = (*self.served, *(False,) * len(self.threads))
        who = " and ".join(
            f"{t} (or whichever thread draws its ticket)" if d else str(t)
            for t, d in zip(self.threads, drew, strict=False)
        )
        src = self.sources or ("",) * len(self.lines)
        at = ", ".join(
            f"line {n} ({i}{', ' + s if s else ''})"
            for n, i, s in zip(self.lines, self.instructions, src, strict=False)
        )
        where = f" {self.space} {self.buffer or '<no allocation>'}+{self.address}" if self.space else ""
        if self.space == "cluster":  # mapa's rank operand (the bounds check's pseudo-space)
            where = f" cluster rank {self.address}"
        ins = f" inputs {dict(self.inputs)}" if self.inputs else ""
        if self.launch is not None:
            (gx, gy, gz), (bx, by, bz) = self.launch
            who = f"launch grid ({gx},{gy},{gz}) block ({bx},{by},{bz}): {who}"
        return f"{who} at {at}{where}{ins}"


@dataclass(frozen=True, slots=True)
class Replay:
    """What the CPU interpreter made of a witness (:func:`karyamorph.model.check.replay.replay`).

    Attributes
    ----------
    status : str
        ``confirmed`` (the interpreter shows the violation the witness names), ``not confirmed``
        (it ran the witness's inputs and did not), or ``not replayable`` (it was not run).
    detail : str
        What the interpreter showed, or why not.
    seconds : float
        Wall time of the replay.
    same_value : bool
        ``not confirmed`` because the two stores of a race witness wrote one value in every
        order tried (a same-value store, benign unless strict), while the check had left the
        values free: the abstraction's limit, not a contradiction of a decided witness.
    landed : bool
        ``confirmed`` by the interpreter's check of asynchronous copies' landings
        (:mod:`karyamorph.model.interp.landing`), which follows mbarrier phases: a read came
        before the copy it races with landed, whatever else the waits order.
    """

    status: str
    detail: str
    seconds: float = 0.0
    same_value: bool = False
    landed: bool = False

    def __post_init__(self) -> None:
        if self.status not in REPLAY_STATUSES:
            raise ValueError(f"replay status must be one of {REPLAY_STATUSES}, got {self.status!r}")

    def as_dict(self) -> dict[str, Any]:  # Any: a JSON row of strings, numbers and lists
        return {"status": self.status, "detail": self.detail}

    def __str__(self) -> str:
        head = "confirmed on the interpreter" if self.status == "confirmed" else self.status
        return f"{head} ({self.detail})" if self.detail else head


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one property check.

    Attributes
    ----------
    property : str
        One of ``bounds``, ``race``, ``barrier``, ``equiv``.
    verdict : str
        ``proved``; ``proved-up-to-k`` (loops unrolled ``k`` times, deeper iterations unexplored);
        ``refuted`` (with ``witness``); ``unknown`` (with ``reason``). Unknown is never a pass.
    k : int or None
        The unrolling depth of a ``proved-up-to-k`` verdict.
    witness : Witness or None
        Set exactly when the verdict is ``refuted``.
    reason : str
        Why the verdict is not a plain proof, or what was assumed (empty when nothing to say).
    seconds : float
        Wall time of the check (the replay not included).
    replay : Replay or None
        The witness replayed on the CPU interpreter (refuted verdicts, when asked for).
    """

    property: str
    verdict: str
    k: int | None = None
    witness: Witness | None = None
    reason: str = ""
    seconds: float = 0.0
    replay: Replay | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if (self.verdict == "refuted") != (self.witness is not None):
            raise ValueError(f"{self.property}: a witness is required exactly for a refuted verdict")
        if (self.verdict == "proved-up-to-k") != (self.k is not None):
            raise ValueError(f"{self.property}: k is required exactly for a proved-up-to-k verdict")
        if self.replay is not None and self.witness is None:
            raise ValueError(f"{self.property}: a replay needs a witness")

    @builtins.property
    def passed(self) -> bool:
        """True for proved and proved-up-to-k; refuted and unknown never pass."""
        return self.verdict in ("proved", "proved-up-to-k")

    def as_dict(self) -> dict[str, Any]:  # Any: a JSON row of strings, numbers and lists
        """The JSON shape of ``karyamorph check``: property, verdict, k, witness, reason, seconds,
        replay (``{"status", "detail"}`` or None)."""
        return {
            "property": self.property,
            "verdict": self.verdict,
            "k": self.k,
            "witness": self.witness.as_dict() if self.witness else None,
            "reason": self.reason,
            "seconds": round(self.seconds, 6),
            "replay": self.replay.as_dict() if self.replay else None,
        }
