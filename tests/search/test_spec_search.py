"""A search declared in a spec, run as `search run` runs it with its GPU gates stood in for
(tests/search/standin.py): every evaluation stored, the winner raced against the baseline
configuration and exported as a plain spec, and the evaluations written as a Kernel Tuner cache
that reads back to the same configurations and times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.kernel.loader import load_spec
from karyamorph.search import read_cache, stored
from karyamorph.search.gates import Compiled
from karyamorph.search.outcome import Outcome
from karyamorph.search.session import SearchRequest, search_in_store
from karyamorph.search.templates import find_template
from karyamorph.store.database import Store
from tests.search.standin import DEVICE, StandInEvaluator

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "datasets" / "searches" / "examples"


class CountingEvaluator(StandInEvaluator):
    """The stand-in, counting the variants that reach its GPU part."""

    on_gpu: int = 0

    def _on_gpu(self, compiled: Compiled, gates: dict[str, Any]) -> Outcome:
        CountingEvaluator.on_gpu += 1
        return super()._on_gpu(compiled, gates)


def search(db: Path, spec: str, strategy: str, budget: int, **kwargs: Any) -> dict[str, Any]:
    template = find_template(str(EXAMPLES / spec))
    request = SearchRequest(template, Arch.parse("sm_90"), strategy, budget, seed=4, cost_prior_s=0)
    evaluator = CountingEvaluator(template, request.arch, discover(), GpuWorker(None), seed=4)
    with Store.open(db) as store:
        return search_in_store(request, evaluator, store, device_name=DEVICE.name, **kwargs)


def test_a_spec_search_stores_its_evaluations_and_writes_them_for_kernel_tuner(tmp_path: Path) -> None:
    db, cache = tmp_path / "s.duckdb", tmp_path / "saxpy.json"
    summary = search(db, "saxpy_stride.toml", "random", 6, kt_cache=cache, out_dir=tmp_path / "out")
    with Store.open_to_read(db) as store:
        evaluations = stored.load(store, summary["search_id"]).evaluations
    recording = read_cache(cache)
    assert len(evaluations) == 6 == recording.space.size
    assert recording.space.names == ("block_size_x", "BLOCKS_PER_SM", "REGS")
    for evaluation in evaluations:
        index = recording.space.find(evaluation.config)
        assert index is not None and recording.space.key(index) == evaluation.key
        assert recording.outcomes[index] == evaluation.outcome and evaluation.outcome.time_ms
    document = json.loads(cache.read_text())
    assert {k: document[k] for k in ("device_name", "kernel_name", "problem_size", "objective")} == {
        "device_name": DEVICE.name, "kernel_name": "saxpy_stride", "problem_size": [16777219, 132],
        "objective": "time"}  # fmt: skip
    # The winner is a plain spec: the configuration's values written in, no [search] left.
    config = summary["winner"]["config"]
    winner = load_spec(tmp_path / "out" / summary["search_id"][:8] / "saxpy_stride.toml")
    assert winner.search is None and winner.launch.block == (config["block_size_x"],)
    assert (".maxnreg 32" in winner.ptx) is (config["REGS"] == 32)


def test_a_resumed_search_writes_its_stored_evaluations_too(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = search(db, "saxpy_stride.toml", "random", 3)
    again = search(db, "saxpy_stride.toml", "random", 7, resume=first["search_id"][:8],
                   kt_cache=tmp_path / "kt.json.gz")  # fmt: skip
    assert again["search_id"] == first["search_id"] and (again["evaluations"], again["measured"]) == (7, 4)
    with Store.open_to_read(db) as store:
        keys = {e.key for e in stored.load(store, first["search_id"]).evaluations}
    recording = read_cache(tmp_path / "kt.json.gz")
    assert {recording.space.key(i) for i in range(recording.space.size)} == keys and len(keys) == 7


def test_the_winner_races_the_baseline_measured_once(tmp_path: Path) -> None:
    CountingEvaluator.on_gpu = 0
    everything = search(tmp_path / "a.duckdb", "softmax_search.toml", "exhaustive", 5)
    assert CountingEvaluator.on_gpu == 5  # the baseline was one of the five: not measured again
    baseline = everything["baseline"]
    assert baseline["config"] == {"BLOCK": 256} and baseline["in_search"] is True
    assert baseline["speedup"] == baseline["time_ms"] / everything["best"]["time_ms"] >= 1.0
    CountingEvaluator.on_gpu = 0
    some = search(tmp_path / "b.duckdb", "softmax_search.toml", "exhaustive", 2)  # BLOCK 64 and 128
    assert CountingEvaluator.on_gpu == 3 and some["baseline"]["in_search"] is False
    assert some["baseline"]["time_ms"] == baseline["time_ms"]
    with Store.open_to_read(tmp_path / "b.duckdb") as store:
        assert stored.count(store, some["search_id"]) == 2  # measured after the search, not stored as one
        [(summary,)] = store.query("SELECT summary FROM searches").rows
    assert json.loads(summary)["baseline"] == some["baseline"]
    shown = CliRunner().invoke(
        main, ["search", "show", some["search_id"][:8], "--db", str(tmp_path / "b.duckdb")]
    )
    ratio = some["baseline"]["time_ms"] / some["best"]["time_ms"]
    line = (f"  baseline {{'BLOCK': 256}}: {some['baseline']['time_ms']:.4g} ms (measured after the search); "
            f"the winner is {ratio:.3f}x faster")  # fmt: skip
    assert shown.exit_code == 0 and line in shown.output.splitlines(), shown.output


def test_the_histogram_searches_its_launch_with_the_model_gate_passing_every_variant(tmp_path: Path) -> None:
    """The hand-written PTX histogram: every block size and keys-a-thread passes the model's
    checks at the check size (the bins in bounds, the shared counts race-free by their atomics)
    and reaches the GPU's part; the winner's spec keeps the grid expression's ITEMS."""
    CountingEvaluator.on_gpu = 0
    out = tmp_path / "out"
    summary = search(tmp_path / "h.duckdb", "histogram_shared.toml", "exhaustive", 25, out_dir=out)
    assert summary["evaluations"] == 25 and CountingEvaluator.on_gpu == 25 and not summary["failures"]
    assert summary["baseline"]["config"] == {"block_size_x": 256, "ITEMS": 1}
    config = summary["winner"]["config"]
    winner = load_spec(out / summary["search_id"][:8] / "histogram_shared.toml")
    assert winner.search is None and winner.launch.block == (config["block_size_x"],)
