"""Held-out Triton kernels for checking the simulator on code it was not tuned on.

Same interface as kernels/triton/corpus.py: KERNELS (name -> @triton.jit), BUILDERS
(name -> builder(variant, cap) -> (tensors, args, constexprs, grid, reference)) and
VARIANTS.  The references are torch expressions ({"op": "torch", "out": ..., "expr": ...})
evaluated with every tensor bound to its fp32 copy, plus ``torch`` and ``math``.

The kernels are written the way one would for real work on an H100/H200 (sm_90):
batched matmul, matmul with a fused bias + activation epilogue, a fully masked matmul on
ragged shapes, a matmul reading a column-major A, split-K with fp32 atomics, a persistent
pointer matmul, a host-TensorDescriptor matmul with column-major tile order, causal flash
attention, row softmax, RMSNorm, and a skinny (decode-style) GEMM.

Written in one sitting (2026-12-02) by an author told not to read the simulator: the
kernels are not shaped to what protosim's TTGIR reader understands.  Compiled on the CPU
into tests/fixtures/triton/heldout (``python -m kernels.triton.corpus --kernels
kernels.triton.heldout --out tests/fixtures/triton/heldout``, Triton 3.6.0) and run on the
H200 by ``python -m kernels.triton.corpus_run --corpus tests/fixtures/triton/heldout``.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

# ---------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
               stride_ab, stride_am, stride_ak,
               stride_bb, stride_bk, stride_bn,
               stride_cb, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[b] = A[b] @ B[b]; tile index in program_id(0) (row-major over tiles), batch in
    program_id(1).  M, N, K are multiples of the tile sizes."""
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    a_ptr += bid * stride_ab
    b_ptr += bid * stride_bb
    c_ptr += bid * stride_cb

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16))


