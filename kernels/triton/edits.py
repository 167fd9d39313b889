"""Seeded edits of real Triton compiler output, judged by protosim and run on the GPU.

    python -m kernels.triton.edits --out tests/fixtures/triton/edits      # regenerate (CPU)
    python -m kernels.triton.edits --list                                 # where each rule applies
    /work/tri-3.6.0/bin/python -m kernels.triton.edits --compile-check tests/fixtures/triton/edits
    python -m kernels.triton.edits --run tests/fixtures/triton/edits --out $OUT/edits.jsonl   # GPU
    python -m kernels.triton.edits --table predictions.json edits.jsonl > table.md

Each :data:`RULES` entry is a *generic* rewrite of TTGIR text -- no per-file line numbers:
it finds the first place in a kernel where it applies (inside an ``scf.for``: the steady
state of a pipeline, where the bug has iterations to bite) and changes one operand, one
attribute or one line there, the way a person writing the pipeline by hand (what Gluon
lets them do) gets it wrong.  Each rule names the protosim finding kinds that would
confirm it.  The rules are applied to every Triton 3.6.0 sm_90 kernel of the corpus
(``tests/fixtures/triton/corpus/index.json``) except the host-descriptor ones
(``mm_tma_host_*``, ``mm_persist_*``: any ``!tt.tensordesc`` parameter; Triton 3.6's launcher
cannot launch them from TTGIR); by default only the :data:`KERNELS` (``--all``: every one).

``--out DIR`` writes, per (kernel, rule) where the rule applies:

* ``DIR/<kernel>.<rule>.ttgir`` -- the edited TTGIR;
* ``DIR/<kernel>.<rule>.edit.json`` -- ``{"record": <index file>, "edit": <what changed>}``,
  the sidecar ``kernels.triton.corpus_run --edits`` reads (plus the rule and its kinds);
* ``DIR/<kernel>.<rule>.json`` / ``.launch.json`` -- the record's metadata and launch, so
  ``protosim.frontends.ttgir.read`` reads the edited file as it reads the original;
* ``DIR/predictions.json`` -- protosim's verdict per edit and per unedited kernel: the
  nominal replay (outcome, finding kinds) and the outcome set of
  ``protosim.verdict.explore(runs=EXPLORE_RUNS)``, both with the launch capped at
  :data:`CTA_CAP` CTAs (the record's own CTA count is in the entry).

``--run DIR`` (on the GPU; torch + triton only) compiles each edited file with
``triton.compile(path)`` and launches it ``--launches`` times with the record's call, each
launch checked against the fp32 torch reference (output refilled with NaN in between), in
a child process per edit with a timeout, so a hang or a fault stays in its own process.
``--with-base`` runs the unedited TTGIR of each edited kernel the same way.  Children
compile in parallel (``--jobs``) but launch one at a time (a file lock), so a kernel runs
alone on the GPU.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "triton" / "corpus"
EDITS_DIR = ROOT / "tests" / "fixtures" / "triton" / "edits"
TRITON = "3.6.0"
TARGET = "sm90"
SKIP = ("mm_tma_host_",)
"""Host-descriptor kernels: Triton 3.6's launcher cannot launch them from TTGIR.  Any kernel
whose ``tt.func`` takes a ``!tt.tensordesc`` parameter is one (the ``mm_persist_*`` kernels
too: their edits failed on the H200 with the launcher's ``KeyError: '!tt.tensordesc<...>'``),
and is skipped by :func:`host_descriptor` whatever its name."""
KERNELS = (
    # cp.async + wgmma pipelines
    "mm_ptr_64x64x32_s3_w4", "mm_ptr_64x128x64_s5_w4", "attn_d64_128x64_s2_w4",
    # TMA + mbarrier + wgmma, one role
    "mm_tma_dev_64x64x32_s2_w4", "mm_tma_dev_128x128x64_s3_w4", "mm_tma_dev_fp8_128x128x128_s3_w8",
    "attn_tma_d64_128x64_s3_w4", "attn_tma_d128_128x128_s2_w8",
    # warp-specialized (producer / consumer partitions)
    "mm_tma_dev_ws_128x128x64_s3_w4", "attn_tma_ws_d64_128x64_s3_w4",
)
"""The kernels edited by default (``--all``: every one of the corpus): each family once or
twice, so that the rule x kernel product stays near 40 edits."""
CTA_CAP = 8
"""protosim replays each kernel with at most this many CTAs (the H200 runs the record's grid)."""
EXPLORE_RUNS = 12

# ---------------------------------------------------------------------------------------
# TTGIR text: loops, definitions, views (no protosim, no triton)
# ---------------------------------------------------------------------------------------

_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)?\s*=\s*([\w.]+)")
_VIEWS = ("ttg.memdesc_trans", "ttg.memdesc_subslice", "ttg.memdesc_reshape", "ttg.memdesc_reinterpret")
_READS = ("ttng.warp_group_dot ", "ttg.local_load ", "ttng.tc_gen5_mma ", "tt.dot ")
_PRODUCES = ("ttng.barrier_expect ", "ttng.async_tma_copy_global_to_local ", "ttg.async_copy_global_to_local ",
             "ttng.arrive_barrier ")


def _code(line: str) -> str:
    """The line without its ``loc(...)`` tail."""
    i = line.find(" loc(")
    return line if i < 0 else line[:i]


class Text:
    """A TTGIR file as lines, with its ``scf.for`` bodies and SSA definitions."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.defs: dict[str, int] = {}
        self.ops: dict[str, str] = {}
        for i, ln in enumerate(self.lines):
            m = _DEF.match(ln)
            if m:
                self.defs.setdefault(m.group(1), i)
                self.ops.setdefault(m.group(1), m.group(2))
        self.loops: list[tuple[int, int]] = []  # (line of scf.for, line of its closing brace)
        stack: list[tuple[int, bool]] = []
        for i, ln in enumerate(self.lines):
            code, in_str = _code(ln), False
            for ch in code:
                if ch == '"':
                    in_str = not in_str
                elif in_str:
                    continue
                elif ch == "{":
                    stack.append((i, False))
                elif ch == "}" and stack:
                    start, _ = stack.pop()
                    if "scf.for " in self.lines[start] and start != i:
                        self.loops.append((start, i))
            # a line that opens a region (ends with '{') and is an scf.for: mark it (already in stack)
        self.loops.sort()

    def loop_of(self, i: int) -> tuple[int, int] | None:
        """The innermost scf.for body holding line ``i``."""
        best = None
        for a, b in self.loops:
            if a < i < b and (best is None or a > best[0]):
                best = (a, b)
        return best

    def in_loop(self, i: int) -> bool:
        return self.loop_of(i) is not None

    def base_index(self, name: str, depth: int = 0) -> tuple[str, str, int] | None:
        """Follow views back to ``%x = ttg.memdesc_index %base[%i]``: (base, index, line)."""
        name = name.split("#")[0]
        i = self.defs.get(name)
        if i is None or depth > 8:
            return None
        code = _code(self.lines[i])
        m = re.search(r"ttg\.memdesc_index (%[\w.$-]+)\[(%[\w.$#-]+)\]", code)
        if m:
            return m.group(1), m.group(2), i
        for v in _VIEWS:
            m = re.search(re.escape(v) + r" (%[\w.$#-]+)", code)
            if m:
                return self.base_index(m.group(1), depth + 1)
        return None

    def is_constant(self, name: str) -> bool:
        return self.ops.get(name.split("#")[0]) == "arith.constant"


@dataclasses.dataclass
class Edit:
    rule: str
    text: str
    what: str
    lines: list[int]  # 1-based lines of the original that changed


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    summary: str
    where: str
    kinds: frozenset[str]
    apply: Callable[[Text], Edit | None]


def _consumer_wait(t: Text) -> tuple[int, str, str] | None:
    """The first ``ttng.wait_barrier %bar, %phase`` inside an scf.for whose phase is computed
    (not a constant) and after which, in the same loop body, the first async-pipeline op is a
    read of shared memory (wgmma, local_load, tcgen05 mma) -- a consumer's "tile landed" wait,
    not a producer's "slot free" wait (which is followed by barrier_expect / copies)."""
    for i, ln in enumerate(t.lines):
        m = re.search(r"ttng\.wait_barrier (%[\w.$-]+), (%[\w.$#-]+)", _code(ln))
        if not m or t.is_constant(m.group(2)):
            continue
        loop = t.loop_of(i)
        if loop is None:
            continue
        for j in range(i + 1, loop[1]):
            c = _code(t.lines[j])
            if any(op in c for op in _READS):
                return i, m.group(1), m.group(2)
            if any(op in c for op in _PRODUCES):
                break
    return None


def _sub_line(t: Text, i: int, old: str, new: str) -> str:
    ln = t.lines[i]
    assert old in ln, (old, ln)
    lines = list(t.lines)
    lines[i] = ln.replace(old, new, 1)
    return "\n".join(lines) + "\n"


def rule_phase0(t: Text) -> Edit | None:
    w = _consumer_wait(t)
    if w is None:
        return None
    i, bar, phase = w
    indent = re.match(r"\s*", t.lines[i]).group(0)
    lines = list(t.lines)
    lines[i] = t.lines[i].replace(f"ttng.wait_barrier {bar}, {phase}", f"ttng.wait_barrier {bar}, %c0_i32_edit", 1)
    lines.insert(i, f"{indent}%c0_i32_edit = arith.constant 0 : i32")
    return Edit("phase0", "\n".join(lines) + "\n",
                f"phase0: consumer wait_barrier {bar} waits parity 0 always instead of {phase}, line {i + 1}", [i + 1])


def rule_expect_half(t: Text) -> Edit | None:
    for i, ln in enumerate(t.lines):
        m = re.search(r"ttng\.barrier_expect (%[\w.$-]+), (\d+)", _code(ln))
        if m and t.in_loop(i):
            n = int(m.group(2))
            return Edit("expect_half", _sub_line(t, i, f"{m.group(1)}, {n}", f"{m.group(1)}, {n // 2}"),
                        f"expect_half: barrier_expect {m.group(1)} {n} -> {n // 2} bytes, line {i + 1}", [i + 1])
    return None


def rule_async_wait_plus2(t: Text) -> Edit | None:
    for i, ln in enumerate(t.lines):
        m = re.search(r"ttg\.async_wait .*\{num = (\d+) : i32\}", _code(ln))
        if m and t.in_loop(i):
            n = int(m.group(1))
            return Edit("async_wait_plus2", _sub_line(t, i, f"{{num = {n} : i32}}", f"{{num = {n + 2} : i32}}"),
                        f"async_wait_plus2: ttg.async_wait num {n} -> {n + 2}, line {i + 1}", [i + 1])
    return None


def rule_dot_wait_plus1(t: Text) -> Edit | None:
    for i, ln in enumerate(t.lines):
        m = re.search(r"ttng\.warp_group_dot_wait .*\{pendings = (\d+) : i32\}", _code(ln))
        if m and t.in_loop(i):
            n = int(m.group(1))
            return Edit("dot_wait_plus1", _sub_line(t, i, f"{{pendings = {n} : i32}}", f"{{pendings = {n + 1} : i32}}"),
                        f"dot_wait_plus1: ttng.warp_group_dot_wait pendings {n} -> {n + 1}, line {i + 1}", [i + 1])
    return None


def rule_delete_wait(t: Text) -> Edit | None:
    w = _consumer_wait(t)
    if w is None:
        return None
    i, bar, phase = w
    lines = list(t.lines)
    del lines[i]
    return Edit("delete_wait", "\n".join(lines) + "\n",
                f"delete_wait: consumer ttng.wait_barrier {bar}, {phase} deleted, line {i + 1}", [i + 1])


def rule_copy_into_read_stage(t: Text) -> Edit | None:
    """In the first loop body that both reads a stage of a ring (wgmma / local_load operand)
    and refills a stage of the same ring (cp.async / TMA destination) with another index,
    point every such refill at the stage being read."""
    for a, b in t.loops:
        if t.loop_of(a + 1) != (a, b):
            continue  # only bodies whose ops are their own (innermost at their first line)
        reads: dict[str, tuple[str, int]] = {}
        for j in range(a + 1, b):
            c = _code(t.lines[j])
            if not any(op in c for op in _READS):
                continue
            for opnd in re.findall(r"%[\w.$#-]+", c.split("=", 1)[-1].split(":")[0]):
                bi = t.base_index(opnd)
                if bi and a < bi[2] < b:
                    reads.setdefault(bi[0], (bi[1], bi[2]))
        changes: list[tuple[int, str, str, str]] = []
        for j in range(a + 1, b):
            c = _code(t.lines[j])
            m = (re.search(r"ttg\.async_copy_global_to_local %[\w.$#-]+, (%[\w.$#-]+)", c)
                 or re.search(r"ttng\.async_tma_copy_global_to_local %[\w.$-]+\[[^\]]*\] (%[\w.$#-]+)", c))
            if not m:
                continue
            bi = t.base_index(m.group(1))
            if not bi or not (a < bi[2] < b) or bi[0] not in reads:
                continue
            ridx, rline = reads[bi[0]]
            if bi[1] != ridx and rline < bi[2] and t.loop_of(bi[2]) == (a, b):
                changes.append((bi[2], bi[0], bi[1], ridx))
        if changes:
            lines = list(t.lines)
            for line, base, old, new in changes:
                lines[line] = lines[line].replace(f"{base}[{old}]", f"{base}[{new}]", 1)
            what = "; ".join(f"{base}[{old}] -> {base}[{new}] (line {line + 1})" for line, base, old, new in changes)
            return Edit("copy_into_read_stage", "\n".join(lines) + "\n",
                        f"copy_into_read_stage: refill destination set to the stage being read: {what}",
                        [c[0] + 1 for c in changes])
    return None


RACE = {"raw_hazard", "raw_race"}
RULES: list[Rule] = [
    Rule("phase0", "a consumer's wait_barrier passes a constant phase 0 instead of its computed phase "
         "(the parity is never flipped)", "first consumer wait_barrier (followed by a wgmma/local_load) in an scf.for",
         frozenset({"wrong_parity"} | RACE), rule_phase0),
    Rule("expect_half", "barrier_expect's byte count halved", "first barrier_expect in an scf.for",
         frozenset({"tx_mismatch", "tx_out_of_range", "deadlock"}), rule_expect_half),
    Rule("async_wait_plus2", "cp.async group wait too lenient: async_wait {num = n} -> n + 2",
         "first ttg.async_wait in an scf.for", frozenset(RACE), rule_async_wait_plus2),
    Rule("dot_wait_plus1", "wgmma wait too lenient: warp_group_dot_wait {pendings = n} -> n + 1",
         "first ttng.warp_group_dot_wait in an scf.for", frozenset({"war_race", "war_hazard"}), rule_dot_wait_plus1),
    Rule("delete_wait", "a consumer's wait_barrier deleted", "first consumer wait_barrier in an scf.for",
         frozenset(RACE), rule_delete_wait),
    Rule("copy_into_read_stage", "the refill copies' memdesc_index set to the stage being read",
         "every cp.async/TMA destination in the first loop body that reads another stage of the same ring",
         frozenset({"war_race", "war_hazard"} | RACE), rule_copy_into_read_stage),
]
RULE_BY_NAME = {r.name: r for r in RULES}


# ---------------------------------------------------------------------------------------
# Generating the edits
# ---------------------------------------------------------------------------------------


def host_descriptor(ttgir: str) -> bool:
    """The kernel takes a TMA descriptor built on the host (a ``!tt.tensordesc`` parameter)."""
    head = next((ln for ln in ttgir.splitlines() if ln.lstrip().startswith("tt.func public")), "")
    return "!tt.tensordesc" in _code(head)


def corpus_records(corpus: Path = CORPUS, every: bool = False) -> list[dict]:
    recs = json.loads((corpus / "index.json").read_text())
    return [r for r in recs if r["triton"] == TRITON and r["target"] == TARGET and r.get("compiled", True)
            and not any(s in r["file"] for s in SKIP) and (every or r["variant"] in KERNELS)
            and not host_descriptor((corpus / (r["file"] + ".ttgir")).read_text())]


def edits_of(rec: dict, corpus: Path = CORPUS) -> list[Edit]:
    text = Text((corpus / (rec["file"] + ".ttgir")).read_text())
    out = []
    for rule in RULES:
        e = rule.apply(text)
        if e is not None:
            out.append(e)
    return out


def edit_name(rec: dict, rule: str) -> str:
    return f"{Path(rec['file']).name}.{rule}"


def predict(path: Path, ctas: int, runs: int = EXPLORE_RUNS) -> dict:
    """protosim's verdict of one TTGIR file, the launch capped at ``ctas`` CTAs."""
    from protosim.frontends.ttgir import TtgirError, read
    from protosim.verdict import explore, judge

    t0 = time.monotonic()
    try:
        sched, _ = read(path, launch={"ctas": ctas})
    except TtgirError as e:
        return {"refused": str(e)}
    v, _ = judge(sched)
    o = explore(sched, runs=runs)
    return {"nominal": v.outcome.kind, "findings": v.kinds(), "outcomes": sorted(o.kinds()),
            "explore_findings": sorted(set().union(*(c.finding_kinds for c in o.classes.values()))),
            "seconds": round(time.monotonic() - t0, 2)}


def generate(out: Path, corpus: Path = CORPUS, runs: int = EXPLORE_RUNS, cap: int = CTA_CAP,
             only: str | None = None, verbose: bool = True, every: bool = False) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*"):
        if old.is_file() and old.suffix in (".ttgir", ".json"):
            old.unlink()
    preds: dict = {"cta_cap": cap, "explore_runs": runs, "triton": TRITON, "target": TARGET,
                   "rules": {r.name: {"summary": r.summary, "where": r.where, "kinds": sorted(r.kinds)} for r in RULES},
                   "base": {}, "edits": {}}
    for rec in corpus_records(corpus, every):
        if only and only not in rec["file"]:
            continue
        src = corpus / (rec["file"] + ".ttgir")
        edits = edits_of(rec, corpus)
        if not edits:
            continue
        ctas = min(cap, int(rec["ctas"]))
        preds["base"][rec["file"]] = {"ctas": int(rec["ctas"]), "sim_ctas": ctas, **predict(src, ctas, runs)}
        for e in edits:
            name = edit_name(rec, e.rule)
            (out / f"{name}.ttgir").write_text(e.text)
            for side in (".json", ".launch.json"):
                s = src.with_suffix(side)
                if s.exists():
                    shutil.copyfile(s, out / f"{name}{side}")
            rule = RULE_BY_NAME[e.rule]
            (out / f"{name}.edit.json").write_text(json.dumps(
                {"record": rec["file"], "edit": e.what, "rule": e.rule, "kinds": sorted(rule.kinds)}, indent=1) + "\n")
            p = predict(out / f"{name}.ttgir", ctas, runs)
            preds["edits"][name] = {"record": rec["file"], "rule": e.rule, "edit": e.what, "lines": e.lines,
                                    "kinds": sorted(rule.kinds), "ctas": int(rec["ctas"]), "sim_ctas": ctas, **p}
            if verbose:
                hit = sorted(set(p.get("findings", [])) & rule.kinds)
                print(f"{name}: nominal {p.get('nominal', 'refused')} findings {p.get('findings')} "
                      f"outcomes {p.get('outcomes')} {'CONFIRMED ' + str(hit) if hit else 'NOT CONFIRMED'} "
                      f"({p.get('seconds')} s)", flush=True)
    (out / "predictions.json").write_text(json.dumps(preds, indent=1, sort_keys=False) + "\n")
    return preds


# ---------------------------------------------------------------------------------------
# Compile check (CPU, Triton installed): does Triton accept each edited file?
# ---------------------------------------------------------------------------------------


def compile_check(d: Path) -> int:
    import triton
    from triton.backends.compiler import GPUTarget

    bad = 0
    for f in sorted(d.glob("*.ttgir")):
        try:
            triton.compile(str(f), target=GPUTarget("cuda", 90, 32))
            print(f"ok   {f.name}")
        except Exception as exc:  # noqa: BLE001
            bad += 1
            print(f"FAIL {f.name}: {type(exc).__name__}: {str(exc).strip().splitlines()[:1]}")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------
# Running on the GPU: several checked launches per edit, one child process per edit
# ---------------------------------------------------------------------------------------

READY = "EDITS_READY"
LAUNCH = "EDITS_LAUNCH "
RESULT = "EDITS_RESULT "


def child(path: Path, rec: dict, launches: int, lock: Path) -> int:
    import fcntl

    import torch
    import triton

    sys.path.insert(0, str(ROOT))
    from kernels.triton.corpus_run import _allocator, build_ttgir_args, check

    res: dict = {"launches": []}
    try:
        _allocator(torch)
        try:
            k = triton.compile(str(path))
        except Exception as exc:  # noqa: BLE001  (Triton refused the edited IR: that is the result)
            res.update(outcome="compile_error", error=f"{type(exc).__name__}: {str(exc).strip()[:300]}")
            print(RESULT + json.dumps(res), flush=True)
            return 0
        text = path.read_text()
        sig = getattr(getattr(k, "src", None), "signature", None)
        tensors, args = build_ttgir_args(torch, rec, text, sig if isinstance(sig, dict) else None, "cuda", seed=1)
        out = tensors[rec["reference"]["out"]]
        init = out.clone()
        grid = tuple(int(g) for g in rec["grid"])
        torch.cuda.synchronize()
        with open(lock, "w") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)  # one kernel on the GPU at a time
            print(READY, flush=True)
            for n in range(launches):
                out.copy_(init)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                k[grid](*args)
                torch.cuda.synchronize()
                dt = (time.perf_counter() - t0) * 1e6
                o, err, det = check(torch, rec, tensors)
                row = {"n": n, "outcome": o, "max_rel_err": err, "wrong_elements": det.get("wrong_elements"),
                       "nonfinite": det.get("nonfinite"), "wall_us": round(dt, 1)}
                res["launches"].append(row)
                print(LAUNCH + json.dumps(row), flush=True)
    except Exception as exc:  # noqa: BLE001
        msg = str(exc).strip().splitlines()
        cuda = "CUDA error" in str(exc) or type(exc).__name__ == "AcceleratorError"
        res.update(outcome="fault" if cuda else "error", error=f"{type(exc).__name__}: {msg[0][:300] if msg else ''}",
                   traceback=traceback.format_exc()[-1500:])
    print(RESULT + json.dumps(res, default=str), flush=True)
    return 0


