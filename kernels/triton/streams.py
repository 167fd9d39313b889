"""The read/write streams of ``kernels/microbench/hbm_mix.py`` as Triton variants the reader
takes: the same kernel, compiled on the CPU like the corpus, so that the model's prediction for
each stream can be set beside what the microbenchmark measured (docs/semantics.md "Written
bytes and DRAM").

Same module shape as kernels/triton/corpus.py (``KERNELS``, ``BUILDERS``, ``VARIANTS``, ``flops``).
Compiled with ``python -m kernels.triton.corpus --kernels kernels.triton.streams --out
tests/fixtures/triton/streams``; run with ``python -m kernels.triton.corpus_run --corpus
tests/fixtures/triton/streams``."""

from __future__ import annotations

import triton

from kernels.microbench.hbm_mix import MODES, stream

KERNELS = {"stream": stream}

_BYTES = {"float16": 2, "float32": 4}


def _t(n, dtype, init="randn"):
    return {"shape": [n], "dtype": dtype, "init": init}


def _stream(v, cap):
    dt, mode, block = v["dtype"], v["MODE"], v["BLOCK"]
    n = v["array_mb"] * 2**20 // _BYTES[dt]
    programs = triton.cdiv(n, block)
    tensors = {"X": _t(n, dt), "Y": _t(n, dt, "nan"), "Z": _t(n, dt)}
    if mode == "read":  # one fp32 sum per program into Z
        tensors["Z"] = _t(programs, "float32", "nan")
        ref = {"op": "torch", "out": "Z", "expr": f"X.reshape({programs}, {block}).sum(1)"}
    elif mode == "write":
        ref = {"op": "torch", "out": "Y", "expr": f"(torch.arange({n}, device=X.device) % 256).float()"}
    elif mode == "copy":
        ref = {"op": "torch", "out": "Y", "expr": "X"}
    elif mode == "add":
        ref = {"op": "torch", "out": "Y", "expr": "X + Z"}
    elif mode == "split":
        ref = {"op": "torch", "out": "Z", "expr": "-X"}
    else:  # inplace
        ref = {"op": "torch", "out": "X", "expr": "2 * X"}
    args = [("x_ptr", {"tensor": "X"}), ("y_ptr", {"tensor": "Y"}), ("z_ptr", {"tensor": "Z"}), ("n", n)]
    return tensors, args, {"MODE": mode, "BLOCK": block}, [programs, 1, 1], ref


BUILDERS = {"stream": _stream}

VARIANTS = [
    {"name": f"stream_{mode}_{dt[5:]}_{mb}mb_b{block}_w{warps}", "kernel": "stream", "targets": (90,),
     "num_warps": warps, "num_stages": 1, "MODE": mode, "BLOCK": block, "dtype": dt, "array_mb": mb}
    for dt in ("float16", "float32") for mb in (32, 512) for mode in MODES for block, warps in ((1024, 4), (4096, 8))
]


def flops(variant) -> None:
    return None
