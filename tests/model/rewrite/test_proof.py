"""The model's proof of a rewrite: side condition, then bounded equivalence with the original at
the check sizes. Sound rewrites of shipped kernels are proved; planted unsound ones (``.nc`` on a
buffer the kernel writes, a block size a kernel hard-codes) are rejected with a witness."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from karyamorph.isa import ast
from karyamorph.kernel.loader import load_spec
from karyamorph.model.rewrite import (
    REWRITES,
    Condition,
    Rewrite,
    Target,
    prove,
    rewrite_named,
    rewritten_spec,
)
from karyamorph.model.rewrite.edits import map_instructions
from karyamorph.model.rewrite.proof import SAME_RUN

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
VADD = ROOT / "datasets/kernels/vadd.toml"
SAXPY = ROOT / "datasets/searches/examples/saxpy_stride.toml"


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_nc_on_a_buffer_the_kernel_writes_is_rejected_with_the_writing_thread() -> None:
    spec = load_spec(DATA / "double_inplace.toml")
    verdict = prove(spec, REWRITES["ld.nc"], {"n": 40})
    assert not verdict.proved
    load, store = (line_of(DATA / "double_inplace.ptx", op) for op in ("ld.global.u32", "st.global.u32"))
    said = f"x is read by ld.global.u32 at line {load} and written by the store st.global.u32 at line {store}"
    assert verdict.reason == said
    w = verdict.witness
    assert w is not None and (w.buffer, w.space, w.lines) == ("x", "global", (store, load))
    (thread,) = w.threads
    index = thread.block[0] * 32 + thread.thread[0]
    assert index < 40 and w.address == 4 * index  # a thread that does store: inside the guard


def test_the_same_loads_of_a_read_only_buffer_are_proved() -> None:
    verdict = prove(load_spec(VADD), REWRITES["ld.nc"], {"n": 64})
    assert verdict.proved and verdict.witness is None, verdict
    # The model decodes ld.global.nc as it decodes ld.global: the same run, at every size.
    assert verdict.reason == SAME_RUN and verdict.sizes == (("n", 64),)


def test_a_kernel_reading_one_buffer_it_writes_refuses_nc_on_all_its_loads() -> None:
    verdict = prove(load_spec(SAXPY), REWRITES["ld.nc"], {"n": 300, "sms": 1})
    assert not verdict.proved and verdict.witness is not None and verdict.witness.buffer == "y"


def test_nc_on_the_buffer_it_only_reads_is_proved_where_the_other_is_rejected() -> None:
    spec = load_spec(SAXPY)
    assert prove(spec, rewrite_named("ld.nc:x"), {"n": 300, "sms": 1}).proved
    refused = prove(spec, rewrite_named("ld.nc:y"), {"n": 300, "sms": 1})
    assert not refused.proved and refused.witness is not None and refused.witness.buffer == "y"


def test_a_store_cache_operator_is_proved_on_the_in_place_kernel() -> None:
    verdict = prove(load_spec(DATA / "double_inplace.toml"), REWRITES["st.cs"], {"n": 40})
    assert verdict.proved, verdict


def test_a_block_the_kernel_hard_codes_is_rejected_with_differing_outputs() -> None:
    spec = load_spec(DATA / "block_sum.toml")
    verdict = prove(spec, REWRITES["block=128"])
    assert not verdict.proved
    assert verdict.reason.startswith("equivalence refuted: at n = 300: bytes 0.. of output out")
    assert verdict.witness is not None and verdict.witness.buffer == "out"
    assert ("n", 300) in verdict.witness.inputs


def test_a_loop_kept_rolled_is_proved_on_the_block_sum() -> None:
    verdict = prove(load_spec(DATA / "block_sum.toml"), REWRITES["nounroll"])
    assert verdict.proved, verdict


def test_a_block_size_the_kernel_reads_from_ntid_is_proved() -> None:
    verdict = prove(load_spec(VADD), REWRITES["block=128"], {"n": 300})
    assert verdict.proved, verdict
    assert verdict.reason != SAME_RUN and "for all inputs" in verdict.reason  # threads were run


def _planted(name: str, change: Callable[[ast.Instruction], ast.Instruction]) -> Rewrite:
    """A rewrite with no side condition that edits every instruction by ``change``."""

    def edit(t: Target) -> ast.Module:
        return map_instructions(t.module, t.entry, change)

    return Rewrite(name, "planted", "none", Condition.NONE, edit)


def _cache_all(i: ast.Instruction) -> ast.Instruction:
    plain = i.opcode in ("ld", "st") and "global" in i.modifiers
    return dataclasses.replace(i, modifiers=(*i.modifiers[:1], "ca", *i.modifiers[1:])) if plain else i


def _shift_right(i: ast.Instruction) -> ast.Instruction:
    return dataclasses.replace(i, opcode="shr") if i.opcode == "shl" else i


def test_an_edit_the_model_runs_differently_is_not_the_same_run_and_is_refuted() -> None:
    """A cache hint on every load and store (``.ca`` is a word the decoder drops) is the same run;
    halving where the kernel doubles is not, and the bounded equivalence then refutes it."""
    hinted = prove(load_spec(VADD), _planted("hint", _cache_all), {"n": 64})
    assert hinted.proved and hinted.reason == SAME_RUN, hinted
    wrong = prove(load_spec(DATA / "double_inplace.toml"), _planted("shr", _shift_right), {"n": 40})
    assert not wrong.proved and wrong.reason.startswith("equivalence refuted"), wrong
    assert wrong.witness is not None and wrong.witness.buffer == "x"


def test_a_directive_the_entry_declares_already_is_refused() -> None:
    spec = load_spec(VADD)
    capped = rewritten_spec(spec, REWRITES["maxnreg=64"])
    verdict = prove(capped, REWRITES["maxnreg=32"], {"n": 64})
    assert not verdict.proved and verdict.reason == "the entry declares .maxnreg already"
    assert prove(capped, REWRITES["minnctapersm=2"], {"n": 64}).proved


def test_a_rewrite_that_changes_nothing_is_not_proved_of_it() -> None:
    spec = load_spec(VADD)
    verdict = prove(spec, REWRITES["unroll"], {"n": 64})
    assert not verdict.proved and verdict.reason.startswith("does not apply")


def test_a_launch_the_rewrite_cannot_bind_is_rejected() -> None:
    spec = load_spec(VADD)
    tall = dataclasses.replace(spec, launch=dataclasses.replace(spec.launch, block=(256, 4)))
    verdict = prove(tall, REWRITES["block=512"], {"n": 64})  # 512 x 4 threads: over the limit
    assert not verdict.proved
