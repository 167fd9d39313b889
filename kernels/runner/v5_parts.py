"""The seed's v5 kernel with parts of its k-loop switched off, on the GPU (issue 16: v5's
per-k-iteration gap).

kernels/microbench/v5_parts.py builds, per config (one CTA, 128 x BLK_N, PIPE_DEPTH 2, K 1024 and
4096; v5 and, as the control, v4), the kernel as TVM builds it (``p3``), without the ``mma_bar``
round trip (``p2``), without the waits' timeout clock (``p1``), without both (``p0``), and with
thread 0's arrive and wait but warps 1-3 not waiting (``p7``); this
times each kernel-only with its inputs in L2 (written once before the first launch).  Run on the GPU
machine:

    python -m kernels.runner.v5_parts --cubin B/v5_parts_128x128x1024_n128_p3.sm_90a.cubin --out results.jsonl

(``--cubin`` names any one of the cubins; the others, listed in the folder's ``v5_parts.json``
that the build writes, are read from beside it.)  One JSON line per
(config, parts): kernel-only time, the largest error of the product against fp32, and the
runner's timeout word.  The k-iteration is the slope between K 1024 and 4096 of one BLK_N and
parts, printed at the end (and computed again from the records by whoever reads them).
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

from . import timing as T
from kernels.microbench.v5_parts import LIGHT_K, STAMP_SLOTS, STAMPS  # no tvm at import: the build's own imports are inside build()

from .launch_cost import Driver, folder_bench_exit
from .tma_issue import CU_TENSOR_MAP_SWIZZLE_NONE, TensorMap
from .v3_parts import CLOCK_GHZ, DIAG_WORDS

PARTS = {3: "as built", 2: "no mma_bar round trip", 1: "no timeout clock", 0: "neither", 7: "warps 1-3 do not wait",
         11: "as built, clock stamps", 19: "as built, light stamps", 35: "as built, loop clock",
         34: "no mma_bar round trip, loop clock", 39: "warps 1-3 do not wait, loop clock",
         99: "no TMA wait, loop clock", 163: "no wgmma block, loop clock",
         291: "one wgmma of 8, loop clock"}


def stamp_parts(stamps: list[int], iterations: int) -> dict:
    """Per stamp point, the median cycles after the same k-iteration's top, and the median
    k-iteration (top to top); k-iterations 2 .. iterations - 3 (no first-load effects, and v5's
    last two issue no loads)."""
    import statistics

    ks = range(2, iterations - 2)
    row = {name: statistics.median(stamps[k * STAMP_SLOTS + s] - stamps[k * STAMP_SLOTS] for k in ks)
           for s, name in enumerate(STAMPS) if s}
    row["iteration"] = statistics.median(stamps[(k + 1) * STAMP_SLOTS] - stamps[k * STAMP_SLOTS] for k in ks)
    return row


def one_tile_operands(torch, drv: Driver, m: int, n: int, k: int, bn: int):
    """What a Hopper GEMM kernel of one CTA row needs: A (m x k), B (n x k) and D (m x n) in fp16
    on the GPU, the diag words, the three tensor maps (A and B loaded in BLK_N-row boxes, D stored
    unswizzled) and the fp32 product to check D against."""
    A = torch.randn(m, k, dtype=torch.float16, device="cuda")
    B = torch.randn(n, k, dtype=torch.float16, device="cuda")
    D = torch.empty(m, n, dtype=torch.float16, device="cuda")
    diag = torch.zeros(DIAG_WORDS, dtype=torch.int32, device="cuda")
    maps = (TensorMap(drv, A.data_ptr(), k, m), TensorMap(drv, B.data_ptr(), k, n, box_rows=bn),
            TensorMap(drv, D.data_ptr(), n, m, box_rows=128, box_inner=bn, swizzle=CU_TENSOR_MAP_SWIZZLE_NONE))
    return A, B, D, diag, maps, A.float() @ B.float().T


def kernel_args(maps, diag) -> list:
    """The kernels' arguments with no delay knob set and a timeout no run reaches: (A_map, B_map,
    D_map, diag, consumer_delay_ns, lag_ns, lag_warp, producer_delay_ns, timeout_cycles)."""
    return [*(t.value for t in maps), ctypes.c_void_p(diag.data_ptr()), ctypes.c_int(0), ctypes.c_int(0),
            ctypes.c_int(-1), ctypes.c_int(0), ctypes.c_int64(1 << 40)]


def measure(torch, folder: Path, reps: int) -> list[dict]:
    """Every kernel of ``v5_parts.json`` (the build's manifest: config, dynamic shared memory)."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    manifest = json.loads((folder / "v5_parts.json").read_text())
    rows = []
    for name, c in manifest.items():
        m, n, k, bn = c["M"], c["N"], c["K"], c["BLK_N"]
        A, B, D, diag, maps, ref = one_tile_operands(torch, drv, m, n, k, bn)
        for parts, what in PARTS.items():
            cubin = folder / f"{name}_p{parts}.sm_90a.cubin"
            if not cubin.is_file():  # a run may carry only some of the variants
                continue
            fn = drv.function(cubin.read_bytes(), "kernel_kernel", c["smem"])
            args = kernel_args(maps, diag)
            D.fill_(float("nan"))
            diag.zero_()
            t = T.kernel_time(torch, drv.launcher(fn, 1, 128, c["smem"], stream, args), reps=reps, warmup=2)
            torch.cuda.synchronize()
            err = float((D.float() - ref).abs().max().item())
            rows.append({"step": c["step"], "config": {"M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": 2}, "parts": parts,
                         "parts_kept": what, "grid": 1, "smem": c["smem"], "kernel_ms": t,
                         "max_abs_error": err if err == err else "nan", "diag_timeouts": int(diag[0].item())})
            if parts & 32:  # clock64 before and after the k-loop
                start, end = drv.read_int64s(fn, "protosim_stamps")[:2]
                rows[-1]["loop_cycles"] = end - start
            if parts & 16:  # one k-iteration's stamps, from registers after the loop
                light = drv.read_int64s(fn, "protosim_stamps")[:len(STAMPS) + 1]
                rows[-1]["light_stamps"] = light
                rows[-1]["stamp_parts"] = {**{name: light[s] - light[0] for s, name in enumerate(STAMPS) if s},
                                           "iteration": light[len(STAMPS)] - light[0]}
                print(f"  light stamps, cycles after k-iteration {LIGHT_K}'s top: {rows[-1]['stamp_parts']}", flush=True)
            elif parts & 8:  # the last launch's stamps
                stamps = drv.read_int64s(fn, "protosim_stamps")
                rows[-1]["stamps"] = stamps[:(k // 64) * STAMP_SLOTS]
                rows[-1]["stamp_parts"] = stamp_parts(stamps, k // 64)
                print(f"  stamps, cycles after the k-iteration's top: {rows[-1]['stamp_parts']}", flush=True)
            print(f"{c['step']} 128x{n}x{k} n{bn} parts {parts} ({what:<22}): {t['median'] * 1e3:8.2f} us, max |err| {err:.3g}",
                  flush=True)
        del A, B, D, diag
    for step, bn, parts in sorted({(r["step"], r["config"]["BLK_N"], r["parts"]) for r in rows}):
        ks = {r["config"]["K"]: r["kernel_ms"]["median"] for r in rows
              if (r["step"], r["config"]["BLK_N"], r["parts"]) == (step, bn, parts)}
        if len(ks) == 2:
            (k0, t0), (k1, t1) = sorted(ks.items())
            line = (f"{step} BLK_N {bn:>3} parts {parts} ({PARTS[parts]:<22}): "
                    f"{(t1 - t0) * 1e6 * CLOCK_GHZ / ((k1 - k0) // 64):7.0f} cycles per k-iteration at {CLOCK_GHZ} GHz")
            loops = {r["config"]["K"]: r["loop_cycles"] for r in rows
                     if (r["step"], r["config"]["BLK_N"], r["parts"]) == (step, bn, parts) and "loop_cycles" in r}
            if len(loops) == 2:  # the same slope in clock64 cycles, and the clock it implies
                c0, c1 = loops[k0], loops[k1]
                line += (f"; clock64: {(c1 - c0) / ((k1 - k0) // 64):7.1f} cycles per k-iteration, "
                         f"{(c1 - c0) / ((t1 - t0) * 1e6):.3f} GHz")
            print(line, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return folder_bench_exit("v5_parts", __doc__, argv, measure, 20, "JSON lines, one per (config, parts)")


if __name__ == "__main__":
    sys.exit(main())
