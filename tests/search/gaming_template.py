"""A template with planted gaming variants, for the search's GPU tests: ``kernel = "honest"`` is
the example vector add; the others are gaming kernels of tests/harness/gaming (right while
checked, then idle or cached while timed). A search must reject them, naming why, and never
rank their time."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference
from karyamorph.search.space import Parameter, Value
from karyamorph.search.template import Footprint, Template

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "honest": (ROOT / "datasets" / "kernels" / "vadd.ptx", "vadd"),
    "skip_after_warmup": (
        ROOT / "tests" / "harness" / "gaming" / "ptx" / "skip_after_warmup.ptx",
        "skip_after_warmup",
    ),
    "memo_sparse": (ROOT / "tests" / "harness" / "gaming" / "ptx" / "memo_sparse.ptx", "memo_sparse"),
}


def spec(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    path, entry = SOURCES[str(config["kernel"])]
    f32, u32 = DTYPES["f32"], DTYPES["u32"]
    return KernelSpec(
        ptx=path.read_text(), entry=entry, sizes=dict(sizes),
        launch=Launch(grid=("ceildiv(n, 256)",), block=(256,)),
        args=(ArgSpec("a", "in", f32, ("n",), Init("randn")), ArgSpec("b", "in", f32, ("n",), Init("randn")),
              ArgSpec("c", "out", f32, ("n",)), ArgSpec("n", "scalar", u32, value="n")),
        reference=Reference(torch="a + b"), atol=0.0, rtol=0.0, cost_bytes="12 * n",
    )  # fmt: skip


TEMPLATE = Template(
    name="vadd_gaming",
    summary="c = a + b, with planted gaming variants (test template)",
    parameters=(Parameter("kernel", tuple(SOURCES)),),
    build=spec,
    footprint=lambda c: Footprint(threads=256, registers=20),
    sizes={"n": (1 << 24) + 3},
    check_sizes={"n": 4099},
    baseline={"kernel": "honest"},
    torch_baseline="a + b",
)
