"""A kernel's time predicted from what the model knows of it: the interpreter's counts (warp
instructions by unit, global sectors, shared-memory wavefronts, loop trips), the launch's shape
and occupancy, and the measured figures of the device (:class:`CostMachine`).

No GPU is touched: the figures come from the microbenchmark tables of the arch (or stated
defaults), the counts from the CPU interpreter at a small size scaled to the timed one.
"""

from karyamorph.model.cost.device_figures import CostMachine, machine_for
from karyamorph.model.cost.predict import KernelCounts, Prediction, predict, scaled_counts
from karyamorph.model.cost.tables import measured_figures
from karyamorph.model.cost.units import UNITS, unit_of

__all__ = ["UNITS", "CostMachine", "KernelCounts", "Prediction", "machine_for", "measured_figures", "predict",
           "scaled_counts", "unit_of"]  # fmt: skip
