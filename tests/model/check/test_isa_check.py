"""check-isa on the shipped machine, and that it catches broken declarations."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from karyamorph.model.check.isa_check import check_isa
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.instruction import Exec, Instr, Law, Slot
from karyamorph.model.semantics.types import U32

M = ptx_machine()


def test_the_shipped_isa_is_all_green() -> None:
    results = check_isa(M, samples=16)
    failures = [r for r in results if r.status == "fail"]
    assert failures == []
    counts = Counter((r.check, r.status) for r in results)
    assert counts[("frame", "pass")] > 800 and counts[("agreement", "pass")] > 800
    assert counts[("law", "pass")] >= 40 and counts[("bound", "pass")] == 5
    skipped = {r.form for r in results if r.status == "skip"}
    # Skips are only hardware approximations and f64 directed rounding, each with its reason.
    assert all("approx" in f or "full" in f or "f64" in f for f in skipped), skipped
    assert all(r.detail for r in results if r.status == "skip")


def test_a_semantics_writing_a_source_fails_the_frame_check() -> None:
    def bad(x: Exec) -> None:
        x.write("d", x.read("a", U32), U32)
        x.write("a", x.D.const(0, 32), U32)

    m = M.with_instructions(Instr("scribble", ("b32",), (Slot("d", dest=True), Slot("a")), bad))
    frame = [r for r in check_isa(m, only=["scribble"]) if r.check == "frame"]
    assert frame and all(r.status == "fail" and "writes ['a', 'd']" in r.detail for r in frame)


def test_a_memory_hook_in_a_compute_instruction_fails() -> None:
    def sneaky(x: Exec) -> None:
        x.write("d", x.load("global", x.read("a", U32), 32, U32), U32)

    m = M.with_instructions(Instr("sneaky", ("b32",), (Slot("d", dest=True), Slot("a")), sneaky))
    (r,) = check_isa(m, only=["sneaky"])
    assert r.status == "fail" and "hook" in r.detail


def test_a_wrong_law_is_refuted_with_a_counterexample() -> None:
    wrong = Law(
        "sub(a, b) == sub(b, a)",
        ("u32",),
        2,
        lambda run, D, t, a, b: (run("sub.u32", a, b), run("sub.u32", b, a)),
    )
    sub = next(i for i in M.instructions if i.name == "sub")
    m = M.with_instructions(replace(sub, laws=(wrong,)))
    failed = [r for r in check_isa(m, only=["sub"]) if r.status == "fail"]
    assert (
        len(failed) == 1
        and failed[0].check == "law"
        and "refuted: sub(a, b) == sub(b, a)" in failed[0].detail
    )
    assert "counterexample" in failed[0].detail


def test_a_concrete_symbolic_disagreement_is_found() -> None:
    def split(x: Exec) -> None:  # a semantics that means something else in numpy than in z3
        one = x.D.const(0 if x.D.name == "concrete" else 1, 32)
        x.write("d", x.D.add(x.read("a", U32), one, 32), U32)

    m = M.with_instructions(Instr("inc", ("u32",), (Slot("d", dest=True), Slot("a")), split))
    (frame, agreement) = check_isa(m, only=["inc"])
    assert frame.status == "pass"
    assert agreement.status == "fail" and "mismatches; first: d: concrete 0x" in agreement.detail
