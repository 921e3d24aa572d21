"""Run ptxas on PTX text and parse its ``-v`` resource report and its diagnostics."""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.errors import KaryaMorphError
from karyamorph.harness.tools.toolchain import Toolchain

_ARCH = re.compile(r"sm_\d+[af]?")
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_LOCATED = re.compile(r"ptxas (?P<file>.+?), line (?P<line>\d+); (?P<sev>\w+)\s*: (?P<msg>.*)")
_UNLOCATED = re.compile(r"ptxas (?P<sev>error|warning|fatal)\s*: (?P<msg>.*)")
_INFO = re.compile(r"ptxas info\s*: (?P<msg>.*)")
_COMPILING = re.compile(r"Compiling (?P<entry>entry )?function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_PROPERTIES = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(
    r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads"
)
_COMPILE_TIME = re.compile(r"Compile time = (?P<ms>[\d.]+) ms")
_BAD_ARCH = re.compile(r"Value '(?P<arch>[^']+)' is not defined for option 'gpu-name'")
_QUOTED = re.compile(r"'([^']+)'")
_DIRECTIVE = re.compile(r"(\.target|\.version|\.address_size)\b")
_GMEM = re.compile(r"(?P<n>\d+) bytes gmem")
_CMEM = re.compile(r"(?P<n>\d+) bytes cmem\[(?P<bank>\d+)\]")

