"""Parse compute-sanitizer's ``--xml`` report into findings and map them to PTX lines.

compute-sanitizer has no published schema for its XML; what this parser relies on was read
from reports recorded on a GPU (``tests/golden/compute-sanitizer/``): a root
``<ComputeSanitizerOutput>`` holding one ``<record>`` per report, each with ``<kind>`` and
``<level>``, a message under ``<what><text>``, the kernel and SASS offset under ``<where>``
(``<func>``, ``<pc>``), the thread under ``<who>`` (``<threadIdx>``/``<blockIdx>`` with
``<x>``, ``<y>``, ``<z>``), and the host stack under ``<hostStack>``. Fields are looked up by
name anywhere in a record outside the host stack, so a field that moves between versions is
still found; every leaf is also kept verbatim in ``fields``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# Subtrees that describe the host side (the CPU call stack), never the kernel.
_HOST_TAGS = frozenset({"hostStack", "hoststack", "backtrace", "frame", "frames"})
_API_TEXT = re.compile(r"CUDA_ERROR|CUDA API call|\bAPI\b|\bcu[A-Z]\w+|\bcuda[A-Z]\w+", re.IGNORECASE)


class SanitizerError(RuntimeError):
    """compute-sanitizer's report is missing or is not the XML this parser reads."""


@dataclass(frozen=True, slots=True)
class Access:
    """One side of a racecheck report: which access (``source``/``destination``), read or write."""

    role: str
    direction: str
    pc: int | None
    ptx_line: int | None = None


@dataclass(frozen=True, slots=True)
class SanitizerFinding:
    """One record of a compute-sanitizer report.

    Parameters
    ----------
    tool : str
        memcheck, racecheck, synccheck or initcheck.
    kind : str
        The report's message, e.g. ``"Invalid __global__ write of size 4 bytes"``.
    category : str
        The record's ``<kind>`` (``"Precise"``, ``"Race"``, ...), "" when absent.
    level : str
        Severity as the tool writes it (``"Error"``, ``"Warning"``), "" when absent.
    kernel : str or None
        The kernel (``<func>``) the record is about; None for host-side (API) records.
    pc : int or None
        SASS byte offset of the access within the kernel.
    pcs : tuple of int
        Every SASS offset the record names (a race names two accesses).
    block, thread : tuple of 3 ints or None
        ``blockIdx`` and ``threadIdx`` of the offending thread.
    address : int or None
        The accessed address.
    size : int or None
        Access size in bytes.
    ptx_line : int or None
        PTX line of ``pc``, filled in by :func:`with_ptx_lines`.
    ptx_lines : tuple of int
        PTX lines of every offset in ``pcs``.
    accesses : tuple of Access
        The two accesses of a race (racecheck), with their PTX lines once mapped.
    count : int or None
        How many times the tool saw it (racecheck's ``<count>``).
    fields : dict
        Every leaf of the record outside the host stack, ``path -> text``.
    """

    tool: str
    kind: str
    category: str = ""
    level: str = ""
    kernel: str | None = None
    pc: int | None = None
    pcs: tuple[int, ...] = ()
    block: tuple[int, int, int] | None = None
    thread: tuple[int, int, int] | None = None
    address: int | None = None
    size: int | None = None
    ptx_line: int | None = None
    ptx_lines: tuple[int, ...] = ()
    accesses: tuple[Access, ...] = ()
    count: int | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def is_api_error(self) -> bool:
        """A host-side API report (no kernel) rather than a finding inside a kernel."""
        if self.kernel is not None:
            return False
        text = f"{self.category} {self.kind}"
        return "api" in self.category.lower() or bool(_API_TEXT.search(text))

    def location(self, ptx_name: str | None = None) -> str:
        """``"vadd.ptx:42 (vadd+0x70)"``, or as much of it as is known."""
        sass = None
        if self.kernel is not None:
            sass = self.kernel if self.pc is None else f"{self.kernel}+0x{self.pc:x}"
        if self.ptx_line is not None:
            where = f"{ptx_name or 'ptx'}:{self.ptx_line}"
            return f"{where} ({sass})" if sass else where
        return sass or "host"

    def as_row(self, ptx_name: str | None = None) -> dict[str, Any]:
        """The finding as the store's row: tool, kind, location and a JSON-able detail dict."""
        detail: dict[str, Any] = {
            "category": self.category,
            "level": self.level,
            "kernel": self.kernel,
            "pc": self.pc,
            "pcs": list(self.pcs),
            "ptx_line": self.ptx_line,
            "ptx_lines": list(self.ptx_lines),
            "block": None if self.block is None else list(self.block),
            "thread": None if self.thread is None else list(self.thread),
            "address": None if self.address is None else f"0x{self.address:x}",
            "size": self.size,
            "accesses": [
                {"role": a.role, "direction": a.direction, "pc": a.pc, "ptx_line": a.ptx_line}
                for a in self.accesses
            ],
            "count": self.count,
            "fields": dict(self.fields),
        }
        return {
            "tool": self.tool,
            "kind": self.kind,
            "location": self.location(ptx_name),
            "detail": detail,
        }


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return int(text, 16) if re.fullmatch(r"[0-9a-fA-F]+", text) else None
    except ValueError:
        return None


def _leaves(element: ET.Element, prefix: str = "") -> Iterable[tuple[str, ET.Element]]:
    for child in element:
        if child.tag in _HOST_TAGS:
            continue
        path = f"{prefix}/{child.tag}" if prefix else child.tag
        if len(child):
            yield from _leaves(child, path)
        else:
            yield path, child


