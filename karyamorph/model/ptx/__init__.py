"""The reduced PTX instruction set: declarations and semantics, written once per form."""
