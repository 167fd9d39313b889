"""The contract's list of nonsense and huge sizes, one explicit input each, and the
failure classes the before-census found (results/fuzz/FINDINGS_before.md).

The generated suites find these too, at random; this table names each class once so a
regression says which one broke.  ``refuse``: must exit 2 with one ``protosim: `` line
naming the file; ``bounded``: may be refused (2) or judged (0/1), but within the
wall-clock limit (``PROTOSIM_FUZZ_TIMEOUT``, 180 s) -- never a runaway.
"""

from __future__ import annotations

import json
import re

import pytest

from . import oracles as O
from .contract import FuzzCase, check
from .strategies import base_scenarios, base_schedules, base_ttgir, base_records


def _toml(text: str, *, cmd=("run",), flags=("--runs", "1"), expect="refuse") -> FuzzCase:
    data = text.encode() if isinstance(text, str) else text
    j, _ = O.judge_scenario_bytes(data)
    if expect == "refuse":
        assert j.verdict == "refuse", f"the oracle should call this nonsense: {text!r}"
    return FuzzCase(path="scenario_toml", argv=[*cmd, "fz_scn.toml", *flags], files={"fz_scn.toml": data}, expect=expect,
                    reasons=j.reasons or ["explicit"], problem_files=("fz_scn.toml",))


def _sched(base: str, edit, expect="refuse") -> FuzzCase:
    doc = json.loads(base_schedules()[base])
    out = edit(doc)
    if out is not None:  # an edit that returns something replaces the document (or its bytes)
        doc = out
    data = json.dumps(doc).encode() if not isinstance(doc, bytes) else doc
    j, _ = O.judge_schedule_bytes(data)
    if expect == "refuse":
        assert j.verdict == "refuse", f"the oracle should call this nonsense: {base}"
    return FuzzCase(path="schedule_json", argv=["run", "fz_sched.json", "--runs", "1"], files={"fz_sched.json": data},
                    expect=expect, reasons=j.reasons or ["explicit"], problem_files=("fz_sched.json",))


def _ttgir(base: str, text_edit=None, launch_edit=None, expect="refuse", consts=None, raw_launch: bytes | None = None) -> FuzzCase:
    t, launch, meta = base_ttgir()[base]
    text = t.decode()
    if text_edit:
        text = text_edit(text)
    ld = json.loads(launch)
    if launch_edit:
        ld = launch_edit(ld)
    files = {"fz_k.ttgir": text if isinstance(text, bytes) else text.encode(),
             "fz_k.launch.json": raw_launch if raw_launch is not None else json.dumps(ld).encode(), "fz_k.json": meta}
    j = O.Judgement()
    O.judge_ttgir(j, files["fz_k.ttgir"], consts)
    O.judge_launch(j, files["fz_k.launch.json"], known=tuple(json.loads(launch)))
    if expect == "refuse":
        assert j.verdict == "refuse", f"the oracle should call this nonsense: {base}"
    return FuzzCase(path="ttgir", argv=["run", "fz_k.ttgir", "--runs", "1"], files=files, expect=expect,
                    reasons=j.reasons or ["explicit"], problem_files=("fz_k",))


def _step(value: int):
    def edit(text: str) -> str:
        lines = text.split("\n")
        i = next(i for i, ln in enumerate(lines) if "scf.for" in ln)
        indent = re.match(r"\s*", lines[i]).group(0)
        lines[i] = re.sub(r"(step\s+)%[\w.]+", r"\1%fz_step", lines[i], count=1)
        return "\n".join(lines[:i] + [f"{indent}%fz_step = arith.constant {value} : i32"] + lines[i:])

    return edit


def _ops(kind: str, key: str | None = None, first: bool = False, **update):
    """An edit: update every op of ``kind`` in CTA 0, role 0 (or its access ``key``)."""
    def edit(d):
        for op in d["ctas"][0]["roles"][0]:
            if op.get("op") == kind:
                (op[key] if key else op).update(update)
                if first:
                    break
    return edit


def _cli(argv, files=None, setup=(), expect="refuse", names=(), usage=False) -> FuzzCase:
    return FuzzCase(path="cli", argv=list(argv), files=dict(files or {}), setup=list(setup), expect=expect,
                    reasons=["explicit"], problem_files=tuple(names), usage=usage)


def _rec(rec: str, **changes) -> bytes:
    d = json.loads(rec)
    d.update(changes)
    return (json.dumps(d) + "\n").encode()


V1 = 'builder = "hgemm_v1"\n[config]\narch = "b200"\n'
V2 = 'builder = "hgemm_v2"\n[config]\narch = "b200"\n'
V6 = 'builder = "hgemm_v6"\n[config]\narch = "b200"\n'


