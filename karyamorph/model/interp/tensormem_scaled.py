"""The interpreter's ``tcgen05.cp`` (shared memory to tensor memory) and block-scaled
``tcgen05.mma``: the hooks of :mod:`karyamorph.model.ptx.tcgen05_copy` and
:mod:`karyamorph.model.ptx.tcgen05_scaled`, over :class:`~karyamorph.model.interp.tensormem.TensorMemHooks`.

Refused as the kernel's fault (:class:`~karyamorph.model.interp.tensormem.TensorMemoryError`):
a copy into columns or lanes not allocated, or past lane 127; an instruction descriptor the PTX
ISA does not allow; scale factors in columns not allocated, or whose four 32-lane partitions do
not hold the same bytes (the ISA: they "need to be duplicated to all 32 lane partitions");
columns another thread's MMA or copy still writes. A copy is in flight until its thread's commit
completes, as an MMA is (:mod:`karyamorph.model.interp.tensormem_order`); shared bytes it reads
go through the async proxy (:mod:`karyamorph.model.interp.proxyorder`).
"""

from __future__ import annotations

import numpy as np

from karyamorph.model.interp import tensormem_mma as arith
from karyamorph.model.interp.tensormem import WARP_LANES, TensorMemHooks
from karyamorph.model.ptx import tcgen05_copy as cp
from karyamorph.model.ptx.formats import FORMATS, decode
from karyamorph.model.ptx.tcgen05 import LANE_SHIFT, TMEM_LANES
from karyamorph.model.ptx.tcgen05_kinds import KINDS
from karyamorph.model.ptx.tcgen05_mma import SmemDesc
from karyamorph.model.ptx.tcgen05_scaled import BLOCKS, ScaledDesc, ScaledKind
from karyamorph.model.semantics.concrete import BoolArray, ConcreteDomain, UIntArray

_D = ConcreteDomain()
_BYTES = KINDS["kind::f8f6f4"]  # one-byte containers, 32 a row


def unpack_e2m1(packed: np.ndarray) -> np.ndarray:
    """Two e2m1 codes a byte (low nibble first) as bytes holding one code each in bits 5-2, the
    container :func:`~karyamorph.model.interp.tensormem_mma.values` reads."""
    b = np.asarray(packed, np.uint8)
    codes = np.stack([b & 0xF, b >> 4], axis=-1).reshape(*b.shape[:-1], -1)
    out: np.ndarray = (codes << 2).astype(np.uint8)
    return out


def copy_lanes(shape: str, rows: int) -> list[list[int]]:
    """For each row of a modeled ``tcgen05.cp`` shape, the TMEM lanes (from ``lane(taddr)``) it
    is written to: ``.warpx4`` into every warp's 32 lanes, the 128-row shapes row by row."""
    if shape == "32x128b":
        return [[r + 32 * w for w in range(4)] for r in range(rows)]
    return [[r] for r in range(rows)]


def scale_values(codes: np.ndarray, fmt: str) -> np.ndarray:
    """Scale-factor bytes as float64: ue8m0 ``2**(e - 127)`` (NaN at 0xff), ue4m3 (NaN at 0x7f;
    bit 7 ignored, as :mod:`~karyamorph.model.ptx.mma_scaled` does)."""
    c = np.asarray(codes, np.uint8)
    if fmt == "ue4m3":
        c = (c & 0x7F).astype(np.uint8)
    out: np.ndarray = np.asarray(decode(_D, c, FORMATS[fmt]), np.uint64).view(np.float64)
    return out


