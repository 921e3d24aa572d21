"""The store page's table of tables is the schema's: every table, in order, with its line."""

from __future__ import annotations

import re

from karyamorph.store.schema import TABLES
from tests.docs.fences import DOCS


def test_the_store_page_lists_every_table_with_its_line() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (.*) \|$", (DOCS / "store.md").read_text(), re.M)
    assert rows == list(TABLES.items())
