"""Python -> PTX Module: typed instruction helpers and structured loops on top of the emitter."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from karyamorph.isa import ast
from karyamorph.isa.emitter import Emitter
from karyamorph.isa.operands import (
    CMP_FLOAT,
    CMP_INT,
    FLOAT_ROUNDING,
    INT_ROUNDING,
    REGISTER_CLASSES,
    SREG_64,
    WIDE,
    WIDEN8,
    BuilderError,
    LabelRef,
    Not,
    Place,
    Pred,
    Reg,
    Value,
    default_modifier,
    fits,
    immediate,
    split_spec,
    type_kind,
)

__all__ = ["BuilderError", "KernelBuilder", "LabelRef", "Not", "Reg", "fits", "immediate"]


class KernelBuilder(Emitter):
    """Builds one ``.entry`` kernel, statement by statement, into an :class:`ast.Module`.

    Type arguments are written ``"[modifiers.]type"`` (``"f32"``, ``"rn.ftz.f32"``, ``"hi.u32"``);
    the builder adds the modifiers PTX requires (``mul.lo`` for integers, ``fma.rn``, ``div.rn``
    for floats, ``cvt`` rounding) when none is given. Arithmetic helpers return a fresh register,
    or write ``out=`` or a leading destination operand (``k.add("u32", d, a, b)``).

    Parameters
    ----------
    name : str
        The kernel's entry name.
    target : str
        ``.target`` entries, comma-separated (``"sm_80"``, ``"sm_90a"``).
    version : str
        The ``.version`` (PTX ISA) of the module.
    """

    # --- special registers ---------------------------------------------------------------------
    def sreg(self, name: str) -> Reg:
        """Copy a special register into a fresh one: ``k.sreg("tid.x")`` -> ``mov.u32 %r0, %tid.x;``."""
        name = name.lstrip("%")
        if not re.fullmatch(r"[a-z_][a-z0-9_]*(\.[xyz])?", name):
            raise self._error("sreg", f"%{name} is not a special register name (tid.x, laneid, ...)")
        t = "u64" if name in SREG_64 else "u32"
        return self.mov(t, ast.Register("%" + name))

    def global_thread_id(self, axis: str = "x") -> Reg:
        """``ctaid * ntid + tid`` along ``axis``, as nvcc computes it (``mad.lo.s32``)."""
        ctaid, ntid, tid = (self.sreg(f"{s}.{axis}") for s in ("ctaid", "ntid", "tid"))
        out = self.reg("u32")
        return self._op("mad", ("lo",), "s32", [ctaid, ntid, tid], srcs=("s32",) * 3, out=out)

    def global_thread_id_x(self) -> Reg:
        """:meth:`global_thread_id` along x."""
        return self.global_thread_id("x")

    # --- arithmetic and logic --------------------------------------------------------------------
    def _simple(self, opcode: str, spec: str, values: Sequence[Value], n: int, out: Reg | None,
                default: tuple[frozenset[str], str] | None = None) -> Reg:  # fmt: skip
        mods, t = split_spec(spec, opcode)
        if default is not None:
            mods = default_modifier(mods, *default)
        return self._op(opcode, mods, t, values, srcs=(t,) * n, out=out)

    def mov(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``mov.type d, a``; ``a`` may be a register, a number, a variable's address or a sreg."""
        return self._simple("mov", type_, values, 1, out)

    def add(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``add.type d, a, b``."""
        return self._simple("add", type_, values, 2, out)

    def sub(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``sub.type d, a, b``."""
        return self._simple("sub", type_, values, 2, out)

    def _mul_like(self, opcode: str, spec: str, values: Sequence[Value], n: int, out: Reg | None) -> Reg:
        mods, t = split_spec(spec, opcode)
        if type_kind(t) == "f":
            rounding = (FLOAT_ROUNDING, "rn") if n == 3 else None
            return self._simple(opcode, spec, values, n, out, rounding)
        mods = default_modifier(mods, frozenset({"lo", "hi", "wide"}), "lo")
        if "wide" not in mods:
            return self._op(opcode, mods, t, values, srcs=(t,) * n, out=out)
        if t not in WIDE:
            raise self._error(f"{opcode}.wide", f".wide needs a 16- or 32-bit integer type, not .{t}")
        srcs = (t, t, WIDE[t])[:n]
        return self._op(opcode, mods, t, values, srcs=srcs, out=out, dst=WIDE[t])

    def mul(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``mul.lo.type`` for integers (``"hi.u32"``, ``"wide.u32"`` select the others), ``mul.f32``."""
        return self._mul_like("mul", type_, values, 2, out)

    def mul_wide(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``mul.wide.type``: the full product, twice as wide (``u32`` -> a ``u64`` register)."""
        return self._mul_like("mul", f"wide.{type_}", values, 2, out)

    def mad(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``mad.lo.type d, a, b, c`` = a * b + c (``mad.rn`` for floats)."""
        return self._mul_like("mad", type_, values, 3, out)

    def fma(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``fma.rn.type d, a, b, c``: fused a * b + c with one rounding."""
        return self._simple("fma", type_, values, 3, out, (FLOAT_ROUNDING, "rn"))

    def div(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``div.type`` for integers, ``div.rn.type`` for floats unless ``approx``/``full`` is given."""
        rounding = (FLOAT_ROUNDING, "rn") if type_kind(split_spec(type_, "div")[1]) == "f" else None
        return self._simple("div", type_, values, 2, out, rounding)

    def rem(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``rem.type d, a, b`` (integers)."""
        return self._simple("rem", type_, values, 2, out)

    def min(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``min.type d, a, b``."""
        return self._simple("min", type_, values, 2, out)

    def max(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``max.type d, a, b``."""
        return self._simple("max", type_, values, 2, out)

    def neg(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``neg.type d, a``."""
        return self._simple("neg", type_, values, 1, out)

    def abs(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``abs.type d, a``."""
        return self._simple("abs", type_, values, 1, out)

    def and_(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``and.type d, a, b`` (``b16``/``b32``/``b64``/``pred``)."""
        return self._simple("and", type_, values, 2, out)

    def or_(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``or.type d, a, b``."""
        return self._simple("or", type_, values, 2, out)

    def xor(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``xor.type d, a, b``."""
        return self._simple("xor", type_, values, 2, out)

    def not_(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``not.type d, a``."""
        return self._simple("not", type_, values, 1, out)

    def shl(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``shl.type d, a, b``; the shift amount ``b`` is a u32."""
        mods, t = split_spec(type_, "shl")
        return self._op("shl", mods, t, values, srcs=(t, "u32"), out=out)

    def shr(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``shr.type d, a, b`` (arithmetic for ``s`` types); the shift amount ``b`` is a u32."""
        mods, t = split_spec(type_, "shr")
        return self._op("shr", mods, t, values, srcs=(t, "u32"), out=out)

    def selp(self, type_: str, *values: Value, out: Reg | None = None) -> Reg:
        """``selp.type d, a, b, p``: ``a`` where ``p`` holds, else ``b``."""
        mods, t = split_spec(type_, "selp")
        return self._op("selp", mods, t, values, srcs=(t, t, "pred"), out=out)

    def setp(self, cmp: str, type_: str, a: Value, b: Value, *, bool_op: str | None = None,
             c: Pred | None = None, out: Reg | None = None) -> Reg:  # fmt: skip
        """``setp.cmp[.bool_op].type p, a, b[, c]``; returns the predicate ``p``.

        ``c`` (a predicate, ``~q`` for ``!q``) is combined by ``bool_op`` (``and``/``or``/``xor``).
        """
        mods, t = split_spec(type_, "setp")
        where = f"setp.{cmp}.{t}"
        if cmp not in (CMP_FLOAT if type_kind(t) == "f" else CMP_INT):
            raise self._error(where, f"{cmp!r} is not a comparison for .{t}")
        if (bool_op is None) != (c is None):
            raise self._error(where, "bool_op and c go together: give both or neither")
        if out is not None and out.type != "pred":
            raise self._error(where, f"destination {out.name} holds .{out.type}, not .pred")
        p = out or self.reg("pred")
        ops = [ast.Register(p.name), self._src(a, t, f"{where} operand 1")]
        ops.append(self._src(b, t, f"{where} operand 2"))
        if c is not None:
            self._guard(c, where)
            ops.append(self._operand(c, None))
        self._emit("setp", (cmp, *((bool_op,) if bool_op else ()), *mods, t), ops, None)
        return p

    def cvt(self, dst_type: str, src_type: str, *values: Value, out: Reg | None = None) -> Reg:
        """``cvt[.rnd].dst.src d, a``; rounding defaults to ``rn`` into floats, ``rzi`` into integers."""
        mods, dt = split_spec(dst_type, "cvt")
        st = split_spec(src_type, "cvt")[1]
        if not set(mods) & (FLOAT_ROUNDING | INT_ROUNDING):
            if type_kind(dt) == "f" and (type_kind(st) != "f" or ast.type_bytes(dt) < ast.type_bytes(st)):
                mods = ("rn", *mods)
            elif type_kind(dt) != "f" and type_kind(st) == "f":
                mods = ("rzi", *mods)
        return self._op("cvt", (*mods, dt), st, values, srcs=(st,), out=out,
                        dst=WIDEN8.get(dt, dt), relaxed=True)  # fmt: skip

    def cvta(self, space: str, value: Value, *, to: bool = True, out: Reg | None = None) -> Reg:
        """``cvta.to.space.u64`` (generic -> space) or, with ``to=False``, ``cvta.space.u64``."""
        mods = ("to", space) if to else (space,)
        return self._op("cvta", mods, "u64", [value], srcs=("u64",), out=out)

    def to_global(self, value: Value) -> Reg:
        """``cvta.to.global.u64``: a pointer parameter's generic address as a global one."""
        return self.cvta("global", value)

    # --- memory -----------------------------------------------------------------------------------
    def addr(self, base: Reg | ast.Symbol | ast.Register, offset: int = 0) -> ast.Address:
        """The memory operand ``[base+offset]``; ``base`` a 32/64-bit integer register or a variable."""
        if isinstance(base, Reg):
            if type_kind(base.type) not in "bsu" or ast.type_bytes(base.type) not in (4, 8):
                raise self._error("address", f"{base.name} holds .{base.type}; an address is a "
                                  "32- or 64-bit integer")  # fmt: skip
            return ast.Address(ast.Register(base.name), offset)
        return ast.Address(base, offset)

    def _mem(self, address: Place) -> ast.Address:
        return address if isinstance(address, ast.Address) else self.addr(address)

    def ld_param(self, param: ast.Symbol, *, out: Reg | None = None) -> Reg:
        """``ld.param.type d, [param]`` with the declared type of ``param``."""
        found = [p for p in self._params if p.name == param.name]
        if not found:
            raise self._error("ld.param", f"{param.name!r} is not a parameter of this kernel")
        return self.ld("param", found[0].type, ast.Address(param), out=out)

    def ld(self, space: str, type_: str, address: Place, *,
           out: Reg | None = None, guard: Pred | None = None) -> Reg:  # fmt: skip
        """``ld.space.type d, [a]``; ``space`` may hold qualifiers (``"global.nc"``); ``""``: generic."""
        mods, t = split_spec(f"{space}.{type_}" if space else type_, "ld")
        return self._op("ld", mods, t, [self._mem(address)], srcs=("b64",), out=out,
                        dst=WIDEN8.get(t, t), relaxed=True, guard=guard)  # fmt: skip

    def ld_v(self, space: str, type_: str, address: Place, width: int) -> tuple[Reg, ...]:
        """``ld.space.vN.type {d0, ...}, [a]``: ``width`` (2, 4 or 8) fresh registers."""
        mods, t = split_spec(f"{space}.v{width}.{type_}" if space else f"v{width}.{type_}", "ld")
        if width not in (2, 4, 8):
            raise self._error(f"ld.v{width}", "vector width must be 2, 4 or 8")
        where = self._mem(address)
        regs = tuple(self.reg(WIDEN8.get(t, t)) for _ in range(width))
        vector = ast.Vector(tuple(ast.Register(r.name) for r in regs))
        self._emit("ld", (*mods, t), [vector, where], None)
        return regs

    def st(self, space: str, type_: str, address: Place,
           value: Value | Sequence[Value], *, guard: Pred | None = None) -> None:  # fmt: skip
        """``st.space.type [a], b``; a tuple of values stores a vector (``st.space.vN.type``)."""
        vector = isinstance(value, list | tuple)
        values: Sequence[Value] = value if isinstance(value, list | tuple) else (value,)
        vec = (f"v{len(values)}",) if vector else ()
        mods, t = split_spec(f"{space}.{type_}" if space else type_, "st")
        where = ".".join(("st", *mods, *vec, t))
        data = [self._src(v, t, f"{where} value {i}", relaxed=True) for i, v in enumerate(values)]
        operand = ast.Vector(tuple(data)) if vector else data[0]
        self._emit("st", (*mods, *vec, t), [self._mem(address), operand], guard)

    def atom(self, space: str, op: str, type_: str, address: Place, value: Value, *,
             compare: Value | None = None, sem: str | None = None, scope: str | None = None,
             out: Reg | None = None) -> Reg:  # fmt: skip
        """``atom[.sem][.scope].space.op.type d, [a], b``; with ``compare``: ``d, [a], compare, b``."""
        mods, t = split_spec(type_, "atom")
        order = tuple(m for m in (sem, scope, space) if m)
        values = [value] if compare is None else [compare, value]
        srcs = ("b64", *(t for _ in values))
        ops = [self._mem(address), *values]
        return self._op("atom", (*order, op, *mods), t, ops, srcs=srcs, out=out)

    def red(self, space: str, op: str, type_: str, address: Place, value: Value, *,
            sem: str | None = None, scope: str | None = None) -> None:  # fmt: skip
        """``red[.sem][.scope].space.op.type [a], b``: an atomic update without a result."""
        mods, t = split_spec(type_, "red")
        full = (*(m for m in (sem, scope, space) if m), op, *mods, t)
        data = self._src(value, t, ".".join(("red", *full)))
        self._emit("red", full, [self._mem(address), data], None)

    def bar_sync(self, barrier: int | Reg = 0, threads: int | Reg | None = None) -> None:
        """``bar.sync barrier[, threads]``: wait for the block's (non-exited) threads."""
        ops = [self._src(barrier, "u32", "bar.sync")]
        if threads is not None:
            ops.append(self._src(threads, "u32", "bar.sync"))
        self._emit("bar", ("sync",), ops, None)

    def shfl_sync(self, mode: str, value: Value, lane: Value, *, width: int = 32, mask: int = 0xFFFFFFFF,
                  out: Reg | None = None) -> Reg:  # fmt: skip
        """``shfl.sync.mode.b32 d, a, lane, c, mask`` with ``c`` set for sub-warps of ``width`` lanes.

        ``c`` packs the segment mask (bits 8-12) and the clamp lane (bits 0-4), as the CUDA
        ``__shfl_*_sync`` intrinsics do (PTX ISA, "shfl.sync").
        """
        if mode not in ("up", "down", "bfly", "idx") or width not in (1, 2, 4, 8, 16, 32):
            raise self._error("shfl.sync", f"mode {mode!r} or width {width} invalid (up/down/bfly/idx)")
        c = (32 - width) << 8 | (0 if mode == "up" else 0x1F)
        # The result keeps the shuffled value's type, so an f32 stays usable as an f32.
        same = value.type if isinstance(value, Reg) and fits("b32", value.type) else None
        return self._op("shfl", ("sync", mode), "b32", [value, lane, c, mask],
                        srcs=("b32", "u32", "b32", "b32"), out=out, dst=same)  # fmt: skip

    @contextmanager
    def if_(self, cond: Pred) -> Iterator[None]:
        """Run the body only where ``cond`` holds: a negated branch around it."""
        end = self.label("endif")
        self.bra(end, guard=~cond)
        yield
        self.place(end)

    @contextmanager
    def for_range(self, start: Value, stop: Value, step: int | Reg = 1, *, type_: str = "u32"
                  ) -> Iterator[Reg]:  # fmt: skip
        """A counted loop ``for (i = start; i < stop; i += step)``, yielding the counter register.

        The test sits at the bottom; a guard skips the loop when it runs zero times (omitted when
        ``start`` and ``stop`` are numbers with a non-empty range). A negative integer ``step``
        counts down (``i > stop``); a register ``step`` is taken to be positive.
        """
        if type_kind(type_) not in "su" or type_ not in REGISTER_CLASSES:
            raise self._error("for_range", f"the counter must be an integer type, not .{type_}")
        if isinstance(step, int) and step == 0:
            raise self._error("for_range", "step 0 never ends")
        down = isinstance(step, int) and step < 0
        more, done = ("gt", "le") if down else ("lt", "ge")
        i, p = self.mov(type_, start), self.reg("pred")
        top, end = self.label("loop"), self.label("loop_end")
        known = isinstance(start, int) and isinstance(stop, int)
        if not (known and (start > stop if down else start < stop)):  # type: ignore[operator]
            self.bra(end, guard=self.setp(done, type_, i, stop, out=p))
        self.place(top)
        yield i
        self.add(type_, i, i, step)
        self.bra(top, guard=self.setp(more, type_, i, stop, out=p))
        self.place(end)
