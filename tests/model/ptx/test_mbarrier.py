"""Hopper's mbarrier, bulk-copy, proxy-fence and cluster forms: the spellings compilers emit
decode, print back and assemble with ptxas for sm_90a; the cluster special registers of the
1x1x1 default; and the kernel faults the model reports (an mbarrier outside its life, a bulk
copy of a size that is no multiple of 16, a cluster wait without an arrival). Clusters of more
CTAs: tests/model/interp/test_clusters.py."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_module
from karyamorph.model.interp.asyncproxy import MbarrierError
from karyamorph.model.interp.errors import DivergentBarrierError, MemoryAccessError, ModelLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import unmodeled

M = ptx_machine("sm_90a")

FORMS = """
    mbarrier.init.shared::cta.b64 [%r2], 2;
    mbarrier.init.shared.b64 [%r3], %r1;
    mbarrier.arrive.shared::cta.b64 %rd2, [%r2];
    mbarrier.arrive.release.cta.shared::cta.b64 %rd2, [%r2], 1;
    mbarrier.arrive.release.cluster.shared::cta.b64 _, [%r3];
    mbarrier.arrive.noComplete.shared.b64 %rd3, [%r3], 1;
    mbarrier.pending_count.b64 %r4, %rd3;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 32;
    mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd2, [%r2], %r1;
    mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r2], 16;
    mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r2], 16;
    mbarrier.test_wait.shared::cta.b64 %p1, [%r2], %rd2;
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r2], %r1;
    mbarrier.try_wait.shared::cta.b64 %p1, [%r2], %rd2;
    mbarrier.try_wait.acquire.cta.shared::cta.b64 %p1, [%r2], %rd2, 1000;
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
    mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p1, [%r2], %r1;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd1], 32, [%r2];
    fence.proxy.async.shared::cta;
    fence.proxy.async;
    fence.proxy.async.global;
    cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r5], 32;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
    cp.async.bulk.wait_group 0;
    mbarrier.inval.shared::cta.b64 [%r3];
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mov.u32 %r6, %cluster_ctarank;
"""


def _module(body: str = FORMS, attributes: str = "") -> str:
    return f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{attributes}
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 buf[64];
    .shared .align 8 .b64 bars[2];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, bars;
    add.u32 %r3, %r2, 8;
    mov.u32 %r5, buf;
{body}
    ret;
}}
"""


def test_every_form_parses_prints_and_decodes() -> None:
    module = parse(_module())
    again = parse(format_module(module))
    assert [i.full_opcode for i in again.functions[0].instructions()] == [
        i.full_opcode for i in module.functions[0].instructions()
    ]
    assert unmodeled(module, M) == []


def test_every_form_assembles_with_ptxas_for_sm_90a() -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(format_module(parse(_module())), "sm_90a", toolchain, lineinfo=False).cubin


CLUSTER_REGISTERS = [
    "%cluster_ctarank", "%cluster_nctarank", "%clusterid.x", "%clusterid.y", "%clusterid.z",
    "%nclusterid.x", "%nclusterid.y", "%nclusterid.z", "%cluster_ctaid.x", "%cluster_ctaid.y",
    "%cluster_ctaid.z", "%cluster_nctaid.x", "%cluster_nctaid.y", "%cluster_nctaid.z",
]  # fmt: skip


@pytest.mark.parametrize("randomize", [False, True])
def test_each_cta_is_its_own_cluster_by_default(randomize: bool) -> None:
    # Without a cluster attribute the launch makes 1x1x1 clusters: rank 0 of 1, the cluster id
    # is the CTA id, and the clusters tile the grid as the CTAs do.
    reads = "\n".join(
        f"    mov.u32 %r{k}, {name};\n    st.global.u32 [%rd3+{4 * k}], %r{k};"
        for k, name in enumerate(CLUSTER_REGISTERS)
    )
    body = f"""
    mov.u32 %r15, %ctaid.x;
    mov.u32 %r14, %ctaid.y;
    mov.u32 %r13, %nctaid.x;
    mad.lo.u32 %r15, %r14, %r13, %r15;
    mad.lo.u32 %r15, %r15, 32, %r1;
    mul.wide.u32 %rd3, %r15, 64;
    add.s64 %rd3, %rd1, %rd3;
{reads}
"""
    grid = (3, 2, 1)
    out = np.zeros((6 * 32, 16), np.uint32)
    got = interpret(parse(_module(body)), "k", M, (grid, 32, 0), {"out": out}, randomize_order=randomize)
    values = got.outputs["out"].reshape(2, 3, 32, 16)
    for y in range(2):
        for x in range(3):
            want = [0, 1, x, y, 0, *grid, 0, 0, 0, 1, 1, 1]
            assert (values[y, x, :, :14] == want).all(), (x, y, values[y, x, 0].tolist())


def _fault(body: str) -> None:
    interpret(parse(_module(body)), "k", M, (1, 32, 0), {"out": np.zeros(64, np.uint32)})


def test_an_arrival_on_an_uninitialised_mbarrier_is_reported() -> None:
    with pytest.raises(MbarrierError, match="not initialised"):
        _fault("    mbarrier.arrive.shared::cta.b64 %rd2, [%r2];")


def test_initialising_a_live_mbarrier_is_reported() -> None:
    init = "    mbarrier.init.shared::cta.b64 [%r2], 1;"
    with pytest.raises(MbarrierError, match="live"):
        _fault(f"{init}\n{init}")
    _fault(f"{init}\n    mbarrier.inval.shared::cta.b64 [%r2];\n{init}")  # inval frees it


def test_a_bulk_copy_size_must_be_a_multiple_of_16() -> None:
    body = """
    mbarrier.init.shared::cta.b64 [%r2], 32;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd1], 24, [%r2];
"""
    with pytest.raises(MemoryAccessError, match="24 is not a multiple of 16"):
        _fault(body)


def test_a_cluster_wait_without_an_arrival_waits_for_itself() -> None:
    with pytest.raises(DivergentBarrierError, match="without having arrived"):
        _fault("    barrier.cluster.wait.aligned;")


def test_a_kernel_launched_in_clusters_the_launch_gives_needs_their_dimensions() -> None:
    # .explicitcluster without .reqnctapercluster: the launch names the cluster shape.
    module = parse(_module("    mov.u32 %r6, %cluster_ctarank;", ".explicitcluster"))
    with pytest.raises(ModelLimitError, match="must give the cluster dimensions"):
        interpret(module, "k", M, (2, 32, 0), {"out": np.zeros(64, np.uint32)})
    interpret(module, "k", M, (2, 32, 0), {"out": np.zeros(64, np.uint32)}, cluster=(2, 1, 1))


def test_a_cluster_of_one_cta_is_the_default() -> None:
    module = parse(_module("    mov.u32 %r6, %cluster_nctarank;", ".reqnctapercluster 1, 1, 1"))
    interpret(module, "k", M, (2, 32, 0), {"out": np.zeros(64, np.uint32)})
