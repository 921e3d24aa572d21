"""Toolchain discovery, KernelSpec, the stage pipeline, device info."""
