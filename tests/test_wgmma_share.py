"""An SM's tensor core shared by the wgmma blocks in flight (docs/semantics.md "wgmma"):
the rule (engine.resources.SharedTensorCore), the replay against the H200 microbenchmark
(kernels/microbench/wgmma_share.cu, results/silicon/microbench/2026-12-03_h200_wgmma_share.md),
and the log's spans when a later block slows an earlier one."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import Machine
from protosim.engine.resources import SharedTensorCore
from protosim.ir import Access, BufferDecl, CtaProgram, RoleDecl, Schedule, Sleep, Wgmma, WgmmaCommit, WgmmaWait

RECORD = (Path(__file__).resolve().parent.parent / "results" / "silicon" / "microbench"
          / "2026-12-03_h200_2530685_wgmma_share.jsonl")
TOLERANCE = 0.15
"""Per rank, model against measured wait return (the worst N >= 64 row is 11%)."""


def leave_times(entries: list[tuple[float, float, float, float, float]]) -> list[float]:
    """Run a SharedTensorCore over blocks (issued at, work, chain from, chain to, held); when each
    leaves the unit."""
    unit, out = SharedTensorCore(), {}
    pending = sorted(enumerate(entries), key=lambda e: e[1][0])
    while pending or unit.blocks:
        t_next = unit.next_change()
        if pending and (t_next is None or pending[0][1][0] <= t_next):
            k, (at, work, first, last, held) = pending.pop(0)
            for token in unit.leave(at):
                out[token] = at
            unit.enter(at, work, first, last, held, k)
        else:
            for token in unit.leave(t_next):
                out[token] = t_next
    return [out[k] for k in range(len(entries))]


def block(at: float, work: float = 520.0, chain: float | None = None, held: float = 130.0):
    """A block issued at ``at`` whose chain hands over its instructions over ``chain`` cycles
    (default: as fast as the unit takes them)."""
    return (at, work, at, at + (work if chain is None else chain), held)


def test_a_block_alone_leaves_as_its_chain_feeds_it():
    assert leave_times([block(0.0)]) == [pytest.approx(520.0)]
    assert leave_times([block(0.0, chain=1040.0)]) == [pytest.approx(1040.0)]


def test_blocks_that_start_together_share_the_unit():
    # equal shares: both need 2 x 520 of the unit; the first has 130 of its own served first
    first, second = leave_times([block(0.0), block(0.0)])
    assert first == pytest.approx(130 + 2 * (520 - 130))
    assert second == pytest.approx(1040.0)
    # without held instructions, plain processor sharing: both leave at the end
    assert leave_times([block(0.0, held=0.0), block(0.0, held=0.0)]) == [pytest.approx(1040.0)] * 2


def test_a_later_block_slows_the_first_less_the_later_it_starts():
    firsts = [leave_times([block(0.0), block(s)])[0] for s in (0, 128, 256, 512)]
    assert firsts == sorted(firsts, reverse=True)
    assert firsts[-1] == pytest.approx(520.0)  # started after the first left: not slowed
    # 256 apart: the first has 264 left when the second comes, 130 of it served before sharing
    assert firsts[2] == pytest.approx(256 + 130 + 2 * (264 - 130))


def test_blocks_below_their_caps_do_not_slow_each_other():
    # each fed at 0.4 of the unit by its chain: two fit side by side
    assert leave_times([block(0.0, 200.0, 500.0, 0.0), block(0.0, 200.0, 500.0, 0.0)]) == [pytest.approx(500.0)] * 2
    # a capped block's spare share goes to the other
    a, b = leave_times([block(0.0, 200.0, 800.0, 0.0), block(0.0, 600.0, None, 0.0)])
    assert a == pytest.approx(800.0) and b == pytest.approx(800.0)


def test_a_block_joins_when_its_chain_reaches_it():
    """Two warpgroups of one CTA issue together on one chain: the second's instructions come
    after the first's, so it joins then, and each alone goes at its chain's pace."""
    wg0, wg1 = leave_times([(0.0, 260.0, 0.0, 356.0, 130.0), (0.0, 260.0, 356.0, 712.0, 130.0)])
    assert wg0 == pytest.approx(356.0)
    assert wg1 == pytest.approx(712.0)


SKELETON = dataclasses.replace(load_profile("h200"), sm_count=1, wgmma_issue_overhead=0, mma_thread_issue_cycles=0)
"""The microbenchmark's block: eight instructions with their descriptors in uniform registers and
nothing built between them -- no issue chain beyond the unit's own interval (wgmma_dispatch: one
CTA's warps go on 83-125 cycles after the block, and its eight m64n128k16 take 573)."""


