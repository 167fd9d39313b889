"""Held-out set 6's optimistic GEMMs taken apart: which part of the kernel the H200 spends the
missing time in.

Set 6 predicted ``linear_gelu_fp16_4096_128x256x64_s3_w8`` at 0.72 of its measured time, its ViT
sibling at 0.79 and ``w8a16_gemm_m96_64x128x128_s4_w4`` at 0.59 (set 5's erf-GELU and SwiGLU GEMMs
0.79 and 0.85). Each miss could sit in the epilogue (the GELU's math), in the main loop (W stored
N x K, the K mask) or in the int8 -> fp16 conversion. The variants below switch those parts off one
at a time on the same shapes, so that the H200 says where the time goes:

    linear      X [M, K] @ W, W stored N x K (``W_NK``, nn.Linear) or K x N, the K loop masked
                (``MASK_K``, as set 6 wrote it) or not, and one of four epilogues (``EPI``):
                0 the accumulator, 1 + bias, 2 + bias and tanh-GELU (set 6's formula),
                3 + bias and erf-GELU
    w8a16       set 6's weight-only GEMM, the weights int8 (converted to fp16 in the K loop) or
                fp16 (the conversion a no-op): the same loads of W, half the bytes

Compile on the CPU (sm_90 only) and run on the H200:

    /tmp/tri36/bin/python -m kernels.triton.corpus --kernels kernels.triton.gemm_parts --out tests/fixtures/triton/gemm_parts
    python -m kernels.triton.corpus_run --corpus tests/fixtures/triton/gemm_parts --out results.jsonl
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels.triton.heldout6 import _swizzle

TARGET = (90,)


@triton.jit
def linear_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm, stride_wn, stride_wk, stride_ym,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  EPI: tl.constexpr, MASK_K: tl.constexpr, TILE_NK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = _swizzle(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_am[:, None] * stride_xm + offs_k[None, :]
    if TILE_NK:  # W's tile loaded as [BLOCK_N, BLOCK_K] and transposed for the dot (the TMA kernels' form)
        w_ptrs = w_ptr + offs_bn[:, None] * stride_wn + offs_k[None, :] * stride_wk
    else:
        w_ptrs = w_ptr + offs_bn[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(0, tl.cdiv(K, BLOCK_K)):
        if MASK_K:
            k_left = K - kt * BLOCK_K
            a = tl.load(x_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            if TILE_NK:
                b = tl.load(w_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            else:
                b = tl.load(w_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        else:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        if TILE_NK:
            acc = tl.dot(a, tl.trans(b), acc)
        else:
            acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    y = acc
    if EPI >= 1:
        bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
        y = acc + bias[None, :]
    if EPI == 2:
        y = y * tl.sigmoid(1.5957691216057308 * (y + 0.044715 * y * y * y))
    if EPI == 3:
        y = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def w8a16_kernel(x_ptr, wq_ptr, scale_ptr, y_ptr, M, N, K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Set 6's w8a16_gemm_kernel as it was written; W's dtype is the variant's."""
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
def dot_loop_kernel(x_ptr, w_ptr, y_ptr, ITERS, stride_wn, stride_wk,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The tensor core alone on one B layout: each program loads one A tile [BLOCK_M, BLOCK_K] and
    one B tile [BLOCK_K, BLOCK_N] (W stored N x K or K x N, as ``stride_wn`` / ``stride_wk`` say)
    once, then ITERS dots of them into its accumulator -- no copies in the loop.
    Y[pid] = ITERS * (A @ B)."""
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = tl.load(x_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :])
    b = tl.load(w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(ITERS):
        acc = tl.dot(a, b, acc)
    tl.store(y_ptr + pid * BLOCK_M * BLOCK_N + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)


@triton.jit
def copy_loop_kernel(x_ptr, w_ptr, y_ptr, ITERS, stride_wn, stride_wk, tile_w,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TILES: tl.constexpr):
    """dot_loop with B's tile copied again every iteration (cp.async, pipelined): each program its
    own tiles of W at ``tile_w`` elements from the last program's, TILES of them along K in turn (so
    in L2 after the first round; one tile every iteration, Triton hoists the load out of the loop),
    rows ``stride_wn`` apart (N x K) or ``stride_wk`` (K x N) as in the 4096^3 linear.
    Y[pid] = (ITERS / TILES) * (A @ sum of the TILES B_pid)."""
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = tl.load(x_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :])
    w_ptrs = w_ptr + pid * tile_w + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(ITERS):
        b = tl.load(w_ptrs + (i % TILES) * BLOCK_K * stride_wk)
        acc = tl.dot(a, b, acc)
    tl.store(y_ptr + pid * BLOCK_M * BLOCK_N + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)


@triton.jit
def ab_copy_loop_kernel(x_ptr, w_ptr, y_ptr, ITERS, stride_xm, stride_wn, stride_wk, tile_x, tile_w,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TILES: tl.constexpr):
    """copy_loop with A's tile copied every iteration too, as in the GEMM: X stored M x K with rows
    ``stride_xm`` apart, each program its tiles ``tile_x`` / ``tile_w`` elements from the last
    program's (0: every program reads the same tiles), TILES of them along K in turn.
    Y[pid] = (ITERS / TILES) * sum over the TILES of A_pid,t @ B_pid,t."""
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + pid * tile_x + offs_m[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + pid * tile_w + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(ITERS):
        a = tl.load(x_ptrs + (i % TILES) * BLOCK_K)
        b = tl.load(w_ptrs + (i % TILES) * BLOCK_K * stride_wk)
        acc = tl.dot(a, b, acc)
    tl.store(y_ptr + pid * BLOCK_M * BLOCK_N + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)


KERNELS = {"linear": linear_kernel, "w8a16": w8a16_kernel, "dot_loop": dot_loop_kernel, "copy_loop": copy_loop_kernel,
           "ab_copy_loop": ab_copy_loop_kernel}


def _t(shape, dtype="float16", init="randn"):
    return {"shape": [int(s) for s in shape], "dtype": dtype, "init": init}


EPILOGUE_EXPR = {
    0: "{mm}",
    1: "{mm} + BIAS",
    2: "torch.nn.functional.gelu({mm} + BIAS, approximate='tanh')",
    3: "torch.nn.functional.gelu({mm} + BIAS)",
}


def _linear(v, cap):
    M, N, K, dt = v["M"], v["N"], v["K"], v["dtype"]
    w_nk = v["W_NK"]
    px, pw = v.get("PAD_X", 0), v.get("PAD_W", 0)  # elements after each row: a row stride off a power of two
    tensors = {"X": _t((M, K + px), dt), "W": _t((N, K + pw) if w_nk else (K, N + pw), dt), "BIAS": _t((N,), dt),
               "Y": _t((M, N), dt, "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("bias_ptr", {"tensor": "BIAS"}),
            ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K), ("stride_xm", K + px),
            ("stride_wn", K + pw if w_nk else 1), ("stride_wk", 1 if w_nk else N + pw), ("stride_ym", N)]
    ce = {k: v.get(k, 0) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "EPI", "MASK_K", "TILE_NK")}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * triton.cdiv(N, v["BLOCK_N"]), 1, 1]
    x = f"X[:, :{K}]" if px else "X"
    w = (f"W[:, :{K}]" if pw else "W") if w_nk else (f"W[:, :{N}]" if pw else "W")
    expr = EPILOGUE_EXPR[v["EPI"]].format(mm=f"{x} @ {w}.t()" if w_nk else f"{x} @ {w}")
    return tensors, args, ce, grid, {"op": "torch", "expr": expr, "out": "Y"}


def _w8a16(v, cap):
    M, N, K = v["M"], v["N"], v["K"]
    assert N % v["BLOCK_N"] == 0 and K % v["BLOCK_K"] == 0
    tensors = {"X": _t((M, K), "float16"), "WQ": _t((N, K), v["w_dtype"]), "S": _t((N,), "float16"),
               "Y": _t((M, N), "float16", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("wq_ptr", {"tensor": "WQ"}), ("scale_ptr", {"tensor": "S"}),
            ("y_ptr", {"tensor": "Y"}), ("M", M), ("N", N), ("K", K)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    grid = [triton.cdiv(M, v["BLOCK_M"]) * (N // v["BLOCK_N"]), 1, 1]
    return tensors, args, ce, grid, {"op": "torch", "expr": "(X @ WQ.t()) * S[None, :]", "out": "Y"}


def _dot_loop(v, cap):
    BM, BN, BK, G, it = v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"], v["GRID"], v["ITERS"]
    w_nk = v["W_NK"]
    tensors = {"X": _t((BM, BK)), "W": _t((BN, BK) if w_nk else (BK, BN)), "Y": _t((G * BM, BN), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("y_ptr", {"tensor": "Y"}), ("ITERS", it),
            ("stride_wn", BK if w_nk else 1), ("stride_wk", 1 if w_nk else BN)]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    expr = f"(X @ {'W.t()' if w_nk else 'W'} * {it}).repeat({G}, 1)"
    return tensors, args, ce, [G, 1, 1], {"op": "torch", "expr": expr, "out": "Y"}


def _copy_loop(v, cap):
    BM, BN, BK, G, it, KF = v["BLOCK_M"], v["BLOCK_N"], v["BLOCK_K"], v["GRID"], v["ITERS"], v["K_FULL"]
    w_nk = v["W_NK"]
    # N x K: G * BN rows of KF elements, program p's tile its rows p * BN.., first BK columns;
    # K x N: BK rows of G * BN elements, program p's tile its columns p * BN..
    T, shared, copy_a = v["TILES"], v.get("SHARED", 0), v["kernel"] == "ab_copy_loop"
    W = _t((G * BN, KF) if w_nk else (T * BK, G * BN))
    tensors = {"X": _t((G * BM, KF) if copy_a else (BM, BK)), "W": W, "Y": _t((G * BM, BN), "float32", "nan")}
    args = [("x_ptr", {"tensor": "X"}), ("w_ptr", {"tensor": "W"}), ("y_ptr", {"tensor": "Y"}), ("ITERS", it),
            *([("stride_xm", KF)] if copy_a else []),
            ("stride_wn", KF if w_nk else 1), ("stride_wk", 1 if w_nk else G * BN),
            *([("tile_x", 0 if shared else BM * KF)] if copy_a else []),
            ("tile_w", 0 if shared else (BN * KF if w_nk else BN))]
    ce = {k: v[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "TILES")}
    assert it % T == 0
    if not (copy_a or shared):  # the fifth and sixth runs' reference, as they were compiled
        b = (f"W[:, :{T * BK}].reshape({G}, {BN}, {T}, {BK}).sum(2).transpose(1, 2)" if w_nk
             else f"W.reshape({T}, {BK}, {G}, {BN}).sum(0).permute(1, 0, 2)")
        return tensors, args, ce, [G, 1, 1], {"op": "torch", "expr": f"(X @ {b} * {it // T}).reshape({G * BM}, {BN})",
                                               "out": "Y"}
    # B_p stacked over the programs p as [G, T * BK, BN] (the sum over its K tiles is one product
    # over their concatenation); a shared run takes program 0's for every program
    b = (f"W[:, :{T * BK}].reshape({G}, {BN}, {T * BK}).transpose(1, 2)" if w_nk
         else f"W.reshape({T * BK}, {G}, {BN}).permute(1, 0, 2)")
    a = f"X[:, :{T * BK}].reshape({G}, {BM}, {T * BK})" if copy_a else f"X.repeat(1, {T})"
    if shared:
        a, b = (f"{a}[:1]" if copy_a else a), f"{b}[:1]"
    expr = f"({a} @ {b} * {it // T}).expand({G}, {BM}, {BN}).reshape({G * BM}, {BN})"
    return tensors, args, ce, [G, 1, 1], {"op": "torch", "expr": expr, "out": "Y"}


BUILDERS = {"linear": _linear, "w8a16": _w8a16, "dot_loop": _dot_loop, "copy_loop": _copy_loop,
            "ab_copy_loop": _copy_loop}


def flops(v) -> int:
    if v["kernel"] in ("dot_loop", "copy_loop", "ab_copy_loop"):
        return 2 * v["GRID"] * v["ITERS"] * v["BLOCK_M"] * v["BLOCK_N"] * v["BLOCK_K"]
    return 2 * v["M"] * v["N"] * v["K"]


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": TARGET, "num_warps": num_warps, "num_stages": num_stages, **kw}


def _linear_v(tag, shape, epi, mask_k, w_nk, tile_nk=0, pad_x=0, pad_w=0):
    """One linear variant: ``shape`` is set 6's (4096 fp16 128 x 256, or the ViT bf16 128 x 128)."""
    name = (f"linear_{tag}_epi{epi}_{'maskk' if mask_k else 'nomask'}_{'wnk' if w_nk else 'wkn'}"
            f"{'_tilenk' if tile_nk else ''}{f'_padx{pad_x}' if pad_x else ''}{f'_padw{pad_w}' if pad_w else ''}")
    pads = {k: p for k, p in (("PAD_X", pad_x), ("PAD_W", pad_w)) if p}
    return _v(name, "linear", shape["warps"], shape["stages"], EPI=epi, MASK_K=mask_k, W_NK=w_nk, TILE_NK=tile_nk, **pads,
              **{k: val for k, val in shape.items() if k not in ("warps", "stages")})


