"""Triton kernels of the PTX corpus; generate_triton.py compiles them ahead of time, without a GPU."""
# Triton kernel parameters carry no Python annotations (Triton reads them as specialisation
# hints), so the usual "every def is typed" rule cannot apply here.
# mypy: disable-error-code="no-untyped-def"

import triton
import triton.language as tl
from triton.language.extra import libdevice


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


@triton.jit
def matmul_splitk(
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
    SPLIT_K: tl.constexpr,
):
    # Split-K GEMM: C (fp32, zeroed by the caller) += A (fp16) @ B (fp16). Program (tile, s)
    # takes every SPLIT_K-th K block from block s on and adds its fp32 partial tile with atomics.
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a_tile = a_ptr + (rm % M)[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_left = K - k * BLOCK_K * SPLIT_K
        a = tl.load(a_tile, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * SPLIT_K * stride_ak
        b_tile += BLOCK_K * SPLIT_K * stride_bk
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.atomic_add(c, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def rmsnorm_fwd(x_ptr, y_ptr, w_ptr, rstd_ptr, row_stride, n_cols, eps, BLOCK: tl.constexpr):
    # fp16 RMS norm, fp32 statistics; one program per row, the row fits in one block.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.math.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + row * row_stride + cols, (x * rstd * w).to(tl.float16), mask=mask)


@triton.jit
def layernorm_bwd_dx(
    dx_ptr,
    dy_ptr,
    dw_partial_ptr,
    db_partial_ptr,
    x_ptr,
    w_ptr,
    mean_ptr,
    rstd_ptr,
    row_stride,
    n_rows,
    n_cols,
    BLOCK: tl.constexpr,
):
    # Layer norm backward, first stage: dx of rows pid, pid + P, pid + 2P, ... (P programs), and
    # this program's partial sums of dw = dy * xhat and db = dy over those rows, one row of
    # dw_partial / db_partial per program; layernorm_bwd_dwdb adds the partial rows up.
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(pid, n_rows, n_programs):
        x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = tl.where(mask, w * dy, 0.0)
        c1 = tl.sum(xhat * wdy, axis=0) / n_cols
        c2 = tl.sum(wdy, axis=0) / n_cols
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * row_stride + cols, dx.to(tl.float16), mask=mask)
        dw += dy * xhat
        db += dy
    tl.store(dw_partial_ptr + pid * n_cols + cols, dw, mask=mask)
    tl.store(db_partial_ptr + pid * n_cols + cols, db, mask=mask)


@triton.jit
def layernorm_bwd_dwdb(
    dw_partial_ptr, db_partial_ptr, dw_ptr, db_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    # Layer norm backward, second stage: column sums of the [M, N] partial dw and db.
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_M):
        rows = i + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(dw_partial_ptr + offs, mask=mask, other=0.0)
        db += tl.load(db_partial_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < N)


@triton.jit
def cross_entropy_fwd(
    logits_ptr, labels_ptr, loss_ptr, lse_ptr, row_stride, n_cols, ignore_index, BLOCK: tl.constexpr
):
    # Per-row cross-entropy: loss = logsumexp(x) - x[label] (0 where the label is ignore_index);
    # the row's logsumexp is kept for the backward pass. One program per row.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    label = tl.load(labels_ptr + row)
    x = tl.load(logits_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    tl.store(lse_ptr + row, lse)
    loss = 0.0
    if label != ignore_index:
        loss = lse - tl.load(logits_ptr + row * row_stride + label)
    tl.store(loss_ptr + row, loss)


@triton.jit
def softmax_online(out_ptr, in_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    # Softmax of rows longer than a block: one pass over the row's chunks keeps a running max
    # and a sum rescaled whenever the max grows, a second pass writes the probabilities.
    row = tl.program_id(0)
    x_row = in_ptr + row * row_stride
    m = -float("inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * row_stride + cols, tl.exp(x - m) / d, mask=cols < n_cols)


@triton.jit
def argmin_rows(x_ptr, idx_ptr, val_ptr, n_rows, row_stride, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # Each row's smallest element and its index, ROWS rows per program (a 2-D tile).
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * row_stride + cols[None, :], mask=mask, other=float("inf"))
    val, idx = tl.min(x, axis=1, return_indices=True)
    tl.store(val_ptr + rows, val, mask=rows < n_rows)
    tl.store(idx_ptr + rows, idx, mask=rows < n_rows)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def cumprod_rows(x_ptr, out_ptr, n_rows, row_stride, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # Inclusive running product along each row of a [ROWS, BLOCK] tile, with tl.associative_scan.
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * row_stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    tl.store(out_ptr + offs, tl.associative_scan(x, 1, _mul), mask=mask)


@triton.jit
def gelu(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Exact GELU, x * Phi(x) with Phi written through erf.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)


@triton.jit
def gelu_tanh(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # GELU's tanh approximation, with libdevice's tanh.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + libdevice.tanh(inner)), mask=mask)


@triton.jit
def silu_mul(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # SwiGLU's gate: silu(a) * b on fp16 tensors, computed in fp32.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a * tl.sigmoid(a) * b).to(tl.float16), mask=mask)


@triton.jit
def rope_fwd(x_ptr, cos_ptr, sin_ptr, out_ptr, n_heads, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    # Rotary embedding (rotate-half form) of x [seq, heads, HEAD_DIM]; cos and sin are
    # [seq, HEAD_DIM / 2]. One program per position, all its heads at once.
    pos = tl.program_id(0)
    heads = tl.arange(0, BLOCK_H)
    half = tl.arange(0, HEAD_DIM // 2)
    mask = heads[:, None] < n_heads
    offs = pos * n_heads * HEAD_DIM + heads[:, None] * HEAD_DIM + half[None, :]
    x1 = tl.load(x_ptr + offs, mask=mask, other=0.0)
    x2 = tl.load(x_ptr + offs + HEAD_DIM // 2, mask=mask, other=0.0)
    c = tl.load(cos_ptr + pos * (HEAD_DIM // 2) + half)[None, :]
    s = tl.load(sin_ptr + pos * (HEAD_DIM // 2) + half)[None, :]
    tl.store(out_ptr + offs, x1 * c - x2 * s, mask=mask)
    tl.store(out_ptr + offs + HEAD_DIM // 2, x2 * c + x1 * s, mask=mask)


@triton.jit
def matmul_splitk_partials(
    a_ptr,
    b_ptr,
    ws_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    # Split-K GEMM without atomics, first kernel: program (tile, s) writes its fp32 partial tile
    # (every SPLIT_K-th K block from block s on) to slice s of a [SPLIT_K, M, N] workspace.
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a_tile = a_ptr + (rm % M)[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_left = K - k * BLOCK_K * SPLIT_K
        a = tl.load(a_tile, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * SPLIT_K * stride_ak
        b_tile += BLOCK_K * SPLIT_K * stride_bk
    ws = ws_ptr + pid_k * M * N + rm[:, None] * N + rn[None, :]
    tl.store(ws, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def splitk_reduce(ws_ptr, c_ptr, MN, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    # Split-K GEMM without atomics, second kernel: C (fp16) = the sum of the SPLIT_K partials.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(SPLIT_K):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(tl.float16), mask=mask)


@triton.jit
def matmul_fp8(
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
):
    # C (fp32) = A (e4m3) @ B (e4m3): Triton lowers tl.dot of two float8e4nv tiles to the
    # tensor cores' eight-bit MMA (mma.sync m16n8k32 on sm_120, wgmma k32 on sm_90).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_tile, mask=(rk[:, None] < K - k * BLOCK_K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_mxfp4(
    a_ptr,
    a_scale_ptr,
    b_ptr,
    b_scale_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    # C (fp32) = (A * 2^sa) @ (B * 2^sb)^T in the OCP MX format: A (M x K) and B (N x K) are e2m1
    # codes packed two to a byte along K (low nibble first), each run of 32 elements of K scaled
    # by one ue8m0 byte (a_scale: M x K/32, b_scale: N x K/32). tl.dot_scaled lowers to the
    # block-scaled mma.sync on sm_120 and to an upcast plus a bf16 wgmma on sm_90.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rb = tl.arange(0, BLOCK_K // 2)
    rs = tl.arange(0, BLOCK_K // 32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptr + rm[:, None] * (K // 2) + k * (BLOCK_K // 2) + rb[None, :])
        b = tl.load(b_ptr + rn[:, None] * (K // 2) + k * (BLOCK_K // 2) + rb[None, :])
        sa = tl.load(a_scale_ptr + rm[:, None] * (K // 32) + k * (BLOCK_K // 32) + rs[None, :])
        sb = tl.load(b_scale_ptr + rn[:, None] * (K // 32) + k * (BLOCK_K // 32) + rs[None, :])
        acc = tl.dot_scaled(a, sa, "e2m1", b.T, sb, "e2m1", acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def matmul_tma(
    a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    # C (fp16) = A (fp16) @ B (fp16) with an fp32 accumulator, every tile moved by TMA through
    # host-side tensor descriptors (TensorDescriptor): A (M x K) and B (K x N) loaded box by box
    # into swizzled shared memory on an mbarrier pipeline, C stored from shared memory by a bulk
    # tensor copy. Boxes past an edge read zeros and write nothing, so no mask is needed.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))
