"""ptxas: the -v report parser on recorded logs, live assembly, errors, and the compile stage."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from karyamorph.harness.stages.base import Context, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.tools.ptxas import (
    Diagnostic,
    PtxasError,
    UnsupportedArchError,
    assemble,
    format_diagnostic,
    parse_diagnostics,
    parse_verbose,
    valid_archs,
)
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.isa.arch import Arch

GOLDEN = Path(__file__).parents[2] / "golden" / "ptxas"
HEADER = re.compile(
    r"# tool: ptxas (?P<version>\d+\.\d+\.\d+); exit status: (?P<rc>\d+); command: (?P<cmd>.*)"
)

# Line 12 uses %r7, which is never declared (%r<4> declares %r0..%r3).
BROKEN = """\
.version 8.7
.target sm_80
.address_size 64

.visible .entry broken(
    .param .u64 out
)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %r7;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    return discover()


def golden(name: str) -> tuple[re.Match[str], str]:
    """The header match and the recorded ptxas output of one golden file."""
    header, _, body = (GOLDEN / name).read_text().partition("\n")
    match = HEADER.fullmatch(header)
    assert match is not None, f"{name}: first line must name the ptxas version and command"
    return match, body


def ptx(name: str) -> str:
    return (GOLDEN / name).read_text()


# -- the parser against recorded logs ---------------------------------------------------------


def test_every_golden_names_its_tool_version() -> None:
    for path in GOLDEN.glob("*.txt"):
        _, body = golden(path.name)
        assert body.startswith("ptxas "), path.name


def test_saxpy_sm80_report() -> None:
    report = parse_verbose(golden("saxpy.sm_80.txt")[1])
    assert report.gmem_bytes == 0 and report.const_bytes == {}
    fn = report.functions["saxpy"]
    assert (fn.entry, fn.arch, fn.registers, fn.barriers) == (True, "sm_80", 10, 0)
    assert (fn.stack_frame_bytes, fn.spill_stores_bytes, fn.spill_loads_bytes) == (0, 0, 0)
    assert fn.const_bytes == {0: 376}
    assert fn.compile_time_ms == pytest.approx(2.455)
    assert fn.other == ()


def test_sm90_and_newer_print_no_cmem() -> None:
    fn = parse_verbose(golden("saxpy.sm_120.txt")[1]).functions["saxpy"]
    assert (fn.arch, fn.registers, fn.const_bytes) == ("sm_120", 10, {})


def test_shared_barrier_stack_and_callee_report() -> None:
    report = parse_verbose(golden("rich.sm_80.txt")[1])
    rich, scale = report.functions["rich"], report.functions["scale"]
    assert (rich.registers, rich.barriers, rich.shared_bytes) == (10, 1, 1024)
    assert (rich.stack_frame_bytes, rich.cumulative_stack_bytes) == (64, 64)
    assert rich.const_bytes == {0: 368}
    assert not scale.entry and scale.registers is None and scale.stack_frame_bytes == 0
    warned = parse_verbose(golden("rich.sm_90.txt")[1]).diagnostics
    assert warned == (
        Diagnostic(
            None, None, "warning", "Local memory used for function 'rich', size of stack frame: 64 bytes"
        ),
    )


def test_spill_report_and_warning() -> None:
    report = parse_verbose(golden("spill.sm_90.txt")[1])
    fn = report.functions["spill"]
    assert (fn.registers, fn.spill_stores_bytes, fn.spill_loads_bytes) == (24, 348, 460)
    assert (fn.stack_frame_bytes, fn.cumulative_stack_bytes) == (352, 352)
    assert [d.severity for d in report.diagnostics] == ["warning"]
    assert "Registers are spilled" in report.diagnostics[0].message


def test_relocatable_report_has_device_function_without_registers() -> None:
    report = parse_verbose(golden("spill-relocatable.sm_90.txt")[1])
    assert report.functions["spill"].registers == 56
    vf = report.functions["vf"]
    assert not vf.entry and vf.registers is None and vf.compile_time_ms == pytest.approx(1.095)


def test_module_level_gmem_and_constant_banks() -> None:
    report = parse_verbose(golden("cst.sm_80.txt")[1])
    assert report.gmem_bytes == 16
    assert report.const_bytes == {3: 256, 4: 8}
    assert report.functions["cst"].const_bytes == {0: 360}
    assert parse_verbose(golden("cst.sm_90.txt")[1]).const_bytes == {}


