"""Held-out set 8: twenty Triton kernels of the kind people write for LLM / vision training and
inference, for an H200 (sm_90) timing validation.

Written by an author who read neither the simulator nor the earlier held-out sets; only
corpus.py's interface (KERNELS / BUILDERS / VARIANTS, call_spec, the variant dicts) and
corpus_run.py's input making and check (randn cast to the dtype, outputs NaN-filled, an fp32
``op: torch`` reference expression evaluated without builtins over the tensors as they were
before the launch, max |out - ref| / max |ref| under 1e-2, or 3e-2 when a bf16 / fp8 tensor
is present).  The kernels follow the forms of Triton's tutorials, Liger, vLLM, FlashAttention-
Triton and inductor-like code.

Kernels (17), variants (20):

  matmul-type (tl.dot), 8 variants
    linear_act        pointer GEMM, X @ W^T with W in nn.Linear layout (N x K), grouped
                      program order; epilogue: + bias and tanh-GELU, or + residual
    fp8_rowwise_gemm  persistent fp8 e4m3 GEMM through host TensorDescriptors (TMA loads,
                      TMA store), row-wise A scales and column-wise B scales, bf16 out
    flash_fwd_gqa     FlashAttention forward, causal, GQA (4 query heads per KV head),
                      [B, S, H, D] layout, two-stage loop (off-diagonal / diagonal)
    fused_moe         vLLM-style fused MoE GEMM: rows gathered by sorted token ids, one
                      expert per M block, routing weight multiplied in the epilogue
    lora_linear       fused LoRA linear: X W^T + s (X A^T) B^T in one K loop
    conv3x3_nhwc      implicit-GEMM 3x3 convolution, NHWC, pad 1, + bias + ReLU
    paged_decode_gqa  paged-KV decode attention (vLLM cache layout, block table), the
                      query heads of one KV head padded to 16 rows for tl.dot

  memory-bound / reduction, 12 variants
    fused_add_rmsnorm residual += x (in place), then RMSNorm * weight (vLLM)
    cross_entropy     Liger-style: online logsumexp over the vocabulary, optionally the
                      softmax-minus-one-hot gradient written over the logits in place
    group_norm_silu   GroupNorm (32 groups) + SiLU over NHWC activations, one program per
                      (image, group), two passes
    rope_neox         rotary embedding applied in place to q and k, cos/sin cache gathered
                      by position (vLLM's neox layout)
    embedding         token-embedding gather, 2-D grid (token, hidden block)
    row_cumsum        row-wise prefix sum in chunks with a carried total (fp16 in, fp32 out)
    adamw             fused AdamW step, fp32 params / moments, bf16 grads, in place
    w8a16_gemv        int8 weight-only GEMV (decode), per-output-channel scale
    fp8_quant_row     per-token dynamic fp8 e4m3 quantization (amax / 448), scale out
    expert_histogram  MoE expert token counts: tl.histogram per block + tl.atomic_add

Inputs.  corpus_run makes every input randn cast to its dtype; integer tensors therefore
hold small, possibly negative values (mostly 0 and +-1).  Every index a kernel takes from an
integer tensor is first mixed with its position and reduced modulo the range with a
non-negative remainder (``((v % n) + n) % n``), so the indices spread over the range as a
real workload's would, and the reference reproduces that mixing with torch.remainder on
int64.  The fused MoE writes its output rows in sorted order (no scatter), so every output
element is written once.  AdamW reads |exp_avg_sq| (randn state may be negative).  The
in-place kernels (add-rmsnorm's residual, cross-entropy's gradient, RoPE, AdamW) are checked
on the output corpus_run names, against the tensors as they were before the launch.

Checked (before saving): every kernel in Triton 3.6's CPU interpreter (TRITON_INTERPRET=1,
torch CPU tensors, corpus_run's own build_call / inputs_before / check) at reduced shapes (same
block sizes, masks, warps and constexprs; fewer rows, tokens, heads, experts, pages; shapes left
non-multiples of the blocks where the full variant's are; the persistent fp8 GEMM with 4
programs so that each walks several tiles) against the very reference expression below with
corpus_run's tolerance: all 20 pass.  Stand-ins: (1) the interpreter's bf16 tl.dot gives
garbage (errors ~1e9 here), so the bf16 dot kernels (linear_act bf16, flash_fwd_gqa,
paged_decode_gqa) ran in fp16 there; the memory-bound bf16 kernels ran in bf16.  (2) The
interpreter's fp32 -> fp8e4nv conversion loses the carry into the exponent when rounding up
(124.3 -> 64, where torch and sm_90's cvt.rn.satfinite.e4m3x2.f32 give 128), so fp8_quant_row
was checked there with an fp32 output against the reference without its fp8 cast: exact (error
0), i.e. the kernel's div_rn quotients equal torch's; the compiled kernel converts with
cvt.rn.satfinite (round to nearest even), as torch does.  The fp8 GEMM's fp8 inputs were
exercised in the interpreter unchanged.  Every variant compiled for sm_90 with Triton 3.6,
n_spills 0 (most registers: linear_gelu 255, conv3x3 213, flash 196); corpus_run's binder
check (the JIT's specialization of the rebuilt call equals the compiled one) passes for all.

    cd /work/main && PYTHONPATH=$PWD /tmp/tri36/bin/python -m kernels.triton.corpus \\
        --kernels kernels.triton.heldout8 --out tests/fixtures/triton/heldout8
    python -m kernels.triton.corpus_run --corpus tests/fixtures/triton/heldout8 --out heldout8.jsonl
"""

from __future__ import annotations

import triton
import triton.language as tl

TARGET = (90,)          # H200
NUM_SMS = {90: 132}


# ---------------------------------------------------------------------------------------
# Matmul-type kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def _swizzle(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_pid_n
    group_id = pid // width
    first_m = group_id * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % width) % group_m)
    pid_n = (pid % width) // group_m
    return pid_m, pid_n


@triton.jit
def linear_act_kernel(a_ptr, w_ptr, bias_ptr, res_ptr, c_ptr, M, N, K, stride_am, stride_wn, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      HAS_BIAS: tl.constexpr, ACT: tl.constexpr, HAS_RES: tl.constexpr):
    """C = act(A @ W^T + bias) (+ R); A M x K, W N x K (nn.Linear weight), all row-major."""
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_wn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :]
    w_ptrs = w_ptr + offs_wn[None, :] * stride_wn + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        w = tl.load(w_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, w, acc)
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    c_mask = (offs_m[:, None] < M) & n_mask[None, :]
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
        acc = acc + bias[None, :]
    if ACT == "gelu_tanh":
        # 0.5 x (1 + tanh(u)) == x * sigmoid(2u),  u = sqrt(2/pi) (x + 0.044715 x^3)
        u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(2.0 * u)
    if HAS_RES:
        r = tl.load(res_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], mask=c_mask, other=0.0)
        acc = acc + r.to(tl.float32)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@triton.jit
