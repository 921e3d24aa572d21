"""Oracles for the memory instructions: ld, st, cvta, atom, red, through recording hooks.

The semantics of a memory instruction are its address arithmetic, its vector layout and (for
atomics) the value it stores; the memory itself is the interpreter's, tested on kernels. So the
form runs on the concrete domain with hooks that serve loads from a known function of the
address, record stores, and hand the atomic's update function a known old value; the oracle
says, from the PTX ISA, which accesses must happen with which values: "ld.v4 ... d[k] from
address a + k * size", and for the atomics the update rules of the ``atom`` section
(``inc``: ``(old >= b) ? 0 : old + 1``; ``dec``: ``((old == 0) || (old > b)) ? b : old - 1``;
``cas``: ``(old == b) ? c : old``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from karyamorph.model.check.isa_check import RegisterExec, synthetic
from karyamorph.model.semantics.concrete import UINT, ConcreteDomain
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import PtxType
from tests.model.oracle import floating, integer
from tests.model.oracle.expect import AnyNaN, Case, Exact, Expect, NotCovered
from tests.model.oracle.ieee import fmt
from tests.model.oracle.runner import Form
from tests.model.oracle.samples import lanes, type_bits

LANES = 64


def memory_word(addr: int, bits: int) -> int:
    """What a load of ``bits`` at ``addr`` returns: a fixed scramble of the address."""
    return (addr * 0x9E3779B97F4A7C15 >> 7) & ((1 << bits) - 1)


class MemoryExec(RegisterExec):
    """A register-only Exec whose memory hooks serve :func:`memory_word` and record accesses."""

    def __init__(
        self, dec: Any, values: dict[tuple[str, int], np.ndarray], base: np.ndarray, old: np.ndarray, vec: int
    ) -> None:
        super().__init__(ConcreteDomain(), dec, lambda s, t: values[(s, 0)], lambda s: values[(s, 0)], {})
        self.values, self.base, self.old, self.vec = values, base, old, vec
        self.accesses: list[tuple[str, str, list[int], Any]] = []

    def count(self, slot: str) -> int:
        return self.vec if slot in ("d", "b") and self.dec.instr.opcode in ("ld", "st", "atom", "red") else 1

    def read(self, slot: str, ty: PtxType, elem: int = 0) -> Any:
        return self.values[(slot, elem)].astype(UINT[ty.bits])

    def write(self, slot: str, value: Any, ty: PtxType, elem: int = 0) -> None:
        self.writes[f"{slot}{elem}"] = (value, ty)

    def address(self, slot: str) -> tuple[Any, int]:
        return self.base, 64

    def load(self, space: str, addr: Any, addr_bits: int, ty: PtxType) -> Any:
        a = [int(v) for v in np.broadcast_to(addr, self.base.shape)]
        self.accesses.append(("ld", space, a, ty.bits))
        return np.array([memory_word(v, ty.bits) for v in a], dtype=UINT[ty.bits])

    def store(self, space: str, addr: Any, addr_bits: int, value: Any, ty: PtxType) -> None:
        a = [int(v) for v in np.broadcast_to(addr, self.base.shape)]
        self.accesses.append(("st", space, a, [int(v) for v in np.broadcast_to(value, self.base.shape)]))

    def atomic(
        self,
        space: str,
        op: str,
        addr: Any,
        addr_bits: int,
        ty: PtxType,
        update: Callable[[Any, Any, Any], Any],
        b: Any,
        c: Any | None = None,
    ) -> Any:
        new = update(self.old.astype(UINT[ty.bits]), b, c)
        a = [int(v) for v in np.broadcast_to(addr, self.base.shape)]
        self.accesses.append(("atom", space, a, [int(v) for v in np.broadcast_to(new, self.base.shape)]))
        return self.old.astype(UINT[ty.bits])

    def cvta(self, space: str, to_space: bool, value: Any, bits: int) -> Any:
        self.accesses.append(("cvta", space, [int(to_space)], bits))
        return value


def _update(op: str, t: str, old: int, b: int, c: int) -> Expect:
    n = type_bits(t)
    if t[0] == "f" and op == "add":  # atom.add.f32/.f64: an IEEE add, to nearest
        f = fmt(t)
        r = floating.ieee_add(old, b, f, "rn")
        return AnyNaN(f) if r is None else Exact(r)
    so, sb = (integer.signed(old, n), integer.signed(b, n)) if t[0] == "s" else (old, b)
    value = {
        "add": old + b, "min": old if so < sb else b, "max": old if so > sb else b, "exch": b,
        "cas": c if old == b else old, "and": old & b, "or": old | b, "xor": old ^ b,
        "inc": 0 if old >= b else old + 1, "dec": b if old == 0 or old > b else old - 1,
    }[op]  # fmt: skip
    return Exact(integer.wrap(value, n))


def check_memory(machine: Machine, form: Form) -> list[str]:
    """Problems of one ld/st/cvta/atom/red form against its oracle (empty: it agrees)."""
    name, t = form.instr.name, (form.types[0] if form.types else "b32")
    if name not in ("ld", "st", "atom", "red", "cvta"):
        raise NotCovered(form.text)
    dec = decode_or_reason(synthetic(form.text, form.instr), machine)
    if isinstance(dec, Unmodeled):
        return [f"{form.text}: {dec.reason}"]
    vec = {"v2": 2, "v4": 4}.get(form.mod("vec") or "", 1)
    n, bits = type_bits(t), type_bits(t)
    every = lanes(Case({"b": t, "c": t, "o": t}, {}, lambda x: {}, random_lanes=LANES), form.text)
    rows = every[:: max(1, len(every) // LANES)][:LANES]
    base = np.array([0x1000 + 0x40 * k for k in range(LANES)], dtype=np.uint64)
    values = {(s, 0): np.array([r[s] for r in rows], dtype=UINT[bits]) for s in "bc"}
    for e in range(vec):  # each vector element its own value
        values[("b", e)] = np.array([r["b"] ^ e * 0x51 for r in rows], dtype=UINT[bits])
    values[("a", 0)] = base
    old = np.array([r["o"] for r in rows], dtype=UINT[bits])
    x = MemoryExec(dec, values, base, old, vec)
    with np.errstate(all="ignore"):
        dec.instr.semantics(x)
    space = form.mod("space") or "generic"
    step = max(1, n // 8)
    problems: list[str] = []
    if name == "ld":
        want = [("ld", space, [int(b) + k * step for b in base], n) for k in range(vec)]
        if x.accesses != want:
            problems.append(f"{form.text}: accesses {x.accesses[:2]}, want {want[:2]}")
        for k in range(vec):
            got = [int(v) for v in np.broadcast_to(x.writes.get(f"d{k}", (np.zeros(1),))[0], base.shape)]
            exp = [memory_word(int(b) + k * step, n) for b in base]
            if got != exp:
                problems.append(f"{form.text}: d[{k}] = {got[:2]}, want {exp[:2]}")
    elif name == "st":
        want_st = [
            ("st", space, [int(b) + k * step for b in base], [int(v) for v in values[("b", k)]])
            for k in range(vec)
        ]
        if x.accesses != want_st or x.writes:
            problems.append(f"{form.text}: accesses {x.accesses[:1]}, want {want_st[:1]}")
    elif name == "cvta":
        want_c = [("cvta", form.mod("space"), [int(form.mod("dir") == "to")], n)]
        if x.accesses != want_c:
            problems.append(f"{form.text}: {x.accesses}, want {want_c}")
    else:
        # A vector atomic (.v2/.v4) is one atomic per element, on consecutive elements.
        op = form.mod("op") or "add"
        want_at = [("atom", space, [int(b) + k * step for b in base]) for k in range(vec)]
        if [a[:3] for a in x.accesses] != want_at:
            return [f"{form.text}: accesses {[a[:3] for a in x.accesses][:2]}, want {want_at[:2]}"]
        for e in range(vec):
            stored = x.accesses[e][3]
            for k, r in enumerate(rows):
                b = int(values[("b", e)][k])
                exp = _update(op, t, r["o"], b, r["c"])
                if not exp.ok(stored[k]):
                    got = f"old={r['o']:#x} b={b:#x} stores {stored[k]:#x} (element {e})"
                    problems.append(f"{form.text}: {got}, want {exp}")
            got_d = x.writes.get(f"d{e}")
            if (name == "atom") != (got_d is not None) or (
                got_d is not None and [int(v) for v in got_d[0]] != [r["o"] for r in rows]
            ):
                problems.append(f"{form.text}: destination {e} is not the old value")
    return problems
