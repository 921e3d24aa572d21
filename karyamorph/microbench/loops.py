"""Loops that ptxas keeps as written: the kernels' timed loops, the clock reads around them and
where each warp stores those reads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder, Reg, Value


@contextmanager
def kept_loop(k: KernelBuilder, count: Value, step: int = 1) -> Iterator[Reg]:
    """``for i in range(0, count, step)`` that ptxas does not unroll (the body is unrolled by hand).

    ``.pragma "nounroll"`` is a statement of the loop's header block, as nvcc writes it for
    ``#pragma unroll 1``; at the function's start ptxas ignored it and unrolled small bodies.
    """
    with k.for_range(0, count, step) as i:
        k.pragma("nounroll")
        yield i


@contextmanager
def timed_loop(k: KernelBuilder, count: Value, step: int = 1) -> Iterator[tuple[Reg, list[Reg]]]:
    """:func:`kept_loop` between two reads of ``%clock64``; yields the counter and, once the
    loop is closed, ``[start, end]`` (the list is filled on leaving the block)."""
    times: list[Reg] = [k.sreg("clock64")]
    with kept_loop(k, count, step) as i:
        yield i, times
    times.append(k.sreg("clock64"))


def store_clocks(k: KernelBuilder, clocks: ast.Symbol, smids: ast.Symbol, tid: Reg, times: list[Reg]) -> None:
    """Lane 0 of each warp writes its loop's ``[start, end]`` (two u64 at ``16 * warp`` bytes of
    ``clocks``) and its ``%smid`` (a u32 at ``4 * warp`` bytes of ``smids``), ``warp`` being its
    index in the grid: what :func:`~karyamorph.microbench.stats.sm_spans` reads back."""
    lane0 = k.setp("eq", "u32", k.and_("b32", tid, 31), 0)
    warp = k.mad("u32", k.sreg("ctaid.x"), k.shr("u32", k.sreg("ntid.x"), 5), k.shr("u32", tid, 5))
    at = k.add("u64", k.to_global(k.ld_param(clocks)), k.mul_wide("u32", warp, 16))
    k.st("global", "u64", k.addr(at), times[0], guard=lane0)
    k.st("global", "u64", k.addr(at, 8), times[1], guard=lane0)
    sm = k.add("u64", k.to_global(k.ld_param(smids)), k.mul_wide("u32", warp, 4))
    k.st("global", "u32", k.addr(sm), k.sreg("smid"), guard=lane0)
