"""Thread-block clusters of more than one CTA: the cluster special registers, the cluster's shared
window (mapa, ld/st of .shared::cluster, generic addresses), barrier.cluster between CTAs, the
faults the model reports, and nvcc's cluster_exchange (tests/corpus/src/bulk_copy_cluster.cu)
with a missing cluster barrier planted in it.

References are written from the PTX ISA's definitions (special registers, mapa, barrier.cluster)
in plain Python, not from the model's code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.model_run import run_model
from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.writer import spec_toml
from karyamorph.model.check.anylaunch import check_any_launch
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.errors import LaunchError, MemoryAccessError, ModelLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import unmodeled

M = ptx_machine("sm_90a")
CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "nvcc"
BUILDS = ["bulk_copy_cluster.sm_90.ptx", "bulk_copy_cluster.sm_120.ptx"]
SYNC_LINES = ("barrier.cluster.arrive.release.aligned;", "barrier.cluster.wait.acquire.aligned;")


def _module(body: str, cluster: str = ".reqnctapercluster 2, 2, 1") -> str:
    return f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
.explicitcluster
{cluster}
{{
    .reg .pred %p<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 buf[64];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r11, %ctaid.x;
    mov.u32 %r12, %ctaid.y;
    mov.u32 %r13, %nctaid.x;
    mad.lo.u32 %r14, %r12, %r13, %r11;
    mad.lo.u32 %r14, %r14, 16, %r1;
    mul.wide.u32 %rd2, %r14, 4;
    add.s64 %rd3, %rd1, %rd2;
    shl.b32 %r6, %r1, 2;
    mov.u32 %r7, buf;
    add.u32 %r8, %r7, %r6;
{body}
    ret;
}}
"""


def _run(
    body: str, randomize: bool = False, seed: int = 0, grid: tuple[int, int, int] = (4, 2, 1)
) -> np.ndarray:
    out = np.zeros(grid[0] * grid[1] * 16, np.uint32)
    got = interpret(parse(_module(body)), "k", M, (grid, 16, 0), {"out": out},
                    randomize_order=randomize, seed=seed, interleave=randomize)  # fmt: skip
    return got.outputs["out"].reshape(grid[1], grid[0], 16)


def _rank(x: int, y: int) -> int:
    return x % 2 + 2 * (y % 2)  # %cluster_ctarank: x fastest within a 2x2 cluster


