"""Deliberate slips in Hopper's asynchronous machinery (mbarrier, bulk copies, proxy fences,
cluster barriers, mapa), one or more for each declaration, for
``tests/model/check/test_semantic_slips.py``."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

MBAR, BULK, CLUSTER = "ptx.mbarrier", "ptx.bulk_copy", "ptx.cluster"
WAITS = ("mbarrier.test_wait", "mbarrier.test_wait.parity", "mbarrier.try_wait", "mbarrier.try_wait.parity")
TX = ("mbarrier.arrive.expect_tx", "mbarrier.expect_tx", "mbarrier.complete_tx")

HOPPER_SLIPS: tuple[Slip, ...] = (
    Slip(
        "mbarrier.init expects one arrival more",
        MBAR,
        "_init",
        ("mbarrier.init",),
        "pack(d, d.const(0, 64), count, count, d.const(0, 64))",
        "pack(d, d.const(0, 64), d.add(count, d.const(1, 64), 64), count, d.const(0, 64))",
    ),
    Slip(
        "a completed mbarrier phase keeps its parity",
        MBAR,
        "update",
        ("mbarrier.arrive", *TX),
        "flipped = d.xor(phase, d.const(1, 64), 64)",
        "flipped = phase",
    ),
    Slip(
        "an mbarrier phase completes with transactions pending",
        MBAR,
        "update",
        TX,
        "done = d.band(d.eq(pending, zero, 64), d.eq(tx, zero, 64))",
        "done = d.eq(pending, zero, 64)",
    ),
    Slip(
        "mbarrier.arrive ignores its count",
        MBAR,
        "_arrive",
        ("mbarrier.arrive",),
        'arrivals = _u64(x, "count") if x.has("count") else d.const(1, 64)',
        "arrivals = d.const(1, 64)",
    ),
    Slip(
        "mbarrier waits answer for the other phase",
        MBAR,
        "_completed",
        WAITS,
        "return d.bnot(d.eq(current, waited, 64))",
        "return d.eq(current, waited, 64)",
    ),
    Slip(
        "mbarrier.pending_count reads the expected count",
        MBAR,
        "_pending_count",
        ("mbarrier.pending_count",),
        'field(d, x.read("state", U64), PENDING)',
        'field(d, x.read("state", U64), EXPECTED)',
    ),
    Slip(
        "mbarrier.inval leaves the object live",
        MBAR,
        "_inval",
        ("mbarrier.inval",),
        'addr, bits = _track(x, "inval")',
        'addr, bits = _track(x, "wait")',
    ),
    Slip(
        "mbarrier.complete_tx raises the tx-count",
        MBAR,
        "complete_tx",
        ("mbarrier.complete_tx",),
        "d.neg(d.zext(nbytes, 32, 64), 64)",
        "d.zext(nbytes, 32, 64)",
    ),
    Slip(
        "mbarrier.arrive.expect_tx expects no transactions",
        MBAR,
        "_arrive_expect_tx",
        ("mbarrier.arrive.expect_tx",),
        'old = change(x, addr, bits, one, _u64(x, "tx"))',
        "old = change(x, addr, bits, one, d.const(0, 64))",
    ),
    Slip(
        "mbarrier.expect_tx expects no transactions",
        MBAR,
        "_expect_tx",
        ("mbarrier.expect_tx",),
        'change(x, addr, bits, x.D.const(0, 64), _u64(x, "tx"))',
        "change(x, addr, bits, x.D.const(0, 64), x.D.const(0, 64))",
    ),
    Slip(
        "a bulk copy completes no transactions",
        BULK,
        "_load",
        ("cp.async.bulk",),
        "complete_tx(x, mbar, bits, size)",
        "None",
    ),
    Slip(
        "a bulk copy copies 16 bytes whatever its size",
        BULK,
        "_copy",
        ("cp.async.bulk",),
        'size = x.read("size", U32)',
        "size = x.D.const(16, 32)",
    ),
    Slip(
        "cp.async.bulk.commit_group closes no group",
        BULK,
        "_commit",
        ("cp.async.bulk.commit_group",),
        '_hook(x, "bulk_group")("commit", 0)',
        "None",
    ),
    Slip(
        "cp.async.bulk.wait_group N leaves N + 1 groups pending",
        BULK,
        "_wait",
        ("cp.async.bulk.wait_group",),
        '_hook(x, "bulk_group")("wait", x.imm("n"))',
        '_hook(x, "bulk_group")("wait", x.imm("n") + 1)',
    ),
    Slip(
        "fence.proxy.async is not recorded",
        BULK,
        "_fence",
        ("fence.proxy.async",),
        'hook(x.mod("space") or "all")',
        "None",
    ),
    Slip(
        "barrier.cluster.arrive does not arrive",
        CLUSTER,
        "_arrive",
        ("barrier.cluster.arrive",),
        'hook("arrive")',
        "None",
    ),
    Slip(
        "barrier.cluster.wait does not wait",
        CLUSTER,
        "_wait",
        ("barrier.cluster.wait",),
        'hook is None or not hook("wait")',
        "hook is None",
    ),
    Slip(
        "mapa keeps the executing CTA",
        CLUSTER,
        "_mapa",
        ("mapa",),
        "d.or_(field, offset, t.bits)",
        "offset",
    ),
)
