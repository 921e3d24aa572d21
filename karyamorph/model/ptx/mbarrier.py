"""Hopper's arrive-wait barriers in shared memory: ``mbarrier`` and its 64-bit state.

PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier": an mbarrier is an
opaque 64-bit object in shared memory holding the current phase, the expected arrival count,
the pending arrival count and the tx-count (bytes of asynchronous transactions still to come).

- ``mbarrier.init.shared{::cta}.b64 [addr], count`` starts phase 0 with ``count`` expected and
  pending arrivals and a tx-count of zero;
- ``mbarrier.arrive{.noComplete}{.sem}{.scope}.shared{::cta}.b64 state, [addr]{, count}``
  decrements the pending count by ``count`` (default 1) and returns in ``state`` a token of the
  phase before the arrival; ``arrive.expect_tx ... state, [addr], txCount`` first raises the
  tx-count by ``txCount``; ``expect_tx`` and ``complete_tx`` raise and lower it alone;
- the current phase completes when the pending count and the tx-count are both zero: the
  phase parity flips, the pending count is reloaded with the expected count;
- ``test_wait`` and ``try_wait`` write whether the phase of ``state`` (or, with ``.parity``,
  the phase of parity ``phaseParity``: the current or the preceding one) has completed;
  ``try_wait`` may suspend the thread a while first (after a failed wait of either kind the
  interpreter lets other warps run, as a loop on it waits for them);
- ``mbarrier.pending_count.b64 count, state`` reads the pending count from a token of
  ``arrive.noComplete``; ``mbarrier.inval`` ends the object's life (its memory may be reused).
- ``arrive``, ``arrive.expect_tx``, ``expect_tx`` and ``complete_tx`` with ``.shared::cluster``
  act on the object at a cluster-window address (``mapa``'s), which may be another CTA's (an
  arrival there returns no token: its state operand is the sink ``_``); the waits read the
  executing CTA's own objects; ``fence.mbarrier_init.release.cluster`` makes inits visible to the
  cluster (a no-op in the model, whose stores are visible at once).

The model's encoding of the object (the PTX ISA leaves it opaque) is :func:`pack`; every update
is one ``atomic`` on the object, so the interpreter and the checker run the same definition.
Drivers that track objects (the interpreter) are told of ``init``/``inval``/uses through the
optional hook ``mbarrier_object(op, addr, addr_bits)``, and a failed wait through
``suspend_unless(done)``: a driver without them runs the instruction as an access of shared
memory alone.
"""

from __future__ import annotations

from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Semantics, Slot
from karyamorph.model.semantics.types import U32, U64, PtxType

B64 = PtxType("b64", 64, "b")
# Field layout of the 64-bit object: pending arrivals in bits 0-19, expected arrivals in 20-39,
# the tx-count (two's complement, 21 bits: the PTX ISA's range is -(2**20 - 1) .. 2**20 - 1) in
# 40-60 and the phase parity in bit 63.
PENDING, EXPECTED, TX, PHASE = (0, 20), (20, 20), (40, 21), (63, 1)
MAX_COUNT = (1 << 20) - 1
"""The largest arrival count and tx-count the PTX ISA allows."""


def field(d: Domain[V, B], state: V, at: tuple[int, int]) -> V:
    """One field of a 64-bit state, as a 64-bit value."""
    lo, width = at
    return d.and_(d.lshr(state, d.const(lo, 64), 64), d.const((1 << width) - 1, 64), 64)


def pack(d: Domain[V, B], phase: V, pending: V, expected: V, tx: V) -> V:
    """The 64-bit state of the given fields (each cut to its width)."""
    out = d.const(0, 64)
    for value, (lo, width) in ((pending, PENDING), (expected, EXPECTED), (tx, TX), (phase, PHASE)):
        part = d.and_(value, d.const((1 << width) - 1, 64), 64)
        out = d.or_(out, d.shl(part, d.const(lo, 64), 64), 64)
    return out


def update(d: Domain[V, B], old: V, arrivals: V, tx_delta: V) -> V:
    """``old`` after ``arrivals`` arrivals and a tx-count change of ``tx_delta`` (64-bit, two's
    complement), completing the phase when both counts are then zero."""
    phase, expected = field(d, old, PHASE), field(d, old, EXPECTED)
    pending = d.and_(d.sub(field(d, old, PENDING), arrivals, 64), d.const(MAX_COUNT, 64), 64)
    tx = d.and_(d.add(field(d, old, TX), tx_delta, 64), d.const((1 << TX[1]) - 1, 64), 64)
    zero = d.const(0, 64)
    done = d.band(d.eq(pending, zero, 64), d.eq(tx, zero, 64))
    flipped = d.xor(phase, d.const(1, 64), 64)
    return d.ite(done, pack(d, flipped, expected, expected, zero), pack(d, phase, pending, expected, tx), 64)


