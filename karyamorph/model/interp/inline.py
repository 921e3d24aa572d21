"""Calls expanded in place: a kernel body with every ``call`` replaced by the callee's body.

The interpreter and the checker run one flat instruction list per kernel; this module makes one
out of a kernel that calls ``.func``s (PTX ISA, "Control Flow Instructions: call", "Abstracting
the ABI"). Per call site, the callee's registers, labels and local variables are renamed apart,
its formal ``.param``s become the call site's argument and return variables, and each ``ret`` a
branch to the return point. Then every ``.param`` variable declared inside the body (the
argument and return variables of the calls) becomes one register per field it is accessed at:
``st.param.f32 [param0+4], %f1`` is ``mov.f32 %param0$7_4, %f1``. So parameter passing costs the
checker nothing and keeps exact values.

An indirect call (``call (r), %rd, (a), prototype;``) dispatches on the pointer over the
functions whose address the module takes and whose parameter counts match; a pointer that
matches none reaches ``trap``. Function addresses are :func:`function_addresses`. ``vprintf``
(device ``printf``) is a no-op returning 0: the model does not print. Recursion deeper than
``MAX_DEPTH`` calls, ``.reg`` parameters and extern functions other than ``vprintf`` raise
:class:`~karyamorph.model.semantics.decode.UnmodeledError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from karyamorph.isa import ast
from karyamorph.model.interp.params import params_to_registers
from karyamorph.model.semantics.decode import NO_OP_CALLS, Unmodeled, UnmodeledError

MAX_DEPTH = 8
FUNCTION_WINDOW = 4 << 48  # function addresses: outside every data window, never dereferenced


def function_addresses(module: ast.Module) -> dict[str, int]:
    """The address ``mov.u64 %rd, f`` gives for each function of the module."""
    return {f.name: FUNCTION_WINDOW + 16 * i for i, f in enumerate(module.functions)}


def has_calls(fn: ast.Function) -> bool:
    return any(i.opcode == "call" for i in fn.instructions())


def expand_calls(module: ast.Module, fn: ast.Function) -> ast.Function:
    """``fn`` with every call expanded and call-site ``.param`` variables turned into registers
    (``fn`` itself when it makes no call)."""
    if not has_calls(fn):
        return fn
    ex = _Expander(module, fn.name)
    body = ex.statements(fn.body or (), depth=0, stack=(fn.name,))
    return replace(fn, body=params_to_registers(body, fn.name))


@dataclass(slots=True)
class _Expander:
    module: ast.Module
    entry: str
    sites: int = 0
    addresses: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.addresses = function_addresses(self.module)

    def fail(self, ins: ast.Instruction, reason: str) -> UnmodeledError:
        return UnmodeledError(self.entry, [Unmodeled(ins.full_opcode, ins.loc.line, reason)])

    def statements(
        self, body: tuple[ast.Statement, ...], depth: int, stack: tuple[str, ...]
    ) -> tuple[ast.Statement, ...]:
        out: list[ast.Statement] = []
        for s in body:
            if isinstance(s, ast.Block):
                # Each call sequence declares its own param0, retval0: make them unique first.
                self.sites += 1
                scoped = {n: f"{n}$b{self.sites}" for n in _block_params(s.statements)}
                inner = _substitute(s.statements, lambda r: None, scoped) if scoped else s.statements
                out.append(ast.Block(self.statements(inner, depth, stack), s.loc))
            elif isinstance(s, ast.Instruction) and s.opcode == "call":
                out.extend(self.call(s, depth, stack))
            else:
                out.append(s)
        return tuple(out)

    def call(self, ins: ast.Instruction, depth: int, stack: tuple[str, ...]) -> list[ast.Statement]:
        ops = list(ins.operands)
        rets: tuple[ast.Operand, ...] = ()
        if ops and isinstance(ops[0], ast.ParenList):
            rets = ops.pop(0).elements  # type: ignore[union-attr]
        if not ops:
            raise self.fail(ins, "call without a target")
        target = ops.pop(0)
        args = ops.pop(0).elements if ops and isinstance(ops[0], ast.ParenList) else ()  # type: ignore[union-attr]
        if isinstance(target, ast.Register):
            return self.indirect(ins, target, rets, args, depth, stack)
        if not isinstance(target, ast.Symbol):
            raise self.fail(ins, f"call target {target} is neither a function nor a register")
        return self.direct(ins, target.name, rets, args, depth, stack)

    def callee(self, ins: ast.Instruction, name: str) -> ast.Function | None:
        fn = next((f for f in self.module.functions if f.name == name and f.body is not None), None)
        if fn is None and name not in NO_OP_CALLS:
            raise self.fail(ins, f"call to {name}: no body in this module (extern functions are not modeled)")
        return fn

    def direct(
        self,
        ins: ast.Instruction,
        name: str,
        rets: tuple[ast.Operand, ...],
        args: tuple[ast.Operand, ...],
        depth: int,
        stack: tuple[str, ...],
    ) -> list[ast.Statement]:
        fn = self.callee(ins, name)
        if fn is None:  # a built-in no-op: its return value is 0
            return [_store_zero(r, ins.loc) for r in rets]
        if depth + 1 > MAX_DEPTH:
            raise self.fail(ins, f"calls nested deeper than {MAX_DEPTH} (recursion through {name}?)")
        formals = (*fn.returns, *fn.params)
        actuals = (*rets, *args)
        if len(formals) != len(actuals):
            raise self.fail(ins, f"{name} takes {len(fn.params)} parameters and {len(fn.returns)} results")
        self.sites += 1
        tag = f"$c{self.sites}"
        renames: dict[str, str] = {}
        for f, a in zip(formals, actuals, strict=True):
            if f.space != "param" or not isinstance(a, ast.Symbol):
                raise self.fail(ins, f"{name}: only .param arguments passed by name are modeled")
            renames[f.name] = a.name
        body = _rename(fn.body or (), tag, renames)
        done = f"$ret{tag}"
        body = _returns(body, done)
        body = self.statements(body, depth + 1, (*stack, name))
        return [ast.Block((*body, ast.Label(done, ins.loc)), ins.loc)]

    def indirect(
        self,
        ins: ast.Instruction,
        pointer: ast.Register,
        rets: tuple[ast.Operand, ...],
        args: tuple[ast.Operand, ...],
        depth: int,
        stack: tuple[str, ...],
    ) -> list[ast.Statement]:
        taken = _address_taken(self.module)
        candidates = [
            f
            for f in self.module.functions
            if f.name in taken
            and f.body is not None
            and len(f.params) == len(args)
            and len(f.returns) == len(rets)
        ]
        self.sites += 1
        tag = f"$i{self.sites}"
        pred = f"%p{tag}"
        out: list[ast.Statement] = [ast.VarDecl("reg", "pred", (pred,), loc=ins.loc)]
        for f in candidates:
            addr = ast.Immediate(str(self.addresses[f.name]))
            out.append(
                ast.Instruction("setp", ("eq", "u64"), (ast.Register(pred), pointer, addr), loc=ins.loc)
            )
            out.append(
                ast.Instruction("bra", (), (ast.Symbol(f"$to{tag}_{f.name}"),), ast.Guard(pred), ins.loc)
            )
        out.append(ast.Instruction("trap", (), (), loc=ins.loc))
        for f in candidates:
            out.append(ast.Label(f"$to{tag}_{f.name}", ins.loc))
            out.extend(self.direct(ins, f.name, rets, args, depth, stack))
            out.append(ast.Instruction("bra", ("uni",), (ast.Symbol(f"$end{tag}"),), loc=ins.loc))
        out.append(ast.Label(f"$end{tag}", ins.loc))
        return out


def _store_zero(ret: ast.Operand, loc: ast.Loc) -> ast.Instruction:
    if not isinstance(ret, ast.Symbol):
        raise UnmodeledError("<call>", [Unmodeled("call", loc.line, "a built-in's result must be a .param")])
    return ast.Instruction("st", ("param", "b32"), (ast.Address(ret), ast.Immediate("0")), loc=loc)


def _address_taken(module: ast.Module) -> set[str]:
    """Functions named by an operand of something other than a direct call."""
    names = {f.name for f in module.functions}
    out: set[str] = set()
    for fn in module.functions:
        for ins in fn.instructions():
            if ins.opcode == "call":
                continue
            out |= {o.name for o in ins.operands if isinstance(o, ast.Symbol) and o.name in names}
    return out


def _declared(body: tuple[ast.Statement, ...]) -> tuple[set[str], set[str], set[str]]:
    """(register names, labels, other variable names) a function body declares."""
    regs: set[str] = set()
    labels: set[str] = set()
    variables: set[str] = set()

    def walk(ss: tuple[ast.Statement, ...]) -> None:
        for s in ss:
            if isinstance(s, ast.Block):
                walk(s.statements)
            elif isinstance(s, ast.Label):
                labels.add(s.name)
            elif isinstance(s, ast.VarDecl) and s.space == "reg":
                for n in s.names:
                    regs.update(f"{n}{i}" for i in range(s.count)) if s.count is not None else regs.add(n)
            elif isinstance(s, ast.VarDecl):
                variables.update(s.names)

    walk(body)
    return regs, labels, variables


def _block_params(statements: tuple[ast.Statement, ...]) -> list[str]:
    """The ``.param`` variables a block declares at its own level."""
    return [n for s in statements if isinstance(s, ast.VarDecl) and s.space == "param" for n in s.names]


def _rename(body: tuple[ast.Statement, ...], tag: str, formals: dict[str, str]) -> tuple[ast.Statement, ...]:
    """The callee's body with its own names made unique to the call site (``tag``) and its formal
    parameters replaced by the call site's variables."""
    regs, labels, variables = _declared(body)
    symbols = {n: f"{n}{tag}" for n in labels | variables} | formals
    prefix = f"%{tag[1:]}_"

    def reg(name: str) -> str | None:
        return prefix + name[1:] if name in regs else None

    return _substitute(body, reg, symbols, declared_reg=lambda n: prefix + n[1:])


