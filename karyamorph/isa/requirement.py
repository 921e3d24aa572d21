"""What a PTX instruction needs: a PTX ISA version and a target (or one of several), the modifier
forms that need more, and the forms that later targets refuse.

The values here are the vocabulary of :mod:`karyamorph.isa.catalog`; targets compare by
:func:`karyamorph.isa.versions.target_supports`, which keeps ``a`` and ``f`` targets out of the
plain "newer is better" order.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa.versions import parse_version, target_supports

Alternatives = tuple[tuple[str, str], ...]
"""Other (target, min PTX) pairs that also satisfy a requirement."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """What an instruction needs: a PTX ISA version and a target (or one of several).

    Attributes
    ----------
    min_ptx, min_target : str
        The lowest ``.version`` and the target that introduced it; later targets have it as
        :func:`target_supports` says.
    reason : str
        What needs it, in words (``"mma (.kind::f8f6f4 or block scaling)"``).
    also : tuple of (target, min_ptx)
        Other targets that have it, each from its own PTX version (arch-specific features that
        reached other families later, e.g. ``tcgen05`` on ``sm_110f`` from PTX 9.0).
    """

    min_ptx: str
    min_target: str
    reason: str
    also: Alternatives = ()

    @property
    def options(self) -> Alternatives:
        """Every (target, min PTX) pair that satisfies it, the first one first."""
        return ((self.min_target, self.min_ptx), *self.also)

    def satisfied_by(self, ptx_version: str, target: str) -> bool:
        """Whether PTX declaring ``.version ptx_version`` and ``.target target`` may use it."""
        have = parse_version(ptx_version)
        return any(target_supports(target, t) and have >= parse_version(p) for t, p in self.options)

    def describe(self) -> str:
        """``"PTX ISA >= 8.0 and sm_90a"``, with the alternatives."""
        return " or ".join(f"PTX ISA >= {p} and {t}" for t, p in self.options)


@dataclass(frozen=True, slots=True)
class Variant:
    """A modifier combination that raises an entry's requirement.

    ``when`` lists modifiers that must all be present (an item ``"a|b"`` accepts either, an
    item ``"a*2"`` needs ``a`` twice: ``cvt.bf16.bf16``); ``min_operands`` also requires that
    many operands (three-input ``min``).
    """

    when: tuple[str, ...]
    min_ptx: str
    min_target: str
    reason: str
    also: Alternatives = ()
    min_operands: int = 0

    def matches(self, modifiers: frozenset[str], operand_count: int, chain: tuple[str, ...] = ()) -> bool:
        """Whether an instruction with these modifiers (``chain``: in order, repeats kept) and that
        many operands has this form."""

        def present(item: str) -> bool:
            name, _, times = item.partition("*")
            return chain.count(name) >= int(times) if times else name in modifiers

        found = all(any(present(m) for m in item.split("|")) for item in self.when)
        return found and operand_count >= self.min_operands


@dataclass(frozen=True, slots=True)
class Retirement:
    """A form that later targets and PTX versions refuse: the opcode without ``.{unless}``."""

    unless: str
    from_ptx: str
    from_target: str


def stricter(a: Requirement, b: Requirement) -> Requirement:
    """The requirement that asks for both: the later PTX version, the more specific target."""
    a_implies_b = target_supports(a.min_target, b.min_target)
    keep, other = (a, b) if a_implies_b and not target_supports(b.min_target, a.min_target) else (b, a)
    floor = max(other.min_ptx, keep.min_ptx, key=parse_version)
    also = tuple((t, max(p, floor, key=parse_version)) for t, p in keep.also)
    reason = keep.reason
    if other.reason and parse_version(other.min_ptx) > parse_version(keep.min_ptx):
        reason = ", ".join(r for r in (keep.reason, other.reason) if r)
    return Requirement(floor, keep.min_target, reason, also)
