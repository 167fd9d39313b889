"""Run ``kernels/microbench/strip_read.py`` on the GPU at hand: kernel-only time of a matrix read in
column strips of several widths (stored or atomically added sums) -- and held-out set 5's bias
gradient at the shape of one of them --, of loads and stores whose lanes are 1 or 2 elements apart,
and of L1-resident loads and stores whose lanes touch 1-32 lines an instruction.

    python -m kernels.runner.strip_read --out strip.jsonl --commit SHA

One JSON line per configuration: the kernel's parameters, bytes read and written, kernel-only time
(min and median of 10 after 2 warm-ups, ``kernels/runner/timing.py``), the bytes per cycle it moved
at the SM clock, and the SASS load/store instructions (``ld.global`` / ``st.global`` / ``atom``
forms of its PTX).  Every result is checked against torch.  Needs torch and triton."""

from __future__ import annotations

import json
import re
import time

from kernels.runner.triton_microbench import CLOCK_HZ, arguments, environment

M, N = 32768, 4096
"""The strip matrix: fp16, 256 MB (5x the L2), rows of 8 KB -- held-out set 3's column sum's."""
STRIPS = ((32, 64), (32, 128), (32, 256), (64, 128), (16, 512), (8, 1024), (4, 2048))
"""(BLOCK_M, BLOCK_N): strips of 128 B to 4 KB a row, 4-16 KB a tile."""
ROWS = (512, 2048)
STRIDED_N = 64 * 2**20
"""Elements the strided kernel touches (128 MB of fp16 at stride 1, its lines spread over 256 MB at 2)."""


