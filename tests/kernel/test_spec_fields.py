"""Every field the loader reads, given a bad value in each shipped example, fails at load with a
SpecError naming the spec and the field; the examples as shipped load."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from karyamorph.kernel.loader import KEYS, load_spec, spec_from_dict
from karyamorph.kernel.spec import SpecError

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
SPECS = sorted(EXAMPLES.glob("*.toml"))


class _Delete:
    """A bad value that removes the field."""

    def __repr__(self) -> str:
        return "(deleted)"

    def __deepcopy__(self, memo: dict[int, Any]) -> _Delete:
        return self


DELETE = _Delete()


class Bad(NamedTuple):
    """``field`` set to ``value`` (after the fields in ``also``) must fail with ``words``.

    In a field, ``args[-1]`` is the last argument (a u32 scalar in every example); in a field or
    a value, ``SIZE`` is the example's first size and ``ARG0`` the name of its first argument.
    ``only`` limits the case to the examples of one kind: ``ptx`` (a PTX file) or ``cu`` (a
    CUDA file)."""

    field: str
    value: Any
    words: str
    also: tuple[tuple[str, Any], ...] = ()
    only: str | None = None


P12 = {"parameters": {"P": [1, 2]}}
"""A ``[search]`` table: one parameter P of values 1 and 2 (the baseline: 1)."""
PTXAS = (("search", {**P12, "ptxas": {}}),)
"""``P12`` with an empty ``ptxas`` table, for the cases that set one knob."""

BAD = [
    Bad("version", True, "expected the integer 1"),
    Bad("version", 1.0, "expected the integer 1"),
    Bad("version", "1", "expected the integer 1"),
    Bad("version", 2, "spec version 2 is not supported"),
    Bad("colour", "red", "unknown key(s) colour"),
    Bad("kernel", "vadd.ptx", "[kernel] must be a table"),
    Bad("kernel", DELETE, "missing [kernel] table"),
    Bad("kernel.colour", 1, "unknown key(s) colour"),
    Bad("kernel.ptx", 5, "expected a string"),
    Bad("kernel.ptx", "", "expected a non-empty string"),
    Bad("kernel.ptx", "nope.ptx", "PTX file not found", only="ptx"),
    Bad("kernel.ptx", "x.ptx", "give either ptx (a file) or cu (a CUDA file), not both", only="cu"),
    Bad("kernel.ptx", DELETE, 'missing ptx = "file.ptx" or source', only="ptx"),
    Bad("kernel.source", ".version 8.0", "give either ptx (a file) or source (inline PTX), not both",
        only="ptx"),
    Bad("kernel.source", "  \n", "expected a non-empty string", (("kernel.ptx", DELETE),), only="ptx"),
    Bad("kernel.source", [".version 8.0"], "expected a string"),
    Bad("kernel.cu", 5, "expected a string"),
    Bad("kernel.cu", "", "expected a non-empty string"),
    Bad("kernel.cu", "nope.cu", "CUDA file not found", only="cu"),
    Bad("kernel.cu", "x.cu", "give either ptx (a file) or cu (a CUDA file), not both", only="ptx"),
    Bad("kernel.cu", DELETE, 'missing ptx = "file.ptx" or source', only="cu"),
    Bad("kernel.cuda", "__global__ void k() {}", "give either cu (a CUDA file) or cuda (inline CUDA)",
        only="cu"),
    Bad("kernel.cuda", "  \n", "expected a non-empty string", (("kernel.cu", DELETE),), only="cu"),
    Bad("kernel.cuda", 7, "expected a string"),
    Bad("kernel.options", "-DBLOCK=256", "expected a list of strings"),
    Bad("kernel.options", ["-DBLOCK=256", 3], "expected a non-empty string (an nvcc option)"),
    Bad("kernel.options", [""], "expected a non-empty string (an nvcc option)"),
    Bad("kernel.options", ["-arch=sm_80"], "the target is the run's (--arch)", only="cu"),
    Bad("kernel.options", ["--gpu-code", "sm_80"], "the target is the run's (--arch)", only="cu"),
    Bad("kernel.options", ["-o", "x.ptx"], "the harness names the output", only="cu"),
    Bad("kernel.options", ["-cubin"], "the harness asks for PTX", only="cu"),
    Bad("kernel.options", ["-DBLOCK=256"], "options are nvcc's: they go with cu or cuda", only="ptx"),
    Bad("kernel.entry", DELETE, "missing the name of the .entry"),
    Bad("kernel.entry", 5, "expected a string"),
    Bad("kernel.entry", "", "expected a non-empty string"),
    Bad("kernel.entry", "my kernel", "is not a PTX name"),
    Bad("sizes", [1], "[sizes] must be a table"),
    Bad("sizes.SIZE", 1.5, "sizes must be integers"),
    Bad("sizes.SIZE", True, "sizes must be integers"),
    Bad("sizes.SIZE", "1024", "sizes must be integers"),
    Bad("sizes.SIZE", 2**63 - 1, "within +-2**62"),
    Bad("sizes.my-size", 1, "expected an identifier"),
    Bad("sizes.lambda", 1, "'lambda' is a Python keyword"),
    Bad("launch", DELETE, "missing [launch] table"),
    Bad("launch.colour", 1, "unknown key(s) colour"),
    Bad("launch.grid", DELETE, "missing"),
    Bad("launch.grid", [], "expected a list of 1 to 3"),
    Bad("launch.grid", [1, 1, 1, 1], "expected a list of 1 to 3"),
    Bad("launch.grid", [1.5], "expected an integer or an expression"),
    Bad("launch.grid", [True], "expected an integer or an expression"),
    Bad("launch.grid", ["0"], "must be 1 to 2147483647"),
    Bad("launch.grid", ["q"], "unknown size 'q'"),
    Bad("launch.grid", ["5 / 2"], "not an integer"),
    Bad("launch.block", [2048], "must be 1 to 1024"),
    Bad("launch.block", [64, 32], "the limit is 1024"),
    Bad("launch.block", "ceildiv(", "cannot parse expression"),
    Bad("launch.shared_bytes", -1, "must be 0 to"),
    Bad("launch.shared_bytes", 1 << 20, "must be 0 to 232448"),
    Bad("launch.shared_bytes", 1.5, "expected an integer or an expression"),
    Bad("launch.shared_bytes", "1 / 2", "not an integer"),
    Bad("launch.cluster", [2, 0], "expected 1 to 3 positive integers"),
    Bad("launch.cluster", ["n"], "expected 1 to 3 positive integers"),
    Bad("launch.cluster", [1, 1, 1, 1], "expected a list of 1 to 3"),
    Bad("args", {"name": "a"}, "use [[args]] tables"),
    Bad("args[0]", "a", "each [[args]] entry must be a table"),
    Bad("args[0].colour", 1, "unknown key(s) colour"),
    Bad("args[0].name", DELETE, "expected an identifier"),
    Bad("args[0].name", "1a", "expected an identifier"),
    Bad("args[0].name", "while", "'while' is a Python keyword"),
    Bad("args[0].name", "größe", "expected an identifier"),
    Bad("args[-1].name", "ARG0", "duplicate argument name"),
    Bad("args[0].role", "input", "unknown role 'input'"),
    Bad("args[0].role", DELETE, "unknown role None"),
    Bad("args[0].dtype", "f33", "unknown dtype 'f33'"),
    Bad("args[0].dtype", 32, "unknown dtype 32"),
    Bad("args[0].shape", DELETE, "needs a shape"),
    Bad("args[0].shape", [], "expected a list of 1 to 8"),
    Bad("args[0].shape", ["-1"], "has a negative extent"),
    Bad("args[0].shape", [1 << 20, 1 << 20], "more than any GPU has"),
    Bad("args[0].shape", [{}], "expected an integer or an expression"),
    Bad("args[0].init", 5, "init must be a string"),
    Bad("args[0].init", "gaussian", "unknown init 'gaussian'"),
    Bad("args[0].init", "randint(5, 1)", "needs lo < hi"),
    Bad("args[0].init", "randint(0, 300)", "does not fit u8 (range 0..255)", (("args[0].dtype", "u8"),)),
    Bad("args[0].init", "randint(-1, 5)", "does not fit u32", (("args[0].dtype", "u32"),)),
    Bad("args[0].init", "randint(0, 2147483649)", "does not fit s32", (("args[0].dtype", "s32"),)),
    Bad("args[0].init", "randint(0, 70000)", "does not fit f16", (("args[0].dtype", "f16"),)),
    Bad("args[0].init", "randint(0, 18446744073709551616)", "beyond +-(2**63 - 1)",
        (("args[0].dtype", "u64"),)),
    Bad("args[0].value", 1, "takes shape and init, not value"),
    Bad("args[0].fields", [], "only a struct argument has fields"),
    Bad("args[0].fields", 5, "needs a list of field tables", (("args[0].role", "struct"),)),
    Bad("args[0].fields", [{"name": "f", "role": "struct", "fields": []}], "unknown role 'struct'",
        (("args[0].role", "struct"),)),
    Bad("args[-1].fields[0].name", "ARG0", "duplicate argument name",
        (("args[-1]", {"name": "s", "role": "struct",
                       "fields": [{"name": "f", "role": "scalar", "dtype": "u32", "value": 1}]}),)),
    Bad("args[0].tensormap", 5, "expected a table such as { box = [64, 32], swizzle = 128 }"),
    Bad("args[0].tensormap", {"box": [16], "swizle": 0}, "unknown key(s) swizle"),
    Bad("args[0].tensormap.box", [16] * 6, "expected a list of 1 to 5", (("args[0].tensormap", {}),)),
    Bad("args[0].tensormap.box", DELETE, "missing", (("args[0].tensormap", {"box": [16]}),)),
    Bad("args[0].tensormap.swizzle", 96, "expected one of 0, 32, 64, 128", (("args[0].tensormap", {}),)),
    Bad("args[0].tensormap.oob", "one", "expected one of 'zero', 'nan'", (("args[0].tensormap", {}),)),
    Bad("args[0].tensormap.element_strides", [9], "expected integers 1 to 8", (("args[0].tensormap", {}),)),
    Bad("args[-1].tensormap", {"box": [1]}, "only a buffer has a tensor map"),
    Bad("args[-1].value", DELETE, "needs a value"),
    Bad("args[-1].value", True, "expected a number or an expression"),
    Bad("args[-1].value", [1], "expected a number or an expression"),
    Bad("args[-1].value", -1, "does not fit u32 (0 to 4294967295)"),
    Bad("args[-1].value", 2.5, "not an integer"),
    Bad("args[-1].value", "1/0", "divides by zero"),
    Bad("args[-1].value", float("nan"), "not a finite number"),
    Bad("args[-1].value", "1e6", "is not a finite f16", (("args[-1].dtype", "f16"),)),
    Bad("args[-1].shape", ["n"], "takes value, not shape/init"),
    Bad("reference", "a + b", "[reference] must be a table"),
    Bad("reference.colour", 1, "unknown key(s) colour"),
    Bad("reference.torch", 5, "expected a string"),
    Bad("reference.torch", "", "expected a non-empty string"),
    Bad("reference.torch", "a * x + yy", "unknown name"),
    Bad("reference.torch", "a +", "not a Python expression"),
    Bad("reference.torch", "+".join(["x"] * 1500), "nested too deeply"),
    Bad("reference.torch", "+".join(["x"] * 9000), "nested too deeply"),
    Bad("reference.python", "refs:f", "give either torch or python, not both"),
    Bad("reference.python", "refs.f", "expected 'module:function'", (("reference.torch", DELETE),)),
    Bad("reference.python", 5, "expected a string", (("reference.torch", DELETE),)),
    Bad("check", [0.0], "[check] must be a table"),
    Bad("check.colour", 1, "unknown key(s) colour"),
    Bad("check.atol", -1e-5, "expected a number >= 0"),
    Bad("check.atol", True, "expected a number >= 0"),
    Bad("check.atol", "1e-5", "expected a number >= 0"),
    Bad("check.rtol", float("inf"), "expected a number >= 0"),
    Bad("check.rtol", float("nan"), "expected a number >= 0"),
    Bad("check.sizes", 3, "expected a list of tables"),
    Bad("check.sizes", [3], "expected a table of sizes"),
    Bad("check.sizes", [{}], "expected a table of sizes"),
    Bad("check.sizes", [{"q": 3}], "unknown size 'q'"),
    Bad("check.launch", "every", '"spec" or "any"'),
    Bad("check.block", [0, 64], "1 <= lo <= hi"),
    Bad("check.block_multiple", 0, "integer >= 1"),
    Bad("check.grid", "all", '"launch" or [lo, hi]'),
    Bad("cost", "n", "[cost] must be a table"),
    Bad("cost.colour", 1, "unknown key(s) colour"),
    Bad("cost.bytes", -1, "a cost must be >= 0"),
    Bad("cost.bytes", "-4 * SIZE", "a cost must be >= 0"),
    Bad("cost.bytes", True, "expected a number or an expression"),
    Bad("cost.bytes", "q", "unknown size 'q'"),
    Bad("cost.flops", -0.5, "a cost must be >= 0"),
    Bad("cost.flops", float("inf"), "not a finite number"),
    Bad("cost.flops", [1], "expected a number or an expression"),
    Bad("search", [1], "[search] must be a table"),
    Bad("search.colour", 1, "unknown key(s) colour", (("search", P12),)),
    Bad("search.parameters", DELETE, "missing: a table of each parameter's values", (("search", P12),)),
    Bad("search.parameters", {}, "expected a table of each parameter's values", (("search", P12),)),
    Bad("search.parameters", [1, 2], "expected a table of each parameter's values", (("search", P12),)),
    Bad("search.parameters.P", [], "parameter 'P' has no values", (("search", P12),)),
    Bad("search.parameters.P", 4, "parameter 'P' has no values", (("search", P12),)),
    Bad("search.parameters.P", [1, 1], "repeats a value", (("search", P12),)),
    Bad("search.parameters.P", [True], "expected integers, numbers or strings", (("search", P12),)),
    Bad("search.parameters.SIZE", [1], "is a size: a parameter needs a name of its own", (("search", P12),)),
    Bad("search.parameters.ARG0", [1], "is an argument: a parameter needs a name", (("search", P12),)),
    Bad("search.parameters.ceildiv", [1], "is a function of the expressions", (("search", P12),)),
    Bad("search.parameters.while", [1], "not a name expressions can read", (("search", P12),)),
    Bad("search.constraints", "P < 2", "expected a list of conditions", (("search", P12),)),
    Bad("search.constraints", ["P +"], "cannot parse expression", (("search", P12),)),
    Bad("search.constraints", ["P"], "is not a comparison", (("search", P12),)),
    Bad("search.constraints", ["P < Q"], "unknown name 'Q' in 'P < Q'", (("search", P12),)),
    Bad("search.constraints", ["P > 2"], "no configuration meets 'P > 2': it excludes every one",
        (("search", P12),)),
    Bad("search.constraints", ["1 > 2"], "it excludes every one", (("search", P12),)),
    Bad("search.constraints", ["P < 2", "P > 1"], "together they exclude every configuration",
        (("search", P12),)),
    Bad("search.constraints", ["S == 1"], "are not all integers",
        (("search", {"parameters": {"S": ["a"]}}),)),
    Bad("search.defines", "P", "expected a list of parameter names", (("search", P12),)),
    Bad("search.defines", ["P"], "go with cu or cuda, not PTX", (("search", P12),), only="ptx"),
    Bad("search.defines", ["Q"], "'Q' is not a parameter", (("search", P12),), only="cu"),
    Bad("search.defines", ["P", "P"], "'P' is defined twice", (("search", P12),), only="cu"),
    Bad("search.defines", ["P"], "kernel.options define P already", (("kernel.options", ["-DP=3"]),
        ("search", P12)), only="cu"),
    Bad("search.ptxas", "P", "expected a table of ptxas knobs", (("search", P12),)),
    Bad("search.ptxas.maxnreg", "P", "unknown ptxas knob 'maxnreg'", PTXAS),
    Bad("search.ptxas.maxrregcount", True, "expected a parameter or an integer expression", PTXAS),
    Bad("search.ptxas.maxrregcount", "P * 200", "is 400 at P = 2; maxrregcount takes 0", PTXAS),
    Bad("search.ptxas.maxrregcount", "P + SIZE", "reads a size", PTXAS),
    Bad("search.baseline", 3, "expected a table of parameter values", (("search", P12),)),
    Bad("search.baseline.P", 7, "7 is not one of its values [1, 2]", (("search", {**P12, "baseline": {}}),)),
    Bad("search.baseline.P", 1.0, "1.0 is not one of its values", (("search", {**P12, "baseline": {}}),)),
    Bad("search.baseline.Q", 1, "unknown parameter 'Q'", (("search", {**P12, "baseline": {}}),)),
    Bad("search.baseline", {"P": 1}, "does not meet search.constraints[0] 'P > 1'",
        (("search", {**P12, "constraints": ["P > 1"]}),)),
    Bad("search.baseline", DELETE, "the baseline (each parameter's first value: give [search] baseline)",
        (("search", {**P12, "constraints": ["P > 1"], "baseline": {}}),)),
    Bad("launch.grid", ["ceildiv(P, BB)"], "unknown name 'BB' in 'ceildiv(P, BB)'", (("search", P12),)),
    Bad("launch.block", ["S"], "reads parameter 'S', whose values ['a', 'b'] are not all integers",
        (("search", {"parameters": {"S": ["a", "b"]}}),)),
    Bad("launch.block", ["1024 * P"], "evaluates to 2048; it must be 1 to 1024",
        (("search", {"parameters": {"P": [2, 1]}}),)),
]  # fmt: skip

_STEP = re.compile(r"([^.\[\]]+)(?:\[(-?\d+)\])?")


def _resolve(doc: dict[str, Any], text: str) -> str:
    """``text`` with ``args[-1]``, ``SIZE`` and ``ARG0`` spelled as in this example."""
    text = text.replace("args[-1]", f"args[{len(doc['args']) - 1}]")
    return text.replace("SIZE", next(iter(doc["sizes"]))).replace("ARG0", doc["args"][0]["name"])


def _set(doc: dict[str, Any], field: str, value: Any) -> None:
    steps = [_STEP.fullmatch(s) for s in field.split(".", 1 if field.startswith("sizes.") else -1)]
    node: Any = doc
    for i, step in enumerate(steps):
        assert step is not None, field
        key, index = step.group(1), step.group(2)
        last = i == len(steps) - 1
        if index is not None:
            node = node[key]
            key = int(index)
        if not last:
            node = node[key]
        elif value is DELETE:
            del node[key]
        else:
            node[key] = value


def mutated(path: Path, bad: Bad) -> tuple[dict[str, Any], str]:
    """The example's document with ``bad`` applied, and the field as this example spells it."""
    doc = tomllib.loads(path.read_text())
    for field, value in (*bad.also, (bad.field, bad.value)):
        value = _resolve(doc, value) if isinstance(value, str) else copy.deepcopy(value)
        _set(doc, _resolve(doc, field), value)
    return doc, _resolve(tomllib.loads(path.read_text()), bad.field)