def test_located_warnings_keep_their_file() -> None:
    diags = parse_verbose(golden("doubles.sm_90.txt")[1]).diagnostics
    ours = [d for d in diags if d.file == "doubles.ptx"]
    assert {d.line for d in ours} == {18, 19, 20}
    assert {d.file for d in diags} == {"doubles.ptx", "<macro util>", "<builtin>", None}
    assert (
        diags[-1].message
        == "For entry doubles adjusting per thread register count of 16 to lower bound of 24"
    )
    assert all(d.severity == "warning" for d in diags)


def test_error_log_diagnostics_map_to_the_callers_file() -> None:
    diags = parse_diagnostics(
        golden("bad.sm_90.txt")[1], ptx=ptx("bad.ptx"), tool_name="bad.ptx", filename="kernels/bad.ptx"
    )
    assert [(d.line, d.column, d.severity) for d in diags] == [
        (15, 5, "error"),
        (16, 14, "error"),
        (16, 5, "error"),
        (15, 23, "error"),
        (None, None, "fatal"),
    ]
    assert diags[3].message == "Unknown symbol '%r9'" and diags[3].file == "kernels/bad.ptx"


def test_excerpt_only_for_the_callers_file() -> None:
    source = "line one\n    mov.u32 %r1, %r7;\n"
    inside = format_diagnostic(Diagnostic(2, 18, "error", "Unknown symbol '%r7'", "k.ptx"), source, "k.ptx")
    assert inside.splitlines() == [
        "k.ptx:2:18: error: Unknown symbol '%r7'",
        "     2 |     mov.u32 %r1, %r7;",
        "       |                  ^",
    ]
    macro = format_diagnostic(Diagnostic(2, None, "warning", "x", "<macro util>"), source, "k.ptx")
    assert macro == "<macro util>:2: warning: x"


# -- live ptxas ---------------------------------------------------------------------------------


def test_recorded_reports_match_the_installed_ptxas(toolchain: Toolchain) -> None:
    for path in sorted(GOLDEN.glob("*.txt")):
        match, body = golden(path.name)
        if match["version"] != toolchain.versions["ptxas"] or match["rc"] != "0":
            continue
        args = shlex.split(match["cmd"])[1:]
        source = next(a for a in args if a.endswith(".ptx"))
        arch = next(a for a in args if a.startswith("-arch="))[len("-arch=") :]
        extra = [a for a in args[: args.index(source)] if a not in ("-v", "-lineinfo") and "-arch=" not in a]
        live = assemble(
            ptx(source), arch, toolchain, extra_args=extra, lineinfo="-lineinfo" in args, filename=source
        )
        recorded = parse_verbose(body)
        strip = re.compile(r"Compile time = [\d.]+ ms")
        assert strip.sub("", live.log) == strip.sub("", body), path.name
        for name, fn in recorded.functions.items():
            assert live.functions[name].registers == fn.registers, path.name
            assert live.functions[name].spill_stores_bytes == fn.spill_stores_bytes, path.name


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
def test_saxpy_assembles_with_plausible_numbers(toolchain: Toolchain, arch: str) -> None:
    result = assemble(ptx("saxpy.ptx"), arch, toolchain)
    assert result.cubin.startswith(b"\x7fELF")
    fn = result.functions["saxpy"]
    assert fn.entry and fn.arch == arch
    assert fn.registers is not None and 8 <= fn.registers <= 32
    assert (fn.spill_stores_bytes, fn.spill_loads_bytes, fn.shared_bytes, fn.barriers) == (0, 0, 0, 0)
    assert result.arch == arch and f"-arch={arch}" in result.args and "-lineinfo" in result.args
    assert result.diagnostics == ()


def test_register_cap_forces_spills(toolchain: Toolchain) -> None:
    result = assemble(ptx("spill.ptx"), "sm_90", toolchain, extra_args=["-maxrregcount=24", "-warn-spills"])
    fn = result.functions["spill"]
    assert fn.registers is not None and fn.registers <= 24
    assert fn.spill_stores_bytes > 0 and fn.spill_loads_bytes > 0
    assert any("spilled" in d.message for d in result.diagnostics)
    free = assemble(ptx("spill.ptx"), "sm_90", toolchain).functions["spill"]
    assert free.spill_stores_bytes == 0 and free.registers is not None and free.registers > 24


def test_undefined_register_points_at_its_line(toolchain: Toolchain) -> None:
    with pytest.raises(PtxasError) as info:
        assemble(BROKEN, "sm_90", toolchain, filename="kernels/broken.ptx")
    err = info.value
    assert any(d.line == 12 and "%r7" in d.message for d in err.diagnostics)
    # The column comes from the quoted symbol; the caret sits under it.
    assert (
        "kernels/broken.ptx:12:18: error: Unknown symbol '%r7'\n"
        "    12 |     mov.u32 %r1, %r7;\n"
        "       |                  ^"
    ) in str(err)
    assert "Unknown symbol '%r7'" in err.log
    assert err.filename == "kernels/broken.ptx" and err.arch == "sm_90"


