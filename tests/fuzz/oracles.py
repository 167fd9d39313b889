"""Which inputs are nonsense that protosim must refuse with exit status 2.

Each oracle looks at the *final* input (after every mutation) and returns a
:class:`Judgement`: ``refuse`` with the rules it broke, or ``any`` (0, 1 or 2 are all
acceptable: the input may be a legitimate, possibly buggy, protocol or a refusal the
contract does not spell out).  ``valid`` (must be judged, 0 or 1) is decided by the
strategies, only for unmutated inputs with well-formed flags.

The rules are the contract's list of nonsense, written here independently of
protosim's own validation: negative / zero / non-integer sizes anywhere, zero warps,
a loop of step 0, truncated files, ops the arch lacks, knobs the builder ignores,
arch names that are paths, non-UTF-8 files, unknown fields, wrong types.  When in
doubt a rule says ``any``: a false "must refuse" would be a bug in the fuzzer.

Every reason starts with a rule id (``toml.size``, ``sched.arch_op`` ...): the census
groups violations by it.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- vocabulary

ARCHES = ("b200", "h200", "gb10")
BUILDER_NAMES = ("hgemm_v1", "hgemm_v2", "hgemm_v3", "hgemm_v4", "hgemm_v5", "hgemm_v6", "hgemm_ws", "hgemm_v7", "hgemm_v8",
                 "hgemm_v9", "triton_pipeline")
BOOK_BUILDERS = ("hgemm_v7", "hgemm_v8", "hgemm_v9")
"""The book's steps 7-9 (protosim/builders/book_gemm.py): Blackwell (tcgen05) only."""
GEMM_BUILDERS = BUILDER_NAMES[:-1]
OUTCOMES = ("correct", "wrong", "deadlock", "fault")
TOP_LEVEL = ("name", "description", "builder", "config", "expect", "explore")
EXPECT_KEYS = ("nominal", "findings", "ok", "outcomes", "may")
EXPLORE_KEYS = ("runs", "max_stall", "seed")
STEPS = ("v2", "v3", "v4", "v5", "v6", "ws", "ws_cluster")
"""Steps a launch record may name (ws_cluster: ws on a cluster, read back as a ws case)."""
SILICON_OUTCOMES = ("correct", "wrong", "timeout", "fault")

# protosim.config.GemmConfig: field -> (type, default)
GEMM_FIELDS: dict[str, tuple[str, Any]] = {
    "M": ("int", 128), "N": ("int", 128), "K": ("int", 64), "BLK_M": ("int", 128), "BLK_N": ("int", 128),
    "BLK_K": ("int", 64), "PIPE_DEPTH": ("int", 2), "arch": ("str", "b200"), "sm_count": ("int?", None),
    "l2_group_size": ("int", 8), "skip_mma_phase_flip": ("bool", False), "reset_phase_per_tile": ("bool", False),
    "tma_issuer": ("str", "one"), "expect_tx_delta": ("int", 0), "wait_parity_flip": ("str", ""),
    "skip_store_wait": ("bool", False), "producer_delay_ns": ("int", 0), "consumer_delay_ns": ("int", 0),
    "lag_warp": ("int", 1), "lag_ns": ("int", 0), "l2_at_launch": ("str", "cold"),
    "cluster_m": ("int", 1), "cluster_n": ("int", 1), "multicast_skip_rank": ("int", -1),
    "release_unscaled": ("bool", False), "expect_tx_local": ("bool", False), "skip_exit_sync": ("bool", False),
}
CLUSTER_DIMS = (1, 2, 4, 8)
"""protosim.config: a cluster dimension is 1, 2, 4 or 8."""
GEMM_SIZES = ("M", "N", "K", "BLK_M", "BLK_N", "BLK_K", "PIPE_DEPTH", "sm_count", "l2_group_size", "cluster_m", "cluster_n")
GEMM_NONNEG = ("producer_delay_ns", "consumer_delay_ns", "lag_ns")
GEMM_CHOICES = {"tma_issuer": ("one", "each_warp"), "wait_parity_flip": ("", "tma", "mma"), "l2_at_launch": ("cold", "inputs")}
# protosim.builders.triton_pipeline.PipelineConfig
PIPE_FIELDS: dict[str, tuple[str, Any]] = {
    "M": ("int", 64), "N": ("int", 64), "K": ("int", 256), "BLOCK_M": ("int", 64), "BLOCK_N": ("int", 64),
    "BLOCK_K": ("int", 32), "num_stages": ("int", 2), "num_warps": ("int", 4), "arch": ("str", "gb10"),
    "wait_delta": ("int", 0), "alias_stages": ("bool", False), "pendings_delta": ("int", 0),
}
PIPE_SIZES = ("M", "N", "K", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps")

# Knobs a builder ignores (set away from their default, a scenario must be refused).
# Deliberately a subset of the obvious cases: persistent-kernel knobs on the one-tile
# steps, TMA knobs on the thread-copy steps, a ring depth where there is no ring.
_PERSISTENT_ONLY = ("reset_phase_per_tile", "sm_count", "l2_group_size")
_TMA_ONLY = ("tma_issuer", "expect_tx_delta", "skip_store_wait", "producer_delay_ns")
IGNORED_KNOBS: dict[str, tuple[str, ...]] = {
    "hgemm_v1": _PERSISTENT_ONLY + _TMA_ONLY + ("PIPE_DEPTH",),
    "hgemm_v2": _PERSISTENT_ONLY + _TMA_ONLY + ("PIPE_DEPTH",),
    "hgemm_v3": _PERSISTENT_ONLY + _TMA_ONLY + ("PIPE_DEPTH",),
    "hgemm_v4": _PERSISTENT_ONLY + ("PIPE_DEPTH",),
    "hgemm_v5": _PERSISTENT_ONLY,
    "hgemm_v6": (),
    "hgemm_ws": ("tma_issuer",),
    "triton_pipeline": (),
}
IGNORED_VALUES = {("hgemm_v1", "wait_parity_flip"): ("tma",), ("hgemm_v2", "wait_parity_flip"): ("tma",),
                  ("hgemm_v3", "wait_parity_flip"): ("tma",)}
"""v1-v3 have no TMA wait: ``wait_parity_flip = "tma"`` would be ignored."""

TCGEN05_OPS = ("mma", "mma_commit", "tmem_load", "wait_ld", "tmem_alloc", "tmem_dealloc")
WGMMA_OPS = ("wgmma", "wgmma_commit", "wgmma_wait")
TMA_OPS = ("tma_load", "tma_store")
ISSUERS = ("all", "warp0", "one", "each_warp")
DESCRIPTOR_PATHS = ("uniform", "per_thread")
"""Where a wgmma builds its operand descriptors (the schedule JSON's ``descriptors``)."""


def finding_kinds() -> tuple[str, ...]:
    """The finding vocabulary (for ``[expect] findings``): protosim's, with a fallback."""
    try:
        from protosim.checkers import FINDING_KINDS

        return tuple(FINDING_KINDS)
    except Exception:  # noqa: BLE001
        return ("capacity", "deadlock", "early_return", "lapped_wait", "wrong_parity", "tx_mismatch", "overissue",
                "raw_hazard", "war_hazard", "raw_race", "war_race", "incomplete", "arrival_underflow")


# --------------------------------------------------------------------------- judgement


@dataclass
class Judgement:
    verdict: str = "any"  # "refuse" | "any"
    reasons: list[str] = field(default_factory=list)

    def refuse(self, rule: str, detail: str) -> None:
        self.verdict = "refuse"
        if len(self.reasons) < 8:
            self.reasons.append(f"{rule}: {detail}")


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v: Any, n: int = 60) -> str:
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def arch_nonsense(v: Any) -> bool:
    """An arch value that names no profile whatever the case (paths, garbage)."""
    return not isinstance(v, str) or v.lower() not in ARCHES


