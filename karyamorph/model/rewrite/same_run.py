"""The shortest proof of a rewrite: the model runs the same program before and after it.

Many rewrites change only words the model's semantics do not read: a cache operator
(``ld.global.nc``, ``st.global.cs``: :data:`CACHE_WORDS`, which the decoder drops), a performance
directive on the ``.entry`` (``.maxnreg``, ``.minnctapersm``, a ``.reqntid`` equal to the
launch's block), a ``.pragma`` (not an instruction). When both kernels, made ready to run
(:func:`~karyamorph.model.interp.program.prepare`), decode to the same instructions with the
same operands and modifiers, the same labels and the same layout of registers, shared, local
and parameter memory, every run of the model on one gives what the other gives: equivalence
holds at every launch and size, not only at the check sizes, with no thread run.

This rests on the model's claim that the words it drops change no value, which for a load's
cache operator needs the read-only side condition (``.nc`` reads stale data where the kernel
writes the buffer); :mod:`karyamorph.model.rewrite.proof` checks that first.
"""

from __future__ import annotations

from karyamorph.model.interp.program import Program

# Entry directives that tell the compiler how to allocate and launch, never what to compute.
HINTS = frozenset({"maxnreg", "minnctapersm", "maxntid", "reqntid"})
# The words of a load or store that choose a cache policy; the decoder drops them with others
# (.acquire, .relaxed, scopes) whose meaning the model does not run either, but only these may
# differ: an edit of a memory order or scope is not proved by running the same program.
CACHE_WORDS = frozenset({
    "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "L1::no_allocate", "L1::evict_last", "L1::evict_first",
    "L1::evict_normal", "L2::64B", "L2::128B", "L2::256B",
})  # fmt: skip


def run_difference(a: Program, b: Program, block: tuple[int, int, int]) -> str | None:
    """None when the model runs ``a`` and ``b`` (the same entry before and after an edit) alike
    for a launch whose block is ``block``; else the first difference found, in words."""
    if len(a.decoded) != len(b.decoded):
        return f"{len(a.decoded)} instructions before and {len(b.decoded)} after"
    for x, y in zip(a.decoded, b.decoded, strict=True):
        if (x.instr, x.types, x.mods, x.operands, x.source.guard) != (y.instr, y.types, y.mods, y.operands,
                                                                       y.source.guard):  # fmt: skip
            return f"line {x.line} ({x.source.opcode}) runs differently after the edit (line {y.line})"
        if _uncached(x.source.modifiers) != _uncached(y.source.modifiers):
            return f"line {x.line} ({x.source.full_opcode}) changes more than its cache policy"
    layout = ("labels", "registers", "shared_symbols", "static_shared", "local_symbols", "local_size",
              "param_offsets", "param_size", "variables", "functions")  # fmt: skip
    for name in layout:
        if getattr(a, name) != getattr(b, name):
            return f"the kernel's {name.replace('_', ' ')} differ"
    before, after = dict(a.fn.attributes), dict(b.fn.attributes)
    for key in sorted(set(before) | set(after)):
        if before.get(key) == after.get(key):
            continue
        if key not in HINTS:
            return f"the entry's .{key} differs"
        if key in ("reqntid", "maxntid") and not _admits(after[key], block, exact=key == "reqntid"):
            return f"the entry's .{key} {after[key]} does not admit the launch's block {block}"
    return None


def _uncached(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(w for w in words if w not in CACHE_WORDS)


def _admits(values: tuple[int, ...], block: tuple[int, int, int], *, exact: bool) -> bool:
    """Whether a ``.reqntid`` (``exact``) or ``.maxntid`` of ``values`` admits ``block``."""
    dims = (*values, 1, 1, 1)[:3]
    if exact:
        return dims == block
    return dims[0] * dims[1] * dims[2] >= block[0] * block[1] * block[2]
