"""Kernel-only time on silicon: CUDA events around the kernel alone, not around the call.

A launch through tvm-ffi spends host time before the kernel reaches the GPU: argument
conversion, ``cuTensorMapEncodeTiled`` for every TMA descriptor, ``cuLaunchKernelEx``.  Events
recorded around the call on an idle GPU time that host path too: the start event fires at
once, the kernel starts only when the host has enqueued it.  That is how persistent grids of
33 CTAs came out at 240-330 us against 48-100 us simulated (issue 16).

Here the GPU is kept busy by a spin kernel (``torch.cuda._sleep``) while the host enqueues
the start event, the kernel and the end event: the start event fires when the spin ends, by
which time the kernel is already queued behind it, so the two events bracket the kernel
alone.  Every repetition checks that premise instead of assuming it: an event before the
spin gives the spin's length on the GPU, the host's clock gives how long enqueueing took
from the moment that event was recorded; the GPU cannot reach that event before the host
records it, so when enqueueing took less than the spin, the kernel was queued before the
spin ended.  A repetition that fails the check is measured again with a spin twice as long
(and counted in ``respun``).

``host_ms`` is the host's own time for the call (tensor maps, ffi, launch), median over the
repetitions: the overhead the old ``elapsed_ms`` folded into the kernel's time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

SPIN_CYCLES = 2_000_000
"""First spin: ~1 ms at the H200's 1.98 GHz boost clock, several times the host path of a
launch with two tensor maps (issue 16: 150-280 us between call and kernel)."""
MAX_SPIN_CYCLES = 64 * SPIN_CYCLES
WARMUP = 2
REPS = 10


def kernel_time(torch, launch: Callable[[], object], reps: int = REPS, warmup: int = WARMUP,
                before: Callable[[], object] | None = None, spin_cycles: int | None = None) -> dict:
    """Time ``launch()`` (one kernel launch) ``reps`` times after ``warmup`` untimed launches.

    ``before()`` is enqueued ahead of every repetition, outside the timed span (an L2 flush
    for jobs that start cold).  Returns min / median / every time in ms, the host's median
    time for the call (median, and each), the spin used (starting at ``spin_cycles``, default
    :data:`SPIN_CYCLES`), and how many repetitions had to be measured again."""
    for _ in range(warmup):
        if before is not None:
            before()
        launch()
    torch.cuda.synchronize()
    spin, respun = spin_cycles or SPIN_CYCLES, 0
    times: list[float] = []
    host: list[float] = []
    while len(times) < reps:
        if before is not None:
            before()
        pre = torch.cuda.Event(enable_timing=True)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        h0 = time.perf_counter()
        pre.record()
        torch.cuda._sleep(spin)
        start.record()
        h1 = time.perf_counter()
        launch()
        h2 = time.perf_counter()
        end.record()
        end.synchronize()
        spun_ms = pre.elapsed_time(start)
        if (h2 - h0) * 1e3 >= spun_ms:  # the kernel may have been queued after the spin ended
            if spin >= MAX_SPIN_CYCLES:
                raise RuntimeError(f"the host took {(h2 - h0) * 1e3:.3f} ms to enqueue one launch, longer than a "
                                   f"{spun_ms:.3f} ms spin: no kernel-only time can be taken this way")
            spin, respun = spin * 2, respun + 1
            continue
        times.append(start.elapsed_time(end))
        host.append((h2 - h1) * 1e3)
    return {
        "min": round(min(times), 5),
        "median": round(statistics.median(times), 5),
        "times": [round(t, 5) for t in times],
        "reps": reps,
        "warmup": warmup,
        "host_ms": round(statistics.median(host), 4),
        "host_times": [round(h, 4) for h in host],
        "spin_cycles": spin,
        "respun": respun,
        "method": "cuda events around the launch alone, the GPU held by a spin while the host enqueued it",
    }
