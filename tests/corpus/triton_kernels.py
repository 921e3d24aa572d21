"""Triton kernels of the PTX corpus; generate_triton.py compiles them ahead of time, without a GPU."""
# Triton kernel parameters carry no Python annotations (Triton reads them as specialisation
# hints), so the usual "every def is typed" rule cannot apply here.
# mypy: disable-error-code="no-untyped-def"

import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def softmax_rows(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    # One program per row; the row fits in one block (BLOCK >= n_cols, a power of two).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


@triton.jit
def layernorm_fwd(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, n_cols, eps, BLOCK: tl.constexpr
):
    # One program per row, in BLOCK-wide chunks: rows may be longer than one block.
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=mask)


@triton.jit
def matmul_f16(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # C (fp16) = A (fp16) @ B (fp16) with an fp32 accumulator; programs are ordered in groups of
    # GROUP_M block rows so neighbouring programs reuse the same B columns from L2.
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * grid_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_m
    pid_n = (pid % per_group) // group_m

    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_tile, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c, acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def sum_partials(x_ptr, partial_ptr, n, BLOCK: tl.constexpr, PER_PROGRAM: tl.constexpr):
    # First stage of a two-stage sum: program p reduces PER_PROGRAM blocks into partial[p].
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    base = pid * BLOCK * PER_PROGRAM
    for i in range(PER_PROGRAM):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def histogram_atomic(keys_ptr, hist_ptr, n, n_bins, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    k = tl.load(keys_ptr + offs, mask=mask, other=0)
    k = tl.minimum(tl.maximum(k, 0), n_bins - 1)
    tl.atomic_add(hist_ptr + k, 1, mask=mask)


@triton.jit
def dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    # Inverted dropout with a counter-based mask: element i is kept when tl.rand(seed, i) > p,
    # so the mask is a pure function of (seed, index) and needs no stored state.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@triton.jit
def cumsum_rows(x_ptr, out_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    # Inclusive prefix sum of each row; one program per row, the row fits in one block.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * row_stride + cols, tl.cumsum(x, axis=0), mask=mask)


@triton.jit
def argmax_rows(x_ptr, out_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    # Index of each row's largest element (the first one on a tie); one program per row.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.argmax(x, axis=0))


@triton.jit
def attention_fwd(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    sm_scale,
    head_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    # Flash-attention forward for one (query block, head): online softmax over key blocks,
    # f16 operands, f32 accumulators; Q, K, V, O are [heads, seq_len, HEAD_DIM], row-major.
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    base = head * head_stride
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0
    )
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    for start_n in range(0, seq_len, BLOCK_N):
        cols = start_n + offs_n
        kt = tl.load(
            k_ptr + base + cols[None, :] * HEAD_DIM + offs_d[:, None], mask=cols[None, :] < seq_len, other=0.0
        )
        qk = tl.dot(q, kt)
        qk = tl.where(cols[None, :] < seq_len, qk * qk_scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(
            v_ptr + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cols[:, None] < seq_len, other=0.0
        )
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    tl.store(
        o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        (acc / l_i[:, None]).to(tl.float16),
        mask=offs_m[:, None] < seq_len,
    )
