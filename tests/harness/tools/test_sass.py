"""SASS: parsers on recorded nvdisasm/cuobjdump output, live disassembly, and the sass stage."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from karyamorph.harness.stages.base import Context, Status
from karyamorph.harness.stages.sass import SassStage
from karyamorph.harness.tools.nvdisasm import (
    Disassembly,
    SassError,
    disassemble,
    instruction_mix,
    line_map,
    parse_json,
    parse_text,
    supports_json,
)
from karyamorph.harness.tools.ptxas import Assembly, assemble
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.isa.arch import Arch

GOLDEN = Path(__file__).parents[2] / "golden"
# Text prints targets as labels (`(.L_x_0)), JSON and cuobjdump as names or offsets.
BRANCHES = {"BRA", "CALL", "RET", "JMP", "BRX", "JMX"}
HEADER = re.compile(
    r"# tool: (?P<tool>nvdisasm|cuobjdump) (?P<version>\d+\.\d+\.\d+); ptxas \S+; command: .*"
)


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    return discover()


@pytest.fixture(scope="module")
def saxpy_sm90(toolchain: Toolchain) -> Assembly:
    return assemble((GOLDEN / "ptxas" / "saxpy.ptx").read_text(), "sm_90", toolchain)


@pytest.fixture(scope="module")
def live(saxpy_sm90: Assembly, toolchain: Toolchain) -> Disassembly:
    return disassemble(saxpy_sm90.cubin, toolchain)


def recorded(path: str) -> tuple[str, str]:
    """(tool version, output) of a recorded text disassembly."""
    header, _, body = (GOLDEN / path).read_text().partition("\n")
    match = HEADER.fullmatch(header)
    assert match is not None, f"{path}: first line must name the tool version and command"
    return match["version"], body


def shape(dis: Disassembly) -> list[tuple[object, ...]]:
    """What every tool and format must agree on; branch targets are printed differently."""
    return [
        (fn.name, i.offset, i.opcode, i.predicate, "" if i.base in BRANCHES else i.operands)
        for fn in dis.functions.values()
        for i in fn.instructions
    ]


# -- parsers on recorded output -----------------------------------------------------------------


def test_nvdisasm_text_with_both_kinds_of_line_info() -> None:
    dis = parse_text(recorded("nvdisasm/saxpy.sm_90.txt")[1])
    assert dis.arch == "sm_90" and dis.lineinfo and list(dis.functions) == ["saxpy"]
    fn = dis.functions["saxpy"]
    assert (len(fn.instructions), fn.padding, len(fn.body)) == (32, 13, 19)
    exit_ = fn.instructions[7]
    assert (exit_.offset, exit_.opcode, exit_.predicate, exit_.operands) == (0x70, "EXIT", "P0", "")
    ldg = fn.instructions[13]
    assert (ldg.offset, ldg.opcode, ldg.base, ldg.operands) == (
        0xD0,
        "LDG.E",
        "LDG",
        "R2, desc[UR4][R2.64]",
    )
    assert (ldg.file, ldg.line, ldg.ptx_line) == ("saxpy.cu", 6, 41)
    ffma = fn.instructions[16]
    assert (ffma.opcode, ffma.line, ffma.ptx_line) == ("FFMA", 6, 43)
    assert [i.opcode for i in fn.instructions[19:]] == ["BRA"] + ["NOP"] * 12


def test_line_maps_from_recorded_text() -> None:
    dis = parse_text(recorded("nvdisasm/saxpy.sm_90.txt")[1])
    assert line_map(dis, source="loc") == {
        3: [0x0],
        4: [0x10, 0x20, 0x30, 0x40],
        5: [0x50, 0x60, 0x70],
        6: [0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0, 0x100],
        7: [0x110],
        8: [0x120],
    }
    ptx_lines = line_map(dis)
    assert ptx_lines[43] == [0xA0, 0x100]  # fma: the FFMA and the ULDC of its scalar operand
    assert ptx_lines[45] == [0x110]  # st.global.f32 -> STG
    assert ptx_lines[30] == [0x10]  # mov.u32 %r4, %tid.x -> S2R


def test_instruction_mix_leaves_out_padding() -> None:
    dis = parse_text(recorded("nvdisasm/saxpy.sm_90.txt")[1])
    assert instruction_mix(dis) == {
        "LDC": 4, "IMAD": 3, "ULDC": 3, "EXIT": 2, "LDG": 2,
        "FFMA": 1, "ISETP": 1, "S2R": 1, "S2UR": 1, "STG": 1,
    }  # fmt: skip
    padded = instruction_mix(dis, "saxpy", include_padding=True)
    assert (padded["NOP"], padded["BRA"]) == (12, 1)
    with pytest.raises(KeyError, match="no function 'other'"):
        instruction_mix(dis, "other")


def test_ptx_lines_without_loc_and_a_subroutine() -> None:
    dis = parse_text(recorded("nvdisasm/rich.sm_120.txt")[1])
    fn = dis.functions["rich"]
    assert dis.arch == "sm_120" and (len(fn.instructions), fn.padding) == (40, 15)
    assert line_map(dis, source="loc") == {}
    lines = line_map(dis, "rich")
    assert lines[34] == [0xE0]  # bar.sync 0
    assert lines[33] == [0xD0]  # st.shared.f32
    assert lines[8] == [0x160, 0x170]  # mul.f32 inside the called .func
    assert {"BAR", "STS", "LDS", "CALL", "RET"} <= set(instruction_mix(dis))
    assert dis.labels["rich"]["$rich$scale"] == 0x160


def test_json_agrees_with_text_and_carries_flags() -> None:
    for name in ("saxpy.sm_90", "rich.sm_120"):
        meta = json.loads((GOLDEN / "nvdisasm" / f"{name}.meta.json").read_text())
        assert meta["tool"] == "nvdisasm" and re.fullmatch(r"\d+\.\d+\.\d+", meta["version"])
        structured = parse_json((GOLDEN / "nvdisasm" / f"{name}.json").read_text())
        text = parse_text(recorded(f"nvdisasm/{name}.txt")[1])
        assert structured.tool == "nvdisasm -json" and structured.arch == text.arch
        assert shape(structured) == shape(text)
        assert (
            structured.functions[next(iter(text.functions))].padding
            == next(iter(text.functions.values())).padding
        )
    rich = parse_json((GOLDEN / "nvdisasm" / "rich.sm_120.json").read_text()).functions["rich"]
    flags = {i.base: i.flags for i in rich.instructions if i.flags}
    assert flags["BAR"] == ("inter-warp-barrier",)
    assert flags["CALL"] == ("control-flow", "subroutine-call")


def test_cuobjdump_agrees_with_nvdisasm() -> None:
    _, body = recorded("cuobjdump/saxpy.sm_90.txt")
    dump = parse_text(body, tool="cuobjdump")
    text = parse_text(recorded("nvdisasm/saxpy.sm_90.txt")[1])
    assert dump.arch == "sm_90" and not dump.lineinfo
    assert shape(dump) == shape(text)
    assert dump.functions["saxpy"].padding == 13


def test_malformed_json_is_a_sass_error() -> None:
    with pytest.raises(SassError, match=r"not \[header, functions\]"):
        parse_json('{"not": "a list"}')
    with pytest.raises(SassError, match="KeyError"):
        parse_json('[{}, [{"function-name": "f"}]]')


# -- live tools ---------------------------------------------------------------------------------


def test_recorded_text_matches_the_installed_nvdisasm(live: Disassembly, toolchain: Toolchain) -> None:
    version, body = recorded("nvdisasm/saxpy.sm_90.txt")
    if version != toolchain.versions["nvdisasm"] or toolchain.versions["ptxas"] != version:
        pytest.skip(f"recorded with nvdisasm {version}; installed {toolchain.versions['nvdisasm']}")
    assert live.text == body
    assert live.functions == parse_text(body).functions


def test_live_mix_and_line_map(live: Disassembly) -> None:
    mix = instruction_mix(live, "saxpy")
    assert {"LDG", "STG", "FFMA", "EXIT"} <= set(mix)
    lines = line_map(live)
    assert lines, "a PTX with .loc assembled with -lineinfo must map lines"
    ffma = [i.offset for i in live.functions["saxpy"].body if i.base == "FFMA"]
    assert ffma and set(ffma) <= set(lines[43])  # line 43 of saxpy.ptx is the fma.rn.f32


def test_without_line_info_the_json_form_is_used(
    saxpy_sm90: Assembly, live: Disassembly, toolchain: Toolchain
) -> None:
    assert toolchain.nvdisasm is not None and supports_json(toolchain.nvdisasm)
    structured = disassemble(saxpy_sm90.cubin, toolchain, with_lineinfo=False)
    assert structured.tool == "nvdisasm -json" and line_map(structured) == {}
    assert shape(structured) == shape(live)


def test_cuobjdump_is_the_fallback(saxpy_sm90: Assembly, live: Disassembly, toolchain: Toolchain) -> None:
    dump = disassemble(saxpy_sm90.cubin, dataclasses.replace(toolchain, nvdisasm=None))
    assert dump.tool == "cuobjdump" and shape(dump) == shape(live)
    with pytest.raises(SassError, match="pip install nvidia-cuda-nvdisasm"):
        disassemble(saxpy_sm90.cubin, dataclasses.replace(toolchain, nvdisasm=None, cuobjdump=None))


def test_a_broken_cubin_is_a_sass_error(toolchain: Toolchain) -> None:
    with pytest.raises(SassError, match="nvdisasm -c -g -gp -ndf exited with"):
        disassemble(b"\x7fELF not really", toolchain)


# -- the sass stage -----------------------------------------------------------------------------


def test_sass_stage_reports_mix_text_and_lines(saxpy_sm90: Assembly, toolchain: Toolchain) -> None:
    ctx = Context(
        kernel=None,
        arch=Arch.parse("sm_90"),
        toolchain=toolchain,
        cubin=saxpy_sm90.cubin,
        entry="saxpy",
    )
    result = SassStage().run(ctx)
    assert result.status is Status.PASS, result.log
    data = result.data
    assert data["function"] == "saxpy" and data["arch"] == "sm_90"
    assert data["instruction_count"] == sum(data["mix"].values()) == 19
    assert "FFMA" in data["mix"] and "NOP" not in data["mix"]
    assert "LDG.E R2, desc[UR4][R2.64]" in data["text"]
    assert data["lines"][45] == [0x110] and ctx.ptx_lines[45] == [0x110]
    json.dumps(data)
    figures = {f.name: f.value for f in result.figures}
    assert figures["sass_instructions"] == 19.0 and figures["sass_op_LDG"] == 2.0


def test_sass_stage_skips_without_a_cubin(toolchain: Toolchain) -> None:
    ctx = Context(kernel=None, arch=Arch.parse("sm_90"), toolchain=toolchain)
    result = SassStage().run(ctx)
    assert result.status is Status.SKIP and result.data == {"reason": "compile did not pass"}
