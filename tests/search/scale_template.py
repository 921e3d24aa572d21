"""A small template for the search's own tests: ``out[i] = 2 * x[i]`` with a block size, and two
planted faults a shipped template must never have: ``guard = "off"`` drops the bounds guard
(the last block writes past ``out``), ``fence = "proxy"`` emits an instruction sm_80 lacks."""

from __future__ import annotations

from collections.abc import Mapping

from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference
from karyamorph.search.space import Parameter, Value
from karyamorph.search.template import Footprint, Template


def ptx(config: Mapping[str, Value], arch: Arch) -> str:
    k = KernelBuilder("scale2", target=arch.name)
    x, out, n = k.param_ptr("x"), k.param_ptr("out"), k.param("n", "u32")
    px, po, count = k.to_global(k.ld_param(x)), k.to_global(k.ld_param(out)), k.ld_param(n)
    i = k.global_thread_id_x()
    if config["fence"] == "proxy":
        k.instr("fence.proxy.async")
    done = k.label("done")
    if config["guard"] == "on":
        k.bra(done, guard=k.setp("ge", "u32", i, count))
    offset = k.mul_wide("u32", i, 4)
    value = k.ld("global", "f32", k.add("u64", px, offset))
    k.st("global", "f32", k.add("u64", po, offset), k.add("f32", value, value))
    k.place(done)
    k.ret()
    return k.ptx()


def spec(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    block = int(config["block"])
    f32, u32 = DTYPES["f32"], DTYPES["u32"]
    return KernelSpec(
        ptx=ptx(config, arch), entry="scale2", sizes=dict(sizes),
        launch=Launch(grid=(f"ceildiv(n, {block})",), block=(block,)),
        args=(ArgSpec("x", "in", f32, ("n",), Init("randn")), ArgSpec("out", "out", f32, ("n",)),
              ArgSpec("n", "scalar", u32, value="n")),
        reference=Reference(torch="2 * x"), atol=0.0, rtol=0.0, cost_bytes="8 * n",
    )  # fmt: skip


TEMPLATE = Template(
    name="scale2",
    summary="out = 2 * x (test template with planted faults)",
    parameters=(
        Parameter("block", (32, 64, 128, 256, 512, 1024, 2048)),
        Parameter("guard", ("on", "off")),
        Parameter("fence", ("none", "proxy")),
    ),
    build=spec,
    footprint=lambda c: Footprint(threads=int(c["block"]), registers=8),
    sizes={"n": (1 << 20) + 3},  # no block size divides it: an unguarded block overruns
    check_sizes={"n": 1000},
    baseline={"block": 256, "guard": "on", "fence": "none"},
    torch_baseline="2 * x",
    equivalent_to_baseline=True,
)
