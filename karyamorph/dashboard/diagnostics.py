"""What the editor marks on a line: the parser's error, else what ptxas says about the PTX.

The parser answers in microseconds and knows only syntax; ptxas, run only when the text parses,
knows everything else (types, targets, undefined names). Both run on the server without a GPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from karyamorph.harness.pipeline import check_arch, default_arch
from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.arch import ArchError
from karyamorph.isa.errors import PtxError
from karyamorph.isa.parser import parse


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One mark for the editor; ``line`` and ``column`` are 1-based (column None: the whole line)."""

    line: int
    column: int | None
    severity: str
    message: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The marks, the target ptxas checked for ("" when it did not run), and a note when a
    check could not run at all (no ptxas, an unknown target)."""

    diagnostics: tuple[Diagnostic, ...]
    arch: str
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"diagnostics": [d.as_dict() for d in self.diagnostics], "arch": self.arch, "note": self.note}


def check_ptx(ptx: str, arch: str | None = None, filename: str = "kernel.ptx") -> CheckResult:
    """Parse ``ptx``; if it parses, assemble it with ptxas for ``arch`` (default: its ``.target``)
    and return ptxas's errors and warnings with their lines."""
    try:
        module = parse(ptx, filename)
    except PtxError as err:
        return CheckResult((Diagnostic(max(err.line, 1), err.column, "error", err.message, "parser"),), "")
    try:
        target = check_arch(arch or default_arch(module, None))
    except ArchError as err:
        return CheckResult((), "", str(err))
    try:
        assembly = assemble(ptx, target.name, discover(), lineinfo=False, filename=filename)
    except ToolchainError as err:
        return CheckResult((), target.name, str(err))
    except PtxasError as err:
        found = err.diagnostics
    else:
        found = assembly.diagnostics
    marks = tuple(
        Diagnostic(d.line or 1, d.column, "error" if d.severity in ("error", "fatal") else "warning",
                   d.message, "ptxas")
        for d in found
        if "aborted due to errors" not in d.message and d.file in (None, filename)
    )  # fmt: skip
    return CheckResult(marks, target.name)
