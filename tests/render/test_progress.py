"""The pipeline's per-stage hook, the live progress drawn from it, and the SASS lexer."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name, Number
from rich.console import Console

from karyamorph.harness.pipeline import (
    StageSelectionError,
    default_stages,
    run_pipeline,
    select_stages,
)
from karyamorph.harness.stages.base import StageResult
from karyamorph.kernel.loader import load_spec
from karyamorph.render.highlight import QuietPtxLexer, SassLexer, highlighted
from karyamorph.render.progress import StageProgress

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"


def test_the_hook_hears_each_stage_start_then_end_in_order() -> None:
    events: list[tuple[str, str | None]] = []

    def hook(name: str, result: StageResult | None) -> None:
        events.append((name, None if result is None else str(result.status)))

    stages = select_stages(default_stages(), ["compile", "sass", "correctness"])
    result = run_pipeline(load_spec(EXAMPLES / "scale.toml"), arch="sm_120", stages=stages, on_stage=hook)
    assert events == [
        ("compile", None), ("compile", "pass"), ("sass", None), ("sass", "pass"),
        ("correctness", None), ("correctness", "skip"),
    ]  # fmt: skip
    assert [n for n, _ in result.stages] == ["compile", "sass", "correctness"]


def test_selection_keeps_pipeline_order_and_names_unknown_stages() -> None:
    every = default_stages()
    assert [s.name for s in select_stages(every, ["timing", "compile"])] == ["compile", "timing"]
    assert [s.name for s in select_stages(every, None, ["model", "metrics"])] == [
        "compile", "sass", "static", "predict", "sanitize", "correctness", "timing",
    ]  # fmt: skip
    with pytest.raises(StageSelectionError, match="unknown stage 'x', 'y'"):
        select_stages(every, ["x"], ["y"])
    with pytest.raises(StageSelectionError, match="no stage to run"):
        select_stages(every, ["sass"], ["sass"])


def test_progress_draws_a_line_per_stage_with_its_status() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80)
    stages = select_stages(default_stages(), ["compile", "timing"])
    with StageProgress(console, transient=False) as progress:
        run_pipeline(load_spec(EXAMPLES / "scale.toml"), arch="sm_120", stages=stages, on_stage=progress)
    final = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue()).splitlines()[-2:]
    assert re.fullmatch(r"pass\s+compile\s+\d+\.\d s\s*", final[0])
    assert re.fullmatch(r"skip\s+timing\s+\d+\.\d s\s+no CUDA device\s*", final[1])


def test_sass_lexer_names_the_parts_of_an_instruction() -> None:
    tokens = [(t, v) for t, v in SassLexer().get_tokens("/*00d0*/ @!P0 LDG.E.64 R2, desc[UR4][R2.64+0x10] ;")
              if v.strip()]  # fmt: skip
    assert tokens[:6] == [
        (Comment.Special, "/*00d0*/"), (Name.Decorator, "@!"), (Name.Decorator, "P0"),
        (Keyword, "LDG"), (Keyword.Type, ".E"), (Keyword.Type, ".64"),
    ]  # fmt: skip
    values = dict((v, t) for t, v in tokens)
    assert values["R2"] is Name.Variable and values["UR4"] is Name.Variable
    assert values["desc"] is Name.Builtin and values["0x10"] in Number
    branch = [(t, v) for t, v in SassLexer().get_tokens("BRA `(.L_x_1) ;") if v.strip()]
    assert (Name.Label, ".L_x_1") in branch


def test_valid_ptx_has_no_error_tokens() -> None:
    tokens = list(QuietPtxLexer().get_tokens("@%p1 bra $L__BB0_2;\n.param .u64 .ptr .global a"))
    assert tokens and all(t is not Error for t, _ in tokens)
    assert (Keyword, "bra") in tokens


def test_highlighted_code_wraps_and_is_plain_off_a_terminal() -> None:
    text = highlighted("\tld.global.f32 %f1, [%rd8]; // " + "word " * 30, "ptx")
    assert not text.no_wrap and text.plain.startswith("\tld.global.f32")
    screen = io.StringIO()
    Console(file=screen, width=40, color_system=None).print(text)
    lines = screen.getvalue().splitlines()
    assert len(lines) > 3 and "\x1b[" not in screen.getvalue()
