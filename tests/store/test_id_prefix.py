"""Runs and campaigns are found by a prefix of their id, with one rule and one set of messages."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from karyamorph.store.campaigns import CampaignNotFoundError, find_campaign
from karyamorph.store.database import Store
from karyamorph.store.items import ItemRecord
from karyamorph.store.reading import RunNotFoundError, find_run
from tests.store.test_reading import make_run

ITEMS = [ItemRecord("v.toml n=8 sm_90", 0, "v.toml", "sm_90", {"n": 8})]


def ids(prefix: str) -> Iterator[uuid.UUID]:
    """UUIDs that all start with ``prefix`` (hex), numbered from 0."""
    n = 0
    while True:
        yield uuid.UUID(prefix + f"{n:0{32 - len(prefix)}x}")
        n += 1


def test_more_than_ten_matching_campaigns_are_cut_to_ten_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = ids("abc")
    monkeypatch.setattr(uuid, "uuid4", lambda: next(fresh))
    with Store.open(tmp_path / "k.duckdb") as store:
        made = [store.create_campaign(f"sweep {i}", {}, ITEMS) for i in range(11)]
        with pytest.raises(CampaignNotFoundError) as caught:
            find_campaign(store, "abc")
        message = str(caught.value)
        assert "matches several campaigns (and more); give more characters:" in message
        assert len(message.splitlines()) == 1 + 10
        assert find_campaign(store, made[3]) == made[3]
        with pytest.raises(CampaignNotFoundError, match="empty campaign id matches every campaign"):
            find_campaign(store, "  ")


def test_ten_matching_runs_are_all_listed_without_more(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        for i in range(10):
            store.record_run(make_run(f"run-{i}"))
        with pytest.raises(RunNotFoundError) as caught:
            find_run(store, "run-")
        message = str(caught.value)
        assert "matches several runs; give more characters:" in message
        assert len(message.splitlines()) == 1 + 10
        store.record_run(make_run("run-10"))
        with pytest.raises(RunNotFoundError, match=r"matches several runs \(and more\)"):
            find_run(store, "run-")