@pytest.mark.parametrize(
    ("register", "want"),
    [
        ("%cluster_ctarank", _rank),
        ("%cluster_nctarank", lambda x, y: 4),
        ("%clusterid.x", lambda x, y: x // 2),
        ("%clusterid.y", lambda x, y: y // 2),
        ("%nclusterid.x", lambda x, y: 2),
        ("%nclusterid.y", lambda x, y: 1),
        ("%cluster_ctaid.x", lambda x, y: x % 2),
        ("%cluster_ctaid.y", lambda x, y: y % 2),
        ("%cluster_nctaid.x", lambda x, y: 2),
        ("%cluster_nctaid.z", lambda x, y: 1),
    ],
)
def test_the_cluster_registers_of_2x2_clusters(register: str, want: object) -> None:
    got = _run(f"    mov.u32 %r2, {register};\n    st.global.u32 [%rd3], %r2;")
    assert callable(want)
    for y in range(2):
        for x in range(4):
            assert (got[y, x] == want(x, y)).all(), (register, x, y, got[y, x, 0])


RING = """
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %cluster_nctarank;
    add.u32 %r4, %r2, 1;
    rem.u32 %r4, %r4, %r3;
    mad.lo.u32 %r5, %r2, 100, %r1;
STORE
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ld.shared.u32 %r10, [%r8];
    st.global.u32 [%rd3], %r10;
"""
# Each thread writes rank * 100 + tid into the next rank's buf[tid], through the cluster window.
STORES = {
    "shared::cluster": "    mapa.shared::cluster.u32 %r9, %r8, %r4;\n    st.shared::cluster.u32 [%r9], %r5;",
    "generic": "    cvt.u64.u32 %rd4, %r8;\n    cvta.shared.u64 %rd5, %rd4;\n"
    "    mapa.u64 %rd6, %rd5, %r4;\n    st.u32 [%rd6], %r5;",
}


@pytest.mark.parametrize("form", list(STORES))
@pytest.mark.parametrize(("randomize", "seed"), [(False, 0), (True, 0), (True, 1), (True, 2)])
def test_a_ring_through_the_cluster_window(form: str, randomize: bool, seed: int) -> None:
    got = _run(RING.replace("STORE", STORES[form]), randomize, seed)
    for y in range(2):
        for x in range(4):
            previous = (_rank(x, y) - 1) % 4
            assert got[y, x].tolist() == [previous * 100 + t for t in range(16)], (x, y)


def test_mapa_to_a_rank_outside_the_cluster_is_reported() -> None:
    body = "    mov.u32 %r4, 4;\n    mapa.shared::cluster.u32 %r9, %r8, %r4;"
    with pytest.raises(MemoryAccessError, match=r"mapa to rank 4, outside the cluster of 4 CTA\(s\)"):
        _run(body)


# buf[16] of rank 1: one past the end of its 64 bytes.
OFF_WINDOW = """
    add.u32 %r8, %r8, 64;
    mapa.shared::cluster.u32 %r9, %r8, 1;
    ld.shared::cluster.u32 %r2, [%r9];
"""


def test_an_access_outside_the_target_ctas_window_is_reported() -> None:
    body = OFF_WINDOW
    where = "outside shared memory .* in the cluster's CTA of rank 1"
    with pytest.raises(MemoryAccessError, match=where):
        _run(body)


def test_a_grid_that_is_no_whole_number_of_clusters_is_refused() -> None:
    with pytest.raises(LaunchError, match="not a whole number of clusters"):
        _run("", grid=(3, 2, 1))


def test_exited_ctas_do_not_hold_the_cluster_barrier() -> None:
    # PTX ISA, barrier.cluster: the wait is for every non-exited thread of the cluster.
    body = """
    mov.u32 %r2, %cluster_ctarank;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 exit;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    st.global.u32 [%rd3], 7;
"""
    for randomize in (False, True):
        got = _run(body, randomize)
        assert (got[0::2, 0::2] == 7).all() and (got[1, :] == 0).all() and (got[:, 1::2] == 0).all()


def test_lockstep_names_a_thread_of_the_cluster_on_another_path() -> None:
    # rank 0 waits inside a branch that the others take later: one group cannot run both paths.
    body = """
    mov.u32 %r2, %cluster_ctarank;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra LATER;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    bra.uni DONE;
LATER:
    barrier.cluster.arrive;
    barrier.cluster.wait;
DONE:
    st.global.u32 [%rd3], 1;
"""
    with pytest.raises(ModelLimitError, match="of its cluster, on another path, has not arrived"):
        _run(body)
    assert (_run(body, randomize=True) == 1).all()  # the randomized order lets them meet


# --- nvcc's cluster_exchange ----------------------------------------------------------------------
def _exchange(build: str, text: str | None = None, randomize: bool = False, seed: int = 0) -> np.ndarray:
    module = parse(text or (CORPUS / build).read_text(), build)
    out = np.zeros(6, np.int32)
    got = interpret(module, "cluster_exchange", M, (6, 64, 0), {"cluster_exchange_param_0": out},
                    randomize_order=randomize, seed=seed, interleave=randomize)  # fmt: skip
    return got.outputs["cluster_exchange_param_0"]


def _without_sync(text: str, which: int) -> str:
    """The PTX with the ``which``-th inlined cluster_sync (arrive and wait lines) removed."""
    lines = text.splitlines(keepends=True)
    at = [k for k, ln in enumerate(lines) if ln.strip() in SYNC_LINES]
    assert len(at) == 4
    gone = set(at[2 * which : 2 * which + 2])
    return "".join(ln for k, ln in enumerate(lines) if k not in gone)


def _partner_values(blocks: int) -> list[int]:
    return [(b ^ 1) * 1000 + (b ^ 1) % 2 for b in range(blocks)]


@pytest.mark.parametrize("build", BUILDS)
def test_cluster_exchange_reads_the_partners_value_in_any_order(build: str) -> None:
    assert unmodeled(parse((CORPUS / build).read_text(), build), M) == []
    for randomize, seed in [(False, 0), *((True, s) for s in range(6))]:
        assert _exchange(build, None, randomize, seed).tolist() == _partner_values(6), seed


@pytest.mark.parametrize("build", BUILDS)
def test_a_read_of_the_partner_without_the_cluster_barrier_is_caught(build: str) -> None:
    # Planted bug: the first cluster_sync removed, so a CTA may read its partner's `value` before
    # the partner stored it. Lockstep runs every store first; randomized orders show the race.
    racy = _without_sync((CORPUS / build).read_text(), 0)
    outputs = {tuple(_exchange(build, racy, True, seed).tolist()) for seed in range(8)}
    assert len(outputs) > 1 and outputs - {tuple(_partner_values(6))}
    bounds, race, barrier = _check(racy)
    assert (bounds.verdict, barrier.verdict) == ("proved", "proved"), (bounds, barrier)
    assert race.verdict == "refuted" and race.witness is not None, race
    assert race.replay is not None and race.replay.status == "confirmed", race.replay
    # thread 0 of one CTA stores `value`, thread 0 of its partner loads it through the window
    (a, b), lines = race.witness.threads, race.witness.instructions
    assert a.block != b.block and a.thread == b.thread == (0, 0, 0), race.witness
    assert lines[0].startswith("st.shared") and lines[1] == "ld.shared::cluster.u32", race.witness


@pytest.mark.parametrize("build", BUILDS)
def test_a_partner_that_exits_before_the_read_is_caught(build: str) -> None:
    # Planted bug: the second cluster_sync removed, so a CTA may exit (its shared memory gone)
    # before its partner reads it.
    early = _without_sync((CORPUS / build).read_text(), 1)
    caught = 0
    for seed in range(8):
        try:
            _exchange(build, early, True, seed)
        except MemoryAccessError as e:
            assert "has exited" in str(e)
            caught += 1
    assert caught


def _check(text: str) -> list[Verdict]:
    return check(parse(text), "cluster_exchange", M, (2, 64, 0), {"cluster_exchange_param_0": 8}, {})


@pytest.mark.parametrize("build", BUILDS)
def test_the_checker_proves_cluster_exchange(build: str) -> None:
    # The partner's value is read through the cluster's window after a cluster barrier: race free
    # across the two CTAs, the mapa rank (rank ^ 1) inside the cluster.
    verdicts = _check((CORPUS / build).read_text())
    assert [(v.property, v.verdict) for v in verdicts] == [
        ("bounds", "proved"), ("race", "proved"), ("barrier", "proved"),
    ], verdicts  # fmt: skip


ONE_CTA = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b8 buf[256];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, buf;
    add.u32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
SYNC
    add.u32 %r5, %r1, 1;
    and.b32 %r5, %r5, 63;
    shl.b32 %r6, %r5, 2;
    add.u32 %r7, %r3, %r6;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r8;
    ret;
}
"""


@pytest.mark.parametrize(
    ("sync", "verdict"),
    [("    barrier.cluster.arrive;\n    barrier.cluster.wait;", "proved"), ("", "refuted")],
)
def test_a_cluster_of_one_cta_stays_checked(sync: str, verdict: str) -> None:
    # Without a cluster attribute the cluster barrier is the CTA's: the checker still decides.
    (v,) = check(
        parse(ONE_CTA.replace("SYNC", sync)), "k", M, (1, 64, 0), {"out": 256}, {}, properties=("race",)
    )
    assert v.verdict == verdict, v.reason


# --- a spec's [launch] cluster --------------------------------------------------------------------
SPEC = """
[kernel]
ptx = "ring.ptx"
entry = "k"

[launch]
grid = [4, 2]
block = [16]
CLUSTER

[[args]]
name = "out"
role = "out"
dtype = "u32"
shape = [128]
init = "zeros"
"""


@pytest.mark.parametrize("cluster", ["cluster = [2, 2]", ""])
def test_a_spec_gives_the_cluster_of_an_explicitcluster_kernel(tmp_path: Path, cluster: str) -> None:
    # .explicitcluster alone: the launch names the shape, here through the spec.
    (tmp_path / "ring.ptx").write_text(_module(RING.replace("STORE", STORES["shared::cluster"]), ""))
    (tmp_path / "ring.toml").write_text(SPEC.replace("CLUSTER", cluster))
    spec = load_spec(tmp_path / "ring.toml")
    if not cluster:
        assert spec.launch.cluster is None
        with pytest.raises(ModelLimitError, match="must give the cluster dimensions"):
            run_model(bind(spec))
        return
    assert spec.launch.cluster == (2, 2, 1)
    assert "cluster = [2, 2, 1]" in spec_toml(spec, "ring.ptx")
    got = run_model(bind(spec)).outputs["out"].numpy().reshape(2, 4, 16)
    for y in range(2):
        for x in range(4):
            assert got[y, x].tolist() == [(_rank(x, y) - 1) % 4 * 100 + t for t in range(16)]
    # and the model stage's checks follow the spec's clusters too
    kernel = bind(spec)
    verdicts = check_spec(kernel, prepare(kernel.spec), deadline_s=60)
    assert {v.property: v.verdict for v in verdicts} == {
        "bounds": "proved",
        "race": "proved",
        "barrier": "proved",
    }


def test_a_spec_cluster_that_contradicts_the_kernels_is_refused() -> None:
    module = parse((CORPUS / BUILDS[0]).read_text())
    with pytest.raises(LaunchError, match=r"clusters of \(4, 1, 1\) CTAs, but its .reqnctapercluster"):
        out = {"cluster_exchange_param_0": np.zeros(4, np.int32)}
        interpret(module, "cluster_exchange", M, (4, 64, 0), out, cluster=(4, 1, 1))


def test_a_bulk_copy_into_another_ctas_shared_memory_is_a_model_limit() -> None:
    # Its completion would be the other CTA's mbarrier's, which the model does not follow yet.
    body = """
    .shared .align 8 .b64 bar;
    mov.u32 %r2, bar;
    mbarrier.init.shared::cta.b64 [%r2], 1;
    mov.u32 %r3, buf;
    mapa.shared::cluster.u32 %r4, %r3, 1;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd1], 16, [%r2];
