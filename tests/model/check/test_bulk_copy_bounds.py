"""Bulk copies (``cp.async.bulk`` global -> shared, completing on an mbarrier) in the checker: the
bytes a copy reads and writes are logged where it is issued, so the bounds check covers both
ends. On nvcc's build of ``bulk_copy_scale`` (tests/corpus)."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

PTX = Path(__file__).resolve().parents[2] / "corpus" / "nvcc" / "bulk_copy_cluster.sm_90.ptx"
COPY_LINE = 81  # the cp.async.bulk
BLOCKS, THREADS = 3, 128


def _check(
    n: int, x_bytes: int | None = None, properties: tuple[str, ...] = ("bounds", "race")
) -> dict[str, Verdict]:
    """``bulk_copy_scale`` copying ``n`` floats a block of x (``x_bytes``: x's size, default
    exactly the blocks' floats) into its 8 KiB shared buffer."""
    buffers = {
        "bulk_copy_scale_param_0": x_bytes if x_bytes is not None else 4 * BLOCKS * n,
        "bulk_copy_scale_param_1": 4 * BLOCKS * n,
    }
    scalars: dict[str, int | float] = {"bulk_copy_scale_param_2": 2.5, "bulk_copy_scale_param_3": n}
    verdicts = check(
        parse(PTX.read_text(), PTX.name), "bulk_copy_scale", ptx_machine("sm_90"), (BLOCKS, THREADS, 0),
        buffers, scalars, properties=properties,
    )  # fmt: skip
    return {v.property: v for v in verdicts}


def test_a_copy_inside_both_buffers_is_in_bounds_and_race_free() -> None:
    # (its landing is ordered by its one-phase mbarrier: tests/model/check/test_bulk_copy_race.py)
    v = _check(700)
    assert v["bounds"].verdict in ("proved", "proved-up-to-k"), v["bounds"]
    assert v["race"].verdict in ("proved", "proved-up-to-k"), v["race"]


def test_a_copy_past_the_shared_buffer_is_refuted_at_the_copy() -> None:
    v = _check(2100, properties=("bounds",))["bounds"]  # 8400 bytes into 8192
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.witness.lines[0] == COPY_LINE and v.witness.space == "shared", v.witness


def test_a_copy_past_the_end_of_its_source_is_refuted_at_the_copy() -> None:
    v = _check(700, x_bytes=4 * BLOCKS * 700 - 16, properties=("bounds",))["bounds"]
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.witness.lines[0] == COPY_LINE and v.witness.space == "global", v.witness
