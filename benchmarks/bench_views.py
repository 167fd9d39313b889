"""How long the views of a replay take, on the largest built-in launch.

Run:  python benchmarks/bench_views.py

Issue #6 asks that a full-chip v6 4096^3 trace be written in seconds and the
HTML page stay responsive.  The replay itself (tens of seconds on 2 cores, see
bench_engine.py) is measured separately: these rows are what the views add.
One run each; compare rows within one run.
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protosim.builders import BUILDERS  # noqa: E402
from protosim.config import GemmConfig  # noqa: E402
from protosim.explain import explain, primary  # noqa: E402
from protosim.timeline import build_timeline  # noqa: E402
from protosim.verdict import judge  # noqa: E402
from protosim.views.trace import to_trace_events  # noqa: E402


def timed(fn):
    gc.collect()
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    cfg = GemmConfig(M=4096, N=4096, K=4096, arch="h200")
    schedule = BUILDERS["hgemm_v6"](cfg)
    (verdict, result), t_replay = timed(lambda: judge(schedule))
    rows = [("replay + checkers (not a view)", t_replay, f"{len(result.log):,} events, {len(schedule.ctas)} CTAs")]
    out = Path(tempfile.mkdtemp())
    for max_ctas in (8, 32, len(schedule.ctas)):
        tl, t_tl = timed(lambda m=max_ctas: build_timeline(result, verdict.findings, verdict.outcome.summary(), max_ctas=m,
                                                           first=primary(verdict.findings)))
        rows.append((f"timeline, {max_ctas} CTAs", t_tl, f"{len(tl.slices):,} slices, {len(tl.counters):,} counter points"))

        def write_trace(tl=tl, m=max_ctas):
            path = out / f"trace{m}.json"
            with path.open("w") as f:
                json.dump(to_trace_events(tl), f, separators=(",", ":"))
            return path

        path, t_tr = timed(write_trace)
        rows.append((f"trace JSON, {max_ctas} CTAs", t_tr, f"{path.stat().st_size / 1e6:.1f} MB"))
        try:
            from protosim.views.html import render
        except ImportError:
            render = None
        if render is not None:
            page, t_html = timed(lambda tl=tl: render(tl, verdict, explain(verdict, result, title="v6 full chip"), "v6 full chip"))
            rows.append((f"HTML page, {max_ctas} CTAs", t_html, f"{len(page) / 1e6:.1f} MB"))
        try:
            from protosim.views.plot import plot

            _, t_png = timed(lambda tl=tl, m=max_ctas: plot(tl, out / f"p{m}.png"))
            rows.append((f"PNG (one CTA), {max_ctas} CTAs kept", t_png, ""))
        except ImportError:
            pass
    print(f"{'step':<36} {'seconds':>8}  notes")
    for name, s, note in rows:
        print(f"{name:<36} {s:>8.2f}  {note}")


if __name__ == "__main__":
    main()
