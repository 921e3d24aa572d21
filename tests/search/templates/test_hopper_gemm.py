"""The Hopper GEMM templates (TMA, mbarrier ring, wgmma, producer and consumer warpgroups; f16
and e4m3) on the CPU: they exist for sm_90a alone and a search on an H100 or H200 builds for
it; every configuration assembles without spills; a sample computes on the model interpreter
what torch does at sizes whose slices wrap the ring of stages; and the model refuses a consumer
that waits on the wrong phase of a stage's mbarrier and a producer that refills a stage before
the consumers release it."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping

import pytest

from karyamorph.harness.gpu.compare import Comparison, compare, tolerance_for
from karyamorph.harness.gpu.reference import evaluate_reference, output_args
from karyamorph.harness.model_run import run_model
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.search.run import device_sizes
from karyamorph.search.session import search_arch
from karyamorph.search.space import Value
from karyamorph.search.template import Template
from karyamorph.search.templates import TEMPLATES
from karyamorph.search.templates.hopper_gemm import FP8_TEMPLATE, TEMPLATE, build
from tests.search.standin import DEVICE

ARCH = Arch.parse("sm_90a")
SAMPLE = 3  # configurations interpreted besides the baseline and its persistent twin (5-20 s each)


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


BOTH = [TEMPLATE, FP8_TEMPLATE]
SLICE = {"hopper_gemm": 64, "hopper_fp8_gemm": 128}  # elements of K a slice: 128 bytes


def configs(t: Template = TEMPLATE) -> list[dict[str, Value]]:
    space = t.space(ARCH)
    return [space.config(i) for i in range(len(space))]


def wrapping(config: Mapping[str, Value], slice_k: int = 64) -> dict[str, int]:
    """Two tiles along N and a K whose slices go round the ring of stages and a bit more; a
    persistent grid has one block, which takes both tiles (its ring going on from one to the
    next)."""
    k = slice_k * (int(config["stages"]) + 2)
    cluster = int(config.get("cluster", 1))  # a cluster's tiles lie one above the other
    return {"M": cluster * int(config["bm"]), "N": 2 * int(config["bn"]), "K": k, "sms": cluster}


def on_model(spec: KernelSpec) -> Comparison:
    """``c`` of ``spec`` on the model interpreter, held to the torch reference."""
    kernel = bind(spec, ARCH)
    run = run_model(kernel, seed=3, machine=ptx_machine(ARCH.name))
    (arg,) = output_args(kernel)
    (want,) = evaluate_reference(kernel, {k: v.clone() for k, v in run.inputs.items()})
    return compare(arg.name, run.outputs[arg.name], want, tolerance_for(arg.dtype, spec.atol, spec.rtol))


def test_it_is_shipped_for_sm_90a_and_a_search_on_an_h100_builds_for_it() -> None:
    assert TEMPLATES["hopper_gemm"] is TEMPLATE and TEMPLATES["hopper_fp8_gemm"] is FP8_TEMPLATE
    for t in BOTH:
        assert len(t.space("sm_90")) == 0 and len(t.space("sm_120a")) == 0
        assert t.space(ARCH).find(t.baseline) is not None
    assert search_arch(None, DEVICE, TEMPLATE) == ARCH  # the stand-in is an sm_90 card
    assert search_arch(None, DEVICE, TEMPLATES["hgemm"]) == Arch.parse("sm_90")
    assert search_arch("sm_90", DEVICE, TEMPLATE) == Arch.parse("sm_90")  # as given


@pytest.mark.parametrize("t", BOTH, ids=lambda t: t.name)
def test_every_configuration_assembles_without_spills(t: Template) -> None:
    chain = toolchain()
    for config in configs(t):
        spec = t.spec(config, ARCH)
        report = assemble(spec.ptx, ARCH.name, chain).functions[spec.entry]
        assert report.spill_stores_bytes == 0 and report.spill_loads_bytes == 0, (config, report)
        assert report.registers <= t.footprint(config).registers, (config, report)


SMALL: dict[str, Value] = {"bm": 64, "bn": 64, "stages": 2, "consumers": 1, "regs": "default"}
CLUSTER: dict[str, Value] = {**SMALL, "grid": "persistent", "cluster": 2}
"""Two CTAs sharing b through multicast copies; each block (one a CTA rank) takes two tiles."""


@pytest.mark.parametrize("t", BOTH, ids=lambda t: t.name)
def test_a_sample_computes_what_torch_does_round_the_ring(t: Template) -> None:
    rest = [c for c in configs(t) if c != dict(t.baseline)]
    persistent = {**t.baseline, "grid": "persistent"}  # one block takes both tiles, the ring going on
    # c through the staging buffers (f16): a pass of 128 columns (the baseline), of 64, and two
    # passes of 128 (a 256-wide tile).
    staged = [
        {**t.baseline, "epilogue": "staged"},
        *({**SMALL, "bn": bn, "epilogue": "staged"} for bn in (64, 256)),
    ]
    staged = staged if "epilogue" in t.baseline else []
    for config in [dict(t.baseline), persistent, CLUSTER, *staged, *random.Random(7).sample(rest, SAMPLE)]:
        verdict = on_model(t.build(config, ARCH, wrapping(config, SLICE[t.name])))
        assert verdict.passed, (config, verdict)


def _planted(old: str, new: str, config: Mapping[str, Value] = SMALL) -> KernelSpec:
    """The smallest configuration (or ``config``) with ``old`` (one line of its PTX) replaced by
    ``new``."""
    spec = build(config, ARCH, wrapping(config))
    assert spec.ptx.count(old) == 1, old
    return dataclasses.replace(spec, ptx=spec.ptx.replace(old, new))


def _refused(spec: KernelSpec) -> str:
    """What the model says of a planted kernel: its error, else the output's difference."""
    try:
        verdict = on_model(spec)
    except ExecutionError as exc:
        return str(exc)
    assert not verdict.passed, "the planted kernel computed the right c"
    return verdict.message


