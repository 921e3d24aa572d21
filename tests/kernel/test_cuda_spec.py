"""A spec of CUDA C++ source loads with its source as data (no PTX until the harness compiles it
for a target): a ``.cu`` file beside the spec or inline text, with nvcc options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from karyamorph.kernel.loader import cuda_source, load_spec, spec_from_dict
from karyamorph.kernel.spec import INLINE_CUDA, SpecError

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
KERNEL = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n'


def doc(**kernel: Any) -> dict[str, Any]:
    return {"kernel": {"entry": "k", **kernel}, "launch": {"grid": 1, "block": 32},
            "args": [{"name": "y", "role": "out", "dtype": "f32", "shape": 32}]}  # fmt: skip


def test_a_cu_file_beside_the_spec() -> None:
    spec = load_spec(EXAMPLES / "softmax_cu.toml")
    assert spec.cuda is not None and spec.ptx == "" and spec.ptx_path is None
    assert spec.cuda.text == (EXAMPLES / "softmax_cu.cu").read_text()
    assert (spec.cuda.name, spec.cuda.key, spec.cuda.options) == (
        "softmax_cu.cu",
        "kernel.cu",
        ("-DBLOCK=256",),
    )
    assert spec.cuda.path == EXAMPLES / "softmax_cu.cu" and spec.cuda.folder == EXAMPLES
    assert spec.entry == "softmax"


def test_a_cu_file_in_another_folder_is_named_as_the_spec_writes_it(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(KERNEL)
    spec = spec_from_dict(doc(cu="src/k.cu"), tmp_path, "k.toml")
    assert spec.cuda is not None and spec.cuda.name == "src/k.cu"
    assert spec.cuda.folder == tmp_path / "src" and spec.cuda.options == ()


def test_inline_cuda_is_named_as_such_and_includes_from_the_spec_folder(tmp_path: Path) -> None:
    spec = spec_from_dict(doc(cuda=KERNEL, options=["--use_fast_math", "-DX=1"]), tmp_path, "k.toml")
    assert spec.cuda is not None and spec.ptx == ""
    assert (spec.cuda.text, spec.cuda.name, spec.cuda.key) == (KERNEL, INLINE_CUDA, "kernel.cuda")
    assert spec.cuda.options == ("--use_fast_math", "-DX=1") and spec.cuda.path is None
    assert spec.cuda.folder == tmp_path


@pytest.mark.parametrize(
    ("kernel", "where", "words"),
    [
        (
            {"cu": "k.cu", "cuda": KERNEL},
            "[kernel]",
            "give either cu (a CUDA file) or cuda (inline CUDA), not both",
        ),
        (
            {"ptx": "k.ptx", "cuda": KERNEL},
            "[kernel]",
            "give either ptx (a file) or cuda (inline CUDA), not both",
        ),
        ({"cu": "nope.cu"}, "kernel.cu", "CUDA file not found: "),
        ({"cu": "latin1.cu"}, "kernel.cu", "latin1.cu is not UTF-8 text (byte 3)"),
        ({"cuda": KERNEL, "options": "-DX=1"}, "kernel.options", "expected a list of strings such as"),
        ({"cuda": KERNEL, "options": ["-DX=1", 2]}, "kernel.options[1]", "expected a non-empty string"),
        ({"cuda": KERNEL, "options": [["-DX=1"]]}, "kernel.options[0]", "expected a non-empty string"),
        ({"cuda": KERNEL, "options": ["-arch=sm_80"]}, "kernel.options[0]", "the target is the run's"),
        ({"source": ".version 8.0", "options": ["-DX=1"]}, "kernel.options", "go with cu or cuda, not PTX"),
        ({}, "[kernel]", 'or cu = "file.cu" or cuda = """...""" (CUDA C++)'),
    ],
)
def test_a_bad_kernel_table_names_the_key(
    tmp_path: Path, kernel: dict[str, Any], where: str, words: str
) -> None:
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "latin1.cu").write_bytes(b"// \xe9t\xe9\n")
    with pytest.raises(SpecError) as info:
        spec_from_dict(doc(**kernel), tmp_path, "k.toml")
    assert info.value.where == f"k.toml: {where}"
    assert words in info.value.message


def test_the_source_of_a_stored_spec_text() -> None:
    text = (EXAMPLES / "softmax_cu.toml").read_text()
    source = cuda_source(text, EXAMPLES)
    assert source is not None and source.name == "softmax_cu.cu" and source.options == ("-DBLOCK=256",)
    assert cuda_source((EXAMPLES / "vadd.toml").read_text(), EXAMPLES) is None
    with pytest.raises(SpecError, match="CUDA file not found"):
        cuda_source(text, EXAMPLES / "elsewhere")
