"""``python -m karyamorph.cli``: the same command as ``karyamorph``."""

from karyamorph.cli import main

main()
