"""A search from Python, as ``karyamorph search run`` does it: the source resolved to a template
(a shipped name, a spec with a ``[search]`` table, a Python template file, or a spec's proved
rewrites), its variants built, checked by the model and timed on this machine's GPU, every
evaluation stored, the winner re-checked and raced against the baseline; the answer is the
stored search with its leaderboard."""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import karyamorph.search as search_package
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.host import current_device
from karyamorph.isa.arch import Arch
from karyamorph.search.rewrites import RewriteGate, source_search
from karyamorph.search.session import GatedEvaluator, SearchRequest, run_template_search, search_arch
from karyamorph.search.stored import StoredEvaluation, load
from karyamorph.search.strategies import DEFAULT_STRATEGY, make_strategy
from karyamorph.search.template import Template
from karyamorph.search.templates import find_template
from karyamorph.store import store_path
from karyamorph.store.database import Store

if TYPE_CHECKING:
    import pandas as pd

Gate = Callable[[GatedEvaluator], GatedEvaluator]


@dataclass(frozen=True, slots=True)
class SearchSource:
    """What a search varies: the template, and with rewrites the gate that holds the model's
    proofs of them (its rejections are read after the search)."""

    template: Template
    rewrites: tuple[str, ...] = ()
    gate: Gate | None = None
    gates: list[RewriteGate] = field(default_factory=list)

    def rejected(self) -> tuple[str, ...]:
        """The rewrites the model refused, each with its reason (after the search ran)."""
        return tuple(str(r) for g in self.gates for r in g.rejections())


def resolve_source(source: str | Path, *, rewrites_for: Arch | None = None) -> SearchSource:
    """The template ``source`` names; with ``rewrites_for`` (the arch), ``source`` is a spec whose
    proved rewrites become one more parameter, each proved by the model before any GPU time.

    Raises
    ------
    UnknownTemplate, TemplateFileError
        ``source`` names no template.
    """
    if rewrites_for is None:
        return SearchSource(find_template(str(source)))
    found = source_search(str(source), rewrites_for)
    gates: list[RewriteGate] = []

    def gate(evaluator: GatedEvaluator) -> GatedEvaluator:
        gates.append(made := found.gate(evaluator))
        return made

    return SearchSource(found.template, tuple(found.rewrites), gate, gates)


def search_setup(
    source: str | Path, *, arch: str | None, strategy: str, rewrites: bool
) -> tuple[DeviceInfo | None, Arch, SearchSource]:
    """What a search needs before any GPU work: the device, the arch its variants are built for,
    and what it varies. An unknown strategy or template fails before the GPU is asked; the
    rewrites, proved for the arch, come after it is known.

    Raises
    ------
    UnknownStrategy, UnknownTemplate, TemplateFileError, SearchSetupError
        As :func:`search` says.
    """
    make_strategy(strategy)
    found = None if rewrites else resolve_source(source)
    device = current_device()
    target = search_arch(arch, device, found.template if found is not None else None)
    return device, target, found or resolve_source(source, rewrites_for=target)


SMS = "sms"
"""A template size that is the GPU's SM count (a persistent grid's blocks)."""


def device_sizes(template: Template, device: DeviceInfo | None) -> dict[str, int] | None:
    """The template's sizes with ``sms`` set to the GPU's SM count, where the template has that
    size and there is a GPU; None (the template's own sizes) otherwise."""
    if device is None or SMS not in template.sizes or device.sm_count <= 0:
        return None
    return {**template.sizes, SMS: device.sm_count}


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A finished search, as stored.

    Attributes
    ----------
    search_id : str
        The stored search's id (``karyamorph search show ID``).
    summary : mapping
        The search's summary: ``best``, ``winner`` (its configuration, time, re-check and the
        baseline race), ``evaluations``, ``failures``, ``stopped``, ``search_seconds``.
    evaluations : tuple of StoredEvaluation
        Every evaluation in order: ``config``, ``outcome`` (time or failure), ``gates``.
    rewrites : tuple of str
        The proved rewrites searched (``rewrites=True``).
    rejected : tuple of str
        The rewrites the model refused, with why.
    """

    search_id: str
    summary: Mapping[str, Any]
    evaluations: tuple[StoredEvaluation, ...]
    rewrites: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()

    @property
    def winner(self) -> Mapping[str, Any] | None:
        """The winner's entries of the summary, or None when no variant passed."""
        return self.summary.get("winner") or None

    def leaderboard(self) -> pd.DataFrame:
        """One row per evaluation, fastest first, failures last with their reason: the
        configuration's parameters as columns, ``time_ms``, ``failure``, ``seq``."""
        import pandas as pd

        rows = [
            {
                **e.config,
                "time_ms": e.outcome.time_ms,
                "seq": e.seq,
                "failure": None if e.outcome.failure is None else str(e.outcome.failure),
            }
            for e in self.evaluations
        ]
        frame = pd.DataFrame(rows)
        if frame.empty:
            return frame
        return frame.sort_values(["time_ms", "seq"], na_position="last").reset_index(drop=True)

    def to_pandas(self) -> pd.DataFrame:
        """The leaderboard (:meth:`leaderboard`)."""
        return self.leaderboard()

    def to_dict(self) -> dict[str, Any]:
        """The search as plain data: id, summary, rewrites and the evaluations."""
        return {
            "search_id": self.search_id, "summary": dict(self.summary), "rewrites": list(self.rewrites),
            "rejected": list(self.rejected),
            "evaluations": [
                {"seq": e.seq, "config": e.config, "time_ms": e.outcome.time_ms,
                 "failure": None if e.outcome.failure is None else str(e.outcome.failure)}
                for e in self.evaluations
            ],
        }  # fmt: skip

    def _repr_html_(self) -> str:
        head = f"<p>search {self.search_id[:8]}: {len(self.evaluations)} evaluation(s)</p>"
        return head + self.leaderboard().head(10).to_html(index=False)


