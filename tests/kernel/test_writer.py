"""A spec written by :func:`write_spec` loads back equal, for every spec in the repository."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.writer import write_spec

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "datasets" / "kernels").glob("*.toml")) + sorted(
    (ROOT / "tests" / "model" / "corpus").glob("*.toml")
)
COMPARED = [
    f.name
    for f in dataclasses.fields(load_spec(SPECS[0]))
    if f.name not in ("ptx_path", "source_path", "text")
]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_a_written_spec_loads_back_equal(path: Path, tmp_path: Path) -> None:
    spec = load_spec(path)
    toml, ptx = write_spec(spec, tmp_path / "copy" / path.name, header=f"a copy of {path.name}\nsecond line")
    assert ptx.read_text() == spec.ptx
    assert toml.read_text().startswith(f"# a copy of {path.name}\n# second line\n")
    again = load_spec(toml)
    assert {k: getattr(again, k) for k in COMPARED} == {k: getattr(spec, k) for k in COMPARED}
