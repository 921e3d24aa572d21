"""``karyamorph remote``: make a GPU host ready for ``--gpu ssh://...`` (``setup``), or check it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from karyamorph.cli.output import friendly_errors

if TYPE_CHECKING:
    from karyamorph.remote import Check, HostReport

URL_METAVAR = "ssh://[USER@]HOST[:PORT]"
python_option = click.option(
    "--python", default="python3", show_default=True,
    help="The host's Python (a name on its PATH or a path): the environment is made from it.",
)  # fmt: skip


@click.group("remote")
def remote_group() -> None:
    """Run the GPU stages on another machine over SSH: set a host up, check it."""


def _say(check: Check) -> None:
    click.echo(f"{check.status:<5} {check.name:<12} {check.detail}")


def _verdict(report: HostReport, url: str) -> None:
    if report.ok:
        click.echo(f"\n{url} is ready: karyamorph run SPEC.toml --gpu {url}")
        return
    click.echo(f"\n{url} is not ready: see the failed checks above", err=True)
    sys.exit(1)


@remote_group.command("setup")
@click.argument("url", metavar=URL_METAVAR)
@python_option
@friendly_errors
def remote_setup(url: str, python: str) -> None:
    """Make the host ready: check its Python and driver, make an environment there
    (~/.cache/karyamorph/remote/VERSION/venv), and install this very KaryaMorph from a wheel
    built here; then run the doctor's checks."""
    from karyamorph.remote import SshUrl, setup

    address = SshUrl.parse(url, where="remote setup")
    _verdict(setup(address, python=python, say=_say), str(address))


@remote_group.command("doctor")
@click.argument("url", metavar=URL_METAVAR)
@python_option
@friendly_errors
def remote_doctor(url: str, python: str) -> None:
    """Check the host without changing it: login, Python, nvidia-smi, the environment and its
    version, and a worker answering over the channel. Exit 1 when a check fails."""
    from karyamorph.remote import SshUrl, doctor

    address = SshUrl.parse(url, where="remote doctor")
    _verdict(doctor(address, python=python, say=_say), str(address))


COMMANDS = [remote_group]
