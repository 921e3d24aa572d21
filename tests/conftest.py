"""Test-wide settings: tool outputs are cached in a temporary folder, never in the user's cache."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest


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
