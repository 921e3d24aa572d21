"""PTX lines -> CUDA source lines from nvcc's ``.file``/``.loc``: which ``.loc`` holds where, and
the text of each line from the run's stored spec (inline, or the ``cu`` file beside it)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from karyamorph.render.source_lines import SourcePosition, loc_positions, source_positions
from karyamorph.store.reading import StoredRun

# The shape of nvcc 13.5's -lineinfo PTX: a .loc before each source line's instructions, one
# with inlining information, a function that ends, and the .file table after the code.
PTX = """\
.version 9.5
.target sm_90
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b32 \t%r<4>;
\t.loc\t1 3 0
\tld.param.b64 \t%rd1, [k_param_0];
\t.loc\t2 70 3, function_name $L__info_string0, inlined_at 1 4 5
\tshfl.sync.bfly.b32 \t%r1, %r2, 16, 31, -1;
\t.loc\t1 4 5
\tst.global.b32 \t[%rd1], %r1;
\t.loc\t1 0 0
\tmov.u32 \t%r3, 0;
\t.loc\t1 5 1
\tret;

}
.visible .entry other()
{
\tret;
}
\t.file\t1 "k.cu"
\t.file\t2 "/opt/cuda/include/sm_30_intrinsics.hpp"
"""

CU = '// k\n#include <cuda.h>\nextern "C" __global__ void k(float* y) {\n    y[0] = 1;\n}\n'


def stored(spec_text: str, spec_path: Path | None, ptx: str = PTX) -> StoredRun:
    return StoredRun(
        run_id="r", entry="k", arch="sm_90", status="pass", created_at=datetime.now(UTC), label=None,
        spec_path=str(spec_path) if spec_path else None, spec_text=spec_text, launch={}, host="h",
        device=None, kernel_hash="0", ptx=ptx, stages=(), metrics=(), samples_ns=(), sass={}, findings=(),
    )  # fmt: skip


def test_a_loc_holds_until_the_next_or_the_end_of_its_function() -> None:
    at = loc_positions(PTX)
    lines = PTX.splitlines()
    number: dict[str, int] = {}
    for i, text in enumerate(lines, start=1):
        number.setdefault(text.strip(), i)  # the first line of that text: in k
    assert at[number[".loc\t1 3 0"]] == ("k.cu", 3)
    assert at[number["ld.param.b64 \t%rd1, [k_param_0];"]] == ("k.cu", 3)
    # Inlined code belongs to the header line it is, not to the line it is inlined at.
    assert at[number["shfl.sync.bfly.b32 \t%r1, %r2, 16, 31, -1;"]] == (
        "/opt/cuda/include/sm_30_intrinsics.hpp",
        70,
    )
    assert number["mov.u32 \t%r3, 0;"] not in at  # line 0: no source line
    assert at[number["st.global.b32 \t[%rd1], %r1;"]] == ("k.cu", 4)
    assert at[number["ret;"]] == ("k.cu", 5)
    assert number[".reg .b32 \t%r<4>;"] not in at  # before the first .loc
    assert all(n < number[".visible .entry other()"] for n in at)  # nothing leaks into the next function


def test_inline_source_text_comes_from_the_stored_spec() -> None:
    text = f'[kernel]\nentry = "k"\ncuda = """{CU}"""\n'
    ptx = PTX.replace('"k.cu"', '"<kernel.cuda>"')
    positions = source_positions(stored(text, None, ptx))
    assert SourcePosition("<kernel.cuda>", 4, "    y[0] = 1;") in positions.values()
    header = next(p for p in positions.values() if p.line == 70)
    assert header.text is None and header.label == "sm_30_intrinsics.hpp:70"


def test_a_cu_file_is_read_beside_the_spec_and_missing_it_leaves_the_lines(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(CU)
    text = '[kernel]\nentry = "k"\ncu = "k.cu"\n'
    positions = source_positions(stored(text, tmp_path / "k.toml"))
    assert {p.text for p in positions.values() if p.file == "k.cu"} == {
        'extern "C" __global__ void k(float* y) {',
        "    y[0] = 1;",
        "}",
    }
    (tmp_path / "k.cu").unlink()
    gone = source_positions(stored(text, tmp_path / "k.toml"))
    assert gone.keys() == positions.keys() and all(p.text is None for p in gone.values())


def test_a_spec_of_ptx_shows_no_source_lines(tmp_path: Path) -> None:
    (tmp_path / "k.ptx").write_text(PTX)
    assert source_positions(stored('[kernel]\nentry = "k"\nptx = "k.ptx"\n', tmp_path / "k.toml")) == {}
