"""Compile a spec's CUDA C++ source to PTX with nvcc, cached by content, and lower the spec to it.

A spec of CUDA source (``[kernel] cu`` or ``cuda``) loads with its source as data and no PTX:
the target is known only where the spec meets a run. :func:`lower` is that one seam: nvcc makes
PTX for the target (``-ptx -lineinfo -arch=sm_XX``, the spec's options after), and the spec comes
back with that PTX and with its ``entry`` as the PTX names it; every stage then works on it as on
any spec's PTX. The ``.file`` directive names the source as the spec does (``softmax.cu``), not
the temporary folder it was compiled in, which changes with every compile.

nvcc's messages come in two forms, both parsed: the CUDA front end's ``file(12): error: ...``
(a source line and a caret under it give the column) and the host preprocessor's
``file:12:5: error: ...`` (``#include``, ``#error``).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from karyamorph.harness.tools.cache import cached_text
from karyamorph.harness.tools.ptxas import Diagnostic, format_diagnostic
from karyamorph.harness.tools.toolchain import INSTALL, Tool, ToolchainError, find_in_environment
from karyamorph.isa.arch import Arch, ArchError
from karyamorph.isa.parser import parse
from karyamorph.kernel.mangling import resolve_entry
from karyamorph.kernel.spec import CudaSource, KernelSpec, SpecError
from karyamorph.kernel.tuning import add_directives

CACHE_KIND = "nvcc-ptx"
"""The tool cache's folder for nvcc's PTX."""
MAX_HEADERS = 64
"""Most local headers whose text joins the cache key."""

_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\.cu")
# The CUDA front end: 'softmax.cu(12): error: ...', optionally with its number ('error #20-D:').
_FRONT_END = re.compile(
    r"(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning)(?: #[\w-]+)?: (?P<msg>.*)"
)
# The host preprocessor (gcc, clang): 'softmax.cu:12:5: fatal error: ...'.
_PREPROCESSOR = re.compile(
    r"(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning): (?P<msg>.*)"
)
_DRIVER = re.compile(r"nvcc (?P<sev>fatal|error)\s*: (?P<msg>.*)")
_CARET = re.compile(r"\s*\^\s*")
_FILE = re.compile(r'^(\s*\.file\s+\d+\s+)"(?P<path>[^"]*)"', re.M)
_INCLUDE = re.compile(r'^\s*#\s*include\s*"(?P<name>[^"]+)"', re.M)


def find_nvcc() -> Tool:
    """nvcc as this environment finds it (the NVIDIA pip wheels first, as for ptxas).

    Raises
    ------
    ToolchainError
        nvcc is nowhere, or does not say its version; the message says how to install it.
    """
    found = find_in_environment("nvcc")
    if found is None:
        places = "the NVIDIA pip wheels (cuda.pathfinder), $CUDA_HOME/bin, /usr/local/cuda/bin and PATH"
        raise ToolchainError(
            f"nvcc was not found; searched {places}. Install it with {INSTALL['ptxas']} (the wheel "
            "that brings ptxas brings nvcc), or point CUDA_HOME at a CUDA toolkit that has it."
        )
    return found


def nvcc_args(source: CudaSource, arch: Arch, file_name: str) -> tuple[str, ...]:
    """nvcc's arguments for ``source`` compiled as ``file_name`` in the current folder.

    ``-allow-unsupported-compiler``: nvcc only preprocesses with the host compiler to make PTX,
    so a host compiler newer than nvcc knows must not stop it.
    """
    include = ("-I", str(source.folder)) if source.folder is not None else ()
    return ("-ptx", "-lineinfo", f"-arch={arch.name}", "-allow-unsupported-compiler",
            *source.options, *include, file_name, "-o", "out.ptx")  # fmt: skip


def local_headers(source: CudaSource) -> Iterator[tuple[str, str]]:
    """``(path, text)`` of each header the source reaches by ``#include "..."`` from its folder
    (as far as the text shows, at most :data:`MAX_HEADERS`): they join the cache key, so an
    edited header compiles again. Headers found through ``-I`` options are not followed."""
    if source.folder is None:
        return
    seen: set[Path] = set()
    pending = [(source.folder, source.text)]
    while pending:
        folder, text = pending.pop()
        for match in _INCLUDE.finditer(text):
            path = (folder / match["name"]).resolve()
            if path in seen or not path.is_file():
                continue
            if len(seen) == MAX_HEADERS:
                return
            seen.add(path)
            try:
                header = path.read_text(errors="replace")
            except OSError:
                continue
            pending.append((path.parent, header))
            yield str(path), header


def compile_cuda(
    source: CudaSource,
    arch: Arch,
    *,
    where: str = "<spec>",
    nvcc: Tool | None = None,
    timeout_s: float = 600.0,
) -> str:
    """PTX for ``arch`` from ``source``; from the tool cache when the same source, options,
    local headers, nvcc version and arch were compiled before.

    Parameters
    ----------
    source : CudaSource
        The spec's CUDA source and nvcc options.
    arch : Arch
        The target: nvcc's ``-arch`` (PTX ``.target`` of the same name).
    where : str
        The spec's name in messages (``softmax.toml``).
    nvcc : Tool, optional
        Default: :func:`find_nvcc`.
    timeout_s : float
        Seconds before nvcc is stopped.

    Raises
    ------
    SpecError
        nvcc rejected the source: ``where: kernel.cu`` (or ``kernel.cuda``, or ``kernel.options``
        for an option nvcc does not know), then each error at its source line with a caret.
    ArchError
        This nvcc does not compile for ``arch``.
    ToolchainError
        nvcc is missing, or has no host compiler to preprocess with.
    """
    tool = nvcc or find_nvcc()
    base = Path(source.name).name
    file_name = base if _SAFE_NAME.fullmatch(base) else "kernel.cu"
    args = nvcc_args(source, arch, file_name)
    headers = [part for header in local_headers(source) for part in header]
    parts = (tool.version, arch.name, source.name, source.text, *args, *headers)
    return cached_text(CACHE_KIND, parts, lambda: _run(tool, args, source, file_name, arch, where, timeout_s))


def _run(
    tool: Tool,
    args: Sequence[str],
    source: CudaSource,
    file_name: str,
    arch: Arch,
    where: str,
    timeout_s: float,
) -> str:
    with tempfile.TemporaryDirectory(prefix="karyamorph-nvcc-") as tmp:
        folder = Path(tmp)
        # newline="" keeps the text byte for byte, so nvcc's line numbers are the source's.
        (folder / file_name).write_text(source.text, encoding="utf-8", newline="")
        try:
            proc = subprocess.run(
                [str(tool.path), *args], cwd=folder, capture_output=True, text=True, timeout=timeout_s,
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise SpecError(
                f"{where}: {source.key}",
                f"nvcc did not finish {source.name} for {arch} within {timeout_s:g} s",
            ) from None
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise _failure(log, tool, source, file_name, arch, where)
        ptx = (folder / "out.ptx").read_text(encoding="utf-8")
        compiled = {str(folder / file_name), str(folder.resolve() / file_name)}
    # The temporary file's path is no name of the source: write the one the spec gives (where a
    # PTX string can hold it).
    name = source.name if not set(source.name) & {'"', "\\", "\n"} else file_name
    return _FILE.sub(lambda m: f'{m[1]}"{name}"' if m["path"] in compiled else m[0], ptx)


def parse_diagnostics(log: str, source: CudaSource, file_name: str) -> tuple[Diagnostic, ...]:
    """The errors and warnings of an nvcc log, those of the compiled file named as the spec
    names its source; the front end's column comes from the caret under its source line."""
    lines = log.splitlines()
    text_lines = source.text.splitlines()
    found: list[Diagnostic] = []
    for i, raw in enumerate(lines):
        text = raw.strip()
        hit = _PREPROCESSOR.fullmatch(text)
        if hit is not None:
            column: int | None = int(hit["col"])
        else:
            hit = _FRONT_END.fullmatch(text)
            column = None
        if hit is not None:
            ours = hit["file"] == file_name
            line = int(hit["line"])
            if column is None and ours and 0 < line <= len(text_lines):
                column = _caret_column(lines[i + 1 : i + 3], text_lines[line - 1])
            severity = "error" if hit["sev"] != "warning" else "warning"
            found.append(Diagnostic(line, column, severity, hit["msg"], source.name if ours else hit["file"]))
            continue
        driver = _DRIVER.fullmatch(text)
        if driver is not None:
            found.append(Diagnostic(None, None, driver["sev"], driver["msg"], "nvcc"))
    return tuple(found)


