"""A template from a Python file of the user's, as the shipped ones are written: a module that
defines ``TEMPLATE``, a :class:`~karyamorph.search.template.Template`."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path

from karyamorph.errors import KaryaMorphError
from karyamorph.search.template import Template


class TemplateFileError(KaryaMorphError, ValueError):
    """A template file that cannot be used; the message names the file (and the line)."""


def python_template(path: str | Path) -> Template:
    """The ``TEMPLATE`` the Python file ``path`` defines.

    The file runs as a module of its own (named after its path, so two files of one name do not
    meet), once per call.

    Raises
    ------
    TemplateFileError
        The file is missing, does not import (its error and line), defines no ``TEMPLATE``, or
        one that is not a Template.
    """
    path = Path(path)
    if not path.is_file():
        raise TemplateFileError(f"{path}: no such template file")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"karyamorph_template_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TemplateFileError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    # In sys.modules while it runs, as an imported module is (dataclasses look their module up).
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the file is the user's code: whatever its top level raises is its error
        del sys.modules[name]
        raise TemplateFileError(f"{_where(path, exc)}: does not import: {type(exc).__name__}: {exc}") from exc
    template = getattr(module, "TEMPLATE", None)
    if template is None:
        raise TemplateFileError(f"{path}: defines no TEMPLATE (a karyamorph.search.template.Template, as "
                                "the shipped templates in karyamorph/search/templates/ do)")  # fmt: skip
    if not isinstance(template, Template):
        raise TemplateFileError(f"{path}: TEMPLATE is a {type(template).__name__}, not a "
                                "karyamorph.search.template.Template")  # fmt: skip
    return template


def _where(path: Path, exc: Exception) -> str:
    """``path:line`` of the error: the line of the file the traceback last passes through (a
    syntax error's own line), or the path alone."""
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f"{path}:{exc.lineno}"
    resolved = str(path.resolve())
    lines = [
        f.lineno
        for f in traceback.extract_tb(exc.__traceback__)
        if str(Path(f.filename).resolve()) == resolved
    ]
    return f"{path}:{lines[-1]}" if lines else str(path)
