"""Held-out set 9: Triton kernels of the kinds used in LLM / vision training and inference.

Written for a timing validation on the NVIDIA H200 (sm_90) without reading the simulator being
validated (protosim/), its docs, results, tests or benchmarks, nor any earlier held-out set
(kernels/triton/heldout*.py, gemm_parts.py, alignment*.py).  Only kernels/triton/corpus.py (the
module interface) and kernels/triton/corpus_run.py (how inputs are made and outputs checked) were
read.  The kernels are my own, in the forms of Triton's tutorials, Liger-Kernel, vLLM, unsloth,
FlashAttention-Triton and inductor-like generated code.

The module has the shape ``python -m kernels.triton.corpus --kernels kernels.triton.heldout9``
accepts: ``KERNELS`` (name -> @triton.jit function), ``BUILDERS`` (name -> builder returning
(tensors, args, constexprs, grid, reference)), ``VARIANTS`` (``_v(...)`` dicts, target sm90 only)
and ``flops(variant)`` (useful FLOPs, 2 per multiply-add, for the matmul-type variants; None for
the others).

Matmul-type variants (tl.dot)
  h9_bmm_qkT_fp16_d128        bmm: batched Q @ K^T with K read through strides (B stored N x K),
                              32 heads x 1024 x 1024 x 128, fp16, 128x128x64 tiles, w8 s3
  h9_bmm_pv_bf16_vit577       bmm: batched P @ V for ViT-L/14-336 (577 tokens), 256 heads,
                              577 x 64 x 577, bf16, every dim masked, 64x64x32 tiles, w4 s4
  h9_splitk_fp16_m48_k14336   split-K GEMM, fp32 atomic_add into a zero-filled C; 48 x 4096 x 14336
                              (Mistral down-proj at decode batch 48; M masked), SPLIT_K 8, w4 s4
  h9_int8_gemm_dequant_4096   int8 x int8 -> int32 GEMM (B stored N x K) with per-row x per-column
                              fp32 scale epilogue to fp16, 4096^3, 128x128x128, w8 s3
  h9_w4a16_gemm_m200          int4 weight-only GEMM: packed nibbles (two K rows per byte, value - 8)
                              with per-128-group fp16 scales; 200 x 14336 x 4096, M masked, w4 s3
  h9_gemm_swiglu_bf16         GEMM with fused SwiGLU epilogue silu(X Wg) * (X Wu), two accumulators,
                              2048 x 11008 x 4096 (LLaMA-7B MLP), bf16, 128x128x64, w8 s3
  h9_flash_fwd_vit197_d64     FlashAttention forward, non-causal, [B, S, H, D] strided layout,
                              ViT-B/16 (197 tokens, 12 heads, d 64), batch 64, query/key masks, w4 s3
  h9_attn_bwd_dkdv_bf16_d64   FlashAttention-2 backward dK/dV kernel (given LSE and Delta), non-causal,
                              64 heads x 1024 x d 64, bf16, BLOCK_N 128 keys x BLOCK_M 32 queries, w8 s2

Memory-bound / reduction variants
  h9_layernorm_bwd_dx_bf16    LayerNorm backward dx, mean/rstd recomputed per row, 16384 x 4096, w8
  h9_softmax_bwd_fp16_1024    softmax backward dx = y (dy - sum(y dy)), 4 rows per program, 65536 x 1024
  h9_logsoftmax_bf16_v32000   log-softmax over a 32000 vocabulary, online max/sum loop then a write
                              pass, 4096 rows, BLOCK 4096 (last chunk masked), w8
  h9_welford_fp16_5120        per-row mean and variance by chunked Welford/Chan combination,
                              8192 x 5120, BLOCK 2048 (last chunk masked), w8
  h9_colsum_atomic_fp16       column sum (bias gradient) over 16000 rows x 4096, row slabs, fp32
                              atomic_add into a zero-filled vector, w4
  h9_argmax_fp32_v128256      greedy-sampling argmax over LLaMA-3 vocabulary (128256), 256 rows,
                              per-lane running max/index, first index on ties, int32 out, w8
  h9_causal_conv1d_bf16       Mamba depthwise causal conv1d (width 4) + bias + SiLU, [8, 5120, 2000]
                              (L masked), w4
  h9_kv_cache_append_fp16     vLLM-style reshape_and_cache: K and V [16384, 8, 128] scattered into
                              [1024, 16, 8, 128] paged caches by a slot permutation, w4
  h9_rope_gptj_bf16_qwen      GPT-J (interleaved) rotary embedding via reshape/split/join, Qwen2-7B
                              28 heads x 128 (heads masked to 32), 8192 tokens, w4
  h9_int8_quant_tok_bf16      dynamic per-token symmetric int8 quantization (vLLM), 16384 x 3584
                              (BLOCK 4096 masked), writes q and per-token scale, w8
  h9_swiglu_bwd_inplace_bf16  Liger-style SwiGLU backward writing da into A and db into B in place,
                              4096 x 11008 (column blocks of 2048 masked), w4
  h9_meanpool_len_fp16        mean pooling over the sequence up to a per-row length (data-dependent
                              trip count), [64, 1024, 1024] -> fp32 [64, 1024], w4

Inputs are as corpus_run makes them: every input is randn cast to its dtype (integer tensors hold
small values around zero), outputs are NaN-filled (integer outputs zero-filled), and the few
accumulating outputs (split-K C, column sum) use init "zeros".  Where a kernel takes an index
or length from an integer tensor it first mixes it with its position and reduces it modulo the
range with a non-negative remainder; the references repeat that with torch.remainder on int64.
The KV-cache slot of token i is (s0 + 7919 i) mod T with s0 the slot tensor's first element, a
permutation of the T cache slots (7919 is prime, T a power of two), so every cache slot is written.
Inputs that a real model would compute (LSE / Delta of attention backward, softmax probabilities
y, cos/sin tables, the int8 scales) are random here; the references use the same random values,
so the kernels are checked as written.  Each variant's reference is one torch expression
(op "torch") over the tensors as they were before the launch (SwiGLU backward is in place: its A
is checked against the expression over the original A, B, dC).  Only one output per variant is
checked: attention backward writes dK and dV (dK is checked), the KV-cache append writes both caches
(the K cache is checked), int8 quantization writes q and scale (q is checked).

How it was checked: every variant was run in Triton 3.6's CPU interpreter (TRITON_INTERPRET=1,
torch 2.13 CPU tensors), building the call with corpus.call_spec and corpus_run's build_call (its
make_tensors, seed 1) and checking with corpus_run's check() and tolerance (max |out - ref| /
max |ref| below 1e-2, 3e-2 with a bf16 tensor), at reduced shapes with the same block sizes,
warps, stages and constexprs (masked dimensions kept as non-multiples of their blocks).  Reduced
shape and max relative error, all "correct":

  bmm_qkT        batch 2, 256 x 256 x 128                 2.9e-4
  bmm_pv         batch 2, 577 x 64 x 577, fp16 stand-in   3.0e-4
  splitk         48 x 256 x 14336                          4.1e-7
  int8_gemm      256 x 256 x 512                           3.6e-4
  w4a16          200 x 256 x 512                           2.0e-4
  gemm_swiglu    256 x 256 x 256, fp16 stand-in            3.9e-4
  flash_fwd      batch 2, 2 heads, 197 tokens              3.7e-4
  attn_bwd_dkdv  2 heads x 256, fp16 stand-in              4.4e-4
  layernorm_bwd  8 rows (bf16)                             3.4e-3
  softmax_bwd    10 rows (last program half masked)        3.0e-4
  logsoftmax     4 rows (bf16)                             4.1e-3
  welford        8 rows                                    1.2e-7
  colsum         2000 x 384, 8 slabs                       1.1e-7
  argmax         4 rows x 128256                           0 (same indices)
  causal_conv1d  batch 1, 64 channels, L 2000 (bf16)       4.0e-3
  kv_cache       256 tokens                                0
  rope_gptj      16 tokens (bf16)                          5.0e-3
  int8_quant     8 rows (bf16)                             7.9e-3 (= 1/127: a value near .5 rounded the
                                                           other way; kernel: half away from zero)
  swiglu_bwd     4 rows (bf16, in place)                   3.6e-3
  meanpool       batch 8, 1024 x 256                       4.5e-9

The interpreter's bf16 tl.dot is not usable: run in bf16 there, bmm_pv, gemm_swiglu and
attn_bwd_dkdv gave errors of 7e9, 4e19 and 1e7 (all elements wrong), so those three were checked
with fp16 tensors as stand-ins; their bf16 form was only compiled, not run.  The bf16
memory-bound kernels ran in bf16.  Nothing here was run on a GPU.  The argmax check is weak by
construction (an index error is measured against the largest index).  Every variant was then
compiled for sm90 with ``python -m kernels.triton.corpus --kernels kernels.triton.heldout9 --out
tests/fixtures/triton/heldout9``: 20 of 20 compiled, n_spills 0 for all (gemm_swiglu uses 255
registers per thread); the eight matmul-type variants compiled to warp_group_dot (wgmma) with
async-copy pipelining.  ``python -m kernels.triton.corpus_run --dry-run --corpus
tests/fixtures/triton/heldout9`` (CPU) rebuilt all 20 calls consistently with the saved compiles and
evaluated every reference at full shape with the output's shape.
"""

