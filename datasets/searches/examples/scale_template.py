"""A search template of one's own: y = alpha * x over n floats, written with the isa builder.

Each thread scales ``items`` elements ``block`` apart (so a warp's loads stay consecutive), and
a block covers ``block * items`` elements; the block size and the items per thread are the
parameters. ``karyamorph search run datasets/searches/examples/scale_template.py`` searches it.
"""

from __future__ import annotations

from collections.abc import Mapping

import karyamorph as km

F32, U32 = km.DTYPES["f32"], km.DTYPES["u32"]


def build(config: Mapping[str, km.Value], arch: km.Arch, sizes: Mapping[str, int]) -> km.KernelSpec:
    """The variant ``config`` for ``arch`` at ``sizes`` (``n``)."""
    block, items = int(config["block"]), int(config["items"])
    k = km.KernelBuilder("scale", target=arch.name, version="8.7")  # PTX 8.7: sm_80 to sm_120
    x, y = (k.to_global(k.ld_param(k.param_ptr(name))) for name in ("x", "y"))
    alpha = k.ld_param(k.param("alpha", "f32"))
    n = k.ld_param(k.param("n", "u32"))
    first = k.mad("u32", k.sreg("ctaid.x"), block * items, k.sreg("tid.x"))
    for j in range(items):
        i = k.add("u32", first, j * block)
        with k.if_(k.setp("lt", "u32", i, n)):
            offset = k.mul_wide("u32", i, 4)
            value = k.ld("global", "f32", k.add("u64", x, offset))
            # mul.rn: one correctly rounded product, bit-identical to torch's alpha * x
            k.st("global", "f32", k.add("u64", y, offset), k.mul("rn.f32", alpha, value))
    k.ret()
    return km.KernelSpec(
        ptx=k.ptx(), entry="scale", sizes=dict(sizes),
        launch=km.Launch((f"ceildiv(n, {block * items})",), (block,)),
        args=(km.ArgSpec("x", "in", F32, ("n",), km.Init("randn")), km.ArgSpec("y", "out", F32, ("n",)),
              km.ArgSpec("alpha", "scalar", F32, value=2.5), km.ArgSpec("n", "scalar", U32, value="n")),
        reference=km.Reference(torch="alpha * x"), atol=0.0, rtol=0.0, cost_bytes="8 * n", cost_flops="n",
    )  # fmt: skip


TEMPLATE = km.Template(
    name="scale",
    summary="y = alpha * x over n floats (block size, items per thread)",
    parameters=(km.Parameter("block", (64, 128, 256, 512, 1024)), km.Parameter("items", (1, 2, 4, 8))),
    constraints=(km.Constraint("block * items <= 4096"),),
    build=build,
    footprint=lambda config: km.Footprint(threads=int(config["block"]), registers=16 + int(config["items"])),
    sizes={"n": 1 << 24},
    check_sizes={"n": 4099},  # not a multiple of any block: the last block's guards are checked
    baseline={"block": 256, "items": 1},
    torch_baseline="alpha * x",
    equivalent_to_baseline=True,  # the same multiply on every element, only moved between threads
)
