"""A small TMA load's latency while every other SM floods the L2, on the GPU (issue 16).

kernels/microbench/l2_queue.cu: 132 CTAs, one an SM; after a grid barrier CTA 0 waits ``delay``
cycles and times one bulk load of ``probe`` bytes, while (``flood``) the 131 others each issue
``loads`` bulk loads of ``chunk`` bytes from the L2 -- each its own bytes (flood 1), or in groups
of :data:`SHARED` flooders reading the same bytes at once (flood = the group's size).  With no flood the probe's latency is the
unloaded one; with the flood it shows how long a load waits behind the bytes other SMs asked
for first -- all of them (a first-come first-served pipe, as the model has it), or its share.
Run on the GPU machine:

    python -m kernels.runner.l2_queue --cubin B/l2_queue.sm_90a.cubin --out results.jsonl [--burst]

(``--burst``: :func:`measure_burst`, one load a flooder by sharing and spread; ``--burst-gpc``:
:func:`measure_burst_gpc`, the readers of a part chosen by TPC and GPC, with gpc_map's cubin beside.)

One JSON line per (probe bytes, delay, flood): the probe's latency in each of ``--reps``
launches (median and all), the flooders' cycles to their last issue and to their last byte
(median and max over CTAs, median over launches), and the bytes the flood asked for.
"""

from __future__ import annotations

import ctypes
import statistics
import sys
from itertools import zip_longest

from .launch_cost import Driver, cubin_bench_exit, folder_bench_exit, take_flag
from .tma_stream import SM_COUNT

SMEM = 200 * 1024
"""Dynamic shared memory per CTA: more than half an SM's, so one CTA an SM (as tma_stream's SMEM_ALONE)."""
CHUNK, LOADS = 32768, 6
"""The flood: six 32 KiB bulk loads a flooder (192 KiB; 25 MB over 131 SMs)."""
SHARED = (4, 32, 131)
"""Flood modes where groups of this many flooders read the same part of ``src`` at once (1: each
its own): the same bytes requested, 1/G of them distinct."""


