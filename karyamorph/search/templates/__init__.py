"""The shipped search templates, by name: each a :class:`~karyamorph.search.template.Template`
whose variants the model checks and the GPU times against a torch baseline."""

from __future__ import annotations

from karyamorph.search.template import Template
from karyamorph.search.templates.hgemm import TEMPLATE as HGEMM
from karyamorph.search.templates.reduction import TEMPLATE as REDUCTION
from karyamorph.search.templates.sgemm import TEMPLATE as SGEMM
from karyamorph.search.templates.transpose import TEMPLATE as TRANSPOSE
from karyamorph.search.templates.vadd import TEMPLATE as VADD


class UnknownTemplate(KeyError):
    """A template name that is not shipped."""

    def __str__(self) -> str:
        return f"no template named {self.args[0]!r} (known: {', '.join(sorted(TEMPLATES))})"


SHIPPED: tuple[Template, ...] = (
    VADD,
    REDUCTION,
    TRANSPOSE,
    SGEMM,
    HGEMM,
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
