"""The campaign file (TOML): which specs, at which sizes, for which archs, through which stages.

A campaign file reads::

    [campaign]
    name = "compile_sweep"
    archs = ["sm_80", "sm_90", "sm_120"]    # default: the GPU's, else each PTX's .target
    stages = ["compile", "sass", "static"]  # default: every stage; `skip = [...]` leaves some out

    [[sweep]]
    specs = ["../kernels/vadd.toml", "../kernels/scale.toml"]   # globs, relative to this file
    sizes.n = [4096, 65536]                                     # a list of integers,
    # sizes.n = { from = 1024, to = 16777216, times = 4 }      # or a geometric range,
    # sizes.n = { from = 64, to = 1024, step = 64 }            # or an arithmetic one (both inclusive)

Every ``[[sweep]]`` crosses its size lists (``zip = true`` pairs them up instead) and may name
its own ``archs``. Errors name the file and the key, as spec errors do.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_FILE_CHARS = 1 << 20
"""Largest campaign file read, in characters."""
MAX_VALUES = 10_000
"""Most values one size sweep may produce."""

_CAMPAIGN_KEYS = {"name", "description", "archs", "stages", "skip", "timeout_s", "check_budget_s"}
_SWEEP_KEYS = {"specs", "sizes", "archs", "zip"}


class CampaignError(ValueError):
    """A campaign that cannot be used; ``where`` is ``file: key`` (``sweep.toml: sweep[1].sizes.n``)."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class Sweep:
    """One ``[[sweep]]``: spec globs, each size's values in order, its archs (None: the campaign's)."""

    specs: tuple[str, ...]
    sizes: tuple[tuple[str, tuple[int, ...]], ...]
    archs: tuple[str, ...] | None
    zipped: bool
    where: str


@dataclass(frozen=True, slots=True)
class CampaignFile:
    """A parsed campaign file.

    Attributes
    ----------
    path : Path
        Where it was read; spec globs resolve against its folder.
    text : str
        The file as written (stored with the campaign).
    name, description : str
    archs : tuple of str
        Targets of every sweep that names none; empty for the GPU's own (else the PTX's).
    stages : tuple of str or None
        The stages to run (None: every stage), less ``skip``.
    skip : tuple of str
    timeout_s : float or None
        Seconds a GPU launch may run (None: each stage's own limit).
    check_budget_s : float or None
        Seconds the model stage's checks may take (None: its default).
    sweeps : tuple of Sweep
    """

    path: Path
    text: str
    name: str
    description: str
    archs: tuple[str, ...]
    stages: tuple[str, ...] | None
    skip: tuple[str, ...]
    timeout_s: float | None
    check_budget_s: float | None
    sweeps: tuple[Sweep, ...]


