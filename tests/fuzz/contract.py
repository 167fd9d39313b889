"""Run protosim's CLI on one fuzz input and check the exit-status contract.

The contract (issue 11, as the product owner states it):

* exit status 0 = no finding and every explored replay correct; 1 = a protocol bug
  (or a disagreement with the scenario's [expect]); 2 = bad input or usage;
  3 = internal error -- which must never happen: any 3 is a violation;
* ``main()`` never raises (an escaped exception is a violation; ``SystemExit(2)`` from
  argparse counts as status 2 for usage errors only);
* status 2: stderr is one line starting with ``protosim: `` that names the input file
  (when a file was the problem) and the field, never a traceback (argparse usage
  errors excepted);
* status 0/1: stdout is not empty; with ``--json`` (and ``schedule``) it parses as
  JSON; ``run --json`` has a boolean top-level ``ok`` and, for a scenario without
  [expect], status 0 iff ``ok``;
* no hang: every input finishes within a wall-clock limit (a timeout is a violation);
* nonsense is refused with 2 (:mod:`tests.fuzz.oracles`), and unmutated inputs with
  well-formed flags are judged (0 or 1), never refused.

:func:`check` runs a :class:`FuzzCase` and returns a :class:`Checked` (the run and its
list of :class:`Violation`).  How it runs:

``fork`` (default)
    fork, then call ``protosim.cli.main(argv)`` in the child with stdout/stderr
    redirected (``contextlib.redirect_stdout`` onto file-backed streams, fds 1/2 onto
    the same files), catching ``SystemExit`` and every exception.  As fast as an
    in-process call (no interpreter start, modules already imported) but isolated:
    a wall-clock limit that kills the child (after dumping its stack with
    ``faulthandler`` so a hang says where it was), a memory limit, no state leaking
    from one input to the next.
``subprocess``
    ``python -c 'sys.exit(main())'`` as the ``protosim`` console script does: the real
    thing, for a sample of the inputs (and always for ``crosscheck``, which nests
    Hypothesis and a process pool).
``inproc``
    ``main(argv)`` in this very process with ``signal.alarm`` (no memory limit).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = float(os.environ.get("PROTOSIM_FUZZ_TIMEOUT", "180"))
"""Wall-clock limit per input.  It says "this did not hang", not "this is fast": a 30 s limit
failed CI on a loaded 2-core machine for TIRx and crosscheck inputs that take 7-17 s on the
development VM (whose own speed varies 7x from one second to the next), so it is generous."""
MEMORY_BYTES = int(float(os.environ.get("PROTOSIM_FUZZ_MEMORY_GB", "3")) * 2**30)
"""Address space allowed *on top of* the forked test process (subprocesses get this much)."""
DEFAULT_MODE = os.environ.get("PROTOSIM_FUZZ_MODE", "fork" if hasattr(os, "fork") else "subprocess")

TRACEBACK = "Traceback (most recent call last)"
NOMINAL_COMMANDS = ("explain", "trace", "plot", "report")
"""Commands that judge the nominal replay only (their status follows its findings)."""


# --------------------------------------------------------------------------- cases


@dataclass(repr=False)
class FuzzCase:
    """One input: an argv (``{tmp}`` is the example's folder), the files to create
    there, and what the contract says about the result."""

    path: str
    """Input path: scenario_toml | schedule_json | ttgir | cli | crosscheck."""
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    expect: str = "any"
    """"refuse": must exit 2; "valid": must exit 0 or 1; "any": 0, 1 or 2."""
    reasons: list[str] = field(default_factory=list)
    """Why the input must be refused (oracle rules)."""
    usage: bool = False
    """The argv itself may be malformed: argparse-style usage errors are acceptable."""
    problem_files: tuple[str, ...] = ()
    """A status-2 line must name one of these (the input files that can be at fault)."""
    field_names: tuple[str, ...] | None = None
    """A status-2 line must name one of these fields (None: not checked)."""
    json_stdout: bool = False
    run_json: bool = False
    expect_declared: bool | None = None
    """The scenario declares [expect] (None: unknown)."""
    nominal_ok: bool | None = None
    """Ground truth for explain/trace/plot/report on an unmutated input."""
    statuses: tuple[int, ...] = (0, 1, 2)
    """Statuses this command may return at all (schedule / profile: 0 or 2)."""
    outputs: list[tuple[str, str]] = field(default_factory=list)
    """(relative path, kind) written on status 0/1: kind json | png | html | any."""
    roundtrip: bool = False
    """``schedule``: the printed schedule must replay (``run`` must not refuse it)."""
    mode: str = ""
    mutations: list[str] = field(default_factory=list)
    base: str = ""
    setup: list[tuple[str, str]] = field(default_factory=list)
    """Extra setup in the folder: ("mkdir", rel) | ("fifo", rel)."""
    probe: str = ""
    """The input file: for explain/trace/plot/report without [expect], ``run FILE --runs 1
    --json`` first tells whether the nominal replay is clean (-> ``nominal_ok``)."""

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}: {len(v)} B" for k, v in sorted(self.files.items()))
        return (f"FuzzCase({self.path}, argv={self.argv!r}, expect={self.expect!r}, base={self.base!r}, "
                f"mutations={self.mutations!r}, files={{{sizes}}}, mode={self.mode or DEFAULT_MODE!r})")

    def command(self) -> str:
        words = [a for a in self.argv[:2] if not a.startswith("-")]
        if not words:
            return "(none)"
        return " ".join(words[:2]) if words[0] == "crosscheck" else words[0]

    def reproducer(self, limit: int = 1500) -> str:
        """Shell lines that recreate the input (text files inline when short)."""
        lines = [f"# {self.path}: base {self.base or '-'}; mutations: {'; '.join(self.mutations) or 'none'}"]
        for kind, rel in self.setup:
            lines.append(f"mkdir -p {rel}" if kind == "mkdir" else f"mkfifo {rel}")
        for rel, data in sorted(self.files.items()):
            try:
                text = data.decode("utf-8")
                printable = "\x00" not in text
            except UnicodeDecodeError:
                printable = False
            if printable and len(data) <= limit:
                lines.append(f"cat > {_sh(rel)} <<'EOF'\n{text}{'' if text.endswith(chr(10)) else chr(10)}EOF")
            elif len(data) <= limit:
                lines.append(f"printf %b {_sh(_bytes_escape(data))} > {_sh(rel)}")
            else:
                lines.append(f"# {rel}: {len(data)} bytes (see the mutations above)")
        lines.append("protosim " + " ".join(_sh(a) for a in self.argv))
        return "\n".join(lines)


def _sh(s: str) -> str:
    return s if re.fullmatch(r"[\w./=:,@+-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def _bytes_escape(data: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\{b:03o}" for b in data)


@dataclass
class RunResult:
    status: int | None
    """Exit status as the shell would see it (None: no status -- timeout or crash)."""
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    mode: str = "fork"
    timed_out: bool = False
    exception: str | None = None
    """The traceback of an exception that escaped ``main()``."""
    exc_type: str | None = None
    systemexit: Any = None
    """The code of a SystemExit that escaped ``main()`` (fork / inproc)."""
    signal: int | None = None
    hang_stack: str = ""
    harness_error: str | None = None
    effective: int | None = None
    """The status the contract judges (argparse's SystemExit(2) counts as 2), set by check_result."""


@dataclass
class Violation:
    category: str
    detail: str
    rule: str = ""
    """What to group by in the census: an oracle rule id, an exception site, a hang site."""


@dataclass
class Checked:
    case: FuzzCase
    result: RunResult
    violations: list[Violation]
    extra: list[RunResult] = field(default_factory=list)

    def report(self) -> str:
        r = self.result
        out = [f"{len(self.violations)} contract violation(s) on {self.case.path} "
               f"({self.case.command()}, status {r.status}, {r.seconds:.1f} s, {r.mode}):"]
        out += [f"  [{v.category}] {v.detail}" for v in self.violations]
        out.append("reproducer:\n" + self.case.reproducer())
        if r.stderr.strip():
            out.append("stderr (tail):\n" + r.stderr[-1500:])
        if r.exception:
            out.append("exception:\n" + r.exception[-3000:])
        if r.hang_stack:
            out.append("stack at the timeout:\n" + r.hang_stack[-2000:])
        return "\n".join(out)


# --------------------------------------------------------------------------- running

_PRELOADED = False


def preload() -> None:
    """Import protosim's modules once in this process, so forked children start warm."""
    global _PRELOADED
    if _PRELOADED:
        return
    _PRELOADED = True
    import importlib

    for mod in ("protosim.cli", "protosim.report", "protosim.verdict", "protosim.scenarios", "protosim.explain",
                "protosim.timeline", "protosim.frontends.ttgir", "protosim.views.trace", "protosim.views.html",
                "protosim.views.plot", "protosim.crosscheck", "protosim.strategies"):
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001 - a module that does not import is the product's problem, seen by the run
            pass


def protosim_root() -> Path:
    """The folder holding the ``protosim`` package this process imports."""
    import protosim

    return Path(protosim.__file__).resolve().parent.parent


def run_argv(argv: list[str], cwd: Path, mode: str | None = None, timeout: float | None = None,
             target=None) -> RunResult:
    """Run ``protosim argv`` in ``cwd``; ``target`` replaces ``main`` (the harness's own tests)."""
    mode = mode or DEFAULT_MODE
    timeout = TIMEOUT_S if timeout is None else timeout
    if mode == "subprocess":
        return _run_subprocess(argv, cwd, timeout)
    if mode == "inproc":
        return _run_inproc(argv, cwd, timeout, target)
    return _run_fork(argv, cwd, timeout, target)


def _reset_warnings() -> None:
    import warnings

    warnings.resetwarnings()  # what a fresh interpreter shows, not pytest's filters
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    for cat in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=cat)


def _call_main(argv: list[str], target=None) -> dict[str, Any]:
    if target is None:
        from protosim.cli import main
    else:
        main = target
    try:
        rc = main(argv)
    except SystemExit as e:
        code = e.code
        return {"kind": "systemexit", "code": code if code is None or isinstance(code, int) else repr(code)}
    except BaseException as e:  # noqa: BLE001 - the point: nothing may escape
        return {"kind": "exception", "type": type(e).__name__, "tb": traceback.format_exc()}
    if isinstance(rc, bool) or not isinstance(rc, int):
        return {"kind": "return", "value": repr(rc)}
    return {"kind": "return", "value": rc}


def _vm_size() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _run_fork(argv: list[str], cwd: Path, timeout: float, target=None) -> RunResult:
    preload()
    out_p, err_p, res_p = cwd / ".fz_stdout", cwd / ".fz_stderr", cwd / ".fz_result"
    limit = _vm_size() + MEMORY_BYTES
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.setpgid(0, 0)
            os.chdir(cwd)
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            fo = os.open(out_p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            fe = os.open(err_p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fo, 1)
            os.dup2(fe, 2)
            import faulthandler

            err_raw = open(2, "w", closefd=False)  # noqa: SIM115
            faulthandler.enable(file=err_raw)
            faulthandler.register(signal.SIGUSR1, file=err_raw, all_threads=True)
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
                signal.signal(sig, signal.SIG_DFL)
            _reset_warnings()
            out = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="strict", write_through=True)
            err = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                   write_through=True)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            sys.argv = ["protosim", *argv]
            sys.__stdout__, sys.__stderr__ = out, err  # type: ignore[misc]
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                res = _call_main(argv, target)
                with contextlib.suppress(Exception):
                    out.flush()
                    err.flush()
        except BaseException:  # noqa: BLE001
            res = {"kind": "harness_error", "tb": traceback.format_exc()}
        try:
            with open(res_p, "w") as f:
                json.dump(res, f)
        except BaseException:  # noqa: BLE001
            code = 99
        os._exit(code)
    # parent
    deadline = start + timeout
    status = None
    delay = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(delay)
        delay = min(delay * 1.5, 0.05)
    seconds = time.monotonic() - start
    timed_out = status is None or not done
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGUSR1)
        time.sleep(0.5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    else:  # the child is gone; whatever it started in its group goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    stdout = _read(out_p)
    stderr = _read(err_p)
    r = RunResult(status=None, stdout=stdout, stderr=stderr, seconds=seconds, mode="fork", timed_out=timed_out)
    if timed_out:
        r.hang_stack = _hang_stack(stderr)
        return r
    if os.WIFSIGNALED(status):
        r.signal = os.WTERMSIG(status)
        return r
    try:
        res = json.loads(res_p.read_text())
    except (OSError, ValueError):
        r.harness_error = f"the child wrote no result (exit {os.WEXITSTATUS(status)})"
        return r
    _apply(r, res)
    return r


def _apply(r: RunResult, res: dict[str, Any]) -> None:
    if res["kind"] == "return":
        v = res["value"]
        r.status = v if isinstance(v, int) else None
        if not isinstance(v, int):
            r.harness_error = None
            r.exception = f"main() returned {v} (not an int)"
            r.exc_type = "BadReturn"
    elif res["kind"] == "systemexit":
        r.systemexit = res["code"]
    elif res["kind"] == "exception":
        r.exception, r.exc_type = res["tb"], res["type"]
    else:
        r.harness_error = res.get("tb", str(res))


def _read(p: Path) -> str:
    try:
        return p.read_bytes().decode("utf-8", errors="backslashreplace")
    except OSError:
        return ""


def _hang_stack(stderr: str) -> str:
    i = stderr.find("Thread 0x")
    if i < 0:
        i = stderr.find("Current thread")
    return stderr[i:] if i >= 0 else ""


_WRAPPER = ("import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
            "from protosim.cli import main; sys.argv[0] = 'protosim'; sys.exit(main())")


def _run_subprocess(argv: list[str], cwd: Path, timeout: float) -> RunResult:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(protosim_root()) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("COLUMNS", None)
    env["PYTHONIOENCODING"] = "utf-8"

    def limit() -> None:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES + 2**30, MEMORY_BYTES + 2**30))

    start = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", _WRAPPER, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=limit)
    try:
        out, err = p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGUSR1)
        time.sleep(0.5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    seconds = time.monotonic() - start
    r = RunResult(status=None, stdout=out.decode("utf-8", "backslashreplace"), stderr=err.decode("utf-8", "backslashreplace"),
                  seconds=seconds, mode="subprocess", timed_out=timed_out)
    if timed_out:
        r.hang_stack = _hang_stack(r.stderr)
        return r
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGKILL)
    if p.returncode < 0:
        r.signal = -p.returncode
        return r
    r.status = p.returncode
    # An uncaught exception in a real process: status 1 and Python's traceback.
    if TRACEBACK in r.stderr and p.returncode == 1:
        tail = r.stderr[r.stderr.rfind(TRACEBACK):]
        last = [ln for ln in tail.strip().splitlines() if ln and not ln.startswith(" ")]
        r.exception = tail
        r.exc_type = last[-1].split(":")[0].strip() if last else "Exception"
        r.status = None
    return r


