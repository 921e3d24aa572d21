"""Spaces: the solver's valid set against a brute-force product filter, stable indices, keys."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from karyamorph.search import Constraint, Parameter, SpaceError, enumerate_space, read_cache
from karyamorph.search.space import Space


def brute_force(params: dict[str, list], predicates: list[str]) -> list[tuple]:
    """The oracle: every product point for which each predicate, evaluated by Python, holds."""
    names = list(params)
    out = []
    for values in itertools.product(*params.values()):
        env = dict(zip(names, values, strict=True))
        if all(eval(p, {"min": min, "max": max}, env) for p in predicates):
            out.append(values)
    return out


def space_values(space: Space) -> list[tuple]:
    return [space.values(i) for i in range(space.size)]


CASES = [
    ({"bx": [16, 32, 64, 128, 256], "by": [1, 2, 4, 8]}, ["bx * by <= 256", "bx * by >= 32"]),
    ({"a": [1, 2, 3, 4, 5, 6], "b": [0, 1], "c": [1, 2, 4]}, ["a % c == 0", "b == 0 or a > 2"]),
    ({"tile": [1, 2, 3, 4], "unroll": [1, 2, 4, 8], "vec": [1, 2, 4]}, ["32 <= tile * unroll * vec <= 64"]),
    ({"kind": ["shfl", "smem"], "n": [32, 64, 128]}, ["kind == 'smem' or n <= 64"]),
    ({"x": [1, 2, 3]}, []),
    ({"x": [1, 2, 3], "y": [5, 6]}, ["x == 7"]),
    ({"x": [1, 2, 3], "y": [5, 6], "z": [0.5, 1.5]}, ["min(x, y) * z < 2", "max(x, z) != 3"]),
]


def build(params: dict[str, list], predicates: list[str]) -> Space:
    parameters = [Parameter(k, tuple(v)) for k, v in params.items()]
    return enumerate_space(parameters, [Constraint(p) for p in predicates])


@pytest.mark.parametrize(("params", "predicates"), CASES)
def test_enumeration_equals_the_product_filter(params: dict[str, list], predicates: list[str]) -> None:
    space = build(params, predicates)
    expected = brute_force(params, predicates)
    # The stable order is lexicographic in value positions, which for these ascending lists is
    # the product's own order.
    assert space_values(space) == expected


def test_random_spaces_against_the_oracle() -> None:
    rng = np.random.default_rng(7)
    templates = ["{a} * {b} <= {k}", "{a} % 2 == 0 or {b} > {k}", "{a} + {b} != {k}",
                 "{a} >= {b} or {a} == 1"]  # fmt: skip
    for _ in range(25):
        width = int(rng.integers(1, 5))
        params = {f"p{j}": sorted(set(rng.integers(1, 12, size=int(rng.integers(1, 6))).tolist()))
                  for j in range(width)}  # fmt: skip
        names = list(params)
        predicates = []
        for _ in range(int(rng.integers(0, 3))):
            a, b = (names[int(i)] for i in rng.integers(width, size=2))
            template = templates[int(rng.integers(len(templates)))]
            predicates.append(template.format(a=a, b=b, k=int(rng.integers(2, 40))))
        space = build(params, predicates)
        assert space_values(space) == brute_force(params, predicates), (params, predicates)


def test_function_constraints_and_their_names() -> None:
    params = [Parameter("a", (1, 2, 3, 4)), Parameter("b", ("x", "y"))]
    space = enumerate_space(params, [Constraint(lambda a, b: a != 2 or b == "x", ("a", "b"))])
    assert space_values(space) == [(1, "x"), (1, "y"), (2, "x"), (3, "x"), (3, "y"), (4, "x"), (4, "y")]
    with pytest.raises(SpaceError, match="needs names"):
        enumerate_space(params, [Constraint(lambda a: a > 1)])


def test_index_key_and_lookup_round_trip() -> None:
    space = enumerate_space(
        [Parameter("by", (4, 1, 2)), Parameter("bx", (32, 16))], [Constraint("bx * by >= 32")]
    )
    # Stable order follows the value lists as given (4 before 1 before 2), not numeric order.
    assert space_values(space) == [(4, 32), (4, 16), (1, 32), (2, 32), (2, 16)]
    for i in range(space.size):
        assert space.find(space.config(i)) == i
        assert space.find_key(space.key(i)) == i
    assert space.key(1) == "4,16"
    assert space.find({"by": 1, "bx": 16}) is None  # fails the constraint
    assert space.find({"by": 3, "bx": 16}) is None  # not a value
    np.testing.assert_allclose(space.positions()[1], [0.0, 1.0])


def test_bad_spaces_are_refused() -> None:
    with pytest.raises(SpaceError, match="repeats a value"):
        Parameter("a", (1, 1))
    with pytest.raises(SpaceError, match="no values"):
        Parameter("a", ())
    with pytest.raises(SpaceError, match="unknown names"):
        enumerate_space([Parameter("a", (1, 2))], [Constraint("a < b")])
    with pytest.raises(SpaceError, match="not an expression"):
        enumerate_space([Parameter("a", (1, 2))], [Constraint("a <")])
    with pytest.raises(SpaceError, match="names repeat"):
        enumerate_space([Parameter("a", (1,)), Parameter("a", (2,))])


@pytest.mark.parametrize("name", ["convolution_milo", "dedispersion_milo"])
def test_t1_spaces_enumerate_to_the_brute_forced_caches(hub: Path, name: str) -> None:
    """Kernel Tuner brute-forced these spaces under their T1 conditions: the cache keys are the
    valid set, an oracle our solver never saw."""
    spec, cache = hub / "spaces" / f"{name}.json", hub / name / "A100.json.gz"
    t1 = json.loads(spec.read_text())["ConfigurationSpace"]
    params = [Parameter(p["Name"], tuple(json.loads(p["Values"]))) for p in t1["TuningParameters"]]
    space = enumerate_space(params, [Constraint(c["Expression"]) for c in t1["Conditions"]])
    recorded = read_cache(cache).space
    assert {space.key(i) for i in range(space.size)} == {recorded.key(i) for i in range(recorded.size)}
