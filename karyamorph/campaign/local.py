"""The local executor: items one after another in this process, one persistent GPU worker."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from karyamorph.campaign.execute import ItemOutcome, run_item
from karyamorph.campaign.items import Item
from karyamorph.campaign.plan import Plan
from karyamorph.harness.gpu.host import current_device
from karyamorph.harness.session import command_worker
from karyamorph.harness.tools.toolchain import discover
from karyamorph.model.check.interrupts import z3_leaves_ctrl_c


class LocalExecutor:
    """Run items in this process, in order. A plan with GPU stages uses device 0 through one
    persistent worker for the whole campaign (started by the first item that needs it); without
    a device those stages skip, saying so."""

    name = "local"

    def __init__(self) -> None:
        self.summary = ""

    def run(self, items: Sequence[Item], plan: Plan) -> Iterator[ItemOutcome]:
        """Yield each item's outcome as it finishes.

        Raises
        ------
        ToolchainError
            No ptxas can be found (before any item runs).
        """
        device = current_device() if plan.needs_gpu else None
        toolchain = discover()
        stages = plan.stages()
        gpu = f", GPU stages on {device.name}" if device is not None else ""
        self.summary = "local: this process" + (gpu or " (no GPU: the GPU stages skip)" * plan.needs_gpu)
        with command_worker(device) as worker, z3_leaves_ctrl_c():
            for item in items:
                yield run_item(item, plan, device=device, worker=worker, toolchain=toolchain, stages=stages)
