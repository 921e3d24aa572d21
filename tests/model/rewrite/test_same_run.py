"""The same-run proof of a rewrite: the two programs the model prepares are compared, and only
words its semantics drop (cache operators, performance directives that admit the launch) may
differ."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa.parser import parse
from karyamorph.model.interp.program import prepare
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.rewrite.edits import add_attribute
from karyamorph.model.rewrite.same_run import run_difference

VADD = Path(__file__).resolve().parents[3] / "datasets/kernels/vadd.ptx"
MACHINE = ptx_machine("sm_80")
BLOCK = (256, 1, 1)


def _with(name: str, values: tuple[int, ...]) -> str | None:
    module = parse(VADD.read_text(), "vadd.ptx")
    edited = add_attribute(module, "vadd", name, values)
    return run_difference(prepare(module, "vadd", MACHINE), prepare(edited, "vadd", MACHINE), BLOCK)


def test_directives_that_admit_the_launch_are_the_same_run() -> None:
    assert _with("maxnreg", (32,)) is None
    assert _with("reqntid", (256,)) is None
    assert _with("maxntid", (512, 1, 1)) is None


def test_a_block_directive_that_refuses_the_launch_is_a_difference() -> None:
    said = "the entry's .reqntid (128,) does not admit the launch's block (256, 1, 1)"
    assert _with("reqntid", (128,)) == said
    assert _with("maxntid", (128,)) is not None


def test_a_directive_the_model_reads_is_a_difference() -> None:
    assert _with("reqnctapercluster", (2, 1, 1)) == "the entry's .reqnctapercluster differs"


def test_a_changed_instruction_is_named_by_its_line() -> None:
    text = VADD.read_text()
    module, edited = parse(text, "vadd.ptx"), parse(text.replace("add.rn.f32", "sub.rn.f32"), "vadd.ptx")
    got = run_difference(prepare(module, "vadd", MACHINE), prepare(edited, "vadd", MACHINE), BLOCK)
    assert got == "line 50 (add) runs differently after the edit (line 50)"


def test_a_memory_order_the_decoder_drops_too_is_still_a_difference() -> None:
    """``.relaxed.gpu`` and ``.volatile`` decode as the plain load does, but an edit of a memory
    order is not a cache policy: not the same run."""
    text = VADD.read_text()
    module = parse(text, "vadd.ptx")
    for words in ("ld.relaxed.gpu.global.f32", "ld.volatile.global.f32"):
        edited = parse(text.replace("ld.global.f32       %x", f"{words} %x", 1), "vadd.ptx")
        got = run_difference(prepare(module, "vadd", MACHINE), prepare(edited, "vadd", MACHINE), BLOCK)
        assert got is not None and "changes more than its cache policy" in got, got
    cached = parse(text.replace("ld.global.f32       %x", "ld.global.cs.f32 %x", 1), "vadd.ptx")
    assert run_difference(prepare(module, "vadd", MACHINE), prepare(cached, "vadd", MACHINE), BLOCK) is None
