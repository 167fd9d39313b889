"""Run ``kernels/microbench/access_rate.py`` on the GPU at hand: warp load / store instructions per
cycle per SM by width (vector or one element a lane), dtype and warps per SM.

    python -m kernels.runner.access_rate --out access.jsonl --commit SHA

One JSON line per configuration: the kernel's parameters, the warp instructions it issued (from the
width its SASS got: ``ld.global`` / ``st.global`` forms of its PTX are listed), kernel-only time (min
and median of 10 after 2 warm-ups, ``kernels/runner/timing.py``) and the cycles one SM spent per warp
instruction at the 1.98 GHz clock.  Every result is checked against torch.  Needs torch and triton."""

from __future__ import annotations

import json
import re
import time

from kernels.runner.triton_microbench import CLOCK_HZ, arguments, environment

SMS = 132
BLOCK, ITERS, ROT = 1024, 512, 2


def main(argv=None) -> int:
    args = arguments(__doc__, argv)
    torch, triton, env = environment(args.commit)
    from kernels.microbench.access_rate import rewrite
    from kernels.runner.timing import kernel_time

    with args.out.open("a") as f:
        for dtype, size in ((torch.float16, 2), (torch.float32, 4)):
            for load in (0, 1):
                for per_sm, warps in ((1, 4), (4, 4), (8, 4), (4, 8), (16, 4)):
                    programs = SMS * per_sm
                    for aligned in (1, 0):
                        n = BLOCK if aligned else BLOCK - 1
                        x = torch.randn(programs * ROT * n, device="cuda").to(dtype)
                        out = torch.empty(programs * BLOCK, device="cuda")

                        def launch(n=n, x=x, out=out, load=load, warps=warps, programs=programs):
                            return rewrite[(programs,)](x, out, n, ROT, ITERS=ITERS, BLOCK=BLOCK, LOAD=load,
                                                        num_warps=warps)

                        k = launch()
                        torch.cuda.synchronize()
                        slots = x.view(programs, ROT, n)
                        if load:
                            want = slots.float().sum(1) * (ITERS // ROT)
                            ok = torch.allclose(out.view(programs, BLOCK)[:, :n], want, rtol=1e-3, atol=1e-1)
                        else:  # slot r last got i + the last iteration it % ROT == r
                            i = torch.arange(n, device="cuda")
                            ok = all(torch.equal(slots[:, r], (i + ITERS - ROT + r).to(dtype).expand(programs, n))
                                     for r in range(ROT))
                        ptx = sorted(set(re.findall(r"\b((?:ld|st)\.global[\w.]*)", k.asm["ptx"])))
                        sass = k.asm.get("sass") or ""
                        r = kernel_time(torch, launch)
                        per_thread = BLOCK // (32 * warps)
                        vec = min(per_thread, 16 // size) if aligned else 1
                        instr = programs * warps * ITERS * (per_thread // vec)
                        cycles = r["min"] / 1e3 * CLOCK_HZ
                        row = {**env, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "kernel": "rewrite", "op": "load" if load else "store", "dtype": str(dtype).split(".")[-1],
                               "aligned": aligned, "n": n, "block": BLOCK, "iters": ITERS, "programs": programs,
                               "per_sm": per_sm, "num_warps": warps, "warps_per_sm": per_sm * warps,
                               "vector_bytes": vec * size, "warp_instructions": instr, "correct": bool(ok),
                               "n_regs": k.n_regs, "kernel_ms_min": r["min"], "kernel_ms_median": r["median"],
                               "cycles_per_warp_instruction_per_sm": cycles * SMS / instr, "ptx": ptx,
                               "sass_global": sorted(set(re.findall(r"\b(?:LDG|STG)[\w.]*", sass)))}
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                        print(f"{row['op']:5s} {row['dtype']:8s} al{aligned} {per_sm:2d}x{warps}w vec{vec * size:2d}B "
                              f"{1e3 * r['min']:8.1f} us {row['cycles_per_warp_instruction_per_sm']:6.2f} cyc/instr/SM "
                              f"ok={ok} {' '.join(ptx)}", flush=True)
                        x = out = None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
