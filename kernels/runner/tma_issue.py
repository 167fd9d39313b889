"""The issue path of a 2-D tensor TMA load, on the GPU (issue 16: where the TMA steps' issue cost
sits -- before the bytes leave, or after).

kernels/microbench/tma_issue.cu brackets, with clock64, the ``cp.async.bulk.tensor`` instruction
the Hopper TMA steps issue (a 128 x 64 fp16 box of a row-major tensor, 128B swizzle, the tensor
map a ``__grid_constant__`` parameter encoded as the GEMM kernels encode theirs), the
``arrive.expect_tx`` before it, and the load's landing (its mbarrier wait returning) measured
from the start of its issue.  Run on the GPU machine:

    python -m kernels.runner.tma_issue --cubin B/tma_issue.sm_90a.cubin --out results.jsonl

One JSON line per (mode, grid, L2 state): cycles per k-iteration (median over the CTAs) of each
bracket after the first k-iteration, and the first k-iteration's own (the descriptor's first use).
"""

from __future__ import annotations

import ctypes
import statistics
import sys
from pathlib import Path

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit, take_flag
from .sm_blocker import Spinners

MODES = {0: "one load", 1: "A and B", 2: "expect_tx", 3: "empty bracket", 4: "A, B, then expect_tx"}
"""Mode 4 is the GEMM kernels' order; its third number is the arrive.expect_tx after the loads, not a landing."""
KT = 64
ROWS = 132 * 128
"""One 128-row block per CTA (up to 132 CTAs)."""
LAYOUTS = {"inputs": 8, "flushed": 64}
"""Boxes per row, by L2 state: ``inputs`` -- K = 512 (2 x 17 MB, in L2 once written), the 64
k-iterations cycling over the row's 8 boxes; ``flushed`` -- K = 4096 (2 x 138 MB, L2 flushed
before each launch), every box read once: from DRAM.  (A first run used K = 4096 for both: its
"inputs" read DRAM too.)"""
CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6
CU_TENSOR_MAP_SWIZZLE_NONE = 0
CU_TENSOR_MAP_SWIZZLE_128B = 3


