"""Kernels at the edge of what ptxas accepts and what the CPU model takes on, written as specs."""

from __future__ import annotations

from pathlib import Path

HEAD = ".version 8.7\n.target sm_80\n.address_size 64\n\n"


def regs_ptx(count: int) -> str:
    """An entry that declares ``count`` predicates and three 64-bit registers, and stores tid.x."""
    return HEAD + (
        ".visible .entry k(.param .u64 out)\n{\n"
        f"    .reg .pred %p<{count}>;\n"
        "    .reg .b64 %rd<3>;\n"
        "    .reg .b32 %r<2>;\n"
        "    ld.param.u64 %rd1, [out];\n"
        "    cvta.to.global.u64 %rd1, %rd1;\n"
        "    mov.u32 %r1, %tid.x;\n"
        "    mul.wide.u32 %rd2, %r1, 4;\n"
        "    add.u64 %rd1, %rd1, %rd2;\n"
        "    st.global.u32 [%rd1], %r1;\n"
        "    ret;\n}\n"
    )


def local_ptx(local_bytes: int) -> str:
    """An entry with ``local_bytes`` of local memory per thread; it stores tid.x to out[tid.x]."""
    return HEAD + (
        ".visible .entry k(.param .u64 out)\n{\n"
        f"    .local .align 4 .b8 buf[{local_bytes}];\n"
        "    .reg .b64 %rd<4>;\n"
        "    .reg .b32 %r<3>;\n"
        "    mov.u64 %rd3, buf;\n"
        "    mov.u32 %r1, %tid.x;\n"
        "    st.local.u32 [%rd3+1000], %r1;\n"
        "    ld.local.u32 %r2, [%rd3+1000];\n"
        "    ld.param.u64 %rd1, [out];\n"
        "    cvta.to.global.u64 %rd1, %rd1;\n"
        "    mul.wide.u32 %rd2, %r1, 4;\n"
        "    add.u64 %rd1, %rd1, %rd2;\n"
        "    st.global.u32 [%rd1], %r2;\n"
        "    ret;\n}\n"
    )


SHARED_PTX = HEAD + (
    ".extern .shared .align 16 .b8 dyn[];\n\n"
    ".visible .entry k(.param .u64 out)\n{\n"
    "    .reg .b64 %rd<3>;\n"
    "    .reg .b32 %r<3>;\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    st.shared.u32 [dyn], %r1;\n"
    "    ret;\n}\n"
)

SPIN_PTX = HEAD + (".visible .entry k(.param .u64 out)\n{\nLOOP:\n    bra.uni LOOP;\n}\n")


def write_spec(
    folder: Path, name: str, ptx: str, *, grid: int = 1, block: int = 32, shared_bytes: int = 0
) -> Path:
    """``name``.ptx and ``name``.toml in ``folder``: one u32 output of grid x block elements,
    whose reference is the thread index within its block (what the kernels above store when
    the grid is one block)."""
    (folder / f"{name}.ptx").write_text(ptx)
    spec = folder / f"{name}.toml"
    spec.write_text(
        f'[kernel]\nptx = "{name}.ptx"\nentry = "k"\n\n'
        f"[launch]\ngrid = [{grid}]\nblock = [{block}]\nshared_bytes = {shared_bytes}\n\n"
        f'[[args]]\nname = "out"\nrole = "out"\ndtype = "u32"\nshape = [{grid * block}]\ninit = "zeros"\n\n'
        f'[reference]\ntorch = "(torch.arange(out.numel()) % {block}).to(out.dtype)"\n'
    )
    return spec
