"""The public protocol-writing API (``protosim.pipeline``): the ring position's laws, the
README example run from README.md itself, a hand-written ws ring against the ws builder,
seeded bugs and what the checkers make of them, and ``python -m protosim``."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protosim.builders import BUILDERS, persistent_tiles
from protosim.config import GemmConfig
from protosim.ir import (
    Arrive,
    ArriveExpectTx,
    ScheduleError,
    TmaLoad,
    TmemAlloc,
    TmemDealloc,
    Wait,
    from_json,
    to_json,
)
from protosim.pipeline import PipelineState, ScheduleBuilder
from protosim.verdict import explore, judge

ROOT = Path(__file__).resolve().parent.parent
TILE = 128 * 64 * 2  # one 128x64 fp16 operand tile


# --------------------------------------------------------------------------- PipelineState


def test_starts():
    assert PipelineState.producer_start(3) == PipelineState(3, 0, 1, 0)
    assert PipelineState.consumer_start(3) == PipelineState(3, 0, 0, 0)


def test_advance_wraps_and_flips():
    s = PipelineState.consumer_start(2)
    seen = []
    for _ in range(6):
        seen.append((s.index, s.phase, s.count, s.use))
        s = s.advance()
    assert seen == [(0, 0, 0, 0), (1, 0, 1, 0), (0, 1, 2, 1), (1, 1, 3, 1), (0, 0, 4, 2), (1, 0, 5, 2)]


def test_one_stage_ring_flips_every_step():
    s = PipelineState.producer_start(1)
    assert [(s := s.advance()).phase for _ in range(4)] == [0, 1, 0, 1]


def test_use_ignores_the_phase():
    """A state whose phase was set wrongly (the bug) keeps the use its count gives."""
    s = PipelineState.consumer_start(2).advance(5)
    wrong = dataclasses.replace(s, phase=s.phase ^ 1)
    assert wrong.use == s.use == 2


@pytest.mark.parametrize("kwargs", [dict(stages=0), dict(stages=2, phase=2), dict(stages=2, count=-1),
                                    dict(stages=2, index=1, count=2)])
def test_invalid_states_refused(kwargs):
    with pytest.raises(ValueError):
        PipelineState(**kwargs)
    with pytest.raises(ValueError):
        PipelineState.consumer_start(2).advance(-1)


@given(stages=st.integers(1, 8), steps=st.integers(0, 200), split=st.integers(0, 200), producer=st.booleans())
def test_advance_laws(stages, steps, split, producer):
    start = PipelineState.producer_start(stages) if producer else PipelineState.consumer_start(stages)
    s = start
    for _ in range(steps):
        s = s.advance()
    assert s == start.advance(steps)  # advance(n) is n single steps
    assert start.advance(min(split, steps)).advance(steps - min(split, steps)) == s
    assert (s.index, s.count, s.use) == (steps % stages, steps, steps // stages)
    assert s.phase == start.phase ^ ((steps // stages) & 1)
    # the phase is the parity of the phase the role's wait needs: the consumer's k-th wait on a
    # stage is for fill k, the producer's for release k - 1 (phase -1 has parity 1)
    assert s.phase == (s.use - 1) % 2 if producer else s.phase == s.use % 2


# --------------------------------------------------------------------------- the README example


def _readme_example(subsection: str | None = None) -> tuple[list[tuple[str, str]], str]:
    """The fenced blocks (language, text) of README's section, and the section: its text before
    the first ``###`` subsection, or the subsection whose title starts with ``subsection``
    (tests/test_pipeline_api_cluster.py reads "A cluster")."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Writing your own protocol in Python", 1)[1].split("\n## ", 1)[0]
    head, *subs = section.split("\n### ")
    section = head if subsection is None else next(s for s in subs if s.startswith(subsection))
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    return blocks, section


def _run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    return out.getvalue()


def _mask(text: str) -> str:
    """Cycle counts may move with the timing model; the rest of the output may not."""
    return re.sub(r"[\d,]+ cycles", "N cycles", text).strip()


def test_readme_example_runs_and_prints_what_readme_says():
    blocks, _ = _readme_example()
    code = [b for lang, b in blocks if lang == "python"]
    printed = [b for lang, b in blocks if lang == "text"]
    assert len(code) == 1 and len(printed) == 2, "the section holds one python block and two output blocks"
    assert len(code[0].splitlines()) <= 40
    assert _mask(_run(code[0])) == _mask(printed[0]), "README's output block is out of date"


def test_readme_example_bug_edit_prints_what_readme_says():
    blocks, section = _readme_example()
    code = next(b for lang, b in blocks if lang == "python")
    printed = [b for lang, b in blocks if lang == "text"][1]
    edit = re.search(r"`(mma\.wait\(full, get\))` to `(mma\.wait\(full, get, parity=0\))`", section)
    assert edit, "the README names its one-line bug edit"
    assert code.count(edit[1]) == 1
    assert _mask(_run(code.replace(edit[1], edit[2]))) == _mask(printed), (
        "the README's output block for its bug edit is out of date: rerun the edited example and paste its output")


