"""Messages over a pipe: an 8-byte little-endian length, then that many bytes of pickle.

The reader takes a deadline, so that a worker that never answers is noticed (the caller then
kills it); a pipe closed by the other end reads as :class:`PipeClosed`, never as a partial
message.
"""

from __future__ import annotations

import os
import pickle
import select
import time
from typing import Any

HEADER_BYTES = 8
MAX_MESSAGE_BYTES = 1 << 40  # a length above this is a corrupt header, not a message


class PipeClosed(EOFError):
    """The other end closed the pipe (it exited, or was killed) before a whole message came."""


class PipeTimeout(TimeoutError):
    """No whole message before the deadline."""


def send(fd: int, obj: Any) -> None:
    """Write ``obj`` as one message to the file descriptor ``fd`` (blocking until written).

    Raises
    ------
    PipeClosed
        The reader is gone.
    """
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    data = memoryview(len(payload).to_bytes(HEADER_BYTES, "little") + payload)
    while data:
        try:
            written = os.write(fd, data)
        except BrokenPipeError:
            raise PipeClosed("the reader closed the pipe") from None
        data = data[written:]


def _read_exact(fd: int, count: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    left = count
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise PipeTimeout(f"no message within the deadline ({count - left} of {count} bytes)")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise PipeClosed(f"the pipe closed after {count - left} of {count} bytes")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, timeout_s: float | None = None) -> Any:
    """Read one message from ``fd``; wait at most ``timeout_s`` seconds for all of it (None: forever).

    Raises
    ------
    PipeTimeout
        The deadline passed first.
    PipeClosed
        The writer closed the pipe first.
    """
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    size = int.from_bytes(_read_exact(fd, HEADER_BYTES, deadline), "little")
    if size > MAX_MESSAGE_BYTES:
        raise PipeClosed(f"corrupt message header (length {size})")
    return pickle.loads(_read_exact(fd, size, deadline))
