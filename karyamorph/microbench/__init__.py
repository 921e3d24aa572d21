"""Microbenchmarks: what each modeled instruction and each memory level costs, measured per arch.

``run_session`` builds the kernels (isa builder), assembles them, runs them on the persistent GPU
worker and turns the clock readings into figures; ``store_report`` writes them to the store;
``write_dataset`` and ``write_plots`` export ``datasets/microbench/<arch>/``.
"""

from karyamorph.microbench.export import read_dataset, write_dataset
from karyamorph.microbench.plots import write_plots
from karyamorph.microbench.session import (
    MicrobenchError,
    MicrobenchOptions,
    MicrobenchReport,
    run_session,
    store_report,
)
from karyamorph.microbench.summary import summary_markdown

__all__ = [
    "MicrobenchError",
    "MicrobenchOptions",
    "MicrobenchReport",
    "read_dataset",
    "run_session",
    "store_report",
    "summary_markdown",
    "write_dataset",
    "write_plots",
]
