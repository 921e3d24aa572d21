"""Every recorded GPU result (``datasets/validation/<arch>/``) replayed through the current model.

The recordings are written on a GPU machine by ``karyamorph model validate --record
datasets/validation/<arch>``; here, with no GPU, the model must give the same bits for the same
operands (approximations: within their stated bounds; mbarrier phase sequences: the same
observations, word for word; tensor copies: the same box bytes, word for word). A semantic slip
in any recorded form fails this test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.compare import ALLOWED
from karyamorph.validation.recording import HEADER, read_recording, replay

FOLDER = Path(__file__).resolve().parents[2] / "datasets" / "validation"
ARCHS = sorted({"sm_90", *(p.name for p in FOLDER.glob("sm_*") if (p / HEADER).is_file())})


@pytest.mark.parametrize("arch", ARCHS)
def test_recorded_gpu_results_agree_with_the_model(arch: str) -> None:
    folder = FOLDER / arch
    if not folder.is_dir():
        pytest.skip(f"{folder} is not recorded yet (karyamorph model validate --record {folder})")
    rec = read_recording(folder)
    env = rec.header["environment"]
    assert rec.arch == arch and rec.header["date"]
    assert env.get("device_name") and env.get("ptxas") and env.get("cuda_driver")
    result = replay(rec, ptx_machine(arch))
    assert result.missing == (), f"recorded forms the model no longer declares: {result.missing[:20]}"
    shown = [d.as_dict() for d in result.disagreements if d.kind not in ALLOWED][:10]
    assert result.failed == [], f"{len(result.failed)} forms disagree with the GPU; first cases: {shown}"
    recorded = (rec.forms, rec.tiles, rec.warpgroups, rec.sequences, rec.boxes)
    assert len(result.results) == sum(len(r) for r in recorded)
    assert rec.forms or rec.warpgroups or rec.sequences or rec.boxes