def token(d: Domain[V, B], old: V) -> V:
    """What ``arrive`` returns: the object's state before the arrival, so its phase and its
    pending count (what ``pending_count`` reads of a ``noComplete`` token) are those before it.
    The PTX ISA does not say which pending count the token holds; an H100 returns the one before
    the arrival (``model validate`` of ``pending_count``, 2026-12-06)."""
    return pack(d, field(d, old, PHASE), field(d, old, PENDING), field(d, old, EXPECTED), field(d, old, TX))


def _track(x: Exec[V, B], op: str) -> tuple[V, int]:
    addr, bits = x.address("addr")
    track(x, op, addr, bits)
    return addr, bits


def track(x: Exec[V, B], op: str, addr: V, bits: int) -> None:
    """Tell a driver that tracks live objects of an mbarrier operation ``op`` at ``addr``."""
    hook = getattr(x, "mbarrier_object", None)  # optional: drivers that track live objects
    if hook is not None:
        hook(op, addr, bits)


def _u64(x: Exec[V, B], slot: str) -> V:
    return x.D.zext(x.read(slot, U32), 32, 64)


def _init(x: Exec[V, B]) -> None:
    d = x.D
    addr, bits = _track(x, "init")
    count = _u64(x, "count")
    x.store("shared", addr, bits, pack(d, d.const(0, 64), count, count, d.const(0, 64)), B64)


def space(x: Exec[V, B]) -> str:
    """The state space of the instruction's object: ``shared::cluster`` (an address of the
    cluster's window, which may name another CTA's object) or the CTA's own ``shared``."""
    return "shared::cluster" if x.mod("space") == "shared::cluster" else "shared"


def change(x: Exec[V, B], addr: V, bits: int, arrivals: V, tx_delta: V, where: str = "shared") -> V:
    """Apply :func:`update` atomically to the object at ``addr`` of space ``where``; return the
    old state."""
    d = x.D
    zero = d.const(0, 64)
    return x.atomic(
        where, "mbarrier", addr, bits, B64, lambda o, a, t: update(d, o, a, zero if t is None else t),
        arrivals, tx_delta,
    )  # fmt: skip


def complete_tx(x: Exec[V, B], addr: V, bits: int, nbytes: V, where: str = "shared") -> None:
    """Lower the tx-count of the object at ``addr`` (of space ``where``) by ``nbytes`` (32-bit),
    as a completed asynchronous transaction does (``complete_tx``, and the bulk copies that name
    the object)."""
    d = x.D
    change(x, addr, bits, d.const(0, 64), d.neg(d.zext(nbytes, 32, 64), 64), where)


def _arrive(x: Exec[V, B]) -> None:
    d = x.D
    arrivals = _u64(x, "count") if x.has("count") else d.const(1, 64)
    addr, bits = _track(x, "arrive")
    old = change(x, addr, bits, arrivals, d.const(0, 64), space(x))
    x.write("state", token(d, old), B64)


def _arrive_expect_tx(x: Exec[V, B]) -> None:
    d = x.D
    one = d.const(1, 64)
    addr, bits = _track(x, "arrive")
    old = change(x, addr, bits, one, _u64(x, "tx"), space(x))
    x.write("state", token(d, old), B64)


def _expect_tx(x: Exec[V, B]) -> None:
    addr, bits = _track(x, "expect_tx")
    change(x, addr, bits, x.D.const(0, 64), _u64(x, "tx"), space(x))


def _complete_tx(x: Exec[V, B]) -> None:
    addr, bits = _track(x, "complete_tx")
    complete_tx(x, addr, bits, x.read("tx", U32), space(x))


def _completed(x: Exec[V, B], parity: bool) -> B:
    """Whether the phase the ``state`` (or with ``.parity`` the ``phaseParity``) operand names
    has completed: the current phase's parity is no longer its parity. A driver that tracks
    what waits order (hook ``mbarrier_waited(addr, bits, parity, done)``) is told; it may
    return the result to keep instead (a symbolic driver's choice, which its witnesses are held
    to by a replay)."""
    d = x.D
    addr, bits = _track(x, "wait")
    current = field(d, x.load("shared", addr, bits, U64), PHASE)
    token = None if parity else x.read("state", U64)
    waited = d.and_(_u64(x, "state"), d.const(1, 64), 64) if token is None else field(d, token, PHASE)
    done = d.bnot(d.eq(current, waited, 64))
    hook = getattr(x, "mbarrier_waited", None)  # optional: drivers that order reads after waits
    if hook is not None:
        kept = hook(addr, bits, waited, done)
        if kept is not None:
            done = kept
    return done


def _wait_semantics(parity: bool) -> Semantics:
    # test_wait never blocks and try_wait may return false too, so both end the same way; a
    # failed one lets a driver that schedules warps run others first, since a loop on either
    # waits for them (any order of the warps is one the GPU may take).
    def sem(x: Exec[V, B]) -> None:
        done = _completed(x, parity)
        x.write_pred("done", done)
        suspend = getattr(x, "suspend_unless", None)  # optional: drivers that schedule warps
        if suspend is not None:
            suspend(done)

    return sem


