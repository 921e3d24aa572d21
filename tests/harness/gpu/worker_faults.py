"""Functions the supervision tests send to a real worker process: each fails it in one way.

They run inside the worker (imported there by name, as pickle does), so they must stay plain
module-level functions with no test framework in sight.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from karyamorph.harness.gpu.launch import CudaError


def pid() -> int:
    """The worker's pid: tells a fresh worker from the previous one."""
    return os.getpid()


def raise_cuda_error() -> None:
    """What the worker sees when a kernel faults: the driver's error from the synchronisation."""
    raise CudaError("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered", "a test")


def raise_value_error() -> None:
    raise ValueError("a failure that leaves the worker usable")


def raise_uncaught() -> None:
    """An exception the worker does not catch: it dies with a traceback on stderr."""
    raise KeyboardInterrupt("not a job error")


def mark_then_sleep(marker: str, seconds: float) -> None:
    """Say the job started (a file appears), then hang."""
    Path(marker).write_text(str(os.getpid()))
    time.sleep(seconds)


def spawn_then_hang(pidfile: str) -> None:
    """Start a child process that would outlive the worker unless its whole group is killed."""
    child = subprocess.Popen(["sleep", "300"])
    Path(pidfile).write_text(str(child.pid))
    time.sleep(600)


def noisy(lines: int) -> str:
    """Write to stdout through Python and through the descriptor: neither may reach the pipe."""
    for i in range(lines):
        print(f"line {i} on stdout")
    os.write(1, b"raw bytes on descriptor 1\n")
    sys.stdout.flush()
    return "still a clean reply"


def complain_then_exit(code: int) -> None:
    """Leave a last word on stderr, then exit without a reply."""
    print("last words before the exit", file=sys.stderr, flush=True)
    os._exit(code)
