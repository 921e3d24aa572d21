"""Where the brute-forced Kernel Tuner spaces live: ``$KARYAMORPH_BENCHMARK_HUB``, else
``../shared/data/benchmark_hub`` beside the repository (the data are not copied into it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"


def hub_path() -> Path:
    default = ROOT.parent / "shared" / "data" / "benchmark_hub"
    return Path(os.environ.get("KARYAMORPH_BENCHMARK_HUB") or default)


@pytest.fixture
def hub() -> Path:
    path = hub_path()
    if not (path / "README.md").exists():
        pytest.skip(f"the benchmark_hub data are not at {path} (set KARYAMORPH_BENCHMARK_HUB)")
    return path
