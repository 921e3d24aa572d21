"""Semantics of the reduced PTX ISA, part 2: mov, cvt, setp, selp and the memory instructions."""

from __future__ import annotations

from karyamorph.model.ptx.arith import (
    BITS,
    D_A,
    FLOATS,
    INTS,
    RND,
    fconst,
    fin,
    flush,
    fminmax,
    fout,
    saturate,
)
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import PtxType, int_type, ptx_type

SPACES = ("global", "shared", "local", "param", "const")
ALL = (*BITS, "b8", *INTS, "u8", "s8", *FLOATS)
CMP_INT = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
CMP_FLOAT_ONLY = ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


# --- mov -------------------------------------------------------------------------------------------
def _mov(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    if t.kind == "pred":
        x.write_pred("d", x.read_pred("a"))
        return
    na, nd = x.count("a"), x.count("d")
    if na > 1:  # pack {lo, ..., hi} into one register; the first element is least significant
        w = t.bits // na
        et = int_type(w)
        v = x.read("a", et, 0)
        for k in range(1, na):
            v = d.concat(x.read("a", et, k), v, w, w * k)
        x.write("d", v, t)
    elif nd > 1:
        w = t.bits // nd
        v = x.read("a", t)
        for k in range(nd):
            x.write("d", d.extract(v, w * (k + 1) - 1, w * k, t.bits), int_type(w), k)
    else:
        x.write("d", x.read("a", t), t)


# --- setp / selp -----------------------------------------------------------------------------------
def compare(d: Domain[V, B], op: str, a: V, b: V, t: PtxType) -> B:
    """A PTX comparison operator on two values of type ``t``, as a predicate."""
    if t.is_float:
        ft = t.name
        an, bn = d.fisnan(a, ft), d.fisnan(b, ft)
        unordered = d.bor(an, bn)
        if op == "num":
            return d.bnot(unordered)
        if op == "nan":
            return unordered
        base = op[:-1] if op.endswith("u") else op
        lt, eq = d.flt(a, b, ft), d.feq(a, b, ft)
        r = {
            "eq": eq, "ne": d.band(d.bnot(unordered), d.bnot(eq)), "lt": lt, "le": d.bor(lt, eq),
            "gt": d.flt(b, a, ft), "ge": d.bor(d.flt(b, a, ft), eq),
        }[base]  # fmt: skip
        return d.bor(unordered, r) if op.endswith("u") else r
    n, sg = t.bits, t.signed
    if op in ("lo", "ls", "hi", "hs"):
        op, sg = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}[op], False
    if op == "eq":
        return d.eq(a, b, n)
    if op == "ne":
        return d.bnot(d.eq(a, b, n))
    if op == "lt":
        return d.lt(a, b, n, sg)
    if op == "le":
        return d.le(a, b, n, sg)
    if op == "gt":
        return d.lt(b, a, n, sg)
    return d.le(b, a, n, sg)


