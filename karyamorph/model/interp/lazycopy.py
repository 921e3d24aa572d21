"""Copy-on-first-touch of a large argument into its allocation, in chunks.

A launch that touches a corner of a big array (a fixed-size block of every row) then copies
only that corner. Every read or write of the allocation first copies in the chunks it hits, so
the allocation's bytes are always what an eager copy would give.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np

# Smaller arguments are copied at once: a kernel streaming through a few megabytes is cheaper
# to serve from one copy than through a check of every access.
LAZY_MIN_BYTES = 1 << 26
CHUNK_SHIFT = 14  # 16 KiB chunks: a multiple of every access size, so no access straddles two
_SCATTERED = 256  # more separate runs of chunks than this are copied by one fancy index
# Chunks hit by one access that lie closer together than this are copied with every chunk
# between them not yet copied (a copy of bytes never written changes nothing): a streaming
# access then costs one slice copy, not a sort of its chunk numbers.
_SPAN = 64


def zeroed(nbytes: int) -> np.ndarray:
    """Zero bytes whose pages the system provides on first touch, in small pages: touching a few
    chunks of a large buffer then costs a few pages, not huge pages zeroed whole."""
    m = mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        m.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(m, np.uint8)


def _runs(chunks: np.ndarray) -> list[np.ndarray]:
    """Sorted chunk numbers, split into runs of consecutive ones."""
    return np.split(chunks, np.flatnonzero(np.diff(chunks) != 1) + 1) if chunks.size else []


def copy_chunks(dst: np.ndarray, src: np.ndarray, chunks: np.ndarray, size: int) -> None:
    """``dst[c] = src[c]`` for the chunks ``chunks`` (sorted, unique) of the first ``size`` bytes."""
    if chunks.size and int(chunks[-1]) - int(chunks[0]) + 1 == chunks.size:  # one run
        lo, hi = int(chunks[0]) << CHUNK_SHIFT, min(size, (int(chunks[-1]) + 1) << CHUNK_SHIFT)
        dst[lo:hi] = src[lo:hi]
        return
    runs = _runs(chunks)
    if len(runs) <= _SCATTERED:
        for run in runs:
            lo, hi = int(run[0]) << CHUNK_SHIFT, min(size, (int(run[-1]) + 1) << CHUNK_SHIFT)
            dst[lo:hi] = src[lo:hi]
        return
    step = 1 << CHUNK_SHIFT
    whole = size >> CHUNK_SHIFT
    inner = chunks[chunks < whole]
    dst[: whole * step].reshape(whole, step)[inner] = src[: whole * step].reshape(whole, step)[inner]
    if inner.size < chunks.size:  # the last, partial chunk
        dst[whole * step : size] = src[whole * step : size]


@dataclass(slots=True)
class LazyCopy:
    """The bytes an allocation starts with and which of its chunks are not copied in yet."""

    source: np.ndarray  # uint8, the allocation's size
    pending: np.ndarray  # bool per chunk
    count: int  # chunks pending

    @classmethod
    def of(cls, raw: np.ndarray) -> LazyCopy:
        n = -(-raw.size >> CHUNK_SHIFT)
        return cls(raw, np.ones(n, bool), n)

    def touch(self, data: np.ndarray, elems: np.ndarray, nbytes: int) -> bool:
        """Copy into ``data`` the chunks hit by accesses of ``nbytes`` (a power of two) at the
        element indices ``elems``; True once every chunk is in."""
        chunks = elems >> (CHUNK_SHIFT - (nbytes.bit_length() - 1))
        hit = self.pending[chunks]
        if not hit.any():
            return False
        need = chunks[hit]
        lo, hi = int(need.min()), int(need.max())
        todo = np.flatnonzero(self.pending[lo : hi + 1]) + lo if hi - lo < _SPAN else np.unique(need)
        copy_chunks(data, self.source, todo, self.source.size)
        self.pending[todo] = False
        self.count -= todo.size
        return self.count == 0

    def finish(self, data: np.ndarray) -> np.ndarray:
        """A buffer like ``data`` with every chunk in: the untouched bytes in one copy, then the
        touched chunks over them (one memcpy of the whole, not a page fault per small page)."""
        out = np.zeros(data.size, np.uint8)
        out[: self.source.size] = self.source
        copy_chunks(out, data, np.flatnonzero(~self.pending), self.source.size)
        return out
