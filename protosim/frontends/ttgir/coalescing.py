"""How many 128-byte lines one warp instruction of a ``tt.load`` / ``tt.store`` touches.

A warp's global load or store is served by its SM's L1 one cache line at a time: 32 lanes reading
16 contiguous bytes each touch 4 lines, 32 lanes each in its own row of a matrix touch 32.  The
reader knows both halves of that: the layout (``#ttg.blocked``: which lane and warp hold which
element, and how many contiguous elements one instruction moves) and, where the walk evaluates it,
every element's offset from the base pointer (``values.addresses``).  :func:`lines_per_instruction`
puts them together: the elements one instruction moves are those of one warp that share their
repetition and register index, and its lines are their distinct ``offset * bytes // 128``.

GPT-J's rotary embedding reads with lanes along the heads, a row of 128 bytes apart: 32 lines an
instruction, where the layout's vector width alone (2 bytes) says nothing about it
(docs/semantics.md "Global loads into registers").  Only ``#ttg.blocked`` layouts are read; any
other layout, or offsets the walk could not evaluate, give None (the coalesced cost stands).
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np

from protosim.frontends.ttgir.registers import _LIST  # a layout's `name = [a, b]` list, as lane_width reads it

LINE_BYTES = 128


def _ints(name: str, layout: str) -> list[int] | None:
    m = re.search(r"\b" + name + _LIST, layout)
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else None


def lines_per_instruction(offsets: np.ndarray, layout: str, elem_bytes: int, width: int,
                          run: bool = False) -> float | None:
    """Mean distinct 128-byte lines one warp instruction touches, over the instructions with at least
    one lane on.  ``offsets``: each element's offset in elements from the base (the tensor's shape,
    -1 where masked off); ``width``: bytes one lane moves per instruction (its vector).  ``run``:
    None unless every instruction's lines are one run (:func:`line_counts`)."""
    counts = line_counts(offsets, layout, elem_bytes, width)
    return None if counts is None or (run and not counts[1]) else counts[0]


def line_counts(offsets: np.ndarray, layout: str, elem_bytes: int, width: int) -> tuple[float, bool] | None:
    """:func:`lines_per_instruction`'s mean, and whether every instruction's lines are one run (its
    first to its last line, at most one it skips) -- a store whose lanes are apart within a row, not
    spread over rows.  None where the layout or the offsets give no answer."""
    if not layout.startswith("#ttg.blocked") or offsets.size == 0:
        return None
    groups = _instructions(layout, offsets.shape, max(1, width // elem_bytes))
    if groups is None:
        return None
    lines = offsets.reshape(-1).astype(np.int64)[groups]  # one row per instruction
    lines = np.where(lines >= 0, lines * elem_bytes // LINE_BYTES, -1)
    lines.sort(axis=1)
    on = lines >= 0
    firsts = np.ones(lines.shape, dtype=bool)
    firsts[:, 1:] = lines[:, 1:] != lines[:, :-1]
    touched = (firsts & on).sum(axis=1)
    live = on.any(axis=1)
    if not live.any():
        return None
    span = lines.max(axis=1) - np.where(on, lines, np.iinfo(np.int64).max).min(axis=1) + 1
    return float(touched[live].sum() / live.sum()), bool((span[live] <= touched[live] + 1).all())


@functools.lru_cache(maxsize=256)
def _instructions(layout: str, shape: tuple[int, ...], vec: int) -> np.ndarray | None:
    """The tensor's flat element indices one row per warp instruction (equal rows), or None for a
    layout this does not map.  An instruction: one warp, one repetition of the CTA's tile in every
    dimension, one register index -- each thread's sizePerThread block, ``vec`` elements at a time
    along order[0].  Elements several lanes hold (a tensor smaller than the layout's tile) count
    once."""
    spt, tpw, wpc, order = (_ints(k, layout) for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"))
    rank = len(shape)
    if not (spt and tpw and wpc and order) or not (len(spt) == len(tpw) == len(wpc) == len(order) == rank):
        return None
    if min(spt + tpw + wpc) < 1 or sorted(order) != list(range(rank)):  # not a layout Triton makes
        return None
    # nor is one whose lanes are not one 32-thread warp, or whose sizes overflow the int64 keys below
    # (a fuzzer's threadsPerWarp = [10^40, 8]: an OverflowError in numpy, not a reading)
    if math.prod(tpw) != 32 or max(spt + wpc) > 1 << 16:
        return None
    coords = np.indices(shape).reshape(rank, -1)
    key = np.zeros(coords.shape[1], dtype=np.int64)
    for d in range(rank):
        c = coords[d]
        tile = spt[d] * tpw[d] * wpc[d]
        within = c % spt[d]
        size = spt[d]
        if d == order[0]:
            within, size = within // vec, -(-spt[d] // vec)
        warp = (c // (spt[d] * tpw[d])) % wpc[d]
        rep = c // tile
        for value, n in ((warp, wpc[d]), (rep, -(-shape[d] // tile)), (within, size)):
            key = key * n + value
    by_key = np.argsort(key, kind="stable")
    counts = np.bincount(key)
    counts = counts[counts > 0]
    if counts.size == 0 or (counts != counts[0]).any():
        return None
    return by_key.reshape(counts.size, int(counts[0]))


def coalesced_lines(width: int) -> int:
    """Lines a warp instruction of ``width`` bytes a lane touches when its lanes are contiguous and
    aligned: 32 lanes x width, 128 bytes a line (at least one)."""
    return max(1, 32 * width // LINE_BYTES)
