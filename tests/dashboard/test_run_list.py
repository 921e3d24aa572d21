"""The run list: each campaign's runs fold into one row that counts them, the runs of no campaign
stay one row each, and every filter keeps what the store says it should (read with plain SQL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.dashboard.run_list import (
    NO_CAMPAIGN,
    CampaignRow,
    RunFilter,
    RunRow,
    filter_choices,
    run_page,
)
from karyamorph.store.database import Store


@pytest.fixture(scope="module")
def runs(campaign_db: Path) -> list[tuple[str, str | None, str | None, str]]:
    with Store.open_to_read(campaign_db) as store:
        return [tuple(r) for r in store.query("SELECT run_id, campaign_id, label, entry FROM runs").rows]


def read(db: Path, where: RunFilter, limit: int = 100) -> tuple[set[str], dict[str, int], int]:
    with Store.open_to_read(db) as store:
        page = run_page(store, where, limit=limit)
    shown = {r.run_id for r in page.rows if isinstance(r, RunRow)}
    folded = {r.campaign_id: r.runs for r in page.rows if isinstance(r, CampaignRow)}
    assert page.runs == len(shown) + sum(folded.values()) and page.total == len(page.rows)
    return shown, folded, page.runs


def test_campaign_runs_fold_into_one_row_each(campaign_db: Path, runs: list[tuple]) -> None:
    shown, folded, _ = read(campaign_db, RunFilter())
    assert shown == {r for r, c, _, _ in runs if c is None}
    campaigns = {c for _, c, _, _ in runs if c is not None}
    assert len(campaigns) == 2
    assert folded == {c: sum(1 for _, cc, _, _ in runs if cc == c) for c in campaigns}


def test_unfolded_or_one_campaign_lists_its_runs(campaign_db: Path, runs: list[tuple]) -> None:
    assert read(campaign_db, RunFilter(unfold=True))[:2] == ({r for r, *_ in runs}, {})
    for campaign in {c for _, c, _, _ in runs if c is not None}:
        assert read(campaign_db, RunFilter(campaign=campaign))[:2] == (
            {r for r, c, _, _ in runs if c == campaign},
            {},
        )
    loose = {r for r, c, _, _ in runs if c is None}
    assert read(campaign_db, RunFilter(campaign=NO_CAMPAIGN))[:2] == (loose, {})


@pytest.mark.parametrize("unfold", [False, True])
def test_label_and_kernel_filters_keep_matching_runs(
    campaign_db: Path, runs: list[tuple], unfold: bool
) -> None:
    for label in {lab for _, _, lab, _ in runs if lab}:
        for entry in ("", "transpose"):
            kept = [(r, c) for r, c, lab, e in runs if lab == label and (not entry or e == entry)]
            shown, folded, total = read(campaign_db, RunFilter(label=label, entry=entry, unfold=unfold))
            assert total == len(kept)
            if unfold:
                assert (shown, folded) == ({r for r, _ in kept}, {})
            else:
                assert shown == {r for r, c in kept if c is None}
                assert folded == {c: sum(1 for _, cc in kept if cc == c) for _, c in kept if c is not None}


def test_pages_cover_every_row_once(campaign_db: Path, runs: list[tuple]) -> None:
    with Store.open_to_read(campaign_db) as store:
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = run_page(store, RunFilter(unfold=True), offset=offset, limit=4)
            seen += [r.run_id for r in page.rows if isinstance(r, RunRow)]
            offset = page.next_offset
        dates = [r.created_at for r in run_page(store, RunFilter(unfold=True), limit=100).rows]
    assert sorted(seen) == sorted(r for r, *_ in runs) and dates == sorted(dates, reverse=True)


def test_the_filters_offer_what_the_store_holds(campaign_db: Path, runs: list[tuple]) -> None:
    with Store.open_to_read(campaign_db) as store:
        choices = filter_choices(store)
        names = dict(store.query("SELECT campaign_id, name FROM campaigns").rows)
    assert {c.campaign_id: (c.name, c.runs) for c in choices.campaigns} == {
        c: (names[c], sum(1 for _, cc, _, _ in runs if cc == c)) for c in names
    }
    assert choices.labels == tuple(sorted({lab for _, _, lab, _ in runs if lab}))
    assert choices.entries == tuple(sorted({e for *_, e in runs}))


def test_the_text_filter_applies_before_folding(campaign_db: Path, runs: list[tuple]) -> None:
    kept = [(r, c) for r, c, lab, _ in runs if lab and "SWEEP" in lab.upper()]
    assert kept and all(c is not None for _, c in kept)
    shown, folded, total = read(campaign_db, RunFilter(text="sweep"))
    assert (shown, total) == (set(), len(kept))
    assert folded == {c: len(kept) for _, c in kept}