def _waits(ptx: str) -> list[str]:
    """The ``mbarrier.try_wait.parity`` lines of ``ptx``: the producer's, then the consumer's."""
    return [line.strip() for line in ptx.splitlines() if "mbarrier.try_wait.parity" in line]


def test_a_consumer_waiting_on_the_wrong_phase_is_refused() -> None:
    """The consumers wait for the other parity: a stage's wait passes before its copy lands, and
    the wgmma reads what is not there yet (zeros, or the slice before)."""
    wait = _waits(build(SMALL, ARCH, wrapping(SMALL)).ptx)[1]
    parity = wait.rstrip(";").split()[-1]
    why = _refused(_planted(wait, f"xor.b32 {parity}, {parity}, 1;\n\t{wait}"))
    assert "elements differ" in why or "before" in why, why


def test_a_producer_that_does_not_wait_for_the_release_is_refused() -> None:
    """Without the wait on ``empty``, the producer refills stages the consumers still read."""
    lines = [line.strip() for line in build(SMALL, ARCH, wrapping(SMALL)).ptx.splitlines()]
    skip = lines[lines.index(_waits("\n".join(lines))[0]) - 3]  # @!%p bra past the wait
    assert skip.startswith("@!%p") and "bra $L__endif_" in skip, skip
    why = _refused(_planted(skip, f"bra.uni {skip.split()[-1]}"))
    assert "elements differ" in why or "before" in why, why


def test_a_search_on_a_gpu_gives_the_persistent_grid_its_sm_count() -> None:
    assert device_sizes(TEMPLATE, DEVICE) == {**TEMPLATE.sizes, "sms": DEVICE.sm_count}
    other = dataclasses.replace(DEVICE, attributes={"multiprocessor_count": 114})  # an H100 PCIe
    assert device_sizes(FP8_TEMPLATE, other) == {**FP8_TEMPLATE.sizes, "sms": 114}
    assert device_sizes(TEMPLATE, None) is None  # no GPU: the template's 132
    assert device_sizes(TEMPLATES["hgemm"], DEVICE) is None  # no sms size: its own sizes
    spec = TEMPLATE.spec({**TEMPLATE.baseline, "grid": "persistent"}, ARCH, {**TEMPLATE.sizes, "sms": 114})
    assert bind(spec, ARCH).grid == (114, 1, 1)


def test_grouped_tiles_cover_c_once_with_a_last_group_of_fewer_rows() -> None:
    """Ten tile rows: a group of eight and one of two, taken by three blocks column after column."""
    config = {**SMALL, "grid": "grouped"}
    verdict = on_model(build(config, ARCH, {"M": 640, "N": 128, "K": 128, "sms": 3}))
    assert verdict.passed, verdict


def _line(config: Mapping[str, Value], words: str) -> str:
    """The one line of ``config``'s PTX that holds ``words``."""
    (line,) = [x.strip() for x in build(config, ARCH, wrapping(config)).ptx.splitlines() if words in x]
    return line


def test_a_consumer_that_does_not_release_the_other_ctas_stage_leaves_it_waiting() -> None:
    """Without the arrivals on the other CTA's ``empty`` (in the slice loop and after a tile's
    last slice), its producer waits for ever for the second half of them: the model says
    deadlock."""
    spec = build(CLUSTER, ARCH, wrapping(CLUSTER))
    lines = spec.ptx.splitlines()
    kept = [x for x in lines if "mbarrier.arrive.shared::cluster" not in x]
    assert len(lines) - len(kept) == 2
    why = _refused(dataclasses.replace(spec, ptx="\n".join(kept)))
    assert "deadlock" in why, why


def test_a_multicast_that_leaves_out_the_other_cta_leaves_it_waiting() -> None:
    """b's half sent to the issuing CTA alone: the other CTA's ``full`` never gets its bytes."""
    mask = _line(CLUSTER, "mov.b16")
    why = _refused(_planted(mask, mask.replace(", 3;", ", 1;"), CLUSTER))
    assert "deadlock" in why, why


@pytest.mark.parametrize("sms", [3, 7, 132])
def test_a_persistent_cluster_grid_is_whole_clusters_at_any_sm_count(sms: int) -> None:
    """Clusters of two on a persistent grid take an even number of SMs, also where the count is
    odd (the model's check sizes give 3): the grid is a whole number of clusters."""
    spec = TEMPLATE.spec(CLUSTER, ARCH, {"M": 512, "N": 512, "K": 256, "sms": sms})
    kernel = bind(spec, ARCH)
    assert kernel.grid[0] % 2 == 0 and 0 < kernel.grid[0] <= sms, (sms, kernel.grid)
