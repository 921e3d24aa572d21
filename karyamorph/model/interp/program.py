"""A kernel made ready to run: calls expanded, body decoded, CFG, registers and variable layout.

:func:`prepare` is shared by the interpreter and the checker, so both run exactly the same
instruction list and agree on where every variable and parameter lives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from karyamorph.isa import ast
from karyamorph.kernel.structs import StructLayout
from karyamorph.model.interp.budget import THREAD_INDEX_BYTES, Footprint, ModelBudget, register_bytes
from karyamorph.model.interp.cfg import Cfg, build_cfg, flatten
from karyamorph.model.interp.errors import LaunchError
from karyamorph.model.interp.inline import expand_calls, function_addresses
from karyamorph.model.interp.memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW
from karyamorph.model.interp.scopes import resolve_module_scopes
from karyamorph.model.interp.simt import immediate_bits
from karyamorph.model.interp.variables import InitializerError, ModuleVariable, module_variables
from karyamorph.model.semantics.decode import Decoded, decode_function
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import PtxType, ptx_type


@dataclass(slots=True)
class Program:
    """A kernel ready to run: decoded body, CFG, register types, symbol addresses."""

    fn: ast.Function
    decoded: list[Decoded]
    labels: dict[str, int]
    cfg: Cfg
    registers: dict[str, PtxType]
    shared_symbols: dict[str, int]
    static_shared: int
    local_symbols: dict[str, int]
    local_size: int
    param_offsets: dict[str, int]
    param_size: int
    variables: list[ModuleVariable] = field(default_factory=list)  # module .global/.const
    functions: dict[str, int] = field(default_factory=dict)  # function name -> address
    # Where each module variable lives in a launch: set by the launch that lays out its memory.
    globals: dict[str, int] = field(default_factory=dict)
    # The layouts of struct parameters passed by value, by parameter name: the PTX does not
    # state them, so a checker sets them from what its caller says.
    structs: dict[str, StructLayout] = field(default_factory=dict)

    def immediate_bits(self, text: str, ty: PtxType) -> int:
        return immediate_bits(text, ty)

    def symbol_address(self, name: str, space: str | None) -> int:
        """The address of a variable or parameter in its own space (generic when space is None
        or ``generic`` and the variable is not global)."""
        generic = space in (None, "generic")
        for table, window in (
            (self.param_offsets, PARAM_WINDOW),
            (self.shared_symbols, SHARED_WINDOW),
            (self.local_symbols, LOCAL_WINDOW),
        ):
            if name in table:
                return table[name] + (window if generic and space == "generic" else 0)
        if name in self.globals:
            return self.globals[name]
        if name in self.functions:
            return self.functions[name]
        raise LaunchError(f"{self.fn.name}: unknown symbol {name!r}")

    def footprint(
        self, grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int, buffers: list[int]
    ) -> Footprint:
        """What the interpreter allocates for a launch with ``shared_bytes`` of dynamic shared
        memory and pointer arguments of ``buffers`` bytes: computed, not allocated."""
        blocks = grid[0] * grid[1] * grid[2]
        threads = blocks * block[0] * block[1] * block[2]
        shared = self.static_shared
        for offset in self.shared_symbols.values():
            if offset >= self.static_shared:  # a dynamic (extern) array: starts at its offset
                shared = max(shared, offset + shared_bytes)
        return Footprint((
            ("registers", threads * register_bytes(self.fn)),
            ("thread indices", threads * THREAD_INDEX_BYTES),
            ("buffers", sum(_padded(b) for b in buffers)),
            ("module variables", sum(_padded(v.size) for v in self.variables)),
            ("shared memory", blocks * _padded(shared)),
            ("local memory", threads * _padded(self.local_size)),
        ))  # fmt: skip


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _padded(n: int) -> int:  # as memory.py pads each allocation
    return max(16, align_up(n, 16))


def expanded_entry(module: ast.Module, entry: str, budget: ModelBudget | None = None) -> ast.Function:
    """``entry`` with its calls expanded, checked against ``budget``'s registers and module
    variables (TooLargeError) before anything per register or per byte is built."""
    budget = budget or ModelBudget()
    # Scopes first: a callee's block-local names must be unique before its body is inlined.
    module = resolve_module_scopes(module)
    fn = expand_calls(module, module.entry(entry))
    budget.check_registers(fn)
    budget.check_variables(module)
    return fn


def prepare(module: ast.Module, entry: str, machine: Machine, budget: ModelBudget | None = None) -> Program:
    """Decode and lay out an entry (raises UnmodeledError listing every unmodeled instruction).

    Calls are expanded in place first (:mod:`karyamorph.model.interp.inline`); module-level
    ``.global`` and ``.const`` variables are listed with their initial bytes
    (:mod:`karyamorph.model.interp.variables`). An entry over ``budget`` (default:
    :class:`ModelBudget`'s) in registers or module variable bytes raises TooLargeError first.
    """
    fn = expanded_entry(module, entry, budget)
    instructions, labels = flatten(fn)
    decoded = decode_function(fn, machine, module)
    cfg = build_cfg(instructions, labels)
    registers: dict[str, PtxType] = {}
    shared: dict[str, int] = {}
    local: dict[str, int] = {}
    sh_off = loc_off = 0
    dynamic: list[tuple[str, int]] = []

    def decls(statements: tuple[ast.Statement, ...]) -> None:
        nonlocal sh_off, loc_off
        for s in statements:
            if isinstance(s, ast.Block):
                decls(s.statements)
            if not isinstance(s, ast.VarDecl):
                continue
            if s.space == "reg":
                t = ptx_type(s.type)
                for name in s.names:
                    if s.count is not None:
                        for i in range(s.count):
                            registers[f"{name}{i}"] = t
                    else:
                        registers[name] = t
            elif s.space in ("shared", "local"):
                align = s.align or s.element_bytes
                size = s.size_bytes
                for name in s.names:
                    if size is None:
                        dynamic.append((name, align))
                    elif s.space == "shared":
                        sh_off = align_up(sh_off, align)
                        shared[name] = sh_off
                        sh_off += size
                    else:
                        loc_off = align_up(loc_off, align)
                        local[name] = loc_off
                        loc_off += size

    decls(fn.body or ())
    for item in module.items:  # module-level .shared variables
        if isinstance(item, ast.VarDecl) and item.space == "shared":
            decls((item,))
    static = sh_off
    for name, align in dynamic:
        shared[name] = align_up(static, max(align, 16))
    params: dict[str, int] = {}
    off = 0
    for p in fn.params:
        a = p.align or max(1, p.size_bytes if not p.dims else ast.type_bytes(p.type))
        off = align_up(off, a)
        params[p.name] = off
        off += p.size_bytes
    try:
        variables = module_variables(module)
    except InitializerError as e:
        raise LaunchError(f"{entry}: {e}") from None
    return Program(
        fn, decoded, labels, cfg, registers, shared, static, local, loc_off, params, off, variables,
        function_addresses(module),
    )  # fmt: skip