class TensorMap:
    """A CUtensorMap (128 bytes, 64-byte aligned) encoded by the driver, as kernels/tirx/hopper.py
    encodes A_map: (K, rows) fp16, row stride K * 2 bytes, box 64 x 128, no interleave, 128B
    swizzle, no L2 promotion, no OOB fill.  ``box_inner`` and ``swizzle`` give their D_map
    (box BLK_N x 128, no swizzle)."""

    def __init__(self, drv: Driver, ptr: int, k: int, rows: int, box_rows: int = 128, box_inner: int = 64,
                 swizzle: int = CU_TENSOR_MAP_SWIZZLE_128B):
        self._raw = (ctypes.c_uint8 * 192)()
        base = (ctypes.addressof(self._raw) + 63) // 64 * 64
        self.value = (ctypes.c_uint64 * 16).from_address(base)
        dims = (ctypes.c_uint64 * 2)(k, rows)
        strides = (ctypes.c_uint64 * 1)(k * 2)
        box = (ctypes.c_uint32 * 2)(box_inner, box_rows)
        estr = (ctypes.c_uint32 * 2)(1, 1)
        drv.check(drv.lib.cuTensorMapEncodeTiled(ctypes.c_void_p(base), CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, ctypes.c_void_p(ptr),
                                                 dims, strides, box, estr, 0, swizzle, 0, 0),
                  "cuTensorMapEncodeTiled")


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    smem = 2 * 16384
    fn = drv.function(cubin, "tma_issue", 0)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")  # 256 MB: more than the 50 MB L2
    rows = []
    for l2, kwrap in LAYOUTS.items():
        a = torch.randn(ROWS, kwrap * 64, device="cuda", dtype=torch.float16)
        b = torch.randn(ROWS, kwrap * 64, device="cuda", dtype=torch.float16)
        a_map, b_map = TensorMap(drv, a.data_ptr(), kwrap * 64, ROWS), TensorMap(drv, b.data_ptr(), kwrap * 64, ROWS)
        for grid in (1, 132):
            for mode in (3, 2, 0, 1, 4):
                out = torch.zeros(8 * grid, dtype=torch.int64, device="cuda")
                args = [a_map.value, b_map.value, ctypes.c_int(KT), ctypes.c_int(kwrap), ctypes.c_int(mode),
                        ctypes.c_int(16384), ctypes.c_void_p(out.data_ptr())]
                before = (lambda: flush.fill_(1)) if l2 == "flushed" else (lambda a=a, b=b: (a.add_(0), b.add_(0)))
                t = T.kernel_time(torch, drv.launcher(fn, grid, 32, smem, stream, args), reps=reps, warmup=2, before=before)
                o = out.view(grid, 8).cpu().tolist()
                n = o[0][6]
                med = [statistics.median(r[i] / n for r in o) for i in range(3)]
                first = [statistics.median(r[3 + i] for r in o) for i in range(3)]
                row = {"mode": mode, "what": MODES[mode], "grid": grid, "l2": l2, "kt": KT, "boxes_per_row": kwrap,
                       "bracket1_cycles": round(med[0], 1), "bracket2_cycles": round(med[1], 1), "landing_cycles": round(med[2], 1),
                       "first_bracket1_cycles": first[0], "first_bracket2_cycles": first[1], "first_landing_cycles": first[2],
                       "kernel_ms": t}
                rows.append(row)
                print(f"{MODES[mode]:<13} grid {grid:>3} L2 {l2:<7}: bracket1 {med[0]:7.1f} bracket2 {med[1]:7.1f} "
                      f"landing {med[2]:7.1f} | first k: {first[0]:6.0f} {first[1]:6.0f} {first[2]:6.0f}", flush=True)
    # The landing by box size (one CTA, one load in flight): the profile's L2 and DRAM tables' sizes.
    for l2, kwrap in LAYOUTS.items():
        a = torch.randn(ROWS, kwrap * 64, device="cuda", dtype=torch.float16)
        for box_rows in (16, 64, 128, 256):
            box_map = TensorMap(drv, a.data_ptr(), kwrap * 64, ROWS, box_rows)
            out = torch.zeros(8, dtype=torch.int64, device="cuda")
            nbytes = box_rows * 64 * 2
            args = [box_map.value, box_map.value, ctypes.c_int(KT), ctypes.c_int(kwrap), ctypes.c_int(0), ctypes.c_int(nbytes),
                    ctypes.c_void_p(out.data_ptr())]
            before = (lambda: flush.fill_(1)) if l2 == "flushed" else (lambda a=a: a.add_(0))
            t = T.kernel_time(torch, drv.launcher(fn, 1, 32, 32768, stream, args), reps=reps, warmup=2, before=before)
            o = out.cpu().tolist()
            n = o[6]
            row = {"sweep": "box size", "mode": 0, "what": MODES[0], "grid": 1, "l2": l2, "kt": KT, "boxes_per_row": kwrap,
                   "box_bytes": nbytes, "bracket1_cycles": round(o[0] / n, 1), "landing_cycles": round(o[2] / n, 1),
                   "first_landing_cycles": o[5], "kernel_ms": t}
            rows.append(row)
            print(f"box {nbytes:>6} B L2 {l2:<7}: bracket {row['bracket1_cycles']:6.1f} landing {row['landing_cycles']:7.1f}"
                  f" | first k {o[5]:6.0f}", flush=True)
    return rows


PER_SM = (1, 2, 3, 4)
"""--per-sm: grids of 132 x c CTAs, one thread each, issuing at once: c CTAs an SM sharing its TMA unit."""