@triton.jit
def linear_bias_act_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                           stride_xm, stride_xk, stride_wk, stride_wn, stride_ym, stride_yn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    """Y = act(X @ W + bias), X M x K, W K x N, bias N; ACTIVATION is "relu" or
    "gelu_tanh" (GELU, tanh approximation, written as x * sigmoid(2u))."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = tl.minimum(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % width) % group_size
    pid_n = (pid % width) // group_size

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    offs_m = tl.max_contiguous(tl.multiple_of(offs_m, BLOCK_M), BLOCK_M)
    offs_n = tl.max_contiguous(tl.multiple_of(offs_n, BLOCK_N), BLOCK_N)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        x = tl.load(x_ptrs)
        w = tl.load(w_ptrs)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    bias = tl.load(bias_ptr + offs_n).to(tl.float32)
    acc = acc + bias[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu_tanh":
        # 0.5 * x * (1 + tanh(u)) == x * sigmoid(2u),  u = sqrt(2/pi) * (x + 0.044715 x^3)
        u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(2.0 * u)

    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty))


@triton.jit
def mm_ragged_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B for shapes that are not multiples of the tile: every load is masked on
    its M/N edge and on the K tail, the store is masked on M and N.  Tiles in
    row-major order."""
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = (k0 + offs_k) < K
        a = tl.load(a_ptrs, mask=mask_m[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def mm_at_kernel(at_ptr, b_ptr, c_ptr, M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_N: tl.constexpr):
    """C = A @ B where A is stored column-major (the buffer is A^T, K x M row-major, so
    stride_am == 1 and stride_ak == M); B is K x N row-major.  Programs are grouped
    along N (GROUP_N column tiles share a band)."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_N * grid_m
    first_n = (pid // per_group) * GROUP_N
    group_n = tl.minimum(grid_n - first_n, GROUP_N)
    pid_n = first_n + (pid % per_group) % group_n
    pid_m = (pid % per_group) // group_n

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = at_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def mm_splitk_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     SPLIT_K: tl.constexpr):
    """Split-K C = A @ B: program (tile, z) sums the contiguous K slice z of length
    K / SPLIT_K and tl.atomic_add's its fp32 partial tile into C (zeroed before)."""
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    k_per_split = tl.cdiv(K, SPLIT_K)
    k_lo = pid_k * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + (k_lo + offs_k)[None, :] * stride_ak
    b_ptrs = b_ptr + (k_lo + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi, BLOCK_K):
        k_ok = (k + offs_k) < k_hi
        a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.atomic_add(c_ptrs, acc, mask=mask, sem="relaxed")


@triton.jit
def mm_persistent_ptr_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    """Persistent C = A @ B with plain pointer loads: one program per SM, each walking the
    output tiles pid, pid + num_programs, ... in grouped order.  Shapes are multiples of
    the tile sizes."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = grid_m * grid_n
    width = GROUP_M * grid_n
    offs_k = tl.arange(0, BLOCK_K)

    for tile in range(pid, num_tiles, nprog):
        group_id = tile // width
        group_size = tl.minimum(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (tile % width) % group_size
        pid_n = (tile % width) // group_size

        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk

        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def mm_desc_colmajor_kernel(a_desc, b_desc, c_desc, M, N, K,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B through host-side TensorDescriptors: A M x K, B K x N (row-major, no
    transpose), C M x N.  Output tiles are visited in column-major order (consecutive
    programs walk down a column of tiles and share the B panel)."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % grid_m
    pid_n = pid // grid_m
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def _attn_causal_block(acc, l_i, m_i, q, k_base, v_base, stride_n, offs_m, offs_n, offs_d, lo, hi, qk_scale,
                       BLOCK_N: tl.constexpr, ON_DIAGONAL: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        kt = tl.load(k_base + cols[None, :] * stride_n + offs_d[:, None])
        s = tl.dot(q, kt) * qk_scale
        if ON_DIAGONAL:
            s = tl.where(offs_m[:, None] >= cols[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_n + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_causal_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, stride_h, stride_n, N_CTX,
                           HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Causal flash-attention forward, fp16 in/out, online softmax in fp32.  Q, K, V, O
    are [B*H, N_CTX, HEAD_DIM] contiguous; program (m, bh) owns BLOCK_M query rows of one
    head.  Key blocks left of the diagonal run unmasked, the diagonal band is masked."""
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1).to(tl.int64)
    q_base = q_ptr + off_bh * stride_h
    k_base = k_ptr + off_bh * stride_h
    v_base = v_ptr + off_bh * stride_h
    o_base = o_ptr + off_bh * stride_h

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_n + offs_d[None, :])
    qk_scale = 1.4426950408889634 / math.sqrt(HEAD_DIM)  # log2(e) / sqrt(d)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    diag_lo = start_m * BLOCK_M
    acc, l_i, m_i = _attn_causal_block(acc, l_i, m_i, q, k_base, v_base, stride_n, offs_m, offs_n, offs_d,
                                       0, diag_lo, qk_scale, BLOCK_N, False)
    acc, l_i, m_i = _attn_causal_block(acc, l_i, m_i, q, k_base, v_base, stride_n, offs_m, offs_n, offs_d,
                                       diag_lo, diag_lo + BLOCK_M, qk_scale, BLOCK_N, True)
    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_n + offs_d[None, :], acc.to(o_ptr.dtype.element_ty))


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y,
                        ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    """Row-wise softmax, ROWS rows per program, each row held whole in registers
    (BLOCK_N >= n_cols, columns past n_cols masked)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None].to(tl.int64) * stride_x + cols[None, :], mask=mask,
                other=float("-inf")).to(tl.float32)
    x = x - tl.max(x, axis=1)[:, None]
    e = tl.exp(x)
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + rows[:, None].to(tl.int64) * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols,
                   EPS: tl.constexpr, BLOCK_N: tl.constexpr):
    """RMSNorm over the last dim, one program per row: a first pass over the row in
    BLOCK_N chunks sums squares in fp32, a second pass scales by rsqrt(mean + eps) and
    the weight and stores."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    sq = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        sq += x * x
    rstd = tl.rsqrt(tl.sum(sq, axis=0) / n_cols + EPS)
    for off in range(0, n_cols, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        m = cols < n_cols
        x = tl.load(x_row + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def skinny_linear_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                         stride_xm, stride_wn, stride_ym,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Decode-style linear layer Y = X @ W^T with few rows: X M x K (M = 16 / 32), W the
    N x K weight (nn.Linear layout), Y M x N.  Each program owns all M rows and
    BLOCK_N output features and streams its slice of W once."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_n[:, None] * stride_wn + offs_k[None, :]
    mask_m = offs_m < M

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=mask_m[:, None], other=0.0)
        w = tl.load(w_ptrs)
        acc = tl.dot(x, tl.trans(w), acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & (offs_n[None, :] < N))


KERNELS = {
    "bmm": bmm_kernel,
    "linear_bias_act": linear_bias_act_kernel,
    "mm_ragged": mm_ragged_kernel,
    "mm_at": mm_at_kernel,
    "mm_splitk": mm_splitk_kernel,
    "mm_persistent_ptr": mm_persistent_ptr_kernel,
    "mm_desc_colmajor": mm_desc_colmajor_kernel,
    "attn_causal_fwd": attn_causal_fwd_kernel,
    "softmax_rows": softmax_rows_kernel,
    "rmsnorm": rmsnorm_kernel,
    "skinny_linear": skinny_linear_kernel,
}

# ---------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------

NUM_SMS = {90: 132}  # H100 SXM / H200


def _t(shape, dtype="float16", init="randn"):
    return {"shape": list(shape), "dtype": dtype, "init": init}


def _ptr(name):
    return {"tensor": name}


def _tiles(v):
    return {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}


def _bmm(v, cap):
    Bt, M, N, K = v["BATCH"], v["M"], v["N"], v["K"]
    tensors = {"A": _t((Bt, M, K)), "B": _t((Bt, K, N)), "C": _t((Bt, M, N), init="nan")}
    args = [("a_ptr", _ptr("A")), ("b_ptr", _ptr("B")), ("c_ptr", _ptr("C")), ("M", M), ("N", N), ("K", K),
            ("stride_ab", M * K), ("stride_am", K), ("stride_ak", 1),
            ("stride_bb", K * N), ("stride_bk", N), ("stride_bn", 1),
            ("stride_cb", M * N), ("stride_cm", N), ("stride_cn", 1)]
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), Bt, 1]
    return tensors, args, _tiles(v), grid, {"op": "torch", "out": "C", "expr": "torch.bmm(A, B)"}