def _first(leaves: Sequence[tuple[str, ET.Element]], *names: str) -> str | None:
    for name in names:
        for path, element in leaves:
            if path.rsplit("/", 1)[-1] == name and element.text and element.text.strip():
                return element.text.strip()
    return None


def _dim3(record: ET.Element, tag: str) -> tuple[int, int, int] | None:
    for element in record.iter(tag):
        values = [_int(element.findtext(axis)) for axis in ("x", "y", "z")]
        if all(v is not None for v in values):
            return (values[0] or 0, values[1] or 0, values[2] or 0)
    return None


def _without_host(record: ET.Element) -> ET.Element:
    copy = ET.Element(record.tag)
    for child in record:
        if child.tag not in _HOST_TAGS:
            copy.append(child)
    return copy


def _accesses(record: ET.Element) -> tuple[Access, ...]:
    # racecheck: <what><source><direction/><where><pc/></where></source><destination>...
    found = []
    for element in record.iter():
        if element.tag in _HOST_TAGS or element.tag == "record":
            continue
        where = element.find("where")
        if where is not None and element.find("direction") is not None:
            direction = (element.findtext("direction") or "").strip()
            found.append(Access(element.tag, direction, _int(where.findtext("pc"))))
    return tuple(found)


def parse_record(record: ET.Element, tool: str) -> SanitizerFinding:
    """One ``<record>`` as a :class:`SanitizerFinding`."""
    leaves = list(_leaves(record))
    fields: dict[str, str] = {}
    for path, element in leaves:
        text = (element.text or "").strip()
        key, n = path, 2
        while key in fields:
            key, n = f"{path}#{n}", n + 1
        fields[key] = text
    message = _first(leaves, "text", "message", "description") or ""
    pcs = tuple(
        pc
        for path, element in leaves
        if path.rsplit("/", 1)[-1] == "pc" and (pc := _int(element.text)) is not None
    )
    kernel_only = _without_host(record)
    return SanitizerFinding(
        tool=tool,
        kind=" ".join(message.split()),
        category=_first(leaves, "kind") or "",
        level=_first(leaves, "level", "severity") or "",
        kernel=_first(leaves, "func", "kernel", "function"),
        pc=pcs[0] if pcs else None,
        pcs=tuple(dict.fromkeys(pcs)),
        block=_dim3(kernel_only, "blockIdx"),
        thread=_dim3(kernel_only, "threadIdx"),
        address=_int(_first(leaves, "address", "addr")),
        size=_int(_first(leaves, "size", "accessSize")),
        accesses=_accesses(record),
        count=_int(_first(leaves, "count")),
        fields=fields,
    )


def parse_xml(text: str, tool: str) -> list[SanitizerFinding]:
    """Parse a ``compute-sanitizer --xml --save`` report.

    Parameters
    ----------
    text : str
        The XML file's content.
    tool : str
        Which tool wrote it (the XML does not say).

    Raises
    ------
    SanitizerError
        If the text is not XML or its root is not ``<ComputeSanitizerOutput>``.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise SanitizerError(f"{tool} report is not well-formed XML: {err}") from err
    if root.tag != "ComputeSanitizerOutput":
        raise SanitizerError(f"{tool} report has root <{root.tag}>, expected <ComputeSanitizerOutput>")
    return [parse_record(record, tool) for record in root.iter("record")]


def read_report(path: Path, tool: str) -> list[SanitizerFinding]:
    """Read and parse the XML report at ``path``.

    Raises
    ------
    SanitizerError
        If the file is missing, empty or malformed.
    """
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise SanitizerError(f"{tool} wrote no report at {path.name}: {err.strerror}") from err
    if not text.strip():
        raise SanitizerError(f"{tool} report {path.name} is empty")
    return parse_xml(text, tool)


def offset_to_line(lines: Mapping[Any, Sequence[int]]) -> dict[int, int]:
    """Invert the sass stage's ``{ptx line: [offsets]}`` map (JSON string keys accepted)."""
    inverse: dict[int, int] = {}
    for line, offsets in lines.items():
        for offset in offsets:
            inverse.setdefault(int(offset), int(line))
    return inverse


def with_ptx_lines(
    findings: Iterable[SanitizerFinding], lines: Mapping[Any, Sequence[int]]
) -> list[SanitizerFinding]:
    """Fill ``ptx_line``/``ptx_lines`` of each finding from a PTX line -> SASS offsets map."""
    inverse = offset_to_line(lines)
    out = []
    for f in findings:
        mapped = tuple(inverse[pc] for pc in f.pcs if pc in inverse)
        primary = inverse.get(f.pc) if f.pc is not None else None
        accesses = tuple(replace(a, ptx_line=None if a.pc is None else inverse.get(a.pc)) for a in f.accesses)
        out.append(replace(f, ptx_line=primary, ptx_lines=mapped, accesses=accesses))
    return out


def is_about(finding: SanitizerFinding, entry: str) -> bool:
    """Whether a finding concerns the kernel ``entry`` (not another kernel, not host API noise)."""
    if finding.kernel is not None:
        # Kernel names may be printed with a parameter list or a template suffix.
        return finding.kernel == entry or finding.kernel.split("(", 1)[0].strip() == entry
    return not finding.is_api_error
