"""The SIMT interpreter: a CPU reference execution of a kernel over every thread of a launch."""
