"""A search declared in a spec with ``[check] launch = "any"`` keeps only the block sizes the
model proves safe for every launch, and notes why each other one is left out."""

from __future__ import annotations

from typing import Any

from karyamorph.kernel.loader import spec_from_dict
from karyamorph.search.templates.from_spec import spec_template
from tests.model.check.test_any_launch import BLOCK_SUM

BLOCKS = [64, 128, 256, 512, 1024]


def _doc(check: dict[str, Any]) -> dict[str, Any]:
    return {
        "kernel": {"source": BLOCK_SUM, "entry": "block_sum"},
        "sizes": {"n": 4096},
        "launch": {"grid": ["ceildiv(n, BLOCK)"], "block": ["BLOCK"]},
        "args": [
            {"name": "x", "role": "in", "dtype": "f32", "shape": ["n"]},
            {"name": "out", "role": "out", "dtype": "f32", "shape": ["ceildiv(n, BLOCK)"]},
            {"name": "n", "role": "scalar", "dtype": "u32", "value": "n"},
            {"name": "nout", "role": "scalar", "dtype": "u32", "value": "ceildiv(n, BLOCK)"},
        ],
        "reference": {"torch": "x.view(-1, 256).sum(1)"},
        "check": check,
        "search": {"parameters": {"BLOCK": BLOCKS}, "baseline": {"BLOCK": 256}},
    }


def test_block_sizes_not_proved_are_left_out_with_the_reason() -> None:
    template = spec_template(spec_from_dict(_doc({"launch": "any", "grid": "launch"})))
    keep = template.constraints[-1]
    assert keep.names == ("BLOCK",)
    assert [b for b in BLOCKS if keep.predicate(b)] == [64, 128, 256]
    assert len(template.notes) == 2
    for b, note in zip((512, 1024), template.notes, strict=True):
        assert note.startswith(f"BLOCK = {b} left out") and "bounds refuted" in note


def test_without_any_launch_every_block_stays() -> None:
    template = spec_template(spec_from_dict(_doc({})))
    assert template.notes == ()
    assert all(c.names != ("BLOCK",) or all(c.predicate(b) for b in BLOCKS) for c in template.constraints)