# --------------------------------------------------------------------------- a ws-style ring


def ring(stages=2, k_tiles=6, ctas=2, consumer_parity=None, producer_parity=None, tx_delta=0, arch="h200"):
    """The ws kernel's ring (one TMA warp, one wgmma warpgroup), written with the API;
    ``*_parity`` (a function of the state) and ``tx_delta`` seed bugs."""
    b = ScheduleBuilder("ring", arch=arch)
    full = b.barriers("full", stages)
    empty = b.barriers("empty", stages, starts_free=True)
    A, B = b.buffer("A", stages=stages, bytes=TILE), b.buffer("B", stages=stages, bytes=TILE)
    mma, producer = b.role("mma", 4), b.role("producer", 1)
    for m, n in b.grid(ctas):
        mma.init(full, empty)
        b.cta_sync()
        put, get = PipelineState.producer_start(stages), PipelineState.consumer_start(stages)
        for k in range(k_tiles):
            b.tag(k=k)
            producer.wait(empty, put, parity=producer_parity and producer_parity(put))
            producer.tma_load(full, put, TILE, A.at(put, f"A[m={m},k={k}]"))
            producer.tma_load(full, put, TILE, B.at(put, f"B[n={n},k={k}]"))
            producer.arrive_expect_tx(full, put, bytes=2 * TILE + tx_delta)
            mma.wait(full, get, parity=consumer_parity and consumer_parity(get))
            mma.wgmma(128, 128, 64, reads=[A.at(get, f"A[m={m},k={k}]"), B.at(get, f"B[n={n},k={k}]")],
                      accumulate=k > 0)
            mma.wgmma_commit()
            mma.wgmma_wait(0)
            mma.arrive(empty, get)
            put, get = put.advance(), get.advance()
        b.cta_sync()
    return b.build()


def test_correct_ring_is_clean():
    s = ring()
    verdict, _ = judge(s)
    assert verdict.ok and verdict.outcome.kind == "correct", [f.message for f in verdict.findings]
    assert explore(s, runs=12).kinds() == {"correct"}
    assert from_json(to_json(s)) == s  # and it replays from JSON


@pytest.mark.parametrize("stages,k_tiles", [(1, 3), (3, 7), (4, 4)])
def test_correct_ring_other_shapes(stages, k_tiles):
    verdict, _ = judge(ring(stages, k_tiles, ctas=1))
    assert verdict.ok, verdict.kinds()


def test_bug_consumer_phase_never_flips():
    """Parity 0 on every full wait: the second round returns on the first round's phase."""
    s = ring(consumer_parity=lambda state: 0)
    verdict, _ = judge(s)
    assert not verdict.ok
    assert {"early_return", "wrong_parity"} <= set(verdict.kinds())
    waits = [op for op in s.ctas[0].roles[0] if isinstance(op, Wait)]
    assert [op.use for op in waits] == [0, 0, 1, 1, 2, 2]  # the intent survives the bug
    assert "wrong" in explore(s, runs=12).kinds()


def test_bug_expect_tx_short():
    """arrive.expect_tx 1 KiB short of the two loads: the tx count never balances."""
    verdict, _ = judge(ring(tx_delta=-1024))
    assert not verdict.ok
    assert {"tx_mismatch", "deadlock"} <= set(verdict.kinds())
    assert verdict.outcome.kind == "deadlock"


def test_bug_producer_starts_at_phase_zero():
    """The producer started like a consumer: its first wait on a free stage asks for parity 0."""
    verdict, _ = judge(ring(producer_parity=lambda state: state.phase ^ 1))
    assert {"wrong_parity", "deadlock"} <= set(verdict.kinds())


def test_tcgen05_ring_is_clean():
    """The same ring on Blackwell: one thread issues tcgen05.mma into TMEM and its commit releases the stage."""
    b = ScheduleBuilder("b200-ring", arch="b200")
    full, empty = b.barriers("full", 2), b.barriers("empty", 2, starts_free=True)
    A, B = b.buffer("A", stages=2, bytes=TILE), b.buffer("B", stages=2, bytes=TILE)
    acc = b.buffer("acc", space="tmem", columns=128, align=128)
    mma, producer = b.role("mma", 1), b.role("producer", 1)
    for m, n in b.grid(2):
        mma.init(full, empty)
        mma.op(TmemAlloc(columns=128, issuer="warp0"))
        b.cta_sync()
        put, get = PipelineState.producer_start(2), PipelineState.consumer_start(2)
        for k in range(5):
            b.tag(k=k)
            producer.wait(empty, put)
            producer.tma_load(full, put, TILE, A.at(put, f"A[m={m},k={k}]"))
            producer.tma_load(full, put, TILE, B.at(put, f"B[n={n},k={k}]"))
            producer.arrive_expect_tx(full, put, bytes=2 * TILE)
            mma.wait(full, get)
            mma.mma(128, 128, 64, reads=[A.at(get, f"A[m={m},k={k}]"), B.at(get, f"B[n={n},k={k}]")],
                    writes=[acc.at(0, f"acc{(m, n)}@k={k}")], accumulate=k > 0)
            mma.commit(empty, get)
            put, get = put.advance(), get.advance()
        b.cta_sync()
        mma.op(TmemDealloc(columns=128, issuer="warp0"))
    s = b.build()
    assert [op.issuer for op in s.ctas[0].roles[0] if op.kind in ("mma", "mma_commit")] == ["one"] * 10
    verdict, _ = judge(s)
    assert verdict.ok, [f.message for f in verdict.findings]


