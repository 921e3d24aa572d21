"""Redraw the dashboard screenshots in docs/ from the tests' recorded database (see
tests/dashboard/data/make_recorded.py): ``python docs/make_screenshots.py [--chromium PATH]``."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from karyamorph.dashboard.server import Server  # noqa: E402
from karyamorph.dashboard.state import State  # noqa: E402
from tests.dashboard.data.make_recorded import build, run_id  # noqa: E402

DOCS = ROOT / "docs"
KERNELS = ROOT / "datasets" / "kernels"


def workbench(page: Page, url: str) -> None:
    """The editor with a ptxas error marked on its line, the form, the run list."""
    page.goto(url)
    page.wait_for_function("window.kmEditor !== undefined")
    page.select_option("#open-example", "vadd")
    page.wait_for_function("window.kmEditor.getText().includes('.entry vadd')")
    text = (KERNELS / "vadd.ptx").read_text().replace("add.rn.f32", "add.rn.f33")
    page.evaluate("(t) => window.kmEditor.setText(t)", text)
    page.wait_for_selector("#diagnostics li.error")
    line = next(i for i, t in enumerate(text.split("\n"), 1) if "add.rn.f33" in t)
    page.evaluate(f"window.kmEditor.view.dispatch({{selection: {{anchor: "
                  f"window.kmEditor.view.state.doc.line({line}).from}}, scrollIntoView: true}})")  # fmt: skip
    page.wait_for_timeout(300)
    clip = {"x": 0, "y": 0, "width": 1400, "height": 740}
    page.screenshot(path=DOCS / "dashboard-workbench.png", clip=clip)


def run_tiles(page: Page, url: str) -> None:
    """A recorded H200 run: stages, device, compile report, model witness, sanitizer finding."""
    page.goto(f"{url}&run={run_id('san_racy_reduce')}")
    page.wait_for_selector("#tile-sanitizer")
    box = page.locator("#run-view").bounding_box()
    assert box is not None
    page.screenshot(path=DOCS / "dashboard-run.png", full_page=True,
                    clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": 1000})  # fmt: skip
    tile = page.locator("#tile-occupancy").bounding_box()
    assert tile is not None
    page.screenshot(path=DOCS / "dashboard-source.png", full_page=True,
                    clip={"x": tile["x"], "y": tile["y"], "width": tile["width"], "height": 900})  # fmt: skip


def metrics(page: Page, url: str) -> None:
    """The recorded H200 vadd profile beside the searches tile."""
    page.goto(f"{url}&run={run_id('vadd')}")
    page.wait_for_selector("#tile-metrics")
    page.wait_for_selector("#search-view svg")
    page.locator("#tile-metrics").screenshot(path=DOCS / "dashboard-metrics.png")
    page.locator(".bottom").screenshot(path=DOCS / "dashboard-searches.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="karyamorph-shots-") as tmp:
        os.chdir(tmp)  # the page shows the database's path as given: a short one
        db = build(Path("recorded.duckdb"))
        server = Server(State.create(db, workspace=Path(tmp) / "work", examples=KERNELS))
        served = server.start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
                workbench(page, served.url)
                run_tiles(page, served.url)
                metrics(page, served.url)
                browser.close()
        finally:
            server.stop()
    for png in sorted(DOCS.glob("dashboard-*.png")):
        print(png.relative_to(ROOT), png.stat().st_size // 1024, "KiB")


if __name__ == "__main__":
    main()
