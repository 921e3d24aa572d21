"""The one-shot GPU worker: a single launch in a process of its own, for a tool to wrap.

compute-sanitizer and ncu must start the process they watch, so they cannot use the persistent
worker (:mod:`karyamorph.harness.gpu.supervisor`). Run it as
``python -m karyamorph.harness.gpu.worker JOB.json``: it loads the spec and the cubin named in
the job, allocates every buffer on its own, launches once and exits. A kernel that faults takes
only this process down (exit code 2, the CUDA error name on stderr); one that hangs is killed
with its whole process group by :func:`run_worker`'s timeout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import karyamorph
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.launch import KernelLaunch, cuda_core_errors, kernel_args, upload_arrays
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.inputs import make_inputs, poisoned
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import ArgSpec, KernelSpec, SpecError

MODES = ("once",)

EXIT_OK = 0
EXIT_CUDA_ERROR = 2  # the kernel (or the driver) failed: the stage fails
EXIT_SPEC_ERROR = 3  # the spec cannot be run as written: the stage errors
EXIT_NO_DEVICE = 4
EXIT_USAGE = 64


@dataclass(frozen=True, slots=True)
class Job:
    """What the worker should do.

    Attributes
    ----------
    spec_path : str
        The KernelSpec TOML file.
    cubin_path : str
        The cubin from the compile stage.
    entry : str
        The ``.entry`` to launch.
    mode : str
        ``once``: allocate every buffer on its own, initialise, launch once, synchronise, exit.
    seed : int
        The inputs' seed.
    result_path : str
        Where the worker writes its JSON result ("" lets :func:`run_worker` choose).
    sizes : dict
        The sizes to bind the spec with (the run's ``--size`` overrides included).
    """

    spec_path: str
    cubin_path: str
    entry: str
    mode: str
    seed: int = 0
    result_path: str = ""
    sizes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WorkerOutcome:
    """How a worker process ended: exit status (None when killed for the timeout), output, result."""

    returncode: int | None
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    result: dict[str, Any] | None


def write_job(job: Job, path: Path) -> None:
    """Write ``job`` as JSON to ``path``."""
    if job.mode not in MODES:
        raise ValueError(f"unknown worker mode {job.mode!r} (expected one of: {', '.join(MODES)})")
    path.write_text(json.dumps(dataclasses.asdict(job), indent=2))


def read_job(path: Path) -> Job:
    """Read a job file written by :func:`write_job`."""
    data = json.loads(path.read_text())
    fields = {f.name for f in dataclasses.fields(Job)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ValueError(f"{path}: unknown job key(s) {', '.join(unknown)}")
    job = Job(**data)
    if job.mode not in MODES:
        raise ValueError(f"{path}: unknown worker mode {job.mode!r} (expected one of: {', '.join(MODES)})")
    return job


def worker_argv(job_path: Path) -> list[str]:
    """The command line that runs the worker on ``job_path``."""
    return [sys.executable, "-m", "karyamorph.harness.gpu.worker", str(job_path)]


def _package_root() -> str:

    return str(Path(karyamorph.__file__).resolve().parent.parent)


def run_worker(
    job: Job,
    *,
    workdir: Path,
    timeout_s: float = 60.0,
    wrapper: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> WorkerOutcome:
    """Run ``job`` in a worker process (optionally under ``wrapper``, e.g. compute-sanitizer).

    The process gets its own process group; on timeout the whole group is killed (SIGKILL), so
    a wrapper's children die too. ``env`` entries override the inherited environment; the
    package's folder is put on ``PYTHONPATH`` so the worker imports this very package.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    if not job.result_path:
        job = dataclasses.replace(job, result_path=str(workdir / "result.json"))
    result_path = Path(job.result_path)
    result_path.unlink(missing_ok=True)
    job_path = workdir / "job.json"
    write_job(job, job_path)
    child_env = dict(os.environ)
    child_env.update(env or {})
    paths = [_package_root(), *(p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    child_env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    argv = [*wrapper, *worker_argv(job_path)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env,
        cwd=str(workdir), start_new_session=True,
    )  # fmt: skip
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
    seconds = time.perf_counter() - t0
    result = None
    if result_path.exists():
        try:
            result = json.loads(result_path.read_text())
        except json.JSONDecodeError:
            result = None
    return WorkerOutcome(None if timed_out else proc.returncode, timed_out, seconds, stdout, stderr, result)


# ----------------------------------------------------------------------------------------------
# The spec file a job points to


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def _arg_toml(arg: ArgSpec) -> list[str]:
    if arg.is_struct:  # each field as an inline table of the lines an argument gets
        fields = ", ".join("{ " + ", ".join(_arg_toml(f)[1:]) + " }" for f in arg.fields)
        return ["[[args]]", f"name = {_toml_value(arg.name)}", f"role = {_toml_value(arg.role)}",
                f"fields = [{fields}]"]  # fmt: skip
    lines = ["[[args]]", f"name = {_toml_value(arg.name)}", f"role = {_toml_value(arg.role)}",
             f"dtype = {_toml_value(arg.dtype.name)}"]  # fmt: skip
    if arg.is_pointer:
        init = f"randint({arg.init.low}, {arg.init.high})" if arg.init.kind == "randint" else arg.init.kind
        lines += [f"shape = {_toml_value(list(arg.shape))}", f"init = {_toml_value(init)}"]
        if arg.tensormap is not None:  # an inline table: it stays one line, as a struct's field
            tm = arg.tensormap
            strides = list(tm.element_strides) if tm.element_strides is not None else None
            keys = {"box": list(tm.box), "swizzle": tm.swizzle, "oob": tm.oob, "element_strides": strides}
            table = ", ".join(f"{k} = {_toml_value(v)}" for k, v in keys.items() if v is not None)
            lines.append(f"tensormap = {{ {table} }}")
    else:
        lines.append(f"value = {_toml_value(arg.value)}")
    return lines


def spec_toml(spec: KernelSpec) -> str:
    """``spec`` as a self-contained TOML document (the PTX inline), loadable by ``load_spec``."""
    lines = ["version = 1", "", "[kernel]", f"entry = {_toml_value(spec.entry)}",
             f"source = {_toml_value(spec.ptx)}", "", "[sizes]"]  # fmt: skip
    lines += [f"{k} = {v}" for k, v in spec.sizes.items()]
    lines += ["", "[launch]", f"grid = {_toml_value(list(spec.launch.grid))}",
              f"block = {_toml_value(list(spec.launch.block))}",
              f"shared_bytes = {_toml_value(spec.launch.shared_bytes)}", ""]  # fmt: skip
    for arg in spec.args:
        lines += [*_arg_toml(arg), ""]
    ref = {k: v for k, v in (("torch", spec.reference.torch), ("python", spec.reference.python)) if v}
    check = {k: v for k, v in (("atol", spec.atol), ("rtol", spec.rtol)) if v is not None}
    cost = {k: v for k, v in (("bytes", spec.cost_bytes), ("flops", spec.cost_flops)) if v is not None}
    for table, values in (("reference", ref), ("check", check), ("cost", cost)):
        if values:
            lines += [f"[{table}]", *(f"{k} = {_toml_value(v)}" for k, v in values.items()), ""]
    return "\n".join(lines)


def spec_file(spec: KernelSpec, workdir: Path) -> Path:
    """A TOML file that loads as ``spec``: its own file when unchanged, else one written to ``workdir``."""
    if spec.source_path is not None and spec.source_path.is_file():
        try:
            if load_spec(spec.source_path) == spec:
                return spec.source_path.resolve()
        except SpecError:
            pass
    path = workdir / f"{spec.name}.spec.toml"
    path.write_text(spec_toml(spec))
    return path


# ----------------------------------------------------------------------------------------------
# Inside the worker process


def torch_device(ordinal: int) -> str:
    """The torch device string of CUDA device ``ordinal``."""
    return f"cuda:{ordinal}"


def _run_once(job: Job, spec: BoundKernel, ordinal: int, result: dict[str, Any]) -> None:
    # No torch here: its import would cost seconds under every tool that wraps this process.
    params = prepare(spec.spec).entry(job.entry).params
    kernel = KernelLaunch.load(Path(job.cubin_path).read_bytes(), job.entry, spec, ordinal)
    arrays = make_inputs(spec, job.seed)
    outputs = {a.name: poisoned(arrays[a.name], a.dtype) for a in spec.args if a.role == "out"}
    buffers = upload_arrays(arrays, poison=outputs)
    kernel.set_args(kernel_args(spec, params, buffers.pointers()))
    kernel.enqueue()
    kernel.sync()
    buffers.free()
    result.update(seeds=[job.seed], launched=True, passed=True)


def run_job(job: Job, result: dict[str, Any]) -> None:
    """Execute ``job`` in this process, filling ``result`` as it goes (so a fault leaves a partial one).

    Raises
    ------
    SpecError
        The spec or its reference cannot be used.
    CudaError
        The kernel or the driver failed.
    """

    device = current_device()
    if device is None:
        raise LookupError("no CUDA device")
    spec = bind(load_spec(job.spec_path), sizes=job.sizes)
    result.update(mode=job.mode, entry=job.entry, device=device.name, arch=device.arch)
    _run_once(job, spec, device.ordinal, result)


def _write(path: str, result: Mapping[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(result, indent=1))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m karyamorph.harness.gpu.worker JOB.json``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m karyamorph.harness.gpu.worker JOB.json", file=sys.stderr)
        return EXIT_USAGE
    job = read_job(Path(args[0]))

    result: dict[str, Any] = {"seed": job.seed}
    t0 = time.perf_counter()
    try:
        run_job(job, result)
    except LookupError as exc:
        print(f"karyamorph worker: {exc}", file=sys.stderr)
        return EXIT_NO_DEVICE
    except SpecError as exc:
        result["error"] = str(exc)
        _write(job.result_path, result)
        print(f"karyamorph worker: spec error: {exc}", file=sys.stderr)
        return EXIT_SPEC_ERROR
    except cuda_core_errors() as exc:
        return _cuda_failure(job, result, str(exc))
    result["seconds"] = time.perf_counter() - t0
    _write(job.result_path, result)
    return EXIT_OK


def _cuda_failure(job: Job, result: dict[str, Any], message: str) -> int:
    result["error"] = message
    result["passed"] = False
    _write(job.result_path, result)
    print(f"karyamorph worker: {message}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # The context is unusable after a kernel fault: leave without the usual teardown, whose
    # driver calls would only fail again (or wait).
    os._exit(EXIT_CUDA_ERROR)


if __name__ == "__main__":
    sys.exit(main())
