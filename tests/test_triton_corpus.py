"""The reader on real Triton and Gluon compiler output nobody here hand-wrote
(tests/fixtures/triton/{corpus,gluon}; tests/triton_corpus.py judges a record).

* every record reads, or is refused with a message naming the op and its line;
* the shared memory of the IR printed after Triton's allocation pass is the metadata's;
* every Triton corpus kernel (each ran correctly on the H200) replays with no finding;
* every Gluon kernel gets the verdict its Triton sanitizer test expects, except the
  disagreements listed in :data:`KNOWN`, each with its reason (strict xfails: one that
  starts agreeing fails the suite until it is taken off the list).
"""

from __future__ import annotations

import re

import pytest

from protosim.frontends.ttgir import metadata, parse
from tests.triton_corpus import CORPORA, FORMS, judge_record, path_of, records

_REASONS = {
    "attn_tma_ws_d64_128x64_s3_w4.sm100": (
        "false positive of phase inference: the default partition waits once, after its loop, on a barrier "
        "that completes every iteration; a role's waits are numbered by alternating parity, so that wait gets "
        "the wrong phase (lapped_wait) and the release it acquires carries later data (raw_hazard)"),
    "triton-3.6.0/mm_tma_dev_ws_128x128x64_s3_w4.sm100": (
        "Triton 3.6 invalidates the MMA barriers before waiting for the last tcgen05.commit, whose arrival can "
        "land on an invalidated mbarrier (undefined, PTX): use_before_init. 3.9 waits first. sm_100 cannot run "
        "on the H200 to confirm"),
    "cp_async_wait_group-failure": (
        "two unordered writes into one stage (a cp.async while the previous one is in flight): ConSan flags "
        "write-after-write, protosim's races checker does not check consecutive writes"),
    "tcgen05_multibar-buf0_bar1": (
        "the kernel invalidates its barriers while tcgen05 commits it never waited for are in flight: arriving "
        "on an invalidated mbarrier is undefined (PTX), reported as use_before_init, which ConSan does not check; "
        "in the failure variant the trap ends the replay before the race it seeds"),
    "tcgen05_multibar-buf1_bar1": "as tcgen05_multibar-buf0_bar1",
    "tcgen05_tmem_store-failure": (
        "as tcgen05_multibar: the barriers are invalidated under in-flight commits, the use_before_init trap "
        "ends the replay before the seeded race"),
    "h8_paged_decode_gqa": (
        "its KV loop runs to a sequence length the kernel loads from memory (tl.load(lens_ptr + b)): a data-dependent "
        "bound the reader refuses (it follows control flow from launch values only)"),
    "h9_meanpool_len": (
        "its sequence loop runs to a length the kernel loads from memory (tl.load(len_ptr + b)): a data-dependent "
        "bound the reader refuses, as h8_paged_decode_gqa's"),
    "ws_alias_views-missing_disjoint": (
        "the partitions use disjoint subslices of one buffer; a shared-memory subslice is modelled as its whole "
        "stage, so the reader sees a war_race that disjoint ranges cannot have"),
}
KNOWN: dict[str, str] = {}
"""``<corpus>:<file>:<form>`` -> why protosim's verdict differs from the expected one (each a strict xfail)."""

CASES = [(c, r, f) for c in CORPORA for r in records(c) for f in FORMS]


def _id(case) -> str:
    corpus, rec, form = case
    return f"{corpus}:{rec['file'].removesuffix('.ttgir')}:{form}"


def _known(case) -> str | None:
    """The reason a record is a known disagreement: :data:`KNOWN` by id, else :data:`_REASONS` by name."""
    return KNOWN.get(_id(case)) or next((why for key, why in _REASONS.items() if key in case[1]["file"]), None)


HEAVY = ("adamw_16m_b1024_w4", "adamw_persist_12m_b4096_s2_w8", "ho_persist_ptr_4096x4096x1024",
         "ho_persist_ptr_2048x8192x1024", "h3_softmax_n256_r8", "h3_softmax_n128_r32")
"""Held-out records whose one-CTA replay takes 10-45 s on a 2-core CI machine (a grid-stride or
persistent loop run by one CTA does the whole grid's iterations): their ``alloc.mlir`` form -- the
same kernel again after Triton's allocation passes -- runs under ``make slow``; the default run
judges their ``ttgir`` form."""


def _marks(case):
    reason = _known(case)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    corpus, rec, form = case
    if corpus.startswith("heldout") and form == "alloc.mlir" and any(h in rec["file"] for h in HEAVY):
        marks.append(pytest.mark.slow)
    if corpus == "alignment" and "adamw" in rec["file"]:
        marks.append(pytest.mark.slow)  # set 6's AdamW at other lengths (20-45 s each): its verdicts are set 6's

    return pytest.param(*case, id=_id(case), marks=marks)


