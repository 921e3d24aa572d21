"""Disassemble a cubin to SASS (nvdisasm, or cuobjdump as fallback) and parse it per function.

Line information, as checked with nvdisasm 13.5:

- ``nvdisasm -g`` prints ``//## File "x.cu", line N`` from ``.debug_line``: the ``.loc``
  lines of the PTX. ptxas writes them whenever the PTX has ``.loc``, with or without
  ``-lineinfo``.
- ``nvdisasm -gp`` prints ``//## File ".nv_debug_ptx_txt", line N`` from
  ``.nv_debug_line_sass``: lines of the PTX text itself (the cubin embeds that text). ptxas
  writes them under ``-lineinfo`` even when the PTX has no ``.loc``, and also whenever it has
  ``.loc``. Both flags together print both comments.
- A comment holds for the instructions after it until the next one for the same file.
- ``nvdisasm -json`` gives opcode, operands, predicate and attribute flags per instruction
  but neither offsets nor line information, so it is used only when no lines are wanted.

Cost: nvdisasm 13.5 spends ~0.3 s of CPU building its tables on every call, whatever the cubin.
``-ndf`` (no dataflow analysis, which only adds inferred labels to branch-stack jumps) saves
about a quarter of it; the text and the JSON were byte-identical with and without it for all 142
cubins of the test corpus (sm_90 and sm_120), so it is always passed.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from karyamorph.errors import KaryaMorphError
from karyamorph.harness.tools.cache import cached_text
from karyamorph.harness.tools.toolchain import Toolchain

PTX_TEXT_FILE = ".nv_debug_ptx_txt"
# Every instruction of sm_70 and newer is 16 bytes (one 128-bit word).
INSTRUCTION_BYTES = 16

_SECTION = re.compile(r"//-+ (?P<section>\S+)\s+-+")
_CUOBJDUMP_FUNCTION = re.compile(r"\s*Function : (?P<name>\S+)")
_TARGET = re.compile(r"\s*(?:\.target\s+|code for )(?P<arch>sm_\w+)")
_LINE = re.compile(r'\s*//## File "(?P<file>[^"]*)", line (?P<line>\d+)')
_LABEL = re.compile(r"(?P<label>[.$\w][\w.$]*):\s*")
_INSTRUCTION = re.compile(
    r"\s*/\*(?P<offset>[0-9a-fA-F]+)\*/\s+(?:@(?P<pred>!?U?P(?:T|\d+))\s+)?"
    r"(?P<opcode>[A-Z][A-Z0-9_.]*)(?P<operands>[^;]*?)\s*;"
)
_LABEL_REF = re.compile(r"`\((?P<label>[^)]+)\)")
_HIGH_WORD = re.compile(r"\s*/\*\s*0x(?P<word>[0-9a-fA-F]{16})\s*\*/\s*$")  # an encoding's second word


class SassError(KaryaMorphError, RuntimeError):
    """The disassembler is missing, failed, or printed something this parser cannot read."""


@dataclass(frozen=True, slots=True)
class SassInstruction:
    """One SASS instruction.

    Parameters
    ----------
    offset : int
        Byte offset within its function's text section.
    opcode : str
        Full opcode with modifiers, e.g. ``"LDG.E.128"``.
    base : str
        Opcode without modifiers, e.g. ``"LDG"``.
    operands : str
        Operands as printed, separated by ``", "``.
    predicate : str or None
        Guard predicate without the ``@``, e.g. ``"P0"`` or ``"!UP1"``.
    line, file : int or None, str or None
        Source position from the PTX's ``.loc`` (``nvdisasm -g``).
    ptx_line : int or None
        Line of the PTX text (``nvdisasm -gp``).
    flags : tuple of str
        Attributes nvdisasm's JSON marks true ("control-flow", "subroutine-call", ...).
    high_word : int or None
        The second 64-bit word of the 128-bit encoding (its control bits: stall count,
        scoreboard barriers; :mod:`karyamorph.harness.tools.sass_control`), where the text
        shows encodings (``nvdisasm -hex``, ``cuobjdump -sass``).
    """

    offset: int
    opcode: str
    base: str
    operands: str = ""
    predicate: str | None = None
    line: int | None = None
    file: str | None = None
    ptx_line: int | None = None
    flags: tuple[str, ...] = ()
    high_word: int | None = None


@dataclass(frozen=True, slots=True)
class SassFunction:
    """The instructions of one text section; ``padding`` counts the trailing filler.

    ptxas ends each section with a branch to itself and NOPs up to the section alignment;
    they never execute, so the mix and the line map leave them out.
    """

    name: str
    instructions: tuple[SassInstruction, ...]
    padding: int = 0

    @property
    def body(self) -> tuple[SassInstruction, ...]:
        """The instructions without the trailing padding."""
        return self.instructions[: len(self.instructions) - self.padding]


@dataclass(frozen=True, slots=True)
class Disassembly:
    """A parsed disassembly: functions by name, the tool's text, target and tool used."""

    functions: dict[str, SassFunction]
    text: str
    arch: str | None = None
    tool: str = "nvdisasm"
    lineinfo: bool = False
    labels: dict[str, dict[str, int]] = field(default_factory=dict)


