"""GPUVerify's expected verdicts for the translated test kernels, and what the checker answers."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_spec

HERE = Path(__file__).resolve().parent
FAILURES = ("race", "barrier", "bounds")
"""The failure kinds, in the order an outcome names them."""
DEADLINE_S = 20.0
"""Seconds each property may take before it is left ``unknown``."""
RACE_BARRIER = ("race", "barrier")
ALL = ("bounds", "race", "barrier")


@dataclass(frozen=True, slots=True)
class Row:
    """One kernel: GPUVerify's verdict and how the checker is asked and answers.

    Attributes
    ----------
    name : str
        The spec ``<name>.toml`` beside this file.
    expected : str
        GPUVerify's header: ``pass``, or the failure it reports (``race``, ``barrier``,
        ``bounds``).
    ours : str
        What the checker answers: ``pass``, a failure kind, or ``unknown``. Equal to
        ``expected`` unless ``reason`` says what the model lacks.
    properties : tuple of str
        The properties GPUVerify checks for this test: races and barrier divergence by default,
        bounds only under ``--check-array-bounds``, barriers only under ``--only-divergence``.
    scheduling : str or None
        ``lockstep`` for GPUVerify's ``--warp-sync=32`` (warps run in lockstep).
    strict : bool
        Same-value writes count as races (GPUVerify's ``--no-benign-tolerance``).
    equality : bool
        GPUVerify's ``--equality-abstraction``: two threads' reads of one word agree, so a
        same-value write of loaded values is benign. Without it GPUVerify's reads are the
        thread's own, and so are the checker's in the same-value proof (``loads_agree``).
    heavy : bool
        Slow on two cores: run in ``benchmarks/gpuverify.py`` only.
    reason : str
        Why ``ours`` differs from ``expected``.
    """

    name: str
    expected: str
    ours: str
    properties: tuple[str, ...] = RACE_BARRIER
    scheduling: str | None = None
    strict: bool = False
    equality: bool = False
    heavy: bool = False
    reason: str = ""

    @property
    def spec(self) -> Path:
        return HERE / f"{self.name}.toml"

    @property
    def missed(self) -> bool:
        """The checker proves a kernel GPUVerify expects to fail."""
        return self.expected != "pass" and self.ours == "pass"

    @property
    def false_alarm(self) -> bool:
        """The checker reports a failure where GPUVerify proves the kernel."""
        return self.expected == "pass" and self.ours in FAILURES


_ATOMIC = "the index comes from an atomic's return value, which the two-thread abstraction leaves free"
_LOADED = "the value decides an access and is loaded from memory the kernel writes: left free"

ROWS: tuple[Row, ...] = (
    # CUDA tests
    Row("race_on_shared", "race", "race"),
    Row("shared_int", "race", "race"),
    Row("atomic_add_one", "pass", "pass"),
    Row(
        "atomic_add_tid",
        "race",
        "unknown",
        reason=_ATOMIC + ": it adds the thread id, not a constant, so it is no ticket",
    ),
    Row("atomic_add_zero", "race", "race"),
    Row("atomic_definitions", "pass", "pass"),
    Row("globalarray_fail", "race", "race"),
    Row("noraceduetoreturn", "pass", "pass"),
    Row("value_causing_race", "race", "race"),
    Row("loop_unwind", "race", "race"),
    Row("inline_offset_race", "race", "race"),
    Row("pointer_cast_race", "race", "race", heavy=True),
    Row("barrier_uniform_param", "pass", "pass"),
    Row("basicbarrier", "pass", "pass"),
    Row("ctimesgid", "pass", "pass"),
    Row("ctimeslid", "pass", "pass"),
    Row("strided_shared_init", "pass", "pass"),
    Row("volatile_store", "pass", "pass"),
    Row("pointer_choice", "pass", "pass"),
    Row("reduced_strength_blockwise", "pass", "pass"),
    Row(
        "transitive_closure",
        "pass",
        "unknown",
        reason="the branch reads shared memory the kernel writes between barriers; " + _LOADED,
    ),
    Row("warpsync_shuffle", "pass", "pass", scheduling="lockstep"),
    Row("warpsync_scan_warp", "pass", "pass", scheduling="lockstep"),
    Row("warpsync_broken_shuffle", "race", "race"),
    Row("warpsync_bad_inter_group", "race", "race", scheduling="lockstep"),
    Row("first_block_only", "pass", "pass"),
    Row("ternary_index", "pass", "pass"),
    Row("mul24", "pass", "pass"),
    Row("local_through_pointer", "pass", "pass"),
    Row("pointer_store", "pass", "pass"),
    # OpenCL tests, by hand in CUDA C
    Row("writetiddiv64_offbyone", "race", "race"),
    Row("writetiddiv64", "pass", "pass"),
    Row("writezero", "pass", "pass"),
    Row("writezero_nobenign", "race", "race", strict=True),
    Row("writeinloop", "pass", "pass"),
    Row("writewritearray", "pass", "pass", equality=True),
    Row("writeafterread_otherval", "race", "race", equality=True),
    Row("simple_array", "pass", "pass", ALL),
    Row("simple_array_fail_upper", "bounds", "bounds", ALL),
    Row("simple_array_fail_lower", "bounds", "bounds", ALL),
    Row("simple_array_fail_var", "bounds", "bounds", ALL),
    Row("realign_simple_fail", "bounds", "bounds", ALL),
    Row("array_in_array_param", "bounds", "bounds", ALL),
    Row("atomic_read_race", "race", "race"),
    Row("atomic_counter", "pass", "pass"),
    Row("atomic_histo", "pass", "pass"),
    Row("atomic_forloop", "race", "race"),
    Row("bad_local_counters", "race", "race"),
    Row("atomic_predication", "race", "race"),
    Row("barrier_intervals", "pass", "pass"),
    Row("barrier_in_branch", "barrier", "barrier"),
    Row("race_and_divergence", "barrier", "barrier", ("barrier",)),
    Row("race_no_divergence", "pass", "pass", ("barrier",)),
    Row("struct_member_race", "race", "race"),
    Row("vector_store_race", "race", "race"),
    Row("shared_index_race", "race", "race", heavy=True),
    Row("global_accumulate_race", "race", "race"),
    Row("xor_exchange", "pass", "pass"),
    Row("scan_missing_barrier", "race", "race"),
    Row("shared_increment", "race", "race", equality=True, heavy=True),
    Row("report_global_id", "race", "race"),
    Row("induction_variable", "pass", "pass"),
    Row("global_id_loop", "pass", "pass"),
    Row("local_id_loop", "pass", "pass"),
    Row("shared_2d", "pass", "pass"),
    Row("tree_reduction", "pass", "pass"),
    Row("global_read_write", "pass", "pass"),
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The checker's answer on one row: ``pass``, the refuted kinds joined by ``+``, or
    ``unknown``; and the seconds all its properties took."""

    answer: str
    seconds: float


def check_row(row: Row, deadline_s: float = DEADLINE_S) -> Outcome:
    """Check ``row``'s spec for its properties and fold the verdicts into one answer.

    A refutation outranks an unknown (a found bug stands whatever else is open); ``proved`` and
    ``proved-up-to-k`` both count as a pass. GPUVerify lets the host set ``__constant__`` tables
    (their initializers do not count), so every row checks with ``host_constants``; its inputs
    hold any values (a spec's inits fill them for a run only), so no row assumes their ranges.
    """
    start = time.perf_counter()
    verdicts = check_spec(
        *load_bound(row.spec), properties=row.properties, scheduling=row.scheduling,
        deadline_s=deadline_s, strict=row.strict, loads_agree=row.equality,
        host_constants=True, assume_inits=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    refuted = [v.property for v in verdicts if v.verdict == "refuted"]
    if refuted:
        return Outcome("+".join(p for p in FAILURES if p in refuted), seconds)
    if any(v.verdict == "unknown" for v in verdicts):
        return Outcome("unknown", seconds)
    return Outcome("pass", seconds)


def counts(answers: dict[str, str]) -> dict[str, int]:
    """Right verdicts, false alarms, missed bugs and unknowns of ``answers`` (row name ->
    answer) against GPUVerify's."""
    rows = {r.name: r for r in ROWS}
    out = {"kernels": len(answers), "right": 0, "false_alarms": 0, "missed_bugs": 0, "unknown": 0}
    for name, answer in answers.items():
        expected = rows[name].expected
        if answer == "unknown":
            out["unknown"] += 1
        elif expected == "pass":
            out["right" if answer == "pass" else "false_alarms"] += 1
        elif answer == "pass":
            out["missed_bugs"] += 1
        elif expected in answer.split("+"):
            out["right"] += 1
        else:
            out["false_alarms"] += 1  # a failure, but not the one GPUVerify reports
    return out
