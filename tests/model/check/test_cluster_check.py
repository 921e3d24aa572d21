"""Thread-block clusters in the two-thread encoding: accesses of the cluster's shared window reach
the CTA their rank names, threads of two CTAs of a cluster are ordered by the cluster barriers
between them, and mapa's rank is held inside the cluster. Each planted bug is refuted with a
witness the interpreter confirms; nvcc's cluster_exchange is in tests/model/interp/test_clusters.py.
"""

from __future__ import annotations

import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.interp.test_clusters import OFF_WINDOW, RING, STORES, _module

M = ptx_machine("sm_90a")
GRID, THREADS = (4, 2, 1), 16  # clusters of 2x2 CTAs (the module's .reqnctapercluster)
SYNC = "    barrier.cluster.arrive;\n    barrier.cluster.wait;\n"


def _check(body: str, cluster: str = ".reqnctapercluster 2, 2, 1") -> dict[str, Verdict]:
    text = _module(body, cluster)
    verdicts = check(parse(text), "k", M, (GRID, THREADS, 0), {"out": 4 * 8 * THREADS}, {})
    return {v.property: v for v in verdicts}


def _confirmed(v: Verdict) -> None:
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


@pytest.mark.parametrize("form", list(STORES))
def test_a_ring_through_the_cluster_window_is_proved(form: str) -> None:
    # Each thread stores into the next rank's buf[tid]; after the cluster barrier it reads its own.
    v = _check(RING.replace("STORE", STORES[form]))
    assert {p: x.verdict for p, x in v.items()} == {
        "bounds": "proved",
        "race": "proved",
        "barrier": "proved",
    }, v


def test_two_ctas_storing_into_one_ctas_buffer_race() -> None:
    # Every CTA of a cluster stores rank * 100 + tid into rank 0's buf[tid]: a write-write race
    # between two CTAs, of different values.
    body = (
        """
    mov.u32 %r2, %cluster_ctarank;
    mad.lo.u32 %r5, %r2, 100, %r1;
    mapa.shared::cluster.u32 %r9, %r8, 0;
    st.shared::cluster.u32 [%r9], %r5;
"""
        + SYNC
        + """    ld.shared.u32 %r10, [%r8];
    st.global.u32 [%rd3], %r10;
"""
    )
    race = _check(body)["race"]
    _confirmed(race)
    assert race.witness is not None
    a, b = race.witness.threads
    assert a.block != b.block and a.thread == b.thread, race.witness
    assert race.witness.instructions == ("st.shared::cluster.u32", "st.shared::cluster.u32")


# Each CTA stores its own buf[tid], then reads the next rank's with no barrier between.
READ_EARLY = (
    """
    mov.u32 %r2, %cluster_ctarank;
    st.shared.u32 [%r8], %r2;
    mov.u32 %r3, %cluster_nctarank;
    add.u32 %r4, %r2, 1;
    rem.u32 %r4, %r4, %r3;
    mapa.shared::cluster.u32 %r9, %r8, %r4;
    ld.shared::cluster.u32 %r10, [%r9];
    st.global.u32 [%rd3], %r10;
"""
    + SYNC
)


def test_a_store_read_by_the_next_rank_before_the_cluster_barrier_races() -> None:
    v = _check(READ_EARLY)
    _confirmed(v["race"])
    assert v["bounds"].verdict == "proved", v["bounds"]
    fixed = _check(READ_EARLY.replace("    mov.u32 %r3,", SYNC + "    mov.u32 %r3,", 1))
    assert fixed["race"].verdict == "proved", fixed["race"]


def test_a_rank_outside_the_cluster_is_refuted_at_the_mapa() -> None:
    body = """
    mov.u32 %r2, %cluster_ctarank;
    add.u32 %r4, %r2, 1;
    mapa.shared::cluster.u32 %r9, %r8, %r4;
    ld.shared::cluster.u32 %r10, [%r9];
    st.global.u32 [%rd3], %r10;
"""
    bounds = _check(body)["bounds"]
    _confirmed(bounds)
    assert bounds.witness is not None and bounds.witness.instructions == ("mapa.shared::cluster.u32",)
    assert bounds.witness.space == "cluster" and bounds.witness.address == 4, bounds.witness
    assert "cluster rank 4" in str(bounds.witness)
    # rank + 1 mod the cluster's size stays inside
    inside = body.replace("    mapa", "    and.b32 %r4, %r4, 3;\n    mapa", 1)
    assert _check(inside)["bounds"].verdict == "proved"


def test_global_memory_is_ordered_by_the_cluster_barrier_across_ctas() -> None:
    # Rank 0 writes out[cluster's first slot + tid]; after the cluster barrier the other ranks read
    # it. Without the barrier the read races with the write.
    body = """
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %clusterid.x;
    mad.lo.u32 %r4, %r3, 16, %r1;
    mul.wide.u32 %rd4, %r4, 4;
    add.s64 %rd5, %rd1, %rd4;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 st.global.u32 [%rd5], %r1;
SYNC    @!%p1 ld.global.u32 %r10, [%rd5];
    @!%p1 st.shared.u32 [%r8], %r10;
"""
    assert _check(body.replace("SYNC", SYNC))["race"].verdict == "proved"
    _confirmed(_check(body.replace("SYNC", ""))["race"])


def test_an_explicit_cluster_is_checked_in_the_launchs_shape() -> None:
    # .explicitcluster alone: the shape is the launch's; without one every verdict is unknown.
    text = _module(RING.replace("STORE", STORES["shared::cluster"]), "")
    args = ("k", M, (GRID, THREADS, 0), {"out": 4 * 8 * THREADS}, {})
    for v in check(parse(text), *args):
        assert v.verdict == "unknown" and "launch-given" in v.reason, v
    given = {v.property: v.verdict for v in check(parse(text), *args, cluster=(2, 2, 1))}
    assert given == {"bounds": "proved", "race": "proved", "barrier": "proved"}, given
    # In clusters of 4x1 the next rank's CTA is another one, and the ring is still race free.
    assert {v.verdict for v in check(parse(text), *args, cluster=(4, 1, 1))} == {"proved"}
    (race,) = check(parse(_module(READ_EARLY, "")), *args, properties=("race",), cluster=(2, 2, 1))
    _confirmed(race)


def test_an_offset_past_the_partners_buffer_is_refuted_at_the_access() -> None:
    bounds = _check(OFF_WINDOW + "    st.global.u32 [%rd3], %r2;\n")["bounds"]
    _confirmed(bounds)
    assert bounds.witness is not None and bounds.witness.instructions == ("ld.shared::cluster.u32",)
    assert (bounds.witness.space, bounds.witness.buffer, bounds.witness.address) == ("shared", "buf", 64)
    assert bounds.replay is not None and "in the cluster's CTA of rank 1" in bounds.replay.detail
