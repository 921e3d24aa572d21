"""Bounded equivalence: the manifest's pairs are proved or refuted; refutations replay on the
interpreter; float arithmetic through uninterpreted functions is never reported as a proof."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.check.checker import EquivInstance, Side, check_equivalence
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.kernels.manifest import EquivCase, load_manifest

MANIFEST = load_manifest()


def side(spec: KernelSpec) -> Side:
    params = parse(spec.ptx).entry(spec.entry).params
    buffers: dict[str, int] = {}
    scalars: dict[str, int | float] = {}
    for arg, p in zip(spec.args, params, strict=True):
        if arg.is_pointer:
            buffers[p.name] = int(np.prod(bind(spec).shapes[arg.name])) * arg.dtype.bytes
        else:
            scalars[p.name] = bind(spec).scalars[arg.name]
    return Side(bind(spec).launch, buffers, scalars)


def instances(case: EquivCase, values: list[int] | None = None) -> tuple[Any, Any, list[EquivInstance]]:
    sa = load_spec(MANIFEST.kernel(case.a).spec_path)
    sb = load_spec(MANIFEST.kernel(case.b).spec_path)
    names = sorted(sa.sizes)
    if values is None:
        values = list(range(1, case.bound + 1)) if case.equivalent else [case.bound]
    outs = tuple(i for i, a in enumerate(sa.args) if a.role in ("out", "inout"))
    out = []
    for combo in itertools.product(values, repeat=len(names)):
        sizes = dict(zip(names, combo, strict=True))
        out.append(
            EquivInstance(
                tuple(sizes.items()), side(replace(sa, sizes=sizes)), side(replace(sb, sizes=sizes)), outs
            )
        )
    return (parse(sa.ptx), sa.entry), (parse(sb.ptx), sb.entry), out


def case(a: str, b: str) -> EquivCase:
    return next(e for e in MANIFEST.equiv if (e.a, e.b) == (a, b))


@pytest.mark.parametrize(
    "pair",
    [
        ("double_mul", "double_add"),
        ("double_add", "double_shl"),
        ("double_mul", "double_shl"),
        ("halve_shr_u", "halve_div_u"),
    ],
)
def test_integer_pairs_are_proved_for_every_size_up_to_the_bound(pair: tuple[str, str]) -> None:
    c = case(*pair)
    a, b, insts = instances(c)
    v = check_equivalence(a, b, ptx_machine(), insts)
    assert v.verdict == "proved", v
    assert f"{c.bound} instance(s)" in v.reason


def test_reductions_in_different_orders_are_proved() -> None:
    """Tree vs warp shuffles: wrapping addition is associative; every n of one block (the full
    bound of 256 runs in benchmarks/model.py)."""
    a, b, insts = instances(case("reduce_tree", "reduce_shfl"), list(range(1, 129)))
    v = check_equivalence(a, b, ptx_machine(), insts)
    assert v.verdict == "proved", v


def test_transposes_with_different_tile_pitch_are_proved() -> None:
    """A partial tile in w, a partial tile in h, two blocks (the full w, h <= 32 runs in the
    benchmark)."""
    a, b, insts = instances(case("transpose_tiled", "transpose_unpadded"), [5, 17])
    insts = [i for i in insts if dict(i.sizes) == {"w": 17, "h": 5}]
    v = check_equivalence(a, b, ptx_machine(), insts)
    assert v.verdict == "proved", v


def _replay(c: EquivCase, inputs: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Run both kernels of a pair on the interpreter with the witness's sizes and inputs."""
    outs = []
    for name in (c.a, c.b):
        spec = load_spec(MANIFEST.kernel(name).spec_path)
        spec = replace(spec, sizes={k: inputs[k] for k in spec.sizes})
        params = parse(spec.ptx).entry(spec.entry).params
        args: dict[str, Any] = {}
        for arg, p in zip(spec.args, params, strict=True):
            if not arg.is_pointer:
                args[p.name] = bind(spec).scalars[arg.name]
                continue
            arr = np.zeros(bind(spec).shapes[arg.name], np.dtype(f"i{arg.dtype.bytes}")).reshape(-1)
            for key, value in inputs.items():
                m = re.fullmatch(rf"{arg.name}@byte(\d+):u32", key)
                if m:
                    arr.view(np.uint32)[int(m.group(1)) // 4] = value
            args[p.name] = arr.reshape(bind(spec).shapes[arg.name])
        res = interpret(parse(spec.ptx), spec.entry, ptx_machine(), bind(spec).launch, args)
        outs.append(res.outputs[params[1].name])
    return outs[0], outs[1]


@pytest.mark.parametrize("pair", [("halve_shr", "halve_div"), ("double_mul", "double_tidonly")])
def test_non_equivalent_pairs_are_refuted_and_replay(pair: tuple[str, str]) -> None:
    c = case(*pair)
    a, b, insts = instances(c)
    v = check_equivalence(a, b, ptx_machine(), insts)
    assert v.verdict == "refuted" and v.witness is not None, v
    inputs = dict(v.witness.inputs)
    assert inputs["n"] == c.bound
    ya, yb = _replay(c, inputs)
    assert v.witness.address is not None
    k = v.witness.address // 4
    assert ya.reshape(-1)[k] != yb.reshape(-1)[k]


FLOAT = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry twice(.param .u64 x, .param .u64 y)
{{
    .reg .b32 %t;
    .reg .f32 %v;
    .reg .b64 %a, %b, %o;
    ld.param.u64 %a, [x];
    ld.param.u64 %b, [y];
    mov.u32 %t, %tid.x;
    mul.wide.u32 %o, %t, 4;
    add.s64 %a, %a, %o;
    add.s64 %b, %b, %o;
    ld.global.f32 %v, [%a];
    {op};
    st.global.f32 [%b], %v;
    ret;
}}
"""


def test_float_doubling_is_unknown_with_uninterpreted_floats_and_proved_in_ieee() -> None:
    mul = (parse(FLOAT.format(op="mul.rn.f32 %v, %v, 0f40000000")), "twice")
    add = (parse(FLOAT.format(op="add.rn.f32 %v, %v, %v")), "twice")
    s = Side((1, 2, 0), {"x": 8, "y": 8}, {})
    inst = [EquivInstance((("n", 2),), s, s, (1,))]
    v = check_equivalence(mul, add, ptx_machine(), inst)
    assert v.verdict == "unknown" and "uninterpreted" in v.reason and not v.passed
    v = check_equivalence(mul, add, ptx_machine(), inst, floats="ieee")
    assert v.verdict == "proved", v
