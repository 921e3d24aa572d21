"""Assembling a validation kernel whose forms ptxas may refuse one by one.

A validation kernel (a microkernel of per-thread forms, :mod:`karyamorph.validation.microkernel`,
or a fragment kernel of whole-warp forms, :mod:`karyamorph.validation.fragment_kernel`) gives
each form its own lines. ptxas reports every bad line of a module at once; each line lies in one
form's code, so the forms it names are dropped and the rest rebuilt, at most :data:`MAX_ROUNDS`
times. Both kernels lay their forms' cases out as rows (:class:`FormRows`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import Toolchain

MAX_ROUNDS = 4
BLOCK_THREADS = 256  # threads per block of every validation kernel


class FormRows:
    """Where each form's cases are in a validation kernel's rows (mixed into its dataclass,
    which has ``forms``, ``starts``, ``counts`` and ``form_lines``)."""

    __slots__ = ()
    starts: tuple[int, ...]
    counts: tuple[int, ...]
    form_lines: tuple[tuple[int, int], ...]

    @property
    def rows(self) -> int:
        return self.starts[-1] + self.counts[-1] if self.starts else 0

    @property
    def grid(self) -> int:
        return max(1, -(-self.rows // BLOCK_THREADS))

    @property
    def block(self) -> int:
        return BLOCK_THREADS

    def form_at_line(self, line: int) -> int | None:
        """The index of the form whose code holds PTX line ``line`` (1-based), or None."""
        return next((i for i, (first, last) in enumerate(self.form_lines) if first <= line <= last), None)


class Keyed(Protocol):
    @property
    def key(self) -> str: ...


class FormKernel(Protocol):
    """What :func:`assemble_dropping` needs of a kernel."""

    @property
    def entry(self) -> str: ...

    @property
    def ptx(self) -> str: ...

    @property
    def forms(self) -> Sequence[Keyed]: ...

    def form_at_line(self, line: int) -> int | None: ...


K = TypeVar("K", bound=FormKernel)


@dataclass(frozen=True, slots=True)
class Assembled(Generic[K]):
    """A kernel that ptxas accepted (None: it refused every form), and the forms it refused
    (key -> message)."""

    kernel: K | None
    cubin: bytes
    rejected: dict[str, str]
    registers: int | None = None


def assemble_one(name: str, build: Callable[[], K], arch: str, toolchain: Toolchain) -> Assembled[K]:
    """Build and assemble a kernel of one form, ``name`` (dropped with ptxas's message when
    refused: :func:`assemble_dropping`)."""
    return assemble_dropping(name, 1, lambda keep: build(), arch, toolchain)


def assemble_dropping(
    name: str, count: int, build: Callable[[list[int]], K], arch: str, toolchain: Toolchain
) -> Assembled[K]:
    """Build (``build(kept form indices)``) and assemble a kernel of ``count`` forms, dropping
    each form ptxas refuses.

    Raises
    ------
    PtxasError
        An error outside any form's code (a defect of the kernel itself), or forms still
        refused after :data:`MAX_ROUNDS` rounds.
    """
    keep = list(range(count))
    rejected: dict[str, str] = {}
    for _ in range(MAX_ROUNDS):
        if not keep:
            return Assembled(None, b"", rejected)
        kernel = build(keep)
        try:
            asm = assemble(kernel.ptx, arch, toolchain, lineinfo=False, filename=f"{kernel.entry}.ptx")
        except PtxasError as exc:
            bad: dict[int, str] = {}
            for d in exc.diagnostics:
                at = kernel.form_at_line(d.line) if d.line and d.severity in ("error", "fatal") else None
                if at is not None:
                    bad.setdefault(at, d.message)
            if not bad:
                raise
            for at, message in bad.items():
                rejected[kernel.forms[at].key] = f"ptxas: {message}"
            keep = [i for j, i in enumerate(keep) if j not in bad]
            continue
        report = asm.functions.get(kernel.entry)
        return Assembled(kernel, asm.cubin, rejected, report.registers if report else None)
    raise PtxasError(f"{name}: ptxas still refused forms after {MAX_ROUNDS} rounds", arch=arch)
