"""Per-arch SM resources (registers, shared memory, warps, blocks) and the occupancy model."""
