"""The canonical schedule text (protosim.ir.dumps / content_hash) is written directly, not
through a dict per op and json.dumps: it must be json.dumps's bytes exactly, for every op
type and field type, and the hashes recorded in tests/data/eventlog_golden.json must stay."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from protosim import ir
from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.scenarios import builtin_dir, load_scenario


def _reference(s: ir.Schedule, with_config: bool = True) -> str:
    d = ir.to_json(s)
    if not with_config:
        d.pop("config")
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def _reference_hash(s: ir.Schedule) -> str:
    return hashlib.sha256(_reference(s, with_config=False).encode()).hexdigest()[:16]


ACC = ir.Access("buf\u00e9\"\\", stage=2, content="A[m=0,k=3]\n\u2028", part=ir.WARP_PART, cta=1, columns=(0, 64))


def _sample(t: str, name: str, variant: int):
    """A non-default value of a field of annotation ``t``."""
    if "Access" in t:
        acc = ACC if variant == 0 else ir.Access("b")
        return (acc, ir.Access("c", stage=1)) if t.startswith("tuple[Access") else acc
    if t.startswith("tuple[int, int]"):
        return (3, 5)
    if t.startswith("tuple[int"):
        return (0, 1, 3)
    if t.startswith("bool"):
        return True
    if t.startswith("int"):
        return [7, -1, 0][variant]
    if t.startswith("Issuer"):
        return ["one", "each_warp", "all"][variant]
    return ["x\u00e9\u0001'\"", "", "plain"][variant]


@pytest.mark.parametrize("kind", sorted(ir.OP_TYPES))
def test_op_text_is_json_dumps(kind):
    cls = ir.OP_TYPES[kind]
    fields = dataclasses.fields(cls)
    for variant in range(3):
        kw = {f.name: _sample(str(f.type), f.name, variant) for f in fields
              if variant < 2 or f.default is dataclasses.MISSING}
        op = cls(**kw)
        ref = json.dumps(ir._op_to_json(op), sort_keys=True, separators=(",", ":"))
        assert ir._op_text(op) == ref
        assert ir._fast_writer(cls)(op) == ref  # the generated writer large schedules use
    # values no builder writes still come out as json.dumps writes them (the encoder's own path)
    f = next(f for f in fields if f.default is dataclasses.MISSING) if any(
        f.default is dataclasses.MISSING for f in fields) else fields[0]
    for odd in (1.5, float("inf"), [1, (2, 3)], {"b": 1, "a": None}, 10**30, False):
        op = cls(**{**{g.name: _sample(str(g.type), g.name, 2) for g in fields if g.default is dataclasses.MISSING},
                    f.name: odd})
        ref = json.dumps(ir._op_to_json(op), sort_keys=True, separators=(",", ":"))
        assert ir._op_text(op) == ref and ir._fast_writer(cls)(op) == ref


def _schedules():
    for path in sorted(builtin_dir().glob("*.toml")):
        scenario = load_scenario(path)
        yield path.stem, scenario.build
    yield "v6 cluster-free b200 1024x1024x512", lambda: BUILDERS["hgemm_v6"](GemmConfig(M=1024, N=1024, K=512))


@pytest.mark.parametrize("name,build", list(_schedules()), ids=lambda x: x if isinstance(x, str) else "")
def test_dumps_and_hash_are_the_json_dumps_ones(name, build):
    s = build()
    if s.op_count() > 100_000:
        pytest.skip("full-chip: covered by the golden corpus's hashes")
    assert ir.dumps(s) == _reference(s)
    assert ir.content_hash(s) == _reference_hash(s)
    assert ir.content_hash(ir.loads(ir.dumps(s))) == ir.content_hash(s)


def test_hash_memo_follows_the_object():
    s = BUILDERS["hgemm_v2"](GemmConfig(K=256))
    h = ir.content_hash(s)
    assert ir.content_hash(s) == h == _reference_hash(s)
    other = dataclasses.replace(s, l2_at_launch="inputs")  # a new object: its own hash
    assert ir.content_hash(other) == _reference_hash(other) != h
    key = id(s)
    del s
    assert key not in ir._HASHES or ir._HASHES[key][0]() is not None


def test_golden_schedule_hashes():
    """The schedule hashes the golden event-log corpus recorded, for the built-in scenarios
    (the whole corpus: python -m tests.eventlog_corpus, and tests/test_eventlog_golden.py)."""
    golden = json.loads((builtin_dir().parent / "tests" / "data" / "eventlog_golden.json").read_text())["cases"]
    checked = 0
    for path in sorted(builtin_dir().glob("*.toml")):
        key = next((k for k in golden if k == f"scenario:{path.stem}"), None)
        if key is None:
            continue
        assert ir.content_hash(load_scenario(path).build()) == golden[key]["schedule"], path.stem
        checked += 1
    assert checked >= 30


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("size", [0, 1000, (1 << 20) - 1, 1 << 20, 3 << 20])
def test_sha256_is_hashlibs(size, large):
    blob = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    h = ir._sha256(large)
    for i in range(0, len(blob), 70_001):  # fed in pieces, as content_hash feeds it
        h.update(blob[i:i + 70_001])
    assert h.hexdigest() == hashlib.sha256(blob).hexdigest()


def test_large_schedule_path(monkeypatch):
    """Schedules past FAST_WRITER_OPS take the generated writers: the same text and hash."""
    s = BUILDERS["hgemm_v6"](GemmConfig(M=1024, N=1024, K=512))
    ref = _reference(s)
    monkeypatch.setattr(ir, "FAST_WRITER_OPS", 0)
    assert ir.dumps(s) == ref
    assert ir.content_hash(dataclasses.replace(s)) == _reference_hash(s)
