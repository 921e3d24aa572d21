"""This machine's GPUs and toolchain, asked of ``karyamorph device`` in a process of its own (the
server never loads CUDA), once per server: the answer does not change while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any

PROBE_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Machine:
    """The devices (dicts as ``karyamorph device --format json`` prints them), why there is none,
    the toolchain's versions, and an error when the probe itself failed."""

    devices: tuple[dict[str, Any], ...]
    problem: str | None
    toolchain: tuple[tuple[str, str], ...]
    error: str = ""


def probe() -> Machine:
    """Run ``karyamorph device --format json`` and read its answer."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "karyamorph.cli", "device", "--format", "json"],
            capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Machine((), None, (), f"`karyamorph device` did not answer: {exc}")
    if proc.returncode != 0:
        why = proc.stderr.strip() or f"`karyamorph device` exited with {proc.returncode}"
        return Machine((), None, (), why)
    try:
        found = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        return Machine((), None, (), f"`karyamorph device` printed no JSON: {exc}")
    toolchain = tuple((str(k), str(v)) for k, v in found.get("toolchain", {}).items())
    return Machine(tuple(found.get("devices", [])), found.get("problem"), toolchain)


class MachineProbe:
    """:func:`probe`, run once on first use; later calls get the same answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._machine: Machine | None = None

    def get(self) -> Machine:
        with self._lock:
            if self._machine is None:
                self._machine = probe()
            return self._machine
