"""How much of the L2 holds data every SM reads, on the GPU (issue 16: L2 partition effects).

kernels/microbench/l2_share.cu reads a buffer with one CTA per SM, either every CTA the whole
buffer (mode 0: each line read by SMs on both sides of the chip) or each CTA its own slice as
many times over (mode 1: each line read by one SM) -- the same bytes either way.  Buffers from
~9 to ~86 MB, in three states before each timed launch: ``written once`` (filled, then read by
the warm-up launches and every repetition: the steady state of a kernel launched again and
again on the same inputs, as the GEMM runner times them), ``rewritten`` (filled again before
every repetition: freshly written data) and ``flushed`` (L2 evicted before every repetition).
Run on the GPU machine:

    python -m kernels.runner.l2_share --cubin B/l2_share.sm_90a.cubin --out results.jsonl [--fine]

One JSON line per (mode, size, state): kernel-only time and the bytes read per second.

``--sides RECORD`` (RECORD: an ``l2_side_map`` record, results/silicon/microbench/): one CTA on
every SM, readers chosen by SM from the measured side map -- all of side 0, all of side 1, 32 of
each, 32 of side 0 -- each mode, written once, sizes around both knees: whether a line read from
both sides costs more of the L2 than one read from one side (the model's ``l2_shared_footprint``),
and how much of it one side's SMs can fill.  ``--sharers RECORD``: 64 readers (32 a side), each
line read by 1, 2, 4, 8, 16 or 64 of them: the footprint by readers a line; ``--readers 124-131``
with it: those SMs alone (a grid of 8 CTAs lands there), 1-8 readers a line.
"""

from __future__ import annotations

import ctypes
import json
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit, take_flag, take_value
from .tma_stream import SM_COUNT

W, CHUNK_BYTES = 8, 512  # l2_share.cu
UNITS = (16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 160)
"""Buffer sizes in units of SM_COUNT x W chunks (540,672 bytes): 8.7 to 86.5 MB."""
FINE = {0: tuple(range(54, 68, 2)), 1: tuple(range(80, 98, 2))}
"""``--fine``: around where each mode stopped fitting in the first sweep (29-36 MB and 43-52 MB)."""
SWEEP_UNITS = (40, 48, 56, 64, 72, 80, 88, 96)
"""``--grid`` sizes: 21.6 to 51.9 MB, where 8 CTAs' lines stopped fitting (30-35 MB) and 66's (43-52 MB)."""


SIDES_UNITS = tuple(range(72, 212, 8))
"""``--sides`` sizes, in units of 64 x W chunks (262,144 bytes; :func:`sides_chunks`): 18.9 to 54.5 MB,
from below the every-SM knee (~30 MB) to past the one-reader-a-line knee (~49 MB)."""
SIDES_SMEM = 160 * 1024
"""Dynamic shared memory a ``--sides`` CTA asks for: more than half an SM's, so one CTA an SM."""


def sides_chunks(units: int, readers: int) -> int:
    """A ``--sides`` buffer's chunks: about ``units`` x 64 readers x W whatever the readers (the
    same sizes for every selection), a multiple of ``readers`` x W (each reader's slice whole)."""
    return max(1, round(units * 64 / readers)) * readers * W