class _Alarm(BaseException):
    pass


def _run_inproc(argv: list[str], cwd: Path, timeout: float, target=None) -> RunResult:
    def ring(signum, frame):  # noqa: ARG001
        raise _Alarm()

    old_cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    timed_out = False
    res: dict[str, Any] = {}
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                res = _call_main(argv, target)
            except _Alarm:
                timed_out = True
    except _Alarm:
        timed_out = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        os.chdir(old_cwd)
    if res.get("kind") == "exception" and res.get("type") == "_Alarm":
        timed_out = True
    r = RunResult(status=None, stdout=out.getvalue(), stderr=err.getvalue(), seconds=time.monotonic() - start,
                  mode="inproc", timed_out=timed_out)
    if not timed_out:
        _apply(r, res)
    return r


# --------------------------------------------------------------------------- checking

_USAGE_ONE_LINE = re.compile(r"^protosim(?: [\w-]+)*: \S")
_FRAME = re.compile(r'File "([^"]+)", line (\d+),? in (\S+)')


def protosim_frame(text: str, innermost_last: bool = True) -> str:
    """``module.py:line func`` of the innermost protosim frame of a traceback text."""
    frames = [(f, ln, fn) for f, ln, fn in _FRAME.findall(text) if "/protosim/" in f.replace("\\", "/")]
    if not frames:
        return ""
    f, ln, fn = frames[-1] if innermost_last else frames[0]
    rel = f.replace("\\", "/").split("/protosim/", 1)[1]
    return f"protosim/{rel}:{ln} {fn}"