def _pending_count(x: Exec[V, B]) -> None:
    # Declared with the memory forms: its operand is an object's opaque state (the model's
    # encoding, not the GPU's), so it is held to the PTX ISA in kernels, not on random words.
    d = x.D
    x.write("count", d.trunc(field(d, x.read("state", U64), PENDING), 64, 32), U32)


def _fence_init(x: Exec[V, B]) -> None:
    """``fence.mbarrier_init.release.cluster``: makes the thread's earlier ``mbarrier.init``
    visible to the cluster (other CTAs' arrivals, multicast copies' complete-tx) once a cluster
    barrier follows. The model's init is visible at once, so the fence changes nothing here; a
    kernel that leaves it out is not caught (the model cannot show a stale object)."""


def _inval(x: Exec[V, B]) -> None:
    addr, bits = _track(x, "inval")
    x.store("shared", addr, bits, x.D.const(0, 64), B64)


_ADDR = Slot("addr", "addr")
_SPACE: dict[str, tuple[str, ...]] = {"space": ("shared",)}
# .cta is neutral, and so is .cluster: the model's stores are visible at once, so a wider scope
# orders nothing more.
_SEM_SCOPE: dict[str, tuple[str, ...]] = {**_SPACE, "scope": ("cluster",)}
# arrive, expect_tx and complete_tx may name the object of another CTA of the cluster by its
# .shared::cluster address (mapa's); the waits read the executing CTA's own objects only.
_REMOTE: dict[str, tuple[str, ...]] = {"space": ("shared", "shared::cluster"), "scope": ("cluster",)}


def _wait(op: str, parity: bool, doc: str) -> Instr:
    slots = [Slot("done", "pred", dest=True), _ADDR, Slot("state")]
    if op == "try_wait":
        slots.append(Slot("hint", optional=True))  # suspendTimeHint: a hint the model ignores
    sem = _wait_semantics(parity)
    # PTX ISA: test_wait from 7.0 (sm_80), its .parity form from 7.1, try_wait from 7.8 (sm_90).
    gate = ("7.8", "sm_90") if op == "try_wait" else ("7.1" if parity else "7.0", "sm_80")
    return Instr("mbarrier", ("b64",), tuple(slots), sem, _SEM_SCOPE, required=("space",),
                 fixed=(op, "parity") if parity else (op,), kind="memory", min_ptx=gate[0],
                 min_target=gate[1], doc=doc)  # fmt: skip


MBARRIER: tuple[Instr, ...] = (
    Instr("mbarrier", ("b64",), (_ADDR, Slot("count")), _init, _SPACE, required=("space",), fixed=("init",),
          kind="memory", min_ptx="7.0", min_target="sm_80",
          doc="initialise an mbarrier: phase 0, count arrivals expected"),
    Instr("mbarrier", ("b64",), (Slot("state", dest=True), _ADDR, Slot("count", optional=True)), _arrive,
          {**_REMOTE, "complete": ("noComplete",)}, required=("space",), fixed=("arrive",), kind="memory",
          min_ptx="7.0", min_target="sm_80", doc="arrive (count times) and return a token of the phase"),
    Instr("mbarrier", ("b64",), (Slot("state", dest=True), _ADDR, Slot("tx")), _arrive_expect_tx,
          _REMOTE, required=("space",), fixed=("arrive", "expect_tx"), kind="memory", min_ptx="8.0",
          min_target="sm_90", doc="raise the tx-count, then arrive"),
    Instr("mbarrier", ("b64",), (_ADDR, Slot("tx")), _expect_tx, _REMOTE, required=("space",),
          fixed=("expect_tx",), kind="memory", min_ptx="8.0", min_target="sm_90", doc="raise the tx-count"),
    Instr("mbarrier", ("b64",), (_ADDR, Slot("tx")), _complete_tx, _REMOTE, required=("space",),
          fixed=("complete_tx",), kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="lower the tx-count (as completed transactions do)"),
    _wait("test_wait", False, "whether the phase of a token has completed"),
    _wait("test_wait", True, "whether the phase of a parity has completed"),
    _wait("try_wait", False, "wait (a while) for the phase of a token to complete"),
    _wait("try_wait", True, "wait (a while) for the phase of a parity to complete"),
    Instr("mbarrier", ("b64",), (Slot("count", dest=True), Slot("state")), _pending_count,
          fixed=("pending_count",), kind="memory", min_ptx="7.0", min_target="sm_80",
          doc="the pending arrival count of a noComplete arrival's token"),
    Instr("mbarrier", ("b64",), (_ADDR,), _inval, _SPACE, required=("space",), fixed=("inval",),
          kind="memory", min_ptx="7.0", min_target="sm_80", doc="end an mbarrier's life"),
    Instr("fence", (), (), _fence_init, {"scope": ("cluster",)}, required=("scope",),
          fixed=("mbarrier_init",), ntypes=0, kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="make earlier mbarrier.init visible to the cluster (no value changes)"),
)  # fmt: skip
