"""How far apart the model's L2 re-reads are: LRU stack distances over a replay's L2 traffic (issue 16).

For every config of the given timing records (or the one ``--step`` / ``--shape`` picks), replay
the builder's schedule as ``crosscheck report --timing`` does and keep the L2's traffic in order:
each read of a global tile and each write, with the bytes the tile then holds of the LRU.  A
read's *stack distance* is the bytes of the other tiles touched since its tile was last touched:
an LRU of capacity C hits it iff its distance and its own bytes fit in C.  Printed per config and
tensor: reads, first touches, re-reads, and the re-reads' distance quantiles (count-weighted: a
one-stage loop waits on its slowest load, however small), beside the capacity the launch reaches
(``ArchProfile.l2_capacity``) and the replay's misses.

This is how the first-touch bug of ``MemorySystem.read`` was found (a re-read 36 MB later that
still hit with the L2 cut to 30 MB) -- results/silicon/timing/2026-12-04_l2_few_sms_after_the_fact.md.

    python -m kernels.runner.l2_reuse results/silicon/timing/<record>.jsonl [...] [--step ws] [--shape 2048x2048x4096] [--json]

CPU only; a 2048^2 x 4096 config on 8 SMs replays in ~20 s.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path


def stack_distances(accesses: Iterable[tuple[str, float]]) -> list[float | None]:
    """For each ``(tile, bytes)`` access in order: the bytes of the distinct other tiles touched since
    the tile's last access (each counted at its size as of its own last access), or None for a
    first touch.  A Fenwick tree over access positions holds each tile's size at its last one."""
    seq = list(accesses)
    tree = [0.0] * (len(seq) + 1)

    def add(i: int, v: float) -> None:
        i += 1
        while i < len(tree):
            tree[i] += v
            i += i & -i

    def before(i: int) -> float:  # the sizes stored at positions < i
        s = 0.0
        while i > 0:
            s += tree[i]
            i -= i & -i
        return s

    last: dict[str, tuple[int, float]] = {}
    out: list[float | None] = []
    for i, (key, size) in enumerate(seq):
        prev = last.get(key)
        if prev is None:
            out.append(None)
        else:
            out.append(before(i) - before(prev[0] + 1))
            add(prev[0], -prev[1])
        add(i, size)
        last[key] = (i, size)
    return out


def traced_replay(schedule, arch=None):
    """Replay ``schedule`` nominally; return (result, L2 traffic): ``(tile, bytes held, is_read, hit)``
    per read and write, in the order the L2 saw them (writes are tiles of their own, never read)."""
    from protosim.engine.machine import Machine
    from protosim.engine.resources import MemorySystem

    class TracingMemory(MemorySystem):
        def read(self, now, key, nbytes, tpc=0):
            hit, done = super().read(now, key, nbytes, tpc)
            self.trace.append((key, self._lru.get(key, float(nbytes)), True, hit))
            return hit, done

        def write(self, now, nbytes, tpc=0):
            done = super().write(now, nbytes, tpc)
            self.trace.append((f"~write{len(self.trace)}", float(nbytes), False, None))
            return done

    m = Machine(schedule, arch)
    m.memory.__class__ = TracingMemory  # the same state, its reads and writes also recorded
    m.memory.trace = []
    trace = m.memory.trace
    return m.run(), trace


def quantiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    xs = sorted(xs)
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return {"p50": pick(0.5), "p90": pick(0.9), "max": xs[-1]}


def profile(schedule, arch) -> dict:
    """Per tensor: reads, first touches, and the re-reads' stack distances (bytes)."""
    from protosim.engine.resources import launch_l2_bytes, tensor_of

    result, trace = traced_replay(schedule, arch)
    dist = stack_distances((key, size) for key, size, _, _ in trace)
    tensors: dict[str, dict] = {}
    for (key, _, is_read, hit), d in zip(trace, dist):
        if not is_read:
            continue
        t = tensors.setdefault(tensor_of(key), {"reads": 0, "first": 0, "misses": 0, "rereads": []})
        t["reads"] += 1
        t["misses"] += not hit
        if d is None:
            t["first"] += 1
        else:
            t["rereads"].append(d)
    cap = launch_l2_bytes(schedule, arch)
    out = {}
    for name, t in tensors.items():
        far = sum(d > cap for d in t["rereads"])
        out[name] = {"reads": t["reads"], "first": t["first"], "misses": t["misses"],
                     "reread_mb": {k: round(v / 1e6, 2) for k, v in quantiles(t["rereads"]).items()},
                     "rereads_past_capacity": far}
    return {"capacity_mb": round(cap / 1e6, 2), "end_cycle": result.end_cycle, "tensors": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.runner.l2_reuse", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", nargs="+", type=Path, help="timing records (JSON lines of kernels.runner.gemm)")
    ap.add_argument("--step", help="only this step (v4, v5, v6, ws, ...)")
    ap.add_argument("--shape", help="only this M x N x K, e.g. 2048x2048x4096")
    ap.add_argument("--json", action="store_true", help="one JSON line per config")
    args = ap.parse_args(argv)
    from protosim.arch import load_profile
    from protosim.crosscheck import case_of, schedule_of

    shape = None
    if args.shape:
        try:
            shape = tuple(int(x) for x in args.shape.lower().split("x"))
            assert len(shape) == 3
        except (ValueError, AssertionError):
            ap.error(f"--shape {args.shape!r}: give M x N x K, e.g. 2048x2048x4096")
    seen: set[str] = set()
    for path in args.records:
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            ap.error(f"{path}: {e.strerror or e}")
        for n, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                print(f"{path}:{n}: not JSON, skipped", file=sys.stderr)
                continue
            if rec.get("kind") != "outcome" or "config" not in rec:
                continue
            case = case_of(rec)
            c = case.config
            if (args.step and case.step != args.step) or (shape and (c.M, c.N, c.K) != shape):
                continue
            label = case.label()
            if label in seen:
                continue
            seen.add(label)
            row = {"label": label, **profile(schedule_of(case), load_profile(c.arch))}
            if args.json:
                print(json.dumps(row), flush=True)
                continue
            print(f"{label}: L2 reachable {row['capacity_mb']} MB", flush=True)
            for name, t in row["tensors"].items():
                q = t["reread_mb"]
                print(f"  {name}: {t['reads']} reads, {t['first']} first touches, {t['misses']} misses; re-reads "
                      f"{q.get('p50', '-')} / {q.get('p90', '-')} / {q.get('max', '-')} MB apart (p50/p90/max), "
                      f"{t['rereads_past_capacity']} past the reachable L2", flush=True)
    if not seen:
        print("no config of the records matched", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
