"""Run ``kernels/microbench/store_lines.py`` on the GPU at hand: scalar warp ``st.global``
instructions per cycle, chip-wide, by bytes a lane (1 / 2 / 4), by how far apart the lanes are
(``S`` elements: 1-32 lines an instruction) and by where the rows live (L2-resident slots, or
fresh rows streamed to DRAM).

    python -m kernels.runner.store_lines --out store_lines.jsonl --commit SHA [--occupancy]

``--occupancy``: instead, four spread patterns (the lanes 8-16 bytes apart, 2-4 lines) streamed at
1 to 64 warps an SM -- how the rate depends on how many warps store at once.

One JSON line per configuration: the kernel's parameters, the lines one warp instruction spreads
over, the warp instructions issued, kernel-only time (min and median of 10 after 2 warm-ups,
``kernels/runner/timing.py``), and the chip's warp instructions per cycle at the 1.98 GHz clock
after the launch's fixed cost.  Every result is checked against torch.  Needs torch and triton."""

from __future__ import annotations

import json
import re
import sys
import time

from kernels.runner.triton_microbench import CLOCK_HZ, arguments, environment

SMS = 132
LAUNCH_US = 3.0
"""launch_fixed_us of protosim/arch/h200.toml: the kernel-only time outside every CTA."""
BLOCK = 8192
SPREADS = (1, 2, 4, 8, 16, 32)
SHAPES = ((4, 8), (1, 4))
"""(CTAs an SM, warps a CTA): 32 warps an SM, and one CTA of 4."""
OCCUPANCY = ((1, 1), (1, 2), (1, 4), (2, 4), (4, 4), (4, 8), (8, 8))
"""--occupancy's shapes: 1 to 64 warps an SM."""
OCCUPANCY_CASES = ((1, 16), (2, 8), (4, 4), (4, 2))
"""--occupancy's (bytes a lane, S): 4 / 4 / 4 / 2 lines an instruction."""


def offsets(torch, s: int, warps: int, block: int):
    """The kernel's offsets, element ``i`` -> where it goes (the same formula, on the host)."""
    i = torch.arange(block, device="cuda")
    r = i // (32 * warps)
    return ((r // s) * warps + (i // 32) % warps) * (32 * s) + (i % 32) * s + r % s


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    occupancy = "--occupancy" in argv
    args = arguments(__doc__, [a for a in argv if a != "--occupancy"])
    torch, triton, env = environment(args.commit)
    from kernels.microbench.store_lines import spread
    from kernels.runner.timing import kernel_time

    dtypes = {1: torch.int8, 2: torch.float16, 4: torch.float32}
    if occupancy:
        plan = [(dtypes[size], size, 1, per_sm, warps, (s,)) for size, s in OCCUPANCY_CASES for per_sm, warps in OCCUPANCY]
    else:
        plan = [(dtypes[size], size, stream, per_sm, warps, SPREADS) for size in (1, 2, 4) for stream in (0, 1)
                for per_sm, warps in SHAPES if not (stream and per_sm == 1)]
    with args.out.open("a") as f:
        for dtype, size, stream, per_sm, warps, spreads in plan:
            programs = SMS * per_sm
            block = 2048 * warps if occupancy else BLOCK  # occupancy: 16 elements a thread at any warp count
            iters = 16 if stream else 64
            rows = programs * (iters if stream else 2)
            out = torch.zeros(rows * block, device="cuda", dtype=dtype)
            for s in spreads:
                def launch(s=s, out=out, warps=warps, programs=programs, iters=iters, stream=stream,
                           block=block):
                    return spread[(programs,)](out, 1, S=s, WARPS=warps, ITERS=iters, BLOCK=block,
                                               STREAM=stream, num_warps=warps)

                k = launch()
                torch.cuda.synchronize()
                offs = offsets(torch, s, warps, block)
                i = torch.arange(block, device="cuda")
                grid = out.view(rows, block)
                ok = True
                for it in ((iters - 2, iters - 1) if not stream else (0, iters - 1)):
                    want = torch.empty(block, device="cuda", dtype=dtype)
                    want[offs] = (i + it).to(dtype)
                    for pid in (0, programs - 1):
                        row = it * programs + pid if stream else pid * 2 + it % 2
                        ok = ok and torch.equal(grid[row], want)
                ptx = sorted(set(re.findall(r"\bst\.global[\w.]*", k.asm["ptx"])))
                r = kernel_time(torch, launch)
                instr = programs * iters * block // 32
                cycles = (r["min"] * 1e3 - LAUNCH_US) * 1e-6 * CLOCK_HZ
                lines = max(1, 32 * s * size // 128)
                row = {**env, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "kernel": "spread", "dtype": str(dtype).split(".")[-1], "store_bytes": size,
                       "lanes_apart": s, "lines": lines, "stream": stream, "block": block, "iters": iters,
                       "programs": programs, "per_sm": per_sm, "num_warps": warps,
                       "warps_per_sm": per_sm * warps, "warp_instructions": instr, "correct": bool(ok),
                       "n_regs": k.n_regs, "kernel_ms_min": r["min"], "kernel_ms_median": r["median"],
                       "chip_instructions_per_cycle": instr / cycles,
                       "cycles_per_warp_instruction_per_sm": cycles * SMS / instr, "ptx": ptx}
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(f"{row['dtype']:8s} S{s:2d} {lines:2d} lines stream{stream} {per_sm}x{warps}w "
                      f"{1e3 * r['min']:8.1f} us {row['chip_instructions_per_cycle']:6.2f} /clk chip "
                      f"{row['cycles_per_warp_instruction_per_sm']:6.2f} cyc/SM ok={ok} {' '.join(ptx)}",
                      flush=True)
            out = grid = None
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
