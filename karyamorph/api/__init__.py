"""The public face, ``import karyamorph as km``: kernels, timing, runs, the model, campaigns and
datasets, search, the store."""

from karyamorph.api.arguments import LaunchArgumentError
from karyamorph.api.campaigns import DatasetImport, import_datasets, run_campaign
from karyamorph.api.kernel import Compiled, Kernel, bind, load
from karyamorph.api.model import check, check_instructions, interp, machine
from karyamorph.api.ptx import format_ptx, parse_ptx
from karyamorph.api.recordings import recording, replay, search_recorded
from karyamorph.api.runs import RunResult, run
from karyamorph.api.store import db
from karyamorph.api.templates import template
from karyamorph.api.timing import BenchResult, NoDeviceError, bench, peak_rates
from karyamorph.errors import KaryaMorphError
from karyamorph.harness.gpu.launch import CudaError
from karyamorph.harness.gpu.measurement import TimingOptions
from karyamorph.harness.model_run import InterpReport
from karyamorph.harness.pipeline import StageSelectionError
from karyamorph.harness.stages.base import StageResult, Status
from karyamorph.harness.tools.nvdisasm import SassError
from karyamorph.harness.tools.ptxas import PtxasError
from karyamorph.harness.tools.toolchain import ToolchainError
from karyamorph.isa.arch import Arch, ArchError
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.errors import PtxError
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference, SpecError
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.budget import ModelBudget, TooLargeError
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.semantics.decode import UnmodeledError
from karyamorph.model.semantics.instruction import Instr, Law, Slot
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import TYPES as PTX_TYPES
from karyamorph.search.run import SearchResult, search
from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Footprint, Template
from karyamorph.store.errors import StoreError

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
