"""``karyamorph`` with a search's GPU gates stood in for (:mod:`tests.search.standin`), for tests
that run ``search run`` as a real process on a machine without a GPU:
``python -m tests.search.standin_cli search run vadd --arch sm_90 ...`` (from the repository).

The device is the stand-in's H100 and each variant that passes the compile-side gates sleeps
``pause_s`` (the first argument given as ``--pause-s S``, taken off before the CLI reads the rest)
instead of running on a GPU. The test template ``scatter`` (:mod:`tests.search.hard_template`)
is known besides the shipped ones. The winner's re-check needs a GPU: a search run here to its end
fails there, so the tests stop it before.
"""

from __future__ import annotations

import sys

import karyamorph.harness.gpu.device
from karyamorph.cli import main
from karyamorph.search import session
from karyamorph.search.templates import TEMPLATES
from tests.search.hard_template import TEMPLATE as SCATTER
from tests.search.standin import DEVICE, StandInEvaluator


def _run() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--pause-s"]:
        StandInEvaluator.pause_s = float(args[1])
        args = args[2:]
    TEMPLATES[SCATTER.name] = SCATTER
    karyamorph.harness.gpu.device.current_device = lambda: DEVICE
    session.VariantEvaluator = StandInEvaluator  # type: ignore[misc]
    main(args)


if __name__ == "__main__":
    _run()
