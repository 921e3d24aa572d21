"""Basic blocks, edges and immediate post-dominators of kernel bodies."""

from __future__ import annotations

import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.interp.cfg import EXIT, CfgError, build_cfg, flatten


def _cfg(body: str):  # type: ignore[no-untyped-def]
    mod = parse(
        f".version 8.7\n.target sm_80\n.address_size 64\n.entry k()\n{{\n.reg .pred %p<3>;\n"
        f".reg .b32 %r<4>;\n{body}\n}}\n",
        "k.ptx",
    )
    return build_cfg(*flatten(mod.entries[0]))


def test_if_else_reconverges_at_the_join() -> None:
    cfg = _cfg("""
    @%p1 bra ELSE;
    add.u32 %r1, %r1, 1;
    bra JOIN;
ELSE:
    add.u32 %r1, %r1, 2;
JOIN:
    ret;
""")
    assert [(b.start, b.end) for b in cfg.blocks] == [(0, 1), (1, 3), (3, 4), (4, 5)]
    assert cfg.successors[0] == (2, 1) and cfg.successors[1] == (3,)
    assert cfg.ipdom[0] == 3 and cfg.ipdom[3] == EXIT
    assert cfg.reconvergence_pc(0, 5) == 4


def test_loop_exit_post_dominates_the_latch() -> None:
    cfg = _cfg("""
LOOP:
    add.u32 %r1, %r1, 1;
    setp.lt.u32 %p1, %r1, 10;
    @%p1 bra LOOP;
    @%p2 ret;
    add.u32 %r2, %r2, 1;
    ret;
""")
    assert cfg.successors[0] == (0, 1)
    assert cfg.ipdom[0] == 1
    assert cfg.successors[1] == (EXIT, 2)
    assert cfg.ipdom[1] == EXIT


def test_infinite_loop_has_no_post_dominator() -> None:
    cfg = _cfg("L:\n    bra L;")
    assert cfg.ipdom[0] is None and cfg.reconvergence_pc(0, 1) == 1


def test_unknown_label_is_an_error() -> None:
    with pytest.raises(CfgError, match="unknown label 'NOWHERE'"):
        _cfg("bra NOWHERE;")