def _caret_column(after: Sequence[str], source_line: str) -> int | None:
    """The 1-based column of the caret the front end prints under its copy of the source line
    (``after``: the copy, then the caret), or None when the copy is not that line. The copy is
    indented, and has each tab as one space (as nvcc 13.5 prints it)."""
    if len(after) < 2 or _CARET.fullmatch(after[1]) is None:
        return None
    shown, wanted = after[0].rstrip(), source_line.replace("\t", " ").rstrip()
    if not wanted.strip() or not shown.endswith(wanted):
        return None
    column = after[1].index("^") - (len(shown) - len(wanted)) + 1
    return column if column >= 1 else None


def _failure(log: str, tool: Tool, source: CudaSource, file_name: str, arch: Arch, where: str) -> Exception:
    diagnostics = parse_diagnostics(log, source, file_name)
    errors = [d for d in diagnostics if d.severity in ("error", "fatal")]
    for d in errors:
        if d.file != "nvcc":
            continue
        if "host compiler" in d.message:
            return ToolchainError(
                f"nvcc {tool.version} could not run its host compiler, which preprocesses CUDA source: "
                f"{d.message} Install gcc or clang (on PATH), or give nvcc one with -ccbin in kernel.options."
            )
        if re.search(r"gpu[ -]architecture", d.message, re.I):
            return ArchError(f"nvcc {tool.version} does not compile for {arch}: {d.message}")
        if "option" in d.message.lower():
            return SpecError(f"{where}: kernel.options", f"nvcc {tool.version}: {d.message}")
    head = f"nvcc {tool.version} rejected {source.name} for {arch} ({len(errors)} error(s))"
    body = [_format(d, source) for d in errors[:20]]
    if len(errors) > 20:
        body.append(f"... and {len(errors) - 20} more")
    if not body:
        body.append(log.strip() or "(nvcc printed nothing)")
    return SpecError(f"{where}: {source.key}", "\n".join([head, *body]))


