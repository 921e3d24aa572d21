"""The page's layout in a real Chromium at a common desktop size (1600 x 1000): nothing is cut off
(every box fits its tile, or scrolls inside it), a drop-down shows its whole word, and the editor
grows with the window.

The data are the searches recorded on an H200 (datasets/searches: real configuration keys, real
kernels with long PTX lines) beside the recorded runs; the measures are the browser's own boxes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from karyamorph.dashboard.server import Served
from karyamorph.store.database import Store
from tests.dashboard.conftest import ROOT, serve
from tests.dashboard.data.make_recorded import run_id

GPU_SEARCHES = ROOT / "datasets" / "searches" / "sm_90" / "sgemm-hgemm"
WIDE = {"width": 1600, "height": 1000}

# Every box drawn in the tile that reaches past the right edge of the box that clips it: the
# nearest ancestor (the tile included) whose overflow is not visible, else the tile. A box inside
# a scroll container (overflow auto or scroll) is fine: it can be scrolled to.
OVERFLOWING = """(tile) => {
  const out = [];
  for (const e of tile.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || !e.checkVisibility()) continue;
    let clip = tile;
    for (let a = e.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible" || a === tile) { clip = a; break; }
    }
    const scrolls = ["auto", "scroll"].includes(getComputedStyle(clip).overflowX);
    const right = clip.getBoundingClientRect().right;
    if (!scrolls && r.right > right + 0.5) {
      out.push(`${e.tagName.toLowerCase()}.${e.getAttribute("class")}: ${r.right} > ${right}`);
    }
  }
  return out;
}"""


def cut_off(tile: Any) -> list[str]:
    """What is cut off in ``tile``: boxes past their clip, and the tile's own need to scroll."""
    found = list(tile.evaluate(OVERFLOWING))
    if not tile.evaluate("(e) => e.scrollWidth <= e.clientWidth"):
        found.append(f"the tile scrolls: {tile.evaluate('(e) => [e.scrollWidth, e.clientWidth]')}")
    return found


# The lines of text the editor shows at once: its scroll box's height over one line's.
EDITOR_LINES = """() => {
  const box = document.querySelector("#editor .cm-scroller").clientHeight;
  return box / document.querySelector("#editor .cm-line").getBoundingClientRect().height;
}"""


