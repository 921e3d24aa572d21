"""A local Ray cluster of two CPU workers runs the shipped compile sweep into the same rows as the
local executor (one Ray session for the module: it costs seconds and memory to start)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from karyamorph.campaign.definition import load_campaign  # noqa: E402
from karyamorph.campaign.distributed import RayExecutor  # noqa: E402
from karyamorph.campaign.execute import ItemOutcome  # noqa: E402
from karyamorph.campaign.items import expand  # noqa: E402
from karyamorph.campaign.plan import Plan  # noqa: E402
from karyamorph.campaign.runner import run_campaign  # noqa: E402
from karyamorph.store.database import Store  # noqa: E402
from tests.campaign.consistency import check_campaign  # noqa: E402
from tests.campaign.test_campaign_run import campaign_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "datasets" / "campaigns" / "compile_sweep.toml"
STAGES = ("compile", "sass", "static")


# One Ray cluster for the module: its tests run in one worker under pytest-xdist.
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # One GPU declared as a Ray resource (there is none): a campaign with GPU stages then goes to
    # one GPU actor, whose worker finds no CUDA device, so those stages skip as they do locally.
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, object_store_memory=80 * 1024 * 1024,
             runtime_env={"env_vars": {"OPENBLAS_NUM_THREADS": "1"}})  # fmt: skip
    yield
    ray.shutdown()


def rows(db: Path) -> dict[str, Any]:
    """Everything an item's run says, by item, without what differs between any two runs (ids,
    times, seconds)."""
    with Store.open_to_read(db) as store:
        runs = store.query(
            "SELECT r.item, r.status, r.arch, r.launch, r.kernel_hash, r.spec_hash, r.spec_path, "
            "list((s.stage, s.status, s.data::VARCHAR) ORDER BY s.position) "
            "FROM runs r JOIN stages s USING (run_id) GROUP BY ALL"
        ).rows
        metrics = store.query(
            "SELECT r.item, list((m.stage, m.name, m.value, m.unit) ORDER BY m.stage, m.name) "
            "FROM runs r JOIN metrics m USING (run_id) WHERE m.unit NOT IN ('s', 'ms') GROUP BY r.item"
        ).rows
        sass = store.query(
            "SELECT r.item, s.sass_hash FROM runs r JOIN run_sass l USING (run_id) "
            "JOIN sass s USING (sass_hash)"
        ).rows
    by_item = {r[0]: {"run": r[1:], "metrics": None, "sass": None} for r in runs}
    for item, values in metrics:
        by_item[item]["metrics"] = values
    for item, sass_hash in sass:
        by_item[item]["sass"] = sass_hash
    return by_item


def strip_timing(data: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    return [(stage, status) for stage, status, _ in data]


def test_ray_runs_the_sweep_into_the_same_rows_as_the_local_run(cluster: None, tmp_path: Path) -> None:
    keys = [i.key for i in expand(load_campaign(SWEEP))]
    local, remote = tmp_path / "local.duckdb", tmp_path / "ray.duckdb"
    run_campaign(SWEEP, db=local)
    executor = RayExecutor()
    report = run_campaign(SWEEP, db=remote, executor=executor)
    assert report.executor == "ray: CPU tasks, 2 CPU(s)" and report.ran == len(keys)
    assert check_campaign(remote, keys, STAGES) == dict.fromkeys(keys, "done")
    a, b = rows(local), rows(remote)
    assert sorted(a) == sorted(b) == sorted(keys)
    for key in keys:
        # Stage data holds the tools' timings beside the figures; statuses and figures must agree.
        run_a, run_b = a[key]["run"], b[key]["run"]
        assert run_a[:-1] == run_b[:-1] and strip_timing(run_a[-1]) == strip_timing(run_b[-1]), key
        assert a[key]["metrics"] == b[key]["metrics"] and a[key]["sass"] == b[key]["sass"], key


def test_a_task_that_raises_fails_its_item_with_rays_reason(cluster: None) -> None:
    good = [i for i in expand(load_campaign(SWEEP)) if i.key.startswith("../kernels/vadd.toml n=4096 ")]
    # An item without its spec: the worker's pipeline raises an error no item outcome catches.
    broken = dataclasses.replace(good[0], key="broken", spec=None)
    outcomes: list[ItemOutcome] = list(RayExecutor().run([broken, *good], Plan(only=("compile",))))
    by_key = {o.key: o for o in outcomes}
    assert sorted(by_key) == sorted(["broken", *(i.key for i in good)])
    assert by_key["broken"].failed and "AttributeError" in (by_key["broken"].reason or "")
    assert all(by_key[i.key].status == "pass" for i in good)


def test_a_campaign_with_gpu_stages_goes_to_one_actor_per_gpu(cluster: None, tmp_path: Path) -> None:
    path = campaign_file(tmp_path)
    gpu_stages = 'stages = ["compile", "static", "correctness", "timing"]'
    path.write_text(path.read_text().replace('stages = ["compile", "static"]', gpu_stages))
    local, remote = tmp_path / "local.duckdb", tmp_path / "ray.duckdb"
    run_campaign(path, db=local)
    report = run_campaign(path, db=remote, executor=RayExecutor())
    assert report.executor == "ray: 1 GPU worker(s), one per GPU" and report.info.done == 6
    a, b = rows(local), rows(remote)
    assert sorted(a) == sorted(b) and len(a) == 6
    for key in a:
        assert a[key]["run"][:-1] == b[key]["run"][:-1] and a[key]["metrics"] == b[key]["metrics"], key
        expected = [("compile", "pass"), ("static", "pass"), ("correctness", "skip"), ("timing", "skip")]
        assert strip_timing(b[key]["run"][-1]) == expected, key
