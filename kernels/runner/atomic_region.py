"""Run ``kernels/microbench/atomic_rate.py``'s ``region_add`` on the GPU at hand: P programs each
add 1 into the same R counters (int32 or fp32), all lanes or one lane a 128-byte line -- how fast
the H200 retires atomics that many programs aim at the same few lines (a histogram's flush).

    python -m kernels.runner.atomic_region --out region.jsonl --commit SHA

One JSON line per configuration: dtype, R, lanes, warps, programs, kernel-only time (min and
median, ``kernels/runner/timing.py``), line updates (programs x lines) per cycle at the SM clock,
cycles per update of one line, whether every counter came out P, and the atomic PTX.  Needs torch
and triton."""

from __future__ import annotations

import json
import re
import time

from kernels.runner.triton_microbench import CLOCK_HZ, arguments, environment

REGIONS = (32, 256, 2048, 16384)
"""Counters: 128 B (one line), 1 KB (8 lines: the expert histogram's 256), 8 KB, 64 KB."""
PROGRAMS = (132, 528, 2112)
WARPS = (1, 4)


def main(argv=None) -> int:
    args = arguments(__doc__, argv)
    torch, triton, env = environment(args.commit)
    from kernels.microbench.atomic_rate import region_add
    from kernels.runner.timing import kernel_time

    with args.out.open("a") as f:
        for dtype in (torch.int32, torch.float32):
            for r in REGIONS:
                for one_lane in (False, True):
                    for warps in WARPS:
                        if r // 32 < warps and not one_lane:
                            continue
                        for p in PROGRAMS:
                            c = torch.zeros(r, dtype=dtype, device="cuda")
                            k = region_add[(p,)](c, R=r, ONE_LANE_A_LINE=one_lane, num_warps=warps)
                            torch.cuda.synchronize()
                            want = torch.zeros(r, dtype=dtype, device="cuda")
                            want[::32 if one_lane else 1] = p
                            ok = bool(torch.equal(c, want))
                            ptx = sorted(set(re.findall(r"\b((?:red|atom)\.global[\w.]*)", k.asm["ptx"])))
                            t = kernel_time(torch, lambda: region_add[(p,)](c, R=r, ONE_LANE_A_LINE=one_lane,
                                                                            num_warps=warps))
                            sec = min(t["times"]) / 1e3
                            lines = max(1, r * 4 // 128)
                            row = {**env, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                   "dtype": str(dtype).removeprefix("torch."), "counters": r,
                                   "lanes": "one a line" if one_lane else "all", "warps": warps, "programs": p,
                                   "correct": ok, "kernel_ms_min": min(t["times"]),
                                   "kernel_ms_median": sorted(t["times"])[len(t["times"]) // 2],
                                   "line_updates_per_clk": p * lines / (sec * CLOCK_HZ),
                                   "cycles_per_update_of_a_line": sec * CLOCK_HZ / p, "ptx": ptx}
                            f.write(json.dumps(row) + "\n")
                            f.flush()
                            print(f"{row['dtype']:7s} R={r:5d} {row['lanes']:10s} w{warps} P={p:4d}: "
                                  f"{1e6 * sec:7.1f} us  {row['cycles_per_update_of_a_line']:7.1f} cyc/line-update "
                                  f"ok={ok} {ptx}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
