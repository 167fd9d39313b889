"""``capacity``: the CTA does not fit the architecture.

Static, from the schedule and the profile: shared memory (buffers + mbarriers,
laid out as ``T.SMEMPool`` does) against the per-CTA limit, TMEM columns
allocated against the SM's TMEM, threads per CTA, named-barrier ids.  Any of
these makes the launch fail.
"""

from __future__ import annotations

from protosim.checkers.base import Finding
from protosim.engine.machine import smem_bytes
from protosim.ir import NamedBarrierSync, TmemAlloc

KIND = "capacity"


def check(result) -> list[Finding]:
    s, a = result.schedule, result.arch
    out = []

    def add(msg: str, **ev) -> None:
        out.append(Finding(KIND, -1, "launch", -1, 0.0, msg, ev))

    need = smem_bytes(s)
    if need > a.smem_per_cta_bytes:
        add(f"shared memory: the CTA needs {need} bytes, {a.name} allows {a.smem_per_cta_bytes} per CTA; "
            f"use fewer pipeline stages or smaller tiles", need=need, limit=a.smem_per_cta_bytes)
    if s.threads_per_cta > a.max_threads_per_cta:
        add(f"threads: {s.threads_per_cta} per CTA, {a.name} allows {a.max_threads_per_cta}",
            need=s.threads_per_cta, limit=a.max_threads_per_cta)
    tmem = max((op.columns for cta in s.ctas[:1] for ops in cta.roles for op in ops if isinstance(op, TmemAlloc)), default=0)
    tmem_buffers = [b for b in s.buffers if b.space == "tmem"]
    if tmem > a.tmem_columns or (tmem_buffers and not a.has_tmem):
        add(f"TMEM: the CTA allocates {tmem} columns, {a.name} has {a.tmem_columns}"
            + (" (no Tensor Memory on this arch: port the MMA to wgmma)" if not a.has_tmem else ""),
            need=tmem, limit=a.tmem_columns)
    ids = {op.barrier_id for cta in s.ctas[:1] for ops in cta.roles for op in ops if isinstance(op, NamedBarrierSync)}
    bad = sorted(i for i in ids if not 0 <= i < a.named_barriers)
    if bad:
        add(f"named barriers: ids {bad} outside 0..{a.named_barriers - 1}", ids=bad, limit=a.named_barriers)
    return out
