"""SIMT execution of a parsed kernel on the CPU for one launch, vectorised over threads.

All threads of the launch run as one group (numpy arrays of length ``threads`` per register,
one pass per instruction under an active mask) with a reconvergence stack: a divergent branch
pushes both sides, which rejoin at the branch block's immediate post-dominator. With
``randomize_order=True`` every warp is its own group, warps run one after another in a random
order between barriers, and colliding stores and atomics of one instruction land in a random
order, so that races show up as results that differ between seeds. ``interleave=True`` refines
that order: under independent thread scheduling every thread is its own group (unless the
kernel has warp-collective instructions), and groups hand over to one another at random
instructions, so that races inside a warp and lost updates show up too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from karyamorph.isa import ast
from karyamorph.kernel.structs import StructArg
from karyamorph.model.interp.arguments import KernelArg as KernelArg
from karyamorph.model.interp.arguments import bind_arguments
from karyamorph.model.interp.asynccopy import AsyncCopies
from karyamorph.model.interp.asyncproxy import HopperState, WaitWatch, deadlock
from karyamorph.model.interp.budget import ModelBudget
from karyamorph.model.interp.clusters import ClusterState, launch_cluster
from karyamorph.model.interp.divergence import pending_side
from karyamorph.model.interp.errors import DivergentBarrierError, StepLimitError
from karyamorph.model.interp.geometry import as_dim3, make_geometry
from karyamorph.model.interp.landing import Landings
from karyamorph.model.interp.launch_memory import bind_variables, launch_memory
from karyamorph.model.interp.program import Program, prepare
from karyamorph.model.interp.proxyorder import ProxyOrder
from karyamorph.model.interp.simt import GroupExec, Stats
from karyamorph.model.interp.spin import SpinWatch, refuse_grid_sync
from karyamorph.model.interp.tensormem import TensorMemory
from karyamorph.model.semantics.concrete import UINT
from karyamorph.model.semantics.simt_machine import Machine

Dim3 = tuple[int, int, int]
# Interleaved order: the chance that a group hands over to another after each instruction. One
# half interleaves read-modify-write sequences of a few instructions often enough to be seen
# within a handful of seeds.
SWITCH_PROBABILITY = 0.5
Observer = Callable[[GroupExec, np.ndarray, np.ndarray, np.ndarray, int], None]


@dataclass(frozen=True, slots=True)
class InterpResult:
    """Outputs (every array argument's final contents, same dtype and shape) and statistics."""

    outputs: dict[str, np.ndarray]
    stats: Stats
    threads: int
    seconds: float = 0.0
    variables: dict[str, np.ndarray] = field(default_factory=dict)  # module .global bytes (uint8)


@dataclass(slots=True)
class _Entry:
    pc: int
    mask: np.ndarray
    rpc: int
    epoch: int
    full: bool = False
    counted: tuple[int, int] | None = None  # (threads, warps) of ``mask``, once counted


@dataclass(slots=True)
class _Group:
    exec: GroupExec
    stack: list[_Entry]
    block: int
    state: str = "ready"


class _Run:
    """One launch in progress."""

    def __init__(
        self,
        program: Program,
        machine: Machine,
        grid: Dim3,
        block: Dim3,
        shared_bytes: int,
        args: Mapping[str, KernelArg],
        randomize: bool,
        seed: int,
        max_steps: int,
        observe: Observer | None = None,
        interleave: bool = False,
        variables: Mapping[str, np.ndarray] | None = None,
        cluster: Dim3 = (1, 1, 1),
        proxy_order: bool = True,
    ) -> None:
        self.p = program
        self.geo = make_geometry(grid, block, machine.warp_size, cluster)
        n = self.geo.n_threads
        nb = grid[0] * grid[1] * grid[2]
        self.stats = Stats()
        self.max_steps = max_steps
        self.steps = 0
        self.n_ins = len(program.decoded)
        # Per pc: the instruction, its guard register and sense, semantics, statistics key.
        self.plan = [
            (d, d.source.guard.register if d.source.guard else None,
             bool(d.source.guard and d.source.guard.negated), d.instr.semantics, d.source.full_opcode)
            for d in program.decoded
        ]  # fmt: skip
        self.consts: dict[tuple[str, str, int, str], np.ndarray] = {}  # shared by the groups
        self.alive = np.ones(n, bool)
        self.epoch = 0
        self.randomize = randomize
        self.rng = np.random.default_rng(seed) if randomize else None
        self.seed = seed
        self.observe = observe
        self.interleave = randomize and interleave
        # Under independent thread scheduling the lanes of a warp are unordered too; lanes that
        # must meet (shuffles, votes) keep running as one warp.
        self.split_lanes = (
            self.interleave
            and machine.scheduling == "its"
            and not any(d.instr.kind == "warp" for d in program.decoded)
        )
        self.mem = launch_memory(program, machine, self.geo, shared_bytes)
        self.copies = AsyncCopies(self.mem, n, self.geo.describe, self.stats)
        self.hopper = HopperState(self.mem, n, self.geo.describe, self.stats)
        self.hopper.landings = Landings.of(program.decoded, self.mem, n, self.geo.describe)
        self.proxies = ProxyOrder.of(program.decoded, self.mem, n, self.geo.describe) if proxy_order else None
        self.copies.proxies = self.hopper.bulk.proxies = self.hopper.now.proxies = self.proxies
        self.hopper.bulk.async_proxy = self.hopper.now.async_proxy = True
        self.cluster = ClusterState.of(program.decoded, self.geo, self.alive)
        self.mem.cluster_blocks, self.mem.block_alive = self.geo.cluster_blocks, self.alive.reshape(nb, -1)
        self.tensormem = TensorMemory(nb, self.geo)
        self.waits = WaitWatch()
        self.swapped: dict[int, int] = {}  # group -> progress when a wait last let its sibling run
        self.arrays: dict[str, np.ndarray] = {}
        bind_arguments(program, self.mem, self.arrays, args, self.hopper.maps)
        bind_variables(program, self.mem, variables or {})  # after the arguments: their numbering
        self.regs: dict[str, np.ndarray] = {
            name: np.zeros(n, UINT[t.bits] if t.kind != "pred" else np.bool_)
            for name, t in program.registers.items()
        }
        self.spin = SpinWatch([d.source for d in program.decoded], self.regs)

    # --- scheduling ----------------------------------------------------------------------------
    def run(self) -> None:
        n = self.geo.n_threads
        if not self.randomize:
            g = self._group(0, n, None)
            stack = [_Entry(0, np.ones(n, bool), self.n_ins, 0, True)]
            while self._run_group(g, stack, whole=True) != "done":
                pass
            self.copies.finish(g.copy_observer())
            self.hopper.finish(g.copy_observer())
            self.tensormem.finish()
            return
        ws, bt = self.geo.warp_size, self.geo.block_threads
        step = 1 if self.split_lanes else ws
        groups: list[_Group] = []
        for b in range(n // bt):
            for w0 in range(0, bt, step):
                lo, hi = b * bt + w0, b * bt + min(bt, w0 + step)
                g = self._group(lo, hi, self.rng)
                groups.append(_Group(g, [_Entry(0, np.ones(hi - lo, bool), self.n_ins, 0, True)], b))
        assert self.rng is not None
        stalled: dict[str, np.ndarray] | None = None
        while any(s.state != "done" for s in groups):
            moved = False  # a group ran that was not waiting, or stopped waiting
            progress = self._progress()
            for k in self.rng.permutation(len(groups)):
                s = groups[k]
                if s.state in ("ready", "waiting"):  # a waiting group tries its wait again
                    was = s.state
                    s.state = self._run_group(s.exec, s.stack, whole=False)
                    moved = moved or was != "waiting" or s.state != "waiting"
                    if s.state == "barrier":
                        s.exec.phase += 1
            # A block's barrier opens once each of its warps waits there or has finished.
            for b in {s.block for s in groups if s.state == "barrier"}:
                members = [s for s in groups if s.block == b]
                if all(s.state in ("barrier", "done") for s in members):
                    self.stats.barriers += 1
                    self._synced(b)
                    moved = True
                    for s in members:
                        if s.state == "barrier":
                            s.state = "ready"
            stalled = None if moved or self._progress() != progress else self._stalled(stalled, groups)
        if groups:
            self.copies.finish(groups[0].exec.copy_observer())
            self.hopper.finish(groups[0].exec.copy_observer())
        self.tensormem.finish()

    def _progress(self) -> int:
        return sum(self.stats.bytes_stored.values()) + self.stats.atomics

    def _stalled(self, before: dict[str, np.ndarray] | None, groups: list[_Group]) -> dict[str, np.ndarray]:
        """A round in which only waiting groups ran, still waiting, and stored nothing: when the
        registers are as the last such round left them too, no wait can ever succeed."""
        if before is not None and all(np.array_equal(before[r], v) for r, v in self.regs.items()):
            # Every group had its turn in the round and none moved: a schedule the hardware may
            # follow hangs, which is the kernel's fault (the lockstep order's WaitWatch, which
            # does not give every thread a turn, stays the model's limit).
            waiting = [
                (s.exec.dec.line, s.exec.dec.source.full_opcode, s.exec.lo)
                for s in groups
                if s.state == "waiting"
            ]
            at_barrier = sum(1 for s in groups if s.state == "barrier")
            raise deadlock(waiting, at_barrier, self.seed, self.geo.describe)
        return {r: v.copy() for r, v in self.regs.items()}

    def _group(self, lo: int, hi: int, rng: np.random.Generator | None) -> GroupExec:
        g = GroupExec(self.p, self.regs, self.mem, self.geo, self.stats, lo, hi, rng)
        g.observe = self.observe
        g.consts = self.consts
        g.async_copies = self.copies
        g.hopper = self.hopper
        g.cluster = self.cluster
        g.tensormem = self.tensormem
        g.proxies = self.proxies
        g.can_suspend = self.randomize  # whole-launch groups are compared at failed waits instead
        g.waits = self.waits
        return g

    def _run_group(self, g: GroupExec, stack: list[_Entry], whole: bool) -> str:
        alive = self.alive[g.lo : g.hi]
        plan, n_ins, stats = self.plan, self.n_ins, self.stats
        counts = stats.thread_instructions
        while stack:
            e = stack[-1]
            pc = e.pc
            if pc == e.rpc or pc >= n_ins:
                stack.pop()
                continue
            if e.epoch != self.epoch:
                e.mask &= alive
                e.full = bool(e.mask.all())
                e.epoch = self.epoch
                e.counted = None
                if not e.full and not e.mask.any():
                    stack.pop()
                    continue
            dec, guard, negated, semantics, key = plan[pc]
            if guard is not None:
                gv = g.register_view(guard)
                # mask & ~gv, for booleans, is mask > gv
                eff = np.greater(e.mask, gv) if negated else np.logical_and(e.mask, gv)
                full = False
                threads = int(np.count_nonzero(eff))
                if not threads:
                    e.pc += 1
                    continue
            else:
                eff, full = e.mask, e.full
            self.steps += 1
            if self.steps > self.max_steps:
                raise StepLimitError(
                    f"{self.p.fn.name}: more than {self.max_steps} instruction steps "
                    f"(line {dec.line}: {key}); raise max_steps"
                )
            g.set(dec, eff, full)
            semantics(g)
            if g.accesses:
                g.flush_traffic()
            if full:
                threads, warps = g.n, g.n_warps
            elif guard is None:
                if e.counted is None:
                    e.counted = self._count(g, eff)
                threads, warps = e.counted
            else:
                warps = self._warps(g, eff, threads)
            counts[key] = counts.get(key, 0) + threads
            stats.warp_instructions += warps
            ctl = g.ctl
            if ctl is None:
                e.pc += 1
                if self.interleave and self.rng is not None and self.rng.random() < SWITCH_PROBABILITY:
                    return "ready"
            elif ctl[0] == "branch":
                target = self.p.labels[ctl[1]]
                if target <= e.pc:
                    self.spin.back_edge(g.lo, g.hi, target, e.pc, dec.line, eff, self._progress())
                if guard is None or threads == self._threads_of(g, e):
                    e.pc = target  # every thread of the entry takes it
                else:
                    self._diverge(stack, e, g, eff, target)
            elif ctl[0] == "exit":
                np.logical_and(alive, ~eff, out=alive)
                self.epoch += 1
                e.mask = e.mask & ~eff
                e.full = False
                e.epoch = self.epoch
                e.counted = None
                e.pc += 1
                if not e.mask.any():
                    stack.pop()
            elif ctl[0] == "cluster_wait":  # not every thread of the cluster has arrived: again later
                counts[key] -= threads
                stats.warp_instructions -= warps
                return "waiting"
            elif ctl[0] == "suspend":  # a failed try_wait: the other groups run first
                e.pc += 1
                side = pending_side(stack)
                if side is not None and self.swapped.get(g.lo) != self._progress():
                    # Another side of a divergent branch (warp specialisation: producers
                    # and consumers) runs first; the waiting side resumes after it. Running
                    # alone, WaitWatch ends waits that take turns without progress; else the
                    # group hands over once the turns make none.
                    if not whole:
                        self.swapped[g.lo] = self._progress()
                    stack.append(stack.pop(side))
                elif not whole:
                    return "waiting"
            else:
                self._barrier(g, e, eff, whole)
                e.pc += 1
                if not whole:
                    return "barrier"
        return "done"

    @classmethod
    def _count(cls, g: GroupExec, eff: np.ndarray) -> tuple[int, int]:
        """Threads and warps (those with a thread in ``eff``) that execute an instruction."""
        threads = int(np.count_nonzero(eff))
        return threads, cls._warps(g, eff, threads)

    @staticmethod
    def _warps(g: GroupExec, eff: np.ndarray, threads: int) -> int:
        if threads == g.n:
            return g.n_warps
        return int(np.count_nonzero(np.logical_or.reduceat(eff, g.warp_starts)))

    def _threads_of(self, g: GroupExec, e: _Entry) -> int:
        if e.full:
            return g.n
        if e.counted is None:
            e.counted = self._count(g, e.mask)
        return e.counted[0]

    def _diverge(self, stack: list[_Entry], e: _Entry, g: GroupExec, taken: np.ndarray, target: int) -> None:
        """A branch that some threads of the entry take and others do not."""
        not_taken = e.mask & ~taken
        b = self.p.cfg.block_of[e.pc]
        r = self.p.cfg.reconvergence_pc(b, self.n_ins)
        both = np.logical_or.reduceat(taken, g.warp_starts) & np.logical_or.reduceat(not_taken, g.warp_starts)
        self.stats.divergent_branches += int(np.count_nonzero(both))
        fall = e.pc + 1
        if e.rpc == r:
            stack.pop()
        else:
            e.pc = r
        stack.append(_Entry(fall, not_taken, r, self.epoch))
        stack.append(_Entry(target, taken.copy(), r, self.epoch))

    def _barrier(self, g: GroupExec, e: _Entry, arriving: np.ndarray, whole: bool) -> None:
        bt = self.geo.block_threads
        alive = self.alive[g.lo : g.hi]
        if whole:
            arr = arriving.reshape(-1, bt)
            alv = alive.reshape(-1, bt)
            present = arr.any(axis=1)
            bad = present & (arr != alv).any(axis=1)
            self.stats.barriers += int(np.count_nonzero(present))
            for row in np.flatnonzero(present & ~bad):
                self._synced((g.lo + int(row) * bt) // bt)
        else:
            arr, alv = arriving[None, :], alive[None, :]
            bad = (arr != alv).any(axis=1)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            missing = np.flatnonzero(alv[k] & ~arr[k])
            first_in = int(np.flatnonzero(arr[k])[0])
            base = g.lo + (k * bt if whole else 0)
            dec = g.dec
            raise DivergentBarrierError(
                f"line {dec.line}: {dec.source.full_opcode}: divergent barrier: "
                f"{int(arr[k].sum())} of {int(alv[k].sum())} non-exited threads arrive "
                f"(first arriving: {self.geo.describe(base + first_in)}; first missing: "
                f"{self.geo.describe(base + int(missing[0]))})"
            )

    def _synced(self, block: int) -> None:
        """A barrier of ``block`` opened: its threads share what their mbarrier waits saw."""
        if self.hopper.landings is not None:
            self.hopper.landings.synced(block * self.geo.block_threads + np.arange(self.geo.block_threads))

    def outputs(self) -> dict[str, np.ndarray]:
        # The launch's memory is dropped after the run, so its buffers become the outputs.
        out = {}
        for name, original in self.arrays.items():
            raw = self.mem.global_bytes(name)
            out[name] = raw.view(original.dtype).reshape(original.shape)
        return out


def interpret(
    module: ast.Module,
    entry: str,
    machine: Machine,
    launch: tuple[Dim3 | tuple[int, ...] | int, Dim3 | tuple[int, ...] | int, int],
    args: Mapping[str, KernelArg],
    *,
    randomize_order: bool = False,
    seed: int = 0,
    max_steps: int = 1_000_000,
    observe: Observer | None = None,
    interleave: bool = False,
    budget: ModelBudget | None = None,
    variables: Mapping[str, np.ndarray] | None = None,
    cluster: Dim3 | None = None,
    proxy_order: bool = True,
) -> InterpResult:
    """Run ``entry`` of ``module`` for one launch on the CPU.

    Parameters
    ----------
    module, entry
        The parsed PTX and the ``.entry`` to run.
    machine
        The machine model (:func:`karyamorph.model.ptx.ptx_machine.ptx_machine`).
    launch
        ``(grid, block, dynamic_shared_bytes)``; grid and block are ints or 1-3 tuples.
    args
        Parameter name -> numpy array (a pointer argument: a global allocation of its own,
        copied; a large one as the launch first touches it, so it must not change during the
        run), a Python/numpy scalar (passed by value), or a
        :class:`~karyamorph.kernel.structs.StructArg` for a struct passed by value (a pointer
        field's array is an allocation of its own, output as ``param.field``).
    randomize_order
        Run warps separately between barriers in a random order (seeded) and let colliding
        stores/atomics of one instruction land in a random order.
    seed
        Seed of that order.
    max_steps
        Limit on executed instruction steps (group-instructions), against hangs.
    observe
        Called after each memory access resolves, as ``observe(group, threads, buffers,
        elements, nbytes)``: the executing :class:`~karyamorph.model.interp.simt.GroupExec` (its
        ``dec.line``, in the randomized order its ``phase``: barriers passed), the linear thread
        indices, buffer ids and elements as :meth:`~karyamorph.model.interp.memory.Memory.resolve`.
    interleave
        With ``randomize_order``: switch between groups at random instructions (not only at
        barriers), and under the machine's ``its`` scheduling make every thread its own group
        unless the kernel has warp-collective instructions (shuffle, vote), so that lanes of one
        warp race too. About ten times slower; statistics then count a group-instruction as a
        warp-instruction.
    budget
        The registers and bytes the run may take (default :class:`ModelBudget`'s), checked
        before anything is allocated; ``max_steps`` bounds the work.
    variables
        The module's ``.global`` variables as an earlier launch left them (its
        :attr:`InterpResult.variables`), as they stay on a GPU while the module is loaded,
        and ``.const`` variables as the host set them; default: their initializers.
    cluster
        The cluster dimensions of an ``.explicitcluster`` launch; ``.reqnctapercluster`` wins.
    proxy_order
        Refuse async-proxy reads of shared memory that generic writes left unfenced
        (:mod:`karyamorph.model.interp.proxyorder`); a witness replay, which confirms one race,
        turns it off.

    Returns
    -------
    InterpResult
        ``outputs[name]`` is the final content of each array argument.

    Raises
    ------
    UnmodeledError
        Before running, listing every instruction outside the machine's set.
    TooLargeError
        Before running, when the kernel or the launch is over ``budget``.
    MemoryAccessError, DivergentBarrierError, WarpSyncError, StepLimitError, LaunchError
    ModelLimitError
        A form the model cannot run: cooperative grid synchronisation (before running), a
        spin-wait seen to make no progress (:mod:`karyamorph.model.interp.spin`).
    """
    grid, block, shared_bytes = (as_dim3(launch[0]), as_dim3(launch[1]), int(launch[2]))
    budget = budget or ModelBudget()
    program = prepare(module, entry, machine, budget)
    refuse_grid_sync(program.fn)
    shape = launch_cluster(program.fn, cluster)
    fields = [f for v in args.values() if isinstance(v, StructArg) for f in v.values.values()]
    arrays = [v.nbytes for v in (*args.values(), *fields) if isinstance(v, np.ndarray) and v.ndim >= 1]
    budget.check_bytes(program.footprint(grid, block, shared_bytes, arrays))
    t0 = time.perf_counter()
    order = (randomize_order, seed, max_steps, observe, interleave)
    run = _Run(program, machine, grid, block, shared_bytes, args, *order, variables=variables, cluster=shape,
               proxy_order=proxy_order)  # fmt: skip
    with np.errstate(all="ignore"):
        run.run()
    seconds = time.perf_counter() - t0
    variables = {v.name: run.mem.global_bytes(v.name).copy() for v in program.variables if v.space != "const"}
    return InterpResult(run.outputs(), run.stats, run.geo.n_threads, seconds, variables)