"""
    with pytest.raises(ModelLimitError, match="bulk copy into another CTA's shared memory is not modeled"):
        _run(body)


def test_the_any_launch_check_says_why_too() -> None:
    module = parse((CORPUS / BUILDS[0]).read_text())
    verdicts = check_any_launch(
        module, "cluster_exchange", M, (2, 64, 0), {"cluster_exchange_param_0": 8}, {}
    )
    assert {v.verdict for v in verdicts} == {"unknown"}
    assert all("races and bounds across the CTAs of a cluster are not encoded" in v.reason for v in verdicts)


SPLIT = """
    barrier.cluster.arrive;
    st.shared.u32 [%r4], %r1;
    barrier.cluster.wait;
"""


@pytest.mark.parametrize(
    ("sync", "reason"),
    [
        (SPLIT, "is apart from its wait"),
        ("    barrier.cluster.arrive.relaxed;\n    barrier.cluster.wait;", "orders no memory access"),
    ],
)
def test_a_cluster_barrier_the_encoding_would_overorder_is_unknown(sync: str, reason: str) -> None:
    # A thread's store between its arrive and wait is unordered with the other threads' reads after
    # theirs (PTX ISA, barrier.cluster); .relaxed orders nothing. A CTA barrier at the wait would
    # prove the race free.
    text = (
        ONE_CTA.replace("    st.shared.u32 [%r4], %r1;\nSYNC", sync)
        if sync is SPLIT
        else ONE_CTA.replace("SYNC", sync)
    )
    (v,) = check(parse(text), "k", M, (1, 64, 0), {"out": 256}, {}, properties=("race",))
    assert v.verdict == "unknown" and reason in v.reason, v.reason


def test_a_store_between_arrive_and_wait_races_in_the_interleaved_order() -> None:
    # The neighbour's address is ready before the barrier, so a thread loads right after its wait:
    # in some orders before the last thread to arrive has stored.
    text = ONE_CTA.replace("    st.shared.u32 [%r4], %r1;\nSYNC", "")
    load = "    ld.shared.u32 %r8, [%r7];\n"
    text = text.replace(load, SPLIT + load)
    want = tuple((t + 1) % 64 for t in range(64))
    outputs = set()
    for seed in range(16):
        out = {"out": np.zeros(64, np.uint32)}
        got = interpret(
            parse(text), "k", M, (1, 64, 0), out, randomize_order=True, interleave=True, seed=seed
        )
        outputs.add(tuple(got.outputs["out"].tolist()))
    assert want in outputs and len(outputs) > 1


@pytest.mark.parametrize("randomize", [False, True])
def test_a_cluster_barrier_counts_once_per_cta(randomize: bool) -> None:
    # As a CTA barrier counts: cluster_exchange passes two cluster barriers in each of 6 CTAs.
    module = parse((CORPUS / BUILDS[0]).read_text())
    out = {"cluster_exchange_param_0": np.zeros(6, np.int32)}
    got = interpret(module, "cluster_exchange", M, (6, 64, 0), out, randomize_order=randomize)
    assert got.stats.barriers == 12
    assert got.stats.thread_instructions["barrier.cluster.wait.acquire.aligned"] == 2 * 6 * 64
