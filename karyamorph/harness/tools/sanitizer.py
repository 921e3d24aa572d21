"""Run compute-sanitizer around the GPU worker: its command line, options and closing summary.

The report it saves is read by :mod:`karyamorph.harness.tools.sanitizer_report`.
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from karyamorph.harness.tools.sanitizer_report import SanitizerError

#: The four compute-sanitizer tools, in the order the sanitize stage runs them.
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

# A boost-style help line: "  --save arg", "  --xml [=arg(=1)] (=0)", "  -h [ --help ]".
_HELP_OPTION = re.compile(r"^\s{1,6}(?:-\w \[ )?(?P<option>--[\w-]+)(?: \])?(?P<rest>.*)$")
#: Options the sanitize stage cannot work without.
REQUIRED_OPTIONS = ("--tool", "--save", "--xml")


def help_options(text: str) -> dict[str, str]:
    """Options listed by ``compute-sanitizer --help``: name -> "none", "required" or "implicit".

    "implicit" options take an optional value, which must then be attached (``--xml=yes``).
    """
    options: dict[str, str] = {}
    for line in text.splitlines():
        hit = _HELP_OPTION.match(line)
        if hit is None:
            continue
        rest = hit["rest"]
        if rest.lstrip().startswith("[="):
            kind = "implicit"
        elif not rest.strip() or rest.startswith("  "):
            kind = "none"  # nothing between the option and its description
        else:
            kind = "required"
        options.setdefault(hit["option"], kind)
    return options


@functools.cache
def read_help_options(sanitizer: Path) -> dict[str, str] | None:
    """:func:`help_options` of this executable's ``--help`` (None if it does not answer)."""
    try:
        proc = subprocess.run(
            [str(sanitizer), "--help"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    options = help_options(proc.stdout)
    return options or None


def sanitizer_argv(
    sanitizer: Path,
    tool: str,
    xml_path: Path,
    entry: str,
    *,
    padding_bytes: int = 32,
    racecheck_report: str | None = "analysis",
    extra_args: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
) -> list[str]:
    """The compute-sanitizer command line that wraps the worker for one tool.

    Parameters
    ----------
    sanitizer : Path
        The compute-sanitizer executable.
    tool : str
        One of :data:`TOOLS`.
    xml_path : Path
        Where the XML report is saved.
    entry : str
        Only this kernel is instrumented (``--kernel-name kne=ENTRY``: exact name).
    padding_bytes : int
        memcheck's ``--padding``: a gap after every allocation, so an access just past one
        buffer cannot land inside the next.
    racecheck_report : str or None
        racecheck's ``--racecheck-report`` (``analysis``, ``hazard`` or ``all``); None keeps
        the tool's default.
    extra_args : sequence of str
        More options, placed before the worker's command.
    options : mapping or None
        What this compute-sanitizer's ``--help`` lists (:func:`help_options`); optional
        options it lacks are left out. None (or a listing without :data:`REQUIRED_OPTIONS`)
        assumes all of them exist.
    """
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r}; expected one of {TOOLS}")
    if options is not None and (missing := [o for o in REQUIRED_OPTIONS if o not in options]):
        raise SanitizerError(f"{sanitizer} --help lists no {', '.join(missing)}: too old for --xml reports")

    def has(option: str) -> bool:
        return options is None or option in options

    # compute-sanitizer 2025.3 has a bare ``--xml`` switch; some releases take a value.
    takes_value = options is not None and options.get("--xml") in ("required", "implicit")
    xml = "--xml=yes" if takes_value else "--xml"
    argv = [str(sanitizer), "--tool", tool, xml, "--save", str(xml_path)]
    if has("--print-limit"):
        argv += ["--print-limit", "0"]
    if has("--kernel-name"):
        argv += ["--kernel-name", f"kne={entry}"]
    if has("--report-api-errors"):
        # cuda.core probes the driver in ways the tool reports as API errors
        # (CUDA_ERROR_INVALID_CONTEXT from cuCtxGetDevice); they are not the kernel's.
        argv += ["--report-api-errors", "no"]
    if tool == "memcheck" and padding_bytes and has("--padding"):
        argv += ["--padding", str(padding_bytes)]
    if tool == "racecheck" and racecheck_report and has("--racecheck-report"):
        argv += ["--racecheck-report", racecheck_report]
    return argv + list(extra_args)


# "ERROR SUMMARY: 1 error" (memcheck, synccheck, initcheck) and
# "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)" (racecheck).
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(?P<n>\d+) error|SUMMARY: \d+ hazards? displayed \((?P<r>\d+) error")
_TOOL_ERROR = re.compile(r"^=+ Error: (?P<message>.*)$", re.MULTILINE)


def error_summary(output: str) -> int | None:
    """The error count of the tool's closing summary line, if it printed one."""
    hits = list(_SUMMARY.finditer(output))
    if not hits:
        return None
    last = hits[-1]
    return int(last["n"] if last["n"] is not None else last["r"])


def tool_errors(output: str) -> list[str]:
    """The tool's ``========= Error: ...`` lines: its own failures (an unsupported device) and races."""
    return [m["message"].strip() for m in _TOOL_ERROR.finditer(output)]
