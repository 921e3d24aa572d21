"""Phase sequences for ``mbarrier`` validation: rounds of operations with defined outcomes, drawn
at random, and the observations the PTX ISA gives for them.

A case is one CTA of :data:`THREADS` threads and one mbarrier initialised with the case's
expected count. It runs :data:`STEPS` rounds; in a round each thread performs at most one
operation (:class:`Op`) on the mbarrier, then the CTA meets at ``bar.sync`` and every thread
records what it observes (:func:`observations`). The threads of a round act in an order the
hardware picks, so only rounds whose outcome is the same in every order are drawn
(:func:`after_round`):

- no more arrivals than the phase has pending, every arrival count and tx-count in the PTX ISA's
  range (:data:`MAX_COUNT`), never a ``txCount`` of zero;
- the phase completes, if at all, with the round's last operation in every order: no proper
  subset of the round's operations leaves the pending count and the tx-count both zero;
- no order leaves a phase with no pending arrivals and a negative tx-count (the ISA lets the
  tx-count go below zero while arrivals are pending, as when a copy completes before its
  ``expect_tx``; it says nothing of a phase that has all its arrivals then);
- an ``arrive.noComplete`` never completes the phase and is the round's only arrival, so the
  pending count its token holds does not depend on the order.

Each thread keeps the token of its last arrival; the waits on it are recorded only while it names
the current or the preceding phase (the PTX ISA defines no other), which the input row tells
the kernel (:data:`TOKEN_FLAG`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from itertools import combinations, pairwise

import numpy as np

THREADS = 128  # a CTA a case
STEPS = 12  # rounds a case
MAX_COUNT = (1 << 20) - 1  # the PTX ISA's largest arrival count and |tx-count|
TOKEN_FLAG = 1 << 8  # in an op word: record the waits on this thread's token after the round
NO_PENDING = 0xFFFF_FFFF  # the pending word of a round without a recorded pending_count
IN_SLOTS = 1 + 2 * STEPS  # the expected count, then (op word, operand) a round
OUT_SLOTS = 2 * STEPS  # (wait word, pending word) a round
# Bits of a round's wait word: parity p of test_wait.parity at bit p, of try_wait.parity at 2 + p;
# the waits on the thread's token at 4 (test_wait) and 5 (try_wait).
WAIT_BITS = {"test_parity": 0, "try_parity": 2, "test_token": 4, "try_token": 5}
OBSERVATIONS = (*WAIT_BITS, "pending")
TX_SMALL = 4096  # the usual size of a drawn tx-count change


class Op(IntEnum):
    """What a thread does in a round (the low byte of its op word); the operand is the next word."""

    NOOP = 0
    ARRIVE = 1  # mbarrier.arrive
    ARRIVE_COUNT = 2  # mbarrier.arrive ..., count
    NO_COMPLETE = 3  # mbarrier.arrive.noComplete ..., count
    EXPECT_TX = 4  # mbarrier.expect_tx ..., txCount
    COMPLETE_TX = 5  # mbarrier.complete_tx ..., txCount
    ARRIVE_EXPECT_TX = 6  # mbarrier.arrive.expect_tx ..., txCount


ARRIVALS = (Op.ARRIVE, Op.ARRIVE_COUNT, Op.NO_COMPLETE, Op.ARRIVE_EXPECT_TX)


@dataclass(frozen=True, slots=True)
class Barrier:
    """An mbarrier's state as the PTX ISA describes it: the phase (counted from 0 at ``init``;
    its parity is what the waits see), pending and expected arrivals, the tx-count."""

    phase: int
    pending: int
    expected: int
    tx: int = 0


Action = tuple[int, Op, int]
"""One thread's operation in a round: thread, op, operand."""


def _arrivals(op: Op, arg: int) -> int:
    if op in (Op.ARRIVE_COUNT, Op.NO_COMPLETE):
        return arg
    return 1 if op in ARRIVALS else 0


def _tx(op: Op, arg: int) -> int:
    if op in (Op.EXPECT_TX, Op.ARRIVE_EXPECT_TX):
        return arg
    return -arg if op == Op.COMPLETE_TX else 0