def _sync_ops(ops):
    """What the checkers key on, per op: kind, barrier, parity, use and tags."""
    return [(op.kind, op.barrier, getattr(op, "parity", None), op.use, op.tile, op.k, getattr(op, "bytes", None))
            for op in ops if isinstance(op, (Wait, Arrive, ArriveExpectTx, TmaLoad))]


@pytest.mark.parametrize("knobs", [{}, {"wait_parity_flip": "tma"}, {"wait_parity_flip": "mma"},
                                   {"skip_mma_phase_flip": True}, {"expect_tx_delta": -512}])
def test_same_tags_and_parities_as_the_ws_builder(knobs):
    """The ws builder counts uses per barrier (a Pipeline); Role methods take them from the cursor
    (count // stages).  Asked for the same kernel, the two agree op by op."""
    cfg = GemmConfig(arch="h200", M=256, N=256, K=320, PIPE_DEPTH=2, sm_count=3, **knobs)
    ws = BUILDERS["hgemm_ws"](cfg)
    depth, k_tiles = cfg.PIPE_DEPTH, cfg.k_tiles
    b = ScheduleBuilder("ws", arch="h200")
    tma_bar = b.barriers("tma_bar", depth)
    empty_bar = b.barriers("empty_bar", depth, starts_free=True)
    A, B = b.buffer("A", stages=depth, bytes=TILE), b.buffer("B", stages=depth, bytes=TILE)
    mma, producer = b.role("mma", 4), b.role("producer", 1)
    flip_full = knobs.get("wait_parity_flip") == "tma"
    flip_empty = knobs.get("wait_parity_flip") == "mma"
    for tiles in persistent_tiles(cfg.m_tiles, cfg.n_tiles, 3, cfg.l2_group_size):
        b.cta()  # a persistent CTA: several tiles
        put, get = PipelineState.producer_start(depth), PipelineState.consumer_start(depth)
        for m, n in tiles:
            for k in range(k_tiles):
                b.tag(tile=(m, n), k=k)
                parity = 1 if knobs.get("skip_mma_phase_flip") else put.phase
                producer.wait(empty_bar, put, parity=parity ^ flip_empty)
                producer.tma_load(tma_bar, put, TILE, A.at(put, f"A[m={m},k={k}]"))
                producer.tma_load(tma_bar, put, TILE, B.at(put, f"B[n={n},k={k}]"))
                producer.arrive_expect_tx(tma_bar, put, bytes=2 * TILE + knobs.get("expect_tx_delta", 0))
                mma.wait(tma_bar, get, parity=get.phase ^ flip_full)
                mma.arrive(empty_bar, get)
                put, get = put.advance(), get.advance()
    mine = b.build()
    assert len(mine.ctas) == len(ws.ctas) == 3
    for a, w in zip(mine.ctas, ws.ctas, strict=True):
        for role in (0, 1):
            assert _sync_ops(a.roles[role]) == _sync_ops(w.roles[role])


# --------------------------------------------------------------------------- builder errors


def test_builder_refuses_mismatched_and_undeclared():
    b = ScheduleBuilder("bad")
    full = b.barriers("full", 2)
    r = b.role("r", 1)
    with pytest.raises(ValueError, match="ring of 3"):
        r.wait(full, PipelineState.consumer_start(3))
    with pytest.raises(ValueError, match="already declared"):
        b.barriers("full", 2)
    with pytest.raises(TypeError, match="unknown keyword"):
        r.wait(full, PipelineState.consumer_start(2), tiel=(0, 0))
    A = b.buffer("A", stages=2, bytes=TILE)
    r.tma_load(full, PipelineState.producer_start(2), TILE, A.at(0, "x"))
    with pytest.raises(ScheduleError, match="before the first cta"):
        next(b.grid(2))
    b2 = ScheduleBuilder("no-roles")
    with pytest.raises(ScheduleError, match="no roles"):
        b2.build()


def test_op_escape_hatch_takes_current_tags():
    b = ScheduleBuilder("hatch")
    bar = b.barrier("bar")
    r = b.role("r", 1)
    r.init(bar)
    b.tag(tile=(1, 2), k=3)
    r.op(Arrive(barrier="bar", use=0, issuer="one"))
    r.wait(bar, PipelineState.consumer_start(1))
    ops = b.build().ctas[0].roles[0]
    assert (ops[-2].tile, ops[-2].k) == ((1, 2), 3)
    assert ops[-1] == Wait(barrier="bar", parity=0, use=0, tile=(1, 2), k=3)


# --------------------------------------------------------------------------- python -m protosim


def test_python_m_protosim_help():
    p = subprocess.run([sys.executable, "-m", "protosim", "--help"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: protosim")
