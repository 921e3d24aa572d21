"""The ``karyamorph`` command: a thin click layer that parses arguments and calls the library.

Each family of commands lives in its own module and lists them as ``COMMANDS``; this face only
makes the ``main`` group and registers them. Every module here imports click alone (and the few
constants its options show) at load time, so ``karyamorph --help`` stays light: a command
imports what it needs when it runs.
"""

from __future__ import annotations

import click

from karyamorph.cli.campaign import COMMANDS as CAMPAIGN_COMMANDS
from karyamorph.cli.dashboard import COMMANDS as DASHBOARD_COMMANDS
from karyamorph.cli.device import COMMANDS as DEVICE_COMMANDS
from karyamorph.cli.microbench import COMMANDS as MICROBENCH_COMMANDS
from karyamorph.cli.model import COMMANDS as MODEL_COMMANDS
from karyamorph.cli.ptx import COMMANDS as PTX_COMMANDS
from karyamorph.cli.remote import COMMANDS as REMOTE_COMMANDS
from karyamorph.cli.runs import COMMANDS as RUN_COMMANDS
from karyamorph.cli.search import COMMANDS as SEARCH_COMMANDS
from karyamorph.cli.store import COMMANDS as STORE_COMMANDS


@click.group()
@click.version_option(package_name="karyamorph")
def main() -> None:
    """KaryaMorph: test what PTX really does, and how fast; model it; search it."""


for _command in (
    *DASHBOARD_COMMANDS, *RUN_COMMANDS, *STORE_COMMANDS, *DEVICE_COMMANDS, *MODEL_COMMANDS,
    *PTX_COMMANDS, *SEARCH_COMMANDS, *MICROBENCH_COMMANDS, *CAMPAIGN_COMMANDS, *REMOTE_COMMANDS,
):  # fmt: skip
    main.add_command(_command)

if __name__ == "__main__":
    main()
