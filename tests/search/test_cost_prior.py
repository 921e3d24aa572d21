"""The cost prior of ``search run --strategy model``: predicted times for configurations before any is
measured, +inf for what cannot run, no opinion (the median) for what was not predicted."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from karyamorph.harness.stages.predict import arch_machine
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.search.prior import cost_prior, predicted_seconds
from karyamorph.search.templates import template

SM90 = Arch.parse("sm_90")
SIZES = {"n": 1 << 24, "sms": 132}


def test_few_bytes_in_flight_are_predicted_slower_than_many() -> None:
    # Little's law: one float per thread in flight (a load, then its use) cannot keep DRAM busy;
    # eight float4 loads per thread can. Same bytes, same grid shape.
    t, machine, tools = template("vadd"), arch_machine(SM90), discover()
    base = {"block": 256, "sm_threads": 0, "cache": "default"}
    few = predicted_seconds(t, {**base, "vec": 1, "items": 1}, SM90, SIZES, tools, machine)
    many = predicted_seconds(t, {**base, "vec": 4, "items": 2}, SM90, SIZES, tools, machine)
    assert few is not None and many is not None
    assert few > 1.25 * many  # measured on the H200: 1.25-1.7x (benchmarks/RESULTS.md, vadd searches)
    # Neither beats moving its 12 n bytes at the measured DRAM bandwidth.
    assert many >= 12 * SIZES["n"] / machine.dram_bytes_per_s


def test_unpredicted_configurations_get_the_median_and_refused_ones_infinity() -> None:
    t = template("vadd")
    space = t.space(SM90)
    prior = cost_prior(t, SM90, space, SIZES, discover(), limit=12, seed=3)
    assert prior.predicted == 12 and prior.refused == 0 and prior.unknown == space.size - 12
    assert np.isfinite(prior.costs).all() and (prior.costs > 0).all()
    # The unpredicted ones all hold one value, the median of the 12 predictions.
    values, counts = np.unique(prior.costs, return_counts=True)
    no_opinion = values[counts.argmax()]
    predicted = prior.costs[prior.costs != no_opinion]
    assert counts.max() >= space.size - 12 and len(predicted) <= 12
    assert predicted.min() <= no_opinion <= predicted.max()


def test_a_configuration_the_template_refuses_costs_infinity() -> None:
    def refuse(config: object, arch: object, sizes: object) -> None:
        raise ValueError("no such variant")

    refusing = dataclasses.replace(template("vadd"), build=refuse)
    config = refusing.space(SM90).config(0)
    got = predicted_seconds(refusing, config, SM90, SIZES, discover(), arch_machine(SM90))
    assert got == math.inf


def test_the_time_budget_stops_the_predictions() -> None:
    t = template("vadd")
    prior = cost_prior(t, SM90, t.space(SM90), SIZES, discover(), seconds=0.0)
    assert prior.predicted == 0 and (prior.costs == 0.0).all()  # no opinion on any


@pytest.mark.parametrize("name", ["transpose"])
def test_cost_sizes_take_the_timed_paths(name: str) -> None:
    t = template(name)
    assert t.cost_sizes and all(s[k] % 64 == 0 for s in t.cost_sizes for k in s)
