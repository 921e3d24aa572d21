"""A template for tests of Ctrl-C while z3 solves: every variant is the scatter kernel of
``data/scatter.ptx`` (thread i writes out[hash(i)]), whose race check keeps z3 busy for the model
gate's whole time budget (about 10 s); its one parameter changes nothing but the variant's key."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference
from karyamorph.search.space import Parameter, Value
from karyamorph.search.template import Footprint, Template

PTX = Path(__file__).resolve().parent / "data" / "scatter.ptx"


def spec(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    return KernelSpec(
        ptx=PTX.read_text(), entry="scatter", sizes=dict(sizes),
        launch=Launch(grid=("blocks",), block=(1024,)),
        args=(ArgSpec("out", "out", DTYPES["u32"], (65536,), Init("zeros")),),
        reference=Reference(torch="out"),
    )  # fmt: skip


TEMPLATE = Template(
    name="scatter",
    summary="thread i writes out[hash(i)] (test template: its race check outlasts z3's budget)",
    parameters=(Parameter("copy", (1, 2, 3, 4)),),
    build=spec,
    footprint=lambda c: Footprint(threads=1024, registers=16),
    sizes={"blocks": 64},
    check_sizes={"blocks": 64},
    baseline={"copy": 1},
    torch_baseline="out",
)
