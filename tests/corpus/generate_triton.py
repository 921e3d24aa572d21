"""Compile the corpus's Triton kernels to PTX ahead of time (no GPU) for several CUDA targets.

Run it with a Python that has Triton installed (Triton is not a dependency of the package);
see README.md for the exact commands.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_ptx import portable_file_directives, ptx_target

HERE = Path(__file__).resolve().parent
KERNELS_FILE = "triton_kernels.py"
DEFAULT_CCS = (90, 120)


@dataclass(frozen=True, slots=True)
class TritonSpec:
    """How one kernel is specialised for ahead-of-time compilation.

    Attributes
    ----------
    name : str
        Output stem; also the kernel's function name in ``triton_kernels.py``.
    signature : dict[str, str]
        Argument name -> Triton type (``"*fp32"``, ``"i32"``, ``"fp32"``, ``"constexpr"``).
    constexprs : dict[str, int]
        Values of the ``tl.constexpr`` arguments.
    aligned : tuple[str, ...]
        Arguments promised to be multiples of 16 (pointers: 16-byte aligned), as Triton's
        launcher would find at run time for typical tensors; enables vector loads.
    options : dict[str, int]
        Backend options (``num_warps``, ``num_stages``).
    """

    name: str
    signature: dict[str, str]
    constexprs: dict[str, int]
    aligned: tuple[str, ...] = ()
    options: dict[str, int] = field(default_factory=dict)


SPECS = (
    TritonSpec(
        "vector_add",
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        aligned=("x_ptr", "y_ptr", "out_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "softmax_rows",
        {
            "out_ptr": "*fp32",
            "in_ptr": "*fp32",
            "in_row_stride": "i32",
            "out_row_stride": "i32",
            "n_cols": "i32",
            "BLOCK": "constexpr",
        },
        {"BLOCK": 1024},
        aligned=("out_ptr", "in_ptr", "in_row_stride", "out_row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "layernorm_fwd",
        {
            "x_ptr": "*fp16",
            "y_ptr": "*fp16",
            "w_ptr": "*fp16",
            "b_ptr": "*fp16",
            "mean_ptr": "*fp32",
            "rstd_ptr": "*fp32",
            "row_stride": "i32",
            "n_cols": "i32",
            "eps": "fp32",
            "BLOCK": "constexpr",
        },
        {"BLOCK": 512},
        aligned=("x_ptr", "y_ptr", "w_ptr", "b_ptr", "mean_ptr", "rstd_ptr", "row_stride"),
        options={"num_warps": 8},
    ),
    TritonSpec(
        "matmul_f16",
        {
            "a_ptr": "*fp16",
            "b_ptr": "*fp16",
            "c_ptr": "*fp16",
            "M": "i32",
            "N": "i32",
            "K": "i32",
            "stride_am": "i32",
            "stride_ak": "constexpr",
            "stride_bk": "i32",
            "stride_bn": "constexpr",
            "stride_cm": "i32",
            "stride_cn": "constexpr",
            "BLOCK_M": "constexpr",
            "BLOCK_N": "constexpr",
            "BLOCK_K": "constexpr",
            "GROUP_M": "constexpr",
        },
        # Unit inner strides are constexpr, as Triton's launcher specialises a stride of 1.
        {
            "stride_ak": 1,
            "stride_bn": 1,
            "stride_cn": 1,
            "BLOCK_M": 64,
            "BLOCK_N": 64,
            "BLOCK_K": 32,
            "GROUP_M": 8,
        },
        aligned=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"),
        options={"num_warps": 4, "num_stages": 3},
    ),
    TritonSpec(
        "sum_partials",
        {
            "x_ptr": "*fp32",
            "partial_ptr": "*fp32",
            "n": "i32",
            "BLOCK": "constexpr",
            "PER_PROGRAM": "constexpr",
        },
        {"BLOCK": 1024, "PER_PROGRAM": 8},
        aligned=("x_ptr", "partial_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "histogram_atomic",
        {"keys_ptr": "*i32", "hist_ptr": "*i32", "n": "i32", "n_bins": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        aligned=("keys_ptr", "hist_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "dropout",
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "p": "fp32", "seed": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        aligned=("x_ptr", "out_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "cumsum_rows",
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "row_stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 256},
        aligned=("x_ptr", "out_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "argmax_rows",
        {"x_ptr": "*fp32", "out_ptr": "*i32", "row_stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        aligned=("x_ptr", "out_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "attention_fwd",
        {
            "q_ptr": "*fp16",
            "k_ptr": "*fp16",
            "v_ptr": "*fp16",
            "o_ptr": "*fp16",
            "seq_len": "i32",
            "sm_scale": "fp32",
            "head_stride": "i32",
            "BLOCK_M": "constexpr",
            "BLOCK_N": "constexpr",
            "HEAD_DIM": "constexpr",
        },
        # BLOCK_M 32 is below the 64 rows of a Hopper warpgroup MMA, so sm_90a lowers tl.dot
        # to mma.sync as sm_120a does (a 64-row tile would give wgmma there).
        {"BLOCK_M": 32, "BLOCK_N": 32, "HEAD_DIM": 64},
        aligned=("q_ptr", "k_ptr", "v_ptr", "o_ptr", "head_stride"),
        options={"num_warps": 4, "num_stages": 2},
    ),
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """Result of compiling one spec for one compute capability."""

    spec: str
    cc: int
    ptx: Path | None
    target: str
    error: str
    shared_bytes: int = 0


def load_kernels() -> types.ModuleType:
    """Execute ``triton_kernels.py`` under its bare file name.

    Triton records the kernel's file name in ``.file`` and in the DWARF compile unit; a
    relative name keeps directories of this machine out of the PTX (the DWARF ``comp_dir``
    stays empty). Requires the working directory to be this folder.
    """
    module = types.ModuleType("triton_kernels")
    module.__file__ = KERNELS_FILE
    sys.modules["triton_kernels"] = module
    code = compile(Path(KERNELS_FILE).read_text(), KERNELS_FILE, "exec")
    exec(code, module.__dict__)
    return module


def compile_spec(triton: Any, kernels: types.ModuleType, spec: TritonSpec, cc: int) -> tuple[str, int]:
    """Return the PTX text of ``spec`` compiled for compute capability ``cc`` and the dynamic
    shared memory (bytes) a launch must give it."""
    from triton.backends.compiler import GPUTarget

    fn = getattr(kernels, spec.name)
    names = list(spec.signature)
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in spec.aligned}
    src = triton.compiler.ASTSource(fn=fn, signature=spec.signature, constexprs=spec.constexprs, attrs=attrs)
    compiled = triton.compile(src, target=GPUTarget("cuda", cc, 32), options=dict(spec.options))
    ptx: str = compiled.asm["ptx"]
    return ptx, int(compiled.metadata.shared)


def write_readme(out_dir: Path, version: str, outcomes: list[Outcome]) -> None:
    """Write ``README.md`` in ``out_dir``: files, targets, options, and any failure."""
    by_name = {s.name: s for s in SPECS}
    lines = [
        "# Triton PTX corpus (generated by ../generate_triton.py; do not edit)",
        "",
        f"Triton {version}, compiled ahead of time with `triton.compile(ASTSource(...),",
        'target=GPUTarget("cuda", cc, 32))`; no GPU involved. Kernels: ../triton_kernels.py.',
        "",
        "Shared bytes: the dynamic shared memory a launch must give (Triton's `metadata.shared`).",
        "",
        "| file | kernel | compute capability | .target | options | shared bytes | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        opts = ", ".join(f"{k}={v}" for k, v in by_name[o.spec].options.items()) or "-"
        file = o.ptx.name if o.ptx else "-"
        status = "ok" if not o.error else "FAILED: " + o.error.replace("|", "\\|")
        shared = str(o.shared_bytes) if o.ptx else "-"
        lines.append(f"| {file} | {o.spec} | {o.cc} | {o.target or '-'} | {opts} | {shared} | {status} |")
    (out_dir / "README.md").write_text("\n".join(lines) + "\n")


def first_line(text: str) -> str:
    """Return the first non-empty line of ``text``."""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "(no message)")


def compile_all(
    triton: Any, kernels: types.ModuleType, only: list[str] | None, ccs: Iterable[int], out_dir: Path
) -> list[Outcome]:
    """Compile every selected spec for every compute capability; failures become outcomes."""
    from triton.errors import TritonError

    # What triton.compile raises for a kernel it cannot lower or assemble for a target.
    compile_errors: tuple[type[BaseException], ...] = (TritonError, RuntimeError, ValueError)
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes: list[Outcome] = []
    for spec in SPECS:
        if only and spec.name not in only:
            continue
        for cc in ccs:
            try:
                ptx, shared_bytes = compile_spec(triton, kernels, spec, cc)
            except compile_errors as e:
                error = f"{type(e).__name__}: {first_line(str(e))}"
                outcomes.append(Outcome(spec.name, cc, None, "", error))
                print(f"{spec.name} cc {cc}: FAILED: {e}", file=sys.stderr)
                continue
            target = ptx_target(ptx, f"{spec.name} cc {cc}")
            path = out_dir / f"{spec.name}.{target}.ptx"
            path.write_text(portable_file_directives(ptx, str(HERE), "."))
            outcomes.append(Outcome(spec.name, cc, path, target, "", shared_bytes))
            print(f"{path.name:36s} {path.stat().st_size:8d} B")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit status (1 when a kernel failed)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "triton", help="folder for the PTX files")
    ap.add_argument(
        "--cc", type=int, action="append", help=f"compute capability (repeatable); default {DEFAULT_CCS}"
    )
    ap.add_argument("--only", action="append", help="compile only these kernels")
    args = ap.parse_args(argv)
    out_dir: Path = args.out.resolve()

    # A private cache so every run compiles afresh; fp-fusion stated explicitly because
    # Triton's default for it is changing between releases.
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    with tempfile.TemporaryDirectory(prefix="triton-corpus-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        import triton

        os.chdir(HERE)
        outcomes = compile_all(triton, load_kernels(), args.only, args.cc or DEFAULT_CCS, out_dir)
    if not args.only:
        write_readme(out_dir, triton.__version__, outcomes)
    return 1 if any(o.error for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
