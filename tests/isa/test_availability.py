"""What instructions and modules need (karyamorph.isa.availability): requirements of single
instructions, module-level checks, and real compiler output against ptxas."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from karyamorph.isa import ast
from karyamorph.isa.availability import module_problems, module_requirements, requirement, unknown_opcodes
from karyamorph.isa.catalog import lookup
from karyamorph.isa.parser import parse, parse_file
from karyamorph.isa.requirement import Requirement
from karyamorph.isa.versions import compatibility

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _ins(full: str, operands: int = 0, line: int = 0) -> ast.Instruction:
    opcode, *mods = full.split(".")
    ops = tuple(ast.Register(f"%r{i}") for i in range(operands))
    return ast.Instruction(opcode, tuple(mods), ops, loc=ast.Loc(line, 1))


def _module(version: str, target: str, *instructions: ast.Instruction) -> ast.Module:
    body = (*instructions, ast.Instruction("ret", (), ()))
    return ast.Module(version, (target,), 64, (ast.Function("entry", "k", (), body),))


def _req(full: str, operands: int = 0) -> Requirement:
    req = requirement(_ins(full, operands))
    assert req is not None, full
    return req


# ----------------------------------------------------------------------------------------------
# Requirements of single instructions


@pytest.mark.parametrize(("full", "ptx", "target"), [
    ("shfl.sync.bfly.b32", "6.0", "sm_30"),
    ("redux.sync.add.u32", "7.0", "sm_80"),
    ("cp.async.ca.shared.global", "7.0", "sm_80"),
    ("cp.async.commit_group", "7.0", "sm_80"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "8.0", "sm_90"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes", "8.0", "sm_90"),
    ("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "8.0", "sm_90a"),
    ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", "8.6", "sm_100a"),
    ("elect.sync", "8.0", "sm_90"),
    ("mbarrier.init.shared.b64", "7.0", "sm_80"),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16", "6.5", "sm_75"),
    ("stmatrix.sync.aligned.m8n8.x4.shared.b16", "7.8", "sm_90"),
    ("setmaxnreg.inc.sync.aligned.u32", "8.0", "sm_90a"),
    ("fence.proxy.async.shared::cta", "8.0", "sm_90"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "7.0", "sm_80"),
    ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "8.4", "sm_89"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32", "8.7", "sm_89"),
    ("mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e2m1.e2m1.f32", "8.7", "sm_120a"),
    ("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", "7.8", "sm_90"),
    ("add.rn.f32x2", "8.6", "sm_100"),
    ("add.rn.f32.f16", "8.6", "sm_100"),
    ("add.s32", "1.0", "sm_20"),
    # .bf16 conversions: sm_80 has them to and from .f32 only (ptxas 13: "Feature 'cvt with
    # .s32.bf16' requires .target sm_90 or higher"); .bf16 to .bf16 is named by its repeat
    ("cvt.rn.bf16.f32", "7.0", "sm_80"),
    ("cvt.f32.bf16", "7.0", "sm_80"),
    ("cvt.rzi.s32.bf16", "7.8", "sm_90"),
    ("cvt.rn.bf16.u16", "7.8", "sm_90"),
    ("cvt.f64.bf16", "7.8", "sm_90"),
    ("cvt.ftz.f32.bf16", "7.8", "sm_90"),
    ("cvt.bf16.bf16", "7.8", "sm_90"),
])  # fmt: skip
def test_requirement_of_instruction(full: str, ptx: str, target: str) -> None:
    req = _req(full)
    assert (req.min_ptx, req.min_target) == (ptx, target)
    opcode, *mods = full.split(".")
    entry = lookup(opcode, tuple(mods))
    assert entry is not None and req.reason.startswith(entry.opcode)


def test_wgmma_is_refused_on_sm_120_and_sm_100() -> None:
    req = _req("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16")
    assert req.satisfied_by("8.0", "sm_90a")
    assert not req.satisfied_by("8.7", "sm_120")
    assert not req.satisfied_by("8.7", "sm_120a")
    assert not req.satisfied_by("8.6", "sm_100a")
    assert not req.satisfied_by("8.0", "sm_90")


def test_cp_async_on_sm_80_is_fine_and_not_before() -> None:
    req = _req("cp.async.cg.shared.global")
    assert req.satisfied_by("7.0", "sm_80")
    assert req.satisfied_by("8.7", "sm_120")
    assert not req.satisfied_by("6.5", "sm_75")
    assert not req.satisfied_by("6.5", "sm_80")


def test_fp8_mma_needs_sm_89_and_ptx_8_4() -> None:
    req = _req("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32")
    assert req.satisfied_by("8.4", "sm_89")
    assert not req.satisfied_by("8.3", "sm_89")
    assert not req.satisfied_by("8.7", "sm_86")
    assert req.satisfied_by("8.7", "sm_120")


def test_f8f6f4_mma_is_arch_or_family_specific_to_sm_12x() -> None:
    req = _req("mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e3m2.e2m1.f32")
    assert "kind::f8f6f4" in req.reason
    assert req.satisfied_by("8.7", "sm_120a")
    assert req.satisfied_by("8.8", "sm_121a")
    assert req.satisfied_by("8.8", "sm_120f")
    assert not req.satisfied_by("8.7", "sm_120f")
    assert not req.satisfied_by("8.7", "sm_120")
    assert not req.satisfied_by("9.0", "sm_100a")


def test_tcgen05_reaches_other_datacenter_targets_but_not_sm_120() -> None:
    req = _req("tcgen05.mma.cta_group::1.kind::f16")
    assert req.satisfied_by("8.6", "sm_100a")
    assert req.satisfied_by("8.8", "sm_103a")
    assert req.satisfied_by("9.0", "sm_110f")
    assert req.satisfied_by("9.4", "sm_107a")
    assert not req.satisfied_by("8.6", "sm_100")
    assert not req.satisfied_by("8.8", "sm_103")
    assert not req.satisfied_by("8.7", "sm_120a")


def test_setmaxnreg_and_redux_f32_alternatives() -> None:
    setmaxnreg = _req("setmaxnreg.dec.sync.aligned.u32")
    assert setmaxnreg.satisfied_by("8.7", "sm_120a")
    assert not setmaxnreg.satisfied_by("8.7", "sm_120")
    assert "sm_120a" in setmaxnreg.describe()
    redux = _req("redux.sync.max.f32")
    assert (redux.min_ptx, redux.min_target) == ("8.6", "sm_100a")
    assert redux.satisfied_by("8.8", "sm_103a")
    assert not redux.satisfied_by("8.8", "sm_120a")


def test_fp8_cvt_needs_a_later_version_on_sm_89_than_on_sm_90() -> None:
    req = _req("cvt.rn.satfinite.e4m3x2.f32")
    assert req.satisfied_by("7.8", "sm_90")
    assert req.satisfied_by("8.1", "sm_89")
    assert not req.satisfied_by("7.8", "sm_89")


def test_operand_count_decides_three_input_min() -> None:
    assert _req("min.f32", operands=3).min_target == "sm_20"
    three = _req("max.f32", operands=4)
    assert (three.min_ptx, three.min_target) == ("8.8", "sm_100")
    assert "three inputs" in three.reason


def test_requirement_of_an_unknown_opcode_is_none() -> None:
    assert requirement(_ins("frobnicate.b32")) is None


# ----------------------------------------------------------------------------------------------
# Modules


def test_module_requirements_above_the_baseline() -> None:
    module = _module(
        "9.0",
        "sm_90a",
        _ins("add.s32", 3),
        _ins("cp.async.ca.shared.global"),
        _ins("elect.sync", 2),
        _ins("wgmma.fence.sync.aligned"),
    )
    found = {i.full_opcode: r.min_target for i, r in module_requirements(module)}
    assert found == {"elect.sync": "sm_90", "wgmma.fence.sync.aligned": "sm_90a"}
    assert [i.opcode for i, _ in module_requirements(module, "8.0", "sm_90a")] == []
    assert [i.opcode for i, _ in module_requirements(module, "6.5", "sm_75")] == ["cp", "elect", "wgmma"]


def test_unknown_opcodes() -> None:
    module = _module("9.0", "sm_90", _ins("frob.x"), _ins("cp.foo.bar"), _ins("add.s32", 3))
    assert unknown_opcodes(module) == {"frob", "cp.foo"}


def test_module_problems_name_the_line_and_count() -> None:
    wgmma = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"
    f8 = "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e2m1.e2m1.f32"
    module = _module("8.7", "sm_120", _ins(wgmma, line=10), _ins(wgmma, line=12), _ins(f8, line=14))
    problems = module_problems(module)
    assert [p.severity for p in problems] == ["error", "error"]
    assert problems[0].message.startswith("line 10: wgmma needs PTX ISA >= 8.0 and sm_90a")
    assert problems[0].message.endswith("(2 instructions)")
    assert "line 14: mma (.kind::f8f6f4 or block scaling)" in problems[1].message
    # on sm_120a the fp4 mma is fine, wgmma still is not
    still = module_problems(module, "sm_120a")
    assert len(still) == 1 and "wgmma" in still[0].message


def test_shfl_without_sync_is_retired_on_sm_70_from_ptx_6_4() -> None:
    shfl = _ins("shfl.bfly.b32", 4)
    assert "shfl without .sync" in module_problems(_module("6.4", "sm_75", shfl))[0].message
    assert module_problems(_module("6.3", "sm_75", shfl)) == []
    assert module_problems(_module("6.4", "sm_75", _ins("shfl.sync.bfly.b32", 5))) == []


def test_module_without_target_has_nothing_to_check() -> None:
    module = ast.Module("9.0", (), 64, (ast.Function("entry", "k", (), (_ins("wgmma.fence"),)),))
    assert module_problems(module) == []


# ----------------------------------------------------------------------------------------------
# Real compiler output (the round-trip corpus: every file assembles for its own .target)


CORPUS_FILES = sorted(CORPUS.glob("*/*.ptx"))


@pytest.mark.skipif(not CORPUS_FILES, reason="no PTX corpus in this checkout")
def test_corpus_is_fully_catalogued_and_consistent() -> None:
    for path in CORPUS_FILES:
        module = parse_file(path)
        assert unknown_opcodes(module) == set(), path.name
        assert module_problems(module) == [], path.name


# Files with requirements above sm_80, retargeted: our verdict must be ptxas' verdict.
CROSS_FILES = [
    "nvcc/bulk_copy_cluster.sm_90.ptx",
    "nvcc/mma_fp8.sm_120a.ptx",
    "nvcc/mma_fp8.sm_89.ptx",
    "triton/matmul_f16.sm_90a.ptx",
    "triton/softmax_rows.sm_120a.ptx",
    "triton/layernorm_fwd.sm_120a.ptx",
    "nvcc/cp_async_pipeline.sm_80.ptx",
]
CROSS_TARGETS = ["sm_75", "sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_103a", "sm_120", "sm_120a"]


def test_verdicts_agree_with_ptxas_on_retargeted_corpus(tmp_path: Path) -> None:
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        pytest.skip("cuda.pathfinder is not installed")
    ptxas = find_nvidia_binary_utility("ptxas")
    files = [CORPUS / f for f in CROSS_FILES if (CORPUS / f).exists()]
    if ptxas is None or not files:
        pytest.skip("no ptxas or no corpus")
    disagreements = []
    for path in files:
        text = path.read_text()
        for target in CROSS_TARGETS:
            retargeted = re.sub(r"^\.target\s+\S+", f".target {target}", text, count=1, flags=re.M)
            module = parse(retargeted)
            ours = not module_problems(module) and not any(
                p.severity == "error" for p in compatibility(module.version, target, target)
            )
            src = tmp_path / "k.ptx"
            src.write_text(retargeted)
            done = subprocess.run(
                [ptxas, "-arch", target, str(src), "-o", str(tmp_path / "k.o")],
                capture_output=True,
                text=True,
            )
            if ours != (done.returncode == 0):
                disagreements.append((path.name, target, done.stderr[:200]))
    assert disagreements == []
