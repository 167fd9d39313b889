"""LRU stack distances over the model's L2 traffic (kernels/runner/l2_reuse.py)."""

from __future__ import annotations

from kernels.runner.l2_reuse import profile, stack_distances
from protosim.arch import load_profile
from protosim.ir import Access, BufferDecl, CtaProgram, RoleDecl, Schedule, ThreadCopy

H200 = load_profile("h200")


def test_a_reread_is_as_far_as_the_distinct_bytes_between():
    seq = [("A", 1.0), ("B", 2.0), ("C", 4.0), ("A", 1.0), ("B", 2.0), ("B", 2.0), ("C", 4.0)]
    # A again after B and C (6); B after C and A (5, each counted once); B at once (0); C after A, B (3)
    assert stack_distances(seq) == [None, None, None, 6.0, 5.0, 0.0, 3.0]


def test_a_tile_counts_at_its_size_as_of_its_last_touch():
    # a tile that grew (a second side's copy) counts at its new size for what follows
    assert stack_distances([("A", 1.0), ("B", 1.0), ("B", 1.6), ("A", 1.0)]) == [None, None, 0.0, 1.6]


def _loop(tiles: int, passes: int, tile: int) -> Schedule:
    keys = [f"buf[{t}]" for _ in range(passes) for t in range(tiles)]
    ops = tuple(ThreadCopy(bytes=tile, dst=Access("S", 0, "S", part=0), src=k, load_bytes=16) for k in keys)
    return Schedule("loop", "h200", (), (BufferDecl("S", "smem", bytes=16384, parts=1),), (RoleDecl("w", 1),),
                    (CtaProgram(0, (ops,)),), l2_at_launch="cold")


def test_the_replays_rereads_are_one_pass_apart():
    row = profile(_loop(10, 3, 100_000), H200)
    buf = row["tensors"]["buf"]
    assert (buf["reads"], buf["first"], buf["misses"]) == (30, 10, 10)  # cold: each tile's first read misses
    assert buf["reread_mb"] == {"p50": 0.9, "p90": 0.9, "max": 0.9}  # the nine other tiles between
    assert buf["rereads_past_capacity"] == 0 and row["capacity_mb"] == round(H200.l2_capacity(1) / 1e6, 2)
