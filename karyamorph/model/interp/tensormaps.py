"""The tensor maps of a launch: the fields each tensor-map argument gave, by the address of the
object that holds them (the model never reads a map's opaque bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.interp.memory import GLOBAL_STRIDE, PARAM_WINDOW


@dataclass(frozen=True, slots=True)
class BoundMap:
    """A tensor map of a launch: its fields and the global address of the tensor it describes."""

    map: TensorMap
    base: int
    name: str  # the parameter that holds it


@dataclass(slots=True)
class TensorMaps:
    """The tensor maps of a launch, by the generic address of the object holding each."""

    by_address: dict[int, BoundMap] = field(default_factory=dict)

    def add(self, address: int, bound: BoundMap) -> None:
        self.by_address[address] = bound

    def at(self, address: int) -> BoundMap | None:
        """The map at ``address``: a generic address, or a ``.param`` offset (a copy that names
        the parameter itself)."""
        if address < GLOBAL_STRIDE:
            address += PARAM_WINDOW
        return self.by_address.get(address)
