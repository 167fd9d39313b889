"""kernels/runner/l2_share.py --sides: readers chosen by SM from a measured side map (host side)."""

from __future__ import annotations

import json

import pytest

from kernels.runner.l2_share import W, rank_table, reader_selections, side_map, sides_chunks


def _record(tmp_path, rows):
    path = tmp_path / "side.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_the_side_map_is_the_last_mode_1_launch(tmp_path):
    rows = [{"kind": "l2_side_map", "mode": 0, "split": {"near_warmer": [0], "far_from_warmer": [1]}},
            {"kind": "l2_side_map", "mode": 1, "split": {"with_cta0": [9, 0], "against_cta0": [1, 5]}},
            {"kind": "l2_side_map", "mode": 1, "split": {"with_cta0": [7, 0, 3], "against_cta0": [2, 1]}}]
    assert side_map(_record(tmp_path, rows)) == ([0, 3, 7], [1, 2])


def test_a_record_without_a_mode_1_launch_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no mode-1"):
        side_map(_record(tmp_path, [{"kind": "l2_side_map", "mode": 0, "split": {}}]))


def test_each_selection_is_on_the_sides_it_names():
    side0, side1 = list(range(0, 64)), list(range(64, 132))
    sel = reader_selections(side0, side1)
    assert set(sel["side 0"]) <= set(side0) and set(sel["side 1"]) <= set(side1)
    both = sel["32 + 32"]
    assert len(both) == 64 and len(set(both) & set(side0)) == 32 and len(set(both) & set(side1)) == 32
    assert len(sel["side 0, 32"]) == 32 and set(sel["side 0, 32"]) <= set(side0)


def test_ranks_number_the_readers_in_sm_order_and_leave_the_rest_out():
    table = rank_table([70, 3, 12], sm_count=80)
    assert table[3] == 0 and table[12] == 1 and table[70] == 2
    assert sum(r >= 0 for r in table) == 3 and len(table) == 80


@pytest.mark.parametrize("readers", [32, 64, 68])
def test_buffers_are_the_same_size_whatever_the_readers_and_slice_whole(readers):
    for units in (72, 136, 208):
        chunks = sides_chunks(units, readers)
        assert chunks % (readers * W) == 0  # each reader's slice a whole number of W-groups
        assert abs(chunks - units * 64 * W) <= readers * W / 2  # within half a slice round of the 64-reader size


def test_ranks_across_tpcs_put_consecutive_ranks_on_different_tpcs():
    readers = list(range(16))
    table = rank_table(readers, sm_count=16, across_tpcs=True)
    by_rank = sorted(range(16), key=lambda sm: table[sm])
    pairs = [by_rank[i:i + 2] for i in range(0, 16, 2)]
    assert all(a // 2 != b // 2 for a, b in pairs)  # SMs 2k and 2k + 1 are one TPC
    in_sm_order = sorted(range(16), key=lambda sm: rank_table(readers, sm_count=16)[sm])
    assert all(a // 2 == b // 2 for a, b in (in_sm_order[i:i + 2] for i in range(0, 16, 2)))


def test_readers_are_read_as_sm_ranges():
    from kernels.runner.l2_share import parse_sms

    assert parse_sms("124-131") == list(range(124, 132))
    assert parse_sms("8, 0-3") == [0, 1, 2, 3, 8]
    for bad in ("", "a-b", "5-3", "130-140", "1,1", "1-"):
        with pytest.raises(ValueError):
            parse_sms(bad)


class _FakeTensor:
    def __init__(self, n=132):
        self.n = n

    def data_ptr(self):
        return 0

    def add_(self, _):
        return self

    def tolist(self):
        return list(range(self.n))  # every CTA on an SM of its own


class _FakeTorch:
    int32 = uint8 = None

    class cuda:
        @staticmethod
        def current_stream():
            return type("S", (), {"cuda_stream": 0})()

    @staticmethod
    def zeros(*a, **k):
        return _FakeTensor()

    full = tensor = randint = zeros


class _FakeDriver:
    def function(self, cubin, name, smem):
        return None

    def launcher(self, *a):
        return lambda: None


def test_the_runs_write_rows_as_the_records_have_them(monkeypatch):
    """measure_sides / measure_sharers, with the GPU faked: one row per run, the fields the
    committed records carry."""
    from pathlib import Path

    import kernels.runner.l2_share as L

    monkeypatch.setattr(L, "Driver", _FakeDriver)
    monkeypatch.setattr(L.T, "kernel_time", lambda torch, launch, reps, warmup: {"median": 0.5, "min": 0.5})
    root = Path(__file__).resolve().parent.parent / "results/silicon/microbench"
    side = str(root / "2026-12-05_h200_003f1b2_l2_side_map.jsonl")
    sides = L.measure_sides(_FakeTorch, b"", 1, side)
    assert len(sides) == 4 * len(L.SIDES_UNITS) * 2 and all(r["one_cta_an_sm"] for r in sides)
    recorded = json.loads((root / "2026-12-05_h200_68a57b7_l2_share_sides.jsonl").read_text().splitlines()[0])
    assert set(sides[0]) == set(recorded) - {"kind", "gpu", "torch", "cuda", "commit", "time", "driver", "max_sm_clock"}
    sharers = L.measure_sharers(_FakeTorch, b"", 1, side)
    assert len(sharers) == len(L.SIDES_UNITS) * (len(L.SHARERS) + len(L.ACROSS_SHARERS))
    recorded = json.loads((root / "2026-12-05_h200_7517fd6_l2_share_sharers_across_tpcs.jsonl").read_text().splitlines()[0])
    assert set(sharers[0]) == set(recorded) - {"kind", "gpu", "torch", "cuda", "commit", "time", "driver", "max_sm_clock"}
    few = L.measure_sharers(_FakeTorch, b"", 1, side, list(range(124, 132)))
    assert {(r["order"], r["sharers"]) for r in few} == {("TPC pairs", s) for s in (1, 2, 4, 8)} | {("across TPCs", 2), ("across TPCs", 4)}