def test_odd_file_names_still_name_the_callers_file(toolchain: Toolchain) -> None:
    with pytest.raises(PtxasError, match=r"my dir/-odd name\.ptx:12:"):
        assemble(BROKEN, "sm_90", toolchain, filename="my dir/-odd name.ptx")


def test_target_mismatch_is_placed_on_the_target_line(toolchain: Toolchain) -> None:
    newer = ptx("saxpy.ptx").replace(".target sm_80", ".target sm_100a")
    with pytest.raises(PtxasError) as info:
        assemble(newer, "sm_90", toolchain, filename="saxpy.ptx")
    target_line = newer.splitlines().index(".target sm_100a") + 1
    assert any(d.line == target_line and d.severity == "fatal" for d in info.value.diagnostics)
    assert f"saxpy.ptx:{target_line}: fatal: SM version" in str(info.value)


@pytest.mark.parametrize("arch", ["sm_999", "sm_42", "compute_90", "90"])
def test_unsupported_arch_lists_the_valid_ones(toolchain: Toolchain, arch: str) -> None:
    with pytest.raises(UnsupportedArchError) as info:
        assemble(ptx("saxpy.ptx"), arch, toolchain)
    assert info.value.arch == arch
    assert {"sm_80", "sm_90", "sm_120"} <= set(info.value.valid)
    assert f"'{arch}' is not supported" in str(info.value) and "sm_120" in str(info.value)


def test_valid_archs_come_from_ptxas_help(toolchain: Toolchain) -> None:
    archs = valid_archs(toolchain.ptxas)
    assert "sm_90a" in archs and "sm_120" in archs
    assert all(re.fullmatch(r"sm_\d+[af]?", a) for a in archs)


# -- the compile stage --------------------------------------------------------------------------


def context(source: str, arch: str, toolchain: Toolchain, entry: str | None) -> Context:
    return Context(
        kernel=None,
        arch=Arch.parse(arch),
        toolchain=toolchain,
        ptx=source,
        entry=entry or "",
        ptx_path="k.ptx",
    )


def test_compile_stage_passes_with_resources_and_cubin(toolchain: Toolchain) -> None:
    ctx = context(ptx("rich.ptx"), "sm_80", toolchain, "rich")
    result = CompileStage().run(ctx)
    assert result.status is Status.PASS, result.log
    data = result.data
    assert (data["registers"], data["barriers"], data["shared_bytes"], data["stack_bytes"]) == (
        10,
        1,
        1024,
        64,
    )
    assert data["spill_stores_bytes"] == 0 and data["const_bytes"] == 368
    assert set(data["functions"]) == {"rich", "scale"}
    assert ctx.cubin is not None and ctx.cubin.startswith(b"\x7fELF")
    assert ctx.assembly is not None and ctx.assembly.cubin == ctx.cubin
    figures = {f.name: (f.value, f.unit) for f in result.figures}
    assert figures["registers"] == (10.0, "regs") and figures["shared_bytes"] == (1024.0, "bytes")
    assert figures["barriers"] == (1.0, "")
    assert "Compiling entry function 'rich'" in result.log and result.seconds > 0


def test_compile_stage_without_cmem_reports_none(toolchain: Toolchain) -> None:
    result = CompileStage().run(context(ptx("saxpy.ptx"), "sm_120", toolchain, None))
    assert result.status is Status.PASS and result.data["entry"] == "saxpy"
    assert result.data["const_bytes"] is None
    assert "const_bytes" not in {f.name for f in result.figures}


def test_compile_stage_fails_on_ptxas_errors(toolchain: Toolchain) -> None:
    ctx = context(BROKEN, "sm_90", toolchain, "broken")
    result = CompileStage().run(ctx)
    assert result.status is Status.FAIL
    assert any(d["line"] == 12 for d in result.data["diagnostics"])
    assert "k.ptx:12:" in result.log and ctx.cubin is None


def test_compile_stage_errors_on_setup_problems(toolchain: Toolchain) -> None:
    bad_arch = CompileStage().run(context(ptx("saxpy.ptx"), "sm_999", toolchain, "saxpy"))
    assert bad_arch.status is Status.ERROR and "sm_999" in bad_arch.log
    wrong_entry = CompileStage().run(context(ptx("saxpy.ptx"), "sm_90", toolchain, "nope"))
    assert wrong_entry.status is Status.FAIL and "'nope'" in wrong_entry.log
    no_ptx = CompileStage().run(Context(kernel=None, arch=Arch.parse("sm_90"), toolchain=toolchain))
    assert no_ptx.status is Status.ERROR
