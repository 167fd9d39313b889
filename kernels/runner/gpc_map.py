"""Which SMs share a GPC, read from where clusters land, on the GPU (issue 16).

kernels/microbench/gpc_map.cu: kernels of cluster size 2, 4 and 8, one CTA an SM, each CTA writing
its ``%smid``.  A cluster runs within one GPC, so the SMs of one cluster are of one GPC; this launches
each kernel ``reps`` times and joins (union-find) the SMs that ever shared a cluster.  Run on the GPU
machine:

    python -m kernels.runner.gpc_map --cubin B/gpc_map.sm_90a.cubin --out results.jsonl

One JSON line: the groups found (SM ids, sorted), and whether every TPC's two SMs (2k, 2k + 1) fell in
one group.  :func:`gpc_groups` is what ``l2_queue --burst-gpc`` calls before its launches.
"""

from __future__ import annotations

import ctypes
import sys

from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

SMEM = 200 * 1024
"""More than half an SM's shared memory: one CTA an SM."""
CLUSTERS = (2, 4, 8)


def _root(parent: list[int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def join_clusters(launches: list[tuple[int, list[int]]], sms: int = SM_COUNT) -> list[list[int]]:
    """The groups of SMs that ``launches`` (cluster size, each CTA's SM in grid order) put in one
    cluster, directly or through others; SMs no cluster ran on are left out."""
    parent = list(range(sms))
    seen: set[int] = set()
    for size, placed in launches:
        for c in range(0, len(placed) - size + 1, size):
            members = placed[c:c + size]
            seen.update(members)
            for sm in members[1:]:
                a, b = _root(parent, members[0]), _root(parent, sm)
                if a != b:
                    parent[b] = a
    groups: dict[int, list[int]] = {}
    for sm in sorted(seen):
        groups.setdefault(_root(parent, sm), []).append(sm)
    return sorted(groups.values())


def gpc_groups(torch, drv: Driver, cubin: bytes, reps: int = 20) -> tuple[list[list[int]], list[tuple[int, list[int]]]]:
    """The SMs grouped by GPC (as far as ``reps`` launches of each cluster size show), and the launches."""
    stream = torch.cuda.current_stream().cuda_stream
    out = torch.full((SM_COUNT,), -1, dtype=torch.int32, device="cuda")
    launches = []
    for size in CLUSTERS:
        fn = drv.function(cubin, f"gpc_map_{size}", SMEM)
        grid = SM_COUNT // size * size
        for _ in range(reps):
            out.fill_(-1)
            drv.launcher(fn, grid, 32, SMEM, stream, [ctypes.c_void_p(out.data_ptr())])()
            torch.cuda.synchronize()
            launches.append((size, out.cpu().tolist()[:grid]))
    return join_clusters(launches), launches


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    groups, launches = gpc_groups(torch, Driver(), cubin, reps)
    where = {sm: g for g, members in enumerate(groups) for sm in members}
    tpcs_whole = all(where.get(2 * k) == where.get(2 * k + 1) for k in range(SM_COUNT // 2)
                     if 2 * k in where and 2 * k + 1 in where)
    print(f"{len(groups)} groups of {sorted(len(g) for g in groups)} SMs; TPCs (2k, 2k+1) within one group: {tpcs_whole}")
    for g in groups:
        print("  ", g)
    return [{"groups": groups, "group_sizes": [len(g) for g in groups], "tpcs_within_a_group": tpcs_whole,
             "launches_per_cluster_size": reps, "cluster_sizes": list(CLUSTERS),
             "first_launch_each": {str(size): next(p for s, p in launches if s == size) for size in CLUSTERS}}]


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("gpc_map", __doc__, argv, measure, 20, "JSON lines: one, the SM groups")


if __name__ == "__main__":
    sys.exit(main())
