"""How much of a replay lockstep warps could save: issue 15's "warps of a warpgroup that run
in lockstep as one process until they diverge", measured before it is built.

Run:  python benchmarks/lockstep_share.py                  (the built-in configs, one table)
      python benchmarks/lockstep_share.py --step hgemm_ws --arch h200 --shape 2048,2048,1024
      [--json] [--no-record]

A role's warps run the same program, so the idea is that warps 1.. of a role only repeat
warp 0.  One nominal replay per config answers how far that holds:

* **followers' events / resumes / time**: the share of the log's events that warps 1.. of a
  role wrote, of the warps' SimPy resumes, and of the replay's wall time spent inside their
  steps (each step of a warp's interpreter timed, so the replay itself runs slower here).  The
  time share is an upper bound of what lockstep could save: their events stay in the log, so
  some of that work stays too.
* **in step with warp 0**: of the followers' mbarrier waits, how many began (``begin``) and
  how many returned (``t``) at the same cycle as warp 0's wait at the same op and phase.  A
  lockstep process runs its warps as one only while they are at the same op at the same
  cycle; a wait that began or returned at another cycle is where they diverged.

Each run appends one JSON line to results/bench/lockstep.jsonl (date, commit, machine,
versions, the rows).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.script_args import add_gemm_args, add_record_args, print_and_record, with_gemm_config  # noqa: E402

RECORD = ROOT / "results" / "bench" / "lockstep.jsonl"

CONFIGS = [
    ("hgemm_v6", "h200", (2048, 2048, 1024)),
    ("hgemm_ws", "h200", (2048, 2048, 1024)),
    ("hgemm_v6", "b200", (2048, 2048, 1024)),
    ("hgemm_v5", "b200", (512, 512, 1024)),
    ("hgemm_v4", "b200", (256, 256, 256)),
    ("hgemm_v2", "h200", (128, 128, 512)),
    ("hgemm_v7", "b200", (1024, 1024, 1024)),
]
"""The Hopper v6 and ws at a full wave (132 CTAs), the seed's steps, the book's step 7."""


def measure(step: str, arch: str, shape: tuple[int, int, int]) -> dict:
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.engine.machine import Machine

    steps: dict = defaultdict(int)  # (role, warp) -> interpreter steps of that warp, all CTAs
    seconds: dict = defaultdict(float)  # (role, warp) -> wall time inside them

    class TimedMachine(Machine):
        """A Machine whose warps' interpreter steps are counted and timed, by warp."""

        def _warp(self, w, ops):
            run, key, clock = super()._warp(w, ops), (w.role_name, w.warp), time.perf_counter
            sent = None
            while True:
                t = clock()
                try:
                    event = run.send(sent)
                except StopIteration:
                    return
                finally:
                    seconds[key] += clock() - t
                    steps[key] += 1
                sent = yield event

    schedule = BUILDERS[step](GemmConfig(M=shape[0], N=shape[1], K=shape[2], arch=arch))
    t = time.perf_counter()
    result = TimedMachine(schedule).run()
    wall = time.perf_counter() - t

    def follower(who: str) -> bool:
        return not who.endswith(".w0") and ".w" in who  # a warp of a role other than its warp 0

    events = len(result.log)
    by_follower = sum(1 for e in result.log if follower(e.who))
    leader: dict[tuple, tuple[float, float]] = {}
    followers = []
    for e in result.log.of_kind("wait"):
        role, _, warp = e.who.rpartition(".w")
        key = (e.cta, role, e.op, e.use)
        if warp == "0":
            leader[key] = (e.begin, e.t)
        else:
            followers.append((key, e.begin, e.t))
    paired = [(leader[k], b, t) for k, b, t in followers if k in leader]
    return {
        "step": step, "arch": arch, "shape": list(shape), "ctas": len(schedule.ctas),
        "warps_per_role": {r.name: r.warps for r in schedule.roles},
        "events": events, "follower_events": by_follower,
        "resumes": sum(steps.values()), "follower_resumes": sum(n for (_, w), n in steps.items() if w),
        "replay_s": wall, "in_warps_s": sum(seconds.values()),
        "follower_s": sum(s for (_, w), s in seconds.items() if w),
        "follower_waits": len(paired),
        "same_begin": sum(1 for (b0, _), b, _ in paired if b == b0),
        "same_return": sum(1 for (_, t0), _, t in paired if t == t0),
    }


def pct(n: float, d: float) -> str:
    return f"{100 * n / d:.1f}%" if d else "-"


def report(rows: list[dict]) -> str:
    head = ("config", "warps/role", "events", "followers' events", "resumes", "followers' resumes",
            "replay s", "followers' time", "follower waits", "began with w0", "returned with w0")
    table = [head]
    for r in rows:
        table.append((f"{r['step']} {r['arch']} {'x'.join(map(str, r['shape']))} ({r['ctas']} CTAs)",
                      ",".join(f"{k}:{v}" for k, v in r["warps_per_role"].items()),
                      f"{r['events']:,}", pct(r["follower_events"], r["events"]),
                      f"{r['resumes']:,}", pct(r["follower_resumes"], r["resumes"]),
                      f"{r['replay_s']:.2f}", pct(r["follower_s"], r["replay_s"]),
                      f"{r['follower_waits']:,}", pct(r["same_begin"], r["follower_waits"]),
                      pct(r["same_return"], r["follower_waits"])))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + ("\n\nfollowers: warps 1.. of each role; their time is an upper bound of what lockstep"
                               "\nsaves (their events stay in the log); 'began/returned with w0': of their mbarrier"
                               "\nwaits, those at the cycle warp 0's same wait began / returned")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_gemm_args(ap, shape="2048,2048,1024", what="a full wave of 128x128 tiles on h200")
    add_record_args(ap, RECORD)
    args = ap.parse_args()
    one = any(f"--{flag}" in arg for arg in sys.argv[1:] for flag in ("arch", "shape", "step"))
    if one:
        rows = [with_gemm_config(ap, args, measure)]
    else:
        rows = []
        for step, arch, shape in CONFIGS:
            print(f"  ... {step} {arch} {'x'.join(map(str, shape))}", file=sys.stderr, flush=True)
            rows.append(measure(step, arch, shape))
    print_and_record(args, RECORD, {"rows": rows}, report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
