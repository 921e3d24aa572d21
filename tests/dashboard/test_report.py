"""`karyamorph report RUN -o run.html`: one file with the run's tiles and nothing it must fetch."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.table import number
from tests.dashboard.data.make_recorded import run_id


class Links(HTMLParser):
    """Every URL the document would load, and the ids of its elements."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.ids.update([values["id"] or ""] if "id" in values else [])
        self.scripts += tag == "script"
        for key in ("src", "href"):
            url = values.get(key)
            if url and not url.startswith(("data:", "#")):
                self.urls.append(url)


def test_the_report_holds_every_tile_and_loads_nothing(recorded_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "oob.html"
    oob = run_id("san_oob_write")
    result = CliRunner().invoke(main, ["report", oob[:8], "--db", str(recorded_db), "-o", str(out),
                                       "--baseline", run_id("vadd")[:8]])  # fmt: skip
    assert result.exit_code == 0, result.output
    html = out.read_text()
    links = Links()
    links.feed(html)
    assert links.urls == [] and links.scripts == 0
    names = (
        "stages",
        "setting",
        "compile",
        "model",
        "sanitizer",
        "correctness",
        "timing",
        "metrics",
        "occupancy",
        "source",
        "history",
        "compare",
    )
    tiles = {f"tile-{n}" for n in names}
    assert tiles <= links.ids
    assert "Invalid __global__ write of size 4" in html and "NVIDIA H200" in html
    assert f"baseline {run_id('vadd')[:8]}" in html
    assert "pin as baseline" not in html  # the page's buttons stay on the page


def test_an_unknown_run_is_an_error_without_a_traceback(recorded_db: Path, tmp_path: Path) -> None:
    args = ["report", "ffffffff", "--db", str(recorded_db), "-o", str(tmp_path / "x.html")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "no run" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.html").exists()


def test_the_timing_tile_shows_the_prediction_of_a_compile_side_run(tmp_path: Path) -> None:
    db, out = tmp_path / "k.duckdb", tmp_path / "vadd.html"
    spec = Path(__file__).resolve().parents[2] / "datasets" / "kernels" / "vadd.toml"
    ran = CliRunner().invoke(main, ["run", str(spec), "--arch", "sm_90", "--db", str(db), "--format", "json",
                                    "--stages", "compile,sass,static,predict"])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    prediction = json.loads(ran.output)["prediction"]
    result = CliRunner().invoke(main, ["report", json.loads(ran.output)["run_id"][:8], "--db", str(db),
                                       "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    html = out.read_text()
    tile = html[html.index('id="tile-timing"') :]
    tile = tile[: tile.index('<div class="tile"')] if '<div class="tile"' in tile else tile
    assert "Cost model" in tile and f'bound: <b class="bound">{prediction["bound"]}</b>' in tile
    assert f'<td>predicted</td><td class="num">{number(prediction["predicted_seconds"] * 1e6)}</td>' in tile
    assert "not measured: the run has no timing stage" in tile