def fp8_rowwise_gemm_kernel(a_desc, b_desc, c_desc, a_scale_ptr, b_scale_ptr, M, N, K,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """Persistent C = (A @ B^T) * a_scale[:, None] * b_scale[None, :]; A M x K fp8, B N x K fp8,
    C bf16, host-side descriptors (TMA) for all three."""
    start_pid = tl.program_id(0)
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = _swizzle(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([off_m, ki * BLOCK_K])
            b = b_desc.load([off_n, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        sa = tl.load(a_scale_ptr + offs_m, mask=offs_m < M, other=0.0)
        sb = tl.load(b_scale_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc = acc * sa[:, None] * sb[None, :]
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def _flash_inner(acc, l_i, m_i, q, k_base, v_base, stride_kvs, offs_m, offs_n, offs_d, lo, hi, S, qk_scale,
                 BLOCK_N: tl.constexpr, DIAG: tl.constexpr):
    for start_n in tl.range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if DIAG:
            kt = tl.load(k_base + cols[None, :] * stride_kvs + offs_d[:, None], mask=cols[None, :] < S, other=0.0)
        else:
            kt = tl.load(k_base + cols[None, :] * stride_kvs + offs_d[:, None])
        qk = tl.dot(q, kt)
        if DIAG:
            keep = (offs_m[:, None] >= cols[None, :]) & (cols[None, :] < S)
            qk = qk * qk_scale + tl.where(keep, 0.0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if DIAG:
            v = tl.load(v_base + cols[:, None] * stride_kvs + offs_d[None, :], mask=cols[:, None] < S, other=0.0)
        else:
            v = tl.load(v_base + cols[:, None] * stride_kvs + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def flash_fwd_gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, stride_qb, stride_qs, stride_kb, stride_ks,
                         H_Q: tl.constexpr, H_KV: tl.constexpr, HEAD_DIM: tl.constexpr, SM_SCALE: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Causal attention forward, Q/O [B, S, H_Q, D], K/V [B, S, H_KV, D]; program (m, b*H_Q + h)."""
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    b = off_bh // H_Q
    h = off_bh % H_Q
    hk = h // (H_Q // H_KV)
    q_base = q_ptr + b.to(tl.int64) * stride_qb + h * HEAD_DIM
    k_base = k_ptr + b.to(tl.int64) * stride_kb + hk * HEAD_DIM
    v_base = v_ptr + b.to(tl.int64) * stride_kb + hk * HEAD_DIM
    o_base = o_ptr + b.to(tl.int64) * stride_qb + h * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_mask = offs_m[:, None] < S
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :], mask=q_mask, other=0.0)
    qk_scale = SM_SCALE * 1.4426950408889634
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # blocks wholly below the diagonal: no mask
    acc, l_i, m_i = _flash_inner(acc, l_i, m_i, q, k_base, v_base, stride_ks, offs_m, offs_n, offs_d,
                                 0, start_m * BLOCK_M, S, qk_scale, BLOCK_N, False)
    # the diagonal block(s): causal and length mask
    acc, l_i, m_i = _flash_inner(acc, l_i, m_i, q, k_base, v_base, stride_ks, offs_m, offs_n, offs_d,
                                 start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, S), S, qk_scale, BLOCK_N, True)
    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_qs + offs_d[None, :], acc.to(o_ptr.dtype.element_ty), mask=q_mask)


@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, topk_w_ptr, sorted_ids_ptr, expert_ids_ptr,
                     N, K, NUM_TOKENS, EM, NUM_EXPERTS, stride_am, stride_be, stride_bn, stride_cm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                     MUL_ROUTED_WEIGHT: tl.constexpr):
    """C[r] = (A[tok(r)] @ B[expert(r // BLOCK_M)]^T) * w[r]; A T x K, B E x N x K, C EM x N.
    tok(r) = (sorted_ids[r] + 131 r) mod T, expert(b) = (expert_ids[b] + b) mod E."""
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, EM, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    raw_tok = tl.load(sorted_ids_ptr + offs_r)
    tok = ((raw_tok + offs_r * 131) % NUM_TOKENS + NUM_TOKENS) % NUM_TOKENS
    raw_e = tl.load(expert_ids_ptr + pid_m)
    expert = ((raw_e + pid_m) % NUM_EXPERTS + NUM_EXPERTS) % NUM_EXPERTS
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + tok[:, None].to(tl.int64) * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + expert.to(tl.int64) * stride_be + offs_bn[None, :] * stride_bn + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    if MUL_ROUTED_WEIGHT:
        w = tl.load(topk_w_ptr + offs_r)
        acc = acc * w[:, None]
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_r[:, None].to(tl.int64) * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_r[:, None] < EM) & (offs_n[None, :] < N))


@triton.jit
def lora_linear_kernel(x_ptr, w_ptr, la_ptr, lb_ptr, y_ptr, M, N, K, stride_xm, stride_wn, stride_ym,
                       RANK: tl.constexpr, LORA_SCALE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Y = X W^T + LORA_SCALE (X A^T) B^T; X M x K, W N x K, A RANK x K, B N x RANK."""
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_xm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_wn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    offs_r = tl.arange(0, RANK)
    x_ptrs = x_ptr + offs_xm[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_wn[None, :] * stride_wn + offs_k[:, None]
    a_ptrs = la_ptr + offs_r[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    xa = tl.zeros((BLOCK_M, RANK), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        w = tl.load(w_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        a = tl.load(a_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(x, w, acc)
        xa = tl.dot(x, a, xa)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
        a_ptrs += BLOCK_K
    bt = tl.load(lb_ptr + offs_wn[None, :] * RANK + offs_r[:, None])
    acc = tl.dot((xa * LORA_SCALE).to(bt.dtype), bt, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def conv3x3_nhwc_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, NB, H, W, C, KOUT,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Y = relu(conv2d(X, Wc, pad 1) + bias) as an implicit GEMM; X [NB, H, W, C], Wc [KOUT, 3, 3, C],
    Y [NB, H, W, KOUT]; the reduction runs over (tap, channel block), C a multiple of BLOCK_K."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = offs_m < NB * H * W
    img = offs_m // (H * W)
    hw = offs_m % (H * W)
    oh = hw // W
    ow = hw % W
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < KOUT
    offs_c = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, 9 * C, BLOCK_K):
        tap = k // C
        c0 = k - tap * C
        ih = oh + tap // 3 - 1
        iw = ow + tap % 3 - 1
        ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        x_off = ((img * H + ih) * W + iw) * C + c0
        x = tl.load(x_ptr + x_off[:, None] + offs_c[None, :], mask=ok[:, None], other=0.0)
        wt = tl.load(w_ptr + offs_n[None, :] * (9 * C) + k + offs_c[:, None], mask=n_ok[None, :], other=0.0)
        acc = tl.dot(x, wt, acc)
    bias = tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(y_ptr + offs_m[:, None] * KOUT + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def paged_decode_gqa_kernel(q_ptr, kc_ptr, vc_ptr, bt_ptr, lens_ptr, o_ptr, NUM_PAGES, MAX_PAGES,
                            H_Q: tl.constexpr, H_KV: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE: tl.constexpr,
                            L_MAX: tl.constexpr, SM_SCALE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr):
    """One decode step: Q [B, H_Q, D]; K/V caches [NUM_PAGES, PAGE, H_KV, D]; block table [B, MAX_PAGES]
    (page = ((bt + b MAX_PAGES + j) 7919) mod NUM_PAGES); length L_MAX - ((len 37 + 101 b) mod 512).
    Program (b, kv head) handles the H_Q / H_KV query heads of that KV head as BLOCK_H rows."""
    b = tl.program_id(0)
    hk = tl.program_id(1)
    G: tl.constexpr = H_Q // H_KV
    offs_g = tl.arange(0, BLOCK_H)
    g_ok = offs_g < G
    offs_d = tl.arange(0, HEAD_DIM)
    q_rows = b * H_Q + hk * G + offs_g
    q = tl.load(q_ptr + q_rows[:, None] * HEAD_DIM + offs_d[None, :], mask=g_ok[:, None], other=0.0)
    raw_len = tl.load(lens_ptr + b)
    seq_len = L_MAX - ((raw_len * 37 + b * 101) % 512 + 512) % 512
    qk_scale = SM_SCALE * 1.4426950408889634
    m_i = tl.zeros([BLOCK_H], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    for start in range(0, seq_len, BLOCK_N):
        pos = start + offs_n
        n_ok = pos < seq_len
        j = pos // PAGE
        raw_p = tl.load(bt_ptr + b * MAX_PAGES + j, mask=n_ok, other=0)
        page = (((raw_p + b * MAX_PAGES + j) * 7919) % NUM_PAGES + NUM_PAGES) % NUM_PAGES
        kv_off = (page.to(tl.int64) * PAGE + pos % PAGE) * (H_KV * HEAD_DIM) + hk * HEAD_DIM
        kt = tl.load(kc_ptr + kv_off[None, :] + offs_d[:, None], mask=n_ok[None, :], other=0.0)
        qk = tl.dot(q, kt) * qk_scale
        qk = tl.where(n_ok[None, :], qk, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(vc_ptr + kv_off[:, None] + offs_d[None, :], mask=n_ok[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty), mask=g_ok[:, None])


# ---------------------------------------------------------------------------------------
# Memory-bound and reduction kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def fused_add_rmsnorm_kernel(x_ptr, res_ptr, w_ptr, out_ptr, N_COLS, stride_row,
                             EPS: tl.constexpr, BLOCK_N: tl.constexpr):
    """res <- x + res (stored in res's dtype); out = (x + res) * rsqrt(mean((x + res)^2) + eps) * w."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N_COLS
    off = row * stride_row + cols
    x = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + off, mask=mask, other=0.0).to(tl.float32)
    z = x + r
    tl.store(res_ptr + off, z.to(res_ptr.dtype.element_ty), mask=mask)
    var = tl.sum(z * z, axis=0) / N_COLS
    rstd = tl.math.rsqrt(var + EPS)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + off, (z * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride_row, V, N_ROWS,
                         BLOCK: tl.constexpr, WRITE_GRAD: tl.constexpr):
    """loss[r] = logsumexp(x[r]) - x[r, t]; t = target[r] mod V.  WRITE_GRAD: x[r] <- (softmax(x[r])
    - onehot(t)) / N_ROWS in place (Liger's fused forward/backward)."""
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * stride_row
    t = tl.load(target_ptr + row)
    t = (t % V + V) % V
    x_t = tl.load(base + t).to(tl.float32)
    m = float("-inf")
    d = 0.0
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    lse = m + tl.log(d)
    tl.store(loss_ptr + row, lse - x_t)
    if WRITE_GRAD:
        for off in range(0, V, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            x = tl.load(base + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
            g = tl.exp(x - lse)
            g = tl.where(cols == t, g - 1.0, g) / N_ROWS
            tl.store(base + cols, g.to(logits_ptr.dtype.element_ty), mask=cols < V)


@triton.jit
def group_norm_silu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, HW, C, CPG, G,
                           EPS: tl.constexpr, BLOCK_HW: tl.constexpr, BLOCK_C: tl.constexpr):
    """y = silu(group_norm(x)) on NHWC x [N, HW, C], G groups of CPG channels; program n * G + g."""
    pid = tl.program_id(0)
    n = pid // G
    g = pid % G
    base = n.to(tl.int64) * HW * C + g * CPG
    offs_c = tl.arange(0, BLOCK_C)
    c_ok = offs_c < CPG
    s1 = tl.zeros((BLOCK_HW, BLOCK_C), dtype=tl.float32)
    s2 = tl.zeros((BLOCK_HW, BLOCK_C), dtype=tl.float32)
    for hw0 in range(0, HW, BLOCK_HW):
        offs_hw = hw0 + tl.arange(0, BLOCK_HW)
        m = (offs_hw[:, None] < HW) & c_ok[None, :]
        x = tl.load(x_ptr + base + offs_hw[:, None] * C + offs_c[None, :], mask=m, other=0.0).to(tl.float32)
        s1 += x
        s2 += x * x
    cnt = (HW * CPG).to(tl.float32)
    mean = tl.sum(tl.sum(s1, 1), 0) / cnt
    var = tl.sum(tl.sum(s2, 1), 0) / cnt - mean * mean
    rstd = tl.math.rsqrt(var + EPS)
    w = tl.load(w_ptr + g * CPG + offs_c, mask=c_ok, other=0.0).to(tl.float32)
    bb = tl.load(b_ptr + g * CPG + offs_c, mask=c_ok, other=0.0).to(tl.float32)
    scale = w * rstd
    shift = bb - mean * scale
    for hw0 in range(0, HW, BLOCK_HW):
        offs_hw = hw0 + tl.arange(0, BLOCK_HW)
        m = (offs_hw[:, None] < HW) & c_ok[None, :]
        ptr_off = base + offs_hw[:, None] * C + offs_c[None, :]
        x = tl.load(x_ptr + ptr_off, mask=m, other=0.0).to(tl.float32)
        y = x * scale[None, :] + shift[None, :]
        y = y * tl.sigmoid(y)
        tl.store(y_ptr + ptr_off, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def rope_neox_kernel(pos_ptr, q_ptr, k_ptr, cos_sin_ptr, MAX_POS, stride_qt, stride_kt,
                     H_Q: tl.constexpr, H_KV: tl.constexpr, HEAD_DIM: tl.constexpr,
                     BLOCK_HQ: tl.constexpr, BLOCK_HK: tl.constexpr):
    """In place: x[..., :D/2], x[..., D/2:] <- x1 cos - x2 sin, x2 cos + x1 sin for q [T, H_Q, D] and
    k [T, H_KV, D]; cos_sin [MAX_POS, D] = [cos | sin]; position (pos[t] + t) mod MAX_POS."""
    t = tl.program_id(0)
    p = tl.load(pos_ptr + t)
    p = ((p + t) % MAX_POS + MAX_POS) % MAX_POS
    HALF: tl.constexpr = HEAD_DIM // 2
    offs_d = tl.arange(0, HALF)
    cos = tl.load(cos_sin_ptr + p * HEAD_DIM + offs_d)[None, :]
    sin = tl.load(cos_sin_ptr + p * HEAD_DIM + HALF + offs_d)[None, :]
    offs_h = tl.arange(0, BLOCK_HQ)
    qm = (offs_h < H_Q)[:, None]
    q1p = q_ptr + t.to(tl.int64) * stride_qt + offs_h[:, None] * HEAD_DIM + offs_d[None, :]
    q1 = tl.load(q1p, mask=qm, other=0.0).to(tl.float32)
    q2 = tl.load(q1p + HALF, mask=qm, other=0.0).to(tl.float32)
    tl.store(q1p, (q1 * cos - q2 * sin).to(q_ptr.dtype.element_ty), mask=qm)
    tl.store(q1p + HALF, (q2 * cos + q1 * sin).to(q_ptr.dtype.element_ty), mask=qm)
    offs_hk = tl.arange(0, BLOCK_HK)
    km = (offs_hk < H_KV)[:, None]
    k1p = k_ptr + t.to(tl.int64) * stride_kt + offs_hk[:, None] * HEAD_DIM + offs_d[None, :]
    k1 = tl.load(k1p, mask=km, other=0.0).to(tl.float32)
    k2 = tl.load(k1p + HALF, mask=km, other=0.0).to(tl.float32)
    tl.store(k1p, (k1 * cos - k2 * sin).to(k_ptr.dtype.element_ty), mask=km)
    tl.store(k1p + HALF, (k2 * cos + k1 * sin).to(k_ptr.dtype.element_ty), mask=km)


@triton.jit
def embedding_kernel(ids_ptr, table_ptr, out_ptr, VOCAB, HIDDEN, BLOCK_H: tl.constexpr):
    """out[t, :] = table[(ids[t] + 7919 t) mod VOCAB, :]; grid (tokens, cdiv(HIDDEN, BLOCK_H))."""
    t = tl.program_id(0)
    hb = tl.program_id(1)
    raw = tl.load(ids_ptr + t)
    tok = ((raw + t * 7919) % VOCAB + VOCAB) % VOCAB
    offs = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = offs < HIDDEN
    row = tl.load(table_ptr + tok.to(tl.int64) * HIDDEN + offs, mask=mask)
    tl.store(out_ptr + t.to(tl.int64) * HIDDEN + offs, row, mask=mask)


@triton.jit
def row_cumsum_kernel(x_ptr, y_ptr, L, BLOCK: tl.constexpr):
    """y[r, :] = cumsum(x[r, :]) in fp32, BLOCK columns at a time with the running total carried."""
    row = tl.program_id(0).to(tl.int64)
    carry = 0.0
    for off in range(0, L, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < L
        x = tl.load(x_ptr + row * L + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * L + cols, tl.cumsum(x, 0) + carry, mask=mask)
        carry += tl.sum(x, 0)


@triton.jit
def adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, N, LR: tl.constexpr, BETA1: tl.constexpr, BETA2: tl.constexpr,
                 EPS: tl.constexpr, WD: tl.constexpr, BC1: tl.constexpr, BC2: tl.constexpr, BLOCK: tl.constexpr):
    """One AdamW step in place (decoupled weight decay; BC1/BC2 the bias corrections 1 - beta^step)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.abs(tl.load(v_ptr + offs, mask=mask))
    p = p * (1.0 - LR * WD)
    m = BETA1 * m + (1.0 - BETA1) * g
    v = BETA2 * v + (1.0 - BETA2) * g * g
    p = p - (LR / BC1) * m / (tl.sqrt(v / BC2) + EPS)
    tl.store(p_ptr + offs, p, mask=mask)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)


@triton.jit
def w8a16_gemv_kernel(x_ptr, w_ptr, s_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[0, n] = scale[n] * sum_k x[0, k] w[n, k]; w int8 N x K, x and y fp16."""
    pid = tl.program_id(0)
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < N
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        k_ok = kk < K
        x = tl.load(x_ptr + kk, mask=k_ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs_n[:, None].to(tl.int64) * K + kk[None, :], mask=n_ok[:, None] & k_ok[None, :], other=0)
        acc += w.to(tl.float32) * x[None, :]
    s = tl.load(s_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)
    y = tl.sum(acc, 1) * s
    tl.store(y_ptr + offs_n, y.to(y_ptr.dtype.element_ty), mask=n_ok)


@triton.jit
def fp8_quant_row_kernel(x_ptr, q_ptr, s_ptr, N_COLS, BLOCK: tl.constexpr):
    """scale[r] = max(amax(|x[r]|) / 448, 1e-12); q[r] = fp8e4m3(clamp(x[r] / scale[r], +-448))."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N_COLS
    x = tl.load(x_ptr + row * N_COLS + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), 0)
    scale = tl.maximum(tl.math.div_rn(amax, 448.0), 1e-12)
    q = tl.clamp(tl.math.div_rn(x, scale), -448.0, 448.0)
    tl.store(q_ptr + row * N_COLS + cols, q.to(q_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + row, scale)


@triton.jit
def expert_histogram_kernel(ids_ptr, counts_ptr, N, NUM_EXPERTS: tl.constexpr, BLOCK: tl.constexpr):
    """counts[e] += #{i : (ids[i] + 37 i) mod E == e}; per-block tl.histogram, then atomics."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    raw = tl.load(ids_ptr + offs, mask=mask, other=0)
    e = ((raw + offs * 37) % NUM_EXPERTS + NUM_EXPERTS) % NUM_EXPERTS
    h = tl.histogram(e, NUM_EXPERTS, mask=mask)
    tl.atomic_add(counts_ptr + tl.arange(0, NUM_EXPERTS), h)


KERNELS = {
    "linear_act": linear_act_kernel,
    "fp8_rowwise_gemm": fp8_rowwise_gemm_kernel,
    "flash_fwd_gqa": flash_fwd_gqa_kernel,
    "fused_moe": fused_moe_kernel,
    "lora_linear": lora_linear_kernel,
    "conv3x3_nhwc": conv3x3_nhwc_kernel,
    "paged_decode_gqa": paged_decode_gqa_kernel,
    "fused_add_rmsnorm": fused_add_rmsnorm_kernel,
    "cross_entropy": cross_entropy_kernel,
    "group_norm_silu": group_norm_silu_kernel,
    "rope_neox": rope_neox_kernel,
    "embedding": embedding_kernel,
    "row_cumsum": row_cumsum_kernel,
    "adamw": adamw_kernel,
    "w8a16_gemv": w8a16_gemv_kernel,
    "fp8_quant_row": fp8_quant_row_kernel,
    "expert_histogram": expert_histogram_kernel,
}


# ---------------------------------------------------------------------------------------
# Builders: (tensors, args, constexprs, grid, reference) for a variant
# ---------------------------------------------------------------------------------------


def _t(shape, dtype="float16", init="randn"):
    return {"shape": [int(s) for s in shape], "dtype": dtype, "init": init}


def _ref(expr, out):
    return {"op": "torch", "expr": expr, "out": out}


def _pow2(n):
    return triton.next_power_of_2(int(n))


def _linear_act(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    has_bias, act, has_res = v.get("HAS_BIAS", False), v.get("ACT", "none"), v.get("HAS_RES", False)
    tensors = {"A": _t((M, K), dt), "W": _t((N, K), dt), "C": _t((M, N), dt, "nan")}
    if has_bias:
        tensors["Bias"] = _t((N,), dt)
    if has_res:
        tensors["R"] = _t((M, N), dt)
    args = [("a_ptr", {"tensor": "A"}), ("w_ptr", {"tensor": "W"}),
            ("bias_ptr", {"tensor": "Bias" if has_bias else "C"}), ("res_ptr", {"tensor": "R" if has_res else "C"}),
            ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K), ("stride_am", K), ("stride_wn", K),
            ("stride_cm", N)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    ce.update(HAS_BIAS=has_bias, ACT=act, HAS_RES=has_res)
    expr = "A @ W.t()" + (" + Bias" if has_bias else "")
    if act == "gelu_tanh":
        expr = f"torch.nn.functional.gelu({expr}, approximate='tanh')"
    if has_res:
        expr = f"{expr} + R"
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref(expr, "C")


def _fp8_rowwise(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    tensors = {"A": _t((M, K), "float8_e4m3fn"), "B": _t((N, K), "float8_e4m3fn"),
               "SA": _t((M,), "float32"), "SB": _t((N,), "float32"), "C": _t((M, N), "bfloat16", "nan")}
    args = [("a_desc", {"desc": "A", "block_shape": [BM, BK]}), ("b_desc", {"desc": "B", "block_shape": [BN, BK]}),
            ("c_desc", {"desc": "C", "block_shape": [BM, BN]}), ("a_scale_ptr", {"tensor": "SA"}),
            ("b_scale_ptr", {"tensor": "SB"}), ("M", M), ("N", N), ("K", K)]
    ce = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": v["GROUP_M"], "NUM_SMS": NUM_SMS[cap]}
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = [min(NUM_SMS[cap], tiles), 1, 1]
    return tensors, args, ce, grid, _ref("(A @ B.t()) * SA[:, None] * SB[None, :]", "C")


def _flash(v, cap):
    B, S, HQ, HKV, D, dt = v["B"], v["S"], v["H_Q"], v["H_KV"], v["HEAD_DIM"], v["dtype"]
    tensors = {"Q": _t((B, S, HQ, D), dt), "K": _t((B, S, HKV, D), dt), "V": _t((B, S, HKV, D), dt),
               "O": _t((B, S, HQ, D), dt, "nan")}
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}), ("o_ptr", {"tensor": "O"}),
            ("S", S), ("stride_qb", S * HQ * D), ("stride_qs", HQ * D), ("stride_kb", S * HKV * D),
            ("stride_ks", HKV * D)]
    ce = {"H_Q": HQ, "H_KV": HKV, "HEAD_DIM": D, "SM_SCALE": 1.0 / D ** 0.5, "BLOCK_M": v["BLOCK_M"],
          "BLOCK_N": v["BLOCK_N"]}
    g = HQ // HKV
    expr = (f"torch.nn.functional.scaled_dot_product_attention(Q.transpose(1, 2), "
            f"K.repeat_interleave({g}, dim=2).transpose(1, 2), V.repeat_interleave({g}, dim=2).transpose(1, 2), "
            f"is_causal=True).transpose(1, 2)")
    grid = [triton.cdiv(S, v["BLOCK_M"]), B * HQ, 1]
    return tensors, args, ce, grid, _ref(expr, "O")


def _fused_moe(v, cap):
    T, TOPK, E, N, K, BM = v["T"], v["TOPK"], v["E"], v["N"], v["K"], v["BLOCK_M"]
    EM = T * TOPK
    assert EM % BM == 0
    NB = EM // BM
    tensors = {"X": _t((T, K)), "Wm": _t((E, N, K)), "C": _t((EM, N), "float16", "nan"),
               "TW": _t((EM,), "float32"), "SI": _t((EM,), "int32"), "EI": _t((NB,), "int32")}
    args = [("a_ptr", {"tensor": "X"}), ("b_ptr", {"tensor": "Wm"}), ("c_ptr", {"tensor": "C"}),
            ("topk_w_ptr", {"tensor": "TW"}), ("sorted_ids_ptr", {"tensor": "SI"}), ("expert_ids_ptr", {"tensor": "EI"}),
            ("N", N), ("K", K), ("NUM_TOKENS", T), ("EM", EM), ("NUM_EXPERTS", E), ("stride_am", K),
            ("stride_be", N * K), ("stride_bn", K), ("stride_cm", N)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    ce["MUL_ROUTED_WEIGHT"] = True
    expr = (f"torch.bmm(X[torch.remainder(SI.long() + torch.arange({EM}, device=SI.device) * 131, {T})]"
            f".reshape({NB}, {BM}, {K}), "
            f"Wm[torch.remainder(EI.long() + torch.arange({NB}, device=EI.device), {E})].transpose(1, 2))"
            f".reshape({EM}, {N}) * TW[:, None]")
    grid = [NB * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref(expr, "C")


def _lora(v, cap):
    M, N, K, R, s = v["M"], v["N"], v["K"], v["RANK"], v["LORA_SCALE"]
    tensors = {"X": _t((M, K)), "W": _t((N, K)), "LA": _t((R, K)), "LB": _t((N, R)), "Y": _t((M, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("la_ptr", {"tensor": "LA"}),
            ("lb_ptr", {"tensor": "LB"}), ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K),
            ("stride_xm", K), ("stride_wn", K), ("stride_ym", N)]
    ce = {"RANK": R, "LORA_SCALE": s, **{k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref(f"X @ W.t() + {s!r} * ((X @ LA.t()) @ LB.t())", "Y")


def _conv(v, cap):
    NB, H, W, C, KO = v["NB"], v["H"], v["W"], v["C"], v["KOUT"]
    assert C % v["BLOCK_K"] == 0
    tensors = {"X": _t((NB, H, W, C)), "Wc": _t((KO, 3, 3, C)), "Bias": _t((KO,)), "Y": _t((NB, H, W, KO), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "Wc"}), ("bias_ptr", {"tensor": "Bias"}),
            ("y_ptr", {"tensor": "Y"}), ("NB", NB), ("H", H), ("W", W), ("C", C), ("KOUT", KO)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    expr = ("torch.relu(torch.nn.functional.conv2d(X.permute(0, 3, 1, 2), Wc.permute(0, 3, 1, 2), Bias, padding=1)"
            ".permute(0, 2, 3, 1))")
    grid = [triton.cdiv(NB * H * W, v["BLOCK_M"]), triton.cdiv(KO, v["BLOCK_N"]), 1]
    return tensors, args, ce, grid, _ref(expr, "Y")


def _paged_decode(v, cap):
    B, HQ, HKV, D, PAGE, LMAX, dt = v["B"], v["H_Q"], v["H_KV"], v["HEAD_DIM"], v["PAGE"], v["L_MAX"], v["dtype"]
    MAXP = LMAX // PAGE
    NP = v.get("NUM_PAGES", B * MAXP)
    G = HQ // HKV
    tensors = {"Q": _t((B, HQ, D), dt), "KC": _t((NP, PAGE, HKV, D), dt), "VC": _t((NP, PAGE, HKV, D), dt),
               "BT": _t((B, MAXP), "int32"), "LN": _t((B,), "int32"), "O": _t((B, HQ, D), dt, "nan")}
    args = [("q_ptr", {"tensor": "Q"}), ("kc_ptr", {"tensor": "KC"}), ("vc_ptr", {"tensor": "VC"}),
            ("bt_ptr", {"tensor": "BT"}), ("lens_ptr", {"tensor": "LN"}), ("o_ptr", {"tensor": "O"}),
            ("NUM_PAGES", NP), ("MAX_PAGES", MAXP)]
    scale = 1.0 / D ** 0.5
    ce = {"H_Q": HQ, "H_KV": HKV, "HEAD_DIM": D, "PAGE": PAGE, "L_MAX": LMAX, "SM_SCALE": scale,
          "BLOCK_H": v["BLOCK_H"], "BLOCK_N": v["BLOCK_N"]}
    dev = "device=BT.device"
    pages = (f"torch.remainder((BT.long() + torch.arange({B}, {dev})[:, None] * {MAXP} + "
             f"torch.arange({MAXP}, {dev})[None, :]) * 7919, {NP})")
    lens = f"({LMAX} - torch.remainder(LN.long() * 37 + torch.arange({B}, {dev}) * 101, 512))"
    expr = (f"torch.einsum('bkgl,blkd->bkgd', torch.softmax((torch.einsum('bkgd,blkd->bkgl', "
            f"Q.reshape({B}, {HKV}, {G}, {D}), KC[(pg := {pages})].reshape({B}, {LMAX}, {HKV}, {D})) * {scale!r})"
            f".masked_fill((torch.arange({LMAX}, {dev})[None, :] >= {lens}[:, None])[:, None, None, :], -math.inf), -1), "
            f"VC[pg].reshape({B}, {LMAX}, {HKV}, {D})).reshape({B}, {HQ}, {D})")
    grid = [B, HKV, 1]
    return tensors, args, ce, grid, _ref(expr, "O")


def _add_rmsnorm(v, cap):
    T, H, dt, eps = v["T"], v["H"], v["dtype"], v["EPS"]
    tensors = {"X": _t((T, H), dt), "R": _t((T, H), dt), "Wn": _t((H,), dt), "Out": _t((T, H), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("res_ptr", {"tensor": "R"}), ("w_ptr", {"tensor": "Wn"}),
            ("out_ptr", {"tensor": "Out"}), ("N_COLS", H), ("stride_row", H)]
    ce = {"EPS": eps, "BLOCK_N": _pow2(H)}
    expr = f"(Z := X + R) * torch.rsqrt((Z * Z).mean(-1, keepdim=True) + {eps!r}) * Wn"
    return tensors, args, ce, [T, 1, 1], _ref(expr, "Out")


def _xent(v, cap):
    BT, V = v["BT"], v["V"]
    tensors = {"L": _t((BT, V), v["dtype"]), "Tg": _t((BT,), "int64"), "Loss": _t((BT,), "float32", "nan")}
    args = [("logits_ptr", {"tensor": "L"}), ("target_ptr", {"tensor": "Tg"}), ("loss_ptr", {"tensor": "Loss"}),
            ("stride_row", V), ("V", V), ("N_ROWS", BT)]
    ce = {"BLOCK": v["BLOCK"], "WRITE_GRAD": v["WRITE_GRAD"]}
    expr = f"torch.logsumexp(L, 1) - L.gather(1, torch.remainder(Tg.long(), {V})[:, None])[:, 0]"
    return tensors, args, ce, [BT, 1, 1], _ref(expr, "Loss")


def _groupnorm(v, cap):
    N, HW, C, G, eps = v["N"], v["HW"], v["C"], v["G"], v["EPS"]
    cpg = C // G
    tensors = {"X": _t((N, HW, C)), "Wg": _t((C,)), "Bg": _t((C,)), "Y": _t((N, HW, C), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "Wg"}), ("b_ptr", {"tensor": "Bg"}), ("y_ptr", {"tensor": "Y"}),
            ("HW", HW), ("C", C), ("CPG", cpg), ("G", G)]
    ce = {"EPS": eps, "BLOCK_HW": v["BLOCK_HW"], "BLOCK_C": _pow2(cpg)}
    expr = (f"torch.nn.functional.silu(torch.nn.functional.group_norm(X.permute(0, 2, 1), {G}, Wg, Bg, {eps!r})"
            f".permute(0, 2, 1))")
    return tensors, args, ce, [N * G, 1, 1], _ref(expr, "Y")


def _rope(v, cap):
    T, HQ, HKV, D, MP = v["T"], v["H_Q"], v["H_KV"], v["HEAD_DIM"], v["MAX_POS"]
    h = D // 2
    tensors = {"P": _t((T,), "int64"), "Q": _t((T, HQ, D), v["dtype"]), "Kr": _t((T, HKV, D), v["dtype"]),
               "CS": _t((MP, D), "float32")}
    args = [("pos_ptr", {"tensor": "P"}), ("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "Kr"}),
            ("cos_sin_ptr", {"tensor": "CS"}), ("MAX_POS", MP), ("stride_qt", HQ * D), ("stride_kt", HKV * D)]
    ce = {"H_Q": HQ, "H_KV": HKV, "HEAD_DIM": D, "BLOCK_HQ": _pow2(HQ), "BLOCK_HK": _pow2(HKV)}
    expr = (f"torch.cat([(q1 := Q[..., :{h}]) * (c := (cs := CS[torch.remainder(P.long() + "
            f"torch.arange({T}, device=P.device), {MP})])[:, None, :{h}]) - (q2 := Q[..., {h}:]) * "
            f"(s := cs[:, None, {h}:]), q2 * c + q1 * s], -1)")
    return tensors, args, ce, [T, 1, 1], _ref(expr, "Q")


def _embedding(v, cap):
    T, V, H = v["T"], v["V"], v["H"]
    tensors = {"I": _t((T,), "int32"), "E": _t((V, H), v["dtype"]), "Out": _t((T, H), v["dtype"], "nan")}
    args = [("ids_ptr", {"tensor": "I"}), ("table_ptr", {"tensor": "E"}), ("out_ptr", {"tensor": "Out"}),
            ("VOCAB", V), ("HIDDEN", H)]
    ce = {"BLOCK_H": v["BLOCK_H"]}
    expr = f"E[torch.remainder(I.long() + torch.arange({T}, device=I.device) * 7919, {V})]"
    return tensors, args, ce, [T, triton.cdiv(H, v["BLOCK_H"]), 1], _ref(expr, "Out")


def _cumsum(v, cap):
    R, L = v["ROWS"], v["L"]
    tensors = {"X": _t((R, L), v["dtype"]), "Y": _t((R, L), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("L", L)]
    return tensors, args, {"BLOCK": v["BLOCK"]}, [R, 1, 1], _ref("torch.cumsum(X, 1)", "Y")


def _adamw(v, cap):
    N, step = v["N"], v["STEP"]
    lr, b1, b2, eps, wd = v["LR"], v["BETA1"], v["BETA2"], v["EPS"], v["WD"]
    bc1, bc2 = 1.0 - b1 ** step, 1.0 - b2 ** step
    tensors = {"P": _t((N,), "float32"), "G": _t((N,), "bfloat16"), "M": _t((N,), "float32"), "Vs": _t((N,), "float32")}
    args = [("p_ptr", {"tensor": "P"}), ("g_ptr", {"tensor": "G"}), ("m_ptr", {"tensor": "M"}), ("v_ptr", {"tensor": "Vs"}),
            ("N", N)]
    ce = {"LR": lr, "BETA1": b1, "BETA2": b2, "EPS": eps, "WD": wd, "BC1": bc1, "BC2": bc2, "BLOCK": v["BLOCK"]}
    expr = (f"P * (1.0 - {lr!r} * {wd!r}) - ({lr!r} / {bc1!r}) * ({b1!r} * M + (1.0 - {b1!r}) * G) / "
            f"(torch.sqrt(({b2!r} * Vs.abs() + (1.0 - {b2!r}) * G * G) / {bc2!r}) + {eps!r})")
    return tensors, args, ce, [triton.cdiv(N, v["BLOCK"]), 1, 1], _ref(expr, "P")


def _gemv(v, cap):
    N, K = v["N"], v["K"]
    tensors = {"X": _t((1, K)), "Wq": _t((N, K), "int8"), "S": _t((N,)), "Y": _t((1, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "Wq"}), ("s_ptr", {"tensor": "S"}), ("y_ptr", {"tensor": "Y"}),
            ("N", N), ("K", K)]
    ce = {"BLOCK_N": v["BLOCK_N"], "BLOCK_K": v["BLOCK_K"]}
    return tensors, args, ce, [triton.cdiv(N, v["BLOCK_N"]), 1, 1], _ref("(X @ Wq.t()) * S[None, :]", "Y")


def _fp8_quant(v, cap):
    T, H = v["T"], v["H"]
    tensors = {"X": _t((T, H), v["dtype"]), "Qf": _t((T, H), "float8_e4m3fn", "nan"), "Sc": _t((T,), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("q_ptr", {"tensor": "Qf"}), ("s_ptr", {"tensor": "Sc"}), ("N_COLS", H)]
    expr = ("torch.clamp(X / (X.abs().amax(1, keepdim=True) / 448.0).clamp_min(1e-12), -448.0, 448.0)"
            ".to(torch.float8_e4m3fn).float()")
    return tensors, args, {"BLOCK": _pow2(H)}, [T, 1, 1], _ref(expr, "Qf")


def _hist(v, cap):
    N, E, BLOCK = v["N"], v["E"], v["BLOCK"]
    tensors = {"I": _t((N,), "int32"), "Cnt": _t((E,), "int32", "zeros")}
    args = [("ids_ptr", {"tensor": "I"}), ("counts_ptr", {"tensor": "Cnt"}), ("N", N)]
    expr = f"torch.bincount(torch.remainder(I.long() + torch.arange({N}, device=I.device) * 37, {E}), minlength={E}).float()"
    return tensors, args, {"NUM_EXPERTS": E, "BLOCK": BLOCK}, [triton.cdiv(N, BLOCK), 1, 1], _ref(expr, "Cnt")


BUILDERS = {
    "linear_act": _linear_act,
    "fp8_rowwise_gemm": _fp8_rowwise,
    "flash_fwd_gqa": _flash,
    "fused_moe": _fused_moe,
    "lora_linear": _lora,
    "conv3x3_nhwc": _conv,
    "paged_decode_gqa": _paged_decode,
    "fused_add_rmsnorm": _add_rmsnorm,
    "cross_entropy": _xent,
    "group_norm_silu": _groupnorm,
    "rope_neox": _rope,
    "embedding": _embedding,
    "row_cumsum": _cumsum,
    "adamw": _adamw,
    "w8a16_gemv": _gemv,
    "fp8_quant_row": _fp8_quant,
    "expert_histogram": _hist,
}


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": TARGET, "num_warps": num_warps, "num_stages": num_stages, **kw}


def _mm(BM, BN, BK, G=8):
    return {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": G}


VARIANTS = [
    # --- matmul-type ---------------------------------------------------------------------------
    # MLP up-projection of a 4096-token batch, Llama-2-7B sizes, bias + tanh-GELU epilogue
    _v("h8_linear_gelu_fp16_128x256x64_s3_w8", "linear_act", 8, 3, M=4096, N=11008, K=4096, dtype="float16",
       HAS_BIAS=True, ACT="gelu_tanh", **_mm(128, 256, 64)),
    # down-projection (K = 14336) of 520 tokens with the residual added in the epilogue
    _v("h8_linear_res_bf16_64x128x128_s4_w4", "linear_act", 4, 4, M=520, N=4096, K=14336, dtype="bfloat16",
       HAS_RES=True, **_mm(64, 128, 128, G=4)),
    # fp8 row-wise scaled GEMM, persistent over 132 SMs, TMA in and out
    _v("h8_fp8_rowwise_persist_128x128x128_s4_w8", "fp8_rowwise_gemm", 8, 4, M=4096, N=14336, K=4096,
       **_mm(128, 128, 128)),
    # causal GQA prefill attention, 2 x 4096 tokens, 32 query / 8 KV heads, d 128
    _v("h8_flash_causal_gqa_bf16_d128_128x64_s3_w8", "flash_fwd_gqa", 8, 3, B=2, S=4096, H_Q=32, H_KV=8,
       HEAD_DIM=128, dtype="bfloat16", BLOCK_M=128, BLOCK_N=64),
    # fused MoE up/gate GEMM: 1024 tokens x top-4 of 64 experts, N = 2 x 1408, K = 2048
    _v("h8_fused_moe_fp16_64x128x64_s4_w4", "fused_moe", 4, 4, T=1024, TOPK=4, E=64, N=2816, K=2048,
       **_mm(64, 128, 64)),
    # LoRA (rank 16) q-projection style linear, 4096 tokens, 4096 x 4096
    _v("h8_lora_linear_fp16_r16_128x64x64_s5_w4", "lora_linear", 4, 5, M=4096, N=4096, K=4096, RANK=16,
       LORA_SCALE=2.0, **_mm(128, 64, 64)),
    # ResNet-50 stage-2 3x3 conv (batch 64, 28x28, 128 -> 128) + bias + ReLU
    _v("h8_conv3x3_nhwc_fp16_128x128x64_s3_w4", "conv3x3_nhwc", 4, 3, NB=64, H=28, W=28, C=128, KOUT=128,
       BLOCK_M=128, BLOCK_N=128, BLOCK_K=64),
    # decode step over a paged cache: 64 sequences of up to 2048 tokens, 32 q / 8 kv heads, d 128
    _v("h8_paged_decode_gqa_bf16_16x64_s2_w4", "paged_decode_gqa", 4, 2, B=64, H_Q=32, H_KV=8, HEAD_DIM=128,
       PAGE=16, L_MAX=2048, dtype="bfloat16", BLOCK_H=16, BLOCK_N=64),
    # --- memory-bound / reductions --------------------------------------------------------------
    _v("h8_add_rmsnorm_bf16_8192x4096_w8", "fused_add_rmsnorm", 8, 1, T=8192, H=4096, dtype="bfloat16", EPS=1e-6),
    _v("h8_add_rmsnorm_fp16_1024x5120_w4", "fused_add_rmsnorm", 4, 1, T=1024, H=5120, dtype="float16", EPS=1e-5),
    _v("h8_xent_bf16_4096x32000_b2048_w4", "cross_entropy", 4, 1, BT=4096, V=32000, dtype="bfloat16", BLOCK=2048,
       WRITE_GRAD=False),
    _v("h8_xent_grad_bf16_4096x128256_b8192_w8", "cross_entropy", 8, 2, BT=4096, V=128256, dtype="bfloat16",
       BLOCK=8192, WRITE_GRAD=True),
    _v("h8_groupnorm_silu_nhwc_fp16_16x4096x320_w4", "group_norm_silu", 4, 1, N=16, HW=4096, C=320, G=32,
       EPS=1e-5, BLOCK_HW=256),
    _v("h8_rope_neox_bf16_16384tok_w4", "rope_neox", 4, 1, T=16384, H_Q=32, H_KV=8, HEAD_DIM=128, MAX_POS=8192,
       dtype="bfloat16"),
    _v("h8_embedding_bf16_8192x5120_v152064_w4", "embedding", 4, 1, T=8192, V=152064, H=5120, dtype="bfloat16",
       BLOCK_H=2048),
    _v("h8_cumsum_fp16_4096x8000_b2048_w2", "row_cumsum", 2, 1, ROWS=4096, L=8000, dtype="float16", BLOCK=2048),
    _v("h8_adamw_fp32_60M_b1024_w4", "adamw", 4, 1, N=60_000_000, STEP=10, LR=1e-3, BETA1=0.9, BETA2=0.999,
       EPS=1e-8, WD=0.01, BLOCK=1024),
    _v("h8_w8a16_gemv_28672x4096_16x512_w4", "w8a16_gemv", 4, 3, N=28672, K=4096, BLOCK_N=16, BLOCK_K=512),
    _v("h8_fp8_quant_row_bf16_8192x7168_w8", "fp8_quant_row", 8, 1, T=8192, H=7168, dtype="bfloat16"),
    # DeepSeek-V3-like routing: 64000 tokens x top-8 of 256 experts
    _v("h8_expert_hist_512000_e256_b1024_w1", "expert_histogram", 1, 1, N=512000, E=256, BLOCK=1024),
]


def flops(variant: dict):
    """Useful floating-point operations of a matmul-type variant (2 per multiply-add); None otherwise."""
    v, k = variant, variant["kernel"]
    if k in ("linear_act", "fp8_rowwise_gemm"):
        return 2 * v["M"] * v["N"] * v["K"]
    if k == "lora_linear":
        return 2 * v["M"] * v["K"] * (v["N"] + v["RANK"]) + 2 * v["M"] * v["RANK"] * v["N"]
    if k == "fused_moe":
        return 2 * v["T"] * v["TOPK"] * v["N"] * v["K"]
    if k == "conv3x3_nhwc":
        return 2 * v["NB"] * v["H"] * v["W"] * v["KOUT"] * 9 * v["C"]
    if k == "flash_fwd_gqa":
        s = v["S"]
        return 4 * v["B"] * v["H_Q"] * v["HEAD_DIM"] * (s * (s + 1) // 2)
    return None
