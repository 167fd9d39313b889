"""A corpus of Triton kernels cross-compiled on the CPU, saved for protosim's TTGIR reader.

    /work/tri-3.6.0/bin/python -m kernels.triton.corpus --out tests/fixtures/triton/corpus
    /work/tri-3.9.0/bin/python -m kernels.triton.corpus --out tests/fixtures/triton/corpus

The kernels below are our own, written in the form of Triton's tutorials (03 matmul,
06 fused attention, 09 persistent matmul): pointer matmul with grouped program
ordering, matmul through on-device and host-side TMA descriptors (B stored N x K,
``tl.dot(a, b.T)``), persistent matmul with and without a TMA-store epilogue, a matmul
with an ``if`` inside its K loop, fused attention forward, and warp-specialized loops.

For every (variant, target) the script compiles with ``triton.compile(ASTSource(...),
target=GPUTarget("cuda", cap, 32))`` and the specialization the JIT launcher would apply
to the call recorded in the index (pointers 16-byte aligned, integers that are multiples
of 16 get ``tt.divisibility = 16``, integers equal to 1 become constexprs), and writes
under ``<out>/triton-<version>/``:

    <name>.<target>.ttgir        kernel.asm["ttgir"], as Triton printed it
    <name>.<target>.json         the compiled kernel's metadata (JSON-able fields), with n_regs and
                                 n_spills read off its cubin (cuobjdump -res-usage: REG, STACK / 4),
                                 and ldg_in_flight off its SASS (the most global loads a thread has out)
    <name>.<target>.launch.json  the integer arguments that survive in the TTGIR, and ctas
    <name>.<target>.alloc.mlir   the TTGIR after Triton's own shared/tensor-memory
                                 allocation passes (and membar where the version exposes
                                 it), structured form (no scf-to-cf)

and merges one record per (version, variant, target) into ``<out>/index.json``; a
failed compile gets a record with ``compiled: false`` and the error's first line.
``--kernels MODULE`` takes the kernels from another module of the same shape (``KERNELS``,
``BUILDERS``, ``VARIANTS``): ``kernels.triton.heldout`` is the held-out set, written apart
from the reader; its records name the module (``source``) for ``corpus_run``.
Nothing here needs a GPU or torch.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import traceback
from pathlib import Path

import os

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # 3.9 warns when unset; 1 is the default it applies

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# ---------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------


@triton.jit
def _grouped_pid(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def mm_ptr_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ B, A M x K, B K x N, pointer loads, grouped program order (tutorial 03 form)."""
    pid = tl.program_id(0)
    pid_m, pid_n = _grouped_pid(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def mm_ptr_skip_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, SKIP_EVERY,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Like mm_ptr_kernel, but the K loop has an ``if``: K tile k contributes only when
    k % SKIP_EVERY != 0 (a runtime value, so the branch survives into TTGIR as scf.if).
    Reference: A with the columns of the skipped K tiles zeroed, times B."""
    pid = tl.program_id(0)
    pid_m, pid_n = _grouped_pid(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        if k % SKIP_EVERY != 0:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def mm_tma_dev_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    """C = A @ B^T with A M x K and B stored N x K, both read through descriptors made on
    the device (tl.make_tensor_descriptor; needs triton.set_allocator at launch)."""
    pid = tl.program_id(0)
    pid_m, pid_n = _grouped_pid(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, num_stages=STAGES, warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def mm_tma_host_kernel(a_desc, b_desc, c_desc, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr, STAGES: tl.constexpr):
    """C = A @ B^T through host-side descriptors (triton.tools.tensor_descriptor.
    TensorDescriptor): A M x K, B N x K, C M x N; the epilogue is a TMA store."""
    pid = tl.program_id(0)
    pid_m, pid_n = _grouped_pid(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, num_stages=STAGES):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def mm_persistent_kernel(a_desc, b_desc, c_desc, c_ptr, M, N, K,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, STAGES: tl.constexpr,
                         TMA_STORE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    """Persistent C = A @ B^T (tutorial 09 form): a grid of min(NUM_SMS, tiles) programs,
    each walking tiles start, start + NUM_SMS, ...  Host descriptors for A (M x K) and
    B (N x K); the epilogue is a TMA store through c_desc (TMA_STORE) or pointer stores
    through c_ptr."""
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, num_stages=STAGES, flatten=FLATTEN,
                            warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _grouped_pid(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        offs_am = pid_m * BLOCK_M
        offs_bn = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            acc = tl.dot(a, b.T, acc)
        if TMA_STORE:
            c_desc.store([offs_am, offs_bn], acc.to(c_desc.dtype))
        else:
            offs_cm = offs_am + tl.arange(0, BLOCK_M)
            offs_cn = offs_bn + tl.arange(0, BLOCK_N)
            tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc.to(c_ptr.dtype.element_ty),
                     mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N_CTX,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr):
    """Fused attention forward, non-causal (tutorial 06 form, simplified): Q, K, V, O are
    [Z*H, N_CTX, HEAD_DIM] contiguous; program (m, zh) computes BLOCK_M rows of one head
    with an online softmax over BLOCK_N-column blocks of K and V (pointer loads)."""
    start_m = tl.program_id(0)
    off_zh = tl.program_id(1)
    base = off_zh.to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    qk_scale = 1.44269504 / (HEAD_DIM ** 0.5)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in tl.range(0, N_CTX, BLOCK_N, num_stages=STAGES):
        kt = tl.load(k_ptr + base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, kt)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty))


@triton.jit
def attn_fwd_tma_kernel(q_ptr, k_ptr, v_ptr, o_ptr, Z_H, N_CTX,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    """The same attention through on-device descriptors over the [Z*H*N_CTX, HEAD_DIM]
    views (tutorial 06's descriptor form); K is loaded as a tile and transposed (k.T)."""
    start_m = tl.program_id(0)
    off_zh = tl.program_id(1)
    y_dim = Z_H * N_CTX
    q_desc = tl.make_tensor_descriptor(q_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(o_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_M, HEAD_DIM])
    row0 = off_zh * N_CTX
    q = q_desc.load([row0 + start_m * BLOCK_M, 0])
    qk_scale = 1.44269504 / (HEAD_DIM ** 0.5)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in tl.range(0, N_CTX, BLOCK_N, num_stages=STAGES, warp_specialize=WARP_SPECIALIZE):
        k = k_desc.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_desc.store([row0 + start_m * BLOCK_M, 0], acc.to(o_ptr.dtype.element_ty))


KERNELS = {
    "mm_ptr": mm_ptr_kernel,
    "mm_ptr_skip": mm_ptr_skip_kernel,
    "mm_tma_dev": mm_tma_dev_kernel,
    "mm_tma_host": mm_tma_host_kernel,
    "mm_persistent": mm_persistent_kernel,
    "attn_fwd": attn_fwd_kernel,
    "attn_fwd_tma": attn_fwd_tma_kernel,
}

# ---------------------------------------------------------------------------------------
# Variants: each builds a call description (tensors, args, constexprs, grid, reference)
# from which both this script (fake tensors, CPU) and corpus_run.py (torch, GPU) work.
# ---------------------------------------------------------------------------------------

PTR_TARGETS = (80, 90, 100, 121)   # the pointer / cp.async family
TMA_TARGETS = (90, 100)            # TMA, wgmma / tcgen05
NUM_SMS = {80: 108, 90: 132, 100: 148, 121: 48}   # A100, H200, B200, GB10
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "float32": 4, "float64": 8,
            "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8}
TL_TYPE = {"float16": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float32": "fp32",
           "float64": "fp64", "int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64"}
"""torch dtype name -> Triton's signature type of a pointer to it (a kernel module's tensors may be any of these;
held-out set 4's author found integer tensors refused with a KeyError)."""


def tl_type(dtype: str, tensor: str) -> str:
    if dtype not in TL_TYPE:
        raise ValueError(f"tensor {tensor}: dtype {dtype!r} is not one of {', '.join(TL_TYPE)}")
    return TL_TYPE[dtype]


def _t(shape, dtype="float16", init="randn"):
    return {"shape": list(shape), "dtype": dtype, "init": init}


def _mm_ptr(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    dt, odt = v.get("dtype", "float16"), v.get("out_dtype", "float16")
    tensors = {"A": _t((M, K), dt), "B": _t((K, N), dt), "C": _t((M, N), odt, "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}),
            ("M", M), ("N", N), ("K", K), ("stride_am", K), ("stride_ak", 1), ("stride_bk", N), ("stride_bn", 1),
            ("stride_cm", N), ("stride_cn", 1)]
    ref = {"op": "matmul", "a": "A", "b": "B", "b_layout": "KxN", "out": "C"}
    if v["kernel"] == "mm_ptr_skip":
        args.append(("SKIP_EVERY", v["SKIP_EVERY"]))
        ref.update(skip_every=v["SKIP_EVERY"], block_k=v["BLOCK_K"])
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, ref


def _mm_tma_dev(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    dt = v.get("dtype", "float16")
    tensors = {"A": _t((M, K), dt), "B": _t((N, K), dt), "C": _t((M, N), "float16", "nan")}
    args = [("a_ptr", {"tensor": "A"}), ("b_ptr", {"tensor": "B"}), ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "STAGES")}
    ce["WARP_SPECIALIZE"] = v.get("WARP_SPECIALIZE", False)
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, {"op": "matmul", "a": "A", "b": "B", "b_layout": "NxK", "out": "C"}


def _mm_tma_host(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    tensors = {"A": _t((M, K)), "B": _t((N, K)), "C": _t((M, N), "float16", "nan")}
    args = [("a_desc", {"desc": "A", "block_shape": [BM, BK]}), ("b_desc", {"desc": "B", "block_shape": [BN, BK]}),
            ("c_desc", {"desc": "C", "block_shape": [BM, BN]}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "STAGES")}
    grid = [triton.cdiv(M, BM) * triton.cdiv(N, BN), 1, 1]
    return tensors, args, ce, grid, {"op": "matmul", "a": "A", "b": "B", "b_layout": "NxK", "out": "C"}


def _mm_persistent(v, cap):
    M, N, K, BM, BN, BK = v["M"], v["N"], v["K"], v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"]
    tensors = {"A": _t((M, K)), "B": _t((N, K)), "C": _t((M, N), "float16", "nan")}
    args = [("a_desc", {"desc": "A", "block_shape": [BM, BK]}), ("b_desc", {"desc": "B", "block_shape": [BN, BK]}),
            ("c_desc", {"desc": "C", "block_shape": [BM, BN]}), ("c_ptr", {"tensor": "C"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "STAGES", "TMA_STORE")}
    ce["NUM_SMS"] = NUM_SMS[cap]
    ce["WARP_SPECIALIZE"] = v.get("WARP_SPECIALIZE", False)
    ce["FLATTEN"] = v.get("FLATTEN", False)
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = [min(NUM_SMS[cap], tiles), 1, 1]
    return tensors, args, ce, grid, {"op": "matmul", "a": "A", "b": "B", "b_layout": "NxK", "out": "C"}


def _attn(v, cap):
    ZH, S, D = v["Z_H"], v["N_CTX"], v["HEAD_DIM"]
    tensors = {n: _t((ZH, S, D)) for n in ("Q", "K", "V")}
    tensors["O"] = _t((ZH, S, D), "float16", "nan")
    args = [("q_ptr", {"tensor": "Q"}), ("k_ptr", {"tensor": "K"}), ("v_ptr", {"tensor": "V"}), ("o_ptr", {"tensor": "O"})]
    if v["kernel"] == "attn_fwd_tma":
        args.append(("Z_H", ZH))
    args.append(("N_CTX", S))
    ce = {k: v[k] for k in ("HEAD_DIM", "BLOCK_M", "BLOCK_N", "STAGES")}
    if v["kernel"] == "attn_fwd_tma":
        ce["WARP_SPECIALIZE"] = v.get("WARP_SPECIALIZE", False)
    grid = [S // v["BLOCK_M"], ZH, 1]
    return tensors, args, ce, grid, {"op": "attention", "q": "Q", "k": "K", "v": "V", "out": "O", "causal": False}


BUILDERS = {"mm_ptr": _mm_ptr, "mm_ptr_skip": _mm_ptr, "mm_tma_dev": _mm_tma_dev, "mm_tma_host": _mm_tma_host,
            "mm_persistent": _mm_persistent, "attn_fwd": _attn, "attn_fwd_tma": _attn}


def _v(name, kernel, targets, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": tuple(targets), "num_warps": num_warps, "num_stages": num_stages, **kw}


def _mm(BM, BN, BK, G=8):
    return {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": G}


VARIANTS = [
    # pointer matmul, tutorial 03: num_stages 1..5, warps 4 and 8, tiles 64x64x32 .. 128x256x64
    _v("mm_ptr_64x64x32_s1_w4", "mm_ptr", PTR_TARGETS, 4, 1, M=256, N=256, K=512, **_mm(64, 64, 32)),
    _v("mm_ptr_64x64x32_s2_w4", "mm_ptr", PTR_TARGETS, 4, 2, M=256, N=256, K=512, **_mm(64, 64, 32)),
    _v("mm_ptr_64x64x32_s3_w4", "mm_ptr", PTR_TARGETS, 4, 3, M=512, N=512, K=512, **_mm(64, 64, 32)),
    _v("mm_ptr_128x128x32_s4_w4", "mm_ptr", PTR_TARGETS, 4, 4, M=1024, N=1024, K=1024, **_mm(128, 128, 32)),
    _v("mm_ptr_64x128x64_s5_w4", "mm_ptr", PTR_TARGETS, 4, 5, M=256, N=512, K=4096, **_mm(64, 128, 64)),
    _v("mm_ptr_128x128x64_s3_w8", "mm_ptr", PTR_TARGETS, 8, 3, M=2048, N=2048, K=2048, **_mm(128, 128, 64)),
    _v("mm_ptr_128x256x64_s3_w8", "mm_ptr", PTR_TARGETS, 8, 3, M=2048, N=2048, K=1024, **_mm(128, 256, 64)),
    _v("mm_ptr_bf16_128x128x64_s3_w8", "mm_ptr", PTR_TARGETS, 8, 3, M=1024, N=1024, K=1024, dtype="bfloat16",
       out_dtype="bfloat16", **_mm(128, 128, 64)),
    # an if inside the K loop (scf.if)
    _v("mm_ptr_skip_64x64x32_s3_w4", "mm_ptr_skip", PTR_TARGETS, 4, 3, M=512, N=512, K=1024, SKIP_EVERY=3,
       **_mm(64, 64, 32)),
    # on-device TMA descriptors, B stored N x K, dot(a, b.T)
    _v("mm_tma_dev_64x64x32_s2_w4", "mm_tma_dev", TMA_TARGETS, 4, 2, M=256, N=256, K=256, STAGES=2, **_mm(64, 64, 32)),
    _v("mm_tma_dev_128x128x64_s3_w4", "mm_tma_dev", TMA_TARGETS, 4, 3, M=1024, N=1024, K=1024, STAGES=3, **_mm(128, 128, 64)),
    _v("mm_tma_dev_128x256x64_s4_w8", "mm_tma_dev", TMA_TARGETS, 8, 4, M=2048, N=2048, K=2048, STAGES=4, **_mm(128, 256, 64)),
    _v("mm_tma_dev_128x128x64_s5_w8", "mm_tma_dev", TMA_TARGETS, 8, 5, M=512, N=512, K=4096, STAGES=5, **_mm(128, 128, 64)),
    _v("mm_tma_dev_fp8_128x128x128_s3_w8", "mm_tma_dev", TMA_TARGETS, 8, 3, M=1024, N=1024, K=2048, STAGES=3,
       dtype="float8_e4m3fn", **_mm(128, 128, 128)),
    _v("mm_tma_dev_ws_128x128x64_s3_w4", "mm_tma_dev", TMA_TARGETS, 4, 3, M=1024, N=1024, K=1024, STAGES=3,
       WARP_SPECIALIZE=True, **_mm(128, 128, 64)),
    # host-side descriptors (TensorDescriptor), TMA-store epilogue
    _v("mm_tma_host_128x128x64_s3_w4", "mm_tma_host", TMA_TARGETS, 4, 3, M=1024, N=1024, K=1024, STAGES=3, **_mm(128, 128, 64)),
    _v("mm_tma_host_128x256x64_s3_w8", "mm_tma_host", TMA_TARGETS, 8, 3, M=2048, N=2048, K=2048, STAGES=3, **_mm(128, 256, 64)),
    # persistent, tutorial 09: with and without a TMA-store epilogue, flattened, warp-specialized
    _v("mm_persist_tmastore_128x128x64_s3_w4", "mm_persistent", TMA_TARGETS, 4, 3, M=2048, N=2048, K=1024, STAGES=3,
       TMA_STORE=True, **_mm(128, 128, 64)),
    _v("mm_persist_ptrstore_128x128x64_s3_w4", "mm_persistent", TMA_TARGETS, 4, 3, M=2048, N=2048, K=1024, STAGES=3,
       TMA_STORE=False, **_mm(128, 128, 64)),
    _v("mm_persist_tmastore_128x256x64_s3_w8", "mm_persistent", TMA_TARGETS, 8, 3, M=4096, N=4096, K=512, STAGES=3,
       TMA_STORE=True, **_mm(128, 256, 64)),
    _v("mm_persist_flat_128x128x64_s4_w8", "mm_persistent", TMA_TARGETS, 8, 4, M=2048, N=2048, K=1024, STAGES=4,
       TMA_STORE=True, FLATTEN=True, **_mm(128, 128, 64)),
    _v("mm_persist_ws_128x128x64_s3_w4", "mm_persistent", TMA_TARGETS, 4, 3, M=2048, N=2048, K=1024, STAGES=3,
       TMA_STORE=True, FLATTEN=True, WARP_SPECIALIZE=True, **_mm(128, 128, 64)),
    # fused attention forward, non-causal
    _v("attn_d64_128x64_s2_w4", "attn_fwd", PTR_TARGETS, 4, 2, Z_H=16, N_CTX=1024, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, STAGES=2),
    _v("attn_d128_128x64_s3_w8", "attn_fwd", PTR_TARGETS, 8, 3, Z_H=8, N_CTX=2048, HEAD_DIM=128, BLOCK_M=128, BLOCK_N=64, STAGES=3),
    _v("attn_tma_d64_128x64_s3_w4", "attn_fwd_tma", TMA_TARGETS, 4, 3, Z_H=16, N_CTX=1024, HEAD_DIM=64, BLOCK_M=128,
       BLOCK_N=64, STAGES=3),
    _v("attn_tma_d128_128x128_s2_w8", "attn_fwd_tma", TMA_TARGETS, 8, 2, Z_H=8, N_CTX=2048, HEAD_DIM=128, BLOCK_M=128,
       BLOCK_N=128, STAGES=2),
    _v("attn_tma_ws_d64_128x64_s3_w4", "attn_fwd_tma", TMA_TARGETS, 4, 3, Z_H=16, N_CTX=1024, HEAD_DIM=64, BLOCK_M=128,
       BLOCK_N=64, STAGES=3, WARP_SPECIALIZE=True),
]


THIS = __name__ if __name__ != "__main__" else "kernels.triton.corpus"


def kernel_source(module: str | None = None):
    """The module whose ``KERNELS``, ``BUILDERS`` and ``VARIANTS`` a corpus is made of: this one
    by default, or another of the same shape (``kernels.triton.heldout``: kernels written apart
    from the reader, to try it on)."""
    if module in (None, THIS, "kernels.triton.corpus"):
        return sys.modules[__name__]
    import importlib

    src = importlib.import_module(module)
    missing = [n for n in ("KERNELS", "BUILDERS", "VARIANTS") if not hasattr(src, n)]
    if missing:
        raise SystemExit(f"{module}: no {', '.join(missing)} (a kernel source defines KERNELS, BUILDERS and VARIANTS)")
    return src


def call_spec(variant: dict, cap: int, src=None) -> dict:
    """The call description of a variant on a target: everything corpus_run.py needs to
    rebuild the launch (tensors with shapes, dtypes and init; the argument list in the
    kernel's parameter order; constexprs; grid; what the output should equal)."""
    src = src or kernel_source()
    tensors, args, ce, grid, ref = src.BUILDERS[variant["kernel"]](variant, cap)
    fn = src.KERNELS[variant["kernel"]]
    ce = {n: ce[n] for n in fn.arg_names if n in ce} | {n: v for n, v in ce.items() if n not in fn.arg_names}
    names = [a[0] for a in args] + list(ce)
    if names != fn.arg_names:
        raise AssertionError(f"{variant['name']}: arguments {names} != kernel parameters {fn.arg_names}")
    return {"tensors": tensors, "args": [{"name": n, **(a if isinstance(a, dict) else {"int": a})} for n, a in args],
            "constexprs": ce, "grid": grid, "reference": ref}


# ---------------------------------------------------------------------------------------
# Compiling on the CPU with the launcher's specialization
# ---------------------------------------------------------------------------------------


def _int_spec(value: int):
    """What the JIT binder makes of an integer argument (Triton's own native_specialize_impl:
    1 -> constexpr, a multiple of 16 -> 'D' (tt.divisibility = 16), i32 or i64)."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend
    return native_specialize_impl(BaseBackend, value, False, True, True)


def specialize(spec: dict) -> tuple[dict, dict, dict]:
    """signature, constexprs and attrs for ASTSource, as JITFunction._pack_args makes them
    for this call.  Tensors are taken to be 16-byte aligned (torch allocations are)."""
    from triton.backends.nvidia.compiler import CUDABackend

    sig, constexprs, attrs = {}, {}, {}
    for i, a in enumerate(spec["args"]):
        name = a["name"]
        if "tensor" in a:
            sig[name] = "*" + tl_type(spec["tensors"][a["tensor"]]["dtype"], a["tensor"])
            attrs[(i,)] = CUDABackend.parse_attr("D")
        elif "desc" in a:
            t = spec["tensors"][a["desc"]]
            sig[name] = f"tensordesc<{tl_type(t['dtype'], a['desc'])}{list(a['block_shape'])}>"
        else:
            ty, key = _int_spec(a["int"])
            sig[name] = ty
            if ty == "constexpr":
                constexprs[(i,)] = key
            elif key:
                attrs[(i,)] = CUDABackend.parse_attr(key)
    base = len(spec["args"])
    for j, (name, val) in enumerate(spec["constexprs"].items()):
        sig[name] = "constexpr"
        constexprs[(base + j,)] = val
    return sig, constexprs, attrs


def compile_variant(variant: dict, cap: int, spec: dict, kernels: dict | None = None):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig, constexprs, attrs = specialize(spec)
    src = ASTSource(fn=(kernels or KERNELS)[variant["kernel"]], signature=sig, constexprs=constexprs, attrs=attrs)
    options = {"num_warps": variant["num_warps"], "num_stages": variant["num_stages"], "debug": False}
    return triton.compile(src, target=GPUTarget("cuda", cap, 32), options=options)


def ptxas_usage(kernel) -> dict:
    """What ptxas gave the compiled kernel, read on the CPU from its cubin with the ``cuobjdump``
    Triton ships (``cuobjdump -res-usage``): ``n_regs`` (REG) and ``n_spills`` (STACK / 4), the
    numbers the driver reports as ``kernel.n_regs`` / ``kernel.n_spills`` once it loads the kernel
    (equal on the held-out kernels run on the H200); and from its SASS ``ldg_in_flight``, the most
    global loads a thread has out at once (``kernels.toolchain.sass.loads_in_flight``),
    ``global_widths``, the byte widths of its LDG / STG (``kernels.toolchain.sass.global_widths``), and
    ``wgmma_serialized`` where it has wgmmas: whether ptxas made each wait for the one before
    (``kernels.toolchain.sass.wgmma_serialized``).  Empty when there is no cubin or no tool."""
    import subprocess
    import tempfile

    from kernels.toolchain.sass import find_cuobjdump, global_widths, loads_in_flight, wgmma_serialized

    cubin, tool = kernel.asm.get("cubin"), find_cuobjdump()
    if not cubin or tool is None:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
        # the cuobjdump Triton ships cannot disassemble every target's SASS (sm_100a): then no ldg_in_flight
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=False).stdout
    regs, stack = re.search(r"REG:(\d+)", text), re.search(r"STACK:(\d+)", text)
    in_flight, widths, serialized = loads_in_flight(sass), global_widths(sass), wgmma_serialized(sass)
    return {**({"n_regs": int(regs.group(1))} if regs else {}), **({"n_spills": int(stack.group(1)) // 4} if stack else {}),
            **({"ldg_in_flight": in_flight} if in_flight else {}), **({"global_widths": widths} if widths else {}),
            **({"wgmma_serialized": serialized} if serialized is not None else {})}


def metadata(kernel) -> dict:
    md = kernel.metadata
    d = md._asdict() if hasattr(md, "_asdict") else dict(vars(md))
    out = {}
    for k, v in d.items():
        try:
            out[k] = json.loads(json.dumps(v))
        except (TypeError, ValueError):
            out[k] = str(v) if k == "target" else None
            if out[k] is None:
                del out[k]
    return out


def alloc_passes() -> list[str]:
    """The passes alloc_module runs, in order (they are the start of the backend's own
    make_llir, less scf-to-cf, the inliner and the sanitizers)."""
    if triton.__version__.startswith("3.6"):
        return ["ttgpuir.combine_tensor_select_and_if", "ttgpuir.allocate_warp_groups", "nvidia.allocate_shared_memory_nv",
                "nvidia.allocate_tensor_memory", "nvidia.check_matmul_two_cta", "ttgpuir.allocate_global_scratch_memory",
                "nvidia.proxy_fence_insertion"]
    return ["ttgpuir.combine_tensor_select_and_if", "ttgpuir.allocate_warp_groups", "nvidia.allocate_shared_memory_nv",
            "nvidia.allocate_tensor_memory", "nvidia.proxy_fence_insertion", "nvidia.tmem_barrier_insertion",
            "nvidia.membar"]


def alloc_module(ttgir_path: Path, cap: int) -> str:
    """Run Triton's own allocation (and, on 3.9, membar) passes on a saved TTGIR file and
    return the module text.  Triton 3.6 exposes no membar pass to Python: its CTA barriers
    are put in inside the TTGIR -> LLVM conversion, so its .alloc.mlir has none."""
    from triton._C.libtriton import ir, nvidia, passes
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend, get_ptx_version_from_options

    ctx = ir.context()
    ir.load_dialects(ctx)
    be = CUDABackend(GPUTarget("cuda", cap, 32))
    be.load_dialects(ctx)
    mod = ir.parse_mlir_module(str(ttgir_path), ctx)
    mod.context = ctx
    ptx = get_ptx_version_from_options(be.parse_options({}), be.target.arch)
    pm = ir.pass_manager(ctx)
    pm.enable_debug()
    passes.ttgpuir.add_combine_tensor_select_and_if(pm)
    if triton.__version__.startswith("3.6"):
        passes.ttgpuir.add_allocate_warp_groups(pm)
        nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, cap, ptx)
        nvidia.passes.ttnvgpuir.add_allocate_tensor_memory(pm)
        nvidia.passes.ttnvgpuir.add_check_matmul_two_cta(pm)
        passes.ttgpuir.add_allocate_global_scratch_memory(pm)
        nvidia.passes.ttnvgpuir.add_proxy_fence_insertion(pm, cap)
        pm.run(mod, "alloc")
    else:
        passes.ttgpuir.add_allocate_warp_groups(pm, False)
        nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, cap, ptx)
        nvidia.passes.ttnvgpuir.add_allocate_tensor_memory(pm)
        nvidia.passes.ttnvgpuir.add_proxy_fence_insertion(pm, cap)
        nvidia.passes.ttnvgpuir.add_tmem_barrier_insertion(pm)
        nvidia.passes.ttgpuir.add_membar(pm, cap, ptx)
        pm.run(mod, "alloc")
    return str(mod)


def ttgir_launch_ints(ttgir: str, spec: dict) -> dict:
    """The integer parameters of the TTGIR's tt.func with their values in this call.  A
    host-side descriptor argument X arrives as %X (the descriptor) followed by Triton's
    hidden parameters (%X_<n> in 3.6, %X.shape.<i> / %X.stride.<i> in 3.9): its shape
    (i32 each), then its strides (i64 each)."""
    head = next((ln for ln in ttgir.splitlines() if ln.lstrip().startswith("tt.func public")), "")
    params = re.findall(r"%([A-Za-z_][\w.]*): ", head)
    ints = {a["name"]: a["int"] for a in spec["args"] if "int" in a}
    descs = {a["name"]: a for a in spec["args"] if "desc" in a}
    out, hidden, cur = {}, [], None
    for p in params:
        if p in descs:
            t = spec["tensors"][descs[p]["desc"]]
            shape = t["shape"]
            strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
            hidden, cur = list(shape) + strides, p
        elif cur and (p.startswith(cur + "_") or p.startswith(cur + ".")) and hidden:
            out[p] = hidden.pop(0)
        elif p in ints:
            out[p] = ints[p]
            cur = None
    return out


def target_tag(cap: int) -> str:
    return f"sm{cap}"


def notes_for(variant: dict, cap: int, ttgir: str, md: dict) -> list[str]:
    """Facts about this compile a reader of the TTGIR should know, read off the text."""
    notes = []
    ver = triton.__version__
    ws_asked = variant.get("WARP_SPECIALIZE", False)
    ws_done = "ttg.warp_specialize" in ttgir
    if ws_asked and not ws_done:
        notes.append(f"warp_specialize=True was asked; Triton {ver} did not warp-specialize this on sm_{cap}")
    if ws_done:
        parts = sorted(set(re.findall(r"\bpartition(\d+)\(", ttgir)), key=int)
        warps = re.findall(r"\bnum_warps\((\d+)\)", ttgir)
        regs = re.search(r"requestedRegisters = array<i32: ([^>]*)>", ttgir)
        notes.append(f"Triton warp-specialized this on sm_{cap}: ttg.warp_specialize with a default region "
                     f"({variant['num_warps']} warps) and {len(parts)} partitions of {'/'.join(warps)} warps"
                     + (f", requestedRegisters {regs.group(1)}" if regs else ""))
        if cap == 90 and variant["kernel"] == "mm_tma_dev":
            notes.append("Triton's warp specialization on sm_90 is not deterministic: compiles of this source with "
                         "fresh caches (3.6 and 3.9) differed in two lines of a partition (the barrier arrays of two "
                         "memdesc_index ops swapped: %arg17 <-> %arg19); a recompile may not match this file")
        if not ws_asked:
            notes.append("warp-specialized without warp_specialize=True")
    loop_stages = variant["num_stages"] if "STAGES" not in variant else variant["STAGES"]
    pipelined = any(op in ttgir for op in ("ttg.async_copy_global_to_local", "ttng.async_tma_copy_global_to_local"))
    if loop_stages > 1 and not pipelined:
        notes.append(f"num_stages={loop_stages} was asked but the K loop was not pipelined (no async copies in the TTGIR)")
    if "tensordesc" in ttgir and variant["kernel"] in ("mm_tma_host", "mm_persistent"):
        notes.append("host-side descriptors (TensorDescriptor): each arrives as a !tt.tensordesc parameter followed by "
                     "hidden parameters for its shape (i32) and strides (i64); launch.json lists them by their TTGIR names")
    if md.get("global_scratch_size"):
        notes.append(f"on-device descriptors (tl.make_tensor_descriptor): global_scratch_size = {md['global_scratch_size']} "
                     "per CTA; the launch needs triton.set_allocator")
    if ver.startswith("3.6"):
        notes.append("Triton 3.6 exposes no membar pass to Python (its barriers are put in inside the TTGIR -> LLVM "
                     "conversion), so .alloc.mlir carries allocation only; gpu.barrier ops in it come from the TTGIR")
    return notes


def silicon_notes(out: Path, file: str) -> list[str]:
    """One line per run of this record found in results/silicon/triton/*corpus*.jsonl
    (corpus_run.py's output, kept with the other hardware evidence), so the index says
    what the GPU did with it."""
    notes = []
    for path in sorted((Path(__file__).resolve().parents[2] / "results" / "silicon" / "triton").glob("*corpus*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("record") != file or row.get("edit_file"):
                continue
            chk = row.get("check") or {}
            extra = (f", {chk['nonfinite']}/{chk['elements']} outputs non-finite" if chk.get("nonfinite") else "")
            notes.append(f"{row.get('gpu')} (triton {row.get('triton')}, commit {row.get('commit')}, {path.name}): "
                         f"{row.get('outcome')}{extra}, max_rel_err {row.get('max_rel_err')}, ttgir_match "
                         f"{row.get('ttgir_match')}, kernel median {(row.get('kernel_us') or {}).get('median')} us")
    return notes


def run(out: Path, only: str | None, verbose: bool = True, module: str | None = None) -> int:
    src = kernel_source(module)
    version = triton.__version__
    vdir = out / f"triton-{version}"
    vdir.mkdir(parents=True, exist_ok=True)
    records = []
    for variant in src.VARIANTS:
        for cap in variant["targets"]:
            tag = f"{variant['name']}.{target_tag(cap)}"
            if only and only not in tag:
                continue
            spec = call_spec(variant, cap, src)
            rec = {"file": f"triton-{version}/{tag}", "triton": version, "target": target_tag(cap), "capability": cap,
                   "kernel": variant["kernel"], "variant": variant["name"], "constexprs": spec["constexprs"],
                   "num_warps": variant["num_warps"], "num_stages": variant["num_stages"], "tensors": spec["tensors"],
                   "args": spec["args"], "grid": spec["grid"], "ctas": math.prod(spec["grid"]),
                   "reference": spec["reference"], "expected": "correct"}
            if src is not sys.modules[__name__]:
                rec["source"] = src.__name__  # where corpus_run imports the kernel from
            if getattr(src, "flops", None) and src.flops(variant):
                rec["flops"] = src.flops(variant)  # the roof check's numerator (predicted_vs_measured)
            try:
                k = compile_variant(variant, cap, spec, src.KERNELS)
            except Exception as exc:  # noqa: BLE001  (record what Triton said, go on)
                lines = [ln for ln in f"{type(exc).__name__}: {exc}".splitlines() if ln.strip()]
                rec.update(compiled=False, error=lines[0][:300] if lines else type(exc).__name__, notes=[])
                records.append(rec)
                if verbose:
                    print(f"{tag}: compile failed: {rec['error']}", file=sys.stderr)
                continue
            ttgir = k.asm["ttgir"]
            md = {**metadata(k), **ptxas_usage(k)}
            base = vdir / tag
            base.with_name(tag + ".ttgir").write_text(ttgir)
            base.with_name(tag + ".json").write_text(json.dumps(md, indent=1, sort_keys=True) + "\n")
            launch = ttgir_launch_ints(ttgir, spec)
            launch["ctas"] = rec["ctas"]
            if any(g > 1 for g in spec["grid"][1:]):  # a 2-D/3-D grid: the program ids the reader gives each CTA
                launch["grid"] = spec["grid"]
            base.with_name(tag + ".launch.json").write_text(json.dumps(launch) + "\n")
            notes = notes_for(variant, cap, ttgir, md) + silicon_notes(out, rec["file"])
            try:
                alloc = alloc_module(base.with_name(tag + ".ttgir"), cap)
                base.with_name(tag + ".alloc.mlir").write_text(alloc)
                rec["alloc_passes"] = alloc_passes()
            except Exception as exc:  # noqa: BLE001
                notes.append(f"allocation passes failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                rec["alloc_passes"] = None
            rec.update(compiled=True, shared=md.get("shared"), tmem_size=md.get("tmem_size"), notes=notes)
            records.append(rec)
            if verbose:
                print(f"{tag}: ok shared={md.get('shared')} tmem={md.get('tmem_size')} {'; '.join(notes)}", file=sys.stderr)
    merge_index(out / "index.json", records, version, only, src.VARIANTS)
    return 0


def merge_index(path: Path, records: list[dict], version: str, only: str | None, variants: list[dict] | None = None) -> None:
    """Replace this version's records (those matching --only, if given) and keep the rest;
    order: version, then the VARIANTS order, then target."""
    old = json.loads(path.read_text()) if path.exists() else []
    new_files = {r["file"] for r in records}

    def replaced(r):
        if r["triton"] != version:
            return False
        return r["file"] in new_files or not only or only in r["file"].split("/", 1)[1]

    keep = [r for r in old if not replaced(r)]
    order = {v["name"]: i for i, v in enumerate(variants if variants is not None else VARIANTS)}
    allr = keep + records
    allr.sort(key=lambda r: (r["triton"], order.get(r["variant"], 1 << 30), r["capability"]))
    path.write_text(json.dumps(allr, indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="corpus folder (index.json and triton-<version>/ go there)")
    ap.add_argument("--only", metavar="SUBSTR", help="only the <variant>.<target> names containing SUBSTR")
    ap.add_argument("--list", action="store_true", help="list the <variant>.<target> names and exit")
    ap.add_argument("--kernels", metavar="MODULE", default=None,
                    help="take KERNELS, BUILDERS and VARIANTS from MODULE (default: this corpus's own; "
                         "kernels.triton.heldout: the held-out set, into tests/fixtures/triton/heldout)")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.list:
        for v in kernel_source(args.kernels).VARIANTS:
            for cap in v["targets"]:
                print(f"{v['name']}.{target_tag(cap)}")
        return 0
    return run(args.out, args.only, verbose=not args.quiet, module=args.kernels)


if __name__ == "__main__":
    raise SystemExit(main())
