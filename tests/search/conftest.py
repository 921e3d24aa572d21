"""The brute-forced Kernel Tuner spaces the search tests replay: ``datasets/benchmark_hub``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
HUB = ROOT / "datasets" / "benchmark_hub"


@pytest.fixture
def hub() -> Path:
    return HUB
