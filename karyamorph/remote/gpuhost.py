"""A GPU host reached over SSH, as a command uses it (:class:`~karyamorph.harness.gpu.host.GpuHost`)."""

from __future__ import annotations

import dataclasses
import threading

import karyamorph
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.gpu.transport import Transport
from karyamorph.remote.channel import SshTransport
from karyamorph.remote.facts import HostFacts, read_facts
from karyamorph.remote.url import RemoteError, SshUrl

FACTS_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0


class SshGpuHost:
    """The GPUs of ``url``'s host: its facts are read once, by a job sent to a worker there that
    opens no GPU, and every device it reports carries the host's address (so stored runs name it).

    Parameters
    ----------
    url : SshUrl
        The host.
    version : str
        The KaryaMorph version the host must run (default: this one's).
    """

    def __init__(self, url: SshUrl, *, version: str = karyamorph.__version__) -> None:
        self.url = str(url)
        self.address = url
        self.version = version
        self._facts: HostFacts | None = None
        self._lock = threading.Lock()

    def transport(self) -> Transport:
        """A fresh :class:`~karyamorph.remote.channel.SshTransport` to the host."""
        return SshTransport(self.address, version=self.version)

    def facts(self) -> HostFacts:
        """What the host said about itself (asked once, on first use).

        Raises
        ------
        RemoteError
            The host could not be reached, is not set up, runs another version, or did not
            answer in time; the message names the host and ends with what its worker wrote.
        """
        with self._lock:
            if self._facts is None:
                self._facts = self._ask()
            return self._facts

    def _ask(self) -> HostFacts:
        with GpuWorker(None, transport=self.transport(), start_timeout_s=START_TIMEOUT_S) as worker:
            reply = worker.call(read_facts, timeout_s=FACTS_TIMEOUT_S)
        if reply.failure is not None:
            tail = reply.failure.log.strip().splitlines()[-3:]
            said = "".join(f"\n  {line}" for line in tail)
            raise RemoteError(f"GPU host {self.url}: {reply.failure.reason}{said}")
        facts = reply.value
        if not isinstance(facts, HostFacts):
            raise RemoteError(f"GPU host {self.url} answered {type(facts).__name__}, not its facts")
        devices = tuple(dataclasses.replace(d, host=self.url) for d in facts.devices)
        return dataclasses.replace(facts, devices=devices)

    def devices(self) -> tuple[DeviceInfo, ...]:
        """The host's CUDA devices, each naming the host."""
        return self.facts().devices

    def driver_problem(self) -> str | None:
        """Why the host has no usable device, or None."""
        return self.facts().driver_problem

    def kernel_driver_release(self) -> str:
        """The host's kernel driver release, or ""."""
        return self.facts().kernel_driver_release
