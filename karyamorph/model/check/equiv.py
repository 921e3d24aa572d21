"""Bounded equivalence of two kernels: every thread run symbolically on symbolic inputs, outputs
compared by z3 for all inputs, at each launch the caller lists (sizes up to a bound).

Threads have concrete coordinates (:mod:`karyamorph.model.check.allthreads`); inputs are free
32-bit words, shared by both kernels (buffers are matched by parameter position). Instances
with the same launches are checked together, with the scalars that differ between them (``n``)
as symbolic values, so that "for every n <= 256" costs one run per grid shape, not one per n. Threads of a
block run one after another between barriers (the kernels are assumed race-free: check that
with :func:`karyamorph.model.check.checker.check`); warp shuffles and votes meet all lanes of the warp.
Floats are uninterpreted functions by default, so ``x * 2`` vs ``x + x`` on floats is not proved.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import z3

from karyamorph.isa import ast
from karyamorph.model.check.allthreads import Kernel, Side, run_launch
from karyamorph.model.check.encoding import consts
from karyamorph.model.check.symexec import Unsupported
from karyamorph.model.check.verdict import Verdict, Witness
from karyamorph.model.interp.program import prepare
from karyamorph.model.semantics.concrete import float_bits
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.symbolic import BitVec, Bool

__all__ = ["EquivInstance", "Side", "check_equivalence"]


@dataclass(frozen=True, slots=True)
class EquivInstance:
    """Both kernels at one size. ``outputs``: parameter positions whose final contents must be
    equal; ``sizes``: the named sizes, for messages (``(("n", 100),)``)."""

    sizes: tuple[tuple[str, int], ...]
    a: Side
    b: Side
    outputs: tuple[int, ...]


def _symbolic_scalars(
    side: str, params: tuple[ast.Param, ...], values: list[dict[str, int | float]]
) -> tuple[dict[str, BitVec], list[list[Bool]]]:
    """Scalar parameter terms (constant where every instance agrees) and, per instance, the
    equalities that select its values."""
    terms: dict[str, BitVec] = {}
    eqs: list[list[Bool]] = [[] for _ in values]
    for p in params:
        if p.name not in values[0]:
            continue
        bits = 8 * p.size_bytes
        raw = [_bits(v[p.name], p.type, bits) for v in values]
        if len(set(raw)) == 1:
            terms[p.name] = z3.BitVecVal(raw[0], bits)
            continue
        terms[p.name] = z3.BitVec(f"{side}.{p.name}", bits)
        for i, r in enumerate(raw):
            eqs[i].append(terms[p.name] == r)
    return terms, eqs


def _bits(v: int | float, ptx: str, bits: int) -> int:

    return (float_bits(float(v), ptx) if ptx in ("f16", "f32", "f64") else int(v)) % (1 << bits)


def check_equivalence(
    a: tuple[ast.Module, str],
    b: tuple[ast.Module, str],
    machine: Machine,
    instances: Iterable[EquivInstance],
    *,
    unroll: int = 8,
    timeout_ms: int = 60_000,
    floats: str = "uf",
) -> Verdict:
    """Prove that two kernels leave the same outputs for every input, at every given instance.

    Parameters
    ----------
    a, b
        ``(module, entry)`` of each kernel. Parameters are matched by position: the input
        buffers at one position start with the same (symbolic) contents in both.
    machine
        The machine model.
    instances
        The launches to compare, typically one per size up to a bound. Instances whose launches
        are equal are proved together, with the scalars that differ as symbolic values.
    unroll
        Iterations explored of loops whose trip count is not fixed by the instance.
    timeout_ms
        z3 timeout per query.
    floats
        ``uf``: float arithmetic as uninterpreted functions (fast; proves what holds whatever
        the operations compute, e.g. moves and reorders of float values); ``ieee``: z3's exact
        IEEE 754 theory (proves ``x * 2 == x + x``, slowly).

    Returns
    -------
    Verdict
        ``equiv``: proved (for every instance), proved-up-to-k, refuted (witness: the sizes as
        inputs, the output buffer and byte offset that differ, the input values) or unknown.
    """
    t0 = time.perf_counter()
    ka = Kernel(prepare(a[0], a[1], machine), a[0], machine.warp_size)
    kb = Kernel(prepare(b[0], b[1], machine), b[0], machine.warp_size)
    groups: dict[tuple[str, str, tuple[int, ...]], list[EquivInstance]] = {}
    for inst in instances:
        key = (repr(inst.a.launch), repr(inst.b.launch), inst.outputs)
        groups.setdefault(key, []).append(inst)
    if not groups:
        raise ValueError("check_equivalence needs at least one instance")
    cut_lines: list[int] = []
    count = 0
    todo = list(groups.values())
    while todo:
        insts = todo.pop(0)
        try:
            got = _check_group(ka, kb, insts, unroll, timeout_ms, cut_lines, floats)
        except Unsupported as e:
            if len(insts) > 1 and "data-dependent" in str(e):
                # Addresses depend on a size that varies in the group: one instance at a time.
                todo[:0] = [[i] for i in insts]
                continue
            return Verdict("equiv", "unknown", reason=f"not encodable: {e}", seconds=time.perf_counter() - t0)
        count += len(insts)
        if got is not None:
            verdict, witness, reason = got
            return Verdict("equiv", verdict, None, witness, reason, time.perf_counter() - t0)
    spent = time.perf_counter() - t0
    what = f"for all inputs at {count} instance(s) in {len(groups)} launch shape(s)"
    if cut_lines:
        lines = ", ".join(map(str, sorted(set(cut_lines))))
        return Verdict(
            "equiv", "proved-up-to-k", unroll, None, f"{what}; loops at lines {lines} unrolled", spent
        )
    return Verdict("equiv", "proved", None, None, what, spent)


def _check_group(
    ka: Kernel,
    kb: Kernel,
    insts: list[EquivInstance],
    unroll: int,
    timeout_ms: int,
    cut_lines: list[int],
    floats: str,
) -> tuple[str, Witness | None, str] | None:
    sa, eqa = _symbolic_scalars("a", ka.program.fn.params, [i.a.scalars for i in insts])
    sb, eqb = _symbolic_scalars("b", kb.program.fn.params, [i.b.scalars for i in insts])
    pa, pb = ka.program.fn.params, kb.program.fn.params
    biggest_a = {n: max(i.a.buffers[n] for i in insts) for n in insts[0].a.buffers}
    biggest_b = {n: max(i.b.buffers[n] for i in insts) for n in insts[0].b.buffers}
    first = insts[0]
    store_a, cuts_a = run_launch(ka, "a", Side(first.a.launch, biggest_a, {}), sa, unroll, floats)
    store_b, cuts_b = run_launch(kb, "b", Side(first.b.launch, biggest_b, {}), sb, unroll, floats)
    cut_lines += cuts_a + cuts_b
    choice = []
    sizes: dict[int, BitVec] = {}
    for pos in first.outputs:
        sizes[pos] = z3.BitVec(f"size{pos}", 64)
    for i, inst in enumerate(insts):
        sel = [*eqa[i], *eqb[i]]
        sel += [sizes[pos] == inst.a.buffers[pa[pos].name] for pos in first.outputs]
        choice.append(z3.And(sel) if sel else z3.BoolVal(True))
    chunks: list[tuple[int, int, BitVec, BitVec]] = []
    for pos in first.outputs:
        name_a, name_b = pa[pos].name, pb[pos].name
        base_a = next(x.base for x in store_a.layout.of_space("global") if x.name == name_a)
        base_b = next(x.base for x in store_b.layout.of_space("global") if x.name == name_b)
        size = biggest_a[name_a]
        step = 4 if size % 4 == 0 else 1
        for o in range(0, size, step):
            va = store_a.read("global", 0, base_a + o, step)
            vb = store_b.read("global", 0, base_b + o, step)
            if not va.eq(vb):
                chunks.append((pos, o, va, vb))
    if not chunks:
        return None
    diffs = [z3.And(z3.ULT(o, sizes[pos]), va != vb) for pos, o, va, vb in chunks]
    # One query for the whole group first; sums in different orders are hard for the solver
    # with symbolic sizes but trivial per instance, where the simplifier normalises them.
    got = _solve([z3.Or(choice), z3.Or(diffs)], min(timeout_ms, 3000))
    if got == "unsat":
        return None
    if isinstance(got, z3.ModelRef):
        return _witness(got, insts, choice, chunks, diffs, pa, floats)
    for i, inst in enumerate(insts):
        pairs = [
            (t, z3.BitVecVal(_bits(inst.a.scalars[n], _ptype(pa, n), t.size()), t.size()))
            for n, t in sa.items()
            if not z3.is_bv_value(t)
        ]
        pairs += [
            (t, z3.BitVecVal(_bits(inst.b.scalars[n], _ptype(pb, n), t.size()), t.size()))
            for n, t in sb.items()
            if not z3.is_bv_value(t)
        ]
        left = []
        for pos, o, va, vb in chunks:
            if o >= inst.a.buffers[pa[pos].name]:
                continue
            d = z3.simplify(z3.substitute(va != vb, *pairs) if pairs else va != vb)
            if not z3.is_false(d):
                left.append((pos, o, va, vb, d))
        if not left:
            continue
        got = _solve([choice[i], z3.Or([d for *_, d in left])], timeout_ms)
        if got == "unknown":
            return "unknown", None, f"z3 gave up at {_sizes(inst)}"
        if isinstance(got, z3.ModelRef):
            sub = [(p, o, va, vb) for p, o, va, vb, _ in left]
            return _witness(got, [inst], [choice[i]], sub, [d for *_, d in left], pa, floats)
    return None


def _ptype(params: tuple[ast.Param, ...], name: str) -> str:
    return str(next(p.type for p in params if p.name == name))


def _sizes(inst: EquivInstance) -> str:
    return ", ".join(f"{n} = {v}" for n, v in inst.sizes)


def _solve(constraints: list[Bool], timeout_ms: int) -> z3.ModelRef | str:
    """A model of ``constraints``, or "unsat" or "unknown"."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*constraints)
    r = s.check()
    return s.model() if r == z3.sat else "unsat" if r == z3.unsat else "unknown"