_REPLAY = ("engine", "checkers", "ptx", "verdict.py", "report.py", "timeline.py", "views", "explain.py", "crosscheck.py")


def hang_site(stack: str) -> str:
    """Where a hang was, coarsely enough to group: the step below the command (the first
    protosim frame outside cli.py) and the part of protosim the innermost frame is in
    ("replay" for the engine and checkers)."""
    frames = [(f.replace("\\", "/").split("/protosim/", 1)[1], fn) for f, _, fn in _FRAME.findall(stack)
              if "/protosim/" in f.replace("\\", "/")]
    if not frames:
        return "?"
    inner = frames[0][0].split("/")[0]  # faulthandler: most recent call first
    outer = next((fn for rel, fn in reversed(frames) if rel != "cli.py"), frames[-1][1])
    return f"{outer} > {'replay' if inner in _REPLAY else frames[0][0]}"


def _exception_site(r: RunResult) -> str:
    msg = ""
    if r.exception:
        lines = [ln for ln in r.exception.strip().splitlines() if ln.strip()]
        msg = lines[-1][:160] if lines else ""
    return f"{r.exc_type}: {protosim_frame(r.exception or '') or '?'}", msg


def is_usage_error(stderr: str) -> bool:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if not lines:
        return False
    if lines[0].startswith("usage: protosim") and any(re.match(r"^protosim(?: [\w-]+)*: error: ", ln) for ln in lines):
        return True
    return len(lines) == 1 and bool(_USAGE_ONE_LINE.match(lines[0]))