def _cases() -> dict[str, FuzzCase]:
    scn = base_scenarios()
    v1 = scn.get("v1_single_tile.toml", V1.encode()).decode()
    rec = json.dumps(base_records()[0])
    return {
        # scenario TOML
        "toml negative K": _toml(V2 + "K = -64\n"),
        "toml zero K": _toml(V2 + "K = 0\n"),
        "toml non-integer M": _toml(V2 + "M = 128.0\n"),
        "toml string size": _toml(V2 + 'K = "512"\n'),
        "toml zero PIPE_DEPTH": _toml('builder = "hgemm_v5"\n[config]\nPIPE_DEPTH = 0\n'),
        "toml num_warps = 0": _toml('builder = "triton_pipeline"\n[config]\nnum_warps = 0\n'),
        "toml v6 knob on v1": _toml(v1.replace("[config]", "[config]\nreset_phase_per_tile = true")),
        "toml TMA knob on v2": _toml(V2 + 'tma_issuer = "each_warp"\n'),
        "toml arch is a path": _toml(V2.replace('"b200"', '"../arch/h200"')),
        "toml arch gb10 for tcgen05 builder": _toml(V1.replace("b200", "gb10")),
        "toml unknown builder": _toml('builder = "hgemm_v99"\n'),
        "toml unknown top-level field": _toml(V1 + 'fz_extra = 1\n'),
        "toml unknown config field": _toml(V1 + 'blk_k = 64\n'),
        "toml runs = 0": _toml(V1 + "[explore]\nruns = 0\n"),
        "toml not UTF-8": _toml(V1.encode() + b'# \xff\xfe\n'),
        "toml invalid": _toml(V1 + "K = \n"),
        "toml truncated": _toml(V1[: V1.index("[config]") + 4]),
        "toml K = 2^40": _toml(V2 + "K = 1099511627776\n", expect="any"),
        "toml N = 10^9": _toml('builder = "hgemm_v3"\n[config]\nN = 1000000000\n', expect="any"),
        "toml PIPE_DEPTH = 2^63-1": _toml('builder = "hgemm_v5"\n[config]\nPIPE_DEPTH = 9223372036854775807\n', expect="any"),
        "toml 10^6 CTAs": _toml(V6 + "M = 131072\nN = 131072\nsm_count = 1000000\n", expect="any"),
        "toml explore.runs = 10^6": _toml(V1 + "[explore]\nruns = 1000000\n", flags=(), expect="any"),
        # schedule JSON
        # init with count 0 is expressible PTX the ISA leaves undefined: a finding (status 1), not bad input
        "json barrier count 0": _sched("v4_b200", lambda d: d["barriers"][0].update(count=0), expect="any"),
        "json barrier count -1": _sched("v4_b200", lambda d: d["barriers"][0].update(count=-1)),
        "json barrier count 1.5": _sched("v4_b200", lambda d: d["barriers"][0].update(count=1.5)),
        "json buffer bytes -1": _sched("v4_b200", lambda d: d["buffers"][0].update(bytes=-1)),
        "json buffer stages 0": _sched("v4_b200", lambda d: d["buffers"][0].update(stages=0)),
        "json zero warps": _sched("v4_b200", lambda d: d["roles"][0].update(warps=0)),
        "json op bytes negative": _sched("v4_b200", _ops("tma_load", bytes=-16384)),
        "json wgmma + TMA on gb10": _sched("v4_h200", lambda d: d.update(arch="gb10")),
        "json tcgen05 on h200": _sched("v1_b200", lambda d: d.update(arch="h200")),
        "json tcgen05 on gb10": _sched("v1_b200", lambda d: d.update(arch="gb10")),
        "json unknown op field": _sched("v1_b200", lambda d: d["ctas"][0]["roles"][0][0].update(fz_field=1)),
        "json unknown op kind": _sched("v1_b200", lambda d: d["ctas"][0]["roles"][0][0].update(op="nop")),
        "json undeclared barrier": _sched("v4_b200", _ops("wait", first=True, barrier="nope")),
        "json stage out of range": _sched("v4_b200", _ops("tma_load", key="dst", first=True, stage=5)),
        "json unknown top-level field": _sched("v1_b200", lambda d: d.update(fz_extra=1)),
        "json top level is a list": _sched("v1_b200", lambda d: [d]),
        "json truncated": _sched("v1_b200", lambda d: json.dumps(d).encode()[:200]),
        "json schema true": _sched("v1_b200", lambda d: d.update(protosim_schedule=True)),
        "json arch is a path": _sched("v1_b200", lambda d: d.update(arch="../arch/b200")),
        "json barrier count 2^40": _sched("v4_b200", lambda d: d["barriers"][1].update(count=2**40), expect="any"),
        "json 300 CTAs": _sched("v6_b200", lambda d: d.update(ctas=[dict(d["ctas"][0], index=i) for i in range(300)]) or None,
                                expect="any"),
        # TTGIR + launch JSON
        "ttgir loop step 0": _ttgir("k256_s2.sm80", _step(0), consts={"%fz_step": 0}),
        "ttgir loop step -1": _ttgir("k256_s2.sm80", _step(-1), consts={"%fz_step": -1}),
        "ttgir num-warps 0": _ttgir("k256_s2.sm80", lambda t: t.replace('"ttg.num-warps" = 4', '"ttg.num-warps" = 0')),
        "ttgir truncated": _ttgir("k256_s2.sm80", lambda t: "\n".join(t.split("\n")[:120])),
        "ttgir wgmma for gb10": _ttgir("k256_s3.sm90", lambda t: t.replace('"cuda:90"', '"cuda:121"')),
        "ttgir TMA for gb10": _ttgir("tma_k256_s3.sm90", lambda t: t.replace('"cuda:90"', '"cuda:80"')),
        "ttgir not UTF-8": _ttgir("k256_s2.sm80", lambda t: t.encode().replace(b"tt.func", b"tt.func\xff", 1)),
        "launch K negative": _ttgir("k256_s2.sm80", launch_edit=lambda d: {**d, "K": -32}),
        "launch K string": _ttgir("k256_s2.sm80", launch_edit=lambda d: {**d, "K": "256"}),
        "launch ctas 0": _ttgir("k256_s2.sm80", launch_edit=lambda d: {**d, "ctas": 0}),
        "launch top level list": _ttgir("k256_s2.sm80", launch_edit=lambda d: [d]),
        "launch K = 2^40": _ttgir("k256_s2.sm80", launch_edit=lambda d: {**d, "K": 2**40}, expect="any"),
        "launch ctas = 10^6": _ttgir("k256_s2.sm80", launch_edit=lambda d: {**d, "ctas": 10**6}, expect="any"),
        # CLI flags and paths
        "cli --runs 0": _cli(["run", "in.toml", "--runs", "0"], {"in.toml": V1.encode()}, usage=True),
        "cli --runs -1": _cli(["run", "in.toml", "--runs", "-1"], {"in.toml": V1.encode()}, usage=True),
        "cli --runs 10^6": _cli(["run", "in.toml", "--runs", "1000000"], {"in.toml": V1.encode()}, expect="any", usage=True),
        "cli --max-stall -1": _cli(["run", "in.toml", "--max-stall", "-1"], {"in.toml": V1.encode()}, usage=True),
        "cli missing input": _cli(["run", "missing.toml"], names=("missing.toml",)),
        "cli input is a directory": _cli(["run", "adir.toml"], setup=[("mkdir", "adir.toml")], names=("adir.toml",)),
        "cli profile path": _cli(["profile", "../arch/h200"]),
        "cli profile unknown": _cli(["profile", "a100"]),
        "cli trace -o directory": _cli(["trace", "in.toml", "-o", "outdir"], {"in.toml": V1.encode()},
                                       setup=[("mkdir", "outdir")], names=("outdir",)),
        "cli trace -o under a file": _cli(["trace", "in.toml", "-o", "afile/x.json"], {"in.toml": V1.encode(), "afile": b"x"},
                                          names=("afile",)),
        "cli report -o /proc": _cli(["report", "in.toml", "-o", "/proc/protosim-fuzz-nonexistent/x.html"],
                                    {"in.toml": V1.encode()}, names=("/proc",)),
        "cli plot -o /dev/full": _cli(["plot", "in.toml", "-o", "/dev/full"], {"in.toml": V1.encode()}, names=("/dev/full",)),
        "cli crosscheck plan -o directory": _cli(["crosscheck", "plan", "-n", "1", "--runs", "1", "-o", "outdir"],
                                                 setup=[("mkdir", "outdir")], names=("outdir",)),
        "cli crosscheck report --json directory": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1", "--json", "outdir"],
                                                       {"r.jsonl": (rec + "\n").encode()}, setup=[("mkdir", "outdir")],
                                                       names=("outdir",)),
        "cli crosscheck plan -n 10^6": _cli(["crosscheck", "plan", "-n", "1000000", "--runs", "1", "-o", "p.json"],
                                            expect="any", usage=True),
        "cli demo --dir with a broken scenario": _cli(["demo", "--dir", "scn", "--runs", "1"],
                                                      {"scn/a.toml": V1.encode(), "scn/b.toml": (V2 + "K = -1\n").encode()},
                                                      names=("b.toml",)),
        "cli input is a FIFO": _cli(["run", "fifo.toml"], setup=[("fifo", "fifo.toml")], names=("fifo.toml",)),
        "cli plot -o under a file": _cli(["plot", "in.toml", "-o", "afile/x.png"], {"in.toml": V1.encode(), "afile": b"x"},
                                         names=("afile",)),
        "cli profile name too long": _cli(["profile", "x" * 300]),
        "cli crosscheck plan -n 1": _cli(["crosscheck", "plan", "-n", "1", "--runs", "1", "-o", "p.json"], expect="valid"),
        "cli run --runs 10^30": _cli(["run", "in.toml", "--runs", "1" + "0" * 30], {"in.toml": V1.encode()}, expect="any",
                                     usage=True),
        # the nominal-only commands follow the nominal replay's findings (no [expect]: 1 for a bug)
        "explain of a protocol bug exits 1": FuzzCase(path="cli", argv=["explain", "in.toml"],
                                                      files={"in.toml": (V2 + "K = 128\nskip_mma_phase_flip = true\n").encode()},
                                                      expect="valid", expect_declared=False, nominal_ok=False),
        "trace of a clean schedule exits 0": FuzzCase(path="cli", argv=["trace", "in.toml", "-o", "t.json"],
                                                      files={"in.toml": V1.encode()}, expect="valid", expect_declared=False,
                                                      nominal_ok=True, outputs=[("t.json", "json")]),
        # scenario TOML shapes seen in the before-census
        "toml builder is a table": _toml("[builder]\n"),
        "toml explore is a list": _toml("explore = []\n" + V1),
        "toml explore is a bool": _toml("explore = true\n" + V1),
        "toml name is an integer": _toml("name = 1\n" + V1),
        # TTGIR shapes seen in the before-census
        "ttgir async_wait without num": _ttgir("k256_s2.sm80", lambda t: t.replace("{num = 0 : i32}", "", 1), expect="any"),
        "ttgir loop upper bound 2^40": _ttgir("k256_s2.sm80", launch_edit=lambda d: {**d, "K": 2**40}, expect="any"),
        "ttgir truncated inside the loop": _ttgir("k256_s2.sm121", lambda t: "\n".join(t.split("\n")[:101])),
        "ttgir num-warps 4.5": _ttgir("seed_64x32x64_s2.sm80", lambda t: t.replace('"ttg.num-warps" = 4', '"ttg.num-warps" = 4.5')),
        "ttgir memdesc of 0 stages": _ttgir("k256_s3.sm80", lambda t: t.replace("!ttg.memdesc<2x", "!ttg.memdesc<0x", 1),
                                            expect="any"),
        "launch JSON invalid": _ttgir("k256_s2.sm80", launch_edit=lambda d: None, raw_launch=b'{"M": 64,'),
        "launch JSON not UTF-8": _ttgir("k256_s2.sm80", launch_edit=lambda d: None, raw_launch=b'{"M": \xff}'),
        "launch value a list": _ttgir("k256_s2.sm80", launch_edit=lambda d: {**d, "K": [256]}),
        # crosscheck records
        "records wrong_tiles not pairs": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"],
                                              {"r.jsonl": _rec(rec, outcome="wrong", wrong_tiles=[[0]])}, names=("r.jsonl",)),
        "records wrong_tiles flat": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"],
                                         {"r.jsonl": _rec(rec, outcome="wrong", wrong_tiles=[0, 0])}, names=("r.jsonl",)),
        "records kind not a string": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"], {"r.jsonl": _rec(rec, kind=3)},
                                          names=("r.jsonl",)),
        "records --plan not an object": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1", "--plan", "p.json"],
                                             {"r.jsonl": (rec + "\n").encode(), "p.json": b"1"}, names=("p.json",)),
        "records garbage line": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"], {"r.jsonl": b"not json\n"},
                                     names=("r.jsonl",)),
        "records a list": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"], {"r.jsonl": b"[1, 2]\n"},
                               names=("r.jsonl",)),
        "records not UTF-8": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"], {"r.jsonl": rec.encode() + b"\xff\n"},
                                  names=("r.jsonl",)),
        "records outcome unknown": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"],
                                        {"r.jsonl": rec.replace('"outcome": "', '"outcome": "hang').encode()}, names=("r.jsonl",)),
        "records config N string": _cli(["crosscheck", "report", "r.jsonl", "--runs", "1"],
                                        {"r.jsonl": rec.replace('"N": ', '"N": "', 1).replace(', "K"', '", "K"', 1).encode()},
                                        names=("r.jsonl",)),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_nonsense_is_refused_and_huge_is_bounded(name):
    case = CASES[name]
    if case.argv[0] == "crosscheck":
        case.mode = "subprocess"
    checked = check(case)
    assert not checked.violations, checked.report()
