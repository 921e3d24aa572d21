"""``karyamorph model rewrites SPEC``: the rewrites a kernel admits, each proved or rejected with
its witness by the model, on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.tools.nvcc import lower
from karyamorph.isa.arch import Arch
from karyamorph.kernel.loader import load_spec
from karyamorph.model.rewrite import REWRITES, prove

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"


def rewrites(*args: str) -> tuple[int, str]:
    got = CliRunner().invoke(main, ["model", "rewrites", *args])
    return got.exit_code, got.output


def test_vadd_lists_its_rewrites_proved() -> None:
    code, out = rewrites(str(ROOT / "datasets/kernels/vadd.toml"), "--size", "n=64", "--format", "json",
                         "--only", "ld.nc,st.wt,maxnreg=64,reqntid,block=512")  # fmt: skip
    assert code == 0, out
    listing = json.loads(out)
    assert listing["sizes"] == {"n": 64}
    proved = [(r["rewrite"], r["proved"]) for r in listing["rewrites"]]
    assert proved == [(n, True) for n in ("ld.nc", "st.wt", "maxnreg=64", "reqntid", "block=512")]
    assert listing["rewrites"][0]["condition"] == REWRITES["ld.nc"].condition


def test_the_in_place_kernel_shows_the_nc_rejection_with_its_witness() -> None:
    code, out = rewrites(str(DATA / "double_inplace.toml"), "--only", "ld.nc,st.cs")
    assert code == 0, out
    assert "double_inplace.toml: 2 rewrite(s) at n=40" in out  # the [check] size: fewest threads
    lines = " ".join(out.split())
    assert "ld.nc rejected" in lines and "witness: block (0,0,0) thread" in lines and "global x+" in lines
    assert "st.cs proved" in lines


def test_the_block_sum_refuses_another_block_in_json() -> None:
    code, out = rewrites(str(DATA / "block_sum.toml"), "--only", "block=512", "--format", "json")
    assert code == 0, out
    (row,) = json.loads(out)["rewrites"]
    assert (
        not row["proved"]
        and row["witness"]["buffer"] == "out"
        and row["reason"].startswith("equivalence refuted")
    )


def test_an_unknown_rewrite_is_an_error_naming_the_known_ones() -> None:
    code, out = rewrites(str(ROOT / "datasets/kernels/vadd.toml"), "--only", "ld.foo")
    assert code != 0 and "no rewrite named ld.foo" in out and "ld.nc" in out


def test_the_cuda_softmax_is_proved_under_a_register_cap() -> None:
    spec = lower(load_spec(ROOT / "datasets/kernels/softmax_cu.toml"), Arch.parse("sm_90"))
    verdict = prove(spec, REWRITES["maxnreg=64"], {"rows": 1, "cols": 1})
    assert verdict.proved, verdict