def _names(line: str, names: tuple[str, ...]) -> bool:
    return any(n and n in line for n in names)


def _field_named(line: str, fields: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![A-Za-z0-9]){re.escape(f)}(?![A-Za-z0-9])", line) for f in fields if f)


def check_result(case: FuzzCase, r: RunResult, folder: Path | None = None) -> list[Violation]:
    v: list[Violation] = []

    def add(cat: str, detail: str, rule: str = "") -> None:
        v.append(Violation(cat, detail, rule or cat))

    if r.harness_error:
        add("harness_error", r.harness_error[-800:], "harness")
        return v
    status = r.status
    if r.timed_out:
        site = protosim_frame(r.hang_stack, innermost_last=False) or "?"
        add("timeout", f"no exit within {r.seconds:.0f} s; innermost frame: {site}", "timeout@" + hang_site(r.hang_stack))
        return v
    if r.signal is not None:
        add("crash", f"killed by signal {r.signal} (memory limit or a crash)", f"signal{r.signal}")
        return v
    if r.exception:
        site, msg = _exception_site(r)
        add("exception", f"exception escaped main(): {msg} at {site}", site)
        return v
    if r.systemexit is not None or (r.mode != "subprocess" and status is None):
        code = r.systemexit
        argv_help = any(a in ("-h", "--help", "--version") for a in case.argv)
        if code == 2 and case.usage and is_usage_error(r.stderr + r.stdout):
            status = 2  # argparse's usage error: allowed for a malformed argv
        elif code == 0 and argv_help:
            status = 0
        else:
            add("systemexit", f"SystemExit({code!r}) escaped main() (stderr: {r.stderr.strip()[:200]!r})", f"systemexit{code}")
            return v
    r.effective = status
    if status is None:
        return v
    if status == 3:
        saved = re.search(r"(/\S+protosim-crash-\S+?\.txt)", r.stderr)
        site = ""
        if saved:
            try:
                site = protosim_frame(Path(saved.group(1)).read_text())
            except OSError:
                pass
        first = r.stderr.strip().splitlines()[0][:240] if r.stderr.strip() else ""
        add("exit3", f"internal error: {first}", f"exit3@{site or first[:80]}")
        return v
    if status not in (0, 1, 2):
        add("bad_status", f"exit status {status}", f"status{status}")
        return v
    if TRACEBACK in r.stderr or TRACEBACK in r.stdout:
        add("traceback", f"status {status} with a traceback on {'stderr' if TRACEBACK in r.stderr else 'stdout'}",
            protosim_frame(r.stderr + r.stdout) or "traceback")
    if status not in case.statuses:
        add("status_semantics", f"{case.command()} exited {status}; it may only exit {case.statuses}",
            f"{case.command()}:{status}")
    if case.expect == "refuse" and status != 2:
        add("not_refused", f"status {status} for nonsense: {'; '.join(case.reasons[:3])}",
            case.reasons[0].split(":")[0] if case.reasons else "nonsense")
    if case.expect == "valid" and status == 2:
        add("refused_valid", f"a valid input was refused: {r.stderr.strip()[:300]}", f"refused:{case.command()}")
    if status == 2:
        _check_refusal(case, r, add)
    else:
        _check_judgement(case, r, status, add, folder)
    return v