def _substitute(
    body: tuple[ast.Statement, ...],
    reg: Callable[[str], str | None],
    symbols: dict[str, str],
    declared_reg: Callable[[str], str] | None = None,
) -> tuple[ast.Statement, ...]:
    """``body`` with registers renamed by ``reg`` (None: unchanged) and symbols by ``symbols``;
    ``declared_reg`` renames the names of ``.reg`` declarations (a ``%r<10>`` prefix included)."""

    def operand(o: ast.Operand) -> ast.Operand:
        if isinstance(o, ast.Register):
            new = reg(o.name)
            return o if new is None else ast.Register(new)
        if isinstance(o, ast.Symbol):
            return ast.Symbol(symbols.get(o.name, o.name))
        if isinstance(o, ast.Address):
            base = o.base
            if isinstance(base, ast.Register | ast.Symbol):
                base = operand(base)  # type: ignore[assignment]
            return replace(o, base=base, extra=tuple(operand(e) for e in o.extra))
        if isinstance(o, ast.Vector | ast.ParenList):
            return replace(o, elements=tuple(operand(e) for e in o.elements))
        if isinstance(o, ast.Negated):
            return ast.Negated(operand(o.operand))
        if isinstance(o, ast.Pair):
            return ast.Pair(operand(o.first), operand(o.second))
        return o

    def walk(ss: tuple[ast.Statement, ...]) -> tuple[ast.Statement, ...]:
        out: list[ast.Statement] = []
        for s in ss:
            if isinstance(s, ast.Block):
                out.append(ast.Block(walk(s.statements), s.loc))
            elif isinstance(s, ast.Label):
                out.append(ast.Label(symbols.get(s.name, s.name), s.loc))
            elif isinstance(s, ast.VarDecl) and s.space == "reg":
                names = tuple(declared_reg(n) for n in s.names) if declared_reg else s.names
                out.append(replace(s, names=names))
            elif isinstance(s, ast.VarDecl):
                out.append(replace(s, names=tuple(symbols.get(n, n) for n in s.names)))
            elif isinstance(s, ast.Instruction):
                guard = s.guard
                if guard is not None and reg(guard.register) is not None:
                    guard = ast.Guard(reg(guard.register) or guard.register, guard.negated)
                out.append(replace(s, operands=tuple(operand(o) for o in s.operands), guard=guard))
            else:
                out.append(s)
        return tuple(out)

    return walk(body)


def _returns(body: tuple[ast.Statement, ...], label: str) -> tuple[ast.Statement, ...]:
    """Each ``ret`` of an inlined body as a branch to the return point."""
    out: list[ast.Statement] = []
    for s in body:
        if isinstance(s, ast.Block):
            out.append(ast.Block(_returns(s.statements, label), s.loc))
        elif isinstance(s, ast.Instruction) and s.opcode == "ret":
            out.append(
                ast.Instruction(
                    "bra", ("uni",) if s.guard is None else (), (ast.Symbol(label),), s.guard, s.loc
                )
            )
        else:
            out.append(s)
    return tuple(out)
