"""The catalogue of rewrites, written as a table, and which of them a kernel admits.

Four families, each only a change of how the hardware runs the same instructions (cache
policy, register and occupancy hints, unrolling) or of how the work is cut into blocks:

- cache operators on plain global loads (``ld.global.nc``, ``.cg``, ``.cs``, ``.lu``): only on
  buffers no store or atomic of the kernel writes;
- cache operators on plain global stores (``st.global.cs``, ``.wt``);
- performance directives on the ``.entry`` (``.maxnreg``, ``.minnctapersm``, ``.reqntid``);
- ``.pragma "nounroll"`` added on every loop header, or the kernel's own removed;
- the block size (``block.x``), where the spec fixes it to a number.
"""

from __future__ import annotations

from karyamorph.isa import ast
from karyamorph.model.rewrite.edits import (
    add_attribute,
    add_nounroll,
    drop_nounroll,
    load_buffer,
    map_instructions,
    plain_global_load,
    plain_global_store,
    pointer_sources,
    with_load_operator,
    with_store_operator,
)
from karyamorph.model.rewrite.rewrite import Condition, Rewrite, Target

READ_ONLY = (
    "the buffers the edited loads may read are written by no store or atomic of the kernel (checked by "
    "the model at the check sizes; distinct pointer parameters assumed not to alias)"
)
NO_VALUE = "none beyond equivalence: it changes no value the kernel computes"
MAXNREG = (32, 64, 128)
MINNCTAPERSM = (2, 4)
BLOCKS = (128, 256, 512)


def _load(operator: str) -> Rewrite:
    def change(i: ast.Instruction) -> ast.Instruction:
        return with_load_operator(i, operator) if plain_global_load(i) and operator not in i.modifiers else i

    def edit(t: Target) -> ast.Module:
        return map_instructions(t.module, t.entry, change)

    return Rewrite(f"ld.{operator}", f"plain global loads become ld.global.{operator}", READ_ONLY,
                   Condition.READ_ONLY, edit)  # fmt: skip


def nc_of(buffer: str) -> Rewrite:
    """``ld.nc:buffer``: ``.nc`` on the plain global loads whose address derives from the pointer
    parameter ``buffer`` alone (:func:`~karyamorph.model.rewrite.edits.pointer_sources`); proposed
    beside ``ld.nc`` where the loads read several buffers, since the kernel may write one of them
    and only read another."""

    def edit(t: Target) -> ast.Module:
        sources = pointer_sources(t.function)

        def change(i: ast.Instruction) -> ast.Instruction:
            mine = plain_global_load(i) and load_buffer(i, sources) == buffer
            return with_load_operator(i, "nc") if mine else i

        return map_instructions(t.module, t.entry, change)

    what = f"plain global loads of {buffer} (their address derived from it alone) become ld.global.nc"
    return Rewrite(f"ld.nc:{buffer}", what, READ_ONLY, Condition.READ_ONLY, edit)


def _store(operator: str) -> Rewrite:
    def change(i: ast.Instruction) -> ast.Instruction:
        return (
            with_store_operator(i, operator) if plain_global_store(i) and operator not in i.modifiers else i
        )

    def edit(t: Target) -> ast.Module:
        return map_instructions(t.module, t.entry, change)

    what = f"plain global stores become st.global.{operator}"
    return Rewrite(f"st.{operator}", what, NO_VALUE, Condition.NONE, edit)


