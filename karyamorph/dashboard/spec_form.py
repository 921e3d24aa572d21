"""The launch and arguments tile: a KernelSpec's TOML as form fields, and the fields as TOML again.

The round trip keeps the document: ``toml_text(doc_from_fields(SpecForm.from_doc(d).fields()))``
parses back to ``d`` for every spec whose numbers are integers where an integer is meant and
whose expressions are strings (as the loader reads them); comments are not kept. A field holds
what the TOML value holds, written out: an integer literal becomes an integer again, anything
else a string (an expression); tolerances are numbers. Lists (grid, block, shape) are written
with commas between items, and a comma inside parentheses belongs to its item; the other sizes
a check runs at (``[check] sizes``) as ``n = 4099; rows = 33, cols = 65``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from karyamorph.kernel.spec import DTYPES, ROLES, SpecError

_INT = re.compile(r"^[+-]?\d+$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_TABLES = ("reference", "check", "cost")


@dataclass(frozen=True, slots=True)
class ArgRow:
    """One ``[[args]]`` entry as text fields ("" for a key the entry does not have)."""

    name: str
    role: str
    dtype: str
    shape: str = ""
    init: str = ""
    value: str = ""


@dataclass(frozen=True, slots=True)
class SpecForm:
    """A spec document as the form's fields."""

    entry: str
    ptx: str
    inline: bool
    sizes: tuple[tuple[str, str], ...]
    grid: str
    block: str
    shared_bytes: str
    args: tuple[ArgRow, ...]
    tables: tuple[tuple[str, str, str], ...]
    version: str = ""

    roles = ROLES
    dtypes = tuple(DTYPES)

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> SpecForm:
        """The fields of a parsed spec document (``tomllib.loads`` of a spec file)."""
        kernel = doc.get("kernel", {})
        launch = doc.get("launch", {})
        args = tuple(
            ArgRow(str(a.get("name", "")), str(a.get("role", "")), str(a.get("dtype", "")),
                   _list_text(a["shape"]) if "shape" in a else "", _text(a.get("init")),
                   _text(a.get("value")))
            for a in doc.get("args", [])
        )  # fmt: skip
        tables = tuple(
            (table, key, _sizes_text(value) if (table, key) == ("check", "sizes") else _text(value))
            for table in _TABLES for key, value in doc.get(table, {}).items()
        )  # fmt: skip
        return cls(
            entry=str(kernel.get("entry", "")),
            ptx=str(kernel.get("ptx", "")),
            inline="source" in kernel,
            sizes=tuple((k, _text(v)) for k, v in doc.get("sizes", {}).items()),
            grid=_list_text(launch.get("grid", [])),
            block=_list_text(launch.get("block", [])),
            shared_bytes=_text(launch.get("shared_bytes")),
            args=args,
            tables=tables,
            version=_text(doc.get("version")),
        )

    def fields(self) -> dict[str, str]:
        """The form's fields by name, as the browser posts them."""
        out = {"kernel.entry": self.entry, "kernel.ptx": self.ptx,
               "kernel.inline": "1" if self.inline else "", "launch.grid": self.grid,
               "launch.block": self.block, "launch.shared_bytes": self.shared_bytes,
               "version": self.version}  # fmt: skip
        for i, (name, value) in enumerate(self.sizes):
            out[f"size.{i}.name"], out[f"size.{i}.value"] = name, value
        for i, a in enumerate(self.args):
            for key in ("name", "role", "dtype", "shape", "init", "value"):
                out[f"arg.{i}.{key}"] = getattr(a, key)
        for table, key, value in self.tables:
            out[f"{table}.{key}"] = value
        return out


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _sizes_text(value: Any) -> str:
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        return _text(value)  # not the loader's shape: shown as it is, refused when posted
    return "; ".join(", ".join(f"{k} = {v}" for k, v in entry.items()) for entry in value)


def _sizes_list(text: str) -> list[dict[str, int]]:
    """``"n = 4099; rows = 33, cols = 65"`` -> ``[{"n": 4099}, {"rows": 33, "cols": 65}]``."""
    out: list[dict[str, int]] = []
    for i, part in enumerate(p for p in text.split(";") if p.strip()):
        entry: dict[str, int] = {}
        for pair in part.split(","):
            name, _, value = pair.partition("=")
            if not _BARE_KEY.match(name.strip()) or not _INT.match(value.strip()):
                raise SpecError(f"check.sizes[{i}]", f"expected name = integer, got {pair.strip()!r}")
            entry[name.strip()] = int(value)
        out.append(entry)
    return out


def _list_text(value: Any) -> str:
    items = value if isinstance(value, list) else [value]
    return ", ".join(str(v) for v in items)


