"""How results read: the terminal's text for ``show``, ``diff`` and the smaller commands, live stage
progress, syntax colour, and the derivations (a stored run's stage details, its PTX-to-SASS map, two
runs' differences) that the command line and the dashboard both present.

It reads the store's records and the harness's results and writes nothing; only the command line
and the dashboard import it.
"""
