"""A spec's [search] table: the spec loads as its baseline configuration, each configuration is a
plain spec with the parameters' values written in, nvcc's defines and ptxas's knobs follow the
parameters, and Kernel Tuner's block_size_x is the block a launch does not name."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.spec import SpecError
from karyamorph.kernel.tuning import add_directives, declared_directives, variant

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "datasets" / "kernels"
EXAMPLES = ROOT / "datasets" / "searches" / "examples"

SCALE = """
[kernel]
ptx = "scale.ptx"
entry = "scale"

[sizes]
n = 1000

[launch]
grid = ["ceildiv(n, BLOCK * ITEMS)"]
block = ["BLOCK"]

[[args]]
name = "x"
role = "in"
dtype = "f32"
shape = ["n"]

[[args]]
name = "y"
role = "out"
dtype = "f32"
shape = ["n"]

[[args]]
name = "alpha"
role = "scalar"
dtype = "f32"
value = "ITEMS / 2"

[[args]]
name = "n"
role = "scalar"
dtype = "u32"
value = "n"

[reference]
torch = "alpha * x"

[search]
parameters = { BLOCK = [128, 256, 512], ITEMS = [1, 2, 4] }
"""


def scale(extra: str = "", text: str = SCALE) -> dict:
    return tomllib.loads(text + extra)


def test_a_searched_spec_loads_as_its_baseline_and_makes_every_other_configuration() -> None:
    spec = spec_from_dict(scale('baseline = { ITEMS = 4 }\nconstraints = ["BLOCK * ITEMS <= 1024"]'),
                          KERNELS, "scale.toml")  # fmt: skip
    assert spec.search is not None
    assert dict(spec.search.baseline) == {"BLOCK": 128, "ITEMS": 4}  # BLOCK: its first value
    assert spec.launch.grid == ("ceildiv(n, 512)",) and spec.launch.block == (128,)
    assert spec.args[2].value == 2 and spec.search.spec.args[2].value == "ITEMS / 2"
    other = variant(spec.search, {"BLOCK": 512, "ITEMS": 2})
    assert other.launch.grid == ("ceildiv(n, 1024)",) and other.launch.block == (512,)
    assert other.search is None and other.sizes == {"n": 1000}
    kernel = bind(other, sizes={"n": 5000})  # a plain spec: it binds at any sizes
    assert kernel.grid == (5, 1, 1) and kernel.block == (512, 1, 1) and kernel.scalars["alpha"] == 1.0
    assert spec_from_dict(scale(), KERNELS, "scale.toml").launch.block == (128,)


def test_a_spec_without_search_has_no_table() -> None:
    spec = load_spec(KERNELS / "vadd.toml")
    assert spec.search is None and spec.launch.block == (256,)


def test_a_register_cap_is_a_directive_on_the_ptx_entry() -> None:
    spec = load_spec(EXAMPLES / "saxpy_stride.toml")
    assert spec.search is not None and dict(spec.search.baseline)["REGS"] == 0
    assert ".maxnreg" not in spec.ptx  # 0: ptxas's own choice
    capped = variant(spec.search, {"REGS": 32})
    entry = parse(capped.ptx, "saxpy_stride.ptx").entry("saxpy_stride")
    assert entry is not None and entry.attribute("maxnreg") == (32,)
    assert capped.ptx.replace(".maxnreg 32\n", "") == spec.ptx


def test_kernel_tuner_block_names_are_the_block_a_launch_leaves_out() -> None:
    spec = load_spec(EXAMPLES / "saxpy_stride.toml")
    assert spec.launch.block == (256,)  # baseline block_size_x
    assert spec.launch.grid == ("min(ceildiv(n, 256), sms * 8)",)
    assert bind(spec).grid == (1056, 1, 1)
    text = SCALE.replace('block = ["BLOCK"]', "").split("[search]")[0].replace("BLOCK", "block_size_x")
    doc = scale("[search.parameters]\nblock_size_x = [128, 256]\nblock_size_y = [2, 1]\nITEMS = [1]\n", text)
    assert spec_from_dict(doc, KERNELS, "scale.toml").launch.block == (128, 2)
    doc = scale("[search.parameters]\nblock_size_x = [128, 256]\nblock_size_z = [4]\nITEMS = [1]\n", text)
    assert spec_from_dict(doc, KERNELS, "scale.toml").launch.block == (128, 1, 4)
    doc = scale(
        "[search.parameters]\nblock_sizes = [128]\nITEMS = [1]\n", text.replace("block_size_x", "128")
    )
    with pytest.raises(SpecError, match=r"scale.toml: launch.block: missing"):
        spec_from_dict(doc, KERNELS, "scale.toml")


def test_defines_are_nvcc_options_and_knobs_wait_for_nvcc() -> None:
    spec = load_spec(EXAMPLES / "sgemm_tiled.toml")
    assert spec.cuda is not None and spec.search is not None and spec.ptx == ""
    tiles = ("-DBK=8", "-DWM=32", "-DWN=32", "-DTM=4", "-DTN=4", "-DWNITER=1")
    assert spec.cuda.options == ("-DBM=64", "-DBN=64", *tiles)
    assert spec.cuda.directives == ()
    other = variant(spec.search, {"BM": 128, "REGS": 128})
    assert other.cuda is not None
    assert other.cuda.options == ("-DBM=128", "-DBN=64", *tiles)
    assert other.cuda.directives == (("maxnreg", 128),)
    assert other.launch.block == (256,) and other.launch.grid == ("ceildiv(N, 64)", "ceildiv(M, 128)")


def test_string_and_float_parameters_are_defines_only() -> None:
    doc = tomllib.loads((EXAMPLES / "softmax_search.toml").read_text())
    doc["search"]["parameters"]["SCALE"] = [0.5, 2.0]
    doc["search"]["parameters"]["TYPE"] = ["float", "double"]
    doc["search"]["defines"] = ["BLOCK", "SCALE", "TYPE"]
    spec = spec_from_dict(doc, EXAMPLES, "softmax_search.toml")
    assert spec.cuda is not None and spec.cuda.options == ("-DBLOCK=256", "-DSCALE=0.5", "-DTYPE=float")
    doc["launch"]["grid"] = ["rows * SCALE"]
    with pytest.raises(SpecError, match=r"launch.grid\[0\]: 'rows \* SCALE' reads parameter 'SCALE', whose "
                       r"values \[0.5, 2.0\] are not all integers"):  # fmt: skip
        spec_from_dict(doc, EXAMPLES, "softmax_search.toml")


def test_constraints_read_sizes_and_may_divide() -> None:
    # and, or stop at the operand that decides: BLOCK = 128 divides by 0 only past ITEMS = 1.
    doc = scale('constraints = ["BLOCK == 128 and not ITEMS > 1 or n % (BLOCK - 128) == 232"]')
    spec = spec_from_dict(doc, KERNELS, "scale.toml")
    assert spec.search is not None and dict(spec.search.baseline) == {"BLOCK": 128, "ITEMS": 1}
    doc["search"]["baseline"] = {"ITEMS": 2}
    with pytest.raises(SpecError, match=r"search.baseline: the baseline \{'BLOCK': 128, 'ITEMS': 2\} does "
                       r"not meet search.constraints\[0\]"):  # fmt: skip
        spec_from_dict(doc, KERNELS, "scale.toml")
    doc = scale('constraints = ["BLOCK > 1000 * ITEMS"]')
    with pytest.raises(SpecError, match=r"scale.toml: search.constraints\[0\]: no configuration meets"):
        spec_from_dict(doc, KERNELS, "scale.toml")


def test_a_constraint_of_too_many_combinations_is_left_to_the_search() -> None:
    names = [f"P{i}" for i in range(9)]
    extra = "".join(f"{n} = [1, 2, 3, 4]\n" for n in names)  # 4**9 > MAX_COMBINATIONS
    text = SCALE.replace("[search]\nparameters = { BLOCK = [128, 256, 512], ITEMS = [1, 2, 4] }",
                         "[search.parameters]\nBLOCK = [128]\nITEMS = [1]\n" + extra)  # fmt: skip
    doc = tomllib.loads(text)
    doc["search"]["constraints"] = [" + ".join(names) + " > 100"]
    doc["search"]["baseline"] = {}
    with pytest.raises(SpecError, match=r"does not meet search.constraints"):  # only the baseline is tried
        spec_from_dict(doc, KERNELS, "scale.toml")


def test_directives_go_on_the_named_entry_only_once() -> None:
    ptx = (KERNELS / "scale.ptx").read_text()
    capped = add_directives(ptx, "scale", (("maxnreg", 40),), "x.toml: search.ptxas")
    assert declared_directives(capped, "scale") == {"maxnreg"} and declared_directives(ptx, "scale") == set()
    with pytest.raises(SpecError, match=r"x.toml: search.ptxas: the PTX's .entry scale declares .maxnreg"):
        add_directives(capped, "scale", (("maxnreg", 40),), "x.toml: search.ptxas")
    with pytest.raises(SpecError, match=r"the PTX has no \.entry scal to put \.maxnreg on"):
        add_directives(ptx, "scal", (("maxnreg", 40),), "x.toml: search.ptxas")
    doc = scale('ptxas = { maxrregcount = "BLOCK // 4" }')
    doc["kernel"] = {"source": capped, "entry": "scale"}
    with pytest.raises(
        SpecError, match=r"search.ptxas.maxrregcount: the PTX's .entry scale declares .maxnreg"
    ):
        spec_from_dict(doc, KERNELS, "scale.toml")
