"""The launch and arguments form: a spec's TOML -> fields -> TOML gives the same document
(tomllib is the oracle), and fields that are no spec are refused with the key named."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from karyamorph.dashboard.spec_form import SpecForm, doc_from_fields, doc_from_toml, split_items, toml_text
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.kernel.spec import SpecError

ROOT = Path(__file__).resolve().parents[2]
# The form edits specs of PTX: a spec of CUDA source (softmax_cu) is not one it opens.
SPECS = sorted(p for p in [*(ROOT / "datasets" / "kernels").glob("*.toml"),
                           *(ROOT / "tests" / "harness" / "data").glob("*.toml")]
               if "cu" not in tomllib.loads(p.read_text())["kernel"])  # fmt: skip


def round_trip(doc: dict[str, object], source: str | None = None) -> dict[str, object]:
    return tomllib.loads(toml_text(doc_from_fields(SpecForm.from_doc(doc).fields(), source)))


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_every_shipped_spec_survives_the_form(path: Path) -> None:
    doc = tomllib.loads(path.read_text())
    assert round_trip(doc) == doc


def test_an_inline_source_comes_back_from_the_editor_exactly() -> None:
    ptx = (ROOT / "datasets" / "kernels" / "vadd.ptx").read_text()
    doc = tomllib.loads((ROOT / "datasets" / "kernels" / "vadd.toml").read_text())
    doc["kernel"] = {"source": ptx, "entry": "vadd"}
    assert round_trip(doc, source=ptx) == doc
    # Quotes, backslashes and control characters need the escaped form; it parses back the same.
    odd = "// 'quoted' \"double\" \\ back\x01slash ''' and tab\t\n.version 8.7\n"
    doc["kernel"] = {"source": odd, "entry": "vadd"}
    assert round_trip(doc, source=odd)["kernel"] == {"source": odd, "entry": "vadd"}


def test_numbers_written_as_floats_come_back_as_the_same_launch(tmp_path: Path) -> None:
    # A scalar written as 1.5 (a float) comes back as the expression "1.5": the same bound kernel.
    text = (ROOT / "datasets" / "kernels" / "scale.toml").read_text().replace('value = "1.5"', "value = 1.5")
    doc = tomllib.loads(text)
    again = round_trip(doc)
    (tmp_path / "scale.ptx").write_text((ROOT / "datasets" / "kernels" / "scale.ptx").read_text())
    a = bind(spec_from_dict(doc, tmp_path, "a.toml"))
    b = bind(spec_from_dict(again, tmp_path, "b.toml"))
    assert (a.grid, a.block, a.sizes, a.scalars) == (b.grid, b.block, b.sizes, b.scalars)


@pytest.mark.parametrize(("text", "items"), [
    ("ceildiv(n, 256)", ["ceildiv(n, 256)"]),
    ("ceildiv(cols, 32), ceildiv(rows, 32)", ["ceildiv(cols, 32)", "ceildiv(rows, 32)"]),
    ("32, 8, 1", ["32", "8", "1"]),
    ("max(a, min(b, c)), 4", ["max(a, min(b, c))", "4"]),
    ("", []),
])  # fmt: skip
def test_list_fields_split_at_commas_outside_parentheses(text: str, items: list[str]) -> None:
    assert split_items(text) == items


def test_fields_that_are_no_spec_name_the_key() -> None:
    doc = tomllib.loads((ROOT / "datasets" / "kernels" / "vadd.toml").read_text())
    fields = SpecForm.from_doc(doc).fields()
    with pytest.raises(SpecError, match=r"sizes\.n"):
        doc_from_fields({**fields, "size.0.value": "lots"})
    with pytest.raises(SpecError, match=r"check\.atol"):
        doc_from_fields({**fields, "check.atol": "tiny"})
    with pytest.raises(SpecError, match="not valid TOML"):
        doc_from_toml("[kernel\nentry = 1")


def test_removing_an_argument_drops_it() -> None:
    doc = tomllib.loads((ROOT / "datasets" / "kernels" / "vadd.toml").read_text())
    fields = SpecForm.from_doc(doc).fields()
    fields["arg.1.remove"] = "1"
    names = [a["name"] for a in doc_from_fields(fields)["args"]]
    assert names == [a["name"] for i, a in enumerate(doc["args"]) if i != 1]


def test_the_other_sizes_a_check_runs_at_are_kept_and_checked() -> None:
    doc = tomllib.loads((ROOT / "datasets" / "kernels" / "transpose.toml").read_text())
    doc["check"]["sizes"] = [{"rows": 33, "cols": 65}, {"rows": 1}]
    fields = SpecForm.from_doc(doc).fields()
    assert fields["check.sizes"] == "rows = 33, cols = 65; rows = 1"
    assert tomllib.loads(toml_text(doc_from_fields(fields)))["check"] == doc["check"]
    with pytest.raises(SpecError, match=r"check\.sizes\[1\]"):
        doc_from_fields({**fields, "check.sizes": "rows = 33; cols = many"})
