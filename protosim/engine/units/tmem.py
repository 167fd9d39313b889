"""Tensor Memory: ``tcgen05.alloc`` / ``dealloc`` of an SM's columns, ``tcgen05.ld`` and
``tcgen05.wait::ld``.

An allocation blocks while the SM lacks free columns and is granted in request order.
A CTA that exits still holding columns returns them (the hardware frees TMEM at exit only
if dealloc'd -- a leak the checkers judge; the model keeps going so later CTAs can run).
A warp's ``tcgen05.ld`` results are its own once its ``wait::ld`` returns; its
``tcgen05.st`` data is in TMEM once its ``wait::st`` returns.
"""

from __future__ import annotations

from typing import Any

import simpy

from protosim.engine.resources import SmUnits
from protosim.engine.state import THREADS, CtaState, WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.ir import Op, TmemAlloc, TmemDealloc, TmemLoad, TmemStore, WaitLd, WaitSt


class TmemUnit(Unit):
    name = "tmem"

    def __init__(self, machine):
        super().__init__(machine)
        self.held: dict[CtaState, int] = {}
        """Columns each CTA holds."""
        self.loads: dict[WarpState, tuple[float, list[int]]] = {}
        """Each warp's TMEM loads since its last wait::ld: (when the last completes, their access seqs)."""
        self.stores: dict[WarpState, tuple[float, list[int]]] = {}
        """The same for its TMEM stores since its last wait::st."""

    def handlers(self) -> dict[type[Op], Handler]:
        a = self.arch
        return {
            TmemLoad: Handler(self.issue_cost, self.load),
            WaitLd: Handler(None, self.wait_ld, self.wait_ld_done),
            TmemStore: Handler(self.issue_cost, self.store),
            WaitSt: Handler(None, self.wait_st, self.wait_st_done),
            TmemAlloc: Handler(lambda w, op: a.tmem_alloc_cycles if a.has_tmem else 0.0, self.alloc, self.granted),
            TmemDealloc: Handler(self.issue_cost, self.dealloc),
        }

    def cta_started(self, cta: CtaState) -> None:
        self.held[cta] = 0

    def cta_finished(self, cta: CtaState) -> None:
        held = self.held.pop(cta)
        if held:  # the hardware frees TMEM at exit only if dealloc'd; keep the model going
            self._give_back(cta.sm, held)

    # -- tcgen05.ld ------------------------------------------------------------------
    def load(self, w: WarpState, i: int, op: TmemLoad) -> None:
        self._move(w, i, op, op.src, "r", self.loads)

    def store(self, w: WarpState, i: int, op: TmemStore) -> None:
        # Timed like a load: the same datapath between registers and TMEM (an assumption;
        # docs/semantics.md "Tensor Memory").
        self._move(w, i, op, op.dst, "w", self.stores)

    def _move(self, w: WarpState, i: int, op: TmemLoad | TmemStore, acc, mode: str, pending: dict) -> None:
        m, arch = self.m, self.arch
        now = m.env.now
        done = now + m.timing.scale(arch.tmem_load_latency) + op.bytes / arch.tmem_bytes_per_clk
        last, seqs = pending.get(w, (0.0, []))
        seqs.append(m.access(w, i, acc, mode, now, done, op.tile, w.tick(), THREADS[op.issuer]))
        pending[w] = (max(last, done), seqs)

    def wait_ld(self, w: WarpState, i: int, op: WaitLd) -> simpy.Event | None:
        return self._wait(w, i, op, self.loads, "wait_ld")

    def wait_ld_done(self, w: WarpState, i: int, op: WaitLd, value: Any) -> None:
        self.m.unblocked(w)
        self._known(w, i, self.loads, "wait_ld")

    def wait_st(self, w: WarpState, i: int, op: WaitSt) -> simpy.Event | None:
        return self._wait(w, i, op, self.stores, "wait_st")

    def wait_st_done(self, w: WarpState, i: int, op: WaitSt, value: Any) -> None:
        self.m.unblocked(w)
        self._known(w, i, self.stores, "wait_st")

    def _wait(self, w: WarpState, i: int, op: Op, pending: dict, how: str) -> simpy.Event | None:
        m = self.m
        now = m.env.now
        last = pending.get(w, (0.0, []))[0]
        if last > now:
            m.block(w, i, op, how, w.who)
            return m.env.timeout(last - now)
        w.debt += self.arch.op_issue_cycles
        self._known(w, i, pending, how)
        return None

    def _known(self, w: WarpState, i: int, pending: dict, how: str) -> None:
        w.tick()
        last, seqs = pending.get(w, (0.0, []))
        self.m.observe(w, i, seqs, how)
        if seqs:
            pending[w] = (last, [])

    # -- alloc / dealloc -------------------------------------------------------------
    def alloc(self, w: WarpState, i: int, op: TmemAlloc) -> simpy.Event | None:
        m, arch = self.m, self.arch
        if not arch.has_tmem:
            m.raise_trap(w.cta, w.who, i, "tmem", "tcgen05.alloc", "unsupported",
                         f"tcgen05.alloc on {arch.name} ({arch.target}), which has no Tensor Memory", None)
            return None
        sm = w.cta.sm
        if sm.tmem_free < op.columns:
            ev = m.env.event()
            sm.tmem_waiters.append((op.columns, ev))
            m.block(w, i, op, "tmem_alloc", f"tmem@sm{sm.index}", f"{sm.tmem_free} columns free")
            return ev
        sm.tmem_free -= op.columns
        self.held[w.cta] += op.columns
        return None

    def granted(self, w: WarpState, i: int, op: TmemAlloc, value: Any) -> None:
        self.m.unblocked(w)
        self.held[w.cta] += op.columns

    def dealloc(self, w: WarpState, i: int, op: TmemDealloc) -> None:
        cols = min(op.columns, self.held[w.cta])
        self.held[w.cta] -= cols
        self._give_back(w.cta.sm, cols)
        if len(w.cta.peers) > 1:  # a peer's 2-CTA MMA may still use it: the lifetime checker's anchor
            m = self.m
            m.log.emit(m.env.now, "tmem_dealloc", w.cta.index, w.who, i, columns=op.columns, clock=w.tick())

    @staticmethod
    def _give_back(sm: SmUnits, columns: int) -> None:
        sm.tmem_free += columns
        while sm.tmem_waiters and sm.tmem_waiters[0][0] <= sm.tmem_free:
            cols, ev = sm.tmem_waiters.pop(0)
            sm.tmem_free -= cols
            ev.succeed()
