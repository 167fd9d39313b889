"""protosim: simulate a GPU async pipeline schedule and find its protocol bugs.

Commands:
  run FILE        replay a scenario (.toml), a schedule (.json), a Triton .ttgir or a
                  TIRx kernel (kernel.py:FUNC): verdict, the set of outcomes reachable
                  under timing perturbation, timing table
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
  sweep FILE --set K=...    judge every config of a grid (or --strategy's draws) in parallel:
                            one row per config; local processes or --ray ADDRESS (docs/sweep.md)

Exit status (every command):
  0  no finding, and every explored replay correct
  1  a protocol bug: a finding, or a reachable outcome other than correct (or a
     disagreement with the scenario's [expect]; for `demo`: a scenario that disagrees
     with its [expect]; for `crosscheck report`: a config that disagrees with silicon;
     for `sweep`: a config that is NOT OK -- else 2 when a grid point cannot be built)
  2  bad input or usage: one line on stderr naming the file, the field and the fix
  3  internal error: a bug in protosim; one line on stderr, the traceback saved to a file
  explain/trace/plot/report judge the nominal replay only; schedule/profile/crosscheck
  plan exit 0 or 2.  A closed pipe (`protosim run x | head`) keeps the status.
  Ctrl-C exits 130 (`sweep` first prints the rows that finished).

Examples:
  protosim demo
  protosim run scenarios/v2_no_phase_flip.toml
  protosim run scenarios/v5_ring.toml --runs 100 --max-stall 5000 --slack
  protosim run scenarios/v6_full_chip_h200.toml --json > verdict.json
  protosim explain scenarios/v6_reset_phase_odd_k.toml
  protosim run path/to/kernel.py:gemm --set M=4096 --set arch=h200   # a TIRx kernel
  protosim trace scenarios/v2_no_phase_flip.toml -o v2.json   # open in https://ui.perfetto.dev
  protosim crosscheck plan -n 200 --seed 0 -o crosscheck/plan.json --build
  protosim crosscheck report results/silicon/*.jsonl --json agreement.json
  protosim sweep scenarios/v5_ring.toml --set K=256,512,1024 --set PIPE_DEPTH=1..4
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from protosim import _startup  # noqa: F401 - first: SimPy without importlib.metadata (~14 ms of a cold start)
from protosim.arch import UnknownArch, available, load_profile
from protosim.config import ConfigError
from protosim.ir import ScheduleError
from protosim.report import BAD_INPUT, BUG, INTERNAL, OK, dumps
from protosim.scenarios import DEFAULT_MAX_OPS, ScenarioError, builtin_dir, load_scenario, parse_override


class UsageError(Exception):
    """A mistake in what the user asked for: printed as one line, exit status 2."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("protosim")
    except PackageNotFoundError:  # running from a checkout without installing
        return "0+unknown"