from __future__ import annotations

import triton
import triton.language as tl

# ---------------------------------------------------------------------------------------
# Matmul-type kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
               stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
               stride_cb, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C[b] = A[b] @ B[b] with arbitrary strides; program (tile, batch), grouped tile order."""
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_pid_n
    group_id = pid // width
    first_m = group_id * GROUP_M
    gsize = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % gsize
    pid_n = (pid % width) // gsize
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + bid * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + bid * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_rem = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < k_rem), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_rem) & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + bid * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def splitk_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    """C (fp32, zero-filled) += A @ B, A M x K, B K x N row-major; program (tile, k-split) takes
    K tiles pid_k, pid_k + SPLIT_K, ... and adds its partial tile with atomic_add."""
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * K + (pid_k * BLOCK_K + offs_k)[None, :]
    b_ptrs = b_ptr + (pid_k * BLOCK_K + offs_k)[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_rem = K - (k * SPLIT_K + pid_k) * BLOCK_K
        a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < k_rem), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_rem) & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * SPLIT_K
        b_ptrs += BLOCK_K * SPLIT_K * N
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.atomic_add(c_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :], sem="relaxed")


@triton.jit
def int8_gemm_dequant_kernel(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    """C = (A @ B^T) * sa[:, None] * sb[None, :]: A int8 M x K, B int8 stored N x K, int32
    accumulation, per-token (sa) and per-channel (sb) fp32 scales, fp16 out (W8A8 linear)."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_pid_n
    group_id = pid // width
    first_m = group_id * GROUP_M
    gsize = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % gsize
    pid_n = (pid % width) // gsize
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_n[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    sa = tl.load(sa_ptr + offs_m)
    sb = tl.load(sb_ptr + offs_n)
    c = acc.to(tl.float32) * sa[:, None] * sb[None, :]
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def w4a16_gemm_kernel(a_ptr, w_ptr, s_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_SIZE: tl.constexpr):
    """C = A @ dequant(W): A fp16 M x K; W int8 (K/2) x N, byte r holds K row 2r in its low
    nibble and K row 2r+1 in its high nibble, each an unsigned 4-bit value minus 8; S fp16
    (K/GROUP_SIZE) x N group scales.  The even and odd K columns of A meet the low and high
    nibbles in two dots per K tile."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_kh = tl.arange(0, BLOCK_K // 2)
    mask_m = offs_m < M
    a_even = a_ptr + offs_m[:, None] * K + (2 * offs_kh)[None, :]
    w_ptrs = w_ptr + offs_kh[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ae = tl.load(a_even + k0, mask=mask_m[:, None], other=0.0)
        ao = tl.load(a_even + k0 + 1, mask=mask_m[:, None], other=0.0)
        w = tl.load(w_ptrs + (k0 // 2) * N)
        lo = (w & 0xF) - 8
        hi = ((w >> 4) & 0xF) - 8
        s = tl.load(s_ptr + (k0 // GROUP_SIZE) * N + offs_n)
        b_lo = lo.to(tl.float16) * s[None, :]
        b_hi = hi.to(tl.float16) * s[None, :]
        acc = tl.dot(ae, b_lo, acc)
        acc = tl.dot(ao, b_hi, acc)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None])


@triton.jit
def gemm_swiglu_kernel(x_ptr, wg_ptr, wu_ptr, o_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """O = silu(X @ Wg) * (X @ Wu): X M x K, Wg and Wu K x N row-major, two fp32 accumulators
    sharing the X tile, SwiGLU in the epilogue."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_pid_n
    group_id = pid // width
    first_m = group_id * GROUP_M
    gsize = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % gsize
    pid_n = (pid % width) // gsize
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * K + offs_k[None, :]
    g_ptrs = wg_ptr + offs_k[:, None] * N + offs_n[None, :]
    u_ptrs = wu_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        x = tl.load(x_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        wg = tl.load(g_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        wu = tl.load(u_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc_g = tl.dot(x, wg, acc_g)
        acc_u = tl.dot(x, wu, acc_u)
        x_ptrs += BLOCK_K
        g_ptrs += BLOCK_K * N
        u_ptrs += BLOCK_K * N
    h = acc_g * tl.sigmoid(acc_g) * acc_u
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], h.to(o_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def flash_fwd_bshd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, SEQ, H, sm_scale_x1e6,
                          HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Non-causal attention forward over Q, K, V, O laid out [B, S, H, D] (row stride H*D);
    program (query block, b*H + h); online softmax in base 2; queries and keys beyond SEQ
    masked.  sm_scale arrives as an integer in millionths (the corpus passes ints only)."""
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    row = H * HEAD_DIM
    base = off_b.to(tl.int64) * SEQ * row + off_h * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * row + offs_d[None, :], mask=(offs_m < SEQ)[:, None], other=0.0)
    qk_scale = sm_scale_x1e6 * 1e-6 * 1.4426950408889634
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, SEQ, BLOCK_N):
        cols = start_n + offs_n
        kmask = cols < SEQ
        kt = tl.load(k_ptr + base + cols[None, :] * row + offs_d[:, None], mask=kmask[None, :], other=0.0)
        qk = tl.dot(q, kt) * qk_scale
        qk = tl.where(kmask[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + cols[:, None] * row + offs_d[None, :], mask=kmask[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * row + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=(offs_m < SEQ)[:, None])


@triton.jit
def attn_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, SEQ, sm_scale_x1e6,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """FlashAttention-2 backward, the dK/dV kernel (non-causal): Q, K, V, dO, dK, dV are
    [BH, S, D]; LSE (natural log) and Delta = rowsum(dO * O) are [BH, S] fp32.  Program
    (key block, bh) holds its K, V tile and walks all query blocks:
    P^T = exp(scale K Q^T - lse), dV += P^T dO, dS^T = P^T (V dO^T - delta), dK += dS^T Q."""
    start_n = tl.program_id(0)
    off_bh = tl.program_id(1).to(tl.int64)
    base = off_bh * SEQ * HEAD_DIM
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    sm_scale = sm_scale_x1e6 * 1e-6
    LOG2E: tl.constexpr = 1.4426950408889634
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    qT_ptrs = q_ptr + base + offs_m[None, :] * HEAD_DIM + offs_d[:, None]
    do_ptrs = do_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    for start_m in range(0, SEQ, BLOCK_M):
        qT = tl.load(qT_ptrs)
        lse = tl.load(lse_ptr + off_bh * SEQ + start_m + offs_m)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT * (sm_scale * LOG2E) - lse[None, :] * LOG2E)
        do = tl.load(do_ptrs)
        dv = tl.dot(pT.to(do.dtype), do, dv)
        delta = tl.load(delta_ptr + off_bh * SEQ + start_m + offs_m)
        dpT = tl.dot(v, tl.trans(do))
        dsT = pT * (dpT - delta[None, :])
        dk = tl.dot(dsT.to(qT.dtype), tl.trans(qT), dk)
        qT_ptrs += BLOCK_M * HEAD_DIM
        do_ptrs += BLOCK_M * HEAD_DIM
    dk = dk * sm_scale
    tl.store(dk_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dk.to(dk_ptr.dtype.element_ty))
    tl.store(dv_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dv.to(dv_ptr.dtype.element_ty))


# ---------------------------------------------------------------------------------------
# Memory-bound / reduction kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def layernorm_bwd_dx_kernel(x_ptr, dy_ptr, w_ptr, dx_ptr, N, BLOCK_N: tl.constexpr):
    """LayerNorm backward, dx only, one row per program; mean and rstd recomputed (eps 1e-5):
    dx = rstd * (w dy - xhat * mean(w dy xhat) - mean(w dy))."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + 1e-5)
    xhat = xc * rstd
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * N + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_kernel(y_ptr, dy_ptr, dx_ptr, R, N, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    """Softmax backward dx = y * (dy - sum(y * dy)), ROWS rows per program as a 2-D tile."""
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows < R)[:, None] & (cols < N)[None, :]
    offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=1)
    dx = y * (dy - dot[:, None])
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def logsoftmax_loop_kernel(x_ptr, o_ptr, V, BLOCK: tl.constexpr):
    """log_softmax over a long row (vocabulary): pass 1 keeps a running max and rescaled sum
    per row in chunks of BLOCK, pass 2 writes x - max - log(sum)."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * V
    o_row = o_ptr + row * V
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    s = 0.0
    for start in range(0, V, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    for start in range(0, V, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < V, other=0.0).to(tl.float32)
        tl.store(o_row + cols, (x - lse).to(o_ptr.dtype.element_ty), mask=cols < V)


@triton.jit
def welford_rows_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """Per-row mean and (biased) variance of a row longer than one block: each chunk's count,
    mean and M2 are combined into the running ones (Chan et al.); out[row] = (mean, var)."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mean = 0.0
    m2 = 0.0
    cnt = 0.0
    for start in range(0, N, BLOCK):
        cols = start + offs
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        n_b = tl.sum(mask.to(tl.float32), axis=0)
        mean_b = tl.sum(x, axis=0) / n_b
        d = tl.where(mask, x - mean_b, 0.0)
        m2_b = tl.sum(d * d, axis=0)
        delta = mean_b - mean
        tot = cnt + n_b
        mean = mean + delta * (n_b / tot)
        m2 = m2 + m2_b + delta * delta * (cnt * n_b / tot)
        cnt = tot
    tl.store(out_ptr + row * 2, mean)
    tl.store(out_ptr + row * 2 + 1, m2 / cnt)


@triton.jit
def colsum_atomic_kernel(x_ptr, out_ptr, T, N, ROWS_PER_PROG, BLOCK_T: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[n] += sum_t x[t, n] (a bias gradient): program (column block, row slab) sums its
    slab in BLOCK_T x BLOCK_N tiles and adds the partial column sums atomically (fp32)."""
    pid_n = tl.program_id(0)
    pid_t = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    t0 = pid_t * ROWS_PER_PROG
    t_end = tl.minimum(t0 + ROWS_PER_PROG, T)
    acc = tl.zeros((BLOCK_T, BLOCK_N), dtype=tl.float32)
    for t in range(t0, t_end, BLOCK_T):
        rows = t + tl.arange(0, BLOCK_T)
        mask = (rows < t_end)[:, None] & cmask[None, :]
        x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :], mask=mask, other=0.0)
        acc += x.to(tl.float32)
    tl.atomic_add(out_ptr + cols, tl.sum(acc, axis=0), mask=cmask)


@triton.jit
def argmax_rows_kernel(x_ptr, out_ptr, V, BLOCK: tl.constexpr):
    """out[row] = argmax(x[row]) over a vocabulary-long row (first index on ties): each lane
    keeps its running max and the index where it was first seen; lanes are reduced at the end."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_i = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, V, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * V + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        upd = x > best
        best = tl.where(upd, x, best)
        best_i = tl.where(upd, cols, best_i)
    m = tl.max(best, axis=0)
    idx = tl.min(tl.where(best == m, best_i, 2147483647), axis=0)
    tl.store(out_ptr + row, idx)


@triton.jit
def causal_conv1d_kernel(x_ptr, w_ptr, b_ptr, o_ptr, D, L,
                         WIDTH: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_L: tl.constexpr):
    """Mamba's depthwise causal conv1d + bias + SiLU: x, o [B, D, L], w [D, WIDTH], b [D];
    o[b, d, t] = silu(b[d] + sum_j w[d, j] x[b, d, t - WIDTH + 1 + j])."""
    pid_l = tl.program_id(0)
    pid_d = tl.program_id(1)
    bidx = tl.program_id(2).to(tl.int64)
    ds = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    ts = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    dmask = ds < D
    base = bidx * D * L
    acc = tl.zeros((BLOCK_D, BLOCK_L), dtype=tl.float32)
    acc += tl.load(b_ptr + ds, mask=dmask, other=0.0).to(tl.float32)[:, None]
    for j in tl.static_range(WIDTH):
        src = ts - (WIDTH - 1) + j
        wj = tl.load(w_ptr + ds * WIDTH + j, mask=dmask, other=0.0).to(tl.float32)
        m = dmask[:, None] & ((src >= 0) & (src < L))[None, :]
        x = tl.load(x_ptr + base + ds[:, None] * L + src[None, :], mask=m, other=0.0).to(tl.float32)
        acc += wj[:, None] * x
    out = acc * tl.sigmoid(acc)
    tl.store(o_ptr + base + ds[:, None] * L + ts[None, :], out.to(o_ptr.dtype.element_ty),
             mask=dmask[:, None] & (ts < L)[None, :])


@triton.jit
def kv_cache_append_kernel(k_ptr, v_ptr, kc_ptr, vc_ptr, slot_ptr, T,
                           BLOCK_SIZE: tl.constexpr, HD: tl.constexpr):
    """vLLM reshape_and_cache: token i's K and V rows (H*D contiguous) go to cache slot
    s = (s0 + 7919 i) mod T (s0 = slot[0]), i.e. block s // BLOCK_SIZE, offset s % BLOCK_SIZE of
    caches [T / BLOCK_SIZE, BLOCK_SIZE, H, D]."""
    tok = tl.program_id(0).to(tl.int64)
    s0 = tl.load(slot_ptr).to(tl.int64)
    slot = ((s0 + 7919 * tok) % T + T) % T
    blk = slot // BLOCK_SIZE
    off = slot % BLOCK_SIZE
    dst = (blk * BLOCK_SIZE + off) * HD
    offs = tl.arange(0, HD)
    k = tl.load(k_ptr + tok * HD + offs)
    v = tl.load(v_ptr + tok * HD + offs)
    tl.store(kc_ptr + dst + offs, k)
    tl.store(vc_ptr + dst + offs, v)


@triton.jit
def rope_gptj_kernel(x_ptr, cos_ptr, sin_ptr, o_ptr, H,
                     BLOCK_H: tl.constexpr, HEAD_DIM: tl.constexpr):
    """GPT-J (interleaved) rotary embedding for one token's heads: pairs (2i, 2i+1) rotate by
    angle i: o[2i] = x[2i] cos_i - x[2i+1] sin_i, o[2i+1] = x[2i+1] cos_i + x[2i] sin_i.
    x, o [T, H, D]; cos, sin [T, D/2] fp32.  The pairs are split with reshape/split and joined back."""
    tok = tl.program_id(0).to(tl.int64)
    hs = tl.arange(0, BLOCK_H)
    ds = tl.arange(0, HEAD_DIM)
    half = tl.arange(0, HEAD_DIM // 2)
    mask = (hs < H)[:, None]
    offs = tok * H * HEAD_DIM + hs[:, None] * HEAD_DIM + ds[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    xe, xo = tl.split(tl.reshape(x, (BLOCK_H, HEAD_DIM // 2, 2)))
    c = tl.load(cos_ptr + tok * (HEAD_DIM // 2) + half)[None, :]
    s = tl.load(sin_ptr + tok * (HEAD_DIM // 2) + half)[None, :]
    oe = xe * c - xo * s
    oo = xo * c + xe * s
    o = tl.reshape(tl.join(oe, oo), (BLOCK_H, HEAD_DIM))
    tl.store(o_ptr + offs, o.to(o_ptr.dtype.element_ty), mask=mask)


@triton.jit
def int8_quant_per_token_kernel(x_ptr, q_ptr, scale_ptr, N, BLOCK: tl.constexpr):
    """Dynamic per-token symmetric int8 quantization: scale = max|x| / 127,
    q = clamp(round(x / scale), -127, 127) (round half away from zero)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10)
    scale = amax / 127.0
    y = x * (127.0 / amax)
    r = tl.where(y >= 0, tl.floor(y + 0.5), tl.ceil(y - 0.5))
    r = tl.minimum(tl.maximum(r, -127.0), 127.0)
    tl.store(q_ptr + row * N + cols, r.to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, scale)


@triton.jit
def swiglu_bwd_inplace_kernel(dc_ptr, a_ptr, b_ptr, N, BLOCK: tl.constexpr):
    """Backward of c = silu(a) * b, in place (Liger form): da overwrites a, db overwrites b.
    da = dc * b * sig(a) * (1 + a (1 - sig(a))), db = dc * silu(a).  Program (row, column block)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    offs = row * N + cols
    dc = tl.load(dc_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(a)
    silu = a * sig
    db = dc * silu
    da = dc * b * (sig * (1.0 + a * (1.0 - sig)))
    tl.store(a_ptr + offs, da.to(a_ptr.dtype.element_ty), mask=mask)
    tl.store(b_ptr + offs, db.to(b_ptr.dtype.element_ty), mask=mask)


@triton.jit
def meanpool_len_kernel(x_ptr, len_ptr, o_ptr, S, D, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """o[b, :] = mean(x[b, :n_b, :]) with n_b = ((len[b] + 7919 b) mod S) + 1 (non-negative
    remainder): the loop's trip count depends on the loaded length."""
    b = tl.program_id(0)
    pid_d = tl.program_id(1)
    ds = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    dmask = ds < D
    raw = tl.load(len_ptr + b).to(tl.int64)
    n = ((raw + 7919 * b) % S + S) % S + 1
    base = b.to(tl.int64) * S * D
    acc = tl.zeros((BLOCK_S, BLOCK_D), dtype=tl.float32)
    for s in range(0, n, BLOCK_S):
        rows = s + tl.arange(0, BLOCK_S)
        m = (rows < n)[:, None] & dmask[None, :]
        x = tl.load(x_ptr + base + rows[:, None] * D + ds[None, :], mask=m, other=0.0)
        acc += x.to(tl.float32)
    tot = tl.sum(acc, axis=0)
    tl.store(o_ptr + b * D + ds, tot / n.to(tl.float32), mask=dmask)


KERNELS = {
    "bmm": bmm_kernel,
    "splitk": splitk_kernel,
    "int8_gemm_dequant": int8_gemm_dequant_kernel,
    "w4a16_gemm": w4a16_gemm_kernel,
    "gemm_swiglu": gemm_swiglu_kernel,
    "flash_fwd_bshd": flash_fwd_bshd_kernel,
    "attn_bwd_dkdv": attn_bwd_dkdv_kernel,
    "layernorm_bwd_dx": layernorm_bwd_dx_kernel,
    "softmax_bwd": softmax_bwd_kernel,
    "logsoftmax_loop": logsoftmax_loop_kernel,
    "welford_rows": welford_rows_kernel,
    "colsum_atomic": colsum_atomic_kernel,
    "argmax_rows": argmax_rows_kernel,
    "causal_conv1d": causal_conv1d_kernel,
    "kv_cache_append": kv_cache_append_kernel,
    "rope_gptj": rope_gptj_kernel,
    "int8_quant_per_token": int8_quant_per_token_kernel,
    "swiglu_bwd_inplace": swiglu_bwd_inplace_kernel,
    "meanpool_len": meanpool_len_kernel,
}

# ---------------------------------------------------------------------------------------
# Builders: (tensors, args, constexprs, grid, reference) for a variant
# ---------------------------------------------------------------------------------------


def cdiv(a, b):
    return (a + b - 1) // b


def _t(shape, dtype="float16", init="randn"):
    return {"shape": list(shape), "dtype": dtype, "init": init}


def _ref(expr, out):
    return {"op": "torch", "expr": expr, "out": out}


def _bmm(v, cap):
    Bt, M, N, K, dt = v["BATCH"], v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"A": _t((Bt, M, K), dt)}
    if v["B_NxK"]:  # B stored [batch, N, K] (K of attention), read as K x N through strides
        tensors["B"] = _t((Bt, N, K), dt)
        sb = (N * K, 1, K)
        expr = "A @ B.transpose(1, 2)"
    else:
        tensors["B"] = _t((Bt, K, N), dt)
        sb = (K * N, N, 1)
        expr = "A @ B"
    tensors["C"] = _t((Bt, M, N), dt, "nan")
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K), ("stride_ab", M * K), ("stride_am", K), ("stride_ak", 1),
            ("stride_bb", sb[0]), ("stride_bk", sb[1]), ("stride_bn", sb[2]),
            ("stride_cb", M * N), ("stride_cm", N), ("stride_cn", 1)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [cdiv(M, v["BLOCK_M"]) * cdiv(N, v["BLOCK_N"]), Bt, 1]
    return tensors, args, ce, grid, _ref(expr, "C")


def _splitk(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"A": _t((M, K)), "B": _t((K, N)), "C": _t((M, N), "float32", "zeros")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K")}
    grid = [cdiv(M, v["BLOCK_M"]) * cdiv(N, v["BLOCK_N"]), v["SPLIT_K"], 1]
    return tensors, args, ce, grid, _ref("C + A @ B", "C")


def _int8(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    tensors = {"A": _t((M, K), "int8"), "B": _t((N, K), "int8"), "SA": _t((M,), "float32"),
               "SB": _t((N,), "float32"), "C": _t((M, N), "float16", "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("sa_ptr", {"tensor": "SA"}),
            ("sb_ptr", {"tensor": "SB"}), ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [cdiv(M, v["BLOCK_M"]) * cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref("(A @ B.t()) * SA[:, None] * SB[None, :]", "C")


def _w4a16(v, cap):
    M, N, K, G = v["M"], v["N"], v["K"], v["GROUP_SIZE"]
    tensors = {"A": _t((M, K)), "W": _t((K // 2, N), "int8"), "S": _t((K // G, N)), "C": _t((M, N), "float16", "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("w_ptr", {"tensor": "W"}), ("s_ptr", {"tensor": "S"}),
            ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE")}
    grid = [cdiv(N, v["BLOCK_N"]), cdiv(M, v["BLOCK_M"]), 1]
    expr = (f"A @ ((torch.stack([W.long() & 15, (W.long() >> 4) & 15], 1).reshape({K}, {N}) - 8).float()"
            f" * S.repeat_interleave({G}, 0))")
    return tensors, args, ce, grid, _ref(expr, "C")


def _gemm_swiglu(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    tensors = {"X": _t((M, K), dt), "WG": _t((K, N), dt), "WU": _t((K, N), dt), "O": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("wg_ptr", {"tensor": "WG"}), ("wu_ptr", {"tensor": "WU"}),
            ("o_ptr", {"tensor": "O"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [cdiv(M, v["BLOCK_M"]) * cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, _ref("torch.nn.functional.silu(X @ WG) * (X @ WU)", "O")


def _flash_fwd(v, cap):
    B, S, H, D, dt = v["BATCH"], v["SEQ"], v["HEADS"], v["HEAD_DIM"], v["dtype"]
    scale = round(1e6 / D ** 0.5)
    tensors = {n: _t((B, S, H, D), dt) for n in ("Q", "K", "V")}
    tensors["O"] = _t((B, S, H, D), dt, "nan")
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("o_ptr", {"tensor": "O"}), ("SEQ", S), ("H", H), ("sm_scale_x1e6", scale)]
    ce = {k: v[k] for k in ("HEAD_DIM", "BLOCK_M", "BLOCK_N")}
    grid = [cdiv(S, v["BLOCK_M"]), B * H, 1]
    expr = (f"(lambda t, q, k, v: t.softmax(q @ k.transpose(-1, -2) * {scale * 1e-6!r}, -1) @ v)"
            "(torch, Q.transpose(1, 2), K.transpose(1, 2), V.transpose(1, 2)).transpose(1, 2)")
    return tensors, args, ce, grid, _ref(expr, "O")


def _attn_bwd(v, cap):
    BH, S, D, dt = v["BH"], v["SEQ"], v["HEAD_DIM"], v["dtype"]
    scale = round(1e6 / D ** 0.5)
    tensors = {n: _t((BH, S, D), dt) for n in ("Q", "K", "V", "DO")}
    tensors["LSE"] = _t((BH, S), "float32")
    tensors["DELTA"] = _t((BH, S), "float32")
    tensors["DK"] = _t((BH, S, D), dt, "nan")
    tensors["DV"] = _t((BH, S, D), dt, "nan")
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}),
            ("do_ptr", {"tensor": "DO"}), ("lse_ptr", {"tensor": "LSE"}), ("delta_ptr", {"tensor": "DELTA"}),
            ("dk_ptr", {"tensor": "DK"}), ("dv_ptr", {"tensor": "DV"}), ("SEQ", S), ("sm_scale_x1e6", scale)]
    ce = {k: v[k] for k in ("HEAD_DIM", "BLOCK_M", "BLOCK_N")}
    grid = [S // v["BLOCK_N"], BH, 1]
    s = repr(scale * 1e-6)
    expr = (f"(lambda p, q, v, do, dl: ((p * (do @ v.transpose(-1, -2) - dl[..., None])).transpose(-1, -2) @ q) * {s})"
            f"(torch.exp(Q @ K.transpose(-1, -2) * {s} - LSE[..., None]), Q, V, DO, DELTA)")
    return tensors, args, ce, grid, _ref(expr, "DK")


def _layernorm_bwd(v, cap):
    M, N, dt = v["M"], v["N"], v["dtype"]
    tensors = {"X": _t((M, N), dt), "DY": _t((M, N), dt), "W": _t((N,), dt), "DX": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("dy_ptr", {"tensor": "DY"}), ("w_ptr", {"tensor": "W"}),
            ("dx_ptr", {"tensor": "DX"}), ("N", N)]
    expr = ("(lambda r, xh, g: (g - xh * (g * xh).mean(1, keepdim=True) - g.mean(1, keepdim=True)) * r)"
            "(torch.rsqrt(X.var(1, unbiased=False, keepdim=True) + 1e-5),"
            " (X - X.mean(1, keepdim=True)) * torch.rsqrt(X.var(1, unbiased=False, keepdim=True) + 1e-5),"
            " DY * W[None, :])")
    return tensors, args, {"BLOCK_N": v["BLOCK_N"]}, [M, 1, 1], _ref(expr, "DX")


def _softmax_bwd(v, cap):
    R, N, dt = v["R"], v["N"], v["dtype"]
    tensors = {"Y": _t((R, N), dt), "DY": _t((R, N), dt), "DX": _t((R, N), dt, "nan")}
    args = [("y_ptr", {"tensor": "Y"}), ("dy_ptr", {"tensor": "DY"}), ("dx_ptr", {"tensor": "DX"}), ("R", R), ("N", N)]
    ce = {"ROWS": v["ROWS"], "BLOCK_N": v["BLOCK_N"]}
    return tensors, args, ce, [cdiv(R, v["ROWS"]), 1, 1], _ref("Y * (DY - (Y * DY).sum(-1, keepdim=True))", "DX")


def _logsoftmax(v, cap):
    T, V, dt = v["T"], v["V"], v["dtype"]
    tensors = {"X": _t((T, V), dt), "O": _t((T, V), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("o_ptr", {"tensor": "O"}), ("V", V)]
    return tensors, args, {"BLOCK": v["BLOCK"]}, [T, 1, 1], _ref("torch.log_softmax(X, -1)", "O")


def _welford(v, cap):
    M, N, dt = v["M"], v["N"], v["dtype"]
    tensors = {"X": _t((M, N), dt), "OUT": _t((M, 2), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("out_ptr", {"tensor": "OUT"}), ("N", N)]
    return tensors, args, {"BLOCK": v["BLOCK"]}, [M, 1, 1], \
        _ref("torch.stack([X.mean(1), X.var(1, unbiased=False)], 1)", "OUT")


def _colsum(v, cap):
    T, N, dt, SPLIT = v["T"], v["N"], v["dtype"], v["SPLIT"]
    rows_per = cdiv(T, SPLIT)
    tensors = {"X": _t((T, N), dt), "OUT": _t((N,), "float32", "zeros")}
    args = [("x_ptr", {"tensor": "X"}), ("out_ptr", {"tensor": "OUT"}), ("T", T), ("N", N), ("ROWS_PER_PROG", rows_per)]
    ce = {"BLOCK_T": v["BLOCK_T"], "BLOCK_N": v["BLOCK_N"]}
    return tensors, args, ce, [cdiv(N, v["BLOCK_N"]), SPLIT, 1], _ref("OUT + X.sum(0)", "OUT")


def _argmax(v, cap):
    R, V, dt = v["R"], v["V"], v["dtype"]
    tensors = {"X": _t((R, V), dt), "OUT": _t((R,), "int32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("out_ptr", {"tensor": "OUT"}), ("V", V)]
    return tensors, args, {"BLOCK": v["BLOCK"]}, [R, 1, 1], _ref("X.argmax(1).float()", "OUT")


def _conv1d(v, cap):
    B, D, L, W, dt = v["BATCH"], v["D"], v["L"], v["WIDTH"], v["dtype"]
    tensors = {"X": _t((B, D, L), dt), "WC": _t((D, W), dt), "BC": _t((D,), dt), "O": _t((B, D, L), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "WC"}), ("b_ptr", {"tensor": "BC"}),
            ("o_ptr", {"tensor": "O"}), ("D", D), ("L", L)]
    ce = {"WIDTH": W, "BLOCK_D": v["BLOCK_D"], "BLOCK_L": v["BLOCK_L"]}
    grid = [cdiv(L, v["BLOCK_L"]), cdiv(D, v["BLOCK_D"]), B]
    expr = (f"torch.nn.functional.silu(torch.nn.functional.conv1d(X, WC[:, None, :], BC, padding={W - 1},"
            f" groups={D})[..., :{L}])")
    return tensors, args, ce, grid, _ref(expr, "O")


def _kv_cache(v, cap):
    T, H, D, BS, dt = v["T"], v["HEADS"], v["HEAD_DIM"], v["BLOCK_SIZE"], v["dtype"]
    NB = T // BS
    tensors = {"K": _t((T, H, D), dt), "V": _t((T, H, D), dt), "KC": _t((NB, BS, H, D), dt, "nan"),
               "VC": _t((NB, BS, H, D), dt, "nan"), "SLOT": _t((T,), "int32")}
    args = [("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}), ("kc_ptr", {"tensor": "KC"}),
            ("vc_ptr", {"tensor": "VC"}), ("slot_ptr", {"tensor": "SLOT"}), ("T", T)]
    ce = {"BLOCK_SIZE": BS, "HD": H * D}
    expr = (f"torch.zeros({T}, {H * D}, device=K.device).index_copy(0, torch.remainder(SLOT[0].long()"
            f" + 7919 * torch.arange({T}, device=K.device), {T}), K.reshape({T}, {H * D}))"
            f".reshape({NB}, {BS}, {H}, {D})")
    return tensors, args, ce, [T, 1, 1], _ref(expr, "KC")


def _rope(v, cap):
    T, H, D, dt = v["T"], v["HEADS"], v["HEAD_DIM"], v["dtype"]
    tensors = {"X": _t((T, H, D), dt), "COS": _t((T, D // 2), "float32"), "SIN": _t((T, D // 2), "float32"),
               "O": _t((T, H, D), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("cos_ptr", {"tensor": "COS"}), ("sin_ptr", {"tensor": "SIN"}),
            ("o_ptr", {"tensor": "O"}), ("H", H)]
    ce = {"BLOCK_H": v["BLOCK_H"], "HEAD_DIM": D}
    expr = ("(lambda t, xe, xo, c, s: t.stack([xe * c - xo * s, xo * c + xe * s], -1).flatten(-2))"
            "(torch, X[..., 0::2], X[..., 1::2], COS[:, None, :], SIN[:, None, :])")
    return tensors, args, ce, [T, 1, 1], _ref(expr, "O")


def _int8_quant(v, cap):
    T, N, dt = v["T"], v["N"], v["dtype"]
    tensors = {"X": _t((T, N), dt), "Q": _t((T, N), "int8", "nan"), "SCALE": _t((T,), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("q_ptr", {"tensor": "Q"}), ("scale_ptr", {"tensor": "SCALE"}), ("N", N)]
    return tensors, args, {"BLOCK": v["BLOCK"]}, [T, 1, 1], \
        _ref("torch.round(X * 127.0 / X.abs().amax(1, keepdim=True))", "Q")


def _swiglu_bwd(v, cap):
    T, N, dt = v["T"], v["N"], v["dtype"]
    tensors = {"DC": _t((T, N), dt), "A": _t((T, N), dt), "B": _t((T, N), dt)}
    args = [("dc_ptr", {"tensor": "DC"}), ("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("N", N)]
    return tensors, args, {"BLOCK": v["BLOCK"]}, [T, cdiv(N, v["BLOCK"]), 1], \
        _ref("DC * B * torch.sigmoid(A) * (1 + A * (1 - torch.sigmoid(A)))", "A")


def _meanpool(v, cap):
    B, S, D, dt = v["BATCH"], v["SEQ"], v["D"], v["dtype"]
    tensors = {"X": _t((B, S, D), dt), "LEN": _t((B,), "int32"), "O": _t((B, D), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("len_ptr", {"tensor": "LEN"}), ("o_ptr", {"tensor": "O"}), ("S", S), ("D", D)]
    ce = {"BLOCK_S": v["BLOCK_S"], "BLOCK_D": v["BLOCK_D"]}
    expr = (f"(lambda t, x, n: (x * (t.arange({S}, device=x.device)[None, :] < n[:, None]).float()[:, :, None]).sum(1)"
            f" / n[:, None].float())(torch, X, torch.remainder(LEN.long() + 7919 * torch.arange({B}, device=X.device), {S}) + 1)")
    return tensors, args, ce, [B, cdiv(D, v["BLOCK_D"]), 1], _ref(expr, "O")


BUILDERS = {
    "bmm": _bmm,
    "splitk": _splitk,
    "int8_gemm_dequant": _int8,
    "w4a16_gemm": _w4a16,
    "gemm_swiglu": _gemm_swiglu,
    "flash_fwd_bshd": _flash_fwd,
    "attn_bwd_dkdv": _attn_bwd,
    "layernorm_bwd_dx": _layernorm_bwd,
    "softmax_bwd": _softmax_bwd,
    "logsoftmax_loop": _logsoftmax,
    "welford_rows": _welford,
    "colsum_atomic": _colsum,
    "argmax_rows": _argmax,
    "causal_conv1d": _conv1d,
    "kv_cache_append": _kv_cache,
    "rope_gptj": _rope,
    "int8_quant_per_token": _int8_quant,
    "swiglu_bwd_inplace": _swiglu_bwd,
    "meanpool_len": _meanpool,
}

# ---------------------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------------------

SM90 = (90,)


def _v(name, kernel, targets, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": tuple(targets), "num_warps": num_warps, "num_stages": num_stages, **kw}


def _mm(BM, BN, BK, G=8):
    return {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": G}


VARIANTS = [
    # ---- matmul-type ----
    _v("h9_bmm_qkT_fp16_d128", "bmm", SM90, 8, 3, BATCH=32, M=1024, N=1024, K=128, B_NxK=True, dtype="float16",
       **_mm(128, 128, 64)),
    _v("h9_bmm_pv_bf16_vit577", "bmm", SM90, 4, 4, BATCH=256, M=577, N=64, K=577, B_NxK=False, dtype="bfloat16",
       **_mm(64, 64, 32)),
    _v("h9_splitk_fp16_m48_k14336", "splitk", SM90, 4, 4, M=48, N=4096, K=14336, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64,
       SPLIT_K=8),
    _v("h9_int8_gemm_dequant_4096", "int8_gemm_dequant", SM90, 8, 3, M=4096, N=4096, K=4096, **_mm(128, 128, 128)),
    _v("h9_w4a16_gemm_m200", "w4a16_gemm", SM90, 4, 3, M=200, N=14336, K=4096, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64,
       GROUP_SIZE=128),
    _v("h9_gemm_swiglu_bf16", "gemm_swiglu", SM90, 8, 3, M=2048, N=11008, K=4096, dtype="bfloat16", **_mm(128, 128, 64)),
    _v("h9_flash_fwd_vit197_d64", "flash_fwd_bshd", SM90, 4, 3, BATCH=64, SEQ=197, HEADS=12, HEAD_DIM=64, BLOCK_M=64,
       BLOCK_N=64, dtype="float16"),
    _v("h9_attn_bwd_dkdv_bf16_d64", "attn_bwd_dkdv", SM90, 8, 2, BH=64, SEQ=1024, HEAD_DIM=64, BLOCK_M=32, BLOCK_N=128,
       dtype="bfloat16"),
    # ---- memory-bound / reductions ----
    _v("h9_layernorm_bwd_dx_bf16", "layernorm_bwd_dx", SM90, 8, 1, M=16384, N=4096, BLOCK_N=4096, dtype="bfloat16"),
    _v("h9_softmax_bwd_fp16_1024", "softmax_bwd", SM90, 4, 1, R=65536, N=1024, ROWS=4, BLOCK_N=1024, dtype="float16"),
    _v("h9_logsoftmax_bf16_v32000", "logsoftmax_loop", SM90, 8, 2, T=4096, V=32000, BLOCK=4096, dtype="bfloat16"),
    _v("h9_welford_fp16_5120", "welford_rows", SM90, 8, 2, M=8192, N=5120, BLOCK=2048, dtype="float16"),
    _v("h9_colsum_atomic_fp16", "colsum_atomic", SM90, 4, 2, T=16000, N=4096, SPLIT=64, BLOCK_T=32, BLOCK_N=128,
       dtype="float16"),
    _v("h9_argmax_fp32_v128256", "argmax_rows", SM90, 8, 3, R=256, V=128256, BLOCK=4096, dtype="float32"),
    _v("h9_causal_conv1d_bf16", "causal_conv1d", SM90, 4, 1, BATCH=8, D=5120, L=2000, WIDTH=4, BLOCK_D=32,
       BLOCK_L=256, dtype="bfloat16"),
    _v("h9_kv_cache_append_fp16", "kv_cache_append", SM90, 4, 1, T=16384, HEADS=8, HEAD_DIM=128, BLOCK_SIZE=16,
       dtype="float16"),
    _v("h9_rope_gptj_bf16_qwen", "rope_gptj", SM90, 4, 1, T=8192, HEADS=28, HEAD_DIM=128, BLOCK_H=32, dtype="bfloat16"),
    _v("h9_int8_quant_tok_bf16", "int8_quant_per_token", SM90, 8, 1, T=16384, N=3584, BLOCK=4096, dtype="bfloat16"),
    _v("h9_swiglu_bwd_inplace_bf16", "swiglu_bwd_inplace", SM90, 4, 1, T=4096, N=11008, BLOCK=2048, dtype="bfloat16"),
    _v("h9_meanpool_len_fp16", "meanpool_len", SM90, 4, 2, BATCH=64, SEQ=1024, D=1024, BLOCK_S=32, BLOCK_D=128,
       dtype="float16"),
]


def flops(variant: dict):
    """Useful FLOPs (2 per multiply-add) of a matmul-type variant; None for the others."""
    k, v = variant["kernel"], variant
    if k == "bmm":
        return 2 * v["BATCH"] * v["M"] * v["N"] * v["K"]
    if k in ("splitk", "int8_gemm_dequant", "w4a16_gemm"):
        return 2 * v["M"] * v["N"] * v["K"]
    if k == "gemm_swiglu":
        return 4 * v["M"] * v["N"] * v["K"]
    if k == "flash_fwd_bshd":  # QK^T and PV
        return 4 * v["BATCH"] * v["HEADS"] * v["SEQ"] * v["SEQ"] * v["HEAD_DIM"]
    if k == "attn_bwd_dkdv":  # K Q^T, P^T dO, V dO^T, dS^T Q
        return 8 * v["BH"] * v["SEQ"] * v["SEQ"] * v["HEAD_DIM"]
    return None
