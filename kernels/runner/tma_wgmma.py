"""TMA loads and wgmma on the same stages, alone and together, at 1 to several CTAs an SM (issue 16).

kernels/microbench/tma_wgmma.cu runs the TMA GEMMs' k-loop without its prologue and epilogue:
per k-iteration one warpgroup waits on the stage, issues the kernels' block of eight wgmma
m64nNk16 on it (mma), joins, and thread 0 refills the stage with an A 128 x 64 and a B N x 64
box (load).  Three modes per configuration:

* ``load``: the loads without the wgmma -- the copy path at that co-residency;
* ``mma``: the wgmma without loads (the stage's barrier completes with a plain arrive; the block
  re-reads what is in shared memory) -- the tensor core's rate when CTAs share an SM;
* ``both``: the k-loop as the GEMMs run it.

``tma_wgmma_n128_wg2`` splits the block over two warpgroups of one CTA, each issuing the four
wgmma of its 64-row half (Triton's ``num_warps = 8``).

If ``both`` takes longer per SM than the slower of ``load`` and ``mma``, the two contend for
something that neither uses up alone.  Run on the GPU machine:

    python -m kernels.runner.tma_wgmma --cubin B/tma_wgmma.sm_90a.cubin --out results.jsonl

One JSON line per (N, CTAs an SM, depth, mode): kernel-only time, each CTA's clock64 cycles per
k-iteration, and the SM's cycles per k-iteration two ways: kernel time x clock x SMs / (CTAs x
k-iterations) (the ~3 us a launch costs included) and, inside the loop, a CTA's cycles / CTAs an SM.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_issue import TensorMap
from .tma_stream import SM_COUNT, smem_for

# ``cuobjdump -res-usage``: SHARED 2,048 for every tma_wgmma_n* function (the mbarriers), as for
# the stream kernels, so tma_stream's smem_for sizes the co-residency here too.
CLOCK_GHZ = 1.98
"""The H200's SM clock under load (results/silicon/microbench/2026-12-01_h200_sm_clock.md)."""
MODES = {"load": (1, 0), "mma": (0, 1), "both": (1, 1)}
GM = 32
"""m-rows of the raster: CTA b works on (b % 32, b / 32), as the GEMMs' 2-D grid at M = 4096."""


def stage_bytes(n: int) -> int:
    return 128 * 128 + n * 128


def dynamic_smem(n: int, depth: int, per_sm: int) -> int | None:
    """The dynamic shared memory that lets exactly ``per_sm`` CTAs share an SM (one alone: what
    its stages need); None where ``depth`` stages do not fit that many."""
    need = depth * stage_bytes(n)
    if per_sm == 1:
        return need
    return smem_for(per_sm) if need <= smem_for(per_sm) else None


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    f16 = torch.float16
    kt = 32
    rows: list[dict] = []
    # A: 32 m-rows of 128 x (kt * 64); B: enough n-rows for 8 CTAs an SM.  Inputs rewritten before
    # each launch (in L2, as the GEMM runner leaves them).
    a = torch.randn(GM * 128, kt * 64, device="cuda", dtype=f16)
    fns = {}
    for name, n, per_sms in (("tma_wgmma_n128", 128, (1, 2, 3)), ("tma_wgmma_n128_wg2", 128, (1, 2, 3)),
                             ("tma_wgmma_n64", 64, (1, 2, 3, 4)), ("tma_wgmma_n16", 16, (1, 2, 4, 8))):
        threads = 256 if name.endswith("_wg2") else 128
        b = torch.randn(-(-SM_COUNT * max(per_sms) // GM) * n, kt * 64, device="cuda", dtype=f16)
        a_map, b_map = TensorMap(drv, a.data_ptr(), kt * 64, a.shape[0]), TensorMap(drv, b.data_ptr(), kt * 64, b.shape[0], box_rows=n)
        for depth in (1, 2):
            for per_sm in per_sms:
                smem = dynamic_smem(n, depth, per_sm)
                if smem is None:
                    continue
                key = (name, smem)
                if key not in fns:
                    fns[key] = drv.function(cubin, name, smem)  # always: 48 KiB + the static 2 KiB needs it
                grid = SM_COUNT * per_sm
                for mode, (load, mma) in MODES.items():
                    cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
                    args = [a_map.value, b_map.value, ctypes.c_int(kt), ctypes.c_int(depth), ctypes.c_int(load),
                            ctypes.c_int(mma), ctypes.c_int(GM), ctypes.c_void_p(cycles.data_ptr()), ctypes.c_void_p(0)]

                    def rewrite(a=a, b=b):
                        a.add_(0)
                        b.add_(0)
                    t = T.kernel_time(torch, drv.launcher(fns[key], grid, threads, smem, stream, args), reps=reps, warmup=2,
                                      before=rewrite)
                    per_k = [c / kt for c in cycles.cpu().tolist()]
                    sm_per_k = t["median"] * 1e-3 * CLOCK_GHZ * 1e9 * SM_COUNT / (grid * kt)
                    row = {"kernel": name, "n": n, "warpgroups": threads // 128, "ctas_per_sm": per_sm, "depth": depth, "mode": mode, "grid": grid, "kt": kt,
                           "smem": smem, "cta_cycles_per_k_median": round(statistics.median(per_k), 1),
                           "cta_cycles_per_k_max": round(max(per_k), 1), "sm_cycles_per_k": round(sm_per_k, 1),
                           "sm_cycles_per_k_inside": round(statistics.median(per_k) / per_sm, 1),
                           "kernel_ms": t}
                    print(f"{name:<19} {per_sm}/SM depth {depth} {mode:<4}: CTA {row['cta_cycles_per_k_median']:8.1f} cycles/k "
                          f"(max {row['cta_cycles_per_k_max']:8.1f}), SM {sm_per_k:7.1f} cycles/k "
                          f"({row['sm_cycles_per_k_inside']:7.1f} inside), kernel {t['median'] * 1e3:8.2f} us",
                          flush=True)
                    rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("tma_wgmma", __doc__, argv, measure, 10, "JSON lines, one per (N, CTAs an SM, depth, mode)")


if __name__ == "__main__":
    sys.exit(main())
