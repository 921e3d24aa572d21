"""compute-sanitizer: XML parser, PTX-line mapping and command line, on reports recorded on an H200."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from karyamorph.harness.stages.base import Context, Status
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.tools.nvdisasm import disassemble, line_map
from karyamorph.harness.tools.sanitizer import TOOLS, error_summary, help_options, sanitizer_argv
from karyamorph.harness.tools.sanitizer_report import (
    SanitizerError,
    SanitizerFinding,
    is_about,
    parse_xml,
    read_report,
    with_ptx_lines,
)
from karyamorph.harness.tools.toolchain import discover, parse_version
from karyamorph.isa.arch import Arch

GOLDEN = Path(__file__).parents[2] / "golden" / "compute-sanitizer"
DATA = Path(__file__).parents[1] / "data"
META = json.loads((GOLDEN / "meta.json").read_text())


def report(name: str) -> list[SanitizerFinding]:
    tool = META["files"][f"{name}.xml"]["tool"]
    return read_report(GOLDEN / f"{name}.xml", tool)


def recorded_lines(kernel: str) -> dict[int, list[int]]:
    """PTX line -> SASS offsets of the cubin that ran under the tool (disassembled here)."""
    dis = disassemble((GOLDEN / f"{kernel}.sm_90.cubin").read_bytes(), discover())
    return line_map(dis, kernel)


def ptx_line(kernel: str, pattern: str) -> int:
    lines = (DATA / f"{kernel}.ptx").read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if re.search(pattern, line)]
    assert len(hits) == 1, hits
    return hits[0]


def test_the_recording_names_its_tool_version() -> None:
    assert parse_version(META["version_output"]) == ("2025.3", META["version"]) == ("2025.3", "2025.3.1.0")


def test_memcheck_record_of_the_planted_out_of_bounds_write() -> None:
    (finding,) = report("san_oob_write.memcheck")
    assert finding.tool == "memcheck"
    assert finding.kind == "Invalid __global__ write of size 4 bytes is out of bounds"
    assert (finding.category, finding.level) == ("Precise", "Error")
    assert finding.kernel == "san_oob_write"
    assert finding.pc == 0xC0 and finding.pcs == (0xC0,)
    # n = 1024: the one thread past the end is i = 1024, thread 0 of block 4.
    assert finding.block == (4, 0, 0) and finding.thread == (0, 0, 0)
    assert finding.size == 4
    assert finding.address is not None and finding.address % 4096 == 0  # just past a 4 KiB buffer
    assert finding.fields["what/direction"] == "write"
    # The host call stack is not part of the finding.
    assert not any("frame" in key or "hostStack" in key for key in finding.fields)
    assert is_about(finding, "san_oob_write") and not is_about(finding, "vadd")


def test_memcheck_finding_lands_on_the_ptx_store() -> None:
    lines = recorded_lines("san_oob_write")
    (finding,) = with_ptx_lines(report("san_oob_write.memcheck"), lines)
    assert finding.ptx_line == ptx_line("san_oob_write", r"^\s*st\.global\.f32")
    row = finding.as_row("san_oob_write.ptx")
    assert row["location"] == f"san_oob_write.ptx:{finding.ptx_line} (san_oob_write+0xc0)"
    assert row["detail"]["block"] == [4, 0, 0] and row["detail"]["address"].startswith("0x")
    json.dumps(row)  # the store keeps it as JSON


def test_racecheck_analysis_names_both_accesses_of_the_race() -> None:
    (finding,) = report("san_racy_reduce.racecheck")
    assert finding.tool == "racecheck" and finding.kind == "Race condition"
    assert (finding.category, finding.level) == ("Analysis", "Error")
    assert finding.kernel == "san_racy_reduce"
    assert [(a.role, a.direction, a.pc) for a in finding.accesses] == [
        ("source", "Read", 0x160),
        ("destination", "Write", 0x180),
    ]
    assert finding.count is not None and finding.count > 0
    (mapped,) = with_ptx_lines([finding], recorded_lines("san_racy_reduce"))
    read, write = mapped.accesses
    # The read of the neighbour's partial sum races with the store of the same loop level.
    assert read.ptx_line == ptx_line("san_racy_reduce", r"ld\.shared\.f32\s+%hi")
    assert write.ptx_line == ptx_line("san_racy_reduce", r"^\s*st\.shared\.f32\s+\[%mine\], %lo")
    assert mapped.ptx_lines == (read.ptx_line, write.ptx_line)


def test_a_clean_run_has_no_records() -> None:
    assert report("vadd.memcheck") == []


@pytest.mark.parametrize(
    ("name", "errors"),
    [("san_oob_write.memcheck", 1), ("san_racy_reduce.racecheck", 1), ("vadd.memcheck", 0)],
)
def test_the_printed_summary_agrees_with_the_xml(name: str, errors: int) -> None:
    log = (GOLDEN / META["files"][f"{name}.xml"]["log"]).read_text()
    assert error_summary(log) == errors == len(report(name))


def test_the_printed_report_names_the_same_place_as_the_xml() -> None:
    log = (GOLDEN / "san_oob_write.memcheck.log").read_text()
    (finding,) = report("san_oob_write.memcheck")
    assert f"at san_oob_write+0x{finding.pc:x}" in log
    assert "by thread (0,0,0) in block (4,0,0)" in log
    assert f"Access to 0x{finding.address:x} is out of bounds" in log


def test_reports_that_are_not_sanitizer_xml_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(SanitizerError, match="not well-formed XML"):
        parse_xml("<ComputeSanitizerOutput><record>", "memcheck")
    with pytest.raises(SanitizerError, match="expected <ComputeSanitizerOutput>"):
        parse_xml("<report/>", "memcheck")
    with pytest.raises(SanitizerError, match=r"memcheck wrote no report at missing\.xml"):
        read_report(tmp_path / "missing.xml", "memcheck")
    (tmp_path / "empty.xml").write_text("")
    with pytest.raises(SanitizerError, match="empty"):
        read_report(tmp_path / "empty.xml", "memcheck")


def test_host_side_api_errors_and_other_kernels_are_not_findings_of_the_kernel() -> None:
    api = SanitizerFinding(
        "memcheck",
        "Program hit CUDA_ERROR_INVALID_CONTEXT (error 201) due to invalid device context "
        "on CUDA API call to cuCtxGetDevice.",
        category="Host API",
    )
    assert api.is_api_error and not is_about(api, "vadd")
    other = SanitizerFinding("memcheck", "Invalid __global__ read of size 4 bytes", kernel="fill_kernel")
    assert not is_about(other, "vadd")
    unattributed = SanitizerFinding("memcheck", "Warp Illegal Address")
    assert is_about(unattributed, "vadd")  # kept: nothing says it is someone else's


def test_help_of_the_recorded_version_lists_the_options_the_stage_uses() -> None:
    options = help_options((GOLDEN / META["help"]).read_text())
    assert options["--xml"] == "none"  # a bare switch in 2025.3: "--xml=yes" would be refused
    for option in ("--tool", "--save", "--print-limit", "--kernel-name", "--padding"):
        assert options[option] == "required", option
    assert options["--report-api-errors"] == options["--racecheck-report"] == "required"
    assert options["--help"] == "none"


@pytest.mark.parametrize("name", sorted(META["files"]))
def test_the_command_line_is_the_recorded_one(name: str) -> None:
    recorded = META["files"][name]
    options = help_options((GOLDEN / META["help"]).read_text())
    argv = sanitizer_argv(
        Path(recorded["command"][0]), recorded["tool"], Path("<run>") / f"{recorded['tool']}.xml",
        recorded["kernel"], options=options,
    )  # fmt: skip
    worker = recorded["command"].index("python3")
    assert argv == recorded["command"][:worker]


def test_options_an_older_sanitizer_lacks_are_left_out() -> None:
    options = {
        "--tool": "required",
        "--save": "required",
        "--xml": "implicit",
        "--print-limit": "required",
    }
    argv = sanitizer_argv(Path("cs"), "memcheck", Path("m.xml"), "vadd", options=options)
    assert argv == ["cs", "--tool", "memcheck", "--xml=yes", "--save", "m.xml", "--print-limit", "0"]
    with pytest.raises(ValueError, match="unknown compute-sanitizer tool"):
        sanitizer_argv(Path("cs"), "leakcheck", Path("m.xml"), "vadd")


def test_the_stage_skips_without_a_device_and_refuses_unknown_tools() -> None:
    context = Context(kernel=None, arch=Arch.parse("sm_90"), toolchain=None)
    result = SanitizeStage().run(context)
    assert result.status == Status.SKIP and result.log == "no CUDA device"
    context.device = object()
    assert SanitizeStage().run(context).log == "compile did not pass"
    with pytest.raises(ValueError, match="unknown compute-sanitizer tools"):
        SanitizeStage(tools=("memcheck", "leakcheck"))
    assert set(TOOLS) == {"memcheck", "racecheck", "synccheck", "initcheck"}
