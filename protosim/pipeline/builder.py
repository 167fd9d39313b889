"""Write a schedule by roles and rings: :class:`ScheduleBuilder`, :class:`Role` and the storage
handles :class:`BarrierArray`, :class:`Buffer`.

A :class:`Role` method that takes a barrier array and a :class:`PipelineState` touches
``barrier[state.index]`` with ``use`` from the state (``state.use``, one less on a
``starts_free`` array); :meth:`ScheduleBuilder.pipeline` writes a whole ring's steps with
:class:`protosim.pipeline.Pipeline` instead, counting uses per barrier.

Clusters (``ScheduleBuilder(..., cluster=k)``): consecutive runs of ``k`` CTAs form a
cluster and :attr:`ScheduleBuilder.rank` is the current CTA's rank in it.  An op names a
peer's barrier or buffer by rank (``cta=``), a TMA load writes several ranks (``multicast=``),
and :meth:`ScheduleBuilder.cluster_sync` is ``barrier.cluster`` in every role
(docs/semantics.md "Clusters").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from protosim._dataclass_cache import DataclassCache
from protosim.ints import shared
from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
    BarrierDecl,
    BufferDecl,
    ClusterArrive,
    ClusterWait,
    CtaProgram,
    CtaSync,
    ExpectTx,
    Fence,
    MbarInit,
    Mma,
    MmaCommit,
    Op,
    RoleDecl,
    Schedule,
    ScheduleError,
    Sleep,
    TmaLoad,
    Wait,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
    validate,
)
from protosim.pipeline.emitter import Pipeline
from protosim.pipeline.state import PipelineState, stage_index

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

__all__ = ["BarrierArray", "Buffer", "Role", "ScheduleBuilder"]


# --------------------------------------------------------------------------- storage handles


@dataclass(frozen=True)
class BarrierArray:
    """One mbarrier per stage (``full[0]`` .. ``full[S-1]``), declared by
    :meth:`ScheduleBuilder.barriers`; index it with a stage or a :class:`PipelineState`."""

    name: str
    names: tuple[str, ...]
    count: int
    """Arrivals per phase (``mbarrier.init``'s count)."""
    starts_free: bool
    """Waits on this barrier are one phase behind its arrivals: the k-th wait on a stage
    is for phase k-1, the release of the stage's previous use (phase -1, parity 1, is
    complete on a fresh barrier).  True for a ring's *empty* barriers."""

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, at: int | PipelineState) -> str:
        return self.names[stage_index(at, len(self.names), f"barrier array {self.name!r}")]

    def wait_use(self, state: PipelineState) -> int:
        """The phase a wait at ``state`` is for, by the protocol's intent."""
        return state.use - 1 if self.starts_free else state.use


@dataclass(frozen=True)
class Buffer:
    """A buffer of ``stages`` slots, declared by :meth:`ScheduleBuilder.buffer`."""

    name: str
    stages: int

    def at(self, at: int | PipelineState, content: str = "", part: int | None = None, cta: int | None = None,
           columns: tuple[int, int] | None = None) -> Access:
        """The slot at a stage (or a state's stage) holding ``content`` -- the data tag
        the hazard checkers compare (``"A[m=0,k=3]"``).  ``cta``: the cluster rank whose
        buffer it is (a DSMEM access, a 2-CTA MMA's peer operand; ``None``: the executing
        CTA's own); ``columns``: a TMEM column range ``(lo, hi)``."""
        return Access(self.name, stage_index(at, self.stages, f"buffer {self.name!r}"), content, part, cta,
                      None if columns is None else tuple(columns))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- writers

_TAGS = ("tile", "k", "label", "issuer")


