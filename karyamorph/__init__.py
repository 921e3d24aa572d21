"""KaryaMorph: understand GPUs at the PTX level.

``import karyamorph as km`` stays light: a public name loads :mod:`karyamorph.api` on its first
use (PEP 562), so that importing the package costs no z3, duckdb, torch or CUDA.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from karyamorph.api import (
        ArchError,
        BenchResult,
        Compiled,
        CudaError,
        ExecutionError,
        InterpReport,
        KaryaMorphError,
        Kernel,
        LaunchArgumentError,
        ModelBudget,
        NoDeviceError,
        PtxasError,
        PtxError,
        RunResult,
        SassError,
        SpecError,
        StageResult,
        StageSelectionError,
        Status,
        StoreError,
        TimingOptions,
        TooLargeError,
        ToolchainError,
        UnmodeledError,
        Verdict,
        bench,
        check,
        db,
        interp,
        load,
        machine,
        run,
    )

__all__ = [
    "ArchError",
    "BenchResult",
    "Compiled",
    "CudaError",
    "ExecutionError",
    "InterpReport",
    "KaryaMorphError",
    "Kernel",
    "LaunchArgumentError",
    "ModelBudget",
    "NoDeviceError",
    "PtxError",
    "PtxasError",
    "RunResult",
    "SassError",
    "SpecError",
    "StageResult",
    "StageSelectionError",
    "Status",
    "StoreError",
    "TimingOptions",
    "TooLargeError",
    "ToolchainError",
    "UnmodeledError",
    "Verdict",
    "bench",
    "check",
    "db",
    "interp",
    "load",
    "machine",
    "run",
]


def __getattr__(name: str) -> Any:
    """A public name, from :mod:`karyamorph.api` on its first use (then kept here)."""
    if name not in __all__:
        raise AttributeError(f"module 'karyamorph' has no attribute {name!r}")
    # The package face's lazy loader: the one import of our own inside a function outside the
    # CLI, so that `import karyamorph` does not pay for z3, duckdb or CUDA.
    from karyamorph import api

    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
