"""The page in a real Chromium: write PTX with an error and see it marked on its line, fix it and
run it, open recorded GPU runs, and be refused without the token.

The oracles are outside the page: line numbers found in the PTX text itself, figures read from
the recorded tool outputs in tests/golden with the csv module, and runs read back from the store.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import statistics
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from karyamorph.dashboard.server import Served
from karyamorph.store.database import Store
from karyamorph.store.reading import load_run
from tests.dashboard.conftest import EXAMPLES, serve
from tests.dashboard.data.make_recorded import GOLDEN, bundles, run_id

ROOT = Path(__file__).resolve().parents[2]
VADD = run_id("vadd")
OOB = run_id("san_oob_write")
RACY = run_id("san_racy_reduce")


def open_page(page: Any, served: Served, run: str | None = None) -> None:
    page.goto(served.url + (f"&run={run}" if run else ""))
    page.wait_for_function("window.kmEditor !== undefined")


def line_of(path: Path, needle: str) -> int:
    return next(i for i, text in enumerate(path.read_text().split("\n"), 1) if needle in text)


def tile_text(page: Any, tile: str) -> str:
    return str(page.inner_text(f"#run-view #tile-{tile}"))


def test_an_error_typed_into_the_editor_is_marked_on_its_line_and_the_fixed_kernel_runs(
    page: Any, db_copy: Path, tmp_path: Path
) -> None:
    server, served = serve(db_copy, tmp_path / "workspace")
    try:
        open_page(page, served)
        page.select_option("#open-example", "vadd")
        page.wait_for_function("window.kmEditor.getText().includes('.entry vadd')")
        page.wait_for_function("document.getElementById('check-state').dataset.state === 'ok'")
        source = (EXAMPLES / "vadd.ptx").read_text()
        line = line_of(EXAMPLES / "vadd.ptx", "add.rn.f32")

        # Typed at the end of the add's line: the statement no longer parses.
        page.click(".cm-content")
        page.keyboard.press("Control+Home")
        for _ in range(line - 1):
            page.keyboard.press("ArrowDown")
        page.keyboard.press("End")
        page.keyboard.type(" %oops")
        page.wait_for_selector("#diagnostics li.error")
        errors = page.query_selector_all("#diagnostics li.error")
        marked = [int(li.get_attribute("data-line")) for li in errors]
        assert marked == [line]
        assert page.locator(".cm-lint-marker-error").count() == 1
        # The gutter marks the line: its number is the one beside the marker.
        gutter = page.locator(".cm-gutter-lint .cm-gutterElement").filter(has=page.locator(".cm-lint-marker"))
        box = gutter.bounding_box()
        number = page.locator(".cm-lineNumbers .cm-gutterElement").filter(has_text=re.compile(rf"^{line}$"))
        assert box is not None and abs(box["y"] - number.bounding_box()["y"]) < 2

        # A type ptxas does not know parses, and ptxas's error lands on the same line.
        page.evaluate("(t) => window.kmEditor.setText(t)", source.replace("add.rn.f32", "add.rn.f33"))
        page.wait_for_function("document.getElementById('check-state').dataset.state === 'errors'")
        texts = [li.inner_text() for li in page.query_selector_all("#diagnostics li.error")]
        assert texts and all(t.startswith(f"line {line}:") and "ptxas" in t for t in texts)
        assert any(".f33" in t for t in texts)

        # Fixed: no marks, then a run through the same stages as `karyamorph run`.
        page.evaluate("(t) => window.kmEditor.setText(t)", source)
        page.wait_for_function("document.getElementById('check-state').dataset.state === 'ok'")
        assert page.locator("#diagnostics li.error").count() == 0
        page.fill("#run-label", "from the page")
        page.click("#run-button")
        page.wait_for_selector("#job .job[data-state=done]", timeout=90_000)
        page.wait_for_selector("#run-view .run-head .label")
        stored_id = page.get_attribute("#run-view .run-head", "data-run")
        assert stored_id is not None

        with Store.open_to_read(db_copy) as store:
            stored = load_run(store, stored_id)
        assert stored.label == "from the page" and stored.ptx == source
        # The status tile moved through the stages the run stored, ending with their statuses.
        job_rows = {r.get_attribute("data-stage"): r.inner_text() for r in page.query_selector_all("#job tr")}
        assert list(job_rows) == [s.name for s in stored.stages]
        for s in stored.stages:
            assert s.status in job_rows[s.name]
        # The tiles fill in with what the store holds.
        compiled = stored.stage("compile")
        assert compiled is not None and compiled.status == "pass"
        regs = page.inner_text("#tile-compile tr:has(td:text-is('registers')) td.num")
        assert int(regs) == compiled.data["registers"]
        static = stored.stage("static")
        assert static is not None
        occupancy = static.data["occupancy"]
        assert f"{occupancy['occupancy']:.0%}" in tile_text(page, "occupancy")
        assert occupancy["limiter"] in page.inner_text("#tile-occupancy .limiter")
        assert page.locator("#tile-occupancy svg.chart").count() == 3
        # SASS beside PTX: every instruction nvdisasm printed for the entry, once.
        listed = sass_lines(stored.sass[stored.arch], "vadd")
        assert page.locator("#tile-source td.sass div").count() == len(listed)
        model = stored.stage("model")
        assert model is not None
        for check in model.data["checks"]:
            row = page.locator(f"#tile-model tr.check[data-property={check['property']}]")
            assert check["verdict"] in row.inner_text()
        # The new run is listed first.
        page.wait_for_selector(f"#runs tr[data-run='{stored_id}']")
        assert page.get_attribute("#runs tr.run-row >> nth=0", "data-run") == stored_id
    finally:
        server.stop()


def sass_lines(text: str, function: str) -> list[str]:
    """The instructions nvdisasm printed in ``function``'s section, up to its last EXIT: ptxas
    fills the rest of the section with a branch to itself and NOPs (alignment, not code)."""
    lines = text.split("\n")
    start = next(i for i, t in enumerate(lines) if t.strip() == f".text.{function}:")
    body = []
    for t in lines[start + 1 :]:
        if t.strip().startswith(".section"):
            break
        if re.search(r"/\*[0-9a-f]{4}\*/", t):
            body.append(t)
    last_exit = max(i for i, t in enumerate(body) if re.search(r"\bEXIT\b", t))
    return body[: last_exit + 1]


def test_a_recorded_gpu_run_shows_its_sanitizer_finding_on_its_line(page: Any, served: Served) -> None:
    open_page(page, served, OOB)
    page.wait_for_selector("#tile-sanitizer")
    planted = line_of(ROOT / "tests/harness/data/san_oob_write.ptx", "st.global.f32")
    row = page.locator("#tile-sanitizer tr.finding")
    assert row.count() == 1
    cells = [c.inner_text() for c in row.locator("td").all()]
    assert cells[0] == "memcheck" and int(cells[2]) == planted
    # Block and thread as compute-sanitizer recorded them (n = 1024: block n / 256, thread 0).
    xml = (GOLDEN / "compute-sanitizer" / "san_oob_write.memcheck.xml").read_text()
    block = re.search(r"<blockIdx>\s*<x>(\d+)</x>", xml)
    assert block is not None and f"block [{block[1]}, 0, 0] thread [0, 0, 0]" in cells[3]
    assert "write of size 4" in cells[1]
    # The same line is marked in the source beside the SASS.
    assert "memcheck" in page.inner_text(f"#tile-source tr[data-line='{planted}'] td.marks")
    assert "sanitizer" in tile_text(page, "sanitizer").lower() and "fail" in tile_text(page, "sanitizer")


def test_a_recorded_race_shows_both_accesses_and_the_models_witness(page: Any, served: Served) -> None:
    open_page(page, served, RACY)
    ptx = ROOT / "tests/harness/data/san_racy_reduce.ptx"
    shared = {i for i, t in enumerate(ptx.read_text().split("\n"), 1) if re.search(r"\b(ld|st)\.shared\b", t)}
    finding = page.locator("#tile-sanitizer tr.finding")
    assert finding.count() == 1 and "racecheck" in finding.inner_text()
    rows = page.query_selector_all("#tile-source tr.mark-finding")
    marked = {int(r.get_attribute("data-line")) for r in rows}
    assert marked and marked <= shared
    race = page.locator("#tile-model tr.check[data-property=race]")
    assert "refuted" in race.inner_text() and "threads" in race.inner_text()
    rows = page.query_selector_all("#tile-source tr.mark-witness")
    witness = {int(r.get_attribute("data-line")) for r in rows}
    assert witness and witness <= shared


def _csv_value(metric: str) -> float:
    rows = list(csv.reader((GOLDEN / "ncu" / "vadd.raw.csv").read_text().splitlines()))
    header = rows[0]
    (data,) = [r for r in rows[2:] if r]
    return float(data[header.index(metric)].replace(",", ""))


def test_a_recorded_gpu_run_shows_its_metrics_and_says_it_has_no_timing(page: Any, served: Served) -> None:
    open_page(page, served, VADD)
    page.wait_for_selector("#tile-metrics")
    curated = {
        r.locator("td").nth(0).inner_text(): float(r.locator("td").nth(1).inner_text())
        for r in page.locator("#tile-metrics > table.figures tbody tr").all()
    }
    recorded = (("duration_ns", "gpu__time_duration.sum"), ("dram_bytes", "dram__bytes.sum"),
                ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"))  # fmt: skip
    for short, metric in recorded:
        assert curated[short] == pytest.approx(_csv_value(metric), rel=1e-3)
    assert "clock_control none" in tile_text(page, "metrics")
    assert "clean" in tile_text(page, "sanitizer")
    assert "NVIDIA H200" in tile_text(page, "setting") and "132 SMs" in tile_text(page, "setting")
    assert "not recorded" in tile_text(page, "timing")
    # Executions per PTX line, from the recorded profile, beside the source.
    meta = json.loads((GOLDEN / "ncu" / "meta.json").read_text())
    assert meta["kernel"] == "vadd"
    executed = page.locator("#tile-source td.num").all_inner_texts()
    assert any(t.strip() for t in executed)


def test_recorded_timing_samples_show_as_their_distribution(page: Any, served: Served) -> None:
    timed = [b for b in bundles() if b["samples"]]
    if not timed:
        pytest.skip("no run recorded with timing samples yet: record one on a GPU host and export it "
                    "(tests/dashboard/data/make_recorded.py export)")  # fmt: skip
    for bundle in timed:
        open_page(page, served, bundle["run"]["run_id"])
        samples = [s["ns"] for s in bundle["samples"]]
        chart = json.loads(page.get_attribute("#tile-timing svg.histogram", "data-points"))
        assert sum(chart["counts"]) == len(samples)
        median_us = statistics.median(samples) / 1e3
        assert f"median {median_us:.4g} us" in tile_text(page, "timing")


def test_the_searches_tile_ranks_and_follows_the_best_time(
    page: Any, served: Served, recorded_db: Path
) -> None:
    cache = json.loads((ROOT / "tests/search/data/tiny.json").read_text())["cache"]
    with Store.open_to_read(recorded_db) as store:
        order = [r[0] for r in store.query("SELECT config_key FROM search_evaluations ORDER BY seq").rows]
    open_page(page, served)
    page.wait_for_selector("#search-view .leaderboard")
    times = sorted((v["time"], k) for k, v in cache.items() if isinstance(v["time"], int | float))
    rows = page.locator("#search-view .leaderboard tbody tr").all()
    board = [r.locator("td").nth(2).inner_text() for r in rows]
    assert board == [k for _, k in times[:10]]
    points = json.loads(page.get_attribute("#search-view svg.chart", "data-points"))["best so far"]
    best, expected = None, []
    for i, key in enumerate(order, 1):
        t = cache[key]["time"]
        if isinstance(t, int | float) and (best is None or t < best):
            best = t
            expected.append([i, t])
    if expected[-1][0] != len(order):
        expected.append([len(order), best])
    assert points == expected


def test_the_sql_tile_reads_and_refuses_writes(page: Any, served: Served) -> None:
    open_page(page, served)
    page.fill(".sql-tile textarea", "SELECT count(*) AS n FROM runs")
    page.click(".sql-tile button[type=submit]")
    page.wait_for_selector("#sql-result table")
    counted = int(page.inner_text("#sql-result td"))
    page.fill(".sql-tile textarea", "DELETE FROM runs")
    page.click(".sql-tile button[type=submit]")
    page.wait_for_selector("#sql-result .error")
    assert "read-only" in page.inner_text("#sql-result .error")
    page.fill(".sql-tile textarea", "SELECT count(*) FROM runs")
    page.click(".sql-tile button[type=submit]")
    page.wait_for_selector("#sql-result table")
    assert int(page.inner_text("#sql-result td")) == counted


def test_pinning_a_baseline_compares_the_next_run_with_it(
    page: Any, served: Served, recorded_db: Path
) -> None:
    open_page(page, served, OOB)
    page.click("#run-view button.pin")
    page.wait_for_selector("#tile-compare >> text=This run is the pinned baseline")
    page.click(f"#runs tr[data-run='{RACY}']")
    page.wait_for_selector(f"#run-view .run-head[data-run='{RACY}']")
    compare = tile_text(page, "compare")
    assert f"baseline {OOB[:8]}" in compare and "different PTX" in compare
    with Store.open_to_read(recorded_db) as store:
        a, b = load_run(store, OOB), load_run(store, RACY)
    # Every figure that differs between the two stored runs is listed (up to the tile's 40).
    differ = {(m.stage, m.name) for m in b.metrics if m.name != "seconds"} - {
        (m.stage, m.name) for m in a.metrics if m.name != "seconds"
    }
    shown = page.locator("#tile-compare table.compare tbody tr").count()
    assert shown == min(40, int(re.search(r"(\d+) figures differ", compare)[1]))  # type: ignore[index]
    assert differ and any(f"{s}.{n}" in compare for s, n in differ)
    # The baseline is the server's: unpin it for the tests that follow.
    page.click(f"#runs tr[data-run='{OOB}']")
    page.wait_for_selector(f"#run-view .run-head[data-run='{OOB}']")
    page.click("#run-view button:text('unpin baseline')")
    page.wait_for_selector("#tile-compare >> text=No baseline pinned")


def test_the_form_and_its_toml_say_the_same_spec(page: Any, served: Served) -> None:
    open_page(page, served)
    page.select_option("#open-example", "transpose")
    page.wait_for_function("window.kmEditor.getText().includes('.entry transpose')")
    page.wait_for_selector("#spec-form input[name='kernel.entry'][value=transpose]")
    page.click("details.toml summary")
    page.fill("#spec-form input[name='launch.block']", "32, 4")
    page.wait_for_function("document.getElementById('spec-toml-text').value.includes('block = [32, 4]')")
    edited = tomllib.loads(page.input_value("#spec-toml-text"))
    original = tomllib.loads((EXAMPLES / "transpose.toml").read_text())
    original["launch"]["block"] = [32, 4]
    assert edited == original
    # And back: TOML edited by hand fills the form.
    page.fill("#spec-toml-text", page.input_value("#spec-toml-text").replace("[32, 4]", "[32, 2]"))
    page.click("text=apply TOML to the form")
    page.wait_for_selector("#spec-form input[name='launch.block'][value='32, 2']")


def test_a_request_without_the_token_is_refused(page: Any, served: Served) -> None:
    bare = served.url.split("?")[0]
    response = page.goto(bare)
    assert response is not None and response.status == 403
    assert "access token" in page.inner_text("body")
    for path in ("runs", f"runs/{VADD}", "static/dashboard.js", "searches"):
        assert page.request.get(bare + path).status == 403
    wrong = page.request.post(bare + "sql?token=wrong", form={"sql": "SELECT 1"})
    assert wrong.status == 403
    # With the token, the page answers and leaves a cookie that the page's own requests carry.
    assert page.goto(served.url) is not None
    assert page.request.get(bare + "runs").status == 200


def test_the_token_is_needed_outside_the_browser_too(served: Served) -> None:
    bare = served.url.split("?")[0]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(bare + "runs", timeout=10)
    assert refused.value.code == 403
    request = urllib.request.Request(bare + "runs", headers={"Authorization": f"token {served.token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


def test_a_run_started_on_relative_paths_is_stored_in_the_database_the_user_named(
    page: Any, recorded_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `karyamorph dashboard` in a folder with the default database: the paths are relative to the
    # server's folder, and the runner, which works in its job's folder, must still find them.
    monkeypatch.chdir(tmp_path)
    shutil.copy(recorded_db, tmp_path / "karyamorph.duckdb")
    with Store.open_to_read(tmp_path / "karyamorph.duckdb") as store:
        before = {r[0] for r in store.query("SELECT run_id FROM runs").rows}
    server, served = serve(Path("karyamorph.duckdb"), Path("workspace"))
    try:
        open_page(page, served)
        page.select_option("#open-example", "vadd")
        page.wait_for_function("window.kmEditor.getText().includes('.entry vadd')")
        page.fill("#run-label", "relative paths")
        page.click("#run-button")
        page.wait_for_selector("#job .job:not([data-state=running])", timeout=90_000)
        assert page.get_attribute("#job .job", "data-state") == "done", page.inner_text("#job")
        page.wait_for_selector("#run-view .run-head .label, #run-view .error")
        assert page.locator("#run-view .error").count() == 0, page.inner_text("#run-view")
        stored_id = page.get_attribute("#run-view .run-head", "data-run")
        assert stored_id is not None and stored_id not in before
        assert "relative paths" in page.inner_text("#run-view .run-head")
    finally:
        server.stop()
    with Store.open_to_read(tmp_path / "karyamorph.duckdb") as store:
        assert load_run(store, stored_id).label == "relative paths"
    # Nothing was written beside the job's files under another name.
    assert sorted(p.name for p in tmp_path.rglob("*.duckdb")) == ["karyamorph.duckdb"]


def listed(page: Any) -> tuple[set[str], dict[str, str]]:
    """The runs listed one by one, and each folded campaign's id with its row's text."""
    runs = {r.get_attribute("data-run") for r in page.query_selector_all("#runs tr.run-row")}
    rows = page.query_selector_all("#runs tr.campaign-row")
    folded = {r.get_attribute("data-campaign"): r.inner_text() for r in rows}
    return runs, folded


def wait_listed(page: Any, runs: set[str], campaigns: set[str]) -> dict[str, str]:
    """Wait (10 s at most) for the list to hold exactly ``runs`` and ``campaigns``; return the
    folded campaigns' row texts."""
    for _ in range(100):
        shown, folded = listed(page)
        if (shown, set(folded)) == (runs, campaigns):
            break
        page.wait_for_timeout(100)
    assert (shown, set(folded)) == (runs, campaigns)
    return folded


