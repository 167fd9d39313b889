"""Seeded edits of real Triton 3.6 sm_90 compiler output (tests/fixtures/triton/edits, made by
``python -m kernels.triton.edits --out tests/fixtures/triton/edits``): protosim must flag each
edit with one of its rule's finding kinds, and find nothing in the unedited kernel.

Nominal replays with the launch capped at ``CTA_CAP`` CTAs (the H200 ran the record's grid;
``predictions.json`` holds the explored outcome sets, the silicon results are in
results/silicon/triton/*_triton_corpus_edits_*).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernels.triton.edits import CORPUS, CTA_CAP, RULE_BY_NAME, Text, corpus_records, edit_name, edits_of
from protosim.frontends.ttgir import read
from protosim.verdict import judge

DIR = Path(__file__).resolve().parent / "fixtures" / "triton" / "edits"
SIDECARS = sorted(DIR.glob("*.edit.json"))
EDITS = [(s.name[: -len(".edit.json")], json.loads(s.read_text())) for s in SIDECARS]
RECORDS = {r["file"]: r for r in json.loads((CORPUS / "index.json").read_text())}

KNOWN: dict[str, str] = {
    name: ("wgmma wait relaxed where only the wgmma's *register* result is left unwaited: the loop's "
           "next warp_group_dot_wait {pendings = 0} drains it before any refill of the K/V stage, so no "
           "shared-memory access races; protosim models shared-memory hazards, not reading an "
           "accumulator before wgmma.wait_group (ptxas may serialise such a wgmma itself)")
    for name in ("attn_d64_128x64_s2_w4.sm90.dot_wait_plus1", "attn_tma_d64_128x64_s3_w4.sm90.dot_wait_plus1",
                 "attn_tma_d128_128x128_s2_w8.sm90.dot_wait_plus1")
}
"""Edits protosim does not flag, each with its reason (strict xfail: one that starts being
flagged fails the suite until it is taken off this list)."""


def _ctas(record: str) -> int:
    return min(CTA_CAP, int(RECORDS[record]["ctas"]))


def test_the_edits_are_what_the_brief_asks_for():
    assert 25 <= len(EDITS) <= 45
    rules = {m["rule"] for _, m in EDITS}
    assert rules == set(RULE_BY_NAME), f"every rule applies somewhere: {sorted(set(RULE_BY_NAME) - rules)}"
    for name, meta in EDITS:
        assert meta["record"] in RECORDS and "mm_tma_host_" not in meta["record"]
        for side in (".ttgir", ".json", ".launch.json"):
            assert (DIR / f"{name}{side}").is_file(), f"{name}{side}"
    preds = json.loads((DIR / "predictions.json").read_text())
    assert set(preds["edits"]) == {n for n, _ in EDITS}
    assert preds["cta_cap"] == CTA_CAP


def test_the_fixtures_are_what_the_rules_make():
    """The checked-in edited files are the generator's output for today's corpus (no hand edits)."""
    made = {}
    for rec in corpus_records():
        for e in edits_of(rec):
            made[edit_name(rec, e.rule)] = e.text
    assert set(made) == {n for n, _ in EDITS}
    for name, text in made.items():
        assert (DIR / f"{name}.ttgir").read_text() == text, name


def test_rules_find_their_site_generically():
    """A rule keys on the op, not on a line number: the same kernel text shifted by a line gives
    the same edit one line later."""
    rec = RECORDS["triton-3.6.0/mm_tma_dev_128x128x64_s3_w4.sm90"]
    text = (CORPUS / (rec["file"] + ".ttgir")).read_text()
    shifted = text.replace("\n", "\n// a comment line\n", 1)
    for rule in RULE_BY_NAME.values():
        a, b = rule.apply(Text(text)), rule.apply(Text(shifted))
        assert (a is None) == (b is None), rule.name
        if a is not None:
            assert [n + 1 for n in a.lines] == b.lines, rule.name


def _param(name, meta):
    reason = KNOWN.get(name)
    return pytest.param(name, meta, id=name, marks=pytest.mark.xfail(strict=True, reason=reason) if reason else ())


@pytest.mark.parametrize("name, meta", [_param(n, m) for n, m in EDITS])
def test_edit_is_flagged_with_its_rules_kind(name, meta):
    sched, _ = read(DIR / f"{name}.ttgir", launch={"ctas": _ctas(meta["record"])})
    verdict, _ = judge(sched)
    found = set(verdict.kinds())
    want = RULE_BY_NAME[meta["rule"]].kinds
    assert found & want, f"{name} ({meta['edit']}): found {sorted(found) or 'nothing'}, " \
                         f"outcome {verdict.outcome.kind}; the rule expects one of {sorted(want)}"


@pytest.mark.parametrize("record", sorted({m["record"] for _, m in EDITS}))
def test_unedited_kernel_has_no_finding(record):
    sched, _ = read(CORPUS / f"{record}.ttgir", launch={"ctas": _ctas(record)})
    verdict, _ = judge(sched)
    assert not verdict.kinds() and verdict.outcome.kind == "correct", (record, verdict.kinds())
