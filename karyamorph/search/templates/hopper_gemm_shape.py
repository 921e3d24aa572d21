"""The shape of one Hopper GEMM configuration (tile, ring, warpgroups, grid, cluster, epilogue)
and the figures derived from it: registers, shared memory, the kernel's entry name."""

from __future__ import annotations

from dataclasses import dataclass

ROW = 128  # bytes of K a row of a box holds: one 128-byte swizzle row
STEP = 32  # bytes of K one wgmma takes (k16 of f16, k32 of e4m3)
KINDS = {"f16": (2, "k16.f32.f16.f16"), "e4m3": (1, "k32.f32.e4m3.e4m3")}
"""Element bytes and the wgmma shape's tail of each kind."""
SWIZZLE_PERIOD = 1024  # the 128-byte swizzle repeats every 8 rows of 128 bytes
WARPGROUP = 128


@dataclass(frozen=True, slots=True)
class HopperShape:
    """One configuration of the Hopper GEMM and the figures derived from it."""

    bm: int
    bn: int
    stages: int
    consumers: int
    setmaxnreg: bool
    kind: str = "f16"
    persistent: bool = False
    group_rows: int = 0
    """Persistent: the tiles go in groups of this many tile rows, column after column within a
    group (0: row after row)."""
    cluster: int = 1
    """CTAs a cluster holds (1 or 2): with 2, tiles one above the other share b's box through
    multicast copies."""
    staged: bool = False
    """f16: c leaves through a shared staging buffer (``stmatrix``, then 16-byte stores of
    whole rows) instead of 4-byte stores from the accumulators."""

    @property
    def element_bytes(self) -> int:
        return KINDS[self.kind][0]

    @property
    def promotes(self) -> bool:
        """Whether each slice's products are summed apart and added in f32 (e4m3: the tensor
        core's FP8 accumulator keeps fewer bits than f32)."""
        return self.kind == "e4m3"

    @property
    def accumulators(self) -> int:
        """f32 registers a consumer thread holds for c (twice as many when it promotes)."""
        return self.slabs * self.bn // 2 * (2 if self.promotes else 1)

    @property
    def bk(self) -> int:
        """Elements of K a slice holds: one 128-byte row."""
        return ROW // self.element_bytes

    @property
    def slabs(self) -> int:
        """64-row slabs of the tile each consumer warpgroup owns."""
        return self.bm // (64 * self.consumers)

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.consumers)

    @property
    def a_bytes(self) -> int:
        return self.bm * ROW

    @property
    def b_rows(self) -> int:
        """Rows of b one CTA copies a slice (multicast to the cluster: ``bn / cluster``)."""
        return self.bn // self.cluster

    @property
    def stage_bytes(self) -> int:
        return (self.bm + self.bn) * ROW

    @property
    def staging_cols(self) -> int:
        """Columns of c a consumer's staging buffer holds (64 rows of them)."""
        return min(self.bn, 128)

    @property
    def staging_bytes(self) -> int:
        return self.consumers * 64 * 2 * self.staging_cols if self.staged else 0

    @property
    def shared_bytes(self) -> int:
        """The stages, the staging buffers and two mbarriers a stage (8 bytes each)."""
        return self.stages * self.stage_bytes + self.staging_bytes + 16 * self.stages

    @property
    def entry(self) -> str:
        regs = "_setmaxnreg" if self.setmaxnreg else ""
        grid = "_persistent" if self.persistent else ""
        grid += f"_g{self.group_rows}" if self.persistent and self.group_rows else ""
        grid += f"_x{self.cluster}" if self.cluster > 1 else ""
        grid += "_staged" if self.staged else ""
        return f"hopper_{self.kind}_gemm_{self.bm}x{self.bn}_s{self.stages}_c{self.consumers}{regs}{grid}"
