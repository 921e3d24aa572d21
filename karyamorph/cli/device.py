"""The ``device`` command: the CUDA devices this machine has and the toolchain it would use."""

from __future__ import annotations

import click

from karyamorph.cli.options import format_option
from karyamorph.cli.output import echo, friendly_errors


@click.command()
@format_option("table", "json")
@friendly_errors
def device(fmt: str) -> None:
    """The CUDA devices (or "no CUDA device") and the toolchain versions."""
    from karyamorph.harness.gpu.device import driver_problem, list_devices
    from karyamorph.harness.tools.toolchain import discover
    from karyamorph.render.views import device_view, toolchain_versions

    devices, tc = list_devices(), discover()
    problem = None if devices else driver_problem()
    if fmt == "json":
        echo({"devices": [d.as_dict() for d in devices], "problem": problem,
              "toolchain": dict(toolchain_versions(tc))})  # fmt: skip
    else:
        echo(device_view(devices, problem, tc))


COMMANDS: tuple[click.Command, ...] = (device,)
