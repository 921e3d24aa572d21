"""The SGEMM and HGEMM templates beyond the shared template test: every configuration of the sm_90
space assembles without spills, within 255 registers and with the footprint's launch; a larger
seeded sample computes what torch does on the model interpreter; the z3 checker proves the
baselines (and says why it cannot prove a deeper cp.async pipeline); sizes the tiles do not
divide are refused."""

from __future__ import annotations

import dataclasses
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from karyamorph.harness.stages.model import check_spec
from karyamorph.harness.tools.ptxas import FunctionReport, assemble
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.search.space import Value
from karyamorph.search.template import Template
from karyamorph.search.templates import TEMPLATES
from tests.search.templates.test_templates import interpreter_agrees

GEMMS = ("sgemm", "hgemm")
# Variants interpreted per template (about 1-3 s each at the check sizes): with the shared
# test's six, about a tenth of each space.
MORE = {"sgemm": 16, "hgemm": 10}


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def _report(t: Template, config: dict[str, Value], arch: str, chain: Toolchain
            ) -> tuple[int, int, FunctionReport]:  # fmt: skip
    spec = t.spec(config, arch)
    bound = bind(spec, Arch.parse(arch))
    fn = assemble(spec.ptx, arch, chain).functions[spec.entry]
    return bound.block[0], bound.shared_bytes, fn


@pytest.mark.parametrize("name", GEMMS)
def test_every_sm90_configuration_assembles_without_spills(name: str) -> None:
    t = TEMPLATES[name]
    chain = toolchain()
    space = t.space("sm_90")
    configs = [space.config(i) for i in range(len(space))]
    # ptxas runs as a subprocess: two at a time halve the wall time of the few hundred runs.
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda c: _report(t, c, "sm_90", chain), configs))
    for config, (threads, shared, fn) in zip(configs, reports, strict=True):
        foot = t.footprint(config)
        where = (name, config, fn.registers)
        assert fn.registers is not None and fn.registers <= 255, where
        assert fn.spill_stores_bytes == fn.spill_loads_bytes == fn.stack_frame_bytes == 0, where
        assert fn.local_bytes == 0 and fn.shared_bytes == 0, where  # all shared memory is dynamic
        assert (threads, shared) == (foot.threads, foot.shared_bytes), where
        # What the block asks of the SM, with ptxas's registers, fits one SM of sm_90.
        assert threads * fn.registers <= 65536, where


@pytest.mark.parametrize("name", GEMMS)
def test_a_larger_sample_computes_what_torch_does(name: str) -> None:
    t = TEMPLATES[name]
    space = t.space("sm_90")
    picks = random.Random(f"{name}/more").sample(range(len(space)), MORE[name])
    for i in picks:
        interpreter_agrees(t, space.config(i), "sm_90")


def _verdicts(t: Template, config: dict[str, Value]) -> dict[str, tuple[str, str]]:
    spec = t.spec(config, "sm_90", t.check_sizes)
    kernel = bind(spec, Arch.parse("sm_90"))
    module = parse(spec.ptx, f"{t.name}.ptx")
    found = check_spec(kernel, module, machine=ptx_machine("sm_90"), deadline_s=120)
    return {v.property: (v.verdict, v.reason or "") for v in found}


@pytest.mark.parametrize("name", GEMMS)
def test_the_checker_proves_the_baseline(name: str) -> None:
    t = TEMPLATES[name]
    verdicts = _verdicts(t, dict(t.baseline))
    assert {p: v for p, (v, _) in verdicts.items()} == dict.fromkeys(("bounds", "race", "barrier"), "proved")


def test_two_sgemm_stages_are_proved_for_every_slice() -> None:
    t = TEMPLATES["sgemm"]
    config = {"bm": 128, "bn": 128, "bk": 8, "wm": 64, "wn": 32, "tm": 8, "tn": 8, "stages": 2}
    verdicts = _verdicts(t, config)
    for prop in ("bounds", "race", "barrier"):
        assert verdicts[prop][0] == "proved", (prop, verdicts[prop])
        assert "all iterations" in verdicts[prop][1]  # the loop's counter is free, not unrolled


def test_a_deeper_cp_async_ring_is_proved_and_a_short_wait_is_not() -> None:
    # Three stages: each slice waits with `cp.async.wait_group 1`, so the copies into the slice it
    # reads have landed (only the newest group may be in flight) and the barrier shows them to
    # every thread. Waiting for one group fewer leaves the slice's copies possibly in flight.
    t = TEMPLATES["hgemm"]
    config = t.config({"stages": 3, "layout": "xor"})
    verdicts = _verdicts(t, config)
    assert {p: v for p, (v, _) in verdicts.items()} == dict.fromkeys(verdicts, "proved"), verdicts
    spec = t.spec(config, "sm_90", t.check_sizes)
    assert spec.ptx.count("cp.async.wait_group 1;") == 2
    short = spec.ptx.replace("cp.async.wait_group 1;", "cp.async.wait_group 2;")
    kernel = bind(dataclasses.replace(spec, ptx=short), Arch.parse("sm_90"))
    (race,) = check_spec(kernel, parse(short, "short.ptx"), properties=("race",),
                         machine=ptx_machine("sm_90"), deadline_s=120)  # fmt: skip
    assert race.verdict in ("refuted", "unknown"), race


def test_the_checker_refutes_an_sgemm_without_its_second_barrier() -> None:
    # With one stage, the barrier between the slice's last reads and the stores of the next
    # slice is what separates them: without it the stores race with other warps' reads.
    t = TEMPLATES["sgemm"]
    spec = t.spec(t.baseline, "sm_90", t.check_sizes)
    lines = spec.ptx.splitlines()
    barriers = [i for i, line in enumerate(lines) if line.strip() == "bar.sync 0;"]
    assert len(barriers) == 3  # after the prologue's stores, then two per slice
    del lines[barriers[1]]
    racy = "\n".join(lines)
    kernel = bind(dataclasses.replace(spec, ptx=racy), Arch.parse("sm_90"))
    module = parse(racy, "racy.ptx")
    (verdict,) = check_spec(kernel, module, properties=("race",), machine=ptx_machine("sm_90"))
    assert verdict.verdict == "refuted", verdict


@pytest.mark.parametrize("name", GEMMS)
def test_sizes_the_tiles_do_not_divide_are_refused(name: str) -> None:
    t = TEMPLATES[name]
    with pytest.raises(ValueError, match="multiple of"):
        t.spec(t.baseline, "sm_90", {**t.check_sizes, "K": t.check_sizes["K"] + 8})
