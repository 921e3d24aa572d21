"""Templates named by path: a Python file that defines TEMPLATE loads as the shipped templates
are; one that does not import or defines none is an error naming the file and the line; a spec
path gives its search; docs/search.md shows these files as they are."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from karyamorph.kernel.loader import KEYS
from karyamorph.kernel.spec import SpecError
from karyamorph.search.template import Template
from karyamorph.search.templates import (
    TemplateFileError,
    UnknownTemplate,
    find_template,
    python_template,
    template,
)
from tests.docs.fences import blocks

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "datasets" / "searches" / "examples"
PAGE = ROOT / "docs" / "search.md"


def test_a_python_file_that_defines_template_is_a_template() -> None:
    found = find_template(str(EXAMPLES / "scale_template.py"))
    assert isinstance(found, Template) and found.name == "scale"
    space = found.space("sm_90")
    assert space.size == 19 and space.find(found.baseline) is not None  # 5 * 4 minus 1024 * 8
    again = python_template(EXAMPLES / "scale_template.py")
    assert again is not found and again.parameters == found.parameters  # each call runs the file


def test_a_template_name_a_spec_path_and_a_python_path_are_told_apart() -> None:
    assert find_template("vadd") is template("vadd")
    assert find_template(str(EXAMPLES / "softmax_search.toml")).name == "softmax_search.toml"
    known = "fp8_gemm, hgemm, hopper_fp8_gemm, hopper_gemm, mxf4_gemm, nvf4_gemm, reduction, sgemm, transpose"
    with pytest.raises(UnknownTemplate, match=rf"no template named .vad. \(known: {known}, vadd; or the"):
        find_template("vad")
    with pytest.raises(SpecError, match=r"missing.toml: spec file not found"):
        find_template("missing.toml")
    with pytest.raises(TemplateFileError, match=r"missing.py: no such template file"):
        find_template("missing.py")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("x = 1\ndef f(:\n", r"bad.py:2: does not import: SyntaxError"),
        ("import os\n\nTEMPLATE = os.nothing\n", r"bad.py:3: does not import: AttributeError: .*nothing"),
        ("import karyamorph_no_such_module\n", r"bad.py:1: does not import: ModuleNotFoundError"),
        ("TEMPLATES = []\n", r"bad.py: defines no TEMPLATE \(a karyamorph.search.template.Template"),
        ("TEMPLATE = 'vadd'\n", r"bad.py: TEMPLATE is a str, not a karyamorph.search.template.Template"),
    ],
)  # fmt: skip
def test_a_file_that_is_no_template_is_named_with_its_line(tmp_path: Path, text: str, words: str) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(text)
    with pytest.raises(TemplateFileError, match=re.escape(str(tmp_path) + "/") + words):
        find_template(str(bad))


def test_the_page_shows_the_example_template_as_it_is() -> None:
    python = [b.text for b in blocks(PAGE) if b.lang == "python"]
    assert python[0] == (EXAMPLES / "scale_template.py").read_text()


def test_the_page_s_spec_example_uses_every_search_key() -> None:
    searched = [tomllib.loads(b.text) for b in blocks(PAGE) if b.lang == "toml"]
    assert set(searched[0]["search"]) == set(KEYS["search"])
