"""Atomics of one instruction over many threads, in thread order: the old value each one sees.

Threads that hit one location take turns in the order of the access array (the launch order,
or a random one in the randomized order): each sees what the threads before it left there. The
result equals applying the update thread by thread, without a Python loop over threads:

- no two threads share a location: one vectorised read-modify-write;
- an integer ``add`` (wrapping addition, associative and commutative): each thread's old value
  is the location's value plus the sum of the operands of the threads before it (a segmented
  prefix sum), and the location ends with the value plus all of them;
- any other update: rounds, where round ``r`` serves the ``r``-th thread of every location,
  so there are as many rounds as the most threads on one location.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from karyamorph.model.interp.memory import Memory
from karyamorph.model.semantics.concrete import UINT, UIntArray

# ``update(old, b, c)`` on the values of the accesses (c: compare-and-swap only).
Update = Callable[[UIntArray, UIntArray, UIntArray | None], UIntArray]


def apply_atomics(
    memory: Memory,
    bufs: np.ndarray,
    elems: np.ndarray,
    nbytes: int,
    update: Update,
    b: np.ndarray,
    c: np.ndarray | None,
    additive: bool,
) -> np.ndarray:
    """Perform the atomics at resolved locations in order; return the old value of each.

    Parameters
    ----------
    memory, bufs, elems, nbytes
        Where each access goes (:meth:`Memory.resolve`), in the order they take effect.
    update
        ``update(old, b, c)``: the value an access stores (elementwise).
    b, c
        Operands per access, or one (0-d) for all (``c`` for compare-and-swap, else None).
    additive
        The update is wrapping integer addition of ``b`` (which lets colliding accesses be
        combined by a prefix sum).
    """
    dt = UINT[nbytes * 8]
    n = bufs.size
    if n == 0:
        return np.zeros(0, dt)
    # A stable sort of 16-bit keys is a radix sort: a buffer of at most 2**16 elements (shared
    # memory, say) is sorted by element index alone.
    one_buffer = bufs.strides[0] == 0  # as Memory.resolve gives it for accesses to one buffer
    if one_buffer and memory.buffer(int(bufs[0]), nbytes).size <= 1 << 16:
        key = elems.astype(np.uint16)
    else:
        key = bufs * (1 << 40) + elems
        low = int(key.min())
        if int(key.max()) - low < 1 << 16:
            key = (key - low).astype(np.uint16)
    order = key.argsort(kind="stable")
    ks = key[order]
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(ks[1:], ks[:-1], out=first[1:])
    if first.all():
        cur = memory.gather(bufs, elems, nbytes)
        memory.scatter(bufs, elems, np.asarray(update(cur, b, c), dt), nbytes)
        return cur
    starts = np.flatnonzero(first)
    lengths = np.empty(starts.size, np.int64)
    np.subtract(starts[1:], starts[:-1], out=lengths[:-1])
    lengths[-1] = n - starts[-1]
    uniform = b.ndim == 0
    if additive and c is None:
        # What each access adds to its location before it: the sum of the operands of the
        # accesses before it there (its rank times a uniform operand), in wrapping arithmetic.
        if uniform:
            ahead = (np.arange(n) - starts.repeat(lengths)).astype(dt) * b
        else:
            bs: np.ndarray = b[order].astype(dt, copy=False)
            exclusive = bs.cumsum(dtype=dt) - bs
            ahead = exclusive - exclusive[starts].repeat(lengths)
        before: np.ndarray = np.empty(n, dt)
        before[order] = ahead
        cur = memory.gather(bufs, elems, nbytes)
        old: np.ndarray = np.asarray(update(cur, before, None), dt)
        last = order[starts + lengths - 1]  # the last access of each location stores the sum
        at = bufs[: last.size] if one_buffer else bufs[last]
        total = update(old[last], b if uniform else b[last], None)
        memory.scatter(at, elems[last], np.asarray(total, dt), nbytes)
        return old
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - starts.repeat(lengths)
    out: np.ndarray = np.empty(n, dt)
    for r in range(int(lengths.max())):
        sel = np.flatnonzero(rank == r)
        cur = memory.gather(bufs[sel], elems[sel], nbytes)
        new = update(cur, b if uniform else b[sel], c if c is None or c.ndim == 0 else c[sel])
        memory.scatter(bufs[sel], elems[sel], np.asarray(new, dt), nbytes)
        out[sel] = cur
    return out