def _witness(
    m: z3.ModelRef,
    insts: list[EquivInstance],
    choice: list[Bool],
    chunks: list[tuple[int, int, BitVec, BitVec]],
    diffs: list[Bool],
    pa: tuple[ast.Param, ...],
    floats: str,
) -> tuple[str, Witness | None, str]:
    k = next(i for i, c in enumerate(choice) if z3.is_true(m.eval(c, model_completion=True)))
    pos, o, va, vb = next(
        w for w, d in zip(chunks, diffs, strict=True) if z3.is_true(m.eval(d, model_completion=True))
    )
    ops = _uninterpreted(va != vb)
    if ops:
        # A model of uninterpreted functions is no counterexample: the real operations may agree.
        how = "IEEE (floats='ieee')" if floats == "uf" else "exactly"
        return (
            "unknown",
            None,
            (
                f"at {_sizes(insts[k])}: output {pa[pos].name} bytes {o}.. differ only "
                f"through operations left uninterpreted ({', '.join(sorted(ops))}); "
                f"not proved, and no real counterexample; try encoding them {how}"
            ),
        )
    inputs: dict[str, int] = dict(insts[k].sizes)
    names = [p.name for p in pa]
    for n, v in sorted(_inputs_of(va != vb).items())[:32]:
        p, rest = n[2:].split("[", 1)
        # The 32-bit word at that byte offset of the input buffer (little endian).
        label = f"{names[int(p)]}@byte{rest[:-1]}:u32" if p.isdigit() else n
        inputs[label] = int(m.eval(v, model_completion=True).as_long())
    got_a = int(m.eval(va, model_completion=True).as_long())
    got_b = int(m.eval(vb, model_completion=True).as_long())
    w = Witness((), (), (), "global", pa[pos].name, o, tuple(inputs.items()))
    return (
        "refuted",
        w,
        (
            f"at {_sizes(insts[k])}: bytes {o}.. of output {pa[pos].name} (position {pos}) "
            f"are {got_a:#x} in a and {got_b:#x} in b"
        ),
    )


def _uninterpreted(term: z3.ExprRef) -> set[str]:
    """Names of uninterpreted functions applied in ``term`` (float arithmetic, approximations)."""
    out: set[str] = set()
    seen: set[int] = set()
    todo = [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.num_args() > 0 and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(t.decl().name())
        todo.extend(t.children())
    return out


def _inputs_of(term: z3.ExprRef) -> dict[str, BitVec]:
    """The input words ``term`` reads (bit-vector constants named ``in<position>[<offset>]``)."""
    return {n: v for n, v in consts(term, {}).items() if n.startswith("in") and isinstance(v, z3.BitVecRef)}