def after_round(state: Barrier, actions: Sequence[Action]) -> Barrier | None:
    """The state after a round of ``actions``, or None if the round's outcome is not defined the
    same in every order of its threads (the rules of this module's docstring)."""
    ops = [(op, arg) for _, op, arg in actions if op != Op.NOOP]
    if any(not 1 <= arg <= MAX_COUNT for _, arg in ops):
        return None
    arriving = sum(_arrivals(op, arg) for op, arg in ops)
    if arriving > state.pending:
        return None
    deltas = [_tx(op, arg) for op, arg in ops]
    low = state.tx + sum(d for d in deltas if d < 0)
    high = state.tx + sum(d for d in deltas if d > 0)
    if low < -MAX_COUNT or high > MAX_COUNT:
        return None
    tx = state.tx + sum(deltas)
    completes = arriving == state.pending and tx == 0
    no_complete = [op for op, _ in ops if op == Op.NO_COMPLETE]
    if no_complete and (completes or sum(op in ARRIVALS for op, _ in ops) > 1):
        return None
    if arriving == state.pending:
        # Every order ends its arrivals some time; after them only the round's pure tx changes
        # remain, in any subset: none but all of them may leave the tx-count at zero or below.
        base = state.tx + sum(d for (op, _), d in zip(ops, deltas, strict=True) if op in ARRIVALS)
        pure = [d for (op, _), d in zip(ops, deltas, strict=True) if op not in ARRIVALS]
        if len(pure) > 6:
            return None
        for k in range(len(pure)):
            if any(base + sum(c) <= 0 for c in combinations(pure, k)):
                return None
        if tx < 0:
            return None
    if completes:
        return Barrier(state.phase + 1, state.expected, state.expected, 0)
    return replace(state, pending=state.pending - arriving, tx=tx)


