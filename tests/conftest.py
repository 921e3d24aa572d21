"""Test-wide settings: tool outputs cached in a temporary folder; property tests derandomized."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# Property tests draw the same examples on every run (a CI failure reproduces); the long fuzz
# runs live in benchmarks/.
settings.register_profile(
    "karyamorph", derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("karyamorph")


@pytest.fixture(autouse=True)
def default_recursion_limit() -> Iterator[None]:
    # mypy's API (run by the typing tests) raises the process's recursion limit and keeps it; a
    # spec expression nested too deeply is refused by the RecursionError the default one gives,
    # so every test starts and ends with the limit it found, whichever worker it shares.
    limit = sys.getrecursionlimit()
    yield
    sys.setrecursionlimit(limit)


@pytest.fixture(autouse=True, scope="session")
def no_inherited_width() -> None:
    # pytest-xdist's workers start with COLUMNS=80 and LINES=24 set; the command-line tests read
    # output as a pipe gets it (as wide as its rows need unless $COLUMNS says), so a test sees
    # only a width it sets itself.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


@pytest.fixture(autouse=True, scope="session")
def private_tool_cache() -> Iterator[None]:
    old = os.environ.get("KARYAMORPH_CACHE")
    with tempfile.TemporaryDirectory(prefix="karyamorph-test-cache-") as tmp:
        os.environ["KARYAMORPH_CACHE"] = tmp
        yield
    if old is None:
        os.environ.pop("KARYAMORPH_CACHE", None)
    else:
        os.environ["KARYAMORPH_CACHE"] = old


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs on every core), tests that cannot share run in one
    worker, one after another: GPU tests share the one device (and its timings), and the tests of
    one module that start a Ray cluster share it rather than start one per worker."""
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(pytest.mark.xdist_group("gpu"))