def _linear_bias_act(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"X": _t((M, K)), "W": _t((K, N)), "bias": _t((N,)), "Y": _t((M, N), init="nan")}
    args = [("x_ptr", _ptr("X")), ("w_ptr", _ptr("W")), ("bias_ptr", _ptr("bias")), ("y_ptr", _ptr("Y")),
            ("M", M), ("N", N), ("K", K), ("stride_xm", K), ("stride_xk", 1), ("stride_wk", N), ("stride_wn", 1),
            ("stride_ym", N), ("stride_yn", 1)]
    ce = _tiles(v) | {"GROUP_M": v["GROUP_M"], "ACTIVATION": v["ACTIVATION"]}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    if v["ACTIVATION"] == "relu":
        expr = "torch.relu(X @ W + bias[None, :])"
    else:
        expr = "torch.nn.functional.gelu(X @ W + bias[None, :], approximate='tanh')"
    return tensors, args, ce, grid, {"op": "torch", "out": "Y", "expr": expr}


def _mm_ragged(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"A": _t((M, K)), "B": _t((K, N)), "C": _t((M, N), init="nan")}
    args = [("a_ptr", _ptr("A")), ("b_ptr", _ptr("B")), ("c_ptr", _ptr("C")), ("M", M), ("N", N), ("K", K),
            ("stride_am", K), ("stride_ak", 1), ("stride_bk", N), ("stride_bn", 1), ("stride_cm", N), ("stride_cn", 1)]
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, _tiles(v), grid, {"op": "torch", "out": "C", "expr": "A @ B"}


