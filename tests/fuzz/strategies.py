"""Hypothesis strategies for every input path of the ``protosim`` CLI.

Each strategy draws a :class:`tests.fuzz.contract.FuzzCase`: the files to create, the
argv, and what the contract expects (an oracle of :mod:`tests.fuzz.oracles` on the
*final* input decides "must refuse"; unmutated inputs with well-formed flags must be
judged).  The inputs start from the real ones and are mutated:

* :func:`scenario_toml_cases` -- ``scenarios/*.toml`` with keys dropped, duplicated,
  renamed, retyped, sizes negative / zero / huge, random builders and arch names
  (paths included), bug knobs on builders that ignore them, broken [expect] /
  [explore], truncation, non-UTF-8 bytes, invalid TOML; plus scenarios from scratch;
* :func:`schedule_json_cases` -- schedules printed by ``protosim schedule`` for seven
  small scenarios (b200 tcgen05, h200 wgmma, gb10 mma.sync, the two-role ws kernel,
  a persistent one), mutated deeply: any node replaced, ints out of range, unknown op
  kinds and fields, undeclared barriers / buffers, stage / part out of range, arch
  swapped under ops it lacks, empty lists, many CTAs, non-object top level,
  truncation;
* :func:`ttgir_cases` -- a fixture triple of ``tests/fixtures/triton`` with the TTGIR
  text mutated (truncated, lines deleted / duplicated, loop steps and bounds 0 /
  negative / huge, num-warps, target) and the launch / metadata JSON mutated;
* :func:`cli_cases` -- argv over every subcommand with random, negative, huge and
  malformed numbers, bad input paths and bad output paths;
* :func:`crosscheck_cases` -- ``crosscheck report`` on JSON-lines records (small real
  silicon records) with garbage, partial records and wrong types.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from . import oracles as O
from .contract import REPO, FuzzCase, run_argv

SUBPROCESS_PCT = int(os.environ.get("PROTOSIM_FUZZ_SUBPROCESS_PCT", "10"))

SLOW_SCENARIOS = ("v6_full_chip_h200.toml",)
"""Left out of the mutation pool: a legitimate replay of ~90 s (the huge-size draws
cover what it would test)."""

# --------------------------------------------------------------------------- values

INTS = (-2**63, -2**31, -1000, -1, 0, 1, 2, 3, 4, 7, 16, 48, 64, 100, 127, 128, 192, 256, 1000, 4096,
        2**16, 2**20, 2**31 - 1, 2**31, 2**32, 2**40, 10**9, 2**62, 2**63 - 1)
HUGE = (2**20, 2**30, 2**40, 10**9, 2**62, 2**63 - 1)
STRINGS = ("", " ", "x", "b200", "h200", "gb10", "B200", "H200", "sm_90a", "cuda:90", "../arch/h200", "/etc/passwd",
           "protosim/arch/h200.toml", "h200.toml", "./h200", "~/h200", "C:\\h200", "h200\x00", "h200 ", "one", "each_warp",
           "all", "tma", "mma", "smem", "tmem", "cold", "inputs", "hgemm_v1", "hgemm_v99", "triton_pipeline",
           "correct", "wrong", "deadlock", "fault", "hang", "early_return", "1", "-1", "1.5", "true", "null",
           "é", "\u202e", "𝔘𝔫𝔦", "x" * 300, "{}", "[]", "%", "'", '"', "\\", "\n", "\t", "\x7f")
ARCH_VALUES = ("b200", "h200", "gb10", "B200", "H200", "gb10 ", "", "sm_100", "a100", "../arch/h200", "/etc/passwd",
               "protosim/arch/b200.toml", "h200.toml", "..", ".", "/", "/dev/null", "x" * 200, "h\x00200")
BUILDER_VALUES = O.BUILDER_NAMES + ("hgemm_v0", "hgemm_v77", "HGEMM_V1", "hgemm", "", "seed_gemm", "../builders",
                                    "ttgir", "(schedule json)", "hgemm_v1 ")

scalar_values = st.one_of(
    st.sampled_from(INTS),
    st.integers(),
    st.sampled_from(STRINGS),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from((0.0, -1.0, 1.5, 64.0, 1e300)),
)
toml_values = st.recursive(scalar_values, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6), c, max_size=3), max_leaves=5)
json_values = st.recursive(st.one_of(scalar_values, st.none()), lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), c, max_size=3), max_leaves=5)
bogus_keys = st.one_of(st.sampled_from(("fz_unknown", "Name", "builders", "cofig", "K ", "k", "blk_k", "pipe_depth",
                                        "arches", "barrier", "cta", "Runs", "op ", "")),
                       st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8).map(lambda s: "fz_" + s))


def chance(draw, percent: int) -> bool:
    """True with about this probability.  The rare branch is the *high* indices, so the
    simplest examples (Hypothesis starts from, and shrinks towards, index 0) avoid it."""
    return draw(st.sampled_from(range(100))) >= 100 - percent


def _mode(draw) -> str:
    return "subprocess" if chance(draw, SUBPROCESS_PCT) else ""


# --------------------------------------------------------------------------- text-level mutations

GARBAGE_LINES = ("[[config]]", "= 3", "config = 3", "[config", "K = ", "K = 0x", "K = 1_000_000", '"K" = 64',
                 "K = 64 # comment", "\x00", 'builder = "hgemm_v1"', "[config]", "[expect]", "}", "{", "%", "...",
                 "K = 64\nK = 64", "a.b.c = 1", "x = [1, 2", "y = \"unterminated", "z = 1979-05-27T07:32:00Z")
BAD_BYTES = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80abc", b"\xf8\x88\x80\x80\x80", b"\x00")


@st.composite
def text_mutation(draw, data: bytes, garbage=GARBAGE_LINES) -> tuple[bytes, str]:
    kind = draw(st.sampled_from(("truncate", "bad_bytes", "dup_line", "del_line", "garbage_line", "crlf", "bom", "empty")))
    lines = data.split(b"\n")
    if kind == "truncate":
        n = draw(st.sampled_from(range(max(len(data) - 1, 0) + 1)))
        return data[:n], f"truncated to {n} bytes"
    if kind == "bad_bytes":
        pos = draw(st.sampled_from(range(len(data) + 1)))
        b = draw(st.sampled_from(BAD_BYTES))
        return data[:pos] + b + data[pos:], f"bytes {b!r} inserted at {pos}"
    if kind == "empty":
        return b"", "emptied"
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n"), "CRLF line ends"
    if kind == "bom":
        return b"\xef\xbb\xbf" + data, "UTF-8 BOM prefixed"
    i = draw(st.sampled_from(range(max(len(lines) - 1, 0) + 1)))
    if kind == "dup_line":
        return b"\n".join(lines[: i + 1] + lines[i:]), f"line {i + 1} duplicated"
    if kind == "del_line":
        return b"\n".join(lines[:i] + lines[i + 1:]), f"line {i + 1} deleted"
    g = draw(st.sampled_from(garbage)).encode()
    return b"\n".join(lines[:i] + [g] + lines[i:]), f"line {g!r} inserted at {i + 1}"


# --------------------------------------------------------------------------- scenario TOML


@functools.cache
def base_scenarios() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((REPO / "scenarios").glob("*.toml")) if p.name not in SLOW_SCENARIOS}


@st.composite
def config_from_scratch(draw, builder: str) -> dict[str, Any]:
    fields = O.PIPE_FIELDS if builder == "triton_pipeline" else O.GEMM_FIELDS
    keys = draw(st.lists(st.sampled_from(sorted(fields)), max_size=6, unique=True))
    conf: dict[str, Any] = {}
    for k in keys:
        typ, default = fields[k]
        if typ.startswith("int"):
            conf[k] = draw(st.one_of(st.sampled_from(INTS), st.sampled_from((64, 128, 256, 512, 1, 2, 3, 4))))
        elif typ == "bool":
            conf[k] = draw(st.booleans())
        elif k == "arch":
            conf[k] = draw(st.sampled_from(ARCH_VALUES[:3] * 3 + ARCH_VALUES))
        else:
            conf[k] = draw(st.sampled_from(tuple(O.GEMM_CHOICES.get(k, ())) + ("", "x")))
    return conf


def _tables(doc: dict[str, Any]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for k, v in doc.items():
        if isinstance(v, dict):
            out.append((k,))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


SIZE_KEYS = ("M", "N", "K", "PIPE_DEPTH", "sm_count", "BLK_N", "BLK_K", "l2_group_size", "num_stages", "num_warps",
             "BLOCK_K", "BLOCK_M")
KNOB_VALUES = {"reset_phase_per_tile": (True,), "sm_count": (1, 2, 132), "l2_group_size": (1, 4, 16),
               "tma_issuer": ("each_warp",), "expect_tx_delta": (-16, 16, -16384, 1024), "skip_store_wait": (True,),
               "producer_delay_ns": (2000, 20000), "PIPE_DEPTH": (1, 3, 4), "wait_parity_flip": ("tma", "mma"),
               "skip_mma_phase_flip": (True,), "consumer_delay_ns": (2000,), "lag_ns": (2000,), "lag_warp": (0, 3),
               "alias_stages": (True,), "wait_delta": (1, 2), "pendings_delta": (1,), "l2_at_launch": ("inputs",)}


@st.composite
def toml_mutation(draw, doc: dict[str, Any]) -> tuple[dict[str, Any], str, set[str]]:
    """One structural mutation of a scenario document: (new doc, description, keys touched)."""
    doc = copy.deepcopy(doc)
    kind = draw(st.sampled_from(("set", "set", "size", "size", "huge", "knob", "knob", "knob", "drop", "rename", "builder",
                                 "arch", "arch", "unknown", "explore", "expect", "table_type", "drop_table", "no_expect")))
    conf = doc.get("config") if isinstance(doc.get("config"), dict) else None
    if kind == "set":
        table = draw(st.sampled_from(_tables(doc)))
        target = _get(doc, table)
        known = sorted(set(target) | (set(O.GEMM_FIELDS) | set(O.PIPE_FIELDS) if table == ("config",) else set()))
        key = draw(st.sampled_from(known)) if known else draw(bogus_keys)
        typ = (O.GEMM_FIELDS.get(key) or O.PIPE_FIELDS.get(key) or ("any", None))[0] if table == ("config",) else "any"
        plausible = {"int": st.sampled_from((1, 2, 3, 4, 64, 128, 192, 256, 512, 1024)), "int?": st.sampled_from((1, 2, 8)),
                     "bool": st.booleans(), "str": st.sampled_from(("b200", "h200", "gb10", "one", "each_warp", "tma", "mma",
                                                                   "", "cold", "inputs"))}.get(typ)
        value = draw(plausible) if plausible is not None and draw(st.booleans()) else draw(toml_values)
        target[key] = value
        return doc, f"{'.'.join(table + (key,))} = {O._short(value)}", {key}
    if kind in ("size", "huge"):
        if conf is None:
            conf = doc["config"] = {}
        key = draw(st.sampled_from(SIZE_KEYS))
        value = draw(st.sampled_from(HUGE if kind == "huge" else (0, -1, -64, -2**63, 1, 2, 3, 5, 63, 65, 96, 1.0, 64.5,
                                                                    "64", True, 2**31, 2**40)))
        conf[key] = value
        return doc, f"config.{key} = {O._short(value)}", {key}
    if kind == "knob":
        if conf is None:
            conf = doc["config"] = {}
        key = draw(st.sampled_from(sorted(KNOB_VALUES)))
        conf[key] = draw(st.sampled_from(KNOB_VALUES[key]))
        return doc, f"config.{key} = {conf[key]!r}", {key}
    if kind == "drop":
        table = draw(st.sampled_from(_tables(doc)))
        target = _get(doc, table)
        if not target:
            return doc, "no-op drop", set()
        key = draw(st.sampled_from(sorted(target)))
        del target[key]
        return doc, f"dropped {'.'.join(table + (key,))}", {key}
    if kind == "rename":
        table = draw(st.sampled_from(_tables(doc)))
        target = _get(doc, table)
        if not target:
            return doc, "no-op rename", set()
        key = draw(st.sampled_from(sorted(target)))
        new = draw(st.one_of(bogus_keys, st.just(key.lower()), st.just(key.upper()), st.sampled_from(sorted(O.GEMM_FIELDS))))
        target[new] = target.pop(key)
        return doc, f"renamed {'.'.join(table + (key,))} -> {new!r}", {key, new}
    if kind == "builder":
        doc["builder"] = draw(st.one_of(st.sampled_from(BUILDER_VALUES), toml_values))
        return doc, f"builder = {O._short(doc['builder'])}", {"builder"}
    if kind == "arch":
        if conf is None:
            conf = doc["config"] = {}
        conf["arch"] = draw(st.sampled_from(ARCH_VALUES))
        return doc, f"config.arch = {conf['arch']!r}", {"arch"}
    if kind == "unknown":
        table = draw(st.sampled_from(_tables(doc)))
        key = draw(bogus_keys)
        _get(doc, table)[key] = draw(toml_values)
        return doc, f"unknown key {'.'.join(table + (key,))!r}", {key}
    if kind == "explore":
        ex = doc.setdefault("explore", {}) if isinstance(doc.get("explore", {}), dict) else {}
        doc["explore"] = ex
        key = draw(st.sampled_from(("runs", "max_stall", "seed", "runs", "fz_budget")))
        ex[key] = draw(st.sampled_from((0, -1, 1, 2, 3, 10**6, 2**63 - 1, "3", 2.5, True, 10**12, [])))
        return doc, f"explore.{key} = {ex[key]!r}", {key}
    if kind == "expect":
        ex = doc.setdefault("expect", {}) if isinstance(doc.get("expect", {}), dict) else {}
        doc["expect"] = ex
        key = draw(st.sampled_from(("nominal", "findings", "ok", "outcomes", "may", "fz_x")))
        ex[key] = draw(st.sampled_from(("correct", "wrong", "hang", 1, True, False, [], ["bogus"], ["early_return"],
                                        ["correct", "deadlock"], "early_return", [1], {"a": 1})))
        return doc, f"expect.{key} = {ex[key]!r}", {key}
    if kind == "table_type":
        key = draw(st.sampled_from(("config", "expect", "explore")))
        doc[key] = draw(st.sampled_from((1, "x", [1, 2], True, [])))
        return doc, f"{key} = {doc[key]!r} (not a table)", {key}
    if kind == "no_expect":
        doc.pop("expect", None)
        return doc, "[expect] removed", set()
    tables = [k for k, v in doc.items() if isinstance(v, dict)]
    if not tables:
        return doc, "no-op drop_table", set()
    key = draw(st.sampled_from(sorted(tables)))
    del doc[key]
    return doc, f"dropped [{key}]", {key}


def _doc_keys(doc: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(str(k))
            out |= _doc_keys(v)
    return out


@st.composite
def scenario_toml_cases(draw) -> FuzzCase:
    bases = base_scenarios()
    mutations: list[str] = []
    touched: set[str] = set()
    if chance(draw, 10):
        builder = draw(st.sampled_from(O.BUILDER_NAMES))
        doc: dict[str, Any] = {"builder": builder, "config": draw(config_from_scratch(builder))}
        base = "(from scratch)"
        mutations.append("from scratch")
        original = None
    else:
        base = draw(st.sampled_from(sorted(bases)))
        original = bases[base]
        doc = tomllib.loads(original.decode())
    for _ in range(draw(st.sampled_from((1, 1, 1, 1, 1, 2, 2, 3, 0)))):
        doc, desc, keys = draw(toml_mutation(doc))
        mutations.append(desc)
        touched |= keys
    data = O.toml_dumps(doc).encode() if mutations else original
    if chance(draw, 16):
        data, desc = draw(text_mutation(data))
        mutations.append(desc)
    assert data is not None
    judgement, final = O.judge_scenario_bytes(data)
    declared = O.expect_declared(final.get("expect")) if isinstance(final, dict) else None
    cmd = draw(st.sampled_from(("run", "run", "run", "run", "run", "explain", "schedule", "trace", "report", "plot", "demo")))
    name = "fz_scn.toml"
    flags: list[str] = []
    runs = draw(st.sampled_from(("1", "2", "2", "3", None)))
    if cmd in ("run", "demo"):
        if runs:
            flags += ["--runs", runs]
        if draw(st.booleans()):
            flags += ["--max-stall", str(draw(st.sampled_from((0, 500, 2000, 4000))))]
        if draw(st.booleans()):
            flags += ["--seed", str(draw(st.integers(0, 5)))]
    json_out = cmd == "run" and draw(st.booleans())
    if json_out:
        flags.append("--json")
    outputs: list[tuple[str, str]] = []
    files = {name: data}
    if cmd == "demo":
        files = {f"scn/{name}": data}
        argv = ["demo", "--dir", "scn", *flags]
    elif cmd in ("trace", "report", "plot"):
        out = {"trace": ("fz_out.json", "json"), "report": ("fz_out.html", "html"), "plot": ("fz_out.png", "png")}[cmd]
        outputs.append(out)
        argv = [cmd, name, "-o", out[0]]
    else:
        argv = [cmd, name, *flags]
    expect = judgement.verdict
    if not mutations and judgement.verdict == "any":
        expect = "valid"
    fields = None
    if isinstance(final, dict):
        fields = tuple(sorted(_doc_keys(final) | touched | {"toml", "file", "config", "expect", "explore", "builder",
                                                             "name", "description", "UTF-8", "utf-8", "TOML"}))
    return FuzzCase(path="scenario_toml", argv=argv, files=files, expect=expect, reasons=judgement.reasons,
                    problem_files=(name,), field_names=fields, json_stdout=json_out or cmd == "schedule", run_json=json_out,
                    expect_declared=declared, statuses=(0, 2) if cmd == "schedule" else (0, 1, 2), outputs=outputs,
                    roundtrip=cmd == "schedule" and draw(st.booleans()), mode=_mode(draw), mutations=mutations, base=base,
                    probe=name if cmd != "demo" else "")


# --------------------------------------------------------------------------- schedule JSON

SMALL_SCENARIOS = {
    "v1_b200": 'builder = "hgemm_v1"\n[config]\narch = "b200"\n',
    "v2_b200_bug": 'builder = "hgemm_v2"\n[config]\narch = "b200"\nK = 128\nskip_mma_phase_flip = true\n',
    "v4_b200": 'builder = "hgemm_v4"\n[config]\narch = "b200"\nK = 128\n',
    "v4_h200": 'builder = "hgemm_v4"\n[config]\narch = "h200"\nK = 128\n',
    "v6_b200": 'builder = "hgemm_v6"\n[config]\narch = "b200"\nM = 256\nK = 128\nsm_count = 1\n',
    "ws_h200": 'builder = "hgemm_ws"\n[config]\narch = "h200"\nM = 256\nK = 128\nsm_count = 1\n',
    "triton_gb10": 'builder = "triton_pipeline"\n[config]\narch = "gb10"\nK = 64\n',
}
"""Small scenarios without [expect]; their schedules (printed by ``protosim schedule``)
are the schedule-JSON bases, covering every op family on the arch that has it."""


@functools.cache
def base_schedules() -> dict[str, bytes]:
    """``protosim schedule`` of each small scenario, by the code under test."""
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory(prefix="protosim-fuzz-bases-") as d:
        for name, text in SMALL_SCENARIOS.items():
            p = Path(d) / f"{name}.toml"
            p.write_text(text)
            r = run_argv(["schedule", p.name], Path(d), "fork", 60)
            try:
                doc = json.loads(r.stdout)
            except ValueError:
                continue
            if isinstance(doc, dict) and doc.get("protosim_schedule") == 1:
                out[name] = json.dumps(doc, indent=1).encode()
    if not out:
        raise RuntimeError("protosim schedule printed no schedule for any small scenario; cannot fuzz schedule JSON")
    return out


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _ops(doc: dict[str, Any]) -> list[tuple]:
    out = []
    for ci, c in enumerate(doc.get("ctas", []) if isinstance(doc.get("ctas"), list) else []):
        if isinstance(c, dict) and isinstance(c.get("roles"), list):
            for ri, ops in enumerate(c["roles"]):
                if isinstance(ops, list):
                    out += [("ctas", ci, "roles", ri, oi) for oi, op in enumerate(ops) if isinstance(op, dict)]
    return out


@st.composite
def schedule_mutation(draw, doc: Any) -> tuple[Any, str]:
    doc = copy.deepcopy(doc)
    kinds = ("replace", "int", "int", "int", "delete", "add_key", "op_kind", "ref", "range", "arch", "arch", "empty",
             "dup", "dup_ctas", "top", "del_op", "swap_ops", "arch_op")
    kind = draw(st.sampled_from(kinds))
    if not isinstance(doc, dict):
        kind = "replace"
    paths = _paths(doc)
    if kind == "replace":
        p = draw(st.sampled_from(paths))
        v = draw(json_values)
        return _set(doc, p, v), f"{_ps(p)} = {O._short(v)}"
    if kind == "int":
        ints = [p for p in paths if O.is_int(_get(doc, p))]
        if not ints:
            return doc, "no-op int"
        p = draw(st.sampled_from(ints))
        v = draw(st.sampled_from(INTS + (1.0, 2.5, "1", True, None)))
        return _set(doc, p, v), f"{_ps(p)} = {O._short(v)}"
    if kind == "delete":
        members = [p for p in paths if p and isinstance(_get(doc, p[:-1]), (dict, list))]
        if not members:
            return doc, "no-op delete"
        p = draw(st.sampled_from(members))
        del _get(doc, p[:-1])[p[-1]]
        return doc, f"deleted {_ps(p)}"
    if kind == "add_key":
        objs = [p for p in paths if isinstance(_get(doc, p), dict)]
        p = draw(st.sampled_from(objs))
        k = draw(bogus_keys)
        _get(doc, p)[k] = draw(json_values)
        return doc, f"{_ps(p + (k,))} added"
    ops = _ops(doc)
    if kind in ("op_kind", "ref", "range", "del_op", "swap_ops", "arch_op") and not ops:
        return doc, f"no-op {kind}"
    if kind == "op_kind":
        p = draw(st.sampled_from(ops))
        new = draw(st.one_of(st.sampled_from(sorted(O.OP_SCHEMA)), st.sampled_from(("", "Wait", "mma_async", "nop", 3))))
        _get(doc, p)["op"] = new
        return doc, f"{_ps(p)}.op = {new!r}"
    if kind == "ref":
        with_ref = [p for p in ops if "barrier" in _get(doc, p)] + \
                   [p + (k,) for p in ops for k in ("dst", "src") if isinstance(_get(doc, p).get(k), dict)]
        if not with_ref:
            return doc, "no-op ref"
        p = draw(st.sampled_from(with_ref))
        name = draw(st.sampled_from(("nope", "mma_bar ", "tma_bar[9]", "", "A[0]", "acc", "D", "MMA_BAR")))
        node = _get(doc, p)
        node["barrier" if "barrier" in node else "buffer"] = name
        return doc, f"{_ps(p)} refers to {name!r}"
    if kind == "range":
        acc = [p + (k,) for p in ops for k in ("dst", "src") if isinstance(_get(doc, p).get(k), dict)]
        acc += [p + (k, i) for p in ops for k in ("reads", "writes") if isinstance(_get(doc, p).get(k), list)
                for i in range(len(_get(doc, p)[k]))]
        if not acc:
            return doc, "no-op range"
        p = draw(st.sampled_from(acc))
        key = draw(st.sampled_from(("stage", "part")))
        v = draw(st.sampled_from((-2, -1, 1, 2, 3, 4, 7, 2**31, 10**9)))
        if isinstance(_get(doc, p), dict):
            _get(doc, p)[key] = v
        return doc, f"{_ps(p)}.{key} = {v}"
    if kind == "arch":
        doc["arch"] = draw(st.sampled_from(ARCH_VALUES))
        return doc, f"arch = {doc['arch']!r}"
    if kind == "arch_op":
        p = draw(st.sampled_from(ops))
        new = draw(st.sampled_from(O.WGMMA_OPS + O.TMA_OPS + O.TCGEN05_OPS))
        template = {"wgmma": {"m": 128, "n": 128, "k_elems": 64}, "mma": {"m": 128, "n": 128, "k_elems": 64},
                    "tma_load": None, "tma_store": None, "tmem_alloc": {"columns": 128}, "tmem_dealloc": {"columns": 128},
                    "tmem_load": None, "mma_commit": None}.get(new, {})
        if template is None:
            return doc, "no-op arch_op"
        _get(doc, p[:-1]).insert(p[-1], {"op": new, **template})
        return doc, f"{new} op inserted at {_ps(p)}"
    if kind == "empty":
        lists = [p for p in paths if isinstance(_get(doc, p), list)]
        p = draw(st.sampled_from(lists))
        _set(doc, p, [])
        return doc, f"{_ps(p)} = []"
    if kind == "dup":
        lists = [p for p in paths if isinstance(_get(doc, p), list) and _get(doc, p)]
        if not lists:
            return doc, "no-op dup"
        p = draw(st.sampled_from(lists))
        lst = _get(doc, p)
        i = draw(st.integers(0, len(lst) - 1))
        lst.insert(i, copy.deepcopy(lst[i]))
        return doc, f"{_ps(p + (i,))} duplicated"
    if kind == "dup_ctas":
        if not isinstance(doc.get("ctas"), list) or not doc["ctas"]:
            return doc, "no-op dup_ctas"
        k = draw(st.sampled_from((2, 8, 64, 300)))
        renumber = draw(st.booleans())
        ctas = [copy.deepcopy(doc["ctas"][0]) for _ in range(k)]
        if renumber:
            for i, c in enumerate(ctas):
                if isinstance(c, dict):
                    c["index"] = i
        doc["ctas"] = ctas
        return doc, f"{k} copies of CTA 0{' (renumbered)' if renumber else ' (same index)'}"
    if kind == "top":
        v = draw(st.sampled_from(([], [doc], "schedule", 1, None, True)))
        return v, f"top level = {O._short(v, 30)}"
    if kind == "del_op":
        p = draw(st.sampled_from(ops))
        del _get(doc, p[:-1])[p[-1]]
        return doc, f"deleted op {_ps(p)}"
    p = draw(st.sampled_from(ops))
    lst = _get(doc, p[:-1])
    j = draw(st.integers(0, len(lst) - 1))
    lst[p[-1]], lst[j] = lst[j], lst[p[-1]]
    return doc, f"swapped ops {_ps(p)} and #{j}"


def _ps(p: tuple) -> str:
    return "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in p).lstrip(".") or "(top)"


@st.composite
def schedule_json_cases(draw) -> FuzzCase:
    bases = base_schedules()
    base = draw(st.sampled_from(sorted(bases)))
    original = bases[base]
    doc: Any = json.loads(original)
    mutations = []
    for _ in range(draw(st.sampled_from((1, 1, 1, 1, 2, 2, 3, 0)))):
        doc, desc = draw(schedule_mutation(doc))
        mutations.append(desc)
    data = json.dumps(doc, indent=draw(st.sampled_from((None, 1)))).encode() if mutations else original
    if chance(draw, 14):
        data, desc = draw(text_mutation(data, garbage=("{", "}", "]", ",", "null", '"x": 1', "\x00", "NaN", "//")))
        mutations.append(desc)
    judgement, final = O.judge_schedule_bytes(data)
    declared = O.expect_declared(final.get("expect")) if isinstance(final, dict) else None
    cmd = draw(st.sampled_from(("run", "run", "run", "run", "explain", "trace", "report", "schedule")))
    name = "fz_sched.json"
    flags: list[str] = []
    json_out = False
    outputs = []
    if cmd == "run":
        runs = draw(st.sampled_from(("1", "2", "3", None)))
        if runs:
            flags += ["--runs", runs]
        json_out = draw(st.booleans())
        if json_out:
            flags.append("--json")
        argv = ["run", name, *flags]
    elif cmd in ("trace", "report"):
        out = ("fz_out.json", "json") if cmd == "trace" else ("fz_out.html", "html")
        outputs.append(out)
        argv = [cmd, name, "-o", out[0]]
    else:
        argv = [cmd, name]
    expect = judgement.verdict
    if not mutations:
        expect = "valid"
    return FuzzCase(path="schedule_json", argv=argv, files={name: data}, expect=expect, reasons=judgement.reasons,
                    problem_files=(name,), json_stdout=json_out or cmd == "schedule", run_json=json_out,
                    expect_declared=declared, statuses=(0, 2) if cmd == "schedule" else (0, 1, 2), outputs=outputs,
                    mode=_mode(draw), mutations=mutations, base=base, probe=name)


# --------------------------------------------------------------------------- TTGIR


@functools.cache
def base_ttgir() -> dict[str, tuple[bytes, bytes | None, bytes | None]]:
    out = {}
    for p in sorted((REPO / "tests" / "fixtures" / "triton").glob("*.ttgir")):
        launch = p.with_suffix(".launch.json")
        meta = p.with_suffix(".json")
        out[p.stem] = (p.read_bytes(), launch.read_bytes() if launch.exists() else None,
                       meta.read_bytes() if meta.exists() else None)
    return out


_FOR = re.compile(r"scf\.for\s+(%[\w.]+)\s*=\s*(%[\w.]+)\s+to\s+(%[\w.]+)\s+step\s+(%[\w.]+)")


@st.composite
def ttgir_text_mutation(draw, text: str, consts: dict[str, int]) -> tuple[str, str]:
    lines = text.split("\n")
    kind = draw(st.sampled_from(("truncate", "del_line", "dup_line", "swap", "num_warps", "target", "step", "step",
                                 "ub", "lb", "const", "wait_num", "garbage", "memdesc")))
    func = next((i for i, ln in enumerate(lines) if "tt.func" in ln), 0)
    body = list(range(func + 1, len(lines)))
    if kind == "truncate":
        n = draw(st.sampled_from(range(len(lines) - 1 + 1)))
        return "\n".join(lines[:n]), f"truncated after line {n}"
    if kind in ("del_line", "dup_line", "swap", "garbage"):
        i = draw(st.sampled_from(body or [0]))
        if kind == "del_line":
            return "\n".join(lines[:i] + lines[i + 1:]), f"line {i + 1} deleted: {lines[i].strip()[:60]!r}"
        if kind == "dup_line":
            return "\n".join(lines[: i + 1] + lines[i:]), f"line {i + 1} duplicated: {lines[i].strip()[:60]!r}"
        if kind == "swap":
            j = min(i + 1, len(lines) - 1)
            lines[i], lines[j] = lines[j], lines[i]
            return "\n".join(lines), f"lines {i + 1} and {j + 1} swapped"
        g = draw(st.sampled_from(("    %x = arith.constant 1 : i32", "    scf.for", "    }", "    {", "    %1 = arith.divsi %0, %c0",
                                  "    ttg.async_wait", "    tt.return", "garbage", "    %z = arith.addi %zz, %zz : i32",
                                  "    ttg.local_load %nope : !ttg.memdesc<64x32xf16>")))
        return "\n".join(lines[:i] + [g] + lines[i:]), f"line {g.strip()!r} inserted at {i + 1}"
    if kind == "num_warps":
        v = draw(st.sampled_from(("0", "-4", "1", "2", "3", "8", "64", "2147483647", "99999999999", "x", "4.5", "")))
        return re.sub(r'("ttg\.num-warps"\s*=\s*)\d+', lambda m: m.group(1) + v, text, count=1), f"num-warps = {v!r}"
    if kind == "target":
        v = draw(st.sampled_from(("cuda:80", "cuda:90", "cuda:100", "cuda:121", "cuda:120", "cuda:x", "rocm:gfx90a",
                                  "", "cuda:", "cuda:90:extra")))
        return re.sub(r'(ttg\.target\s*=\s*")[^"]*', lambda m: m.group(1) + v, text, count=1), f"target = {v!r}"
    fors = [i for i, ln in enumerate(lines) if _FOR.search(ln)]
    if kind in ("step", "ub", "lb") and fors:
        i = draw(st.sampled_from(fors))
        m = _FOR.search(lines[i])
        if kind == "step":
            v = draw(st.sampled_from((0, 0, -1, -32, 2, 3, 2**31 - 1, -2**31)))
            name, group = "%fz_step", 4
        elif kind == "ub":
            v = draw(st.sampled_from((0, -1, 1, 2**20, 2**31 - 1, 10**9, 2**40)))
            name, group = "%fz_ub", 3
        else:
            v = draw(st.sampled_from((-1, -2**20, 2**31 - 1, 1, 5)))
            name, group = "%fz_lb", 2
        indent = re.match(r"\s*", lines[i]).group(0)
        new = lines[i][: m.start(group)] + name + lines[i][m.end(group):]
        consts[name] = v
        lines = lines[:i] + [f"{indent}{name} = arith.constant {v} : i32"] + [new] + lines[i + 1:]
        return "\n".join(lines), f"scf.for {'step' if kind == 'step' else 'upper bound' if kind == 'ub' else 'lower bound'} = {v}"
    if kind == "const":
        cs = [i for i, ln in enumerate(lines) if re.search(r"=\s*arith\.constant\s+-?\d+\s*:", ln)]
        if not cs:
            return text, "no-op const"
        i = draw(st.sampled_from(cs))
        v = draw(st.sampled_from((0, -1, 1, 2**31 - 1, 10**9, -2**31)))
        lines[i] = re.sub(r"(arith\.constant\s+)-?\d+", lambda m: m.group(1) + str(v), lines[i], count=1)
        return "\n".join(lines), f"line {i + 1}: constant -> {v}"
    if kind == "wait_num":
        v = draw(st.sampled_from(("-1", "99", "2147483647", "x", "")))
        new, n = re.subn(r"((?:num|pendings)\s*=\s*)\d+", lambda m: m.group(1) + v, text, count=1)
        return new, f"first async_wait num / pendings = {v!r}" if n else "no-op wait_num"
    if kind == "memdesc":
        v = draw(st.sampled_from(("0", "1000000", "-1", "3")))
        new, n = re.subn(r"(!ttg\.memdesc<)(\d+)x", lambda m: m.group(1) + v + "x", text, count=1)
        return new, f"first memdesc leading dim = {v}" if n else "no-op memdesc"
    return text, f"no-op {kind}"


@st.composite
def json_doc_mutation(draw, data: bytes | None, sizes: tuple[str, ...]) -> tuple[bytes | None, str]:
    kind = draw(st.sampled_from(("set", "set", "size", "delete_key", "add_key", "top", "syntax", "delete_file", "bad_bytes")))
    if data is None:
        return (b"{}" if kind != "delete_file" else None), "created as {}" if kind != "delete_file" else "no-op"
    try:
        doc = json.loads(data)
    except ValueError:
        return data, "no-op (not JSON)"
    if kind == "delete_file":
        return None, "file deleted"
    if kind == "bad_bytes":
        return data[:5] + b"\xff" + data[5:], "\\xff inserted"
    if kind == "syntax":
        n = draw(st.sampled_from(range(max(len(data) - 2, 0) + 1)))
        return data[:n], f"truncated to {n} bytes"
    if kind == "top":
        v = draw(st.sampled_from(([], [doc], "x", 1, None)))
        return json.dumps(v).encode(), f"top level = {O._short(v, 30)}"
    if not isinstance(doc, dict):
        return data, "no-op"
    if kind == "delete_key" and doc:
        k = draw(st.sampled_from(sorted(doc)))
        del doc[k]
        return json.dumps(doc).encode(), f"{k} deleted"
    if kind == "add_key":
        k = draw(bogus_keys)
        doc[k] = draw(st.sampled_from((1, 64, -1, "x")))
        return json.dumps(doc).encode(), f"{k!r} = {doc[k]!r} added"
    if kind == "size" and sizes:
        k = draw(st.sampled_from(sizes))
        doc[k] = draw(st.sampled_from((0, -1, -64, 2**20, 2**31, 2**40, 10**9, 1, 31, 33)))
        return json.dumps(doc).encode(), f"{k} = {doc[k]}"
    keys = sorted(doc) or ["fz_x"]
    k = draw(st.sampled_from(keys))
    doc[k] = draw(st.one_of(json_values, st.sampled_from((0, -1, 2**40, 64.0, "64", True, None, [64]))))
    return json.dumps(doc).encode(), f"{k} = {O._short(doc[k])}"


@st.composite
def ttgir_cases(draw) -> FuzzCase:
    bases = base_ttgir()
    base = draw(st.sampled_from(sorted(bases)))
    text_b, launch, meta = bases[base]
    mutations: list[str] = []
    consts: dict[str, int] = {}
    text = text_b.decode()
    for _ in range(draw(st.sampled_from((1, 1, 1, 2, 0)))):
        text, desc = draw(ttgir_text_mutation(text, consts))
        mutations.append(desc)
    ttgir: bytes = text.encode()
    if chance(draw, 10):
        pos = draw(st.sampled_from(range(len(ttgir) + 1)))
        b = draw(st.sampled_from(BAD_BYTES))
        ttgir = ttgir[:pos] + b + ttgir[pos:]
        mutations.append(f"bytes {b!r} inserted at {pos}")
    for _ in range(draw(st.sampled_from((0, 0, 0, 1, 1, 2)))):
        launch, desc = draw(json_doc_mutation(launch, O.LAUNCH_SIZES))
        mutations.append("launch: " + desc)
    if chance(draw, 20):
        meta, desc = draw(json_doc_mutation(meta, ("shared",)))
        mutations.append("metadata: " + desc)
    j = O.Judgement()
    O.judge_ttgir(j, ttgir, consts)
    O.judge_launch(j, launch, known=tuple(json.loads(bases[base][1] or b"{}")))
    files = {"fz_k.ttgir": ttgir}
    if launch is not None:
        files["fz_k.launch.json"] = launch
    if meta is not None:
        files["fz_k.json"] = meta
    cmd = draw(st.sampled_from(("run", "run", "run", "explain", "schedule", "trace")))
    flags: list[str] = []
    json_out = False
    outputs = []
    if cmd == "run":
        runs = draw(st.sampled_from(("1", "2", None) if not base.startswith("grid_") else ("1", "2")))
        if runs:
            flags += ["--runs", runs]
        json_out = draw(st.booleans())
        if json_out:
            flags.append("--json")
    if cmd == "trace":
        outputs.append(("fz_out.json", "json"))
        flags += ["-o", "fz_out.json"]
    expect = j.verdict
    if not mutations:
        expect = "valid"
    return FuzzCase(path="ttgir", argv=[cmd, "fz_k.ttgir", *flags], files=files, expect=expect, reasons=j.reasons,
                    problem_files=("fz_k",), json_stdout=json_out or cmd == "schedule", run_json=json_out,
                    expect_declared=False, statuses=(0, 2) if cmd == "schedule" else (0, 1, 2), outputs=outputs,
                    mode=_mode(draw), mutations=mutations, base=base, probe="fz_k.ttgir")


# --------------------------------------------------------------------------- crosscheck report records


@functools.cache
def base_records() -> tuple[dict[str, Any], ...]:
    """Small real silicon records (M*N*K <= 128*128*256, at most 4 per config and outcome)."""
    seen: dict[tuple, int] = {}
    out = []
    for p in sorted((REPO / "results" / "silicon").glob("*.jsonl")):
        for line in p.read_text().splitlines():
            try:
                r = json.loads(line)
                c = r["config"]
                small = c["M"] * c["N"] * c["K"] <= 128 * 128 * 256 and (c.get("sm_count") or 1) <= 4
            except (ValueError, KeyError, TypeError):
                continue
            key = (r.get("step"), json.dumps(c, sort_keys=True), r.get("outcome"), r.get("kind"))
            if small and seen.get(key, 0) < 2:
                seen[key] = seen.get(key, 0) + 1
                out.append(r)
    return tuple(out)


@functools.cache
def base_plan() -> bytes:
    p = REPO / "results" / "crosscheck" / "2026-11-29_seed0.plan.json"
    try:
        d = json.loads(p.read_text())
        d["predictions"] = d["predictions"][:3]
        return json.dumps(d, indent=1).encode()
    except (OSError, ValueError, KeyError, TypeError):
        return json.dumps({"seed": 0, "n": 0, "steps": ["v2"], "runs": 1, "predictions": []}).encode()


@st.composite
def record_mutation(draw, recs: list[Any]) -> tuple[list[Any], str]:
    recs = copy.deepcopy(recs)
    kind = draw(st.sampled_from(("set", "set", "config", "config", "delete", "outcome", "step", "add_key", "non_object",
                                 "tiles", "timeout", "kind")))
    if not recs:
        return recs, "no-op (no records)"
    i = draw(st.integers(0, len(recs) - 1))
    r = recs[i]
    if kind == "non_object" or not isinstance(r, dict):
        recs[i] = draw(st.sampled_from(([], [1, 2], "record", 1, None, True)))
        return recs, f"record {i} = {O._short(recs[i], 30)}"
    if kind == "set":
        k = draw(st.sampled_from(sorted(r)))
        r[k] = draw(json_values)
        return recs, f"record {i}: {k} = {O._short(r[k])}"
    if kind == "config":
        if not isinstance(r.get("config"), dict):
            r["config"] = {}
        k = draw(st.sampled_from(sorted(O.GEMM_FIELDS) + ["fz_knob"]))
        r["config"][k] = draw(st.one_of(st.sampled_from((0, -1, -128, 2**20, 2**40, 2**63 - 1, 1.5, "128", None, True,
                                                         "gb10", "../arch/h200", 96, 192))))
        return recs, f"record {i}: config.{k} = {O._short(r['config'][k])}"
    if kind == "delete":
        k = draw(st.sampled_from(sorted(r) or ["x"]))
        r.pop(k, None)
        return recs, f"record {i}: {k} deleted"
    if kind == "outcome":
        r["outcome"] = draw(st.sampled_from(("correct", "wrong", "timeout", "fault", "hang", "", None, 1, "Correct")))
        return recs, f"record {i}: outcome = {r['outcome']!r}"
    if kind == "step":
        r["step"] = draw(st.sampled_from(("v1", "v7", "ws", "v6", "", None, 2, "hgemm_v2")))
        return recs, f"record {i}: step = {r['step']!r}"
    if kind == "add_key":
        k = draw(bogus_keys)
        r[k] = 1
        return recs, f"record {i}: {k!r} added"
    if kind == "tiles":
        r["outcome"] = "wrong"
        r["wrong_tiles"] = draw(st.sampled_from(([], [[0, 0]], [[0]], [0, 0], "[[0,0]]", [[0, "x"]], [[10**9, 0]], None)))
        return recs, f"record {i}: outcome wrong, wrong_tiles = {r['wrong_tiles']!r}"
    if kind == "timeout":
        r["outcome"] = "timeout"
        r["timeout"] = draw(st.sampled_from(({}, {"host": "killed"}, {"barrier": "mma_bar"},
                                             {"barrier": "mma_bar", "role": "mma", "k": "x", "cta": 0, "thread": 0},
                                             {"barrier": "mma_bar", "role": "mma", "k": 1, "cta": 0, "thread": 0},
                                             {"barrier": "tma_bar", "role": "producer", "k": -1, "cta": 99, "thread": 0},
                                             "timeout", None)))
        return recs, f"record {i}: timeout = {O._short(r['timeout'])}"
    r["kind"] = draw(st.sampled_from(("bench", "trace", "", None, 3)))
    return recs, f"record {i}: kind = {r['kind']!r}"


@st.composite
def crosscheck_cases(draw) -> FuzzCase:
    pool = base_records()
    recs: list[Any] = list(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4)))
    groups = {json.dumps([r.get("step"), r.get("config")], sort_keys=True) for r in recs}
    while len(groups) > 2:  # keep the prediction work small: at most two configs
        recs.pop()
        groups = {json.dumps([r.get("step"), r.get("config")], sort_keys=True) for r in recs}
    mutations = []
    for _ in range(draw(st.sampled_from((0, 1, 1, 1, 2, 3)))):
        recs, desc = draw(record_mutation(recs))
        mutations.append(desc)
    lines = [json.dumps(r) for r in recs]
    data = ("\n".join(lines) + "\n").encode()
    if chance(draw, 20):
        data, desc = draw(text_mutation(data, garbage=("", "   ", "{", "not json", "[]", "null", '{"kind": "outcome"}',
                                                       "\x00", "{}")))
        mutations.append(desc)
    files = {"fz_rec.jsonl": data}
    j = O.Judgement()
    O.judge_records(j, files)
    argv = ["crosscheck", "report", "fz_rec.jsonl", "--runs", draw(st.sampled_from(("1", "1", "2")))]
    outputs = []
    missing: tuple[str, ...] = ()
    if draw(st.booleans()):
        argv += ["--json", "fz_report.json"]
        outputs.append(("fz_report.json", "json"))
    if chance(draw, 25):
        plan = base_plan()
        if draw(st.booleans()):
            plan, desc = draw(json_doc_mutation(plan, ()))
            mutations.append("plan: " + desc)
        if plan is not None:
            files["fz_plan.json"] = plan
            _judge_plan(j, plan)
        else:
            j.refuse("plan.missing", "--plan names a missing file")
            missing = ("fz_plan.json",)  # the file to name is the one that is not there
        argv += ["--plan", "fz_plan.json"]
    if chance(draw, 20):
        argv += ["--rows", str(draw(st.sampled_from((0, 1, 5))))]
    expect = j.verdict
    if not mutations and expect == "any":
        expect = "valid"
    return FuzzCase(path="crosscheck", argv=argv, files=files, expect=expect, reasons=j.reasons,
                    problem_files=tuple(files) + missing, outputs=outputs, mode="subprocess", mutations=mutations,
                    base=f"{len(recs)} silicon record(s)")


def _judge_plan(j: O.Judgement, data: bytes) -> None:
    try:
        d = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        j.refuse("plan.syntax", "the plan is not JSON")
        return
    if not isinstance(d, dict):
        j.refuse("plan.type", "the plan is not an object")
    elif not isinstance(d.get("predictions"), list):
        j.refuse("plan.missing", "the plan has no list of predictions")
    elif not all(isinstance(p, dict) and isinstance(p.get("label"), str) and isinstance(p.get("case"), dict)
                 for p in d["predictions"]):
        j.refuse("plan.type", "a prediction lacks its case or label")


# --------------------------------------------------------------------------- CLI flags

# Each flag value is (text, class): class "ok" | "refuse" | "any" (e.g. huge: refuse or finish in time)
def _int_flag(low: int, small: tuple[int, ...]) -> st.SearchStrategy[tuple[str, str]]:
    def cls(v: int) -> str:
        return "refuse" if v < low else ("any" if v > 10_000 else "ok")

    return st.one_of(
        st.sampled_from(small).map(lambda v: (str(v), cls(v))),
        st.sampled_from((0, -1, -5, 10**6, 2**40, 2**63, 10**30)).map(lambda v: (str(v), cls(v))),
        st.sampled_from(("1.5", "abc", "", "1e3", "0x10", " ", "--", "nan", "inf", "1_0")).map(lambda s: (s, "refuse")),
        st.sampled_from((" 2", "2 ", "+2", "٣", "0002")).map(lambda s: (s, "any")),
    )


RUNS = _int_flag(1, (1, 2, 3))
MAX_STALL = _int_flag(0, (0, 100, 2000))
SEED = st.one_of(st.sampled_from(("0", "1", "7")).map(lambda s: (s, "ok")),
                 st.sampled_from(("-1", str(2**70))).map(lambda s: (s, "any")),
                 st.sampled_from(("x", "1.0", "")).map(lambda s: (s, "refuse")))
MAX_CTAS = _int_flag(1, (1, 2, 8))
CTA = st.one_of(st.sampled_from(("0",)).map(lambda s: (s, "ok")), st.sampled_from(("1", "3", "1000")).map(lambda s: (s, "any")),
                st.sampled_from(("-1", "x", "")).map(lambda s: (s, "refuse")))
ROWS = st.one_of(st.sampled_from(("1", "5")).map(lambda s: (s, "ok")), st.just(("0", "any")),
                 st.sampled_from(("-1", "x")).map(lambda s: (s, "refuse")))
N_PLAN = _int_flag(1, (1, 2))
LAUNCHES = _int_flag(1, (1, 3))
BUG_SHARE = st.one_of(st.sampled_from(("0", "0.5", "1")).map(lambda s: (s, "ok")),
                      st.sampled_from(("-0.1", "1.5", "x", "", "nan", "inf")).map(lambda s: (s, "refuse")))
STEPS_FLAG = st.one_of(st.sampled_from(("v2", "v4,v6", "ws", "v2,v3,v4,v5,v6,ws")).map(lambda s: (s, "ok")),
                       st.sampled_from(("v1", "v9", "", ",", "v2,,v3", "V2", "v2;v3", "hgemm_v2")).map(
                           lambda s: (s, "refuse" if s not in ("v2,,v3",) else "any")))

ARCH_ARGS = st.one_of(st.sampled_from(O.ARCHES).map(lambda s: (s, "ok")),
                      st.sampled_from(("B200", "H200")).map(lambda s: (s, "any")),
                      st.sampled_from(("a100", "", "../arch/h200", "protosim/arch/h200.toml", "/etc/passwd", "h200.toml",
                                       "..", "/", "x" * 300, "sm_90", "-", "h200/", "./h200")).map(lambda s: (s, "refuse")))


def _scenario_pool() -> dict[str, tuple[bytes, bool | None]]:
    """Small valid inputs for the CLI path: name -> (content, expect declared)."""
    scn = base_scenarios()
    out: dict[str, tuple[bytes, bool | None]] = {}
    for n in ("v1_single_tile.toml", "v2_no_phase_flip.toml", "v4_tma_four_issuers.toml", "triton_seed_gb10.toml",
              "v4_wait_parity_mma_h200.toml"):
        if n in scn:
            out[n] = (scn[n], True)
    for name, text in SMALL_SCENARIOS.items():
        out[f"{name}.toml"] = (text.encode(), False)
    return out


# Input files: (argv text, setup, files, class, problem names, expect declared, content kind)
@st.composite
def cli_input(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(("toml", "toml", "toml", "json", "json", "ttgir", "missing", "dir", "empty", "devnull",
                                 "badsuffix", "binary", "fifo", "dash", "odd_name")))
    pool = _scenario_pool()
    if kind == "toml":
        name = draw(st.sampled_from(sorted(pool)))
        data, declared = pool[name]
        return {"arg": "in_" + name, "files": {"in_" + name: data}, "cls": "ok", "declared": declared, "kind": kind,
                "base": name}
    if kind == "json":
        scheds = base_schedules()
        name = draw(st.sampled_from(sorted(scheds)))
        return {"arg": f"in_{name}.json", "files": {f"in_{name}.json": scheds[name]}, "cls": "ok", "declared": False,
                "kind": kind, "base": name}
    if kind == "ttgir":
        fx = base_ttgir()
        name = draw(st.sampled_from([n for n in sorted(fx) if not n.startswith("grid_")]))
        t, launch, meta = fx[name]
        files = {f"{name}.ttgir": t}
        if launch is not None:
            files[f"{name}.launch.json"] = launch
        if meta is not None:
            files[f"{name}.json"] = meta
        return {"arg": f"{name}.ttgir", "files": files, "cls": "ok", "declared": False, "kind": kind, "base": name}
    if kind == "missing":
        return {"arg": draw(st.sampled_from(("missing.toml", "missing.json", "missing.ttgir", "nodir/x.toml"))), "files": {},
                "cls": "refuse", "kind": kind}
    if kind == "dir":
        return {"arg": "adir.toml", "files": {}, "setup": [("mkdir", "adir.toml")], "cls": "refuse", "kind": kind}
    if kind == "empty":
        name = draw(st.sampled_from(("empty.toml", "empty.json", "empty.ttgir")))
        return {"arg": name, "files": {name: b""}, "cls": "refuse", "kind": kind}
    if kind == "devnull":
        return {"arg": "/dev/null", "files": {}, "cls": "refuse", "kind": kind, "names": ("/dev/null", "null")}
    if kind == "badsuffix":
        name = draw(st.sampled_from(("in.txt", "in", "in.TOML", "in.yaml")))
        return {"arg": name, "files": {name: pool["v1_b200.toml"][0]}, "cls": "any", "kind": kind}
    if kind == "binary":
        name = draw(st.sampled_from(("bin.toml", "bin.json", "bin.ttgir")))
        return {"arg": name, "files": {name: bytes(range(256)) * 4}, "cls": "refuse", "kind": kind}
    if kind == "fifo":
        return {"arg": "fifo.toml", "files": {}, "setup": [("fifo", "fifo.toml")], "cls": "refuse", "kind": kind}
    if kind == "dash":
        return {"arg": draw(st.sampled_from(("-", "--"))), "files": {}, "cls": "any", "kind": kind, "usage": True}
    name = draw(st.sampled_from(("a b.toml", "ü.toml", "-x.toml", "x;y.toml", "$HOME.toml")))
    return {"arg": name, "files": {name: pool["v1_b200.toml"][0]}, "cls": "any", "kind": kind, "usage": name.startswith("-")}


@st.composite
def out_path(draw, suffix: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(("ok", "ok", "ok", "existing", "dir", "under_file", "proc", "sys", "missing_parent",
                                 "empty", "devnull", "devfull", "trailing_slash")))
    name = f"fz_out{suffix}"
    if kind == "ok":
        return {"kind": kind, "arg": name, "cls": "ok", "check": name}
    if kind == "existing":
        return {"kind": kind, "arg": name, "cls": "ok", "check": name, "files": {name: b"old"}}
    if kind == "dir":
        return {"kind": kind, "arg": "outdir", "cls": "refuse", "setup": [("mkdir", "outdir")], "names": ("outdir",)}
    if kind == "under_file":
        return {"kind": kind, "arg": f"afile.txt/{name}", "cls": "refuse", "files": {"afile.txt": b"x"}, "names": ("afile.txt",)}
    if kind == "proc":
        return {"kind": kind, "arg": f"/proc/protosim-fuzz-nonexistent/{name}", "cls": "refuse", "names": ("/proc",)}
    if kind == "sys":
        return {"kind": kind, "arg": f"/sys/protosim-fuzz/{name}", "cls": "refuse", "names": ("/sys",)}
    if kind == "missing_parent":
        return {"kind": kind, "arg": f"new/sub/{name}", "cls": "any", "check_any": f"new/sub/{name}"}
    if kind == "empty":
        return {"kind": kind, "arg": "", "cls": "refuse", "names": ()}
    if kind == "devnull":
        return {"kind": kind, "arg": "/dev/null", "cls": "any"}
    if kind == "devfull":
        return {"kind": kind, "arg": "/dev/full", "cls": "refuse", "names": ("/dev/full",)}
    return {"kind": kind, "arg": "outdir2/", "cls": "refuse", "setup": [("mkdir", "outdir2")], "names": ("outdir2",)}


@st.composite
def cli_cases(draw) -> FuzzCase:
    cmd = draw(st.sampled_from(("run", "run", "run", "explain", "demo", "schedule", "profile", "trace", "plot", "report",
                                "crosscheck plan", "crosscheck report", "none", "bogus")))
    argv: list[str] = []
    files: dict[str, bytes] = {}
    setup: list[tuple[str, str]] = []
    classes: list[str] = []  # flag classes
    usage = False
    problem: tuple[str, ...] = ()
    outputs: list[tuple[str, str]] = []
    declared: bool | None = None
    json_out = False
    input_cls = "ok"
    out_cls = "ok"
    base = ""
    probe = False
    out_names: tuple[str, ...] = ()
    mode = _mode(draw)

    notes: list[str] = []

    def flag(name: str, strat) -> None:
        nonlocal usage
        text, cls = draw(strat)
        argv.extend([name, text])
        classes.append(cls)
        notes.append(f"{name} {text!r} ({cls})")
        if cls != "ok":
            usage = True

    def add_input() -> None:
        nonlocal input_cls, problem, declared, base, usage
        inp = draw(cli_input())
        notes.append(f"input {inp['kind']} ({inp['cls']})")
        argv.append(inp["arg"])
        files.update(inp["files"])
        setup.extend(inp.get("setup", []))
        input_cls = inp["cls"]
        usage = usage or inp.get("usage", False)
        problem = inp.get("names", (os.path.basename(inp["arg"]),))
        declared = inp.get("declared")
        base = inp.get("base", inp["kind"])

    def add_out(suffix: str, opt: str = "-o") -> None:
        nonlocal out_cls, out_names
        o = draw(out_path(suffix))
        notes.append(f"output {o['kind']} ({o['cls']})")
        argv.extend([opt, o["arg"]])
        files.update(o.get("files", {}))
        setup.extend(o.get("setup", []))
        out_cls = o["cls"]
        out_names = o.get("names", ())
        if "check" in o:
            outputs.append((o["check"], {"json": "json", "png": "png", "html": "html"}.get(suffix.lstrip("."), "any")))

    if cmd == "none":
        usage = True
        argv = draw(st.sampled_from(([], ["--help"], ["-h"], ["--version"], ["-x"], ["--json"])))
        if not argv or argv[0] not in ("--help", "-h", "--version"):
            classes.append("refuse")
    elif cmd == "bogus":
        usage = True
        argv = [draw(st.sampled_from(("runn", "Run", "simulate", "crosscheck", "crosscheck bogus", "", "-")))]
        if argv[0] == "crosscheck bogus":
            argv = ["crosscheck", "bogus"]
        classes.append("refuse")
    elif cmd in ("run", "explain", "schedule", "trace", "plot", "report"):
        argv.append(cmd)
        add_input()
        if cmd == "run":
            for name, strat in (("--runs", RUNS), ("--max-stall", MAX_STALL), ("--seed", SEED)):
                if chance(draw, 33):
                    flag(name, strat)
            if "--runs" not in argv and input_cls == "ok":
                argv += ["--runs", "2"]
            if draw(st.booleans()):
                argv.append("--json")
                json_out = True
            if chance(draw, 16):
                argv.append("--slack")
        if cmd in ("trace", "plot", "report"):
            suffix = {"trace": ".json", "plot": ".png", "report": ".html"}[cmd]
            if not chance(draw, 10):
                add_out(suffix, draw(st.sampled_from(("-o", "--out"))))
            else:
                usage = True
                classes.append("refuse")  # -o is required
            if chance(draw, 25):
                flag("--max-ctas", MAX_CTAS)
            if cmd == "plot" and chance(draw, 25):
                flag("--cta", CTA)
        probe = cmd in ("explain", "trace", "plot", "report")
    elif cmd == "demo":
        argv.append("demo")
        dkind = draw(st.sampled_from(("good", "good", "good", "empty", "missing", "file", "broken")))
        notes.append(f"--dir {dkind}")
        pool = _scenario_pool()
        if dkind == "good":
            names = draw(st.lists(st.sampled_from(sorted(pool)), min_size=1, max_size=2, unique=True))
            for n in names:
                files[f"scn/{n}"] = pool[n][0]
            input_cls = "ok"
        elif dkind == "empty":
            setup.append(("mkdir", "scn"))
            input_cls = "refuse"
        elif dkind == "missing":
            input_cls = "refuse"
        elif dkind == "file":
            files["scn"] = b"x"
            input_cls = "refuse"
        else:
            files["scn/good.toml"] = pool["v1_b200.toml"][0]
            files["scn/broken.toml"] = b'builder = "hgemm_v1"\n[config]\nK = -64\n'
            input_cls = "refuse"
            problem = ("broken.toml",)
        argv += ["--dir", "scn"]
        if not problem:
            problem = ("scn",)
        for name, strat in (("--runs", RUNS), ("--max-stall", MAX_STALL), ("--seed", SEED)):
            if chance(draw, 33):
                flag(name, strat)
        if "--runs" not in argv:
            argv += ["--runs", "2"]
        if draw(st.booleans()):
            argv.append("--json")
            json_out = True
    elif cmd == "profile":
        argv.append("profile")
        text, cls = draw(ARCH_ARGS)
        notes.append(f"arch {text!r} ({cls})")
        argv.append(text)
        input_cls = cls
        problem = ()
    elif cmd == "crosscheck plan":
        argv += ["crosscheck", "plan"]
        flag("-n", N_PLAN)
        if draw(st.booleans()):
            flag("--runs", RUNS)
        else:
            argv += ["--runs", "1"]
        for name, strat in (("--seed", SEED), ("--steps", STEPS_FLAG), ("--bug-share", BUG_SHARE), ("--launches", LAUNCHES)):
            if chance(draw, 33):
                flag(name, strat)
        add_out(".json")
        if outputs:
            outputs.append((outputs[0][0].replace(".json", ".jobs.json"), "json"))
        mode = "subprocess"
    elif cmd == "crosscheck report":
        argv += ["crosscheck", "report"]
        rkind = draw(st.sampled_from(("good", "good", "missing", "dir", "empty")))
        notes.append(f"records {rkind}")
        recs = base_records()
        if rkind == "good":
            picked = draw(st.sampled_from(recs))
            files["rec.jsonl"] = (json.dumps(picked) + "\n").encode()
            argv.append("rec.jsonl")
            input_cls = "ok"
        elif rkind == "missing":
            argv.append("missing.jsonl")
            input_cls = "refuse"
            problem = ("missing.jsonl",)
        elif rkind == "dir":
            setup.append(("mkdir", "recdir"))
            argv.append("recdir")
            input_cls = "refuse"
            problem = ("recdir",)
        else:
            files["empty.jsonl"] = b""
            argv.append("empty.jsonl")
            input_cls = "any"
        if draw(st.booleans()):
            flag("--runs", RUNS)
        else:
            argv += ["--runs", "1"]
        if chance(draw, 33):
            flag("--rows", ROWS)
        if draw(st.booleans()):
            add_out(".json", "--json")
        mode = "subprocess"
    if chance(draw, 10) and cmd not in ("none", "bogus"):
        extra = draw(st.sampled_from(("--fz-unknown", "-q", "--json=1", "--runs")))
        notes.append(f"extra {extra}")
        argv.append(extra)
        usage = True
        classes.append("refuse" if extra != "-q" else "any")
    if any(c == "refuse" for c in classes):
        expect = "refuse"
    elif input_cls == "refuse" or out_cls == "refuse":
        expect = "refuse"
    elif all(c == "ok" for c in classes) and input_cls == "ok" and out_cls == "ok" and cmd not in ("none", "bogus"):
        expect = "valid"
    else:
        expect = "any"
    flags_ok = all(c == "ok" for c in classes) and not usage
    problem = (problem if input_cls == "refuse" else ()) + (out_names if out_cls == "refuse" else ())
    reasons = [f"cli.flag: {' '.join(argv)}"] if any(c == "refuse" for c in classes) else \
        [f"cli.input: {' '.join(argv)}"] if expect == "refuse" else []
    case = FuzzCase(path="cli", argv=argv, files=files, setup=setup, expect=expect, reasons=reasons, usage=usage or not flags_ok,
                    problem_files=problem if flags_ok and expect == "refuse" else (),
                    json_stdout=json_out or cmd == "schedule", run_json=json_out and cmd == "run",
                    expect_declared=declared, statuses=(0, 2) if cmd in ("schedule", "profile", "crosscheck plan") else (0, 1, 2),
                    outputs=outputs, mode=mode, mutations=notes, base=base)
    if probe and flags_ok and input_cls == "ok" and out_cls == "ok" and declared is False:
        case.probe = argv[1]
    return case


STRATEGIES = {
    "scenario_toml": scenario_toml_cases,
    "schedule_json": schedule_json_cases,
    "ttgir": ttgir_cases,
    "cli": cli_cases,
    "crosscheck": crosscheck_cases,
}
"""Input path -> strategy of :class:`FuzzCase` (the census and the suites use these)."""