def run_one(path: Path, rec: dict, launches: int, timeout: float, setup_timeout: float, lock: Path) -> dict:
    cmd = [sys.executable, "-m", "kernels.triton.edits", "--child", str(path), "--child-record", json.dumps(rec),
           "--launches", str(launches), "--lock", str(lock)]
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    lines: queue.Queue = queue.Queue()
    err: collections.deque = collections.deque(maxlen=20)
    threading.Thread(target=lambda: ([lines.put(x.rstrip("\n")) for x in p.stdout], lines.put(None)), daemon=True).start()
    threading.Thread(target=lambda: [err.append(x.rstrip("\n")) for x in p.stderr], daemon=True).start()
    deadline, phase, result, seen = t0 + setup_timeout, "setup", None, []
    while True:
        left = deadline - time.time()
        if left <= 0:
            break
        try:
            line = lines.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            break
        if line.startswith(READY):
            deadline, phase, t_ready = time.time() + timeout, "run", time.time()
        elif line.startswith(LAUNCH):
            seen.append(json.loads(line[len(LAUNCH):]))
        elif line.startswith(RESULT):
            result = json.loads(line[len(RESULT):])
    if result is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the child's own process group, started above
        except OSError:
            pass
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        if time.time() >= deadline:
            limit = timeout if phase == "run" else setup_timeout
            result = {"outcome": "timeout", "phase": phase, "launches": seen,
                      "error": f"{'launch' if phase == 'run' else 'set-up'} gave no result within {limit} s"}
        else:
            result = {"outcome": "crash", "launches": seen, "error": " | ".join(list(err)[-3:])[:500]}
    else:
        p.wait(timeout=30)
    outs = [r["outcome"] for r in result.get("launches", [])]
    if "outcome" not in result:
        result["outcome"] = "wrong" if "wrong" in outs else ("correct" if outs else "error")
    result["counts"] = dict(collections.Counter(outs + ([result["outcome"]] if result["outcome"] in
                                                        ("timeout", "fault", "crash", "error", "compile_error") else [])))
    result["wall_s"] = round(time.time() - t0, 1)
    return result


