"""The kernel around one ``ldmatrix``/``stmatrix`` form, shared by the oracles of
:mod:`tests.model.oracle.matrix` (``.b16``) and :mod:`tests.model.oracle.matrix_b8` (8-bit and
narrower elements)."""

from __future__ import annotations


def frame(body: str, regs: int, warps: int = 1, barrier: bool = True, target: str = "sm_90") -> str:
    """The kernel around one form's ``body``: copy ``tile`` (32 rows x 16 bytes per warp) into
    shared memory (``%r7``: the thread's row), point lane ``i`` at row ``rows[i]`` (``%r10``,
    generic ``%rd22``), and ``%rd20`` at the thread's ``regs`` words of ``frag`` (``%rd12``: its
    row of ``out``)."""
    return f"""
.version 8.7
.target {target}
.address_size 64
.visible .entry k(.param .u64 tile, .param .u64 frag, .param .u64 rows, .param .u64 out)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<16>;
    .reg .b32 %f<4>;
    .reg .b64 %rd<24>;
    .shared .align 16 .b8 s[{512 * warps}];
    ld.param.u64 %rd1, [tile];
    ld.param.u64 %rd2, [frag];
    ld.param.u64 %rd3, [rows];
    ld.param.u64 %rd4, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd5, %r1, 16;
    add.s64 %rd6, %rd1, %rd5;
    add.s64 %rd12, %rd4, %rd5;
    mov.u32 %r6, s;
    mad.lo.u32 %r7, %r1, 16, %r6;
    ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd6];
    st.shared.v4.u32 [%r7], {{%r2, %r3, %r4, %r5}};
    {"bar.sync 0;" if barrier else ""}
    mul.wide.u32 %rd7, %r1, 4;
    add.s64 %rd8, %rd3, %rd7;
    ld.global.u32 %r8, [%rd8];
    mad.lo.u32 %r10, %r8, 16, %r6;
    cvt.u64.u32 %rd21, %r10;
    cvta.shared.u64 %rd22, %rd21;
    mul.wide.u32 %rd9, %r1, {4 * regs};
    add.s64 %rd20, %rd2, %rd9;
    {body}
    ret;
}}
"""