def _split(rng: np.random.Generator, total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` positive integers (``parts <= total``)."""
    cuts: set[int] = set()
    while len(cuts) < parts - 1:  # distinct cut points in 1 .. total - 1
        cuts.update(int(c) for c in rng.integers(1, total, parts - 1 - len(cuts)))
    edges = [0, *sorted(cuts), total]
    return [b - a for a, b in pairwise(edges)]


def _arrive(rng: np.random.Generator, total: int, ops: Sequence[Op], tx: int) -> list[tuple[Op, int]]:
    """``total`` arrivals over as many threads as the form's arrival ops allow (at most all of
    them); arrivals of one may be ``arrive.expect_tx``, their tx-counts raising ``tx`` to zero
    or above now and then."""
    counted = Op.ARRIVE_COUNT in ops
    threads = min(total, THREADS) if not counted else int(rng.integers(1, min(total, THREADS) + 1))
    if not counted and total > THREADS:
        return []
    out: list[tuple[Op, int]] = []
    for part in _split(rng, total, threads):
        if part > 1:
            out.append((Op.ARRIVE_COUNT, part))
            continue
        ones = [o for o in (Op.ARRIVE, Op.ARRIVE_COUNT, Op.ARRIVE_EXPECT_TX) if o in ops]
        op = ones[int(rng.integers(0, len(ones)))] if ones else Op.ARRIVE_COUNT
        out.append((op, 1 if op != Op.ARRIVE_EXPECT_TX else int(rng.integers(1, TX_SMALL))))
    with_tx = [i for i, (op, _) in enumerate(out) if op == Op.ARRIVE_EXPECT_TX]
    if with_tx and tx < 0 and rng.random() < 0.5:
        # the copy's bytes came before its expect_tx: the arrivals bring the tx-count back
        rest = sum(out[i][1] for i in with_tx[1:])
        if 1 <= -tx - rest <= MAX_COUNT:
            out[with_tx[0]] = (Op.ARRIVE_EXPECT_TX, -tx - rest)
    return out


def _tx_change(rng: np.random.Generator, state: Barrier, op: Op) -> list[tuple[Op, int]]:
    """One to three ``expect_tx`` or ``complete_tx``; with no arrival pending, now and then the
    ones that bring the tx-count to exactly zero (and complete the phase)."""
    n = int(rng.integers(1, 4))
    if op == Op.COMPLETE_TX and state.pending == 0 and state.tx > 0 and rng.random() < 0.6:
        return [(op, p) for p in _split(rng, state.tx, min(n, state.tx))]
    if op == Op.EXPECT_TX and state.tx < 0 and rng.random() < 0.6:
        return [(op, p) for p in _split(rng, -state.tx, min(n, -state.tx))]
    big = rng.random() < 0.1
    return [(op, int(rng.integers(1, MAX_COUNT // 4 if big else TX_SMALL))) for _ in range(n)]


def propose_round(rng: np.random.Generator, state: Barrier, ops: Sequence[Op]) -> list[tuple[Op, int]]:
    """A round's operations drawn for ``state`` from the form's ``ops`` (threads not yet chosen);
    :func:`after_round` decides whether it is one with a defined outcome."""
    moves = ["none"]
    if any(o in ops for o in (Op.ARRIVE, Op.ARRIVE_COUNT, Op.ARRIVE_EXPECT_TX)) and state.pending:
        moves += ["finish"] * 4 + ["part"] * 2
    if Op.NO_COMPLETE in ops and state.pending > 1:
        moves += ["no_complete"] * 3
    moves += [o.name for o in (Op.EXPECT_TX, Op.COMPLETE_TX) if o in ops for _ in range(2)]
    move = moves[int(rng.integers(0, len(moves)))]
    if move == "finish":
        out = _arrive(rng, state.pending, ops, state.tx)
        tx = [o for o in (Op.EXPECT_TX, Op.COMPLETE_TX) if o in ops]
        if tx and rng.random() < 0.3:  # a transaction change in the round that completes the phase
            out += _tx_change(rng, state, tx[int(rng.integers(0, len(tx)))])[:1]
        return out
    if move == "part":
        return _arrive(rng, int(rng.integers(1, state.pending)), ops, state.tx) if state.pending > 1 else []
    if move == "no_complete":
        n = int(rng.integers(1, state.pending)) if rng.random() < 0.8 else state.pending - 1
        return [(Op.NO_COMPLETE, n)]
    if move == "none":
        return []
    return _tx_change(rng, state, Op[move])


def sequence_case(
    rng: np.random.Generator, expected: int, ops: Sequence[Op], steps: int = STEPS
) -> np.ndarray:
    """The input words of one case (``THREADS x IN_SLOTS``): the expected count in every row,
    then each round's op word and operand of each thread, rounds drawn until one has a defined
    outcome (a round of no-ops, after a few tries)."""
    rows = np.zeros((THREADS, 1 + 2 * steps), dtype=np.uint64)
    rows[:, 0] = expected
    state = Barrier(0, expected, expected)
    token = [-1] * THREADS  # the phase of each thread's last arrival (-1: none yet)
    for step in range(steps):
        actions: list[Action] = []
        new = state
        for _ in range(24):
            drawn = propose_round(rng, state, ops)
            if len(drawn) > THREADS:
                continue
            threads = rng.choice(THREADS, len(drawn), replace=False)
            actions = [(int(t), op, arg) for t, (op, arg) in zip(threads, drawn, strict=True)]
            got = after_round(state, actions)
            if got is not None:
                new = got
                break
        else:
            actions, new = [], state
        for t, op, arg in actions:
            rows[t, 1 + 2 * step], rows[t, 2 + 2 * step] = int(op), arg
            if op in ARRIVALS:
                token[t] = state.phase
        for t in range(THREADS):
            if token[t] >= 0 and token[t] >= new.phase - 1:
                rows[t, 1 + 2 * step] |= np.uint64(TOKEN_FLAG)
        state = new
    return rows


def observations(inputs: np.ndarray, observes: frozenset[str], steps: int = STEPS) -> np.ndarray:
    """The output words the PTX ISA gives for cases of input words (``cases * THREADS`` rows):
    each round's wait word (bits :data:`WAIT_BITS` of the waits in ``observes``;
    ``test_parity`` always) and pending word (``pending_count`` of the thread's ``noComplete``
    token, the arrivals pending before it, where ``pending`` is observed; else
    :data:`NO_PENDING`). Computed from the words alone: the reference the model is held to. The
    PTX ISA does not say whether a token's pending count is the one before or after its own
    arrival; an H100 gives the one before (2026-12-06, ``datasets/validation/sm_90a``)."""
    x = np.asarray(inputs, dtype=np.uint64)
    out = np.zeros((len(x), 2 * steps), dtype=np.uint64)
    for first in range(0, len(x), THREADS):
        case = x[first : first + THREADS]
        state = Barrier(0, int(case[0, 0]), int(case[0, 0]))
        token = np.full(THREADS, -1, dtype=np.int64)
        for step in range(steps):
            words = case[:, 1 + 2 * step].astype(np.int64)
            codes, args = words & 0xFF, case[:, 2 + 2 * step].astype(np.int64)
            actions = [(t, Op(int(codes[t])), int(args[t])) for t in range(THREADS) if codes[t]]
            new = after_round(state, actions)
            if new is None:
                raise ValueError(f"case {first // THREADS}, step {step}: a round without a defined outcome")
            waits = np.zeros(THREADS, dtype=np.uint64)
            for p in (0, 1):
                done = np.uint64(int(p != new.phase % 2))  # the current phase's parity is not done
                for name in ("test_parity", "try_parity"):
                    if name == "test_parity" or name in observes:
                        waits |= done << np.uint64(WAIT_BITS[name] + p)
            pending = np.full(THREADS, NO_PENDING, dtype=np.uint64)
            for t, op, _ in actions:
                if op in ARRIVALS:
                    token[t] = state.phase
                if op == Op.NO_COMPLETE and "pending" in observes:
                    pending[t] = state.pending  # a noComplete is its round's only arrival
            flagged = (words & TOKEN_FLAG) != 0
            done_token = (flagged & (token >= 0) & (token < new.phase)).astype(np.uint64)
            for name in ("test_token", "try_token"):
                if name in observes:
                    waits |= done_token << np.uint64(WAIT_BITS[name])
            out[first : first + THREADS, 2 * step] = waits
            out[first : first + THREADS, 2 * step + 1] = pending
            state = new
    return out
