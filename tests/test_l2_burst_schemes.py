"""The pure parts of the GPC map and of l2_queue --burst-gpc (kernels/runner/gpc_map.py,
kernels/runner/l2_queue.py): SMs joined through the clusters they shared, and which SMs each burst
scheme makes read one part."""

from __future__ import annotations

from collections import defaultdict

from kernels.runner.gpc_map import join_clusters
from kernels.runner.l2_queue import burst_schemes


def test_sms_are_joined_through_every_cluster_they_shared():
    launches = [(2, [0, 1, 2, 3]), (4, [1, 5, 6, 7]), (2, [9, 8, 4])]  # the last CTA's cluster is incomplete
    assert join_clusters(launches, sms=12) == [[0, 1, 5, 6, 7], [2, 3], [8, 9]]


def _parts(part_of: dict[int, int]) -> list[list[int]]:
    parts = defaultdict(list)
    for sm, p in part_of.items():
        parts[p].append(sm)
    return [sorted(v) for _, v in sorted(parts.items())]


GPCS = [list(range(18 * g, 18 * g + 18)) for g in range(6)] + [list(range(108, 124)), list(range(124, 132))]
"""Eight groups, 132 SMs: six of 18, one of 16, one of 8 (an H200-like split)."""


def test_each_scheme_puts_its_readers_where_its_name_says():
    gpc = {sm: g for g, members in enumerate(GPCS) for sm in members}
    schemes = burst_schemes(GPCS)
    assert all(len(p) == 1 for p in _parts(schemes["distinct"][1]))
    for name, size, same_gpc in (("tpc_pairs", 2, True), ("gpc_pairs", 2, True), ("gpc_fours", 4, True),
                                 ("cross_pairs", 2, False), ("cross_fours", 4, False)):
        got_size, part_of = schemes[name]
        assert got_size == size
        for members in _parts(part_of):
            assert len(members) == size
            assert (len({gpc[sm] for sm in members}) == 1) == same_gpc, (name, members)
    assert all(b == a + 1 and a % 2 == 0 for a, b in _parts(schemes["tpc_pairs"][1]))
    assert all(len({sm // 2 for sm in p}) == 2 for p in _parts(schemes["gpc_pairs"][1]))  # two TPCs
    assert _parts(schemes["gpc_whole"][1]) == GPCS
    for members in _parts(schemes["cross_whole"][1]):
        assert len({gpc[sm] for sm in members}) == len(members)  # one SM of each GPC


def test_no_part_reads_past_the_source_the_runner_allocates():
    for size, part_of in burst_schemes(GPCS).values():
        assert 1 + max(part_of.values()) * size + 1 <= 2 * 132  # l2_queue's owner offset, in chunks


def test_sweep_schemes_share_within_and_across_sets_as_named():
    from kernels.runner.l2_queue import sweep_schemes

    groups = [list(range(8 * g, 8 * g + 8)) for g in range(14)] + [list(range(112, 128)), [128, 129], [130, 131]]
    sets = {sm: sm // 8 for sm in range(128)}  # the group of sixteen is split in its sorted halves
    schemes = sweep_schemes(groups)
    for name, (size, part_of) in schemes.items():
        assert sorted(part_of) == list(range(128)), name  # every SM of the sets reads, once
        shared = [p for p in _parts(part_of) if len(p) > 1]
        if name == "distinct":
            assert not shared
            continue
        kind, arg = name.split("_")
        for p in shared:
            per_set = defaultdict(int)
            for sm in p:
                per_set[sets[sm]] += 1
            if kind == "within":
                assert len(p) == int(arg) and len(per_set) == 1
            elif kind == "across":
                assert len(p) == int(arg) and set(per_set.values()) == {1}
            else:
                m, s = map(int, arg.split("x"))
                assert len(per_set) == s and set(per_set.values()) == {m}
        assert size == max(len(p) for p in _parts(part_of))


def test_queue_args_follow_the_kernels_parameters():
    import re
    from pathlib import Path

    from kernels.runner.l2_queue import queue_args

    cu = (Path(__file__).resolve().parents[1] / "kernels" / "microbench" / "l2_queue.cu").read_text()
    params = re.search(r"l2_queue\(([^)]*)\)", cu).group(1).split(",")
    args = queue_args(None, 16384, 1, 2048, 0, 4, None, None)
    assert len(args) == len(params)
    kinds = ["int" if re.match(r"\s*int \w+$", p) else "ptr" for p in params]
    assert kinds == ["int" if type(a).__name__ == "c_int" else "ptr" for a in args]
