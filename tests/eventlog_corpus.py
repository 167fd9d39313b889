"""Golden event logs: what every replay wrote before a refactoring, to compare after it.

A structural change of the engine or of the builders (issue 17: the engine split by
unit, the shared pipeline type) must not change a single event.  This module replays a
fixed corpus -- every built-in scenario, every Triton fixture, and the distinct configs
of the recorded silicon campaigns -- under a fixed set of perturbations, and reduces each
replay to a digest of its whole event log (every event, every field, times as exact
floats) plus its result (trap, blocked warps, end cycle).  It also records each
schedule's content hash, so a builder that now emits a different schedule shows up as
such, not as a different log.

    python -m tests.eventlog_corpus --write    # record tests/data/eventlog_golden.json
    python -m tests.eventlog_corpus            # compare, print the differences
    python -m tests.eventlog_corpus --rehash   # take new schedule hashes where no log changed
    python -m tests.eventlog_corpus --add      # record new corpus entries only

The file names the commit it was recorded at; ``tests/test_eventlog_golden.py`` compares
against it.  Re-record only for a change that is *meant* to alter replays, and say so in
the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from protosim.crosscheck import case_of
from protosim.engine.machine import replay
from protosim.engine.perturb import Perturbation, iter_explore_plan, race_plan
from protosim.frontends import ttgir
from protosim.ir import Schedule, content_hash
from protosim.scenarios import builtin_dir, load_scenario

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "eventlog_golden.json"
FIXTURES = ROOT / "tests" / "fixtures" / "triton"
SILICON = ROOT / "results" / "silicon"

NOMINAL_ONLY_OPS = 30_000
"""Schedules larger than this replay nominal only (the full-chip scenario): the corpus
stays a few seconds per hundred schedules."""
RECORD_CASES = 160
"""Distinct recorded configs taken, spread evenly over the campaigns' files."""


def perturbations(schedule: Schedule) -> list[Perturbation]:
    """Nominal, the first replays of the seeded exploration (jitter, warp and unit
    stalls, with nanosleep scaling), two race-plan skews and the tolerated-UB replay:
    every timing path of the engine is taken by some of them."""
    if schedule.op_count() > NOMINAL_ONLY_OPS:
        return [Perturbation.none()]
    explored = iter_explore_plan(seed=7, max_stall=2000, sleeps=True, far_l2=True)
    plan = [next(explored) for _ in range(6)]
    plan += race_plan(tuple(r.name for r in schedule.roles))[:2]
    plan.append(Perturbation(tolerate_ub=True, jitter=0.1, seed=3))
    return plan


def _scenarios() -> Iterator[tuple[str, Callable[[], Schedule]]]:
    for path in sorted(builtin_dir().glob("*.toml")):
        yield f"scenario:{path.stem}", lambda p=path: load_scenario(p).build()


def _triton() -> Iterator[tuple[str, Callable[[], Schedule]]]:
    for path in sorted(FIXTURES.glob("*.ttgir")):
        yield f"ttgir:{path.stem}", lambda p=path: ttgir.read(p)[0]


LATER_CAMPAIGNS = ("2026-11-30_h200_6129b04_crosscheck_seed41_cluster.jsonl",)
"""Campaign files recorded after the corpus, left out of the even spread of ``record:`` entries
(a new file would shift the spread and rename every one of them): later campaigns join the
corpus as scenarios or explicit entries (``--add``) -- the cluster campaign through the
``ws_cluster_*`` scenarios."""


