"""Run ``kernels/microbench/atomic_rate.py`` on the GPU at hand: element atomics per cycle for
fp32 tiles added by P programs into T tiles (P / T programs per tile), and the plain store of
the same tiles beside it.

    python -m kernels.runner.atomic_rate --out atomic.jsonl --commit SHA

One JSON line per configuration: tile, warps, mode, programs, tiles, kernel-only time (min and
median of 10, ``kernels/runner/timing.py``), elements per cycle at the SM clock, and the atomic
instructions in the PTX Triton generated.  Needs torch and triton."""

from __future__ import annotations

import json
import re
import time

from kernels.runner.triton_microbench import CLOCK_HZ, arguments, environment


TILES = ((128, 128, 4), (64, 64, 4))
"""(BM, BN, num_warps): split-K's epilogue tiles in kernels/triton/heldout.py."""
PROGRAMS = (132, 264, 1056, 4224)
SHARING = (1, 2, 4, 8, 32)


def main(argv=None) -> int:
    args = arguments(__doc__, argv)
    torch, triton, env = environment(args.commit)
    from kernels.microbench.atomic_rate import tile_update
    from kernels.runner.timing import kernel_time

    with args.out.open("a") as f:
        for bm, bn, warps in TILES:
            for atomic in (True, False):
                ptx_ops = None
                for p in PROGRAMS:
                    for share in SHARING:
                        if p % share:
                            continue
                        t = p // share
                        c = torch.zeros(t * bm * bn, dtype=torch.float32, device="cuda")
                        grid = (p,)
                        k = tile_update[grid](c, t, BM=bm, BN=bn, ATOMIC=atomic, num_warps=warps)
                        torch.cuda.synchronize()
                        if ptx_ops is None:
                            ptx_ops = sorted(set(re.findall(r"\b((?:red|atom|st)\.global[\w.]*)", k.asm["ptx"])))
                        if atomic:  # each program adds pid + row + col once: check the sums
                            c.zero_()
                            tile_update[grid](c, t, BM=bm, BN=bn, ATOMIC=True, num_warps=warps)
                            # tile u gets sum over q = u, u + t, ... < p of (q + row + col)
                            rows = torch.arange(bm, device="cuda", dtype=torch.float64)[:, None]
                            cols = torch.arange(bn, device="cuda", dtype=torch.float64)[None, :]
                            u = torch.arange(t, device="cuda", dtype=torch.float64)[:, None, None]
                            want = (share * u + t * share * (share - 1) / 2 + share * (rows + cols)).float().reshape(-1)
                            ok = bool(torch.allclose(c, want, rtol=1e-5))
                        else:
                            ok = True
                        r = kernel_time(torch, lambda: tile_update[grid](c, t, BM=bm, BN=bn, ATOMIC=atomic,
                                                                         num_warps=warps))
                        sec = min(r["times"]) / 1e3
                        row = {**env, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "bm": bm, "bn": bn,
                               "warps": warps, "mode": "atomic" if atomic else "store", "programs": p, "tiles": t,
                               "per_tile": share, "correct": ok, "kernel_ms_min": min(r["times"]),
                               "kernel_ms_median": sorted(r["times"])[len(r["times"]) // 2],
                               "elements_per_clk": p * bm * bn / (sec * CLOCK_HZ), "ptx": ptx_ops}
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                        print(f"{row['mode']:6s} {bm}x{bn} w{warps} P={p:5d} T={t:5d} x{share:2d}: "
                              f"{1e6 * sec:8.1f} us {row['elements_per_clk']:7.1f} el/clk ok={ok} {ptx_ops}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
