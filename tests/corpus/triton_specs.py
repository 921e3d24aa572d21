"""How each Triton kernel of the corpus is specialised for ahead-of-time compilation: its signature,
constexpr values, aligned arguments and backend options (generate_triton.py compiles them)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    TritonSpec(
        "matmul_splitk",
        {
            "a_ptr": "*fp16",
            "b_ptr": "*fp16",
            "c_ptr": "*fp32",
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
            "SPLIT_K": "constexpr",
        },
        # 32-row tiles keep sm_90a on mma.sync (64 rows would give wgmma), as in attention_fwd.
        {
            "stride_ak": 1,
            "stride_bn": 1,
            "stride_cn": 1,
            "BLOCK_M": 32,
            "BLOCK_N": 32,
            "BLOCK_K": 32,
            "SPLIT_K": 2,
        },
        aligned=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"),
        options={"num_warps": 4, "num_stages": 2},
    ),
    TritonSpec(
        "rmsnorm_fwd",
        {
            "x_ptr": "*fp16",
            "y_ptr": "*fp16",
            "w_ptr": "*fp16",
            "rstd_ptr": "*fp32",
            "row_stride": "i32",
            "n_cols": "i32",
            "eps": "fp32",
            "BLOCK": "constexpr",
        },
        {"BLOCK": 1024},
        aligned=("x_ptr", "y_ptr", "w_ptr", "rstd_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "layernorm_bwd_dx",
        {
            "dx_ptr": "*fp16",
            "dy_ptr": "*fp16",
            "dw_partial_ptr": "*fp32",
            "db_partial_ptr": "*fp32",
            "x_ptr": "*fp16",
            "w_ptr": "*fp16",
            "mean_ptr": "*fp32",
            "rstd_ptr": "*fp32",
            "row_stride": "i32",
            "n_rows": "i32",
            "n_cols": "i32",
            "BLOCK": "constexpr",
        },
        {"BLOCK": 512},
        aligned=("dx_ptr", "dy_ptr", "dw_partial_ptr", "db_partial_ptr", "x_ptr", "w_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "layernorm_bwd_dwdb",
        {
            "dw_partial_ptr": "*fp32",
            "db_partial_ptr": "*fp32",
            "dw_ptr": "*fp32",
            "db_ptr": "*fp32",
            "M": "i32",
            "N": "i32",
            "BLOCK_M": "constexpr",
            "BLOCK_N": "constexpr",
        },
        {"BLOCK_M": 32, "BLOCK_N": 128},
        aligned=("dw_partial_ptr", "db_partial_ptr", "dw_ptr", "db_ptr", "N"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "cross_entropy_fwd",
        {
            "logits_ptr": "*fp32",
            "labels_ptr": "*i64",
            "loss_ptr": "*fp32",
            "lse_ptr": "*fp32",
            "row_stride": "i32",
            "n_cols": "i32",
            "ignore_index": "i32",
            "BLOCK": "constexpr",
        },
        {"BLOCK": 1024},
        aligned=("logits_ptr", "labels_ptr", "loss_ptr", "lse_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "softmax_online",
        {"out_ptr": "*fp32", "in_ptr": "*fp32", "row_stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 256},
        aligned=("out_ptr", "in_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "argmin_rows",
        {
            "x_ptr": "*fp32",
            "idx_ptr": "*i32",
            "val_ptr": "*fp32",
            "n_rows": "i32",
            "row_stride": "i32",
            "n_cols": "i32",
            "ROWS": "constexpr",
            "BLOCK": "constexpr",
        },
        {"ROWS": 4, "BLOCK": 256},
        aligned=("x_ptr", "idx_ptr", "val_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "cumprod_rows",
        {
            "x_ptr": "*fp32",
            "out_ptr": "*fp32",
            "n_rows": "i32",
            "row_stride": "i32",
            "n_cols": "i32",
            "ROWS": "constexpr",
            "BLOCK": "constexpr",
        },
        {"ROWS": 8, "BLOCK": 64},
        aligned=("x_ptr", "out_ptr", "row_stride"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "gelu",
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        aligned=("x_ptr", "out_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "gelu_tanh",
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        aligned=("x_ptr", "out_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "silu_mul",
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        aligned=("a_ptr", "b_ptr", "out_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "rope_fwd",
        {
            "x_ptr": "*fp32",
            "cos_ptr": "*fp32",
            "sin_ptr": "*fp32",
            "out_ptr": "*fp32",
            "n_heads": "i32",
            "HEAD_DIM": "constexpr",
            "BLOCK_H": "constexpr",
        },
        {"HEAD_DIM": 64, "BLOCK_H": 8},
        aligned=("x_ptr", "cos_ptr", "sin_ptr", "out_ptr"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "matmul_splitk_partials",
        {
            "a_ptr": "*fp16",
            "b_ptr": "*fp16",
            "ws_ptr": "*fp32",
            "M": "i32",
            "N": "i32",
            "K": "i32",
            "stride_am": "i32",
            "stride_ak": "constexpr",
            "stride_bk": "i32",
            "stride_bn": "constexpr",
            "BLOCK_M": "constexpr",
            "BLOCK_N": "constexpr",
            "BLOCK_K": "constexpr",
            "SPLIT_K": "constexpr",
        },
        {"stride_ak": 1, "stride_bn": 1, "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 2},
        aligned=("a_ptr", "b_ptr", "ws_ptr", "M", "N", "K", "stride_am", "stride_bk"),
        options={"num_warps": 4, "num_stages": 2},
    ),
    TritonSpec(
        "splitk_reduce",
        {"ws_ptr": "*fp32", "c_ptr": "*fp16", "MN": "i32", "SPLIT_K": "constexpr", "BLOCK": "constexpr"},
        {"SPLIT_K": 2, "BLOCK": 1024},
        aligned=("ws_ptr", "c_ptr", "MN"),
        options={"num_warps": 4},
    ),
    TritonSpec(
        "matmul_fp8",
        {
            "a_ptr": "*fp8e4nv",
            "b_ptr": "*fp8e4nv",
            "c_ptr": "*fp32",
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
        },
        {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 64},
        aligned=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"),
        options={"num_warps": 4, "num_stages": 2},
    ),
    TritonSpec(
        "matmul_mxfp4",
        {
            "a_ptr": "*u8",
            "a_scale_ptr": "*u8",
            "b_ptr": "*u8",
            "b_scale_ptr": "*u8",
            "c_ptr": "*fp32",
            "M": "i32",
            "N": "i32",
            "K": "i32",
            "BLOCK_M": "constexpr",
            "BLOCK_N": "constexpr",
            "BLOCK_K": "constexpr",
        },
        {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 128},
        aligned=("a_ptr", "a_scale_ptr", "b_ptr", "b_scale_ptr", "c_ptr", "M", "N", "K"),
        options={"num_warps": 4, "num_stages": 2},
    ),
)
