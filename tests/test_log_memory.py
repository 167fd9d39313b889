"""The event log holds each repeated value once (issue 15's memory targets): equal op indices, clock
counts, observed seqs and operand accesses are one object, not one per warp or per CTA.  These are
what ``benchmarks/memory_by_stage.py`` measured; each test fails if its sharing is undone."""

from __future__ import annotations

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.engine import replay
from protosim.ints import indices, shared


def _v6_log():
    # 2 x 2 tiles of 128 x 128 on 4 CTAs, K = 8192: 128 k-iterations, so op indices and clock
    # counts run past 256 (CPython's small-int cache) in every warp
    schedule = BUILDERS["hgemm_v6"](GemmConfig(M=256, N=256, K=8192, arch="h200"))
    return schedule, replay(schedule, load_profile("h200")).log.events


def _objects_per_value(values) -> float:
    values = [v for v in values if isinstance(v, int) and v > 256]
    assert values, "no value past the small-int cache: the test shows nothing"
    return len({id(v) for v in values}) / len(set(values))


def test_the_table_gives_one_object_a_value_however_far_it_grows():
    from protosim.ints import LIMIT

    value = min(3 * len(indices(0)) + 5, LIMIT - 1)  # past the table (unless it is full): it grows
    big = shared(value)
    assert big == value and shared(value) is big
    assert indices(10)[:10] == list(range(10))
    assert shared(300) is indices(301)[300]


def test_op_indices_and_clock_counts_are_one_object_a_value():
    _, events = _v6_log()
    assert _objects_per_value(e.op for e in events) == 1.0
    waits = [e for e in events if e.kind == "wait"]
    assert _objects_per_value(e.at for e in waits) == 1.0


def test_the_warps_of_a_warpgroup_share_the_seqs_they_observe():
    _, events = _v6_log()
    seqs = [e.seqs for e in events if e.kind == "observe"]
    assert len(seqs) > len({s for s in seqs}), "no two observations of the same accesses"
    assert len({id(s) for s in seqs}) == len(set(seqs))


def test_every_cta_names_an_operand_stage_with_one_access():
    schedule, _ = _v6_log()
    accesses = [op.dst for cta in schedule.ctas for ops in cta.roles for op in ops
                if type(op).__name__ == "TmaLoad"]
    assert len(accesses) > len(set(accesses))  # CTAs of one tile row load the same A k-tiles
    assert len({id(a) for a in accesses}) == len(set(accesses))


def test_a_barriers_uses_are_one_object_a_value_in_the_schedule():
    # one persistent CTA walking 16 tiles of 64 k-steps: each stage barrier is used ~512 times
    schedule = BUILDERS["hgemm_v6"](GemmConfig(M=512, N=512, K=4096, sm_count=1, arch="h200"))
    ops = [op for cta in schedule.ctas for role in cta.roles for op in role]
    assert _objects_per_value(getattr(op, "use", None) for op in ops) == 1.0
    fills = [op.bytes for op in ops if type(op).__name__ == "ArriveExpectTx"]
    assert len(fills) > 1 and len({id(b) for b in fills}) == 1  # one CTA: one announced size


def test_accesses_observed_by_the_same_waits_share_their_observations():
    # the races checker's index: a stage's A and B loads are observed by the same four warps' waits
    from protosim.checkers.races import Knowledge
    from protosim.engine.log import EventLog
    from protosim.engine.order import ordered_after

    _, events = _v6_log()
    log = EventLog()
    log.events.extend(events)
    observed = Knowledge(log).observed
    assert len({id(v) for v in observed.values()}) == len(set(observed.values())) < len(observed)
    flat = next(v for v in observed.values() if len(v) >= 4)
    warp, at = flat[0], flat[1]
    clock = [0] * 8
    assert not ordered_after(flat, tuple(clock))
    clock[warp] = at
    assert ordered_after(flat, tuple(clock))  # the pair (warp, at) read as one observation


def test_the_table_stops_at_its_limit_and_passes_larger_values_through():
    from protosim import ints

    huge = 10 ** 12  # a use a hand-built PipelineState could ask for: no table that large
    assert ints.shared(huge) == huge and len(ints.indices(0)) <= ints.LIMIT
    assert ints.shared(-3) == -3
    assert list(ints.indices(ints.LIMIT + 2))[-1] == ints.LIMIT + 1
    assert len(ints.indices(0)) <= ints.LIMIT
