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
  crosscheck plan           draw N configs (Hypothesis), predict each one's outcome set,
                            write the GPU job list (and build it with --build)
  crosscheck report FILES   silicon launch records vs the simulator: agreement table

Exit status: 0 = ran and agrees (with the scenario's [expect], or no findings when it
declares none); 1 = findings or a disagreement; 2 = bad input (one line on stderr).

Examples:
  protosim demo
  protosim run scenarios/v2_no_phase_flip.toml
  protosim run scenarios/v5_ring.toml --runs 100 --max-stall 5000 --slack
  protosim run scenarios/v6_full_chip_h200.toml --json > verdict.json
  protosim explain scenarios/v6_reset_phase_odd_k.toml
  protosim trace scenarios/v2_no_phase_flip.toml -o v2.json   # open in https://ui.perfetto.dev
  protosim crosscheck plan -n 200 --seed 0 -o crosscheck/plan.json --build
  protosim crosscheck report results/silicon/*.jsonl --json agreement.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from protosim.arch import UnknownArch, available, load_profile
from protosim.config import ConfigError
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

    cc = sub.add_parser("crosscheck", help="simulator vs silicon: plan configs for the GPU, or report agreement",
                        description="Close the loop between the simulator and the H200 (docs/crosscheck.md).")
    ccsub = cc.add_subparsers(dest="crosscheck_command", metavar="STEP", required=True)
    cp = ccsub.add_parser("plan", help="draw configs, predict their outcome sets, write the GPU job list",
                          description="Draw N distinct configs from protosim.strategies (seeded), replay each on the simulator "
                                      "(nominal + perturbations; delayed configs nominal only) and write OUT (cases and "
                                      "predictions) and OUT's .jobs.json (the kernels.build / kernels.run job list).")
    cp.add_argument("-n", type=int, default=200, help="configs to draw (default 200)")
    cp.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0)")
    cp.add_argument("--steps", default="v2,v3,v4,v5,v6,ws", help="steps to draw from (default all: v2,v3,v4,v5,v6,ws)")
    cp.add_argument("--bug-share", type=float, default=0.6, help="share of configs with one bug knob set (default 0.6)")
    cp.add_argument("--runs", type=int, default=8, help="replays per config without delays (default 8)")
    cp.add_argument("--launches", type=int, default=3, help="GPU launches per config (default 3)")
    cp.add_argument("-o", "--out", type=Path, default=Path("crosscheck/plan.json"), help="plan file (default crosscheck/plan.json)")
    cp.add_argument("--build", action="store_true", help="then build the kernels into --bundle (needs apache-tvm and nvcc)")
    cp.add_argument("--bundle", type=Path, default=Path(".gpu"), help="bundle folder for --build (default .gpu)")
    cr = ccsub.add_parser("report", help="judge silicon launch records against the simulator's predictions",
                          description="Group launch records (kernels.run JSON lines) by config, predict each config's outcome "
                                      "set with the current simulator, and judge every launch. Exit 0 when all agree, 1 otherwise.")
    cr.add_argument("records", type=Path, nargs="+", help="kernels.run JSON-lines files")
    cr.add_argument("--runs", type=int, default=8, help="replays per config without delays (default 8)")
    cr.add_argument("--plan", type=Path, help="a plan file: also list its configs that have no record")
    cr.add_argument("--json", type=Path, help="also write the full report as JSON to this file")
    cr.add_argument("--rows", type=int, default=None, help="print at most this many table rows (default all)")
    cr.add_argument("--timing", action="store_true", help="also compare times: a fit over correct configs, and the bench "
                                                          "configs' simulated vs measured time and step-to-step speed-ups "
                                                          "(replays each bench config once: ~30 s each)")
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


def _cmd_crosscheck(args) -> int:
    import json
    import subprocess

    from protosim import crosscheck as cc

    if args.runs < 1:
        return _fail(f"--runs {args.runs}: must be >= 1")
    if args.crosscheck_command == "plan":
        from protosim.strategies import STEPS

        steps = tuple(x.strip() for x in args.steps.split(",") if x.strip())
        bad = [x for x in steps if x not in STEPS]
        if bad or not steps:
            return _fail(f"--steps {args.steps}: use some of {', '.join(STEPS)}")
        if args.n < 1 or args.launches < 1 or not 0 <= args.bug_share <= 1:
            return _fail("-n and --launches must be >= 1 and --bug-share in [0, 1]")
        n_bugs = round(args.n * args.bug_share)
        cases = cc.draw_cases(n_bugs, args.seed, steps=steps, bugs=True) + cc.draw_cases(args.n - n_bugs, args.seed, steps=steps, bugs=False)
        progress = _Progress("predicting")
        preds = cc.predict_many(cases, runs=args.runs, progress=progress)
        progress.close()
        jobs = [cc.job_for(c, p, args.launches) for c, p in zip(cases, preds, strict=True)]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        jobs_path = args.out.with_suffix(".jobs.json")
        args.out.write_text(json.dumps({"seed": args.seed, "n": args.n, "steps": list(steps), "runs": args.runs,
                                        "predictions": [p.to_json() for p in preds]}, indent=1) + "\n")
        jobs_path.write_text(json.dumps(jobs, indent=1) + "\n")
        from collections import Counter

        sets = Counter("{" + ", ".join(sorted(p.kinds)) + "}" for p in preds)
        print(f"{len(cases)} configs ({n_bugs} with a bug knob, {sum(c.delayed for c in cases)} with a delay); predicted sets: "
              + ", ".join(f"{k} {v}" for k, v in sets.most_common()))
        print(f"wrote {args.out} and {jobs_path} ({sum(j['launches'] for j in jobs)} launches, "
              f"{sum(j['may_fault'] for j in jobs)} configs get a process per launch)")
        build = [sys.executable, "-m", "kernels.build", "--plan-file", str(jobs_path), "--bundle", str(args.bundle)]
        if args.build:
            rc = subprocess.run(build, check=False).returncode
            if rc:
                return _fail(f"kernels.build failed (exit {rc}); run `{' '.join(build)}` from the repository root to see why")
        else:
            print("next: " + " ".join(build[1:]))
        print(f"then on the GPU: python -m kernels.run --bundle {args.bundle} --out OUT.jsonl --commit <sha>  (docs/crosscheck.md)")
        print("then: protosim crosscheck report OUT.jsonl --plan " + str(args.out))
        return 0
    records = []
    for path in args.records:
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            return _fail(f"{path}: {e.strerror}")
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                return _fail(f"{path}:{n}: not a JSON line ({e.msg})")
    try:
        progress = _Progress("predicting")
        reports = cc.compare_many(records, runs=args.runs, progress=progress)
        progress.close()
    except ConfigError as e:
        return _fail(f"a record's config is not a valid GemmConfig: {e}")
    except (KeyError, TypeError) as e:
        return _fail(f"a record lacks a field of kernels.run's launch records ({e}); give kernels.run JSON-lines files")
    print(cc.render(reports, args.rows))
    timing = None
    if args.timing:
        timing = {"correct_fit": cc.correct_fit(reports), "bench": cc.bench_timing(records)}
        print(cc.render_timing(timing["correct_fit"], timing["bench"]))
    missing = []
    if args.plan:
        try:
            plan = json.loads(args.plan.read_text())
        except (OSError, json.JSONDecodeError) as e:
            return _fail(f"{args.plan}: cannot read the plan ({e})")
        ran = {json.dumps(r.prediction.case.to_dict(), sort_keys=True) for r in reports}
        missing = [p["label"] for p in plan["predictions"] if json.dumps(p["case"], sort_keys=True) not in ran]
        if missing:
            print(f"\n{len(missing)} planned config(s) have no silicon record: " + "; ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))
    if args.json:
        args.json.write_text(json.dumps({"summary": cc.summary(reports), "not_run": missing, "timing": timing,
                                         "cases": [r.to_json() for r in reports]}, indent=1) + "\n")
    return 0 if all(r.agree for r in reports) else 1


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
             "profile": _cmd_profile, "trace": _cmd_trace, "plot": _cmd_plot, "report": _cmd_report,
             "crosscheck": _cmd_crosscheck}

if __name__ == "__main__":
    sys.exit(main())
