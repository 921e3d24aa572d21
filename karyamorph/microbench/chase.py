"""Pointer-chase latency over working sets from 1 KiB to 4x L2: ``ld.global`` (default caching),
``ld.global.cg`` (L2 only) and ``ld.shared``; the levels of the curves are found, not assumed.

A working set of ``n`` entries at ``stride`` bytes holds one random cycle through all entries
(:func:`chase_offsets`, the visiting order from entry 0 made by a seeded permutation). The
buffer arrives as byte offsets of the next entry; the kernel's block first turns them into
addresses (every thread a share, so the set is written once and sits in L2 when it fits), then
thread 0 follows ``hops`` links untimed (to warm L1 and the TLB) and ``hops`` more between two
clock reads, :data:`UNROLL` loads an iteration, and writes the offset it ended at and the
cycles. The end offset is known in advance (``order[2 * hops mod n]``), so a chase that did not
follow the permutation (or took no time) fails its figure; for small sets whose size divides
``2 * hops`` the end is entry 0 whatever happened, which is why the model interpreter checks
the kernel on sets where it is not (tests/harness/microbench).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.benchmark import PlanOptions, figure, missing
from karyamorph.microbench.compiled import Compiled, merge
from karyamorph.microbench.launches import BufferSpec, LaunchSpec, Scalar
from karyamorph.microbench.loops import kept_loop, timed_loop
from karyamorph.microbench.plateaus import label_levels, plateaus
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import KIB, DeviceShape
from karyamorph.microbench.stats import summarize
from karyamorph.store.microbench import FigureRow

NAME = "chase"
UNROLL = 16
BLOCK = 1024
STRIDE = 64
HOPS = 8192
QUICK_HOPS = 2048
MIN_BYTES = KIB
VARIANTS = {"global.ca": "global", "global.cg": "global.cg", "shared": "shared"}
"""Curve name -> the state space and cache operator of its loads."""


def chase_order(n: int, seed: int) -> np.ndarray:
    """The order in which a chase from entry 0 visits the ``n`` entries (a seeded permutation)."""
    rng = np.random.default_rng(seed)
    return np.concatenate([np.zeros(1, dtype=np.int64), 1 + rng.permutation(n - 1)]).astype(np.int64)


def chase_offsets(n: int, stride: int, seed: int) -> np.ndarray:
    """The byte offset of each entry's successor on the cycle :func:`chase_order` describes."""
    order = chase_order(n, seed)
    nxt = np.empty(n, dtype=np.uint64)
    nxt[order] = np.roll(order, -1).astype(np.uint64)
    return nxt * np.uint64(stride)


def build_chase(entry: str, space: str, arch: str) -> ast.Module:
    """The chase kernel ``(offsets, chain, out, entries, stride, hops)`` over ``space``
    (``global``, ``global.cg``: global buffer ``chain``; ``shared``: dynamic shared memory, the
    ``chain`` argument unused). ``out`` gets the end offset and the timed cycles (2 words)."""
    k = KernelBuilder(entry, target=arch, version=min_ptx_for_target(arch))
    offsets, chain, out = (k.param_ptr(n) for n in ("offsets", "chain", "out"))
    entries, stride, hops = (k.param(n, "u32") for n in ("entries", "stride", "hops"))
    shared = space == "shared"
    word = "u32" if shared else "u64"
    poff, pout = k.to_global(k.ld_param(offsets)), k.to_global(k.ld_param(out))
    base = k.mov("u32", k.extern_shared("ring")) if shared else k.to_global(k.ld_param(chain))
    n, step, h = k.ld_param(entries), k.ld_param(stride), k.ld_param(hops)
    tid = k.sreg("tid.x")
    with k.for_range(tid, n, k.sreg("ntid.x")) as e:
        off = k.ld("global.cg", "u64", k.add("u64", poff, k.mul_wide("u32", e, 8)))
        if shared:
            at = k.mad("u32", e, step, base)
            k.st("shared", "u32", k.addr(at), k.add("u32", base, k.cvt("u32", "u64", off)))
        else:
            k.st(
                "global",
                "u64",
                k.addr(k.add("u64", base, k.mul_wide("u32", e, step))),
                k.add("u64", base, off),
            )
    k.bar_sync(0)
    k.ret(guard=k.setp("ne", "u32", tid, 0))
    p = k.mov(word, base)
    load = "shared" if shared else space
    with kept_loop(k, h, UNROLL):
        for _ in range(UNROLL):
            k.ld(load, word, k.addr(p), out=p)
    with timed_loop(k, h, UNROLL) as (_, times):
        for _ in range(UNROLL):
            k.ld(load, word, k.addr(p), out=p)
    end = k.sub(word, p, base)
    k.st("global", "u64", k.addr(pout), k.cvt("u64", "u32", end) if shared else end)
    k.st("global", "u64", k.addr(pout, 8), k.sub("u64", times[1], times[0]))
    k.ret()
    return k.build()


def working_sets(low: int, high: int, per_octave: int) -> list[int]:
    """Sizes from ``low`` to ``high`` bytes, ``per_octave`` a doubling (geometric), each a multiple of 256."""
    count = math.floor(math.log2(high / low) * per_octave + 1e-9)
    sizes = {int(round(low * 2 ** (i / per_octave) / 256) * 256) or 256 for i in range(count + 1)}
    return sorted(s for s in sizes if low <= s <= high)


