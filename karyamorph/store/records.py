"""The records callers fill to write one run into the store."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def canonical_json(value: object, where: str) -> str:
    """Serialise ``value`` as JSON with sorted keys, so equal content gives equal text.

    Parameters
    ----------
    value : object
        A JSON-serialisable value (dicts, lists, str, int, float, bool, None).
    where : str
        The field being serialised, named in the error (``"DeviceRecord.properties"``).

    Raises
    ------
    TypeError
        If ``value`` holds something JSON cannot represent.
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise TypeError(f"{where} is not JSON-serialisable: {e}") from e


def content_hash(*parts: str) -> str:
    """Return the sha256 hex digest of ``parts`` joined by NUL (which no part may contain)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class DeviceRecord:
    """The GPU a run used. Stored once per distinct content.

    Parameters
    ----------
    name : str
        Marketing name as the driver reports it.
    compute_capability : str
        ``"major.minor"``, e.g. ``"12.0"``.
    sm_count : int
        Number of streaming multiprocessors.
    driver_version : str
        CUDA driver version, e.g. ``"13.0"``.
    properties : dict
        Any further JSON-serialisable device attributes.
    """

    name: str
    compute_capability: str
    sm_count: int
    driver_version: str
    properties: dict[str, Any] = field(default_factory=dict)

    def content_hash(self) -> str:
        """Key of this device in the ``devices`` table: a hash over every field."""
        return content_hash(
            self.name,
            self.compute_capability,
            str(self.sm_count),
            self.driver_version,
            canonical_json(self.properties, "DeviceRecord.properties"),
        )


@dataclass(frozen=True, slots=True)
class ToolchainRecord:
    """The tool versions a run used. Stored once per distinct content.

    Parameters
    ----------
    ptxas_version, nvdisasm_version, cuobjdump_version : str
        Version strings as the tools print them ("" when the tool is absent).
    cuda_release : str
        CUDA release the tools belong to, e.g. ``"13.0"``.
    paths : dict
        Tool name -> path of the binary used.
    """

    ptxas_version: str
    nvdisasm_version: str
    cuobjdump_version: str
    cuda_release: str
    paths: dict[str, str] = field(default_factory=dict)

    def content_hash(self) -> str:
        """Key of this toolchain in the ``toolchains`` table: a hash over every field."""
        return content_hash(
            self.ptxas_version,
            self.nvdisasm_version,
            self.cuobjdump_version,
            self.cuda_release,
            canonical_json(self.paths, "ToolchainRecord.paths"),
        )


@dataclass(frozen=True, slots=True)
class KernelRecord:
    """A PTX module and the entry a run launched. ``ptx_hash`` is the caller's content hash."""

    ptx_hash: str
    entry: str
    ptx: str


@dataclass(frozen=True, slots=True)
class StageRecord:
    """One pipeline stage's outcome; ``position`` orders the stages of a run."""

    name: str
    position: int
    status: str
    seconds: float
    log: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MetricRecord:
    """One named number a stage produced, with its unit ("" for a plain count)."""

    stage: str
    name: str
    value: float
    unit: str = ""


@dataclass(frozen=True, slots=True)
class SampleRecord:
    """One timing sample: its index in the run and the kernel time in nanoseconds."""

    i: int
    ns: float


@dataclass(frozen=True, slots=True)
class SassRecord:
    """The SASS text of the run's kernel for one target architecture."""

    arch: str
    text: str


@dataclass(frozen=True, slots=True)
class FindingRecord:
    """One structured finding (sanitizer error, model/GPU disagreement, ...)."""

    tool: str
    kind: str
    location: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Everything one run produced, written by ``Store.record_run`` in one transaction.

    Parameters
    ----------
    kernel : KernelRecord
        The PTX and entry that ran.
    spec_hash, spec_text : str
        Content hash and text of the kernel spec.
    arch : str
        Target architecture, e.g. ``"sm_120"``.
    launch : dict
        The resolved launch (grid, block, shared bytes, sizes).
    host : str
        Host name of the machine that ran it.
    device : DeviceRecord or None
        The GPU, or None for runs with no device.
    toolchain : ToolchainRecord or None
        The tools used, or None when none were found.
    stages, metrics, samples, sass, findings : tuple
        The run's rows for each table.
    status : str
        One-word summary of the run (e.g. ``"pass"``).
    run_id : str or None
        A UUID string; the store generates one when None.
    created_at : datetime or None
        Timezone-aware start time; the store uses the current UTC time when None.
    campaign_id, search_id : str or None
        The campaign and search the run belongs to, if any.
    spec_path : str or None
        Where the spec was read from (None for a spec built in Python).
    label : str or None
        The author's name for this run (``run --label``), e.g. ``"unrolled x4"``.
    item : str or None
        The campaign item this run is (its key in ``campaign_items``), for a campaign's runs.
    """

    kernel: KernelRecord
    spec_hash: str
    spec_text: str
    arch: str
    launch: dict[str, Any]
    host: str
    device: DeviceRecord | None = None
    toolchain: ToolchainRecord | None = None
    stages: tuple[StageRecord, ...] = ()
    metrics: tuple[MetricRecord, ...] = ()
    samples: tuple[SampleRecord, ...] = ()
    sass: tuple[SassRecord, ...] = ()
    findings: tuple[FindingRecord, ...] = ()
    status: str = ""
    run_id: str | None = None
    created_at: datetime | None = None
    campaign_id: str | None = None
    search_id: str | None = None
    spec_path: str | None = None
    label: str | None = None
    item: str | None = None
