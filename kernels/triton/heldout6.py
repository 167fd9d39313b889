"""Held-out set 6: fifteen Triton kernels of deep-learning training and inference on Hopper, in 20 variants.

Written on 2026-12-02 by an author who read neither the simulator (protosim/) nor the earlier held-out
sets; only the interface of kernels/triton/corpus.py and the reference check of kernels/triton/corpus_run.py
were consulted.

Kernels (matmul-type first, then memory-bound / reductions):

    moe_gemm            MoE expert GEMM over capacity-padded token groups, Y = gate * (X_e @ W_e^T), W [E, N, K]
    linear_gelu         nn.Linear (W stored N x K) with bias + tanh-GELU epilogue, edge masks, grouped order
    w8a16_gemm          weight-only int8 GEMM: int8 W [N, K] converted to fp16 in the K loop, per-channel scale
    fp8_rowwise_tma     persistent fp8 (e4m3) GEMM through host TMA descriptors, row x column scales, TMA store
    attn_causal_gqa     causal flash-attention forward with grouped-query heads (Hq = 4 Hkv), pointer loads
    decode_attn_gqa     single-token decode attention, one program per (batch, kv head) over the GQA group
    layernorm_bwd_dx    LayerNorm backward, input gradient, from saved mean / rstd, ROWS rows per program
    rmsnorm_bwd_dw      RMSNorm weight gradient: column reduction split over M, fp32 atomic_add
    cross_entropy       fused softmax cross-entropy forward + backward, gradient written in place of the
                        logits (Liger style), labels < 0 ignored, chunked online logsumexp over the vocab
    adamw               fused AdamW step in place (fp32 params / moments, bf16 grads), grid-stride loop
    moe_router_top2     MoE router: top-2 of 64 experts, renormalised weights, per-expert histogram + atomics
    softmax_bwd         softmax backward dX = Y * (dY - sum(Y * dY)), ROWS rows per program
    quant_int8_rowwise  per-token dynamic int8 quantisation (absmax / 127, round half away from zero)
    groupnorm_silu      GroupNorm (32 groups, NCHW) + SiLU, two passes over each contiguous group
    maxpool2d_nhwc      3x3 / stride 2 / pad 1 max pooling on NHWC activations (ResNet stem)

Compile on the CPU (sm_90 only) and run on the H200:

    /tmp/tri36/bin/python -m kernels.triton.corpus --kernels kernels.triton.heldout6 --out tests/fixtures/triton/heldout6
    python -m kernels.triton.corpus_run --corpus tests/fixtures/triton/heldout6 --out results.jsonl

Integer inputs: corpus_run draws every input with torch.randn(...).to(dtype), so an int tensor holds small
values around 0 (mostly -3..3).  The int8 weight of w8a16_gemm takes them as they are; the labels of
cross_entropy use them as they are too (a negative label is an ignored position, ignore_index style; the
rest pick one of the first few vocabulary entries).  No kernel here gathers rows through random indices.
Every reference is an ``op: torch`` expression over the inputs as they were before the launch.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

TARGET = (90,)        # sm_90 (H200) only
NUM_SMS_H200 = 132

# ---------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def _swizzle(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_pid_n
    group = pid // width
    first_m = group * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % width) % size_m)
    pid_n = (pid % width) // size_m
    return pid_m, pid_n


@triton.jit
def moe_gemm_kernel(x_ptr, w_ptr, gate_ptr, y_ptr, CAP, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Tokens already permuted and padded so that expert e owns rows [e*CAP, (e+1)*CAP) of X [E*CAP, K];
    W [E, N, K]; gate [E*CAP] fp32 routing weights.  Y[r] = gate[r] * X[r] @ W[e]^T.  Grid (tiles, E).
    CAP % BLOCK_M == N % BLOCK_N == K % BLOCK_K == 0 (no masks)."""
    pid = tl.program_id(0)
    expert = tl.program_id(1)
    pid_m, pid_n = _swizzle(pid, CAP, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = expert * CAP + pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rows[:, None].to(tl.int64) * K + offs_k[None, :]
    w_ptrs = w_ptr + expert.to(tl.int64) * N * K + offs_n[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptrs)
        b = tl.load(w_ptrs)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    g = tl.load(gate_ptr + rows)
    acc = acc * g[:, None]
    tl.store(y_ptr + rows[:, None].to(tl.int64) * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty))


@triton.jit
def linear_gelu_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm, stride_wn, stride_ym,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Y = gelu_tanh(X @ W^T + bias), X [M, K], W [N, K] (nn.Linear layout), masked edges in M, N and K.
    gelu_tanh(z) = z * sigmoid(2 sqrt(2/pi) (z + 0.044715 z^3))."""
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_am[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_bn[None, :] * stride_wn + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kt * BLOCK_K
        a = tl.load(x_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(w_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    z = acc + bias[None, :]
    y = z * tl.sigmoid(1.5957691216057308 * (z + 0.044715 * z * z * z))
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def w8a16_gemm_kernel(x_ptr, wq_ptr, scale_ptr, y_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Weight-only int8 GEMM: Y = (X @ Wq^T) * scale[None, :], X fp16 [M, K], Wq int8 [N, K], scale fp16 [N].
    The int8 tile is converted to fp16 before the dot.  M (tokens) is masked; N % BLOCK_N == K % BLOCK_K == 0."""
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    x_ptrs = x_ptr + offs_m[:, None] * K + offs_k[None, :]
    w_ptrs = wq_ptr + offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptrs, mask=m_mask[:, None], other=0.0)
        b = tl.load(w_ptrs).to(tl.float16)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    s = tl.load(scale_ptr + offs_n).to(tl.float32)
    acc = acc * s[None, :]
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty), mask=m_mask[:, None])


