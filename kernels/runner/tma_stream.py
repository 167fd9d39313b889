"""TMA loads alone, on the GPU (issue 16: the copy engine, L2 and HBM as the TMA steps load).

kernels/microbench/tma_stream.cu issues, from one thread per CTA, one A and one B chunk per
k-iteration into a ring of ``depth`` stages (one mbarrier each, arrive.expect_tx), refilling a
stage as soon as its wait returns; CTA b reads the A chunks of m = b % gm and the B chunks of
n = b / gm, as the GEMM's raster shares them.  No MMA: what is left is the copy path.  Run on
the GPU machine:

    python -m kernels.runner.tma_stream --cubin B/tma_stream.sm_90a.cubin --out results.jsonl

Four sweeps, one JSON line per configuration (kernel-only time and each CTA's clock64 cycles):

* ``latency``: one CTA, one chunk in flight (depth 1, A only), 2-32 KiB -- the unloaded latency
  of an L2 hit (the profile's ``tma_l2_latency`` table was measured with 2-D tensor loads);
* ``sm``: one CTA, A + B 16 KiB chunks, depth 1-6 -- what one SM's copy engine sustains;
* ``chip``: 132 x c CTAs (c = 1-4 per SM), depth 1-4, 16 KiB chunks, inputs in L2 -- the chip's
  L2 -> shared memory rate as the GEMMs draw on it;
* ``gemm``: the v4 kernel's loads at M = N = K = 4096 (1024 CTAs, 3 per SM, 2 stages of A + B
  16 KiB), inputs written just before as the GEMM runner does, and again at 2048^2 x 4096.

``--small`` runs one other sweep instead, ``small``: A + B chunks of 2-16 KiB, 1 to 8 CTAs on
every SM, 2 stages, 32 k-iterations, inputs in L2, as 1-D bulk copies and as 2-D tensor boxes of
128-byte rows (``tma_stream_2d``) -- the chip's L2 -> shared rate once enough is in flight, and
how small chunks fare (Triton's 64 x 64 x 32 tiles load 4 KiB boxes).
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit, take_flag

SM_COUNT = 132
SMEM_PER_SM = 233472
"""Shared memory per SM on the H200 (228 KiB; CUDA guide, compute capability 9.0)."""
SMEM_RESERVED = 1024
"""Per CTA, reserved by the system (CUDA guide, compute capability 9.0)."""
STATIC_SMEM = 2048
"""The kernel's static shared memory, counted high: ``ptxas -v`` reports 1,024 B (the mbarriers,
padded so that the 1024-aligned dynamic buffer follows them) and ``cuobjdump -res-usage`` 2,048.
Counting 2,048 (beside the 1 KiB reserved per CTA) costs a CTA at most 1 KiB of dynamic shared
memory, never a CTA an SM.  It was 128 here until 2026-12-01: each multi-CTA row then got one CTA
an SM fewer than its ``ctas_per_sm`` says (2/SM ran one at a time; the records of 79795f2 carry
that).  tests/test_microbench_sizing.py checks it against ptxas where nvcc is installed."""
CHUNK = 16384
"""A 128 x 64 fp16 tile: what the TMA steps load per operand per k-iteration."""


SMEM_ALONE = 200 * 1024
"""One CTA per SM: more than half an SM's shared memory (the driver refuses the full 227 KiB
opt-in for this kernel: CUDA_ERROR_INVALID_VALUE on the first run)."""


def smem_for(per_sm: int) -> int:
    """Dynamic shared memory that lets exactly ``per_sm`` CTAs share an SM."""
    return SMEM_ALONE if per_sm == 1 else SMEM_PER_SM // per_sm - SMEM_RESERVED - STATIC_SMEM


class Stream:
    def __init__(self, torch, cubin: bytes, reps: int):
        self.torch, self.reps = torch, reps
        self.drv = Driver()
        self.stream = torch.cuda.current_stream().cuda_stream
        self.fn = {}
        self.cubin = cubin

    def function(self, smem: int, name: str = "tma_stream"):
        if (name, smem) not in self.fn:  # the attribute is per function handle: one load per smem size
            self.fn[name, smem] = self.drv.function(self.cubin, name, smem if smem > 48 * 1024 else 0)
        return self.fn[name, smem]

    def run(self, *, grid: int, per_sm: int, depth: int, chunk: int, kt: int, gm: int, a, b, label: str,
            before=None, tensor: bool = False) -> dict:
        """``tensor``: through 2-D tensor maps (``tma_stream_2d``: boxes of chunk / 128 rows of
        (rows, 64) fp16 tensors), else 1-D bulk copies."""
        torch = self.torch
        per_k = chunk * (2 if b is not None else 1)
        smem = smem_for(per_sm) if grid > 1 else depth * per_k  # one CTA alone: what it needs
        if depth * per_k > smem:
            raise ValueError(f"{label}: depth {depth} x {per_k} B does not fit {per_sm} CTA(s) per SM")
        a_chunks = a.numel() * a.element_size() // chunk
        b_chunks = b.numel() * b.element_size() // chunk if b is not None else 1
        cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
        issue = torch.zeros(grid, dtype=torch.int64, device="cuda")
        span = torch.zeros(2 * grid, dtype=torch.int64, device="cuda")
        outs = [ctypes.c_void_p(cycles.data_ptr()), ctypes.c_void_p(issue.data_ptr()), ctypes.c_void_p(span.data_ptr())]
        if tensor:
            from .tma_issue import TensorMap

            rows = chunk // 128
            maps = [TensorMap(self.drv, t.data_ptr(), 64, t.numel() // 64, box_rows=rows) for t in (a, b)]
            args = [maps[0].value, maps[1].value, ctypes.c_int(rows), ctypes.c_int(kt), ctypes.c_int(gm),
                    ctypes.c_int(depth), ctypes.c_int(a_chunks), ctypes.c_int(b_chunks), *outs]
        else:
            args = [ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr() if b is not None else 0), ctypes.c_int(chunk),
                    ctypes.c_int(kt), ctypes.c_int(gm), ctypes.c_int(depth), ctypes.c_int(a_chunks), ctypes.c_int(b_chunks),
                    *outs]
        fn = self.function(smem, "tma_stream_2d" if tensor else "tma_stream")
        t = T.kernel_time(torch, self.drv.launcher(fn, grid, 32, smem, self.stream, args),
                          reps=self.reps, warmup=2, before=before)
        per_k_cycles = [c / kt for c in cycles.cpu().tolist()]
        issue_per_k = [c / kt for c in issue.cpu().tolist()]
        stamps = span.cpu().tolist()  # the last repetition's: each CTA's first and last globaltimer
        inside_us = (max(stamps[1::2]) - min(stamps[0::2])) / 1e3
        moved = grid * kt * per_k
        row = {"sweep": label, "copy": "tensor_2d" if tensor else "bulk_1d", "grid": grid, "ctas_per_sm": per_sm, "depth": depth, "chunk": chunk, "operands": 2 if b is not None else 1,
               "kt": kt, "gm": gm, "smem": smem, "bytes": moved,
               "cycles_per_k_median": round(statistics.median(per_k_cycles), 1),
               "cycles_per_k_max": round(max(per_k_cycles), 1),
               "issue_cycles_per_k_median": round(statistics.median(issue_per_k), 1),
               "cta_bytes_per_cycle_median": round(per_k / statistics.median(per_k_cycles), 2),
               "inside_us": round(inside_us, 3), "outside_us": round(t["median"] * 1e3 - inside_us, 3),
               "tb_per_s_kernel": round(moved / (t["median"] * 1e-3) / 1e12, 3), "kernel_ms": t}
        print(f"{label:<8} {row['copy']:<9} grid {grid:>5} {per_sm}/SM depth {depth} chunk {chunk:>6} x{row['operands']}: "
              f"{row['cycles_per_k_median']:8.1f} cycles/k (max {row['cycles_per_k_max']:8.1f}, issue {row['issue_cycles_per_k_median']:6.1f}), "
              f"kernel {t['median'] * 1e3:9.2f} us (inside {inside_us:8.2f}), {row['tb_per_s_kernel']:6.2f} TB/s", flush=True)
        return row


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    s = Stream(torch, cubin, reps)
    f16 = torch.float16
    rows = []
    small = torch.randn(64 * 32768 // 2, device="cuda", dtype=f16)  # 2 MB: written just now, in L2
    for chunk in (2048, 8192, 16384, 32768):
        rows.append(s.run(grid=1, per_sm=1, depth=1, chunk=chunk, kt=64, gm=1, a=small, b=None, label="latency"))
    a = torch.randn(128 * CHUNK // 2, device="cuda", dtype=f16)
    b = torch.randn(128 * CHUNK // 2, device="cuda", dtype=f16)
    for depth in (1, 2, 3, 4, 6):
        rows.append(s.run(grid=1, per_sm=1, depth=depth, chunk=CHUNK, kt=128, gm=1, a=a, b=b, label="sm"))
    # The fixed cost: few k-iterations, one CTA and one per SM (inside vs outside every CTA).
    for grid in (1, SM_COUNT):
        for kt in (1, 4, 16, 64):
            rows.append(s.run(grid=grid, per_sm=1, depth=2, chunk=CHUNK, kt=kt, gm=grid, a=a, b=b, label="fixed"))
    # The chip: 32 m-rows of 32 k-chunks (16 MB) and up to 17 n-columns (8.9 MB): all in L2.
    kt, gm = 32, 32
    a = torch.randn(gm * kt * CHUNK // 2, device="cuda", dtype=f16)
    b = torch.randn(-(-SM_COUNT * 4 // gm) * kt * CHUNK // 2, device="cuda", dtype=f16)
    for per_sm in (1, 2, 3, 4):
        for depth in (1, 2, 4):
            if depth * 2 * CHUNK > smem_for(per_sm):
                continue
            a.add_(0)
            b.add_(0)  # rewritten just before: in L2
            rows.append(s.run(grid=SM_COUNT * per_sm, per_sm=per_sm, depth=depth, chunk=CHUNK, kt=kt, gm=gm, a=a, b=b,
                              label="chip"))
    # The v4 kernel's loads (4096^3: 1024 CTAs, 64 k-iterations; 2048^2 x 4096: 256 CTAs), its
    # inputs written just before each launch as kernels.runner.gemm leaves them.
    for size, grid in ((4096, 1024), (2048, 256)):
        kt, gm = 4096 // 64, size // 128
        a = torch.randn(size * 4096, device="cuda", dtype=f16)
        b = torch.randn(size * 4096, device="cuda", dtype=f16)

        def rewrite(a=a, b=b):
            a.add_(0)
            b.add_(0)
        rows.append(s.run(grid=grid, per_sm=3, depth=2, chunk=CHUNK, kt=kt, gm=gm, a=a, b=b, label="gemm", before=rewrite))
    return rows


def measure_small(torch, cubin: bytes, reps: int) -> list[dict]:
    """The ``small`` sweep (module doc): chunk size x CTAs an SM, bulk and tensor: the chip's L2 -> shared rate."""
    s = Stream(torch, cubin, reps)
    f16 = torch.float16
    rows = []
    kt, gm = 32, 32
    for chunk in (2048, 4096, 8192, 16384):
        a = torch.randn(gm * kt * chunk // 2, device="cuda", dtype=f16)  # A + B <= 34 MB: in L2 once written
        b = torch.randn(-(-SM_COUNT * 8 // gm) * kt * chunk // 2, device="cuda", dtype=f16)
        for tensor in (False, True):
            for per_sm in (1, 2, 4, 8):
                if 2 * 2 * chunk > smem_for(per_sm):
                    continue
                a.add_(0)
                b.add_(0)  # rewritten just before: in L2
                rows.append(s.run(grid=SM_COUNT * per_sm, per_sm=per_sm, depth=2, chunk=chunk, kt=kt, gm=gm, a=a, b=b,
                                  label="small", tensor=tensor))
    return rows


def main(argv: list[str] | None = None) -> int:
    small, argv = take_flag(argv, "--small")
    return cubin_bench_exit("tma_stream", __doc__, argv, measure_small if small else measure, 10,
                            "JSON lines, one per (sweep, grid, depth, chunk)",
                            epilog="--small: only the small-chunk sweep")


if __name__ == "__main__":
    sys.exit(main())
