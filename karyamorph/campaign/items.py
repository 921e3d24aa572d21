"""A campaign's items: each sweep's spec globs x size combinations x archs, in a fixed order.

An item is one ``karyamorph run`` of a spec file at given sizes for one arch. Its key names it
in the store (``campaign_items.item``, ``runs.item``): the spec file as the campaign reaches it,
every size of the spec at this item, and the arch (``native`` for the GPU's own), as in
``../kernels/vadd.toml n=4096 sm_90``.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from karyamorph.campaign.definition import CampaignError, CampaignFile, Sweep
from karyamorph.isa.arch import Arch
from karyamorph.kernel.limits import resources_for
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec, SpecError
from karyamorph.store.items import ItemRecord

MAX_ITEMS = 100_000
"""Most items one campaign may have."""
NATIVE = "native"
"""The arch word of an item that runs for the GPU's own target (else the PTX's ``.target``)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One item of a campaign.

    Attributes
    ----------
    key : str
        Its name in the store, unique in the campaign.
    position : int
        Its place in the campaign's order (0, 1, ...).
    spec_path : Path
        The spec file, absolute.
    spec_name : str
        The spec file relative to the campaign file's folder (as the key shows it).
    arch : str or None
        The target, or None for the GPU's own.
    sizes : tuple of (str, int)
        Every size of the spec at this item, in the spec's order.
    spec : KernelSpec
        The spec as loaded when the campaign was expanded: a worker on another host runs it
        without reading the files.
    """

    key: str
    position: int
    spec_path: Path
    spec_name: str
    arch: str | None
    sizes: tuple[tuple[str, int], ...]
    spec: KernelSpec = field(compare=False, repr=False)

    @property
    def size_dict(self) -> dict[str, int]:
        return dict(self.sizes)

    def record(self) -> ItemRecord:
        """The item as the store's ``campaign_items`` row holds it."""
        return ItemRecord(self.key, self.position, self.spec_name, self.arch, self.size_dict)


def item_key(spec_name: str, sizes: Sequence[tuple[str, int]], arch: str | None) -> str:
    """``"<spec> <name>=<value> ... <arch>"``, sizes in the spec's order."""
    return " ".join([spec_name, *(f"{k}={v}" for k, v in sizes), arch or NATIVE])


def expand(campaign: CampaignFile) -> tuple[Item, ...]:
    """Every item of ``campaign``, in order: sweep by sweep, then spec file (sorted), size
    combination, arch. An item that an earlier sweep already made is not repeated.

    Raises
    ------
    CampaignError
        A glob matches no file, a spec does not load, a size is not one of the spec's, an arch is
        unknown, or there are more than :data:`MAX_ITEMS` items.
    """
    base = campaign.path.parent
    items: list[Item] = []
    seen: set[str] = set()
    specs: dict[Path, KernelSpec] = {}
    for sweep in campaign.sweeps:
        archs = sweep.archs if sweep.archs is not None else campaign.archs
        where = f"{sweep.where}.archs" if sweep.archs is not None else f"{campaign.path.name}: campaign.archs"
        for name in archs:
            _check_arch(name, where)
        targets: tuple[str | None, ...] = archs or (None,)
        for path, name in _spec_files(sweep, base):
            if path not in specs:
                specs[path] = _load(path, sweep.where)
            spec = specs[path]
            for combo in _combinations(sweep, spec, name):
                sizes = tuple({**spec.sizes, **combo}.items())
                for arch in targets:
                    key = item_key(name, sizes, arch)
                    if key in seen:
                        continue
                    seen.add(key)
                    items.append(Item(key, len(items), path, name, arch, sizes, spec))
                    if len(items) > MAX_ITEMS:
                        raise CampaignError(campaign.path.name, f"more than {MAX_ITEMS} items")
    return tuple(items)


def _spec_files(sweep: Sweep, base: Path) -> list[tuple[Path, str]]:
    """Each spec file the sweep's globs match, once: its absolute path, and its name as the
    campaign writes it (relative to the campaign file's folder, or absolute where the glob is)."""
    found: dict[Path, str] = {}
    for i, pattern in enumerate(sweep.specs):
        absolute = Path(pattern).is_absolute()
        hits = sorted(Path(p).resolve() for p in glob.glob(pattern if absolute else str(base / pattern),
                                                            recursive=True) if Path(p).is_file())  # fmt: skip
        if not hits:
            raise CampaignError(
                f"{sweep.where}.specs[{i}]", f"{pattern!r} matches no file (relative to {base})"
            )
        for hit in hits:
            found.setdefault(hit, hit.as_posix() if absolute else Path(os.path.relpath(hit, base)).as_posix())
    return list(found.items())


def _load(path: Path, where: str) -> KernelSpec:
    try:
        return load_spec(path)
    except SpecError as exc:
        raise CampaignError(f"{where}.specs", f"spec {path}: {exc}") from None


def _combinations(sweep: Sweep, spec: KernelSpec, name: str) -> list[dict[str, int]]:
    for size, _ in sweep.sizes:
        if size not in spec.sizes:
            known = ", ".join(spec.sizes) or "none"
            raise CampaignError(
                f"{sweep.where}.sizes.{size}", f"{name} has no size {size!r} (its sizes: {known})"
            )
    names = [k for k, _ in sweep.sizes]
    values = [v for _, v in sweep.sizes]
    rows = zip(*values, strict=True) if sweep.zipped and values else itertools.product(*values)
    return [dict(zip(names, row, strict=True)) for row in rows]


def _check_arch(arch: str, where: str) -> None:
    try:
        resources_for(Arch.parse(arch))
    except ValueError as exc:
        raise CampaignError(where, f"unsupported arch {arch!r}: {exc}") from None