class Role:
    """Writes one role's ops into the CTA being built; made by :meth:`ScheduleBuilder.role`.

    Every method appends ops and takes optional keyword tags: ``tile``, ``k``, ``label``
    (default: the builder's current :meth:`ScheduleBuilder.tag`) and ``issuer``
    (``"all"``, ``"warp0"``, ``"one"``, ``"each_warp"``; each method's default is the
    usual one).  Methods that take a barrier array and a :class:`PipelineState` use the
    state's stage and fill in ``use``."""

    def __init__(self, builder: ScheduleBuilder, name: str, warps: int):
        self.builder = builder
        self.name = name
        self.warps = warps

    def __repr__(self) -> str:
        return f"Role({self.name!r}, warps={self.warps})"

    def _emit(self, cls: type[Op], issuer: str, tags: dict[str, Any], **fields: Any) -> None:
        unknown = set(tags) - set(_TAGS)
        if unknown:
            raise TypeError(f"{self.name}: {cls.__name__}: unknown keyword(s) {sorted(unknown)}; tags are {_TAGS}")
        merged = {**self.builder._tags, "issuer": issuer, **tags}
        if type(fields.get("use")) is int:  # every op of a full chip names its use: one int a value
            fields["use"] = shared(fields["use"])
        self.builder._append(self.name, cls(**merged, **fields))

    # -- barriers -------------------------------------------------------------
    def init(self, *arrays: BarrierArray, **tags: Any) -> None:
        """``mbarrier.init`` of every barrier in ``arrays`` by one thread, then
        ``fence.mbarrier_init``.  Follow it with :meth:`ScheduleBuilder.cta_sync` so no
        other role touches a barrier before it exists -- in a cluster with
        :meth:`ScheduleBuilder.cluster_sync`, so no peer does either."""
        for array in arrays:
            for name in array.names:
                self._emit(MbarInit, "one", tags, barrier=name)
        self._emit(Fence, "all", {k: v for k, v in tags.items() if k != "issuer"}, fence="mbarrier_init")

    def wait(self, bar: BarrierArray, state: PipelineState, parity: int | None = None, **tags: Any) -> None:
        """``try_wait.parity`` on ``bar[state]`` until it succeeds (every thread, by default).

        Passes ``state.phase`` unless ``parity`` says otherwise (to write a bug); ``use`` is
        ``state.use`` (``state.use - 1`` on a ``starts_free`` barrier) either way."""
        self._emit(Wait, "all", tags, barrier=bar[state], parity=state.phase if parity is None else parity,
                   use=bar.wait_use(state))

    def arrive(self, bar: BarrierArray, state: PipelineState, count: int = 1, cta: int | None = None,
               **tags: Any) -> None:
        """``mbarrier.arrive`` on ``bar[state]`` for phase ``state.use`` (one thread, by
        default): a consumer releasing its stage.  ``cta``: the cluster rank whose barrier
        it is (``mbarrier.arrive.shared::cluster``, a remote arrive); ``None``: its own."""
        self._emit(Arrive, "one", tags, barrier=bar[state], use=state.use, count=count, cta=cta)

    def arrive_expect_tx(self, bar: BarrierArray, state: PipelineState, bytes: int, cta: int | None = None,
                         **tags: Any) -> None:
        """``mbarrier.arrive.expect_tx``: expect ``bytes`` on ``bar[state]``, then arrive (one
        thread); ``cta``: on that cluster rank's barrier."""
        self._emit(ArriveExpectTx, "one", tags, barrier=bar[state], use=state.use, bytes=bytes, cta=cta)

    def expect_tx(self, bar: BarrierArray, state: PipelineState, bytes: int, cta: int | None = None,
                  **tags: Any) -> None:
        """``mbarrier.expect_tx`` without an arrival (one thread); ``cta``: on that cluster
        rank's barrier."""
        self._emit(ExpectTx, "one", tags, barrier=bar[state], use=state.use, bytes=bytes, cta=cta)

    # -- data movement and math -----------------------------------------------
    def tma_load(self, bar: BarrierArray, state: PipelineState, bytes: int, dst: Access, src: str = "",
                 multicast: Sequence[int] = (), barrier_cta: int | None = None, **tags: Any) -> None:
        """A TMA load of ``bytes`` into ``dst`` whose bytes complete on ``bar[state]`` (one
        thread).  ``src`` names the global tile for the L2 model (default: ``dst``'s content).

        ``multicast``: the cluster ranks that receive the bytes (``.multicast::cluster``), each
        at ``dst``'s offset in its own shared memory, each completing ``bytes`` on its own
        ``bar[state]`` -- so every receiver's ``expect_tx`` counts them.  ``barrier_cta``: the
        rank whose barrier gets the complete_tx (``.cta_group::2``: the pair's leader)."""
        if multicast and dst.cta is not None:
            raise ValueError(f"{self.name}: tma_load multicast={tuple(multicast)} writes dst's offset in every "
                             f"rank of the mask; leave dst's cta unset (got cta={dst.cta})")
        if len(set(multicast)) != len(tuple(multicast)):
            raise ValueError(f"{self.name}: tma_load multicast={tuple(multicast)} names a rank twice; "
                             "name each receiving rank once")
        self._emit(TmaLoad, "one", tags, barrier=bar[state], use=state.use, bytes=bytes, dst=dst, src=src,
                   multicast=tuple(multicast), barrier_cta=barrier_cta)

    def mma(self, m: int, n: int, k_elems: int, reads: Sequence[Access] = (), writes: Sequence[Access] = (),
            accumulate: bool = False, cta_group: int = 1, **tags: Any) -> None:
        """``tcgen05.mma`` (Blackwell, one thread): async, in order; ``writes`` are TMEM.
        ``cta_group=2``: one MMA over a CTA pair, issued by the pair's even rank, its
        ``reads`` / ``writes`` naming each CTA's operands (``Buffer.at(..., cta=r)``)."""
        if cta_group not in (1, 2):
            raise ValueError(f"{self.name}: mma cta_group={cta_group}; tcgen05 has cta_group 1 or 2")
        self._emit(Mma, "one", tags, m=m, n=n, k_elems=k_elems, reads=tuple(reads), writes=tuple(writes),
                   accumulate=accumulate, cta_group=cta_group)

    def commit(self, bar: BarrierArray, state: PipelineState, multicast: Sequence[int] = (), **tags: Any) -> None:
        """``tcgen05.commit`` onto ``bar[state]`` for phase ``state.use`` (one thread): one
        arrival once every MMA this thread issued has completed -- Blackwell's release.
        ``multicast``: the arrival lands on ``bar[state]`` of each of these cluster ranks."""
        self._emit(MmaCommit, "one", tags, barrier=bar[state], use=state.use, multicast=tuple(multicast))

    def wgmma(self, m: int, n: int, k_elems: int, reads: Sequence[Access] = (), writes: Sequence[Access] = (),
              accumulate: bool = False, **tags: Any) -> None:
        """``wgmma.mma_async`` (Hopper, all warps of the warpgroup): joins the open wgmma group."""
        self._emit(Wgmma, "all", tags, m=m, n=n, k_elems=k_elems, reads=tuple(reads), writes=tuple(writes),
                   accumulate=accumulate)

    def wgmma_commit(self, **tags: Any) -> None:
        """``wgmma.commit_group``: closes the open group."""
        self._emit(WgmmaCommit, "all", tags)

    def wgmma_wait(self, n: int = 0, **tags: Any) -> None:
        """``wgmma.wait_group n``: at most ``n`` groups still in flight -- before releasing a stage
        the wgmma reads, wait with ``n = 0``."""
        self._emit(WgmmaWait, "all", tags, n=n)

    # -- clusters -------------------------------------------------------------
    def cluster_arrive(self, relaxed: bool = False, **tags: Any) -> None:
        """``barrier.cluster.arrive`` (every thread): ``.release`` -- what the role wrote is
        visible to whoever passes the matching wait -- unless ``relaxed``.  Pair it with
        :meth:`cluster_wait` (arrive and wait alternate); :meth:`ScheduleBuilder.cluster_sync`
        writes both in every role."""
        self._emit(ClusterArrive, "all", tags, relaxed=relaxed)

    def cluster_wait(self, **tags: Any) -> None:
        """``barrier.cluster.wait`` (every thread): until every thread of every CTA of the
        cluster made its matching :meth:`cluster_arrive`."""
        self._emit(ClusterWait, "all", tags)

    def sleep(self, cycles: int, warp: int | None = None, **tags: Any) -> None:
        """``nanosleep`` for ``cycles`` (only warp ``warp`` of the role, if given): a delay knob."""
        self._emit(Sleep, "all", tags, cycles=cycles, warp=warp)

    def op(self, op: Op) -> None:
        """Append any :mod:`protosim.ir` op as given (the escape hatch); ``tile`` and ``k``
        left ``None`` take the builder's current tags."""
        self.builder._append(self.name, self._tagged(op, ("tile", "k")))

    def _tagged(self, op: Op, keys: tuple[str, ...]) -> Op:
        """``op`` with the builder's current tags in the ``keys`` it left unset."""
        unset = {"tile": None, "k": None, "label": ""}
        fill = {key: self.builder._tags[key] for key in keys if getattr(op, key) == unset[key]}
        fill = {key: value for key, value in fill.items() if value != unset[key]}
        return dataclasses.replace(op, **fill) if fill else op

    def _append_tagged(self, op: Op) -> None:
        """A :class:`Pipeline`'s sink: ``op`` with every current tag it left unset."""
        self.builder._append(self.name, self._tagged(op, ("tile", "k", "label")))


