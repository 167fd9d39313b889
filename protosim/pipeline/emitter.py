"""The ring's barrier ops, written for its producer and consumer: :class:`Pipeline`.

In the manner of CUTLASS's ``PipelineTmaAsync`` (``include/cutlass/pipeline/sm90_pipeline.hpp``):
a ring of stages guarded by a *full* barrier per stage (the producer fills it) and, with
two roles, an *empty* barrier per stage (the consumer releases it).  Each method writes one
protocol step at a :class:`~protosim.pipeline.state.PipelineState`:

=====================  ===========================================  ==========================
method                 ops                                          ``use``
=====================  ===========================================  ==========================
``producer_acquire``   ``Wait`` on ``empty[s]``                     the release of the stage's
                                                                    previous fill (-1 at first)
``producer_commit``    ``TmaLoad`` per load + ``ArriveExpectTx``    the next fill of ``full[s]``
                       on ``full[s]`` (or an ``Arrive`` /
                       ``MmaCommit``: ``fill=``)
``consumer_wait``      ``Wait`` on ``full[s]``                      the fill it reads
``consumer_release``   ``Arrive`` / ``MmaCommit`` on ``empty[s]``   the next release of
                       (``release=``)                               ``empty[s]``
=====================  ===========================================  ==========================

The state gives the stage and the parity the code passes; ``use`` -- the protocol's intent,
what the checkers judge each op by -- comes from a :class:`UseCounter` per side, never from
the state.  So a bug knob that changes what the code does (a parity passed as is, a ring
restarted at every tile) leaves the intent counted right, and the checkers find the bug.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from protosim.ints import shared
from protosim.ir import Arrive, ArriveExpectTx, Issuer, MmaCommit, Op, TmaLoad, Wait
from protosim.pipeline.state import PipelineState, stage_index

__all__ = ["UseCounter", "Pipeline"]

ARRIVALS: dict[str, type[Arrive] | type[MmaCommit]] = {"arrive": Arrive, "mma_commit": MmaCommit}
"""The ops that arrive on a barrier without bytes: ``mbarrier.arrive`` and ``tcgen05.commit``."""


class UseCounter:
    """How many times one role has used each barrier so far, in its program order.

    A role's k-th fill of a barrier is phase k of it, and a role's k-th wait for a barrier's
    fills waits for phase k; counting each role's ops per barrier therefore gives every op's
    ``use`` from the loop structure alone, whatever stage order or parity the code computes.
    The one place protosim counts uses: the builders, :class:`Pipeline` and the TTGIR reader
    all count with it."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"UseCounter({self._counts})"

    def count(self, barrier: str) -> int:
        """Uses of ``barrier`` taken so far."""
        return self._counts.get(barrier, 0)

    def take(self, barrier: str) -> int:
        """The next use of ``barrier`` (0 first), counted."""
        use = self._counts.get(barrier, 0)
        self._counts[barrier] = shared(use + 1)  # every op of a full chip names its use: one int a value
        return use

    def copy(self) -> UseCounter:
        """A counter that goes on from this one's counts (a role that starts after them)."""
        c = UseCounter()
        c._counts = dict(self._counts)
        return c

    def reset(self, barrier: str) -> None:
        """Start ``barrier`` over at use 0: it was re-initialised (``mbarrier.inval`` then ``init``)."""
        self._counts.pop(barrier, None)

    def last(self, barrier: str) -> int:
        """The use taken most recently (0 before any: a wait or a copy written before the
        fill that opens it belongs to the first phase)."""
        return max(self.count(barrier) - 1, 0)


