"""``search run SPEC --rewrites``: the model's rewrites as one more parameter axis beside a spec's
own ``[search]`` parameters, each variant proved before its other gates, a rejected one stored
as a ``model`` failure with its witness (the GPU's part stood in for: tests/search/standin.py)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.loader import load_spec
from karyamorph.search import stored
from karyamorph.search.rewrites import AXIS, NONE, rewrite_search
from karyamorph.search.session import SearchRequest, search_in_store
from karyamorph.store.database import Store
from tests.search.standin import DEVICE, StandInEvaluator

ROOT = Path(__file__).resolve().parents[2]
SAXPY = ROOT / "datasets/searches/examples/saxpy_stride.toml"
IN_PLACE = ROOT / "tests/model/rewrite/data/double_inplace.toml"
SM_90 = Arch.parse("sm_90")


def test_the_rewrites_are_an_axis_beside_the_specs_own_parameters() -> None:
    search = rewrite_search(load_spec(SAXPY), SM_90)
    template = search.template
    assert [p.name for p in template.parameters] == ["block_size_x", "BLOCKS_PER_SM", "REGS", AXIS]
    assert template.baseline == {"block_size_x": 256, "BLOCKS_PER_SM": 8, "REGS": 0, AXIS: NONE}
    assert "st.cs" in search.rewrites and not [r for r in search.rewrites if r.startswith("block=")]
    assert template.space(SM_90).size == search.base.space(SM_90).size * (1 + len(search.rewrites))
    config = template.config({"block_size_x": 128, "REGS": 32, AXIS: "st.cs"})
    built = template.spec(config, SM_90)
    entry = parse(built.ptx).entry(built.entry)
    assert entry.attribute("maxnreg") == (32,)  # the spec's own parameter, written as before
    assert [i.full_opcode for i in entry.instructions() if i.opcode == "st"] == ["st.global.cs.f32"]
    assert built.launch.block == (128,)
    capped = template.footprint(template.config({"REGS": 0, AXIS: "maxnreg=32"}))
    assert capped.registers == 32 and capped.threads == 256


def test_a_search_of_rewrites_stores_each_rejection_with_its_witness(tmp_path: Path) -> None:
    search = rewrite_search(load_spec(IN_PLACE), SM_90)
    assert search.rewrites[:4] == ("ld.nc", "ld.cg", "ld.cs", "ld.lu") and "block=128" in search.rewrites
    template = search.template
    request = SearchRequest(template, SM_90, "exhaustive", 1 + len(search.rewrites), seed=1, cost_prior_s=0)
    evaluator = search.gate(StandInEvaluator(template, SM_90, discover(), GpuWorker(None), seed=1))
    with Store.open(tmp_path / "s.duckdb") as store:
        summary = search_in_store(request, evaluator, store, device_name=DEVICE.name, out_dir=tmp_path)
        evaluations = stored.load(store, summary["search_id"]).evaluations
        rows = store.query("SELECT config, failure, detail, gates FROM search_evaluations").rows
    assert len(evaluations) == 1 + len(search.rewrites)
    by_rewrite = {json.loads(c)[AXIS]: (f, d, json.loads(g)) for c, f, d, g in rows}
    for name in ("ld.nc", "ld.cg", "ld.cs", "ld.lu"):  # the kernel writes x, which they read
        failure, detail, gates = by_rewrite[name]
        assert failure == "model" and f"rewrite {name}: rejected (x is read by" in detail
        assert "witness: block (0,0,0) thread" in detail and gates["rewrite"]["witness"]["buffer"] == "x"
    failure, _, gates = by_rewrite["st.cs"]
    assert failure is None and gates["rewrite"]["proved"] and gates["standin"]
    assert by_rewrite[NONE][0] is None and "rewrite" not in by_rewrite[NONE][2]
    # The winner is stored as a plain spec of its rewritten PTX, as any winner is.
    winner = summary["winner"]
    written = load_spec(tmp_path / summary["search_id"][:8] / winner["spec_file"])
    assert written.search is None and written.cuda is None
    assert written.ptx == template.spec(winner["config"], SM_90).ptx


def test_search_run_with_rewrites_names_them_and_stops_where_every_search_does_without_a_gpu(
    tmp_path: Path,
) -> None:
    got = CliRunner().invoke(main, ["search", "run", str(IN_PLACE), "--rewrites", "--arch", "sm_90",
                                    "--db", str(tmp_path / "s.duckdb")])  # fmt: skip
    assert got.exit_code == 2, got.output
    assert "rewrites, each proved by the model before any GPU time: ld.nc, ld.cg" in got.output
    assert "this machine has none" in got.output


def test_rewrites_need_a_spec() -> None:
    got = CliRunner().invoke(main, ["search", "run", "vadd", "--rewrites", "--arch", "sm_90"])
    assert (
        got.exit_code == 2 and "--rewrites edits a spec's own PTX: vadd is not a spec (.toml)" in got.output
    )
