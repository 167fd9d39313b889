"""Check :mod:`kernels.runner.timing` against CUPTI: the kernel-only time the events give
beside the kernel's own duration as the profiler records it (``torch.profiler``, CUDA
activity), on the same bundle kernels and inputs.  Run on the GPU machine:

    python -m kernels.runner.profile_check --bundle .gpu [--reps 10] [--json out.json]

One line per job (outcome jobs, each kernel once): events median / min, CUPTI median / min,
their ratio, and the host's time for the call.  Exit 0 when every kernel was measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from . import launch as L
from . import timing as T
from .gemm import DEFAULT_TIMEOUT_CYCLES
from ..spec import DIAG_WORDS, TRACE_CAP


def cupti_ms(torch, launch, reps: int) -> list[float]:
    """Device durations (ms) of the kernels ``launch`` starts, as CUPTI records them."""
    from torch.profiler import ProfilerActivity, profile

    launch()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            launch()
        torch.cuda.synchronize()
    durations = [e.device_time / 1e3 for e in prof.events() if e.device_type.name == "CUDA" and e.device_time > 0]
    if len(durations) < reps:
        raise RuntimeError(f"the profiler saw {len(durations)} kernel(s) for {reps} launches")
    return durations[-reps:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.runner.profile_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=Path(".gpu"))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args(argv)
    runtime = L.start_child_runtime("profile_check", lambda tvm: tvm)
    if runtime is None:
        return 2
    torch, env, tvm = runtime
    manifest = json.loads((args.bundle / "manifest.json").read_text())
    rows, seen = [], set()
    for job in manifest:
        if job["kind"] != "outcome" or job["key"] in seen:
            continue
        seen.add(job["key"])
        cfg = job["spec"]["config"]
        fn = tvm.runtime.load_module(str(args.bundle / job["so"]))["main"]
        a = torch.randn(cfg["M"], cfg["K"], device="cuda", dtype=torch.float16)
        b = torch.randn(cfg["N"], cfg["K"], device="cuda", dtype=torch.float16)
        d = torch.empty(cfg["M"], cfg["N"], device="cuda", dtype=torch.float16)
        diag = torch.zeros(DIAG_WORDS, device="cuda", dtype=torch.int32)
        trace = torch.zeros(TRACE_CAP, 4, device="cuda", dtype=torch.int64)

        def launch():
            fn(a, b, d, diag, trace, DEFAULT_TIMEOUT_CYCLES, 0, 0, 1, 0)

        ev = T.kernel_time(torch, launch, args.reps)
        cu = cupti_ms(torch, launch, args.reps)
        row = {"name": job["name"], "sm_count": cfg.get("sm_count"), "events_median_ms": ev["median"], "events_min_ms": ev["min"],
               "cupti_median_ms": round(statistics.median(cu), 5), "cupti_min_ms": round(min(cu), 5),
               "events_over_cupti": round(ev["median"] / statistics.median(cu), 4), "host_ms": ev["host_ms"], "respun": ev["respun"]}
        rows.append(row)
        print(f"{job['name']:<40} sm_count={str(row['sm_count']):<5} events {row['events_median_ms']:.4f} ms (min {row['events_min_ms']:.4f})  "
              f"cupti {row['cupti_median_ms']:.4f} ms (min {row['cupti_min_ms']:.4f})  ratio {row['events_over_cupti']:.3f}  "
              f"host {row['host_ms']:.3f} ms", flush=True)
    if args.json:
        args.json.write_text(json.dumps({**env, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
