"""Bandwidth by warps per SM and bytes in flight (Little's law, measured), per memory level and
load policy.

A memory level serves ``N / L`` bytes per second with ``N`` bytes in flight and a latency ``L``
that grows as the level fills (its queues), and how ``N`` is made up matters (a warp's
outstanding loads are limited). So bandwidth is measured on a grid: warps per SM (1 to 64) by
bytes each thread has issued and not yet used (its load batch, 4 to 128); ``N / bandwidth`` is
the latency a round of loads waits at that load.

Each thread of the ``flight_<policy>_<batch>B`` kernels reads ``loads`` vectors of ``vec`` 32-bit
words per round, at a grid stride, and xors them into a value; the next round's index adds that
value ``& zero`` (a parameter that is 0 at run time, which ptxas cannot know), so that a round's
loads wait for the previous round's data: exactly one batch per thread is in flight, as in a
kernel whose loop consumes what it loads. The array is 8x the L2, read once (DRAM), or a quarter
of it, read many times (L2). Figures come from CUDA-event times.

Policies: plain ``ld.global`` on both levels over every batch; each other load qualifier the
search templates use (:data:`POLICIES`) on DRAM for :data:`POLICY_BATCHES`; asynchronous copies
(``cp.async.cg.shared.global``, 16 bytes each, the GEMM templates' loads) on both levels as the
policy ``cp``: a round's copies land in shared memory, ``cp.async.wait_all`` waits for them and
the thread reads back a word of each (the shared buffer limits the block to
:data:`CP_BLOCK_WARPS` warps). Figure names: ``<level>.<batch>B`` (plain loads),
``<level>.<policy>.<batch>B``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.benchmark import PlanOptions, figure, missing, sm_launch, warp_counts
from karyamorph.microbench.compiled import Compiled, merge
from karyamorph.microbench.launches import BufferSpec, LaunchSpec, Scalar
from karyamorph.microbench.loops import kept_loop
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import MIB, DeviceShape
from karyamorph.microbench.stats import summarize
from karyamorph.model.resources.occupancy import occupancy
from karyamorph.store.microbench import FigureRow

NAME = "flight"
WORD = 4
BATCHES: tuple[tuple[int, int], ...] = ((1, 1), (2, 1), (4, 1), (4, 2), (4, 4), (4, 8))
"""``(vec, loads)``: 4 to 128 bytes a thread has in flight."""
POLICIES: dict[str, str] = {
    "default": "global",
    "cg": "global.cg",
    "cs": "global.cs",
    "nc": "global.nc.L1::no_allocate",
    "nc256": "global.nc.L1::no_allocate.L2::256B",
}
"""Load qualifiers by the name the figures use (the templates' cache policies, and ``.cg``)."""
BYTES_READ = 256 * MIB
"""Bytes an L2 launch reads (fewer for slow configurations, down to :data:`MIN_BYTES_READ`); a
DRAM launch reads its whole array."""
MIN_BYTES_READ = 16 * MIB
POLICY_BATCHES = ((4, 1), (4, 4))
QUICK_BATCHES = ((1, 1), (4, 1), (4, 4))
QUICK_POLICY_BATCHES = ((4, 4),)
CP = "cp"
"""The policy name of the asynchronous copies."""
CP_BATCHES = ((4, 1), (4, 2), (4, 4), (4, 8))
CP_BLOCK_WARPS = 8
CHUNK = 16


@dataclass(frozen=True, slots=True)
class Config:
    """One launch: level, policy, batch and warps per SM."""

    level: str
    policy: str
    vec: int
    loads: int
    warps: int

    @property
    def batch_bytes(self) -> int:
        return self.vec * self.loads * WORD

    @property
    def key(self) -> str:
        return f"{NAME}/{self.level}/{self.policy}/{self.batch_bytes}B/{self.warps}w"

    @property
    def name(self) -> str:
        """The figure's name: ``dram.16B``, ``dram.nc.16B``."""
        policy = "" if self.policy == "default" else f"{self.policy}."
        return f"{self.level}.{policy}{self.batch_bytes}B"

    @property
    def entry(self) -> str:
        return entry_name(self.policy, self.vec, self.loads)


def entry_name(policy: str, vec: int, loads: int) -> str:
    return f"flight_{policy}_{vec * loads * WORD}B"


def build(arch: str, policy: str, vec: int, loads: int) -> ast.Module:
    """``flight_<policy>_<batch>B(data, out, mask, steps, zero)``: see the module's description;
    ``mask + 1`` words of ``vec`` are the array, ``steps`` the rounds."""
    if policy == CP:
        return build_cp(arch, loads)
    k = KernelBuilder(entry_name(policy, vec, loads), target=arch, version=min_ptx_for_target(arch))
    data, out = k.param_ptr("data"), k.param_ptr("out")
    mask, steps, zero = k.param("mask", "u32"), k.param("steps", "u32"), k.param("zero", "u32")
    base = k.to_global(k.ld_param(data))
    m, z = k.ld_param(mask), k.ld_param(zero)
    gid = k.global_thread_id_x()
    threads = k.mul("u32", k.sreg("nctaid.x"), k.sreg("ntid.x"))
    idx = k.mov("u32", gid)
    acc = k.mov("b32", 0)
    space = POLICIES[policy]
    with kept_loop(k, k.ld_param(steps)):
        values = []
        for j in range(loads):
            at = k.and_("b32", k.mad("u32", threads, j, idx), m) if j else idx
            addr = k.addr(k.add("u64", base, k.mul_wide("u32", at, vec * WORD)))
            values += list(k.ld_v(space, "u32", addr, vec)) if vec > 1 else [k.ld(space, "u32", addr)]
        for v in values:
            k.xor("b32", acc, acc, v)
        step = k.add("u32", k.mul("u32", threads, loads), k.and_("b32", acc, z))
        k.and_("b32", idx, k.add("u32", idx, step), m)
    k.st("global", "u32", k.addr(k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", gid, 4))), acc)
    k.ret()
    return k.build()


def build_cp(arch: str, loads: int) -> ast.Module:
    """``flight_cp_<batch>B(data, out, mask, steps, zero)``: as :func:`build` with ``loads``
    16-byte ``cp.async`` copies a round into the thread's slots of a shared buffer, then
    ``cp.async.wait_all`` and a read of each copy's first word."""
    k = KernelBuilder(entry_name(CP, CHUNK // WORD, loads), target=arch, version=min_ptx_for_target(arch))
    data, out = k.param_ptr("data"), k.param_ptr("out")
    mask, steps, zero = k.param("mask", "u32"), k.param("steps", "u32"), k.param("zero", "u32")
    buf = k.shared("buf", "b8", CP_BLOCK_WARPS * 32 * loads * CHUNK, align=CHUNK)
    base = k.to_global(k.ld_param(data))
    m, z = k.ld_param(mask), k.ld_param(zero)
    tid, ntid = k.sreg("tid.x"), k.sreg("ntid.x")
    gid = k.global_thread_id_x()
    threads = k.mul("u32", k.sreg("nctaid.x"), k.sreg("ntid.x"))
    slots = [k.mad("u32", k.mad("u32", ntid, j, tid), CHUNK, k.mov("u32", buf)) for j in range(loads)]
    idx = k.mov("u32", gid)
    acc = k.mov("b32", 0)
    with kept_loop(k, k.ld_param(steps)):
        for j, slot in enumerate(slots):
            at = k.and_("b32", k.mad("u32", threads, j, idx), m) if j else idx
            src = k.addr(k.add("u64", base, k.mul_wide("u32", at, CHUNK)))
            k.instr("cp.async.cg.shared.global", k.addr(slot), src, CHUNK)
        k.instr("cp.async.wait_all")
        for slot in slots:
            k.xor("b32", acc, acc, k.ld("shared", "u32", k.addr(slot)))
        step = k.add("u32", k.mul("u32", threads, loads), k.and_("b32", acc, z))
        k.and_("b32", idx, k.add("u32", idx, step), m)
    k.st("global", "u32", k.addr(k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", gid, 4))), acc)
    k.ret()
    return k.build()


def cp_launch(shape: DeviceShape, warps: int, registers: int, shared_bytes: int) -> tuple[int, int] | None:
    """``(grid, block)`` for ``warps`` warps a SM in blocks of at most :data:`CP_BLOCK_WARPS`
    warps (each with the kernel's ``shared_bytes``), or None when they do not fit."""
    per_block = min(warps, CP_BLOCK_WARPS)
    if warps % per_block:
        return None
    blocks = warps // per_block
    occ = occupancy(shape.arch, per_block * 32, max(registers, 1), dynamic_shared_bytes=shared_bytes)
    if occ.blocks_per_sm < blocks:
        return None
    return shape.sm_count * blocks, per_block * 32


class FlightBench:
    """Bandwidth against bytes in flight, per level and, for DRAM, per cache policy."""

    name = NAME

    def modules(self, arch: str) -> dict[str, ast.Module]:
        entries = {(p, v, n) for p in POLICIES for v, n in POLICY_BATCHES}
        entries |= {("default", v, n) for v, n in BATCHES} | {(CP, v, n) for v, n in CP_BATCHES}
        return {f"{NAME}/all": merge([build(arch, p, v, n) for p, v, n in sorted(entries)])}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        return {}

    @staticmethod
    def arrays(shape: DeviceShape) -> dict[str, int]:
        """Array bytes per level: 8x the L2 (DRAM; read once), a quarter of it (L2)."""
        return {"dram": shape.dram_array_bytes, "l2": shape.l2_array_bytes}

    def configs(self, shape: DeviceShape, options: PlanOptions) -> list[Config]:
        batches = QUICK_BATCHES if options.quick else BATCHES
        out = [
            Config(level, "default", vec, loads, w)
            for level in ("dram", "l2")
            for vec, loads in batches
            for w in warp_counts(shape, options)
        ]
        out += [
            Config("dram", p, vec, loads, w)
            for p in POLICIES
            if p != "default"
            for vec, loads in (QUICK_POLICY_BATCHES if options.quick else POLICY_BATCHES)
            for w in warp_counts(shape, options)
        ]
        out += [
            Config(level, CP, vec, loads, w)
            for level in ("dram", "l2")
            for vec, loads in (QUICK_POLICY_BATCHES if options.quick else CP_BATCHES)
            for w in warp_counts(shape, options)
        ]
        return out

    def _plan(self, config: Config, shape: DeviceShape, registers: int) -> tuple[int, int, int, int] | None:
        """``(grid, block, steps, bytes read)`` of a configuration, or None when it does not fit."""
        if config.policy == CP:
            where = cp_launch(shape, config.warps, registers, CP_BLOCK_WARPS * 32 * config.batch_bytes)
        else:
            where = sm_launch(shape, config.warps, registers)
        if where is None:
            return None
        grid, block = where
        per_round = grid * block * config.batch_bytes  # = the bytes in flight: one round per thread
        array = self.arrays(shape)[config.level]
        # DRAM: the whole array, 8x the L2, once (no launch finds its data in L2); L2: slow
        # configurations (little in flight) read less, about 1 ms at ~1 byte per ns per KiB in flight
        small = max(MIN_BYTES_READ, min(BYTES_READ, per_round * 1024))
        budget = array if config.level == "dram" else small
        steps = max(1, budget // per_round)
        return grid, block, steps, steps * per_round

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        c = compiled[f"{NAME}/all"]
        specs = []
        for config in self.configs(shape, options):
            plan = self._plan(config, shape, c.registers.get(config.entry, 0))
            if plan is None:
                continue
            grid, block, steps, _ = plan
            size = self.arrays(shape)[config.level]
            words = size // (config.vec * WORD)
            buffers = (BufferSpec("data", size), BufferSpec("out", grid * block * 4))
            args = ("data", "out", Scalar("u32", words - 1), Scalar("u32", steps), Scalar("u32", 0))
            specs.append(
                LaunchSpec(
                    config.key,
                    f"{NAME}/all",
                    config.entry,
                    grid,
                    block,
                    args,
                    buffers,
                    repeats=options.repeats,
                    events=True,
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
        rows: list[FigureRow] = []
        for config in self.configs(shape, options):
            kind, name, param = "flight", config.name, ("warps_per_sm", float(config.warps))
            plan = self._plan(config, shape, c.registers.get(config.entry, 0))
            result = outcome.results.get(config.key)
            if plan is None or result is None:
                why = outcome.failures.get(config.key, "") if plan else "the warps do not fit on an SM"
                rows.append(missing(kind, name, "GB/s", "failed" if plan else "unmeasured", why,
                                    parameter=param[0], value=param[1]))  # fmt: skip
                continue
            grid, block, _, moved = plan
            s = summarize([moved / ns for ns in result.event_ns])
            in_flight = grid * block * config.batch_bytes
            clock = result.mean_clock_mhz
            detail = {
                "bytes_in_flight": in_flight,
                "batch_bytes": config.batch_bytes,
                "vec": config.vec,
                "loads": config.loads,
                "warps_per_sm": config.warps,
                "bytes_read": moved,
                "array_bytes": self.arrays(shape)[config.level],
                "load": "cp.async.cg.shared.global" if config.policy == CP else POLICIES[config.policy],
                # Little's law: the latency a round waited at this load, in SM cycles
                "loaded_latency_cycles": in_flight / s.median * (clock or 0.0) / 1e3 if s.median else None,
            }
            rows.append(figure(kind, name, "GB/s", s, parameter=param[0], value=param[1],
                               clock_mhz=clock, detail=detail))  # fmt: skip
        return rows
