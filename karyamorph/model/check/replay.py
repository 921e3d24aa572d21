"""Replays the witness of a refuted verdict on the CPU interpreter, to confirm it or say why not.

A bounds witness is confirmed when the interpreter stops with its out-of-bounds error at the
witness's line and state space; a barrier witness when it stops with a divergent-barrier error at
the witness's barrier. A race witness is confirmed when, in the randomized, interleaved order (every
thread its own group under independent thread scheduling, switching at random instructions), the two
witness threads make the two accesses at the witness's lines to overlapping bytes with no
barrier between them (any barriers for global memory across blocks), the first at the witness's
address; the detail says whether the outputs also differ between seeds.
"""

from __future__ import annotations

import re
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from karyamorph.isa import ast
from karyamorph.kernel.structs import StructArg, StructLayout
from karyamorph.kernel.tensormap import TensorMap, TensorMapArg
from karyamorph.model.check.verdict import Replay, ThreadId, Verdict, Witness
from karyamorph.model.interp.errors import (
    DivergentBarrierError,
    ExecutionError,
    LaunchError,
    MemoryAccessError,
    ModelLimitError,
    StepLimitError,
)
from karyamorph.model.interp.interpreter import KernelArg, interpret
from karyamorph.model.interp.landing import LandingError
from karyamorph.model.interp.program import Program, prepare
from karyamorph.model.interp.simt import GroupExec
from karyamorph.model.semantics.simt_machine import Machine

__all__ = ["MAX_GROUP_STEPS", "MAX_THREAD_INSTRUCTIONS", "Replay", "replay"]

Dim = int | tuple[int, ...]
# The launch in lockstep (bounds, barrier) runs at tens of M thread-instructions/s: 2e7 is a few
# seconds at worst. In the interleaved order each thread steps on its own, at 60-80k steps/s:
# 3e5 group-instructions over all seeds is about 5 s at worst.
MAX_THREAD_INSTRUCTIONS = 2e7
MAX_GROUP_STEPS = 3e5
MAX_REPLAY_BYTES = 1 << 28  # a buffer the replay fills whole, in this process's memory
MAX_PAIRS = 64  # overlapping pairs of one stored value kept from one order, looking for two values
_ERROR = re.compile(r"line (\d+): ((?:[^\s:]|::)+)(?: \((block \([^)]*\) thread \([^)]*\))\))?:")
_SPACE = re.compile(r": ([\w:]+) access of (\d+) bytes at address (0x[0-9a-f]+): (.*)$")
_INPUT = re.compile(r"(\w+)\[(\d+)\]")


def replay(
    module: ast.Module,
    entry: str,
    machine: Machine,
    launch: tuple[Dim, Dim, int],
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    verdict: Verdict,
    *,
    seeds: int = 8,
    element_bytes: dict[str, int] | None = None,
    scheduling: str | None = None,
    structs: Mapping[str, StructLayout] | None = None,
    strict: bool = False,
    cluster: tuple[int, int, int] | None = None,
    tensormaps: Mapping[str, TensorMap] | None = None,
) -> Replay:
    """Run the witness of a refuted ``verdict`` on the interpreter, for the checker's launch.

    Parameters
    ----------
    module, entry, machine, launch, buffers, scalars
        What :func:`karyamorph.model.check.checker.check` was given. Buffers become byte arrays of
        their size, filled with small deterministic values (element ``i`` holds ``i % 13 + 1``)
        except for the elements the witness's ``inputs`` name; scalars keep their values; a free
        scalar takes the witness's value (0 when it names none).
    verdict
        A refuted bounds, race or barrier verdict.
    seeds
        Randomized orders tried for a race, at most (fewer when the launch is large; it stops
        early once it has seen the race and a difference between outputs).
    element_bytes
        Element width of the loads behind each buffer's witness inputs (``x[12]`` is byte
        ``12 * width``); 4 where not given.
    scheduling
        The scheduling the check assumed (default: the machine's); a race is replayed with the
        lanes of a warp unordered under ``its`` only.
    structs
        The layouts of struct parameters, as the check was given them; their ``param.field``
        buffers and scalars are filled as the others are.
    strict
        The check counted same-value stores as races. When it did not, a race between two plain
        stores is confirmed only once the two threads store different values in some order:
        one value in every order is ``not confirmed`` with ``same_value`` set.
    cluster
        The launch's cluster shape, for an ``.explicitcluster`` kernel without
        ``.reqnctapercluster`` (as the check was given it).
    tensormaps
        The fields of each tensor-map parameter (as the check was given them); its tensor is
        filled as a buffer is.

    Returns
    -------
    Replay
        ``confirmed``, ``not confirmed`` or ``not replayable``, with what was seen or why.

    Raises
    ------
    ValueError
        ``verdict`` has no witness.
    """
    w = verdict.witness
    if w is None:
        raise ValueError(f"{verdict.property}: only a refuted verdict has a witness to replay")
    t0 = time.perf_counter()
    if scheduling is not None and scheduling != machine.scheduling:
        machine = machine.with_options(scheduling=scheduling)
    shapes = dict(structs or {})
    out = _replay(module, entry, machine, launch, buffers, scalars, verdict.property, w, seeds, element_bytes,
                  shapes, not strict, cluster, dict(tensormaps or {}))  # fmt: skip
    status, detail, same = out if len(out) == 3 else (*out, False)
    landed = status == "confirmed" and detail.startswith(LANDED)
    return Replay(status, detail, time.perf_counter() - t0, same_value=same, landed=landed)


