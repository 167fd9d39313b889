"""Run ``kernels/microbench/hbm_mix.py`` on the GPU at hand: kernel-only time of read/write
streams in fixed proportions, per array size, with torch's own kernels for the same traffic
beside them.

    python -m kernels.runner.hbm_mix --out hbm.jsonl --commit SHA

One JSON line per configuration: mode, dtype, elements per array, BLOCK and warps (or the torch
op), bytes read and written, kernel-only time (min and median of 10 after 2 warm-ups,
``kernels/runner/timing.py``) and the bytes per cycle it moved at the SM clock.  Every result is
checked against torch.  Needs torch and triton."""

from __future__ import annotations

import json
import re
import time

from kernels.runner.triton_microbench import CLOCK_HZ, arguments, environment


ARRAY_MB = (8, 32, 128, 512)
"""Bytes per array: within the 50 MB L2 (8, 32 with every array of a mode) and past it."""
SHAPES = ((1024, 4), (4096, 8))
"""(BLOCK, num_warps): the held-out elementwise kernels' 1024 x 4 warps, and a wider one."""


def main(argv=None) -> int:
    args = arguments(__doc__, argv)
    torch, triton, env = environment(args.commit)
    from kernels.microbench.hbm_mix import MODES, TRAFFIC, stream
    from kernels.runner.timing import kernel_time

    with args.out.open("a") as f:
        for dtype in (torch.float16, torch.float32):
            size = torch.tensor([], dtype=dtype).element_size()
            for mb in ARRAY_MB:
                n = mb * 2**20 // size
                x = torch.randn(n, device="cuda").to(dtype)
                y = torch.empty_like(x)
                z = torch.randn(n, device="cuda").to(dtype)
                x0, z0 = x.clone(), z.clone()
                runs = []
                for mode in MODES:
                    for block, warps in SHAPES:
                        grid = (triton.cdiv(n, block),)

                        def launch(mode=mode, block=block, warps=warps, grid=grid):
                            return stream[grid](x, y, z, n, MODE=mode, BLOCK=block, num_warps=warps)
                        runs.append((mode, f"triton_b{block}_w{warps}", launch))
                # torch's kernels for the same traffic (no check needed: torch is the reference)
                runs += [("read", "torch_sum", lambda: x.sum()), ("write", "torch_fill", lambda: y.fill_(1.0)),
                         ("copy", "torch_copy", lambda: y.copy_(x)),
                         ("add", "torch_add", lambda: torch.add(x, z, out=y))]
                for mode, how, launch in runs:
                    x.copy_(x0), z.copy_(z0)
                    k = launch()
                    torch.cuda.synchronize()
                    ptx = (sorted(set(re.findall(r"\b((?:ld|st)\.global[\w.]*)", k.asm["ptx"])))
                           if how.startswith("triton") else None)
                    ok = check(torch, mode, how, x, y, z, x0, z0)
                    r = kernel_time(torch, launch)  # inplace doubles x each time: 12 launches stay finite in fp16
                    reads, writes = TRAFFIC[mode]
                    sec = r["min"] / 1e3
                    row = {**env, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "mode": mode, "how": how,
                           "dtype": str(dtype).replace("torch.", ""), "elements": n, "array_mb": mb,
                           "read_bytes": reads * n * size, "write_bytes": writes * n * size, "correct": ok,
                           "kernel_ms_min": r["min"], "kernel_ms_median": r["median"],
                           "bytes_per_clk": (reads + writes) * n * size / (sec * CLOCK_HZ), "ptx": ptx}
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(f"{row['dtype']:8s} {mb:4d} MB {mode:8s} {how:18s} {1e3 * r['min']:9.1f} us "
                          f"{row['bytes_per_clk']:7.0f} B/clk ok={ok} {ptx or ''}", flush=True)
                x = y = z = x0 = z0 = None  # free the arrays before the next size's
                torch.cuda.empty_cache()
    return 0


def check(torch, mode: str, how: str, x, y, z, x0, z0) -> bool:
    """The launch just made did what its mode says (inputs as they were before it)."""
    if not how.startswith("triton"):
        return True
    if mode == "write":
        want = (torch.arange(x.numel(), device=x.device) & 255).to(x.dtype)
        return bool(torch.equal(y, want))
    if mode == "copy":
        return bool(torch.equal(y, x0))
    if mode == "add":
        return bool(torch.equal(y, x0 + z0))
    if mode == "split":
        return bool(torch.equal(y, x0) and torch.equal(z, -x0))
    if mode == "inplace":
        return bool(torch.equal(x, x0 * 2))
    return True  # read: the per-program sums are not the point (z's first elements, unchecked)


if __name__ == "__main__":
    raise SystemExit(main())