class _Version(argparse._VersionAction):
    """``--version``, its text looked up only when asked: importlib.metadata costs ~14 ms of every start."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"protosim {_version()}"
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2), as every other input error."""

    def error(self, message: str):  # noqa: D401 - argparse's name
        print(f"{self.prog}: {one_line(message)} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(BAD_INPUT)

    def _get_formatter(self):
        # argparse makes a formatter for every add_argument (~100 to build the parser), each asking
        # shutil for the terminal size: the width once per process instead, and no shutil import
        # (~3 ms of a cold start).  The same width shutil.get_terminal_size() gives.
        return self.formatter_class(prog=self.prog, width=_terminal_columns() - 2)


def _terminal_columns(cache: list[int] = []) -> int:  # noqa: B006 - the cache
    """``shutil.get_terminal_size().columns``: $COLUMNS, else stdout's terminal, else 80."""
    if not cache:
        try:
            columns = int(os.environ["COLUMNS"])
        except (KeyError, ValueError):
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
            except (AttributeError, ValueError, OSError):
                columns = 80
        cache.append(columns)
    return cache[0]


class _Progress:
    """Progress on stderr for work that takes more than ~2 s: a line redrawn in place on
    a terminal, a line every 10 s elsewhere (CI logs); nothing with ``--quiet``."""

    def __init__(self, label: str, quiet: bool = False):
        self.label = label
        self.start = time.monotonic()
        self.shown = False
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self.quiet or now - self.start < 2.0:
            return
        text = f"{self.label}: replay {done}/{total}" if total else f"{self.label}: {done}"
        if self.tty:
            print(f"\r{text} ({now - self.start:.0f} s)", end="", file=sys.stderr, flush=True)
        elif now - self.last >= 10.0:
            print(f"{text} ({now - self.start:.0f} s)", file=sys.stderr, flush=True)
        else:
            return
        self.shown, self.last = True, now

    def close(self) -> None:
        if self.shown and self.tty:
            print("\r" + " " * 70 + "\r", end="", file=sys.stderr, flush=True)


def _out(text: str) -> None:
    """Print to stdout; a reader that went away (``| head``) must not change the status."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is quiet too


def _positive(name: str, low: int = 1, high: int | None = None):
    def parse(text: str) -> int:
        # Decimal digits only: Python's int() also takes "1_0" (ten), which no one means on a command line.
        if not re.fullmatch(r"[+-]?[0-9]+", text.strip()):
            raise argparse.ArgumentTypeError(f"{name} {text!r}: not an integer")
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"{name} {value}: must be >= {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{name} {value}: at most {high:,}")
        return value
    return parse


def _announce(schedule, quiet: bool = False) -> None:
    """A replay of a large schedule takes seconds with nothing else to show: say so first."""
    from protosim.report import LARGE_SCHEDULE_OPS

    if not quiet and schedule.op_count() > LARGE_SCHEDULE_OPS:
        # ~20k ops/s: the full-chip 4096^3 step 6 (600k ops) replays in ~28 s on this 2-core machine
        print(f"protosim: replaying {schedule.op_count():,} ops in {len(schedule.ctas):,} CTAs "
              f"(about {schedule.op_count() / 20_000:.0f} s per replay) ...", file=sys.stderr, flush=True)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--budget {text!r}: not a number of seconds") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"--budget {text}: give seconds in (0, 86400]")
    return value


def _parser() -> argparse.ArgumentParser:
    from protosim.builders import knob_table

    p = _Parser(prog="protosim", description=__doc__.split("\n\n")[0],
                epilog=__doc__.split("\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def input_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("file", type=Path, help="a scenario .toml, a schedule .json (protosim schedule), a Triton "
                                                "TTGIR .ttgir, or a TIRx kernel: path/to/kernel.py[:FUNC]")
        sp.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a scenario field: a [config] field (K=1024, tma_issuer=each_warp) or "
                             "explore.runs=..., expect.nominal=...; for kernel.py:FUNC: a parameter of FUNC (M=4096), "
                             "arch=b200|h200|gb10, or an integer scalar parameter of the PrimFunc (lag_ns=500); "
                             "repeatable")
        sp.add_argument("--max-ops", type=_positive("--max-ops"), default=DEFAULT_MAX_OPS,
                        help=f"refuse schedules of more ops than this (default {DEFAULT_MAX_OPS:,}; the full-chip "
                             "4096^3 step 6 is ~600k)")

    def explore_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--runs", type=_positive("--runs"),
                        help="replays to explore, the first nominal (1 = nominal only).  Default: the scenario's "
                             "[explore] runs, else adaptive -- lags aimed at every role and warp, then seeded random "
                             "perturbations, until 32 replays in a row bring nothing new (24 to 400 replays); schedules "
                             "of more than 50,000 ops: nominal only")
        sp.add_argument("--max-stall", type=_positive("--max-stall", 0),
                        help="largest injected stall in cycles (default: the scenario's, else 2000)")
        sp.add_argument("--seed", type=_positive("--seed", 0), help="exploration seed (default: the scenario's, else 0)")
        sp.add_argument("--budget", type=_seconds, help="wall-clock seconds for one exploration (default 20)")
        sp.add_argument("--quiet", action="store_true", help="no progress on stderr")

    fields_help = ("Scenario files (TOML): name, description, builder, [config], [expect], [explore].\n"
                   "[config]: protosim.config.GemmConfig (builders hgemm_v1..v6, hgemm_ws): M=128 N=128 K=64 BLK_M=128 "
                   "BLK_N=128 BLK_K=64\n  PIPE_DEPTH=2 arch=\"b200\" sm_count=(one per SM) l2_group_size=8 "
                   "l2_at_launch=\"cold\", bug knobs (false/0/\"\" = correct):\n  skip_mma_phase_flip, "
                   "reset_phase_per_tile, tma_issuer=\"one\"|\"each_warp\", expect_tx_delta, wait_parity_flip=\"\"|"
                   "\"tma\"|\"mma\",\n  skip_store_wait; delay knobs: producer_delay_ns, consumer_delay_ns, lag_warp=1, "
                   "lag_ns.  triton_pipeline: M N K BLOCK_M BLOCK_N\n  BLOCK_K num_stages num_warps arch=\"gb10\"|\"h200\" "
                   "wait_delta alias_stages pendings_delta (protosim/builders/triton_pipeline.py).\n"
                   "Which builder honours which knob (setting an ignored knob is refused):\n" + knob_table() + "\n"
                   "[expect]: nominal = outcome, ok = true|false (nominal findings), findings = [kinds], outcomes = "
                   "[must reach], may = [may reach].\n[explore]: runs, max_stall = 2000, seed = 0.\n\n"
                   "TIRx kernels (apache-tvm 0.27): FILE is path/to/kernel.py:FUNC, FUNC a module-level @T.prim_func or "
                   "a function\n  returning one (without :FUNC, the module's only PrimFunc).  --set KEY=VALUE: a "
                   "parameter of FUNC is\n  passed to it (M=4096), arch=b200|h200|gb10 picks the GPU (default: "
                   "tcgen05 -> b200, wgmma -> h200),\n  any other KEY an integer scalar parameter of the PrimFunc "
                   "(timeout_cycles=..., lag_ns=...; unset: 0).\n  e.g. protosim run kernels/my_gemm.py:gemm --set "
                   "M=4096 --set arch=h200")
    r = sub.add_parser("run", help="replay a scenario, schedule, TTGIR or TIRx kernel.py:FUNC and print the verdict",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=fields_help,
                       description="Replay FILE: the headline verdict over every replay, the nominal replay's findings, "
                                   "the outcomes reachable under timing perturbation, and a timing table.  Exit 0: no "
                                   "finding and every replay correct; 1: a protocol bug (or a disagreement with the "
                                   "scenario's [expect]); 2: bad input; 3: a bug in protosim.")
    input_args(r)
    explore_args(r)
    r.add_argument("--slack", action="store_true", help="also measure how much lag of one warp the schedule tolerates")
    r.add_argument("--slack-warp", metavar="ROLE.wN",
                   help="the warp --slack lags, e.g. mma.w1 or producer.w0 (default: warp 1 of the first role with two "
                        "or more warps, else warp 0)")
    r.add_argument("--json", action="store_true", help="print the full report as JSON (ok, status and headline at the top level)")

    e = sub.add_parser("explain", help="narrate the first finding of the nominal replay")
    input_args(e)

    d = sub.add_parser("demo", help="run every built-in scenario and print one table",
                       description="Run every scenario of a folder.  Exit 0 when each agrees with its [expect], 1 otherwise.")
    d.add_argument("--dir", type=Path, default=None, help="scenario folder (default: the repository's scenarios/)")
    explore_args(d)
    d.add_argument("--json", action="store_true", help="print all reports as JSON")

    s = sub.add_parser("schedule", help="print the schedule a scenario builds, as JSON (keeps its name, description, [expect])")
    input_args(s)

    pr = sub.add_parser("profile", help="print an architecture profile with sources")
    pr.add_argument("arch", help=f"one of: {', '.join(available())}")

    def view_args(sp: argparse.ArgumentParser, suffix: str) -> None:
        input_args(sp)
        sp.add_argument("-o", "--out", type=Path, required=True, help=f"output file ({suffix})")
        sp.add_argument("--max-ctas", type=_positive("--max-ctas"), default=8,
                        help="CTAs to keep in full detail: those with findings first, then the lowest indices (default 8)")

    t = sub.add_parser("trace", help="write the nominal replay as Chrome trace-event JSON (Perfetto, chrome://tracing)",
                       description="Replay FILE once and write its timeline as Chrome trace-event JSON: a process per CTA, "
                                   "a track per warp and unit, barrier counters, flows from the op that completed a phase "
                                   "to the waits it released, findings as instant events with their evidence. Open it in "
                                   "https://ui.perfetto.dev or chrome://tracing.  Exit 0/1 by the nominal replay's findings.")
    view_args(t, ".json")
    pl = sub.add_parser("plot", help="draw one CTA's timeline as a PNG Gantt chart (needs matplotlib)")
    view_args(pl, ".png")
    pl.add_argument("--cta", type=_positive("--cta", 0), help="which CTA (default: the one with the first finding, else the first)")
    rp = sub.add_parser("report", help="write one self-contained HTML page: verdict, explanation, timing, timeline")
    view_args(rp, ".html")

    cc = sub.add_parser("crosscheck", help="simulator vs silicon: plan configs for the GPU, or report agreement",
                        description="Close the loop between the simulator and the H200 (docs/crosscheck.md).")
    ccsub = cc.add_subparsers(dest="crosscheck_command", metavar="STEP", required=True, parser_class=_Parser)
    cp = ccsub.add_parser("plan", help="draw configs, predict their outcome sets, write the GPU job list",
                          description="Draw N distinct configs from protosim.strategies (seeded), replay each on the simulator "
                                      "(nominal + perturbations; delayed configs nominal only) and write OUT (cases and "
                                      "predictions) and OUT's .jobs.json (the kernels.toolchain.build / kernels.runner.gemm job list).")
    cp.add_argument("-n", type=_positive("-n", 1, 100_000), default=200, help="configs to draw (default 200)")
    cp.add_argument("--seed", type=_positive("--seed", 0), default=0, help="Hypothesis seed (default 0)")
    cp.add_argument("--steps", default="v2,v3,v4,v5,v6,ws", help="steps to draw from (default all: v2,v3,v4,v5,v6,ws)")
    cp.add_argument("--clusters", choices=("no", "also", "only"), default="no",
                    help="draw ws on thread-block clusters (2x1, 1x2, 2x2, 4x1, 1x4 with multicast; the cluster bug "
                         "knobs): 'only' cluster configs, 'also' mixed with --steps, 'no' none (default)")
    cp.add_argument("--bug-share", type=float, default=0.6, help="share of configs with one bug knob set (default 0.6)")
    cp.add_argument("--runs", type=_positive("--runs", 1, 10_000), default=8, help="replays per config without delays (default 8)")
    cp.add_argument("--launches", type=_positive("--launches"), default=3, help="GPU launches per config (default 3)")
    cp.add_argument("-o", "--out", type=Path, default=Path("crosscheck/plan.json"), help="plan file (default crosscheck/plan.json)")
    cp.add_argument("--build", action="store_true", help="then build the kernels into --bundle (needs apache-tvm and nvcc)")
    cp.add_argument("--bundle", type=Path, default=Path(".gpu"), help="bundle folder for --build (default .gpu)")
    cr = ccsub.add_parser("report", help="judge silicon launch records against the simulator's predictions",
                          description="Group launch records (kernels.runner.gemm JSON lines) by config, predict each config's outcome "
                                      "set with the current simulator, and judge every launch. Exit 0 when all agree, 1 otherwise.")
    cr.add_argument("records", type=Path, nargs="+", help="kernels.runner.gemm JSON-lines files")
    cr.add_argument("--runs", type=_positive("--runs", 1, 10_000), default=8, help="replays per config without delays (default 8)")
    cr.add_argument("--max-ops", type=_positive("--max-ops"), default=60_000,
                    help="refuse outcome records whose config replays more ops than this (default 60,000; the "
                         "recorded campaigns reach ~48k)")
    cr.add_argument("--plan", type=Path, help="a plan file: also list its configs that have no record")
    cr.add_argument("--json", type=Path, help="also write the full report as JSON to this file")
    cr.add_argument("--rows", type=_positive("--rows", 0), default=None, help="print at most this many table rows (default all)")
    cr.add_argument("--copy-streams", type=Path, metavar="FILE",
                    help="JSON lines of kernel key and copy_stream (what the built kernel's SASS says of its thread copy): "
                         "records without their own are predicted from it; e.g. "
                         "results/silicon/microbench/2026-12-03_tvm_thread_copy_sass.jsonl")
    for sp in (cp, cr):
        sp.add_argument("--schedules", choices=("kernel", "builder"), default="kernel",
                        help="predict from the schedule the TIRx frontend reads from the kernel the GPU runs (kernel, the "
                             "default; needs apache-tvm) or from the hand-written builder pinned to it (builder: no tvm, "
                             "faster for large sweeps)")
    cr.add_argument("--timing", action="store_true", help="also compare times: per correct config measured kernel-only, "
                                                          "simulated vs measured, the error, MAPE, the worst configs and the "
                                                          "step-to-step speed-ups within each shape; a line fit over correct "
                                                          "configs; the bench configs' times (each replayed once: ~30 s each)")

    def parallel_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workers", type=_positive("--workers", 1, 4096),
                        help="local processes (default: one per core this process may use; 1: in this process)")
        sp.add_argument("--ray", metavar="ADDRESS",
                        help="run on a Ray cluster instead: HOST:6379 (the head's address), auto (the cluster this "
                             "machine is part of) or local (a private one); needs pip install 'protosim[sweep]' "
                             "(docs/sweep.md)")

    parallel_args(cp)
    parallel_args(cr)
    sw = sub.add_parser(
        "sweep", help="judge many configs in parallel: a scenario over --set ranges, or a Hypothesis strategy's draws",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Judge every config of a sweep as `protosim run` judges one (nominal verdict, outcomes reachable\n"
                    "under perturbation, simulated time) and print one row per config, in config order, whatever the\n"
                    "engine: local processes (default: one per core) or a Ray cluster (--ray).\n"
                    "FILE --set KEY=VALUES...: the Cartesian product of the values (the first --set varies slowest).\n"
                    "--strategy NAME: --examples configs drawn with Hypothesis, seeded by --seed.",
        epilog="Values: a comma list of TOML values and inclusive integer ranges: K=256,512,1024  PIPE_DEPTH=1..4  "
               "K=256..2048:256\n  skip_store_wait=false,true  'wait_parity_flip=\"\",tma,mma' (quoted, or the shell eats \"\").\n"
               "Keys: the builder's [config] fields (protosim run --help), explore.runs, explore.seed, explore.max_stall.\n\n"
               "Exit status: 1 when some config is NOT OK (a finding, or a reachable outcome other than correct: as "
               "`run`);\n  else 2 when some grid point cannot be built (its row says why: shared memory, size) or the "
               "input is bad;\n  else 0.  Ctrl-C: the finished rows are printed (and are in --out), the count of "
               "missing ones on stderr, exit 130.\n\n"
               "Examples:\n  protosim sweep scenarios/v5_ring.toml --set K=256,512,1024 --set PIPE_DEPTH=1..4\n"
               "  protosim sweep scenarios/v6_persistent.toml --set sm_count=1..8 --runs 1 --json > rows.json\n"
               "  protosim sweep --strategy cases --examples 500 --seed 3 --out rows.jsonl\n"
               "  protosim sweep --strategy cases --examples 10000 --ray HEAD:6379   # docs/sweep.md")
    sw.add_argument("file", type=Path, nargs="?", help="a scenario .toml (omit with --strategy)")
    sw.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUES",
                    help="a [config] field and its values (K=256,512 or PIPE_DEPTH=1..4); one value fixes the field; repeatable")
    sw.add_argument("--strategy", metavar="NAME",
                    help="draw configs from a Hypothesis strategy of protosim.strategies.Case instead of a scenario: cases, "
                         "correct_cases, or MODULE:ATTRIBUTE")
    sw.add_argument("--examples", type=_positive("--examples", 1, 1_000_000), help="configs to draw with --strategy (default 100)")
    sw.add_argument("--steps", help="with --strategy cases: steps to draw from (default v2,v3,v4,v5,v6,ws)")
    sw.add_argument("--bugs", choices=("any", "yes", "no"), help="with --strategy cases: configs with one bug knob "
                                                                 "(yes), without (no) or either (any, the default)")
    sw.add_argument("--runs", type=_positive("--runs"),
                    help="replays per config, the first nominal (1 = nominal only; default: as `run` -- the scenario's "
                         "[explore] runs, else adaptive)")
    sw.add_argument("--max-stall", type=_positive("--max-stall", 0), help="largest injected stall in cycles (default: the scenario's)")
    sw.add_argument("--seed", type=_positive("--seed", 0),
                    help="with FILE: the exploration seed (default: the scenario's); with --strategy: the draw seed (default 0)")
    sw.add_argument("--max-ops", type=_positive("--max-ops"), default=DEFAULT_MAX_OPS,
                    help=f"refuse configs of more ops than this (default {DEFAULT_MAX_OPS:,})")
    parallel_args(sw)
    sw.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    sw.add_argument("--out", type=Path, metavar="FILE.jsonl",
                    help="also write each row as a JSON line the moment it finishes (a killed sweep keeps its finished rows)")
    sw.add_argument("--resume", action="store_true",
                    help="with --out: keep the rows FILE.jsonl already holds for this same sweep (an interrupted run) and "
                         "judge only the configs it lacks; a row from another sweep is an error, not silently reused")
    sw.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(message: str) -> str:
    """The message with control characters escaped: an error quotes the user's input (a key
    with a newline in it, say), and the contract is one stderr line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], message)


