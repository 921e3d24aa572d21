"""Slips in the byte-container ``ldmatrix``/``stmatrix`` forms (``ptx.matrix_b8``), applied by
``tests/model/check/test_semantic_slips.py`` with the others of :mod:`tests.model.oracle.slips`:
a 16x16 lane's two rows swapped, 8x16 rows taken from the wrong lanes, packed elements unpacked
in reverse order, a 16x8 store taking row g + 8's bytes from row g."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

B8 = "ptx.matrix_b8"

MATRIX_B8_SLIPS: tuple[Slip, ...] = (
    Slip("ldmatrix .m16n16 swaps the two rows a lane holds", B8, "_ldmatrix", ("ldmatrix.sync",),
         'x.write("d", out, B32, 2 * m + r)', 'x.write("d", out, B32, 2 * m + 1 - r)'),
    Slip("ldmatrix .m8n16 takes matrix m's rows from the wrong lanes", B8, "_ldmatrix", ("ldmatrix.sync",),
         "src = d.add(c32(d, 8 * m), quad, 32)", "src = d.add(c32(d, 8 * m), pair, 32)"),
    Slip("ldmatrix unpacks a row's 6-/4-bit elements last first", B8, "decompress_row", ("ldmatrix.sync",),
         "bits_at(d, words, width * (4 * k + j), width)",
         "bits_at(d, words, width * (4 * k + 3 - j), width)"),
    Slip("stmatrix .m16n8 stores row g's bytes for row g + 8", B8, "_stmatrix", ("stmatrix.sync",),
         "d.add(parity, c32(d, 2 * (c // 8)), 32)", "parity"),
)  # fmt: skip
