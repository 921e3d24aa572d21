"""``mbarrier`` validation (sm_90 and later): phase-sequence kernels, their rounds, the model's
observations and the comparison.

The rounds are held to an operation-at-a-time mbarrier written here from the PTX ISA's words (a
phase completes when its pending arrivals and its tx-count are both zero; the pending count is
then reloaded and the parity flips), run in many orders of the round's threads; the model's
observations are held to :func:`~karyamorph.validation.mbarrier_sequences.observations`, which
reads only the input words.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.validate import GpuOutput, KernelJob
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx import mbarrier
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.forms import MBARRIER_REASON, enumerate_forms
from karyamorph.validation.mbarrier_forms import (
    INVAL_REASON,
    MbarrierForm,
    enumerate_mbarrier,
    mbarrier_cases,
)
from karyamorph.validation.mbarrier_kernel import build_mbarrier_kernel
from karyamorph.validation.mbarrier_run import MbarrierRun, compare_mbarrier, model_words, plan_mbarrier
from karyamorph.validation.mbarrier_sequences import (
    ARRIVALS,
    MAX_COUNT,
    NO_PENDING,
    STEPS,
    THREADS,
    TOKEN_FLAG,
    Action,
    Barrier,
    Op,
    after_round,
    observations,
)
from karyamorph.validation.recording import read_recording, replay, write_recording
from karyamorph.validation.validate import ValidationReport, report_text, validate
from tests.validation.emulator import emulator

M = ptx_machine()
FORMS = enumerate_mbarrier(M, "sm_90").forms
BY_KEY = {f.key: f for f in FORMS}


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def rounds(x: np.ndarray) -> list[tuple[int, Barrier, list[Action]]]:
    """Every round of every case of input words: the case, the state before it, its actions."""
    out = []
    for c in range(len(x) // THREADS):
        case = x[c * THREADS : (c + 1) * THREADS]
        state: Barrier | None = Barrier(0, int(case[0, 0]), int(case[0, 0]))
        for step in range(STEPS):
            codes = case[:, 1 + 2 * step].astype(np.int64) & 0xFF
            args = case[:, 2 + 2 * step].astype(np.int64)
            actions = [(t, Op(int(codes[t])), int(args[t])) for t in range(THREADS) if codes[t]]
            assert state is not None
            out.append((c, state, actions))
            state = after_round(state, actions)
    return out


def one_at_a_time(state: Barrier, actions: list[Action]) -> tuple[Any, ...]:
    """The round run one operation after another: the final state, each arriving thread's token
    phase, each ``noComplete`` thread's pending count, and at which operations phases completed;
    an undefined step (more arrivals than pending, a ``noComplete`` completing the phase, no
    arrival pending with a negative tx-count) raises."""
    phase, pending, tx = state.phase, state.pending, state.tx
    tokens, pendings, completed = {}, {}, []
    for i, (t, op, arg) in enumerate(actions):
        arrivals = arg if op in (Op.ARRIVE_COUNT, Op.NO_COMPLETE) else int(op in ARRIVALS)
        if arrivals > pending:
            raise AssertionError("more arrivals than pending")
        pending -= arrivals
        tx += {Op.EXPECT_TX: arg, Op.ARRIVE_EXPECT_TX: arg, Op.COMPLETE_TX: -arg}.get(op, 0)
        if op in ARRIVALS:
            tokens[t] = phase
        if op == Op.NO_COMPLETE:
            pendings[t] = pending
        if pending == 0 and tx == 0:
            if op == Op.NO_COMPLETE:
                raise AssertionError("noComplete completed the phase")
            phase, pending, tx = phase + 1, state.expected, 0
            completed.append(i)
        elif pending == 0 and tx < 0:
            raise AssertionError("no arrival pending and a negative tx-count")
        if abs(tx) > MAX_COUNT:
            raise AssertionError("tx-count out of range")
    return (phase, pending, tx), tokens, pendings, completed


def test_every_form_has_a_kernel_for_sm_90_and_later() -> None:
    plan = plan_mbarrier(M, "sm_90", toolchain())
    keys = [a.kernel.forms[0].key for _, a in plan.assembled if a.kernel is not None]
    assert len(keys) == 11 and plan.rejected == () and keys == [f.key for f in FORMS]
    assert all(a.cubin[:4] == b"\x7fELF" for _, a in plan.assembled)
    inval = ("mbarrier.inval.shared::cta.b64 [addr]", INVAL_REASON)
    assert [(u.name, u.reason) for u in plan.unvalidated] == [inval]
    assert [f.key for f in enumerate_mbarrier(M, "sm_120", "mbarrier.try_wait*").forms] == [
        "mbarrier.try_wait.parity.shared::cta.b64 waitComplete,[addr],phaseParity",
        "mbarrier.try_wait.shared::cta.b64 waitComplete,[addr],state",
    ]
    assert enumerate_mbarrier(M, "sm_90", "max").forms == () and enumerate_mbarrier(M, "sm_80").forms == ()
    left = {u.name: u.reason for u in enumerate_forms(M, "sm_80", "mbarrier*").unvalidated}
    assert left["mbarrier.arrive"] == left["mbarrier.pending_count"] == MBARRIER_REASON
    assert not any(u.name.startswith("mbarrier") for u in enumerate_forms(M, "sm_90").unvalidated)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.key.split(" ")[0])
def test_every_round_has_one_outcome_in_every_order(form: MbarrierForm) -> None:
    """The rounds drawn are those whose threads may act in any order: run one operation at a
    time in 24 orders, each ends in the same state, tokens and pending counts, the phase
    completing (if at all) with the last operation, as :func:`after_round` says."""
    rng = np.random.default_rng(0)
    for case, state, actions in rounds(mbarrier_cases(form)):
        new = after_round(state, actions)
        assert new is not None, (case, state, actions)
        shuffled = (rng.permutation(len(actions)) for _ in range(22))
        orders = [actions, actions[::-1], *([actions[i] for i in order] for order in shuffled)]
        outcomes = [one_at_a_time(state, order) for order in orders]
        final, tokens, pendings, _ = outcomes[0]
        assert final == (new.phase, new.pending, new.tx)
        assert all(o[:3] == (final, tokens, pendings) for o in outcomes), (case, state, actions)
        assert all(o[3] in ([], [len(actions) - 1]) for o in outcomes)
        assert set(tokens.values()) <= {state.phase}


def test_a_round_whose_outcome_depends_on_the_order_is_not_drawn() -> None:
    start = Barrier(0, 4, 4)
    assert after_round(start, [(0, Op.ARRIVE_COUNT, 4)]) == Barrier(1, 4, 4, 0)
    assert after_round(start, [(0, Op.ARRIVE_COUNT, 5)]) is None  # more arrivals than pending
    assert after_round(start, [(0, Op.NO_COMPLETE, 4)]) is None  # noComplete completing the phase
    assert after_round(start, [(0, Op.NO_COMPLETE, 1), (1, Op.ARRIVE, 0)]) is None  # its pending count
    assert after_round(start, [(0, Op.COMPLETE_TX, 8)]) == Barrier(0, 4, 4, -8)  # allowed: arrivals pending
    waiting = Barrier(0, 0, 4, 8)  # every arrival made, 8 bytes to come
    assert after_round(waiting, [(0, Op.COMPLETE_TX, 8)]) == Barrier(1, 4, 4, 0)
    assert after_round(waiting, [(0, Op.COMPLETE_TX, 8), (1, Op.EXPECT_TX, 4)]) is None  # may complete early
    assert after_round(waiting, [(0, Op.COMPLETE_TX, 9), (1, Op.EXPECT_TX, 1)]) is None  # may go negative
    assert after_round(Barrier(0, 1, 4, -8), [(0, Op.ARRIVE, 0)]) is None  # all arrived, tx-count negative
    assert after_round(Barrier(0, 1, 4, -8), [(0, Op.ARRIVE_EXPECT_TX, 8)]) == Barrier(1, 4, 4, 0)
    assert after_round(start, [(0, Op.EXPECT_TX, 0)]) is None  # a txCount of zero


def test_the_cases_exercise_what_the_forms_are_for() -> None:
    """Several phases in a row, all 128 threads arriving, phases completed by the tx-count after
    the arrivals, complete_tx before expect_tx, noComplete tokens, tokens too old to wait on."""
    for form in FORMS:
        x = mbarrier_cases(form)
        seen = rounds(x)
        phases = [after_round(s, a).phase > s.phase for _, s, a in seen]  # type: ignore[union-attr]
        per_case = np.array(phases).reshape(-1, STEPS).sum(axis=1)
        assert per_case.max() >= 2 and x[0, 0] == THREADS, form.key
        ops = {op for _, _, a in seen for _, op, _ in a}
        assert ops == set(form.ops), form.key
        if Op.COMPLETE_TX in form.ops:
            by_tx = [done and all(op == Op.COMPLETE_TX for _, op, _ in a)
                     for done, (_, _, a) in zip(phases, seen, strict=True)]  # fmt: skip
            assert any(by_tx) and any(s.tx < 0 for _, s, _ in seen), form.key
        if Op.ARRIVE_COUNT in form.ops:
            assert MAX_COUNT in x[:, 0], form.key
    arrive = BY_KEY["mbarrier.arrive.shared::cta.b64 state,[addr]"]
    assert max(len(a) for _, _, a in rounds(mbarrier_cases(arrive))) == THREADS
    token = BY_KEY["mbarrier.test_wait.shared::cta.b64 waitComplete,[addr],state"]
    x = mbarrier_cases(token)
    flags = (x[:, 1::2] & np.uint64(TOKEN_FLAG)) != 0
    assert flags.any() and (flags[:, :-1] & ~flags[:, 1:]).any()  # a token that grew too old


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.key.split(" ")[0])
def test_the_models_observations_are_the_isas(form: MbarrierForm) -> None:
    x = mbarrier_cases(form)
    model = model_words(form, M, x, "sm_90")
    want = observations(x, form.observes)
    assert np.array_equal(model, want)
    waits = want[:, 0::2]
    assert (waits & 1).any() and (waits & 2).any() and not ((waits & 3) == 3).any()  # one parity done
    if "pending" in form.observes:
        assert (want[:, 1::2] != NO_PENDING).any()
    else:
        assert (want[:, 1::2] == NO_PENDING).all()


def test_the_models_observations_do_not_depend_on_the_order_of_warps() -> None:
    form = BY_KEY["mbarrier.try_wait.shared::cta.b64 waitComplete,[addr],state"]
    x = mbarrier_cases(form, cases=3)
    kernel = build_mbarrier_kernel(form, 3, "sm_90")
    for seed in (1, 2):
        out = np.zeros((kernel.rows, kernel.out_slots), dtype=np.uint64)
        args = {"inp": kernel.inputs([x]), "out": out, "rows": np.uint32(kernel.rows)}
        launch = (3, THREADS, 0)
        got = interpret(parse(kernel.ptx), kernel.entry, M, launch, args, randomize_order=True, seed=seed)
        words = kernel.outputs(np.asarray(got.outputs["out"]).reshape(kernel.rows, -1))[0]
        assert np.array_equal(words, observations(x, form.observes)), seed


def test_validation_with_the_model_as_the_gpu_agrees() -> None:
    report = validate(M, "sm_90", emulator(M), toolchain(), only="mbarrier*")
    assert [(r.form, r.status, r.cases) for r in report.results] == [(f.key, "pass", 6) for f in FORMS]
    assert report.by_instruction() == [("mbarrier", 11, 11, 0, 0, 0, 0, 66, 0, 0, 0.0)]
    assert [u.name for u in report.unvalidated] == ["mbarrier.inval.shared::cta.b64 [addr]"]
    assert len(report.sequences) == 11 and report.sequences[0].gpu.shape == (6 * THREADS, 2 * STEPS)


def _no_reload(d: Any, old: Any, arrivals: Any, tx_delta: Any) -> Any:
    """A slip: a completed phase flips its parity but leaves the pending count at zero."""
    f, b = mbarrier.field, mbarrier
    new = _HONEST_UPDATE(d, old, arrivals, tx_delta)
    left = d.and_(d.sub(f(d, old, b.PENDING), arrivals, 64), d.const(b.MAX_COUNT, 64), 64)
    return b.pack(d, f(d, new, b.PHASE), left, f(d, new, b.EXPECTED), f(d, new, b.TX))


def _one_arrival_taken(d: Any, old: Any) -> Any:
    """A slip: arrive's token holds one arrival fewer pending than the state before it (the
    reading an H100 refuted: the count after the arrival, for a count of 1)."""
    f, b = mbarrier.field, mbarrier
    pending = d.sub(f(d, old, b.PENDING), d.const(1, 64), 64)
    return b.pack(d, f(d, old, b.PHASE), pending, f(d, old, b.EXPECTED), f(d, old, b.TX))


_HONEST_UPDATE = mbarrier.update


def _slipped_after_the_gpu(monkeypatch: pytest.MonkeyPatch, name: str, slip: Any) -> Any:
    """The honest interpreter plays the GPU; the model that judges it then has ``slip``."""
    honest = emulator(M)

    def run(jobs: list[KernelJob]) -> GpuOutput:
        out = honest(jobs)
        monkeypatch.setattr(mbarrier, name, slip)
        return out

    return run


def test_a_model_that_does_not_reload_the_pending_count_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = _slipped_after_the_gpu(monkeypatch, "update", _no_reload)
    report = validate(M, "sm_90", gpu, toolchain(), only="mbarrier*")
    assert [r.form for r in report.failed] == [f.key for f in FORMS]  # every form completes a phase twice
    row = report.disagreements[0]
    assert row.kind == "value" and row.slot.startswith("step ") and row.gpu != row.model
    assert {"case", "step", "thread", "op", "arg", "expected"} <= set(row.operands)
    case, thread = divmod(row.case, THREADS)
    assert (row.operands["case"], row.operands["thread"]) == (case, thread)
    text = report_text(report)
    assert "FAIL mbarrier." in text and "step=" in text


def test_a_model_whose_token_misreads_the_pending_count_fails_pending_count_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = _slipped_after_the_gpu(monkeypatch, "token", _one_arrival_taken)
    report = validate(M, "sm_90", gpu, toolchain(), only="mbarrier*")
    assert [r.form for r in report.failed] == ["mbarrier.pending_count.b64 count,state"]
    assert all(d.slot.endswith("pending (no_complete)") for d in report.disagreements)
    first = report.disagreements[0]
    assert first.model == first.gpu - 1  # one arrival fewer pending than before the arrival


def test_a_recorded_run_replays_and_a_changed_word_fails(tmp_path: Path) -> None:
    """The recording's plumbing: the model's words stand for the GPU's, written, read back and
    replayed; one flipped bit of a wait word is then a disagreement of one case."""
    form = BY_KEY["mbarrier.arrive.expect_tx.shared::cta.b64 state,[addr],txCount"]
    x = mbarrier_cases(form)
    words = model_words(form, M, x, "sm_90")
    ran = (MbarrierRun(form, x, words),)
    report = ValidationReport("sm_90", (), (), (), params={"date": "today"}, sequences=ran)
    files = write_recording(report, tmp_path)
    assert [p.name for p in files] == ["header.json", "mbarrier.sequences.npz"]
    assert json.loads((tmp_path / "header.json").read_text())["mbarrier_files"] == ["mbarrier.sequences.npz"]
    rec = read_recording(tmp_path)
    assert [r.key for r in rec.sequences] == [form.key] and rec.forms == () and rec.warpgroups == ()
    assert np.array_equal(rec.sequences[0].inputs, x) and np.array_equal(rec.sequences[0].gpu, words)
    (result,) = replay(rec, M).results
    assert result.status == "pass" and result.cases == 6
    flipped = words.copy()
    flipped[3 * THREADS + 7, 2 * 5] ^= np.uint64(1)
    write_recording(dataclasses.replace(report, sequences=(MbarrierRun(form, x, flipped),)), tmp_path)
    again = replay(read_recording(tmp_path), M)
    (result,) = again.results
    assert result.status == "fail" and result.disagreements == 1
    (row,) = again.disagreements
    assert (row.operands["case"], row.operands["step"], row.operands["thread"]) == (3, 5, 7)
    assert row.slot.startswith("step 5 waits")


def test_a_recording_made_before_mbarrier_forms_has_none(tmp_path: Path) -> None:
    write_recording(ValidationReport("sm_90", (), (), (), params={"date": "today"}), tmp_path)
    header = json.loads((tmp_path / "header.json").read_text())
    del header["mbarrier_files"]
    (tmp_path / "header.json").write_text(json.dumps(header))
    assert read_recording(tmp_path).sequences == ()


def test_compare_names_an_unstable_word() -> None:
    form = BY_KEY["mbarrier.arrive.shared::cta.b64 state,[addr]"]
    x = mbarrier_cases(form, cases=1)
    words = observations(x, form.observes)
    again = words.copy()
    again[5, 3] ^= np.uint64(1 << 31)
    result, rows = compare_mbarrier(form, x, words, words, again)
    assert result.status == "fail" and result.disagreements == 1
    op = Op(int(x[5, 1 + 2 * 1]) & 0xFF).name.lower()  # thread 5's operation in round 1
    assert [(r.kind, r.slot) for r in rows] == [("unstable", f"step 1 pending ({op})")]


def test_the_cli_lists_the_mbarrier_kernels_and_what_it_leaves_out() -> None:
    toolchain()
    runner = CliRunner()
    args = ["model", "validate", "--compile-only", "--instr", "mbarrier*"]
    result = runner.invoke(main, [*args, "--arch", "sm_90", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["instruction"]: r for r in json.loads(result.stdout)}
    assert list(rows) == [f.key for f in FORMS] and all(r["rows"] == 6 * THREADS for r in rows.values())
    table = runner.invoke(main, [*args, "--arch", "sm_90"])
    assert table.exit_code == 0 and "not validated on sm_90: 1 (mbarrier.inval" in table.stderr
    old = runner.invoke(main, [*args, "--arch", "sm_80"])
    assert old.exit_code == 0 and "mbarrier.arrive" not in old.stdout
    assert "not validated on sm_80: 11 (mbarrier.init, mbarrier.arrive" in old.stderr