def search(
    source: str | Path,
    *,
    budget: int,
    arch: str | None = None,
    strategy: str = DEFAULT_STRATEGY,
    seed: int = 0,
    label: str | None = None,
    sizes: Mapping[str, int] | None = None,
    check_model: bool = True,
    equivalence: bool = False,
    rewrites: bool = False,
    cost_prior_s: float = 60.0,
    out_dir: str | Path | None = None,
    db: str | Path | None = None,
) -> SearchResult:
    """Search ``source``'s variants on this machine's GPU, as ``karyamorph search run`` does.

    Parameters
    ----------
    source : str or Path
        A shipped template's name (``"vadd"``), a spec with a ``[search]`` table (``.toml``) or a
        Python file that defines ``TEMPLATE`` (``.py``); with ``rewrites``, any spec.
    budget : int
        Unique evaluations allowed (failures count).
    arch : str, optional
        The GPU's arch (default: the GPU's own); the variants are built for it and timed on it.
    strategy : str
        ``karyamorph search strategies`` lists them.
    seed : int
        Seeds the strategy and the inputs.
    label : str, optional
        Stored with the search and its winner's run.
    sizes : mapping of str to int, optional
        The problem timed (default: the template's).
    check_model : bool
        Check each variant with the model (bounds, race, barrier) before timing it.
    equivalence : bool
        Also prove each variant equivalent to the baseline where the template allows it.
    rewrites : bool
        Search the model's proved rewrites of the spec ``source`` as one more parameter.
    cost_prior_s : float
        Seconds of compile-side cost prior per search (0: none).
    out_dir : str or Path, optional
        Where the winner's spec and PTX are also written.
    db : str or Path, optional
        The store (default: ``$KARYAMORPH_DB``, else ``./karyamorph.duckdb``).

    Returns
    -------
    SearchResult
        The stored search: ``leaderboard()`` as a DataFrame, ``winner``, ``summary``.

    Raises
    ------
    SearchSetupError
        No GPU, or an arch that is not the GPU's.
    UnknownTemplate, TemplateFileError, UnknownStrategy
        The source or the strategy names nothing.
    SearchAborted
        The GPU failed in a way that stops the search.
    """
    device, target, found = search_setup(source, arch=arch, strategy=strategy, rewrites=rewrites)
    request = SearchRequest(
        found.template, target, strategy, budget, seed, label, check_model=check_model,
        sizes=sizes if sizes is not None else device_sizes(found.template, device),
        equivalence=equivalence, cost_prior_s=cost_prior_s,
    )  # fmt: skip
    file = store_path(db)
    summary = run_template_search(
        request, device=device, db=file, out_dir=Path(out_dir) if out_dir else None, gate=found.gate
    )
    with Store.open_to_read(file) as store:
        stored = load(store, summary["search_id"])
    return SearchResult(stored.search_id, summary, stored.evaluations, found.rewrites, found.rejected())


class _CallablePackage(types.ModuleType):
    """The type :mod:`karyamorph.search` takes once this module is imported: calling the package
    runs :func:`search`."""

    def __call__(self, source: str | Path, **options: Any) -> SearchResult:
        """Search ``source``'s variants on the GPU: :func:`karyamorph.search.run.search`."""
        return search(source, **options)


# The package and the function share the public name ``km.search`` (the import system binds the
# subpackage there): the package is made callable rather than one name hiding the other.
search_package.__class__ = _CallablePackage