def _check_refusal(case: FuzzCase, r: RunResult, add) -> None:
    text = r.stderr.strip("\n")
    lines = text.split("\n") if text.strip() else []
    if case.usage and (is_usage_error(r.stderr) or (not lines and r.stdout.lstrip().startswith("usage:"))):
        return
    if len(lines) != 1:
        add("stderr_shape", f"status 2 with {len(lines)} stderr lines: {text[:300]!r}",
            f"lines:{case.command()}:{'0' if not lines else 'n'}")
        return
    line = lines[0]
    if not line.startswith("protosim: "):
        add("stderr_shape", f"status 2 line does not start with 'protosim: ': {line[:200]!r}", f"prefix:{case.command()}")
        return
    if case.problem_files and not _names(line, case.problem_files):
        add("stderr_no_file", f"status 2 line names none of {case.problem_files}: {line[:200]!r}", f"nofile:{case.path}")
    if case.field_names is not None and not _field_named(line, case.field_names):
        add("stderr_no_field", f"status 2 line names no field: {line[:200]!r}", f"nofield:{case.path}")


def _check_judgement(case: FuzzCase, r: RunResult, status: int, add, folder: Path | None) -> None:
    if not r.stdout.strip():
        add("stdout_empty", f"status {status} with nothing on stdout", f"stdout_empty:{case.command()}")
        return
    doc = None
    if case.json_stdout:
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            add("json_invalid", f"stdout is not JSON ({e}): {r.stdout[:120]!r}", f"json:{case.command()}")
            return
    if case.run_json:
        if not isinstance(doc, dict):
            add("json_ok", "run --json printed no JSON object", "json_ok:not_object")
        elif not isinstance(doc.get("ok"), bool):
            add("json_ok", f"run --json has no boolean top-level 'ok' (keys: {sorted(doc)[:12]})", "json_ok:missing")
        else:
            ok = doc["ok"]
            if case.expect_declared is False:
                if (status == 0) != ok:
                    add("ok_status", f"status {status} but ok = {ok} (no [expect])", f"ok_status:{ok}")
                want = _ok_from_details(doc)
                if want is not None and want != ok:
                    add("ok_inconsistent", f"ok = {ok} but the findings / reachable outcomes say {want}",
                        f"ok_inconsistent:{ok}")
    elif case.expect_declared is False and case.command() == "run" and isinstance(doc, dict):
        pass
    if (case.nominal_ok is not None and case.expect_declared is False and case.command() in NOMINAL_COMMANDS):
        want = 0 if case.nominal_ok else 1
        if status != want:
            add("status_semantics", f"{case.command()} exited {status}; the nominal replay is "
                f"{'clean' if case.nominal_ok else 'a protocol bug'} (expected {want})", f"{case.command()}:{status}")
    if folder is not None:
        for rel, kind in case.outputs:
            p = folder / rel
            if not p.is_file():
                add("output_file", f"status {status} but {rel} was not written", f"output_missing:{case.command()}")
                continue
            data = p.read_bytes()
            if not data:
                add("output_file", f"{rel} is empty", f"output_empty:{case.command()}")
            elif kind == "json":
                try:
                    json.loads(data)
                except ValueError:
                    add("output_file", f"{rel} is not JSON", f"output_json:{case.command()}")
            elif kind == "png" and not data.startswith(b"\x89PNG"):
                add("output_file", f"{rel} is not a PNG", f"output_png:{case.command()}")
            elif kind == "html" and b"<html" not in data[:4096].lower():
                add("output_file", f"{rel} is not an HTML page", f"output_html:{case.command()}")


