"""Run a scenario end to end and render the result (text for people, JSON for machines).

:func:`run_scenario` is what ``protosim run`` and ``protosim demo`` call:
nominal verdict, outcome set over perturbed replays, optional slack, and the
comparison with the scenario's expectation.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from protosim._dataclass_cache import DataclassCache
from protosim.arch import load_profile
from protosim.engine import RunResult
from protosim.ir import content_hash
from protosim.scenarios import Scenario, check_expectation
from protosim.verdict import OUTCOMES, OutcomeSet, Slack, Verdict, explore, judge, slack

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

LARGE_SCHEDULE_OPS = 50_000
"""Above this many ops a replay takes seconds: explore only when asked."""

OK, BUG, BAD_INPUT, INTERNAL = 0, 1, 2, 3
"""The exit-code contract of every command (README, ``protosim --help``)."""


@dataclass
class RunReport:
    scenario: Scenario
    verdict: Verdict
    result: RunResult
    outcomes: OutcomeSet | None
    slack: Slack | None
    problems: list[str]
    note: str = ""

    @property
    def agrees(self) -> bool | None:
        return None if not self.scenario.expect.declared else not self.problems

    @property
    def ok(self) -> bool:
        """No finding in the nominal replay and every explored replay correct, without findings."""
        return self.verdict.ok and (self.outcomes is None or self.outcomes.clean())

    @property
    def status(self) -> int:
        """0 when ok and agreeing with a declared [expect]; 1 otherwise."""
        return OK if self.ok and self.agrees is not False else BUG

    def headline(self) -> str:
        """The one line a user reads: OK or NOT OK, the worst reachable outcomes and how
        often, and what the nominal replay showed."""
        v, o = self.verdict, self.outcomes
        counts: dict[str, int] = {}
        for f in v.findings:
            counts[f.kind] = counts.get(f.kind, 0) + 1
        found = ", ".join(f"{k} x{n}" for k, n in counts.items())
        nominal = f"the nominal replay is {v.outcome.kind}" + (f" ({', '.join(counts)})" if counts else "")
        if o is None:
            scope = f"nominal replay only ({self.note or 'no exploration'})"
            if self.ok:
                return f"OK: no findings in the nominal replay; {scope}"
            return f"NOT OK: {v.outcome.kind} ({', '.join(counts) or 'no findings'}) in the nominal replay; {scope}"
        bad = o.bad()
        if self.ok:
            return f"OK: no findings; every replay correct ({o.runs}/{o.runs}; {o.describe_stop()})"
        if bad:
            reach = ", ".join(f"{c.kind} in {c.runs}/{o.runs}" for c in bad)
            return f"NOT OK: {reach.replace(' in ', ' reachable in ', 1)} replays; {nominal}"
        extra = sorted(o.classes["correct"].finding_kinds - set(counts)) if "correct" in o.classes else []
        if found:
            return (f"NOT OK: findings ({', '.join(counts)}) in the nominal replay, though every replay's output was "
                    f"correct ({o.runs}/{o.runs})")
        return (f"NOT OK: findings {', '.join(extra)} in perturbed replays, though every replay's output was correct "
                f"({o.runs}/{o.runs}); {nominal}")

    def to_json(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "scenario": s.name,
            "file": str(s.path),
            "builder": s.builder,
            "config": s.config.to_dict() if s.config else None,
            "verdict": self.verdict.to_json(),
            "outcome_set": self.outcomes.to_json() if self.outcomes else None,
            "slack": self.slack.to_json() if self.slack else None,
            "expect": s.expect.to_json(),
            "agrees": self.agrees,
            "problems": self.problems,
            "note": self.note,
            "ok": self.ok,
            "status": self.status,
            "headline": self.headline(),
        }


def run_scenario(scenario: Scenario, runs: int | None = None, max_stall: int | None = None,
                 seed: int | None = None, with_slack: bool = False,
                 progress: Callable[[int, int], None] | None = None, budget_s: float | None = None,
                 slack_target: tuple[str, int] | None = None, schedule=None) -> RunReport:
    """``runs``: replays to explore (1: nominal only; None: the scenario's [explore] runs,
    else adaptive -- see :func:`protosim.verdict.explore`).  Schedules of more than
    :data:`LARGE_SCHEDULE_OPS` ops are replayed once unless ``runs`` is given."""
    schedule = schedule if schedule is not None else scenario.build()
    arch = load_profile(schedule.arch)
    h = content_hash(schedule)
    verdict, result = judge(schedule, arch, schedule_hash=h)
    note = ""
    if runs is None:
        runs = scenario.runs
    explore_runs: int | None = runs
    if runs is None and schedule.op_count() > LARGE_SCHEDULE_OPS:  # nobody chose: replay large schedules once
        explore_runs = 1
        note = (f"exploration skipped: {schedule.op_count():,} ops make each replay slow; "
                f"pass --runs N (or [explore] runs) to explore")
    outcomes = None
    if explore_runs is None or explore_runs > 1:
        outcomes = explore(schedule, runs=explore_runs, seed=scenario.seed if seed is None else seed,
                           max_stall=scenario.max_stall if max_stall is None else max_stall, arch=arch,
                           progress=progress, budget_s=budget_s)
    sl = None
    if with_slack:
        role, warp = slack_target if slack_target else (None, None)
        sl = slack(schedule, arch=arch, role=role, warp=warp)
    problems = check_expectation(scenario.expect, verdict, outcomes)
    return RunReport(scenario, verdict, result, outcomes, sl, problems, note)


# --------------------------------------------------------------------------- text


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def render_run(rep: RunReport, max_findings: int = 8) -> str:
    v, s, t = rep.verdict, rep.scenario, rep.verdict.timing
    arch = rep.result.arch
    lines = [f"scenario   {s.name}   ({s.builder} on {arch.name}, L2 {v.l2_at_launch} at launch, schedule {v.schedule_hash}, "
             f"{rep.result.schedule.op_count():,} ops, {len(rep.result.schedule.ctas)} CTA(s))"]
    if s.description:
        lines.append(f"           {s.description}")
    counts: dict[str, int] = {}
    for f in v.findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    lines.append(f"verdict    {rep.headline()}")
    if counts:
        lines.append("findings   " + ", ".join(f"{k} x{n}" for k, n in counts.items()) + "   [nominal replay]")
    lines.append(f"outcome    {v.outcome.summary()}   [nominal replay]")
    if rep.outcomes:
        o = rep.outcomes
        parts = []
        for k in OUTCOMES:
            c = o.classes.get(k)
            if c:
                extra = f", from a perturbation of {c.min_magnitude:,.0f} cyc" if c.min_magnitude > 0 else ""
                parts.append(f"{k} ({c.runs}/{o.runs}{extra})")
        lines.append(f"reachable  {'; '.join(parts)}   [{o.describe_stop()}; stalls up to {o.max_stall:,} cyc, seed {o.seed}]")
        if o.targets:
            lines.append(f"           lags aimed at {', '.join(o.targets[:8])}" + (f" (+{len(o.targets) - 8})" if len(o.targets) > 8 else ""))
        for k in OUTCOMES:
            c = o.classes.get(k)
            if c and k == "wrong":
                lines.append(f"           wrong tiles seen: {', '.join(str(tuple(x)) for x in sorted(c.tiles)[:8])}"
                             + (f" (+{len(c.tiles) - 8})" if len(c.tiles) > 8 else ""))
            if c and k == "deadlock":
                lines.append(f"           hung: {'; '.join(sorted(c.hung)[:4])}" + (f" (+{len(c.hung) - 4})" if len(c.hung) > 4 else ""))
            if c and k == "fault":
                lines.append(f"           faults: {', '.join(sorted(c.faults))}")
    if rep.note:
        lines.append(f"reachable  {rep.note}")
    if rep.slack:
        lines.append(f"slack      {rep.slack.summary(arch)}")
    e = s.expect
    if e.declared:
        want = []
        if e.nominal:
            want.append(f"nominal {e.nominal}")
        if e.ok is not None:
            want.append("ok" if e.ok else "not ok")
        if e.findings:
            want.append("findings " + ", ".join(e.findings))
        if e.outcomes:
            want.append("reach {" + ", ".join(e.outcomes) + "}" + (" may {" + ", ".join(e.may) + "}" if e.may else ""))
        status = "AGREES" if not rep.problems else "DISAGREES: " + "; ".join(rep.problems)
        lines.append(f"expected   {'; '.join(want)} -> {status}")
    if v.findings:
        lines.append("")
        lines.append("findings (first by cycle)")
        for f in v.findings[:max_findings]:
            lines.append(f"  [{f.kind}] {f.message}")
        if len(v.findings) > max_findings:
            lines.append(f"  ... {len(v.findings) - max_findings} more (--json for all)")
    lines.append("")
    lines.append(f"timing     {t.cycles:,.0f} cycles = {t.microseconds:,.2f} µs at {arch.clock_ghz} GHz "
                 f"({t.kernel_us:,.2f} µs kernel-only, with the launch's {arch.launch_fixed_us:g} µs); "
                 f"{t.events:,} events; {t.sms_used} SM(s) used")
    lines.append(f"  busy     TMA engine {_pct(t.tma_busy)}   tensor core {_pct(t.mma_busy)}   "
                 f"L2->SM {_pct(t.l2_busy)}   HBM {_pct(t.hbm_busy)}   L2 hit rate {_pct(t.l2_hit_rate)}")
    kinds = sorted({on for per in t.stall.values() for on in per})
    if kinds:
        lines.append("  stalled  cycles per warp, by what blocked it")
        width = max(13, *(len(k) + 2 for k in kinds))  # names like cp_async_wait must not run together
        lines.append("    " + "role".ljust(10) + "".join(k.rjust(width) for k in kinds))
        for role, per in t.stall.items():
            lines.append("    " + role.ljust(10) + "".join(f"{per.get(k, 0):{width},.0f}" for k in kinds))
    return "\n".join(lines)


def render_demo(reports: list[RunReport]) -> str:
    head = ("scenario", "builder", "arch", "nominal", "findings", "reachable", "cycles", "µs", "expect")
    rows = []
    for r in reports:
        v = r.verdict
        reach = ",".join(k for k in OUTCOMES if r.outcomes and k in r.outcomes.classes) if r.outcomes else "-"
        rows.append((
            r.scenario.name, r.scenario.builder, r.result.arch.name, v.outcome.kind,
            ",".join(v.kinds()) or "-", reach, f"{v.timing.cycles:,.0f}", f"{v.timing.microseconds:,.2f}",
            {None: "-", True: "ok", False: "MISMATCH"}[r.agrees],
        ))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    for row in rows:
        out.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))
    bad = [r for r in reports if r.agrees is False]
    out.append("")
    out.append(f"{len(reports)} scenarios, {sum(1 for r in reports if r.agrees)} agree with their expectation"
               + (f", {len(bad)} MISMATCH: " + ", ".join(r.scenario.name for r in bad) if bad else ""))
    return "\n".join(out)


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=str)


_DATACLASSES.save()  # after the module's last dataclass