def _split_operands(operands: str) -> str:
    # JSON operands come comma-joined ("R2,desc[UR4][R2.64]"); the text form uses ", ".
    parts, depth, start = [], 0, 0
    for i, char in enumerate(operands):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(operands[start:i].strip())
            start = i + 1
    parts.append(operands[start:].strip())
    return ", ".join(p for p in parts if p)


def branch_target(instruction: SassInstruction, labels: dict[str, int]) -> int | None:
    """The offset a branch's operands name, a label of its function (`` `(.L_x_1) ``) or an
    address (``0x5d0``); None when they name neither."""
    ref = _LABEL_REF.search(instruction.operands)
    return labels.get(ref["label"]) if ref else _int_or_none(instruction.operands)


def _padding(instructions: list[SassInstruction], labels: dict[str, int]) -> int:
    end = len(instructions)
    while end > 0 and instructions[end - 1].base == "NOP":
        end -= 1
    if end > 0 and instructions[end - 1].base == "BRA":
        last = instructions[end - 1]
        if branch_target(last, labels) == last.offset:
            end -= 1
    return len(instructions) - end


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.strip(), 0)
    except ValueError:
        return None


def parse_text(text: str, *, tool: str = "nvdisasm") -> Disassembly:
    """Parse nvdisasm text (``-c``, optionally ``-g``/``-gp``) or ``cuobjdump -sass`` output."""
    functions: dict[str, SassFunction] = {}
    all_labels: dict[str, dict[str, int]] = {}
    arch: str | None = None
    name: str | None = None
    rows: list[SassInstruction] = []
    labels: dict[str, int] = {}
    waiting: list[str] = []
    where: dict[str, Any] = {}
    seen_lines = False

    def close() -> None:
        if name is not None:
            for label in waiting:
                labels[label] = rows[-1].offset + INSTRUCTION_BYTES if rows else 0
            functions[name] = SassFunction(name, tuple(rows), _padding(rows, labels))
            all_labels[name] = dict(labels)

    for raw in text.splitlines():
        if arch is None and (target := _TARGET.match(raw)) is not None:
            arch = target["arch"]
        header = _SECTION.match(raw) or _CUOBJDUMP_FUNCTION.match(raw)
        if header is not None:
            close()
            section = header.groupdict().get("section")
            name = header["name"] if section is None else section.removeprefix(".text.")
            if section is not None and not section.startswith(".text."):
                name = None
            rows, labels, waiting, where = [], {}, [], {}
            continue
        if name is None:
            continue
        if (hit := _LINE.match(raw)) is not None:
            seen_lines = True
            if hit["file"] == PTX_TEXT_FILE:
                where["ptx_line"] = int(hit["line"])
            else:
                where["file"], where["line"] = hit["file"], int(hit["line"])
        elif (hit := _INSTRUCTION.match(raw)) is not None:
            offset = int(hit["offset"], 16)
            for label in waiting:
                labels[label] = offset
            waiting = []
            opcode = hit["opcode"]
            rows.append(
                SassInstruction(
                    offset, opcode, opcode.split(".")[0], hit["operands"].strip(), hit["pred"], **where
                )
            )
        elif (hit := _LABEL.fullmatch(raw)) is not None:
            waiting.append(hit["label"])
        elif (hit := _HIGH_WORD.match(raw)) is not None and rows and rows[-1].high_word is None:
            rows[-1] = replace(rows[-1], high_word=int(hit["word"], 16))
    close()
    return Disassembly(functions, text, arch, tool, seen_lines, all_labels)