def _mm_at(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    # "AT" holds A^T (K x M row-major), i.e. A column-major.
    tensors = {"AT": _t((K, M)), "B": _t((K, N)), "C": _t((M, N), init="nan")}
    args = [("at_ptr", _ptr("AT")), ("b_ptr", _ptr("B")), ("c_ptr", _ptr("C")), ("M", M), ("N", N), ("K", K),
            ("stride_am", 1), ("stride_ak", M), ("stride_bk", N), ("stride_bn", 1), ("stride_cm", N), ("stride_cn", 1)]
    ce = _tiles(v) | {"GROUP_N": v["GROUP_N"]}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "C", "expr": "AT.t() @ B"}


def _mm_splitk(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"A": _t((M, K)), "B": _t((K, N)), "C": _t((M, N), "float32", "zeros")}
    args = [("a_ptr", _ptr("A")), ("b_ptr", _ptr("B")), ("c_ptr", _ptr("C")), ("M", M), ("N", N), ("K", K),
            ("stride_am", K), ("stride_ak", 1), ("stride_bk", N), ("stride_bn", 1), ("stride_cm", N), ("stride_cn", 1)]
    ce = _tiles(v) | {"SPLIT_K": v["SPLIT_K"]}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), v["SPLIT_K"], 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "C", "expr": "A @ B"}


def _mm_persistent_ptr(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"A": _t((M, K)), "B": _t((K, N)), "C": _t((M, N), init="nan")}
    args = [("a_ptr", _ptr("A")), ("b_ptr", _ptr("B")), ("c_ptr", _ptr("C")), ("M", M), ("N", N), ("K", K),
            ("stride_am", K), ("stride_ak", 1), ("stride_bk", N), ("stride_bn", 1), ("stride_cm", N), ("stride_cn", 1)]
    ce = _tiles(v) | {"GROUP_M": v["GROUP_M"]}
    tiles = triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"])
    grid = [min(NUM_SMS[cap], tiles), 1, 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "C", "expr": "A @ B"}