def _ok_from_details(doc: dict[str, Any]) -> bool | None:
    """ok as the contract defines it, from the report's own details (None: not there)."""
    verdict = doc.get("verdict")
    if not isinstance(verdict, dict):
        return None
    findings = verdict.get("findings", verdict.get("finding_kinds"))
    outcome = verdict.get("outcome")
    kinds = []
    if isinstance(outcome, dict) and isinstance(outcome.get("kind"), str):
        kinds.append(outcome["kind"])
    oset = doc.get("outcome_set")
    if isinstance(oset, dict) and isinstance(oset.get("outcomes"), list):
        kinds += [k for k in oset["outcomes"] if isinstance(k, str)]
    if not isinstance(findings, list) or not kinds:
        return None
    return not findings and all(k == "correct" for k in kinds)


# --------------------------------------------------------------------------- one example

_BASE_TMP: Path | None = None


def _tmp_base() -> Path:
    global _BASE_TMP
    if _BASE_TMP is None or not _BASE_TMP.is_dir():
        _BASE_TMP = Path(tempfile.mkdtemp(prefix="protosim-fuzz-", dir=os.environ.get("PROTOSIM_FUZZ_TMP")))
    return _BASE_TMP


def materialize(case: FuzzCase, folder: Path) -> None:
    for kind, rel in case.setup:
        p = folder / rel
        if kind == "mkdir":
            p.mkdir(parents=True, exist_ok=True)
        elif kind == "fifo":
            p.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(p)
    for rel, data in case.files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _rmtree(folder: Path) -> None:
    def onerror(func, path, exc_info):  # noqa: ARG001
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IRWXU)
            func(path)

    shutil.rmtree(folder, onerror=onerror)


