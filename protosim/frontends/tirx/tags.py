"""From raw ops (what each CTA's threads did) to a schedule: roles, issuers, storage and tags.

A builder knows its intent; a frontend only has the code.  This module derives everything a
schedule needs from what the code determines, in four steps:

1. **Roles** -- warps that execute the same non-synchronising ops belong together: every op
   other than a CTA-wide ``bar.sync`` or a fence joins the warps that execute it
   (union-find over all CTAs).  Each group must be consecutive warps.  A group is named by
   what it does: ``mma`` (issues MMAs), ``producer`` (TMA loads, no MMA), ``writeback``
   (the rest), the kernels' own role names (``kernels/spec.py``).
2. **Issuers** -- an op's threads, seen from its role: every thread (``all``), the first
   warp (``warp0``), one thread (``one``), one thread in every warp (``each_warp``), or a
   whole other warp for a sleep (the lagging-warp knob).  Anything else is an error naming
   the op and the threads.
3. **Storage** -- every mbarrier element the program names is a barrier ``buf[i]``, its
   count from its first ``init``; a shared buffer's stage is the size of the largest async
   transfer into or out of it (a TMA box, an MMA operand), so ``Asmem[s, ...]`` is stage
   ``s``; TMEM stages by the MMA's column range; per-warp writes (thread copies, register
   stores, TMEM loads) make one part per warp of the writing role.
4. **Logical tags** (:func:`derive_tags`): ``use`` by counting, ``Access.content`` by data
   flow through the barriers -- docs/tirx.md says what each loses without intent.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import numpy as np

from protosim.frontends.tirx.errors import TirxError
from protosim.frontends.tirx.interp import WARP, Addr, BufferInfo
from protosim.frontends.tirx.recognize import Raw, Touch
from protosim.ptxas import bank_ways
from protosim.ir import (
    WARP_PART,
    Access,
    Arrive,
    ArriveExpectTx,
    BarrierDecl,
    BufferDecl,
    BulkCommit,
    BulkWait,
    ClusterArrive,
    ClusterWait,
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    CtaSync,
    ExpectTx,
    Fence,
    GlobalStore,
    LocalLoad,
    MbarInit,
    Mma,
    MmaCommit,
    NamedBarrierSync,
    Op,
    Sleep,
    SmemStore,
    ThreadCopy,
    TmaLoad,
    TmaStore,
    TmemAlloc,
    TmemDealloc,
    TmemLoad,
    Wait,
    WaitLd,
    WarpSync,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)

NO_UNION = {"cta_sync", "fence", "named_barrier", "warp_sync", "cluster_arrive", "cluster_wait"}
"""Ops every role runs alike (a CTA-wide or cluster-wide barrier, a fence): they do not make
warps one role."""
OBSERVER_KINDS = NO_UNION | {"wait", "sleep"}
"""A role that only waits (and sleeps, and syncs) changes no barrier and no buffer: an
instrumentation warp (the Hopper kernels' trace observers, which stamp the clock when a phase
completes).  Its waits are left out of the schedule -- they would only add observers to a
replay -- and its warps stay, idle, so CTA-wide syncs count them as the hardware does."""
PER_WARP = {"thread_copy", "smem_store", "global_store", "tmem_load", "local_load", "cp_async"}
"""Ops each executing warp performs on its own share of the data."""
ASYNC_KINDS = {"tma_load", "tma_store", "mma", "wgmma"}
"""Ops of the async proxy that address a buffer as a swizzled tile."""
FOLDED = {"smem_store", "global_store", "local_load", "thread_copy"}
"""Per-thread element stores that run back to back fold into one op per warp (an unrolled
epilogue writes a row element by element)."""


# --------------------------------------------------------------------------- roles


def find_roles(ctas: list[list[Raw]], threads: int, splits: list[list[np.ndarray]] | None = None
               ) -> list[tuple[str, int, int]]:
    """``(name, first warp, warps)`` of every role, in warp order.  ``splits``: groups of
    threads the interpreter ran one op site for separately (each with its own barrier or
    region) -- their warps are never one role, so an op they execute together does not join
    them (each role sees its own threads of it)."""
    n_warps = threads // WARP
    parent = list(range(n_warps))
    apart: set[tuple[int, int]] = set()
    for groups in splits or ():
        warp_sets = [set(np.flatnonzero(g.reshape(n_warps, WARP).any(axis=1)).tolist()) for g in groups]
        for i, a in enumerate(warp_sets):
            for b in warp_sets[i + 1:]:
                apart.update((x, y) for x in a for y in b)
                apart.update((y, x) for x in a for y in b)

    def find(w: int) -> int:
        while parent[w] != w:
            parent[w] = parent[parent[w]]
            w = parent[w]
        return w

    does: dict[int, set[str]] = defaultdict(set)
    seen: set[tuple[str, int]] = set()
    for raws in ctas:
        for r in raws:
            key = (r.kind, id(r.mask))  # masks are interned by the interpreter
            if key in seen:
                continue
            seen.add(key)
            warps = np.flatnonzero(r.mask.reshape(n_warps, WARP).any(axis=1))
            for w in warps:
                does[int(w)].add(r.kind)
            if r.kind in NO_UNION or len(warps) < 2:
                continue
            if apart and any((int(x), int(y)) in apart for x in warps for y in warps):
                continue
            root = find(int(warps[0]))
            for w in warps[1:]:
                parent[find(int(w))] = root
    groups: dict[int, list[int]] = defaultdict(list)
    for w in range(n_warps):
        groups[find(w)].append(w)
    roles = []
    for ws in sorted(groups.values()):
        if ws != list(range(ws[0], ws[-1] + 1)):
            raise TirxError(f"warps {ws} run one program but are not consecutive; protosim's roles are runs of "
                            "consecutive warps -- number the warps so that each role's warps are adjacent")
        kinds = set().union(*(does[w] for w in ws))
        name = ("mma" if kinds & {"mma", "wgmma"} else "producer" if "tma_load" in kinds
                else "observer" if "wait" in kinds and kinds <= OBSERVER_KINDS
                else "writeback" if kinds & {"tma_store", "global_store", "tmem_load", "smem_store"}
                else "worker" if kinds - NO_UNION else "idle")
        roles.append((name, ws[0], len(ws)))
    names: dict[str, int] = defaultdict(int)
    for name, _, _ in roles:
        names[name] += 1
    out, taken = [], defaultdict(int)
    for name, first, n in roles:
        if names[name] > 1:
            name = f"{name}{taken[name]}"
            taken[name.rstrip('0123456789')] += 1
        out.append((name, first, n))
    return out


def issuer_of(r: Raw, first: int, warps: int, role: str) -> tuple[str, int | None] | None:
    """How the role's threads execute ``r``: an issuer rule, and for a sleep of one warp its
    index; None when no thread of the role executes it."""
    sub = r.mask[first * WARP:(first + warps) * WARP].reshape(warps, WARP)
    per_warp = sub.sum(axis=1)
    total = int(per_warp.sum())
    if total == 0:
        return None
    if total == warps * WARP:
        return "all", None
    active = np.flatnonzero(per_warp)
    if total == 1 and active[0] == 0:
        return "one", None
    if len(active) == 1 and per_warp[active[0]] == WARP:
        if r.kind == "sleep" and warps > 1:  # one warp of the role sleeps: the lagging-warp form, warp 0 too
            return "all", int(active[0])
        if active[0] == 0:
            return "warp0", None
    if warps > 1 and (per_warp == 1).all():
        return "each_warp", None
    if r.kind in PER_WARP and len(active) == warps:
        return "all", None  # some lanes idle in a per-thread store: each warp writes its share
    if total == 1 and r.kind == "sleep":
        return "one", None
    who = ", ".join(f"warp {first + w}: {int(per_warp[w])} thread(s)" for w in active)
    raise TirxError(f"{r.where}: {r.kind} is executed by {who} of role {role} (warps {first}..{first + warps - 1}); "
                    "protosim's issuers are every thread, the role's first warp, one thread (its first), or one "
                    "thread per warp -- guard the op with tid == 0, warp_id == 0 or elect_sync()")


# --------------------------------------------------------------------------- storage


def _sig(t: Any) -> Any:
    """What of a touch decides storage: buffer, offset and size (not the tile it copies)."""
    if isinstance(t, Touch):
        return (t.buf.name, t.offset, t.elems)
    if isinstance(t, list):
        return tuple(_sig(x) for x in t)
    return None


def barrier_name(a: Addr, aliases: dict[str, str] | None = None) -> str:
    name = aliases.get(a.buf.name, a.buf.name) if aliases and a.buf.anonymous else a.buf.name
    return f"{name}[{a.offset}]"


class Storage:
    """Barriers and buffers the raw ops name, with each buffer's stage size."""

    def __init__(self, ctas: list[list[Raw]], roles: list[tuple[str, int, int]], aliases: dict[str, str] | None = None,
                 cluster: int = 1):
        self.aliases = aliases or {}
        self.cluster = cluster
        """CTAs per cluster.  In a cluster schedule a TMEM access that covers part of its
        stage names its column range (``Access.columns``), as the book's step 8's writeback
        reads the pair's 2*BLK_N columns in BLK_N-column chunks; single-CTA schedules keep
        the stage-level TMEM accesses the seed's builders mirror."""
        self.count: dict[str, int] = {}
        """Each barrier's arrival count: from its first ``init`` (1 if the program never inits it)."""
        inited: set[str] = set()
        self.barrier_order: list[str] = []
        self.stage_elems: dict[str, int] = {}
        self.infos: dict[str, BufferInfo] = {}
        self.tmem_end: dict[str, int] = {}
        self.parts: dict[str, int] = {}
        self.slices: dict[str, set[int]] = {}
        """Buffers a multicast TMA fills slice by slice: the slice sizes (elements).  A slice
        is a part of a stage -- the stage is the smallest run of the buffer's leading index
        that holds it (``Asmem[s, rn*BM/CN:, :]`` of ``Asmem[PIPE, BM, BK]`` is part ``rn`` of
        stage ``s``), as every CTA of the multicast assembles the whole tile there."""
        self.async_touched: set[str] = set()
        """Buffers a TMA or an MMA reads or writes: their base needs 1024-byte alignment
        (128-byte swizzled tiles), as the kernels' pools place them."""
        role_warps = {first: n for _, first, n in roles}
        seen: set[tuple[Any, ...]] = set()
        if cluster > 1:
            self._fill_groups(ctas)
        for raws in ctas:
            for r in raws:
                f = r.f
                bar = f.get("bar")
                if bar is None and "dst" not in f and "src" not in f and "reads" not in f:
                    continue
                sig = (r.kind, bar, id(r.mask), *(_sig(f.get(x)) for x in ("dst", "src", "reads", "writes")))
                if sig in seen:
                    continue  # the same op on the same storage (another k-tile, another CTA)
                seen.add(sig)
                if bar is not None:
                    name = barrier_name(bar, self.aliases)
                    if name not in self.count:
                        self.barrier_order.append(name)
                        self.count[name] = 1
                    if r.kind == "mbar_init" and name not in inited:
                        inited.add(name)
                        self.count[name] = r.f["count"]
                for t in self._touches(r):
                    self.infos[t.buf.name] = t.buf
                    if r.kind in ASYNC_KINDS:
                        self.async_touched.add(t.buf.name)
                    if t.elems and r.kind not in PER_WARP:
                        size = _whole_rows(t.buf, t.elems) if f.get("multicast") else t.elems
                        self.stage_elems[t.buf.name] = max(self.stage_elems.get(t.buf.name, 0), size)
                        if size != t.elems:
                            self.slices.setdefault(t.buf.name, set()).add(t.elems)
                    if t.buf.scope == "tmem" and t.elems:
                        cols = t.buf.shape[-1]
                        end = t.offset % cols + t.elems // t.buf.shape[0]
                        self.tmem_end[t.buf.name] = max(self.tmem_end.get(t.buf.name, 0), end)
                    if r.kind in PER_WARP:
                        warps = r.mask.reshape(-1, WARP).any(axis=1)
                        first = int(np.argmax(warps))
                        n = next((n for f, n in role_warps.items() if f <= first < f + n), 1)
                        self.parts[t.buf.name] = max(self.parts.get(t.buf.name, 1), n)

    def _fill_groups(self, ctas: list[list[Raw]]) -> None:
        """TMA loads issued back to back into one buffer on one barrier at different offsets
        (step 9's ``Asmem[s, 0]`` and ``Asmem[s, 1]``, one per consumer) fill one stage
        together: each is a part of it, the stage the smallest block of the buffer's trailing
        dimensions that holds them all (as for multicast slices)."""
        done: set[tuple[Any, ...]] = set()
        for raws in ctas:
            run: dict[tuple[Any, str], set[tuple[int, int]]] = defaultdict(set)
            for r in raws + [None]:
                if r is not None and r.kind == "tma_load":
                    t = r.f["dst"]
                    run[(r.f["bar"], t.buf.name)].add((t.offset, t.elems))
                    continue
                for (_, name), pieces in run.items():
                    key = (name, tuple(sorted(pieces)))
                    if len(pieces) < 2 or key in done:
                        continue
                    done.add(key)
                    sizes = {e for _, e in pieces}
                    if len(sizes) != 1:
                        continue
                    (e,) = sizes
                    info = next(x for x in self._run_infos(raws, name))
                    size = _whole_rows(info, e * len(pieces))
                    if min(o for o, _ in pieces) // size == max(o for o, _ in pieces) // size:
                        self.stage_elems[name] = max(self.stage_elems.get(name, 0), size)
                        self.slices.setdefault(name, set()).add(e)
                run.clear()

    @staticmethod
    def _run_infos(raws: list[Raw], name: str):
        for r in raws:
            if r.kind == "tma_load" and r.f["dst"].buf.name == name:
                yield r.f["dst"].buf

    @staticmethod
    def _touches(r: Raw) -> list[Touch]:
        out = [r.f[k] for k in ("dst", "src") if isinstance(r.f.get(k), Touch)]
        out += list(r.f.get("reads", ())) + list(r.f.get("writes", ()))
        return out

    def stage_of(self, t: Touch) -> int:
        size = self.stage_size(t.buf)
        return t.offset // size if size else 0

    def part_of(self, t: Touch) -> int | None:
        """The part of its stage a slice covers (``None``: the whole stage)."""
        size = self.stage_size(t.buf)
        if not size or not t.elems or t.elems >= size or t.elems not in self.slices.get(t.buf.name, ()):
            return None
        return (t.offset % size) // t.elems

    def stage_size(self, info: BufferInfo) -> int:
        if info.scope == "tmem":
            if self.cluster > 1 and info.name in self.tmem_end and info.shape:
                # a cluster schedule's accumulator is one stage of every column its MMAs and
                # loads use; each access names its columns (step 9: one range per consumer)
                return self.tmem_end[info.name] * info.shape[0]
            return self.stage_elems.get(info.name, info.elems) or info.elems
        return self.stage_elems.get(info.name, 0) or info.elems

    def decls(self) -> tuple[tuple[BarrierDecl, ...], tuple[BufferDecl, ...]]:
        barriers = tuple(BarrierDecl(n, self.count[n]) for n in self.barrier_order)
        buffers = []
        for name, info in self.infos.items():
            size = self.stage_size(info)
            parts = self.parts.get(name, 1)
            if info.scope == "tmem":
                rows = info.shape[0] if info.shape else 128
                cols = max(size // rows, 1)
                stages = max(-(-self.tmem_end.get(name, cols) // cols), 1)
                buffers.append(BufferDecl(name, "tmem", stages, columns=cols, parts=parts))
            else:
                stages = max(info.elems // size, 1) if size else 1
                align = 1024 if name in self.async_touched else 128
                if name in self.slices:
                    parts = max(parts, size // min(self.slices[name]))
                buffers.append(BufferDecl(name, "smem", stages, size * info.elem_bytes, parts=parts, align=align))
        return barriers, tuple(buffers)


def _whole_rows(buf: BufferInfo, elems: int) -> int:
    """The smallest block of ``buf``'s trailing dimensions (``shape[d:]``) that holds
    ``elems`` elements: a multicast slice's stage."""
    size = 1
    for n in reversed(buf.shape):
        if size >= elems:
            break
        size *= n
    return max(size, elems)


# --------------------------------------------------------------------------- ops


class Draft:
    """An op being built: its class, fields, the raw it came from, and its accesses (so
    contents can be filled in by :func:`derive_tags`)."""

    __slots__ = ("cls", "f", "raw", "bar", "writes", "reads", "out")

    def __init__(self, cls: type[Op], raw: Raw, **f: Any):
        self.cls, self.raw, self.f = cls, raw, f
        self.bar: str | None = None
        self.writes: list[tuple[str, Access]] = []
        self.reads: list[tuple[str, Access]] = []
        self.out: str | None = None
        """An output store's global tile (``D[0,1]``): what the op's role is computing."""


def _element_store_ways(r: Raw, first: int, t: Touch) -> int:
    """The bank conflict of a per-element thread store into shared memory, from the elements the
    role's first warp's lanes write (``t.rows``: per thread; :func:`protosim.ptxas.bank_ways`).
    A tile primitive's store (``t.flat`` set: the seed's swizzled 16-byte copy) is left at 1."""
    cells = t.rows
    if t.flat is not None or not isinstance(cells, np.ndarray) or cells.ndim != 1:
        return 1
    lanes = slice(first * WARP, (first + 1) * WARP)
    written = cells[lanes][r.mask[lanes]]
    if written.size == 0:
        return 1
    n = t.buf.elem_bytes
    return bank_ways([int(x) * n for x in written], n)


def _per_warp_bytes(r: Raw, first: int, warps: int) -> int:
    sub = r.mask[first * WARP:(first + warps) * WARP].reshape(warps, WARP)
    if r.f.get("per_thread", r.kind in FOLDED):
        return r.f["bytes"] * int(sub.sum(axis=1).max())
    executing = int(r.mask.reshape(-1, WARP).any(axis=1).sum())
    return r.f["bytes"] // max(executing, 1)


def drafts_for_role(raws: list[Raw], role: tuple[str, int, int], storage: Storage, clock_ghz: float,
                    issuers: dict[tuple[int, str], Any] | None = None) -> list[Draft]:
    """The role's ops in program order (folded where runs of thread stores or wgmmas form one op).
    ``issuers`` caches :func:`issuer_of` per (mask, kind) -- masks are interned by the interpreter."""
    name, first, warps = role
    out: list[Draft] = []
    prev: tuple[Raw, Draft] | None = None
    cache = issuers if issuers is not None else {}
    observer = name.startswith("observer")
    for r in raws:
        if observer and r.kind in ("wait", "sleep"):
            continue
        key = (id(r.mask), r.kind)
        who = cache.get(key, 0)
        if who == 0:
            who = cache[key] = issuer_of(r, first, warps, name)
        if who is None:
            continue
        issuer, sleep_warp = who
        k = r.kind
        if prev is not None and k in FOLDED | {"wgmma"} and prev[0].kind == k and _same_target(prev[0], r):
            _fold(prev[1], r, first, warps)
            prev = (r, prev[1])
            continue
        d = _draft(r, issuer, sleep_warp, first, warps, storage, clock_ghz)
        if d is not None:
            out.append(d)
            prev = (r, d)
        else:
            prev = None
    return out


def _same_target(a: Raw, b: Raw) -> bool:
    if a.mask is not b.mask and not np.array_equal(a.mask, b.mask):
        return False
    if a.kind == "wgmma":
        return a.f["m"] == b.f["m"] and a.f["n"] == b.f["n"]
    da, db = a.f.get("dst") or a.f.get("src"), b.f.get("dst") or b.f.get("src")
    return (da is None and db is None) or (da is not None and db is not None and da.buf.name == db.buf.name)


def _fold(d: Draft, r: Raw, first: int, warps: int) -> None:
    if r.kind == "wgmma":
        rows, ks, ns = d.f.pop("_rows"), d.f.pop("_ks"), d.f.pop("_ns")
        rows.add(_row_of(r.f["a"]))
        ks.add(r.f["b"][-1])
        ns.add(_row_of(r.f["b"]))
        d.f["_count"] += 1
        d.f.update(_rows=rows, _ks=ks, _ns=ns)
        return
    d.f["bytes"] += _per_warp_bytes(r, first, warps)
    if "lo" in r.f:  # an element-wise thread copy: the global box it covers so far
        d.f["_lo"] = [min(a, b) for a, b in zip(d.f["_lo"], r.f["lo"])]
        d.f["_hi"] = [max(a, b) for a, b in zip(d.f["_hi"], r.f["hi"])]


def _draft(r: Raw, issuer: str, sleep_warp: int | None, first: int, warps: int, storage: Storage,
           clock_ghz: float) -> Draft | None:
    f, k = r.f, r.kind
    if k == "mbar_init":
        d = Draft(MbarInit, r, issuer=issuer)
        d.bar = barrier_name(f["bar"], storage.aliases)
        return d
    if k in ("arrive", "arrive_expect_tx", "expect_tx", "mma_commit", "wait"):
        cls = {"arrive": Arrive, "arrive_expect_tx": ArriveExpectTx, "expect_tx": ExpectTx, "mma_commit": MmaCommit,
               "wait": Wait}[k]
        extra = {"count": f["count"]} if k == "arrive" and f["count"] != 1 else {}
        if k in ("arrive_expect_tx", "expect_tx"):
            extra["bytes"] = f["bytes"]
        if k == "wait":
            extra["parity"] = f["parity"]
        if f["bar"].cta is not None:  # a peer's barrier (mapa): Arrive / ExpectTx .cta
            extra["cta"] = f["bar"].cta
        if k == "mma_commit" and f.get("multicast"):
            extra["multicast"] = f["multicast"]
        d = Draft(cls, r, issuer=issuer, **extra)
        d.bar = barrier_name(f["bar"], storage.aliases)
        return d
    if k == "tma_load":
        extra = {}
        if f.get("multicast"):
            extra["multicast"] = f["multicast"]
        if f["bar"].cta is not None:  # cta_group::2: the pair leader's barrier
            extra["barrier_cta"] = f["bar"].cta
        t = f["dst"]
        part = storage.part_of(t)
        src = f["src"]
        if part is not None and f.get("multicast"):  # a slice: part of the stage's tile, its own piece of it
            content = _stage_tile(f.get("box"), t, storage) or src
            src = f"{content}#{part}"
            t = Touch(t.buf, t.offset, t.elems, content, t.rows, t.cta)
        d = Draft(TmaLoad, r, issuer=issuer, bytes=f["bytes"], src=src, **extra)
        d.bar = barrier_name(f["bar"], storage.aliases)
        d.writes.append(("dst", _access(t, storage, part=part)))
        if part is not None and f.get("multicast"):
            d.f["_content"] = t.tile
        return d
    if k == "tma_store":
        d = Draft(TmaStore, r, issuer=issuer, bytes=f["bytes"])
        d.reads.append(("src", _access(f["src"], storage)))
        d.out = f["src"].tile
        return d
    if k in ("thread_copy", "cp_async"):
        cls = ThreadCopy if k == "thread_copy" else CpAsync
        extra = {"src": f["src"]} if f.get("src") else {}
        if k == "thread_copy" and f.get("load_bytes"):
            extra["load_bytes"] = f["load_bytes"]
        if "lo" in f:
            extra.update(_glob=f["glob"], _lo=list(f["lo"]), _hi=list(f["hi"]))
        d = Draft(cls, r, issuer=issuer, bytes=_per_warp_bytes(r, first, warps), **extra)
        d.writes.append(("dst", _access(f["dst"], storage, part=WARP_PART)))
        return d
    if k == "smem_store":
        ways = _element_store_ways(r, first, f["dst"])
        d = Draft(SmemStore, r, issuer=issuer, bytes=_per_warp_bytes(r, first, warps), **({"bank_ways": ways} if ways > 1 else {}))
        part = WARP_PART if _disjoint_rows(r, first, warps) else None
        t = f["dst"]
        stage = 0
        if t.flat is not None:  # the stage the role's threads write (their first element)
            flat = t.flat
            if isinstance(flat, np.ndarray):
                sub = np.zeros_like(r.mask)
                sub[first * WARP:(first + warps) * WARP] = True
                flat = int(flat[r.mask & sub].min())
            stage = storage.stage_of(Touch(t.buf, int(flat), 0))
        d.writes.append(("dst", Access(t.buf.name, stage, "", part)))
        return d
    if k == "global_store":
        # A thread's store site as ptxas emits it: an element store stays that wide (STG.E.U16 for
        # fp16, the Hopper epilogue), a thread's contiguous run becomes 16-byte stores (STG.E.128,
        # the seed's row copy) -- results/silicon/microbench/2026-12-01_h200_global_store.md
        width = next(w for w in (16, 8, 4, 2, 1) if f["bytes"] % w == 0)
        return Draft(GlobalStore, r, issuer=issuer, bytes=_per_warp_bytes(r, first, warps), store_bytes=width,
                     _glob=f["glob"], _lo=list(f["lo"]), _hi=list(f["hi"]))
    if k == "local_load":
        d = Draft(LocalLoad, r, issuer=issuer, bytes=_per_warp_bytes(r, first, warps))
        d.reads.append(("src", _access(f["src"], storage)))
        return d
    if k == "tmem_load":
        d = Draft(TmemLoad, r, issuer=issuer, bytes=_per_warp_bytes(r, first, warps))
        d.reads.append(("src", _access(f["src"], storage, part=WARP_PART)))
        return d
    if k == "mma":
        extra = {"cta_group": f["cta_group"]} if f.get("cta_group", 1) != 1 else {}
        d = Draft(Mma, r, issuer=issuer, m=f["m"], n=f["n"], k_elems=f["k"], accumulate=f["accumulate"], **extra)
        d.reads += [("reads", _access(t, storage)) for t in f["reads"]]
        d.writes += [("writes", _access(t, storage)) for t in f["writes"]]
        return d
    if k == "wgmma":
        d = Draft(Wgmma, r, issuer=issuer, m=f["m"], n=f["n"], k_elems=f["k"], accumulate=True)
        d.reads += [("reads", _access(t, storage)) for t in f["reads"]]
        a, b = f["a"], f["b"]
        d.f.update(_count=1, _rows={_row_of(a)}, _ks={b[-1]}, _ns={_row_of(b)})
        return d
    simple = {"bulk_commit": (BulkCommit, ()), "bulk_wait": (BulkWait, ("n", "read")), "wgmma_commit": (WgmmaCommit, ()),
              "wgmma_wait": (WgmmaWait, ("n",)), "wait_ld": (WaitLd, ()), "tmem_alloc": (TmemAlloc, ("columns", "cta_group")),
              "tmem_dealloc": (TmemDealloc, ("columns", "cta_group")), "cta_sync": (CtaSync, ()),
              "named_barrier": (NamedBarrierSync, ("barrier_id", "threads")), "warp_sync": (WarpSync, ()),
              "fence": (Fence, ("fence",)), "cp_async_commit": (CpAsyncCommit, ()), "cp_async_wait": (CpAsyncWait, ("n",)),
              "cluster_arrive": (ClusterArrive, ("relaxed",)), "cluster_wait": (ClusterWait, ())}
    if k in simple:
        cls, fields = simple[k]
        extra = {x: f[x] for x in fields if x in f}
        if k in ("bulk_wait",) and not extra["read"]:
            extra.pop("read")
        if cls in (ClusterArrive, ClusterWait) and issuer not in ("all", "warp0"):
            raise TirxError(f"{r.where}: barrier.cluster.{k.split('_')[1]} executed by single threads of role "
                            f"(issuer {issuer}); protosim models the .aligned form, every thread of the executing "
                            "warps -- execute it in whole warps")
        aligned = cls in (CtaSync, NamedBarrierSync, Fence)
        return Draft(cls, r, issuer="all" if aligned else issuer, **extra)
    if k == "sleep":
        extra = {"warp": sleep_warp} if sleep_warp is not None else {}
        return Draft(Sleep, r, issuer=issuer, cycles=round(f["ns"] * clock_ghz), **extra)
    raise TirxError(f"{r.where}: {k} has no schedule op (a frontend gap; please report it)")


def _row_of(idx: tuple[int, ...] | None) -> int:
    """The row index of a wgmma operand's address (its second-to-last index)."""
    return idx[-2] if idx is not None and len(idx) > 1 else 0


def _access(t: Touch, storage: Storage, part: int | None = None) -> Access:
    if part is None:
        part = storage.part_of(t)  # a slice of a stage: a multicast slice, one of a fill's loads
    if t.buf.scope == "tmem" and storage.cluster > 1 and t.elems and len(t.buf.shape) == 2:
        rows, width = t.buf.shape
        per_stage = max(storage.stage_size(t.buf) // rows, 1)
        first = t.offset % width
        lo = first % per_stage
        hi = lo + t.elems // rows
        columns = None if (lo, hi) == (0, per_stage) else (lo, hi)
        return Access(t.buf.name, first // per_stage, "", part, t.cta, columns)
    return Access(t.buf.name, storage.stage_of(t), "", part, t.cta)


def _stage_tile(box: Any, t: Touch, storage: Storage) -> str | None:
    """The tile a whole stage holds, from one slice's TMA coordinates: the slice's outermost
    coordinate less its row offset in the stage, in units of the stage's rows (``A[m,k]``
    for each of the slices ``A[m*BM + j*BM/CN : +BM/CN, k*BK : +BK]``); None where the slice
    is not whole rows of the stage."""
    if box is None:
        return None
    m, coords = box
    row = 1
    for b in m.box[:-1]:
        row *= b
    size = storage.stage_size(t.buf)
    off = t.offset % size if size else 0
    if not row or size % row or off % row:
        return None
    from protosim.frontends.tirx.recognize import TensorMap

    stage = TensorMap(m.name, m.buffer, (*m.box[:-1], size // row), m.elem_bytes)
    return stage.tile([*coords[:-1], coords[-1] - off // row])


def _disjoint_rows(r: Raw, first: int, warps: int) -> bool:
    """Whether each warp writes its own rows (the first index of a per-thread store)."""
    rows = r.f["dst"].rows
    if not isinstance(rows, np.ndarray):
        return False
    sub = rows[first * WARP:(first + warps) * WARP].reshape(warps, WARP)
    m = r.mask[first * WARP:(first + warps) * WARP].reshape(warps, WARP)
    sets = [set(sub[w][m[w]].tolist()) for w in range(warps)]
    return all(not (sets[i] & sets[j]) for i in range(warps) for j in range(i + 1, warps))


def finish_copy(d: Draft) -> None:
    """An element-wise thread copy folded over its loop copies a box of the global tensor:
    its tile in units of the box (``A[0,3]``), as a TMA of that box would name it."""
    glob, lo, hi = d.f.pop("_glob"), d.f.pop("_lo"), d.f.pop("_hi")
    ext = [b - a + 1 for a, b in zip(lo, hi)]
    tile = f"{glob}[{','.join(str(a // e) for a, e in zip(lo, ext))}]"
    if d.cls is GlobalStore:
        d.out = tile
    else:
        d.f["src"] = tile


def finish_wgmma(d: Draft) -> None:
    """A run of wgmma instructions between a fence and a commit is one schedule op of the
    whole tile: M from the distinct A rows, N from the distinct B rows, K from the distinct
    K offsets (or, where they do not multiply out, the instruction's M x N and the K that
    keeps the FLOPs)."""
    count = d.f.pop("_count")
    rows, ks, ns = d.f.pop("_rows"), d.f.pop("_ks"), d.f.pop("_ns")
    m, n, k = d.f["m"], d.f["n"], d.f["k_elems"]
    if len(rows) * len(ks) * len(ns) == count:
        d.f.update(m=m * len(rows), n=n * len(ns), k_elems=k * len(ks))
    else:
        d.f.update(k_elems=k * count)


# --------------------------------------------------------------------------- tags

FILLS = ("arrive", "arrive_expect_tx", "mma_commit")
"""Ops that arrive on a barrier: each is one fill of it (a phase's arrival) by its role."""
TX = ("tma_load", "arrive_expect_tx", "expect_tx")


class Offsets:
    """Which use a role's k-th wait on a barrier is for: ``k + offset``.

    * A role that fills the barrier itself, or a barrier that receives bytes (TMA loads,
      ``expect_tx``), is waited on for its fills in order: the k-th wait is for use k.
    * An arrival-only barrier filled by other roles is a *release* barrier: a role that
      fills a byte-counted barrier (a TMA producer) acquires a ring that starts free, so its
      k-th wait is for release k-1 (use -1 first: the phase a fresh barrier counts as
      complete).  Between two arrival-only hand-offs (an accumulator passed back and forth)
      the code says which side starts: a first wait with parity 1 is for use -1.

    This is the one place intent is inferred; docs/tirx.md says what it cannot tell apart."""

    def __init__(self, cta: list[list[Draft]]):
        self.fillers: dict[str, set[int]] = defaultdict(set)
        self.tx: set[str] = set()
        self.first_parity: dict[tuple[int, str], int] = {}
        for role, drafts in enumerate(cta):
            for d in drafts:
                if d.bar is None:
                    continue
                k = d.raw.kind
                if k in FILLS:
                    self.fillers[d.bar].add(role)
                if k in TX:
                    self.tx.add(d.bar)
                if k == "wait":
                    self.first_parity.setdefault((role, d.bar), d.f["parity"])
        self.producers = {role for role, drafts in enumerate(cta)
                          if any(d.bar in self.tx and d.raw.kind in FILLS for d in drafts)}

    def offset(self, role: int, bar: str) -> int:
        if bar in self.tx or role in self.fillers.get(bar, ()) or not self.fillers.get(bar):
            return 0
        if role in self.producers:
            return -1
        return -1 if self.first_parity.get((role, bar)) == 1 else 0


def _fill_targets(d: Draft, rank: int) -> tuple[int, ...]:
    """The cluster ranks whose barrier ``d`` arrives on or completes bytes on: a peer's
    (``cta``, ``barrier_cta``), every rank of a multicast, or the CTA's own."""
    f = d.f
    if d.raw.kind == "mma_commit" and f.get("multicast"):
        return tuple(f["multicast"])
    if d.raw.kind == "tma_load":
        if f.get("barrier_cta") is not None:
            return (f["barrier_cta"],)
        return tuple(f["multicast"]) if f.get("multicast") else (rank,)
    return (f["cta"],) if f.get("cta") is not None else (rank,)


def derive_tags(cluster: list[list[list[Draft]]]) -> list[list[list[Op]]]:
    """One cluster's drafts (per CTA in rank order, per role) -> ops with ``use`` and
    ``Access.content`` (a CTA without a cluster is a cluster of one).

    ``use``: a role's n-th fill of a barrier is use n (:class:`protosim.pipeline.UseCounter`'s
    rule), counted per barrier and CTA it lands in (a remote arrive on a peer's ``empty[s]``
    counts apart from the local one); a TMA load belongs to the fill whose bytes it completes
    (the next ``arrive.expect_tx`` when the kernel issues loads first, the last one when it
    announces first -- decided by the role's first TMA op on that barrier; on a barrier the
    role never fills -- a 2-CTA load onto the pair leader's -- the n-th run of loads between
    the role's waits is use n); waits by :class:`Offsets`.

    ``content``: a write names its data -- a TMA load or thread copy the global tile its
    coordinates select, any other write ``<buffer>@<role>#<n>`` (the role's n-th write of
    that stage; in a cluster ``<buffer>@c<rank>.<role>#<n>``).  A fill publishes the filling
    role's latest writes to the barrier's CTA(s); a wait acquires what the fill it waits for
    published (by ``use``) -- a peer's too: a multicast commit, a 2-CTA load onto the
    leader's barrier; a read expects the latest data its role wrote or acquired for that
    stage of that CTA's buffer.  So a read's expectation follows the protocol's intent (the
    wait's ``use``), and a read the protocol does not order after its data is what the
    checkers see."""
    from protosim.pipeline import UseCounter

    size = len(cluster)
    offsets = Offsets([[d for cta in cluster for d in cta[role]] for role in range(len(cluster[0]))]) if size > 1 \
        else Offsets(cluster[0])
    published: dict[tuple[int, str, int], dict[tuple[int, str, int], str]] = defaultdict(dict)
    uses: list[list[list[int | None]]] = []
    contents: list[list[list[list[str]]]] = []
    for rank, cta in enumerate(cluster):
        names = [f"r{i}" if size == 1 else f"c{rank}.r{i}" for i in range(len(cta))]
        cta_uses, cta_contents = [], []
        for role, drafts in enumerate(cta):
            fills, waits, runs = UseCounter(), UseCounter(), UseCounter()
            filled = {_use_key(d, rank) for d in drafts if d.bar is not None and d.raw.kind in FILLS}
            in_run: set[Any] = set()
            loads_first: dict[Any, bool] = {}
            latest: dict[tuple[int, str, int], str] = {}
            n_writes: dict[tuple[int, str, int], int] = defaultdict(int)
            role_uses: list[int | None] = []
            role_contents: list[list[str]] = []
            for d in drafts:
                k, bar, use = d.raw.kind, d.bar, None
                if bar is not None:
                    key = _use_key(d, rank)
                    if k in ("tma_load", "arrive_expect_tx", "expect_tx") and key not in loads_first:
                        loads_first[key] = k == "tma_load"
                    if k == "wait":
                        use = waits.take(key) + offsets.offset(role, bar)
                        in_run.clear()
                    elif k in FILLS:
                        use = fills.take(key)
                    elif k == "tma_load" and size > 1 and key not in filled:
                        if key not in in_run:
                            runs.take(key)
                            in_run.add(key)
                        use = runs.last(key)
                    elif k == "tma_load":
                        use = fills.count(key) if loads_first[key] else fills.last(key)
                    elif k == "expect_tx":
                        use = fills.count(key)
                wrote = []
                for _, acc in d.writes:
                    where = (rank if acc.cta is None else acc.cta, acc.buffer, acc.stage)
                    if k in ("tma_load", "thread_copy") and d.f.get("src"):
                        content = d.f.get("_content") or d.f["src"]
                    else:
                        n_writes[where] += 1
                        content = f"{acc.buffer}@{names[role]}#{n_writes[where]}"
                    for key in _data_keys(where, acc):
                        latest[key] = content
                    wrote.append(content)
                    if k == "tma_load":
                        for target in _fill_targets(d, rank):
                            dst = where if not d.f.get("multicast") else (target, acc.buffer, acc.stage)
                            for key in _data_keys(dst, acc):
                                published[(target, bar, use)][key] = content
                if k in FILLS:
                    for target in _fill_targets(d, rank):
                        published[(target, bar, use)].update(latest)
                role_uses.append(use)
                role_contents.append(wrote)
            cta_uses.append(role_uses)
            cta_contents.append(role_contents)
        uses.append(cta_uses)
        contents.append(cta_contents)
    reads: list[list[list[list[str]]]] = []
    for rank, cta in enumerate(cluster):
        cta_reads: list[list[list[str]]] = []
        for role, drafts in enumerate(cta):
            view: dict[tuple[int, str, int], str] = {}
            role_reads = []
            for d, use, wrote in zip(drafts, uses[rank][role], contents[rank][role]):
                if d.raw.kind == "wait":
                    view.update(published.get((rank, d.bar, use), {}))
                role_reads.append([_data_of(view, (rank if acc.cta is None else acc.cta, acc.buffer, acc.stage), acc)
                                   for _, acc in d.reads])
                for (_, acc), content in zip(d.writes, wrote):
                    for key in _data_keys((rank if acc.cta is None else acc.cta, acc.buffer, acc.stage), acc):
                        view[key] = content
            cta_reads.append(role_reads)
        reads.append(cta_reads)
    tiles = tiles_and_ks(cluster, uses, contents, reads, offsets)
    out = []
    for rank, cta in enumerate(cluster):
        cta_out = []
        for role, drafts in enumerate(cta):
            ops: list[Op] = []
            for d, use, wrote, read, (tile, k) in zip(drafts, uses[rank][role], contents[rank][role], reads[rank][role],
                                                      tiles[rank][role]):
                f = dict(d.f)
                f.pop("_content", None)
                if d.bar is not None:
                    f["barrier"] = d.bar
                    if d.cls is not MbarInit:
                        f["use"] = use
                for (name, acc), content in zip(d.reads, read):
                    _put(f, name, dataclasses.replace(acc, content=content))
                for (name, acc), content in zip(d.writes, wrote):
                    _put(f, name, dataclasses.replace(acc, content=content))
                if "src" in f and isinstance(f["src"], str) and f["src"] == f["dst"].content:
                    del f["src"]  # a copy's source defaults to the tile it writes
                if tile is not None:
                    f["tile"] = tile
                if k is not None:
                    f["k"] = k
                ops.append(d.cls(**f))
            cta_out.append(ops)
        out.append(cta_out)
    return out


def _data_keys(where: tuple[int, str, int], acc: Access) -> list[tuple[Any, ...]]:
    """Where a write's data is kept: the stage (its latest data), and the numbered part it
    writes, if any (a slice, one consumer's A block) -- so a read of one part expects that
    part's data.  ``WARP_PART`` writes count as the stage's, as before parts were numbered."""
    if acc.part is None or acc.part < 0:
        return [where]
    return [where, (*where, acc.part)]


def _data_of(view: dict, where: tuple[int, str, int], acc: Access) -> str:
    if acc.part is not None and acc.part >= 0:
        got = view.get((*where, acc.part))
        if got is not None:
            return got
    return view.get(where, "")


def _use_key(d: Draft, rank: int) -> Any:
    """What a role counts uses of: the barrier, and the peer's rank when it is a peer's (a
    remote arrive, a 2-CTA load onto the leader's barrier)."""
    peer = d.f.get("cta", d.f.get("barrier_cta"))
    return d.bar if peer is None or peer == rank else (d.bar, peer)


MMAS = ("mma", "wgmma")
COPIES = ("tma_load", "thread_copy", "cp_async")


def _tile_of(name: str | None) -> tuple[int, int] | None:
    """``D[0,1]`` -> (0, 1): an output tile's block coordinates (2-D outputs only)."""
    if not name or "[" not in name:
        return None
    inside = name[name.index("[") + 1:-1].split(",")
    return (int(inside[0]), int(inside[1])) if len(inside) == 2 else None


def tiles_and_ks(cluster: list[list[list[Draft]]], uses: list[list[list[int | None]]],
                 contents: list[list[list[list[str]]]], reads: list[list[list[list[str]]]],
                 offsets: Offsets) -> list[list[list[tuple[Any, Any]]]]:
    """The ``tile`` and ``k`` tags of a cluster's CTAs (one CTA without clusters), from what
    the code computes (docs/tirx.md).

    * ``tile``: a role that writes output works toward the tile of its next output store
      (TMA store coordinates, or the box of its global stores); an op after its last store
      has none.
    * ``k``: an MMA's index among its role's MMAs of that tile; a copy takes the tile and k of
      the MMA that reads what it wrote (so a prefetched load is tagged with the k it feeds);
      a fill takes its role's latest MMA's (commits, releases) or copy's (``expect_tx``);
      a wait for a fill takes that fill's; a wait that acquires a free stage, and a sleep,
      take those of the role's next copy or MMA.

    In a cluster a CTA's own readers and fills decide first; a peer's (the pair leader's MMA
    reading this CTA's operands, a multicast commit) only where the CTA has none."""
    n = len(cluster)
    tags: list[list[list[list[Any]]]] = [[[[None, None] for _ in drafts] for drafts in cta] for cta in cluster]
    storing = [[any(d.out is not None for d in drafts) for drafts in cta] for cta in cluster]
    for r, cta in enumerate(cluster):  # roles that store output: the tile of the next store
        for role, drafts in enumerate(cta):
            if storing[r][role]:
                tile = None
                for i in range(len(drafts) - 1, -1, -1):
                    if drafts[i].out is not None:
                        tile = _tile_of(drafts[i].out)
                    tags[r][role][i][0] = tile
    read_in: list[dict[str, Any]] = [{} for _ in range(n)]
    for r, cta in enumerate(cluster):
        for role, drafts in enumerate(cta):
            for i in range(len(drafts)):
                if tags[r][role][i][0] is not None:
                    for c in reads[r][role][i]:
                        if c:
                            read_in[r].setdefault(c, tags[r][role][i][0])
    read_any = _first_of(read_in)
    for r, cta in enumerate(cluster):  # other roles: the tile of the next of their writes an output role reads
        for role, drafts in enumerate(cta):
            if not storing[r][role]:
                tile = None
                for i in range(len(drafts) - 1, -1, -1):
                    for c in contents[r][role][i]:
                        if c in read_in[r]:
                            tile = read_in[r][c]
                        elif c in read_any:
                            tile = read_any[c]
                    if drafts[i].raw.kind in MMAS:
                        tags[r][role][i][0] = tile
    reader: list[dict[str, tuple[Any, Any]]] = [{} for _ in range(n)]
    for r, cta in enumerate(cluster):
        for role, drafts in enumerate(cta):
            last_tile, n_mma = object(), 0
            for i, d in enumerate(drafts):
                t = tags[r][role][i][0]
                if d.raw.kind not in MMAS or t is None:
                    continue
                if t != last_tile:
                    last_tile, n_mma = t, 0
                tags[r][role][i][1] = n_mma
                n_mma += 1
                for c in reads[r][role][i]:
                    if c:
                        reader[r].setdefault(c, (t, tags[r][role][i][1]))
    reader_any = _first_of(reader)
    fill_tags: dict[tuple[int, str, int], tuple[Any, Any]] = {}
    for r, cta in enumerate(cluster):
        for role, drafts in enumerate(cta):
            latest: tuple[Any, Any] = (None, None)
            for i, d in enumerate(drafts):
                k = d.raw.kind
                t = tags[r][role][i]
                if k in COPIES:
                    wrote = contents[r][role][i]
                    if wrote and wrote[0] in reader[r]:
                        t[:] = reader[r][wrote[0]]
                    elif wrote and wrote[0] in reader_any:
                        t[:] = reader_any[wrote[0]]
                    latest = tuple(t)
                elif k in MMAS:
                    latest = tuple(t)
                elif d.bar is not None and k != "wait" and k != "mbar_init":
                    if latest != (None, None):
                        t[:] = [t[0] if t[0] is not None else latest[0], latest[1]]
                    for target in _fill_targets(d, r) if n > 1 else (r,):
                        key = (target, d.bar, uses[r][role][i])
                        if target == r or key not in fill_tags:  # the barrier's own CTA's fill decides
                            fill_tags[key] = tuple(t)
    for r, cta in enumerate(cluster):
        for role, drafts in enumerate(cta):
            upcoming: tuple[Any, Any] = (None, None)
            for i in range(len(drafts) - 1, -1, -1):
                d = drafts[i]
                k = d.raw.kind
                t = tags[r][role][i]
                if k in COPIES or k in MMAS:
                    upcoming = tuple(t)
                elif k == "wait":
                    acquire = offsets.offset(role, d.bar) < 0
                    got = upcoming if acquire else fill_tags.get((r, d.bar, uses[r][role][i]), upcoming)
                    t[:] = [t[0] if t[0] is not None else got[0], got[1]]
                elif k == "sleep":
                    t[:] = [t[0] if t[0] is not None else upcoming[0], upcoming[1]]
    return [[[tuple(t) for t in role] for role in cta] for cta in tags]


def _first_of(maps: list[dict[str, Any]]) -> dict[str, Any]:
    """Every key of ``maps``, with the value of the first map (rank order) that has it."""
    out: dict[str, Any] = {}
    for m in maps:
        for key, value in m.items():
            out.setdefault(key, value)
    return out


def _put(f: dict[str, Any], name: str, acc: Access) -> None:
    if name in ("reads", "writes"):
        f[name] = (*f.get(name, ()), acc)
    else:
        f[name] = acc