class ScheduleBuilder:
    """Declares storage and roles, collects each CTA's programs, builds a :class:`Schedule`.

    Ops go to the CTA started last: inside ``for tile in b.grid(m, n)`` each iteration
    starts a fresh CTA (the same Python code, run once per CTA, is the program replicated
    over the grid); :meth:`cta` starts one by hand; ops written before either go to a
    single CTA 0.

    ``cluster``: CTAs per thread-block cluster.  CTA ``i`` is rank ``i % cluster`` of
    cluster ``i // cluster`` (a cluster's CTAs are consecutive: ``grid`` runs x fastest);
    :attr:`rank` is the current CTA's.  The CTA count must be a multiple of ``cluster``."""

    def __init__(self, name: str, arch: str = "h200", cluster: int = 1):
        if isinstance(cluster, bool) or not isinstance(cluster, int) or cluster < 1:
            raise ValueError(f"ScheduleBuilder {name!r}: cluster = {cluster!r}; CTAs per cluster, an integer >= 1 "
                             "(1: no cluster)")
        self.name = name
        self.arch = arch
        self.cluster = cluster
        self._barriers: list[BarrierDecl] = []
        self._buffers: list[BufferDecl] = []
        self._roles: list[Role] = []
        self._ctas: list[dict[str, list[Op]]] = []
        self._implicit = False
        self._tags: dict[str, Any] = {"tile": None, "k": None, "label": ""}

    # -- declarations ---------------------------------------------------------
    def barriers(self, name: str, stages: int, count: int = 1, starts_free: bool = False) -> BarrierArray:
        """``stages`` mbarriers ``name[0]`` .. ``name[stages-1]``, each expecting ``count``
        arrivals per phase.  ``starts_free=True`` for a ring's *empty* barriers (see
        :attr:`BarrierArray.starts_free`)."""
        names = tuple(f"{name}[{s}]" for s in range(stages))
        return self._declare_barriers(name, names, count, starts_free)

    def barrier(self, name: str, count: int = 1, starts_free: bool = False) -> BarrierArray:
        """One mbarrier called ``name`` (an array of one stage: use it with ``PipelineState(1)``)."""
        return self._declare_barriers(name, (name,), count, starts_free)

    def _declare_barriers(self, name: str, names: tuple[str, ...], count: int, starts_free: bool) -> BarrierArray:
        if not names:
            raise ValueError(f"barrier array {name!r}: at least one stage")
        taken = {b.name for b in self._barriers} & set(names)
        if taken:
            raise ValueError(f"barrier(s) {sorted(taken)} already declared")
        self._barriers += [BarrierDecl(n, count) for n in names]
        return BarrierArray(name, names, count, starts_free)

    def buffer(self, name: str, stages: int = 1, bytes: int = 0, space: str = "smem", columns: int = 0,
               parts: int = 1, align: int = 1024) -> Buffer:
        """A buffer of ``stages`` slots: shared memory costs ``bytes`` per slot, TMEM
        (``space="tmem"``) ``columns``; ``parts`` pieces written separately; ``align`` of the base
        (1024: a 128B-swizzled TMA tile)."""
        if any(b.name == name for b in self._buffers):
            raise ValueError(f"buffer {name!r} already declared")
        self._buffers.append(BufferDecl(name, space, stages, bytes, columns, parts, align))  # type: ignore[arg-type]
        return Buffer(name, stages)

    def role(self, name: str, warps: int) -> Role:
        """A role of ``warps`` warps (roles take consecutive warps in declaration order)."""
        if any(r.name == name for r in self._roles):
            raise ValueError(f"role {name!r} already declared")
        if warps < 1:
            raise ValueError(f"role {name!r}: warps = {warps}; at least one")
        r = Role(self, name, warps)
        self._roles.append(r)
        return r

    def pipeline(self, full: BarrierArray, empty: BarrierArray | None = None, *, producer: Role,
                 consumer: Role | None = None, fill: str = "tma", release: str = "arrive") -> Pipeline:
        """A :class:`Pipeline` writing the ring ``full`` (and ``empty``) into the roles
        ``producer`` and ``consumer`` (default: the producer), its ops tagged like the
        roles' own.  Make one per CTA, inside the ``grid`` loop: it counts uses per barrier
        from the CTA's start."""
        if empty is not None and not empty.starts_free:
            raise ValueError(f"pipeline: declare the empty barriers {empty.name!r} with starts_free=True "
                             "(the producer's first acquire waits for a release before the first fill)")
        return Pipeline(full.names, empty.names if empty is not None else (), producer=producer._append_tagged,
                        consumer=(consumer or producer)._append_tagged, fill=fill, release=release)

    # -- programs -------------------------------------------------------------
    @property
    def rank(self) -> int:
        """The current CTA's rank in its cluster (``index % cluster``; 0 without a cluster)."""
        return max(len(self._ctas) - 1, 0) % self.cluster

    @property
    def ranks(self) -> tuple[int, ...]:
        """Every rank of a cluster, ``(0, .., cluster - 1)``: a multicast to the whole cluster,
        a release of every CTA's barrier."""
        return tuple(range(self.cluster))

    def cta(self) -> int:
        """Start a new CTA program and return its index: the following ops go to it.  For
        persistent kernels, whose CTAs walk several tiles (set ``tile`` with :meth:`tag`)."""
        if self._implicit:
            raise ScheduleError(f"{self.name}: ops were written before the first cta() / grid(); "
                                "start every CTA explicitly once you use them")
        self._ctas.append({})
        return len(self._ctas) - 1

    def grid(self, m: int, n: int = 1) -> Iterator[tuple[int, int]]:
        """One CTA per output tile of an ``m x n`` grid (x fastest, like ``T.cta_id``): yields each
        tile with a fresh CTA started and the ``tile`` tag set to it (``k`` cleared)."""
        for by in range(n):
            for bx in range(m):
                self.cta()
                self._tags.update(tile=(bx, by), k=None)
                yield (bx, by)

    def tag(self, tile: Any = ..., k: Any = ..., label: Any = ...) -> None:
        """Set the tags the following ops carry (until changed): ``tile`` is the output tile (what
        a verdict lists as wrong), ``k`` the k-tile, ``label`` free text."""
        for key, value in (("tile", tile), ("k", k), ("label", label)):
            if value is not ...:
                self._tags[key] = value

    def cta_sync(self, **tags: Any) -> None:
        """``bar.sync 0`` in every role: all threads of the CTA meet."""
        for r in self._roles:
            r._emit(CtaSync, "all", tags)

    def cluster_sync(self, relaxed: bool = False, **tags: Any) -> None:
        """``barrier.cluster.arrive`` + ``barrier.cluster.wait`` in every role: all threads of
        every CTA of the cluster meet.  After the barrier inits (no peer arrives on -- or
        multicasts into -- a barrier not yet initialised) and before the exit (no CTA exits
        while a peer may still touch its shared memory or barriers)."""
        for r in self._roles:
            r.cluster_arrive(relaxed=relaxed, **tags)
            r.cluster_wait(**tags)

    def _append(self, role: str, op: Op) -> None:
        if not self._ctas:
            self._ctas.append({})
            self._implicit = True
        self._check_ranks(role, op)
        self._ctas[-1].setdefault(role, []).append(op)

    def _check_ranks(self, role: str, op: Op) -> None:
        """Refuse, where it is written, an op naming a cluster rank the cluster lacks, and a
        2-CTA MMA outside a pair's even rank (``validate`` would only name the op's index)."""
        named = [(f, getattr(op, f, None)) for f in ("cta", "barrier_cta")]
        named += [("multicast", r) for r in getattr(op, "multicast", ())]
        named += [(f"{a.buffer} access cta", a.cta) for a in op.accesses()]
        k = self.cluster
        for what, r in named:
            if r is not None and not (isinstance(r, int) and 0 <= r < k):
                fix = (f"ranks are 0..{k - 1}" if k > 1 else
                       "without a cluster only rank 0 exists; build with ScheduleBuilder(..., cluster=N)")
                raise ScheduleError(f"{self.name}: {role}: {op.kind} {what} = {r!r}, but the cluster has {k} CTA(s); "
                                    f"{fix}")
        if getattr(op, "cta_group", 1) == 2 and op.kind in ("mma", "tmem_copy") and (k % 2 or self.rank % 2):
            raise ScheduleError(f"{self.name}: {role}: a cta_group=2 {op.kind} is issued by the even rank of a CTA "
                                f"pair, but this CTA is rank {self.rank} of a cluster of {k}; issue it only "
                                "where b.rank % 2 == 0, in a cluster of an even size")

    def build(self, config: dict[str, Any] | None = None, l2_at_launch: str = "cold") -> Schedule:
        """The schedule, checked by :func:`protosim.ir.validate` (raises ``ScheduleError``).
        ``l2_at_launch``: ``cold``, or ``inputs`` when the kernel's inputs were written just
        before the launch (a launch condition: part of the schedule's hash)."""
        k, n = self.cluster, len(self._ctas)
        if n % k:
            raise ScheduleError(
                f"{self.name}: {n} CTA(s) is not a multiple of cluster={k}: a cluster launches all its {k} CTAs; "
                f"write a grid of a multiple of {k} CTAs (grid(m, n) with m * n a multiple of {k}, or more cta() "
                "calls), or build with a cluster size that divides it")
        roles = tuple(RoleDecl(r.name, r.warps) for r in self._roles)
        ctas = tuple(
            CtaProgram(i, tuple(tuple(ops.get(r.name, ())) for r in self._roles)) for i, ops in enumerate(self._ctas)
        )
        s = Schedule(self.name, self.arch, tuple(self._barriers), tuple(self._buffers), roles, ctas,
                     l2_at_launch=l2_at_launch, config={"builder": "protosim.pipeline", **(config or {})},
                     cluster=k)
        validate(s)
        return s


_DATACLASSES.save()  # after the module's last dataclass
