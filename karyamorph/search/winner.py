"""A search's winner as the two files ``karyamorph run`` reproduces it from: its spec (TOML) and
its PTX, kept as text with the search so that they travel with the database and its datasets.

A search stored before the texts were has only its winner's configuration; :func:`rerender`
renders it again from the template, and accepts the result only where its PTX is the one the
winner's stored run timed (a template changed since renders another kernel).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import KernelSpec
from karyamorph.kernel.writer import spec_toml
from karyamorph.search.templates import TEMPLATES

# A file stem that stays inside the folder it is written to (the names come from the database).
_NAME = re.compile(r"^[A-Za-z0-9_$][A-Za-z0-9_$.-]{0,199}$")
STORED = "stored with the search"


class WinnerUnavailable(ValueError):
    """A search whose winner cannot be written as files; the message says why, in words."""


@dataclass(frozen=True, slots=True)
class WinnerFiles:
    """A search winner's spec and PTX as text.

    Parameters
    ----------
    name : str
        The files' stem (the kernel's entry): :meth:`write` makes ``NAME.toml`` and ``NAME.ptx``.
    spec_toml : str
        The spec; its ``[kernel] ptx`` is ``NAME.ptx``, the PTX file beside it.
    ptx : str
        The PTX text.
    origin : str
        Where the texts come from: :data:`STORED`, or how they were rendered again.
    """

    name: str
    spec_toml: str
    ptx: str
    origin: str = STORED

    @classmethod
    def render(cls, spec: KernelSpec, header: str = "", origin: str = STORED) -> WinnerFiles:
        """The files of ``spec``, its spec headed by the comment lines ``header``."""
        return cls(spec.entry, spec_toml(spec, f"{spec.entry}.ptx", header), spec.ptx, origin)

    @property
    def spec_file(self) -> str:
        """``NAME.toml``."""
        return f"{self.name}.toml"

    @property
    def ptx_file(self) -> str:
        """``NAME.ptx``."""
        return f"{self.name}.ptx"

    def write(self, folder: Path) -> tuple[Path, Path]:
        """Write ``NAME.toml`` and ``NAME.ptx`` into ``folder`` (made if missing, files of those
        names replaced); return both paths. ``karyamorph run FOLDER/NAME.toml`` runs the winner.

        Raises
        ------
        WinnerUnavailable
            The name would leave the folder, or the spec does not name ``NAME.ptx`` as its PTX.
        """
        if not _NAME.match(self.name):
            raise WinnerUnavailable(f"the winner's name {self.name!r} is not a file name")
        try:
            kernel = tomllib.loads(self.spec_toml).get("kernel", {})
        except tomllib.TOMLDecodeError as exc:
            raise WinnerUnavailable(f"the winner's stored spec {self.spec_file} is not TOML: {exc}") from None
        if kernel.get("ptx") != self.ptx_file:
            raise WinnerUnavailable(f"the winner's stored spec {self.spec_file} names its PTX "
                                    f"{kernel.get('ptx')!r}, not {self.ptx_file!r}")  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        spec_path, ptx_path = folder / self.spec_file, folder / self.ptx_file
        ptx_path.write_text(self.ptx)
        spec_path.write_text(self.spec_toml)
        return spec_path, ptx_path


def header(search_id: str, params: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """The comment lines a winner's spec starts with: the search and the configuration."""
    return (f"winner of search {search_id} ({params.get('template')}, {params.get('strategy')}, budget "
            f"{params.get('budget')}, seed {params.get('seed')})\nconfiguration: {dict(config)}")  # fmt: skip


def rerender(
    search_id: str, params: Mapping[str, Any], winner: Mapping[str, Any], timed_ptx: str | None
) -> WinnerFiles:
    """The files of a winner stored without them, rendered from its template again.

    Parameters
    ----------
    search_id : str
    params : mapping
        The search's parameters as stored (template, arch, sizes, strategy, budget, seed).
    winner : mapping
        The summary's winner (its ``config`` and ``run_id``).
    timed_ptx : str or None
        The PTX of the winner's stored run, None where the database lacks that run.

    Raises
    ------
    WinnerUnavailable
        The template is not shipped any more, refuses the configuration, or renders another
        PTX than the one that was timed.
    """
    short, name = search_id[:8], params.get("template")
    before = f"search {short} predates stored winners"
    template = TEMPLATES.get(str(name))
    if template is None:
        raise WinnerUnavailable(f"{before}, and its template {name!r} is not shipped: its winner "
                                "cannot be rendered again")  # fmt: skip
    config = dict(winner.get("config") or {})
    try:
        spec = template.spec(config, Arch.parse(str(params.get("arch"))), params.get("sizes"))
    except (ValueError, KeyError) as exc:  # an arch, a spec or a builder refusing it; a parameter gone
        raise WinnerUnavailable(f"{before}, and template {name} refuses its winner {config} now: "
                                f"{exc}") from None  # fmt: skip
    run = str(winner.get("run_id") or "")[:8]
    if timed_ptx is None:
        origin = (f"rendered again from template {name}: {before}, and the database lacks run {run} "
                  "to compare its PTX with")  # fmt: skip
    elif spec.ptx != timed_ptx:
        raise WinnerUnavailable(f"{before}, and template {name} now renders its winner {config} to "
                                f"other PTX than run {run} timed: the template changed since")  # fmt: skip
    else:
        origin = f"rendered again from template {name}: {before}; the PTX is the one run {run} timed"
    note = f"\n{origin}"
    return WinnerFiles.render(spec, header(search_id, params, config) + note, origin)
