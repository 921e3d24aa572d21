"""The builder's core: kernel state, names, registers, raw instructions, labels and the output."""

from __future__ import annotations

from collections.abc import Sequence

from karyamorph.isa import ast
from karyamorph.isa.operands import (
    AST_OPERANDS,
    IDENT_RE,
    PREFIX_ORDER,
    REGISTER_CLASSES,
    TYPES,
    BuilderError,
    LabelRef,
    Not,
    Operandish,
    Pred,
    Reg,
    Value,
    fits,
    immediate,
    split_spec,
)
from karyamorph.isa.printer import format_module


class Emitter:
    """Holds one kernel under construction and emits checked statements into it.

    :class:`~karyamorph.isa.builder.KernelBuilder` adds the typed helpers on top.
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
        """Declare a scalar parameter ``.param .type name``; load it with
        :meth:`~karyamorph.isa.builder.KernelBuilder.ld_param`."""
        sym = self._claim(name, "parameter")
        self._params.append(ast.Param(name, split_spec(type_, f"parameter {name}")[1]))
        return sym

    def param_ptr(self, name: str, *, space: str = "global", align: int | None = 16) -> ast.Symbol:
        """Declare a pointer parameter ``.param .u64 .ptr .space .align N name``."""
        sym = self._claim(name, "parameter")
        self._params.append(ast.Param(name, "u64", ptr_space=space, ptr_align=align, is_ptr=True))
        return sym

    def param_bytes(self, name: str, count: int, *, align: int) -> ast.Symbol:
        """Declare ``.param .align A .b8 name[count]``: bytes passed by value (a TMA tensor map,
        a struct); its address is ``mov.b32 r, name`` then ``cvta.param``."""
        sym = self._claim(name, "parameter")
        if count < 1 or align < 1 or align & (align - 1):
            problem = f"{count} bytes aligned to {align}: need at least one byte and a power of two"
            raise self._error(f".param {name}", problem)
        self._params.append(ast.Param(name, "b8", align=align, dims=(count,)))
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

    def reqnctapercluster(self, *dims: int) -> None:
        """``.reqnctapercluster x[, y[, z]]``: the cluster shape (in CTAs) this kernel is launched in."""
        self._perf("reqnctapercluster", dims)

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
