"""The model runs only on PTX that ptxas accepted for the arch: one cached ptxas run per PTX text.

The parser takes in more than ptxas does (``.reg .pred %p<4294967296>`` parses, and ptxas
refuses it with "Constant overflow"); what ptxas refuses is not a kernel, and the model has no
business running it. An acceptance is cached by content (PTX, arch, ptxas path and version), so
a repeated ``interp`` or ``check`` of the same text does not run ptxas again; a rejection is
not cached, and runs ptxas each time to show its error at the PTX line.
"""

from __future__ import annotations

from karyamorph.harness.tools.cache import cached_text
from karyamorph.harness.tools.ptxas import PtxasError, assemble, format_diagnostic
from karyamorph.harness.tools.toolchain import Toolchain, discover

ACCEPTED = "accepted"


def require_ptxas(
    ptx: str, arch: str, *, filename: str = "kernel.ptx", toolchain: Toolchain | None = None
) -> None:
    """Return when ptxas accepts ``ptx`` for ``arch``; raise otherwise.

    Raises
    ------
    PtxasError
        ptxas rejected the PTX (the message has ``file:line:col`` and the PTX line), or does
        not know ``arch`` (:class:`~karyamorph.harness.tools.ptxas.UnsupportedArchError`).
    ToolchainError
        There is no ptxas; the message says how to install one.
    """
    tc = toolchain or discover()
    parts = (tc.versions.get("ptxas", ""), str(tc.ptxas), arch, ptx)

    def assemble_once() -> str:
        assemble(ptx, arch, tc, lineinfo=False, filename=filename)
        return ACCEPTED

    cached_text("ptxas-accepts", parts, assemble_once)


def rejection(err: PtxasError, arch: str) -> str:
    """``ptxas rejected the PTX for sm_XX: <first error line>``, the reason a model run is skipped."""
    errors = [
        d for d in err.diagnostics
        if d.severity in ("error", "fatal") and "aborted due to errors" not in d.message
    ]  # fmt: skip
    errors.sort(key=lambda d: (d.line is None, d.line or 0))
    if errors:
        first = format_diagnostic(errors[0], "", "")
    else:
        lines = str(err).strip().splitlines()
        first = lines[1] if len(lines) > 1 else lines[0] if lines else "(ptxas printed nothing)"
    return f"ptxas rejected the PTX for {err.arch or arch}: {first.strip()}"
