"""Loops that ptxas keeps as written: the kernels' timed loops and the clock reads around them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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
