"""A rewrite: one declared, named transformation of a kernel's own PTX (or of its block size),
with what it changes and the side condition under which the model may call it equivalent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from karyamorph.isa import ast

Dim3 = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Target:
    """What an edit reads of the kernel: the parsed PTX, the ``.entry``, and the block the
    launch gives it (``.reqntid`` is written equal to it)."""

    module: ast.Module
    entry: str
    block: Dim3

    @property
    def function(self) -> ast.Function:
        return self.module.entry(self.entry)


class Condition(StrEnum):
    """The side condition a rewrite needs beyond the model's equivalence proof, each checked by
    :mod:`karyamorph.model.rewrite.proof`."""

    NONE = "none"  # the edit changes no value the model computes: equivalence alone decides
    READ_ONLY = "read-only"  # every buffer an edited load may read is written by no store or atomic
    UNDECLARED = "undeclared"  # the entry declares none of the directives the edit writes
    BLOCK = "block"  # the entry pins no block size, and the new launch binds


Edit = Callable[[Target], ast.Module]


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One transformation of the catalogue.

    Attributes
    ----------
    name : str
        Its name, the value of a search's ``rewrite`` axis (``ld.nc``, ``maxnreg=64``, ``block=128``).
    changes : str
        What it changes, in words.
    condition : str
        Its side condition, in words (what the proof checks besides equivalence).
    check : Condition
        Which side condition the proof checks.
    edit : callable
        ``edit(target)`` -> the rewritten module (equal to the original where nothing applies).
    directives : tuple of str
        The performance directives the edit writes (``maxnreg``), which the entry must not declare.
    block : int or None
        The new ``block.x`` of a block-size rewrite (the grid's x scaled to cover the same
        threads); None: the launch is unchanged.
    """

    name: str
    changes: str
    condition: str
    check: Condition
    edit: Edit
    directives: tuple[str, ...] = ()
    block: int | None = None

    def apply(self, target: Target) -> ast.Module:
        """The rewritten module (the launch change of a block-size rewrite is the spec's; see
        :func:`karyamorph.model.rewrite.proof.rewritten_spec`)."""
        return self.edit(target)

    def applies(self, target: Target) -> bool:
        """Whether the rewrite changes anything of ``target`` (a load rewrite of a kernel with no
        plain global load does not)."""
        if self.block is not None:
            return self.block != target.block[0] and target.block[1:] == (1, 1)
        return self.edit(target) != target.module