def device_run(d: Path, out: Path, commit: str, launches: int, timeout: float, jobs: int, with_base: bool,
               only: str | None, setup_timeout: float) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from kernels.triton.corpus_run import environment

    recs = {r["file"]: r for r in json.loads((CORPUS / "index.json").read_text())}
    work: list[tuple[str, Path, dict, dict]] = []
    for side in sorted(d.glob("*.edit.json")):
        meta = json.loads(side.read_text())
        name = side.name[: -len(".edit.json")]
        if only and only not in name:
            continue
        work.append((name, d / f"{name}.ttgir", recs[meta["record"]], meta))
    if with_base:
        for rec_file in sorted({w[2]["file"] for w in work}):
            work.append((Path(rec_file).name + ".base", CORPUS / (rec_file + ".ttgir"), recs[rec_file],
                         {"record": rec_file, "edit": "none (the corpus TTGIR)", "rule": "none"}))
    env = environment(commit)
    print(json.dumps(env), f"{len(work)} to run", flush=True)
    lock = Path(os.environ.get("TMPDIR", "/tmp")) / f"edits_gpu_{os.getpid()}.lock"
    out.parent.mkdir(parents=True, exist_ok=True)
    wlock = threading.Lock()
    t_all = time.time()

    def one(item):
        name, path, rec, meta = item
        res = run_one(path, rec, launches, timeout, setup_timeout, lock)
        row = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **env, "name": name, "record": rec["file"],
               "rule": meta.get("rule"), "edit": meta.get("edit"), "edit_file": path.name, **res}
        with wlock:
            with out.open("a") as f:
                f.write(json.dumps(row, default=str) + "\n")
            print(f"{name}: {res['outcome']} {res['counts']} ({res['wall_s']} s) {res.get('error', '')[:160]}", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        list(ex.map(one, work))
    print(f"done {len(work)} in {time.time() - t_all:.0f} s", flush=True)
    return 0


# ---------------------------------------------------------------------------------------
# The agreement table
# ---------------------------------------------------------------------------------------

H200_TO_SIM = {"correct": "correct", "wrong": "wrong", "timeout": "deadlock", "fault": "fault"}


def table(preds: dict, rows: list[dict]) -> str:
    """Markdown: per edit (then per unedited kernel) protosim's nominal outcome, outcome set and
    findings against the H200's outcomes over its launches.  ``set``: every H200 outcome is in
    the explored outcome set (a hang is ``deadlock``); ``nominal``: the nominal outcome is the
    H200's most frequent one."""
    by_name = {r["name"]: r for r in rows}
    out = ["| edit | rule | simulator: nominal; outcome set; findings | H200 (launches) | in set | nominal |",
           "|---|---|---|---|---|---|"]
    n = n_set = n_nom = 0

    def line(name, rule, p, r):
        nonlocal n, n_set, n_nom
        if "refused" in p:
            sim, outs, nom = f"refused: {p['refused'][:80]}", set(), None
        else:
            sim = f"{p['nominal']}; {{{', '.join(p['outcomes'])}}}; {', '.join(p['findings']) or 'none'}"
            outs, nom = set(p["outcomes"]), p["nominal"]
        if r is None:
            out.append(f"| {name} | {rule} | {sim} | not run | -- | -- |")
            return
        c = r.get("counts") or {}
        txt = ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])) or r.get("outcome", "?")
        if r.get("outcome") in ("timeout", "fault") and r.get("launches"):
            txt += f" (launch {len(r['launches']) + 1})"
        mapped = {H200_TO_SIM.get(k, k) for k in c}
        top = H200_TO_SIM.get(max(c, key=c.get), "?") if c else "?"
        in_set, nominal = mapped <= outs, nom == top
        n, n_set, n_nom = n + 1, n_set + in_set, n_nom + nominal
        out.append(f"| {name} | {rule} | {sim} | {txt} | {'yes' if in_set else '**no**'} | "
                   f"{'yes' if nominal else '**no**'} |")

    for name, p in preds["edits"].items():
        line(name, p["rule"], p, by_name.get(name))
    for rec_file, p in preds["base"].items():
        line(Path(rec_file).name + ".base", "none (unedited)", p, by_name.get(Path(rec_file).name + ".base"))
    out.append("")
    out.append(f"H200 outcomes all in the simulator's outcome set: {n_set}/{n}; nominal replay gives the H200's "
               f"most frequent outcome: {n_nom}/{n}.")
    extra = [r for r in rows if r["name"] not in preds["edits"] and not
             (r["name"].endswith(".base") and r["record"] in preds["base"])]
    if extra:
        out.append("")
        out.append("Rows of the JSON lines not in this edit set: " + "; ".join(
            f"{r['name']}: {r.get('outcome')} ({(r.get('error') or '')[:70]})" for r in extra))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="generate: the edits folder; --run: the JSON-lines file to append to")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--only", help="only kernels (edits) whose name contains this")
    ap.add_argument("--runs", type=int, default=EXPLORE_RUNS, help=f"explore replays per edit (default {EXPLORE_RUNS})")
    ap.add_argument("--cta-cap", type=int, default=CTA_CAP, help=f"CTAs protosim replays at most (default {CTA_CAP})")
    ap.add_argument("--all", action="store_true", help="edit every kernel of the corpus, not only KERNELS")
    ap.add_argument("--list", action="store_true", help="print where each rule applies, write nothing")
    ap.add_argument("--compile-check", type=Path, metavar="DIR", help="triton.compile every DIR/*.ttgir for sm_90 (CPU)")
    ap.add_argument("--run", type=Path, metavar="DIR", help="run DIR's edits on the GPU (torch + triton)")
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
    ap.add_argument("--launches", type=int, default=10, help="checked launches per edit (default 10)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds for an edit's launches before 'timeout'")
    ap.add_argument("--setup-timeout", type=float, default=240.0, help="seconds for a child's start and compile")
    ap.add_argument("--jobs", type=int, default=4, help="children compiling at once (launches are serialised)")
    ap.add_argument("--with-base", action="store_true", help="--run: also the unedited TTGIR of each edited kernel")
    ap.add_argument("--table", nargs=2, type=Path, metavar=("PREDICTIONS", "JSONL"), help="print the agreement table")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--child-record", help=argparse.SUPPRESS)
    ap.add_argument("--lock", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, json.loads(a.child_record), a.launches, a.lock)
    if a.compile_check:
        return compile_check(a.compile_check)
    if a.run:
        if not a.out:
            ap.error("--run needs --out FILE.jsonl")
        return device_run(a.run, a.out, a.commit, a.launches, a.timeout, a.jobs, a.with_base, a.only, a.setup_timeout)
    if a.table:
        preds = json.loads(a.table[0].read_text())
        rows = [json.loads(x) for x in a.table[1].read_text().splitlines() if x.strip()]
        sys.stdout.write(table(preds, rows))
        return 0
    if a.list:
        for rec in corpus_records(a.corpus, a.all):
            if a.only and a.only not in rec["file"]:
                continue
            for e in edits_of(rec, a.corpus):
                print(f"{edit_name(rec, e.rule)}: {e.what}")
        return 0
    if not a.out:
        ap.error("give --out DIR (or --list, --run, --table, --compile-check)")
    generate(a.out, a.corpus, a.runs, a.cta_cap, a.only, every=a.all)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
