"""Atomics on shared and global memory: latency (one thread, a dependent chain) and throughput
(every SM full of warps, contended on one word or each thread on its own word).

Latency: ``r = atom.space.add.u32 [w], r``: each atomic adds the value the previous one
returned, so it cannot start before that one is back. With the word and ``r`` both starting at
1 the word runs through the Fibonacci numbers (:func:`fibonacci_chain` says where a chain of
``n`` steps ends); the kernel stores the last returned value and the word, a check that every
atomic happened in order. Throughput: ``red.space.add.u32 [w], 1`` (no result), :data:`UNROLL`
an iteration, ``w`` shared by the block (shared) or the grid (global) when contended. Shared
figures are atomics per cycle per SM (clocks per warp, spans per SM); global ones atomics per
nanosecond for the whole device (CUDA events). The contended global word is also measured with
``red.global.add.f32 [w], 1.0`` (:data:`FLOAT_FORMS`): ptxas folds a warp's 32 integer adds to
one address into one ``REDG`` of their count, which it cannot do for floats (their sum depends
on the order), so L2 sees 32 times the operations: what a reduction's per-block float partial
sums meet.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.benchmark import PlanOptions, figure, missing, sm_launch
from karyamorph.microbench.compiled import Compiled, merge
from karyamorph.microbench.launches import BufferSpec, LaunchSpec, Scalar
from karyamorph.microbench.loops import kept_loop, store_clocks, timed_loop
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.stats import sm_spans, summarize
from karyamorph.store.microbench import FigureRow

NAME = "atomics"
UNROLL = 8
HOPS = 512
ITERATIONS = 16
SPACES = ("shared", "global")
MODES = ("contended", "distinct")
MAX_WORDS = 1024  # shared words of the distinct-address kernel: one per thread of a block
FLOAT_FORMS = (("global", "contended"),)
"""The ``(space, mode)`` throughputs measured with ``f32`` adds as well as ``u32``."""


def throughput_forms() -> list[tuple[str, str, str]]:
    """Every measured ``(space, mode, type)`` of the throughput kernels."""
    forms = [(s, m, "u32") for s in SPACES for m in MODES]
    return forms + [(s, m, "f32") for s, m in FLOAT_FORMS]


def throughput_entry(space: str, mode: str, type_: str = "u32") -> str:
    """The kernel name of a throughput form (``u32`` keeps the plain name)."""
    return f"atom_{space}_{mode}" + ("" if type_ == "u32" else f"_{type_}")


def fibonacci_chain(steps: int, bits: int = 32) -> tuple[int, int]:
    """``(last returned value, word)`` after ``steps`` of ``r = atomicAdd(w, r)`` from ``w = r = 1``."""
    word, r, mask = 1, 1, (1 << bits) - 1
    for _ in range(steps):
        word, r = (word + r) & mask, word
    return r, word


def _word(k: KernelBuilder, space: str, buf: ast.Symbol, index: Reg | None) -> Reg:
    """The address of word ``index`` (or word 0) of the global buffer ``buf`` or of shared ``words``."""
    if space == "shared":
        base = k.mov("u32", ast.Symbol("words"))
        return base if index is None else k.mad("u32", index, 4, base)
    base = k.to_global(k.ld_param(buf))
    return base if index is None else k.add("u64", base, k.mul_wide("u32", index, 4))


def build_latency(space: str, arch: str) -> ast.Module:
    """``atom_lat_<space>(buf, out, hops)``: thread 0 runs ``hops`` dependent atomics untimed and
    ``hops`` timed; ``out`` = last value, word, cycles (3 words)."""
    k = KernelBuilder(f"atom_lat_{space}", target=arch, version=min_ptx_for_target(arch))
    buf, out = k.param_ptr("buf"), k.param_ptr("out")
    hops = k.param("hops", "u32")
    if space == "shared":
        k.shared("words", "b32", 1, align=4)
    k.ret(guard=k.setp("ne", "u32", k.sreg("tid.x"), 0))
    at = _word(k, space, buf, None)
    r = k.mov("u32", 1)
    k.st(space, "u32", k.addr(at), r)
    with kept_loop(k, k.ld_param(hops), UNROLL):
        for _ in range(UNROLL):
            k.atom(space, "add", "u32", k.addr(at), r, out=r)
    with timed_loop(k, k.ld_param(hops), UNROLL) as (_, times):
        for _ in range(UNROLL):
            k.atom(space, "add", "u32", k.addr(at), r, out=r)
    pout = k.to_global(k.ld_param(out))
    k.st("global", "u64", k.addr(pout), k.cvt("u64", "u32", r))
    k.st("global", "u64", k.addr(pout, 8), k.cvt("u64", "u32", k.ld(space, "u32", k.addr(at))))
    k.st("global", "u64", k.addr(pout, 16), k.sub("u64", times[1], times[0]))
    k.ret()
    return k.build()


def build_throughput(space: str, mode: str, arch: str, type_: str = "u32") -> ast.Module:
    """``atom_<space>_<mode>[_f32](buf, clocks, smids, iterations)``: every thread ``iterations x``
    :data:`UNROLL` ``red.add 1`` (``type_``: ``u32`` or ``f32``) on the contended word 0 or on its
    own word; a shared kernel then copies its words to ``buf`` (block 0's, for the check)."""
    k = KernelBuilder(throughput_entry(space, mode, type_), target=arch, version=min_ptx_for_target(arch))
    buf, clocks, smids = (k.param_ptr(n) for n in ("buf", "clocks", "smids"))
    iterations = k.param("iterations", "u32")
    tid = k.sreg("tid.x")
    if space == "shared":
        k.shared("words", "b32", MAX_WORDS, align=4)
        k.st("shared", "u32", k.addr(_word(k, space, buf, tid)), 0)
        k.bar_sync(0)
    index = None if mode == "contended" else (tid if space == "shared" else k.global_thread_id_x())
    at = _word(k, space, buf, index)
    k.bar_sync(0)
    with timed_loop(k, k.ld_param(iterations)) as (_, times):
        for _ in range(UNROLL):
            k.red(space, "add", type_, k.addr(at), 1.0 if type_ == "f32" else 1)
    store_clocks(k, clocks, smids, tid, times)
    if space == "shared":
        k.bar_sync(0)
        block0 = k.setp("eq", "u32", k.sreg("ctaid.x"), 0)
        word = k.ld("shared", "u32", k.addr(_word(k, space, buf, tid)))
        k.st("global", "u32", k.addr(_word(k, "global", buf, tid)), word, guard=block0)
    k.ret()
    return k.build()


class AtomicBench:
    """Atomic latency and throughput (see the module's description)."""

    name = NAME

    def modules(self, arch: str) -> dict[str, ast.Module]:
        parts = [build_latency(s, arch) for s in SPACES]
        parts += [build_throughput(s, m, arch, t) for s, m, t in throughput_forms()]
        return {f"{NAME}/all": merge(parts)}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        return {}

    def _where(self, shape: DeviceShape, c: Compiled, entry: str) -> tuple[int, int] | None:
        return sm_launch(shape, shape.max_warps_per_sm, c.registers.get(entry, 0))

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        c = compiled[f"{NAME}/all"]
        specs = [
            LaunchSpec(
                f"{NAME}/lat/{s}",
                f"{NAME}/all",
                f"atom_lat_{s}",
                1,
                32,
                ("buf", "out", Scalar("u32", HOPS)),
                (BufferSpec("buf", 4), BufferSpec("out", 24, read_back=True)),
                repeats=options.repeats,
            )
            for s in SPACES
        ]
        for s, m, t in throughput_forms():
            entry = throughput_entry(s, m, t)
            where = self._where(shape, c, entry)
            if where is None:
                continue
            grid, block = where
            warps = grid * block // 32
            buffers = (
                BufferSpec("buf", 4 * grid * block),
                BufferSpec("clocks", 16 * warps, read_back=True),
                BufferSpec("smids", 4 * warps, read_back=True),
            )
            specs.append(
                LaunchSpec(
                    _key(s, m, t),
                    f"{NAME}/all",
                    entry,
                    grid,
                    block,
                    ("buf", "clocks", "smids", Scalar("u32", ITERATIONS)),
                    buffers,
                    repeats=options.repeats,
                    events=s == "global",
                )
            )
        return specs

    def figures(
        self,
        compiled: Mapping[str, Compiled],
        outcome: BatchOutcome,
        shape: DeviceShape,
        options: PlanOptions,
    ) -> list[FigureRow]:
        c = compiled[f"{NAME}/all"]
        rows = []
        for s in SPACES:
            key, name = f"{NAME}/lat/{s}", f"{s}.add.u32"
            result = outcome.results.get(key)
            if result is None:
                rows.append(
                    missing("atomic_latency", name, "cycles", "failed", outcome.failures.get(key, ""))
                )
                continue
            words = result.words("out")
            expect = fibonacci_chain(2 * HOPS)
            ok = all((int(w[0]), int(w[1])) == expect and int(w[2]) > 0 for w in words)
            detail = {"hops": HOPS, "sass": c.regions.get(f"atom_lat_{s}", ({},))[0]}
            rows.append(
                figure(
                    "atomic_latency",
                    name,
                    "cycles",
                    summarize([int(w[2]) / HOPS for w in words]),
                    clock_mhz=result.mean_clock_mhz,
                    status="ok" if ok else "failed",
                    detail=detail,
                )
            )
        rows += [self._throughput(s, m, t, c, outcome, shape) for s, m, t in throughput_forms()]
        return rows

    def _throughput(
        self, space: str, mode: str, type_: str, c: Compiled, outcome: BatchOutcome, shape: DeviceShape
    ) -> FigureRow:
        key, entry = _key(space, mode, type_), throughput_entry(space, mode, type_)
        name = f"{space}.{mode}" + ("" if type_ == "u32" else f".{type_}")
        unit = "atomics/cycle/SM" if space == "shared" else "atomics/ns"
        result = outcome.results.get(key)
        where = self._where(shape, c, entry)
        if result is None or where is None:
            reason = outcome.failures.get(key, "no launch fits a full SM")
            return missing("atomic_throughput", name, unit, "failed", reason)
        grid, block = where
        per_thread = ITERATIONS * UNROLL
        if space == "global":
            values = [grid * block * per_thread / ns for ns in result.event_ns]
        else:
            values = []
            for clocks, smids in zip(result.words("clocks"), result.words("smids", np.uint32), strict=True):
                spans = sm_spans(clocks, smids, 1)
                rates = [sp.warps * 32 * per_thread / sp.cycles[0] for sp in spans if sp.cycles[0]]
                values.append(float(np.median(rates)) if rates else float("nan"))
        detail = {
            "warps_per_sm": shape.max_warps_per_sm,
            "per_thread": per_thread,
            "sass": c.regions.get(entry, ({},))[0],
        }
        return figure(
            "atomic_throughput",
            name,
            unit,
            summarize(values),
            parameter="warps_per_sm",
            value=shape.max_warps_per_sm,
            clock_mhz=result.mean_clock_mhz,
            detail=detail,
        )


def _key(space: str, mode: str, type_: str) -> str:
    """The launch key of a throughput form (``u32`` keeps the plain key)."""
    return f"{NAME}/{space}/{mode}" + ("" if type_ == "u32" else f"/{type_}")
