"""The public face, ``import karyamorph as km``: kernels, timing, runs, the model, the store."""

from karyamorph.api.arguments import LaunchArgumentError
from karyamorph.api.kernel import Compiled, Kernel, load
from karyamorph.api.model import check, interp, machine
from karyamorph.api.runs import RunResult, run
from karyamorph.api.store import db
from karyamorph.api.timing import BenchResult, NoDeviceError, bench
from karyamorph.errors import KaryaMorphError
from karyamorph.harness.gpu.launch import CudaError
from karyamorph.harness.gpu.measurement import TimingOptions
from karyamorph.harness.model_run import InterpReport
from karyamorph.harness.pipeline import StageSelectionError
from karyamorph.harness.stages.base import StageResult, Status
from karyamorph.harness.tools.nvdisasm import SassError
from karyamorph.harness.tools.ptxas import PtxasError
from karyamorph.harness.tools.toolchain import ToolchainError
from karyamorph.isa.arch import ArchError
from karyamorph.isa.errors import PtxError
from karyamorph.kernel.spec import SpecError
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.budget import ModelBudget, TooLargeError
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.semantics.decode import UnmodeledError
from karyamorph.store.errors import StoreError

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
