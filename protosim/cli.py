"""protosim: simulate a GPU async pipeline schedule and find its protocol bugs.

Commands:
  run FILE        replay a scenario (.toml) or a schedule (.json): verdict, the set
                  of outcomes reachable under timing perturbation, timing table
  explain FILE    tell the story of the first finding
  demo            run every built-in scenario and print one table
  schedule FILE   print the schedule a scenario builds, as JSON
  profile ARCH    print an architecture profile with the source of each number
  trace FILE -o OUT.json    the nominal replay as a Perfetto / chrome://tracing trace
  plot FILE -o OUT.png      a Gantt chart of one CTA, first finding marked (needs matplotlib)
  report FILE -o OUT.html   one self-contained page: verdict, story, timing, timeline

Exit status: 0 = ran and agrees (with the scenario's [expect], or no findings when it
declares none); 1 = findings or a disagreement; 2 = bad input (one line on stderr).

Examples:
  protosim demo
  protosim run scenarios/v2_no_phase_flip.toml
  protosim run scenarios/v5_ring.toml --runs 100 --max-stall 5000 --slack
  protosim run scenarios/v6_full_chip_h200.toml --json > verdict.json
  protosim explain scenarios/v6_reset_phase_odd_k.toml
  protosim trace scenarios/v2_no_phase_flip.toml -o v2.json   # open in https://ui.perfetto.dev
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from protosim.arch import UnknownArch, available, load_profile
from protosim.explain import explain
from protosim.ir import ScheduleError, to_json
from protosim.report import dumps, render_demo, render_run, run_scenario
from protosim.scenarios import ScenarioError, builtin_dir, load_scenario


class _Progress:
    """Progress on stderr for long explorations, only when a person is watching."""

    def __init__(self, label: str):
        self.label = label
        self.start = time.monotonic()
        self.shown = False
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.tty or time.monotonic() - self.start < 1.0:
            return
        self.shown = True
        print(f"\r{self.label}: replay {done}/{total}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown:
            print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="protosim", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def explore_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--runs", type=int, help="perturbed replays to explore (default: the scenario's, else 24, "
                                                 "or 1 for schedules of more than 50,000 ops; 1 = nominal only)")
        sp.add_argument("--max-stall", type=int, help="largest injected stall in cycles (default: the scenario's, else 2000)")
        sp.add_argument("--seed", type=int, help="exploration seed (default: the scenario's, else 0)")

    r = sub.add_parser("run", help="replay a scenario or schedule and print the verdict",
                       description="Replay FILE (a scenario .toml or a schedule .json): the nominal verdict with its "
                                   "findings, the outcomes reachable under seeded timing perturbation, and a timing table.")
    r.add_argument("file", type=Path)
    explore_args(r)
    r.add_argument("--slack", action="store_true", help="also measure how much lag of one warp the schedule tolerates")
    r.add_argument("--json", action="store_true", help="print the full report as JSON")

    e = sub.add_parser("explain", help="narrate the first finding of the nominal replay")
    e.add_argument("file", type=Path)

    d = sub.add_parser("demo", help="run every built-in scenario and print one table")
    d.add_argument("--dir", type=Path, default=None, help="scenario folder (default: the repository's scenarios/)")
    explore_args(d)
    d.add_argument("--json", action="store_true", help="print all reports as JSON")

    s = sub.add_parser("schedule", help="print the schedule a scenario builds, as JSON")
    s.add_argument("file", type=Path)

    pr = sub.add_parser("profile", help="print an architecture profile with sources")
    pr.add_argument("arch", help=f"one of: {', '.join(available())}")

    def view_args(sp: argparse.ArgumentParser, suffix: str) -> None:
        sp.add_argument("file", type=Path)
        sp.add_argument("-o", "--out", type=Path, required=True, help=f"output file ({suffix})")
        sp.add_argument("--max-ctas", type=int, default=8,
                        help="CTAs to keep in full detail: those with findings first, then the lowest indices (default 8)")

    t = sub.add_parser("trace", help="write the nominal replay as Chrome trace-event JSON (Perfetto, chrome://tracing)",
                       description="Replay FILE once and write its timeline as Chrome trace-event JSON: a process per CTA, "
                                   "a track per warp and unit, barrier counters, flows from the op that completed a phase "
                                   "to the waits it released, findings as instant events with their evidence. Open it in "
                                   "https://ui.perfetto.dev or chrome://tracing.")
    view_args(t, ".json")
    pl = sub.add_parser("plot", help="draw one CTA's timeline as a PNG Gantt chart (needs matplotlib)")
    view_args(pl, ".png")
    pl.add_argument("--cta", type=int, help="which CTA (default: the one with the first finding, else the first)")
    rp = sub.add_parser("report", help="write one self-contained HTML page: verdict, explanation, timing, timeline")
    view_args(rp, ".html")
    return p


def _fail(message: str) -> int:
    print(f"protosim: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        if getattr(args, "max_ctas", 1) < 1:
            return _fail(f"--max-ctas {args.max_ctas}: must be >= 1")
        for name in ("runs", "max_stall", "seed"):
            value = getattr(args, name, None)
            if value is not None and value < (1 if name == "runs" else 0):
                return _fail(f"--{name.replace('_', '-')} {value}: must be >= {1 if name == 'runs' else 0}")
        return _COMMANDS[args.command](args)
    except (ScenarioError, ScheduleError, UnknownArch) as e:
        return _fail(str(e))
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


def _cmd_run(args) -> int:
    scenario = load_scenario(args.file)
    progress = _Progress(scenario.name)
    rep = run_scenario(scenario, runs=args.runs, max_stall=args.max_stall, seed=args.seed,
                       with_slack=args.slack, progress=progress)
    progress.close()
    print(dumps(rep.to_json()) if args.json else render_run(rep))
    if rep.agrees is None:
        return 0 if rep.verdict.ok else 1
    return 0 if rep.agrees else 1


def _cmd_explain(args) -> int:
    from protosim.verdict import judge

    scenario = load_scenario(args.file)
    verdict, result = judge(scenario.build())
    print(explain(verdict, result, title=scenario.name))
    return 0


def _cmd_demo(args) -> int:
    folder = args.dir or builtin_dir()
    files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    if not files:
        return _fail(f"{folder}: no scenario files (*.toml); pass --dir with a folder of scenarios")
    reports = []
    for i, f in enumerate(files):
        scenario = load_scenario(f)
        if sys.stderr.isatty():
            print(f"\r[{i + 1}/{len(files)}] {scenario.name:<40}", end="", file=sys.stderr, flush=True)
        reports.append(run_scenario(scenario, runs=args.runs, max_stall=args.max_stall, seed=args.seed))
    if sys.stderr.isatty():
        print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)
    if args.json:
        print(dumps([r.to_json() for r in reports]))
    else:
        print(render_demo(reports))
    return 0 if all(r.agrees is not False for r in reports) else 1


def _cmd_schedule(args) -> int:
    scenario = load_scenario(args.file)
    print(dumps(to_json(scenario.build())))
    return 0


def _cmd_profile(args) -> int:
    prof = load_profile(args.arch)
    print(f"{prof.name}: {prof.description} ({prof.target})")
    width = max(len(k) for k in prof.constants)
    for key, c in prof.constants.items():
        mark = "GUESS" if c.guess else "     "
        print(f"  {key.ljust(width)}  {str(c.value):>32} {c.unit:<22} {mark} {c.source}")
    print(f"\n{len(prof.guesses())} of {len(prof.constants)} constants are guesses.")
    return 0


def _nominal_timeline(args):
    """Replay the scenario once; its verdict, raw result and timeline."""
    from protosim.explain import primary
    from protosim.timeline import build_timeline
    from protosim.verdict import judge

    scenario = load_scenario(args.file)
    verdict, result = judge(scenario.build())
    timeline = build_timeline(result, verdict.findings, verdict.outcome.summary(), max_ctas=args.max_ctas,
                              first=primary(verdict.findings))
    return scenario, verdict, result, timeline


def _written(path: Path, what: str, note: str) -> int:
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1e6:.2f} MB): {what}" + (f"; {note}" if note else ""))
    return 0


def _cmd_trace(args) -> int:
    import json

    from protosim.views.trace import to_trace_events

    _, _, _, tl = _nominal_timeline(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as f:
        json.dump(to_trace_events(tl), f, separators=(",", ":"))
    return _written(args.out, "open it in https://ui.perfetto.dev or chrome://tracing", tl.note)


def _cmd_plot(args) -> int:
    from protosim.views.plot import PlotError, plot

    _, _, _, tl = _nominal_timeline(args)
    try:
        plot(tl, args.out, cta=args.cta)
    except PlotError as e:
        return _fail(str(e))
    return _written(args.out, f"CTA {args.cta if args.cta is not None else 'of the first finding'}", tl.note)


def _cmd_report(args) -> int:
    from protosim.views.html import render

    scenario, verdict, result, tl = _nominal_timeline(args)
    page = render(tl, verdict, explain(verdict, result, title=scenario.name), title=scenario.name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page, encoding="utf-8")
    return _written(args.out, "a self-contained page (no network needed)", tl.note)


_COMMANDS = {"run": _cmd_run, "explain": _cmd_explain, "demo": _cmd_demo, "schedule": _cmd_schedule,
             "profile": _cmd_profile, "trace": _cmd_trace, "plot": _cmd_plot, "report": _cmd_report}

if __name__ == "__main__":
    sys.exit(main())
