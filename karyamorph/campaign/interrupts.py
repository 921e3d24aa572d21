"""Ctrl-C during a campaign: a SIGINT that always stops it, never one that turns into a verdict.

Two things lose a Ctrl-C in a campaign's process. z3 takes SIGINT for itself while it solves
and answers ``unknown`` ("interrupted from keyboard"), which the model stage would report as the
item's verdict; :func:`karyamorph.model.check.interrupts.z3_leaves_ctrl_c` tells it not to. And
Python drops a KeyboardInterrupt raised inside a finalizer (z3 frees its terms in ``__del__``,
thousands per item), printing "Exception ignored"; :class:`CtrlC` remembers the signal, so the
runner stops all the same.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType


class CtrlC:
    """While entered, SIGINT raises KeyboardInterrupt as Python's own handler does, and sets
    :attr:`seen`, which a KeyboardInterrupt dropped in a finalizer cannot undo (nor is the drop
    reported as "Exception ignored": it is not ignored).

    It takes SIGINT over only from Python's default handler, in the main thread (where signal
    handlers run); elsewhere, or where SIGINT is ignored or handled by another, it changes
    nothing and :attr:`seen` stays False.
    """

    def __init__(self) -> None:
        self.seen = False
        self._installed = False
        self._hook = sys.unraisablehook

    def __enter__(self) -> CtrlC:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):  # fmt: skip
            signal.signal(signal.SIGINT, self._on_sigint)
            self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
            self._installed = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            sys.unraisablehook = self._hook
            self._installed = False

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def _unraisable(self, unraisable: sys.UnraisableHookArgs) -> None:
        if not (self.seen and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            self._hook(unraisable)