def queue_args(src, chunk: int, loads: int, probe: int, delay: int, flood: int, counter, out, strided: int = 0,
                part_of_sm=None, sm_of_cta=None) -> list:
    """l2_queue.cu's parameters in its order (the tensors by their device pointers; None: a null pointer)."""
    ptr = lambda t: ctypes.c_void_p(0 if t is None else t.data_ptr())  # noqa: E731
    return [ptr(src), ctypes.c_int(chunk), ctypes.c_int(loads), ctypes.c_int(probe), ctypes.c_int(delay),
            ctypes.c_int(flood), ptr(counter), ptr(out), ctypes.c_int(strided), ptr(part_of_sm), ptr(sm_of_cta)]


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function(cubin, "l2_queue", SMEM)
    src = torch.randn(SM_COUNT * LOADS * CHUNK // 2, device="cuda", dtype=torch.float16)
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(2 * SM_COUNT, dtype=torch.int64, device="cuda")
    flood_bytes = (SM_COUNT - 1) * LOADS * CHUNK
    rows = []
    for probe in (2048, 16384):
        for flood in (0, 1, *SHARED):
            for delay in (0, 250, 500, 1000, 2000, 4000, 8000):
                if flood != 1 and delay not in (0, 1000):  # the delay sweep is the distinct flood's
                    continue
                lat, actual, issued, landed, landed_max = [], [], [], [], []
                for _ in range(reps):
                    src.add_(0)  # the whole source written just before: in L2
                    counter.zero_()
                    out.zero_()
                    args = queue_args(src, CHUNK, LOADS, probe, delay, flood, counter, out)
                    drv.launcher(fn, SM_COUNT, 32, SMEM, stream, args)()
                    torch.cuda.synchronize()
                    o = out.cpu().tolist()
                    lat.append(o[0])
                    actual.append(o[1])
                    if flood:
                        issued.append(statistics.median(o[2::2][1:]))
                        landed.append(statistics.median(o[3::2][1:]))
                        landed_max.append(max(o[3::2][1:]))
                row = {"probe_bytes": probe, "flood": flood, "sharing": flood if flood > 1 else 1, "delay": delay,
                       "chunk": CHUNK, "loads": LOADS,
                       "flood_bytes": flood_bytes if flood else 0, "reps": reps,
                       "probe_cycles_median": statistics.median(lat), "probe_cycles": lat,
                       "probe_delay_median": statistics.median(actual)}
                if flood:
                    row.update({"flood_issued_median": statistics.median(issued),
                                "flood_landed_median": statistics.median(landed),
                                "flood_landed_max": statistics.median(landed_max)})
                print(f"probe {probe:>6} B, delay {delay:>5} ({row['probe_delay_median']:>6.0f}), flood {flood}: "
                      f"{row['probe_cycles_median']:>7.0f} cycles (range {min(lat)}-{max(lat)})"
                      + (f"; flooders issued by {row['flood_issued_median']:.0f}, landed by {row['flood_landed_median']:.0f} "
                         f"(max {row['flood_landed_max']:.0f})" if flood else ""), flush=True)
                rows.append(row)
    return rows


BURST_CHUNKS = (16384, 20480)
"""--burst: one load a flooder of v4's A tile (128 x 64 fp16) and of its A + B tiles at BLK_N 32."""
BURST_GROUPS = (1, 2, 4, 8, 16, 33, 131)


def measure_burst(torch, cubin: bytes, reps: int) -> list[dict]:
    """One bulk load a flooder, all 131 at once after the grid barrier (what v4's CTAs do at the top
    of every k-iteration at one CTA an SM): the cycles to each flooder's byte, by how many flooders
    share a part (G) and whether a part's readers are consecutive CTAs or P = ceil(131 / G) apart
    (``strided``: a GEMM grid's A tile).  No probe load (2 KiB from a part no flooder reads)."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function(cubin, "l2_queue", SMEM)
    src = torch.randn(SM_COUNT * max(BURST_CHUNKS) // 2, device="cuda", dtype=torch.float16)
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(2 * SM_COUNT, dtype=torch.int64, device="cuda")
    smids = torch.zeros(SM_COUNT, dtype=torch.int32, device="cuda")
    rows = []
    for chunk in BURST_CHUNKS:
        for group in BURST_GROUPS:
            for strided in ((0, 1) if 1 < group < SM_COUNT - 1 else (0,)):
                landed, landed_max, landed_min, placed, each = [], [], [], [], []
                for _ in range(reps):
                    src.add_(0)  # the whole source written just before: in L2
                    counter.zero_()
                    out.zero_()
                    args = queue_args(src, chunk, 1, 2048, 0, group, counter, out, strided, sm_of_cta=smids)
                    drv.launcher(fn, SM_COUNT, 32, SMEM, stream, args)()
                    torch.cuda.synchronize()
                    o = out.cpu().tolist()[3::2]  # CTAs 1..131: each flooder's last byte
                    placed.append(smids.cpu().tolist())
                    each.append(o)
                    landed.append(statistics.median(o))
                    landed_max.append(max(o))
                    landed_min.append(min(o))
                parts = -(-(SM_COUNT - 1) // group)
                row = {"mode": "burst", "chunk": chunk, "loads": 1, "flooders": SM_COUNT - 1, "sharing": group,
                       "strided": bool(strided), "parts": parts, "distinct_bytes": parts * chunk,
                       "requested_bytes": (SM_COUNT - 1) * chunk, "reps": reps,
                       "landed_median": statistics.median(landed), "landed_max": statistics.median(landed_max),
                       "landed_min": statistics.median(landed_min), "landed_medians": landed, "sm_of_cta": placed,
                       "landed_by_cta": each}
                print(f"burst {chunk // 1024} KiB, {group:>3} a part ({parts:>3} parts, {'strided' if strided else 'consecutive'}): "
                      f"landed median {row['landed_median']:.0f}, min {row['landed_min']:.0f}, max {row['landed_max']:.0f} cycles",
                      flush=True)
                rows.append(row)
    return rows


def part_of_each(parts: list[list[int]]) -> dict[int, int]:
    """SM -> the number of the part it reads, the parts numbered in order."""
    return {sm: p for p, members in enumerate(parts) for sm in members}


def burst_schemes(groups: list[list[int]]) -> dict[str, tuple[int, dict[int, int]]]:
    """The GPC-chosen bursts: scheme -> (readers a part, part of each SM), from the SMs grouped by
    GPC (:func:`kernels.runner.gpc_map.gpc_groups`).  A TPC is SMs 2k and 2k + 1 of one group; an SM
    in no group, or left over, reads nothing."""
    gpcs = [sorted(g) for g in groups if len(g) >= 4]
    tpcs = [[[sm, sm + 1] for sm in g if sm % 2 == 0 and sm + 1 in g] for g in gpcs]
    schemes: dict[str, tuple[int, dict[int, int]]] = {}

    def add(name: str, size: int, parts: list[list[int]]) -> None:
        schemes[name] = (size, part_of_each(parts))

    add("distinct", 1, [[sm] for g in gpcs for sm in g])
    flat = [sm for g in gpcs for sm in g]
    half = len(flat) // 2  # the same parts read by other SMs: whether which SM reads which address matters
    add("distinct_rotated", 1, [[flat[(r + half) % len(flat)]] for r in range(len(flat))])
    add("tpc_pairs", 2, [t for ts in tpcs for t in ts])
    add("gpc_pairs", 2, [[a[i], b[i]] for ts in tpcs for a, b in zip(ts[0::2], ts[1::2]) for i in (0, 1)])
    add("cross_pairs", 2, [[x, y] for g, h in zip(gpcs[0::2], gpcs[1::2]) for x, y in zip(g, h)])
    add("gpc_fours", 4, [a + b for ts in tpcs for a, b in zip(ts[0::2], ts[1::2])])
    add("cross_fours", 4, [list(sms) for k in range(0, len(gpcs) - 3, 4) for sms in zip(*gpcs[k:k + 4])])
    add("gpc_whole", max(len(g) for g in gpcs), gpcs)
    add("cross_whole", len(gpcs), [[sm for sm in sms if sm is not None] for sms in zip_longest(*gpcs)])
    return schemes


def _sets_of(groups: list[list[int]]) -> list[list[int]]:
    """gpc_map's groups as sets of eight SMs (a group of sixteen, two sets the map joined, split in
    its sorted halves); smaller groups left out."""
    sets = []
    for g in groups:
        g = sorted(g)
        sets += [g[i:i + 8] for i in range(0, len(g) - 7, 8)]
    return sets


def sweep_schemes(groups: list[list[int]]) -> dict[str, tuple[int, dict[int, int]]]:
    """--burst-gpc --sweep: parts shared by k SMs of one set (k 2, 4, 8), by k SMs one from each of k
    sets (k 2, 3, 4, 6, 8, 12), and by m SMs of each of s sets (2 x 4, 2 x 8, 4 x 4); every SM of the
    sets that no such part takes reads a part of its own, so that each burst has the same readers."""
    sets = _sets_of(groups)
    every = [sm for s in sets for sm in s]

    def scheme(parts: list[list[int]]) -> tuple[int, dict[int, int]]:
        taken = {sm for p in parts for sm in p}
        parts = parts + [[sm] for sm in every if sm not in taken]
        return max(len(p) for p in parts), part_of_each(parts)

    out = {"distinct": scheme([])}
    for k in (2, 4, 8):
        out[f"within_{k}"] = scheme([s[i:i + k] for s in sets for i in range(0, 8, k)])
    for k in (2, 3, 4, 6, 8, 12):
        out[f"across_{k}"] = scheme([[sets[b + j][i] for j in range(k)]
                                     for b in range(0, len(sets) - k + 1, k) for i in range(8)])
    for m, s in ((2, 4), (2, 8), (4, 4)):
        out[f"mixed_{m}x{s}"] = scheme([[sm for j in range(s) for sm in sets[b + j][i:i + m]]
                                        for b in range(0, len(sets) - s + 1, s) for i in range(0, 8, m)])
    return out


def measure_burst_gpc(torch, folder, reps: int, sweep: bool = False) -> list[dict]:
    """--burst-gpc: the burst with each part's readers chosen by where they run -- the two SMs of a
    TPC, two or four SMs of one GPC, the same from different GPCs, a whole GPC, one SM of each GPC
    -- against every SM reading its own (``distinct``); with ``sweep`` (``--sweep``) the schemes of
    :func:`sweep_schemes`, each row with the median landing of the readers that share.  Needs
    ``gpc_map.sm_90a.cubin`` beside the l2_queue cubin (kernels/microbench/gpc_map.cu); the SM groups
    it found are in every row."""
    from .gpc_map import gpc_groups

    drv = Driver()
    groups, _ = gpc_groups(torch, drv, (folder / "gpc_map.sm_90a.cubin").read_bytes())
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function((folder / "l2_queue.sm_90a.cubin").read_bytes(), "l2_queue", SMEM)
    chunk = BURST_CHUNKS[0]
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(2 * SM_COUNT, dtype=torch.int64, device="cuda")
    smids = torch.zeros(SM_COUNT, dtype=torch.int32, device="cuda")
    rows = []
    schemes = sweep_schemes(groups) if sweep else burst_schemes(groups)
    chunks = max(2 + max(part_of.values()) * size for size, part_of in schemes.values())  # part p at 1 + p * size
    src = torch.randn(chunks * chunk // 2, device="cuda", dtype=torch.float16)
    for name, (size, part_of) in schemes.items():
        readers_of: dict[int, int] = {}
        for p in part_of.values():
            readers_of[p] = readers_of.get(p, 0) + 1
        shared = {sm for sm, p in part_of.items() if readers_of[p] > 1}
        table = torch.tensor([part_of.get(sm, -1) for sm in range(SM_COUNT)], dtype=torch.int32, device="cuda")
        landed, readers, by_sm, shared_landed = [], [], [], []
        for _ in range(reps):
            src.add_(0)
            counter.zero_()
            out.zero_()
            args = queue_args(src, chunk, 1, 2048, 0, size, counter, out, part_of_sm=table, sm_of_cta=smids)
            drv.launcher(fn, SM_COUNT, 32, SMEM, stream, args)()
            torch.cuda.synchronize()
            o, sm = out.cpu().tolist(), smids.cpu().tolist()
            mine = [o[2 * c + 1] for c in range(1, SM_COUNT) if part_of.get(sm[c], -1) >= 0]
            landed.append(statistics.median(mine))
            readers.append(len(mine))
            by_sm.append({sm[c]: o[2 * c + 1] for c in range(1, SM_COUNT) if part_of.get(sm[c], -1) >= 0})
            shared_landed.append(statistics.median([t for s_, t in by_sm[-1].items() if s_ in shared] or [0]))
        row = {"mode": "burst_gpc", "scheme": name, "chunk": chunk, "loads": 1, "sharing": size,
               "parts": len(set(part_of.values())), "readers_median": statistics.median(readers), "reps": reps,
               "landed_median": statistics.median(landed), "landed_medians": landed, "gpc_groups": groups,
               "shared_readers": len(shared), "landed_shared_median": statistics.median(shared_landed) if shared else None,
               "part_of_sm": {str(k): v for k, v in sorted(part_of.items())},
               "landed_by_sm": [{str(k): v for k, v in sorted(d.items())} for d in by_sm]}
        print(f"burst {chunk // 1024} KiB {name:>12s}: {row['parts']:>3} parts of {size:>2}, "
              f"{row['readers_median']:.0f} readers, landed median {row['landed_median']:.0f} cycles"
              + (f" ({len(shared)} sharing: {row['landed_shared_median']:.0f})" if shared else ""), flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    by_gpc, argv = take_flag(argv, "--burst-gpc")
    sweep, argv = take_flag(argv, "--sweep")
    if by_gpc:
        return folder_bench_exit("l2_queue", __doc__, argv, lambda torch, folder, reps: measure_burst_gpc(torch, folder, reps, sweep),
                                 9, "JSON lines, one per scheme")
    burst, argv = take_flag(argv, "--burst")
    if burst:
        return cubin_bench_exit("l2_queue", __doc__, argv, measure_burst, 9, "JSON lines, one per (chunk, sharing, strided)")
    return cubin_bench_exit("l2_queue", __doc__, argv, measure, 9, "JSON lines, one per (probe bytes, delay, flood)")


if __name__ == "__main__":
    sys.exit(main())