# One piece of a "Used ..." line -> the FunctionReport field it fills.
_USED_PIECES = {
    re.compile(r"[Uu]sed (\d+) registers"): "registers",
    re.compile(r"used (\d+) barriers"): "barriers",
    re.compile(r"(\d+) bytes cumulative stack size"): "cumulative_stack_bytes",
    re.compile(r"(\d+) bytes smem"): "shared_bytes",
    re.compile(r"(\d+) bytes lmem"): "local_bytes",
}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One ptxas error or warning; ``line``/``column`` are 1-based and None when not given.

    ``file`` is the name ptxas printed, mapped back to the caller's file name; ptxas also
    reports lines inside its own macros (``<macro util>``, ``<builtin>``).
    """

    line: int | None
    column: int | None
    severity: str
    message: str
    file: str | None = None


@dataclass(frozen=True, slots=True)
class FunctionReport:
    """What ``ptxas -v`` printed for one function. Unprinted numbers are None or 0.

    ptxas 13.x prints ``cmem`` only up to sm_89, so ``const_bytes`` is empty for newer targets.
    ``other`` keeps pieces of the "Used ..." line this parser does not know, verbatim.
    """

    name: str
    entry: bool = False
    arch: str | None = None
    registers: int | None = None
    barriers: int | None = None
    stack_frame_bytes: int = 0
    spill_stores_bytes: int = 0
    spill_loads_bytes: int = 0
    cumulative_stack_bytes: int = 0
    shared_bytes: int = 0
    local_bytes: int = 0
    const_bytes: Mapping[int, int] = field(default_factory=dict)
    compile_time_ms: float | None = None
    other: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VerboseReport:
    """A parsed ``ptxas -v`` log: per-function reports, module-level memory, diagnostics."""

    functions: dict[str, FunctionReport]
    gmem_bytes: int | None
    const_bytes: Mapping[int, int]
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True)
class Assembly:
    """A successful ptxas run.

    Parameters
    ----------
    cubin : bytes
        The ELF object ptxas wrote.
    log : str
        ptxas's whole output.
    functions : dict of str to FunctionReport
        The ``-v`` report per function.
    diagnostics : tuple of Diagnostic
        Warnings ptxas printed.
    arch : str
        The target, e.g. ``"sm_90"``.
    args : tuple of str
        ptxas's arguments (without the executable), for hashing and records.
    gmem_bytes, const_bytes
        Module-level global memory and constant banks (``cmem[N]``) from the report.
    """

    cubin: bytes
    log: str
    functions: dict[str, FunctionReport]
    diagnostics: tuple[Diagnostic, ...] = ()
    arch: str = ""
    args: tuple[str, ...] = ()
    gmem_bytes: int | None = None
    const_bytes: Mapping[int, int] = field(default_factory=dict)


class PtxasError(KaryaMorphError, RuntimeError):
    """ptxas rejected the PTX; the message names the file and line and shows the PTX line."""

    def __init__(
        self,
        message: str,
        *,
        log: str = "",
        diagnostics: Sequence[Diagnostic] = (),
        filename: str = "",
        arch: str = "",
    ) -> None:
        super().__init__(message)
        self.log = log
        self.diagnostics = tuple(diagnostics)
        self.filename = filename
        self.arch = arch


class UnsupportedArchError(PtxasError):
    """The target is not an ``sm_XY[a|f]`` name this ptxas knows; ``valid`` lists those it does."""

    def __init__(self, message: str, *, arch: str, valid: Sequence[str] = (), log: str = "") -> None:
        super().__init__(message, log=log, arch=arch, diagnostics=(Diagnostic(None, None, "fatal", message),))
        self.valid = tuple(valid)


def _column(message: str, source: str) -> int | None:
    # ptxas gives no column; a quoted token of the message that occurs on the line is the best guess.
    for token in _QUOTED.findall(message):
        # A token such as '.u33' is a suffix of the word before it; 'add' or '%r9' start a word.
        before = "" if token.startswith(".") else r"(?<![\w%$.])"
        hit = re.search(before + re.escape(token) + r"(?!\w)", source)
        if hit is not None:
            return hit.start() + 1
    return None


def parse_diagnostics(
    log: str, *, ptx: str = "", tool_name: str = "", filename: str = ""
) -> tuple[Diagnostic, ...]:
    """Return the errors and warnings of a ptxas log.

    Parameters
    ----------
    log : str
        ptxas output.
    ptx : str
        The PTX text, used to guess columns and to place line-less messages about
        ``.target``/``.version``/``.address_size`` on that directive.
    tool_name : str
        The file name ptxas was given; diagnostics naming it get ``filename`` instead.
    filename : str
        The caller's name for the PTX.
    """
    lines = ptx.splitlines()
    found = []
    for raw in log.splitlines():
        text = raw.strip()
        located = _LOCATED.fullmatch(text)
        if located is not None:
            line, where = int(located["line"]), located["file"]
            ours = where == tool_name
            column = _column(located["msg"], lines[line - 1]) if ours and 0 < line <= len(lines) else None
            found.append(
                Diagnostic(line, column, located["sev"], located["msg"], filename if ours else where)
            )
            continue
        bare = _UNLOCATED.fullmatch(text)
        if bare is None:
            continue
        line_no: int | None = None
        directive = _DIRECTIVE.search(bare["msg"])
        if directive is not None:
            line_no = next(
                (i + 1 for i, src in enumerate(lines) if src.strip().startswith(directive.group(1))),
                None,
            )
        found.append(
            Diagnostic(line_no, None, bare["sev"], bare["msg"], filename if line_no is not None else None)
        )
    return tuple(found)


def parse_verbose(log: str) -> VerboseReport:
    """Parse a ``ptxas -v`` log into per-function reports (see :class:`FunctionReport`)."""
    # Field values per function, in the order ptxas reports them; frozen at the end.
    pending: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    gmem: int | None = None
    module_cmem: dict[int, int] = {}
    for raw in log.splitlines():
        frame = _FRAME.search(raw)
        if frame is not None and current is not None:
            current["stack_frame_bytes"] = int(frame["stack"])
            current["spill_stores_bytes"] = int(frame["st"])
            current["spill_loads_bytes"] = int(frame["ld"])
            continue
        info = _INFO.fullmatch(raw.strip())
        if info is None:
            continue
        msg = info["msg"]
        if (hit := _COMPILING.match(msg)) is not None:
            current = pending.setdefault(hit["name"], _blank(hit["name"]))
            current["entry"] = hit["entry"] is not None
            current["arch"] = hit["arch"]
        elif (hit := _PROPERTIES.match(msg)) is not None:
            current = pending.setdefault(hit["name"], _blank(hit["name"]))
        elif (hit := _COMPILE_TIME.match(msg)) is not None and current is not None:
            current["compile_time_ms"] = float(hit["ms"])
        elif (hit := _GMEM.match(msg)) is not None:
            gmem = int(hit["n"])
            module_cmem.update({int(m["bank"]): int(m["n"]) for m in _CMEM.finditer(msg)})
        elif msg.startswith("Used ") and current is not None:
            _parse_used(msg, current)
    functions = {
        name: FunctionReport(**{**values, "other": tuple(values["other"])})
        for name, values in pending.items()
    }
    return VerboseReport(functions, gmem, module_cmem, parse_diagnostics(log))


def _blank(name: str) -> dict[str, Any]:
    return {"name": name, "const_bytes": {}, "other": []}


def _parse_used(msg: str, into: dict[str, Any]) -> None:
    for piece in (p.strip() for p in msg.split(",")):
        cmem = _CMEM.fullmatch(piece)
        if cmem is not None:
            into["const_bytes"][int(cmem["bank"])] = int(cmem["n"])
            continue
        for pattern, name in _USED_PIECES.items():
            hit = pattern.fullmatch(piece)
            if hit is not None:
                into[name] = int(hit.group(1))
                break
        else:
            into["other"].append(piece)


@functools.cache
def valid_archs(ptxas: Path) -> tuple[str, ...]:
    """The ``sm_*`` targets a ptxas accepts, read from its ``--help``."""
    proc = subprocess.run([str(ptxas), "--help"], capture_output=True, text=True, timeout=60, check=False)
    archs = set(re.findall(r"'(sm_\d+[af]?)'", proc.stdout))
    return tuple(sorted(archs, key=lambda a: (int(re.sub(r"\D", "", a)), a)))


def _unsupported(arch: str, toolchain: Toolchain, log: str = "") -> UnsupportedArchError:
    valid = valid_archs(toolchain.ptxas)
    version = toolchain.versions.get("ptxas", "?")
    return UnsupportedArchError(
        f"arch {arch!r} is not supported by ptxas {version}; valid targets: {', '.join(valid)}",
        arch=arch,
        valid=valid,
        log=log,
    )


def format_diagnostic(diag: Diagnostic, ptx: str, filename: str) -> str:
    """Render ``file:line:col: severity: message``, with a caret excerpt for lines of ``filename``."""
    where = diag.file or "ptxas"
    if diag.line is not None:
        where += f":{diag.line}" + (f":{diag.column}" if diag.column is not None else "")
    text = f"{where}: {diag.severity}: {diag.message}"
    lines = ptx.splitlines()
    if diag.line is None or not 0 < diag.line <= len(lines) or diag.file != filename:
        return text
    source = lines[diag.line - 1]
    gutter = f"{diag.line:>6} | "
    text += f"\n{gutter}{source.expandtabs(4)}"
    col = diag.column if diag.column is not None else len(source) - len(source.lstrip()) + 1
    return text + "\n" + " " * 7 + "| " + " " * len(source[: col - 1].expandtabs(4)) + "^"


def _failure(log: str, ptx: str, name: str, filename: str, arch: str, toolchain: Toolchain) -> PtxasError:
    bad = _BAD_ARCH.search(log)
    if bad is not None:
        return _unsupported(bad["arch"], toolchain, log)
    diagnostics = parse_diagnostics(log, ptx=ptx, tool_name=name, filename=filename)
    errors = [d for d in diagnostics if d.severity in ("error", "fatal")]
    # The closing "assembly aborted" line repeats what the errors above it say.
    shown = [d for d in errors if "aborted due to errors" not in d.message] or errors
    shown.sort(key=lambda d: (d.line is None, d.line or 0))
    version = toolchain.versions.get("ptxas", "?")
    head = f"ptxas {version} rejected {filename} for {arch} ({len(shown)} error(s))"
    body = [format_diagnostic(d, ptx, filename) for d in shown[:20]]
    if len(shown) > 20:
        body.append(f"... and {len(shown) - 20} more (see the log)")
    if not body:
        body.append(log.strip() or "(ptxas printed nothing)")
    return PtxasError(
        "\n".join([head, *body]), log=log, diagnostics=diagnostics, filename=filename, arch=arch
    )


def assemble(
    ptx: str,
    arch: str,
    toolchain: Toolchain,
    *,
    extra_args: Sequence[str] = (),
    lineinfo: bool = True,
    filename: str = "kernel.ptx",
    timeout_s: float = 600.0,
) -> Assembly:
    """Assemble PTX into a cubin with ``ptxas -arch=<arch> -v [-lineinfo]``.

    Parameters
    ----------
    ptx : str
        PTX source text.
    arch : str
        Target such as ``"sm_90"``, ``"sm_90a"`` or ``"sm_120f"``.
    toolchain : Toolchain
        Where ptxas lives.
    extra_args : sequence of str
        More ptxas options (``-maxrregcount=32``, ``-warn-spills``, ...).
    lineinfo : bool
        Pass ``-lineinfo`` so nvdisasm ``-gp`` can map SASS to PTX lines even without ``.loc``.
    filename : str
        The PTX's name for messages (the file is assembled under its base name).
    timeout_s : float
        Seconds before ptxas is stopped.

    Returns
    -------
    Assembly
        The cubin, the log, the per-function report and the warnings.

    Raises
    ------
    UnsupportedArchError
        If ``arch`` is not an ``sm_XY[a|f]`` name this ptxas accepts.
    PtxasError
        If ptxas fails; the message has ``file:line:col`` and a caret excerpt per error.
    """
    if _ARCH.fullmatch(arch) is None:
        raise _unsupported(arch, toolchain)
    base = Path(filename).name
    name = base if _SAFE_NAME.fullmatch(base) and base != "out.cubin" else "kernel.ptx"
    args = (
        f"-arch={arch}",
        "-v",
        *(("-lineinfo",) if lineinfo else ()),
        *extra_args,
        name,
        "-o",
        "out.cubin",
    )
    with tempfile.TemporaryDirectory(prefix="karyamorph-ptxas-") as tmp:
        # newline="" keeps the text byte for byte, so ptxas's line numbers are the caller's.
        (Path(tmp) / name).write_text(ptx, encoding="utf-8", newline="")
        try:
            proc = subprocess.run(
                [str(toolchain.ptxas), *args],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise PtxasError(
                f"ptxas did not finish {filename} for {arch} within {timeout_s:g} s",
                filename=filename,
                arch=arch,
            ) from err
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise _failure(log, ptx, name, filename, arch, toolchain)
        cubin = (Path(tmp) / "out.cubin").read_bytes()
    report = parse_verbose(log)
    return Assembly(
        cubin=cubin,
        log=log,
        functions=report.functions,
        diagnostics=parse_diagnostics(log, ptx=ptx, tool_name=name, filename=filename),
        arch=arch,
        args=args,
        gmem_bytes=report.gmem_bytes,
        const_bytes=report.const_bytes,
    )
