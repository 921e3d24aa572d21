"""The kernel as data: KernelSpec, size expressions, the signature check, Arch and BoundKernel."""

from karyamorph.isa.arch import Arch, ArchError
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.expressions import ExpressionError, evaluate
from karyamorph.kernel.limits import ArchResources, LaunchLimits, launch_limits, resources_for
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.signature import check_signature
from karyamorph.kernel.spec import DTYPES, ArgSpec, CudaSource, DType, KernelSpec, SpecError

__all__ = [
    "DTYPES", "Arch", "ArchError", "ArchResources", "ArgSpec", "BoundKernel", "CudaSource", "DType",
    "ExpressionError", "KernelSpec", "LaunchLimits", "SpecError", "bind", "check_signature", "evaluate",
    "launch_limits", "load_spec", "resources_for", "spec_from_dict",
]  # fmt: skip