def _mm_desc_colmajor(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    tensors = {"A": _t((M, K)), "B": _t((K, N)), "C": _t((M, N), init="nan")}
    args = [("a_desc", {"desc": "A", "block_shape": [BM, BK]}), ("b_desc", {"desc": "B", "block_shape": [BK, BN]}),
            ("c_desc", {"desc": "C", "block_shape": [BM, BN]}), ("M", M), ("N", N), ("K", K)]
    grid = [triton.cdiv(M, BM) * triton.cdiv(N, BN), 1, 1]
    return tensors, args, _tiles(v), grid, {"op": "torch", "out": "C", "expr": "A @ B"}


def _attn_causal(v, cap):
    BH, S, D = v["BH"], v["N_CTX"], v["HEAD_DIM"]
    tensors = {n: _t((BH, S, D)) for n in ("Q", "K", "V")}
    tensors["O"] = _t((BH, S, D), init="nan")
    args = [("q_ptr", _ptr("Q")), ("k_ptr", _ptr("K")), ("v_ptr", _ptr("V")), ("o_ptr", _ptr("O")),
            ("stride_h", S * D), ("stride_n", D), ("N_CTX", S)]
    ce = {"HEAD_DIM": D, "BLOCK_M": v["BLOCK_M"], "BLOCK_N": v["BLOCK_N"]}
    grid = [triton.cdiv(S, v["BLOCK_M"]), BH, 1]
    expr = "torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)"
    return tensors, args, ce, grid, {"op": "torch", "out": "O", "expr": expr}


def _softmax_rows(v, cap):
    R, C = v["ROWS_TOTAL"], v["COLS"]
    tensors = {"X": _t((R, C)), "Y": _t((R, C), init="nan")}
    args = [("x_ptr", _ptr("X")), ("y_ptr", _ptr("Y")), ("n_rows", R), ("n_cols", C), ("stride_x", C), ("stride_y", C)]
    ce = {"ROWS": v["ROWS"], "BLOCK_N": triton.next_power_of_2(C)}
    grid = [triton.cdiv(R, v["ROWS"]), 1, 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "Y", "expr": "torch.softmax(X, dim=-1)"}


def _rmsnorm(v, cap):
    R, C = v["ROWS_TOTAL"], v["COLS"]
    tensors = {"X": _t((R, C)), "Wn": _t((C,)), "Y": _t((R, C), init="nan")}
    args = [("x_ptr", _ptr("X")), ("w_ptr", _ptr("Wn")), ("y_ptr", _ptr("Y")), ("stride_x", C), ("stride_y", C),
            ("n_cols", C)]
    ce = {"EPS": v["EPS"], "BLOCK_N": v["BLOCK_N"]}
    expr = f"X * torch.rsqrt((X * X).mean(dim=-1, keepdim=True) + {v['EPS']!r}) * Wn[None, :]"
    return tensors, args, ce, [R, 1, 1], {"op": "torch", "out": "Y", "expr": expr}


def _skinny_linear(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"X": _t((M, K)), "W": _t((N, K)), "Y": _t((M, N), init="nan")}
    args = [("x_ptr", _ptr("X")), ("w_ptr", _ptr("W")), ("y_ptr", _ptr("Y")), ("M", M), ("N", N), ("K", K),
            ("stride_xm", K), ("stride_wn", K), ("stride_ym", N)]
    grid = [triton.cdiv(N, v["BLOCK_N"]), triton.cdiv(M, v["BLOCK_M"]), 1]
    return tensors, args, _tiles(v), grid, {"op": "torch", "out": "Y", "expr": "X @ W.t()"}


BUILDERS = {
    "bmm": _bmm,
    "linear_bias_act": _linear_bias_act,
    "mm_ragged": _mm_ragged,
    "mm_at": _mm_at,
    "mm_splitk": _mm_splitk,
    "mm_persistent_ptr": _mm_persistent_ptr,
    "mm_desc_colmajor": _mm_desc_colmajor,
    "attn_causal_fwd": _attn_causal,
    "softmax_rows": _softmax_rows,
    "rmsnorm": _rmsnorm,
    "skinny_linear": _skinny_linear,
}

# ---------------------------------------------------------------------------------------
# Variants (sm_90 only)
# ---------------------------------------------------------------------------------------

H = (90,)


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": H, "num_warps": num_warps, "num_stages": num_stages, **kw}


def _tile(BM, BN, BK):
    return {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}


VARIANTS = [
    # 1. batched matmul, batch in program_id(1)
    _v("ho_bmm_b8_1024_128x128x64_w8_s3", "bmm", 8, 3, BATCH=8, M=1024, N=1024, K=1024, **_tile(128, 128, 64)),
    _v("ho_bmm_b32_512_64x128x64_w4_s4", "bmm", 4, 4, BATCH=32, M=512, N=512, K=512, **_tile(64, 128, 64)),
    # 2. fused bias + activation epilogue
    _v("ho_linear_gelu_4096x4096x2048_128x128x64_w8_s3", "linear_bias_act", 8, 3, M=4096, N=4096, K=2048,
       GROUP_M=8, ACTIVATION="gelu_tanh", **_tile(128, 128, 64)),
    _v("ho_linear_relu_2048x2048x1024_128x256x64_w8_s3", "linear_bias_act", 8, 3, M=2048, N=2048, K=1024,
       GROUP_M=4, ACTIVATION="relu", **_tile(128, 256, 64)),
    # 3. ragged shapes: masked loads (M/N edges, K tail) and masked store
    _v("ho_mm_ragged_1000x1500x1000_128x128x64_w4_s3", "mm_ragged", 4, 3, M=1000, N=1500, K=1000,
       **_tile(128, 128, 64)),
    _v("ho_mm_ragged_3000x2000x4000_64x128x64_w4_s4", "mm_ragged", 4, 4, M=3000, N=2000, K=4000,
       **_tile(64, 128, 64)),
    # 4. A column-major
    _v("ho_mm_at_2048_128x128x64_w8_s3", "mm_at", 8, 3, M=2048, N=2048, K=2048, GROUP_N=8, **_tile(128, 128, 64)),
    # 5. split-K with fp32 atomics
    _v("ho_splitk4_1024x1024x8192_128x128x64_w4_s3", "mm_splitk", 4, 3, M=1024, N=1024, K=8192, SPLIT_K=4,
       **_tile(128, 128, 64)),
    _v("ho_splitk8_256x1024x16384_64x64x64_w4_s4", "mm_splitk", 4, 4, M=256, N=1024, K=16384, SPLIT_K=8,
       **_tile(64, 64, 64)),
    # 6. persistent pointer matmul, grid = #SMs
    _v("ho_persist_ptr_4096x4096x1024_128x128x64_w8_s3", "mm_persistent_ptr", 8, 3, M=4096, N=4096, K=1024,
       GROUP_M=8, **_tile(128, 128, 64)),
    _v("ho_persist_ptr_2048x8192x1024_128x256x64_w8_s3", "mm_persistent_ptr", 8, 3, M=2048, N=8192, K=1024,
       GROUP_M=8, **_tile(128, 256, 64)),
    # 7. host TensorDescriptors, column-major tile order, B K x N
    _v("ho_desc_colmajor_2048_128x128x64_w4_s4", "mm_desc_colmajor", 4, 4, M=2048, N=2048, K=2048,
       **_tile(128, 128, 64)),
    _v("ho_desc_colmajor_4096x4096x2048_128x256x64_w8_s3", "mm_desc_colmajor", 8, 3, M=4096, N=4096, K=2048,
       **_tile(128, 256, 64)),
    # 8. causal flash attention forward
    _v("ho_attn_causal_bh32_s2048_d64_128x64_w4_s3", "attn_causal_fwd", 4, 3, BH=32, N_CTX=2048, HEAD_DIM=64,
       BLOCK_M=128, BLOCK_N=64),
    _v("ho_attn_causal_bh16_s4096_d128_128x64_w8_s2", "attn_causal_fwd", 8, 2, BH=16, N_CTX=4096, HEAD_DIM=128,
       BLOCK_M=128, BLOCK_N=64),
    # 9. memory-bound row kernels
    _v("ho_softmax_8192x3072_r2_w8", "softmax_rows", 8, 2, ROWS_TOTAL=8192, COLS=3072, ROWS=2),
    _v("ho_rmsnorm_16384x4096_b1024_w4_s2", "rmsnorm", 4, 2, ROWS_TOTAL=16384, COLS=4096, EPS=1e-6, BLOCK_N=1024),
    # 10. skinny GEMM (decode-style linear layer)
    _v("ho_skinny_m16_16x8192x8192_16x64x128_w4_s4", "skinny_linear", 4, 4, M=16, N=8192, K=8192,
       **_tile(16, 64, 128)),
    _v("ho_skinny_m32_32x16384x4096_32x128x128_w4_s3", "skinny_linear", 4, 3, M=32, N=16384, K=4096,
       **_tile(32, 128, 128)),
]


def flops(variant: dict) -> float | None:
    """Multiply-add FLOPs of a matmul variant (2 M N K, times its batch), for the roof check of
    kernels/triton/predicted_vs_measured.py; None for the others."""
    if {"M", "N", "K"} <= variant.keys():
        return 2.0 * variant["M"] * variant["N"] * variant["K"] * variant.get("BATCH", 1)
    return None
