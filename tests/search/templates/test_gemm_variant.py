"""What the two GEMM templates share: a configuration's footprint and spec come from its kernel
shape, sizes the tiles do not divide are refused before any PTX is written, and the tolerance
is the long dot product's plus the variant's own relative part."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from karyamorph.isa.arch import Arch
from karyamorph.search.space import Value
from karyamorph.search.template import Footprint
from karyamorph.search.templates import hgemm, sgemm
from karyamorph.search.templates.gemm_common import GemmVariant, dot_atol
from karyamorph.search.templates.sgemm_kernel import SgemmShape

ARCH = Arch.parse("sm_90")


def written_variant(written: list[SgemmShape]) -> GemmVariant[SgemmShape]:
    """SGEMM's shapes and registers with a stand-in PTX writer that notes each shape it writes."""

    def ptx(s: SgemmShape, arch: Arch) -> str:
        written.append(s)
        return f"// {s.entry} for {arch.name}"

    return GemmVariant(sgemm.shape, sgemm.registers, ptx, "f16", "a @ b", 0.5)


def test_the_spec_and_the_footprint_come_from_the_shape() -> None:
    written: list[SgemmShape] = []
    variant = written_variant(written)
    config: Mapping[str, Value] = sgemm.TEMPLATE.baseline
    s = sgemm.shape(config)
    sizes = {"M": 128, "N": 256, "K": 64}
    spec = variant.build(config, ARCH, sizes)
    assert written == [s] and spec.ptx == f"// {s.entry} for sm_90" and spec.entry == s.entry
    assert spec.launch.block == (s.threads,) and spec.launch.shared_bytes == s.shared_bytes
    assert spec.launch.grid == (f"N / {s.bn}", f"M / {s.bm}")
    assert (spec.atol, spec.rtol) == (dot_atol(64), 0.5)
    assert {a.name: a.dtype.name for a in spec.args}["c"] == "f16"
    assert variant.footprint(config) == Footprint(s.threads, s.shared_bytes, sgemm.registers(s))


def test_sizes_the_tiles_do_not_divide_are_refused_before_any_ptx_is_written() -> None:
    written: list[SgemmShape] = []
    variant = written_variant(written)
    with pytest.raises(ValueError, match="K = 100 must be a positive multiple of"):
        variant.build(sgemm.TEMPLATE.baseline, ARCH, {"M": 128, "N": 128, "K": 100})
    assert written == []


@pytest.mark.parametrize(("module", "rtol"), [(sgemm, 1e-5), (hgemm, 1e-3)])
def test_each_template_builds_and_sizes_through_its_variant(module: object, rtol: float) -> None:
    template = module.TEMPLATE  # type: ignore[attr-defined]
    sizes = template.check_sizes
    spec = template.build(template.baseline, ARCH, sizes)
    assert (spec.atol, spec.rtol) == (dot_atol(sizes["K"]), rtol)
    s = module.shape(template.baseline)  # type: ignore[attr-defined]
    assert template.footprint(template.baseline).registers == module.registers(s)  # type: ignore[attr-defined]