def test_campaign_runs_fold_into_a_row_per_campaign_and_the_filters_narrow_the_list(
    page: Any, campaign_db: Path
) -> None:
    with Store.open_to_read(campaign_db) as store:
        rows = store.query("SELECT run_id, campaign_id, label, entry FROM runs").rows
        names = dict(store.query("SELECT campaign_id, name FROM campaigns").rows)
    loose = {r for r, c, _, _ in rows if c is None}
    by_campaign = {c: {r for r, cc, _, _ in rows if cc == c} for c in names}
    assert loose and len(by_campaign) == 2 and all(by_campaign.values())
    server, served = serve(campaign_db, campaign_db.parent / "workspace")
    try:
        open_page(page, served)
        # Folded by default: the runs of no campaign as before, each campaign once with its count.
        folded = wait_listed(page, loose, set(by_campaign))
        for cid, text in folded.items():
            assert names[cid] in text and f"{len(by_campaign[cid])} runs" in text
        # A campaign's row opens its runs, and the campaign filter says which one is shown.
        (sizes,) = (c for c, n in names.items() if n == "sizes")
        page.click(f"#runs tr.campaign-row[data-campaign='{sizes}']")
        wait_listed(page, by_campaign[sizes], set())
        assert page.input_value("#runs-tile select[name=campaign]") == sizes
        # Every run, one by one.
        page.select_option("#runs-tile select[name=campaign]", "")
        wait_listed(page, loose, set(by_campaign))
        page.check("#runs-tile input[name=unfold]")
        wait_listed(page, {r for r, *_ in rows}, set())
        # By kernel and by label, on the runs themselves.
        page.select_option("#runs-tile select[name=entry]", "transpose")
        wait_listed(page, {r for r, _, _, e in rows if e == "transpose"}, set())
        page.select_option("#runs-tile select[name=entry]", "")
        wait_listed(page, {r for r, *_ in rows}, set())
        page.select_option("#runs-tile select[name=label]", "tile check")
        wait_listed(page, {r for r, _, lab, _ in rows if lab == "tile check"}, set())
        # Folded again, a campaign's row counts only the runs that pass the filters.
        page.uncheck("#runs-tile input[name=unfold]")
        wait_listed(page, set(), {c for r, c, lab, _ in rows if lab == "tile check"})
        page.select_option("#runs-tile select[name=label]", "")
        wait_listed(page, loose, set(by_campaign))
        page.select_option("#runs-tile select[name=entry]", "transpose")
        folded = wait_listed(page, set(), set(by_campaign))
        transposes = {c: sum(1 for r, cc, _, e in rows if cc == c and e == "transpose") for c in names}
        for cid, text in folded.items():
            assert f"{transposes[cid]} runs" in text
        page.select_option("#runs-tile select[name=entry]", "")
        wait_listed(page, loose, set(by_campaign))
        page.select_option("#runs-tile select[name=campaign]", "none")
        wait_listed(page, loose, set())
    finally:
        server.stop()
