"""The one base class of the errors KaryaMorph raises on purpose, below every package that raises them."""

from __future__ import annotations


class KaryaMorphError(Exception):
    """An error KaryaMorph raises on purpose: bad input, a missing tool, a failing GPU call.

    Each package's errors derive from it as well as from the built-in class they always had
    (``SpecError`` is still a ``ValueError``), so ``except km.KaryaMorphError`` catches every
    one of them and nothing else: a bug in KaryaMorph stays a ``TypeError`` or ``KeyError``.
    """
