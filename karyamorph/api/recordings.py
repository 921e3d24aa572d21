"""Searches replayed against recorded data, from Python: no GPU, the same strategies as a GPU
search."""

from __future__ import annotations

from pathlib import Path

from karyamorph.search.kerneltuner import read_cache
from karyamorph.search.loop import SearchRecord, run_search
from karyamorph.search.recording import RecordedEvaluator, Recording
from karyamorph.search.replay import ReplaySummary
from karyamorph.search.replay import replay as replay_strategy
from karyamorph.search.strategies import DEFAULT_STRATEGY, make_strategy


def recording(path: str | Path, name: str | None = None) -> Recording:
    """A recorded search space: a Kernel Tuner cache file (``.json`` or ``.json.gz``) in which
    every configuration was compiled and timed on a GPU, as ``karyamorph search replay`` reads it.

    Parameters
    ----------
    path : str or Path
        The cache file (``datasets/benchmark_hub/convolution_milo/A100.json.gz``).
    name : str, optional
        The recording's name (default: the file's folder and stem).

    Returns
    -------
    Recording
        ``name``, ``space`` (``size``, ``parameters``), ``optimum_ms``; a failed configuration
        answers with its reason.
    """
    return read_cache(path, name)


def search_recorded(
    recorded: Recording, strategy: str = DEFAULT_STRATEGY, *, budget: int, seed: int = 0
) -> SearchRecord:
    """One search of a recorded space: ``strategy`` proposes configurations, the recording
    answers each with its time or its failure, until ``budget`` unique evaluations are spent.

    Parameters
    ----------
    recorded : Recording
        The space and its answers (:func:`recording`).
    strategy : str
        ``random``, ``genetic``, ``annealing``, ``model``, ... (``karyamorph search strategies``).
    budget : int
        Unique evaluations allowed (failures count; repeats do not).
    seed : int
        Seeds the strategy: the same seed gives the same search.

    Returns
    -------
    SearchRecord
        ``evaluations`` in order, ``best``, ``best_curve_ms`` (the best time after each
        evaluation), ``stopped`` (budget, exhausted or stalled).

    Raises
    ------
    ValueError
        An unknown strategy.
    """
    return run_search(
        recorded.space, make_strategy(strategy), RecordedEvaluator(recorded), budget=budget, seed=seed
    )


def replay(
    recorded: Recording, strategy: str = DEFAULT_STRATEGY, *, budget: int, repeats: int = 10, seed: int = 0
) -> ReplaySummary:
    """Score ``strategy`` on a recorded space: ``repeats`` searches (seeds ``seed``,
    ``seed + 1``, ...), each scored by the fraction of the optimum it reached (optimum time /
    best time found), as ``karyamorph search replay`` does.

    Parameters
    ----------
    recorded : Recording
        The space and its answers (:func:`recording`).
    strategy : str
        The strategy's name.
    budget : int
        Unique evaluations per search (>= 1).
    repeats : int
        Searches (>= 1).
    seed : int
        The first search's seed.

    Returns
    -------
    ReplaySummary
        ``mean_fraction_of_optimum``, ``p_within_5pct``, and ``curve``: the mean fraction after
        each evaluation, ``min(budget, space size)`` long.

    Raises
    ------
    ValueError
        An unknown strategy, or a budget or repeats below 1.
    """
    return replay_strategy(recorded, make_strategy(strategy), budget=budget, repeats=repeats, seed=seed)
