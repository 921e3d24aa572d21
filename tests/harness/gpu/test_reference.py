"""The spec's [reference]: torch expressions, Python functions, and the errors that name the key."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch

from karyamorph.harness.gpu.reference import evaluate_reference, output_args, reference_names
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.spec import KernelSpec, Reference, SpecError

ARGS: list[dict[str, Any]] = [
    {"name": "a", "role": "in", "dtype": "f32", "shape": ["n"]},
    {"name": "b", "role": "in", "dtype": "f32", "shape": ["n"]},
    {"name": "s", "role": "out", "dtype": "f32", "shape": ["n"]},
    {"name": "acc", "role": "inout", "dtype": "f32", "shape": ["n"]},
    {"name": "alpha", "role": "scalar", "dtype": "f32", "value": "1.5"},
    {"name": "count", "role": "scalar", "dtype": "u32", "value": "n"},
]


def make_spec(reference: dict[str, str], n: int = 8) -> KernelSpec:
    doc: dict[str, Any] = {
        "kernel": {"source": "// reference tests need no PTX", "entry": "k"},
        "sizes": {"n": n},
        "launch": {"grid": [1], "block": [n]},
        "args": ARGS,
        "reference": reference,
    }
    return spec_from_dict(doc)


def buffers(n: int = 8) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {k: torch.randn(n, generator=g) for k in ("a", "b", "s", "acc")}


def test_names_bind_sizes_and_scalars_as_python_numbers_and_buffers_as_tensors() -> None:
    spec = make_spec({"torch": "a"})
    names = reference_names(bind(spec), buffers())
    assert names["n"] == 8 and names["count"] == 8 and isinstance(names["count"], int)
    assert names["alpha"] == 1.5 and isinstance(names["alpha"], float)
    assert isinstance(names["a"], torch.Tensor)
    assert [a.name for a in output_args(bind(spec))] == ["s", "acc"]


def test_torch_expression_returns_outputs_in_argument_order() -> None:
    spec = make_spec({"torch": "(alpha * a + b, acc + count + torch.ones_like(a))"})
    t = buffers()
    s, acc = evaluate_reference(bind(spec), t)
    assert torch.equal(s, 1.5 * t["a"] + t["b"])
    assert torch.equal(acc, t["acc"] + 8 + 1)


def test_result_with_same_count_but_other_shape_is_reshaped() -> None:
    spec = make_spec({"torch": "(a.view(2, 4), b.view(4, 2))"})
    s, acc = evaluate_reference(bind(spec), buffers())
    assert s.shape == (8,) and acc.shape == (8,)


def test_python_function_next_to_the_spec_gets_the_names_it_declares(tmp_path: Path) -> None:
    (tmp_path / "myref_decl.py").write_text(
        "def ref(a, b, alpha, acc):\n    return alpha * a - b, acc * 2\n"
        "def ref_kwargs(**names):\n    return names['a'] + names['n'], names['acc']\n"
    )
    text = (
        '[kernel]\nsource = "// none"\nentry = "k"\n[sizes]\nn = 8\n[launch]\ngrid = [1]\nblock = [8]\n'
        + "".join(
            "[[args]]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in a.items()) for a in ARGS
        )
        + '[reference]\npython = "myref_decl:ref"\n'
    )
    path = tmp_path / "k.toml"
    path.write_text(text)
    spec = load_spec(path)
    t = buffers()
    s, acc = evaluate_reference(bind(spec), t)
    assert torch.equal(s, 1.5 * t["a"] - t["b"]) and torch.equal(acc, t["acc"] * 2)
    path.write_text(text.replace("myref_decl:ref", "myref_decl:ref_kwargs"))
    s, acc = evaluate_reference(bind(load_spec(path)), t)
    assert torch.equal(s, t["a"] + 8)


def test_bad_expression_is_a_spec_error_naming_the_key_and_the_names() -> None:
    # The loader refuses both; a spec built in code reaches the evaluator with them.
    spec = dataclasses.replace(make_spec({"torch": "a"}), reference=Reference(torch="a + q"))
    with pytest.raises(SpecError, match=r"reference\.torch.*NameError.*'q'.*names in scope: torch, a, acc"):
        evaluate_reference(bind(spec), buffers())
    spec = dataclasses.replace(spec, reference=Reference(torch="a +"))
    with pytest.raises(SpecError, match=r"reference\.torch: not a Python expression"):
        evaluate_reference(bind(spec), buffers())


def test_wrong_result_count_or_size_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match=r"gives 1 result\(s\) but the spec has 2 output\(s\): s, acc"):
        evaluate_reference(bind(make_spec({"torch": "a"})), buffers())
    with pytest.raises(SpecError, match=r"result for 's' has shape \(4,\)"):
        evaluate_reference(bind(make_spec({"torch": "(a[:4], b)"})), buffers())


def test_missing_function_or_module_or_reference_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match=r"reference\.python: cannot import module 'no_such_module_xyz'"):
        evaluate_reference(bind(make_spec({"python": "no_such_module_xyz:f"})), buffers())
    with pytest.raises(SpecError, match=r"reference\.python: module 'math' has no function 'nope'"):
        evaluate_reference(bind(make_spec({"python": "math:nope"})), buffers())
    with pytest.raises(SpecError, match=r"reference: the spec has no \[reference\]"):
        evaluate_reference(bind(make_spec({})), buffers())


def test_a_function_needing_unknown_names_is_a_spec_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "myref_unknown.py").write_text("def ref(a, zeta):\n    return a, a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SpecError, match=r"needs zeta, which are not spec names"):
        evaluate_reference(bind(make_spec({"python": "myref_unknown:ref"})), buffers())