def _parts(field: str) -> list[str]:
    """What naming ``field`` means: every part of it (``args[3]``, ``value``) is in the error."""
    if field.startswith("sizes."):
        return ["sizes", field.removeprefix("sizes.")]
    return field.split(".")


def kind(path: Path) -> str:
    """``cu`` for an example of CUDA source, else ``ptx``."""
    return "cu" if "cu" in tomllib.loads(path.read_text())["kernel"] else "ptx"


CASES = [(path, bad) for bad in BAD for path in SPECS if bad.only in (None, kind(path))]


@pytest.mark.parametrize(
    ("path", "bad"), CASES, ids=[f"{b.field}={b.value!r:.20}-{p.stem}" for p, b in CASES]
)
def test_a_bad_field_fails_at_load_naming_it(path: Path, bad: Bad) -> None:
    doc, field = mutated(path, bad)
    with pytest.raises(SpecError) as info:
        spec_from_dict(doc, path.parent, path.name)
    error = str(info.value)
    assert error.startswith(f"{path.name}: "), error
    assert all(part in error for part in _parts(field)), (field, error)
    assert bad.words in info.value.message, error


def test_the_table_tries_every_field_the_loader_reads() -> None:
    tried = {_STEP.sub(lambda m: m.group(1), b.field) for b in BAD}
    for table, keys in KEYS.items():
        for key in keys:
            assert (f"{table}.{key}" if table else key) in tried, (table, key)
    assert any(f.startswith("sizes.") for f in tried)


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_the_examples_as_shipped_load(path: Path) -> None:
    spec = load_spec(path)
    assert spec_from_dict(tomllib.loads(path.read_text()), path.parent, path.name) == spec
    assert len(SPECS) == 6
    assert {kind(p) for p in SPECS} == {"ptx", "cu"}  # every case above meets an example
