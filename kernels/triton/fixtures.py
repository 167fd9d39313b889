"""Compile the second seed's Triton matmul (and variants) and save what the compiler
made of it: TTGIR text and the compiled kernel's metadata JSON, per variant; run the
variants the GPU can run and append one JSON line per launch.

    python -m kernels.triton.fixtures --out DIR --results FILE.jsonl

Runs where Triton is installed (it ships with torch on the H200 machine).  The seed
(../shared/seeds/004_*.txt) compiled a 64x32 @ 32x64 fp16 matmul with num_stages=2
and num_warps=4 for sm_121; here the same kernel is compiled for the GPU at hand
(sm_90: cp.async + wgmma) and, compile-only, for sm_80 and sm_121 (cp.async +
mma.sync), plus deeper pipelines and a TMA-descriptor variant.  Nothing here
decides what a pipeline should do: it records what Triton produced and what the
GPU computed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
import traceback
from pathlib import Path

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, num_stages=STAGES):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))


# name -> (kernel, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps)
VARIANTS = {
    "seed_64x32x64_s2": ("ptr", 64, 64, 32, 64, 64, 32, 2, 4),       # the seed's shape and options
    "k256_s2": ("ptr", 64, 64, 256, 64, 64, 32, 2, 4),                # an 8-iteration K loop
    "k256_s3": ("ptr", 64, 64, 256, 64, 64, 32, 3, 4),
    "k256_s4": ("ptr", 64, 64, 256, 64, 64, 32, 4, 4),
    "grid_512_k512_s3": ("ptr", 512, 512, 512, 64, 64, 32, 3, 4),
    "tma_k256_s3": ("tma", 64, 64, 256, 64, 64, 32, 3, 4),
}
CROSS_TARGETS = (80, 121)  # compile-only: the mma.sync (MMA v2) family of the seed


def _metadata(kernel) -> dict:
    md = kernel.metadata
    d = md._asdict() if hasattr(md, "_asdict") else dict(vars(md))
    return json.loads(json.dumps(d, default=str))


def launch(name: str, spec: tuple, seed: int):
    import torch

    kind, M, N, K, BM, BN, BK, stages, warps = spec
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    if kind == "ptr":
        k = matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, num_stages=stages, num_warps=warps)
    else:
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        k = matmul_tma_kernel[grid](a, b, c, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, STAGES=stages, num_warps=warps)
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    return k, err


def cross_compile(name: str, spec: tuple, capability: int) -> tuple[str, dict]:
    """Compile for another GPU without running: the same specialization the launcher
    applies on the GPU (unit strides become constants, the other integer and pointer
    arguments are known multiples of 16).  Without it the loads cannot use 16-byte
    cp.async and Triton does not pipeline the loop at all."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    _, M, N, K, BM, BN, BK, stages, warps = spec
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
           "stride_cm": "i32", "stride_cn": "constexpr",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    constexprs = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}
    names = matmul_kernel.arg_names
    attrs = {(names.index(a),): [["tt.divisibility", 16]]
             for a in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    src = ASTSource(fn=matmul_kernel, signature=sig, constexprs=constexprs, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", capability, 32), options={"num_stages": stages, "num_warps": warps})
    return k.asm["ttgir"], _metadata(k)


def cross_main(out: Path) -> None:
    """Compile-only fixtures for CROSS_TARGETS (needs triton, not a GPU)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, spec in VARIANTS.items():
        if spec[0] != "ptr":
            continue
        for capability in CROSS_TARGETS:
            tag = f"{name}.sm{capability}"
            try:
                ttgir, md = cross_compile(name, spec, capability)
                md["compiled_on"] = "cpu (cross-compiled, not run)"
                (out / f"{tag}.ttgir").write_text(ttgir)
                (out / f"{tag}.json").write_text(json.dumps(md, indent=1))
                print("cross", tag, "ok, shared", md.get("shared"))
            except Exception as exc:  # noqa: BLE001  (say what Triton said, go on with the rest)
                (out / f"{tag}.error.txt").write_text(traceback.format_exc()[-4000:])
                print("cross", tag, "failed:", type(exc).__name__, str(exc)[:200])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for <variant>.ttgir and <variant>.json")
    ap.add_argument("--results", type=Path, required=True, help="JSON-lines file to append launch records to")
    ap.add_argument("--launches", type=int, default=5)
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
    ap.add_argument("--cross-only", action="store_true", help="only the compile-only targets (no GPU needed)")
    args = ap.parse_args()
    if args.cross_only:
        cross_main(args.out)
        return 0
    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    cap = torch.cuda.get_device_capability()
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda, "capability": f"{cap[0]}{cap[1]}", "commit": args.commit}
    try:
        env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                       capture_output=True, text=True, timeout=20, check=False).stdout.strip()
    except OSError:
        env["driver"] = None
    print(json.dumps(env))
    with args.results.open("a") as f:
        for name, spec in VARIANTS.items():
            for i in range(args.launches):
                rec = {"schema": 1, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **env, "kind": "triton",
                       "name": name, "variant": dict(zip(("kernel", "M", "N", "K", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages",
                                                          "num_warps"), spec, strict=True)), "launch": i}
                try:
                    k, err = launch(name, spec, seed=1000 + i)
                    rec.update(outcome="correct" if err < 1e-2 else "wrong", max_rel_err=err)
                    if i == 0:
                        tag = f"{name}.sm{env['capability']}"
                        (args.out / f"{tag}.ttgir").write_text(k.asm["ttgir"])
                        (args.out / f"{tag}.json").write_text(json.dumps(_metadata(k), indent=1))
                        rec["fixture"] = tag
                except Exception as exc:  # noqa: BLE001  (record what Triton or the GPU said)
                    rec.update(outcome="error", error=f"{type(exc).__name__}: {str(exc)[:400]}")
                f.write(json.dumps(rec) + "\n")
                f.flush()
                print(name, i, rec["outcome"], rec.get("max_rel_err", rec.get("error", ""))[:80] if isinstance(rec.get("error"), str) else rec.get("max_rel_err"))
    cross_main(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
