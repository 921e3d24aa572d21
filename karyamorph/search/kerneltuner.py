"""Kernel Tuner cache files (``.json`` or ``.json.gz``): read as a recording, write from evaluations.

The format (Kernel Tuner 1.x, as in the FAIR Benchmark Hub's brute-forced spaces): a JSON object
with ``tune_params_keys`` (parameter order), ``tune_params`` (each parameter's values), header
fields (``device_name``, ``kernel_name``, ``problem_size``, ``objective``) and ``cache``, mapping
``"v1,v2,..."`` (``str`` of each value, in ``tune_params_keys`` order) to a record: the parameter
values, the objective (``time``, milliseconds) and more (``times``, ``compile_time``, ...). A
configuration that failed holds an error name in place of its time: ``CompilationFailedConfig``,
``RuntimeFailedConfig`` or ``InvalidConfig``.

The cache does not carry the space's restrictions; a brute-forced cache holds every configuration
that passed them, so its keys are the valid set.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from karyamorph.search.outcome import Failure, Outcome
from karyamorph.search.recording import Recording, RecordingError
from karyamorph.search.space import Parameter, Space, Value

# Kernel Tuner's error names -> our reasons, and back (ours that it has no name for export as
# InvalidConfig; the exact reason travels in FAILURE_FIELD, which Kernel Tuner ignores).
ERRORS = {
    "CompilationFailedConfig": Failure.COMPILE,
    "RuntimeFailedConfig": Failure.RUNTIME,
    "InvalidConfig": Failure.CONSTRAINT,
}
ERROR_NAMES = {
    Failure.COMPILE: "CompilationFailedConfig", Failure.RUNTIME: "RuntimeFailedConfig",
    Failure.TIMEOUT: "RuntimeFailedConfig",
}  # fmt: skip
FAILURE_FIELD = "karyamorph_failure"
HEADER = ("device_name", "kernel_name", "problem_size", "objective")


def _load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError, EOFError) as exc:
        raise RecordingError(f"{path}: not a readable Kernel Tuner cache file ({exc})") from exc
    if not isinstance(data, dict) or not {"tune_params_keys", "tune_params", "cache"} <= data.keys():
        raise RecordingError(f"{path}: a Kernel Tuner cache file has tune_params_keys, tune_params and cache")
    return data


def read_cache(path: str | Path, name: str | None = None) -> Recording:
    """The recording in a Kernel Tuner cache file.

    Parameters
    ----------
    path : str or Path
        A ``.json`` or ``.json.gz`` cache file.
    name : str, optional
        The recording's name (default: the file's parent folder and stem, ``convolution/A100``).

    Returns
    -------
    Recording
        Its space is the set of cached configurations; each failed one answers with its reason.
    """
    path = Path(path)
    data = _load(path)
    keys = list(data["tune_params_keys"])
    parameters = tuple(Parameter(k, tuple(data["tune_params"][k])) for k in keys)
    by_text = [{str(v): v for v in p.values} for p in parameters]
    objective = data.get("objective", "time")
    configs: list[dict[str, Value]] = []
    answers: dict[tuple[Value, ...], Outcome] = {}
    for key, record in data["cache"].items():
        texts = key.split(",")
        if len(texts) != len(keys) or any(t not in m for t, m in zip(texts, by_text, strict=False)):
            raise RecordingError(f"{path}: cache key {key!r} does not match tune_params")
        values = tuple(m[t] for t, m in zip(texts, by_text, strict=True))
        configs.append(dict(zip(keys, values, strict=True)))
        answers[values] = _outcome(record, objective, path, key)
    space = Space.from_configurations(parameters, configs)
    outcomes = tuple(answers[space.values(i)] for i in range(space.size))
    meta = {k: data[k] for k in HEADER if k in data}
    label = name or (f"{path.parent.name}/{path.name.split('.')[0]}")
    return Recording(label, space, outcomes, meta)


def _outcome(record: Mapping[str, Any], objective: str, path: Path, key: str) -> Outcome:
    value = record.get(objective)
    if isinstance(value, str):
        reason = record.get(FAILURE_FIELD) or ERRORS.get(value)
        if reason not in {f.value for f in Failure}:
            raise RecordingError(f"{path}: {key}: unknown error {value!r} ({FAILURE_FIELD}: {reason!r})")
        return Outcome.failed(reason, value)
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise RecordingError(f"{path}: {key}: {objective} is {value!r}, not a positive number")
    return Outcome.timed(float(value))


def cache_document(
    space: Space, outcomes: Iterable[tuple[int, Outcome]], meta: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A Kernel Tuner cache document for these ``(index, outcome)`` pairs of ``space``."""
    names = list(space.names)
    doc: dict[str, Any] = {k: v for k, v in (meta or {}).items() if k in HEADER}
    doc.setdefault("objective", "time")
    doc["tune_params_keys"] = names
    doc["tune_params"] = {p.name: list(p.values) for p in space.parameters}
    cache: dict[str, Any] = {}
    for index, outcome in outcomes:
        record: dict[str, Any] = dict(space.config(index))
        if outcome.time_ms is not None:
            record["time"] = outcome.time_ms
            record["times"] = [outcome.time_ms]
        else:
            assert outcome.failure is not None
            record["time"] = ERROR_NAMES.get(outcome.failure, "InvalidConfig")
            record[FAILURE_FIELD] = outcome.failure.value
        cache[space.key(index)] = record
    doc["cache"] = cache
    return doc


def write_cache(
    path: str | Path, space: Space, outcomes: Iterable[tuple[int, Outcome]],
    meta: Mapping[str, Any] | None = None,
) -> Path:  # fmt: skip
    """Write a Kernel Tuner cache file (gzip-compressed when the name ends in ``.gz``).

    Only what was evaluated is written (``time`` and ``times`` for a timed configuration, the error
    name for a failed one); Kernel Tuner's compile and benchmark durations are not invented.
    """
    path = Path(path)
    doc = cache_document(space, outcomes, meta)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    return path
