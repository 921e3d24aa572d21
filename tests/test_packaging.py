"""The package's metadata: setuptools reads pyproject.toml without a warning (an install prints
every one of them, once per build step)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_reads_without_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    monkeypatch.chdir(ROOT)  # setuptools resolves the package folders from the working folder
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    assert [str(w.message).split("\n")[0] for w in caught] == []
    assert dist.metadata.name == "karyamorph" and dist.metadata.license_expression == "Apache-2.0"