def main(argv=None) -> int:
    args = arguments(__doc__, argv)
    torch, triton, env = environment(args.commit)
    from kernels.microbench.strip_read import strided, strip
    from kernels.runner.timing import kernel_time

    def record(f, row: dict, k, launch, check) -> None:
        torch.cuda.synchronize()
        ok = bool(check())
        ptx = sorted(set(re.findall(r"\b((?:ld|st)\.global[\w.]*|atom\.global[\w.]*)", k.asm["ptx"])))
        r = kernel_time(torch, launch)
        moved = row["read_bytes"] + row["write_bytes"]
        row = {**env, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **row, "correct": ok,
               "n_regs": k.n_regs, "kernel_ms_min": r["min"], "kernel_ms_median": r["median"],
               "bytes_per_clk": moved / (r["min"] / 1e3 * CLOCK_HZ), "ptx": ptx}
        f.write(json.dumps(row) + "\n")
        f.flush()
        print(f"{row['kernel']:8s} {row['case']:40s} {1e3 * r['min']:8.1f} us {row['bytes_per_clk']:7.0f} B/clk "
              f"ok={ok} {' '.join(ptx)}", flush=True)

    with args.out.open("a") as f:
        x = torch.randn(M, N, device="cuda").to(torch.float16)
        want = x.float().sum(0)
        for stages in (3, 1):
            for rows in ROWS:
                for bm, bn in STRIPS:
                    for row_fastest in (0, 1):
                        for atomic in (0, 1):
                            if stages == 1 and (atomic or row_fastest):
                                continue
                            grid = (N // bn, M // rows) if not row_fastest else (M // rows, N // bn)
                            out = torch.zeros((1 if atomic else M // rows) * N, device="cuda")

                            def launch(grid=grid, out=out, bm=bm, bn=bn, rows=rows, rf=row_fastest, at=atomic,
                                       stages=stages):
                                if at:
                                    out.zero_()
                                return strip[grid](x, out, M, N, rows, BLOCK_M=bm, BLOCK_N=bn, ROW_FASTEST=rf,
                                                   ATOMIC=at, num_warps=4, num_stages=stages)

                            k = launch()

                            def check(out=out, at=atomic):
                                got = out if at else out.view(-1, N).sum(0)
                                return torch.allclose(got, want, rtol=1e-3, atol=1e-1)
                            row = {"kernel": "strip", "case": f"{bm}x{bn} rows{rows} rf{row_fastest} at{atomic} s{stages}",
                                   "block_m": bm, "block_n": bn, "strip_bytes": 2 * bn, "rows": rows,
                                   "row_fastest": row_fastest, "atomic": atomic, "num_stages": stages, "num_warps": 4,
                                   "grid": list(grid), "read_bytes": M * N * 2,
                                   "write_bytes": 4 * N * (1 if atomic else M // rows)}
                            record(f, row, k, launch, check)
        # held-out set 5's bias gradient (a masked load with other=0 a row) beside the strip of its
        # shape: the same bytes, ptxas's schedule of the loads apart (kernels.toolchain.sass.loads_in_flight)
        from kernels.triton.heldout5 import bias_grad_kernel

        for stages in (3, 1):
            out = torch.zeros(N, device="cuda")

            def launch(out=out, stages=stages):
                out.zero_()
                return bias_grad_kernel[(N // 128, M // 512, 1)](x, out, M, N, BLOCK_M=64, BLOCK_N=128, SPLIT_M=M // 512,
                                                                 num_warps=4, num_stages=stages)

            k = launch()
            row = {"kernel": "h5_bias_grad", "case": f"64x128 rows512 masked s{stages}", "block_m": 64, "block_n": 128,
                   "strip_bytes": 256, "rows": 512, "atomic": 1, "num_stages": stages, "num_warps": 4,
                   "grid": [N // 128, M // 512, 1], "read_bytes": M * N * 2, "write_bytes": 4 * N}
            record(f, row, k, launch, lambda out=out: torch.allclose(out, want, rtol=1e-3, atol=1e-1))
        x = want = None
        torch.cuda.empty_cache()
        src = torch.randn(2 * STRIDED_N, device="cuda").to(torch.float16)
        for stride, pair in ((1, 0), (2, 0), (2, 1)):
            for block, warps in ((1024, 4), (2048, 8)):
                n = STRIDED_N if stride == 1 else STRIDED_N  # elements of each strided view
                y = torch.zeros_like(src)
                grid = (triton.cdiv(n, block),)

                def launch(stride=stride, pair=pair, block=block, warps=warps, grid=grid, y=y, n=n):
                    return strided[grid](src, y, n, STRIDE=stride, PAIR=pair, BLOCK=block, num_warps=warps)

                k = launch()

                def check(stride=stride, pair=pair, y=y, n=n):
                    a = src[0:stride * n:stride].float()
                    if not pair:
                        return torch.equal(y[0:stride * n:stride], (a * 2.0).half())
                    b = src[1:stride * n:stride].float()
                    return (torch.allclose(y[0:stride * n:stride].float(), (a * 0.5 - b).half().float(), atol=1e-2)
                            and torch.allclose(y[1:stride * n:stride].float(), (b * 0.5 + a).half().float(), atol=1e-2))
                touched = n * 2 * (2 if pair else 1)
                row = {"kernel": "strided", "case": f"stride{stride} pair{pair} b{block} w{warps}", "stride": stride,
                       "pair": pair, "block": block, "num_warps": warps, "elements": n,
                       "read_bytes": touched, "write_bytes": touched}
                record(f, row, k, launch, check)
        src = y = None
        torch.cuda.empty_cache()
        # lanes apart: L1-resident loads, 132 x 8 programs of 4 warps, 4096 loads a lane
        from kernels.microbench.strip_read import lanes_apart
        block, iters, programs = 128, 4096, 132 * 8
        for store in (0, 1):
            for stride in (1, 2, 4, 8, 16, 32, 64):
                x = torch.randn(16 * 2 * block * stride, device="cuda").to(torch.float16)
                out = torch.empty(programs * block, device="cuda")

                def launch(stride=stride, x=x, out=out, store=store):
                    return lanes_apart[(programs,)](x, out, STRIDE=stride, ITERS=iters, BLOCK=block, STORE=store,
                                                    num_warps=4)

                k = launch()

                def check(stride=stride, x=x, out=out, store=store):
                    if store:  # region r of every program gets 2 i + r (the same whichever program wrote last)
                        v = x.view(16, 2, block, stride)[:, :, :, 0].float()
                        i = torch.arange(block, device="cuda").float()
                        return torch.equal(v, torch.stack([2 * i, 2 * i + 1]).expand(16, 2, block))
                    v = x.float().view(16, 2, block, stride)[:, :, :, 0]
                    want = (v[:, 0] + v[:, 1]) * (iters // 2)
                    got = out.view(programs, block)
                    return torch.allclose(got, want.repeat(programs // 16, 1), rtol=1e-3, atol=1e-1)
                moved = programs * block * iters * 2
                row = {"kernel": "lanes_apart", "case": f"{'store' if store else 'load'} stride{stride} b{block} it{iters} "
                       f"p{programs}", "store": store, "stride": stride, "block": block, "iters": iters,
                       "programs": programs, "num_warps": 4, "warp_instructions": programs * 4 * iters,
                       "read_bytes": 0 if store else moved, "write_bytes": moved if store else 0}
                record(f, row, k, launch, check)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
