"""Wrappers of the NVIDIA command-line tools: ptxas, nvdisasm, cuobjdump, compute-sanitizer, ncu."""
