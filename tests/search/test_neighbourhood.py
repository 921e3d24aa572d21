"""Neighbours over the valid set, against a brute-force scan of every pair of configurations."""

from __future__ import annotations

import numpy as np

from karyamorph.search import Constraint, Neighbourhood, Parameter, enumerate_space

SPACE = enumerate_space(
    [Parameter("bx", (16, 32, 48, 64, 128)), Parameter("by", (1, 2, 4, 8)), Parameter("t", (1, 2, 3))],
    [Constraint("bx * by * t <= 512"), Constraint("bx != 48 or by != 2")],
)


def test_any_value_neighbours_are_the_hamming_one_configurations() -> None:
    rows = SPACE.indices
    near = Neighbourhood(SPACE)
    for i in range(SPACE.size):
        expected = [j for j in range(SPACE.size) if int((rows[j] != rows[i]).sum()) == 1]
        assert near.of(i, "any").tolist() == expected


def test_adjacent_neighbours_are_the_nearest_valid_values_along_each_parameter() -> None:
    rows = SPACE.indices
    near = Neighbourhood(SPACE)
    for i in range(SPACE.size):
        expected = []
        for p in range(rows.shape[1]):
            others = np.delete(rows, p, axis=1)
            line = [j for j in range(SPACE.size) if np.array_equal(others[j], others[i])]
            below = [j for j in line if rows[j, p] < rows[i, p]]
            above = [j for j in line if rows[j, p] > rows[i, p]]
            if below:
                expected.append(max(below, key=lambda j: rows[j, p]))
            if above:
                expected.append(min(above, key=lambda j: rows[j, p]))
        assert near.of(i, "adjacent").tolist() == sorted(expected)


def test_a_gap_left_by_a_constraint_is_stepped_over() -> None:
    near = Neighbourhood(SPACE)
    i = SPACE.find({"bx": 48, "by": 1, "t": 1})
    assert i is not None
    # by=2 is invalid at bx=48, so the adjacent value above by=1 is by=4.
    assert {SPACE.key(int(j)) for j in near.along(i, 1, "adjacent")} == {"48,4,1"}
