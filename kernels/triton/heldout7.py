"""Held-out Triton kernel set 7: twenty variants of sixteen kernels of the kind people write in
Triton for LLM / vision training and inference on an H200 (sm_90).

Written by an independent author who read neither the simulator (protosim/, docs/, results/,
tests/) nor the earlier held-out sets; only corpus.py's interface (KERNELS / BUILDERS / VARIANTS,
call_spec, _v, the dtype names) and corpus_run.py's inputs and check (randn cast to the dtype,
"nan" outputs, the fp32 ``op: torch`` reference, its tolerance) were read.

Kernels (matmul-type first):
  linear_bias_gelu   Y = gelu_tanh(X @ W^T + b), pointer loads, grouped program order (GPT MLP up-proj)
  swiglu_tma         H = silu(X @ Wg^T) * (X @ Wu^T), host TensorDescriptors, two accumulators, TMA store
  fp8_rowwise_gemm   C = (A @ B^T) * sa[m] * sb[n], fp8 e4m3 in, bf16 out, on-device tl.make_tensor_descriptor
  splitk_gemm        C += A @ B over one K slice per program, fp32 atomic_add (decode-size M, down-proj K)
  moe_bmm            Y[e] = X[e] @ W[e], 2-D grid over (tiles, experts), rows per expert not a block multiple
  decode_gqa         single-query attention over a KV cache, one program per (batch, kv head), the query
                     heads of the group padded to 16 rows for tl.dot, sequence length masked
  attn_causal_fwd    causal flash attention forward (online softmax, exp2), masked N_CTX
  rmsnorm            RMSNorm forward, optionally fused with a residual add written back in place
  layernorm_bwd_dx   LayerNorm backward for dx from saved mean / rstd
  cross_entropy_fwd  per-row cross-entropy over a large vocabulary, chunked online logsumexp, label gather
  rope_neox          rotary embedding (NeoX half-split) on [B, S, H, D], cos / sin tables [S, D/2]
  quant_int8_rowwise per-token symmetric int8 quantization (absmax / 127), scale written alongside
  adamw_step         fused AdamW step, fp32 params / moments in place, bf16 grads
  colsum_splitm      column sums (bias gradient) of [M, N], split over M with fp32 atomic_add
  maxpool2d_nhwc     3x3 stride-2 pad-1 max pool, NHWC (ResNet stem)
  qkv_split_permute  fused QKV [B*S, 3*H*D] -> [3, B, H, S, D]

Integer inputs (labels) come from corpus_run as randn cast to int64 (small, possibly negative
values); the kernel takes ((l % V) + V) % V and the reference takes the floor-mod ``L % V``, which
agree.  The AdamW variant starts from zero parameters and zero moments (a freshly zero-initialised
parameter such as a LoRA B matrix) so that the update itself, not the unchanged parameter, is what
the check compares.

Checked: every kernel ran in Triton 3.6.0's CPU interpreter (TRITON_INTERPRET=1, torch CPU) at
reduced shapes (same block sizes and masks, fewer rows / tokens / heads / experts, smaller K and
vocab, shapes kept non-multiples of the block where the full variant is) against the same fp32
reference expression the record carries, with corpus_run's tolerance: all twenty passed.
Stand-in: the interpreter's bf16 tl.dot gives garbage, so the bf16 matmul-type variants
(linear_bias_gelu, swiglu_tma, attn_causal bf16) ran with fp16 in its place; the fp8 e4m3 GEMM ran
as fp8 (and with an fp16 stand-in too); the memory-bound bf16 kernels ran with bf16.  Every variant
compiled for sm_90 with corpus.py (no register spills).

    /tmp/tri36/bin/python -m kernels.triton.corpus --kernels kernels.triton.heldout7 --out tests/fixtures/triton/heldout7
    python -m kernels.triton.corpus_run --corpus tests/fixtures/triton/heldout7 --out results.jsonl
"""

from __future__ import annotations

import triton
import triton.language as tl

TARGET = (90,)