def split_items(text: str) -> list[str]:
    """``"ceildiv(n, 32), 8"`` -> ``["ceildiv(n, 32)", "8"]``: commas inside parentheses stay."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        current.append(ch)
    items.append("".join(current).strip())
    return [i for i in items if i]


def _int_or_text(text: str) -> int | str:
    return int(text) if _INT.match(text.strip()) else text.strip()


def _number(text: str, where: str) -> int | float:
    try:
        return int(text) if _INT.match(text.strip()) else float(text)
    except ValueError:
        raise SpecError(where, f"expected a number, got {text!r}") from None


def doc_from_fields(fields: Mapping[str, str], source: str | None = None) -> dict[str, Any]:
    """The spec document the form's ``fields`` describe; ``source`` is the editor's PTX, written
    inline when the spec keeps its PTX inline (``kernel.inline``).

    Raises
    ------
    SpecError
        A size that is not an integer, or a tolerance that is not a number.
    """
    get = lambda key: fields.get(key, "").strip()  # noqa: E731
    doc: dict[str, Any] = {}
    if get("version"):
        doc["version"] = _int_or_text(get("version"))
    kernel: dict[str, Any] = {}
    if get("kernel.inline"):
        kernel["source"] = source or ""
    elif get("kernel.ptx"):
        kernel["ptx"] = get("kernel.ptx")
    kernel["entry"] = get("kernel.entry")
    doc["kernel"] = kernel
    sizes: dict[str, Any] = {}
    for i in _indices(fields, "size"):
        name, value = get(f"size.{i}.name"), get(f"size.{i}.value")
        if name:
            if not _INT.match(value):
                raise SpecError(f"sizes.{name}", f"sizes must be integers, got {value!r}")
            sizes[name] = int(value)
    if sizes:
        doc["sizes"] = sizes
    launch: dict[str, Any] = {key: [_int_or_text(x) for x in split_items(get(f"launch.{key}"))]
                              for key in ("grid", "block")}  # fmt: skip
    if get("launch.shared_bytes"):
        launch["shared_bytes"] = _int_or_text(get("launch.shared_bytes"))
    doc["launch"] = launch
    args = []
    for i in _indices(fields, "arg"):
        if not get(f"arg.{i}.name") or get(f"arg.{i}.remove"):
            continue
        arg: dict[str, Any] = {"name": get(f"arg.{i}.name"), "role": get(f"arg.{i}.role"),
                               "dtype": get(f"arg.{i}.dtype")}  # fmt: skip
        if get(f"arg.{i}.shape"):
            arg["shape"] = [_int_or_text(x) for x in split_items(get(f"arg.{i}.shape"))]
        if get(f"arg.{i}.init"):
            arg["init"] = get(f"arg.{i}.init")
        if get(f"arg.{i}.value"):
            arg["value"] = _int_or_text(get(f"arg.{i}.value"))
        args.append(arg)
    if args:
        doc["args"] = args
    for table in _TABLES:
        prefix = f"{table}."
        entries = {k.removeprefix(prefix): v.strip() for k, v in fields.items()
                   if k.startswith(prefix) and v.strip()}  # fmt: skip
        if table == "check":
            doc_table: dict[str, Any] = {
                k: _sizes_list(v) if k == "sizes" else _number(v, f"check.{k}") for k, v in entries.items()
            }
        elif table == "cost":
            doc_table = {k: _int_or_text(v) for k, v in entries.items()}
        else:
            doc_table = dict(entries)
        if doc_table:
            doc[table] = doc_table
    return doc


def _indices(fields: Mapping[str, str], kind: str) -> list[int]:
    found = {int(k.split(".")[1]) for k in fields if k.startswith(f"{kind}.") and k.split(".")[1].isdigit()}
    return sorted(found)


def _string(text: str) -> str:
    # JSON escapes quotes, backslashes and control characters as TOML's basic strings do; TOML
    # also wants DEL escaped, and a character outside the BMP as itself, not a surrogate pair.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007F")


def _source(text: str) -> str:
    if "'''" not in text and not any((ord(c) < 32 and c not in "\n\t") or c == "\x7f" for c in text):
        return "'''\n" + text + "'''"  # a newline right after the opening quotes is dropped
    return _string(text)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # TOML spells the non-finite ones inf, -inf and nan too
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    return _string(str(value))


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def toml_text(doc: Mapping[str, Any]) -> str:
    """``doc`` (a spec document) written as TOML, tables in the spec's usual order."""
    lines: list[str] = []
    if "version" in doc:
        lines += [f"version = {_value(doc['version'])}", ""]
    for table in ("kernel", "sizes", "launch"):
        if table not in doc:
            continue
        lines.append(f"[{table}]")
        for key, value in doc[table].items():
            text = _source(value) if (table, key) == ("kernel", "source") else _value(value)
            lines.append(f"{_key(key)} = {text}")
        lines.append("")
    for arg in doc.get("args", []):
        lines.append("[[args]]")
        lines += [f"{_key(k)} = {_value(v)}" for k, v in arg.items()]
        lines.append("")
    for table in _TABLES:
        if table in doc:
            lines.append(f"[{table}]")
            lines += [f"{_key(k)} = {_value(v)}" for k, v in doc[table].items()]
            lines.append("")
    return "\n".join(lines)


def doc_from_toml(text: str, name: str = "spec.toml") -> dict[str, Any]:
    """``text`` parsed as TOML.

    Raises
    ------
    SpecError
        The text is not TOML.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(name, f"not valid TOML: {exc}") from None
