"""Specs of CUDA source through the commands on a machine without a GPU: `run`, `check`,
`interp` and `campaign run` compile them for their target and run the CPU stages; a compile
error stops a command with status 2 at the source line, storing nothing; `show` puts each PTX
line's source line beside it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from karyamorph.cli import main
from tests.harness.tools.nvcc_probe import require_nvcc

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
CPU_STAGES = "compile,sass,static"

AXPY = """\
[kernel]
entry = "axpy"
cuda = '''
__global__ void axpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''

[sizes]
n = 300

[launch]
grid = ["ceildiv(n, 128)"]
block = [128]

[[args]]
name = "a"
role = "scalar"
dtype = "f32"
value = "1.5"

[[args]]
name = "x"
role = "in"
dtype = "f32"
shape = ["n"]

[[args]]
name = "y"
role = "inout"
dtype = "f32"
shape = ["n"]

[[args]]
name = "n"
role = "scalar"
dtype = "u32"
value = "n"

[reference]
torch = "a * x + y"
"""


@pytest.fixture(autouse=True)
def _nvcc() -> None:
    require_nvcc()


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def softmax_copy(tmp_path: Path, edit: tuple[str, str] | None = None) -> Path:
    """The softmax example in ``tmp_path``, its ``.cu`` with ``edit`` (old, new) applied."""
    shutil.copy(EXAMPLES / "softmax_cu.toml", tmp_path / "softmax_cu.toml")
    source = (EXAMPLES / "softmax_cu.cu").read_text()
    if edit is not None:
        assert edit[0] in source
        source = source.replace(*edit)
    (tmp_path / "softmax_cu.cu").write_text(source)
    return tmp_path / "softmax_cu.toml"


def test_run_stores_a_cuda_spec_and_show_puts_its_source_beside_the_ptx(tmp_path: Path) -> None:
    db = str(tmp_path / "k.duckdb")
    ran = invoke("run", str(EXAMPLES / "softmax_cu.toml"), "--stages", CPU_STAGES, "--arch", "sm_90",
                 "--db", db, "--format", "json")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    out = json.loads(ran.output)
    assert out["entry"] == "softmax" and out["arch"] == "sm_90"
    assert [(s["name"], s["status"]) for s in out["stages"]] == [(n, "pass") for n in CPU_STAGES.split(",")]
    shown = invoke("show", out["run_id"][:8], "--db", db, "--format", "json")
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.output)["source_map"]
    cu = (EXAMPLES / "softmax_cu.cu").read_text().splitlines()
    located = [r for r in rows if r["source"] is not None and r["source"]["file"] == "softmax_cu.cu"]
    # Every located row's text is its line of the .cu, and the stores of the result come from
    # the line that writes `out[c]`; code inlined from CUDA's headers names them, without text.
    assert located and all(r["source"]["text"] == cu[r["source"]["line"] - 1] for r in located)
    headers = [
        r["source"] for r in rows if r["source"] is not None and r["source"]["file"] != "softmax_cu.cu"
    ]
    assert all(h["file"].endswith(".hpp") and h["text"] is None for h in headers)
    stores = [r for r in located if "st.global" in r["ptx"]]
    assert stores and all("out[c] = " in r["source"]["text"] for r in stores)
    table = invoke("show", out["run_id"][:8], "--db", db, "--stage", "sass")
    assert table.exit_code == 0 and "CUDA" in table.output and "softmax_cu.cu:" in table.output
    # The dashboard's page of the run (as `report` writes it) has the source column too.
    page = tmp_path / "run.html"
    reported = invoke("report", out["run_id"][:8], "--db", db, "-o", str(page))
    assert reported.exit_code == 0, reported.output
    html = page.read_text()
    assert "<th>CUDA</th>" in html and '<td class="cu"><span class="off">softmax_cu.cu:' in html


@pytest.mark.parametrize("command", [["run", "--no-store"], ["run"], ["check"], ["interp"]])
def test_a_compile_error_stops_every_command_at_the_source_line(tmp_path: Path, command: list[str]) -> None:
    spec = softmax_copy(tmp_path, ("m = block_max(m, scratch);", "m = block_max(m, scratch) + bias;"))
    db = tmp_path / "k.duckdb"
    result = (
        invoke(command[0], str(spec), *command[1:], "--db", str(db))
        if command == ["run"]
        else invoke(command[0], str(spec), *command[1:])
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    line = next(
        i for i, t in enumerate((tmp_path / "softmax_cu.cu").read_text().splitlines(), 1) if "bias" in t
    )
    assert "error: softmax_cu.toml: kernel.cu: nvcc " in result.output
    assert f'softmax_cu.cu:{line}:33: error: identifier "bias" is undefined' in result.output
    assert f"{line:>6} |     m = block_max(m, scratch) + bias;" in result.output
    if db.exists():  # nothing was stored
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_check_and_interp_take_a_cuda_spec(tmp_path: Path) -> None:
    spec = tmp_path / "axpy.toml"
    spec.write_text(AXPY)
    checked = invoke("check", str(spec), "--format", "json", "--arch", "sm_90")
    assert checked.exit_code == 0, checked.output
    assert {p["property"]: p["verdict"] for p in json.loads(checked.output)["properties"]} == dict.fromkeys(
        ("bounds", "race", "barrier"), "proved"
    )
    ran = invoke("interp", str(spec), "--format", "json")
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output)["match"] is True
    softmax = invoke("interp", str(EXAMPLES / "softmax_cu.toml"), "--size", "rows=3", "--size", "cols=1000")
    assert softmax.exit_code == 0, softmax.output


def test_a_campaign_sweeps_a_cuda_spec(tmp_path: Path) -> None:
    softmax_copy(tmp_path)
    campaign = tmp_path / "c.toml"
    campaign.write_text(
        '[campaign]\nname = "cu"\narchs = ["sm_80", "sm_90"]\nstages = ["compile", "static"]\n'
        '[[sweep]]\nspecs = ["softmax_cu.toml"]\nsizes.cols = [1000, 4096]\n'
    )
    db = tmp_path / "k.duckdb"
    result = invoke("campaign", "run", str(campaign), "--db", str(db), "--format", "json")
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT item, arch, status FROM runs ORDER BY item").fetchall()
    assert [(arch, status) for _, arch, status in rows] == [("sm_80", "pass"), ("sm_90", "pass")] * 2
