"""Memory of a launch: global buffers (one allocation per pointer argument, distinct bases),
shared memory per block, local memory per thread, the parameter space; address resolution."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from karyamorph.model.interp.lazycopy import LAZY_MIN_BYTES, LazyCopy, zeroed
from karyamorph.model.ptx.cluster import RANK_SHIFT, RANK_STRIDE
from karyamorph.model.semantics.concrete import UINT

GLOBAL_STRIDE = 1 << 32  # allocation k lives at (k + 1) << 32: an overrun never reaches the next one
SHARED_WINDOW = 1 << 48  # generic address of shared offset 0
LOCAL_WINDOW = 2 << 48  # generic address of local offset 0
PARAM_WINDOW = 3 << 48
_IDS: dict[int, np.ndarray] = {}  # buffer id -> a one-element array holding it


class MemoryFault(Exception):
    """An access outside every allocation, or misaligned; ``position`` indexes the access array."""

    def __init__(self, position: int, address: int, detail: str) -> None:
        self.position = position
        self.address = address
        self.detail = detail
        super().__init__(f"address {address:#x}: {detail}")


def _pad(n: int) -> int:
    return max(16, (n + 15) // 16 * 16)


def _same(buf: int, n: int) -> np.ndarray:
    """The buffer id ``buf`` for ``n`` accesses: a read-only view with stride 0, which gather and
    scatter recognise as one buffer without comparing every element."""
    one = _IDS.get(buf)
    if one is None:
        one = _IDS[buf] = np.array([buf], np.int64)
    out = np.ndarray((n,), np.int64, one, 0, (0,))
    out.flags.writeable = False
    return out


def _misaligned(off: np.ndarray, nbytes: int) -> bool:
    if nbytes == 1:
        return False
    if nbytes & (nbytes - 1) == 0:
        return bool((off & np.uint64(nbytes - 1)).any())
    return bool((off % np.uint64(nbytes)).any())


def _elements(off: np.ndarray, nbytes: int) -> np.ndarray:
    """Byte offsets (uint64) -> element indices (int64) of ``nbytes``-byte elements."""
    if nbytes == 1:
        return off.astype(np.int64)
    if nbytes & (nbytes - 1) == 0:
        return (off >> np.uint64(nbytes.bit_length() - 1)).astype(np.int64)
    return (off // np.uint64(nbytes)).astype(np.int64)


@dataclass(slots=True)
class Allocation:
    """One buffer: its name, state space, base address, size in bytes and bytes (padded to 16).

    ``lazy`` is set while chunks of a large argument have yet to be copied into ``data``:
    reads and writes go through :meth:`touch`, so ``data`` holds what an eager copy would.
    """

    name: str
    space: str
    base: int
    size: int
    data: np.ndarray
    lazy: LazyCopy | None = None

    def describe(self) -> str:
        return f"{self.space} {self.name!r} [{self.base:#x}, {self.base + self.size:#x}) ({self.size} bytes)"

    def touch(self, elems: np.ndarray, nbytes: int) -> None:
        """Copy in the chunks that accesses of ``nbytes`` at the element indices ``elems`` hit."""
        if self.lazy is not None and self.lazy.touch(self.data, elems, nbytes):
            self.lazy = None

    def materialize(self) -> None:
        """Copy in every chunk not copied yet."""
        if self.lazy is not None:
            self.data, self.lazy = self.lazy.finish(self.data), None


@dataclass(slots=True)
class Memory:
    """All state spaces of a launch.

    ``globals`` are global allocations; buffer ids used by :meth:`resolve` are their indices,
    then ``len(globals)`` for shared, ``+1`` for local, ``+2`` for param.
    """

    globals: list[Allocation]
    shared_size: int
    n_blocks: int
    block_threads: int
    local_size: int
    n_threads: int
    param: Allocation
    shared_symbols: dict[str, int] = field(default_factory=dict)
    local_symbols: dict[str, int] = field(default_factory=dict)
    shared: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    local: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    # elements per owner -> (the owner array last seen, its first elements): _first_elements
    scaled: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # [block, rank] -> the block of that rank in the block's cluster (None: clusters of one), and
    # [block, thread] -> not exited: .shared::cluster accesses reach the CTAs of a cluster.
    cluster_blocks: np.ndarray | None = None
    block_alive: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.shared = np.zeros(self.n_blocks * _pad(self.shared_size), np.uint8)
        self.local = np.zeros(self.n_threads * _pad(self.local_size), np.uint8)

    @property
    def shared_stride(self) -> int:
        return _pad(self.shared_size)

    @property
    def local_stride(self) -> int:
        return _pad(self.local_size)

    def add_global(self, name: str, data: np.ndarray, space: str = "global") -> Allocation:
        """A new global allocation holding a copy of ``data``'s bytes (``space``: ``const`` for a
        module's ``.const`` variable, which lives in an allocation of its own too). Large data
        are copied chunk by chunk as the launch first touches them
        (:mod:`~karyamorph.model.interp.lazycopy`): ``data`` must not change while it runs."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        base = (len(self.globals) + 1) * GLOBAL_STRIDE
        if raw.size < LAZY_MIN_BYTES:
            buf = np.zeros(_pad(raw.size), np.uint8)
            buf[: raw.size] = raw
            a = Allocation(name, space, base, raw.size, buf)
        else:
            a = Allocation(name, space, base, raw.size, zeroed(_pad(raw.size)), LazyCopy.of(raw))
        self.globals.append(a)
        return a

    def buffer(self, buf: int, nbytes: int) -> np.ndarray:
        """The typed view of a buffer id (elements of ``nbytes``)."""
        g = len(self.globals)
        raw = (
            self.globals[buf].data
            if buf < g
            else self.shared
            if buf == g
            else self.local
            if buf == g + 1
            else self.param.data
        )
        return raw.view(UINT[nbytes * 8])

    def resolve(
        self, space: str, addr: np.ndarray, nbytes: int, blocks: np.ndarray, threads: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(buffer id, element index) of each access of ``nbytes`` at ``addr`` (uint64).

        ``blocks``/``threads`` are the block and linear thread index of each access (for the
        shared and local spaces). Raises :class:`MemoryFault` for the first bad access.
        """
        addr = addr.astype(np.uint64, copy=False)
        if space == "generic":
            return self._resolve_generic(addr, nbytes, blocks, threads)
        g = len(self.globals)
        if space == "shared":
            return self._window(addr, nbytes, self.shared_size, g, blocks, self.shared_stride, "shared")
        if space == "shared::cluster":
            return self._resolve_cluster(addr, nbytes, blocks)
        if space == "local":
            return self._window(addr, nbytes, self.local_size, g + 1, threads, self.local_stride, "local")
        if space == "param":
            return self._window(addr, nbytes, self.param.size, g + 2, np.zeros_like(blocks), 0, "param")
        return self._resolve_global(addr, nbytes)

    def _check_align(self, off: np.ndarray, nbytes: int, addr: np.ndarray, what: str) -> None:
        bad = (off % np.uint64(nbytes)) != 0
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryFault(i, int(addr[i]), f"misaligned {nbytes}-byte access in {what}")

    def _window(
        self, addr: np.ndarray, nbytes: int, size: int, buf: int, owner: np.ndarray, stride: int, what: str
    ) -> tuple[np.ndarray, np.ndarray]:
        off = addr
        if not off.size or int(off.max()) + nbytes > size or _misaligned(off, nbytes):
            bad = off + np.uint64(nbytes) > np.uint64(size)
            if bad.any():
                i = int(np.argmax(bad))
                raise MemoryFault(i, int(addr[i]), f"outside {what} memory [0, {size:#x}) ({size} bytes)")
            self._check_align(off, nbytes, addr, f"{what} memory")
        elem = _elements(off, nbytes)
        if stride:
            elem += self._first_elements(owner, stride // nbytes)
        return _same(buf, addr.size), elem

    def _first_elements(self, owner: np.ndarray, per_owner: int) -> np.ndarray:
        """``owner * per_owner``: where each owner's (block's, thread's) part of a space starts.
        A group passes the same owner array at every access, so the product is kept."""
        kept = self.scaled.get(per_owner)
        if kept is None or kept[0] is not owner:
            kept = self.scaled[per_owner] = (owner, owner.astype(np.int64, copy=False) * per_owner)
        return kept[1]

    def _resolve_cluster(
        self, addr: np.ndarray, nbytes: int, blocks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Accesses of the ``.shared::cluster`` window (:mod:`karyamorph.model.ptx.cluster`):
        rank field 0 is the executing CTA's own shared memory, ``r + 1`` that of rank ``r``."""
        field_ = (addr >> np.uint64(RANK_SHIFT)).astype(np.int64)
        if not field_.any():
            return self._window(addr, nbytes, self.shared_size, len(self.globals), blocks,
                                self.shared_stride, "shared")  # fmt: skip
        table = self.cluster_blocks if self.cluster_blocks is not None else np.arange(self.n_blocks)[:, None]
        size = table.shape[1]
        bad = field_ > size
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryFault(
                i, int(addr[i]), f"rank {int(field_[i]) - 1} is outside the cluster of {size} CTA(s)"
            )
        target = np.where(field_ == 0, blocks, table[blocks, np.maximum(field_ - 1, 0)])
        if self.block_alive is not None:
            gone = ~self.block_alive[target].any(axis=1)
            if gone.any():
                i = int(np.argmax(gone))
                raise MemoryFault(i, int(addr[i]), f"the CTA of rank {int(field_[i]) - 1} has exited: its "
                                  "shared memory is gone")  # fmt: skip
        off = addr & np.uint64(RANK_STRIDE - 1)
        try:
            return self._window(off, nbytes, self.shared_size, len(self.globals), target,
                                self.shared_stride, "shared")  # fmt: skip
        except MemoryFault as f:
            rank = int(field_[f.position]) - 1
            whose = "the CTA's own" if rank < 0 else f"the cluster's CTA of rank {rank}"
            raise MemoryFault(f.position, int(addr[f.position]), f"{f.detail}, in {whose}") from None

    def _resolve_global(self, addr: np.ndarray, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        if addr.size:
            # The common case, all accesses in one allocation and aligned, in a few passes (an
            # address below the base wraps to a huge offset); any fault is found and explained by
            # the general path below.
            k0 = int(addr[0]) >> 32
            if 1 <= k0 <= len(self.globals):
                rel = addr - np.uint64(k0 << 32)
                if int(rel.max()) + nbytes <= self.globals[k0 - 1].size and not _misaligned(rel, nbytes):
                    return _same(k0 - 1, addr.size), _elements(rel, nbytes)
        off = addr & np.uint64(0xFFFFFFFF)
        k = (addr >> np.uint64(32)).astype(np.int64) - 1
        sizes = np.array([a.size for a in self.globals] or [0], np.uint64)
        valid = (k >= 0) & (k < len(self.globals))
        kk = np.where(valid, k, 0)
        bad = ~valid | (off + np.uint64(nbytes) > sizes[kk])
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryFault(i, int(addr[i]), self._explain(int(addr[i]), nbytes))
        self._check_align(off, nbytes, addr, self.globals[int(kk[0])].describe())
        return kk, (off // np.uint64(nbytes)).astype(np.int64)

    def _explain(self, address: int, nbytes: int) -> str:
        k = (address >> 32) - 1
        if 0 <= k < len(self.globals):
            a = self.globals[k]
            return f"{nbytes}-byte access at offset {address - a.base} outside {a.describe()}"
        have = "; ".join(a.describe() for a in self.globals) or "none"
        return f"outside every global allocation (allocations: {have})"

    def _resolve_generic(
        self, addr: np.ndarray, nbytes: int, blocks: np.ndarray, threads: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        window = addr >> np.uint64(48)
        if (window == window[0]).all() if addr.size else True:
            w = int(window[0]) if addr.size else 0
            if w == 0:
                return self._resolve_global(addr, nbytes)
            base = np.uint64(w << 48)
            # The generic shared window is the cluster's, which holds the CTA's own at rank field 0.
            space = {1: "shared::cluster", 2: "local", 3: "param"}.get(w)
            if space is None:
                raise MemoryFault(0, int(addr[0]), "generic address outside every state-space window")
            return self.resolve(space, addr - base, nbytes, blocks, threads)
        bufs = np.zeros(addr.shape, np.int64)
        elems = np.zeros(addr.shape, np.int64)
        for w in np.unique(window):
            sel = np.flatnonzero(window == w)
            try:
                b, e = self._resolve_generic(addr[sel], nbytes, blocks[sel], threads[sel])
            except MemoryFault as f:
                raise MemoryFault(int(sel[f.position]), f.address, f.detail) from None
            bufs[sel], elems[sel] = b, e
        return bufs, elems

    def _typed(self, buf: int, elems: np.ndarray, nbytes: int) -> np.ndarray:
        """The typed view of a buffer, its chunks that ``elems`` hit copied in."""
        if buf < len(self.globals):
            self.globals[buf].touch(elems, nbytes)
        return self.buffer(buf, nbytes)

    def gather(self, bufs: np.ndarray, elems: np.ndarray, nbytes: int) -> np.ndarray:
        """The values at resolved locations."""
        if bufs.size == 0:
            return np.zeros(0, UINT[nbytes * 8])
        b0 = int(bufs[0])
        if bufs.strides[0] == 0 or (bufs == b0).all():
            got: np.ndarray = self._typed(b0, elems, nbytes)[elems]
            return got
        out: np.ndarray = np.zeros(bufs.shape, UINT[nbytes * 8])
        for b in np.unique(bufs):
            sel = bufs == b
            out[sel] = self._typed(int(b), elems[sel], nbytes)[elems[sel]]
        return out

    def scatter(self, bufs: np.ndarray, elems: np.ndarray, values: np.ndarray, nbytes: int) -> None:
        """Store values at resolved locations; where several hit one element the last one wins."""
        if bufs.size == 0:
            return
        if values.shape != bufs.shape:
            values = np.broadcast_to(values, bufs.shape)
        b0 = int(bufs[0])
        if bufs.strides[0] == 0 or (bufs == b0).all():
            self._typed(b0, elems, nbytes)[elems] = values
            return
        for b in np.unique(bufs):
            sel = bufs == b
            self._typed(int(b), elems[sel], nbytes)[elems[sel]] = values[sel]

    def global_bytes(self, name: str) -> np.ndarray:
        """The current bytes of the global allocation ``name``."""
        for a in self.globals:
            if a.name == name:
                a.materialize()
                return a.data[: a.size]
        raise KeyError(f"no global allocation named {name!r}")
