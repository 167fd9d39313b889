"""Schedule IR: JSON round trip, stable content hash, and loud errors for bad schedules."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import build
from protosim.ir import ScheduleError, Wait, content_hash, dumps, from_json, loads, to_json, validate

BUILT = [("hgemm_v1", {}), ("hgemm_v4", {"K": 256, "tma_issuer": "each_warp"}),
         ("hgemm_v5", {"K": 512, "arch": "h200"}), ("hgemm_v6", {"M": 256, "N": 256, "K": 192, "sm_count": 2})]


@pytest.mark.parametrize("builder,config", BUILT)
def test_json_round_trip_is_identity(builder, config):
    s = build(builder, **config)
    again = loads(dumps(s))
    assert again == s
    assert content_hash(again) == content_hash(s)
    # through real JSON text, not just our own dumps
    assert from_json(json.loads(json.dumps(to_json(s)))) == s


def test_hash_is_stable_and_sensitive():
    a = build("hgemm_v4", K=256)
    b = build("hgemm_v4", K=256)
    assert content_hash(a) == content_hash(b)
    # flip one wait's parity deep inside the program: the hash must change
    ops = list(a.ctas[0].roles[0])
    i = next(i for i, op in enumerate(ops) if isinstance(op, Wait))
    ops[i] = dataclasses.replace(ops[i], parity=ops[i].parity ^ 1)
    changed = dataclasses.replace(a, ctas=(dataclasses.replace(a.ctas[0], roles=(tuple(ops),)),))
    assert content_hash(changed) != content_hash(a)
    # config is informative only
    assert content_hash(dataclasses.replace(a, config={"anything": 1})) == content_hash(a)


def test_op_repr_is_python():
    s = build("hgemm_v4", K=64)
    from protosim import ir

    for op in s.ctas[0].roles[0]:
        assert eval(repr(op), vars(ir)) == op


def _mutate(d, fn):
    d = json.loads(json.dumps(d))
    fn(d)
    return d


@pytest.mark.parametrize(
    "mutation,needle",
    [
        (lambda d: d["ctas"][0]["roles"][0].append({"op": "frobnicate"}), "unknown op 'frobnicate'"),
        (lambda d: d["ctas"][0]["roles"][0].append({"op": "wait", "barrier": "mma_bar", "parity": 0, "use": 0, "colour": 1}), "no field(s) ['colour']"),
        (lambda d: d["ctas"][0]["roles"][0].append({"op": "wait", "barrier": "nope", "parity": 0, "use": 0}), "barrier 'nope' is not declared"),
        (lambda d: d["ctas"][0]["roles"][0].append({"op": "wait", "barrier": "mma_bar", "parity": 2, "use": 0}), "a parity is 0 or 1"),
        (lambda d: d["ctas"][0]["roles"][0].append({"op": "tma_load", "barrier": "tma_bar[0]", "use": 0, "bytes": 1, "dst": {"buffer": "A", "stage": 5}}), "stage 5 of 'A'"),
        (lambda d: d.pop("barriers"), "missing field 'barriers'"),
        (lambda d: d.pop("protosim_schedule"), "not a protosim schedule"),
    ],
)
def test_bad_schedules_are_rejected_with_the_reason(mutation, needle):
    d = _mutate(to_json(build("hgemm_v4", K=64)), mutation)
    with pytest.raises(ScheduleError, match=None) as err:
        from_json(d)
    assert needle in str(err.value)


def test_validate_accepts_every_builder_output(small_seed_configs):
    for builder, config in small_seed_configs:
        validate(build(builder, **config))
