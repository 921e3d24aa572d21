"""Ctrl-C while z3 solves: an interrupt of the program, never a verdict.

z3 takes SIGINT for itself while it solves and answers ``unknown`` ("interrupted from
keyboard"); a command that checks a kernel would then report and store that answer as the
kernel's verdict and go on. :func:`z3_leaves_ctrl_c` tells z3 to leave the signal to Python:
the KeyboardInterrupt comes once the query in hand returns (every query has a time limit).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import z3


@contextmanager
def z3_leaves_ctrl_c() -> Iterator[None]:
    """While z3 solves in this process, let SIGINT reach Python's handler."""
    before = z3.get_param("ctrl_c")
    z3.set_param("ctrl_c", False)
    try:
        yield
    finally:
        z3.set_param("ctrl_c", before)
