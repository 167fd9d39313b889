"""Any Hopper step's k-loop in clock64 cycles at one CTA, on the GPU (issue 16).

kernels/microbench/loop_clock.py builds, per config (v4, v5, v6, ws; BLK_N 16-128; 1, 2 or 4
stages; K 1024 and 4096), the kernel as TVM builds it (``_c0``) and the same kernel with thread 0
reading ``clock64()`` right before and right after its MMA k-loop (``_c1``). This times each
kernel-only with its inputs in L2 (written once before the first launch) and reads the loop clock
of ``_c1``'s last launch. Run on the GPU machine:

    python -m kernels.runner.loop_clock --cubin B/v5_loop_128x128x1024_n128_s2_c0.sm_90a.cubin --out results.jsonl

(``--cubin`` names any one of the cubins; the others, listed in the folder's ``loop_clock.json``
that the build writes, are read from beside it.) One JSON line per kernel: kernel-only time, the
loop's clock64 cycles (``_c1``), the largest error of the product against fp32, the runner's
timeout word and the model's cycles for the config (computed at build time). At the end, per
config, the k-iteration as the slope from K 1024 to 4096: clock64 cycles, the model's cycles, and
the clock the kernel times imply.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import timing as T
from .launch_cost import Driver, folder_bench_exit
from .v5_parts import kernel_args, one_tile_operands


def slopes(rows: list[dict]) -> list[dict]:
    """Per (step, BLK_N, stages), the k-iteration from the two K's rows: clock64 cycles (the loop
    clock's slope), the model's cycles, kernel-time microseconds, and the clock that pair implies."""
    out = []
    keys = sorted({(r["step"], r["config"]["BLK_N"], r["config"]["PIPE_DEPTH"]) for r in rows})
    for step, bn, stages in keys:
        mine = {(r["config"]["K"], r["loop_clock"]): r for r in rows
                if (r["step"], r["config"]["BLK_N"], r["config"]["PIPE_DEPTH"]) == (step, bn, stages)}
        ks = sorted({k for k, _ in mine})
        if len(ks) != 2 or any((k, c) not in mine for k in ks for c in (0, 1)):
            continue
        k0, k1 = ks
        its = (k1 - k0) // 64
        clock = (mine[k1, 1]["loop_cycles"] - mine[k0, 1]["loop_cycles"]) / its
        model = (mine[k1, 0]["model_cycles"] - mine[k0, 0]["model_cycles"]) / its
        us = (mine[k1, 0]["kernel_ms"]["median"] - mine[k0, 0]["kernel_ms"]["median"]) * 1e3 / its
        us_clocked = (mine[k1, 1]["kernel_ms"]["median"] - mine[k0, 1]["kernel_ms"]["median"]) * 1e3 / its
        epilogue = [mine[k, 1]["epilogue_cycles"] for k in ks if "epilogue_cycles" in mine[k, 1]]
        out.append({"step": step, "BLK_N": bn, "PIPE_DEPTH": stages, "clock64_cycles": clock, "model_cycles": model,
                    "epilogue_cycles": min(epilogue) if epilogue else None,
                    "model_over_clock64": model / clock, "kernel_us": us, "kernel_us_clocked": us_clocked,
                    "implied_ghz": clock / (us_clocked * 1e3)})
    return out


def measure(torch, folder: Path, reps: int) -> list[dict]:
    """Every kernel of ``loop_clock.json`` (the build's manifest)."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    manifest = json.loads((folder / "loop_clock.json").read_text())
    rows = []
    for name, c in manifest.items():
        m, n, k, bn = c["M"], c["N"], c["K"], c["BLK_N"]
        A, B, D, diag, maps, ref = one_tile_operands(torch, drv, m, n, k, bn)
        for clock in (0, 1):
            cubin = folder / f"{name}_c{clock}.sm_90a.cubin"
            if not cubin.is_file():
                continue
            fn = drv.function(cubin.read_bytes(), "kernel_kernel", c["smem"])
            args = kernel_args(maps, diag)
            D.fill_(float("nan"))
            diag.zero_()
            t = T.kernel_time(torch, drv.launcher(fn, c["grid"], c["threads"], c["smem"], stream, args), reps=reps, warmup=2)
            torch.cuda.synchronize()
            err = float((D.float() - ref).abs().max().item())
            row = {"step": c["step"], "config": {"M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": c["PIPE_DEPTH"]},
                   "loop_clock": clock, "grid": c["grid"], "threads": c["threads"], "smem": c["smem"], "kernel_ms": t,
                   "max_abs_error": err if err == err else "nan", "diag_timeouts": int(diag[0].item()),
                   "model_cycles": c["model_cycles"]}
            if clock:
                stamps = drv.read_int64s(fn, "protosim_loop_clock")
                row["loop_cycles"] = stamps[1] - stamps[0]
                if len(stamps) >= 4:  # builds since the epilogue's stamps: the store drained, then synced
                    row["store_wait_cycles"] = stamps[2] - stamps[1]
                    row["epilogue_cycles"] = stamps[3] - stamps[1]
                if len(stamps) >= 5:  # and the TMA store's issue (the accumulator stored to shared memory)
                    row["store_issue_cycles"] = stamps[4] - stamps[1]
            rows.append(row)
            print(f"{name} c{clock}: {t['median'] * 1e3:8.2f} us" + (f", loop {row['loop_cycles']} cycles" if clock else "")
                  + (f", epilogue {row['epilogue_cycles']} (store issued at {row.get('store_issue_cycles', '?')}, "
                     f"drained at {row['store_wait_cycles']})" if "epilogue_cycles" in row else "")
                  + f", max |err| {err:.3g}, timeouts {row['diag_timeouts']}", flush=True)
        del A, B, D, diag
    print(f"{'step':<5}{'BLK_N':>6}{'stages':>7}{'clock64/it':>11}{'model/it':>10}{'model/clock':>12}"
          f"{'ns/it':>8}{'GHz':>7}{'epilogue':>9}")
    for s in slopes(rows):
        print(f"{s['step']:<5}{s['BLK_N']:>6}{s['PIPE_DEPTH']:>7}{s['clock64_cycles']:>11.1f}{s['model_cycles']:>10.1f}"
              f"{s['model_over_clock64']:>12.3f}{s['kernel_us'] * 1e3:>8.1f}{s['implied_ghz']:>7.3f}"
              f"{s['epilogue_cycles'] if s['epilogue_cycles'] is not None else '-':>9}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return folder_bench_exit("loop_clock", __doc__, argv, measure, 20, "JSON lines, one per kernel")


if __name__ == "__main__":
    sys.exit(main())
