"""The shipped machine: the reduced PTX ISA (declarations, stated laws, error bounds) on a SIMT machine.

Every instruction of the reduced PTX ISA is declared in :mod:`~karyamorph.model.ptx.arith`,
:mod:`~karyamorph.model.ptx.data`, :mod:`~karyamorph.model.ptx.control`,
:mod:`~karyamorph.model.ptx.calls`, :mod:`~karyamorph.model.ptx.async_copy`, the warp-level
matrix instructions (:mod:`~karyamorph.model.ptx.matrix`, :mod:`~karyamorph.model.ptx.mma`,
:mod:`~karyamorph.model.ptx.wmma`) and the forms real compilers emit beyond those, in
:mod:`~karyamorph.model.ptx.half`, ``packed``, ``mixed``, ``minmax``, ``convert`` and ``dot``,
with sm_120's narrow float formats in ``narrow_convert`` (``cvt`` to and from the fp8/fp6/fp4 and
ue8m0 pairs), ``mma_kinds`` (``mma.sync...kind::f8f6f4``) and ``mma_scaled`` (its
block-scaled kinds ``mxf8f6f4``, ``mxf4``, ``mxf4nvf4``) and ``matrix_b8`` (the
``ldmatrix``/``stmatrix`` forms of 8-, 6- and 4-bit elements that feed them), and Hopper's asynchronous
machinery in ``mbarrier``, ``bulk_copy`` (non-tensor ``cp.async.bulk``, ``fence.proxy.async``),
``tensor_copy`` (``cp.async.bulk.tensor`` through a tensor map)
and ``cluster`` (clusters of CTAs: their special registers, ``barrier.cluster`` and ``mapa``), and
Blackwell's tensor memory in ``tcgen05`` (alloc, dealloc, ``32x32b`` loads and stores, waits,
fences) and ``tcgen05_mma`` (``tcgen05.mma...kind::f16`` for M = 128, ``tcgen05.commit``), with
the block-scaled kinds in ``tcgen05_scaled`` and ``tcgen05.cp`` in ``tcgen05_copy``;
this module attaches the laws of :mod:`~karyamorph.model.ptx.laws` and the stated error
bounds, and assembles :func:`ptx_machine`. ``wgmma`` (warpgroup MMA, sm_90a: ``.f16``/``.bf16``
into ``.f32``/``.f16``, descriptors, fragments) is in ``wgmma``, its tf32 and fp8 kinds in
``wgmma_kinds`` and its 8-bit integer kind in ``wgmma_int``; the warp reduction ``redux.sync`` (what
CUB and cooperative groups emit for integer reductions) in ``redux``, ``bmsk`` in ``bitmask`` and
``prmt`` (byte permute) in ``permute``; ``elect.sync`` is in ``control``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from karyamorph.model.ptx.arith import ARITH
from karyamorph.model.ptx.async_copy import ASYNC_COPY
from karyamorph.model.ptx.bitmask import BITMASK
from karyamorph.model.ptx.bulk_copy import BULK_COPY
from karyamorph.model.ptx.calls import CALLS
from karyamorph.model.ptx.cluster import CLUSTER
from karyamorph.model.ptx.control import CONTROL
from karyamorph.model.ptx.convert import CONVERT
from karyamorph.model.ptx.data import DATA
from karyamorph.model.ptx.dot import DOT
from karyamorph.model.ptx.half import HALF
from karyamorph.model.ptx.laws import LAWS
from karyamorph.model.ptx.matrix import MATRIX
from karyamorph.model.ptx.matrix_b8 import MATRIX_B8
from karyamorph.model.ptx.mbarrier import MBARRIER
from karyamorph.model.ptx.minmax import MINMAX
from karyamorph.model.ptx.mixed import MIXED
from karyamorph.model.ptx.mma import MMA
from karyamorph.model.ptx.mma_kinds import MMA_KINDS
from karyamorph.model.ptx.mma_scaled import MMA_SCALED
from karyamorph.model.ptx.narrow_convert import NARROW_CONVERT
from karyamorph.model.ptx.packed import PACKED_F32
from karyamorph.model.ptx.permute import PERMUTE
from karyamorph.model.ptx.redux import REDUX
from karyamorph.model.ptx.setmaxnreg import SETMAXNREG
from karyamorph.model.ptx.tcgen05 import TCGEN05
from karyamorph.model.ptx.tcgen05_copy import TCGEN05_COPY
from karyamorph.model.ptx.tcgen05_mma import TCGEN05_MMA
from karyamorph.model.ptx.tcgen05_scaled import TCGEN05_SCALED
from karyamorph.model.ptx.tensor_copy import TENSOR_COPY
from karyamorph.model.ptx.wgmma import WGMMA
from karyamorph.model.ptx.wgmma_int import WGMMA_INT
from karyamorph.model.ptx.wgmma_kinds import WGMMA_KINDS
from karyamorph.model.ptx.wmma import WMMA
from karyamorph.model.semantics.instruction import ErrorBound, Instr
from karyamorph.model.semantics.simt_machine import Machine

EXTENDED: tuple[Instr, ...] = (
    *HALF,
    *PACKED_F32,
    *MIXED,
    *MINMAX,
    *CONVERT,
    *DOT,
    *NARROW_CONVERT,
    *MMA_KINDS,
    *MMA_SCALED,
    *MATRIX_B8,
    *MBARRIER,
    *BULK_COPY,
    *TENSOR_COPY,
    *CLUSTER,
    *TCGEN05,
    *TCGEN05_MMA,
    *TCGEN05_SCALED,
    *TCGEN05_COPY,
    *WGMMA,
    *SETMAXNREG,
    *WGMMA_KINDS,
    *WGMMA_INT,
    *REDUX,
    *BITMASK,
    *PERMUTE,
)

# Accuracy stated in the PTX ISA ("rcp", "sqrt", "rsqrt", "ex2", "lg2" sections, .approx.f32,
# full range): rcp 1 ulp; sqrt relative 2**-23; rsqrt relative 2**-22.9; ex2 2 ulp; lg2 absolute
# 2**-22.6 (checked on [0.5, 2], where the result's own f32 rounding stays below it).
BOUNDS: dict[str, tuple[ErrorBound, ...]] = {
    "rcp": (
        ErrorBound(
            "rcp.approx.f32", lambda v: 1.0 / v, 1e-30, 1e30, max_ulp=1.0, source="PTX ISA, rcp: max 1 ulp"
        ),
    ),
    "sqrt": (
        ErrorBound(
            "sqrt.approx.f32",
            np.sqrt,
            0.0,
            3e38,
            max_rel=2.0**-23,
            source="PTX ISA, sqrt.approx.f32: max relative error 2^-23",
        ),
    ),
    "rsqrt": (
        ErrorBound(
            "rsqrt.approx.f32",
            lambda v: 1.0 / np.sqrt(v),
            1e-30,
            3e38,
            max_rel=2.0**-22.9,
            source="PTX ISA, rsqrt.approx.f32: max relative error 2^-22.9",
        ),
    ),
    "ex2": (
        ErrorBound(
            "ex2.approx.f32", np.exp2, -126.0, 127.0, max_ulp=2.0, source="PTX ISA, ex2.approx.f32: max 2 ulp"
        ),
    ),
    "lg2": (
        ErrorBound(
            "lg2.approx.f32",
            np.log2,
            0.5,
            2.0,
            max_abs=2.0**-22.6,
            source="PTX ISA, lg2.approx.f32: max absolute error 2^-22.6, on [0.5, 2]",
        ),
    ),
}


def ptx_instructions() -> tuple[Instr, ...]:
    """The reduced PTX ISA with its laws and bounds attached."""
    base = []
    for ins in (*ARITH, *DATA, *CONTROL, *CALLS, *ASYNC_COPY, *MATRIX, *MMA, *WMMA):
        laws, bounds = LAWS.get(ins.name, ()), BOUNDS.get(ins.name, ())
        base.append(replace(ins, laws=ins.laws + laws, bounds=ins.bounds + bounds) if laws or bounds else ins)
    # The extended forms (which state their own laws) come first: a later declaration is tried
    # first when decoding, so the base declarations keep answering for their own forms (the two
    # never share a form).
    return (*EXTENDED, *base)


def ptx_machine(arch: str = "sm_80", scheduling: str = "its") -> Machine:
    """The shipped machine: warp size 32, the reduced PTX ISA, resources of ``arch``.

    Examples
    --------
    >>> m = ptx_machine("sm_120")
    >>> "shfl.sync" in m.opcodes and m.resources().max_warps_per_sm > 0
    True
    """
    return Machine("ptx-reduced", ptx_instructions(), arch=arch, scheduling=scheduling)