def side_map(record: str) -> tuple[list[int], list[int]]:
    """(side 0, side 1) SM ids from an ``l2_side_map`` record: its last mode-1 launch's split
    (the SMs that read CTA 0's lines as CTA 0 does are side 0 with it)."""
    rows = [json.loads(line) for line in open(record, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r.get("kind") == "l2_side_map" and r.get("mode") == 1]
    if not rows:
        raise ValueError(f"{record}: no mode-1 l2_side_map launch to read a side map from")
    split = rows[-1]["split"]
    return sorted(split["with_cta0"]), sorted(split["against_cta0"])


def reader_selections(side0: list[int], side1: list[int]) -> dict[str, list[int]]:
    """The readers of each ``--sides`` run, by name: SM ids."""
    return {"side 0": side0, "side 1": side1, "32 + 32": side0[:32] + side1[:32], "side 0, 32": side0[:32]}


def rank_table(readers: list[int], sm_count: int = SM_COUNT, across_tpcs: bool = False) -> list[int]:
    """``rank_of_sm`` for the kernel: each reader's rank among the readers, -1 for the others.  Ranks
    go in SM order -- consecutive ranks on the two SMs of a TPC (SMs 2k and 2k + 1) -- or, with
    ``across_tpcs``, the even SMs first, then the odd: consecutive ranks on different TPCs."""
    order = sorted(readers, key=lambda sm: (sm % 2, sm)) if across_tpcs else sorted(readers)
    table = [-1] * sm_count
    for rank, sm in enumerate(order):
        table[sm] = rank
    return table


class ChosenReaders:
    """The kernel on every SM with its readers chosen by SM (``rank_of_sm``; one CTA an SM): the
    launch and timing that ``--sides`` and ``--sharers`` share."""

    def __init__(self, torch, cubin: bytes):
        self.torch = torch
        self.drv = Driver()
        self.stream = torch.cuda.current_stream().cuda_stream
        self.fn = self.drv.function(cubin, "l2_share", SIDES_SMEM)
        self.sink = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.smids = torch.full((SM_COUNT,), -1, dtype=torch.int32, device="cuda")

    def ranks(self, readers: list[int], across_tpcs: bool = False):
        return self.torch.tensor(rank_table(readers, across_tpcs=across_tpcs), dtype=self.torch.int32, device="cuda")

    def time(self, buf, nchunks: int, mode: int, ranks, nreaders: int, sharers: int, reps: int) -> tuple[dict, float, bool]:
        """One timed launch set on ``buf`` (written once before it): the kernel times, their median
        in us, and whether every CTA had an SM of its own."""
        c = ctypes
        args = [c.c_void_p(buf.data_ptr()), c.c_uint(nchunks), c.c_int(mode), c.c_void_p(self.sink.data_ptr()),
                c.c_void_p(self.smids.data_ptr()), c.c_void_p(ranks.data_ptr()), c.c_uint(nreaders), c.c_uint(sharers)]
        launch = self.drv.launcher(self.fn, SM_COUNT, 128, SIDES_SMEM, self.stream, args)
        buf.add_(1)
        t = T.kernel_time(self.torch, launch, reps=reps, warmup=2)
        return t, t["median"] * 1e3, len(set(self.smids.tolist())) == SM_COUNT


def measure_sides(torch, cubin: bytes, reps: int, record: str) -> list[dict]:
    side0, side1 = side_map(record)
    kernel = ChosenReaders(torch, cubin)
    rows = []
    for name, readers in reader_selections(side0, side1).items():
        ranks = kernel.ranks(readers)
        for units in SIDES_UNITS:
            nchunks = sides_chunks(units, len(readers))
            nbytes = nchunks * CHUNK_BYTES
            buf = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
            for mode in (0, 1):
                t, us, alone = kernel.time(buf, nchunks, mode, ranks, len(readers), 0, reps)
                read = len(readers) * nbytes
                row = {"sides": name, "readers": sorted(readers), "mode": mode,
                       "reads": "every reader the whole buffer" if mode == 0 else "each reader its own slice",
                       "bytes": nbytes, "state": "written once", "grid": SM_COUNT, "one_cta_an_sm": alone,
                       "kernel_ms": t, "tb_per_s": round(read / ((us - 3.0) * 1e-6) / 1e12, 3), "side_map": record}
                rows.append(row)
                print(f"{name:<11} mode {mode} {nbytes / 1e6:6.1f} MB: {us:8.1f} us, {row['tb_per_s']:6.2f} TB/s "
                      "(less 3 us launch)", flush=True)
            del buf
    return rows


SHARERS = (1, 2, 4, 8, 16, 64)
"""``--sharers``: readers a line has (64 readers, 32 on each side; groups of consecutive ranks in SM
order, so a group of 2 is a TPC's two SMs, groups of 2-8 sit on one side, 16 on both)."""
ACROSS_SHARERS = (2, 4)
"""The same with ranks on the even SMs first (:func:`rank_table` ``across_tpcs``): a group of 2 on two
TPCs, a group of 4 on four)."""


FEW_UNITS = tuple(range(36, 180, 8))
"""``--sharers`` sizes for fewer than 64 readers (``--readers``): 9.4 to 45.1 MB, where 8 SMs' lines
stopped fitting (~28 MB, l2_share --grid)."""


def parse_sms(spec: str) -> list[int]:
    """``"124-131"`` or ``"0-3,8,10-11"``: SM ids (ValueError for anything else or an SM off the chip)."""
    sms: list[int] = []
    for part in spec.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError(f"{spec!r}: SM ids and ranges, such as 124-131 or 0-3,8")
        lo, hi = int(first), int(last or first)
        if lo > hi or hi >= SM_COUNT:
            raise ValueError(f"{spec!r}: {part.strip()} is not a range of SMs 0-{SM_COUNT - 1}")
        sms += range(lo, hi + 1)
    if len(set(sms)) != len(sms):
        raise ValueError(f"{spec!r}: an SM named twice")
    return sorted(sms)


def measure_sharers(torch, cubin: bytes, reps: int, record: str, readers: list[int] | None = None) -> list[dict]:
    """Each line read by ``s`` of the readers (64 by default, 32 a side), for each ``s`` of
    :data:`SHARERS` that divides them: how much of the L2 a line read by several SMs takes, by how
    many (mode 2 of the kernel; 1 and all readers are modes 1 and 0)."""
    side0, side1 = side_map(record)
    readers = readers or reader_selections(side0, side1)["32 + 32"]
    kernel = ChosenReaders(torch, cubin)
    tables = {"TPC pairs": kernel.ranks(readers), "across TPCs": kernel.ranks(readers, across_tpcs=True)}
    n = len(readers)
    runs = [(o, s) for o in tables for s in (SHARERS if o == "TPC pairs" else ACROSS_SHARERS) if s <= n and n % s == 0]
    runs += [("TPC pairs", n)] if ("TPC pairs", n) not in runs else []  # every reader every line
    rows = []
    for units in SIDES_UNITS if n >= 64 else FEW_UNITS:
        nchunks = sides_chunks(units, len(readers))
        nbytes = nchunks * CHUNK_BYTES
        buf = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
        for order, sharers in runs:
            t, us, alone = kernel.time(buf, nchunks, 2, tables[order], len(readers), sharers, reps)
            row = {"sharers": sharers, "order": order, "readers": sorted(readers), "mode": 2, "bytes": nbytes, "state": "written once",
                   "grid": SM_COUNT, "one_cta_an_sm": alone, "kernel_ms": t,
                   "tb_per_s": round(len(readers) * nbytes / ((us - 3.0) * 1e-6) / 1e12, 3), "side_map": record}
            rows.append(row)
            print(f"{order:<11} {sharers:3d} readers a line {nbytes / 1e6:6.1f} MB: {us:8.1f} us, {row['tb_per_s']:6.2f} TB/s",
                  flush=True)
        del buf
    return rows


def measure(torch, cubin: bytes, reps: int, fine: bool = False, grid: int = SM_COUNT) -> list[dict]:
    """``grid`` < SM_COUNT (``--grid N``): the first N CTAs alone (the launch puts CTA i on SM i's
    slot first), mode 1 only, written once only -- how much of the L2 the lines of a few SMs can
    hold (the model lets one side's SMs fill all of it)."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function(cubin, "l2_share", 0)
    sink = torch.zeros(1, dtype=torch.int32, device="cuda")
    smids = torch.full((SM_COUNT,), -1, dtype=torch.int32, device="cuda")
    scratch = torch.empty(4 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")
    rows = []
    for units in sorted(set(FINE[0] + FINE[1])) if fine else UNITS if grid == SM_COUNT else SWEEP_UNITS:
        nchunks = units * SM_COUNT * W
        nbytes = nchunks * CHUNK_BYTES
        buf = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
        for mode in (0, 1) if grid == SM_COUNT else (1,):
            if fine and units not in FINE[mode]:
                continue
            args = [ctypes.c_void_p(buf.data_ptr()), ctypes.c_uint(nchunks), ctypes.c_int(mode), ctypes.c_void_p(sink.data_ptr()),
                    ctypes.c_void_p(smids.data_ptr()), ctypes.c_void_p(None), ctypes.c_uint(0), ctypes.c_uint(0)]
            launch = drv.launcher(fn, grid, 128, 0, stream, args)
            states = (("written once", None), ("rewritten", lambda: buf.add_(1)), ("flushed", lambda: scratch.fill_(1)))
            for state, before in states[:1] if fine or grid != SM_COUNT else states:
                if state == "written once":
                    buf.add_(1)
                t = T.kernel_time(torch, launch, reps=reps, warmup=2, before=before)
                read = grid * nbytes
                us = t["median"] * 1e3
                row = {"mode": mode, "reads": "every CTA the whole buffer" if mode == 0 else "each CTA its own slice",
                       "bytes": nbytes, "state": state, "grid": grid, "sms": smids[:grid].tolist(), "kernel_ms": t,
                       "tb_per_s": round(read / ((us - 3.0) * 1e-6) / 1e12, 3)}
                rows.append(row)
                print(f"mode {mode} {nbytes / 1e6:6.1f} MB {state:<12}: {us:8.1f} us, {row['tb_per_s']:6.2f} TB/s "
                      "(less 3 us launch)", flush=True)
        del buf
    return rows


def main(argv: list[str] | None = None) -> int:
    fine, argv = take_flag(argv, "--fine")
    sides, argv = take_value(argv, "--sides")
    sharers, argv = take_value(argv, "--sharers")
    readers_spec, argv = take_value(argv, "--readers")
    readers = None
    if readers_spec is not None:
        try:
            readers = parse_sms(readers_spec)
        except ValueError as e:
            print(f"l2_share: --readers {e}", file=sys.stderr)
            return 2
    for option, record, measure_with, out in (
            ("--sharers", sharers, lambda torch, cubin, reps, rec: measure_sharers(torch, cubin, reps, rec, readers),
             "JSON lines, one per (readers a line, size)"),
            ("--sides", sides, measure_sides, "JSON lines, one per (readers, mode, size)")):
        if record is None:
            continue
        try:
            side_map(record)
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            print(f"l2_share: {option} {record}: {e}", file=sys.stderr)
            return 2
        return cubin_bench_exit("l2_share", __doc__, argv,
                                lambda torch, cubin, reps: measure_with(torch, cubin, reps, record), 5, out)
    value, args = take_value(argv, "--grid")
    grid = SM_COUNT
    if value is not None:
        if not value.isdigit() or not 1 <= int(value) <= SM_COUNT:
            print(f"l2_share: --grid {value!r}: a CTA count between 1 and {SM_COUNT}", file=sys.stderr)
            return 2
        grid = int(value)
    return cubin_bench_exit("l2_share", __doc__, args, lambda torch, cubin, reps: measure(torch, cubin, reps, fine, grid), 5,
                            "JSON lines, one per (mode, size, state)",
                            epilog="--fine: sizes around each mode's knee, written once only; --grid N: the first N CTAs alone, mode 1; "
                                   "--sides RECORD: readers chosen by SM from an l2_side_map record; "
                                   "--sharers RECORD: each line read by 1-64 of 64 readers")


if __name__ == "__main__":
    sys.exit(main())