# How a race confirmed by the interpreter's landing check reads (Replay.landed)
LANDED = "a read came before the copy it races with landed"


def _replay(
    module: ast.Module,
    entry: str,
    machine: Machine,
    launch: tuple[Dim, Dim, int],
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    prop: str,
    w: Witness,
    seeds: int,
    element_bytes: dict[str, int] | None,
    structs: dict[str, StructLayout],
    benign: bool,
    cluster: tuple[int, int, int] | None = None,
    tensormaps: dict[str, TensorMap] | None = None,
) -> tuple[str, str] | tuple[str, str, bool]:
    if prop not in ("bounds", "race", "barrier"):
        return "not replayable", f"no replay for a {prop} witness"
    program = prepare(module, entry, machine)
    grid, block = _dim3(launch[0]), _dim3(launch[1])
    for t in w.threads:
        if any(c >= d for c, d in zip((*t.block, *t.thread), (*grid, *block), strict=True)):
            return "not replayable", f"{t} is outside the launch (grid {grid}, block {block})"
    n = _prod(grid) * _prod(block)
    instructions = len(program.decoded)
    program.structs = structs
    large = {name: size for name, size in buffers.items() if int(size) > MAX_REPLAY_BYTES}
    if large:
        name, size = max(large.items(), key=lambda kv: kv[1])
        return "not replayable", (
            f"buffer {name} of {int(size)} bytes is over the {MAX_REPLAY_BYTES >> 20} MiB the interpreter "
            "replays in memory"
        )
    maps = tensormaps or {}
    args = _arguments(program, buffers, scalars, w.inputs, element_bytes or {}, maps=maps)
    constants = _constants(program, w.inputs, element_bytes or {})
    full = (grid, block, int(launch[2]))
    if prop == "race":
        steps = n * instructions if machine.scheduling == "its" else -(-n // machine.warp_size) * instructions
        if 2 * steps > MAX_GROUP_STEPS:
            return "not replayable", (
                f"two interleaved orders need at least {2 * steps:.1e} group-instructions "
                f"(limit {MAX_GROUP_STEPS:.0e}); check a smaller launch"
            )
        seeds = min(seeds, int(MAX_GROUP_STEPS // steps))

        def arguments(fill: int) -> dict[str, KernelArg]:
            return args if fill == 0 else _arguments(program, buffers, scalars, w.inputs, widths, fill, maps)

        widths = element_bytes or {}
        steps_left = int(4 * steps)
        return _race(
            module, entry, machine, full, arguments, program, w, seeds, steps_left, constants, benign, cluster
        )
    if n * instructions > MAX_THREAD_INSTRUCTIONS:
        return "not replayable", (
            f"the launch needs at least {n * instructions:.1e} thread-instructions "
            f"(limit {MAX_THREAD_INSTRUCTIONS:.0e}); check a smaller launch"
        )
    want = MemoryAccessError if prop == "bounds" else DivergentBarrierError
    limit = int(4 * MAX_THREAD_INSTRUCTIONS // n)
    try:
        interpret(
            module, entry, machine, full, args, max_steps=limit, variables=constants, proxy_order=False,
            cluster=cluster,
        )  # fmt: skip
    except StepLimitError:
        return "not replayable", f"the launch ran past {limit} instruction steps"
    except LaunchError as exc:
        return "not replayable", str(exc)
    except ExecutionError as exc:
        return _match_error(prop, w, exc, want)
    what = "out-of-bounds access" if prop == "bounds" else "divergent barrier"
    return "not confirmed", f"the launch ran to completion without a {what}"


def _match_error(prop: str, w: Witness, exc: ExecutionError, want: type[ExecutionError]) -> tuple[str, str]:
    """Whether the interpreter's error is the witness's violation."""
    text = str(exc)
    m = _ERROR.match(text)
    if not isinstance(exc, want) or m is None:
        return "not confirmed", f"the interpreter stopped with another error: {text}"
    line, thread = int(m.group(1)), m.group(3)
    if line != w.lines[0]:
        return "not confirmed", f"the interpreter stopped at line {line}, not line {w.lines[0]}: {text}"
    if prop == "barrier":
        return "confirmed", f"divergent barrier at line {line}: {text.split(': divergent barrier: ')[-1]}"
    if w.space == "cluster":  # mapa's rank outside the cluster
        if "mapa to rank" not in text:
            return "not confirmed", f"the fault at line {line} is not a rank outside the cluster: {text}"
        return "confirmed", f"mapa at line {line}: {text[text.index('mapa to rank') :]}"
    s = _SPACE.search(text)
    space = s.group(1) if s else None
    if space == "shared::cluster":  # another CTA's shared memory, as the checker encodes it
        space = "shared"
    if space not in (w.space, "generic"):
        return "not confirmed", f"the fault at line {line} is in {space} memory, not {w.space}: {text}"
    if s and s.group(4).startswith("misaligned"):
        return "not confirmed", f"the access at line {line} is misaligned, not out of bounds: {text}"
    if w.space == "global" and w.buffer and s and f"'{w.buffer}'" not in s.group(4):
        return "not confirmed", f"the fault at line {line} is outside {w.buffer}'s window: {text}"
    # The interpreter names the first faulting thread of the launch, not necessarily the witness's.
    who = thread if thread == str(w.threads[0]) else f"{thread}, the first in launch order"
    return "confirmed", f"out-of-bounds {space} access at line {line} by {who}: {s.group(4) if s else text}"


@dataclass(frozen=True, slots=True)
class _Access:
    line: int
    thread: int
    buffer: int
    start: int
    nbytes: int
    phase: int
    space: str
    offset: int  # inside its buffer (global) or the shared window of the block it reaches
    block: int
    value: int | None = None  # what a plain store writes (None: not a store, or not known)
    cluster_phase: int = 0  # cluster barriers the thread has passed


def _race(
    module: ast.Module,
    entry: str,
    machine: Machine,
    launch: tuple[tuple[int, int, int], tuple[int, int, int], int],
    args: Callable[[int], dict[str, KernelArg]],
    program: Program,
    w: Witness,
    seeds: int,
    max_steps: int,
    constants: dict[str, np.ndarray],
    benign: bool,
    cluster: tuple[int, int, int] | None = None,
) -> tuple[str, str, bool]:
    """Replay a race witness in ``seeds`` randomized orders on ``args(0)`` (the witness's inputs,
    other elements filled with pattern 0); where the rule counts only stores of different values
    and they met storing one value, again on ``args(1)`` (pattern 1 around the same inputs, made
    only then: the buffers may be large)."""
    grid, block = launch[0], launch[1]
    ta, tb = (_linear(t, grid, block) for t in w.threads)
    la, lb = w.lines[0], w.lines[1]
    want = _expected_offset(program, w)
    # Under the same-value rule two plain stores race only when they write different values.
    values = benign and all(_plain_store(i) for i in w.instructions)

    def run(arguments: dict[str, KernelArg], seed: int) -> tuple[list[_Access], bytes]:
        log: list[_Access] = []

        def observe(
            g: GroupExec, threads: np.ndarray, bufs: np.ndarray, elems: np.ndarray, nbytes: int
        ) -> None:
            line = g.dec.line
            if line != la and line != lb:
                return
            n_globals = len(g.memory.globals)
            mine = np.ones(threads.shape, bool) if any(w.served) else (threads == ta) | (threads == tb)
            for i in np.flatnonzero(mine):
                buf, start, t = int(bufs[i]), int(elems[i]) * nbytes, int(threads[i])
                b = int(g.geo.block_index[t])
                # (shared memory: the window of the block it reaches, which the cluster's
                # window lets be another block's)
                offset = start % g.memory.shared_stride if buf == n_globals else start
                space = "global" if buf < n_globals else "shared" if buf == n_globals else "local"
                value = _stored(g, t - g.lo) if values else None
                waits = int(g.cluster.waits[t]) if g.cluster is not None else 0
                log.append(_Access(line, t, buf, start, nbytes, g.phase, space, offset, b, value, waits))

        result = interpret(
            module, entry, machine, launch, _copy(arguments), randomize_order=True, interleave=True,
            seed=seed, max_steps=max_steps, observe=observe, variables=constants, proxy_order=False,
            cluster=cluster,
        )  # fmt: skip
        return log, b"".join(v.tobytes() for v in result.outputs.values())

    seen: list[tuple[_Access, _Access]] = []
    outputs: dict[bytes, int] = {}
    filled = args(0)
    for seed in range(seeds):
        try:
            log, key = run(filled, seed)
        except StepLimitError:
            return "not replayable", f"a randomized order ran past {max_steps} instruction steps", False
        except LaunchError as exc:
            return "not replayable", str(exc), False
        except LandingError as exc:
            if sorted((exc.read_line, exc.copy_line)) == sorted(w.lines):
                # the interpreter's own check of the pair: the read came before the copy landed
                return "confirmed", f"{LANDED} (seed {seed}): {exc}", False
            return "not confirmed", f"the interpreter stopped with an error (seed {seed}): {exc}", False
        except ExecutionError as exc:
            return "not confirmed", f"the interpreter stopped with an error (seed {seed}): {exc}", False
        outputs.setdefault(key, seed)
        seen += _pairs(log, ta, tb, la, lb, want, values, w.served)
        if _differ(seen, values) and len(outputs) > 1:
            break
    if not seen:
        return (
            "not confirmed",
            (
                f"in {seeds} randomized orders, {w.threads[0]} (line {la}) and {w.threads[1]} (line {lb}) "
                f"never made unordered overlapping accesses at {_where(w)}"
            ),
            False,
        )
    who = [
        str(_thread_of(x.thread, grid, block) if drew else t)
        for x, t, drew in zip(seen[0], w.threads, (*w.served, False, False), strict=False)
    ]
    met = f"{who[0]} at line {la} and {who[1]} at line {lb} access {_where(w)} with no barrier between them"
    if not _differ(seen, values):
        one = sorted({f"{a.value:#x}" for a, _ in seen if a.value is not None})
        apart: list[tuple[_Access, _Access]] = []
        refilled = args(1)
        for seed in range(min(seeds, 2)):  # the other pattern around the witness's inputs
            try:
                log, _ = run(refilled, seed)
            except ExecutionError:
                break  # that input is no witness: what was seen stands
            met_again = _pairs(log, ta, tb, la, lb, want, values, w.served)
            apart += [(a, b) for a, b in met_again if _differ([(a, b)], values)]
            if apart:
                first, second = apart[0]
                return (
                    "confirmed",
                    (
                        f"{met}; they store one value ({', '.join(one)}) where the other input elements hold "
                        f"i % 13 + 1, and {first.value:#x} and {second.value:#x} where they hold "
                        "i * 40503 % 65521 + 1"
                    ),
                    False,
                )
        return (
            "not confirmed",
            (
                f"{met}, but both stored one value ({', '.join(one)}) in all {seeds} randomized orders: "
                "a same-value store, benign unless strict"
            ),
            True,
        )
    if len(outputs) > 1:
        s0, s1 = sorted(outputs.values())[:2]
        effect = f"outputs differ between seeds {s0} and {s1}"
    else:
        effect = f"outputs equal in all {seeds} randomized orders (the race does not change them here)"
    return "confirmed", f"{met}; {effect}", False


def _pairs(
    log: list[_Access],
    ta: int,
    tb: int,
    la: int,
    lb: int,
    want: int | None,
    values: bool,
    served: tuple[bool, ...] = (),
) -> list[tuple[_Access, _Access]]:
    """The witness's two accesses where the log holds them unordered and overlapping: the first
    such pair, or under the same-value rule (``values``) up to the first pair that stores two
    values (at most :data:`MAX_PAIRS` pairs of one value before it). A side the witness marks
    ``served`` (its address is an atomic's ticket) is any thread at its line: the order decides
    which thread draws that ticket."""
    any_a, any_b = (*served, False, False)[:2]
    firsts = [
        a for a in log if (any_a or a.thread == ta) and a.line == la and (want is None or a.offset == want)
    ]
    seconds = [a for a in log if (any_b or a.thread == tb) and a.line == lb]
    out: list[tuple[_Access, _Access]] = []
    for a in firsts:
        for b in seconds:
            if (any_a or any_b) and a.thread == b.thread:
                continue  # one thread drew the ticket
            if a.buffer != b.buffer or a.start + a.nbytes <= b.start or b.start + b.nbytes <= a.start:
                continue
            if a.block != b.block:  # ordered only by the cluster barriers they passed
                unordered = a.space == "global" or a.cluster_phase == b.cluster_phase
            else:
                unordered = a.phase == b.phase
            if unordered:
                out.append((a, b))
                if not values or _differ([(a, b)], values) or len(out) >= MAX_PAIRS:
                    return out
    return out


def _differ(seen: list[tuple[_Access, _Access]], values: bool) -> bool:
    """Whether the accesses seen make a race: any do, unless the rule counts only stores of
    different values (``values``) and every pair seen stored one value at one address."""
    if not values:
        return bool(seen)
    return any(a.value is None or a.value != b.value or a.start != b.start for a, b in seen)


def _plain_store(opcode: str) -> bool:
    """``st.shared.v2.b32``, but not an atomic, a reduction or an asynchronous store."""
    parts = opcode.split(".")
    return parts[0] == "st" and "async" not in parts and "bulk" not in parts


def _stored(g: GroupExec, pos: int) -> int | None:
    """The bits the store being resolved writes for the group's thread at ``pos``: its value
    operand's registers (vector elements, lowest address first), None where it is not made of
    declared registers and immediates."""
    value = g.dec.operands.get("b")
    elements = value.elements if isinstance(value, ast.Vector) else (value,)
    bits = g.dec.ty.bits
    out = 0
    for k, e in enumerate(elements):
        if isinstance(e, ast.Register):
            try:
                v = int(g.register_view(e.name)[pos])
            except ModelLimitError:  # a register this group does not hold (a special one): not known
                return None
        elif isinstance(e, ast.Immediate) and isinstance(e.value, int):
            v = e.value
        else:
            return None
        out |= (v % (1 << bits)) << (k * bits)
    return out


def _expected_offset(program: Program, w: Witness) -> int | None:
    """The witness's address as an offset in its buffer (global) or shared window (shared)."""
    if w.address is None:
        return None
    if w.space == "shared":
        return program.shared_symbols.get(w.buffer or "", 0) + w.address
    return w.address


def _where(w: Witness) -> str:
    return f"{w.space} {w.buffer or '<no allocation>'}+{w.address}"


def _arguments(
    program: Program,
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    inputs: tuple[tuple[str, int], ...],
    element_bytes: dict[str, int],
    fill: int = 0,
    maps: Mapping[str, TensorMap] | None = None,
) -> dict[str, KernelArg]:
    """Concrete arguments: byte buffers with small values (of :func:`_filled`'s pattern
    ``fill``), the witness's elements and scalars; a tensor map's tensor filled alike."""
    given = dict(inputs)
    args: dict[str, KernelArg] = {}
    for p in program.fn.params:
        if p.name in buffers:
            args[p.name] = _filled(int(buffers[p.name]), element_bytes.get(p.name, 4), fill)
        elif maps and p.name in maps:
            tm = maps[p.name]
            span = tm.strides[-1] * tm.dims[-1] if tm.rank > 1 else tm.dims[0] * tm.elem_bytes
            tensor = _filled(span, tm.elem_bytes, fill).view(f"<u{tm.elem_bytes}")
            args[p.name] = TensorMapArg(tensor, tm)
        elif p.name in program.structs:
            layout = program.structs[p.name]
            values: dict[str, object] = {}
            for f in layout.fields:
                name = f"{p.name}.{f.name}"
                if f.is_pointer:
                    values[f.name] = _filled(int(buffers[name]), element_bytes.get(name, 4), fill)
                elif name in scalars:
                    values[f.name] = scalars[name]
                else:
                    values[f.name] = _from_bits(int(given.get(name, 0)), f.type)
            args[p.name] = StructArg(layout, values)
        elif p.name in scalars:
            args[p.name] = scalars[p.name]
        else:
            bits = int(given.get(p.name, 0))
            if p.type in ("f32", "f64"):
                fmt, nb = ("<f", 4) if p.type == "f32" else ("<d", 8)
                args[p.name] = struct.unpack(fmt, (bits % (1 << 8 * nb)).to_bytes(nb, "little"))[0]
            else:
                args[p.name] = bits
    for key, value in inputs:
        m = _INPUT.fullmatch(key)
        if m is None or m.group(1) not in buffers:
            continue
        width = element_bytes.get(m.group(1), 4)
        at = int(m.group(2)) * width
        buf = args[m.group(1)]
        if isinstance(buf, np.ndarray) and at + width <= buf.size:  # (a buffer's argument is one)
            buf[at : at + width] = np.frombuffer(
                (value % (1 << 8 * width)).to_bytes(width, "little"), np.uint8
            )
    return args


def _constants(
    program: Program, inputs: tuple[tuple[str, int], ...], element_bytes: dict[str, int]
) -> dict[str, np.ndarray]:
    """The ``.const`` variables a witness sets (the host may, before the launch): their
    initializers with the witness's elements written over them."""
    out: dict[str, np.ndarray] = {}
    consts = {v.name: v for v in program.variables if v.space == "const"}
    for key, value in inputs:
        m = _INPUT.fullmatch(key)
        var = consts.get(m.group(1)) if m is not None else None
        if m is None or var is None:
            continue
        data = out.setdefault(var.name, np.frombuffer(var.data, np.uint8).copy())
        width = element_bytes.get(var.name, 4)
        at = int(m.group(2)) * width
        if at + width <= data.size:
            data[at : at + width] = np.frombuffer(
                (value % (1 << 8 * width)).to_bytes(width, "little"), np.uint8
            )
    return out


def _filled(size: int, width: int, pattern: int = 0) -> np.ndarray:
    """``size`` bytes of ``width``-byte elements holding ``i % 13 + 1`` (pattern 0) or, where
    that pattern makes two stored values meet by chance, ``i * 40503 % 65521 + 1`` (pattern 1):
    small, never zero, and as floats never a NaN or an infinity."""
    count = -(-size // width)
    i = np.arange(count, dtype=np.uint64)
    values = i % 13 + 1 if pattern == 0 else i * 40503 % 65521 + 1
    return values.astype(f"<u{width}").view(np.uint8)[:size].copy()


def _from_bits(bits: int, type_: str) -> int | float:
    """A struct field's value from the bits a witness gives it."""
    if type_ in ("f32", "f64"):
        fmt, nb = ("<f", 4) if type_ == "f32" else ("<d", 8)
        value: float = struct.unpack(fmt, (bits % (1 << 8 * nb)).to_bytes(nb, "little"))[0]
        return value
    return bits


def _copy(args: dict[str, KernelArg]) -> dict[str, KernelArg]:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}


def _linear(t: ThreadId, grid: tuple[int, int, int], block: tuple[int, int, int]) -> int:
    """The launch-order index of thread ``t`` (blocks in order, threads in order within each);
    :func:`_thread_of` is its inverse."""
    b = t.block[0] + grid[0] * (t.block[1] + grid[1] * t.block[2])
    r = t.thread[0] + block[0] * (t.thread[1] + block[1] * t.thread[2])
    return b * _prod(block) + r


def _thread_of(linear: int, grid: tuple[int, int, int], block: tuple[int, int, int]) -> ThreadId:
    """The thread at launch-order index ``linear`` (the inverse of :func:`_linear`)."""
    b, r = divmod(linear, _prod(block))
    block_at = (b % grid[0], b // grid[0] % grid[1], b // (grid[0] * grid[1]))
    thread_at = (r % block[0], r // block[0] % block[1], r // (block[0] * block[1]))
    return ThreadId(block_at, thread_at)


def _prod(d: tuple[int, int, int]) -> int:
    return d[0] * d[1] * d[2]


def _dim3(v: Dim) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, int) else tuple(int(x) for x in v)
    t = (*t, 1, 1)[:3]
    return (t[0], t[1], t[2])
