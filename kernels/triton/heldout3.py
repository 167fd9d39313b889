"""A third held-out set of Triton kernels (sm_90), written apart from the simulator.

Same shape as ``kernels.triton.corpus``: ``KERNELS``, ``BUILDERS``, ``VARIANTS`` and ``flops``.
Kernels: a matmul with a residual-add epilogue, an fp8 (e4m3) matmul with per-tensor
scales, a dual projection GEMM (two weights sharing the X tile), rotary embedding,
fused residual-add + RMSNorm, a split column sum (reduction along the slow axis, with
atomics), a row cumulative sum carried across column chunks, a block-pointer matmul,
a tiled transpose, a persistent short-row softmax and a batched GEMV.

Written on 2026-12-02, with the model of ``aa052bc`` final, by an author told to read neither the
simulator nor the earlier held-out sets: a second validation sample beside heldout2.py.
Compiled with ``python -m kernels.triton.corpus --kernels kernels.triton.heldout3 --out
tests/fixtures/triton/heldout3`` (Triton 3.6.0, CPU); run with ``python -m
kernels.triton.corpus_run --corpus tests/fixtures/triton/heldout3``.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

NUM_SMS = {80: 108, 90: 132, 100: 148, 121: 48}


# ---------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def mm_residual_kernel(a_ptr, b_ptr, r_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_rm, stride_cm,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr):
    """C = A @ B + R (A M x K, B K x N, R and C M x N); K is a multiple of BLOCK_K.
    Programs walk super-rows of GROUP_M tile rows, column by column, for L2 reuse of B."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_band = GROUP_M * tiles_n
    band = pid // per_band
    band_m0 = band * GROUP_M
    band_rows = tl.minimum(tiles_m - band_m0, GROUP_M)
    local = pid - band * per_band
    tile_m = band_m0 + local % band_rows
    tile_n = local // band_rows

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    pa = a_ptr + ram[:, None] * stride_am + rk[None, :] * stride_ak
    pb = b_ptr + rk[:, None] * stride_bk + rbn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(pa), tl.load(pb), acc)
        pa += BLOCK_K * stride_ak
        pb += BLOCK_K * stride_bk
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    res = tl.load(r_ptr + rm[:, None] * stride_rm + rn[None, :], mask=mask, other=0.0)
    out = acc + res.to(tl.float32)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], out.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def fp8_scaled_mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                         A_SCALE: tl.constexpr, B_SCALE: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr):
    """C (fp16) = (A @ B^T) * A_SCALE * B_SCALE with A M x K and B N x K in e4m3 (both
    K-major); per-tensor scales applied once in the epilogue."""
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_n
    first_m = (pid // group_size) * GROUP_M
    gm = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % gm
    pid_n = (pid % group_size) // gm

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_m % M)[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + (offs_n % N)[None, :] * stride_bn + offs_k[:, None]   # [BLOCK_K, BLOCK_N] view of B^T
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    acc = acc * (A_SCALE * B_SCALE)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def dual_proj_kernel(x_ptr, wq_ptr, wk_ptr, out_ptr, M, N, K, stride_xm, stride_wk, stride_om,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Q and K projections sharing one X tile: OUT[:, :N] = X @ WQ, OUT[:, N:] = X @ WK,
    X M x K, WQ and WK K x N, OUT M x 2N. Two accumulators per program."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]
    w_off = offs_k[:, None] * stride_wk + offs_n[None, :]
    acc_q = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_k = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    mask_m = offs_m[:, None] < M
    mask_n = offs_n[None, :] < N
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=mask_m, other=0.0)
        wq = tl.load(wq_ptr + w_off, mask=mask_n, other=0.0)
        wk = tl.load(wk_ptr + w_off, mask=mask_n, other=0.0)
        acc_q = tl.dot(x, wq, acc_q)
        acc_k = tl.dot(x, wk, acc_k)
        x_ptrs += BLOCK_K
        w_off += BLOCK_K * stride_wk
    o_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :]
    tl.store(o_ptrs, acc_q.to(out_ptr.dtype.element_ty), mask=mask_m & mask_n)
    tl.store(o_ptrs + N, acc_k.to(out_ptr.dtype.element_ty), mask=mask_m & mask_n)


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, n_rows, H,
                stride_xt, stride_xh, stride_ot, stride_oh, stride_cs,
                HEAD_DIM: tl.constexpr, BLOCK_R: tl.constexpr):
    """Rotary embedding (rotate-half form) over X [T, H, HEAD_DIM]; cos/sin tables
    [T, HEAD_DIM / 2] fp32. Rows are (token, head) pairs, BLOCK_R per program."""
    HALF: tl.constexpr = HEAD_DIM // 2
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    tok = rows // H
    head = rows % H
    d = tl.arange(0, HALF)
    mask = rmask[:, None]
    x_base = x_ptr + tok[:, None] * stride_xt + head[:, None] * stride_xh + d[None, :]
    x1 = tl.load(x_base, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_base + HALF, mask=mask, other=0.0).to(tl.float32)
    cs = tok[:, None] * stride_cs + d[None, :]
    c = tl.load(cos_ptr + cs, mask=mask, other=0.0)
    s = tl.load(sin_ptr + cs, mask=mask, other=0.0)
    o1 = x1 * c - x2 * s
    o2 = x2 * c + x1 * s
    o_base = out_ptr + tok[:, None] * stride_ot + head[:, None] * stride_oh + d[None, :]
    tl.store(o_base, o1.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(o_base + HALF, o2.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def add_rmsnorm_kernel(x_ptr, res_ptr, w_ptr, y_ptr, N, stride_x, stride_r, stride_y,
                       EPS: tl.constexpr, BLOCK_N: tl.constexpr):
    """h = x + residual (written back into residual, in place), y = h / rms(h) * w.
    One row per program, the whole row held in registers (BLOCK_N >= N)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(res_ptr + row * stride_r + cols, h.to(res_ptr.dtype.element_ty), mask=mask)
    ms = tl.sum(h * h, axis=0) / N
    inv = 1.0 / tl.sqrt(ms + EPS)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (h * inv * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def colsum_split_kernel(x_ptr, out_ptr, M, N, stride_xm, ROWS_PER_SPLIT,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[n] += sum over a chunk of rows of X[:, n] (X M x N, out fp32, zero-initialised):
    program (column block, row split) accumulates a BLOCK_M x BLOCK_N tile down its rows,
    reduces it once and adds the partial sums with atomics."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    row0 = pid_s * ROWS_PER_SPLIT
    row_end = tl.minimum(row0 + ROWS_PER_SPLIT, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(row0, row_end, BLOCK_M):
        rows = r + tl.arange(0, BLOCK_M)
        m = (rows[:, None] < row_end) & cmask[None, :]
        acc += tl.load(x_ptr + rows[:, None].to(tl.int64) * stride_xm + cols[None, :], mask=m, other=0.0).to(tl.float32)
    part = tl.sum(acc, axis=0)
    tl.atomic_add(out_ptr + cols, part, mask=cmask)


@triton.jit
def row_cumsum_kernel(x_ptr, out_ptr, M, N, stride_x, stride_o,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out = cumsum(X, dim=1): BLOCK_M rows per program, walking the row in BLOCK_N chunks
    and carrying each row's running total into the next chunk."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    carry = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        m = rmask[:, None] & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=m, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=1) + carry[:, None]
        tl.store(out_ptr + rows[:, None] * stride_o + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=m)
        carry += tl.sum(x, axis=1)


@triton.jit
def mm_blockptr_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B with A, B and C addressed through tl.make_block_ptr / tl.advance;
    2-D grid (column tiles fastest)."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    a_blk = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                              offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_blk = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                              offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_blk, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_blk, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_blk = tl.advance(a_blk, (0, BLOCK_K))
        b_blk = tl.advance(b_blk, (BLOCK_K, 0))
    c_blk = tl.make_block_ptr(base=c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N), block_shape=(BLOCK_M, BLOCK_N),
                              order=(1, 0))
    tl.store(c_blk, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_om,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[j, i] = x[i, j] (X M x N, OUT N x M), one BLOCK_M x BLOCK_N tile per program."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :],
                   mask=(rm[:, None] < M) & (rn[None, :] < N))
    tl.store(out_ptr + rn[:, None] * stride_om + rm[None, :], tl.trans(tile),
             mask=(rn[:, None] < N) & (rm[None, :] < M))


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, M, stride_x, stride_y,
                        N_COLS: tl.constexpr, ROWS: tl.constexpr, STAGES: tl.constexpr):
    """Row softmax over short rows (N_COLS a power of two): a persistent grid, each
    program taking ROWS-row blocks pid, pid + nprog, ..."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, N_COLS)
    n_blocks = tl.cdiv(M, ROWS)
    for blk in tl.range(pid, n_blocks, nprog, num_stages=STAGES):
        rows = blk * ROWS + tl.arange(0, ROWS)
        m = (rows < M)[:, None]
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=m, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=1)[:, None]
        e = tl.exp(x)
        y = e / tl.sum(e, axis=1)[:, None]
        tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def batched_gemv_kernel(w_ptr, x_ptr, y_ptr, N, K, stride_wb, stride_wn, stride_xb, stride_yb,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[b] = W[b] @ x[b] for many small matrices W [B, N, K], x [B, K], y [B, N] (fp32),
    with elementwise multiply and row sums (no tensor cores)."""
    pid_n = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    w_ptrs = w_ptr + b * stride_wb + rn[:, None] * stride_wn + rk[None, :]
    x_ptrs = x_ptr + b * stride_xb + rk
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kmask = (k0 + rk) < K
        w = tl.load(w_ptrs, mask=(rn[:, None] < N) & kmask[None, :], other=0.0)
        xv = tl.load(x_ptrs, mask=kmask, other=0.0)
        acc += w.to(tl.float32) * xv.to(tl.float32)[None, :]
        w_ptrs += BLOCK_K
        x_ptrs += BLOCK_K
    tl.store(y_ptr + b * stride_yb + rn, tl.sum(acc, axis=1), mask=rn < N)


KERNELS = {
    "mm_residual": mm_residual_kernel,
    "fp8_scaled_mm": fp8_scaled_mm_kernel,
    "dual_proj": dual_proj_kernel,
    "rope": rope_kernel,
    "add_rmsnorm": add_rmsnorm_kernel,
    "colsum_split": colsum_split_kernel,
    "row_cumsum": row_cumsum_kernel,
    "mm_blockptr": mm_blockptr_kernel,
    "transpose": transpose_kernel,
    "softmax_rows": softmax_rows_kernel,
    "batched_gemv": batched_gemv_kernel,
}


# ---------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------


def _t(shape, dtype="float16", init="randn"):
    return {"shape": list(shape), "dtype": dtype, "init": init}


def _mm_residual(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    assert K % BK == 0
    dt = v.get("dtype", "float16")
    tensors = {"A": _t((M, K), dt), "B": _t((K, N), dt), "R": _t((M, N), dt), "C": _t((M, N), dt, "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("r_ptr", {"tensor": "R"}),
            ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K), ("stride_am", K), ("stride_ak", 1),
            ("stride_bk", N), ("stride_bn", 1), ("stride_rm", N), ("stride_cm", N)]
    ce = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": v["GROUP_M"]}
    grid = [triton.cdiv(M, BM) * triton.cdiv(N, BN), 1, 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "C", "expr": "A @ B + R"}


def _fp8_mm(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    dt = v.get("dtype", "float8_e4m3fn")
    tensors = {"A": _t((M, K), dt), "B": _t((N, K), dt), "C": _t((M, N), "float16", "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K), ("stride_am", K), ("stride_bn", K), ("stride_cm", N)]
    ce = {"A_SCALE": v["A_SCALE"], "B_SCALE": v["B_SCALE"], "BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK,
          "GROUP_M": v["GROUP_M"]}
    grid = [triton.cdiv(M, BM) * triton.cdiv(N, BN), 1, 1]
    s = float(v["A_SCALE"]) * float(v["B_SCALE"])
    return tensors, args, ce, grid, {"op": "torch", "out": "C", "expr": f"(A @ B.T) * {s!r}"}


def _dual_proj(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    assert K % BK == 0
    tensors = {"X": _t((M, K)), "WQ": _t((K, N)), "WK": _t((K, N)), "OUT": _t((M, 2 * N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("wq_ptr", {"tensor": "WQ"}), ("wk_ptr", {"tensor": "WK"}),
            ("out_ptr", {"tensor": "OUT"}), ("M", M), ("N", N), ("K", K), ("stride_xm", K), ("stride_wk", N),
            ("stride_om", 2 * N)]
    ce = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}
    grid = [triton.cdiv(N, BN), triton.cdiv(M, BM), 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "OUT", "expr": "torch.cat([X @ WQ, X @ WK], dim=1)"}


def _rope(v, cap):
    T, H, D, BR = v["T"], v["H"], v["HEAD_DIM"], v["BLOCK_R"]
    half = D // 2
    tensors = {"X": _t((T, H, D)), "COS": _t((T, half), "float32"), "SIN": _t((T, half), "float32"),
               "OUT": _t((T, H, D), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("cos_ptr", {"tensor": "COS"}), ("sin_ptr", {"tensor": "SIN"}),
            ("out_ptr", {"tensor": "OUT"}), ("n_rows", T * H), ("H", H), ("stride_xt", H * D), ("stride_xh", D),
            ("stride_ot", H * D), ("stride_oh", D), ("stride_cs", half)]
    ce = {"HEAD_DIM": D, "BLOCK_R": BR}
    grid = [triton.cdiv(T * H, BR), 1, 1]
    c, s = "COS[:, None, :]", "SIN[:, None, :]"
    x1, x2 = f"X[..., :{half}]", f"X[..., {half}:]"
    expr = f"torch.cat([{x1} * {c} - {x2} * {s}, {x2} * {c} + {x1} * {s}], dim=-1)"
    return tensors, args, ce, grid, {"op": "torch", "out": "OUT", "expr": expr}


def _add_rmsnorm(v, cap):
    M, N = v["M"], v["N"]
    eps = v.get("EPS", 1e-6)
    tensors = {"X": _t((M, N)), "RES": _t((M, N)), "W": _t((N,)), "Y": _t((M, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("res_ptr", {"tensor": "RES"}), ("w_ptr", {"tensor": "W"}),
            ("y_ptr", {"tensor": "Y"}), ("N", N), ("stride_x", N), ("stride_r", N), ("stride_y", N)]
    ce = {"EPS": eps, "BLOCK_N": triton.next_power_of_2(N)}
    expr = f"(X + RES) * torch.rsqrt(((X + RES) ** 2).mean(dim=-1, keepdim=True) + {eps!r}) * W"
    return tensors, args, ce, [M, 1, 1], {"op": "torch", "out": "Y", "expr": expr}


def _colsum(v, cap):
    M, N, BM, BN, S = v["M"], v["N"], v["BLOCK_M"], v["BLOCK_N"], v["SPLIT"]
    rows = triton.cdiv(triton.cdiv(M, S), BM) * BM
    tensors = {"X": _t((M, N), v.get("dtype", "float16")), "OUT": _t((N,), "float32", "zeros")}
    args = [("x_ptr", {"tensor": "X"}), ("out_ptr", {"tensor": "OUT"}), ("M", M), ("N", N), ("stride_xm", N),
            ("ROWS_PER_SPLIT", rows)]
    ce = {"BLOCK_M": BM, "BLOCK_N": BN}
    grid = [triton.cdiv(N, BN), triton.cdiv(M, rows), 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "OUT", "expr": "X.sum(dim=0)"}


def _cumsum(v, cap):
    M, N, BM, BN = v["M"], v["N"], v["BLOCK_M"], v["BLOCK_N"]
    tensors = {"X": _t((M, N), v.get("dtype", "float32")), "OUT": _t((M, N), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("out_ptr", {"tensor": "OUT"}), ("M", M), ("N", N), ("stride_x", N),
            ("stride_o", N)]
    ce = {"BLOCK_M": BM, "BLOCK_N": BN}
    return tensors, args, ce, [triton.cdiv(M, BM), 1, 1], {"op": "torch", "out": "OUT", "expr": "torch.cumsum(X, dim=1)"}


def _mm_blockptr(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    dt = v.get("dtype", "float16")
    tensors = {"A": _t((M, K), dt), "B": _t((K, N), dt), "C": _t((M, N), dt, "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N),
            ("K", K), ("stride_am", K), ("stride_ak", 1), ("stride_bk", N), ("stride_bn", 1), ("stride_cm", N),
            ("stride_cn", 1)]
    ce = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}
    grid = [triton.cdiv(N, BN), triton.cdiv(M, BM), 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "C", "expr": "A @ B"}


def _transpose(v, cap):
    M, N, BM, BN = v["M"], v["N"], v["BLOCK_M"], v["BLOCK_N"]
    dt = v.get("dtype", "float16")
    tensors = {"X": _t((M, N), dt), "OUT": _t((N, M), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("out_ptr", {"tensor": "OUT"}), ("M", M), ("N", N), ("stride_xm", N),
            ("stride_om", M)]
    ce = {"BLOCK_M": BM, "BLOCK_N": BN}
    grid = [triton.cdiv(M, BM), triton.cdiv(N, BN), 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "OUT", "expr": "X.t().contiguous()"}


def _softmax(v, cap):
    M, N, R = v["M"], v["N"], v["ROWS"]
    dt = v.get("dtype", "float16")
    tensors = {"X": _t((M, N), dt), "Y": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("M", M), ("stride_x", N), ("stride_y", N)]
    ce = {"N_COLS": N, "ROWS": R, "STAGES": v["STAGES"]}
    grid = [min(triton.cdiv(M, R), NUM_SMS.get(cap, 132) * v.get("PROGS_PER_SM", 4)), 1, 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "Y", "expr": "torch.softmax(X, dim=-1)"}


def _bgemv(v, cap):
    B, N, K, BN, BK = v["B"], v["N"], v["K"], v["BLOCK_N"], v["BLOCK_K"]
    tensors = {"W": _t((B, N, K)), "XV": _t((B, K)), "Y": _t((B, N), "float32", "nan")}
    args = [("w_ptr", {"tensor": "W"}), ("x_ptr", {"tensor": "XV"}), ("y_ptr", {"tensor": "Y"}), ("N", N), ("K", K),
            ("stride_wb", N * K), ("stride_wn", K), ("stride_xb", K), ("stride_yb", N)]
    ce = {"BLOCK_N": BN, "BLOCK_K": BK}
    grid = [triton.cdiv(N, BN), B, 1]
    return tensors, args, ce, grid, {"op": "torch", "out": "Y", "expr": "torch.bmm(W, XV[:, :, None])[:, :, 0]"}


BUILDERS = {
    "mm_residual": _mm_residual,
    "fp8_scaled_mm": _fp8_mm,
    "dual_proj": _dual_proj,
    "rope": _rope,
    "add_rmsnorm": _add_rmsnorm,
    "colsum_split": _colsum,
    "row_cumsum": _cumsum,
    "mm_blockptr": _mm_blockptr,
    "transpose": _transpose,
    "softmax_rows": _softmax,
    "batched_gemv": _bgemv,
}


# ---------------------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------------------


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": (90,), "num_warps": num_warps, "num_stages": num_stages, **kw}


VARIANTS = [
    _v("h3_mm_res_128x256x64_w8_s3", "mm_residual", 8, 3, M=4096, N=4096, K=2048,
       BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8),
    _v("h3_fp8_mm_128x128x128_w8_s3", "fp8_scaled_mm", 8, 3, M=4096, N=4096, K=4096, A_SCALE=0.5, B_SCALE=0.25,
       BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, GROUP_M=8),
    _v("h3_fp8_mm_64x128x128_w4_s4", "fp8_scaled_mm", 4, 4, M=2048, N=4096, K=4096, A_SCALE=0.125, B_SCALE=1.5,
       BLOCK_M=64, BLOCK_N=128, BLOCK_K=128, GROUP_M=4),
    _v("h3_dual_proj_64x128x64_w4_s3", "dual_proj", 4, 3, M=8192, N=1024, K=2048, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64),
    _v("h3_rope_d128_r32_w4", "rope", 4, 1, T=8192, H=32, HEAD_DIM=128, BLOCK_R=32),
    _v("h3_rope_d64_r64_w2", "rope", 2, 1, T=32768, H=16, HEAD_DIM=64, BLOCK_R=64),
    _v("h3_add_rmsnorm_n4096_w8", "add_rmsnorm", 8, 1, M=8192, N=4096),
    _v("h3_add_rmsnorm_n2048_w4", "add_rmsnorm", 4, 1, M=16384, N=2048),
    _v("h3_colsum_f16_32x256_split16_w4_s3", "colsum_split", 4, 3, M=32768, N=4096, BLOCK_M=32, BLOCK_N=256, SPLIT=16),
    _v("h3_cumsum_f16_16x256_w4", "row_cumsum", 4, 1, M=65536, N=256, dtype="float16", BLOCK_M=16, BLOCK_N=256),
    _v("h3_cumsum_bf16_2x1024_w4_s2", "row_cumsum", 4, 2, M=1024, N=16384, dtype="bfloat16", BLOCK_M=2, BLOCK_N=1024),
    _v("h3_mm_bptr_128x128x64_w4_s4", "mm_blockptr", 4, 4, M=3072, N=3072, K=4096, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64),
    _v("h3_mm_bptr_bf16_64x256x64_w8_s3", "mm_blockptr", 8, 3, M=2048, N=2048, K=8192, dtype="bfloat16",
       BLOCK_M=64, BLOCK_N=256, BLOCK_K=64),
    _v("h3_transpose_f16_64x64_w4", "transpose", 4, 1, M=8192, N=8192, BLOCK_M=64, BLOCK_N=64),
    _v("h3_transpose_f32_32x128_w8", "transpose", 8, 1, M=4096, N=8192, dtype="float32", BLOCK_M=32, BLOCK_N=128),
    _v("h3_softmax_n128_r32_w4_s2", "softmax_rows", 4, 2, M=262144, N=128, ROWS=32, STAGES=2),
    _v("h3_softmax_n256_r8_w2_s3", "softmax_rows", 2, 3, M=131072, N=256, ROWS=8, STAGES=3),
    _v("h3_bgemv_64x128_w4_s3", "batched_gemv", 4, 3, B=32, N=1024, K=2048, BLOCK_N=64, BLOCK_K=128),
]


def flops(variant) -> float | None:
    k = variant["kernel"]
    if k in ("mm_residual", "fp8_scaled_mm", "mm_blockptr"):
        return 2.0 * variant["M"] * variant["N"] * variant["K"]
    if k == "dual_proj":
        return 2.0 * 2.0 * variant["M"] * variant["N"] * variant["K"]
    return None
