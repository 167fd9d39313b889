"""v5's mbarrier round trip alone, with a TMA load landing at a chosen moment around it (issue 16).

kernels/microbench/mbar_roundtrip.cu: one CTA of one warpgroup; each iteration thread 0 may
issue a v5 stage's two tensor loads (A 128 x 64 and B N x 64 fp16, 16 + N/4 KiB), every thread
spins ``delay`` cycles, the warpgroup may run the kernels' block of eight wgmma and wait for it,
and then the round trip v5_parts measured: thread 0 arrives on a count-1 mbarrier, every thread
try_waits on it (TVM's loop).  Thread 0 records the cycles of each part and its failed tries.

The question: does a load landing in the SM's shared memory while the round trip runs make it
slower?  v5_parts found the same round trip costs ~145 cycles a k-iteration in v5, whose next
stage lands around it, and ~90 in v4, where nothing lands then.  Sweeping ``delay`` moves the
round trip across the load's landing; ``load 0`` is the control.  Run on the GPU machine:

    python -m kernels.runner.mbar_roundtrip --cubin B/mbar_roundtrip.sm_90a.cubin --out results.jsonl

One JSON line per (N, mma, load, delay): each part's median and mean cycles over the iterations
(the first two left out), the failed tries, and the kernel-only time.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_issue import TensorMap

ITERS = 64
KT = 16
"""k-tiles of the A and B tensors the loads walk (A 128 x 1024, B N x 1024 fp16: in L2)."""
SKIP = 2
"""Iterations left out of the statistics (the first loads' descriptor fetch, the first try_waits)."""
FIELDS = ("to_block", "block", "round_trip", "to_landed", "failed_tries")
"""What the kernel records per iteration (thread 0), in its order."""
DELAYS = tuple(range(0, 1600, 100))
CONTROL_DELAYS = (0, 500, 1000)


def stage_bytes(n: int) -> int:
    return 128 * 128 + n * 128


def configs() -> list[tuple[int, int, int, int]]:
    """(N, mma, load, delay): loads at every delay, the no-load control at three."""
    out = []
    for n in (128, 64):
        for mma in (1, 0):
            out += [(n, mma, 1, d) for d in DELAYS]
            out += [(n, mma, 0, d) for d in CONTROL_DELAYS]
    return out


def summarize(records: list[list[int]]) -> dict:
    """Each field's median and mean over the iterations kept."""
    kept = records[SKIP:]
    out = {}
    for j, name in enumerate(FIELDS):
        values = [r[j] for r in kept]
        out[name] = {"median": statistics.median(values), "mean": round(statistics.fmean(values), 1),
                     "min": min(values), "max": max(values)}
    return out


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    f16 = torch.float16
    a = torch.randn(128, KT * 64, device="cuda", dtype=f16)
    rows: list[dict] = []
    fns: dict[int, object] = {}
    for n, mma, load, delay in configs():
        b = torch.randn(n, KT * 64, device="cuda", dtype=f16)
        a_map, b_map = TensorMap(drv, a.data_ptr(), KT * 64, 128), TensorMap(drv, b.data_ptr(), KT * 64, n, box_rows=n)
        smem = 2 * stage_bytes(n)
        if n not in fns:
            fns[n] = drv.function(cubin, f"mbar_roundtrip_n{n}", smem)
        rec = torch.zeros(ITERS * len(FIELDS), dtype=torch.int64, device="cuda")
        args = [a_map.value, b_map.value, ctypes.c_int(ITERS), ctypes.c_int(KT), ctypes.c_int(load), ctypes.c_int(mma),
                ctypes.c_int(delay), ctypes.c_void_p(rec.data_ptr()), ctypes.c_void_p(0)]

        def rewrite(a=a, b=b):
            a.add_(0)
            b.add_(0)
        t = T.kernel_time(torch, drv.launcher(fns[n], 1, 128, smem, stream, args), reps=reps, warmup=2, before=rewrite)
        flat = rec.cpu().tolist()
        records = [flat[i * len(FIELDS):(i + 1) * len(FIELDS)] for i in range(ITERS)]
        row = {"n": n, "mma": mma, "load": load, "delay": delay, "iters": ITERS, "skip": SKIP, "smem": smem,
               "stage_bytes": stage_bytes(n), **summarize(records), "kernel_ms": t}
        print(f"N {n:3} mma {mma} load {load} delay {delay:4}: to_block {row['to_block']['median']:6} block "
              f"{row['block']['median']:6} round trip {row['round_trip']['median']:5} (mean {row['round_trip']['mean']:6}, "
              f"max {row['round_trip']['max']:5}) landed {row['to_landed']['median']:6} failed tries "
              f"{row['failed_tries']['mean']:5}", flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("mbar_roundtrip", __doc__, argv, measure, 3, "JSON lines, one per (N, mma, load, delay)")


if __name__ == "__main__":
    sys.exit(main())
