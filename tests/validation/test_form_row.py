"""A validated form's verdict and the store's row of it carry the same fields (the store may not
import the validation package, so the two classes are written twice and held equal here)."""

from __future__ import annotations

from dataclasses import fields

from karyamorph.store.validation import FormRow
from karyamorph.validation.compare import FormResult


def test_the_store_row_has_every_field_of_the_verdict_in_order() -> None:
    assert [(f.name, f.type) for f in fields(FormRow)] == [(f.name, f.type) for f in fields(FormResult)]
