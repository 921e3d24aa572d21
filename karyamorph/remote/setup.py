"""``remote setup`` and ``remote doctor``: make a host ready for GPU work, and check that it is.

The host needs only an SSH login and Python 3.11 or later. Setup makes an environment in
``~/.cache/karyamorph/remote/VERSION/venv`` (``$XDG_CACHE_HOME`` honoured) that sees the host's
own packages (``--system-site-packages``: a GPU image's torch and CUDA wheels are used as they
are), copies over a wheel of this very KaryaMorph built here, and installs it: with
``--no-deps`` when the host already has every dependency, else with the dependencies from the
host's package index. Each step has a time limit; every step's finding is reported.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import karyamorph
from karyamorph.remote.gpuhost import SshGpuHost
from karyamorph.remote.ssh import remote_home, remote_path, remote_python, run_remote
from karyamorph.remote.url import RemoteError, SshUrl
from karyamorph.remote.wheel import build_wheel

OK, WARN, FAIL = "ok", "warn", "fail"
MIN_PYTHON = (3, 11)
STEP_TIMEOUT_S = 60.0
INSTALL_TIMEOUT_S = 1800.0  # an install from the index may download torch

_PYTHON_VERSION = "import sys; print('.'.join(map(str, sys.version_info[:3])))"
_OWN_VERSION = "import sys, karyamorph; print(karyamorph.__version__, sys.prefix)"


@dataclass(frozen=True, slots=True)
class Check:
    """One finding about a host: what was checked, ``ok``/``warn``/``fail``, and what was found."""

    name: str
    status: str
    detail: str


@dataclass(frozen=True, slots=True)
class HostReport:
    """Every finding of a ``doctor`` or ``setup`` about one host, in the order they were made."""

    url: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """No check failed (a warning, such as a host without a GPU, is still ok)."""
        return all(c.status != FAIL for c in self.checks)

    def rows(self) -> list[tuple[str, str, str]]:
        """The findings as (check, status, detail) rows."""
        return [(c.name, c.status, c.detail) for c in self.checks]


Say = Callable[[Check], None]


def _quiet(check: Check) -> None:
    """A :data:`Say` that says nothing."""


def _output(done_stdout: bytes) -> str:
    return done_stdout.decode(errors="replace").strip()


def _python_check(url: SshUrl, python: str) -> Check:
    ask = f"{shlex.quote(python)} -c {shlex.quote(_PYTHON_VERSION)}"
    done = run_remote(url, ask, timeout_s=STEP_TIMEOUT_S, what=f"asking {python} its version")
    found = _output(done.stdout)
    if done.returncode != 0 or not found:
        return Check("python", FAIL, f"{python} does not run there ({_output(done.stderr) or 'no output'})")
    parts = tuple(int(p) for p in found.split(".")[:2])
    if parts < MIN_PYTHON:
        need = ".".join(map(str, MIN_PYTHON))
        return Check("python", FAIL, f"{python} is Python {found}; KaryaMorph needs {need} or later")
    return Check("python", OK, f"{python} is Python {found}")


def _nvidia_smi_check(url: SshUrl) -> Check:
    query = "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader"
    done = run_remote(url, query, timeout_s=STEP_TIMEOUT_S, what="running nvidia-smi")
    if done.returncode != 0:
        return Check(
            "nvidia-smi", WARN, "not found or failing: no NVIDIA driver there, the GPU stages will skip"
        )
    gpus = [line.strip() for line in _output(done.stdout).splitlines() if line.strip()]
    return Check("nvidia-smi", OK, "; ".join(gpus) or "no GPU listed")


def _environment_check(url: SshUrl, version: str) -> Check:
    python = remote_python(version)
    done = run_remote(url, f"{python} -c {shlex.quote(_OWN_VERSION)}", timeout_s=STEP_TIMEOUT_S,
                      what="asking the host's KaryaMorph its version")  # fmt: skip
    found, _, prefix = _output(done.stdout).partition(" ")
    if done.returncode != 0 or not found:
        return Check(
            "environment",
            FAIL,
            f"KaryaMorph {version} is not set up there: run `karyamorph remote setup {url}`",
        )
    if found != version:
        return Check(
            "environment", FAIL, f"version mismatch: the host has KaryaMorph {found}, this is {version}"
        )
    return Check("environment", OK, f"KaryaMorph {found} in {prefix}")


def _worker_check(url: SshUrl, version: str) -> Check:
    try:
        facts = SshGpuHost(url, version=version).facts()
    except RemoteError as exc:
        return Check("worker", FAIL, str(exc))
    where = f"{facts.hostname}, Python {facts.python}"
    if not facts.devices:
        return Check(
            "worker", WARN, f"answers over the channel ({where}); {facts.driver_problem or 'no CUDA device'}"
        )
    names = ", ".join(f"{d.ordinal}: {d.name} ({d.arch})" for d in facts.devices)
    driver = f", driver {facts.kernel_driver_release}" if facts.kernel_driver_release else ""
    return Check("worker", OK, f"answers over the channel ({where}{driver}); {names}")


def doctor(
    url: SshUrl, *, python: str = "python3", version: str = karyamorph.__version__, say: Say = _quiet
) -> HostReport:
    """Check ``url``'s host: reachable, its Python, ``nvidia-smi``, the environment, a worker.

    A check that cannot go on without an earlier one (no login: nothing else) is left out.
    """
    checks: list[Check] = []

    def found(check: Check) -> bool:
        checks.append(check)
        say(check)
        return check.status != FAIL

    try:
        done = run_remote(url, "true", timeout_s=STEP_TIMEOUT_S, what="logging in")
        login = Check("ssh", OK if done.returncode == 0 else FAIL, f"logged in to {url}")
    except RemoteError as exc:
        login = Check("ssh", FAIL, str(exc))
    if found(login):
        found(_python_check(url, python))
        found(_nvidia_smi_check(url))
        if found(_environment_check(url, version)):
            found(_worker_check(url, version))
    return HostReport(str(url), tuple(checks))


def setup(url: SshUrl, *, python: str = "python3", say: Say = _quiet) -> HostReport:
    """Make ``url``'s host ready for this KaryaMorph's GPU work, then run :func:`doctor`.

    Parameters
    ----------
    url : SshUrl
        The host.
    python : str
        The host's interpreter the environment is made from (a name on its PATH, or a path).
    say : callable, optional
        Told of each finding as it is made (what the command prints).

    Raises
    ------
    RemoteError
        A step failed: the host is unreachable, its Python too old, the wheel does not build or
        install; the message names the host and the step, with the tool's last words.
    """
    version = karyamorph.__version__
    steps: list[Check] = []

    def step(name: str, detail: str, status: str = OK) -> None:
        steps.append(Check(name, status, detail))
        say(steps[-1])

    try:
        done = run_remote(url, "true", timeout_s=STEP_TIMEOUT_S, what="logging in")
    except RemoteError as exc:
        raise RemoteError(f"remote setup: {exc}") from None
    if done.returncode != 0:
        raise RemoteError(f"remote setup: logging in to {url} failed: {_output(done.stderr)}")
    step("ssh", f"logged in to {url}")
    interpreter = _python_check(url, python)
    if interpreter.status == FAIL:
        raise RemoteError(f"remote setup of {url}: {interpreter.detail}")
    steps.append(interpreter)
    say(interpreter)
    home, venv_python = remote_home(version), remote_python(version)
    venv = remote_path(version, "venv")
    make = (f"mkdir -p {home} && {{ test -x {venv_python} || {shlex.quote(python)} -m venv "
            f"--system-site-packages {venv}; }} && cd {venv} && pwd")  # fmt: skip
    made = _must(url, make, "making the environment", STEP_TIMEOUT_S * 5)
    step("environment", f"{_output(made.stdout)} (sees the host's own packages)")
    with tempfile.TemporaryDirectory(prefix="karyamorph-setup-") as tmp:
        wheel = build_wheel(Path(tmp))
        step("wheel", f"built {wheel.name} here ({wheel.stat().st_size // 1024} KiB)")
        remote_wheel = remote_path(version, wheel.name)
        _must(url, f"cat > {remote_wheel}", "copying the wheel", STEP_TIMEOUT_S * 5, stdin=wheel.read_bytes())
    step("copy", f"copied {wheel.name} over the same login")
    pip = f"{venv_python} -m pip --disable-pip-version-check --quiet install"
    probe = run_remote(url, f"{pip} --dry-run --no-index {remote_wheel}", timeout_s=STEP_TIMEOUT_S * 5,
                       what="checking the host's packages")  # fmt: skip
    # The wheel itself is always installed anew: a rebuilt wheel of the same version replaces the old.
    reinstall = f"{pip} --no-deps --force-reinstall {remote_wheel}"
    if probe.returncode == 0:
        _must(url, reinstall, "installing the wheel", INSTALL_TIMEOUT_S)
        step("install", "the host has every dependency: installed KaryaMorph alone (--no-deps)")
    else:
        step("install", "dependencies missing on the host: installing them from its package index", WARN)
        _must(url, f"{pip} {remote_wheel}", "installing the dependencies", INSTALL_TIMEOUT_S)
        _must(url, reinstall, "installing the wheel", INSTALL_TIMEOUT_S)
        step("install", "installed KaryaMorph and its dependencies from the host's index")
    # The login and the interpreter were checked above; the rest of the doctor's findings follow.
    report = doctor(url, python=python, version=version)
    rest = tuple(c for c in report.checks if c.name not in ("ssh", "python") or c.status == FAIL)
    for check in rest:
        say(check)
    return HostReport(report.url, (*steps, *rest))


def _must(
    url: SshUrl, command: str, what: str, timeout_s: float, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` on the host; a failure is a :class:`RemoteError` with its last lines."""
    done = run_remote(url, command, timeout_s=timeout_s, stdin=stdin, what=what)
    if done.returncode != 0:
        said = "\n".join(_output(done.stderr or done.stdout).splitlines()[-15:])
        raise RemoteError(f"remote setup of {url}: {what} failed (status {done.returncode}):\n{said}")
    return done
