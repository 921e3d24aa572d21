"""Searches declared in specs, on the CPU: each example's space enumerates with its baseline in
it, every configuration builds (nvcc for CUDA source) and assembles with ptxas, the model
interprets configurations as torch computes them and proves the baseline, the defines and the
register cap reach the code, and what cannot be searched is a located SpecError."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from karyamorph.harness.pipeline import prepare_spec
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.spec import KernelSpec, SpecError
from karyamorph.search.gates import Compiled, ModelVerdicts, build, compile_variant, model_gate
from karyamorph.search.templates import find_template, spec_template
from tests.harness.tools.nvcc_probe import require_nvcc
from tests.search.templates.test_templates import interpreter_agrees

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "datasets" / "searches" / "examples"
SPECS = sorted(EXAMPLES.glob("*.toml"))
ARCH = Arch.parse("sm_90")


@pytest.fixture(autouse=True)
def nvcc() -> None:
    require_nvcc()


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_configuration_builds_and_assembles(path: Path) -> None:
    template = find_template(str(path))
    assert template.name == path.name and template.torch_baseline == load_spec(path).reference.torch
    space = template.space(ARCH)
    assert space.size > 1 and space.find(template.baseline) is not None
    toolchain = discover()
    # Every configuration of a small space; of a large one (the SGEMM's hundreds), an even spread
    # of 48 with both ends (each build is an nvcc run).
    step = max(1, space.size // 48)
    for index in sorted({*range(0, space.size, step), space.size - 1}):
        config = space.config(index)
        spec = build(template, config, ARCH, template.sizes)
        assert isinstance(spec, KernelSpec) and spec.ptx and spec.search is None, (config, spec)
        compiled = compile_variant(spec, ARCH, toolchain)
        assert isinstance(compiled, Compiled), (config, compiled)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_the_model_computes_what_torch_does_and_proves_the_baseline(path: Path) -> None:
    template = find_template(str(path))
    space = template.space(ARCH)
    for config in (template.baseline, space.config(space.size - 1)):
        interpreter_agrees(template, config, ARCH.name)
    verdicts = model_gate(template, template.baseline, ARCH)
    assert isinstance(verdicts, ModelVerdicts), verdicts
    assert verdicts.lines == ("bounds proved", "race proved", "barrier proved")


def test_the_model_checks_at_the_smallest_sizes_the_spec_gives() -> None:
    sizes = {path.stem: find_template(str(path)).check_sizes for path in SPECS}
    assert sizes == {"histogram_shared": {"n": 1000},
                     "saxpy_stride": {"n": 4099, "sms": 1}, "sgemm_tiled": {"M": 67, "N": 45, "K": 33},
                     "softmax_rows": {"rows": 2, "cols": 33},
                     "softmax_search": {"rows": 2, "cols": 33}}  # fmt: skip


def test_defines_and_the_register_cap_reach_the_code() -> None:
    template = find_template(str(EXAMPLES / "sgemm_tiled.toml"))
    config = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 64, "TM": 4, "TN": 4, "WNITER": 2}
    free = compile_variant(template.spec({**config, "REGS": 0}, ARCH), ARCH, discover())
    capped = compile_variant(template.spec({**config, "REGS": 128}, ARCH), ARCH, discover())
    assert isinstance(free, Compiled) and isinstance(capped, Compiled)
    assert free.registers > 128 >= capped.registers and capped.spill_bytes > 0
    assert capped.blocks_per_sm > free.blocks_per_sm
    softmax = find_template(str(EXAMPLES / "softmax_search.toml"))
    ptx = {block: softmax.spec({"BLOCK": block}, ARCH).ptx for block in (64, 1024)}
    # -DBLOCK sizes the kernel's scratch: one float per warp of the block.
    assert "scratch[8];" in ptx[64] and "scratch[128];" in ptx[1024]


def test_karyamorph_run_compiles_a_searched_spec_with_its_baseline_cap() -> None:
    doc = tomllib.loads((EXAMPLES / "sgemm_tiled.toml").read_text())
    doc["search"]["baseline"]["REGS"] = 128
    spec = spec_from_dict(doc, EXAMPLES, "sgemm_tiled.toml")
    lowered = prepare_spec(spec, ARCH).spec  # where run, check and campaigns meet the target
    entry = prepare_spec(spec, ARCH).module.entry("sgemm_tiled")
    assert entry is not None and entry.attribute("maxnreg") == (128,)
    assert "-DBM=64" in (spec.cuda.options if spec.cuda else ()) and ".maxnreg 128" in lowered.ptx


def test_a_launch_that_does_not_bind_is_outside_the_space() -> None:
    doc = tomllib.loads((EXAMPLES / "softmax_search.toml").read_text())
    doc["launch"]["block"] = ["BLOCK * 2"]
    del doc["search"]["constraints"]
    template = spec_template(spec_from_dict(doc, EXAMPLES, "softmax_search.toml"))
    assert [template.space(ARCH).config(i)["BLOCK"] for i in range(4)] == [64, 128, 256, 512]
    assert template.space(ARCH).size == 4  # 2 * 1024 threads fit no block


def test_what_cannot_be_searched_is_a_located_spec_error() -> None:
    with pytest.raises(SpecError, match=r"^vadd.toml: has no \[search\] table"):
        spec_template(load_spec(ROOT / "datasets" / "kernels" / "vadd.toml"))
    doc = tomllib.loads((EXAMPLES / "softmax_search.toml").read_text())
    no_torch = dict(doc, reference={"python": "refs:softmax"})
    with pytest.raises(SpecError, match=r"^softmax_search.toml: reference.torch: a search races"):
        spec_template(spec_from_dict(no_torch, EXAMPLES, "softmax_search.toml"))
    doc["search"]["constraints"] = ["BLOCK <= 128", "BLOCK * 2 > 256"]  # each alone meets one
    with pytest.raises(SpecError, match=r"^softmax_search.toml: search.constraints: together they exclude"):
        spec_from_dict(doc, EXAMPLES, "softmax_search.toml")


def test_a_variant_is_a_plain_spec_that_runs_anywhere() -> None:
    template = find_template(str(EXAMPLES / "saxpy_stride.toml"))
    spec = template.spec({"block_size_x": 512, "BLOCKS_PER_SM": 2, "REGS": 32}, ARCH, {"n": 99, "sms": 4})
    assert spec.launch.block == (512,) and spec.launch.grid == ("min(ceildiv(n, 512), sms * 2)",)
    assert spec.sizes == {"n": 99, "sms": 4} and ".maxnreg 32" in spec.ptx
    same = dataclasses.replace(spec, sizes={"n": 5000, "sms": 132})
    assert template.spec(template.config({"block_size_x": 512, "BLOCKS_PER_SM": 2, "REGS": 32}), ARCH,
                         {"n": 5000, "sms": 132}) == same  # fmt: skip