@pytest.fixture(scope="module")
def gpu_served(recorded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    """The page on the recorded runs and the H200 searches of SGEMM and HGEMM."""
    folder = tmp_path_factory.mktemp("gpu-searches")
    db = folder / "searches.duckdb"
    shutil.copy(recorded_db, db)
    with Store.open(db) as store:
        store.import_dataset(GPU_SEARCHES)
    server, where = serve(db, folder / "workspace")
    yield where, db
    server.stop()


@pytest.fixture
def open_at(browser: Any) -> Iterator[Callable[..., Any]]:
    """Open a URL in a new page of a given viewport (the page's own errors fail the test)."""
    contexts: list[Any] = []
    errors: list[str] = []

    def opened(url: str, viewport: dict[str, int] = WIDE) -> Any:
        context = browser.new_context(viewport=viewport)
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        page.wait_for_function("window.kmEditor !== undefined")
        return page

    yield opened
    for context in contexts:
        context.close()
    assert errors == [], f"the page raised: {errors}"


def test_every_drop_down_of_the_arguments_form_shows_its_whole_word(
    open_at: Callable[..., Any], served: Served
) -> None:
    page = open_at(served.url)
    page.select_option("#open-example", "reduce_sum")  # an input, an output and a scalar
    page.wait_for_selector("#spec-form input[name='kernel.entry'][value=reduce_sum]")
    # A select's natural width fits its widest option and its arrow; drawn narrower, the word
    # is cut ("scala"). Each must be at least as wide as it would be left to itself.
    widths = page.evaluate("""() => [...document.querySelectorAll("#spec-form .args select")].map((s) => {
      const drawn = s.getBoundingClientRect().width;
      const width = s.style.width;
      s.style.width = "max-content";
      const natural = s.getBoundingClientRect().width;
      s.style.width = width;
      return [s.name, s.value, drawn, natural];
    })""")
    roles = [value for name, value, _, _ in widths if name.endswith(".role")]
    assert "scalar" in roles and "in" in roles
    assert [w for w in widths if w[2] < w[3] - 0.5] == []
    # And the form still fits its tile.
    assert cut_off(page.query_selector(".spec-tile")) == []


def test_the_searches_and_the_sass_beside_ptx_fit_their_tiles(
    open_at: Callable[..., Any], gpu_served: tuple[Served, Path]
) -> None:
    served, db = gpu_served
    with Store.open_to_read(db) as store:
        (hgemm,) = store.query("SELECT search_id FROM searches WHERE name = 'hgemm'").rows[0]
        (winner,) = store.query("SELECT run_id FROM runs WHERE entry LIKE 'hgemm%' LIMIT 1").rows[0]
    page = open_at(served.url + f"&run={winner}")
    page.wait_for_selector("#search-view .leaderboard")
    page.click(f"tr.search-row[data-search='{hgemm}']")
    page.wait_for_selector(f"#search-view .search[data-search='{hgemm}'] .leaderboard")
    assert cut_off(page.query_selector(".searches-tile")) == []
    # Every column of the leaderboard is in view without scrolling, its run links included.
    tile = page.locator(".searches-tile").bounding_box()
    for cell in page.locator("#search-view .leaderboard thead th").all():
        box = cell.bounding_box()
        assert box["x"] + box["width"] <= tile["x"] + tile["width"]
    # The hgemm kernel's PTX has 150-character mma lines: the SASS beside it is still in view.
    page.wait_for_selector("#tile-source td.sass div")
    assert cut_off(page.query_selector("#tile-source")) == []
    source = page.query_selector("#tile-source .source")
    assert source.evaluate("(e) => e.scrollWidth <= e.clientWidth")
    page.goto(served.url + f"&run={run_id('vadd')}")
    page.wait_for_selector("#tile-source td.sass div")
    assert page.query_selector("#tile-source .source").evaluate("(e) => e.scrollWidth <= e.clientWidth")


def test_no_tile_is_cut_off_at_1600_pixels(
    open_at: Callable[..., Any], gpu_served: tuple[Served, Path]
) -> None:
    served, db = gpu_served
    with Store.open_to_read(db) as store:
        (hgemm,) = store.query("SELECT run_id FROM runs WHERE entry LIKE 'hgemm%' LIMIT 1").rows[0]
    # The recorded runs (Nsight Compute's 100-character metric names), and the HGEMM winner
    # (a 30-character kernel name in the run list, long PTX lines).
    for run in (run_id("vadd"), run_id("san_racy_reduce"), hgemm):
        page = open_at(served.url + f"&run={run}")
        page.wait_for_selector("#search-view .leaderboard")
        page.wait_for_selector("#tile-source")
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        for tile in page.query_selector_all(".tile"):
            assert cut_off(tile) == [], tile.get_attribute("id") or tile.get_attribute("class")


def test_the_editor_grows_with_the_window_and_can_be_resized(
    open_at: Callable[..., Any], served: Served
) -> None:
    sizes = {h: {"width": 1600, "height": h} for h in (700, 1000, 1400)}
    lines = {h: open_at(served.url, size).evaluate(EDITOR_LINES) for h, size in sizes.items()}
    assert lines[700] >= 20
    assert lines[700] < lines[1000] < lines[1400]
    # Dragging its corner makes it taller still.
    page = open_at(served.url)
    before = page.evaluate(EDITOR_LINES)
    box = page.locator("#editor").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] + 197, steps=5)
    page.mouse.up()
    assert page.evaluate(EDITOR_LINES) >= before + 8
