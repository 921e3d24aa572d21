"""The form check of ``cp.async.bulk.tensor`` (tile mode): every rank and space of the load lands
boxes as tests/model/oracle/tma.py's element-by-element oracle says (inside, over the end and
before the start of the tensor, unswizzled and with a 64-byte swizzle), and completes the box's
bytes on its mbarrier (the dump kernel waits for exactly those); every rank of the store writes
the box's elements inside the tensor and no other."""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.kernel.tensormap import TensorMap, TensorMapArg
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form
from tests.model.oracle.tma import box_bytes, dump_args, dump_ptx

NAMES = ("cp.async.bulk.tensor", "cp.async.bulk.tensor.multicast::cluster")
"""The multicast load is held here on one CTA, its mask naming that CTA alone (a plain load);
clusters of two: tests/model/interp/test_cluster_mbarrier.py."""
SHAPES = {1: (40,), 2: (6, 40), 3: (3, 5, 40), 4: (2, 3, 2, 40), 5: (2, 2, 2, 3, 40)}
CORNERS = ((4, 1), (36, 4), (-4, -1))  # (inner coordinate, the others): inside, over the end, before


def knows(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(form.text)


def check(machine: Machine, form: Form) -> list[str]:
    """Disagreements of one form with the oracle (empty: it agrees)."""
    knows(form)
    rank = int((form.mod("dim") or "1d")[0])
    text = form.text.replace(".shared.", ".shared::cta.")
    try:
        if form.mod("completion") == "bulk_group":
            return _store_problems(machine, text, rank)
        return _load_problems(machine, text, rank)
    except ExecutionError as exc:
        return [f"{form.text}: {exc}"]


def _load_problems(machine: Machine, text: str, rank: int) -> list[str]:
    shape = SHAPES[rank]
    src = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1
    problems = []
    for swizzle, inner in ((0, 8), (64, 16)):
        box = (*(2 for _ in shape[:-1]), inner)
        tm = TensorMap.of_array(shape, 4, box, swizzle=swizzle)
        for x, y in CORNERS:
            coords = (x, *(y for _ in shape[:-1]))
            mod = parse(dump_ptx(rank, copy=text, multicast="multicast" in text))
            args = dump_args(src, tm, coords)
            got = interpret(mod, "tma_dump", machine, (1, 128, 0), args).outputs["out"].view(np.uint8)
            if not np.array_equal(got, box_bytes(src, tm, coords)):
                problems.append(f"{text}: box at {coords} (swizzle {swizzle}) differs from the oracle")
    return problems


def store_ptx(text: str, rank: int, fence: bool = True) -> str:
    """A kernel whose 128 threads write ``1000 + t`` to word ``t`` of a shared box, fence the
    async proxy (unless ``fence`` is False), and whose thread 0 stores the box with ``text`` at
    its ``c0..`` coordinates and waits for the store to read the box."""
    fenced = "    fence.proxy.async.shared::cta;\n" if fence else ""
    coords = ", ".join(f"%r{10 + d}" for d in range(rank))
    loads = "\n".join(f"    ld.param.u32 %r{10 + d}, [c{d}];" for d in range(rank))
    params = ", ".join(f".param .u32 c{d}" for d in range(rank))
    hint = ", %rd7" if "cache_hint" in text else ""
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry tma_store(.param .align 64 .b8 tmap[128], {params})
{{
    .reg .pred %p<2>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<8>;
    .shared .align 1024 .b8 box[1024];
    mov.b32 %r1, tmap;
    cvt.u64.u32 %rd1, %r1;
    cvta.param.u64 %rd2, %rd1;
    mov.u64 %rd7, 0;
{loads}
    mov.u32 %r4, %tid.x;
    mov.u32 %r5, box;
    shl.b32 %r6, %r4, 2;
    add.u32 %r7, %r5, %r6;
    add.u32 %r8, %r4, 1000;
    st.shared.u32 [%r7], %r8;
{fenced}    bar.sync 0;
    setp.eq.u32 %p1, %r4, 0;
    @%p1 {text} [%rd2, {{{coords}}}], [%r5]{hint};
    @%p1 cp.async.bulk.commit_group;
    @%p1 cp.async.bulk.wait_group.read 0;
    ret;
}}
"""


def _store_problems(machine: Machine, text: str, rank: int) -> list[str]:
    shape = SHAPES[rank]
    box = (*(2 for _ in shape[:-1]), 8)
    tm = TensorMap.of_array(shape, 4, box, is_float=False)
    n = int(np.prod(box))
    problems = []
    for x, y in CORNERS:
        coords = (x, *(y for _ in shape[:-1]))
        dst = np.full(shape, 7, np.uint32)
        args: dict[str, object] = {"tmap": TensorMapArg(dst, tm)}
        args.update({f"c{d}": c & 0xFFFFFFFF for d, c in enumerate(coords)})
        got = interpret(parse(store_ptx(text, rank)), "tma_store", machine, (1, 128, 0), args).outputs["tmap"]  # type: ignore[arg-type]
        want = np.full(shape, 7, np.uint32)
        values = (np.arange(n, dtype=np.uint32) + 1000).reshape(box)
        for index in np.ndindex(*box):
            at = tuple(c + i for c, i in zip(reversed(coords), index, strict=True))
            if all(0 <= a < s for a, s in zip(at, shape, strict=True)):
                want[at] = values[index]
        if not np.array_equal(got, want):
            problems.append(f"{text}: the box stored at {coords} differs from the oracle")
    return problems
