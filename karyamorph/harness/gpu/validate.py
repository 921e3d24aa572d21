"""The GPU side of ``model validate``: launch every microkernel, twice, and hand back its output words.

This is the only validation code that touches CUDA. It runs in a process of its own
(``python -m karyamorph.harness.gpu.validate JOBS.npz RESULT.npz``), or, when the command's GPU is
on another host, as one job of a GPU worker there, so that a fault or a hang ends that process,
not the caller; jobs carry bytes (cubins and input words), not paths to
PTX. A job may carry a tensor map (:class:`~karyamorph.kernel.tensormap.TensorMapArg`: the
tensor's elements and the map's fields): the tensor gets an allocation of its own, and the map
the driver encodes over it (``cuTensorMapEncodeTiled``) is the kernel's fourth argument,
``(inp, out, rows, tmap)``. Each kernel runs once on outputs filled with 0xCD bytes and once on
outputs filled with 0x32 bytes: a result word that differs between the two was not written (or
not deterministic). Kernels are loaded and launched by
:class:`~karyamorph.harness.gpu.launch.KernelLaunch`, buffers are torch tensors, as in every
other GPU stage.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

import karyamorph
from karyamorph.harness.gpu.by_value import encode_tensor_map
from karyamorph.harness.gpu.device import current_device, kernel_driver_release
from karyamorph.harness.gpu.launch import KernelLaunch, cuda_core_errors
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.gpu.worker import torch_device
from karyamorph.kernel.bound import bind
from karyamorph.kernel.spec import DTYPES, ArgSpec, KernelSpec, Launch
from karyamorph.kernel.tensormap import TensorMap, TensorMapArg

POISON = (0xCD, 0x32)
EXIT_OK, EXIT_CUDA_ERROR, EXIT_NO_DEVICE, EXIT_USAGE = 0, 2, 4, 64


class GpuRunError(RuntimeError):
    """The GPU process failed, hung or found no device; the message carries its stderr."""


@dataclass(frozen=True, slots=True)
class KernelJob:
    """One microkernel launch: ``grid x block`` threads over ``inputs`` (``rows x in_slots`` words),
    and, for a kernel that copies through a tensor map, the tensor and the map's fields."""

    entry: str
    cubin: bytes
    grid: int
    block: int
    inputs: np.ndarray
    out_slots: int
    ptx: str = ""  # for the record and for CPU emulation; the GPU process loads the cubin
    tensormap: TensorMapArg | None = None

    @property
    def rows(self) -> int:
        return int(self.inputs.shape[0])


@dataclass(frozen=True, slots=True)
class GpuOutput:
    """Output words of every job (``rows x out_slots``) from the two launches, and where they ran."""

    first: tuple[np.ndarray, ...]
    second: tuple[np.ndarray, ...]
    environment: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


GpuRunner = Callable[[Sequence[KernelJob]], GpuOutput]


def write_jobs(jobs: Sequence[KernelJob], path: Path) -> None:
    arrays: dict[str, Any] = {}
    meta = []
    for i, j in enumerate(jobs):
        arrays[f"cubin_{i}"] = np.frombuffer(j.cubin, dtype=np.uint8)
        arrays[f"inputs_{i}"] = np.ascontiguousarray(j.inputs, dtype=np.uint64)
        meta.append({"entry": j.entry, "grid": j.grid, "block": j.block, "out_slots": j.out_slots})
        if j.tensormap is not None:
            arrays[f"tensor_{i}"] = np.ascontiguousarray(j.tensormap.array)
            meta[-1]["tensormap"] = _map_fields(j.tensormap.map)
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)


def _map_fields(tm: TensorMap) -> dict[str, Any]:
    return {"elem_bytes": tm.elem_bytes, "dims": tm.dims, "strides": tm.strides, "box": tm.box,
            "element_strides": tm.element_strides, "swizzle": tm.swizzle, "oob": tm.oob,
            "is_float": tm.is_float}  # fmt: skip


def _read_map(f: dict[str, Any]) -> TensorMap:
    dims, strides, box, steps = (tuple(f[k]) for k in ("dims", "strides", "box", "element_strides"))
    return TensorMap(int(f["elem_bytes"]), dims, strides, box, steps, int(f["swizzle"]), str(f["oob"]),
                     bool(f["is_float"]))  # fmt: skip


def read_jobs(path: Path) -> list[KernelJob]:
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        maps = [TensorMapArg(z[f"tensor_{i}"], _read_map(m["tensormap"])) if "tensormap" in m else None
                for i, m in enumerate(meta)]  # fmt: skip
        return [
            KernelJob(m["entry"], z[f"cubin_{i}"].tobytes(), m["grid"], m["block"], z[f"inputs_{i}"],
                      m["out_slots"], tensormap=maps[i])
            for i, m in enumerate(meta)
        ]  # fmt: skip


