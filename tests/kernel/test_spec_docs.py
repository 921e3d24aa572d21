"""docs/spec.md stays true: every field the loader reads is documented there, and its example
specs load, match their PTX and pass against their reference on the CPU model."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from karyamorph.harness.pipeline import prepare_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import KEYS, spec_from_dict
from karyamorph.kernel.signature import prepare
from tests.harness.tools.nvcc_probe import require_nvcc

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "spec.md"
EXAMPLES = ROOT / "datasets" / "kernels"
ALTERNATIVES = {
    "kernel.source", "kernel.cu", "kernel.cuda", "kernel.options", "reference.python", "args.fields",
}  # fmt: skip
"""Keys the complete example leaves out because it gives their alternative (ptx, torch; buffers
and scalars rather than a struct, which has an example of its own)."""
CLUSTER = {"launch.cluster"}
"""Left out of the complete example, which is no cluster kernel: only a kernel declared for
thread-block clusters (``.explicitcluster``) needs it."""
TENSORMAP = {"args.tensormap", *(f"args.tensormap.{key}" for key in KEYS["args.tensormap"])}
"""Left out of the complete example, which copies no tiles with TMA: only a kernel taking a
``CUtensorMap`` needs them."""
SEARCH = {"search", *(f"search.{key}" for key in KEYS["search"])}
"""Keys the complete example leaves out because a search is another use of a spec: docs/search.md
has its complete example (its blocks load as the docs tests load every page's)."""


def toml_blocks() -> list[str]:
    return re.findall(r"```toml\n(.*?)```", PAGE.read_text(), re.S)


def documented_as(table: str, key: str) -> str:
    """How the page spells a field: as its errors name it."""
    if not table:
        if key in KEYS:
            return f"`[[{key}]]`" if key == "args" else f"`[{key}]`"
        return f"`{key}`"
    if table.startswith("args"):  # an argument's table, or a table inside one
        return f"`args[i]{table.removeprefix('args')}.{key}`"
    return f"`{table}.{key}`"


def used_keys(doc: dict[str, object]) -> set[str]:
    used = set()
    for table, value in doc.items():
        used.add(table)
        rows = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        for row in rows:
            used.update(f"{table}.{key}" for key in row)
    return used


def test_every_field_the_loader_reads_is_on_the_page() -> None:
    page = PAGE.read_text()
    missing = [
        documented_as(table, key)
        for table, keys in KEYS.items()
        for key in keys
        if documented_as(table, key) not in page
    ]
    assert not missing, f"docs/spec.md does not document {', '.join(missing)}"
    assert "`sizes.NAME`" in page  # [sizes] takes any name


def test_the_first_example_is_complete() -> None:
    doc = tomllib.loads(toml_blocks()[0])
    every = {f"{t}.{k}" if t else k for t, keys in KEYS.items() for k in keys if t != "sizes"}
    assert every - ALTERNATIVES - SEARCH - CLUSTER - TENSORMAP <= used_keys(doc)
    assert doc["sizes"]


@pytest.mark.parametrize("index", range(len(toml_blocks())))
def test_the_examples_load_and_pass_on_the_model(index: int) -> None:
    from karyamorph.harness.model_run import interpret_spec_file

    spec = spec_from_dict(tomllib.loads(toml_blocks()[index]), EXAMPLES, f"spec-md-{index}.toml")
    if spec.cuda is not None:
        require_nvcc()
        spec = prepare_spec(spec, "sm_90").spec
    prepare(spec)
    report = interpret_spec_file(bind(spec))
    assert report.match and report.outputs, report
