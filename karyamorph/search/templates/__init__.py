"""The shipped search templates, by name: each a :class:`~karyamorph.search.template.Template`
whose variants the model checks and the GPU times against a torch baseline; and the templates a
search may name by path: a spec with a ``[search]`` table, or a Python file that defines one."""

from __future__ import annotations

from pathlib import Path

from karyamorph.errors import KaryaMorphError
from karyamorph.kernel.loader import load_spec
from karyamorph.search.template import Template
from karyamorph.search.templates.fp4_gemm import MXF4_TEMPLATE, NVF4_TEMPLATE
from karyamorph.search.templates.fp8_gemm import TEMPLATE as FP8_GEMM
from karyamorph.search.templates.from_file import TemplateFileError, python_template
from karyamorph.search.templates.from_spec import spec_template
from karyamorph.search.templates.hgemm import TEMPLATE as HGEMM
from karyamorph.search.templates.hopper_gemm import FP8_TEMPLATE as HOPPER_FP8_GEMM
from karyamorph.search.templates.hopper_gemm import TEMPLATE as HOPPER_GEMM
from karyamorph.search.templates.reduction import TEMPLATE as REDUCTION
from karyamorph.search.templates.sgemm import TEMPLATE as SGEMM
from karyamorph.search.templates.transpose import TEMPLATE as TRANSPOSE
from karyamorph.search.templates.vadd import TEMPLATE as VADD

__all__ = [
    "SHIPPED", "TEMPLATES", "TemplateFileError", "UnknownTemplate", "find_template", "python_template",
    "spec_template", "template",
]  # fmt: skip


class UnknownTemplate(KaryaMorphError, KeyError):
    """A template name that is not shipped."""

    def __str__(self) -> str:
        known = ", ".join(sorted(TEMPLATES))
        return (f"no template named {self.args[0]!r} (known: {known}; or the path of a spec with a "
                "[search] table, .toml, or of a Python file that defines TEMPLATE, .py)")  # fmt: skip


SHIPPED: tuple[Template, ...] = (
    VADD,
    REDUCTION,
    TRANSPOSE,
    SGEMM,
    HGEMM,
    HOPPER_GEMM,
    HOPPER_FP8_GEMM,
    FP8_GEMM,
    MXF4_TEMPLATE,
    NVF4_TEMPLATE,
)

TEMPLATES: dict[str, Template] = {t.name: t for t in SHIPPED}


def template(name: str) -> Template:
    """The shipped template ``name``.

    Raises
    ------
    UnknownTemplate
        For a name not in :data:`TEMPLATES`.
    """
    try:
        return TEMPLATES[name]
    except KeyError:
        raise UnknownTemplate(name) from None


def find_template(source: str) -> Template:
    """The template ``source`` names: a spec file (``.toml``) with a ``[search]`` table, a
    Python file (``.py``) that defines ``TEMPLATE``, or a shipped template's name.

    Raises
    ------
    SpecError
        The spec does not load, or declares no search (named by file and key).
    TemplateFileError
        The Python file does not import or defines no Template.
    UnknownTemplate
        Any other name that is not a shipped template's.
    """
    suffix = Path(source).suffix
    if suffix == ".toml":
        return spec_template(load_spec(source))
    if suffix == ".py":
        return python_template(source)
    return template(source)
