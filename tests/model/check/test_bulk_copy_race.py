"""A bulk copy on a one-phase mbarrier in the race check (karyamorph/model/check/mbarrierphase.py):
it lands before what a thread does after its own wait for phase 0 returns true, so nvcc's
``bulk_copy_scale`` (tests/corpus: thread 0 arms the mbarrier with the copy's bytes and issues
it; every thread spins on ``try_wait.parity 0``, then reads the buffer) is race free. Each way
out of the rule is planted: the race is then not proved, and the reason says why; a read
before a successful wait is refuted, confirmed by the interpreter's landing check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "nvcc"
BLOCKS, THREADS, N = 3, 128, 700
SM90 = (CORPUS / "bulk_copy_cluster.sm_90.ptx").read_text()
COPY, READ = 81, 117  # the cp.async.bulk and the ld.shared of buf after the spin loop (sm_90)
ARRIVE = "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r8], %r11;"
BAR = "mov.u32 \t%r14, _ZZ15bulk_copy_scaleE3bar;"  # the waits' address, after the copy


def _race(text: str) -> Verdict:
    buffers = {"bulk_copy_scale_param_0": 4 * BLOCKS * N, "bulk_copy_scale_param_1": 4 * BLOCKS * N}
    scalars: dict[str, int | float] = {"bulk_copy_scale_param_2": 2.5, "bulk_copy_scale_param_3": N}
    (v,) = check(
        parse(text), "bulk_copy_scale", ptx_machine("sm_90"), (BLOCKS, THREADS, 0), buffers, scalars,
        properties=("race",),
    )  # fmt: skip
    return v


@pytest.mark.parametrize("build", ["bulk_copy_cluster.sm_90.ptx", "bulk_copy_cluster.sm_120.ptx"])
def test_the_copy_lands_before_the_reads_after_the_wait(build: str) -> None:
    v = _race((CORPUS / build).read_text())
    # (the spin loop is unrolled: its exit hangs on the mbarrier's state)
    assert v.verdict == "proved-up-to-k", v
    assert "bulk copies" not in v.reason and "mbarrier waits" not in v.reason, v.reason


def _planted(old: str, new: str) -> str:
    assert SM90.count(old) == 1, old
    return SM90.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("mov.u32 \t%r15, 0;", "mov.u32 \t%r15, 1;"),  # waits for parity 1: returns at once
        ("@%p3 bra \t$L__BB0_5;", ""),  # one try, whatever it returns
    ],
    ids=["parity-1", "no-spin"],
)
def test_reading_without_a_successful_parity_0_wait_is_refuted(old: str, new: str) -> None:
    v = _race(_planted(old, new))
    assert v.verdict == "refuted" and v.witness is not None, v
    assert set(v.witness.lines) == {READ, COPY}, v.witness
    # the interpreter's landing check sees a read of the buffer before the copy lands there
    assert v.replay is not None and v.replay.status == "confirmed" and v.replay.landed, v.replay


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (ARRIVE, ARRIVE.replace("%r11", "16"), "expects fewer bytes than the 2800 its thread's copies"),
        ("@%p1 bra \t$L__BB0_4;", "", "up to 128 arrivals on it, past its count of 1"),
        ("mbarrier.init.shared::cta.b64 [%r7], 1;", "mbarrier.init.shared::cta.b64 [%r7], 1;\n\t"
         "mbarrier.init.shared::cta.b64 [%r7], 1;", "2 mbarrier.init on it in the trace, not one"),
        (BAR, f"{BAR}\n\tst.shared.u64 [%r14], 0;", "touches its word"),
    ],
    ids=["too-few-bytes", "every-thread-arrives", "two-inits", "a-store-to-its-word"],
)  # fmt: skip
def test_an_mbarrier_outside_the_one_phase_rule_leaves_the_copy_untracked(
    old: str, new: str, why: str
) -> None:
    v = _race(_planted(old, new))
    assert v.verdict != "proved" and v.verdict != "proved-up-to-k", v
    copy = COPY + (new.count("\n") if old != BAR else 0)  # (lines planted before the copy)
    assert f"bulk copies at line(s) {copy}" in v.reason and why in v.reason, v.reason


def _only_thread_0_waits(then: str) -> str:
    """The build with threads other than 0 skipping the spin loop, all meeting at ``then``."""
    text = _planted("$L__BB0_5:", "@%p1 bra \t$L__SKIP;\n$L__BB0_5:")
    assert text.count("@%p3 bra \t$L__BB0_5;") == 1
    return text.replace("@%p3 bra \t$L__BB0_5;", f"@%p3 bra \t$L__BB0_5;\n$L__SKIP:\n{then}")


def test_a_barrier_after_the_copying_threads_wait_orders_the_copy_for_every_thread() -> None:
    # Thread 0 alone waits for phase 0, then the block meets at bar.sync: the copy has landed
    # before what any thread does after the barrier.
    v = _race(_only_thread_0_waits("\tbar.sync \t0;"))
    assert v.verdict == "proved-up-to-k", v
    v = _race(_only_thread_0_waits(""))  # the other threads read the buffer at once
    assert v.verdict == "refuted" and v.witness is not None, v
    assert COPY in v.witness.lines and v.replay is not None and v.replay.landed, (v.witness, v.replay)
