"""A target's assembled validation kernels of one family (``mma.sync`` fragments, ``tcgen05.mma``
CTAs), the inputs drawn for them, and what was left out or refused."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from karyamorph.harness.gpu.validate import KernelJob
from karyamorph.validation.assembly import Assembled, FormKernel
from karyamorph.validation.compare import FormResult
from karyamorph.validation.forms import Unvalidated


class PlannedKernel(FormKernel, Protocol):
    """What a plan needs of a kernel: what assembling it needs, its launch and its size."""

    @property
    def rows(self) -> int: ...

    @property
    def grid(self) -> int: ...

    @property
    def block(self) -> int: ...

    @property
    def out_slots(self) -> int: ...


K = TypeVar("K", bound=PlannedKernel)


class InputKernel(PlannedKernel, Protocol):
    """A kernel whose input rows are made from its forms' case tables."""

    def inputs(self, tables: Sequence[np.ndarray]) -> np.ndarray: ...


Kc = TypeVar("Kc", bound=InputKernel)
Fm = TypeVar("Fm", covariant=True)


@dataclass(frozen=True, slots=True)
class KernelPlan(Generic[K]):
    """The assembled kernels of a target, their inputs (one per kernel that assembled), and the
    forms ptxas refused or the validation leaves out."""

    assembled: tuple[tuple[str, Assembled[K]], ...]
    inputs: tuple[np.ndarray, ...]
    rejected: tuple[FormResult, ...]
    unvalidated: tuple[Unvalidated, ...]

    @property
    def kernels(self) -> list[K]:
        return [a.kernel for _, a in self.assembled if a.kernel is not None]

    def jobs(self) -> list[KernelJob]:
        """One GPU job per kernel, arguments (``inp``, ``out``, ``rows``)."""
        ran = [a for _, a in self.assembled if a.kernel is not None]
        return [KernelJob(k.entry, a.cubin, k.grid, k.block, x, k.out_slots, k.ptx)
                for a, k, x in zip(ran, self.kernels, self.inputs, strict=True)]  # fmt: skip

    def summary(self) -> list[tuple[Any, ...]]:
        """Rows as ``compile_summary`` gives them: kernel, forms, rejected, rows, PTX lines, registers."""
        rows = []
        for name, a in self.assembled:
            k = a.kernel
            forms = (len(k.forms) if k else 0) + len(a.rejected)
            rows.append((name, forms, len(a.rejected), k.rows if k else 0,
                         len(k.ptx.splitlines()) if k else 0, a.registers))  # fmt: skip
        return rows


class _Found(Protocol[Fm]):
    """Forms found for a target (``enumerate_wgmma``'s and the like): None when the target has none."""

    @property
    def forms(self) -> Sequence[Fm]: ...

    @property
    def target(self) -> str | None: ...


def assemble_forms(
    found: _Found[Fm],
    name: str,
    assemble: Callable[[Fm, str], Assembled[Kc]],
    cases: Callable[[Fm], np.ndarray],
    label: Callable[[Fm], str],
) -> tuple[tuple[tuple[str, Assembled[Kc]], ...], tuple[np.ndarray, ...], tuple[FormResult, ...]]:
    """A kernel a form for the families of one form a kernel: each assembled for the target, its
    input rows from the form's ``cases`` table where ptxas accepted it, and the forms ptxas refused
    (as ``rejected`` results of instruction ``name``), the assembled kernels by ``label``."""
    assembled: list[tuple[str, Assembled[Kc]]] = []
    inputs: list[np.ndarray] = []
    rejected: list[FormResult] = []
    for form in found.forms:
        assert found.target is not None  # forms are found only where a target has them
        a = assemble(form, found.target)
        assembled.append((label(form), a))
        rejected += [FormResult(k, name, "rejected", 0, detail=m) for k, m in a.rejected.items()]
        if a.kernel is not None:
            inputs.append(a.kernel.inputs([cases(form)]))
    return tuple(assembled), tuple(inputs), tuple(rejected)
