"""Run ``kernels/microbench/gemv_parts.py`` on the GPU at hand: kernel-only time of a GEMV's weight
stream with four loop bodies, at the held-out GEMV's shapes and tiles and a few others.

    python -m kernels.runner.gemv_parts --out gemv.jsonl --commit SHA

One JSON line per configuration: mode, N, K, BLOCK_N, BLOCK_K, warps, stages, kernel-only time
(min and median of 10 after 2 warm-ups, ``kernels/runner/timing.py``), the weight's bytes per
cycle at the SM clock, and whether the result matched ``W @ x`` (the ``load`` mode: the row sums
of W).  Needs torch and triton."""

from __future__ import annotations

import json
import time

from kernels.runner.triton_microbench import CLOCK_HZ, arguments, environment

SHAPES = ((8192, 8192), (14336, 4096))
TILES = ((32, 256, 4), (16, 128, 4), (64, 128, 4), (128, 64, 8))
"""(BLOCK_N, BLOCK_K, num_warps): the held-out GEMVs' two tiles first."""
STAGES = (1, 3)


def main(argv=None) -> int:
    args = arguments(__doc__, argv)
    torch, triton, env = environment(args.commit)
    from kernels.microbench.gemv_parts import MODES, gemv_part
    from kernels.runner.timing import kernel_time

    with args.out.open("a") as f:
        for n, k in SHAPES:
            w = torch.randn(n, k, device="cuda").half()
            x = torch.randn(k, device="cuda").half()
            y = torch.empty(n, device="cuda", dtype=torch.float32)
            want = {"load": w.float().sum(1), "dot": w.float() @ x.float()}
            for bn, bk, warps in TILES:
                for stages in STAGES:
                    for mode in MODES:
                        grid = (triton.cdiv(n, bn),)

                        def launch(mode=mode, bn=bn, bk=bk, warps=warps, stages=stages, grid=grid):
                            return gemv_part[grid](x, w, y, n, k, k, MODE=mode, BLOCK_N=bn, BLOCK_K=bk,
                                                   num_warps=warps, num_stages=stages)
                        launch()
                        torch.cuda.synchronize()
                        ref = want["load" if mode == "load" else "dot"]
                        ok = bool(torch.allclose(y, ref, rtol=1e-2, atol=1e-2 * float(ref.abs().max())))
                        r = kernel_time(torch, launch)
                        row = {**env, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "mode": mode,
                               "N": n, "K": k, "block_n": bn, "block_k": bk, "warps": warps, "stages": stages,
                               "correct": ok, "kernel_ms_min": r["min"], "kernel_ms_median": r["median"],
                               "weight_bytes_per_clk": n * k * 2 / (r["min"] / 1e3 * CLOCK_HZ)}
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                        print(f"{n}x{k} {bn}x{bk} w{warps} s{stages} {mode:6s} {1e3 * r['min']:8.1f} us "
                              f"{row['weight_bytes_per_clk']:6.0f} B/clk ok={ok}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
