"""The pipeline's seams are typed: every stage says which later stages it ``overlaps``, and a
run's toolchain and device are a Toolchain and a DeviceInfo (or None), never ``Any``."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import pytest

from karyamorph.campaign import execute
from karyamorph.harness import pipeline, record
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.pipeline import STAGE_TYPES, RunResult, default_stages, run_pipeline
from karyamorph.harness.stages.base import Stage
from karyamorph.harness.tools.toolchain import Toolchain, discover
from tests.harness.test_pipeline_overlap import VADD


def test_every_stage_names_the_later_stages_it_overlaps() -> None:
    order = list(STAGE_TYPES)
    for position, (name, stage) in enumerate(STAGE_TYPES.items()):
        overlaps = stage.overlaps
        assert isinstance(overlaps, tuple), name
        assert set(overlaps) <= set(order[position + 1 :]), name
    assert {n: s.overlaps for n, s in STAGE_TYPES.items() if s.overlaps} == {
        "sass": ("static", "model"),
        "sanitize": ("correctness",),
    }


def test_the_stage_protocol_declares_overlaps() -> None:
    assert get_type_hints(Stage)["overlaps"] == tuple[str, ...]


def test_stages_that_overlap_nothing_run_one_after_another() -> None:
    stages = [s for s in default_stages() if s.name in ("compile", "static")]
    assert all(s.overlaps == () for s in stages)
    run = run_pipeline(VADD, arch="sm_90", toolchain=discover(), stages=stages)
    assert [name for name, _ in run.stages] == ["compile", "static"]


@pytest.mark.parametrize(
    ("where", "names"),
    [
        (run_pipeline, ("toolchain", "device")),
        (pipeline.default_arch, ("device",)),
        (record.device_record, ("device",)),
        (record.toolchain_record, ("toolchain",)),
        (execute.run_item, ("toolchain", "device")),
    ],
)
def test_toolchain_and_device_parameters_have_their_types(where: Any, names: tuple[str, ...]) -> None:
    hints = get_type_hints(where)
    optional = {name: p.default is None for name, p in inspect.signature(where).parameters.items()}
    for name in names:
        wanted = {"toolchain": Toolchain, "device": DeviceInfo}[name]
        assert hints[name] == (wanted | None if optional[name] or name == "device" else wanted), name


def test_a_run_result_holds_a_toolchain_and_maybe_a_device() -> None:
    hints = get_type_hints(RunResult)
    assert hints["toolchain"] is Toolchain and hints["device"] == DeviceInfo | None