def _directive(name: str, value: int | None, with_maxntid: bool = False) -> Rewrite:
    """``.name value`` (``value`` None: the launch's block, as ``.reqntid`` takes it)."""

    def edit(t: Target) -> ast.Module:
        values = t.block if value is None else (value,)
        module = add_attribute(t.module, t.entry, name, values)
        if with_maxntid and not _pins_block(t.function):
            # ptxas ignores .minnctapersm on an entry that does not bound its block.
            module = add_attribute(module, t.entry, "maxntid", t.block)
        return module

    label = f"{name}={value}" if value is not None else name
    what = f".{name} {value}" if value is not None else f".{name} equal to the spec's block"
    also = " (and .maxntid equal to the spec's block, where the entry bounds none)" if with_maxntid else ""
    return Rewrite(label, f"the entry gets {what}{also}",
                   f"the entry declares no .{name}; a launch of another block would fail, so the block "
                   "is the spec's" if value is None or with_maxntid else f"the entry declares no .{name}",
                   Condition.UNDECLARED, edit, (name, "maxntid") if value is None else (name,))  # fmt: skip


def _pragma(add: bool) -> Rewrite:
    def edit(t: Target) -> ast.Module:
        return add_nounroll(t.module, t.entry) if add else drop_nounroll(t.module, t.entry)

    if add:
        what = 'every loop header gets .pragma "nounroll" (ptxas keeps the loops rolled)'
        return Rewrite("nounroll", what, NO_VALUE, Condition.NONE, edit)
    what = 'the kernel\'s .pragma "nounroll" are removed (ptxas may unroll its loops)'
    return Rewrite("unroll", what, NO_VALUE, Condition.NONE, edit)


def _block(x: int) -> Rewrite:
    return Rewrite(f"block={x}", f"block.x becomes {x}, grid.x scaled to launch at least as many threads",
                   "the entry pins no block (.reqntid, .maxntid); the outputs are proved equal to the "
                   "original's at the spec's block, at the check sizes", Condition.BLOCK,
                   lambda t: t.module, block=x)  # fmt: skip


def _pins_block(f: ast.Function) -> bool:
    return f.attribute("reqntid") is not None or f.attribute("maxntid") is not None


CATALOGUE: tuple[Rewrite, ...] = (
    *(_load(op) for op in ("nc", "cg", "cs", "lu")),
    *(_store(op) for op in ("cs", "wt")),
    *(_directive("maxnreg", n) for n in MAXNREG),
    *(_directive("minnctapersm", n, with_maxntid=True) for n in MINNCTAPERSM),
    _directive("reqntid", None),
    _pragma(add=True),
    _pragma(add=False),
    *(_block(x) for x in BLOCKS),
)
"""Every rewrite, in the order listings and search axes show them."""

REWRITES: dict[str, Rewrite] = {r.name: r for r in CATALOGUE}


def rewrite_named(name: str) -> Rewrite:
    """The rewrite ``name``: one of :data:`REWRITES`, or ``ld.nc:BUFFER`` (:func:`nc_of`).

    Raises
    ------
    KeyError
        No rewrite has that name.
    """
    if name in REWRITES:
        return REWRITES[name]
    if name.startswith("ld.nc:") and name[len("ld.nc:") :].strip():
        return nc_of(name[len("ld.nc:") :].strip())
    raise KeyError(name)


def admitted(target: Target, *, block_fixed: bool) -> tuple[Rewrite, ...]:
    """The rewrites of the catalogue that change something of ``target`` (proposed, not yet
    proved). ``block_fixed``: the spec gives the block as a number, so a block-size rewrite
    changes it (a block that is a search parameter or a size expression is left to them).
    Where the plain global loads read several buffers, ``ld.nc:BUFFER`` for each of them follows
    ``ld.nc``: the kernel may write one of them and leave another read-only."""
    declared = {name for name, _ in target.function.attributes}
    out = [
        r for r in CATALOGUE
        if r.applies(target) and (r.block is None or block_fixed) and not declared & set(r.directives)
    ]  # fmt: skip
    sources = pointer_sources(target.function)
    loads = [i for i in target.function.instructions() if plain_global_load(i)]
    buffers = sorted({b for i in loads if (b := load_buffer(i, sources)) is not None})
    if len(buffers) > 1 and any(r.name == "ld.nc" for r in out):
        at = next(k for k, r in enumerate(out) if r.name == "ld.nc") + 1
        out[at:at] = [nc_of(b) for b in buffers]
    return tuple(out)
