"""Nsight Compute: CSV and ncu_report readers on a vadd profile recorded on an H200; tool discovery."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

from karyamorph.harness.stages.base import Context, Status
from karyamorph.harness.stages.metrics import MetricsStage, summarize
from karyamorph.harness.tools.ncu import (
    CURATED,
    SECTIONS,
    NcuError,
    NcuMetric,
    NcuProfile,
    ncu_argv,
    parse_csv,
    parse_number,
    select,
)
from karyamorph.harness.tools.ncu_extract import extract_in_subprocess, extract_report, profiles_from_extract
from karyamorph.harness.tools.nvdisasm import disassemble, line_map
from karyamorph.harness.tools.toolchain import discover, find_tool, ncu_python_dirs, parse_version
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec

GOLDEN = Path(__file__).parents[2] / "golden" / "ncu"
ROOT = Path(__file__).resolve().parents[3]
META = json.loads((GOLDEN / "meta.json").read_text())
SPEC = load_spec(ROOT / META["spec"])
N = SPEC.sizes["n"]


@pytest.fixture(scope="module")
def raw() -> NcuProfile:
    (profile,) = parse_csv((GOLDEN / "vadd.raw.csv").read_text())
    return profile


@pytest.fixture(scope="module")
def extracted() -> NcuProfile:
    (profile,) = profiles_from_extract(json.loads((GOLDEN / "vadd.ncu_report.json").read_text()))
    return profile


def test_the_recording_names_its_tool_version() -> None:
    assert parse_version(META["version_output"]) == ("2025.3", META["version"]) == ("2025.3", "2025.3.1.0")
    assert META["settings"]["clock_control"] == "none" and META["settings"]["cache_control"] == "all"


@pytest.mark.parametrize(
    ("text", "value"),
    [("16,777,216", 16777216.0), ("74.60", 74.6), ("1,234.5", 1234.5), ("-3", -3.0),
     ("2.5e-05", 2.5e-05), ("n/a", None), ("(256, 1, 1)", None), ("", None), ("NVIDIA H200", None),
     ("nan", None)],
)  # fmt: skip
def test_numbers_as_ncu_prints_them(text: str, value: float | None) -> None:
    assert parse_number(text) == value


def test_raw_page_of_vadd(raw: NcuProfile) -> None:
    assert raw.kernel == "vadd" and raw.reader == "csv"
    header = (GOLDEN / "vadd.raw.csv").read_text().splitlines()[0].split(",")
    assert header.index('"CC"') == 10 and len(raw.metrics) == len(header) - 11 == 700
    assert raw.value("inst_executed") == raw.value("smsp__inst_executed.sum")
    assert raw.value("launch__grid_size") == math.ceil(N / 256) == bind(SPEC).grid[0]
    assert raw.value("launch__block_size") == 256
    assert raw.unit("gpu__time_duration.sum") == "ns" and (raw.value("gpu__time_duration.sum") or 0) > 0
    read, write = raw.value("dram__bytes_read.sum"), raw.value("dram__bytes_write.sum")
    assert read is not None and write is not None
    assert raw.value("dram__bytes.sum") == read + write
    # a and b (8n bytes, twice the L2) come from DRAM once: ncu flushed the caches first.
    assert 8 * N <= read < 1.01 * 8 * N
    names = {m.name: m for m in raw.metrics}
    assert names["device__attribute_display_name"].text == "NVIDIA H200"
    assert names["device__attribute_display_name"].value is None


def test_curated_set_of_vadd(raw: NcuProfile) -> None:
    curated = raw.curated()
    assert set(CURATED) <= set(curated)
    assert curated["registers_per_thread"]["value"] == 16
    assert curated["shared_static_bytes"]["value"] == curated["shared_dynamic_bytes"]["value"] == 0
    stalls = {k: v["value"] for k, v in curated.items() if k.startswith("stall_")}
    assert len(stalls) > 10
    # vadd waits on its loads: the long scoreboard is the largest stall reason.
    assert max(stalls, key=lambda k: stalls[k]) == "stall_long_scoreboard"
    without_total = NcuProfile("vadd", tuple(m for m in raw.metrics if m.name != "dram__bytes.sum"))
    assert without_total.curated()["dram_bytes"]["value"] == curated["dram_bytes"]["value"]


def test_details_page_agrees_with_the_raw_page(raw: NcuProfile) -> None:
    (details,) = parse_csv((GOLDEN / "vadd.details.csv").read_text())
    assert details.kernel == "vadd"
    shared = [m for m in details.metrics if "__" in m.name]
    assert {m.name for m in shared} >= set(CURATED.values())
    for m in shared:
        assert m.value is not None and math.isclose(m.value, raw.value(m.name) or 0, abs_tol=0.006), m
    assert details.value("Registers Per Thread") == 16


def test_output_before_the_table_is_skipped_and_errors_are_named() -> None:
    text = (GOLDEN / "vadd.raw.csv").read_text()
    (profile,) = parse_csv("==PROF== Connected to process 1748 (python3.12)\nworker output\n" + text)
    assert profile.value("launch__grid_size") == bind(SPEC).grid[0]
    with pytest.raises(NcuError, match="no CSV table"):
        parse_csv("==WARNING== No kernels were profiled.\n")
    with pytest.raises(NcuError, match="'Kernel Name'"):
        parse_csv('"ID","Name"\n"0","vadd"\n')
    with pytest.raises(NcuError, match=r"no launch of 'scale'.*\['vadd'\]"):
        select([profile], "scale")


def test_ncu_report_extract_agrees_with_the_raw_page(raw: NcuProfile, extracted: NcuProfile) -> None:
    assert extracted.kernel == "vadd" and extracted.reader == "ncu_report"
    both = 0
    for m in raw.metrics:
        other = extracted.value(m.name)
        if m.value is not None and other is not None:
            both += 1
            # The page prints two decimals; the report keeps every digit.
            assert math.isclose(m.value, other, rel_tol=1e-3, abs_tol=0.006), (m, other)
    assert both > 600


def test_per_instruction_counts_of_vadd(extracted: NcuProfile) -> None:
    rows = extracted.instructions
    assert [r.offset for r in rows] == list(range(0, 16 * len(rows), 16))
    warps = bind(SPEC).grid[0] * 256 // 32
    store = [r for r in rows if r.sass.startswith("STG")]
    assert [r.executed for r in store] == [math.ceil(N / 32)]
    # Every warp runs up to the bounds check; only those with a live thread go on.
    guard = next(i for i, r in enumerate(rows) if r.sass.startswith("@P0") and "EXIT" in r.sass)
    assert {r.executed for r in rows[: guard + 1]} == {warps}
    assert sum(r.values.get("smsp__pcsamp_sample_count", 0) for r in rows) > 0


def test_offsets_match_the_disassembly_of_the_profiled_cubin(extracted: NcuProfile) -> None:
    dis = disassemble((GOLDEN / "vadd.sm_90.cubin").read_bytes(), discover())
    ours = {i.offset: i.opcode for i in dis.functions["vadd"].instructions}
    for row in extracted.instructions:
        opcode = re.sub(r"^@!?U?P\w+\s+", "", row.sass).split()[0]
        assert ours[row.offset] == opcode, row
    data = summarize(extracted, line_map(dis, "vadd"))
    st_global = next(
        i for i, line in enumerate(SPEC.ptx.splitlines(), 1) if line.strip().startswith("st.global")
    )
    assert data["ptx_lines"][st_global] == math.ceil(N / 32)
    assert data["curated"]["duration_ns"]["value"] > 0
    json.dumps(data)


def test_the_command_line_is_the_recorded_one() -> None:
    recorded = META["command"]
    argv = ncu_argv(Path(recorded[0]), "vadd", Path("<run>/vadd"), sections=META["settings"]["sections"])
    assert argv == recorded[: recorded.index("python3")]
    assert tuple(META["settings"]["sections"]) == SECTIONS
    assert META["settings"]["metrics"] == list(CURATED.values())


def test_the_extract_reader_names_what_failed(tmp_path: Path) -> None:
    with pytest.raises(NcuError, match=r"missing\.ncu-rep"):
        extract_in_subprocess(tmp_path / "missing.ncu-rep", tmp_path / "out.json", [tmp_path])


def test_ncu_report_reads_the_recorded_report_as_on_the_gpu_host(extracted: NcuProfile) -> None:
    pytest.importorskip("ncu_report", reason="ncu_report (pip ncu-report) is not installed")
    (again,) = profiles_from_extract(extract_report(GOLDEN / "vadd.ncu-rep"))
    assert [(r.offset, r.executed) for r in again.instructions] == [
        (r.offset, r.executed) for r in extracted.instructions
    ]
    assert {m.name: m.value for m in again.metrics} == {m.name: m.value for m in extracted.metrics}


def test_the_stage_skips_without_a_device() -> None:
    context = Context(kernel=None, arch=Arch.parse("sm_90"), toolchain=None)
    assert MetricsStage().run(context).status == Status.SKIP
    with pytest.raises(ValueError, match="reader must be one of"):
        MetricsStage(reader="pdf")
    assert NcuMetric("x__y", None).value is None


def _tool(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_tools_are_searched_in_order(tmp_path: Path) -> None:
    home, default, on_path = tmp_path / "home", tmp_path / "default", tmp_path / "path"
    nsight = tmp_path / "nsight-compute"
    for root in (home / "bin", default / "bin", on_path):
        _tool(root / "ncu")
        _tool(root / "compute-sanitizer")
    newest = _tool(nsight / "2025.3.1" / "ncu")
    _tool(nsight / "2024.1.0" / "ncu")
    _tool(nsight / "2025.10.0" / "sanitizer-only" / "x")  # a version folder without ncu is passed over

    def find(name: str, cuda_home: str | None = None, default: Path | None = None, path: str = "") -> object:
        return find_tool(
            name,
            use_wheels=False,
            cuda_home=cuda_home,
            default_root=default,
            path=path,
            nsight_root=nsight,
        )

    assert find("ncu", str(home), default, str(on_path)) == (home / "bin" / "ncu", "CUDA_HOME")
    assert find("ncu", None, default, str(on_path)) == (default / "bin" / "ncu", str(default))
    assert find("ncu", None, None, str(on_path)) == (on_path / "ncu", "PATH")
    assert find("ncu") == (newest, "Nsight Compute install")
    assert find("compute-sanitizer") is None  # Nsight Compute folders hold no compute-sanitizer


def test_ncu_report_is_looked_for_beside_the_ncu_that_runs(tmp_path: Path) -> None:
    nsight = tmp_path / "nsight-compute"
    real = _tool(nsight / "2025.3.1" / "ncu")
    for version in ("2025.3.1", "2024.1.0"):
        _tool(nsight / version / "extras" / "python" / "ncu_report.py")
    link = tmp_path / "cuda" / "bin" / "ncu"
    link.parent.mkdir(parents=True)
    os.symlink(real, link)
    assert ncu_python_dirs(link, nsight_root=nsight) == [
        nsight / "2025.3.1" / "extras" / "python",
        nsight / "2024.1.0" / "extras" / "python",
    ]
    assert ncu_python_dirs(link, nsight_root=None)[0] == nsight / "2025.3.1" / "extras" / "python"
