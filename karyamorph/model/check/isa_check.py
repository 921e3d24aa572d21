"""Checks on the ISA itself: frame condition, stated laws (z3), concrete == symbolic, error bounds.

For every compute instruction form of a machine (:meth:`Instr.forms`):

- ``frame``: the semantics write only destination slots and touch no memory, warp or control
  hook;
- ``agreement``: the concrete domain and the symbolic domain in IEEE mode give the same bits on
  edge-case and random operands (the symbolic result is built once over free variables, then
  every sample is substituted and simplified). Forms whose result is a hardware approximation
  are reported as ``skip`` here and checked by their ``bound`` instead; forms the concrete
  domain does not compute (``.rz`` on ``f64``) are ``skip`` with the reason;
- ``law``: each author-stated :class:`Law`, proved for all inputs with z3 (floats as
  uninterpreted functions);
- ``bound``: each :class:`ErrorBound`, measured on the concrete domain against float64.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic

import numpy as np
import z3

from karyamorph.isa import ast
from karyamorph.model.semantics.concrete import (
    UINT,
    BoolArray,
    ConcreteDomain,
    UIntArray,
    UnsupportedOperation,
    bits_float,
    float_bits,
)
from karyamorph.model.semantics.decode import Decoded, DecodedOperands, Unmodeled, decode_or_reason
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import ErrorBound, Instr, Law, form_text
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.symbolic import BitVec, Bool, SymbolicDomain
from karyamorph.model.semantics.types import PtxType


@dataclass(frozen=True, slots=True)
class IsaCheckResult:
    """One check of one instruction form: ``status`` is pass, fail or skip (with the reason)."""

    form: str
    check: str
    status: str
    detail: str = ""
    seconds: float = 0.0


class HookUsed(Exception):
    """A compute instruction called a memory, warp or control hook."""


class RegisterExec(DecodedOperands, Generic[V, B]):
    """An :class:`~karyamorph.model.semantics.instruction.Exec` over registers only: inputs come from
    ``source(slot, ty)``, writes are kept: ``writes[slot]`` is ``(value, type)``, or
    ``(predicate, None)``."""

    def __init__(
        self,
        domain: Domain[V, B],
        dec: Decoded,
        source: Callable[[str, PtxType], V],
        pred_source: Callable[[str], B],
        imms: dict[str, int],
    ) -> None:
        self.D = domain
        self.dec = dec
        self.source = source
        self.pred_source = pred_source
        self.imms = imms
        self.writes: dict[str, tuple[V | B, PtxType | None]] = {}

    def count(self, slot: str) -> int:
        return 1

    def imm(self, slot: str) -> int:
        return self.imms[slot]

    def read(self, slot: str, ty: PtxType, elem: int = 0) -> V:
        return self.source(slot, ty)

    def read_pred(self, slot: str) -> B:
        return self.pred_source(slot)

    def write(self, slot: str, value: V, ty: PtxType, elem: int = 0) -> None:
        self.writes[slot] = (value, ty)

    def write_pred(self, slot: str, value: B) -> None:
        self.writes[slot] = (value, None)

    def _hook(self, *args: Any, **kwargs: Any) -> Any:  # Any: it stands in for every hook's signature
        raise HookUsed(f"{self.dec.source.full_opcode} uses a memory/warp/control hook")

    address = load = store = atomic = cvta = shuffle = vote = branch = exit = trap = barrier = _hook
    lane = copy_async = async_group = _hook


def synthetic(form: str, instr: Instr) -> ast.Instruction:
    """An instruction of the form with one register operand per slot (``%d``, ``%a`` ...)."""
    words = form.split(".")
    ops: list[ast.Operand] = []
    for s in instr.slots:
        if s.kind == "imm":
            ops.append(ast.Immediate("0"))
        elif s.kind == "addr":
            ops.append(ast.Address(ast.Register(f"%{s.name}")))
        elif s.kind == "label":
            ops.append(ast.Symbol(s.name))
        elif s.pair:
            ops.append(ast.Pair(ast.Register(f"%{s.name}"), ast.Register(f"%{s.pair}")))
        else:
            ops.append(ast.Register(f"%{s.name}"))
    return ast.Instruction(words[0], tuple(words[1:]), tuple(ops), loc=ast.Loc(1, 1))


def _decode(form: str, instr: Instr, machine: Machine) -> Decoded:
    got = decode_or_reason(synthetic(form, instr), machine)
    if isinstance(got, Unmodeled):
        raise ValueError(f"{form}: {got.reason}")
    return got


def _edges(ty: PtxType) -> list[int]:
    n = ty.bits
    ones = (1 << n) - 1
    ints = [0, 1, ones, 1 << (n - 1), (1 << (n - 1)) - 1, 2, n, n + 1, 0xFF & ones, 0x8000_0000 & ones]
    if not ty.is_float:
        return ints
    f = ty.name
    vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        3.0,
        float("inf"),
        float("-inf"),
        float("nan"),
        1e-40,
        -1e-40,
        1e-310,
        3.4e38,
        1.5,
        2.5,
        -2.5,
        2.0**31,
        -(2.0**31),
        2.0**32,
        1e20,
    ]
    return [float_bits(v, f) for v in vals] + [1, (1 << (n - 1)) + 1]


def _samples(ty: PtxType, count: int, rng: np.random.Generator) -> np.ndarray:
    edges = _edges(ty)
    n = ty.bits
    rand = rng.integers(0, 1 << min(n, 63), size=max(0, count - len(edges)), dtype=np.uint64)
    if n == 64:
        rand = rand | (rng.integers(0, 2, size=rand.size, dtype=np.uint64) << np.uint64(63))
    if ty.is_float:  # mostly moderate floats, so that arithmetic is exercised, not just NaN
        vals = rng.standard_normal(rand.size) * np.exp2(rng.integers(-20, 20, rand.size))
        rand = np.array([float_bits(float(v), ty.name) for v in vals], dtype=np.uint64)
    return np.concatenate([np.array(edges, dtype=np.uint64) & np.uint64((1 << n) - 1), rand]).astype(UINT[n])


def _check_form(instr: Instr, form: str, machine: Machine, samples: int, seed: int) -> list[IsaCheckResult]:
    t0 = time.perf_counter()
    dec = _decode(form, instr, machine)
    rng = np.random.default_rng(seed)
    conc: dict[tuple[str, str], UIntArray] = {}
    preds: dict[str, BoolArray] = {}
    size = samples + 40
    imms = {s.name: int(rng.integers(0, 256)) for s in instr.slots if s.kind == "imm"}

    def csrc(slot: str, ty: PtxType) -> UIntArray:
        key = (slot, ty.name)
        if key not in conc:
            v = _samples(ty, size, rng)
            conc[key] = rng.permutation(v)
        return conc[key]

    def cpred(slot: str) -> BoolArray:
        if slot not in preds:
            preds[slot] = rng.integers(0, 2, size).astype(bool)
        return preds[slot]

    cx = RegisterExec(ConcreteDomain(), dec, csrc, cpred, imms)
    out: list[IsaCheckResult] = []
    try:
        with np.errstate(all="ignore"):
            instr.semantics(cx)
    except UnsupportedOperation as exc:
        return [IsaCheckResult(form, "agreement", "skip", str(exc), time.perf_counter() - t0)]
    except HookUsed as exc:
        return [IsaCheckResult(form, "frame", "fail", str(exc), time.perf_counter() - t0)]
    extra = set(cx.writes) - instr.dest_slots
    frame_ok = not extra and any(s in cx.writes for s in instr.dest_slots)
    out.append(
        IsaCheckResult(
            form,
            "frame",
            "pass" if frame_ok else "fail",
            f"writes {sorted(cx.writes)}, destinations {sorted(instr.dest_slots)}",
        )
    )
    # The same semantics over z3 (IEEE floats), on free variables, then each sample substituted.
    sd = SymbolicDomain("ieee")
    svars: dict[tuple[str, str], BitVec] = {}
    spreds: dict[str, Bool] = {}

    def ssrc(slot: str, ty: PtxType) -> BitVec:
        return svars.setdefault((slot, ty.name), z3.BitVec(f"{slot}_{ty.name}", ty.bits))

    def spred(slot: str) -> Bool:
        return spreds.setdefault(slot, z3.Bool(f"{slot}_p"))

    sx = RegisterExec(sd, dec, ssrc, spred, imms)
    instr.semantics(sx)
    bad: list[str] = []
    approx = False
    is_approx = dec.mods.get("rnd") in ("approx", "full")
    for k in range(size):
        subs: list[tuple[z3.ExprRef, z3.ExprRef]]
        subs = [(v, z3.BitVecVal(int(conc[key][k]), v.size())) for key, v in svars.items()]
        subs += [(p, z3.BoolVal(bool(preds[s][k]))) for s, p in spreds.items()]
        for slot, (cval, ty) in cx.writes.items():
            term = (
                z3.simplify(z3.substitute(sx.writes[slot][0], *subs))
                if subs
                else z3.simplify(sx.writes[slot][0])
            )
            c = np.broadcast_to(np.asarray(cval), (size,))[k]
            want: int | bool = bool(c) if ty is None else int(c)
            if z3.is_bv_value(term):
                s_val: int | bool = term.as_long()
            elif z3.is_true(term) or z3.is_false(term):
                s_val = z3.is_true(term)
            elif is_approx:
                approx = True
                continue
            else:
                # simplify does not fold every FP conversion; ask the solver instead.
                solver = z3.Solver()
                solver.add(term != _constant(term, want))
                s_val = want if solver.check() == z3.unsat else (not want if ty is None else -1)
            if want != s_val:
                inputs = {key[0]: hex(int(v[k])) for key, v in conc.items()}
                bad.append(f"{slot}: concrete {int(c):#x} != symbolic {int(s_val):#x} for {inputs}")
    dt = time.perf_counter() - t0
    if bad:
        out.append(IsaCheckResult(form, "agreement", "fail", f"{len(bad)} mismatches; first: {bad[0]}", dt))
    elif approx:
        out.append(
            IsaCheckResult(
                form,
                "agreement",
                "skip",
                "hardware-defined approximation: bits not comparable; see its bound",
                dt,
            )
        )
    else:
        out.append(IsaCheckResult(form, "agreement", "pass", f"{size} samples", dt))
    return out


def _constant(term: BitVec | Bool, want: int | bool) -> BitVec | Bool:
    """``want`` as a constant of the sort of ``term``."""
    return z3.BitVecVal(int(want), term.size()) if isinstance(term, z3.BitVecRef) else z3.BoolVal(bool(want))


def _immediate(form: str, v: BitVec | Bool | int) -> int:
    if not isinstance(v, int):
        raise ValueError(f"{form}: an immediate operand must be an int, got {v}")
    return int(v)


class _LawRunner:
    """The ``run`` of a law (:class:`~karyamorph.model.semantics.instruction.LawRun`): evaluate an
    instruction form over ``d``; its first destination."""

    def __init__(self, d: SymbolicDomain, machine: Machine) -> None:
        self.d = d
        self.machine = machine

    def _first(self, form: str, operands: tuple[BitVec | Bool | int, ...]) -> BitVec | Bool:
        d, machine = self.d, self.machine
        words = form.split(".")
        target = next(i for i in machine.candidates(words[0]) if _decode_ok(form, i, machine))
        dec = _decode(form, target, machine)
        srcs = [s for s in target.slots if not s.dest and s.kind != "imm"]
        imm_slots = [s for s in target.slots if s.kind == "imm"]
        values = dict(zip([s.name for s in srcs], operands, strict=False))
        imms = {s.name: _immediate(form, v) for s, v in zip(imm_slots, operands[len(srcs) :], strict=False)}

        def src(slot: str, ty: PtxType) -> BitVec:
            v = values[slot]
            if isinstance(v, int):
                return d.const(v, ty.bits)
            if not isinstance(v, z3.BitVecRef):
                raise ValueError(f"{form}: operand {slot} must be a value, got the predicate {v}")
            if v.size() != ty.bits:
                return d.trunc(v, v.size(), ty.bits) if v.size() > ty.bits else d.zext(v, v.size(), ty.bits)
            return v

        def psrc(slot: str) -> Bool:
            v = values[slot]
            if not isinstance(v, z3.BoolRef):
                raise ValueError(f"{form}: operand {slot} must be a predicate, got {v}")
            return v

        x = RegisterExec(d, dec, src, psrc, imms)
        target.semantics(x)
        first = next(s for s in target.slots if s.dest)
        return x.writes[first.name][0]

    def __call__(self, form: str, *operands: BitVec | Bool | int) -> BitVec:
        v = self._first(form, operands)
        if not isinstance(v, z3.BitVecRef):
            raise ValueError(f"{form} gives a predicate: a law evaluates it with run.pred")
        return v

    def pred(self, form: str, *operands: BitVec | Bool | int) -> Bool:
        v = self._first(form, operands)
        if not isinstance(v, z3.BoolRef):
            raise ValueError(f"{form} gives a value: a law evaluates it with run")
        return v


def check_law(law: Law, instr: Instr, machine: Machine, timeout_ms: int = 10_000) -> list[IsaCheckResult]:
    """Prove a law at each of its types with z3 (floats uninterpreted)."""
    out = []
    for t in law.types:
        t0 = time.perf_counter()
        d = SymbolicDomain("uf")
        bits = int(t[1:]) if t[1:].isdigit() else 32

        run = _LawRunner(d, machine)
        vars_ = [z3.BitVec(f"v{i}", bits) for i in range(law.arity)]
        try:
            lhs, rhs = law.fn(run, d, t, *vars_)
            solver = z3.Solver()
            solver.set("timeout", timeout_ms)
            solver.add(lhs != rhs)
            verdict = solver.check()
        except (ValueError, StopIteration, KeyError) as exc:
            out.append(IsaCheckResult(f"{instr.name}.{t}", "law", "fail", f"{law.name}: {exc}"))
            continue
        dt = time.perf_counter() - t0
        if verdict == z3.unsat:
            out.append(IsaCheckResult(f"{instr.name}.{t}", "law", "pass", f"proved: {law.name}", dt))
        elif verdict == z3.sat:
            out.append(
                IsaCheckResult(
                    f"{instr.name}.{t}",
                    "law",
                    "fail",
                    f"refuted: {law.name}; counterexample {solver.model()}",
                    dt,
                )
            )
        else:
            out.append(
                IsaCheckResult(
                    f"{instr.name}.{t}", "law", "fail", f"unknown ({solver.reason_unknown()}): {law.name}", dt
                )
            )
    return out


def _decode_ok(form: str, instr: Instr, machine: Machine) -> bool:
    try:
        dec = _decode(form, instr, machine)
    except ValueError:
        return False
    return dec.instr is instr


def check_bound(bound: ErrorBound, instr: Instr, machine: Machine, samples: int = 4096) -> IsaCheckResult:
    """Measure an approximation's error on the concrete domain against its float64 reference."""
    t0 = time.perf_counter()
    dec = _decode(bound.form, instr, machine)
    rng = np.random.default_rng(0)
    lo, hi = bound.low, bound.high
    x = np.exp(rng.uniform(np.log(lo), np.log(hi), samples)) if lo > 0 else rng.uniform(lo, hi, samples)
    ft = dec.ty.name
    xb: np.ndarray = np.array([float_bits(float(v), ft) for v in x], dtype=UINT[dec.ty.bits])
    xv = np.array([bits_float(int(b), ft) for b in xb])
    cx = RegisterExec(ConcreteDomain(), dec, lambda s, ty: xb, lambda s: np.ones(samples, bool), {})
    instr.semantics(cx)
    got = np.array([bits_float(int(b), ft) for b in np.asarray(cx.writes["d"][0])])
    ref = bound.reference(xv)
    with np.errstate(all="ignore"):
        if bound.max_ulp is not None:
            ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
            err, limit, unit = float(np.nanmax(np.abs(got - ref) / ulp)), bound.max_ulp, "ulp"
        elif bound.max_rel is not None:
            err, limit, unit = float(np.nanmax(np.abs(got - ref) / np.abs(ref))), bound.max_rel, "relative"
        else:
            err, limit, unit = float(np.nanmax(np.abs(got - ref))), bound.max_abs or 0.0, "absolute"
    ok = err <= limit
    return IsaCheckResult(
        bound.form,
        "bound",
        "pass" if ok else "fail",
        f"max {unit} error {err:.3g} <= {limit:.3g} ({bound.source})"
        if ok
        else f"max {unit} error {err:.3g} exceeds {limit:.3g} ({bound.source})",
        time.perf_counter() - t0,
    )


def check_isa(
    machine: Machine, *, only: Iterable[str] | None = None, samples: int = 24, seed: int = 0
) -> list[IsaCheckResult]:
    """Every check of every compute instruction of ``machine`` (or of the names in ``only``).

    Memory, control, barrier and warp instructions get only their laws here; their behaviour is
    tested through the interpreter.
    """
    wanted = set(only) if only is not None else None
    results: list[IsaCheckResult] = []
    for k, instr in enumerate(machine.instructions):
        if wanted is not None and instr.name not in wanted:
            continue
        if instr.kind == "compute":
            for types, mods in instr.forms():
                form = form_text(instr, types, mods)
                results.extend(_check_form(instr, form, machine, samples, seed + k))
        for law in instr.laws:
            results.extend(check_law(law, instr, machine))
        for bound in instr.bounds:
            results.append(check_bound(bound, instr, machine))
    return results
