"""Fuzzing the spec loader and the expression language: every input loads, or fails with the
project's own error naming the field; no traceback, no hang, no code run."""

from __future__ import annotations

import random
import re
import tomllib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from karyamorph.isa.errors import PtxError
from karyamorph.kernel.expressions import FUNCTIONS, ExpressionError, evaluate
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import SpecError

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "datasets" / "kernels").glob("*.toml")) + sorted(
    (ROOT / "tests" / "model" / "kernels").glob("*.toml")
)

_VALUES = [
    "0", "-1", "2147483648", "4294967296", "1099511627776", "2**40", '"n**n"', '"1/0"', '"ceildiv(n,"',
    '"__import__(\'os\').system(\'true\')"', "[1]", "[]", "[2048]", "[1, 1, 65]", "true", "1.5", '"x"',
    "{}", '"min"', "[[1]]", "-0.0", "nan", "inf", '"n"', '"E"', '"pi"', "5", '"f33"', '"randint(5, 1)"',
]  # fmt: skip
_LINE_VALUE = re.compile(r"^(\s*[\w.]+\s*=\s*)(.+)$", re.M)


def _mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        lines = list(_LINE_VALUE.finditer(text))
        what = rng.random()
        if lines and what < 0.6:
            m = rng.choice(lines)
            text = text[: m.start(2)] + rng.choice(_VALUES) + text[m.end(2) :]
        elif lines and what < 0.75:
            m = rng.choice(lines)
            text = text[: m.start()] + text[m.end() :]
        elif what < 0.9:
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(["[", "]", "=", '"', "\n[[args]]\n", "\n[sizes]\n", "#"]) + text[i:]
        else:
            text = text[: rng.randrange(len(text) + 1)]
    return text


def write_mutant(folder: Path, rng: random.Random) -> tuple[Path, Path]:
    """A mutant of a randomly chosen shipped spec in ``folder``, beside the PTX (or CUDA) files it
    names: (the original, the mutant)."""
    source = rng.choice(SPECS)
    folder.mkdir()
    for kernel in [*source.parent.glob("*.ptx"), *source.parent.glob("*.cu")]:
        if kernel.name in source.read_text():
            (folder / kernel.name).write_bytes(kernel.read_bytes())
    path = folder / source.name
    path.write_text(_mutate(source.read_text(), rng))
    return source, path


def test_mutated_specs_load_or_fail_cleanly(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    outcomes = {"loaded": 0, "rejected": 0}
    for k in range(600):
        source, path = write_mutant(tmp_path / f"m{k}", rng)
        try:
            spec = load_spec(path)
        except (SpecError, PtxError) as err:
            assert str(err).startswith(source.name) or source.name in str(err) or "ptx" in str(err), err
            outcomes["rejected"] += 1
            continue
        outcomes["loaded"] += 1
        # What loads is within the launch limits (checked when it loads).
        doc = tomllib.loads(path.read_text())
        assert spec.entry == doc["kernel"]["entry"]
    assert outcomes["loaded"] > 0 and outcomes["rejected"] > 100


_NAMES = st.sampled_from(["n", "m", "k", "E", "pi", "N", "min", "x"])
_LEAF = st.one_of(
    st.integers(-(10**6), 10**6).map(str), _NAMES, st.sampled_from(["1.5", "0", "2**64", "1e3"])
)
_CALLEES = st.sampled_from([*FUNCTIONS, "eval", "open", "__import__"])


def _expressions() -> st.SearchStrategy[str]:
    return st.recursive(
        _LEAF,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(_CALLEES, st.lists(inner, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
            inner.map(lambda e: f"-{e}"),
            inner.map(lambda e: f"{e}.__class__"),
        ),
        max_leaves=12,
    )


@settings(max_examples=400, deadline=None)
@given(_expressions(), st.booleans())
def test_expressions_evaluate_or_raise_their_own_error(text: str, integer: bool) -> None:
    sizes = {"n": 1000, "m": 7, "k": 3, "E": 5, "pi": 2, "N": 9}
    try:
        value = evaluate(text, sizes, integer=integer)
    except ExpressionError:
        return
    assert isinstance(value, int | float)
    assert abs(value) < 2**128