def skeleton(n: int, per_sm: int, stagger: int) -> Schedule:
    ctas = []
    for r in range(per_sm):
        ops = [Sleep(cycles=r * stagger)] if r * stagger else []
        ops += [Wgmma(m=128, n=n, k_elems=64, reads=(Access("A", 0, "a"), Access("B", 0, "b")),
                      writes=(Access("acc", 0, f"d{r}"),), accumulate=True), WgmmaCommit(), WgmmaWait(n=0)]
        ctas.append(CtaProgram(r, (tuple(ops),)))
    return Schedule("wgmma_share", "h200", (), (BufferDecl("A", "smem", 1, 16384), BufferDecl("B", "smem", 1, n * 128),
                                                 BufferDecl("acc", "smem", 1, 4)),
                    (RoleDecl("wg", 4),), tuple(ctas))


def waits_returned(result, ctas: int) -> list[float]:
    return [max(e.t for e in result.log.events if e.cta == c and e.kind == "observe") for c in range(ctas)]


def _rows():
    for r in map(json.loads, RECORD.read_text().splitlines()):
        if r["n"] >= 64:
            yield r


@pytest.mark.parametrize("row", list(_rows()), ids=lambda r: f"n{r['n']}-{r['per_sm']}perSM-stagger{r['stagger']}")
def test_against_the_h200(row):
    result = Machine(skeleton(row["n"], row["per_sm"], row["stagger"]), SKELETON).run()
    origin = row["ranks"][0]["start_median"]  # the common instant: each CTA reads clock64 ~45 cycles after it
    for rank, simulated in zip(row["ranks"], waits_returned(result, row["per_sm"]), strict=True):
        measured = rank["done_median"] - origin
        assert simulated == pytest.approx(measured, rel=TOLERANCE), f"rank {rank['rank']}"


@pytest.mark.xfail(strict=True, reason=(
    "m64n16k16: eight take 258 cycles alone here, 24.5 an instruction, where the unit's floor is 18 (the v4 "
    "kernel's traced block at BLK_N 16 split against the 24-cycle chain overhead of N = 128); the split of "
    "an N = 16 instruction between the chain and the unit is not modelled as this measures it"))
def test_n16_alone_against_the_h200():
    row = next(r for r in map(json.loads, RECORD.read_text().splitlines()) if r["n"] == 16 and r["per_sm"] == 1)
    (simulated,) = waits_returned(Machine(skeleton(16, 1, 0), SKELETON).run(), 1)
    measured = row["ranks"][0]["done_median"] - row["ranks"][0]["start_median"]
    assert simulated == pytest.approx(measured, rel=0.1)


def test_a_slowed_block_logs_its_real_span():
    """The first block's accesses are logged at issue; the second block slows it, and its write's
    span then ends when its group completes -- what the hazards checker reads."""
    result = Machine(skeleton(128, 2, 128), SKELETON).run()
    returned = waits_returned(result, 2)
    writes = {e.cta: e for e in result.log.events if e.kind == "access" and e.mode == "w"}
    reads = [e for e in result.log.events if e.kind == "access" and e.mode == "r" and e.cta == 0]
    alone = waits_returned(Machine(skeleton(128, 1, 0), SKELETON).run(), 1)[0]
    assert returned[0] > alone + 100  # slowed by the second block
    for c in (0, 1):
        assert writes[c].t1 == pytest.approx(returned[c])
    assert all(r.t1 == pytest.approx(returned[0] - SKELETON.mma_tail_cycles) for r in reads)