def _fail(message: str) -> int:
    print(f"protosim: {one_line(message)}", file=sys.stderr)
    return BAD_INPUT


def _internal_error(exc: BaseException) -> int:
    """A bug in protosim: one line, and the traceback in a file the user can attach."""
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(exc))
    where = "(could not save the traceback)"
    try:
        fd, name = tempfile.mkstemp(prefix="protosim-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(f"protosim {_version()}\nargv: {sys.argv!r}\n\n{text}")
        where = f"traceback saved to {name}"
    except OSError:
        pass
    first = str(exc).splitlines()[0][:200] if str(exc) else ""
    print(f"protosim: internal error -- a bug in protosim, please report it: {type(exc).__name__}"
          f"{': ' + first if first else ''}; {where}", file=sys.stderr)
    return INTERNAL


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (the contract in the module doc)."""
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as e:  # --help / --version (0) or a usage error (2, already printed)
            return e.code if isinstance(e.code, int) else BAD_INPUT
        if args.command is None:
            _parser().print_help()
            return BAD_INPUT
        return _COMMANDS[args.command](args)
    except (ScenarioError, ScheduleError, UnknownArch, ConfigError, UsageError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output went away before anything decided the status
        return OK
    except RecursionError as e:
        return _internal_error(e)
    except Exception as e:  # noqa: BLE001 - the contract: never a bare traceback
        return _internal_error(e)


def _load(args):
    overrides = [parse_override(o) for o in getattr(args, "overrides", [])]
    return load_scenario(args.file, overrides=overrides, max_ops=args.max_ops)


def _slack_target(args, schedule) -> tuple[str, int] | None:
    if not args.slack_warp:
        return None
    from protosim.verdict import lag_targets

    role, dot, w = args.slack_warp.rpartition(".w")
    have = lag_targets(schedule)
    if not dot or not w.isdigit() or (role, int(w)) not in have:
        raise UsageError(f"--slack-warp {args.slack_warp}: the schedule has " + ", ".join(f"{r}.w{i}" for r, i in have))
    return role, int(w)


def _cmd_run(args) -> int:
    from protosim.report import render_run, run_scenario

    scenario = _load(args)
    schedule = scenario.build()
    target = _slack_target(args, schedule)
    if args.slack_warp and not args.slack:
        raise UsageError("--slack-warp needs --slack")
    progress = _Progress(scenario.name, args.quiet)
    _announce(schedule, args.quiet)
    try:
        rep = run_scenario(scenario, runs=args.runs, max_stall=args.max_stall, seed=args.seed, with_slack=args.slack,
                           progress=progress, budget_s=args.budget, slack_target=target, schedule=schedule)
    finally:
        progress.close()
    _out(dumps(rep.to_json()) if args.json else render_run(rep))
    return rep.status


def _check_out(path: Path, what: str) -> None:
    """An output path must be writable before any replay spends time on it."""
    if path.is_dir():
        raise UsageError(f"{path}: {what} is a directory; give a file name")
    if path.exists() and not (path.is_file() or path.is_char_device()):  # /dev/null is fine, a FIFO is not
        raise UsageError(f"{path}: {what} is not a regular file (a pipe, a socket); give a file name")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{path}: {parent} is not writable; choose another place")


def _write(path: Path, write) -> None:
    """Write an output file, turning an I/O failure (a full disk, permissions) into exit 2."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def _source(args) -> str:
    """``--schedules``, checked before any work: ``kernel`` needs apache-tvm and ``kernels/``."""
    if args.schedules == "kernel":
        import importlib.util

        if importlib.util.find_spec("tvm") is None:
            raise UsageError("--schedules kernel reads the kernels with apache-tvm, which is not installed: "
                             "pip install -e '.[kernels]', or pass --schedules builder")
        if importlib.util.find_spec("kernels") is None:
            raise UsageError("--schedules kernel reads the repository's kernels/ package: run from the repository "
                             "root, or pass --schedules builder")
    return args.schedules


def _cmd_crosscheck(args) -> int:
    import json
    import subprocess

    from protosim import crosscheck as cc

    if args.crosscheck_command == "plan":
        from protosim.strategies import STEPS

        steps = tuple(x.strip() for x in args.steps.split(",") if x.strip())
        bad = [x for x in steps if x not in STEPS]
        if bad or not steps:
            return _fail(f"--steps {args.steps}: use some of {', '.join(STEPS)}")
        if not 0 <= args.bug_share <= 1:
            return _fail(f"--bug-share {args.bug_share}: give a share in [0, 1]")
        _check_out(args.out, "-o")
        jobs_path = args.out.with_suffix(".jobs.json")
        _check_out(jobs_path, "the job list")
        n_bugs = round(args.n * args.bug_share)
        clusters = {"no": False, "also": None, "only": True}[args.clusters]
        cases = (cc.draw_cases(n_bugs, args.seed, steps=steps, bugs=True, clusters=clusters)
                 + cc.draw_cases(args.n - n_bugs, args.seed, steps=steps, bugs=False, clusters=clusters))
        progress = _Progress("predicting")
        with _sweep_errors():
            preds = cc.predict_many(cases, runs=args.runs, progress=progress, source=_source(args), **_parallel(args))
        progress.close()
        jobs = [cc.job_for(c, p, args.launches) for c, p in zip(cases, preds, strict=True)]
        plan = json.dumps({"seed": args.seed, "n": args.n, "steps": list(steps), "clusters": args.clusters, "runs": args.runs,
                           "predictions": [p.to_json() for p in preds]}, indent=1) + "\n"
        _write(args.out, lambda p: p.write_text(plan))
        _write(jobs_path, lambda p: p.write_text(json.dumps(jobs, indent=1) + "\n"))
        from collections import Counter

        sets = Counter("{" + ", ".join(sorted(p.kinds)) + "}" for p in preds)
        lines = [f"{len(cases)} configs ({n_bugs} with a bug knob, {sum(c.delayed for c in cases)} with a delay); predicted sets: "
                 + ", ".join(f"{k} {v}" for k, v in sets.most_common()),
                 f"wrote {args.out} and {jobs_path} ({sum(j['launches'] for j in jobs)} launches, "
                 f"{sum(j['may_fault'] for j in jobs)} configs get a process per launch)"]
        build = [sys.executable, "-m", "kernels.toolchain.build", "--plan-file", str(jobs_path), "--bundle", str(args.bundle)]
        if args.build:
            _out("\n".join(lines))
            rc = subprocess.run(build, check=False).returncode
            if rc:
                return _fail(f"kernels.toolchain.build failed (exit {rc}); run `{' '.join(build)}` from the repository root to see why")
            lines = []
        else:
            lines.append("next: " + " ".join(build[1:]))
        lines.append(f"then on the GPU: python -m kernels.runner.gemm --bundle {args.bundle} --out OUT.jsonl --commit <sha>  (docs/crosscheck.md)")
        lines.append("then: protosim crosscheck report OUT.jsonl --plan " + str(args.out))
        _out("\n".join(lines))
        return OK
    try:
        records = cc.read_records(args.records, max_ops=args.max_ops)
        if args.copy_streams:
            cc.attach_copy_streams(records, args.copy_streams)
    except cc.RecordError as e:
        raise UsageError(str(e)) from None
    if args.json:  # after the inputs: a bad input is named first, as every command does
        _check_out(args.json, "--json")
    plan = None
    if args.plan:
        try:
            plan = json.loads(args.plan.read_text(encoding="utf-8"))
            planned = [(p["label"], json.dumps(p["case"], sort_keys=True)) for p in plan["predictions"]]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
            return _fail(f"{args.plan}: not a plan file written by `protosim crosscheck plan` ({type(e).__name__}: {e})")
    progress = _Progress("predicting")
    with _sweep_errors():
        reports = cc.compare_many(records, runs=args.runs, progress=progress, source=_source(args), **_parallel(args))
    progress.close()
    text = [cc.render(reports, args.rows)]
    timing = None
    if args.timing:
        with _sweep_errors():
            timing = {"correct_fit": cc.correct_fit(reports), "bench": cc.bench_timing(records, **_parallel(args)),
                      "configs": cc.config_timing(cc.config_points(reports))}
        text.append(cc.render_timing(timing["correct_fit"], timing["bench"]))
        text.append(cc.render_config_timing(timing["configs"], args.rows))
    missing = []
    if plan is not None:
        ran = {json.dumps(r.prediction.case.to_dict(), sort_keys=True) for r in reports}
        missing = [label for label, key in planned if key not in ran]
        if missing:
            text.append(f"\n{len(missing)} planned config(s) have no silicon record: " + "; ".join(missing[:5])
                        + (" ..." if len(missing) > 5 else ""))
    if args.json:
        blob = json.dumps({"summary": cc.summary(reports), "not_run": missing, "timing": timing,
                           "cases": [r.to_json() for r in reports]}, indent=1) + "\n"
        _write(args.json, lambda p: p.write_text(blob))
    _out("\n".join(text))
    return OK if all(r.agree for r in reports) else BUG


def _cmd_explain(args) -> int:
    from protosim.explain import explain
    from protosim.verdict import judge

    scenario = _load(args)
    schedule = scenario.build()
    _announce(schedule)
    verdict, result = judge(schedule)
    _out(explain(verdict, result, title=scenario.name))
    return OK if verdict.ok else BUG


def _cmd_demo(args) -> int:
    from protosim.report import render_demo, run_scenario

    folder = args.dir or builtin_dir()
    files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    if not files:
        return _fail(f"{folder}: no scenario files (*.toml); pass --dir with a folder of scenarios")
    scenarios = [load_scenario(f) for f in files]  # every file valid before the first replay
    reports = []
    progress = _Progress("demo", args.quiet)
    for i, scenario in enumerate(scenarios):
        progress(i, len(scenarios))
        reports.append(run_scenario(scenario, runs=args.runs, max_stall=args.max_stall, seed=args.seed, budget_s=args.budget))
    progress.close()
    _out(dumps([r.to_json() for r in reports]) if args.json else render_demo(reports))
    return OK if all(r.agrees is not False for r in reports) else BUG


def _cmd_schedule(args) -> int:
    from protosim.scenarios import schedule_file

    _out(dumps(schedule_file(_load(args))))
    return OK


def _cmd_profile(args) -> int:
    prof = load_profile(args.arch)
    lines = [f"{prof.name}: {prof.description} ({prof.target})"]
    width = max(len(k) for k in prof.constants)
    for key, c in prof.constants.items():
        mark = "GUESS" if c.guess else "     "
        lines.append(f"  {key.ljust(width)}  {str(c.value):>32} {c.unit:<22} {mark} {c.source}")
    lines.append(f"\n{len(prof.guesses())} of {len(prof.constants)} constants are guesses.")
    _out("\n".join(lines))
    return OK


def _nominal_timeline(args):
    """Load the scenario, check the output path, replay once; its verdict, raw result and timeline.
    The input is checked first, so when both are wrong the error names the input file."""
    from protosim.explain import primary
    from protosim.timeline import build_timeline
    from protosim.verdict import judge

    scenario = _load(args)
    _check_out(args.out, "-o")
    schedule = scenario.build()
    if getattr(args, "cta", None) is not None and args.cta >= len(schedule.ctas):
        raise UsageError(f"--cta {args.cta}: the schedule has CTAs 0..{len(schedule.ctas) - 1}")
    _announce(schedule)
    verdict, result = judge(schedule)
    timeline = build_timeline(result, verdict.findings, verdict.outcome.summary(), max_ctas=args.max_ctas,
                              first=primary(verdict.findings))
    return scenario, verdict, result, timeline


def _written(path: Path, what: str, note: str, verdict) -> int:
    size = path.stat().st_size
    _out(f"wrote {path} ({size / 1e6:.2f} MB): {what}" + (f"; {note}" if note else "")
         + f"\nverdict: {'OK: no findings' if verdict.ok else 'NOT OK: ' + ', '.join(verdict.kinds())} [nominal replay]")
    return OK if verdict.ok else BUG


def _cmd_trace(args) -> int:
    import json

    from protosim.views.trace import to_trace_events

    _, verdict, _, tl = _nominal_timeline(args)

    def write(path: Path) -> None:
        with path.open("w") as f:
            json.dump(to_trace_events(tl), f, separators=(",", ":"))

    _write(args.out, write)
    return _written(args.out, "open it in https://ui.perfetto.dev or chrome://tracing", tl.note, verdict)


def _cmd_plot(args) -> int:
    try:
        from protosim.views.plot import PlotError, plot
    except ImportError as e:
        raise UsageError(f"plot needs matplotlib ({e}); pip install 'protosim[plot]'") from None

    _, verdict, _, tl = _nominal_timeline(args)
    try:
        _write(args.out, lambda p: plot(tl, p, cta=args.cta))
    except PlotError as e:
        return _fail(str(e))
    return _written(args.out, f"CTA {args.cta if args.cta is not None else 'of the first finding'}", tl.note, verdict)


def _cmd_report(args) -> int:
    from protosim.explain import explain
    from protosim.views.html import render

    scenario, verdict, result, tl = _nominal_timeline(args)
    page = render(tl, verdict, explain(verdict, result, title=scenario.name), title=scenario.name)
    _write(args.out, lambda p: p.write_text(page, encoding="utf-8"))
    return _written(args.out, "a self-contained page (no network needed)", tl.note, verdict)


def _parallel(args) -> dict:
    """``--workers`` / ``--ray`` as :func:`protosim.sweep.run_sweep` arguments, checked before any work."""
    if args.ray is not None:
        if args.workers is not None:
            raise UsageError("--workers counts local processes; a --ray sweep uses the cluster's CPUs: drop one of them")
        if not args.ray.strip():
            raise UsageError("--ray: give the head's address (HOST:6379), auto or local")
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise UsageError(f"--ray {args.ray}: Ray is not installed; pip install 'protosim[sweep]', or drop --ray to use "
                             "local processes")
    return {"workers": args.workers, "ray": args.ray.strip() if args.ray else None}


class _sweep_errors:  # noqa: N801 - used as `with _sweep_errors():`
    """A sweep's input errors (a bad range, an unreachable Ray cluster) are usage errors: one line, exit 2."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        from protosim.sweep.grid import GridError
        from protosim.sweep.runner import SweepError

        if exc is not None and isinstance(exc, (GridError, SweepError)):
            raise UsageError(str(exc)) from None
        return False


def _cmd_sweep(args) -> int:
    import json

    from protosim.sweep import SweepInterrupted, run_sweep
    from protosim.sweep import grid as g
    from protosim.sweep.runner import default_workers

    items = _sweep_items(args)
    parallel = _parallel(args)
    if args.resume and not args.out:
        raise UsageError("--resume continues the sweep whose rows --out FILE.jsonl holds; give --out")
    if args.out:
        _check_out(args.out, "--out")
    keys = [g.item_key(item) for item in items]
    rows: list = [None] * len(items)
    if args.resume and args.out.is_file():
        for index, row in _resumed_rows(args.out, keys).items():
            rows[index] = row
    kept = sum(r is not None for r in rows)
    todo = [i for i, r in enumerate(rows) if r is None]
    out = None
    if args.out:
        # created, emptied or (--resume) rewritten with the rows kept: a full disk is exit 2 before any replay
        _write(args.out, lambda p: p.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows if r is not None)))
        out = args.out.open("a", encoding="utf-8")

    def on_result(n: int, row: dict) -> None:
        index = todo[n]
        rows[index] = {"index": index, "item": keys[index], **row}
        if out:  # one line per finished row, flushed: a killed sweep leaves every row it finished
            out.write(json.dumps(rows[index], default=str) + "\n")
            out.flush()

    label = f"sweep of {len(items)} configs" + (f" ({kept} kept from {args.out})" if kept else "")
    progress = _Progress(label, args.quiet)
    start, stopped = time.monotonic(), None
    try:
        with _sweep_errors():
            if todo:
                run_sweep([items[i] for i in todo], g.judge_item, progress=progress, on_result=on_result, **parallel)
    except SweepInterrupted as e:
        stopped = e
    finally:
        progress.close()
        if out:
            out.close()
    seconds = time.monotonic() - start
    engine = f"Ray at {parallel['ray']}" if parallel["ray"] else (
        f"{min(parallel['workers'] or default_workers(), len(items))} local process(es)" if len(items) > 1 and parallel["workers"] != 1 else "1 process")
    status = g.status(rows)
    if args.json:
        _out(dumps({"configs": len(items), "done": sum(r is not None for r in rows), "resumed": kept,
                    "interrupted": stopped is not None,
                    "status": status, "seconds": round(seconds, 3), "rows": [r for r in rows if r is not None]}))
    else:
        _out(g.render(rows, len(items)) + f" ({seconds:.1f} s on {engine})")
    if stopped is not None:
        where = (f"; the finished rows are in {args.out} (the same command with --resume judges the rest)"
                 if args.out else "")
        print(f"protosim: sweep interrupted: {stopped.missing} of {stopped.total} configs not run{where}", file=sys.stderr)
        return 130
    return status


def _resumed_rows(path: Path, keys: list[str]) -> dict[int, dict]:
    """The rows of an earlier run of this sweep in ``path`` (``--resume``), by index.  A killed
    sweep may leave its last line half written: that line is dropped.  Any other line that is not
    a row of this sweep (another scenario, other --set values, another seed) stops the resume."""
    import json

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--resume: cannot read {path}: {e}") from None
    rows: dict[int, dict] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                break  # the line a killed sweep was writing
            raise UsageError(f"--resume: {path} line {n} is not a JSON row; it is not a sweep's --out file") from None
        index = row.get("index") if isinstance(row, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(keys) or row.get("item") != keys[index]:
            raise UsageError(f"--resume: {path} line {n} is not a row of this sweep (another scenario, --set values, "
                             f"--runs or --seed, or a file written before --resume existed); use another --out, or drop --resume "
                             f"to start over")
        rows[index] = row
    return rows


def _sweep_items(args) -> list:
    """The sweep's work items from FILE + --set, or from --strategy; every mistake a usage error."""
    from protosim.sweep import grid as g

    strategy_only = [f for f in ("examples", "steps", "bugs") if getattr(args, f) is not None]
    with _sweep_errors():
        if args.file is not None and args.strategy is not None:
            raise UsageError(f"give a scenario ({args.file}) or --strategy {args.strategy}, not both")
        if args.file is not None:
            if strategy_only:
                raise UsageError(f"--{strategy_only[0]} applies to --strategy sweeps; with a scenario use --set KEY=VALUES")
            return g.scenario_items(args.file, args.overrides, args.runs, args.seed, args.max_stall, args.max_ops)
        if args.strategy is None:
            raise UsageError("sweep needs a scenario .toml with --set ranges, or --strategy cases (see `protosim sweep --help`)")
        if args.overrides:
            raise UsageError("--set varies a scenario's fields; a --strategy sweep draws its configs (narrow it with --steps, --bugs)")
        kw: dict = {}
        if args.steps is not None:
            from protosim.strategies import STEPS

            kw["steps"] = tuple(x.strip() for x in args.steps.split(",") if x.strip())
            bad = [x for x in kw["steps"] if x not in STEPS]
            if bad or not kw["steps"]:
                raise UsageError(f"--steps {args.steps}: use some of {', '.join(STEPS)}")
        if args.bugs is not None:
            kw["bugs"] = {"any": None, "yes": True, "no": False}[args.bugs]
        return g.strategy_items(args.strategy, args.examples or 100, args.seed or 0, args.runs, args.max_stall, args.max_ops, **kw)


_COMMANDS = {"run": _cmd_run, "explain": _cmd_explain, "demo": _cmd_demo, "schedule": _cmd_schedule,
             "profile": _cmd_profile, "trace": _cmd_trace, "plot": _cmd_plot, "report": _cmd_report,
             "crosscheck": _cmd_crosscheck, "sweep": _cmd_sweep}

if __name__ == "__main__":
    sys.exit(main())