@triton.jit
def fp8_rowwise_tma_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """Persistent C = (A @ B^T) * sa[:, None] * sb[None, :], A fp8e4m3 [M, K], B fp8e4m3 [N, K] (host TMA
    descriptors), sa [M] / sb [N] fp32 scales, C bf16 [M, N] written with a TMA store.  Grid min(132, tiles)."""
    start = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in range(start, num_tiles, NUM_SMS):
        pid_m, pid_n = _swizzle(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        om = pid_m * BLOCK_M
        on = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([om, ki * BLOCK_K])
            b = b_desc.load([on, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        sa = tl.load(sa_ptr + om + tl.arange(0, BLOCK_M))
        sb = tl.load(sb_ptr + on + tl.arange(0, BLOCK_N))
        acc = acc * sa[:, None] * sb[None, :]
        c_desc.store([om, on], acc.to(c_desc.dtype))


@triton.jit
def attn_causal_gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N_CTX,
                           H_Q: tl.constexpr, H_KV: tl.constexpr, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Causal attention forward, Q/O [B, H_Q, N_CTX, D], K/V [B, H_KV, N_CTX, D]; query head h reads kv head
    h // (H_Q // H_KV).  Grid (N_CTX / BLOCK_M, B * H_Q).  Off-diagonal key blocks without a mask, then the
    diagonal block with one (BLOCK_M % BLOCK_N == 0)."""
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    b = off_bh // H_Q
    h = off_bh % H_Q
    hk = h // (H_Q // H_KV)
    q_base = off_bh.to(tl.int64) * N_CTX * HEAD_DIM
    kv_base = (b * H_KV + hk).to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    qk_scale = 1.44269504 / (HEAD_DIM ** 0.5)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = start_m * BLOCK_M
    for start_n in range(0, hi, BLOCK_N):
        kt = tl.load(k_ptr + kv_base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, kt) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + kv_base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    for start_n in range(hi, hi + BLOCK_M, BLOCK_N):
        kt = tl.load(k_ptr + kv_base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, kt) * qk_scale
        qk = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + kv_base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty))


@triton.jit
def decode_attn_gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N_CTX,
                           GROUP: tl.constexpr, BLOCK_H: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    """Decode attention (one new token), Q/O [B, H_KV * GROUP, D], KV cache [B, H_KV, N_CTX, D]; program
    (b, kv head) computes the GROUP query heads sharing that kv head as a BLOCK_H-row tile (rows >= GROUP
    padded with zeros), online softmax over BLOCK_N cache positions.  N_CTX % BLOCK_N == 0."""
    pid = tl.program_id(0)
    heads = tl.arange(0, BLOCK_H)
    h_mask = heads < GROUP
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q_rows = pid * GROUP + heads
    q = tl.load(q_ptr + q_rows[:, None] * HEAD_DIM + offs_d[None, :], mask=h_mask[:, None], other=0.0)
    kv_base = pid.to(tl.int64) * N_CTX * HEAD_DIM
    qk_scale = 1.44269504 / (HEAD_DIM ** 0.5)
    m_i = tl.zeros([BLOCK_H], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        kv_offs = kv_base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv_offs)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + kv_offs)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty), mask=h_mask[:, None])


@triton.jit
def layernorm_bwd_dx_kernel(x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, M, N,
                            BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    """LayerNorm input gradient, rows of N (BLOCK_N >= N): xhat = (x - mean) rstd, wdy = w dy,
    dx = (wdy - (xhat * mean(xhat wdy) + mean(wdy))) * rstd.  Program p handles rows p*ROWS .. p*ROWS+ROWS-1."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    for i in range(ROWS):
        row = pid * ROWS + i
        rvalid = row < M
        mask = cmask & rvalid
        offs = row.to(tl.int64) * N + cols
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row, mask=rvalid, other=0.0)
        rstd = tl.load(rstd_ptr + row, mask=rvalid, other=0.0)
        xhat = tl.where(cmask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_bwd_dw_kernel(x_ptr, dy_ptr, rstd_ptr, dw_ptr, M, N, ROWS_PER_SPLIT,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """RMSNorm weight gradient dw[n] = sum_m dy[m, n] x[m, n] rstd[m]: program (column block, split) sums
    its ROWS_PER_SPLIT rows in BLOCK_M-row steps and atomically adds into dw (fp32, zeroed)."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    row0 = pid_s * ROWS_PER_SPLIT
    row_end = tl.minimum(row0 + ROWS_PER_SPLIT, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(row0, row_end, BLOCK_M):
        rows = r + tl.arange(0, BLOCK_M)
        rmask = rows < row_end
        mask = rmask[:, None] & cmask[None, :]
        offs = rows[:, None].to(tl.int64) * N + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
        acc += dy * x * rstd[:, None]
    tl.atomic_add(dw_ptr + cols, tl.sum(acc, axis=0), mask=cmask)


@triton.jit
def cross_entropy_kernel(logits_ptr, labels_ptr, loss_ptr, M, V,
                         BLOCK_V: tl.constexpr):
    """Mean softmax cross-entropy over M rows of V logits, forward and backward in one program per row:
    pass 1, an online logsumexp over BLOCK_V chunks; loss[row] = lse - x[label]; pass 2 overwrites the
    logits with d loss / d logits = (softmax - onehot(label)) / M.  A label < 0 is ignored (loss 0, grad 0)."""
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * V
    label = tl.load(labels_ptr + row).to(tl.int32)
    ignore = label < 0
    m = float("-inf")
    s = 0.0
    for off in range(0, V, BLOCK_V):
        cols = off + tl.arange(0, BLOCK_V)
        x = tl.load(base + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    x_label = tl.load(base + label, mask=label >= 0, other=0.0).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(ignore, 0.0, lse - x_label))
    inv_m = 1.0 / M
    for off in range(0, V, BLOCK_V):
        cols = off + tl.arange(0, BLOCK_V)
        cmask = cols < V
        x = tl.load(base + cols, mask=cmask, other=0.0).to(tl.float32)
        g = (tl.exp(x - lse) - tl.where(cols == label, 1.0, 0.0)) * inv_m
        g = tl.where(ignore, 0.0, g)
        tl.store(base + cols, g.to(logits_ptr.dtype.element_ty), mask=cmask)


@triton.jit
def adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, N, step,
                 LR: tl.constexpr, BETA1: tl.constexpr, BETA2: tl.constexpr, EPS: tl.constexpr,
                 WEIGHT_DECAY: tl.constexpr, BLOCK: tl.constexpr):
    """One AdamW step in place: p, m, v fp32, g bf16, step (runtime int >= 1) for the bias corrections.
    Grid-stride loop: a grid of cdiv(N, BLOCK) programs does one block each, a smaller grid loops."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    step_f = step.to(tl.float32)
    bc1 = 1.0 - tl.exp2(step_f * tl.log2(tl.full([1], BETA1, tl.float32)))
    bc2 = 1.0 - tl.exp2(step_f * tl.log2(tl.full([1], BETA2, tl.float32)))
    for start in range(pid * BLOCK, N, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < N
        p = tl.load(p_ptr + offs, mask=mask, other=0.0)
        g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        m = tl.load(m_ptr + offs, mask=mask, other=0.0)
        v = tl.load(v_ptr + offs, mask=mask, other=0.0)
        p = p * (1.0 - LR * WEIGHT_DECAY)
        m = BETA1 * m + (1.0 - BETA1) * g
        v = BETA2 * v + (1.0 - BETA2) * g * g
        p = p - LR * (m / bc1) / (tl.sqrt(v / bc2) + EPS)
        tl.store(p_ptr + offs, p, mask=mask)
        tl.store(m_ptr + offs, m, mask=mask)
        tl.store(v_ptr + offs, v, mask=mask)


@triton.jit
def moe_router_top2_kernel(logits_ptr, weights_ptr, ids_ptr, counts_ptr, T,
                           E: tl.constexpr, BLOCK_T: tl.constexpr):
    """Router of a top-2 MoE: logits [T, E] fp32 -> weights [T, 2] (softmax over the two largest logits),
    ids [T, 2] int32, and counts[E] += tokens routed to each expert (a block histogram, then E atomics)."""
    pid = tl.program_id(0)
    rows = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    rmask = rows < T
    cols = tl.arange(0, E)
    x = tl.load(logits_ptr + rows[:, None] * E + cols[None, :], mask=rmask[:, None], other=float("-inf"))
    m1 = tl.max(x, axis=1)
    i1 = tl.argmax(x, axis=1)
    x2 = tl.where(cols[None, :] == i1[:, None], float("-inf"), x)
    m2 = tl.max(x2, axis=1)
    i2 = tl.argmax(x2, axis=1)
    w1 = 1.0 / (1.0 + tl.exp(m2 - m1))
    w2 = 1.0 - w1
    two = tl.arange(0, 2)
    out_offs = rows[:, None] * 2 + two[None, :]
    tl.store(weights_ptr + out_offs, tl.join(w1, w2), mask=rmask[:, None])
    tl.store(ids_ptr + out_offs, tl.join(i1, i2).to(tl.int32), mask=rmask[:, None])
    hist = tl.histogram(i1, E, mask=rmask) + tl.histogram(i2, E, mask=rmask)
    tl.atomic_add(counts_ptr + cols, hist)


@triton.jit
def softmax_bwd_kernel(y_ptr, dy_ptr, dx_ptr, M, N,
                       BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    """dX = Y * (dY - sum(Y * dY, -1)) for softmax outputs Y [M, N]; a [ROWS, BLOCK_N] tile per program."""
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    offs = rows[:, None].to(tl.int64) * N + cols[None, :]
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=1)
    dx = y * (dy - dot[:, None])
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def quant_int8_rowwise_kernel(x_ptr, q_ptr, scale_ptr, N,
                              BLOCK_N: tl.constexpr):
    """Per-token dynamic int8 quantisation of X [M, N] (BLOCK_N >= N): scale = absmax / 127,
    q = round_half_away(x * 127 / absmax); one program per row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    offs = row.to(tl.int64) * N + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-8)
    y = x * (127.0 / amax)
    q = tl.where(y >= 0, tl.floor(y + 0.5), tl.ceil(y - 0.5))
    tl.store(q_ptr + offs, q.to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, amax / 127.0)


@triton.jit
def groupnorm_silu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, HW, CPG,
                          G: tl.constexpr, EPS: tl.constexpr, BLOCK: tl.constexpr):
    """GroupNorm + SiLU on NCHW x: program n*G + g normalises the contiguous CPG*HW elements of group g of
    sample n (fp32 sum / sum of squares, then a second pass applying the per-channel affine and SiLU)."""
    pid = tl.program_id(0)
    g = pid % G
    size = CPG * HW
    base = pid.to(tl.int64) * size
    s1 = tl.zeros([BLOCK], dtype=tl.float32)
    s2 = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, size, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + offs, mask=offs < size, other=0.0).to(tl.float32)
        s1 += x
        s2 += x * x
    mean = tl.sum(s1, axis=0) / size
    var = tl.sum(s2, axis=0) / size - mean * mean
    rstd = 1.0 / tl.sqrt(var + EPS)
    for off in range(0, size, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        mask = offs < size
        c = g * CPG + offs // HW
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        y = y * tl.sigmoid(y)
        tl.store(y_ptr + base + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def maxpool2d_nhwc_kernel(x_ptr, y_ptr, H, W, C, OH, OW, NPIX,
                          KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
                          BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """Max pooling on NHWC x [N, H, W, C] -> y [N, OH, OW, C]; program (pixel block, channel block),
    padded taps read as -inf."""
    pid_p = tl.program_id(0)
    pid_c = tl.program_id(1)
    p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = p < NPIX
    ow = p % OW
    t = p // OW
    oh = t % OH
    n = t // OH
    c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    acc = tl.full([BLOCK_P, BLOCK_C], float("-inf"), tl.float32)
    for kh in tl.static_range(KS):
        for kw in tl.static_range(KS):
            ih = oh * STRIDE - PAD + kh
            iw = ow * STRIDE - PAD + kw
            ok = pmask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            pix = ((n * H + ih) * W + iw).to(tl.int64)
            v = tl.load(x_ptr + pix[:, None] * C + c[None, :], mask=ok[:, None] & cmask[None, :], other=float("-inf"))
            acc = tl.maximum(acc, v.to(tl.float32))
    tl.store(y_ptr + p[:, None].to(tl.int64) * C + c[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=pmask[:, None] & cmask[None, :])


KERNELS = {
    "moe_gemm": moe_gemm_kernel,
    "linear_gelu": linear_gelu_kernel,
    "w8a16_gemm": w8a16_gemm_kernel,
    "fp8_rowwise_tma": fp8_rowwise_tma_kernel,
    "attn_causal_gqa": attn_causal_gqa_kernel,
    "decode_attn_gqa": decode_attn_gqa_kernel,
    "layernorm_bwd_dx": layernorm_bwd_dx_kernel,
    "rmsnorm_bwd_dw": rmsnorm_bwd_dw_kernel,
    "cross_entropy": cross_entropy_kernel,
    "adamw": adamw_kernel,
    "moe_router_top2": moe_router_top2_kernel,
    "softmax_bwd": softmax_bwd_kernel,
    "quant_int8_rowwise": quant_int8_rowwise_kernel,
    "groupnorm_silu": groupnorm_silu_kernel,
    "maxpool2d_nhwc": maxpool2d_nhwc_kernel,
}

# ---------------------------------------------------------------------------------------
# Builders: (tensors, args in parameter order, constexprs, grid, reference) for a variant.
# A reference is {"op": "torch", "expr": ..., "out": tensor}: corpus_run evaluates expr over the
# record's tensors as fp32 (their values before the launch), with torch and math in scope.
# ---------------------------------------------------------------------------------------


def _t(shape, dtype="float16", init="randn"):
    return {"shape": [int(s) for s in shape], "dtype": dtype, "init": init}


def _ref(expr, out):
    return {"op": "torch", "expr": expr, "out": out}


def _moe_gemm(v, cap):
    E, CAP, N, K, dt = v["E"], v["CAP"], v["N"], v["K"], v["dtype"]
    BM, BN, BK = v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    assert CAP % BM == 0 and N % BN == 0 and K % BK == 0
    tensors = {"X": _t((E * CAP, K), dt), "W": _t((E, N, K), dt), "G": _t((E * CAP,), "float32"),
               "Y": _t((E * CAP, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("gate_ptr", {"tensor": "G"}),
            ("y_ptr", {"tensor": "Y"}), ("CAP", CAP), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [(CAP // BM) * (N // BN), E, 1]
    expr = f"torch.bmm(X.view({E}, {CAP}, {K}), W.transpose(1, 2)).reshape({E * CAP}, {N}) * G[:, None]"
    return tensors, args, ce, grid, _ref(expr, "Y")


def _linear_gelu(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"X": _t((M, K), dt), "W": _t((N, K), dt), "BIAS": _t((N,), dt), "Y": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("bias_ptr", {"tensor": "BIAS"}),
            ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K), ("stride_xm", K), ("stride_wn", K),
            ("stride_ym", N)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    expr = "torch.nn.functional.gelu(X @ W.t() + BIAS, approximate='tanh')"
    return tensors, args, ce, grid, _ref(expr, "Y")


def _w8a16(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    assert N % v["BLOCK_N"] == 0 and K % v["BLOCK_K"] == 0
    tensors = {"X": _t((M, K), "float16"), "WQ": _t((N, K), "int8"), "S": _t((N,), "float16"),
               "Y": _t((M, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("wq_ptr", {"tensor": "WQ"}), ("scale_ptr", {"tensor": "S"}),
            ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * (N // v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref("(X @ WQ.t()) * S[None, :]", "Y")


def _fp8_rowwise(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    assert M % BM == 0 and N % BN == 0 and K % BK == 0
    tensors = {"A": _t((M, K), "float8_e4m3fn"), "B": _t((N, K), "float8_e4m3fn"), "SA": _t((M,), "float32"),
               "SB": _t((N,), "float32"), "C": _t((M, N), "bfloat16", "nan")}
    args = [("a_desc", {"desc": "A", "block_shape": [BM, BK]}), ("b_desc", {"desc": "B", "block_shape": [BN, BK]}),
            ("c_desc", {"desc": "C", "block_shape": [BM, BN]}), ("sa_ptr", {"tensor": "SA"}),
            ("sb_ptr", {"tensor": "SB"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    ce["NUM_SMS"] = v.get("NUM_SMS", NUM_SMS_H200)
    grid = [min(ce["NUM_SMS"], (M // BM) * (N // BN)), 1, 1]
    return tensors, args, ce, grid, _ref("(A @ B.t()) * SA[:, None] * SB[None, :]", "C")


def _attn_causal(v, cap):
    B, HQ, HKV, S, D, dt = v["B"], v["H_Q"], v["H_KV"], v["N_CTX"], v["HEAD_DIM"], v["dtype"]
    assert S % v["BLOCK_M"] == 0 and v["BLOCK_M"] % v["BLOCK_N"] == 0 and HQ % HKV == 0
    tensors = {"Q": _t((B, HQ, S, D), dt), "K": _t((B, HKV, S, D), dt), "V": _t((B, HKV, S, D), dt),
               "O": _t((B, HQ, S, D), dt, "nan")}
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("o_ptr", {"tensor": "O"}), ("N_CTX", S)]
    ce = {k: v[k] for k in ("H_Q", "H_KV", "HEAD_DIM", "BLOCK_M", "BLOCK_N")}
    grid = [S // v["BLOCK_M"], B * HQ, 1]
    r = HQ // HKV
    expr = (f"torch.softmax(Q @ K.repeat_interleave({r}, 1).transpose(-1, -2) / math.sqrt({D}) "
            f"+ torch.full(({S}, {S}), -math.inf, device=Q.device).triu(1), -1) @ V.repeat_interleave({r}, 1)")
    return tensors, args, ce, grid, _ref(expr, "O")


def _decode_attn(v, cap):
    B, HKV, G, S, D, dt = v["B"], v["H_KV"], v["GROUP"], v["N_CTX"], v["HEAD_DIM"], v["dtype"]
    assert S % v["BLOCK_N"] == 0 and v["BLOCK_H"] >= G
    tensors = {"Q": _t((B, HKV * G, D), dt), "K": _t((B, HKV, S, D), dt), "V": _t((B, HKV, S, D), dt),
               "O": _t((B, HKV * G, D), dt, "nan")}
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("o_ptr", {"tensor": "O"}), ("N_CTX", S)]
    ce = {k: v[k] for k in ("GROUP", "BLOCK_H", "HEAD_DIM", "BLOCK_N")}
    grid = [B * HKV, 1, 1]
    expr = (f"(torch.softmax(Q.view({B}, {HKV}, {G}, {D}) @ K.transpose(-1, -2) / math.sqrt({D}), -1) @ V)"
            f".reshape({B}, {HKV * G}, {D})")
    return tensors, args, ce, grid, _ref(expr, "O")


def _layernorm_bwd(v, cap):
    M, N, dt, ROWS = v["M"], v["N"], v["dtype"], v["ROWS"]
    tensors = {"X": _t((M, N), dt), "DY": _t((M, N), dt), "W": _t((N,), "float32"), "MU": _t((M,), "float32"),
               "RS": _t((M,), "float32"), "DX": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("dy_ptr", {"tensor": "DY"}), ("w_ptr", {"tensor": "W"}),
            ("mean_ptr", {"tensor": "MU"}), ("rstd_ptr", {"tensor": "RS"}), ("dx_ptr", {"tensor": "DX"}),
            ("M", M), ("N", N)]
    ce = {"BLOCK_N": v["BLOCK_N"], "ROWS": ROWS}
    grid = [triton.cdiv(M, ROWS), 1, 1]
    expr = ("((xh := (X - MU[:, None]) * RS[:, None]), (wdy := W[None, :] * DY), "
            f"(wdy - (xh * (xh * wdy).sum(1, keepdim=True) / {N} + wdy.sum(1, keepdim=True) / {N})) * RS[:, None])[2]")
    return tensors, args, ce, grid, _ref(expr, "DX")


def _rmsnorm_dw(v, cap):
    M, N, dt, SPLIT = v["M"], v["N"], v["dtype"], v["SPLIT"]
    rps = triton.cdiv(M, SPLIT)
    tensors = {"X": _t((M, N), dt), "DY": _t((M, N), dt), "RS": _t((M,), "float32"), "DW": _t((N,), "float32", "zeros")}
    args = [("x_ptr", {"tensor": "X"}), ("dy_ptr", {"tensor": "DY"}), ("rstd_ptr", {"tensor": "RS"}),
            ("dw_ptr", {"tensor": "DW"}), ("M", M), ("N", N), ("ROWS_PER_SPLIT", rps)]
    ce = {"BLOCK_M": v["BLOCK_M"], "BLOCK_N": v["BLOCK_N"]}
    grid = [triton.cdiv(N, v["BLOCK_N"]), triton.cdiv(M, rps), 1]
    return tensors, args, ce, grid, _ref("(DY * X * RS[:, None]).sum(0)", "DW")


def _cross_entropy(v, cap):
    M, V, dt = v["M"], v["V"], v["dtype"]
    tensors = {"X": _t((M, V), dt), "L": _t((M,), "int64"), "LOSS": _t((M,), "float32", "nan")}
    args = [("logits_ptr", {"tensor": "X"}), ("labels_ptr", {"tensor": "L"}), ("loss_ptr", {"tensor": "LOSS"}),
            ("M", M), ("V", V)]
    ce = {"BLOCK_V": v["BLOCK_V"]}
    expr = (f"torch.where(L[:, None] >= 0, (torch.softmax(X, 1) - torch.zeros_like(X).scatter_(1, "
            f"L.long().clamp_min(0)[:, None], 1.0)) / {M}, 0.0)")
    return tensors, args, ce, [M, 1, 1], _ref(expr, "X")


def _adamw(v, cap):
    N, BLOCK, step = v["N"], v["BLOCK"], v["step"]
    hp = {"LR": v.get("LR", 1e-3), "BETA1": 0.9, "BETA2": 0.999, "EPS": 1e-8, "WEIGHT_DECAY": 0.1}
    tensors = {"P": _t((N,), "float32"), "G": _t((N,), "bfloat16"), "M1": _t((N,), "float32"),
               "M2": _t((N,), "float32", "zeros")}
    args = [("p_ptr", {"tensor": "P"}), ("g_ptr", {"tensor": "G"}), ("m_ptr", {"tensor": "M1"}),
            ("v_ptr", {"tensor": "M2"}), ("N", N), ("step", step)]
    ce = {**hp, "BLOCK": BLOCK}
    grid = [v.get("GRID") or triton.cdiv(N, BLOCK), 1, 1]
    lr, b1, b2, eps, wd = (repr(hp[k]) for k in ("LR", "BETA1", "BETA2", "EPS", "WEIGHT_DECAY"))
    expr = (f"P * (1 - {lr} * {wd}) - {lr} * (({b1} * M1 + (1 - {b1}) * G) / (1 - {b1} ** {step})) / "
            f"(torch.sqrt(({b2} * M2 + (1 - {b2}) * G * G) / (1 - {b2} ** {step})) + {eps})")
    return tensors, args, ce, grid, _ref(expr, "P")


def _router(v, cap):
    T, E, BT = v["T"], v["E"], v["BLOCK_T"]
    tensors = {"X": _t((T, E), "float32"), "WTS": _t((T, 2), "float32", "nan"), "IDS": _t((T, 2), "int32", "nan"),
               "CNT": _t((E,), "int32", "zeros")}
    args = [("logits_ptr", {"tensor": "X"}), ("weights_ptr", {"tensor": "WTS"}), ("ids_ptr", {"tensor": "IDS"}),
            ("counts_ptr", {"tensor": "CNT"}), ("T", T)]
    ce = {"E": E, "BLOCK_T": BT}
    return tensors, args, ce, [triton.cdiv(T, BT), 1, 1], _ref("torch.softmax(X.topk(2, 1).values, 1)", "WTS")


def _softmax_bwd(v, cap):
    M, N, dt, ROWS = v["M"], v["N"], v["dtype"], v["ROWS"]
    tensors = {"Y": _t((M, N), dt), "DY": _t((M, N), dt), "DX": _t((M, N), dt, "nan")}
    args = [("y_ptr", {"tensor": "Y"}), ("dy_ptr", {"tensor": "DY"}), ("dx_ptr", {"tensor": "DX"}), ("M", M), ("N", N)]
    ce = {"BLOCK_N": v["BLOCK_N"], "ROWS": ROWS}
    return tensors, args, ce, [triton.cdiv(M, ROWS), 1, 1], _ref("Y * (DY - (Y * DY).sum(1, keepdim=True))", "DX")


def _quant_int8(v, cap):
    M, N = v["M"], v["N"]
    tensors = {"X": _t((M, N), v["dtype"]), "Q": _t((M, N), "int8", "nan"), "SC": _t((M,), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("q_ptr", {"tensor": "Q"}), ("scale_ptr", {"tensor": "SC"}), ("N", N)]
    ce = {"BLOCK_N": v["BLOCK_N"]}
    return tensors, args, ce, [M, 1, 1], _ref("torch.round(X * (127.0 / X.abs().amax(1, keepdim=True)))", "Q")


def _groupnorm(v, cap):
    NB, C, H, W, G, dt = v["NB"], v["C"], v["H"], v["W"], v["G"], v["dtype"]
    tensors = {"X": _t((NB, C, H, W), dt), "GW": _t((C,), dt), "GB": _t((C,), dt), "Y": _t((NB, C, H, W), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "GW"}), ("b_ptr", {"tensor": "GB"}),
            ("y_ptr", {"tensor": "Y"}), ("HW", H * W), ("CPG", C // G)]
    ce = {"G": G, "EPS": 1e-5, "BLOCK": v["BLOCK"]}
    expr = f"torch.nn.functional.silu(torch.nn.functional.group_norm(X, {G}, GW, GB, 1e-05))"
    return tensors, args, ce, [NB * G, 1, 1], _ref(expr, "Y")


def _maxpool(v, cap):
    NB, H, W, C, dt = v["NB"], v["H"], v["W"], v["C"], v["dtype"]
    KS, ST, PD = 3, 2, 1
    OH, OW = (H + 2 * PD - KS) // ST + 1, (W + 2 * PD - KS) // ST + 1
    npix = NB * OH * OW
    tensors = {"X": _t((NB, H, W, C), dt), "Y": _t((NB, OH, OW, C), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("H", H), ("W", W), ("C", C), ("OH", OH),
            ("OW", OW), ("NPIX", npix)]
    ce = {"KS": KS, "STRIDE": ST, "PAD": PD, "BLOCK_P": v["BLOCK_P"], "BLOCK_C": v["BLOCK_C"]}
    grid = [triton.cdiv(npix, v["BLOCK_P"]), triton.cdiv(C, v["BLOCK_C"]), 1]
    expr = f"torch.nn.functional.max_pool2d(X.permute(0, 3, 1, 2), {KS}, {ST}, {PD}).permute(0, 2, 3, 1)"
    return tensors, args, ce, grid, _ref(expr, "Y")


BUILDERS = {
    "moe_gemm": _moe_gemm,
    "linear_gelu": _linear_gelu,
    "w8a16_gemm": _w8a16,
    "fp8_rowwise_tma": _fp8_rowwise,
    "attn_causal_gqa": _attn_causal,
    "decode_attn_gqa": _decode_attn,
    "layernorm_bwd_dx": _layernorm_bwd,
    "rmsnorm_bwd_dw": _rmsnorm_dw,
    "cross_entropy": _cross_entropy,
    "adamw": _adamw,
    "moe_router_top2": _router,
    "softmax_bwd": _softmax_bwd,
    "quant_int8_rowwise": _quant_int8,
    "groupnorm_silu": _groupnorm,
    "maxpool2d_nhwc": _maxpool,
}


def flops(v) -> int | None:
    """Useful floating-point operations of a matmul-type variant (None for the memory-bound ones)."""
    k = v["kernel"]
    if k == "moe_gemm":
        return 2 * v["E"] * v["CAP"] * v["N"] * v["K"]
    if k in ("linear_gelu", "w8a16_gemm", "fp8_rowwise_tma"):
        return 2 * v["M"] * v["N"] * v["K"]
    if k == "attn_causal_gqa":   # two matmuls of 2 S^2 D per head, half of them under the causal mask
        return 2 * v["B"] * v["H_Q"] * v["N_CTX"] * v["N_CTX"] * v["HEAD_DIM"]
    if k == "decode_attn_gqa":
        return 4 * v["B"] * v["H_KV"] * v["GROUP"] * v["N_CTX"] * v["HEAD_DIM"]
    return None


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": TARGET, "num_warps": num_warps, "num_stages": num_stages, **kw}


def _mm(BM, BN, BK, G=8):
    return {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": G}


VARIANTS = [
    # --- matmul-type -------------------------------------------------------------------------------
    # Mixtral-like: 8 experts, 2048 token slots each, up-projection 2048 -> 2816
    _v("moe_gemm_bf16_e8_cap2048_128x128x64_s3_w8", "moe_gemm", 8, 3, E=8, CAP=2048, N=2816, K=2048,
       dtype="bfloat16", **_mm(128, 128, 64)),
    # fine-grained experts (DeepSeek-like): 64 experts of 256 slots, 2048 -> 1408
    _v("moe_gemm_fp16_e64_cap256_64x128x64_s5_w4", "moe_gemm", 4, 5, E=64, CAP=256, N=1408, K=2048,
       dtype="float16", **_mm(64, 128, 64, 4)),
    _v("linear_gelu_fp16_4096_128x256x64_s3_w8", "linear_gelu", 8, 3, M=4096, N=4096, K=4096, dtype="float16",
       **_mm(128, 256, 64)),
    # ViT-B/16 MLP up-projection, batch 64 (64 * 197 tokens, M not a multiple of the tile)
    _v("linear_gelu_bf16_vit_128x128x32_s4_w4", "linear_gelu", 4, 4, M=12608, N=3072, K=768, dtype="bfloat16",
       **_mm(128, 128, 32)),
    # Llama-3-8B up-projection (4096 -> 14336), 96 tokens, int8 weights
    _v("w8a16_gemm_m96_64x128x128_s4_w4", "w8a16_gemm", 4, 4, M=96, N=14336, K=4096, **_mm(64, 128, 128)),
    _v("fp8_rowwise_tma_persist_128x256x128_s3_w8", "fp8_rowwise_tma", 8, 3, M=4096, N=8192, K=4096,
       **_mm(128, 256, 128)),
    _v("attn_causal_gqa_d128_128x64_s3_w8", "attn_causal_gqa", 8, 3, B=4, H_Q=32, H_KV=8, N_CTX=2048, HEAD_DIM=128,
       BLOCK_M=128, BLOCK_N=64, dtype="float16"),
    # Llama-70B-like decode: 8 kv heads x 8 query heads, 2048 cached positions, batch 32
    _v("decode_attn_gqa_g8_d128_n64_s3_w4", "decode_attn_gqa", 4, 3, B=32, H_KV=8, GROUP=8, N_CTX=2048, HEAD_DIM=128,
       BLOCK_H=16, BLOCK_N=64, dtype="float16"),
    # --- memory-bound / reductions ----------------------------------------------------------------
    _v("layernorm_bwd_dx_fp16_n4096_w8", "layernorm_bwd_dx", 8, 1, M=8192, N=4096, BLOCK_N=4096, ROWS=1,
       dtype="float16"),
    # ViT-B/16 batch 256: 50432 tokens of width 768, 4 rows per program
    _v("layernorm_bwd_dx_bf16_n768_r4_s2_w2", "layernorm_bwd_dx", 2, 2, M=50432, N=768, BLOCK_N=1024, ROWS=4,
       dtype="bfloat16"),
    _v("rmsnorm_bwd_dw_bf16_32x128_split32_s3_w4", "rmsnorm_bwd_dw", 4, 3, M=16384, N=4096, SPLIT=32,
       BLOCK_M=32, BLOCK_N=128, dtype="bfloat16"),
    # GPT-2 vocabulary padded to 50304, 4096 tokens
    _v("cross_entropy_bf16_v50304_b4096_s2_w8", "cross_entropy", 8, 2, M=4096, V=50304, BLOCK_V=4096,
       dtype="bfloat16"),
    _v("adamw_16m_b1024_w4", "adamw", 4, 1, N=1 << 24, BLOCK=1024, step=10),
    _v("adamw_persist_12m_b4096_s2_w8", "adamw", 8, 2, N=12582917, BLOCK=4096, GRID=4 * NUM_SMS_H200, step=1000),
    _v("moe_router_top2_e64_t64_w2", "moe_router_top2", 2, 1, T=262144, E=64, BLOCK_T=64),
    _v("softmax_bwd_fp16_n512_r4_w1", "softmax_bwd", 1, 1, M=65536, N=512, BLOCK_N=512, ROWS=4, dtype="float16"),
    _v("softmax_bwd_bf16_n4096_w8", "softmax_bwd", 8, 1, M=16384, N=4096, BLOCK_N=4096, ROWS=1, dtype="bfloat16"),
    _v("quant_int8_rowwise_fp16_n8192_w4", "quant_int8_rowwise", 4, 1, M=8192, N=8192, BLOCK_N=8192,
       dtype="float16"),
    # Stable-Diffusion UNet block: 16 x 512 x 64 x 64, 32 groups
    _v("groupnorm_silu_fp16_c512_64x64_b4096_s3_w4", "groupnorm_silu", 4, 3, NB=16, C=512, H=64, W=64, G=32,
       BLOCK=4096, dtype="float16"),
    # ResNet-50 stem pooling, batch 32: 112 x 112 x 64 -> 56 x 56 x 64
    _v("maxpool2d_nhwc_fp16_112_c64_64x64_w4", "maxpool2d_nhwc", 4, 1, NB=32, H=112, W=112, C=64, BLOCK_P=64,
       BLOCK_C=64, dtype="float16"),
]
