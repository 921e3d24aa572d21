"""Rows of one GPU validation of the model (forms and disagreements) and the writer that inserts them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from karyamorph.store.records import DeviceRecord, ToolchainRecord, canonical_json
from karyamorph.store.writer import insert_device, insert_toolchain


@dataclass(frozen=True, slots=True)
class FormRow:
    """One form's verdict; ``status``: pass, fail, no-bound, rejected, unsupported or unvalidated."""

    form: str
    instruction: str
    status: str
    cases: int = 0
    disagreements: int = 0
    nan_bits: int = 0
    unbounded: int = 0
    unspecified: int = 0
    max_ulp: float = 0.0
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DisagreementRow:
    """One case and destination where the GPU and the model differ.

    ``operands`` maps each source slot to its bits as ``"0x..."``; ``kind`` is ``value``,
    ``bound``, ``unstable``, or an allowed difference: ``nan-bits``, ``unspecified``.
    """

    form: str
    case_index: int
    slot: str
    kind: str
    operands: dict[str, str]
    gpu_bits: int
    model_bits: int
    ulp: float | None = None


@dataclass(frozen=True, slots=True)
class ValidationRecord:
    """Everything one ``model validate`` run produced, written in one transaction.

    Parameters
    ----------
    arch : str
        The target the kernels ran on (``"sm_90"``).
    host : str
        The machine's host name.
    status : str
        ``pass`` when no form failed, else ``fail``.
    params : dict
        Samples, seed, instruction pattern and the like.
    environment : dict
        Device, driver, CUDA and toolchain versions as the run saw them.
    """

    arch: str
    host: str
    status: str
    params: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    device: DeviceRecord | None = None
    toolchain: ToolchainRecord | None = None
    forms: tuple[FormRow, ...] = ()
    disagreements: tuple[DisagreementRow, ...] = ()


def write_validation(
    con: duckdb.DuckDBPyConnection, rec: ValidationRecord, validation_id: str, created_at: datetime
) -> None:
    """Insert every row of ``rec`` under ``validation_id``; the caller owns the transaction."""
    device_id = insert_device(con, rec.device)
    toolchain_id = insert_toolchain(con, rec.toolchain)
    con.execute(
        "INSERT INTO validations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [validation_id, created_at, rec.arch, device_id, toolchain_id, rec.host, rec.status,
         canonical_json(rec.params, "ValidationRecord.params"),
         canonical_json(rec.environment, "ValidationRecord.environment")],
    )  # fmt: skip
    if rec.forms:
        f = rec.forms
        con.execute(
            "INSERT INTO validation_forms SELECT ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
            "unnest(?::VARCHAR[]), unnest(?::INTEGER[]), unnest(?::INTEGER[]), unnest(?::INTEGER[]), "
            "unnest(?::INTEGER[]), unnest(?::INTEGER[]), unnest(?::DOUBLE[]), unnest(?::VARCHAR[])",
            [validation_id, [r.form for r in f], [r.instruction for r in f], [r.status for r in f],
             [r.cases for r in f], [r.disagreements for r in f], [r.nan_bits for r in f],
             [r.unbounded for r in f], [r.unspecified for r in f], [r.max_ulp for r in f],
             [r.detail for r in f]],
        )  # fmt: skip
    if rec.disagreements:
        d = rec.disagreements
        con.execute(
            "INSERT INTO validation_disagreements SELECT ?, unnest(?::VARCHAR[]), unnest(?::INTEGER[]), "
            "unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::UBIGINT[]), "
            "unnest(?::UBIGINT[]), unnest(?::DOUBLE[])",
            [validation_id, [r.form for r in d], [r.case_index for r in d], [r.slot for r in d],
             [r.kind for r in d], [canonical_json(r.operands, "DisagreementRow.operands") for r in d],
             [r.gpu_bits for r in d], [r.model_bits for r in d], [r.ulp for r in d]],
        )  # fmt: skip
