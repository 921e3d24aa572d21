"""A spec written by :func:`write_spec` loads back equal, for every spec in the repository."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.spec import KernelSpec
from karyamorph.kernel.writer import write_spec

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "datasets" / "kernels").glob("*.toml")) + sorted(
    (ROOT / "tests" / "model" / "corpus").glob("*.toml")
)
COMPARED = [
    f.name
    for f in dataclasses.fields(load_spec(SPECS[0]))
    if f.name not in ("ptx_path", "source_path", "cuda", "text")
]


def cuda_of(spec: KernelSpec) -> tuple[str, str, tuple[str, ...]] | None:
    """What of a spec's CUDA source a copy keeps: text, name, options (not the folder it is in)."""
    return None if spec.cuda is None else (spec.cuda.text, spec.cuda.name, spec.cuda.options)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_a_written_spec_loads_back_equal(path: Path, tmp_path: Path) -> None:
    spec = load_spec(path)
    toml, source = write_spec(
        spec, tmp_path / "copy" / path.name, header=f"a copy of {path.name}\nsecond line"
    )
    assert source.read_text() == (spec.ptx if spec.cuda is None else spec.cuda.text)
    assert toml.read_text().startswith(f"# a copy of {path.name}\n# second line\n")
    again = load_spec(toml)
    assert {k: getattr(again, k) for k in COMPARED} == {k: getattr(spec, k) for k in COMPARED}
    assert cuda_of(again) == cuda_of(spec)


def test_a_spec_of_cuda_source_is_written_as_its_source_or_once_lowered_as_its_ptx(tmp_path: Path) -> None:
    cuda = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = BIAS; }\n'
    doc = {"kernel": {"cuda": cuda, "entry": "k", "options": ["-DBIAS=2.0f", "--use_fast_math"]},
           "launch": {"grid": 1, "block": 32},
           "args": [{"name": "y", "role": "out", "dtype": "f32", "shape": 32}]}  # fmt: skip
    spec = spec_from_dict(doc, tmp_path, "k.toml")
    toml, source = write_spec(spec, tmp_path / "out" / "k.toml")
    assert source.name == "k.cu" and source.read_text() == cuda
    again = load_spec(toml)
    assert again.cuda is not None and again.cuda.path == source
    assert (again.cuda.text, again.cuda.options, again.cuda.name) == (cuda, spec.cuda.options, "k.cu")
    # Lowered (PTX for one target), the spec is that PTX: written as it, it runs the same kernel.
    lowered = dataclasses.replace(spec, ptx=(ROOT / "datasets" / "kernels" / "vadd.ptx").read_text())
    toml, source = write_spec(lowered, tmp_path / "lowered" / "k.toml")
    assert source.suffix == ".ptx" and load_spec(toml).ptx == lowered.ptx and load_spec(toml).cuda is None
