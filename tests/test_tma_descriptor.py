"""A tensor map's first TMA load on an SM pays the descriptor's fetch (docs/semantics.md
"Engine timing", TMA loads; results/silicon/microbench/2026-12-01_h200_tma_issue.md)."""

from __future__ import annotations

import dataclasses

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import replay
from protosim.ir import Access, ArriveExpectTx, BufferDecl, MbarInit, TmaLoad, Wait
from tests.conftest import hand_schedule

H200 = load_profile("h200")
TILE = 16384


def _landings(keys: list[str], ctas: int = 1, arch=H200) -> dict[int, list[float]]:
    """Each CTA loads ``keys`` one after the other (each waited for before the next); the
    cycle each load's complete_tx happened, per CTA."""
    ops: list = [MbarInit(barrier="full", issuer="one")]
    for use, key in enumerate(keys):
        ops += [ArriveExpectTx(barrier="full", use=use, bytes=TILE, issuer="one"),
                TmaLoad(barrier="full", use=use, bytes=TILE, dst=Access("S", 0, key), src=key, issuer="one"),
                Wait(barrier="full", parity=use % 2, use=use)]
    s = hand_schedule(("w", 1, ops), barriers=(("full", 1),), buffers=(BufferDecl("S", "smem", 1, TILE),), ctas=ctas)
    out: dict[int, list[float]] = {}
    for e in replay(s, arch).log:
        if e.kind == "complete_tx":
            out.setdefault(e.cta, []).append(e.t)
    return out


NO_FETCH = dataclasses.replace(H200, tma_descriptor_fetch_cycles=0.0)


def test_only_the_first_load_of_a_tensor_pays_the_fetch():
    keys = ["A[k=0]", "A[k=1]", "A[k=2]"]
    paid, free = _landings(keys)[0], _landings(keys, arch=NO_FETCH)[0]
    assert paid[0] - free[0] == pytest.approx(H200.tma_descriptor_fetch_cycles)
    # after it, the loads take the same time with or without the rule
    assert [b - a for a, b in zip(paid, paid[1:])] == pytest.approx([b - a for a, b in zip(free, free[1:])])


def test_each_tensor_map_is_fetched_once():
    keys = ["A[k=0]", "A[k=1]", "B[k=0]", "B[k=1]"]
    paid, free = _landings(keys)[0], _landings(keys, arch=NO_FETCH)[0]
    extra = [p - f for p, f in zip(paid, free)]
    fetch = H200.tma_descriptor_fetch_cycles
    assert extra == pytest.approx([fetch, fetch, 2 * fetch, 2 * fetch])


def test_the_fetch_is_per_sm():
    """Two CTAs on two SMs each pay it; two CTAs in turn on one SM pay it once (the model's
    assumption: the measured CTAs each had an SM of its own)."""
    two_sms = _landings(["A[k=0]"], ctas=2)
    assert two_sms[0][0] == pytest.approx(two_sms[1][0])
    one_sm = dataclasses.replace(H200, sm_count=1, max_ctas_per_sm=1)
    paid, free = _landings(["A[k=0]"], ctas=2, arch=one_sm), _landings(["A[k=0]"], ctas=2,
                                                                       arch=dataclasses.replace(one_sm, tma_descriptor_fetch_cycles=0.0))
    assert paid[0][0] - free[0][0] == pytest.approx(H200.tma_descriptor_fetch_cycles)
    assert paid[1][0] - free[1][0] == pytest.approx(H200.tma_descriptor_fetch_cycles)  # the second CTA starts later, pays nothing
