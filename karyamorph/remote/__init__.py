"""GPU work on another machine: the GPU stages run on a host reached over SSH.

The compile side, the model and the store stay here; a worker runs on the host at the end of an
SSH channel and speaks the same job protocol as a local one (:mod:`karyamorph.harness.gpu.wire`).
``remote setup`` makes a host ready and ``remote doctor`` checks one.
"""

from karyamorph.remote.channel import SshTransport
from karyamorph.remote.facts import HostFacts
from karyamorph.remote.gpuhost import SshGpuHost
from karyamorph.remote.setup import Check, HostReport, doctor, setup
from karyamorph.remote.url import RemoteError, SshUrl

__all__ = [
    "Check",
    "HostFacts",
    "HostReport",
    "RemoteError",
    "SshGpuHost",
    "SshTransport",
    "SshUrl",
    "doctor",
    "setup",
]
