"""A thread-block cluster in the two-thread encoding: a symbolic thread's cluster registers, and
where an access to the cluster's shared window lands.

PTX ISA, "State Spaces: shared": the ``.shared::cluster`` window holds the ``.shared::cta`` window
of every CTA of the cluster. The model lays it out as :mod:`karyamorph.model.ptx.cluster` says:
below ``RANK_STRIDE`` an address is the executing CTA's own;
``(rank + 1) * RANK_STRIDE + offset`` (the 8-bit rank field ``mapa`` writes) is byte ``offset``
of the CTA ``rank`` of the cluster. :func:`window` turns such an address into the plain shared
offset the encoding checks, with the CTA that owns the bytes (:class:`Remote`): the race
encoding compares owners rather than blocks, and the bounds check asks that the rank lie in the
cluster.

The registers follow the PTX ISA's definitions for a launch tiled into clusters of
``cluster`` CTAs (the grid a whole number of them): ``%cluster_ctaid`` is the CTA's place in its
cluster, ``%clusterid`` the cluster's place in the grid, ``%cluster_ctarank`` the linear rank.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import z3

from karyamorph.model.ptx.cluster import RANK_SHIFT
from karyamorph.model.semantics.symbolic import BitVec

Dim3 = tuple[int, int, int]
AXES = "xyz"


@dataclass(frozen=True, slots=True)
class Remote:
    """The CTA whose shared memory a ``.shared::cluster`` access reaches: its ``rank`` in the
    accessing thread's cluster, and its ``ctaid`` (x, y, z); both terms of that thread."""

    rank: BitVec
    cta: tuple[BitVec, BitVec, BitVec]

    def substituted(self, sub: Callable[[BitVec], BitVec]) -> Remote:
        x, y, z = (sub(t) for t in self.cta)
        return Remote(sub(self.rank), (x, y, z))


def cluster_registers(coords: Mapping[str, BitVec], grid: Dim3, cluster: Dim3) -> dict[str, BitVec]:
    """The cluster special registers of a thread with coordinates ``coords`` (``ctaid.x`` ...),
    for a grid of ``grid`` CTAs in clusters of ``cluster``."""
    sp: dict[str, BitVec] = {}
    rank: BitVec = z3.BitVecVal(0, 32)
    scale = 1
    for axis, g, c in zip(AXES, grid, cluster, strict=True):
        cta = coords[f"ctaid.{axis}"]
        place = z3.simplify(z3.URem(cta, c)) if c > 1 else z3.BitVecVal(0, 32)
        sp[f"%cluster_ctaid.{axis}"] = place
        sp[f"%clusterid.{axis}"] = z3.simplify(z3.UDiv(cta, c)) if c > 1 else cta
        sp[f"%cluster_nctaid.{axis}"] = z3.BitVecVal(c, 32)
        sp[f"%nclusterid.{axis}"] = z3.BitVecVal(g // c, 32)
        rank = rank + place * scale
        scale *= c
    sp["%cluster_ctarank"] = z3.simplify(rank)
    sp["%cluster_nctarank"] = z3.BitVecVal(scale, 32)
    return sp


def cluster_of(specials: Mapping[str, BitVec]) -> Dim3 | None:
    """The cluster shape a thread's special registers were made for (None: no cluster registers,
    as in drivers that do not follow clusters)."""
    dims = [specials.get(f"%cluster_nctaid.{a}") for a in AXES]
    values = [d for d in dims if isinstance(d, z3.BitVecNumRef)]
    if len(values) != 3:
        return None
    x, y, z = (int(d.as_long()) for d in values)
    return (x, y, z)


def window(specials: Mapping[str, BitVec], addr: BitVec) -> tuple[BitVec, Remote | None] | None:
    """The plain shared address of ``addr`` (64-bit, of the ``.shared::cluster`` window) and the
    CTA that owns it (None: the thread's own CTA, told from a constant rank field). None when
    the address may be another CTA's and the thread has no cluster registers."""
    field = z3.simplify(z3.Extract(31, RANK_SHIFT, addr))
    if z3.is_bv_value(field) and field.as_long() == 0:
        return addr, None
    cluster = cluster_of(specials)
    if cluster is None:
        return None
    # The bits above the field are kept: a stray generic window bit leaves every allocation.
    offset = z3.simplify(addr & z3.BitVecVal(~((0xFF) << RANK_SHIFT) & (2**64 - 1), 64))
    own = specials["%cluster_ctarank"]
    rank = z3.simplify(z3.If(field == 0, own, z3.ZeroExt(24, field) - 1))
    cx, cy, _ = cluster
    places = (z3.URem(rank, cx), z3.URem(z3.UDiv(rank, cx), cy), z3.UDiv(rank, cx * cy))
    cta = []
    for axis, c, place in zip(AXES, cluster, places, strict=True):
        home = specials[f"%ctaid.{axis}"]
        first = home - z3.URem(home, c) if c > 1 else home
        cta.append(z3.simplify(first + place))
    return offset, Remote(rank, (cta[0], cta[1], cta[2]))