def _tensor_map(job: KernelJob, device: Any) -> tuple[Any, Any]:
    """The job's tensor on ``device`` and the map the driver encodes over it (the current context
    must be the kernel's).

    Raises
    ------
    SpecError
        The map's fields break a rule of the driver's.
    CudaError
        The driver refused to encode the map.
    """
    import torch

    assert job.tensormap is not None
    tm = job.tensormap.map
    host = np.ascontiguousarray(job.tensormap.array).reshape(-1).view(np.uint8)
    tensor = torch.from_numpy(host.copy()).to(device)
    arg = ArgSpec("tmap", "in", DTYPES[f"u{8 * tm.elem_bytes}"])
    return tensor, encode_tensor_map(arg, tm, int(tensor.data_ptr()), f"{job.entry}: tmap")


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def launch_jobs(jobs: Sequence[KernelJob]) -> GpuOutput:
    """Run every job on device 0 in this process.

    Raises
    ------
    LookupError
        There is no CUDA device.
    CudaError
        A launch or the driver failed.
    """
    import torch

    t0 = time.perf_counter()
    info = current_device()
    if info is None:
        raise LookupError("no CUDA device")
    device = torch_device(info.ordinal)
    first: list[np.ndarray] = []
    second: list[np.ndarray] = []
    for job in jobs:
        bound = bind(KernelSpec("", job.entry, {}, Launch((job.grid,), (job.block,)), ()))
        kernel = KernelLaunch.load(job.cubin, job.entry, bound, info.ordinal)
        inputs = torch.from_numpy(np.ascontiguousarray(job.inputs).view(np.int64)).to(device)
        tensor, tmap = _tensor_map(job, device) if job.tensormap is not None else (None, None)
        for poison, into in zip(POISON, (first, second), strict=True):
            raw = torch.full((job.rows * job.out_slots * 8,), poison, dtype=torch.uint8, device=device)
            torch.cuda.synchronize(device)
            args = [np.uint64(inputs.data_ptr()), np.uint64(raw.data_ptr()), np.uint32(job.rows)]
            kernel.set_args(args if tmap is None else [*args, tmap])
            kernel.enqueue()
            kernel.sync()
            into.append(raw.cpu().numpy().view(np.uint64).reshape(job.rows, job.out_slots).copy())
        del tensor  # the map points into it: kept until the job's launches are done
    environment = {
        "device": info.as_dict(), "device_name": info.name, "arch": info.arch,
        "cuda_driver": info.cuda_driver_release, "driver_release": kernel_driver_release(),
        "cuda_python": _package_version("cuda-python"), "torch": torch.__version__,
        "torch_cuda": str(torch.version.cuda),
    }  # fmt: skip
    return GpuOutput(tuple(first), tuple(second), environment, time.perf_counter() - t0)


def write_output(out: GpuOutput, path: Path) -> None:
    arrays: dict[str, Any] = {f"first_{i}": a for i, a in enumerate(out.first)}
    arrays |= {f"second_{i}": a for i, a in enumerate(out.second)}
    env = json.dumps({"environment": out.environment, "seconds": out.seconds, "jobs": len(out.first)})
    np.savez(path, env=np.array(env), **arrays)


def read_output(path: Path) -> GpuOutput:
    with np.load(path) as z:
        env = json.loads(str(z["env"]))
        n = env["jobs"]
        return GpuOutput(tuple(z[f"first_{i}"] for i in range(n)), tuple(z[f"second_{i}"] for i in range(n)),
                         env["environment"], env["seconds"])  # fmt: skip


def subprocess_runner(timeout_s: float = 300.0) -> GpuRunner:
    """A runner that launches the jobs in a fresh process and kills its group after ``timeout_s``."""

    def run(jobs: Sequence[KernelJob]) -> GpuOutput:
        with tempfile.TemporaryDirectory(prefix="karyamorph-validate-") as tmp:
            job_path, result_path = Path(tmp) / "jobs.npz", Path(tmp) / "result.npz"
            write_jobs(jobs, job_path)
            env = dict(os.environ)
            root = str(Path(karyamorph.__file__).resolve().parent.parent)
            paths = [root, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
            env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
            argv = [sys.executable, "-m", "karyamorph.harness.gpu.validate", str(job_path), str(result_path)]
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    cwd=tmp, start_new_session=True)  # fmt: skip
            try:
                _, stderr = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise GpuRunError(f"the GPU process ran past {timeout_s:g} s and was killed") from None
            if proc.returncode != EXIT_OK or not result_path.exists():
                tail = stderr.strip().splitlines()[-20:]
                head = f"the GPU process exited with status {proc.returncode}:"
                raise GpuRunError("\n".join([head, *tail]))
            return read_output(result_path)

    return run


def worker_runner(timeout_s: float = 300.0) -> GpuRunner:
    """A runner that launches the jobs as one job of a fresh GPU worker, which runs where the
    command's GPU work goes (on the ``--gpu`` host: the jobs travel as bytes, the outputs come
    back); a fault or a hang costs that worker, as it costs :func:`subprocess_runner` its process."""

    def run(jobs: Sequence[KernelJob]) -> GpuOutput:
        with GpuWorker(None) as worker:
            reply = worker.call(functools.partial(launch_jobs, tuple(jobs)), timeout_s=timeout_s)
        if reply.failure is not None:
            tail = reply.failure.log.strip().splitlines()[-20:]
            head = f"the GPU worker{worker.transport.where} failed: {reply.failure.reason}"
            raise GpuRunError("\n".join([head, *tail]))
        if not isinstance(reply.value, GpuOutput):
            raise GpuRunError(f"the GPU worker answered {type(reply.value).__name__}, not GPU output")
        return reply.value

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m karyamorph.harness.gpu.validate JOBS.npz RESULT.npz``; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m karyamorph.harness.gpu.validate JOBS.npz RESULT.npz", file=sys.stderr)
        return EXIT_USAGE
    try:
        out = launch_jobs(read_jobs(Path(args[0])))
    except LookupError as exc:
        print(f"karyamorph validate: {exc}", file=sys.stderr)
        return EXIT_NO_DEVICE
    except cuda_core_errors() as exc:
        print(f"karyamorph validate: {exc}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(EXIT_CUDA_ERROR)  # the context is unusable after a fault: skip the teardown
    write_output(out, Path(args[1]))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
