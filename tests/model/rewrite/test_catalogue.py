"""The catalogue's PTX edits, on the shipped kernels and small ones of the tests: which rewrites a
kernel admits, what each edit writes, and that every rewritten kernel assembles with ptxas."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.tools.nvcc import lower
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.rewrite import REWRITES, Target, candidates, rewrite_named, rewritten_spec
from karyamorph.model.rewrite.edits import load_buffer, loop_headers, pointer_sources

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
SPECS = {
    "vadd": ROOT / "datasets/kernels/vadd.toml",
    "softmax_cu": ROOT / "datasets/kernels/softmax_cu.toml",
    "saxpy_stride": ROOT / "datasets/searches/examples/saxpy_stride.toml",
    "softmax_rows": ROOT / "datasets/searches/examples/softmax_rows.toml",
    "sgemm_tiled": ROOT / "datasets/searches/examples/sgemm_tiled.toml",
    "softmax_search": ROOT / "datasets/searches/examples/softmax_search.toml",
    "block_sum": DATA / "block_sum.toml",
    "double_inplace": DATA / "double_inplace.toml",
}


def spec_of(name: str) -> KernelSpec:
    spec = load_spec(SPECS[name])
    return lower(spec, Arch.parse("sm_90")) if spec.cuda is not None else spec


def opcodes(spec: KernelSpec) -> list[str]:
    return [
        i.full_opcode for i in parse(spec.ptx).entry(spec.entry).instructions() if i.opcode in ("ld", "st")
    ]


def test_vadd_admits_every_family_but_the_unroll_pragmas() -> None:
    names = [r.name for r in candidates(spec_of("vadd"))]
    assert names == [
        "ld.nc", "ld.nc:a", "ld.nc:b", "ld.cg", "ld.cs", "ld.lu", "st.cs", "st.wt", "maxnreg=32",
        "maxnreg=64", "maxnreg=128", "minnctapersm=2", "minnctapersm=4", "reqntid", "block=128", "block=512",
    ]  # fmt: skip


def test_a_block_the_spec_does_not_fix_is_left_to_its_search() -> None:
    names = [r.name for r in candidates(spec_of("saxpy_stride"))]
    assert "nounroll" in names  # its grid-stride loop
    assert not [n for n in names if n.startswith("block=")]  # block_size_x is a search parameter


def test_the_load_rewrite_edits_plain_global_loads_only() -> None:
    spec = spec_of("vadd")
    after = rewritten_spec(spec, REWRITES["ld.nc"])
    assert opcodes(spec) == ["ld.param.u64"] * 3 + [
        "ld.param.u32",
        "ld.global.f32",
        "ld.global.f32",
        "st.global.f32",
    ]
    assert opcodes(after)[4:] == ["ld.global.nc.f32", "ld.global.nc.f32", "st.global.f32"]
    stored = rewritten_spec(spec, REWRITES["st.wt"])
    assert opcodes(stored)[4:] == ["ld.global.f32", "ld.global.f32", "st.global.wt.f32"]


def global_loads(spec: KernelSpec) -> list[ast.Instruction]:
    entry = parse(spec.ptx).entry(spec.entry)
    return [i for i in entry.instructions() if i.opcode == "ld" and "global" in i.modifiers]


def test_nc_of_one_buffer_edits_the_loads_whose_address_derives_from_it() -> None:
    spec = spec_of("saxpy_stride")
    sources = pointer_sources(parse(spec.ptx).entry(spec.entry))
    assert [load_buffer(i, sources) for i in global_loads(spec)] == ["x", "y"]
    after = global_loads(rewritten_spec(spec, rewrite_named("ld.nc:x")))
    assert [i.full_opcode for i in after] == ["ld.global.nc.f32", "ld.global.f32"]
    with pytest.raises(KeyError):
        rewrite_named("ld.foo")


def test_directives_are_written_on_the_entry() -> None:
    spec = spec_of("vadd")
    entry = parse(rewritten_spec(spec, REWRITES["minnctapersm=2"]).ptx).entry("vadd")
    assert entry.attributes == (("minnctapersm", (2,)), ("maxntid", (256, 1, 1)))
    entry = parse(rewritten_spec(spec, REWRITES["reqntid"]).ptx).entry("vadd")
    assert entry.attributes == (("reqntid", (256, 1, 1)),)


def test_nounroll_goes_on_the_loop_header_and_unroll_takes_it_away() -> None:
    spec = spec_of("block_sum")
    assert loop_headers(parse(spec.ptx).entry("block_sum")) == ("LOOP",)
    rolled = rewritten_spec(spec, REWRITES["nounroll"])
    body = parse(rolled.ptx).entry("block_sum").body or ()
    at = next(i for i, s in enumerate(body) if isinstance(s, ast.Label) and s.name == "LOOP")
    assert body[at + 1] == ast.Directive("pragma", '"nounroll"', terminated=True)
    assert [r.name for r in candidates(rolled)].count("unroll") == 1
    assert "nounroll" not in rewritten_spec(rolled, REWRITES["unroll"]).ptx


def test_a_block_rewrite_scales_the_grid_to_cover_the_same_threads() -> None:
    spec = spec_of("vadd")
    half = bind(rewritten_spec(spec, REWRITES["block=128"]), sizes={"n": 4099})
    assert (half.block, half.grid) == ((128, 1, 1), (34, 1, 1))
    wide = bind(rewritten_spec(spec, REWRITES["block=512"]), sizes={"n": 4099})
    assert (wide.block, wide.grid) == ((512, 1, 1), (9, 1, 1))  # 17 blocks of 256 -> 4352 threads


def test_an_edit_that_changes_nothing_does_not_apply() -> None:
    spec = spec_of("softmax_cu")
    module = parse(spec.ptx)
    target = Target(module, spec.entry, bind(spec).block)
    assert not REWRITES["unroll"].applies(target)  # nvcc wrote no nounroll pragma here
    assert not REWRITES["block=256"].applies(target)  # its block already


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_rewritten_kernel_assembles(name: str) -> None:
    spec = spec_of(name)
    toolchain = discover()
    admitted = candidates(spec)
    assert admitted
    for rewrite in admitted:
        rewritten = rewritten_spec(spec, rewrite)
        report = assemble(rewritten.ptx, "sm_90", toolchain, filename=f"{name}-{rewrite.name}.ptx")
        assert spec.entry in report.functions, rewrite.name
