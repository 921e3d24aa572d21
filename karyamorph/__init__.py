"""KaryaMorph: understand GPUs at the PTX level."""

__version__ = "0.1.0"