def check(case: FuzzCase, timeout: float | None = None, keep: bool = False) -> Checked:
    """Run one case in a fresh folder and return its result and violations."""
    folder = Path(tempfile.mkdtemp(prefix="ex-", dir=_tmp_base()))
    try:
        materialize(case, folder)
        argv = [a.replace("{tmp}", str(folder)) for a in case.argv]
        mode = case.mode or DEFAULT_MODE
        if (case.probe and case.nominal_ok is None and case.expect_declared is False and case.expect != "refuse"
                and case.command() in NOMINAL_COMMANDS):
            case.nominal_ok = nominal_truth(case.probe, folder, timeout)
        result = run_argv(argv, folder, mode, timeout)
        violations = check_result(case, result, folder)
        checked = Checked(case, result, violations)
        if case.roundtrip and result.status == 0 and not violations:
            _roundtrip(checked, folder, mode, timeout)
        return checked
    finally:
        if not keep:
            _rmtree(folder)


def nominal_truth(inp: str, folder: Path, timeout: float | None = None) -> bool | None:
    """Is the nominal replay of ``inp`` clean (no finding, outcome correct)?  From
    ``run INPUT --runs 1 --json``; None when that run does not say (refused, crashed)."""
    r = run_argv(["run", inp, "--runs", "1", "--json"], folder, "fork", timeout)
    try:
        doc = json.loads(r.stdout)
        v = doc["verdict"]
        ok, kind = v["ok"], v["outcome"]["kind"]
    except (ValueError, KeyError, TypeError):
        return None
    if r.status not in (0, 1) or not isinstance(ok, bool):
        return None
    return ok and kind == "correct"


def _roundtrip(checked: Checked, folder: Path, mode: str, timeout: float | None) -> None:
    try:
        json.loads(checked.result.stdout)
    except ValueError:
        return
    (folder / "fz_roundtrip.json").write_text(checked.result.stdout)
    r2 = run_argv(["run", "fz_roundtrip.json", "--runs", "1"], folder, mode, timeout)
    checked.extra.append(r2)
    rt_case = FuzzCase(path=checked.case.path, argv=["run", "fz_roundtrip.json", "--runs", "1"],
                       problem_files=("fz_roundtrip.json",))
    for viol in check_result(rt_case, r2, folder):
        checked.violations.append(Violation(viol.category, "replaying `schedule`'s output: " + viol.detail, viol.rule))
    if r2.status == 2:
        checked.violations.append(Violation("schedule_roundtrip", "`run` refused the schedule `schedule` printed: "
                                            + r2.stderr.strip()[:300], "roundtrip"))


def assert_contract(case: FuzzCase) -> Checked:
    """The test body: run, record statistics, fail with a reproducer on any violation."""
    from hypothesis import event

    checked = check(case)
    r = checked.result
    event(f"{case.command()}: status {r.status if not r.timed_out else 'timeout'}")
    event(f"expect {case.expect}")
    if checked.violations:
        raise AssertionError(checked.report())
    return checked


def summary_row(checked: Checked) -> dict[str, Any]:
    r = checked.result
    return {"command": checked.case.command(), "status": r.status, "timed_out": r.timed_out, "seconds": round(r.seconds, 3),
            "mode": r.mode, "expect": checked.case.expect,
            "violations": [asdict(v) for v in checked.violations]}
