"""A second held-out set of Triton kernels (sm_90), written apart from the simulator and
from the first held-out set, in the form an ordinary Triton user writes for real work:

    swiglu_up        fused MLP up-projection, Y = silu(X @ W1) * (X @ W3), two dots per X tile
    moe_grouped_mm   grouped GEMM for mixture-of-experts, expert index in program_id(1)
    gemm_bf16_ab     bf16 GEMM with an fp32 C read and written: C = ALPHA * A @ B + BETA * C
    persist_tma_mm   persistent GEMM through host TensorDescriptors, bias + ReLU epilogue, TMA store
    mm_bt_ptr        C = A @ B^T with B stored N x K, pointer loads, BLOCK_K = 32, 5 stages
    attn_bshd_fwd    non-causal flash attention forward over [batch, seq, heads, dim] tensors
    layernorm_fwd    layer norm forward, one row per program
    log_softmax_row  row-wise log-softmax over a large vocabulary, online max/sum, one row per program
    bias_gelu_scale  y = gelu(x + bias[col]) * SCALE, flat elementwise over a large tensor
    gemv             y = x @ W^T for 1 or 4 vectors against a large N x K weight, blocked over N

Same module shape as kernels/triton/corpus.py: ``KERNELS``, ``BUILDERS``, ``VARIANTS`` and
``flops``; every reference is a torch expression over the float32 copies of the tensors
(their values before the launch).

Written on 2026-12-02, after the reader's fixes that the first set (heldout.py) led to, by an
author told to read neither the simulator nor the first set: its H200 run is the validation of
those fixes.  Compiled with ``python -m kernels.triton.corpus --kernels kernels.triton.heldout2
--out tests/fixtures/triton/heldout2`` (Triton 3.6.0, CPU); run with ``python -m
kernels.triton.corpus_run --corpus tests/fixtures/triton/heldout2``.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

# ---------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def swiglu_up_kernel(x_ptr, w1_ptr, w3_ptr, y_ptr, M, N, K,
                     stride_xm, stride_xk, stride_wk, stride_wn, stride_ym, stride_yn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Y = silu(X @ W1) * (X @ W3); X is M x K, W1 and W3 are K x N (same strides)."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # L2-friendly ordering: GROUP_M row-blocks share a band of weight columns
    width = GROUP_M * grid_n
    group = pid // width
    first_m = group * GROUP_M
    rows_in_group = min(grid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % width) % rows_in_group)
    pid_n = (pid % width) // rows_in_group

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_c = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rn_c = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    x_ptrs = x_ptr + rm_c[:, None] * stride_xm + rk[None, :] * stride_xk
    w_off = rk[:, None] * stride_wk + rn_c[None, :] * stride_wn
    w1_ptrs = w1_ptr + w_off
    w3_ptrs = w3_ptr + w_off

    acc_gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=rk[None, :] < k_left, other=0.0)
        w1 = tl.load(w1_ptrs, mask=rk[:, None] < k_left, other=0.0)
        w3 = tl.load(w3_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc_gate = tl.dot(x, w1, acc_gate)
        acc_up = tl.dot(x, w3, acc_up)
        x_ptrs += BLOCK_K * stride_xk
        w1_ptrs += BLOCK_K * stride_wk
        w3_ptrs += BLOCK_K * stride_wk

    gate = acc_gate * tl.sigmoid(acc_gate)
    y = (gate * acc_up).to(y_ptr.dtype.element_ty)
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn
    tl.store(y_ptrs, y, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def moe_grouped_mm_kernel(x_ptr, w_ptr, y_ptr, M_PER_EXPERT, N, K,
                          stride_xe, stride_xm, stride_xk,
                          stride_we, stride_wk, stride_wn,
                          stride_ye, stride_ym, stride_yn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Y[e] = X[e] @ W[e] for every expert e: X is [E, M_PER_EXPERT, K] (tokens already
    sorted by expert, equal counts), W is [E, K, N], Y is [E, M_PER_EXPERT, N].
    program_id(0) walks the expert's output tiles, program_id(1) is the expert."""
    pid = tl.program_id(0)
    expert = tl.program_id(1).to(tl.int64)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n

    x_base = x_ptr + expert * stride_xe
    w_base = w_ptr + expert * stride_we
    y_base = y_ptr + expert * stride_ye

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M_PER_EXPERT
    mask_n = offs_n < N
    a_ptrs = x_base + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    b_ptrs = w_base + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] + k0 < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k0 < K) & mask_n[None, :], other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_xk
        b_ptrs += BLOCK_K * stride_wk
    y_ptrs = y_base + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def gemm_bf16_ab_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                        stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        GROUP_M: tl.constexpr, ALPHA: tl.constexpr, BETA: tl.constexpr):
    """C = ALPHA * (A @ B) + BETA * C, A and B bf16, C fp32 (read, then overwritten)."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.swizzle2d(pid // grid_n, pid % grid_n, grid_m, grid_n, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = mask_m[:, None] & mask_n[None, :]
    c_old = tl.load(c_ptrs, mask=c_mask, other=0.0)
    c_new = ALPHA * acc + BETA * c_old
    tl.store(c_ptrs, c_new, mask=c_mask)


@triton.jit
def persist_tma_mm_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K, NUM_SMS,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr):
    """Persistent C = relu(A @ B + bias): A M x K, B K x N, C M x N through host-side
    TensorDescriptors; NUM_SMS programs each walk tiles pid, pid + NUM_SMS, ..."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_steps = tl.cdiv(K, BLOCK_K)
    group_size = GROUP_M * num_pid_n
    for tile in range(pid, num_tiles, NUM_SMS):
        group = tile // group_size
        first_m = group * GROUP_M
        gm = min(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (tile % group_size) % gm
        pid_n = (tile % group_size) // gm
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ks in range(k_steps):
            a = a_desc.load([off_m, ks * BLOCK_K])
            b = b_desc.load([ks * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)

        cols = off_n + tl.arange(0, BLOCK_N)
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc = tl.maximum(acc + bias[None, :], 0.0)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def mm_bt_ptr_kernel(a_ptr, bt_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B^T, A M x K, B stored N x K (a Linear layer's weight); the K x N tile of
    B^T is gathered with pointer arithmetic. 2-D grid: (n tiles, m tiles)."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = bt_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    a_row_ok = offs_m[:, None] < M
    b_col_ok = offs_n[None, :] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=a_row_ok & (offs_k[None, :] + k0 < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k0 < K) & b_col_ok, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=a_row_ok & b_col_ok)


@triton.jit
def attn_bshd_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, N_CTX,
                         stride_qb, stride_qs, stride_qh,
                         stride_kb, stride_ks, stride_kh,
                         stride_vb, stride_vs, stride_vh,
                         stride_ob, stride_os, stride_oh,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Non-causal flash attention forward; Q, K, V, O are [batch, seq, heads, HEAD_DIM]
    (head dim contiguous). Program (m, b*H + h) owns BLOCK_M query rows of one head."""
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    q_base = q_ptr + b * stride_qb + h * stride_qh
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh
    o_base = o_ptr + b * stride_ob + h * stride_oh

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    qk_scale = (1.0 / math.sqrt(HEAD_DIM)) * 1.4426950408889634   # softmax scale, in log2 units

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_base + cols[:, None] * stride_ks + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(cols[None, :] < N_CTX, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        corr = tl.math.exp2(m_i - m_new)
        l_i = l_i * corr + tl.sum(p, 1)
        v = tl.load(v_base + cols[:, None] * stride_vs + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        acc = acc * corr[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_os + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < N_CTX)


@triton.jit
def layernorm_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, stride_x, stride_y,
                         BLOCK_N: tl.constexpr, EPS: tl.constexpr):
    """y = (x - mean) / sqrt(var + EPS) * w + b over each row of N; one row per program,
    the whole row in one BLOCK_N >= N tile."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + EPS)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def log_softmax_row_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    """y = x - logsumexp(x) along each row of N (a vocabulary, N >> BLOCK_N): one pass
    with a running max and rescaled sum, a second pass writing the output."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK_N)
    m = tl.full([], float("-inf"), dtype=tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    for start in range(0, N, BLOCK_N):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x - lse).to(y_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def bias_gelu_scale_kernel(x_ptr, bias_ptr, y_ptr, n_elements, N,
                           BLOCK_SIZE: tl.constexpr, SCALE: tl.constexpr):
    """y = gelu(x + bias[col]) * SCALE (exact erf GELU) over a row-major M x N tensor,
    flattened; bias has N entries."""
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    col = offs % N
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + col, mask=mask, other=0.0).to(tl.float32)
    z = x + bias
    g = 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476))
    tl.store(y_ptr + offs, (g * SCALE).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gemv_kernel(x_ptr, w_ptr, y_ptr, N, K, stride_xb, stride_wn, stride_yb,
                BATCH: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Y = X @ W^T for BATCH (1 or 4) vectors: X is BATCH x K, W is N x K (row-major, a
    Linear weight), Y is BATCH x N. Each program owns BLOCK_N outputs and streams its
    BLOCK_N rows of W through the K loop."""
    pid = tl.program_id(0)
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    offs_b = tl.arange(0, BATCH)
    mask_n = offs_n < N
    w_ptrs = w_ptr + offs_n[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
    x_ptrs = x_ptr + offs_b[:, None] * stride_xb + offs_k[None, :]
    acc = tl.zeros((BLOCK_N, BATCH), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kmask = offs_k + k0 < K
        w = tl.load(w_ptrs, mask=mask_n[:, None] & kmask[None, :], other=0.0).to(tl.float32)
        x = tl.load(x_ptrs, mask=kmask[None, :], other=0.0).to(tl.float32)
        acc += tl.sum(w[:, None, :] * x[None, :, :], axis=2)
        w_ptrs += BLOCK_K
        x_ptrs += BLOCK_K
    y_ptrs = y_ptr + offs_b[None, :] * stride_yb + offs_n[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_n[:, None])


KERNELS = {
    "swiglu_up": swiglu_up_kernel,
    "moe_grouped_mm": moe_grouped_mm_kernel,
    "gemm_bf16_ab": gemm_bf16_ab_kernel,
    "persist_tma_mm": persist_tma_mm_kernel,
    "mm_bt_ptr": mm_bt_ptr_kernel,
    "attn_bshd_fwd": attn_bshd_fwd_kernel,
    "layernorm_fwd": layernorm_fwd_kernel,
    "log_softmax_row": log_softmax_row_kernel,
    "bias_gelu_scale": bias_gelu_scale_kernel,
    "gemv": gemv_kernel,
}

# ---------------------------------------------------------------------------------------
# Builders: variant -> (tensors, args, constexprs, grid, reference)
# ---------------------------------------------------------------------------------------

NUM_SMS = {90: 132, 100: 148}


def _t(shape, dtype="float16", init="randn"):
    return {"shape": list(shape), "dtype": dtype, "init": init}


def _ref(out, expr):
    return {"op": "torch", "out": out, "expr": expr}


def _swiglu_up(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"X": _t((M, K)), "W1": _t((K, N)), "W3": _t((K, N)), "Y": _t((M, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w1_ptr", {"tensor": "W1"}), ("w3_ptr", {"tensor": "W3"}),
            ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K),
            ("stride_xm", K), ("stride_xk", 1), ("stride_wk", N), ("stride_wn", 1), ("stride_ym", N), ("stride_yn", 1)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref("Y", "torch.nn.functional.silu(X @ W1) * (X @ W3)")


def _moe_grouped_mm(v, cap):
    E, Mg, N, K = v["E"], v["M_PER_EXPERT"], v["N"], v["K"]
    tensors = {"X": _t((E, Mg, K)), "W": _t((E, K, N)), "Y": _t((E, Mg, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("y_ptr", {"tensor": "Y"}),
            ("M_PER_EXPERT", Mg), ("N", N), ("K", K),
            ("stride_xe", Mg * K), ("stride_xm", K), ("stride_xk", 1),
            ("stride_we", K * N), ("stride_wk", N), ("stride_wn", 1),
            ("stride_ye", Mg * N), ("stride_ym", N), ("stride_yn", 1)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    grid = [triton.cdiv(Mg, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), E, 1]
    return tensors, args, ce, grid, _ref("Y", "torch.bmm(X, W)")


def _gemm_bf16_ab(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"A": _t((M, K), "bfloat16"), "B": _t((K, N), "bfloat16"), "C": _t((M, N), "float32", "randn")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K), ("stride_am", K), ("stride_ak", 1), ("stride_bk", N), ("stride_bn", 1),
            ("stride_cm", N), ("stride_cn", 1)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "ALPHA", "BETA")}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref("C", f"{v['ALPHA']!r} * (A @ B) + {v['BETA']!r} * C")


def _persist_tma_mm(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    tensors = {"A": _t((M, K)), "B": _t((K, N)), "Bias": _t((N,)), "C": _t((M, N), "float16", "nan")}
    sms = NUM_SMS[cap]
    args = [("a_desc", {"desc": "A", "block_shape": [BM, BK]}), ("b_desc", {"desc": "B", "block_shape": [BK, BN]}),
            ("c_desc", {"desc": "C", "block_shape": [BM, BN]}), ("bias_ptr", {"tensor": "Bias"}),
            ("M", M), ("N", N), ("K", K), ("NUM_SMS", sms)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = [min(sms, tiles), 1, 1]
    return tensors, args, ce, grid, _ref("C", "torch.relu(A @ B + Bias)")


def _mm_bt_ptr(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"A": _t((M, K)), "BT": _t((N, K)), "C": _t((M, N), "float16", "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("bt_ptr", {"tensor": "BT"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K), ("stride_am", K), ("stride_ak", 1), ("stride_bn", K), ("stride_bk", 1),
            ("stride_cm", N), ("stride_cn", 1)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    grid = [triton.cdiv(N, v["BLOCK_N"]), triton.cdiv(M, v["BLOCK_M"]), 1]
    return tensors, args, ce, grid, _ref("C", "A @ BT.T")


def _attn_bshd(v, cap):
    Z, S, H, D = v["BATCH"], v["SEQ"], v["HEADS"], v["HEAD_DIM"]
    tensors = {n: _t((Z, S, H, D)) for n in ("Q", "K", "V")}
    tensors["O"] = _t((Z, S, H, D), "float16", "nan")
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}), ("o_ptr", {"tensor": "O"}),
            ("H", H), ("N_CTX", S)]
    for n in ("q", "k", "v", "o"):
        args += [(f"stride_{n}b", S * H * D), (f"stride_{n}s", H * D), (f"stride_{n}h", D)]
    ce = {k: v[k] for k in ("HEAD_DIM", "BLOCK_M", "BLOCK_N")}
    grid = [triton.cdiv(S, v["BLOCK_M"]), Z * H, 1]
    expr = ("torch.nn.functional.scaled_dot_product_attention(Q.transpose(1, 2), K.transpose(1, 2), "
            "V.transpose(1, 2)).transpose(1, 2)")
    return tensors, args, ce, grid, _ref("O", expr)


def _layernorm(v, cap):
    M, N = v["M"], v["N"]
    dt = v.get("dtype", "float16")
    tensors = {"X": _t((M, N), dt), "W": _t((N,), dt), "Bias": _t((N,), dt), "Y": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("b_ptr", {"tensor": "Bias"}), ("y_ptr", {"tensor": "Y"}),
            ("N", N), ("stride_x", N), ("stride_y", N)]
    ce = {"BLOCK_N": triton.next_power_of_2(N), "EPS": v.get("EPS", 1e-5)}
    expr = f"torch.nn.functional.layer_norm(X, ({N},), W, Bias, eps={ce['EPS']!r})"
    return tensors, args, ce, [M, 1, 1], _ref("Y", expr)


def _log_softmax(v, cap):
    M, N = v["M"], v["N"]
    tensors = {"X": _t((M, N)), "Y": _t((M, N), v.get("out_dtype", "float16"), "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("N", N), ("stride_x", N), ("stride_y", N)]
    return tensors, args, {"BLOCK_N": v["BLOCK_N"]}, [M, 1, 1], _ref("Y", "torch.log_softmax(X, dim=-1)")


def _bias_gelu(v, cap):
    M, N = v["M"], v["N"]
    dt = v.get("dtype", "float16")
    tensors = {"X": _t((M, N), dt), "Bias": _t((N,), dt), "Y": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("bias_ptr", {"tensor": "Bias"}), ("y_ptr", {"tensor": "Y"}),
            ("n_elements", M * N), ("N", N)]
    ce = {"BLOCK_SIZE": v["BLOCK_SIZE"], "SCALE": v["SCALE"]}
    grid = [triton.cdiv(M * N, v["BLOCK_SIZE"]), 1, 1]
    return tensors, args, ce, grid, _ref("Y", f"torch.nn.functional.gelu(X + Bias) * {v['SCALE']!r}")


def _gemv(v, cap):
    B, N, K = v["BATCH"], v["N"], v["K"]
    tensors = {"X": _t((B, K)), "W": _t((N, K)), "Y": _t((B, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("y_ptr", {"tensor": "Y"}),
            ("N", N), ("K", K), ("stride_xb", K), ("stride_wn", K), ("stride_yb", N)]
    ce = {k: v[k] for k in ("BATCH", "BLOCK_N", "BLOCK_K")}
    return tensors, args, ce, [triton.cdiv(N, v["BLOCK_N"]), 1, 1], _ref("Y", "X @ W.T")


BUILDERS = {
    "swiglu_up": _swiglu_up,
    "moe_grouped_mm": _moe_grouped_mm,
    "gemm_bf16_ab": _gemm_bf16_ab,
    "persist_tma_mm": _persist_tma_mm,
    "mm_bt_ptr": _mm_bt_ptr,
    "attn_bshd_fwd": _attn_bshd,
    "layernorm_fwd": _layernorm,
    "log_softmax_row": _log_softmax,
    "bias_gelu_scale": _bias_gelu,
    "gemv": _gemv,
}

# ---------------------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------------------

H100 = (90,)


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": H100, "num_warps": num_warps, "num_stages": num_stages, **kw}


def _tile(BM, BN, BK, **kw):
    return {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, **kw}


VARIANTS = [
    # 1. SwiGLU up-projection (gate and up weights, two accumulators)
    _v("h2_swiglu_128x128x64_s3_w8", "swiglu_up", 8, 3, M=8192, N=4096, K=1024, **_tile(128, 128, 64, GROUP_M=8)),
    _v("h2_swiglu_64x128x64_s4_w4", "swiglu_up", 4, 4, M=4096, N=2816, K=1024, **_tile(64, 128, 64, GROUP_M=8)),
    # 2. MoE grouped GEMM, expert = program_id(1)
    _v("h2_moe_e8_128x128x64_s3_w4", "moe_grouped_mm", 4, 3, E=8, M_PER_EXPERT=512, N=1536, K=2048,
       **_tile(128, 128, 64)),
    _v("h2_moe_e64_64x128x64_s4_w4", "moe_grouped_mm", 4, 4, E=64, M_PER_EXPERT=128, N=2048, K=1024,
       **_tile(64, 128, 64)),
    # 3. bf16 GEMM, fp32 C, alpha/beta epilogue
    _v("h2_gemm_bf16_ab_128x128x64_s4_w8", "gemm_bf16_ab", 8, 4, M=4096, N=4096, K=4096,
       **_tile(128, 128, 64, GROUP_M=8, ALPHA=1.5, BETA=0.5)),
    # 4. persistent GEMM, host TensorDescriptors, bias + relu, TMA store
    _v("h2_persist_tma_128x128x64_s4_w4", "persist_tma_mm", 4, 4, M=4096, N=4096, K=2048,
       **_tile(128, 128, 64, GROUP_M=8)),
    _v("h2_persist_tma_128x256x64_s3_w8", "persist_tma_mm", 8, 3, M=8192, N=4096, K=2048,
       **_tile(128, 256, 64, GROUP_M=8)),
    # 5. B stored N x K, pointer loads, BLOCK_K 32, 5 stages
    _v("h2_mm_bt_64x128x32_s5_w4", "mm_bt_ptr", 4, 5, M=2048, N=2048, K=4096, **_tile(64, 128, 32)),
    _v("h2_mm_bt_128x256x32_s5_w8_raggedM", "mm_bt_ptr", 8, 5, M=3000, N=4096, K=2048, **_tile(128, 256, 32)),
    # 6. flash attention forward, [B, S, H, D], head dim 128, BLOCK_M 64
    _v("h2_attn_bshd_d128_64x64_s3_w4", "attn_bshd_fwd", 4, 3, BATCH=2, SEQ=2048, HEADS=16, HEAD_DIM=128,
       BLOCK_M=64, BLOCK_N=64),
    _v("h2_attn_bshd_d128_64x128_s2_w4", "attn_bshd_fwd", 4, 2, BATCH=8, SEQ=1024, HEADS=16, HEAD_DIM=128,
       BLOCK_M=64, BLOCK_N=128),
    # 7. layer norm forward
    _v("h2_layernorm_8192x4096_w8", "layernorm_fwd", 8, 2, M=8192, N=4096),
    _v("h2_layernorm_bf16_16384x5120_w8", "layernorm_fwd", 8, 3, M=16384, N=5120, dtype="bfloat16"),
    # 8. log-softmax over a 32000-entry vocabulary
    _v("h2_log_softmax_2048x32000_b4096_w8", "log_softmax_row", 8, 2, M=2048, N=32000, BLOCK_N=4096),
    # 9. fused bias + GELU + scale
    _v("h2_bias_gelu_8192x8192_b1024_w4", "bias_gelu_scale", 4, 2, M=8192, N=8192, BLOCK_SIZE=1024, SCALE=0.5),
    _v("h2_bias_gelu_4096x11008_b4096_w8", "bias_gelu_scale", 8, 3, M=4096, N=11008, BLOCK_SIZE=4096, SCALE=2.0),
    # 10. GEMV, 1 and 4 vectors, blocked over N
    _v("h2_gemv_b1_8192x8192_32x256_w4", "gemv", 4, 3, BATCH=1, N=8192, K=8192, BLOCK_N=32, BLOCK_K=256),
    _v("h2_gemv_b4_14336x4096_16x128_w4", "gemv", 4, 4, BATCH=4, N=14336, K=4096, BLOCK_N=16, BLOCK_K=128),
]


def flops(variant) -> float | None:
    """2*M*N*K (times experts/batch) for the matmul-like kernels; None for the rest."""
    k, v = variant["kernel"], variant
    if k == "swiglu_up":
        return 2.0 * 2 * v["M"] * v["N"] * v["K"]            # two GEMMs sharing X
    if k == "moe_grouped_mm":
        return 2.0 * v["E"] * v["M_PER_EXPERT"] * v["N"] * v["K"]
    if k in ("gemm_bf16_ab", "persist_tma_mm", "mm_bt_ptr"):
        return 2.0 * v["M"] * v["N"] * v["K"]
    if k == "attn_bshd_fwd":
        return 4.0 * v["BATCH"] * v["HEADS"] * v["SEQ"] * v["SEQ"] * v["HEAD_DIM"]   # QK^T and PV
    if k == "gemv":
        return 2.0 * v["BATCH"] * v["N"] * v["K"]
    return None