def _format(d: Diagnostic, source: CudaSource) -> str:
    if d.line is None:
        return f"{d.file}: {d.severity}: {d.message}"
    return format_diagnostic(d, source.text, source.name)


def lower(spec: KernelSpec, arch: Arch, *, nvcc: Tool | None = None) -> KernelSpec:
    """``spec`` with the PTX its CUDA source compiles to for ``arch`` (its
    :attr:`~karyamorph.kernel.spec.CudaSource.directives` on the kernel's ``.entry``), and its
    ``entry`` as that PTX names it (:func:`karyamorph.kernel.mangling.resolve_entry`); a spec of
    PTX as it is.

    Raises
    ------
    SpecError
        nvcc rejected the source (located at its line), or the entry names no kernel of it, or
        several.
    ArchError, ToolchainError
        As :func:`compile_cuda`.
    PtxError
        The PTX nvcc wrote does not parse.
    """
    source = spec.cuda
    if source is None:
        return spec
    ptx = compile_cuda(source, arch, where=spec.where, nvcc=nvcc)
    names = [f.name for f in parse(ptx, spec.ptx_name).entries]
    entry = resolve_entry(spec.entry, names, f"{spec.where}: kernel.entry", source.name)
    if source.directives:  # a searched spec's ptxas knobs, which nvcc's PTX cannot carry
        ptx = add_directives(ptx, entry, source.directives, f"{spec.where}: search.ptxas")
    return dataclasses.replace(spec, ptx=ptx, entry=entry)
