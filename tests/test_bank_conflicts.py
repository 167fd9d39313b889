"""Shared-memory bank conflicts: the ways a store's lane addresses give, the pipe time they cost,
and the epilogue stores the builders state (docs/semantics.md "Shared-memory bank conflicts")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.builders.gemm_cta import HOPPER, SEED
from protosim.config import GemmConfig
from protosim.engine.machine import replay
from protosim.ir import (
    Access,
    BufferDecl,
    CtaProgram,
    RoleDecl,
    Schedule,
    ScheduleError,
    SmemStore,
    from_json,
    to_json,
    validate,
)
from protosim.ptxas import bank_ways, fragment_store_ways

RECORD = Path(__file__).resolve().parent.parent / "results" / "silicon" / "microbench" / "2026-12-01_h200_639e6d7_smem_store.jsonl"


# -- the count ---------------------------------------------------------------------------

def test_consecutive_words_and_a_broadcast_are_conflict_free():
    assert bank_ways([lane * 4 for lane in range(32)]) == 1
    assert bank_ways([0] * 32) == 1  # one word: a broadcast, not 32 accesses


def test_every_lane_on_one_bank_is_32_way():
    assert bank_ways([lane * 128 for lane in range(32)]) == 32


def test_wide_stores_count_against_their_own_even_spread():
    # 16-byte stores of consecutive lanes: four words per bank is what 512 bytes need
    assert bank_ways([lane * 16 for lane in range(32)], 16) == 1
    # the same with every lane 128 bytes apart: each 16 bytes on the same four banks
    assert bank_ways([lane * 128 for lane in range(32)], 16) == 8


def _measured_cycles_per_instruction(bn: int) -> float:
    """The fragment store's cycles per warp instruction (4 warps x BN / 4 stores per 64-row
    half), one CTA, 64 halves: shared memory serves one 128-byte wavefront per cycle, so this
    is the wavefronts each instruction took."""
    rows = [json.loads(line) for line in RECORD.read_text().splitlines()]
    row = next(r for r in rows if r["pattern"] == "fragment" and r["bn"] == bn and r["grid"] == 1 and r["reps"] == 64)
    return row["cycles_per_rep_median"] / (4 * row["stores_per_thread_per_rep"])


@pytest.mark.parametrize("bn", [16, 32, 64, 128])
def test_fragment_store_ways_match_the_h200(bn):
    """The counted ways against silicon (kernels/microbench/smem_store.cu on the H200): 2.2,
    4.0, 8.0 and 8.0 cycles per instruction at BLK_N 16-128 (the loop's own cycles show most
    at 16, the shortest store)."""
    assert _measured_cycles_per_instruction(bn) == pytest.approx(fragment_store_ways(bn * 2), rel=0.12)


# -- the engine ----------------------------------------------------------------------------

def store_schedule(ways: int, warps: int = 4) -> Schedule:
    op = SmemStore(bytes=8192, dst=Access("D", 0, "D[0]", part=-1), bank_ways=ways)
    return Schedule("store", "h200", (), (BufferDecl("D", "smem", bytes=32768, parts=4),), (RoleDecl("w", warps),),
                    (CtaProgram(0, ((op,),)),))


def test_a_conflicted_store_holds_the_pipe_ways_times_as_long():
    arch = load_profile("h200")
    base = replay(store_schedule(1)).end_cycle
    conflicted = replay(store_schedule(8)).end_cycle
    # four warps of 8 KiB through one SM's pipe: the conflict adds 7 x the pipe time
    assert conflicted - base == pytest.approx(7 * 4 * 8192 / arch.smem_bytes_per_clk, rel=0.01)


def test_bank_ways_survive_json_and_default_stays_out_of_it():
    s = store_schedule(8)
    assert from_json(to_json(s)).ctas[0].roles[0][0].bank_ways == 8
    assert "bank_ways" not in json.dumps(to_json(store_schedule(1)))


@pytest.mark.parametrize("ways", [0, 33])
def test_impossible_ways_are_refused(ways):
    doc = to_json(store_schedule(1))
    doc["ctas"][0]["roles"][0][0]["bank_ways"] = ways
    with pytest.raises(ScheduleError, match="bank_ways"):
        validate(from_json(doc))


# -- the builders ----------------------------------------------------------------------------

def _epilogue_stores(builder: str, **cfg) -> list[SmemStore]:
    s = BUILDERS[builder](GemmConfig(**cfg))
    return [op for role in s.ctas[0].roles for op in role if isinstance(op, SmemStore)]


@pytest.mark.parametrize("bn", [16, 32, 64, 128])
def test_hopper_epilogue_states_the_fragment_conflict(bn):
    stores = _epilogue_stores("hgemm_v4", M=128, N=bn, K=128, BLK_N=bn, arch="h200")
    assert stores and {op.bank_ways for op in stores} == {fragment_store_ways(bn * 2)}


def test_seed_epilogue_is_conflict_free():
    stores = _epilogue_stores("hgemm_v4", M=128, N=128, K=128, arch="b200")
    assert stores and {op.bank_ways for op in stores} == {1}
    assert SEED.epilogue_store != HOPPER.epilogue_store