# ---------------------------------------------------------------------------------------
# Matmul-type kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def _swizzle(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group = pid // width
    first_m = group * GROUP_M
    gsize = min(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % gsize
    pid_n = (pid % width) // gsize
    return pid_m, pid_n


@triton.jit
def linear_bias_gelu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, stride_xm, stride_wn, stride_ym,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_n[None, :].to(tl.int64) * stride_wn + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = offs_k < K - k * BLOCK_K
        a = tl.load(x_ptrs, mask=mask_m[:, None] & kmask[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=kmask[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    y = acc + bias[None, :]
    inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0  # tanh
    y = 0.5 * y * (1.0 + t)
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, y.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def swiglu_tma_kernel(x_desc, wg_desc, wu_desc, h_desc, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    om = pid_m * BLOCK_M
    on = pid_n * BLOCK_N
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, num_stages=STAGES):
        a = x_desc.load([om, k])
        g = wg_desc.load([on, k])
        u = wu_desc.load([on, k])
        acc_g = tl.dot(a, g.T, acc_g)
        acc_u = tl.dot(a, u.T, acc_u)
    h = acc_g * tl.sigmoid(acc_g) * acc_u
    h_desc.store([om, on], h.to(h_desc.dtype))


@triton.jit
def fp8_rowwise_gemm_kernel(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, num_stages=STAGES):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    sa = tl.load(sa_ptr + offs_m, mask=offs_m < M, other=0.0)
    sb = tl.load(sb_ptr + offs_n, mask=offs_n < N, other=0.0)
    c = acc * sa[:, None] * sb[None, :]
    tl.store(c_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], c.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def splitk_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, K_PER_SPLIT,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = pid_k * K_PER_SPLIT + tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_end = min(K, (pid_k + 1) * K_PER_SPLIT)
    for k in range(pid_k * K_PER_SPLIT, k_end, BLOCK_K):
        kmask = (k + tl.arange(0, BLOCK_K)) < k_end
        a = tl.load(a_ptrs, mask=mask_m[:, None] & kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.atomic_add(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask_m[:, None] & mask_n[None, :],
                  sem="relaxed")


@triton.jit
def moe_bmm_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    e = tl.program_id(1).to(tl.int64)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    x_base = x_ptr + e * M * K
    w_base = w_ptr + e * K * N
    y_base = y_ptr + e * M * N
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    rm = tl.where(offs_m < M, offs_m, 0)  # clamp rows, store masks them out
    x_ptrs = x_base + rm[:, None] * K + offs_k[None, :]
    w_ptrs = w_base + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(x_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(w_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * N
    tl.store(y_base + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def decode_gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, SEQ, N_KV_HEADS,
                      GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
                      BLOCK_N: tl.constexpr):
    """Q [B, Hkv*GROUP, D], K / V [B, Hkv, SEQ, D], O like Q; program (b * Hkv + hkv)."""
    pid = tl.program_id(0)
    b = pid // N_KV_HEADS
    hk = pid % N_KV_HEADS
    offs_g = tl.arange(0, GROUP_PAD)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    gmask = offs_g < GROUP
    q_base = (b * N_KV_HEADS * GROUP + hk * GROUP).to(tl.int64) * HEAD_DIM
    q = tl.load(q_ptr + q_base + offs_g[:, None] * HEAD_DIM + offs_d[None, :], mask=gmask[:, None], other=0.0)
    kv_base = pid.to(tl.int64) * SEQ * HEAD_DIM
    qk_scale = 1.4426950408889634 / (HEAD_DIM ** 0.5)
    m_i = tl.full([GROUP_PAD], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    for start in range(0, SEQ, BLOCK_N):
        cols = start + offs_n
        cmask = cols < SEQ
        kk = tl.load(k_ptr + kv_base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cmask[:, None], other=0.0)
        s = tl.dot(q, kk.T) * qk_scale
        s = tl.where(cmask[None, :], s, -1.0e30)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        vv = tl.load(v_ptr + kv_base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cmask[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(vv.dtype), vv, acc)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + q_base + offs_g[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=gmask[:, None])


@triton.jit
def attn_causal_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N_CTX,
                           HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Q, K, V, O [Z, H, N_CTX, D] contiguous; program (m block, z*h)."""
    start_m = tl.program_id(0)
    off_zh = tl.program_id(1)
    base = off_zh.to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    qk_scale = 1.4426950408889634 / (HEAD_DIM ** 0.5)
    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kt = tl.load(k_ptr + base + cols[None, :] * HEAD_DIM + offs_d[:, None], mask=cols[None, :] < N_CTX, other=0.0)
        s = tl.dot(q, kt) * qk_scale
        keep = (offs_m[:, None] >= cols[None, :]) & (cols[None, :] < N_CTX)
        s = tl.where(keep, s, -1.0e30)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < N_CTX)


# ---------------------------------------------------------------------------------------
# Memory-bound / reduction kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def rmsnorm_kernel(x_ptr, res_ptr, w_ptr, y_ptr, N, stride,
                   EPS: tl.constexpr, HAS_RES: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_RES:
        r = tl.load(res_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        x = x + r
        tl.store(res_ptr + row * stride + cols, x.to(res_ptr.dtype.element_ty), mask=mask)
    ms = tl.sum(x * x, 0) / N
    rstd = tl.rsqrt(ms + EPS)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_bwd_dx_kernel(x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    off = row.to(tl.int64) * stride + cols
    x = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + off, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, 0) / N
    c2 = tl.sum(wdy, 0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + off, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cross_entropy_fwd_kernel(logits_ptr, labels_ptr, loss_ptr, V, stride, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * stride
    offs = tl.arange(0, BLOCK_V)
    m_vec = tl.full([BLOCK_V], -1.0e30, dtype=tl.float32)
    s_vec = tl.zeros([BLOCK_V], dtype=tl.float32)
    for start in range(0, V, BLOCK_V):
        cols = start + offs
        x = tl.load(base + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_vec, x)
        s_vec = s_vec * tl.exp(m_vec - m_new) + tl.exp(x - m_new)
        m_vec = m_new
    m = tl.max(m_vec, 0)
    s = tl.sum(s_vec * tl.exp(m_vec - m), 0)
    lse = m + tl.log(s)
    lab = tl.load(labels_ptr + row)
    lab = ((lab % V) + V) % V
    tgt = tl.load(base + lab).to(tl.float32)
    tl.store(loss_ptr + row, lse - tgt)


@triton.jit
def rope_neox_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, SEQ,
                     N_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr):
    """X, OUT [B, SEQ, H, D]; COS, SIN [SEQ, D/2] fp32; program per token."""
    tok = tl.program_id(0)
    s = tok % SEQ
    HALF: tl.constexpr = HEAD_DIM // 2
    offs_h = tl.arange(0, N_HEADS)
    offs_d = tl.arange(0, HALF)
    base = tok.to(tl.int64) * N_HEADS * HEAD_DIM
    p1 = base + offs_h[:, None] * HEAD_DIM + offs_d[None, :]
    x1 = tl.load(x_ptr + p1).to(tl.float32)
    x2 = tl.load(x_ptr + p1 + HALF).to(tl.float32)
    c = tl.load(cos_ptr + s * HALF + offs_d)[None, :]
    sn = tl.load(sin_ptr + s * HALF + offs_d)[None, :]
    tl.store(out_ptr + p1, (x1 * c - x2 * sn).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + p1 + HALF, (x2 * c + x1 * sn).to(out_ptr.dtype.element_ty))


@triton.jit
def quant_int8_rowwise_kernel(x_ptr, q_ptr, scale_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    off = row.to(tl.int64) * stride + cols
    x = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), 0), 1e-8)
    q = tl.floor(x * (127.0 / amax) + 0.5)
    q = tl.minimum(tl.maximum(q, -127.0), 127.0)
    tl.store(q_ptr + off, q.to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, amax / 127.0)


@triton.jit
def adamw_step_kernel(p_ptr, g_ptr, m_ptr, v_ptr, n_elements, step,
                      LR: tl.constexpr, BETA1: tl.constexpr, BETA2: tl.constexpr, EPS: tl.constexpr,
                      WEIGHT_DECAY: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    m = BETA1 * m + (1.0 - BETA1) * g
    v = BETA2 * v + (1.0 - BETA2) * g * g
    stepf = step.to(tl.float32)
    bc1 = 1.0 - tl.exp(stepf * tl.log(tl.full([], BETA1, tl.float32)))
    bc2 = 1.0 - tl.exp(stepf * tl.log(tl.full([], BETA2, tl.float32)))
    p = p * (1.0 - LR * WEIGHT_DECAY)
    p = p - LR * (m / bc1) / (tl.sqrt(v / bc2) + EPS)
    tl.store(p_ptr + offs, p, mask=mask)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)


@triton.jit
def colsum_splitm_kernel(dy_ptr, db_ptr, M, N, ROWS_PER_SPLIT,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = offs_n < N
    r0 = pid_m * ROWS_PER_SPLIT
    r1 = tl.minimum(r0 + ROWS_PER_SPLIT, M)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for r in range(r0, r1, BLOCK_M):
        rows = r + tl.arange(0, BLOCK_M)
        x = tl.load(dy_ptr + rows[:, None].to(tl.int64) * N + offs_n[None, :],
                    mask=(rows[:, None] < r1) & nmask[None, :], other=0.0)
        acc += x.to(tl.float32)
    tl.atomic_add(db_ptr + offs_n, tl.sum(acc, 0), mask=nmask, sem="relaxed")


@triton.jit
def maxpool2d_nhwc_kernel(x_ptr, y_ptr, H, W, OH, OW,
                          C: tl.constexpr, BLOCK_W: tl.constexpr):
    """3x3, stride 2, padding 1; program (n * OH + oh, ow block)."""
    pid = tl.program_id(0)
    n = pid // OH
    oh = pid % OH
    ow = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    offs_c = tl.arange(0, C)
    wmask = ow < OW
    acc = tl.full([BLOCK_W, C], float("-inf"), dtype=tl.float32)
    x_img = x_ptr + n.to(tl.int64) * H * W * C
    for kh in tl.static_range(3):
        ih = oh * 2 - 1 + kh
        hok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(3):
            iw = ow * 2 - 1 + kw
            ok = wmask & (iw >= 0) & (iw < W) & hok
            x = tl.load(x_img + (ih * W + iw)[:, None] * C + offs_c[None, :], mask=ok[:, None], other=float("-inf"))
            acc = tl.maximum(acc, x.to(tl.float32))
    y_off = (pid.to(tl.int64) * OW + ow)[:, None] * C + offs_c[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=wmask[:, None])


@triton.jit
def qkv_split_permute_kernel(qkv_ptr, out_ptr, B, SEQ,
                             N_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr):
    """QKV [B*SEQ, 3*H*D] -> OUT [3, B, H, SEQ, D]; program (token, which of q/k/v)."""
    tok = tl.program_id(0)
    which = tl.program_id(1)
    b = tok // SEQ
    s = tok % SEQ
    offs_h = tl.arange(0, N_HEADS)
    offs_d = tl.arange(0, HEAD_DIM)
    src = qkv_ptr + tok.to(tl.int64) * (3 * N_HEADS * HEAD_DIM) + which * (N_HEADS * HEAD_DIM)
    x = tl.load(src + offs_h[:, None] * HEAD_DIM + offs_d[None, :])
    dst_base = ((which * B + b).to(tl.int64) * N_HEADS) * SEQ * HEAD_DIM + s * HEAD_DIM
    dst = out_ptr + dst_base + offs_h[:, None].to(tl.int64) * SEQ * HEAD_DIM + offs_d[None, :]
    tl.store(dst, x)


KERNELS = {
    "linear_bias_gelu": linear_bias_gelu_kernel,
    "swiglu_tma": swiglu_tma_kernel,
    "fp8_rowwise_gemm": fp8_rowwise_gemm_kernel,
    "splitk_gemm": splitk_gemm_kernel,
    "moe_bmm": moe_bmm_kernel,
    "decode_gqa": decode_gqa_kernel,
    "attn_causal_fwd": attn_causal_fwd_kernel,
    "rmsnorm": rmsnorm_kernel,
    "layernorm_bwd_dx": layernorm_bwd_dx_kernel,
    "cross_entropy_fwd": cross_entropy_fwd_kernel,
    "rope_neox": rope_neox_kernel,
    "quant_int8_rowwise": quant_int8_rowwise_kernel,
    "adamw_step": adamw_step_kernel,
    "colsum_splitm": colsum_splitm_kernel,
    "maxpool2d_nhwc": maxpool2d_nhwc_kernel,
    "qkv_split_permute": qkv_split_permute_kernel,
}

# ---------------------------------------------------------------------------------------
# Builders: variant -> (tensors, args, constexprs, grid, reference)
# ---------------------------------------------------------------------------------------


def _t(shape, dtype="float16", init="randn"):
    return {"shape": [int(s) for s in shape], "dtype": dtype, "init": init}


def _ref(expr, out):
    return {"op": "torch", "expr": expr, "out": out}


def _cdiv(a, b):
    return (a + b - 1) // b


def _mmce(v):
    return {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}


def _b_linear_bias_gelu(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"X": _t((M, K), dt), "W": _t((N, K), dt), "Bias": _t((N,), dt), "Y": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("b_ptr", {"tensor": "Bias"}),
            ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K), ("stride_xm", K), ("stride_wn", K),
            ("stride_ym", N)]
    grid = [_cdiv(M, v["BLOCK_M"]) * _cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, _mmce(v), grid, _ref(
        "torch.nn.functional.gelu(X @ W.T + Bias, approximate='tanh')", "Y")


def _b_swiglu(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    BM, BN, BK = v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    tensors = {"X": _t((M, K), dt), "WG": _t((N, K), dt), "WU": _t((N, K), dt), "H": _t((M, N), dt, "nan")}
    args = [("x_desc", {"desc": "X", "block_shape": [BM, BK]}), ("wg_desc", {"desc": "WG", "block_shape": [BN, BK]}),
            ("wu_desc", {"desc": "WU", "block_shape": [BN, BK]}), ("h_desc", {"desc": "H", "block_shape": [BM, BN]}),
            ("M", M), ("N", N), ("K", K)]
    ce = {**_mmce(v), "STAGES": v["STAGES"]}
    grid = [_cdiv(M, BM) * _cdiv(N, BN), 1, 1]
    return tensors, args, ce, grid, _ref("torch.nn.functional.silu(X @ WG.T) * (X @ WU.T)", "H")


def _b_fp8(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"A": _t((M, K), dt), "B": _t((N, K), dt), "SA": _t((M,), "float32"), "SB": _t((N,), "float32"),
               "C": _t((M, N), v["out_dtype"], "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("sa_ptr", {"tensor": "SA"}),
            ("sb_ptr", {"tensor": "SB"}), ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K)]
    ce = {**_mmce(v), "STAGES": v["STAGES"]}
    grid = [_cdiv(M, v["BLOCK_M"]) * _cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref("(A @ B.T) * SA[:, None] * SB[None, :]", "C")


def _b_splitk(v, cap):
    M, N, K, dt, S = v["M"], v["N"], v["K"], v["dtype"], v["SPLIT_K"]
    kps = _cdiv(_cdiv(K, S), v["BLOCK_K"]) * v["BLOCK_K"]
    tensors = {"A": _t((M, K), dt), "B": _t((K, N), dt), "C": _t((M, N), "float32", "zeros")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K), ("K_PER_SPLIT", kps)]
    grid = [_cdiv(M, v["BLOCK_M"]) * _cdiv(N, v["BLOCK_N"]), _cdiv(K, kps), 1]
    return tensors, args, _mmce(v), grid, _ref("A @ B", "C")


def _b_moe_bmm(v, cap):
    E, M, N, K, dt = v["E"], v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"X": _t((E, M, K), dt), "W": _t((E, K, N), dt), "Y": _t((E, M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("y_ptr", {"tensor": "Y"}),
            ("M", M), ("N", N), ("K", K)]
    grid = [_cdiv(M, v["BLOCK_M"]) * _cdiv(N, v["BLOCK_N"]), E, 1]
    return tensors, args, _mmce(v), grid, _ref("torch.bmm(X, W)", "Y")


def _b_decode(v, cap):
    B, HKV, G, S, D, dt = v["B"], v["HKV"], v["GROUP"], v["SEQ"], v["HEAD_DIM"], v["dtype"]
    tensors = {"Q": _t((B, HKV * G, D), dt), "K": _t((B, HKV, S, D), dt), "V": _t((B, HKV, S, D), dt),
               "O": _t((B, HKV * G, D), dt, "nan")}
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("o_ptr", {"tensor": "O"}), ("SEQ", S), ("N_KV_HEADS", HKV)]
    ce = {"GROUP": G, "GROUP_PAD": max(16, G), "HEAD_DIM": D, "BLOCK_N": v["BLOCK_N"]}
    expr = (f"(torch.softmax(Q.view({B}, {HKV}, {G}, {D}) @ K.transpose(-1, -2) / math.sqrt({D}), -1) @ V)"
            f".reshape({B}, {HKV * G}, {D})")
    return tensors, args, ce, [B * HKV, 1, 1], _ref(expr, "O")


def _b_attn_causal(v, cap):
    Z, H, S, D, dt = v["Z"], v["H"], v["N_CTX"], v["HEAD_DIM"], v["dtype"]
    tensors = {n: _t((Z, H, S, D), dt) for n in ("Q", "K", "V")}
    tensors["O"] = _t((Z, H, S, D), dt, "nan")
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("o_ptr", {"tensor": "O"}), ("N_CTX", S)]
    ce = {"HEAD_DIM": D, "BLOCK_M": v["BLOCK_M"], "BLOCK_N": v["BLOCK_N"]}
    return tensors, args, ce, [_cdiv(S, v["BLOCK_M"]), Z * H, 1], _ref(
        "torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)", "O")


def _b_rmsnorm(v, cap):
    M, N, dt, eps = v["M"], v["N"], v["dtype"], v["EPS"]
    res = v.get("HAS_RES", False)
    tensors = {"X": _t((M, N), dt), "Wt": _t((N,), dt), "Y": _t((M, N), dt, "nan")}
    if res:
        tensors["R"] = _t((M, N), dt)
        expr = f"(X + R) * torch.rsqrt(((X + R) * (X + R)).mean(-1, keepdim=True) + {eps!r}) * Wt"
    else:
        expr = f"X * torch.rsqrt((X * X).mean(-1, keepdim=True) + {eps!r}) * Wt"
    args = [("x_ptr", {"tensor": "X"}), ("res_ptr", {"tensor": "R" if res else "X"}), ("w_ptr", {"tensor": "Wt"}),
            ("y_ptr", {"tensor": "Y"}), ("N", N), ("stride", N)]
    ce = {"EPS": eps, "HAS_RES": res, "BLOCK_N": v["BLOCK_N"]}
    return tensors, args, ce, [M, 1, 1], _ref(expr, "Y")


def _b_ln_bwd(v, cap):
    M, N, dt = v["M"], v["N"], v["dtype"]
    tensors = {"X": _t((M, N), dt), "DY": _t((M, N), dt), "Wt": _t((N,), dt), "MEAN": _t((M,), "float32"),
               "RSTD": _t((M,), "float32"), "DX": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("dy_ptr", {"tensor": "DY"}), ("w_ptr", {"tensor": "Wt"}),
            ("mean_ptr", {"tensor": "MEAN"}), ("rstd_ptr", {"tensor": "RSTD"}), ("dx_ptr", {"tensor": "DX"}),
            ("N", N), ("stride", N)]
    xh = "((X - MEAN[:, None]) * RSTD[:, None])"
    expr = (f"(Wt * DY - ({xh} * ({xh} * Wt * DY).mean(-1, keepdim=True) + (Wt * DY).mean(-1, keepdim=True)))"
            " * RSTD[:, None]")
    return tensors, args, {"BLOCK_N": v["BLOCK_N"]}, [M, 1, 1], _ref(expr, "DX")


def _b_xent(v, cap):
    M, V, dt = v["M"], v["V"], v["dtype"]
    tensors = {"X": _t((M, V), dt), "L": _t((M,), "int64"), "LOSS": _t((M,), "float32", "nan")}
    args = [("logits_ptr", {"tensor": "X"}), ("labels_ptr", {"tensor": "L"}), ("loss_ptr", {"tensor": "LOSS"}),
            ("V", V), ("stride", V)]
    expr = f"torch.logsumexp(X, 1) - X.gather(1, (L % {V}).long()[:, None])[:, 0]"
    return tensors, args, {"BLOCK_V": v["BLOCK_V"]}, [M, 1, 1], _ref(expr, "LOSS")


def _b_rope(v, cap):
    B, S, H, D, dt = v["B"], v["SEQ"], v["H"], v["HEAD_DIM"], v["dtype"]
    h = D // 2
    tensors = {"X": _t((B, S, H, D), dt), "COS": _t((S, h), "float32"), "SIN": _t((S, h), "float32"),
               "OUT": _t((B, S, H, D), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("cos_ptr", {"tensor": "COS"}), ("sin_ptr", {"tensor": "SIN"}),
            ("out_ptr", {"tensor": "OUT"}), ("SEQ", S)]
    c, s = "COS[None, :, None, :]", "SIN[None, :, None, :]"
    expr = (f"torch.cat([X[..., :{h}] * {c} - X[..., {h}:] * {s}, X[..., {h}:] * {c} + X[..., :{h}] * {s}], -1)")
    return tensors, args, {"N_HEADS": H, "HEAD_DIM": D}, [B * S, 1, 1], _ref(expr, "OUT")


def _b_quant(v, cap):
    M, N, dt = v["M"], v["N"], v["dtype"]
    tensors = {"X": _t((M, N), dt), "Q": _t((M, N), "int8", "nan"), "SCALE": _t((M,), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("q_ptr", {"tensor": "Q"}), ("scale_ptr", {"tensor": "SCALE"}),
            ("N", N), ("stride", N)]
    expr = "torch.round(X * (127.0 / X.abs().amax(1, keepdim=True))).clamp(-127, 127)"
    return tensors, args, {"BLOCK_N": v["BLOCK_N"]}, [M, 1, 1], _ref(expr, "Q")


def _b_adamw(v, cap):
    n, step = v["N"], v["STEP"]
    lr, b1, b2, eps, wd = v["LR"], v["BETA1"], v["BETA2"], v["EPS"], v["WEIGHT_DECAY"]
    tensors = {"P": _t((n,), "float32", "zeros"), "G": _t((n,), v["grad_dtype"]),
               "MOM": _t((n,), "float32", "zeros"), "VAR": _t((n,), "float32", "zeros")}
    args = [("p_ptr", {"tensor": "P"}), ("g_ptr", {"tensor": "G"}), ("m_ptr", {"tensor": "MOM"}),
            ("v_ptr", {"tensor": "VAR"}), ("n_elements", n), ("step", step)]
    ce = {"LR": lr, "BETA1": b1, "BETA2": b2, "EPS": eps, "WEIGHT_DECAY": wd, "BLOCK": v["BLOCK"]}
    m = f"({b1!r} * MOM + {1 - b1!r} * G)"
    vv = f"({b2!r} * VAR + {1 - b2!r} * G * G)"
    expr = (f"P * {1 - lr * wd!r} - {lr!r} * ({m} / {1 - b1 ** step!r}) / "
            f"(torch.sqrt({vv} / {1 - b2 ** step!r}) + {eps!r})")
    return tensors, args, ce, [_cdiv(n, v["BLOCK"]), 1, 1], _ref(expr, "P")


def _b_colsum(v, cap):
    M, N, dt, S = v["M"], v["N"], v["dtype"], v["SPLIT_M"]
    rps = _cdiv(_cdiv(M, S), v["BLOCK_M"]) * v["BLOCK_M"]
    tensors = {"DY": _t((M, N), dt), "DB": _t((N,), "float32", "zeros")}
    args = [("dy_ptr", {"tensor": "DY"}), ("db_ptr", {"tensor": "DB"}), ("M", M), ("N", N), ("ROWS_PER_SPLIT", rps)]
    ce = {"BLOCK_M": v["BLOCK_M"], "BLOCK_N": v["BLOCK_N"]}
    return tensors, args, ce, [_cdiv(N, v["BLOCK_N"]), _cdiv(M, rps), 1], _ref("DY.sum(0)", "DB")


def _b_maxpool(v, cap):
    NB, H, W, C, dt = v["NB"], v["H"], v["W"], v["C"], v["dtype"]
    OH, OW = (H + 2 - 3) // 2 + 1, (W + 2 - 3) // 2 + 1
    tensors = {"X": _t((NB, H, W, C), dt), "Y": _t((NB, OH, OW, C), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("H", H), ("W", W), ("OH", OH), ("OW", OW)]
    ce = {"C": C, "BLOCK_W": v["BLOCK_W"]}
    expr = "torch.nn.functional.max_pool2d(X.permute(0, 3, 1, 2), 3, 2, 1).permute(0, 2, 3, 1)"
    return tensors, args, ce, [NB * OH, _cdiv(OW, v["BLOCK_W"]), 1], _ref(expr, "Y")


def _b_qkv(v, cap):
    B, S, H, D, dt = v["B"], v["SEQ"], v["H"], v["HEAD_DIM"], v["dtype"]
    tensors = {"QKV": _t((B * S, 3 * H * D), dt), "OUT": _t((3, B, H, S, D), dt, "nan")}
    args = [("qkv_ptr", {"tensor": "QKV"}), ("out_ptr", {"tensor": "OUT"}), ("B", B), ("SEQ", S)]
    expr = f"QKV.view({B}, {S}, 3, {H}, {D}).permute(2, 0, 3, 1, 4)"
    return tensors, args, {"N_HEADS": H, "HEAD_DIM": D}, [B * S, 3, 1], _ref(expr, "OUT")


BUILDERS = {
    "linear_bias_gelu": _b_linear_bias_gelu,
    "swiglu_tma": _b_swiglu,
    "fp8_rowwise_gemm": _b_fp8,
    "splitk_gemm": _b_splitk,
    "moe_bmm": _b_moe_bmm,
    "decode_gqa": _b_decode,
    "attn_causal_fwd": _b_attn_causal,
    "rmsnorm": _b_rmsnorm,
    "layernorm_bwd_dx": _b_ln_bwd,
    "cross_entropy_fwd": _b_xent,
    "rope_neox": _b_rope,
    "quant_int8_rowwise": _b_quant,
    "adamw_step": _b_adamw,
    "colsum_splitm": _b_colsum,
    "maxpool2d_nhwc": _b_maxpool,
    "qkv_split_permute": _b_qkv,
}


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": TARGET, "num_warps": num_warps, "num_stages": num_stages, **kw}


def _mm(BM, BN, BK, G=8):
    return {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": G}


VARIANTS = [
    # --- matmul-type -------------------------------------------------------------------
    # GPT-style MLP up-projection (hidden 3072 -> 12288), 3000 tokens (M not a block multiple)
    _v("h7_linear_bias_gelu_bf16_m3000_128x256x64_s3_w8", "linear_bias_gelu", 8, 3,
       M=3000, N=12288, K=3072, dtype="bfloat16", **_mm(128, 256, 64)),
    # Llama-7B gate/up projection fused with SwiGLU, host TMA descriptors, TMA store
    _v("h7_swiglu_tma_bf16_128x128x64_s3_w8", "swiglu_tma", 8, 3,
       M=2048, N=11008, K=4096, dtype="bfloat16", STAGES=3, **_mm(128, 128, 64)),
    # fp8 e4m3 GEMM with per-token / per-channel scales (DeepSeek / Llama fp8 inference), M masked
    _v("h7_fp8_rowwise_e4m3_m8000_128x128x128_s4_w8", "fp8_rowwise_gemm", 8, 4,
       M=8000, N=7168, K=4096, dtype="float8_e4m3fn", out_dtype="bfloat16", STAGES=4, **_mm(128, 128, 128)),
    # decode-batch down-projection (14336 -> 4096), split-K 8 with fp32 atomics
    _v("h7_splitk_fp16_m256_k14336_64x128x64_s5_w4", "splitk_gemm", 4, 5,
       M=256, N=4096, K=14336, SPLIT_K=8, dtype="float16", **_mm(64, 128, 64, 4)),
    # MoE experts (Mixtral shard): 8 experts x 1000 tokens, K 4096 -> N 1792
    _v("h7_moe_bmm_fp16_e8_m1000_128x64x64_s4_w4", "moe_bmm", 4, 4,
       E=8, M=1000, N=1792, K=4096, dtype="float16", **_mm(128, 64, 64)),
    # GQA decode over a 4000-token KV cache (Llama-3 8B heads: 32 q heads, 8 kv heads, d 128)
    _v("h7_decode_gqa_fp16_s4000_bn64_s3_w4", "decode_gqa", 4, 3,
       B=16, HKV=8, GROUP=4, SEQ=4000, HEAD_DIM=128, BLOCK_N=64, dtype="float16"),
    # causal flash attention forward, Llama-like (32 heads, d 128, 2048 tokens), bf16
    _v("h7_attn_causal_bf16_d128_s2048_128x64_s3_w8", "attn_causal_fwd", 8, 3,
       Z=4, H=32, N_CTX=2048, HEAD_DIM=128, BLOCK_M=128, BLOCK_N=64, dtype="bfloat16"),
    # causal attention, d 64, 1000 tokens (masked tail), fp16
    _v("h7_attn_causal_fp16_d64_s1000_64x64_s2_w4", "attn_causal_fwd", 4, 2,
       Z=8, H=16, N_CTX=1000, HEAD_DIM=64, BLOCK_M=64, BLOCK_N=64, dtype="float16"),
    # --- memory-bound / reductions --------------------------------------------------------
    _v("h7_rmsnorm_bf16_n4096_w8", "rmsnorm", 8, 1, M=16384, N=4096, BLOCK_N=4096, EPS=1e-6, dtype="bfloat16"),
    _v("h7_rmsnorm_fp16_n3000_w4", "rmsnorm", 4, 1, M=32768, N=3000, BLOCK_N=4096, EPS=1e-5, dtype="float16"),
    _v("h7_add_rmsnorm_bf16_n8192_w8", "rmsnorm", 8, 2, M=4096, N=8192, BLOCK_N=8192, EPS=1e-5, HAS_RES=True,
       dtype="bfloat16"),
    _v("h7_layernorm_bwd_dx_fp16_n2048_w4", "layernorm_bwd_dx", 4, 1, M=16384, N=2048, BLOCK_N=2048,
       dtype="float16"),
    _v("h7_xent_bf16_v128256_b4096_w8", "cross_entropy_fwd", 8, 2, M=2048, V=128256, BLOCK_V=4096,
       dtype="bfloat16"),
    _v("h7_xent_fp32_v32000_b2048_w4", "cross_entropy_fwd", 4, 3, M=4096, V=32000, BLOCK_V=2048, dtype="float32"),
    _v("h7_rope_neox_bf16_h32_d128_w1", "rope_neox", 1, 1, B=4, SEQ=4096, H=32, HEAD_DIM=128, dtype="bfloat16"),
    _v("h7_quant_int8_rowwise_bf16_n5120_w8", "quant_int8_rowwise", 8, 1, M=16384, N=5120, BLOCK_N=8192,
       dtype="bfloat16"),
    _v("h7_adamw_fp32_bf16grad_n50m_w4", "adamw_step", 4, 1, N=50_000_000, STEP=10, LR=1e-3, BETA1=0.9,
       BETA2=0.999, EPS=1e-8, WEIGHT_DECAY=0.01, BLOCK=2048, grad_dtype="bfloat16"),
    _v("h7_colsum_splitm_fp16_m30000_n3072_w2", "colsum_splitm", 2, 3, M=30000, N=3072, SPLIT_M=32, BLOCK_M=32,
       BLOCK_N=128, dtype="float16"),
    _v("h7_maxpool3x3s2_nhwc_fp16_c64_w2", "maxpool2d_nhwc", 2, 1, NB=64, H=112, W=112, C=64, BLOCK_W=16,
       dtype="float16"),
    _v("h7_qkv_split_permute_bf16_h32_d128_w4", "qkv_split_permute", 4, 1, B=4, SEQ=2048, H=32, HEAD_DIM=128,
       dtype="bfloat16"),
]


def flops(variant: dict):
    """Useful FLOPs of a matmul-type variant (2 per multiply-add; causal attention counts the
    lower triangle only); None for the memory-bound kernels."""
    k, v = variant["kernel"], variant
    if k in ("linear_bias_gelu", "fp8_rowwise_gemm", "splitk_gemm"):
        return 2 * v["M"] * v["N"] * v["K"]
    if k == "swiglu_tma":
        return 2 * 2 * v["M"] * v["N"] * v["K"]
    if k == "moe_bmm":
        return 2 * v["E"] * v["M"] * v["N"] * v["K"]
    if k == "decode_gqa":
        return 2 * 2 * v["B"] * v["HKV"] * v["GROUP"] * v["SEQ"] * v["HEAD_DIM"]
    if k == "attn_causal_fwd":
        S = v["N_CTX"]
        return 2 * 2 * v["Z"] * v["H"] * (S * (S + 1) // 2) * v["HEAD_DIM"]
    return None