def _recorded() -> Iterator[tuple[str, Callable[[], Schedule]]]:
    paths = sorted(p for p in SILICON.glob("*.jsonl") if p.name not in LATER_CAMPAIGNS)
    seen: dict[str, object] = {}
    # Plain JSON, not crosscheck.read_records: that one validates by building every distinct
    # config (~900 builds, minutes on a slow CI machine), and this runs at test collection.
    # The records are committed evidence, checked by tests/test_silicon_results.py.
    records = [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]
    for r in records:
        if r.get("kind", "outcome") != "outcome":
            continue
        case = case_of(r)
        key = json.dumps({"step": case.step, **case.config.to_dict()}, sort_keys=True)
        seen.setdefault(key, case)
    cases = list(seen.values())
    stride = max(1, len(cases) // RECORD_CASES)
    for n, case in enumerate(cases[::stride][:RECORD_CASES]):
        yield f"record:{n:03d}:{case.step}", case.build


KERNEL_CASES = (
    ("v7", {}), ("v7", {"expect_tx_delta": -1024}), ("v7", {"wait_parity_flip": "tma"}),
    ("v7", {"reset_phase_per_tile": True, "K": 320}), ("ws", {"arch": "h200", "skip_mma_phase_flip": True}),
)
"""Schedules the TIRx frontend reads from the kernels (the book's step 7, written before its
builder existed, and one Hopper kernel): the frontend's output is held to its event logs like
the builders' are."""


def _kernels() -> Iterator[tuple[str, Callable[[], Schedule]]]:
    from protosim.config import GemmConfig

    for step, knobs in KERNEL_CASES:
        fields = {"M": 256, "N": 256, "K": 512, "PIPE_DEPTH": 2, "sm_count": 2, **knobs}
        label = ",".join(f"{k}={v}" for k, v in sorted(knobs.items())) or "correct"

        def build(step=step, fields=fields) -> Schedule:
            from kernels.tirx.extracted import extract_schedule  # needs apache-tvm (make test installs it)

            return extract_schedule(step, GemmConfig(**fields))
        yield f"kernel:{step}:{label}", build


def corpus() -> Iterator[tuple[str, Callable[[], Schedule]]]:
    yield from _scenarios()
    yield from _triton()
    yield from _recorded()
    yield from _kernels()


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return repr(value)  # exact: 0.1 + 0.2 must not round to 0.3
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return repr(value)  # dataclass states: their repr is every field


def log_digest(result) -> str:
    """SHA-256 over every event and the replay's result."""
    h = hashlib.sha256()
    for e in result.log.events:
        h.update(json.dumps([repr(e.t), e.kind, e.cta, e.who, e.op, _plain(e.data)], separators=(",", ":")).encode())
        h.update(b"\n")
    summary = {"trap": repr(result.trap), "blocked": [repr(b) for b in result.blocked], "end": repr(result.end_cycle),
               "launched": result.ctas_launched, "finished": result.ctas_finished,
               "barriers": sorted(f"{k}={v!r}" for k, v in result.barriers.items())}
    h.update(json.dumps(summary, sort_keys=True).encode())
    return h.hexdigest()[:20]


def record_one(build: Callable[[], Schedule], which: Callable[[int], list[int]] | None = None) -> dict:
    """The entry's schedule hash and the digest of each replay.  ``which(n)`` picks the
    replays to run out of the ``n`` of the plan (the rest are ``None``): the default test
    run takes a rotating sample, ``make slow`` all of them."""
    schedule = build()
    plan = perturbations(schedule)
    chosen = set(range(len(plan)) if which is None else which(len(plan)))
    return {"schedule": content_hash(schedule),
            "runs": [log_digest(replay(schedule, perturbation=p)) if i in chosen else None for i, p in enumerate(plan)]}


def compute(progress: bool = False) -> dict[str, dict]:
    out = {}
    for name, build in corpus():
        out[name] = record_one(build)
        if progress:
            print(f"  {name}: {len(out[name]['runs'])} replays", file=sys.stderr)
    return out


def differences(golden: dict[str, dict], now: dict[str, dict]) -> list[str]:
    diffs = []
    for name in sorted(set(golden) | set(now)):
        g, n = golden.get(name), now.get(name)
        if g is None or n is None:
            diffs.append(f"{name}: {'new in the corpus' if g is None else 'missing now'}")
        elif g["schedule"] != n["schedule"]:
            diffs.append(f"{name}: the schedule changed ({g['schedule']} -> {n['schedule']})")
        elif len(g["runs"]) != len(n["runs"]) or any(b is not None and a != b for a, b in zip(g["runs"], n["runs"])):
            bad = [i for i, (a, b) in enumerate(zip(g["runs"], n["runs"])) if b is not None and a != b]
            diffs.append(f"{name}: event logs differ in replays {bad or 'count'}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="record the golden file at this commit")
    ap.add_argument("--rehash", action="store_true",
                    help="keep every recorded log digest; take the new schedule hash where the hash alone changed "
                         "(a change to what the hash covers, not to any replay); refuse if any log changed")
    ap.add_argument("--add", action="store_true",
                    help="record only the corpus entries the golden file does not have yet (new schedules), "
                         "keeping every recorded entry as it is")
    args = ap.parse_args(argv)
    if args.add:
        golden = json.loads(GOLDEN.read_text())
        new = [(n, build) for n, build in corpus() if n not in golden["cases"]]
        for n, build in new:
            golden["cases"][n] = record_one(build)
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
        print(f"added {len(new)} schedule(s): {', '.join(n for n, _ in new) or '-'}")
        return 0
    now = compute(progress=True)
    if args.rehash:
        golden = json.loads(GOLDEN.read_text())
        changed = [n for n in now if n in golden["cases"] and golden["cases"][n]["runs"] != now[n]["runs"]]
        if changed or set(now) != set(golden["cases"]):
            print(f"refused: event logs changed for {changed or 'the corpus itself'}")
            return 1
        moved = [n for n in now if golden["cases"][n]["schedule"] != now[n]["schedule"]]
        for n in moved:
            golden["cases"][n]["schedule"] = now[n]["schedule"]
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
        print(f"{len(moved)} schedule hashes taken, every event log unchanged: {', '.join(moved) or '-'}")
        return 0
    if args.write:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps({"commit": commit, "cases": now}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN.relative_to(ROOT)}: {len(now)} schedules, "
              f"{sum(len(v['runs']) for v in now.values())} replays at {commit}")
        return 0
    diffs = differences(json.loads(GOLDEN.read_text())["cases"], now)
    print("\n".join(diffs) if diffs else f"identical: {len(now)} schedules")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
