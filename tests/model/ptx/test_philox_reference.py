"""The numpy Philox behind the dropout spec's reference, against published known-answer vectors
(Random123's kat_vectors for philox4x32 with 10 rounds: counter, key -> output)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.model.corpus.philox_reference import philox4x32, uniform

KAT = (
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
)


@pytest.mark.parametrize(("counter", "key", "want"), KAT)
def test_philox4x32_10_known_answers(
    counter: tuple[int, ...], key: tuple[int, int], want: tuple[int, ...]
) -> None:
    out = philox4x32(np.array(counter, dtype=np.uint32).reshape(4, 1), key)
    assert [int(v) for v in out[:, 0]] == list(want)


def test_uniform_is_in_the_unit_interval_and_uniform() -> None:
    u = uniform(7, np.arange(100_000))
    assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
    counts, _ = np.histogram(u, bins=10, range=(0.0, 1.0))
    assert np.all(np.abs(counts - 10_000) < 500)  # about 5 standard deviations
