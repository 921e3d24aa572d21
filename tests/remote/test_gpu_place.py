"""Where GPU work goes: a host entered with ``gpu_on`` answers the device queries and starts the
workers, and its devices are stored naming it."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from typing import IO

import pytest

from karyamorph.cli.options import EXAMPLES
from karyamorph.harness.gpu import host as place
from karyamorph.harness.gpu.device import DeviceInfo, list_devices
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.gpu.transport import LocalTransport, Transport, describe_exit
from karyamorph.harness.record import device_record
from karyamorph.harness.stages.base import Context, Status
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.tool_inputs import tool_stage_inputs
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec

DEVICE = DeviceInfo(
    0, "NVIDIA H200", (9, 0), 13000, 141 << 30, {"multiprocessor_count": 132}, host="ssh://box"
)


class NoSpawn:
    where = " on ssh://box"

    def spawn(self, target: str, env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        raise AssertionError("not started in these tests")

    def describe_exit(self, returncode: int | None) -> str:
        return describe_exit(returncode)


class Box:
    """A host that answers from fixed facts (the SSH one is tested against a real sshd)."""

    url = "ssh://box"

    def __init__(self) -> None:
        self.sent = NoSpawn()

    def devices(self) -> tuple[DeviceInfo, ...]:
        return (DEVICE,)

    def driver_problem(self) -> str | None:
        return "no CUDA device"

    def kernel_driver_release(self) -> str:
        return "570.124.06"

    def transport(self) -> Transport:
        return self.sent


def test_queries_and_workers_follow_the_active_host() -> None:
    box = Box()
    assert place.gpu_host() is None
    with place.gpu_on(box):
        assert place.gpu_host() is box
        assert place.current_device() == DEVICE and place.list_devices() == (DEVICE,)
        assert place.kernel_driver_release() == "570.124.06"
        assert place.driver_problem() == "no CUDA device on ssh://box"
        assert GpuWorker(0).transport is box.sent
    assert place.gpu_host() is None
    assert place.list_devices() == list_devices()
    assert isinstance(GpuWorker(0).transport, LocalTransport)


def test_the_host_is_left_even_when_the_body_raises() -> None:
    try:
        with place.gpu_on(Box()):
            raise KeyError("x")
    except KeyError:
        pass
    assert place.gpu_host() is None


def test_a_device_elsewhere_is_stored_naming_its_host() -> None:
    remote = device_record(DEVICE)
    assert remote is not None and remote.properties["host"] == "ssh://box"
    local = device_record(
        DeviceInfo(0, "NVIDIA H200", (9, 0), 13000, 141 << 30, {"multiprocessor_count": 132})
    )
    assert local is not None and "host" not in local.properties
    assert remote.content_hash() != local.content_hash()  # the same model of GPU elsewhere is another device


@pytest.mark.parametrize(("stage", "tool"), [(SanitizeStage, "compute-sanitizer"), (MetricsStage, "ncu")])
def test_tool_stages_send_their_work_to_the_host(stage: type, tool: str) -> None:
    # The "host" here is a worker on this machine that opens no GPU: the stage's job pickles,
    # travels to it, finds (or not) the tool where it runs, and its result comes back naming the
    # host. On a GPU host the same job runs the tool beside the GPU.
    kernel = bind(load_spec(EXAMPLES / "vadd.toml"), "sm_90")
    with GpuWorker(None, transport=LocalTransport()) as worker:
        context = Context(
            kernel=kernel, arch=Arch.parse("sm_90"), device=DEVICE, cubin=b"\x7fELF", worker=worker
        )
        with place.gpu_on(Box()):
            result = stage().run(context)
    assert result.data["host"] == "ssh://box", result
    if result.status == Status.SKIP:  # this machine, standing in for the host, lacks the tool
        assert tool in result.data["reason"] and "(on the GPU host)" in result.data["reason"]
    else:  # it has the tool, but no GPU to run the kernel on: the stage says what failed there
        assert result.status in (Status.ERROR, Status.FAIL), result


def test_tool_stages_skip_without_a_cubin_or_a_device_on_the_host() -> None:
    kernel = bind(load_spec(EXAMPLES / "vadd.toml"), "sm_90")
    with place.gpu_on(Box()):
        no_cubin = SanitizeStage().run(Context(kernel=kernel, arch=Arch.parse("sm_90"), device=DEVICE))
        no_device = MetricsStage().run(Context(kernel=kernel, arch=Arch.parse("sm_90"), cubin=b"\x7fELF"))
    assert no_cubin.status == no_device.status == Status.SKIP
    assert no_cubin.data["reason"] == "compile did not pass" and no_device.data["reason"] == "no CUDA device"


def test_a_tool_stage_here_looks_for_its_tool_here() -> None:
    kernel = bind(load_spec(EXAMPLES / "vadd.toml"), "sm_90")
    context = Context(kernel=kernel, arch=Arch.parse("sm_90"), device=DEVICE, cubin=b"\x7fELF")
    here = tool_stage_inputs(context, None, lambda: None, "ncu")  # ncu is looked for, and missing
    assert (
        not isinstance(here, tuple)
        and "ncu" in here.data["reason"]
        and "ssh://box" not in here.data["reason"]
    )
