"""Test kernels with known checker verdicts and equivalences (see README.md and verdicts.toml)."""
