"""The public names the notebooks and the docs use, each against something it does not compute
itself: numpy, the recorded device's figures, the store's row counts, a search run by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import karyamorph as km

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "datasets" / "kernels"
U32 = km.PTX_TYPES["u32"]
CONVOLUTION = ROOT / "datasets" / "benchmark_hub" / "convolution_milo" / "A100.json.gz"


@pytest.fixture(scope="module")
def vadd() -> km.Kernel:
    return km.Kernel.from_ptx(KERNELS / "vadd.ptx", "vadd")


def test_interpret_adds_as_numpy_does_and_leaves_the_tail_alone(vadd: km.Kernel) -> None:
    rng = np.random.default_rng(1)
    n = 1000
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.full(n + 24, -1.0, np.float32)  # 24 elements past n: the guard must keep them
    result = vadd.interpret(4, 256, {"a": a, "b": b, "c": c, "n": np.uint32(n)})
    assert np.array_equal(result.outputs["c"][:n], a + b)
    assert (result.outputs["c"][n:] == -1.0).all()


def test_interpret_refuses_a_machine_without_the_instructions(vadd: km.Kernel) -> None:
    bare = km.Machine("bare", tuple(i for i in km.machine().instructions if i.opcode != "add"))
    args = {"a": np.zeros(4, np.float32), "b": np.zeros(4, np.float32), "c": np.zeros(4, np.float32), "n": 4}
    with pytest.raises(km.UnmodeledError, match="add"):
        vadd.interpret(1, 4, args, machine=bare)


def test_check_proves_the_launch_and_refutes_a_short_buffer(vadd: km.Kernel) -> None:
    n = 1000
    sizes = {"a": 4 * n, "b": 4 * n, "c": 4 * n}
    assert {v.property: v.verdict for v in vadd.check(4, 256, sizes, {"n": n})} == {
        "bounds": "proved", "race": "proved", "barrier": "proved"
    }  # fmt: skip
    (short,) = vadd.check(4, 256, {**sizes, "c": 4 * (n - 1)}, {"n": n}, properties=["bounds"])
    assert short.verdict == "refuted" and short.witness is not None


def test_check_instructions_proves_a_stated_law_and_finds_a_false_one() -> None:
    def copy(x):  # type: ignore[no-untyped-def]
        x.write("d", x.read("a", U32), U32)

    laws = (
        km.Law("copy(a) == a", ("b32",), 1, lambda run, d, t, a: (run("copy.b32", a), a)),
        km.Law("copy(a) == b", ("b32",), 2, lambda run, d, t, a, b: (run("copy.b32", a), b)),
    )
    instr = km.Instr("copy", ("b32",), (km.Slot("d", dest=True), km.Slot("a")), copy, laws=laws)
    results = km.check_instructions(km.machine().with_instructions(instr), only=["copy"])
    assert {r.check for r in results} == {"frame", "agreement", "law"}
    assert [r.status for r in results if r.check != "law"] == ["pass", "pass"]
    assert [r.status for r in results if r.check == "law"] == ["pass", "fail"]


def test_peak_rates_are_the_recorded_device_figures() -> None:
    header = json.loads((ROOT / "datasets" / "validation" / "sm_90" / "header.json").read_text())
    device = header["environment"]["device"]
    dram, fp32 = km.peak_rates(device)
    # H100/H200 class (sm_90): 128 FP32 lanes per SM; DDR: two transfers per memory clock.
    assert dram == pytest.approx(
        2 * device["memory_clock_rate_khz"] * 1e3 * device["memory_bus_width_bits"] / 8 / 1e9
    )
    assert fp32 == pytest.approx(
        device["multiprocessor_count"] * 128 * 2 * device["clock_rate_khz"] * 1e3 / 1e9
    )
    assert km.peak_rates({"compute_capability": "9.0", "name": "no attributes"}) == (None, None)


def test_importing_a_dataset_twice_adds_its_rows_once(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    first = km.import_datasets(ROOT / "datasets" / "campaigns", db=db)
    assert [d.folder.name for d in first] == ["h200"]
    runs = first[0].added["runs"]
    assert runs == first[0].provenance["tables"]["runs"] > 0
    again = km.import_datasets(ROOT / "datasets" / "campaigns" / "h200", db=db)
    assert sum(again[0].added.values()) == 0
    assert km.db(db, read_only=True).sql("SELECT count(*) FROM runs").fetchall() == [(runs,)]
    assert km.import_datasets(tmp_path, db=db) == []


def test_a_recorded_search_and_its_replay_agree() -> None:
    recorded = km.recording(CONVOLUTION)
    record = km.search_recorded(recorded, "random", budget=20, seed=3)
    assert len(record.evaluations) == 20 and record.stopped == "budget"
    assert km.search_recorded(recorded, "random", budget=20, seed=3).best_curve_ms == record.best_curve_ms
    best = min(e.outcome.cost for e in record.evaluations if e.outcome.ok)
    summary = km.replay(recorded, "random", budget=20, repeats=1, seed=3)
    assert summary.curve[-1] == pytest.approx(recorded.optimum_ms / best)
    assert len(summary.curve) == 20 and list(summary.curve) == sorted(summary.curve)


def test_bind_resolves_the_launch_and_the_cost() -> None:
    bound = km.bind(KERNELS / "vadd.toml", {"n": 4099})
    assert bound.grid == (17, 1, 1) and bound.block == (256, 1, 1) and bound.shapes["c"] == (4099,)
    assert bound.cost_bytes == 3 * 4 * 4099 and bound.cost_flops == 4099


def test_ptx_prints_back_to_what_it_parses_from() -> None:
    module = km.parse_ptx(KERNELS / "transpose.ptx")
    text = km.format_ptx(module)
    assert km.format_ptx(km.parse_ptx(text)) == text
    assert [p.name for p in km.parse_ptx(text).entries[0].params] == [
        p.name for p in module.entries[0].params
    ]


def test_template_finds_a_file_and_refuses_an_unknown_name() -> None:
    template = km.template(ROOT / "datasets" / "searches" / "examples" / "scale_template.py")
    assert template.name == "scale" and template.space("sm_90").size == 19
    with pytest.raises(KeyError, match="no-such-template"):
        km.template("no-such-template")
