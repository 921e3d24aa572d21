"""Fuzzing the parser and printer: any input gives a Module or a PtxError, never another exception,
and whatever parses prints to text that parses to the same Module (a fixed point)."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from karyamorph.isa.errors import PtxError
from karyamorph.isa.parser import parse, parse_bytes
from karyamorph.isa.printer import format_module
from tests.isa.mutate import mutants

HEADER = ".version 8.7\n.target sm_90\n.address_size 64\n"


def _round_trip(module: object, name: str) -> None:
    text = format_module(module)  # type: ignore[arg-type]
    again = parse(text, f"{name} (printed)")
    assert again == module, name
    assert format_module(again) == text, name


def test_seeded_mutants_of_the_corpus() -> None:
    parsed = 0
    for name, data in mutants(2000, seed=20261201):
        try:
            module = parse_bytes(data, name)
        except PtxError as err:
            assert err.line >= 1 and str(err).startswith(name), name
            continue
        parsed += 1
        _round_trip(module, name)
    # The mutations are small: a fair share of mutants still parse, so the fixed point is tried.
    assert parsed > 100


_ALPHABET = string.ascii_letters + string.digits + ' \t\n.,;:{}[]()<>%@!+-_|="/*$'


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=300))
def test_arbitrary_text_never_escapes(text: str) -> None:
    for source in (text, HEADER + text, HEADER + ".visible .entry k()\n{\n" + text + "\n}\n"):
        try:
            module = parse(source, "fuzz.ptx")
        except PtxError:
            continue
        _round_trip(module, "fuzz.ptx")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_escape(data: bytes) -> None:
    try:
        module = parse_bytes(HEADER.encode() + data, "bytes.ptx")
    except PtxError as err:
        assert err.filename == "bytes.ptx"
        return
    _round_trip(module, "bytes.ptx")


_REG = st.from_regex(r"%(r|rd|f|p|rs)[0-9]{1,3}", fullmatch=True)
_IMM = st.one_of(
    st.integers(-(2**31), 2**32 - 1).map(str),
    st.integers(0, 2**32 - 1).map(lambda v: f"0f{v:08X}"),
    st.integers(0, 2**16).map(hex),
)
_ATOM = st.one_of(_REG, _IMM, st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True))
_ADDRESS = st.builds(
    lambda base, off: f"[{base}{'' if off == 0 else f'+{off}' if off > 0 else off}]",
    st.one_of(_REG, st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)),
    st.integers(-4096, 4096),
)
_VECTOR = st.lists(_REG, min_size=2, max_size=4).map(lambda r: "{" + ", ".join(r) + "}")
_OPERAND = st.one_of(_ATOM, _ADDRESS, _VECTOR)
_OPCODE = st.builds(
    lambda op, mods: ".".join([op, *mods]),
    st.sampled_from(["add", "mov", "ld", "st", "mad", "setp", "selp", "cvt", "shfl", "atom", "fma", "bra"]),
    st.lists(st.sampled_from(["u32", "s32", "f32", "b64", "global", "shared", "lo", "rn", "sync", "ne"]),
             max_size=4),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), _REG.filter(lambda r: r.startswith("%p"))),
            _OPCODE,
            st.lists(_OPERAND, max_size=4),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_generated_instructions_reach_a_fixed_point(lines: list[tuple[str | None, str, list[str]]]) -> None:
    body = "\n".join(
        f"{'@' + guard + ' ' if guard else ''}{op} {', '.join(ops)};".replace(" ;", ";")
        for guard, op, ops in lines
    )
    source = HEADER + ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<9>;\n" + body + "\n}\n"
    _round_trip(parse(source, "gen.ptx"), "gen.ptx")
