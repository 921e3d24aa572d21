"""Python -> PTX Module: a kernel builder that allocates registers, checks operands, lays out loops."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from karyamorph.isa import ast
from karyamorph.isa.operands import (
    AST_OPERANDS,
    CMP_FLOAT,
    CMP_INT,
    FLOAT_ROUNDING,
    IDENT_RE,
    INT_ROUNDING,
    PREFIX_ORDER,
    REGISTER_CLASSES,
    SREG_64,
    TYPES,
    WIDE,
    WIDEN8,
    BuilderError,
    LabelRef,
    Not,
    Operandish,
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
from karyamorph.isa.printer import format_module


class KernelBuilder:
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

    def __init__(self, name: str, *, target: str = "sm_80", version: str = "8.7") -> None:
        self.name = self._ident(name, "kernel name")
        self.target = tuple(t.strip() for t in target.split(","))
        self.version = version
        self._params: list[ast.Param] = []
        self._vars: list[ast.VarDecl] = []
        self._module_vars: list[ast.VarDecl] = []
        self._attributes: list[tuple[str, tuple[int, ...]]] = []
        self._body: list[ast.Statement] = []
        self._counts: dict[str, int] = {}
        self._names: set[str] = set()
        self._labels: dict[str, int] = {}
        self._placed: set[str] = set()
        self._branched: dict[str, int] = {}

    # --- errors and names --------------------------------------------------------------------
    def _error(self, where: str, problem: str) -> BuilderError:
        return BuilderError(f"kernel {self.name}, statement {len(self._body)}, {where}: {problem}")

    def _ident(self, name: str, what: str) -> str:
        if not IDENT_RE.match(name):
            raise BuilderError(f"{what} {name!r} is not a PTX identifier ([A-Za-z_][A-Za-z0-9_$]*)")
        return name

    def _claim(self, name: str, what: str) -> ast.Symbol:
        self._ident(name, what)
        if name in self._names:
            raise self._error(what, f"the name {name!r} is already declared in this kernel")
        self._names.add(name)
        return ast.Symbol(name)

    # --- parameters, variables, directives -----------------------------------------------------
    def param(self, name: str, type_: str) -> ast.Symbol:
        """Declare a scalar parameter ``.param .type name``; load it with :meth:`ld_param`."""
        sym = self._claim(name, "parameter")
        self._params.append(ast.Param(name, split_spec(type_, f"parameter {name}")[1]))
        return sym

    def param_ptr(self, name: str, *, space: str = "global", align: int | None = 16) -> ast.Symbol:
        """Declare a pointer parameter ``.param .u64 .ptr .space .align N name``."""
        sym = self._claim(name, "parameter")
        self._params.append(ast.Param(name, "u64", ptr_space=space, ptr_align=align, is_ptr=True))
        return sym

    def shared(self, name: str, type_: str, count: int, *, align: int | None = None) -> ast.Symbol:
        """Declare a static ``.shared`` array of ``count`` elements in the kernel."""
        return self._array("shared", name, type_, count, align)

    def local(self, name: str, type_: str, count: int, *, align: int | None = None) -> ast.Symbol:
        """Declare a per-thread ``.local`` array of ``count`` elements in the kernel."""
        return self._array("local", name, type_, count, align)

    def _array(self, space: str, name: str, type_: str, count: int, align: int | None) -> ast.Symbol:
        sym = self._claim(name, f".{space} variable")
        if count < 1:
            raise self._error(f".{space} {name}", f"an array needs at least one element, not {count}")
        t = split_spec(type_, f".{space} {name}")[1]
        self._vars.append(ast.VarDecl(space, t, (name,), align=align, dims=(count,)))
        return sym

    def extern_shared(self, name: str, *, align: int = 16, type_: str = "b8") -> ast.Symbol:
        """Declare the dynamic shared array ``.extern .shared .align N .b8 name[]`` (module scope)."""
        sym = self._claim(name, "extern .shared variable")
        type_ = split_spec(type_, f".extern .shared {name}")[1]
        decl = ast.VarDecl("shared", type_, (name,), ("extern",), align=align, dims=(None,))
        self._module_vars.append(decl)
        return sym

    def _perf(self, name: str, values: tuple[int, ...]) -> None:
        if not 1 <= len(values) <= 3 or any(v < 1 for v in values):
            raise self._error(f".{name}", f"needs 1 to 3 positive sizes, got {values}")
        self._attributes.append((name, values))

    def maxntid(self, *dims: int) -> None:
        """``.maxntid x[, y[, z]]``: the most threads a block of this kernel may have."""
        self._perf("maxntid", dims)

    def reqntid(self, *dims: int) -> None:
        """``.reqntid x[, y[, z]]``: the exact block shape this kernel is launched with."""
        self._perf("reqntid", dims)

    def minnctapersm(self, blocks: int) -> None:
        """``.minnctapersm n``: blocks per SM that register allocation must allow."""
        self._perf("minnctapersm", (blocks,))

    def maxnreg(self, registers: int) -> None:
        """``.maxnreg n``: cap on registers per thread."""
        self._perf("maxnreg", (registers,))

    def pragma(self, text: str) -> None:
        """Emit ``.pragma "text";`` (e.g. ``"nounroll"`` just before a loop's back branch)."""
        if '"' in text or "\n" in text:
            raise self._error(".pragma", f"{text!r} may not contain quotes or newlines")
        self._body.append(ast.Directive("pragma", f'"{text}"', terminated=True))

    # --- registers and raw instructions ---------------------------------------------------------
    def reg(self, type_: str) -> Reg:
        """A fresh register for values of ``type_`` (``%r`` for 32-bit integers, ``%f`` for f32, ...)."""
        if type_ not in REGISTER_CLASSES:
            raise self._error("reg", f"no register class for .{type_} (have {', '.join(REGISTER_CLASSES)})")
        prefix = REGISTER_CLASSES[type_][0]
        index = self._counts.get(prefix, 0)
        self._counts[prefix] = index + 1
        return Reg(f"{prefix}{index}", type_)

    def _operand(self, value: Operandish, imm_type: str | None) -> ast.Operand:
        if isinstance(value, Reg):
            return ast.Register(value.name)
        if isinstance(value, Not):
            return ast.Negated(ast.Register(value.reg.name))
        if isinstance(value, LabelRef):
            self._branched.setdefault(value.name, len(self._body))
            return ast.Symbol(value.name)
        if isinstance(value, int | float):
            if imm_type is not None:
                return immediate(value, imm_type)
            if isinstance(value, float | bool):
                raise BuilderError(f"{value!r} needs a typed instruction to be written as a literal")
            return ast.Immediate(str(value))
        if isinstance(value, list | tuple):
            return ast.Vector(tuple(self._operand(v, imm_type) for v in value))
        if isinstance(value, AST_OPERANDS):
            return value
        raise BuilderError(f"{value!r} is not an operand (names are ast.Symbol, registers Reg)")

    def _guard(self, guard: Pred | None, where: str) -> ast.Guard | None:
        if guard is None:
            return None
        reg = guard.reg if isinstance(guard, Not) else guard
        if not isinstance(reg, Reg) or reg.type != "pred":
            raise self._error(where, f"the guard must be a .pred register or ~pred, not {guard!r}")
        return ast.Guard(reg.name, isinstance(guard, Not))

    def _emit(self, opcode: str, mods: Sequence[str], ops: Sequence[ast.Operand], guard: Pred | None
              ) -> None:  # fmt: skip
        where = ".".join((opcode, *mods))
        self._body.append(ast.Instruction(opcode, tuple(mods), tuple(ops), self._guard(guard, where)))

    def instr(self, opcode: str, *operands: Operandish, guard: Pred | None = None) -> None:
        """Emit any instruction as written: ``k.instr("bar.warp.sync", -1)``; nothing is type-checked.

        Python numbers become literals of the last type modifier of ``opcode``.
        """
        name, *mods = opcode.split(".")
        self._emit(name, mods, self._raw(opcode, operands), guard)

    def emit(self, opcode: str, dst_type: str, *operands: Operandish, guard: Pred | None = None) -> Reg:
        """Like :meth:`instr` with a fresh ``dst_type`` destination first; returns it.

        ``k.emit("lop3.b32", "b32", a, b, c, 0x96)`` -> ``lop3.b32 %r3, %r0, %r1, %r2, 150;``
        """
        name, *mods = opcode.split(".")
        ops = self._raw(opcode, operands)
        dst = self.reg(dst_type)
        self._emit(name, mods, [ast.Register(dst.name), *ops], guard)
        return dst

    def _raw(self, opcode: str, operands: Sequence[Operandish]) -> list[ast.Operand]:
        imm = next((m for m in reversed(opcode.split(".")[1:]) if m in TYPES), None)
        try:
            return [self._operand(v, imm) for v in operands]
        except BuilderError as exc:
            raise self._error(opcode, str(exc)) from None

    def _src(self, value: Value, want: str, where: str, relaxed: bool = False) -> ast.Operand:
        if isinstance(value, Reg) and not fits(want, value.type, relaxed):
            raise self._error(where, f"{value.name} holds .{value.type} but a .{want} operand is needed")
        if isinstance(value, Not | LabelRef):
            raise self._error(where, f"{value!r} cannot be a .{want} operand")
        try:
            return self._operand(value, want)
        except BuilderError as exc:
            raise self._error(where, str(exc)) from None

    def _op(self, opcode: str, mods: tuple[str, ...], t: str, values: Sequence[Value], *,
            srcs: Sequence[str], out: Reg | None, dst: str | None = None, relaxed: bool = False,
            guard: Pred | None = None) -> Reg:  # fmt: skip
        """Emit ``opcode.mods.t d, srcs...``; a leading extra Reg in ``values`` is the destination."""
        where = ".".join((opcode, *mods, t))
        if len(values) == len(srcs) + 1 and out is None and isinstance(values[0], Reg):
            out, values = values[0], values[1:]
        if len(values) != len(srcs):
            raise self._error(where, f"takes {len(srcs)} source operands, got {len(values)}")
        ops = [self._src(v, s, f"{where} operand {i + 1}", relaxed)
               for i, (v, s) in enumerate(zip(values, srcs, strict=True))]  # fmt: skip
        dst_type = dst or t
        if out is None:
            out = self.reg(dst_type)
        elif not fits(dst_type, out.type, relaxed):
            raise self._error(where, f"destination {out.name} holds .{out.type}, not .{dst_type}")
        self._emit(opcode, (*mods, t), [ast.Register(out.name), *ops], guard)
        return out

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

    # --- control flow ---------------------------------------------------------------------------
    def label(self, hint: str = "L") -> LabelRef:
        """A new unique label ``$L__hint_N``; branch to it, then :meth:`place` it once."""
        self._ident(hint, "label hint")
        n = self._labels.get(hint, 0)
        self._labels[hint] = n + 1
        return LabelRef(f"$L__{hint}_{n}")

    def place(self, label: LabelRef) -> None:
        """Define ``label`` here (``name:``)."""
        if label.name in self._placed:
            raise self._error(f"label {label.name}", "is already placed; make another with label()")
        self._placed.add(label.name)
        self._body.append(ast.Label(label.name))

    def bra(self, label: LabelRef, *, guard: Pred | None = None, uni: bool = False) -> None:
        """``[@p] bra[.uni] label``."""
        self._emit("bra", ("uni",) if uni else (), [self._operand(label, None)], guard)

    def ret(self, *, guard: Pred | None = None) -> None:
        """``[@p] ret``."""
        self._emit("ret", (), (), guard)

    def exit(self, *, guard: Pred | None = None) -> None:
        """``[@p] exit``."""
        self._emit("exit", (), (), guard)

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

    # --- output -----------------------------------------------------------------------------------
    def build(self) -> ast.Module:
        """The module: register declarations first (exact counts), then variables, then the body.

        Raises
        ------
        BuilderError
            When a branch targets a label that was never placed.
        """
        for name, index in self._branched.items():
            if name not in self._placed:
                raise BuilderError(f"kernel {self.name}: label {name} is branched to at statement "
                                   f"{index} but never placed (call place() on it)")  # fmt: skip
        declared = dict(REGISTER_CLASSES.values())
        regs = tuple(ast.VarDecl("reg", declared[prefix], (prefix,), count=self._counts[prefix])
                     for prefix in PREFIX_ORDER if self._counts.get(prefix))  # fmt: skip
        body = (*regs, *self._vars, *self._body)
        fn = ast.Function("entry", self.name, tuple(self._params), body, ("visible",),
                          attributes=tuple(self._attributes))  # fmt: skip
        return ast.Module(self.version, self.target, 64, (*self._module_vars, fn))

    def ptx(self) -> str:
        """The module as PTX text."""
        return format_module(self.build())

    def __str__(self) -> str:
        return self.ptx()