def measure_per_sm(torch, cubin: bytes, reps: int) -> list[dict]:
    """Modes 1 and 4 (the GEMM kernels' A and B loads) with 1-4 CTAs an SM issuing together, inputs
    in L2: whether a CTA's issue of a tensor load is held longer, or lands later, when other CTAs of
    its SM issue theirs (the k-iteration of v4 / v5 grows ~100 cycles for each CTA added to an SM,
    results/silicon/microbench/2026-12-04_h200_cta_drift.md part 3)."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    smem = 2 * 16384
    fn = drv.function(cubin, "tma_issue", 0)
    kwrap = LAYOUTS["inputs"]
    a = torch.randn(ROWS, kwrap * 64, device="cuda", dtype=torch.float16)
    b = torch.randn(ROWS, kwrap * 64, device="cuda", dtype=torch.float16)
    a_map, b_map = TensorMap(drv, a.data_ptr(), kwrap * 64, ROWS), TensorMap(drv, b.data_ptr(), kwrap * 64, ROWS)
    rows = []
    for mode in (1, 4):
        for per_sm in PER_SM:
            grid = 132 * per_sm
            out = torch.zeros(8 * grid, dtype=torch.int64, device="cuda")
            args = [a_map.value, b_map.value, ctypes.c_int(KT), ctypes.c_int(kwrap), ctypes.c_int(mode),
                    ctypes.c_int(16384), ctypes.c_void_p(out.data_ptr())]
            t = T.kernel_time(torch, drv.launcher(fn, grid, 32, smem, stream, args), reps=reps, warmup=2,
                              before=lambda: (a.add_(0), b.add_(0)))
            o = out.view(grid, 8).cpu().tolist()
            n = o[0][6]
            med = [statistics.median(r[i] / n for r in o) for i in range(3)]
            row = {"sweep": "per SM", "mode": mode, "what": MODES[mode], "grid": grid, "per_sm": per_sm, "l2": "inputs",
                   "kt": KT, "boxes_per_row": kwrap, "bracket1_cycles": round(med[0], 1),
                   "bracket2_cycles": round(med[1], 1), "bracket3_cycles": round(med[2], 1), "kernel_ms": t}
            rows.append(row)
            print(f"{MODES[mode]:<21} {per_sm} an SM (grid {grid:>3}): bracket1 {med[0]:7.1f} bracket2 {med[1]:7.1f} "
                  f"bracket3 {med[2]:7.1f}; kernel {t['median'] * 1e3:.1f} us", flush=True)
    # The same 132 CTAs' loads on 132, 66 or 33 SMs (the others held by sm_blocker.cu, spinning on
    # another stream): 1, 2 or 4 an SM while the chip carries 132 CTAs' loads -- the SM's share or the L2's.
    folder = Path(sys.argv[sys.argv.index("--cubin") + 1]).parent if "--cubin" in sys.argv else Path(".")
    if not (folder / "sm_blocker.sm_90a.cubin").is_file():
        print("tma_issue --per-sm: no sm_blocker.sm_90a.cubin beside the cubin: the held-SM runs are skipped", flush=True)
        return rows
    spin = Spinners(torch, drv, folder, 99)
    mode = 1
    for nblock in (0, 66, 99):
        out = torch.zeros(8 * 132, dtype=torch.int64, device="cuda")
        load = drv.launcher(fn, 132, 32, smem, spin.stream.cuda_stream,
                            [a_map.value, b_map.value, ctypes.c_int(KT), ctypes.c_int(kwrap), ctypes.c_int(mode),
                             ctypes.c_int(16384), ctypes.c_void_p(out.data_ptr())])
        meds = []
        for _ in range(reps):
            a.add_(0), b.add_(0)
            spin.run(load, nblock)
            o = out.view(132, 8).cpu().tolist()
            n = o[0][6]
            meds.append([statistics.median(r[i] / n for r in o) for i in range(3)])
        med = [statistics.median(m[i] for m in meds) for i in range(3)]
        row = {"sweep": "per SM, SMs held", "mode": mode, "what": MODES[mode], "grid": 132, "held_sms": nblock,
               "held_started": spin.spinning(), "per_sm": 132 / (132 - nblock), "l2": "inputs", "kt": KT,
               "boxes_per_row": kwrap, "bracket1_cycles": round(med[0], 1), "bracket2_cycles": round(med[1], 1),
               "bracket3_cycles": round(med[2], 1), "reps": reps}
        rows.append(row)
        print(f"{MODES[mode]:<21} 132 CTAs, {nblock:>2} SMs held ({row['held_started']} spinning; "
              f"{row['per_sm']:.0f} an SM): bracket1 {med[0]:7.1f} bracket2 {med[1]:7.1f} bracket3 {med[2]:7.1f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    per_sm, argv = take_flag(argv, "--per-sm")
    if per_sm:
        return cubin_bench_exit("tma_issue", __doc__, argv, measure_per_sm, 5,
                                "JSON lines, one per (mode, CTAs an SM)",
                                epilog="--per-sm: grids of 132 x 1-4 CTAs issuing together (the TMA unit shared)")
    return cubin_bench_exit("tma_issue", __doc__, argv, measure, 10,
                            "JSON lines, one per (L2 state, grid, mode)",
                            epilog="--per-sm: grids of 132 x 1-4 CTAs issuing together (the TMA unit shared)")


if __name__ == "__main__":
    sys.exit(main())
