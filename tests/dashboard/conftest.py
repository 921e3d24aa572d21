"""The dashboard's fixtures: the recorded database, a served page on it, and a real Chromium.

Chromium is Debian's (``apt-get install -y chromium``), launched by its executable path
(``$KARYAMORPH_CHROMIUM``, else ``chromium`` on the PATH); without it the browser tests skip
and say how to get it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from karyamorph.dashboard.server import Served, Server
from karyamorph.dashboard.state import State
from tests.dashboard.data.make_recorded import build

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "datasets" / "kernels"
GET_CHROMIUM = "install Debian's Chromium (`apt-get install -y chromium`) or set KARYAMORPH_CHROMIUM"


def chromium_path() -> str | None:
    """Chromium's executable, if this machine has one."""
    named = os.environ.get("KARYAMORPH_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def recorded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database of recorded runs (see data/make_recorded.py); tests must not write to it."""
    return build(tmp_path_factory.mktemp("recorded") / "recorded.duckdb")


@pytest.fixture
def db_copy(recorded_db: Path, tmp_path: Path) -> Path:
    """A copy of the recorded database that a test may write to."""
    copy = tmp_path / "copy.duckdb"
    shutil.copy(recorded_db, copy)
    return copy


def serve(db: Path, workspace: Path) -> tuple[Server, Served]:
    server = Server(State.create(db, workspace=workspace, examples=EXAMPLES))
    return server, server.start()


@pytest.fixture(scope="session")
def served(recorded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The page on the recorded database, for the whole session."""
    server, where = serve(recorded_db, tmp_path_factory.mktemp("workspace"))
    yield where
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Chromium through Playwright, for the whole session."""
    executable = chromium_path()
    if executable is None:
        pytest.skip(f"no Chromium for the browser tests: {GET_CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]' for Playwright")
    with sync_api.sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context and page (no cookies from other tests)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], f"the page raised: {errors}"


CAMPAIGNS = {
    # name: (label, the campaign file's body after [campaign] name)
    "sizes": (
        "size sweep",
        """archs = ["sm_80", "sm_90"]
stages = ["compile", "static"]

[[sweep]]
specs = ["vadd.toml"]
sizes.n = [1000, 2000, 4096, 8192]

[[sweep]]
specs = ["transpose.toml"]
sizes.rows = 100
sizes.cols = 70
""",
    ),
    "tiles": (
        "tile check",
        """archs = ["sm_80"]
stages = ["compile"]

[[sweep]]
specs = ["transpose.toml"]
sizes.rows = [64, 128, 256]
sizes.cols = 64
""",
    ),
}
"""Two campaigns run on the compile side into a copy of the recorded database (10 and 3 runs)."""


@pytest.fixture(scope="session")
def campaign_db(recorded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The recorded runs and the runs of :data:`CAMPAIGNS`, stored by ``campaign run``'s own code."""
    from karyamorph.campaign.runner import run_campaign

    folder = tmp_path_factory.mktemp("campaigns")
    db = folder / "campaigns.duckdb"
    shutil.copy(recorded_db, db)
    for kernel in ("vadd", "transpose"):
        for ext in ("toml", "ptx"):
            shutil.copy(EXAMPLES / f"{kernel}.{ext}", folder / f"{kernel}.{ext}")
    for name, (label, body) in CAMPAIGNS.items():
        path = folder / f"{name}.toml"
        path.write_text(f'[campaign]\nname = "{name}"\n{body}')
        report = run_campaign(path, db=db, label=label)
        assert report.failed == 0, report.as_dict()
    return db