def parse_json(text: str) -> Disassembly:
    """Parse ``nvdisasm -json`` output; offsets are derived from each function's start."""
    try:
        header, entries = json.loads(text)
        version = header.get("SM", {}).get("version", {})
        arch = f"sm_{version['major']}{version['minor']}" if "major" in version else None
        functions = dict(_json_function(entry) for entry in entries)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise SassError(f"nvdisasm -json output is not [header, functions] as expected: {err!r}") from err
    lines = [f"\t.target\t{arch}"] if arch else []
    for fn in functions.values():
        lines.append(f"//--------------------- .text.{fn.name} --------------------------")
        for ins in fn.instructions:
            guard = f"@{ins.predicate} " if ins.predicate else ""
            lines.append(f"        /*{ins.offset:04x}*/ {guard}{ins.opcode} {ins.operands} ;")
    return Disassembly(functions, "\n".join(lines) + "\n", arch, "nvdisasm -json", False)


def _json_function(entry: dict[str, Any]) -> tuple[str, SassFunction]:
    name, items = entry["function-name"], entry["sass-instructions"]
    exact = items and entry["length"] % len(items) == 0
    size = entry["length"] // len(items) if exact else INSTRUCTION_BYTES
    rows = []
    for i, item in enumerate(items):
        attrs = item.get("other-attributes") or {}
        flags = tuple(k for k, v in attrs.items() if v == "True") if isinstance(attrs, dict) else ()
        rows.append(
            SassInstruction(
                entry["start"] + i * size,
                item["opcode"],
                item["opcode"].split(".")[0],
                _split_operands(item.get("operands", "")),
                item.get("predicate", "").removeprefix("@") or None,
                flags=flags,
            )
        )
    return name, SassFunction(name, tuple(rows), _padding(rows, {}))


@functools.cache
def supports_json(nvdisasm: Path) -> bool:
    """Whether this nvdisasm has ``-json`` (``--emit-json`` in its ``--help``)."""
    proc = subprocess.run([str(nvdisasm), "--help"], capture_output=True, text=True, timeout=60, check=False)
    return "--emit-json" in proc.stdout


def _run(argv: list[str], cubin: bytes, timeout_s: float, version: str = "") -> str:
    """The tool's output for ``cubin``, through the content-addressed cache."""
    parts: list[bytes | str] = [cubin, Path(argv[0]).name, version, *argv[1:]]
    return cached_text("sass", parts, lambda: _run_tool(argv, cubin, timeout_s))


