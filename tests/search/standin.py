"""The GPU's part of a template search stood in for on the CPU, for tests of what a search does
around its measurements (the store, the winner's files, Ctrl-C), not of the measurements.

Every gate before the GPU runs as in ``search run``: the template builds the variant, ptxas
assembles it and the model checks it. A variant that passes them gets a stand-in time instead of
the GPU's correctness trials and timing: a made-up function of its launch (fastest at 256
threads a block and at the fewest registers), so that the search has a winner to store. It is
not a measurement and no test reads anything into it.
"""

from __future__ import annotations

import time
from typing import Any

from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.search.gates import Compiled
from karyamorph.search.outcome import Outcome
from karyamorph.search.variants import VariantEvaluator

DEVICE = DeviceInfo(0, "H100 (stand-in: no GPU is used)", (9, 0), 13000, 80 * 2**30,
                    {"multiprocessor_count": 132})  # fmt: skip
"""What a search on the stand-in says it ran on: an H100's arch, so its variants are for sm_90."""


def standin_ms(compiled: Compiled) -> float:
    """The stand-in time of a variant that passed the compile-side gates."""
    threads = compiled.kernel.block[0] * compiled.kernel.block[1] * compiled.kernel.block[2]
    return 0.1 * (threads / 256 + 256 / threads) + 0.001 * compiled.registers


class StandInEvaluator(VariantEvaluator):
    """:class:`VariantEvaluator` with its GPU gates replaced by :func:`standin_ms` (the worker it
    is given is never started). ``pause_s`` paces the search like a GPU round trip would."""

    pause_s: float = 0.0

    def _on_gpu(self, compiled: Compiled, gates: dict[str, Any]) -> Outcome:
        time.sleep(self.pause_s)
        gates["standin"] = True
        return Outcome.timed(standin_ms(compiled))
