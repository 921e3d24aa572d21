"""Search templates from Python: a shipped one by name, or a file of one's own by its path."""

from __future__ import annotations

from pathlib import Path

from karyamorph.search.template import Template
from karyamorph.search.templates import find_template


def template(name_or_path: str | Path) -> Template:
    """The search template ``name_or_path``: a shipped template's name (``karyamorph search
    templates`` lists them), a Python file that defines ``TEMPLATE`` (a :class:`Template`), or
    a spec file with a ``[search]`` table.

    Returns
    -------
    Template
        ``name``, ``parameters``, ``constraints``; ``space(arch)`` enumerates its valid
        configurations and ``spec(config, arch)`` builds one variant's kernel spec.

    Raises
    ------
    SpecError
        The spec does not load, or declares no search.
    ValueError
        The Python file does not import or defines no ``TEMPLATE`` (the message names it and
        the line).
    KeyError
        No shipped template has that name (the message lists those there are).
    """
    return find_template(str(name_or_path))