# --------------------------------------------------------------------------- TOML writer

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(k: str) -> str:
    return k if _BARE.fullmatch(k) else toml_str(k)  # fullmatch: "$" would let a trailing newline through


def toml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = repr(v)
        return r if any(c in r for c in ".en") else r + ".0"
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(str(k))} = {toml_value(x)}" for k, x in v.items() if x is not None) + "}"
    return toml_str(str(v))


def toml_dumps(doc: dict[str, Any]) -> str:
    """A scenario document as TOML: scalars first, then one ``[table]`` per dict value
    (nested dicts inline).  ``None`` values are left out (TOML has no null)."""
    lines = []
    for k, v in doc.items():
        if v is not None and not isinstance(v, dict):
            lines.append(f"{toml_key(str(k))} = {toml_value(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append("")
            lines.append(f"[{toml_key(str(k))}]")
            for kk, vv in v.items():
                if vv is not None:
                    lines.append(f"{toml_key(str(kk))} = {toml_value(vv)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- scenario TOML


def judge_config(j: Judgement, builder: str | None, conf: Any, where: str = "config") -> None:
    """Type / sign / vocabulary / ignored-knob rules of a [config] table."""
    if not isinstance(conf, dict):
        j.refuse("toml.config_type", f"[{where}] is {_short(conf)}, not a table")
        return
    pipeline = builder == "triton_pipeline"
    fields = PIPE_FIELDS if pipeline else GEMM_FIELDS
    sizes = PIPE_SIZES if pipeline else GEMM_SIZES
    for key, value in conf.items():
        if key not in fields:
            j.refuse("toml.unknown_field", f"{where}.{key} is not a field of {'PipelineConfig' if pipeline else 'GemmConfig'}")
            continue
        typ, _ = fields[key]
        if typ in ("int", "int?") and not is_int(value):
            j.refuse("toml.type", f"{where}.{key} = {_short(value)} is not an integer")
        elif typ == "bool" and not isinstance(value, bool):
            j.refuse("toml.type", f"{where}.{key} = {_short(value)} is not true/false")
        elif typ == "str" and not isinstance(value, str):
            j.refuse("toml.type", f"{where}.{key} = {_short(value)} is not a string")
        elif key in sizes and value < 1:
            j.refuse("toml.size", f"{where}.{key} = {value} is not a positive size")
        elif not pipeline and key in GEMM_NONNEG and value < 0:
            j.refuse("toml.size", f"{where}.{key} = {value} is a negative delay")
        elif not pipeline and key in GEMM_CHOICES and value not in GEMM_CHOICES[key]:
            j.refuse("toml.choice", f"{where}.{key} = {_short(value)} is not one of {GEMM_CHOICES[key]}")
        elif not pipeline and key == "lag_warp" and not 0 <= value < 4:
            j.refuse("toml.choice", f"{where}.lag_warp = {value}: the warpgroup has warps 0..3")
        elif not pipeline and key in ("cluster_m", "cluster_n") and value not in CLUSTER_DIMS:
            j.refuse("toml.choice", f"{where}.{key} = {value}: a cluster dimension is one of {CLUSTER_DIMS}")
        elif pipeline and key in ("wait_delta", "pendings_delta") and value < 0:
            j.refuse("toml.size", f"{where}.{key} = {value} is negative")
    arch = conf.get("arch", fields["arch"][1])
    if "arch" in conf and isinstance(arch, str) and arch_nonsense(arch):
        j.refuse("toml.arch", f"{where}.arch = {_short(arch)} names no arch profile ({', '.join(ARCHES)})")
    if builder is None or not isinstance(arch, str) or arch_nonsense(arch):
        return
    a = arch.lower()
    if pipeline:
        if a == "b200":
            j.refuse("toml.arch_builder", "triton_pipeline has no b200 (tcgen05) variant")
        pd = conf.get("pendings_delta", 0)
        if a == "gb10" and is_int(pd) and pd != 0:
            j.refuse("toml.ignored_knob", "pendings_delta applies to wgmma (h200), not gb10")
        return
    if a == "gb10":
        j.refuse("toml.arch_builder", f"{builder} emits tcgen05/wgmma/TMA ops; gb10 has none of them")
    if builder == "hgemm_ws" and a == "b200":
        j.refuse("toml.arch_builder", "hgemm_ws is a Hopper (wgmma) kernel; b200 is refused by design")
    if builder in BOOK_BUILDERS and a == "h200":
        j.refuse("toml.arch_builder", f"{builder} is the book's Blackwell (tcgen05) step; h200 has wgmma")
    for knob in IGNORED_KNOBS.get(builder, ()):
        if knob in conf:
            value, default = conf[knob], GEMM_FIELDS[knob][1]
            if value != default and (type(value) is type(default) or (knob == "sm_count" and is_int(value))):
                j.refuse("toml.ignored_knob", f"{knob} = {_short(value)} is not honoured by {builder}")
    for (b, knob), bad in IGNORED_VALUES.items():
        if b == builder and conf.get(knob) in bad:
            j.refuse("toml.ignored_knob", f"{knob} = {conf[knob]!r} is not honoured by {builder} (no TMA wait)")


def judge_expect(j: Judgement, raw: Any) -> None:
    if not isinstance(raw, dict):
        j.refuse("toml.expect_type", f"[expect] is {_short(raw)}, not a table")
        return
    kinds = finding_kinds()
    for key, v in raw.items():
        if key not in EXPECT_KEYS:
            j.refuse("toml.unknown_field", f"expect.{key}")
        elif key == "nominal" and (not isinstance(v, str) or v not in OUTCOMES):
            j.refuse("toml.expect_value", f"expect.nominal = {_short(v)}")
        elif key == "ok" and not isinstance(v, bool):
            j.refuse("toml.expect_value", f"expect.ok = {_short(v)}")
        elif key in ("findings", "outcomes", "may"):
            vocab = kinds if key == "findings" else OUTCOMES
            if not isinstance(v, list) or not all(isinstance(x, str) and x in vocab for x in v):
                j.refuse("toml.expect_value", f"expect.{key} = {_short(v)}")


def expect_declared(raw: Any) -> bool | None:
    """Does a scenario's [expect] declare anything (protosim's Expectation.declared)?"""
    if raw is None:
        return False
    if not isinstance(raw, dict):
        return None
    return (raw.get("nominal") is not None or bool(raw.get("findings")) or raw.get("ok") is not None
            or bool(raw.get("outcomes")))


def judge_explore(j: Judgement, raw: Any) -> None:
    if not isinstance(raw, dict):
        j.refuse("toml.explore_type", f"[explore] is {_short(raw)}, not a table")
        return
    for key, v in raw.items():
        if key not in EXPLORE_KEYS:
            j.refuse("toml.unknown_field", f"explore.{key}")
        elif not is_int(v):
            j.refuse("toml.type", f"explore.{key} = {_short(v)} is not an integer")
        elif key == "runs" and v < 1:
            j.refuse("toml.size", f"explore.runs = {v}")
        elif key == "max_stall" and v < 0:
            j.refuse("toml.size", f"explore.max_stall = {v}")


def judge_scenario_bytes(data: bytes) -> tuple[Judgement, dict[str, Any] | None]:
    """The judgement of a scenario file's bytes, and its parsed document (None if it
    does not parse)."""
    j = Judgement()
    if data.startswith(b"\xef\xbb\xbf"):
        return j, None  # a UTF-8 BOM: accepting it is as reasonable as refusing it
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        j.refuse("file.utf8", f"byte {e.start} is not UTF-8")
        return j, None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        j.refuse("toml.syntax", f"not valid TOML ({e})")
        return j, None
    judge_scenario(j, doc)
    return j, doc


def judge_scenario(j: Judgement, doc: dict[str, Any]) -> None:
    for key in doc:
        if key not in TOP_LEVEL:
            j.refuse("toml.unknown_field", f"top-level {key!r}")
    for key in ("name", "description"):
        if key in doc and not isinstance(doc[key], str):
            j.refuse("toml.type", f"{key} = {_short(doc[key])} is not a string")
    builder = doc.get("builder")
    if builder is None:
        j.refuse("toml.builder", "no builder")
    elif not isinstance(builder, str):
        j.refuse("toml.builder", f"builder = {_short(builder)} is not a string")
    elif builder not in BUILDER_NAMES:
        if builder.lower() not in BUILDER_NAMES:
            j.refuse("toml.builder", f"builder = {_short(builder)} is no builder")
        builder = None
    else:
        pass
    judge_config(j, builder if isinstance(builder, str) and builder in BUILDER_NAMES else None, doc.get("config", {}))
    if "expect" in doc:
        judge_expect(j, doc["expect"])
    if "explore" in doc:
        judge_explore(j, doc["explore"])


# --------------------------------------------------------------------------- schedule JSON

_POS, _NONNEG, _INT, _PARITY, _STR, _BOOL, _ACCESS, _ACCESSES, _BARRIER, _INT_OPT, _TILE, _ISSUER = (
    "pos", "nonneg", "int", "parity", "str", "bool", "access", "accesses", "barrier", "int?", "tile", "issuer")
_WIDTH = "width"
"""Bytes one lane moves per ld.global: 1, 2, 4, 8 or 16 (PTX ld's .u8 .. .v4.u32)."""
_WAYS = "ways"
"""An n-way shared-memory bank conflict: 1 (none) to 32 (every lane on one bank)."""
_LINES = "lines"
"""128-byte lines a warp instruction touches: a number from 1 to 32, or null."""
_DESC = "descriptors"
"""Where a wgmma builds its operand descriptors: "uniform" or "per_thread"."""
_NAME = "name"
"""A non-empty string: what a load into registers reads (its L2 key)."""
_OPBYTES = "operand_bytes"
"""Bytes of a wgmma operand element: 1 (fp8, int8), 2 (f16, bf16) or 4 (tf32)."""
_COMMON = {"issuer": (_ISSUER, False), "tile": (_TILE, False), "k": (_INT_OPT, False), "label": (_STR, False)}
_MMA = {"m": (_POS, True), "n": (_POS, True), "k_elems": (_POS, True), "reads": (_ACCESSES, False),
        "writes": (_ACCESSES, False), "accumulate": (_BOOL, False)}
OP_SCHEMA: dict[str, dict[str, tuple[str, bool]]] = {
    "mbar_init": {"barrier": (_BARRIER, True)},
    # An arrive count of 0 (or past 2^20-1) is expressible PTX that the ISA leaves undefined: a kernel
    # bug the model reports (count_out_of_range, a fault), not malformed input; only a negative one is.
    "arrive": {"barrier": (_BARRIER, True), "use": (_INT, True), "count": (_NONNEG, False)},
    "expect_tx": {"barrier": (_BARRIER, True), "use": (_INT, True), "bytes": (_NONNEG, True)},
    "arrive_expect_tx": {"barrier": (_BARRIER, True), "use": (_INT, True), "bytes": (_NONNEG, True)},
    "wait": {"barrier": (_BARRIER, True), "parity": (_PARITY, True), "use": (_INT, True), "computed_address": (_BOOL, False)},
    "tma_load": {"barrier": (_BARRIER, True), "use": (_INT, True), "bytes": (_POS, True), "dst": (_ACCESS, True),
                 "src": (_STR, False)},
    "tma_store": {"bytes": (_POS, True), "src": (_ACCESS, True)},
    "bulk_commit": {},
    "bulk_wait": {"n": (_NONNEG, False), "read": (_BOOL, False)},
    "thread_copy": {"bytes": (_POS, True), "dst": (_ACCESS, True), "src": (_STR, False), "load_bytes": (_WIDTH, False),
                    "in_flight": (_NONNEG, False)},
    "smem_store": {"bytes": (_POS, True), "dst": (_ACCESS, True), "bank_ways": (_WAYS, False)},
    "global_store": {"bytes": (_POS, True), "store_bytes": (_WIDTH, False), "lines": (_LINES, False)},
    "global_load": {"bytes": (_POS, True), "src": (_NAME, True), "load_bytes": (_WIDTH, False)},
    "global_load_wait": {"pending": (_NONNEG, False)},
    "register_math": {"fp32": (_NONNEG, False), "half_rate": (_NONNEG, False), "mufu": (_NONNEG, False),
                      "shfl": (_NONNEG, False)},
    "cp_async": {"bytes": (_POS, True), "dst": (_ACCESS, True), "src": (_STR, False), "zero_fill": (_BOOL, False)},
    "cp_async_commit": {},
    "cp_async_wait": {"n": (_NONNEG, False)},
    "local_load": {"bytes": (_POS, True), "src": (_ACCESS, True)},
    "mma_sync": {"m": (_POS, True), "n": (_POS, True), "k_elems": (_POS, True)},
    "mma": dict(_MMA),
    "mma_commit": {"barrier": (_BARRIER, True), "use": (_INT, True)},
    "wgmma": {**_MMA, "descriptors": (_DESC, False), "operand_bytes": (_OPBYTES, False), "serialized": (_BOOL, False)},
    "wgmma_commit": {},
    "wgmma_wait": {"n": (_NONNEG, False)},
    "tmem_load": {"bytes": (_POS, True), "src": (_ACCESS, True)},
    "wait_ld": {},
    "tmem_alloc": {"columns": (_POS, True)},
    "tmem_dealloc": {"columns": (_POS, True)},
    "cta_sync": {},
    "named_barrier": {"barrier_id": (_NONNEG, True), "threads": (_POS, True)},
    "fence": {"fence": (_STR, False)},
    "sleep": {"cycles": (_NONNEG, True), "warp": (_INT_OPT, False)},
}
SCHEDULE_KEYS = ("protosim_schedule", "name", "arch", "barriers", "buffers", "roles", "ctas", "config")
SCHEDULE_OPTIONAL = ("config", "description", "expect", "explore", "source", "l2_at_launch", "regs_per_thread")
"""Top-level keys a schedule may carry besides the IR (``schedule`` keeps a scenario's
name, description and [expect]): never reported as unknown."""
ACCESS_KEYS = ("buffer", "stage", "content", "part")
BUFFER_KEYS = ("name", "space", "stages", "bytes", "columns", "parts", "align")


class _Sched:
    def __init__(self, j: Judgement):
        self.j = j
        self.barriers: dict[str, Any] = {}
        self.buffers: dict[str, dict] = {}

    def access(self, where: str, a: Any) -> None:
        j = self.j
        if not isinstance(a, dict):
            j.refuse("sched.type", f"{where} is {_short(a)}, not an access object")
            return
        for key in a:
            if key not in ACCESS_KEYS:
                j.refuse("sched.unknown_field", f"{where}.{key}")
        buf = a.get("buffer")
        if not isinstance(buf, str):
            j.refuse("sched.type", f"{where}.buffer = {_short(buf)}")
            return
        decl = self.buffers.get(buf)
        if decl is None:
            j.refuse("sched.undeclared", f"{where}: buffer {buf!r} is not declared")
        stage, part = a.get("stage", 0), a.get("part")
        if not is_int(stage):
            j.refuse("sched.type", f"{where}.stage = {_short(stage)}")
        elif stage < 0 or (decl is not None and is_int(decl.get("stages", 1)) and stage >= decl.get("stages", 1)):
            j.refuse("sched.range", f"{where}.stage = {stage} out of range")
        if part is not None:
            if not is_int(part):
                j.refuse("sched.type", f"{where}.part = {_short(part)}")
            elif part != -1 and (part < 0 or (decl is not None and is_int(decl.get("parts", 1))
                                              and part >= decl.get("parts", 1))):
                j.refuse("sched.range", f"{where}.part = {part} out of range")
        if "content" in a and not isinstance(a["content"], str):
            j.refuse("sched.type", f"{where}.content = {_short(a['content'])}")

    def value(self, where: str, typ: str, v: Any) -> None:
        j = self.j
        if typ in (_POS, _NONNEG, _INT, _PARITY):
            if not is_int(v):
                j.refuse("sched.type", f"{where} = {_short(v)} is not an integer")
            elif typ == _POS and v < 1:
                j.refuse("sched.size", f"{where} = {v} must be positive")
            elif typ == _NONNEG and v < 0:
                j.refuse("sched.size", f"{where} = {v} is negative")
            elif typ == _PARITY and v not in (0, 1):
                j.refuse("sched.range", f"{where} = {v} is no parity")
        elif typ == _WIDTH:
            if not is_int(v):
                j.refuse("sched.type", f"{where} = {_short(v)} is not an integer")
            elif v not in (1, 2, 4, 8, 16):
                j.refuse("sched.range", f"{where} = {v} is no load width")
        elif typ == _WAYS:
            if not is_int(v):
                j.refuse("sched.type", f"{where} = {_short(v)} is not an integer")
            elif v < 1:
                j.refuse("sched.size", f"{where} = {v} must be positive")
            elif v > 32:
                j.refuse("sched.range", f"{where} = {v} is more than 32-way")
        elif typ == _LINES:
            if v is None:
                return
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                j.refuse("sched.type", f"{where} = {_short(v)} is not a number")
            elif not 1 <= v <= 32:
                j.refuse("sched.range", f"{where} = {v} is not 1 to 32 lines")
        elif typ == _DESC:
            if not isinstance(v, str) or v not in DESCRIPTOR_PATHS:
                j.refuse("sched.range", f"{where} = {_short(v)} is no descriptor path")
        elif typ == _NAME:
            if not isinstance(v, str):
                j.refuse("sched.type", f"{where} = {_short(v)} is not a string")
            elif not v:
                j.refuse("sched.range", f"{where} is empty")
        elif typ == _OPBYTES:
            if not is_int(v):
                j.refuse("sched.type", f"{where} = {_short(v)} is not an integer")
            elif v not in (1, 2, 4):
                j.refuse("sched.range", f"{where} = {v} is no operand width")
        elif typ == _INT_OPT:
            if v is not None and not is_int(v):
                j.refuse("sched.type", f"{where} = {_short(v)}")
        elif typ == _STR:
            if not isinstance(v, str):
                j.refuse("sched.type", f"{where} = {_short(v)} is not a string")
        elif typ == _BOOL:
            if not isinstance(v, bool):
                j.refuse("sched.type", f"{where} = {_short(v)} is not true/false")
        elif typ == _ISSUER:
            if not isinstance(v, str) or v not in ISSUERS:
                j.refuse("sched.range", f"{where} = {_short(v)} is no issuer")
        elif typ == _TILE:
            if v is not None and not (isinstance(v, list) and len(v) == 2 and all(is_int(x) for x in v)):
                j.refuse("sched.type", f"{where} = {_short(v)} is not [m, n]")
        elif typ == _BARRIER:
            if not isinstance(v, str):
                j.refuse("sched.type", f"{where} = {_short(v)}")
            elif v not in self.barriers:
                j.refuse("sched.undeclared", f"{where}: barrier {v!r} is not declared")
        elif typ == _ACCESS:
            self.access(where, v)
        elif typ == _ACCESSES:
            if not isinstance(v, list):
                j.refuse("sched.type", f"{where} = {_short(v)} is not a list")
            else:
                for i, a in enumerate(v):
                    self.access(f"{where}[{i}]", a)


BOM = b"\xef\xbb\xbf"


def judge_schedule_bytes(data: bytes) -> tuple[Judgement, Any]:
    j = Judgement()
    if data.startswith(BOM):
        return j, None  # a UTF-8 BOM: accepting it is as reasonable as refusing it
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        j.refuse("file.utf8", f"byte {e.start} is not UTF-8")
        return j, None
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        j.refuse("json.syntax", f"not valid JSON ({e})")
        return j, None
    judge_schedule(j, doc)
    return j, doc


def judge_schedule(j: Judgement, d: Any, known_extra: tuple[str, ...] = ()) -> None:
    if not isinstance(d, dict):
        j.refuse("sched.top", f"top level is {type(d).__name__}, not an object")
        return
    s = _Sched(j)
    if not (is_int(d.get("protosim_schedule")) and d.get("protosim_schedule") == 1):
        j.refuse("sched.schema", f"protosim_schedule = {_short(d.get('protosim_schedule'))}")
    for key in d:
        if key not in SCHEDULE_KEYS and key not in SCHEDULE_OPTIONAL and key not in known_extra:
            j.refuse("sched.unknown_field", f"top-level {key!r}")
    for key in ("name", "arch", "barriers", "buffers", "roles", "ctas"):
        if key not in d:
            j.refuse("sched.missing", f"no {key!r}")
    if "l2_at_launch" in d and d["l2_at_launch"] not in ("cold", "inputs"):  # a launch condition: two values
        j.refuse("sched.range", f"l2_at_launch = {_short(d['l2_at_launch'])}")
    if "regs_per_thread" in d:  # what ptxas allocated: 0 (not stated) .. 255
        regs = d["regs_per_thread"]
        if not is_int(regs):
            j.refuse("sched.type", f"regs_per_thread = {_short(regs)} is not an integer")
        elif not 0 <= regs <= 255:
            j.refuse("sched.range", f"regs_per_thread = {regs} is not 0..255")
    if "name" in d and not isinstance(d["name"], str):
        j.refuse("sched.type", f"name = {_short(d['name'])}")
    arch = d.get("arch")
    if "arch" in d and arch_nonsense(arch):
        j.refuse("sched.arch", f"arch = {_short(arch)} names no profile")
    a = arch.lower() if isinstance(arch, str) else None
    # declarations
    barriers = d.get("barriers", [])
    if not isinstance(barriers, list):
        j.refuse("sched.type", "barriers is not a list")
        barriers = []
    for i, b in enumerate(barriers):
        if not isinstance(b, dict):
            j.refuse("sched.type", f"barriers[{i}] is not an object")
            continue
        for key in b:
            if key not in ("name", "count"):
                j.refuse("sched.unknown_field", f"barriers[{i}].{key}")
        if not isinstance(b.get("name"), str):
            j.refuse("sched.type" if "name" in b else "sched.missing", f"barriers[{i}].name = {_short(b.get('name'))}")
        else:
            s.barriers[b["name"]] = b
        if "count" not in b:
            j.refuse("sched.missing", f"barriers[{i}].count")
        else:
            s.value(f"barriers[{i}].count", _NONNEG, b["count"])  # init with 0: UB the model reports, as arrive
    buffers = d.get("buffers", [])
    if not isinstance(buffers, list):
        j.refuse("sched.type", "buffers is not a list")
        buffers = []
    for i, b in enumerate(buffers):
        if not isinstance(b, dict):
            j.refuse("sched.type", f"buffers[{i}] is not an object")
            continue
        for key in b:
            if key not in BUFFER_KEYS:
                j.refuse("sched.unknown_field", f"buffers[{i}].{key}")
        if not isinstance(b.get("name"), str):
            j.refuse("sched.type" if "name" in b else "sched.missing", f"buffers[{i}].name")
        else:
            s.buffers[b["name"]] = b
        space = b.get("space")
        if space not in ("smem", "tmem"):
            j.refuse("sched.range" if "space" in b else "sched.missing", f"buffers[{i}].space = {_short(space)}")
        for key, typ in (("stages", _POS), ("parts", _POS), ("align", _POS), ("bytes", _NONNEG), ("columns", _NONNEG)):
            if key in b:
                s.value(f"buffers[{i}].{key}", typ, b[key])
        if is_int(b.get("parts", 1)) and b.get("parts", 1) > 1024:  # one part per thread at most: 1,024 per CTA
            j.refuse("sched.range", f"buffers[{i}].parts = {b['parts']}: more parts than threads in a CTA")
        if space == "smem" and is_int(b.get("bytes", 0)) and b.get("bytes", 0) == 0:
            j.refuse("sched.size", f"buffers[{i}]: a shared-memory buffer of 0 bytes")
        if space == "tmem" and is_int(b.get("columns", 0)) and b.get("columns", 0) == 0:
            j.refuse("sched.size", f"buffers[{i}]: a TMEM buffer of 0 columns")
    roles = d.get("roles", [])
    if not isinstance(roles, list):
        j.refuse("sched.type", "roles is not a list")
        roles = []
    if "roles" in d and isinstance(d["roles"], list) and not roles:
        j.refuse("sched.empty", "no roles")
    for i, r in enumerate(roles):
        if not isinstance(r, dict):
            j.refuse("sched.type", f"roles[{i}] is not an object")
            continue
        for key in r:
            if key not in ("name", "warps"):
                j.refuse("sched.unknown_field", f"roles[{i}].{key}")
        if not isinstance(r.get("name"), str):
            j.refuse("sched.type" if "name" in r else "sched.missing", f"roles[{i}].name")
        if "warps" not in r:
            j.refuse("sched.missing", f"roles[{i}].warps")
        else:
            s.value(f"roles[{i}].warps", _POS, r["warps"])
    ctas = d.get("ctas", [])
    if not isinstance(ctas, list):
        j.refuse("sched.type", "ctas is not a list")
        ctas = []
    if "ctas" in d and isinstance(d["ctas"], list) and not ctas:
        j.refuse("sched.empty", "no CTAs")
    for ci, c in enumerate(ctas):
        if not isinstance(c, dict):
            j.refuse("sched.type", f"ctas[{ci}] is not an object")
            continue
        for key in c:
            if key not in ("index", "roles"):
                j.refuse("sched.unknown_field", f"ctas[{ci}].{key}")
        if "index" not in c:
            j.refuse("sched.missing", f"ctas[{ci}].index")
        elif not is_int(c["index"]):
            j.refuse("sched.type", f"ctas[{ci}].index = {_short(c['index'])}")
        progs = c.get("roles")
        if not isinstance(progs, list):
            j.refuse("sched.type" if "roles" in c else "sched.missing", f"ctas[{ci}].roles")
            continue
        if isinstance(d.get("roles"), list) and len(progs) != len(d["roles"]):
            j.refuse("sched.shape", f"ctas[{ci}] has {len(progs)} programs for {len(d['roles'])} roles")
        for ri, ops in enumerate(progs):
            if not isinstance(ops, list):
                j.refuse("sched.type", f"ctas[{ci}].roles[{ri}] is not a list")
                continue
            for oi, op in enumerate(ops):
                where = f"ctas[{ci}].roles[{ri}][{oi}]"
                if not isinstance(op, dict):
                    j.refuse("sched.type", f"{where} is not an op object")
                    continue
                kind = op.get("op")
                schema = OP_SCHEMA.get(kind) if isinstance(kind, str) else None
                if schema is None:
                    j.refuse("sched.unknown_op", f"{where}: op {_short(kind)}")
                    continue
                full = {**_COMMON, **schema}
                for key, v in op.items():
                    if key == "op":
                        continue
                    if key not in full:
                        j.refuse("sched.unknown_field", f"{where} ({kind}).{key}")
                        continue
                    s.value(f"{where} ({kind}).{key}", full[key][0], v)
                for key, (_, required) in schema.items():
                    if required and key not in op:
                        j.refuse("sched.missing", f"{where} ({kind}) lacks {key}")
                if a == "gb10" and kind in WGMMA_OPS + TMA_OPS:
                    j.refuse("sched.arch_op", f"{where}: {kind} on gb10 (no wgmma / TMA)")
                if a in ("h200", "gb10") and kind in TCGEN05_OPS:
                    j.refuse("sched.arch_op", f"{where}: {kind} (tcgen05/TMEM) on {a}")


# --------------------------------------------------------------------------- TTGIR + launch JSON

_NUM_WARPS = re.compile(r'"ttg\.num-warps"\s*=\s*([^\s:,}]+)')
_TARGET = re.compile(r'ttg\.target\s*=\s*"([^"]*)"')
GB10_CAPS = ("80", "86", "89", "120", "121")
LAUNCH_SIZES = ("M", "N", "K", "ctas")


def _braces(text: str) -> int:
    depth = 0
    in_str = False
    prev = ""
    for ch in text:
        if in_str:
            if ch == '"' and prev != "\\":
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        prev = ch
    return depth


def judge_ttgir(j: Judgement, data: bytes | None, step_consts: dict[str, int] | None = None) -> None:
    """Rules on a TTGIR text; ``step_consts`` maps the SSA names the fuzzer introduced
    as loop steps to their values."""
    if data is None or data.startswith(BOM):
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        j.refuse("file.utf8", f"TTGIR byte {e.start} is not UTF-8")
        return
    if "tt.func" in text and _braces(text) > 0:
        j.refuse("ttgir.truncated", f"{_braces(text)} unclosed brace(s)")
    m = _NUM_WARPS.search(text)
    if m:
        v = m.group(1)
        if not v.isdigit() or int(v) < 1:
            j.refuse("ttgir.num_warps", f'"ttg.num-warps" = {v}')
    for name, value in (step_consts or {}).items():
        if value <= 0 and re.search(rf"scf\.for\s+%[\w.]+\s*=\s*%[\w.]+\s+to\s+%[\w.]+\s+step\s+{re.escape(name)}\b", text) \
                and re.search(rf"{re.escape(name)}\s*=\s*arith\.constant\s+{value}\b", text):
            j.refuse("ttgir.step", f"scf.for step {value}")
    t = _TARGET.search(text)
    if t and t.group(1).split(":")[-1] in GB10_CAPS:
        body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
        if re.search(r"=\s*ttng\.warp_group_dot\b|^\s*ttng\.warp_group_dot\b", body, re.M):
            j.refuse("ttgir.arch_op", f"wgmma (ttng.warp_group_dot) with target {t.group(1)} (gb10)")
        if "ttng.async_tma_copy_global_to_local" in body:
            j.refuse("ttgir.arch_op", f"TMA copies with target {t.group(1)} (gb10)")


def judge_launch(j: Judgement, data: bytes | None, name: str = "launch JSON", known: tuple[str, ...] | None = None) -> None:
    """Rules on a launch JSON; ``known``: the keys a real launch file has (the kernel's
    arguments and ``ctas``) -- values of other keys are not judged (an unknown key may
    be ignored or refused)."""
    if data is None or data.startswith(BOM):
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        j.refuse("file.utf8", f"{name} byte {e.start} is not UTF-8")
        return
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        j.refuse("launch.syntax", f"{name} is not valid JSON ({e})")
        return
    if not isinstance(d, dict):
        j.refuse("launch.top", f"{name} is a {type(d).__name__}, not an object")
        return
    for k, v in d.items():
        if k == "grid":  # the launch grid (x, y, z): docs/triton.md, the reader's check_launch
            if not isinstance(v, list) or not 1 <= len(v) <= 3 or not all(is_int(x) and x >= 1 for x in v):
                j.refuse("launch.grid", f"{name}: grid = {_short(v)} is not a list of 1 to 3 positive integers")
            elif is_int(d.get("ctas")) and d["ctas"] != math.prod(v):
                j.refuse("launch.grid", f"{name}: grid = {v} is {math.prod(v)} CTAs, but ctas = {d['ctas']}")
            continue
        if known is not None and k not in known:
            continue
        if not is_int(v):
            j.refuse("launch.type", f"{name}: {k} = {_short(v)} is not an integer")
        elif k in LAUNCH_SIZES and v < 1:
            j.refuse("launch.size", f"{name}: {k} = {v} is not a positive size")


# --------------------------------------------------------------------------- crosscheck records


def judge_records(j: Judgement, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        if data.startswith(BOM):
            j.verdict, j.reasons = "any", []
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            j.refuse("file.utf8", f"{name}: byte {e.start} is not UTF-8")
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                j.refuse("records.syntax", f"{name}:{n} is not a JSON line")
                continue
            judge_record(j, f"{name}:{n}", r)


def judge_record(j: Judgement, where: str, r: Any) -> None:
    if not isinstance(r, dict):
        j.refuse("records.type", f"{where} is a {type(r).__name__}, not an object")
        return
    kind = r.get("kind", "outcome")
    if not isinstance(kind, str):
        j.refuse("records.type", f"{where}: kind = {_short(kind)}")
        return
    if kind != "outcome":
        return
    for key in ("step", "config", "outcome"):
        if key not in r:
            j.refuse("records.missing", f"{where}: no {key!r}")
    step, outcome = r.get("step"), r.get("outcome")
    if "step" in r and (not isinstance(step, str) or step not in STEPS):
        j.refuse("records.value", f"{where}: step = {_short(step)}")
    if "outcome" in r and (not isinstance(outcome, str) or outcome not in SILICON_OUTCOMES):
        j.refuse("records.value", f"{where}: outcome = {_short(outcome)}")
    conf = r.get("config")
    if "config" in r:
        if not isinstance(conf, dict):
            j.refuse("records.type", f"{where}: config = {_short(conf)}")
        else:
            sub = Judgement()
            delays = r.get("delays", {})
            if not isinstance(delays, dict):
                j.refuse("records.type", f"{where}: delays = {_short(delays)}")
                delays = {}
            # What protosim replays: the config with the record's delays over it; its L2
            # state comes from the record, not from the config.
            effective = {k: v for k, v in {**conf, **delays}.items() if k != "l2_at_launch"}
            judge_record_config(sub, effective)
            for reason in sub.reasons:
                j.refuse("records.config", f"{where}: {reason}")
    if outcome == "wrong":
        tiles = r.get("wrong_tiles")
        if not isinstance(tiles, list) or not all(isinstance(t, list) and len(t) == 2 and all(is_int(x) for x in t)
                                                  for t in tiles):
            j.refuse("records.value", f"{where}: wrong_tiles = {_short(tiles)}")
    if outcome == "timeout" and "timeout" in r:
        t = r["timeout"]
        if not isinstance(t, dict):
            j.refuse("records.type", f"{where}: timeout = {_short(t)}")
        elif "barrier" in t:
            for key in ("role", "k", "cta"):
                if key not in t:
                    j.refuse("records.missing", f"{where}: timeout lacks {key!r}")
            for key in ("k", "cta"):
                if key in t and not is_int(t[key]):
                    j.refuse("records.type", f"{where}: timeout.{key} = {_short(t[key])}")


def judge_record_config(j: Judgement, conf: dict[str, Any]) -> None:
    for key, value in conf.items():
        if key not in GEMM_FIELDS:
            j.refuse("records.unknown_field", f"config.{key}")
            continue
        typ, _ = GEMM_FIELDS[key]
        if typ == "int?" and value is None:
            continue
        if typ in ("int", "int?") and not is_int(value):
            j.refuse("records.type", f"config.{key} = {_short(value)}")
        elif typ == "bool" and not isinstance(value, bool):
            j.refuse("records.type", f"config.{key} = {_short(value)}")
        elif typ == "str" and not isinstance(value, str):
            j.refuse("records.type", f"config.{key} = {_short(value)}")
        elif key in GEMM_SIZES and value < 1:
            j.refuse("records.size", f"config.{key} = {value}")
        elif key in GEMM_NONNEG and value < 0:
            j.refuse("records.size", f"config.{key} = {value}")
        elif key in GEMM_CHOICES and value not in GEMM_CHOICES[key]:
            j.refuse("records.value", f"config.{key} = {_short(value)}")
        elif key == "arch" and arch_nonsense(value):
            j.refuse("records.value", f"config.arch = {_short(value)}")