class ChaseBench:
    """The three latency curves and their levels (see the module's description)."""

    name = NAME

    def __init__(self, stride: int = STRIDE) -> None:
        self.stride = stride
        self.arch = ""

    def modules(self, arch: str) -> dict[str, ast.Module]:
        self.arch = arch
        return {f"{NAME}/all": merge([build_chase(_entry(v), s, arch) for v, s in VARIANTS.items()])}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        return {}

    def points(self, shape: DeviceShape, options: PlanOptions) -> dict[str, list[int]]:
        """Working sets per curve: global ones to 4x L2, the shared one to the block's maximum."""
        per_octave = 2 if options.quick else 4
        top = 4 * shape.l2_bytes
        return {
            "global.ca": working_sets(MIN_BYTES, top, per_octave),
            "global.cg": working_sets(MIN_BYTES, top, per_octave),
            "shared": working_sets(MIN_BYTES, shape.max_shared_per_block, per_octave),
        }

    def hops(self, n: int, options: PlanOptions) -> int:
        cap = QUICK_HOPS if options.quick else HOPS
        return max(UNROLL, min(cap, -(-max(n, 1024) // UNROLL) * UNROLL))

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        specs = []
        for variant, sizes in self.points(shape, options).items():
            for seed, size in enumerate(sizes):
                n = max(2, size // self.stride)
                fill = functools.partial(chase_offsets, n, self.stride, seed)
                shared = variant == "shared"
                buffers = (
                    BufferSpec("offsets", n * 8, fill),
                    BufferSpec("chain", 8 if shared else n * self.stride),
                    BufferSpec("out", 16, read_back=True),
                )
                args = (
                    "offsets",
                    "chain",
                    "out",
                    Scalar("u32", n),
                    Scalar("u32", self.stride),
                    Scalar("u32", self.hops(n, options)),
                )
                specs.append(
                    LaunchSpec(
                        f"{NAME}/{variant}/{size}",
                        f"{NAME}/all",
                        _entry(variant),
                        1,
                        BLOCK,
                        args,
                        buffers,
                        shared_bytes=n * self.stride if shared else 0,
                        repeats=options.repeats,
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
        rows: list[FigureRow] = []
        curves: dict[str, tuple[list[float], list[float], float | None]] = {}
        c = compiled.get(f"{NAME}/all")
        for variant, sizes in self.points(shape, options).items():
            xs, ys, clocks = [], [], []
            for seed, size in enumerate(sizes):
                key = f"{NAME}/{variant}/{size}"
                result = outcome.results.get(key)
                if result is None:
                    rows.append(
                        missing(
                            "chase",
                            variant,
                            "cycles",
                            "failed",
                            outcome.failures.get(key, ""),
                            parameter="working_set_bytes",
                            value=size,
                        )
                    )
                    continue
                n = max(2, size // self.stride)
                hops = self.hops(n, options)
                expect = int(chase_order(n, seed)[(2 * hops) % n]) * self.stride
                ends = [int(w[0]) for w in result.words("out")]
                cycles = summarize([int(w[1]) / hops for w in result.words("out")])
                ok = all(e == expect for e in ends) and all(int(w[1]) > 0 for w in result.words("out"))
                detail = {
                    "entries": n,
                    "stride_bytes": self.stride,
                    "hops": hops,
                    "end_offset": ends[0],
                    "expected_end_offset": expect,
                    "sass": c.regions.get(_entry(variant), ({},))[0] if c else {},
                }
                rows.append(
                    figure(
                        "chase",
                        variant,
                        "cycles",
                        cycles,
                        parameter="working_set_bytes",
                        value=size,
                        clock_mhz=result.mean_clock_mhz,
                        status="ok" if ok else "failed",
                        detail=detail,
                    )
                )
                if ok:
                    xs.append(float(size))
                    ys.append(cycles.median)
                    clocks.append(result.mean_clock_mhz)
            known = [x for x in clocks if x is not None]
            curves[variant] = (xs, ys, sum(known) / len(known) if known else None)
        return rows + self._levels(curves, shape)

    def _levels(
        self, curves: dict[str, tuple[list[float], list[float], float | None]], shape: DeviceShape
    ) -> list[FigureRow]:
        found = {v: plateaus(xs, ys) for v, (xs, ys, _) in curves.items()}
        named = label_levels(found.get("global.ca", []), found.get("global.cg", []), shape.l2_bytes)
        rows = []
        for variant, levels in found.items():
            clock = curves[variant][2]
            for j, level in enumerate(levels):
                label = named.get((variant, j), "shared" if variant == "shared" else f"level {j}")
                s = summarize(level.values)
                detail = {
                    "label": label,
                    "first_bytes": level.first,
                    "last_bytes": level.last,
                    "points": len(level.values),
                    "tolerance": level.tolerance,
                }
                rows.append(
                    figure(
                        "plateau",
                        f"{variant}:{label}",
                        "cycles",
                        s,
                        parameter="working_set_bytes",
                        value=level.first,
                        clock_mhz=clock,
                        detail=detail,
                    )
                )
        return rows


def _entry(variant: str) -> str:
    return "chase_" + variant.replace(".", "_")
