"""Semantics of the reduced PTX ISA, part 3: control flow, barriers, warp shuffles and votes,
and the special-function approximations (rcp, sqrt, rsqrt, ex2, lg2)."""

from __future__ import annotations

from collections.abc import Callable

from karyamorph.model.ptx.arith import D_A, RND, fconst, fin, fout, rnd
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Semantics, Slot
from karyamorph.model.semantics.types import U32


def _bra(x: Exec[V, B]) -> None:
    x.branch("target", bool(x.mod("uni")))


def _exit(x: Exec[V, B]) -> None:
    x.exit()


def _bar(x: Exec[V, B]) -> None:
    count = x.read("b", U32) if x.has("b") else None
    x.barrier(x.read("a", U32) if x.has("a") else x.D.const(0, 32), count)


def _shfl(x: Exec[V, B]) -> None:
    t = x.ty
    mode = x.mod("mode") or "idx"
    v, p = x.shuffle(mode, x.read("a", t), x.read("b", U32), x.read("c", U32), x.read("mask", U32))
    x.write("d", v, t)
    if x.has("p"):
        x.write_pred("p", p)


def _vote(x: Exec[V, B]) -> None:
    mode = x.mod("mode") or "all"
    r = x.vote(mode, x.read_pred("a"), x.read("mask", U32))
    if mode == "ballot":
        x.write("d", r, U32)
    else:
        x.write_pred("d", r)


def _elect(x: Exec[V, B]) -> None:
    # PTX ISA, elect.sync: one leader among the active threads of the mask, "deterministically,
    # the same leader for the same membermask"; which one is not stated. The model elects the
    # lowest such lane (d = its lane id, p true in it alone): the leader is a function of the
    # ballot of the members, so every driver that runs vote.ballot runs it.
    d = x.D
    members = x.vote("ballot", d.bconst(True), x.read("mask", U32))
    lowest = d.and_(members, d.neg(members, 32), 32)
    leader = d.sub(d.const(31, 32), d.clz(lowest, 32), 32)
    x.write("d", leader, U32)
    x.write_pred("p", d.eq(leader, x.lane(), 32))


def _approx(op: str) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, t = x.D, x.ty
        a = fin(x, "a")
        mode = x.mod("rnd") or "approx"
        if mode == "approx":
            r = d.fapprox(op, a, t.name)
        elif op == "rcp":
            r = d.fdiv(fconst(d, 1.0, t.name), a, t.name, rnd(x))
        else:
            r = d.fsqrt(a, t.name, rnd(x))
        x.write("d", fout(x, r), t)

    return sem


def _approx_rule(exact: bool) -> Callable[[tuple[str, ...], dict[str, str]], str | None]:
    def rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
        r = mods.get("rnd")
        if r is None:
            return "needs .approx" + (" or .rn/.rz/.rm/.rp" if exact else "")
        if r != "approx" and not exact:
            return "only .approx exists"
        if "ftz" in mods and types[0] != "f32":
            return ".ftz applies to .f32 only"
        if r == "approx" and types[0] == "f64" and not (exact and "ftz" in mods):
            return ".approx on .f64 needs .ftz (rcp/sqrt) or is not defined"
        return None

    return rule


_SYNC_MASK = Slot("mask")
_APPROX_GROUPS: dict[str, tuple[str, ...]] = {"rnd": (*RND, "approx"), "ftz": ("ftz",)}

CONTROL: tuple[Instr, ...] = (
    Instr("bra", (), (Slot("target", "label"),), _bra, {"uni": ("uni",)}, ntypes=0, kind="control",
          doc="branch; predicated branches may diverge"),
    Instr("ret", (), (), _exit, ntypes=0, kind="control", doc="return (from an entry: the thread ends)"),
    Instr("exit", (), (), _exit, ntypes=0, kind="control", doc="the thread ends"),
    Instr("bar", (), (Slot("a", optional=True), Slot("b", optional=True)), _bar, {"cta": ("cta",)},
          fixed=("sync",), ntypes=0, kind="barrier", doc="block barrier (waits for non-exited threads)"),
    Instr("barrier", (), (Slot("a", optional=True), Slot("b", optional=True)), _bar, {"cta": ("cta",)},
          fixed=("sync",), ntypes=0, kind="barrier", min_ptx="6.0", min_target="sm_30",
          doc="block barrier (barrier.sync; .aligned is accepted)"),
    Instr("shfl", ("b32",), (Slot("d", dest=True, pair="p"), Slot("a"), Slot("b"), Slot("c"), _SYNC_MASK),
          _shfl, {"mode": ("up", "down", "bfly", "idx")}, required=("mode",), fixed=("sync",),
          kind="warp", min_ptx="6.0", min_target="sm_30", doc="exchange a register between lanes"),
    Instr("vote", ("pred", "b32"), (Slot("d", dest=True), Slot("a", "pred"), _SYNC_MASK), _vote,
          {"mode": ("all", "any", "uni", "ballot")}, required=("mode",), fixed=("sync",), kind="warp",
          min_ptx="6.0", min_target="sm_30",
          type_rule=lambda ts, m: None if (m.get("mode") == "ballot") == (ts[0] == "b32")
          else ".ballot writes .b32, .all/.any/.uni write .pred", doc="warp vote"),
    Instr("elect", (), (Slot("d", dest=True, pair="p"), _SYNC_MASK), _elect, fixed=("sync",), ntypes=0,
          kind="warp", min_ptx="8.0", min_target="sm_90",
          doc="elect one leader lane among the active threads of a mask (the model: the lowest)"),
    Instr("rcp", ("f32", "f64"), D_A, _approx("rcp"), _APPROX_GROUPS,
          type_rule=_approx_rule(True), doc="reciprocal (.rn etc. IEEE, .approx hardware-defined)"),
    Instr("sqrt", ("f32", "f64"), D_A, _approx("sqrt"), _APPROX_GROUPS,
          type_rule=_approx_rule(True), doc="square root"),
    Instr("rsqrt", ("f32",), D_A, _approx("rsqrt"), _APPROX_GROUPS,
          type_rule=_approx_rule(False), doc="reciprocal square root (approximation)"),
    Instr("ex2", ("f32",), D_A, _approx("ex2"), _APPROX_GROUPS,
          type_rule=_approx_rule(False), doc="2**a (approximation)"),
    Instr("lg2", ("f32",), D_A, _approx("lg2"), _APPROX_GROUPS,
          type_rule=_approx_rule(False), doc="log2(a) (approximation)"),
)  # fmt: skip
