"""Held-out set 5: Triton kernels of the kind people write for LLM training and inference.

Written on 2026-12-02 by an author who read neither the simulator (protosim/) nor the
earlier held-out sets (heldout.py .. heldout4.py and their fixtures); only the interface of
kernels/triton/corpus.py (KERNELS, BUILDERS, VARIANTS, the builder's return value) and the
reference check of kernels/triton/corpus_run.py were consulted.  Every variant targets sm_90.

Kernels (matmul-type first, then memory-bound):

    gemm_bias_act    C = act(A @ B + bias), A MxK, B KxN row-major, GELU (tanh or erf) epilogue
    swiglu_gemm      Y = silu(X @ Wg^T) * (X @ Wu^T): fused gate/up projection, two accumulators
    splitk_gemm      C += A @ W^T over K slices, fp32 atomics (skinny-M decode/down projection)
    fp8_rowwise_gemm persistent fp8 e4m3 GEMM through host TMA descriptors, per-row x per-column
                     scales in the epilogue, bf16 TMA store
    gqa_decode       one decode step of grouped-query attention over a [B, S, Hkv, D] KV cache,
                     all query heads of a KV head in one program (tl.dot on a padded group)
    causal_attn      causal flash-attention forward, off-diagonal then diagonal phase, heaviest
                     query blocks scheduled first
    add_rmsnorm      H = X + R (stored), Y = rmsnorm(H) * W  (fused residual add + RMSNorm)
    cross_entropy    per-row loss = logsumexp(logits) - logits[label], online over the vocabulary
    rope             rotary embedding of Q/K, NeoX (rotate-half) or GPT-J (interleaved) pairing
    quant_int8       per-token symmetric int8 quantization (rint), row scale stored as fp32
    bias_grad        column sums of dY (bias gradient), split over rows with fp32 atomics
    transpose        tiled 2-D transpose Y = X^T
    gemv             decode matvec y = W @ x, fp32 accumulation in a 2-D register tile
    row_cumsum       inclusive prefix sum along rows, chunked tl.cumsum with a running carry

Compile on the CPU (writes TTGIR and metadata under tests/fixtures/triton/heldout5/):

    cd /work/main && /tmp/tri36/bin/python -m kernels.triton.corpus \\
        --kernels kernels.triton.heldout5 --out tests/fixtures/triton/heldout5

Run and check on the H200:

    python -m kernels.triton.corpus_run --corpus tests/fixtures/triton/heldout5 --out heldout5.jsonl

Notes: integer inputs (cross_entropy labels) can only be drawn from randn by the harness, so
the kernel folds them with abs(); the reference does the same.  Output tensors start as NaN
(zeros for int8 and for the atomically accumulated ones).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

try:  # the libdevice entry point moved between releases
    from triton.language.extra import libdevice
except ImportError:  # pragma: no cover
    from triton.language.extra.cuda import libdevice

TARGET = (90,)
NUM_SMS_H200 = 132
LOG2E = 1.4426950408889634


# =======================================================================================
# Matmul-type kernels
# =======================================================================================


@triton.jit
def _swizzle_tile(tile, num_m, num_n, GROUP_M: tl.constexpr):
    # walk GROUP_M rows of tiles column by column so neighbouring programs share B panels
    per_group = GROUP_M * num_n
    group = tile // per_group
    m_base = group * GROUP_M
    rows = tl.minimum(num_m - m_base, GROUP_M)
    local = tile - group * per_group
    return m_base + local % rows, local // rows


@triton.jit
def gemm_bias_act_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, lda, ldb, ldc,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                         ACT: tl.constexpr):
    pid_m, pid_n = _swizzle_tile(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    # wrap the row/col indices instead of masking the loads; the store is masked
    ram = rm % M
    rbn = rn % N
    a_tile = a_ptr + ram[:, None] * lda + rk[None, :]
    b_tile = b_ptr + rk[:, None] * ldb + rbn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_tile, mask=rk[None, :] + k0 < K, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] + k0 < K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BK
        b_tile += BK * ldb
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    x = acc + bias[None, :]
    if ACT == "gelu_tanh":
        # 0.5 * (1 + tanh(z)) == sigmoid(2 z)
        y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
    elif ACT == "gelu":
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    else:
        y = x
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * ldc + rn[None, :], y.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_gemm_kernel(x_ptr, wg_ptr, wu_ptr, y_ptr, M, N, K,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    # x: M x K, wg/wu: N x K (nn.Linear weights), y: M x N
    pid_m, pid_n = _swizzle_tile(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    x_ptrs = x_ptr + offs_m[:, None] * K + offs_k[None, :]
    wg_ptrs = wg_ptr + offs_n[:, None] * K + offs_k[None, :]
    wu_ptrs = wu_ptr + offs_n[:, None] * K + offs_k[None, :]
    m_ok = offs_m[:, None] < M
    n_ok = offs_n[:, None] < N
    gate = tl.zeros((BM, BN), dtype=tl.float32)
    up = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k_ok = offs_k[None, :] + k0 < K
        x = tl.load(x_ptrs, mask=m_ok & k_ok, other=0.0)
        wg = tl.load(wg_ptrs, mask=n_ok & k_ok, other=0.0)
        wu = tl.load(wu_ptrs, mask=n_ok & k_ok, other=0.0)
        gate = tl.dot(x, wg.T, gate)
        up = tl.dot(x, wu.T, up)
        x_ptrs += BK
        wg_ptrs += BK
        wu_ptrs += BK
    y = gate * tl.sigmoid(gate) * up
    out = y_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(out, y.to(y_ptr.dtype.element_ty), mask=m_ok & (offs_n[None, :] < N))


@triton.jit
def splitk_gemm_kernel(a_ptr, w_ptr, c_ptr, M, N, K,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    # c (fp32, zeroed) += a[:, ks] @ w[:, ks]^T for this program's K slice
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_n = tl.cdiv(N, BN)
    pid_m = pid // num_n
    pid_n = pid % num_n
    k_per_split = tl.cdiv(tl.cdiv(K, SPLIT_K), BK) * BK
    k_lo = pid_k * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + (k_lo + offs_k)[None, :]
    w_ptrs = w_ptr + offs_n[None, :] * K + (k_lo + offs_k)[:, None]   # BK x BN view of W^T
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BK):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k0 < k_hi), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_n[None, :] < N) & (offs_k[:, None] + k0 < k_hi), other=0.0)
        acc = tl.dot(a, w, acc)
        a_ptrs += BK
        w_ptrs += BK
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.atomic_add(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N), sem="relaxed")


@triton.jit
def fp8_rowwise_gemm_kernel(a_desc, b_desc, c_desc, scale_a_ptr, scale_b_ptr, M, N, K,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                            NUM_SMS: tl.constexpr):
    # C[m, n] = sa[m] * sb[n] * sum_k A[m, k] B[n, k];  A, B fp8 e4m3, C bf16
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    k_iters = tl.cdiv(K, BK)
    for tile in range(tl.program_id(0), num_m * num_n, NUM_SMS):
        pid_m, pid_n = _swizzle_tile(tile, num_m, num_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(k_iters):
            a = a_desc.load([off_m, kk * BK])
            b = b_desc.load([off_n, kk * BK])
            acc = tl.dot(a, b.T, acc)
        rows = off_m + tl.arange(0, BM)
        cols = off_n + tl.arange(0, BN)
        sa = tl.load(scale_a_ptr + rows, mask=rows < M, other=0.0)
        sb = tl.load(scale_b_ptr + cols, mask=cols < N, other=0.0)
        acc = acc * sa[:, None] * sb[None, :]
        c_desc.store([off_m, off_n], acc.to(tl.bfloat16))


@triton.jit
def gqa_decode_kernel(q_ptr, k_ptr, v_ptr, o_ptr, SEQ,
                      N_Q_HEADS: tl.constexpr, N_KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr,
                      BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, SM_SCALE: tl.constexpr):
    # q, o: [B, Hq, D]; k, v: [B, SEQ, Hkv, D]; program (kv_head, batch)
    GROUP: tl.constexpr = N_Q_HEADS // N_KV_HEADS
    kvh = tl.program_id(0)
    b = tl.program_id(1)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    g_ok = offs_g < GROUP
    q_rows = b * N_Q_HEADS + kvh * GROUP + offs_g
    q = tl.load(q_ptr + q_rows[:, None] * HEAD_DIM + offs_d[None, :], mask=g_ok[:, None], other=0.0)
    tok_stride = N_KV_HEADS * HEAD_DIM
    kv_base = b.to(tl.int64) * SEQ * tok_stride + kvh * HEAD_DIM
    k_ptrs = k_ptr + kv_base + offs_n[:, None] * tok_stride + offs_d[None, :]
    v_ptrs = v_ptr + kv_base + offs_n[:, None] * tok_stride + offs_d[None, :]
    qk_scale = SM_SCALE * 1.4426950408889634
    m_i = tl.full((BLOCK_G,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_G,), tl.float32)
    acc = tl.zeros((BLOCK_G, HEAD_DIM), tl.float32)
    for start in range(0, SEQ, BLOCK_N):
        n_ok = offs_n + start < SEQ
        k = tl.load(k_ptrs, mask=n_ok[:, None], other=0.0)
        v = tl.load(v_ptrs, mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, k.T) * qk_scale
        s = tl.where(n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
        k_ptrs += BLOCK_N * tok_stride
        v_ptrs += BLOCK_N * tok_stride
    o = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] * HEAD_DIM + offs_d[None, :], o.to(o_ptr.dtype.element_ty), mask=g_ok[:, None])


@triton.jit
def _causal_attn_block(acc, l_i, m_i, q, k_base, v_base, offs_m, offs_n, lo, hi, qk_scale,
                       HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        kv_rows = start_n + offs_n
        k = tl.load(k_base + kv_rows[:, None] * HEAD_DIM + offs_d[None, :])
        s = tl.dot(q, k.T) * qk_scale
        if MASKED:
            s = tl.where(offs_m[:, None] >= kv_rows[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + kv_rows[:, None] * HEAD_DIM + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def causal_attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, SEQ,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       SM_SCALE: tl.constexpr):
    # q, k, v, o: [B*H, SEQ, D]; SEQ a multiple of BLOCK_M; BLOCK_M a multiple of BLOCK_N
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)   # longest rows first
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * SEQ * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    qk_scale = SM_SCALE * 1.4426950408889634
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    # keys strictly below the block: no mask
    acc, l_i, m_i = _causal_attn_block(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, offs_n,
                                       0, start_m * BLOCK_M, qk_scale, HEAD_DIM, BLOCK_N, False)
    # the diagonal block
    acc, l_i, m_i = _causal_attn_block(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, offs_n,
                                       start_m * BLOCK_M, (start_m + 1) * BLOCK_M, qk_scale, HEAD_DIM, BLOCK_N,
                                       True)
    o = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], o.to(o_ptr.dtype.element_ty))


# =======================================================================================
# Memory-bound kernels
# =======================================================================================


@triton.jit
def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, N, row_stride,
                       BLOCK_N: tl.constexpr, EPS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    ok = cols < N
    off = row * row_stride + cols
    h = tl.load(x_ptr + off, mask=ok, other=0.0).to(tl.float32) + tl.load(r_ptr + off, mask=ok, other=0.0).to(tl.float32)
    tl.store(h_ptr + off, h.to(h_ptr.dtype.element_ty), mask=ok)
    inv_rms = tl.rsqrt(tl.sum(h * h, 0) / N + EPS)
    w = tl.load(w_ptr + cols, mask=ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + off, (h * inv_rms * w).to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def cross_entropy_kernel(logits_ptr, labels_ptr, loss_ptr, V, row_stride, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * row_stride
    cols = tl.arange(0, BLOCK_V)
    m = float("-inf")
    s = 0.0
    for start in range(0, V, BLOCK_V):
        x = tl.load(base + start + cols, mask=start + cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    label = tl.abs(tl.load(labels_ptr + row))   # the harness draws labels from randn
    target = tl.load(base + label).to(tl.float32)
    tl.store(loss_ptr + row, m + tl.log(s) - target)


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, SEQ,
                N_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, INTERLEAVED: tl.constexpr):
    # x, out: [B*SEQ, H, D] contiguous; cos, sin: [SEQ, D/2] fp32; one token per program
    HALF: tl.constexpr = HEAD_DIM // 2
    tok = tl.program_id(0)
    pos = tok % SEQ
    heads = tl.arange(0, N_HEADS)
    pairs = tl.arange(0, HALF)
    c = tl.load(cos_ptr + pos * HALF + pairs)[None, :]
    s = tl.load(sin_ptr + pos * HALF + pairs)[None, :]
    row = x_ptr + tok.to(tl.int64) * (N_HEADS * HEAD_DIM) + heads[:, None] * HEAD_DIM
    orow = out_ptr + tok.to(tl.int64) * (N_HEADS * HEAD_DIM) + heads[:, None] * HEAD_DIM
    if INTERLEAVED:
        i1 = 2 * pairs[None, :]
        i2 = i1 + 1
    else:
        i1 = pairs[None, :]
        i2 = i1 + HALF
    x1 = tl.load(row + i1).to(tl.float32)
    x2 = tl.load(row + i2).to(tl.float32)
    tl.store(orow + i1, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty))
    tl.store(orow + i2, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty))


@triton.jit
def quant_int8_kernel(x_ptr, q_ptr, scale_ptr, K, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_K)
    ok = cols < K
    off = row.to(tl.int64) * K + cols
    x = tl.load(x_ptr + off, mask=ok, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), 0), 1e-8)
    scale = amax / 127.0
    q = libdevice.rint(x / scale)
    q = tl.minimum(tl.maximum(q, -127.0), 127.0)
    tl.store(q_ptr + off, q.to(tl.int8), mask=ok)
    tl.store(scale_ptr + row, scale)


@triton.jit
def bias_grad_kernel(dy_ptr, db_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_M: tl.constexpr):
    # db (fp32, zeroed) += sum over this program's rows of dy[:, cols]
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_per = tl.cdiv(tl.cdiv(M, SPLIT_M), BLOCK_M) * BLOCK_M
    r_lo = pid_m * rows_per
    r_hi = tl.minimum(r_lo + rows_per, M)
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for r0 in range(r_lo, r_hi, BLOCK_M):
        r = r0 + rows
        tile = tl.load(dy_ptr + r[:, None].to(tl.int64) * N + cols[None, :],
                       mask=(r[:, None] < r_hi) & (cols[None, :] < N), other=0.0)
        acc += tile.to(tl.float32)
    tl.atomic_add(db_ptr + cols, tl.sum(acc, 0), mask=cols < N, sem="relaxed")


@triton.jit
def transpose_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x: M x N, y: N x M
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], mask=mask)
    tl.store(y_ptr + rn[:, None].to(tl.int64) * M + rm[None, :], tl.trans(tile), mask=tl.trans(mask))


@triton.jit
def gemv_kernel(w_ptr, x_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_K)
    w_ptrs = w_ptr + rows[:, None].to(tl.int64) * K + cols[None, :]
    acc = tl.zeros((BLOCK_N, BLOCK_K), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = cols + k0 < K
        x = tl.load(x_ptr + k0 + cols, mask=k_ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptrs, mask=(rows[:, None] < N) & k_ok[None, :], other=0.0).to(tl.float32)
        acc += w * x[None, :]
        w_ptrs += BLOCK_K
    tl.store(y_ptr + rows, tl.sum(acc, 1).to(y_ptr.dtype.element_ty), mask=rows < N)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def row_cumsum_kernel(x_ptr, y_ptr, L, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    carry = 0.0
    for start in range(0, L, BLOCK):
        ok = start + cols < L
        x = tl.load(x_ptr + row * L + start + cols, mask=ok, other=0.0).to(tl.float32)
        y = tl.associative_scan(x, 0, _add) + carry
        tl.store(y_ptr + row * L + start + cols, y.to(y_ptr.dtype.element_ty), mask=ok)
        carry += tl.sum(x, 0)


KERNELS = {
    "gemm_bias_act": gemm_bias_act_kernel,
    "swiglu_gemm": swiglu_gemm_kernel,
    "splitk_gemm": splitk_gemm_kernel,
    "fp8_rowwise_gemm": fp8_rowwise_gemm_kernel,
    "gqa_decode": gqa_decode_kernel,
    "causal_attn": causal_attn_kernel,
    "add_rmsnorm": add_rmsnorm_kernel,
    "cross_entropy": cross_entropy_kernel,
    "rope": rope_kernel,
    "quant_int8": quant_int8_kernel,
    "bias_grad": bias_grad_kernel,
    "transpose": transpose_kernel,
    "gemv": gemv_kernel,
    "row_cumsum": row_cumsum_kernel,
}


# =======================================================================================
# Builders: (tensors, args in parameter order, constexprs, grid, reference)
# =======================================================================================


def _t(shape, dtype, init="randn"):
    return {"shape": [int(s) for s in shape], "dtype": dtype, "init": init}


def _out(shape, dtype):
    return _t(shape, dtype, "nan")


def _ref(expr, out):
    return {"op": "torch", "expr": expr, "out": out}


def _cdiv(a, b):
    return (a + b - 1) // b


def _next_pow2(n):
    return 1 << (int(n) - 1).bit_length()


def _gemm_bias_act(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"A": _t((M, K), dt), "B": _t((K, N), dt), "BIAS": _t((N,), dt), "C": _out((M, N), dt)}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("bias_ptr", {"tensor": "BIAS"}),
            ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K), ("lda", K), ("ldb", N), ("ldc", N)]
    ce = {k: v[k] for k in ("BM", "BN", "BK", "GROUP_M", "ACT")}
    grid = [_cdiv(M, v["BM"]) * _cdiv(N, v["BN"]), 1, 1]
    approx = "'tanh'" if v["ACT"] == "gelu_tanh" else "'none'"
    expr = f"torch.nn.functional.gelu(A @ B + BIAS, approximate={approx})"
    return tensors, args, ce, grid, _ref(expr, "C")


def _swiglu_gemm(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"X": _t((M, K), dt), "WG": _t((N, K), dt), "WU": _t((N, K), dt), "Y": _out((M, N), dt)}
    args = [("x_ptr", {"tensor": "X"}), ("wg_ptr", {"tensor": "WG"}), ("wu_ptr", {"tensor": "WU"}),
            ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BM", "BN", "BK", "GROUP_M")}
    grid = [_cdiv(M, v["BM"]) * _cdiv(N, v["BN"]), 1, 1]
    return tensors, args, ce, grid, _ref("torch.nn.functional.silu(X @ WG.T) * (X @ WU.T)", "Y")


def _splitk_gemm(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"A": _t((M, K), dt), "W": _t((N, K), dt), "C": _t((M, N), "float32", "zeros")}
    args = [("a_ptr", {"tensor": "A"}), ("w_ptr", {"tensor": "W"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BM", "BN", "BK", "SPLIT_K")}
    grid = [_cdiv(M, v["BM"]) * _cdiv(N, v["BN"]), v["SPLIT_K"], 1]
    return tensors, args, ce, grid, _ref("A @ W.T", "C")


def _fp8_rowwise_gemm(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BM"], v["BN"], v["BK"]
    tensors = {"A": _t((M, K), "float8_e4m3fn"), "B": _t((N, K), "float8_e4m3fn"),
               "SA": _t((M,), "float32"), "SB": _t((N,), "float32"), "C": _out((M, N), "bfloat16")}
    args = [("a_desc", {"desc": "A", "block_shape": [BM, BK]}), ("b_desc", {"desc": "B", "block_shape": [BN, BK]}),
            ("c_desc", {"desc": "C", "block_shape": [BM, BN]}), ("scale_a_ptr", {"tensor": "SA"}),
            ("scale_b_ptr", {"tensor": "SB"}), ("M", M), ("N", N), ("K", K)]
    ce = {"BM": BM, "BN": BN, "BK": BK, "GROUP_M": v["GROUP_M"], "NUM_SMS": NUM_SMS_H200}
    grid = [min(NUM_SMS_H200, _cdiv(M, BM) * _cdiv(N, BN)), 1, 1]
    return tensors, args, ce, grid, _ref("(A @ B.T) * SA[:, None] * SB[None, :]", "C")


def _gqa_decode(v, cap):
    B, S, HQ, HKV, D, dt = v["B"], v["S"], v["HQ"], v["HKV"], v["D"], v["dtype"]
    G = HQ // HKV
    tensors = {"Q": _t((B, HQ, D), dt), "K": _t((B, S, HKV, D), dt), "V": _t((B, S, HKV, D), dt),
               "O": _out((B, HQ, D), dt)}
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("o_ptr", {"tensor": "O"}), ("SEQ", S)]
    ce = {"N_Q_HEADS": HQ, "N_KV_HEADS": HKV, "HEAD_DIM": D, "BLOCK_G": max(16, _next_pow2(G)),
          "BLOCK_N": v["BLOCK_N"], "SM_SCALE": 1.0 / math.sqrt(D)}
    grid = [HKV, B, 1]
    expr = (f"(torch.softmax((Q.reshape({B}, {HKV}, {G}, {D}) @ K.permute(0, 2, 3, 1)) / math.sqrt({D}), dim=-1)"
            f" @ V.permute(0, 2, 1, 3)).reshape({B}, {HQ}, {D})")
    return tensors, args, ce, grid, _ref(expr, "O")


def _causal_attn(v, cap):
    ZH, S, D, dt = v["ZH"], v["S"], v["D"], v["dtype"]
    tensors = {n: _t((ZH, S, D), dt) for n in ("Q", "K", "V")}
    tensors["O"] = _out((ZH, S, D), dt)
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("o_ptr", {"tensor": "O"}), ("SEQ", S)]
    ce = {"HEAD_DIM": D, "BLOCK_M": v["BLOCK_M"], "BLOCK_N": v["BLOCK_N"], "SM_SCALE": 1.0 / math.sqrt(D)}
    grid = [S // v["BLOCK_M"], ZH, 1]
    expr = (f"torch.softmax((Q @ K.transpose(-1, -2)) / math.sqrt({D})"
            f" + torch.full(({S}, {S}), -math.inf, device=Q.device).triu(1), dim=-1) @ V")
    return tensors, args, ce, grid, _ref(expr, "O")


def _add_rmsnorm(v, cap):
    M, N, dt = v["M"], v["N"], v["dtype"]
    tensors = {"X": _t((M, N), dt), "R": _t((M, N), dt), "W": _t((N,), dt),
               "H": _out((M, N), dt), "Y": _out((M, N), dt)}
    args = [("x_ptr", {"tensor": "X"}), ("r_ptr", {"tensor": "R"}), ("w_ptr", {"tensor": "W"}),
            ("h_ptr", {"tensor": "H"}), ("y_ptr", {"tensor": "Y"}), ("N", N), ("row_stride", N)]
    ce = {"BLOCK_N": _next_pow2(N), "EPS": 1e-6}
    expr = "(X + R) * torch.rsqrt((X + R).pow(2).mean(-1, keepdim=True) + 1e-6) * W"
    return tensors, args, ce, [M, 1, 1], _ref(expr, "Y")


def _cross_entropy(v, cap):
    T, V, dt = v["T"], v["V"], v["dtype"]
    tensors = {"LOGITS": _t((T, V), dt), "LABELS": _t((T,), "int32"), "LOSS": _out((T,), "float32")}
    args = [("logits_ptr", {"tensor": "LOGITS"}), ("labels_ptr", {"tensor": "LABELS"}),
            ("loss_ptr", {"tensor": "LOSS"}), ("V", V), ("row_stride", V)]
    ce = {"BLOCK_V": v["BLOCK_V"]}
    expr = "torch.logsumexp(LOGITS, -1) - LOGITS.gather(1, LABELS.abs().long()[:, None])[:, 0]"
    return tensors, args, ce, [T, 1, 1], _ref(expr, "LOSS")


def _rope(v, cap):
    B, S, H, D, dt = v["B"], v["S"], v["H"], v["D"], v["dtype"]
    T, half = B * S, D // 2
    tensors = {"X": _t((T, H, D), dt), "COS": _t((S, half), "float32"), "SIN": _t((S, half), "float32"),
               "OUT": _out((T, H, D), dt)}
    args = [("x_ptr", {"tensor": "X"}), ("cos_ptr", {"tensor": "COS"}), ("sin_ptr", {"tensor": "SIN"}),
            ("out_ptr", {"tensor": "OUT"}), ("SEQ", S)]
    ce = {"N_HEADS": H, "HEAD_DIM": D, "INTERLEAVED": v["INTERLEAVED"]}
    c, s = f"COS.repeat({B}, 1)[:, None, :]", f"SIN.repeat({B}, 1)[:, None, :]"
    if v["INTERLEAVED"]:
        x1, x2 = "X[..., 0::2]", "X[..., 1::2]"
        expr = f"torch.stack([{x1} * {c} - {x2} * {s}, {x2} * {c} + {x1} * {s}], dim=-1).flatten(-2)"
    else:
        x1, x2 = f"X[..., :{half}]", f"X[..., {half}:]"
        expr = f"torch.cat([{x1} * {c} - {x2} * {s}, {x2} * {c} + {x1} * {s}], dim=-1)"
    return tensors, args, ce, [T, 1, 1], _ref(expr, "OUT")


def _quant_int8(v, cap):
    M, K, dt = v["M"], v["K"], v["dtype"]
    tensors = {"X": _t((M, K), dt), "Q": _out((M, K), "int8"), "S": _out((M,), "float32")}
    args = [("x_ptr", {"tensor": "X"}), ("q_ptr", {"tensor": "Q"}), ("scale_ptr", {"tensor": "S"}), ("K", K)]
    ce = {"BLOCK_K": _next_pow2(K)}
    expr = "torch.round(X / (X.abs().amax(-1, keepdim=True).clamp_min(1e-8) / 127.0)).clamp(-127, 127)"
    return tensors, args, ce, [M, 1, 1], _ref(expr, "Q")


def _bias_grad(v, cap):
    M, N, dt = v["M"], v["N"], v["dtype"]
    tensors = {"DY": _t((M, N), dt), "DB": _t((N,), "float32", "zeros")}
    args = [("dy_ptr", {"tensor": "DY"}), ("db_ptr", {"tensor": "DB"}), ("M", M), ("N", N)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "SPLIT_M")}
    return tensors, args, ce, [_cdiv(N, v["BLOCK_N"]), v["SPLIT_M"], 1], _ref("DY.sum(0)", "DB")


def _transpose(v, cap):
    M, N, dt = v["M"], v["N"], v["dtype"]
    tensors = {"X": _t((M, N), dt), "Y": _out((N, M), dt)}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N")}
    return tensors, args, ce, [_cdiv(N, v["BLOCK_N"]), _cdiv(M, v["BLOCK_M"]), 1], _ref("X.T", "Y")


def _gemv(v, cap):
    N, K, dt = v["N"], v["K"], v["dtype"]
    tensors = {"W": _t((N, K), dt), "X": _t((K,), dt), "Y": _out((N,), dt)}
    args = [("w_ptr", {"tensor": "W"}), ("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_N", "BLOCK_K")}
    return tensors, args, ce, [_cdiv(N, v["BLOCK_N"]), 1, 1], _ref("W @ X", "Y")


def _row_cumsum(v, cap):
    R, L, dt = v["R"], v["L"], v["dtype"]
    tensors = {"X": _t((R, L), dt), "Y": _out((R, L), "float32")}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("L", L)]
    return tensors, args, {"BLOCK": v["BLOCK"]}, [R, 1, 1], _ref("torch.cumsum(X, dim=-1)", "Y")


BUILDERS = {
    "gemm_bias_act": _gemm_bias_act,
    "swiglu_gemm": _swiglu_gemm,
    "splitk_gemm": _splitk_gemm,
    "fp8_rowwise_gemm": _fp8_rowwise_gemm,
    "gqa_decode": _gqa_decode,
    "causal_attn": _causal_attn,
    "add_rmsnorm": _add_rmsnorm,
    "cross_entropy": _cross_entropy,
    "rope": _rope,
    "quant_int8": _quant_int8,
    "bias_grad": _bias_grad,
    "transpose": _transpose,
    "gemv": _gemv,
    "row_cumsum": _row_cumsum,
}


# =======================================================================================
# Variants
# =======================================================================================


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": TARGET, "num_warps": num_warps, "num_stages": num_stages, **kw}


VARIANTS = [
    # --- matmul-type ---
    _v("h5_gemm_gelu_tanh_fp16_4k", "gemm_bias_act", 4, 4, M=4096, N=4096, K=4096, dtype="float16",
       BM=128, BN=128, BK=64, GROUP_M=8, ACT="gelu_tanh"),
    _v("h5_gemm_gelu_erf_bf16_128x256", "gemm_bias_act", 8, 3, M=8192, N=4096, K=1024, dtype="bfloat16",
       BM=128, BN=256, BK=64, GROUP_M=8, ACT="gelu"),
    _v("h5_swiglu_gemm_bf16", "swiglu_gemm", 8, 3, M=4096, N=5632, K=2048, dtype="bfloat16",
       BM=128, BN=128, BK=64, GROUP_M=8),
    _v("h5_splitk_gemm_fp16_m64", "splitk_gemm", 4, 3, M=64, N=4096, K=14336, dtype="float16",
       BM=64, BN=128, BK=128, SPLIT_K=14),
    _v("h5_fp8_rowwise_persistent", "fp8_rowwise_gemm", 8, 4, M=4096, N=4096, K=4096,
       BM=128, BN=128, BK=128, GROUP_M=8),
    _v("h5_gqa_decode_fp16_s4k", "gqa_decode", 4, 3, B=32, S=4096, HQ=32, HKV=8, D=128, dtype="float16",
       BLOCK_N=64),
    _v("h5_causal_attn_bf16_d128", "causal_attn", 8, 3, ZH=64, S=2048, D=128, dtype="bfloat16",
       BLOCK_M=128, BLOCK_N=64),
    # --- memory-bound ---
    _v("h5_add_rmsnorm_bf16_4096", "add_rmsnorm", 8, 1, M=16384, N=4096, dtype="bfloat16"),
    _v("h5_add_rmsnorm_fp16_5120", "add_rmsnorm", 16, 1, M=8192, N=5120, dtype="float16"),
    _v("h5_cross_entropy_bf16_v128k", "cross_entropy", 8, 2, T=4096, V=128256, dtype="bfloat16", BLOCK_V=4096),
    _v("h5_cross_entropy_fp32_v32k", "cross_entropy", 4, 3, T=4096, V=32000, dtype="float32", BLOCK_V=2048),
    _v("h5_rope_neox_bf16_h32d128", "rope", 4, 1, B=4, S=4096, H=32, D=128, dtype="bfloat16", INTERLEAVED=False),
    _v("h5_rope_gptj_fp16_h32d64", "rope", 2, 1, B=8, S=1024, H=32, D=64, dtype="float16", INTERLEAVED=True),
    _v("h5_quant_int8_fp16_8192", "quant_int8", 8, 1, M=8192, K=8192, dtype="float16"),
    _v("h5_quant_int8_bf16_14336", "quant_int8", 16, 1, M=4096, K=14336, dtype="bfloat16"),
    _v("h5_bias_grad_bf16_n4096", "bias_grad", 4, 3, M=32768, N=4096, dtype="bfloat16",
       BLOCK_M=64, BLOCK_N=128, SPLIT_M=64),
    _v("h5_bias_grad_fp16_n1024", "bias_grad", 8, 2, M=65536, N=1024, dtype="float16",
       BLOCK_M=128, BLOCK_N=64, SPLIT_M=128),
    _v("h5_transpose_fp16_8k", "transpose", 4, 1, M=8192, N=8192, dtype="float16", BLOCK_M=64, BLOCK_N=64),
    _v("h5_gemv_fp16_28672x4096", "gemv", 4, 3, N=28672, K=4096, dtype="float16", BLOCK_N=16, BLOCK_K=512),
    _v("h5_row_cumsum_fp32_16k", "row_cumsum", 8, 2, R=4096, L=16384, dtype="float32", BLOCK=4096),
]


def flops(variant: dict):
    """Useful floating-point operations of a matmul-like variant (the padded query group of
    gqa_decode and the masked half of causal_attn's diagonal blocks are not counted); None
    for the memory-bound kernels."""
    k, v = variant["kernel"], variant
    if k in ("gemm_bias_act", "splitk_gemm", "fp8_rowwise_gemm"):
        return 2 * v["M"] * v["N"] * v["K"]
    if k == "swiglu_gemm":
        return 4 * v["M"] * v["N"] * v["K"]
    if k == "gqa_decode":
        return 4 * v["B"] * v["HQ"] * v["S"] * v["D"]
    if k == "causal_attn":
        return 2 * v["ZH"] * v["S"] * v["S"] * v["D"]   # 4 * ZH * S^2 * D, halved by the mask
    if k == "gemv":
        return 2 * v["N"] * v["K"]
    return None
