"""KaryaMorph: understand GPUs at the PTX level.

``import karyamorph as km`` stays light: a public name loads :mod:`karyamorph.api` on its first
use (PEP 562), so that importing the package costs no z3, duckdb, torch or CUDA.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from karyamorph.api import (
        DTYPES,
        PTX_TYPES,
        Arch,
        ArchError,
        ArgSpec,
        BenchResult,
        Compiled,
        Constraint,
        CudaError,
        DatasetImport,
        ExecutionError,
        Footprint,
        Init,
        Instr,
        InterpReport,
        KaryaMorphError,
        Kernel,
        KernelBuilder,
        KernelSpec,
        Launch,
        LaunchArgumentError,
        Law,
        Machine,
        ModelBudget,
        NoDeviceError,
        Parameter,
        PtxasError,
        PtxError,
        Reference,
        RunResult,
        SassError,
        SearchResult,
        Slot,
        SpecError,
        StageResult,
        StageSelectionError,
        Status,
        StoreError,
        Template,
        TimingOptions,
        TooLargeError,
        ToolchainError,
        UnmodeledError,
        Value,
        Verdict,
        bench,
        bind,
        check,
        check_instructions,
        db,
        format_ptx,
        import_datasets,
        interp,
        load,
        machine,
        parse_ptx,
        peak_rates,
        recording,
        replay,
        run,
        run_campaign,
        search,
        search_recorded,
        template,
    )

__all__ = [
    "DTYPES",
    "PTX_TYPES",
    "Arch",
    "ArchError",
    "ArgSpec",
    "BenchResult",
    "Compiled",
    "Constraint",
    "CudaError",
    "DatasetImport",
    "ExecutionError",
    "Footprint",
    "Init",
    "Instr",
    "InterpReport",
    "KaryaMorphError",
    "Kernel",
    "KernelBuilder",
    "KernelSpec",
    "Launch",
    "LaunchArgumentError",
    "Law",
    "Machine",
    "ModelBudget",
    "NoDeviceError",
    "Parameter",
    "PtxError",
    "PtxasError",
    "Reference",
    "RunResult",
    "SassError",
    "SearchResult",
    "Slot",
    "SpecError",
    "StageResult",
    "StageSelectionError",
    "Status",
    "StoreError",
    "Template",
    "TimingOptions",
    "TooLargeError",
    "ToolchainError",
    "UnmodeledError",
    "Value",
    "Verdict",
    "bench",
    "bind",
    "check",
    "check_instructions",
    "db",
    "format_ptx",
    "import_datasets",
    "interp",
    "load",
    "machine",
    "parse_ptx",
    "peak_rates",
    "recording",
    "replay",
    "run",
    "run_campaign",
    "search",
    "search_recorded",
    "template",
]


def __getattr__(name: str) -> Any:
    """A public name, from :mod:`karyamorph.api` on its first use (then kept here)."""
    if name not in __all__:
        raise AttributeError(f"module 'karyamorph' has no attribute {name!r}")
    # The package face's lazy loader: the one import of our own inside a function outside the
    # CLI, so that `import karyamorph` does not pay for z3, duckdb or CUDA.
    from karyamorph import api

    # A name that is also a subpackage (``search``) is that package: it is callable, and the
    # import system has already bound it here, so ``km.search`` is one object whatever came first.
    value = sys.modules.get(f"{__name__}.{name}") or getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