def _setp(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    op = x.mod("cmp") or "eq"
    a, b = (fin(x, s) for s in "ab") if t.is_float else (x.read(s, t) for s in "ab")
    p = compare(d, op, a, b, t)
    q = d.bnot(p) if x.has("q") else None  # the complement, only where it is written
    boolop = x.mod("bool")
    if boolop:
        other = x.read_pred("c")
        fn = {"and": d.band, "or": d.bor, "xor": d.bxor}[boolop]
        p, q = fn(p, other), None if q is None else fn(q, other)
    x.write_pred("p", p)
    if q is not None:
        x.write_pred("q", q)


def _setp_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    t, op = types[0], mods.get("cmp", "eq")
    if t not in FLOATS and op in CMP_FLOAT_ONLY:
        return f".{op} compares floating-point values only"
    if (t in FLOATS or t.startswith("s")) and op in ("lo", "ls", "hi", "hs"):
        return f".{op} compares unsigned integers only"  # ptxas: a mismatch on .s16 and the like
    if t.startswith("b") and op not in ("eq", "ne"):
        return f".{t} values compare with .eq and .ne only"
    if "ftz" in mods and t != "f32":
        return ".ftz applies to .f32 only"
    return None


def _selp(x: Exec[V, B]) -> None:
    t = x.ty
    x.write("d", x.D.ite(x.read_pred("c"), x.read("a", t), x.read("b", t), t.bits), t)


# --- cvt -------------------------------------------------------------------------------------------
def _int_bounds(t: PtxType) -> tuple[int, int]:
    return (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)


def _cvt(x: Exec[V, B]) -> None:
    d = x.D
    dt, at = x.types
    r = x.mod("rnd")
    if dt.is_float and at.is_float:
        a = x.read("a", at)
        # On the H200 (sm_90) cvt.ftz to .f16 keeps an .f32 subnormal source: cvt.rp.ftz.f16.f32
        # of 0x00000001 gives 0x0001 (datasets/validation/sm_90), though the PTX ISA says .ftz
        # flushes .f32 subnormal inputs.
        if x.mod("ftz") and at.name == "f32" and dt.name != "f16":
            a = flush(d, a, "f32")
        if dt.name == at.name:
            v = d.frint(a, at.name, r[:2]) if r else a
        elif dt.bits > at.bits or (dt.bits == at.bits and dt.name == "f32"):
            v = d.fcvt(a, at.name, dt.name, "rn")  # widening is exact
        else:
            v = d.fcvt(a, at.name, dt.name, (r or "rn")[:2])
        if x.mod("ftz") and dt.name == "f32":
            v = flush(d, v, "f32")
        x.write("d", _fsat(x, v, dt), dt)
    elif dt.is_float:
        x.write("d", _fsat(x, d.i2f(x.read("a", at), at.bits, at.signed, dt.name, (r or "rn")[:2]), dt), dt)
    elif at.is_float:
        a = x.read("a", at)
        if x.mod("ftz") and at.name == "f32":
            a = flush(d, a, "f32")
        v = d.frint(a, at.name, (r or "rzi")[:2])
        lo, hi = _int_bounds(dt)
        # Float -> integer saturates: NaN -> 0, out-of-range values clamp to the type's range.
        big = d.bnot(d.flt(v, fconst(d, float(hi + 1), at.name), at.name))
        # (lo itself may round to -inf in a narrow format: -inf is below every integer anyway)
        small = d.bor(
            d.flt(v, fconst(d, float(lo), at.name), at.name),
            d.feq(v, fconst(d, float("-inf"), at.name), at.name),
        )
        n = dt.bits
        out = d.ite(big, d.const(hi, n), d.ite(small, d.const(lo, n), d.f2i(v, at.name, n, dt.signed), n), n)
        # PTX: a NaN input gives "Zero if source is not .f64 and destination is not .s64, .u64.
        # Otherwise 1 << (BitWidth(dst) - 1)".
        nan = 1 << (n - 1) if at.name == "f64" or n == 64 else 0
        x.write("d", d.ite(d.fisnan(a, at.name), d.const(nan, n), out, n), dt)
    else:
        x.write("d", _int_cvt(d, x.read("a", at), at, dt, bool(x.mod("sat"))), dt)


def _fsat(x: Exec[V, B], v: V, t: PtxType) -> V:
    if not x.mod("sat"):
        return v
    return saturate(x.D, v, t.name)


def _int_cvt(d: Domain[V, B], a: V, at: PtxType, dt: PtxType, sat: bool) -> V:
    """Integer -> integer: truncate or extend by the source's signedness; .sat clamps."""
    if not sat:  # extending to 64 bits and truncating is extending (or truncating) directly
        if at.bits < dt.bits:
            return (d.sext if at.signed else d.zext)(a, at.bits, dt.bits)
        return d.trunc(a, at.bits, dt.bits) if at.bits > dt.bits else a
    w = 64
    wide = (d.sext if at.signed else d.zext)(a, at.bits, w) if at.bits < w else a
    if sat:
        lo, hi = _int_bounds(dt)
        if at.signed:
            wide = d.ite(d.lt(wide, d.const(lo, w), w, True), d.const(lo, w), wide, w)
            if hi < (1 << 63):
                wide = d.ite(d.lt(d.const(hi, w), wide, w, True), d.const(hi, w), wide, w)
        else:
            if hi < (1 << 64) - 1:
                wide = d.ite(d.lt(d.const(hi, w), wide, w, False), d.const(hi, w), wide, w)
    return d.trunc(wide, w, dt.bits) if dt.bits < w else wide


def _cvt_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at = ptx_type(types[0]), ptx_type(types[1])
    r = mods.get("rnd")
    if r and r.endswith("i") and dt.is_float and dt.name != at.name:
        return f".{r} between floats needs the same type (round to integral)"
    if r and not r.endswith("i") and dt.is_float and dt.name == at.name:
        return f".{r} cannot round a value to its own format (use .{r}i to round to an integral value)"
    if r and r.endswith("i") and not at.is_float:
        return f".{r} rounds a floating-point source to an integer"
    if r and not r.endswith("i") and not dt.is_float:
        return f".{r} rounds to a floating-point destination"
    if r and not r.endswith("i") and dt.is_float and at.is_float and dt.bits > at.bits:
        return "widening float conversions are exact and take no rounding modifier"
    if at.is_float and not dt.is_float and not r:
        return "float -> integer conversions need .rni/.rzi/.rmi/.rpi"
    if "ftz" in mods and "f32" not in types:
        return ".ftz needs an .f32 operand"
    if dt.is_float and at.is_float and dt.bits < at.bits and not r:
        return "narrowing float conversions need .rn/.rz/.rm/.rp"
    return _cvt_ptxas_rule(dt, at, r, "sat" in mods)


def _cvt_ptxas_rule(dt: PtxType, at: PtxType, rnd: str | None, sat: bool) -> str | None:
    """What the PTX ISA's cvt rules add, as ptxas (13.0) enforces them: integer to float needs a
    rounding modifier; ``.sat`` is illegal where the destination holds every source value and
    on ``.bf16`` conversions; ``.bf16`` does not convert to or from 8-bit integers."""
    names = {dt.name, at.name}
    if dt.is_float and not at.is_float and not rnd:
        return "integer -> float conversions need .rn/.rz/.rm/.rp"
    if "bf16" in names and names & {"s8", "u8"}:
        return "no conversion between .bf16 and 8-bit integers"
    if sat and "bf16" in names:
        return ".sat does not apply to .bf16 conversions"
    if sat and not dt.is_float and not at.is_float:
        lo, hi = _int_bounds(dt)
        src_lo, src_hi = _int_bounds(at)
        if lo <= src_lo and src_hi <= hi:
            return f".sat is illegal: .{dt.name} holds every .{at.name} value"
    return None


# --- memory ----------------------------------------------------------------------------------------
def _space(x: Exec[V, B]) -> str:
    return x.mod("space") or "generic"


def _ld(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    addr, abits = x.address("a")
    for k in range(x.count("d")):
        at = addr if k == 0 else d.add(addr, d.const(k * t.bytes, abits), abits)
        x.write("d", x.load(_space(x), at, abits, t), t, k)


def _st(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    addr, abits = x.address("a")
    for k in range(x.count("b")):
        at = addr if k == 0 else d.add(addr, d.const(k * t.bytes, abits), abits)
        x.store(_space(x), at, abits, x.read("b", t, k), t)


def _cvta(x: Exec[V, B]) -> None:
    t = x.ty
    space = x.mod("space") or "global"
    x.write("d", x.cvta(space, bool(x.mod("dir")), x.read("a", t), t.bits), t)


def atomic_update(d: Domain[V, B], op: str, t: PtxType, old: V, b: V, c: V | None) -> V:
    """The value an atomic ``op`` stores, given the old value and the operands: its semantics."""
    n = t.bits
    if op == "add":
        return d.fadd(old, b, t.name, "rn") if t.is_float else d.add(old, b, n)
    if op in ("min", "max"):
        if t.is_float:
            return fminmax(d, old, b, t.name, op == "max")
        less = d.lt(old, b, n, t.signed)
        return d.ite(less, old, b, n) if op == "min" else d.ite(less, b, old, n)
    if op == "exch":
        return b
    if op == "cas":
        if c is None:
            raise ValueError("atom.cas needs its operand c")
        return d.ite(d.eq(old, b, n), c, old, n)
    if op == "inc":  # ((old >= b) ? 0 : old + 1), unsigned
        return d.ite(d.le(b, old, n, False), d.const(0, n), d.add(old, d.const(1, n), n), n)
    if op == "dec":  # (((old == 0) | (old > b)) ? b : old - 1), unsigned
        wrap = d.bor(d.eq(old, d.const(0, n), n), d.lt(b, old, n, False))
        return d.ite(wrap, b, d.sub(old, d.const(1, n), n), n)
    fn = {"and": d.and_, "or": d.or_, "xor": d.xor}[op]
    return fn(old, b, n)


def _atom(x: Exec[V, B]) -> None:
    """One atomic read-modify-write per element: a vector atom (``.v2``/``.v4``) is, as the PTX ISA
    says, independent scalar atomics on consecutive elements, not one atomic access."""
    d, t = x.D, x.ty
    addr, abits = x.address("a")
    op = x.mod("op") or "add"
    c = x.read("c", t) if op == "cas" else None
    for k in range(x.count("b")):
        at = addr if k == 0 else d.add(addr, d.const(k * t.bytes, abits), abits)
        old = x.atomic(
            _space(x),
            op,
            at,
            abits,
            t,
            lambda o, b, c: atomic_update(d, op, t, o, b, c),
            x.read("b", t, k),
            c,
        )
        x.write("d", old, t, k)


def _red(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    addr, abits = x.address("a")
    op = x.mod("op") or "add"
    for k in range(x.count("b")):
        at = addr if k == 0 else d.add(addr, d.const(k * t.bytes, abits), abits)
        x.atomic(
            _space(x),
            op,
            at,
            abits,
            t,
            lambda o, b, c: atomic_update(d, op, t, o, b, c),
            x.read("b", t, k),
            None,
        )


ATOM_OPS = ("add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec")
ATOM_TYPES = ("b32", "b64", "u32", "u64", "s32", "s64", "f32", "f64")
# atom and red also reach the shared memory of the other CTAs of a cluster, as ld and st do
# (the distributed shared memory histogram's atomicAdd through cluster.map_shared_rank).
ATOM_GROUPS: dict[str, tuple[str, ...]] = {
    "space": ("global", "shared", "shared::cluster"), "op": ATOM_OPS, "vec": ("v2", "v4"),
}  # fmt: skip


def _atom_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    t, op = types[0], mods.get("op", "add")
    if mods.get("vec") and not (t == "f32" and op == "add" and mods.get("space") == "global"):
        # PTX ISA 8.1, sm_90: .v2/.v4 of .f32 add/min/max on .global (float min/max not modeled)
        return f"a vector atom (.{mods['vec']}) is .global .add .f32 here, not .{op} .{t}"
    if t in FLOATS and op not in ("add", "exch", "min", "max"):
        return f"atom.{op} is not defined on .{t}"
    if t.startswith("b") and op in ("add", "min", "max", "inc", "dec"):
        return f"atom.{op} needs a .u/.s/.f type, not .{t}"
    if op in ("and", "or", "xor", "cas", "exch") and not (t.startswith("b") or op == "exch"):
        return f"atom.{op} takes .b32/.b64"
    if op in ("inc", "dec") and t != "u32":
        return f"atom.{op} takes .u32"
    if t.startswith("f") and op in ("min", "max"):
        return "float atom.min/max are not modeled"
    return None


# ld and st also reach the shared memory of the other CTAs of a cluster (.shared::cluster addresses:
# karyamorph.model.ptx.cluster).
MEM_GROUPS: dict[str, tuple[str, ...]] = {"space": (*SPACES, "shared::cluster"), "vec": ("v2", "v4")}

DATA: tuple[Instr, ...] = (
    Instr("mov", ("pred", *ALL), D_A, _mov, doc="copy a register, immediate, address or special register",
          type_rule=lambda ts, m: f"mov has no 8-bit type (.{ts[0]})" if ts[0][1:] == "8" else None),
    Instr("setp", (*BITS, *INTS, *FLOATS), (Slot("p", "pred", dest=True, pair="q"), Slot("a"), Slot("b"),
          Slot("c", "pred", optional=True)), _setp,
          {"cmp": CMP_INT + CMP_FLOAT_ONLY, "bool": ("and", "or", "xor"), "ftz": ("ftz",)},
          required=("cmp",), type_rule=_setp_rule, doc="compare, optionally combine with a predicate"),
    Instr("selp", (*BITS, *INTS, *FLOATS), (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c", "pred")),
          _selp, doc="select on a predicate"),
    Instr("cvt", (*INTS, "u8", "s8", "f16", "bf16", *FLOATS), D_A, _cvt,
          {"rnd": (*RND, "rni", "rzi", "rmi", "rpi"), "ftz": ("ftz",), "sat": ("sat",)}, ntypes=2,
          type_rule=_cvt_rule, doc="convert between types (int<->int, int<->float, float<->float)"),
    Instr("ld", ALL, (Slot("d", dest=True), Slot("a", "addr")), _ld, MEM_GROUPS, kind="memory",
          doc="load (.v2/.v4 vectors; sub-word types extend into wider registers)"),
    Instr("st", ALL, (Slot("a", "addr"), Slot("b")), _st, MEM_GROUPS, kind="memory", doc="store"),
    Instr("cvta", ("u32", "u64"), D_A, _cvta, {"dir": ("to",), "space": ("global", "shared", "local", "const",
          "param")}, required=("space",), min_ptx="2.0", kind="memory",
          doc="convert between generic and state-space addresses"),
    Instr("atom", ATOM_TYPES, (Slot("d", dest=True), Slot("a", "addr"), Slot("b"), Slot("c", optional=True)),
          _atom, ATOM_GROUPS, required=("op",), min_ptx="1.1",
          kind="memory", type_rule=_atom_rule, doc="atomic read-modify-write; returns the old value"),
    Instr("red", ATOM_TYPES, (Slot("a", "addr"), Slot("b")), _red,
          ATOM_GROUPS, required=("op",), min_ptx="1.2",
          kind="memory", type_rule=lambda ts, m: _atom_rule(ts, m) or (
              "red has no .cas/.exch" if m.get("op") in ("cas", "exch") else None),
          doc="reduction to memory (atom without a result)"),
)  # fmt: skip

__all__ = ["DATA", "atomic_update", "compare", "fout"]
