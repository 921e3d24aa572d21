"""Deciding queries over thread coordinates by evaluating them for every thread (numpy), without
a solver: a bitonic sort's thousands of access pairs depend only on ``%tid``, and a sweep over
the block's threads shows at once that no two threads meet.

A term is evaluated for every thread of a domain (the threads of one block, or of the whole
launch when it is small) as a numpy array. Anything that is not a function of the coordinates
(a loaded value, a free size, a loop iteration) is unknown, and unknowns only widen the result:
a guard that may be true counts as true, an address that is unknown for some thread stops the
sweep (the query then goes to z3). So a sweep never proves what does not hold; it only ever
answers "no thread can" or "cannot tell".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import z3

from karyamorph.model.check.accesses import Access, Tiles, Trace

# Threads a domain may hold: the whole launch when it is at most this, else one block.
MAX_THREADS = 1 << 16
U64 = np.uint64
Value = tuple[np.ndarray, np.ndarray]  # (values, known) per thread
Truth = tuple[np.ndarray, np.ndarray]  # (may be true, may be false) per thread


def _width(t: z3.ExprRef) -> int:
    """The width of ``t``, an operand of a bit-vector operation (so a bit-vector itself)."""
    if not isinstance(t, z3.BitVecRef):
        raise TypeError(f"expected a bit-vector term, got {t.sort()}")
    return t.size()


def _mask(w: int) -> np.uint64:
    return U64((1 << w) - 1) if w < 64 else U64(0xFFFFFFFFFFFFFFFF)


@dataclass(slots=True)
class Sweep:
    """Evaluations of the trace's terms over every thread of a domain (memoised by term)."""

    coords: dict[str, np.ndarray]  # variable name -> its value per thread of the domain
    size: int
    blockwide: bool  # the domain is one block (block coordinates unknown)
    block_of: np.ndarray  # each thread's linear block index (0 when blockwide)
    grid: tuple[int, int, int] = (1, 1, 1)  # blocks of the launch, by axis
    # id -> (term kept alive, result)
    _memo: dict[int, tuple[z3.ExprRef, Value | Truth]] = field(default_factory=dict)
    # (tiles' id, lo, hi) -> (the tiles, kept alive; whether they avoid [lo, hi))
    _tiles_out: dict[tuple[int, int, int], tuple[Tiles, bool]] = field(default_factory=dict)

    @staticmethod
    def of(trace: Trace) -> Sweep:
        grid, block = trace.grid, trace.block
        nb, nt = grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2]
        blockwide = nb * nt > MAX_THREADS
        size = nt if blockwide else nb * nt
        lin = np.arange(size, dtype=np.int64)
        t, b = lin % nt, lin // nt
        dims = {
            "tid.x": t % block[0], "tid.y": t // block[0] % block[1], "tid.z": t // (block[0] * block[1]),
            "ctaid.x": b % grid[0], "ctaid.y": b // grid[0] % grid[1], "ctaid.z": b // (grid[0] * grid[1]),
        }  # fmt: skip
        coords: dict[str, np.ndarray] = {}
        for k, v in trace.coords.items():
            if z3.is_bv_value(v) or (blockwide and k.startswith("ctaid")):
                continue
            for tag in ("A", "B"):
                coords[f"{k}@{tag}"] = dims[k].astype(U64)
        return Sweep(coords, size, blockwide, b.astype(U64), grid)

    # --- evaluation ---------------------------------------------------------------------------
    def value(self, t: z3.ExprRef) -> Value:
        hit = self._memo.get(t.get_id())
        if hit is not None:
            return hit[1]
        r = self._value(t)
        self._memo[t.get_id()] = (t, r)
        return r

    def truth(self, t: z3.ExprRef) -> Truth:
        hit = self._memo.get(t.get_id())
        if hit is not None:
            return hit[1]
        r = self._truth(t)
        self._memo[t.get_id()] = (t, r)
        return r

    def _unknown_value(self) -> Value:
        return np.zeros(self.size, U64), np.zeros(self.size, bool)

    def _either(self) -> Truth:
        return np.ones(self.size, bool), np.ones(self.size, bool)

    def _value(self, t: z3.ExprRef) -> Value:
        n = self.size
        if not isinstance(t, z3.BitVecRef) or t.size() > 64:
            return self._unknown_value()
        w = t.size()
        m = _mask(w)
        if z3.is_bv_value(t):
            return np.full(n, U64(int(t.as_long())), U64), np.ones(n, bool)
        k, ch = t.decl().kind(), t.children()
        if k == z3.Z3_OP_UNINTERPRETED and not ch:
            v = self.coords.get(t.decl().name())
            return (v, np.ones(n, bool)) if v is not None else self._unknown_value()
        if k == z3.Z3_OP_ITE:
            c_true, c_false = self.truth(ch[0])
            (a, ka), (b, kb) = self.value(ch[1]), self.value(ch[2])
            known = np.where(c_true & c_false, ka & kb & (a == b), np.where(c_true, ka, kb))
            return np.where(c_true, a, b), known
        if k == z3.Z3_OP_EXTRACT:
            _, lo = t.params()
            a, ka = self.value(ch[0])
            return (a >> U64(lo)) & m, ka
        if k == z3.Z3_OP_ZERO_EXT:
            return self.value(ch[0])
        if k == z3.Z3_OP_SIGN_EXT:
            a, ka = self.value(ch[0])
            src = _width(ch[0])
            neg = (a >> U64(src - 1)) & U64(1)
            return np.where(neg == 1, (a | (m & ~_mask(src))) & m, a), ka
        if k == z3.Z3_OP_CONCAT:
            a, ka = self.value(ch[0])
            for c in ch[1:]:
                b, kb = self.value(c)
                a, ka = ((a << U64(_width(c))) | b) & m, ka & kb
            return a, ka
        xs = [self.value(c) for c in ch]
        known = np.logical_and.reduce([x[1] for x in xs])
        vs = [x[0] for x in xs]
        with np.errstate(over="ignore"):
            if k == z3.Z3_OP_BADD:
                return np.add.reduce(vs) & m, known
            if k == z3.Z3_OP_BMUL:
                return np.multiply.reduce(vs) & m, known
            if k == z3.Z3_OP_BSUB:
                return (vs[0] - vs[1]) & m, known
            if k == z3.Z3_OP_BNEG:
                return (U64(0) - vs[0]) & m, known
        if k == z3.Z3_OP_BNOT:
            return ~vs[0] & m, known
        if k == z3.Z3_OP_BAND:
            return np.bitwise_and.reduce(vs), known
        if k == z3.Z3_OP_BOR:
            return np.bitwise_or.reduce(vs), known
        if k == z3.Z3_OP_BXOR:
            return np.bitwise_xor.reduce(vs), known
        if k in (z3.Z3_OP_BSHL, z3.Z3_OP_BLSHR):
            s = vs[1]
            big = s >= U64(w)
            s = np.minimum(s, U64(63))
            r = (vs[0] << s) & m if k == z3.Z3_OP_BSHL else vs[0] >> s
            return np.where(big, U64(0), r), known
        if k == z3.Z3_OP_BASHR:
            # Shifting by w - 1 or more leaves w copies of the sign bit (nvcc's signed division
            # idiom, ``(x + (x >> 31 >>> 28)) >> 4``, shifts by 31).
            s = np.minimum(vs[1], U64(w - 1))
            neg = ((vs[0] >> U64(w - 1)) & U64(1)) == 1
            r = vs[0] >> s
            return np.where(neg, r | (m & ~(m >> s)), r), known
        if k in (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I, z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I):
            zero = vs[1] == 0
            d = np.where(zero, U64(1), vs[1])
            r = vs[0] // d if k in (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I) else vs[0] % d
            return r, known & ~zero
        return self._unknown_value()

    def _truth(self, t: z3.ExprRef) -> Truth:
        n = self.size
        if z3.is_true(t):
            return np.ones(n, bool), np.zeros(n, bool)
        if z3.is_false(t):
            return np.zeros(n, bool), np.ones(n, bool)
        k, ch = t.decl().kind(), t.children()
        if k == z3.Z3_OP_NOT:
            a, b = self.truth(ch[0])
            return b, a
        if k in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            parts = [self.truth(c) for c in ch]
            trues = [p[0] for p in parts]
            falses = [p[1] for p in parts]
            if k == z3.Z3_OP_AND:
                return np.logical_and.reduce(trues), np.logical_or.reduce(falses)
            return np.logical_or.reduce(trues), np.logical_and.reduce(falses)
        if k == z3.Z3_OP_ITE:  # a merged path's condition: If(c, then, else)
            (c_true, c_false), (x_true, x_false), (y_true, y_false) = map(self.truth, ch)
            return (c_true & x_true) | (c_false & y_true), (c_true & x_false) | (c_false & y_false)
        cmp = {
            z3.Z3_OP_ULT: np.less, z3.Z3_OP_ULEQ: np.less_equal, z3.Z3_OP_UGT: np.greater,
            z3.Z3_OP_UGEQ: np.greater_equal, z3.Z3_OP_SLT: np.less, z3.Z3_OP_SLEQ: np.less_equal,
            z3.Z3_OP_SGT: np.greater, z3.Z3_OP_SGEQ: np.greater_equal, z3.Z3_OP_EQ: np.equal,
            z3.Z3_OP_DISTINCT: np.not_equal,
        }.get(k)  # fmt: skip
        if cmp is None or len(ch) != 2 or not z3.is_bv(ch[0]) or ch[0].size() > 64:
            return self._either()
        (a, ka), (b, kb) = self.value(ch[0]), self.value(ch[1])
        if k in (z3.Z3_OP_SLT, z3.Z3_OP_SLEQ, z3.Z3_OP_SGT, z3.Z3_OP_SGEQ):
            flip = U64(1 << (ch[0].size() - 1))  # signed order = unsigned order of x ^ sign bit
            a, b = a ^ flip, b ^ flip
        r = cmp(a, b)
        known = ka & kb
        return r | ~known, ~r | ~known

    # --- questions ----------------------------------------------------------------------------
    def site(self, acc: Access) -> tuple[np.ndarray, np.ndarray] | None:
        """(threads that may make ``acc``, their addresses), or None when some such thread's
        address is unknown."""
        return self._at(acc.guard, acc.addr)

    def _at(self, guard: z3.BoolRef, addr: z3.BitVecRef) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`site` of an access under ``guard`` at ``addr``."""
        may, _ = self.truth(guard)
        at, known = self.value(addr)
        if not np.all(known[may]):
            return None
        return np.flatnonzero(may), at[may]

    def in_bounds(self, acc: Access, lo: int, hi: int) -> bool:
        """Whether every thread that may make ``acc`` accesses bytes inside ``[lo, hi)``."""
        site = self.site(acc)
        if site is None:
            return False
        _, addr = site
        return bool(np.all((addr >= U64(lo)) & (addr + U64(acc.nbytes) <= U64(hi))))

    def avoids(self, acc: Access, lo: int, hi: int) -> bool:
        """Whether no thread that may make ``acc`` touches a byte of ``[lo, hi)`` (told by the
        ranges of a ``wgmma``'s tiles first, which hold its pieces)."""
        return self.tiles_avoid(acc, lo, hi) or self._outside(acc.guard, acc.addr, acc.nbytes, lo, hi)

    def tiles_avoid(self, acc: Access, lo: int, hi: int) -> bool:
        """Whether ``acc`` is a piece of a ``wgmma``'s tiles (:attr:`Access.tiles`) and no
        thread's tiles touch a byte of ``[lo, hi)``: then none of that issue's pieces does
        (they share its guard; asked once per issue)."""
        tiles = acc.tiles
        if tiles is None:
            return False
        key = (id(tiles), lo, hi)
        hit = self._tiles_out.get(key)
        if hit is None:
            out = all(self._outside(acc.guard, start, nbytes, lo, hi) for start, nbytes in tiles.ranges)
            hit = self._tiles_out[key] = (tiles, out)
        return hit[1]

    def _outside(self, guard: z3.BoolRef, addr: z3.BitVecRef, nbytes: int, lo: int, hi: int) -> bool:
        """Whether every thread that may access ``nbytes`` at ``addr`` under ``guard`` stays out
        of ``[lo, hi)``."""
        site = self._at(guard, addr)
        if site is None:
            return False
        at = site[1]
        return bool(np.all((at + U64(nbytes) <= U64(lo)) | (at >= U64(hi))))

    def _meetings(
        self, xa: np.ndarray, na: int, xc: np.ndarray, nc: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sort ``xc``; for each of ``xa``'s ``[x, x + na)``, the range ``[first, last)`` of the
        sorted ``xc`` whose ``[y, y + nc)`` overlap it. Returns (order, first, last)."""
        order = np.argsort(xc, kind="stable")
        xs = xc[order]
        first = np.searchsorted(xs, xa - np.minimum(xa, U64(nc - 1)), side="left")
        last = np.searchsorted(xs, xa + U64(na), side="left")
        return order, first, last

    def _owner(self, acc: Access, threads: np.ndarray) -> np.ndarray | None:
        """The linear index of the block whose shared memory ``acc`` reaches, for each of
        ``threads`` (None when some is unknown, as every remote one is in a one-block domain)."""
        if acc.remote is None:
            owners: np.ndarray = self.block_of[threads]
            return owners
        if self.blockwide:
            return None
        out, scale = np.zeros(len(threads), U64), 1
        for cta, extent in zip(acc.remote.cta, self.grid, strict=True):
            v, known = self.value(cta)
            if not np.all(known[threads]):
                return None
            out, scale = out + v[threads] * U64(scale), scale * extent
        return out

    def disjoint(self, a: Access, c: Access) -> bool:
        """Whether no thread's ``a`` overlaps any thread's ``c`` (the same thread's included)."""
        sa, sc = self.site(a), self.site(c)
        if sa is None or sc is None:
            return False
        _, first, last = self._meetings(sa[1], a.nbytes, sc[1], c.nbytes)
        return not np.any(last > first)

    def apart(self, a: Access, c: Access) -> bool:
        """Whether no two distinct threads of the domain can make ``a`` and ``c`` to overlapping
        bytes (for shared memory: two threads of one block)."""
        sa, sc = self.site(a), self.site(c)
        if sa is None or sc is None:
            return False
        (ta, xa), (tc, xc) = sa, sc
        if not len(ta) or not len(tc):
            return True
        if a.space == "shared":
            # Each block has its own shared memory: threads of two blocks never meet there
            # (unless one reaches another CTA's through the cluster's window).
            ba, bc = self._owner(a, ta), self._owner(c, tc)
            if ba is None or bc is None:
                return False
            xa, xc = xa + (ba << U64(44)), xc + (bc << U64(44))
        # c's accesses overlapping a's [x, x + na): those starting in (x - nc, x + na).
        order, first, last = self._meetings(xa, a.nbytes, xc, c.nbytes)
        tc = tc[order]
        meets = int(np.sum(last - first))
        if meets == 0:
            return True
        if meets > len(ta) + 64:
            return False  # many meetings: some are between distinct threads
        # Only a thread meeting itself (one thread's two accesses) is harmless.
        counts = last - first
        pos = np.arange(meets) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
        if np.any(tc[pos] != np.repeat(ta, counts)):
            return False
        # In a one-block domain, a thread meeting itself stands for the same thread of every
        # block too: harmless only in shared memory, which each block has of its own.
        return a.space == "shared" or not self.blockwide