BIG = dict(M=4096, N=4096, K=4096, dtype="float16", BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
           warps=8, stages=3)
SMALL = dict(BIG, M=2048, N=2048, K=2048)
VIT = dict(M=12608, N=3072, K=768, dtype="bfloat16", BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
           warps=4, stages=4)
W8A16 = dict(M=96, N=14336, K=4096, BLOCK_M=64, BLOCK_N=128, BLOCK_K=128, GROUP_M=8)

VARIANTS = [
    # set 6's linear_gelu_fp16_4096 again (epi 2, masked, W N x K), then its parts switched off
    _linear_v("4096", BIG, 2, 1, 1),
    _linear_v("4096", BIG, 3, 1, 1),
    _linear_v("4096", BIG, 1, 1, 1),
    _linear_v("4096", BIG, 0, 1, 1),
    _linear_v("4096", BIG, 0, 0, 1),
    _linear_v("4096", BIG, 0, 0, 0),
    # set 6's ViT MLP (bf16, M = 12608 not a multiple of the tile)
    _linear_v("vit", VIT, 2, 1, 1),
    _linear_v("vit", VIT, 0, 1, 1),
    _linear_v("vit", VIT, 0, 0, 0),
    # second run (after the first showed W stored N x K costing 34% at 4096^3): the same tile loaded
    # as [BLOCK_N, BLOCK_K] and transposed for the dot; and both layouts where every input stays in L2
    _linear_v("4096", BIG, 0, 0, 1, tile_nk=1),
    _linear_v("2048", SMALL, 0, 0, 1),
    _linear_v("2048", SMALL, 0, 0, 0),
    _linear_v("2048", SMALL, 0, 0, 1, tile_nk=1),
    _linear_v("vit", VIT, 0, 0, 1),
    _linear_v("vit", VIT, 0, 0, 1, tile_nk=1),
    # third run (the second showed W N x K 31% slower at 2048^3 with every input in L2): each row of
    # W, then of X too, 64 elements longer than K, so that the rows a warp instruction reads are not
    # a power of two bytes apart
    _linear_v("2048", SMALL, 0, 0, 1, pad_w=64),
    _linear_v("2048", SMALL, 0, 0, 1, pad_x=64, pad_w=64),
    _linear_v("2048", SMALL, 0, 0, 0, pad_x=64),
    _linear_v("4096", BIG, 0, 0, 1, pad_w=64),
    _linear_v("4096", BIG, 0, 0, 1, pad_x=64, pad_w=64),
    _linear_v("4096", BIG, 0, 0, 0, pad_x=64),
    # fourth run (W N x K still 31% slower with its rows padded): the tensor core alone on each B
    # layout -- one tile pair loaded once, 512 dots of it, one CTA on every SM
    *[_v(f"dot_loop_{bm}x{bn}x64_{'wnk' if w_nk else 'wkn'}_w{warps}", "dot_loop", warps, 1, BLOCK_M=bm,
         BLOCK_N=bn, BLOCK_K=64, GRID=132, ITERS=512, W_NK=w_nk)
      for bm, bn, warps in ((128, 256, 8), (128, 128, 4), (128, 128, 8)) for w_nk in (1, 0)],
    # fifth run (the tensor core alone ran both layouts at one speed): B's tile copied every
    # iteration, L2-resident, rows 8 KB apart (N x K) or 512-byte rows (K x N)
    *[_v(f"copy_loop_128x256x64_{'wnk' if w_nk else 'wkn'}_s3_w8", "copy_loop", 8, 3, BLOCK_M=128, BLOCK_N=256,
         BLOCK_K=64, GRID=132, ITERS=512, K_FULL=4096, W_NK=w_nk, TILES=4) for w_nk in (1, 0)],
    # sixth run (both layouts' copies ran at one speed at ~3 KB a cycle chip-wide, under the GEMM's
    # 4.2): a quarter of the tensor work a byte (64-row A, 4 warps) at 1 and 3 CTAs an SM, so that
    # the copies bind
    *[_v(f"copy_loop_64x256x64_{'wnk' if w_nk else 'wkn'}_s2_w4_g{grid}", "copy_loop", 4, 2, BLOCK_M=64,
         BLOCK_N=256, BLOCK_K=64, GRID=grid, ITERS=512, K_FULL=4096, W_NK=w_nk, TILES=2)
      for grid in (132, 396) for w_nk in (1, 0)],
    # seventh run: A's tile copied beside B's as in the GEMM (each program its own tiles, L2-resident),
    # and every program on the same tiles (A and B, or B alone) -- is the N x K cost the two copies
    # together, or tiles many CTAs read at once?
    *[_v(f"ab_copy_loop_128x256x64_{'wnk' if w_nk else 'wkn'}_s3_w8{'_shared' if shared else ''}", "ab_copy_loop",
         8, 3, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GRID=132, ITERS=512, K_FULL=4096, W_NK=w_nk, TILES=4,
         SHARED=shared) for shared in (0, 1) for w_nk in (1, 0)],
    *[_v(f"copy_loop_128x256x64_{'wnk' if w_nk else 'wkn'}_s3_w8_shared", "copy_loop", 8, 3, BLOCK_M=128,
         BLOCK_N=256, BLOCK_K=64, GRID=132, ITERS=512, K_FULL=4096, W_NK=w_nk, TILES=4, SHARED=1) for w_nk in (1, 0)],
    # eighth run (the 64-row copy loop ran 0.67-0.73 of its time predicted, at ~3.3-3.6 KB a cycle
    # chip-wide with 1 and 3 CTAs an SM, where the model's L2 gives 5 KB): is cp.async's rate an SM's
    # or the chip's? The same loop on 33 and 66 SMs, at 2 CTAs an SM, and with 3 stages
    *[_v(f"copy_loop_64x256x64_wkn_s{stages}_w4_g{grid}", "copy_loop", 4, stages, BLOCK_M=64,
         BLOCK_N=256, BLOCK_K=64, GRID=grid, ITERS=512, K_FULL=4096, W_NK=0, TILES=2)
      for stages, grid in ((2, 33), (2, 66), (2, 264), (3, 132))],
    # set 6's w8a16_gemm_m96 again, and with fp16 weights
    _v("w8a16_m96_int8", "w8a16", 4, 4, w_dtype="int8", **W8A16),
    _v("w8a16_m96_fp16", "w8a16", 4, 4, w_dtype="float16", **W8A16),
]
