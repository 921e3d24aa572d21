"""Independent oracles for every instruction form of the machine (see ``table.py``)."""