def load_campaign(path: str | Path) -> CampaignFile:
    """Read and check the campaign file at ``path``.

    Raises
    ------
    CampaignError
        Naming the file and the key (``sweep.toml: sweep[2].sizes.n: ...``).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise CampaignError(str(path), "campaign file not found") from None
    except UnicodeDecodeError as exc:
        raise CampaignError(p.name, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CampaignError(str(path), f"cannot read the campaign file: {exc.strerror}") from None
    if len(text) > MAX_FILE_CHARS:
        raise CampaignError(
            p.name, f"campaign file is {len(text)} characters long (at most {MAX_FILE_CHARS})"
        )
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(p.name, f"not valid TOML: {exc}") from None
    return campaign_from_dict(doc, p, text)


def campaign_from_dict(doc: dict[str, Any], path: Path, text: str = "") -> CampaignFile:
    """Build a CampaignFile from a parsed TOML document read from ``path``."""
    name = path.name
    _unknown(doc, {"campaign", "sweep"}, name)
    head = doc.get("campaign")
    if not isinstance(head, dict):
        raise CampaignError(name, 'missing [campaign] table (with at least name = "...")')
    _unknown(head, _CAMPAIGN_KEYS, f"{name}: [campaign]")
    title = head.get("name")
    if not isinstance(title, str) or not title.strip():
        raise CampaignError(f"{name}: campaign.name", "expected a non-empty string")
    description = head.get("description", "")
    if not isinstance(description, str):
        raise CampaignError(f"{name}: campaign.description", "expected a string")
    archs = _strings(head.get("archs", []), f"{name}: campaign.archs")
    stages = _strings(head["stages"], f"{name}: campaign.stages") if "stages" in head else None
    if stages == ():
        raise CampaignError(
            f"{name}: campaign.stages", "an empty list runs nothing; leave it out for every stage"
        )
    skip = _strings(head.get("skip", []), f"{name}: campaign.skip")
    timeout_s = _seconds(head.get("timeout_s"), f"{name}: campaign.timeout_s")
    budget_s = _seconds(head.get("check_budget_s"), f"{name}: campaign.check_budget_s")
    raw = doc.get("sweep")
    if not isinstance(raw, list) or not raw:
        raise CampaignError(name, 'missing [[sweep]] tables (each with specs = ["glob", ...])')
    sweeps = tuple(_sweep(s, f"{name}: sweep[{i}]") for i, s in enumerate(raw))
    return CampaignFile(
        path, text, title.strip(), description, archs, stages, skip, timeout_s, budget_s, sweeps
    )


def _sweep(table: Any, where: str) -> Sweep:
    if not isinstance(table, dict):
        raise CampaignError(where, "expected a table")
    _unknown(table, _SWEEP_KEYS, where)
    if "specs" not in table:
        raise CampaignError(
            where, 'missing specs = ["glob", ...] (spec files, relative to the campaign file)'
        )
    specs = _strings(table["specs"], f"{where}.specs")
    if not specs:
        raise CampaignError(f"{where}.specs", "expected at least one glob")
    sizes_t = table.get("sizes", {})
    if not isinstance(sizes_t, dict):
        raise CampaignError(f"{where}.sizes", "expected a table of size name = values")
    sizes = tuple((k, _values(v, f"{where}.sizes.{k}")) for k, v in sizes_t.items())
    zipped = table.get("zip", False)
    if not isinstance(zipped, bool):
        raise CampaignError(f"{where}.zip", f"expected true or false, got {zipped!r}")
    lengths = {len(v) for _, v in sizes}
    if zipped and len(lengths) > 1:
        counts = ", ".join(f"{k}: {len(v)}" for k, v in sizes)
        raise CampaignError(f"{where}.zip", f"zipped sizes need lists of one length ({counts})")
    archs = _strings(table["archs"], f"{where}.archs") if "archs" in table else None
    return Sweep(specs, sizes, archs, zipped, where)


def _values(value: Any, where: str) -> tuple[int, ...]:
    """A size's values: an integer, a list of integers, or a range table."""
    if _is_int(value):
        return (value,)
    if isinstance(value, list):
        if not value or not all(_is_int(v) for v in value):
            raise CampaignError(where, f"expected a non-empty list of integers, got {value!r}")
        return tuple(value)
    if isinstance(value, dict):
        return _range(value, where)
    raise CampaignError(where, f"expected an integer, a list of integers or a range table, got {value!r}")


def _range(table: dict[str, Any], where: str) -> tuple[int, ...]:
    _unknown(table, {"from", "to", "times", "step"}, where)
    start: Any = table.get("from")
    stop: Any = table.get("to")
    if not _is_int(start) or not _is_int(stop) or start > stop:
        raise CampaignError(where, f"a range needs integers from <= to, got from = {start!r}, to = {stop!r}")
    if ("times" in table) == ("step" in table):
        raise CampaignError(where, "a range needs exactly one of times (geometric) or step (arithmetic)")
    out: list[int] = []
    if "times" in table:
        times = table["times"]
        if not _is_int(times) or times < 2 or start < 1:
            raise CampaignError(
                where, f"a geometric range needs times >= 2 and from >= 1, got times = {times!r}"
            )
        v = start
        while v <= stop and len(out) <= MAX_VALUES:
            out.append(v)
            v *= times
    else:
        step = table["step"]
        if not _is_int(step) or step < 1:
            raise CampaignError(where, f"an arithmetic range needs step >= 1, got {step!r}")
        if (stop - start) // step + 1 <= MAX_VALUES:
            out = list(range(start, stop + 1, step))
        else:
            out = [0] * (MAX_VALUES + 1)
    if len(out) > MAX_VALUES:
        raise CampaignError(where, f"the range has more than {MAX_VALUES} values")
    return tuple(out)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise CampaignError(where, f"expected a list of non-empty strings, got {value!r}")
    return tuple(v.strip() for v in value)


def _seconds(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise CampaignError(where, f"expected a number of seconds > 0, got {value!r}")
    return float(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _unknown(table: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise CampaignError(
            where, f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})"
        )