def test_the_corpus_is_what_the_issue_asks_for():
    triton, gluon = records("corpus"), records("gluon")
    assert len({r["file"] for r in triton + gluon}) >= 40
    assert {r["triton"] for r in triton} == {r["triton"] for r in gluon} == {"3.6.0", "3.9.0"}
    assert {"sm80", "sm90", "sm100", "sm121"} <= {r["target"] for r in triton}
    expected = {r["expected"] for r in gluon}
    assert "clean" in expected and len(expected) >= 5  # bug kinds as well as valid kernels


@pytest.mark.parametrize("corpus, record", [(c, r) for c in CORPORA for r in records(c)],
                         ids=[f"{c}:{r['file']}" for c in CORPORA for r in records(c)])
def test_allocated_ir_carries_the_metadatas_shared_memory(corpus, record):
    path = path_of(corpus, record, "alloc.mlir")
    mod = parse(path.read_text(), str(path))
    assert mod.module_shared is not None, "the IR after Triton's allocation pass has ttg.shared"
    assert mod.shared_bytes == metadata(path)["shared"]


@pytest.mark.parametrize("corpus, record, form", [_marks(c) for c in CASES])
def test_verdict_agrees_with_the_record(corpus, record, form):
    j = judge_record(corpus, record, form)
    if j.refused:
        # A refusal must name the op (or file) and the line -- and is a disagreement all the same.
        assert re.search(r"line \d+|metadata|launch", j.refused), j.refused
    assert j.agrees, (f"{j.file} ({form}) expected {j.expected}: "
                      + (f"refused: {j.refused}" if j.refused else f"{j.outcome}, findings {list(j.kinds) or 'none'}"))


# Seeded edits of real compiler output: one line changed, the kind protosim must report.
# (line number, old text, new text) on the Triton 3.9 files; each edit is a bug a person makes
# when writing such a pipeline by hand, which is what Gluon lets them do.
TMA_SM90 = "triton-3.9.0/mm_tma_dev_128x128x64_s3_w4.sm90"
WS_SM100 = "triton-3.9.0/mm_tma_dev_ws_128x128x64_s3_w4.sm100"
EDITS = [
    ("phase not flipped (consumer of the TMA ring)", TMA_SM90, 83, "ttng.wait_barrier %acc_38, %acc_37",
     "ttng.wait_barrier %acc_38, %c0_i32", {"wrong_parity"}),
    ("expect_tx one tile short", TMA_SM90, 93, "ttng.barrier_expect %acc_47, 32768", "ttng.barrier_expect %acc_47, 16384",
     {"tx_out_of_range", "tx_mismatch"}),
    ("MMA partition does not wait for the loads", WS_SM100, 112, "ttng.wait_barrier %acc_53, %acc_52 :",
     "ttng.wait_barrier %acc_53, %c1_i32_43 :", {"raw_hazard", "raw_race", "wrong_parity"}),
    ("epilogue does not wait for the MMAs' commit", WS_SM100, 150, "ttng.wait_barrier %acc_11, %c0_i32",
     "ttng.wait_barrier %acc_11, %c1_i32", {"raw_hazard", "raw_race", "war_hazard", "war_race"}),
    # (parity 1 on a fresh barrier passes at once: the epilogue's tmem_load expects the accumulator as
    # it last knew it -- its own zero-fill -- and the MMAs' writes land on it: war_hazard)
    ("load partition's empty-slot wait flipped", WS_SM100, 139, "ttng.wait_barrier %acc_52, %a_51",
     "ttng.wait_barrier %acc_52, %a_50", {"war_hazard", "war_race", "deadlock", "wrong_parity", "early_return"}),
]


@pytest.mark.parametrize("label, file, line, old, new, kinds", EDITS, ids=[e[0] for e in EDITS])
def test_seeded_edits_of_compiler_output_are_found(tmp_path, label, file, line, old, new, kinds):
    from protosim.frontends.ttgir import read
    from protosim.verdict import judge

    src = path_of("corpus", {"file": file}, "ttgir")
    lines = src.read_text().splitlines()
    assert old in lines[line - 1], f"{label}: line {line} is not {old!r}"
    lines[line - 1] = lines[line - 1].replace(old, new)
    edited = tmp_path / src.name
    edited.write_text("\n".join(lines) + "\n")
    for side in (".json", ".launch.json"):
        (tmp_path / src.name.replace(".ttgir", side)).write_text(src.with_name(src.name.replace(".ttgir", side)).read_text())
    clean, _ = judge(read(src, launch={"ctas": 1})[0])
    assert not clean.findings, "the unedited kernel is clean"
    verdict, _ = judge(read(edited, launch={"ctas": 1})[0])
    found = {f.kind for f in verdict.findings}
    assert found & kinds, f"{label}: found {sorted(found) or 'nothing'}, outcome {verdict.outcome.kind}"
