"""Campaigns and recorded datasets from Python: run a campaign file, import recorded results."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.campaign.runner import CampaignReport
from karyamorph.campaign.runner import run_campaign as run_campaign_file
from karyamorph.store import store_path
from karyamorph.store.exchange import PROVENANCE
from karyamorph.store.pending import open_waiting


def run_campaign(
    path: str | Path, db: str | Path | None = None, *, label: str | None = None
) -> CampaignReport:
    """Run the campaign file ``path`` into the store, as ``karyamorph campaign run`` does: only
    its items not done yet, so that a second call resumes the first.

    Parameters
    ----------
    path : str or Path
        The campaign file (``datasets/campaigns/compile_sweep.toml``).
    db : str or Path, optional
        The store file (default: ``$KARYAMORPH_DB``, else ``./karyamorph.duckdb``).
    label : str, optional
        Stored with the campaign and its runs; another label is another campaign.

    Returns
    -------
    CampaignReport
        ``info`` (``campaign_id``, ``name``, ``items``, ``done``, ``failed``), what this call
        ran, ``verdicts`` by status, ``seconds``, ``items_per_minute``.

    Raises
    ------
    ValueError
        The campaign file, or a spec it names, cannot be used (the message names it).
    StoreError
        The store cannot be opened or written.
    """
    return run_campaign_file(path, db=store_path(db), label=label)


@dataclass(frozen=True, slots=True)
class DatasetImport:
    """One recorded dataset added to the store by :func:`import_datasets`.

    Attributes
    ----------
    folder : Path
        The dataset: Parquet files and their ``provenance.json``.
    added : dict of str to int
        Rows added per table (``runs``, ``metrics``, ...); 0 for rows the store had.
    provenance : dict
        The dataset's ``provenance.json``: ``devices``, ``note``, versions, row counts.
    """

    folder: Path
    added: dict[str, int]
    provenance: dict[str, Any] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The import as a JSON-ready dict."""
        return {"folder": str(self.folder), "added": dict(self.added), "provenance": self.provenance}


def import_datasets(path: str | Path, db: str | Path | None = None) -> list[DatasetImport]:
    """Add the rows of the dataset at ``path`` (a folder with ``provenance.json``, or a folder
    of such folders) that the store lacks, as ``karyamorph datasets import`` does.

    Parameters
    ----------
    path : str or Path
        The dataset, or a folder of datasets (``datasets/campaigns``), taken in name order.
    db : str or Path, optional
        The store file (default: ``$KARYAMORPH_DB``, else ``./karyamorph.duckdb``).

    Returns
    -------
    list of DatasetImport
        One per dataset; empty when ``path`` holds none.

    Raises
    ------
    ValueError
        A dataset is not whole (nothing of it is written; the message names the file).
    StoreError
        The store cannot be opened or written.
    """
    root = Path(path)
    folders = (
        [root] if (root / PROVENANCE).exists() else sorted(p.parent for p in root.glob(f"*/{PROVENANCE}"))
    )
    if not folders:
        return []
    imports: list[DatasetImport] = []
    with open_waiting(store_path(db)) as store:
        for folder in folders:
            provenance = json.loads((folder / PROVENANCE).read_text())
            imports.append(DatasetImport(folder, store.import_dataset(folder), provenance))
    return imports