def _run_tool(argv: list[str], cubin: bytes, timeout_s: float) -> str:
    with tempfile.TemporaryDirectory(prefix="karyamorph-sass-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        try:
            proc = subprocess.run(
                [*argv, str(path)], capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as err:
            raise SassError(f"{Path(argv[0]).name} did not finish within {timeout_s:g} s") from err
    if proc.returncode != 0:
        raise SassError(
            f"{Path(argv[0]).name} {' '.join(argv[1:])} exited with {proc.returncode}: "
            f"{proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout


def disassemble(
    cubin: bytes,
    toolchain: Toolchain,
    *,
    with_lineinfo: bool = True,
    with_encoding: bool = False,
    timeout_s: float = 120.0,
) -> Disassembly:
    """Disassemble a cubin into per-function SASS.

    Parameters
    ----------
    cubin : bytes
        An ELF object from ptxas.
    toolchain : Toolchain
        Where nvdisasm / cuobjdump live.
    with_lineinfo : bool
        Ask nvdisasm for ``.loc`` lines (``-g``) and PTX-text lines (``-gp``). When False and
        nvdisasm has ``-json``, the structured form is parsed instead.
    with_encoding : bool
        Ask for each instruction's encoding (``-hex``; cuobjdump always prints it), so that
        :attr:`SassInstruction.high_word` is set.
    timeout_s : float
        Seconds before the tool is stopped.

    Returns
    -------
    Disassembly
        Functions, the tool's text, the target, and which tool produced it.

    Raises
    ------
    SassError
        If neither tool is installed or the tool fails.
    """
    if toolchain.nvdisasm is not None:
        tool = str(toolchain.nvdisasm)
        version = toolchain.versions.get("nvdisasm", "")
        hexa = ["-hex"] if with_encoding else []
        if with_lineinfo:
            return parse_text(_run([tool, "-c", "-g", "-gp", *hexa, "-ndf"], cubin, timeout_s, version))
        if with_encoding:
            return parse_text(_run([tool, "-c", "-hex", "-ndf"], cubin, timeout_s, version))
        if supports_json(toolchain.nvdisasm):
            return parse_json(_run([tool, "-json", "-ndf"], cubin, timeout_s, version))
        return parse_text(_run([tool, "-c", "-ndf"], cubin, timeout_s, version))
    if toolchain.cuobjdump is not None:
        version = toolchain.versions.get("cuobjdump", "")
        text = _run([str(toolchain.cuobjdump), "-sass"], cubin, timeout_s, version)
        return parse_text(text, tool="cuobjdump")
    raise SassError(
        "neither nvdisasm nor cuobjdump was found; install them with "
        "`pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump`"
    )


def _bodies(dis: Disassembly, function: str | None) -> list[SassFunction]:
    if function is None:
        return list(dis.functions.values())
    if function not in dis.functions:
        raise KeyError(f"no function {function!r} in the disassembly; it has {sorted(dis.functions)}")
    return [dis.functions[function]]


def instruction_mix(
    dis: Disassembly, function: str | None = None, *, include_padding: bool = False
) -> dict[str, int]:
    """Count instructions by base opcode, most frequent first (all functions if none is named)."""
    counts: Counter[str] = Counter()
    for fn in _bodies(dis, function):
        counts.update(i.base for i in (fn.instructions if include_padding else fn.body))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def line_map(dis: Disassembly, function: str | None = None, *, source: str = "ptx") -> dict[int, list[int]]:
    """Map source lines to the SASS offsets generated for them.

    Parameters
    ----------
    dis : Disassembly
        A disassembly made with line information.
    function : str or None
        One function, or all of them (offsets are per text section).
    source : {"ptx", "loc"}
        "ptx": lines of the PTX text (``-gp``); "loc": lines named by the PTX's ``.loc``.

    Returns
    -------
    dict of int to list of int
        Line -> sorted offsets; empty when the cubin carries no line information.
    """
    if source not in ("ptx", "loc"):
        raise ValueError(f"source must be 'ptx' or 'loc', not {source!r}")
    lines: dict[int, list[int]] = {}
    for fn in _bodies(dis, function):
        for ins in fn.body:
            line = ins.ptx_line if source == "ptx" else ins.line
            if line is not None:
                lines.setdefault(line, []).append(ins.offset)
    return {line: sorted(offsets) for line, offsets in sorted(lines.items())}
