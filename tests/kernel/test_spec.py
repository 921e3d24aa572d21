"""KernelSpec loading and the spec <-> .entry signature check, including every bad-input case."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.pipeline import prepare_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import SpecError
from tests.harness.tools.nvcc_probe import require_nvcc

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"

PTX = """.version 8.7
.target sm_80
.address_size 64
.visible .entry axpy(
\t.param .u64 .ptr .global .align 4 x,
\t.param .u64 y,
\t.param .f32 alpha,
\t.param .u32 n
)
{
\tret;
}
"""

SPEC = """
[kernel]
ptx = "axpy.ptx"
entry = "axpy"
[sizes]
n = 1000
[launch]
grid = ["ceildiv(n, 128)"]
block = [128]
[[args]]
name = "x"
role = "in"
dtype = "f32"
shape = ["n"]
init = "randn"
[[args]]
name = "y"
role = "inout"
dtype = "f32"
shape = ["n"]
init = "randint(-3, 3)"
[[args]]
name = "alpha"
role = "scalar"
dtype = "f32"
value = 2.5
[[args]]
name = "n"
role = "scalar"
dtype = "u32"
value = "n"
[reference]
torch = "alpha * x + y"
[cost]
bytes = "3 * 4 * n"
flops = "2 * n"
"""


def write(tmp_path: Path, spec: str = SPEC, ptx: str = PTX) -> Path:
    (tmp_path / "axpy.ptx").write_text(ptx)
    path = tmp_path / "axpy.toml"
    path.write_text(spec)
    return path


def test_valid_spec_evaluates_expressions(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path))
    assert bind(spec).grid == (8, 1, 1) and bind(spec).block == (128, 1, 1)
    assert bind(spec).shapes[spec.args[0].name] == (1000,)
    assert spec.args[1].init.kind == "randint" and (spec.args[1].init.low, spec.args[1].init.high) == (-3, 3)
    assert bind(spec).scalars[spec.args[2].name] == 2.5
    assert bind(spec).scalars[spec.args[3].name] == 1000
    assert (bind(spec).cost_bytes, bind(spec).cost_flops) == (12000.0, 2000.0)
    module = prepare(spec)
    assert module.entry("axpy").params[2].type == "f32"


def test_shipped_examples_load_and_match_their_entries() -> None:
    paths = sorted(EXAMPLES.glob("*.toml"))
    assert len(paths) >= 4
    for path in paths:
        spec = load_spec(path)
        if spec.cuda is not None:
            # CUDA source has PTX only once compiled for a target: the harness does that.
            with pytest.raises(SpecError, match=r"kernel\.cu: CUDA source has no PTX until it is compiled"):
                prepare(spec)
            require_nvcc()
            spec = prepare_spec(spec, "sm_90").spec
        prepare(spec)


@pytest.mark.parametrize(
    ("edit", "where", "words"),
    [
        (lambda s: s.replace('grid = ["ceildiv(n, 128)"]', 'grid = ["ceildiv(m, 128)"]'),
         "launch.grid[0]", "unknown size 'm'"),
        (lambda s: s.replace('dtype = "f32"\nshape', 'dtype = "f33"\nshape', 1),
         "args[0].dtype", "unknown dtype 'f33'"),
        (lambda s: s.replace('ptx = "axpy.ptx"', 'ptx = "nope.ptx"'), "kernel.ptx", "PTX file not found"),
        (lambda s: s.replace('role = "in"', 'role = "input"'), "args[0].role", "unknown role"),
        (lambda s: s.replace('init = "randn"', 'init = "gaussian"'), "args[0].init", "unknown init"),
        (lambda s: s.replace("block = [128]", "block = [0]"), "launch.block[0]", "must be 1 to 1024"),
        (lambda s: s.replace('grid = ["ceildiv(n, 128)"]', 'grid = ["n / 3"]'), "launch.grid[0]",
         "not an integer"),
        (lambda s: s + "\n[bogus]\nx = 1\n", "axpy.toml", "unknown key(s) bogus"),
        (lambda s: s.replace("[kernel]", "[kernel\n"), "axpy.toml", "not valid TOML"),
        # launch limits and value ranges, checked when the spec loads
        (lambda s: s.replace('grid = ["ceildiv(n, 128)"]', "grid = [2147483648]"), "launch.grid[0]",
         "must be 1 to 2147483647"),
        (lambda s: s.replace('grid = ["ceildiv(n, 128)"]', "grid = [1, 65536]"), "launch.grid[1]",
         "must be 1 to 65535"),
        (lambda s: s.replace("block = [128]", "block = [2048]"), "launch.block[0]", "must be 1 to 1024"),
        (lambda s: s.replace("block = [128]", "block = [1, 1, 65]"), "launch.block[2]", "must be 1 to 64"),
        (lambda s: s.replace("block = [128]", "block = [64, 32]"), "launch.block",
         "2048 threads per block; the limit is 1024"),
        (lambda s: s.replace("block = [128]", "block = [128]\nshared_bytes = -1"), "launch.shared_bytes",
         "must be 0 to"),
        (lambda s: s.replace("block = [128]", "block = [128]\nshared_bytes = 1048576"),
         "launch.shared_bytes", "must be 0 to 232448"),
        (lambda s: s.replace('shape = ["n"]', 'shape = ["n", "n", "n", "n"]', 1), "args[0].shape",
         "more than any GPU has"),
        (lambda s: s.replace('value = "n"', "value = 4294967296"), "args[3].value",
         "does not fit u32 (0 to 4294967295)"),
        (lambda s: s.replace("value = 2.5", 'value = "1/0"'), "args[2].value", "divides by zero"),
        (lambda s: s.replace("[sizes]", "[check]\nrtol = [1]\n[sizes]"), "check.rtol",
         "expected a number >= 0"),
        (lambda s: s.replace('entry = "axpy"', "entry = 5"), "kernel.entry", "expected a string"),
        (lambda s: s.replace('ptx = "axpy.ptx"', "ptx = 5"), "kernel.ptx", "expected a string"),
        (lambda s: s.replace('torch = "alpha * x + y"', "torch = 5"), "reference.torch", "expected a string"),
        (lambda s: s.replace('grid = ["ceildiv(n, 128)"]', 'grid = ["ceildiv(n,"]'), "launch.grid[0]",
         "cannot parse expression"),
        (lambda s: s.replace('grid = ["ceildiv(n, 128)"]', 'grid = ["n**n"]'), "launch.grid[0]",
         "too large"),
        (lambda s: "a = " + "[" * 100_000 + "]" * 100_000 + "\n" + s, "axpy.toml", "not valid TOML"),
    ],
)  # fmt: skip
def test_spec_errors_name_file_and_key(tmp_path: Path, edit: object, where: str, words: str) -> None:
    path = write(tmp_path, edit(SPEC))  # type: ignore[operator]
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert where in info.value.where
    assert info.value.where.startswith("axpy.toml")
    assert words in info.value.message


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda s: s.replace('entry = "axpy"', 'entry = "saxpy"'), "no .entry named 'saxpy' (entries: axpy)"),
        (lambda s: s.rsplit("[[args]]", 1)[0] + "[reference]\ntorch = 'x'\n",
         "3 argument(s) given but .entry axpy has 4 parameter(s)"),
        (lambda s: s.replace('dtype = "f32"\nvalue = 2.5', 'dtype = "s32"\nvalue = 2'),
         "dtype s32 does not match the parameter type .f32"),
        (lambda s: s.replace('dtype = "u32"\nvalue = "n"', 'dtype = "u64"\nvalue = "n"'),
         "dtype u64 is 8 bytes but the parameter is .u32 (4 bytes)"),
        (lambda s: s.replace('name = "x"\nrole = "in"\ndtype = "f32"\nshape = ["n"]\ninit = "randn"',
                             'name = "x"\nrole = "scalar"\ndtype = "u64"\nvalue = 0'),
         "a scalar (u64) is given for a pointer parameter"),
        (lambda s: s.replace('name = "n"\nrole = "scalar"\ndtype = "u32"\nvalue = "n"',
                             'name = "n"\nrole = "in"\ndtype = "u32"\nshape = ["n"]'),
         "passes a 64-bit pointer, which does not fit a .u32 parameter"),
    ],
)  # fmt: skip
def test_signature_mismatches_name_both_sides(tmp_path: Path, edit: object, words: str) -> None:
    spec = load_spec(write(tmp_path, edit(SPEC)))  # type: ignore[operator]
    with pytest.raises(SpecError) as info:
        prepare(spec)
    assert words in str(info.value)
    assert str(info.value).startswith("axpy.toml: ")


def test_bind_resolves_every_figure_once_and_checks_the_arch(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, SPEC))
    kernel = bind(spec, "sm_120", {"n": 4096})
    assert kernel.grid == (32, 1, 1) and kernel.block == (128, 1, 1) and kernel.shared_bytes == 0
    assert kernel.shapes == {"x": (4096,), "y": (4096,)} and kernel.scalars == {"alpha": 2.5, "n": 4096}
    assert kernel.cost_bytes == 3 * 4 * 4096 and kernel.threads == 4096
    assert kernel.launch == ((32, 1, 1), (128, 1, 1), 0)
    big = load_spec(write(tmp_path, SPEC.replace("block = [128]", "block = [128]\nshared_bytes = 150000")))
    assert bind(big, "sm_90").shared_bytes == 150000
    with pytest.raises(SpecError, match="must be 0 to 101376 on sm_120"):
        bind(big, "sm_120")
    with pytest.raises(SpecError, match="unknown size 'q'"):
        bind(spec, sizes={"q": 1})


@pytest.mark.parametrize(
    ("torch", "words"),
    [
        ("alpha * x + yy", "unknown name 'yy' in 'alpha * x + yy'"),
        ("alpha * x + y.sum(dim=nn)", "unknown name 'nn'"),
        ("[q for q in x] + [q]", "unknown name 'q'"),  # a comprehension's name stays inside it
        ("alpha * x +", "not a Python expression"),
        ("  ", "expected a non-empty string"),
    ],
)
def test_a_torch_reference_that_names_the_unknown_fails_at_load(
    tmp_path: Path, torch: str, words: str
) -> None:
    path = write(tmp_path, SPEC.replace('torch = "alpha * x + y"', f"torch = {torch!r}"))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.where == "axpy.toml: reference.torch"
    assert words in info.value.message
    if "unknown name" in words:
        # The names it could have meant: the spec's sizes and arguments, torch and the builtins.
        assert "(alpha, n, x, y), torch and Python's builtins" in info.value.message


@pytest.mark.parametrize(
    "torch",
    [
        "torch.addcmul(y, x, torch.full_like(x, alpha))",
        "torch.stack([x[i] * alpha for i in range(n)]) + y",  # names a comprehension binds
        "(lambda t: alpha * t)(x) + y",
        "(s := alpha * x) + y + 0 * s",
        "abs(alpha) * x + y.float() * min(1, n)",  # Python's builtins are in scope
    ],
)
def test_a_torch_reference_may_name_spec_names_torch_builtins_and_its_own(tmp_path: Path, torch: str) -> None:
    spec = load_spec(write(tmp_path, SPEC.replace('torch = "alpha * x + y"', f"torch = {torch!r}")))
    assert spec.reference.torch == torch


def test_the_names_checked_at_load_are_the_names_the_reference_runs_with(tmp_path: Path) -> None:
    from karyamorph.harness.gpu.reference import reference_names
    from karyamorph.kernel.reference import REFERENCE_MODULES

    kernel = bind(load_spec(write(tmp_path)))
    runtime = set(reference_names(kernel, {a.name: None for a in kernel.args if a.is_pointer}))
    for name in sorted(runtime) + list(REFERENCE_MODULES):
        load_spec(write(tmp_path, SPEC.replace('torch = "alpha * x + y"', f'torch = "{name}"')))
    with pytest.raises(SpecError, match="unknown name 'm'"):
        load_spec(write(tmp_path, SPEC.replace('torch = "alpha * x + y"', 'torch = "m"')))


@pytest.mark.parametrize(
    ("reference", "where", "words"),
    [
        ('python = "refs.axpy"', "reference.python", "expected 'module:function'"),
        ('python = "refs:axpy:more"', "reference.python", "expected 'module:function'"),
        ('python = "refs:"', "reference.python", "expected 'module:function'"),
        ('torch = "x"\npython = "refs:axpy"', "[reference]", "give either torch or python, not both"),
    ],
)
def test_a_python_reference_is_module_colon_function(
    tmp_path: Path, reference: str, where: str, words: str
) -> None:
    path = write(tmp_path, SPEC.replace('torch = "alpha * x + y"', reference))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.where == f"axpy.toml: {where}" and words in info.value.message
    good = load_spec(write(tmp_path, SPEC.replace('torch = "alpha * x + y"', 'python = "my.refs:axpy"')))
    assert good.reference.python == "my.refs:axpy"