class Pipeline:
    """Writes a ring's barrier ops: ``full[s]`` filled by the producer, ``empty[s]`` (if the
    ring has one) released by the consumer.

    ``producer`` and ``consumer`` take each op in program order (``ops.append``, a role's
    writer); the consumer's default is the producer's (one role playing both, as the seed's
    single warpgroup does).  ``fill``: how the producer fills a stage -- ``"tma"`` (TMA loads
    completing bytes, announced by ``arrive.expect_tx``), ``"arrive"`` or ``"mma_commit"``
    (an MMA's completion); ``release``: how the consumer frees one -- ``"arrive"`` or
    ``"mma_commit"`` (Blackwell's ``tcgen05.commit``).

    Each side counts its own ops per barrier (:attr:`produced`, :attr:`consumed`), so make
    one pipeline per ring and CTA and keep it for the CTA's whole program.  Every method
    takes ``parity`` (waits: what a buggy kernel passes instead of ``state.phase``),
    ``issuer`` (the usual one by default) and the op tags ``tile``, ``k``, ``label``, and
    returns the ``use`` it wrote."""

    def __init__(self, full: Sequence[str], empty: Sequence[str] = (), *, producer: Callable[[Op], Any],
                 consumer: Callable[[Op], Any] | None = None, fill: str = "tma", release: str = "arrive"):
        if not full:
            raise ValueError("Pipeline: a ring has at least one stage (full barrier)")
        if empty and len(empty) != len(full):
            raise ValueError(f"Pipeline: {len(full)} full barrier(s) but {len(empty)} empty; one of each per stage")
        if fill not in ("tma", *ARRIVALS):
            raise ValueError(f"Pipeline: fill = {fill!r}; use 'tma', {', '.join(map(repr, ARRIVALS))}")
        if release not in ARRIVALS:
            raise ValueError(f"Pipeline: release = {release!r}; use {', '.join(map(repr, ARRIVALS))}")
        self.full, self.empty = tuple(full), tuple(empty)
        self.fill, self.release = fill, release
        self._producer = producer
        self._consumer = consumer or producer
        self.produced = UseCounter()
        """The producer's acquires of ``empty[s]`` and fills of ``full[s]``."""
        self.consumed = UseCounter()
        """The consumer's waits on ``full[s]`` and releases of ``empty[s]``."""

    @property
    def stages(self) -> int:
        return len(self.full)

    def _empty(self, state: PipelineState) -> str:
        if not self.empty:
            raise ValueError("Pipeline: this ring has no empty barriers (one role fills and reads it)")
        return self.empty[stage_index(state, self.stages, "pipeline")]

    def _full(self, state: PipelineState) -> str:
        return self.full[stage_index(state, self.stages, "pipeline")]

    # -- producer -------------------------------------------------------------
    def producer_acquire(self, state: PipelineState, parity: int | None = None, issuer: Issuer = "all",
                         **tags: Any) -> int:
        """Wait until the consumer released the stage: the k-th acquire of a stage waits for
        release k-1 -- phase -1 at first, complete on a fresh barrier, which is why a
        producer starts at :meth:`PipelineState.producer_start`."""
        barrier = self._empty(state)
        use = self.produced.take(barrier) - 1
        use = shared(use)  # (-1, a fresh barrier's phase before the first: itself)
        self._producer(Wait(barrier=barrier, parity=state.phase if parity is None else parity, use=use,
                            issuer=issuer, **tags))
        return use

    def producer_commit(self, state: PipelineState, bytes: int = 0, loads: Sequence[tuple[Any, ...]] = (),
                        issuer: Issuer = "one", cta: int | None = None, **tags: Any) -> int:
        """Fill the stage.  ``fill="tma"``: a ``TmaLoad`` per ``(bytes, dst)``, ``(bytes, dst,
        src)`` or ``(bytes, dst, src, fields)`` in ``loads`` (``fields``: more ``TmaLoad`` fields,
        e.g. a cluster ``multicast``), then ``arrive.expect_tx`` of ``bytes`` (the total the code
        announces -- pass a wrong one to write that bug) on the barrier of cluster rank ``cta``
        (``None``: the CTA's own); otherwise one arrival."""
        if self.fill != "tma" and (bytes or loads):
            raise TypeError(f"Pipeline.producer_commit: fill = {self.fill!r} moves no bytes")
        barrier = self._full(state)
        use = self.produced.take(barrier)
        if self.fill != "tma":
            self._producer(ARRIVALS[self.fill](barrier=barrier, use=use, issuer=issuer, **tags))
            return use
        for load in loads:
            nbytes, dst, *rest = load
            src = rest[0] if rest else ""
            fields = rest[1] if len(rest) > 1 else {}
            self._producer(TmaLoad(barrier=barrier, use=use, bytes=nbytes, dst=dst, src=src, issuer=issuer,
                                   **fields, **tags))
        self._producer(ArriveExpectTx(barrier=barrier, use=use, bytes=bytes, issuer=issuer, cta=cta, **tags))
        return use

    # -- consumer -------------------------------------------------------------
    def consumer_wait(self, state: PipelineState, parity: int | None = None, issuer: Issuer = "all",
                      **tags: Any) -> int:
        """Wait until the stage is full: the k-th wait on a stage is for its k-th fill."""
        barrier = self._full(state)
        use = self.consumed.take(barrier)
        self._consumer(Wait(barrier=barrier, parity=state.phase if parity is None else parity, use=use,
                            issuer=issuer, **tags))
        return use

    def consumer_release(self, state: PipelineState, issuer: Issuer = "one", ranks: Sequence[int] = (),
                         **tags: Any) -> int:
        """Free the stage for the producer (after the reads of it completed -- on Hopper,
        ``wgmma.wait_group 0`` first; ``release="mma_commit"`` waits for the MMAs itself).
        ``ranks``: in a cluster, the CTAs whose producers wait for this release (every CTA
        whose multicast writes into the stage) -- one arrival on each one's ``empty[s]``,
        the same use (an ``mbarrier.arrive.shared::cluster`` each; a ``tcgen05.commit``
        multicast to them)."""
        barrier = self._empty(state)
        use = self.consumed.take(barrier)
        op = ARRIVALS[self.release]
        if not ranks:
            self._consumer(op(barrier=barrier, use=use, issuer=issuer, **tags))
        elif op is MmaCommit:
            self._consumer(op(barrier=barrier, use=use, issuer=issuer, multicast=tuple(ranks), **tags))
        else:
            for r in ranks:
                self._consumer(op(barrier=barrier, use=use, issuer=issuer, cta=r, **tags))
        return use
