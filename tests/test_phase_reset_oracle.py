"""The seed's v6 precondition, checked against an independent closed-form oracle.

The seed resets ``phase_tma`` / ``phase_mma`` to 0 at every output tile.  That is
right only if every barrier returns to parity 0 by the end of a tile, i.e. is used
an even number of times per tile: ``mma_bar`` K_TILES times, ``tma_bar[s]`` once per
k-tile with ``k % PIPE_DEPTH == s``.  The oracle below counts uses directly from
that description (it shares no code with the builders); the simulator must agree
on every configuration of the sweep, with two tiles per CTA so that the second
tile starts from whatever parity the first left behind.
"""

from __future__ import annotations

import pytest

from conftest import build
from protosim.verdict import judge


def oracle_reset_is_safe(k_tiles: int, depth: int) -> bool:
    uses_mma = k_tiles
    uses_tma = [sum(1 for k in range(k_tiles) if k % depth == s) for s in range(depth)]
    return uses_mma % 2 == 0 and all(u % 2 == 0 for u in uses_tma)


def run_v6(k_tiles: int, depth: int, reset: bool):
    # M = 2 * BLK_M and one persistent CTA: the CTA computes two tiles in a row.
    schedule = build("hgemm_v6", M=256, N=128, K=64 * k_tiles, PIPE_DEPTH=depth, sm_count=1,
                     reset_phase_per_tile=reset)
    return judge(schedule)[0]


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_reset_per_tile_matches_oracle(depth):
    disagreements = []
    for k_tiles in range(1, 33):
        verdict = run_v6(k_tiles, depth, reset=True)
        safe = oracle_reset_is_safe(k_tiles, depth)
        kinds = verdict.kinds()
        if safe and not verdict.ok:
            disagreements.append((k_tiles, "oracle safe, simulator found", kinds))
        if not safe:
            # The bug must be named (statically) and seen to bite in the replay.
            bit = "early_return" in kinds or verdict.outcome.kind == "deadlock"
            if "wrong_parity" not in kinds or not bit:
                disagreements.append((k_tiles, "oracle unsafe, simulator found", kinds))
    assert not disagreements


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_carried_phases_are_always_safe(depth):
    bad = [(k, run_v6(k, depth, reset=False).kinds()) for k in range(1, 33)]
    assert [b for b in bad if b[1]] == []


def test_oracle_agrees_with_the_seed_precondition():
    # The seed asserts K_TILES % (2 * PIPE_DEPTH) == 0; for these shapes it is equivalent.
    for depth in range(1, 5):
        for k_tiles in range(1, 65):
            assert oracle_reset_is_safe(k_tiles, depth) == (k_tiles % (2 * depth) == 0)
