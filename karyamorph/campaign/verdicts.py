"""How a campaign's runs ended: counted by status as ``karyamorph run`` states it, and whether that
fails the campaign.

An item is *done* when it ran (its run is stored), whatever its run's verdict; *failed* when it
could not run at all (no run: the spec, its sizes or the PTX were refused). A done item's run
ends pass, fail, error, unknown or skip (:attr:`RunResult.status
<karyamorph.harness.pipeline.RunResult.status>`), and it fails the campaign as it would fail
``karyamorph run`` (:meth:`Status.fails <karyamorph.harness.stages.base.Status.fails>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karyamorph.harness.stages.base import Status
from karyamorph.store.campaigns import CampaignInfo

VERDICTS = (Status.PASS, Status.FAIL, Status.ERROR, Status.UNKNOWN, Status.SKIP)
"""The statuses a run ends with, in the order they are shown."""


def verdict_counts(found: Mapping[str, int]) -> dict[str, int]:
    """``found`` (status -> runs) with every status of :data:`VERDICTS`, in that order, 0 where
    absent; a status outside them (none is written) is kept after them."""
    return {**{str(v): found.get(v, 0) for v in VERDICTS}, **found}


def failing(info: CampaignInfo, *, strict: bool = False) -> bool:
    """Whether ``campaign run`` of this campaign exits 1: an item could not run, or a run failed or
    errored (with ``strict``, ended unknown too), as ``karyamorph run`` would exit 1 for it."""
    return info.failed > 0 or any(n and Status(v).fails(strict=strict) for v, n in info.verdicts.items())


def not_passed(verdict: str | None) -> bool:
    """Whether a run's verdict is one to list: fail, error or unknown (not pass, nor skip)."""
    return verdict in (Status.FAIL, Status.ERROR, Status.UNKNOWN)


def runs_text(verdicts: Mapping[str, int]) -> str:
    """``4 pass, 2 fail, 0 error, 0 unknown`` (skip only where a run skipped every stage)."""
    counts = verdict_counts(verdicts)
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n or v != Status.SKIP)


def counts_text(done: int, failed: int, pending: int, verdicts: Mapping[str, int]) -> str:
    """``6 ran (4 pass, 2 fail, 0 error, 0 unknown), 0 could not run, 0 pending``."""
    return f"{done} ran ({runs_text(verdicts)}), {failed} could not run, {pending} pending"


def campaign_dict(info: CampaignInfo) -> dict[str, Any]:
    """The campaign as a JSON-ready dict: its item states (``done``: ran; ``failed``: could not
    run) and ``verdicts``, its runs counted by every status."""
    return {**info.as_dict(), "verdicts": verdict_counts(info.verdicts)}
