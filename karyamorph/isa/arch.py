"""The GPU target type: ``sm_120a`` parsed once into ``Arch(12, 0, "a")``, with the target lattice.

Every layer takes an :class:`Arch` (the CLI's ``--arch``, the PTX ``.target``, ptxas's
``-arch``, the per-arch resource table, the version tables); this module is the only place a
target string is parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast

from karyamorph.errors import KaryaMorphError

Suffix = Literal["", "a", "f"]

# sm_101 was Thor's target before CUDA 13.0 renamed it sm_110 (CUDA 13.0 release notes).
_RENAMED = {(10, 1): (11, 0)}

_FORMS = (
    re.compile(r"(?:sm|compute)_(?P<major>\d+)(?P<minor>\d)(?P<suffix>[af]?)"),  # sm_120a, compute_90
    re.compile(r"(?P<major>\d+)\.(?P<minor>\d)(?P<suffix>[af]?)"),  # 9.0, 12.0a
    re.compile(r"(?P<major>\d+)(?P<minor>\d)(?P<suffix>[af]?)"),  # 90, 120f
)


class ArchError(KaryaMorphError, ValueError):
    """A string that is not a GPU target; the message shows the accepted spellings."""


@dataclass(frozen=True, slots=True)
class Arch:
    """A GPU target: ``sm_120a`` is ``Arch(12, 0, "a")``.

    ``suffix`` is ``""`` for a base target, ``"a"`` for an architecture-specific one (its
    features exist on exactly that chip) and ``"f"`` for a family one (the same major version,
    this minor or later). Targets are only partially ordered, so there is no ``<``: use
    :meth:`supports` and :meth:`assembles_for`, or compare :attr:`compute_capability`.

    Examples
    --------
    >>> Arch.parse("sm_120a").base, Arch.parse("9.0"), Arch.parse(90).compute_capability
    (Arch('sm_120'), Arch('sm_90'), (9, 0))
    """

    major: int
    minor: int
    suffix: Suffix = ""

    @classmethod
    def parse(cls, value: str | int | tuple[int, int] | Arch, *, strict: bool = False) -> Arch:
        """Read a target from any of its spellings.

        Parameters
        ----------
        value : str, int, tuple of int or Arch
            ``"sm_90"``, ``"sm_90a"``, ``"sm_120f"``, ``"compute_90"``, ``"90"``, ``"9.0"``,
            ``90`` or ``(9, 0)``. The spelling is kept: ``sm_101`` (the CUDA 12.x name of Thor)
            stays ``sm_101``; :attr:`canonical` gives ``sm_110``.
        strict : bool
            Accept only the target-string form (``sm_90a``, ``compute_90``), as in PTX text.

        Raises
        ------
        ArchError
            If ``value`` is none of those spellings.
        """
        if isinstance(value, Arch):
            return value
        if isinstance(value, tuple):
            if len(value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise ArchError(f"not a compute capability: {value!r} (expected (major, minor))")
            return cls._make(value[0], value[1], "", value)
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ArchError(f"not an sm target: {value!r}")
        text = str(value).strip().lower()
        for form in _FORMS[:1] if strict else _FORMS:
            m = form.fullmatch(text)
            if m is not None:
                suffix = cast(Suffix, m.group("suffix"))
                return cls._make(int(m.group("major")), int(m.group("minor")), suffix, value)
        raise ArchError(
            f"not an sm target: {value!r} (expected sm_<major><minor>[a|f], e.g. 'sm_120' or 'sm_90a')"
        )

    @classmethod
    def _make(cls, major: int, minor: int, suffix: Suffix, original: object) -> Arch:
        if not 1 <= major <= 99 or not 0 <= minor <= 9:
            raise ArchError(f"not a compute capability: {major}.{minor} (in {original!r})")
        return cls(major, minor, suffix)

    @property
    def name(self) -> str:
        """The target string: ``"sm_120a"``."""
        return f"sm_{self.major}{self.minor}{self.suffix}"

    @property
    def compute_capability(self) -> tuple[int, int]:
        """The device compute capability this target is for: ``(12, 0)``."""
        return (self.major, self.minor)

    @property
    def canonical(self) -> Arch:
        """The current name of the same chip (``sm_101a`` -> ``sm_110a``); most targets are their own."""
        major, minor = _RENAMED.get((self.major, self.minor), (self.major, self.minor))
        return Arch(major, minor, self.suffix)

    @property
    def base(self) -> Arch:
        """The target without its ``a``/``f`` suffix (the chip's resources are the base's)."""
        return Arch(self.major, self.minor)

    def supports(self, required: Arch | str) -> bool:
        """Whether code compiled for this target may use what ``required`` introduced.

        - a base requirement (``sm_90``) is met by every target of that compute capability or
          a later one, whatever its suffix;
        - a family requirement (``sm_100f``) is met by an ``f`` or ``a`` target of the same
          major version at the same or a later minor version, never by a base target;
        - an architecture-specific requirement (``sm_90a``) is met by exactly that target.
        """
        t, r = self.canonical, Arch.parse(required).canonical
        if r.suffix == "":
            return t.compute_capability >= r.compute_capability
        if r.suffix == "f":
            return t.suffix in ("a", "f") and t.major == r.major and t.minor >= r.minor
        return t == r

    def assembles_for(self, arch: Arch | str) -> bool:
        """Whether PTX declaring ``.target <self>`` can be compiled for ``arch``.

        Base PTX assembles for its own or any later architecture; family PTX for later members
        of its family; arch-specific PTX only for exactly its ``a`` target.
        """
        t, a = self.canonical, Arch.parse(arch).canonical
        if t.suffix == "":
            return a.compute_capability >= t.compute_capability
        if t.suffix == "f":
            return a.major == t.major and a.minor >= t.minor
        return a == t

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Arch({self.name!r})"