class TensorMemScaledHooks(TensorMemHooks):
    """``tmem_copy`` and ``tmem_mma_scaled`` (attributes set by the group, as for its base)."""

    def tmem_copy(self, taddr: UIntArray, sdesc: UIntArray, shape: str) -> None:
        tmem = self._tmem()
        for i in self._issuers():  # one thread issues one whole copy
            desc = SmemDesc.decode(self._at(sdesc, i))
            self._limit(cp.UNMODELED.get(shape) or desc.unmodeled(), i)
            rows, nbytes = cp.SHAPES[shape]
            a = self._at(taddr, i)
            lane0, col0, block = a >> LANE_SHIFT, a & 0xFFFF, self._block(i)
            lanes = np.array(copy_lanes(shape, rows)) + lane0  # (rows, copies)
            ncols = nbytes // 4
            if int(lanes.max()) >= TMEM_LANES or not self._owned(block, col0, ncols):
                raise self._fail(
                    f"the copy's {rows} rows x {ncols} columns at {a:#010x} are not in allocated tensor "
                    "memory (lanes 0 .. 127, columns of one tcgen05.alloc)",
                    i,
                )
            data = self._smem_bytes(arith.byte_addresses(desc, rows, nbytes), 1, i).astype(np.uint32)
            words = data.reshape(rows, ncols, 4) << np.array([0, 8, 16, 24], np.uint32)
            cells = np.bitwise_or.reduce(words, axis=2).astype(np.uint32)  # (rows, ncols)
            self._mma_target(np.full(self.n, col0, np.uint32), ncols, i, op="tcgen05.cp")
            target = tmem.block_cells(block)
            for copy in range(lanes.shape[1]):
                target[lanes[:, copy], col0 : col0 + ncols] = cells

    def tmem_mma_scaled(self, taddr: UIntArray, adesc: UIntArray, bdesc: UIntArray, idesc: UIntArray,
                        sfa: UIntArray, sfb: UIntArray, enable: BoolArray, kind: ScaledKind,
                        vec: str) -> None:  # fmt: skip
        tmem = self._tmem()
        for i in self._issuers():
            word = self._at(idesc, i)
            shape = ScaledDesc.decode(word)
            problem = shape.invalid(kind, vec)
            if problem:
                raise self._fail(f"instruction descriptor {word:#010x}: {problem}", i)
            descs = [SmemDesc.decode(self._at(v, i)) for v in (adesc, bdesc)]
            self._limit(shape.unmodeled() or descs[0].unmodeled() or descs[1].unmodeled(), i)
            fmt = shape.scale_format(kind, vec)
            blocks = BLOCKS[vec]
            sa = self._scales(sfa, shape.m, shape.sfa_id, blocks, fmt, i, "A")
            sb = self._scales(sfb, shape.n, shape.sfb_id, blocks, fmt, i, "B")
            block, col0 = self._mma_target(taddr, shape.n, i)
            ops = []
            for desc, rows, code in ((descs[0], shape.m, shape.a_format),
                                     (descs[1], shape.n, shape.b_format)):  # fmt: skip
                data = self._smem_bytes(arith.operand_addresses(desc, rows, _BYTES), 1, i)
                containers = unpack_e2m1(data) if kind.packed else data
                ops.append(arith.values(containers, kind.ab_formats[code]))
            a_vals = -ops[0] if shape.negate_a else ops[0]
            b_vals = -ops[1] if shape.negate_b else ops[1]
            span = kind.k // blocks  # elements of K one scale factor covers
            scale = np.repeat(sa, span, axis=1)[:, None, :] * np.repeat(sb, span, axis=1)[None, :, :]
            with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf and NaN scales give NaN
                products = a_vals[:, None, :] * b_vals[None, :, :] * scale  # exact: see tcgen05_scaled
            cells = tmem.block_cells(block)[: shape.m, col0 : col0 + shape.n]
            with np.errstate(over="ignore"):  # a sum past f32's range rounds to an infinity
                cells[...] = arith.accumulate_f32(products, cells if self._at(enable, i) else None)

    def _scales(self, taddr: UIntArray, rows: int, sf_id: int, blocks: int, fmt: str, i: int,
                which: str) -> np.ndarray:  # fmt: skip
        """The (rows, blocks) scale factors of A (rows of A) or B (columns of B) at ``taddr``:
        row ``r`` in lane ``r % 32`` of each partition, column ``r / 32``, bytes ``sf_id`` on."""
        tmem = self._tmem()
        a = self._at(taddr, i)
        col0, block, ncols = a & 0xFFFF, self._block(i), -(-rows // WARP_LANES)
        if a >> LANE_SHIFT:
            self._limit(f"scale factors of {which} from lane {a >> LANE_SHIFT} (read from lane 0)", i)
        if not self._owned(block, col0, ncols):
            raise self._fail(f"scale factors of {which} at {a:#010x} ({ncols} columns) are not allocated", i)
        self._settle()
        flight = tmem.order.conflict(block, col0, ncols, thread=i + self.lo)
        if flight is not None:
            raise self._fail(f"scale factors of {which}: {flight.describe()}", i)
        words = tmem.block_cells(block)[:, col0 : col0 + ncols].reshape(4, WARP_LANES, ncols)
        r = np.arange(rows)
        picked = words[:, r % WARP_LANES, r // WARP_LANES]  # (partition, rows)
        shifts = np.array([8 * (sf_id + q) for q in range(blocks)], np.uint32)
        codes = (picked[:, :, None] >> shifts) & 0xFF  # (partition, rows, blocks)
        differ = (codes != codes[0]).any(axis=(0, 2))
        if differ.any():
            k = int(np.argmax(differ))
            raise self._fail(
                f"the scale factors of {which}'s row {k} differ between the 32-lane partitions of "
                f"column {col0 + k // WARP_LANES} (the PTX ISA requires them duplicated to all four)",
                i,
            )
        return scale_values(codes[0].astype(np.uint8), fmt)
