"""The instruction catalog: lookup by longest prefix, coverage, and a well-formed table."""

from __future__ import annotations

import pytest

from karyamorph.isa.catalog import CATALOG, FIRST_WORDS, lookup
from karyamorph.isa.requirement import Requirement
from karyamorph.isa.versions import PTX_RELEASES, min_ptx_for_target, parse_target, parse_version

# ----------------------------------------------------------------------------------------------
# Lookup


@pytest.mark.parametrize(("opcode", "modifiers", "entry"), [
    ("cp", ("async", "bulk", "tensor", "2d", "shared::cluster", "global"), "cp.async.bulk.tensor"),
    ("cp", ("async", "bulk", "shared::cluster", "global"), "cp.async.bulk"),
    ("cp", ("async", "ca", "shared", "global"), "cp.async"),
    ("cp", ("async", "wait_group"), "cp.async.wait_group"),
    ("cp.async.bulk", (), "cp.async.bulk"),
    ("cp.async", ("bulk", "tensor"), "cp.async.bulk.tensor"),
    ("ld", ("global", "nc", "v4", "f32"), "ld.global.nc"),
    ("ld", ("global", "f32"), "ld"),
    ("bar", ("warp", "sync"), "bar.warp"),
    ("bar", ("sync",), "bar"),
    ("fence", ("proxy", "async", "shared::cta"), "fence.proxy.async"),
    ("fence", ("acq_rel", "gpu"), "fence"),
    ("mbarrier", ("try_wait", "parity", "shared::cta", "b64"), "mbarrier.try_wait"),
    ("mbarrier", ("arrive", "expect_tx", "shared", "b64"), "mbarrier.arrive.expect_tx"),
    ("mbarrier", ("arrive", "shared", "b64"), "mbarrier"),
    ("red", ("async", "relaxed", "cluster"), "red.async"),
    ("red", ("global", "add", "u32"), "red"),
    ("cvt", ("pack", "sat", "u8", "s32", "b32"), "cvt.pack"),
    ("tcgen05", ("mma", "cta_group::1", "kind::f16"), "tcgen05"),
])  # fmt: skip
def test_lookup_takes_the_longest_prefix(opcode: str, modifiers: tuple[str, ...], entry: str) -> None:
    found = lookup(opcode, modifiers)
    assert found is not None
    assert found.opcode == entry


def test_lookup_misses() -> None:
    assert lookup("frobnicate") is None
    assert lookup("cp", ("foo",)) is None
    assert lookup("cp") is None


def test_first_words_include_heads_that_are_no_entry_of_their_own() -> None:
    # "cp" starts cp.async... but names no entry: the word is known, the opcode is not
    assert {"cp", "ld", "mbarrier", "tcgen05"} <= FIRST_WORDS
    assert lookup("cp") is None and "cp" in FIRST_WORDS
    assert "async" not in FIRST_WORDS and "cp.async" not in FIRST_WORDS
    assert "frobnicate" not in FIRST_WORDS


REQUIRED_OPCODES = [
    "mov",
    "ld",
    "st",
    "ldu",
    "cvta",
    "cvt",
    "add",
    "sub",
    "mul",
    "mad",
    "mad24",
    "mul24",
    "fma",
    "div",
    "rem",
    "neg",
    "abs",
    "min",
    "max",
    "and",
    "or",
    "xor",
    "not",
    "shl",
    "shr",
    "lop3",
    "popc",
    "clz",
    "brev",
    "bfe",
    "bfi",
    "bfind",
    "prmt",
    "setp",
    "selp",
    "set",
    "slct",
    "bra",
    "ret",
    "exit",
    "call",
    "bar",
    "barrier",
    "bar.warp",
    "membar",
    "fence",
    "shfl",
    "vote",
    "match",
    "redux",
    "atom",
    "red",
    "rcp",
    "sqrt",
    "rsqrt",
    "ex2",
    "lg2",
    "sin",
    "cos",
    "tanh",
    "testp",
    "copysign",
    "cp.async",
    "cp.async.commit_group",
    "cp.async.wait_group",
    "cp.async.wait_all",
    "cp.async.bulk",
    "cp.async.bulk.tensor",
    "mbarrier",
    "ldmatrix",
    "stmatrix",
    "mma",
    "wmma",
    "wgmma",
    "tcgen05",
    "elect",
    "griddepcontrol",
    "setmaxnreg",
    "getctarank",
    "mapa",
    "prefetch",
    "applypriority",
    "discard",
    "createpolicy",
    "nanosleep",
    "trap",
    "activemask",
    "dp4a",
    "dp2a",
    "isspacep",
    "cvt.pack",
    "fns",
    "multimem",
    "st.async",
    "red.async",
    "ld.global.nc",
    "tex",
    "suld",
    "sust",
]


@pytest.mark.parametrize("opcode", REQUIRED_OPCODES)
def test_catalog_covers_the_opcode(opcode: str) -> None:
    entry = CATALOG.get(opcode)
    assert entry is not None
    assert entry.family and len(entry.family) < 80
    assert lookup(opcode) is entry


def test_every_requirement_in_the_table_is_well_formed() -> None:
    known = {p for p, _ in PTX_RELEASES}
    for entry in CATALOG.values():
        reqs = [(entry.min_target, entry.min_ptx), *entry.also]
        reqs += [(t, p) for var in entry.variants for t, p in ((var.min_target, var.min_ptx), *var.also)]
        for target, ptx in reqs:
            assert ptx in known, (entry.opcode, ptx)
            t = parse_target(target)
            # a feature cannot predate its target (sm_20 is the catalog's "everywhere" floor)
            if t.compute_capability >= (7, 5):
                assert parse_version(ptx) >= parse_version(min_ptx_for_target(target)), entry.opcode
        for var in entry.variants:
            # a variant exists to ask for more than the plain form
            plain = Requirement(var.min_ptx, var.min_target, var.reason, var.also)
            assert not plain.satisfied_by(entry.min_ptx, entry.min_target), (entry.opcode, var)
