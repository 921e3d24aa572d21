"""Module arrays with initializers in the checker: nvcc's table lookups are proved in bounds, and a
lookup whose index outruns the table is refuted at the table."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_80")
TEXT = (Path(__file__).resolve().parents[1] / "data" / "initialisers.sm_80.ptx").read_text()


def _bounds(text: str, entry: str) -> object:
    buffers = {f"{entry}_param_0": 256, f"{entry}_param_1": 256}
    (v,) = check(parse(text), entry, M, (2, 32, 0), buffers, {}, properties=("bounds",))
    return v


def test_masked_lookups_in_constant_and_device_tables_are_proved() -> None:
    for entry in ("const_lookup", "global_lookup"):
        v = _bounds(TEXT, entry)
        assert v.verdict == "proved", (entry, v.reason)


def test_an_index_mask_wider_than_the_table_is_refuted_at_the_table() -> None:
    # ``idx[i] & 7`` instead of ``& 3``: byte offsets up to 28 in a 16-byte table.
    planted = TEXT.replace("and.b64  \t%rd8, %rd7, 12;", "and.b64  \t%rd8, %rd7, 28;")
    assert planted.count("%rd7, 28;") == 2
    v = _bounds(planted, "const_lookup")
    assert v.verdict == "refuted"
    assert v.witness.space == "const"
    assert v.replay is not None and v.replay.status == "confirmed"
