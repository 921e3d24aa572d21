"""The control bits of real ptxas output: barriers that loads set are the ones their users wait on,
and the main loop is the one a GEMM's fma chain runs in (sm_90 and sm_120)."""

from __future__ import annotations

import re

import pytest

from karyamorph.harness.tools.nvdisasm import disassemble
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.sass_control import Scheduled, main_loop, scheduled
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.isa.arch import Arch
from karyamorph.model.cost.issue import loads_in_flight, lone_warp_cycles
from karyamorph.search.templates import template

# 128 x 128 tiles, k slices of 8, 8 x 8 per thread: 8 * 8 * 8 fma per warp and slice.
SGEMM = {"bm": 128, "bn": 128, "bk": 8, "wm": 64, "wn": 32, "tm": 8, "tn": 8, "stages": 1}
_REGISTER = re.compile(r"\bR(\d+)\b")


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    return discover()


def sgemm_sass(arch: str, toolchain: Toolchain) -> tuple[Scheduled, ...]:
    t = template("sgemm")
    spec = t.spec(SGEMM, Arch.parse(arch), t.sizes)
    cubin = assemble(spec.ptx, arch, toolchain, filename="sgemm.ptx").cubin
    functions = scheduled(cubin, toolchain)
    assert list(functions) == [spec.entry]
    return functions[spec.entry]


def registers(operands: str) -> set[int]:
    """Registers an operand list names (``R72`` of ``[R72.64+0x10]`` too)."""
    return {int(r) for r in _REGISTER.findall(operands)}


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_every_wait_names_a_barrier_an_instruction_sets(arch: str, toolchain: Toolchain) -> None:
    body = sgemm_sass(arch, toolchain)
    set_by = {b for x in body for b in (x.slot.write_barrier, x.slot.read_barrier) if b is not None}
    waited = {b for x in body for b in range(6) if x.slot.wait_mask >> b & 1}
    assert waited and waited <= set_by
    stalls = [x.slot.stall for x in body]
    assert min(stalls) >= 0 and max(stalls) <= 15 and sum(stalls) >= len(body) // 2


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_a_load_is_waited_for_before_its_value_is_read(arch: str, toolchain: Toolchain) -> None:
    body = sgemm_sass(arch, toolchain)
    loads = [i for i, x in enumerate(body) if x.opcode.startswith("LDG")]
    assert loads
    for i in loads:
        load = body[i]
        assert load.slot.write_barrier is not None, load
        first = registers(load.operands.split(",")[0])  # LDG.E.128 R72 writes R72..R75
        wide = {r + k for r in first for k in range(4)} if ".128" in load.opcode else first
        # The first later instruction that reads one of them (not as its destination) waits.
        user = next((x for x in body[i + 1 :] if wide & registers(x.operands.partition(",")[2])), None)
        if user is not None:
            assert user.slot.wait_mask >> load.slot.write_barrier & 1, (load, user)


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_the_main_loop_is_the_k_loop(arch: str, toolchain: Toolchain) -> None:
    body = sgemm_sass(arch, toolchain)
    loop = main_loop(body)
    opcodes = [s.opcode for s in loop]
    assert opcodes.count("FFMA") == SGEMM["bk"] * SGEMM["tm"] * SGEMM["tn"]
    assert opcodes.count("BAR") == 2 and opcodes[-1] == "BRA"  # one stage: two barriers a slice
    assert len(loop) < len(body)
    # Walked alone, the loop takes at least a cycle per instruction, and longer when its
    # loads take longer: their latency is not all covered.
    fast, slow = (lone_warp_cycles(loop, lambda op, c=c: c if op == "LDG" else 25.0) for c in (100.0, 3000.0))
    assert len(loop) <= fast < slow
    # Each thread prefetches a float4 of a and one of b a slice (ptxas keeps both in flight).
    assert loads_in_flight(loop) == 32


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
@pytest.mark.parametrize("stages", [2, 4])
def test_copies_in_flight_are_the_pipeline_stages_ahead(arch: str, stages: int, toolchain: Toolchain) -> None:
    # 128 x 256 tiles of k 32 in halves: 24 KiB a slice over 256 threads, 96 bytes a thread a
    # group of copies; DEPBAR.LE SB0, stages - 2 leaves stages - 1 groups in flight.
    t = template("hgemm")
    config = {"bk": 32, "bm": 128, "bn": 256, "layout": "xor", "stages": stages, "wm": 64, "wn": 64}
    spec = t.spec(config, Arch.parse(arch), t.sizes)
    cubin = assemble(spec.ptx, arch, toolchain, filename="hgemm.ptx").cubin
    loop = main_loop(scheduled(cubin, toolchain)[spec.entry])
    assert [s.wait_count for s in loop if s.wait_count] == [(0, stages - 2)]
    assert loads_in_flight(loop) == (stages - 1) * 96


@pytest.mark.parametrize(("sm_threads", "last"), [(0, "EXIT"), (2048, "BRA")])
def test_a_one_pass_kernel_is_its_body_to_its_exit_a_grid_stride_one_its_loop(
    sm_threads: int, last: str, toolchain: Toolchain
) -> None:
    t = template("vadd")
    config = {"vec": 4, "items": 1, "block": 256, "sm_threads": sm_threads, "cache": "default"}
    spec = t.spec(config, Arch.parse("sm_90"), {"n": 4096, "sms": 132})
    cubin = assemble(spec.ptx, "sm_90", toolchain, filename="vadd.ptx").cubin
    body = scheduled(cubin, toolchain)[spec.entry]
    loop = main_loop(body)
    assert loop[-1].opcode == last and "STG" in {s.opcode for s in loop}
    # without the self-branch and padding ptxas appends, or the set-up before a loop
    everything = disassemble(cubin, toolchain, with_lineinfo=False, with_encoding=True).functions[spec.entry]
    assert len(loop) <= len(body) < len(everything.instructions) and everything.padding > 0
    assert len(loop) < len(everything.instructions) - everything.padding or last == "EXIT"
