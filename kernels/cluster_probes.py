"""Cluster timing probes on the H200, without tvm: what each probe is, the layout of what
it writes, and the arithmetic that turns its clock64 stamps into the three ``[cluster]``
constants of ``protosim/arch/h200.toml``.  The kernels are :mod:`kernels.tirx.cluster_probes`
(CPU build: :mod:`kernels.toolchain.cluster_probes`), the GPU side
:mod:`kernels.runner.cluster_probes`; both read this module, so the layout is defined once.

Every probe is one thread-block cluster (grid = the cluster) of one or two warps per CTA;
each role is one thread (lane 0 of its warp), except ``barrier.cluster``, which is
``.aligned`` and executed by every lane of the CTA's one warp.  Stamps are ``clock64``
values; clocks of different SMs are not synchronised, so every number below is a
difference of two stamps read on the same SM, or a round trip through the other SM
halved, with the other SM's own dwell (a difference on its clock) subtracted.

``out`` is ``int64[ROWS, N]`` (series by name, :func:`series`), ``meta`` is
``int32[META_WORDS]``: 0 CTAs that finished, 1 bounded waits that ran out, 2.. ``%smid``
of rank 0, 1, ...

Probes (``kind``):

* ``csync`` -- ``barrier.cluster`` (arrive + wait, default ``.release``/``.acquire``,
  ``.aligned``; ``relaxed``: ``arrive.relaxed``) over ``N`` phases.  Phase ``n``'s late CTA
  is rank 0 when ``n`` is even, else rank ``1 + (n // 2) % (CS - 1)``; the late CTA spins
  ``spin`` cycles after its previous release before it arrives, the others arrive at once.
  Rows ``arrive{r}`` (clock just before the arrive) and ``release{r}`` (just after the
  wait returned), per rank.  With ``spin`` far above the latency the late CTA is the last
  arrival:

  - ``self``: ``release_p[n] - arrive_p[n]`` for the late rank ``p``: last arrival to its
    own wait returning (one SM's clock);
  - ``cross``: for odd ``n`` with late rank ``p``: ``R = release_0[n] - arrive_0[n-1]``
    (rank 0's clock: rank 0 arrives last in phase ``n-1``, rank ``p`` is released, dwells
    ``D = arrive_p[n] - release_p[n-1]`` on its own clock, arrives last in phase ``n``,
    rank 0 is released) and ``(R - D) / 2``: the mean of the two one-way latencies from a
    last arrival in one SM to a waiter's release in another.
  - ``spin = 0``: every CTA arrives as soon as it is released; ``period``:
    ``release_0[n+1] - release_0[n]`` is one barrier round (the last arrival to the
    release, plus the release to the next arrive).

* ``pingpong`` -- two threads take turns on two mbarriers (count 1): the ping arrives on
  the pong's barrier then waits on its own (bounded loop of ``try_wait.parity``, or of
  ``test_wait.parity`` in the ``_spin`` probes: :data:`WAITS`), the pong waits then arrives back.  ``mode``: ``local`` (warps 0 and 1 of rank 0, ``mbarrier.arrive
  .shared.b64``), ``remote`` (warp 0 of ranks 0 and 1, ``mapa.shared::cluster`` +
  ``mbarrier.arrive.shared::cluster.b64`` on the other's barrier), ``selfmapa`` (as
  ``local`` but each arrive through ``mapa`` to its own rank and ``.shared::cluster``).  Row
  ``rt``: the ping's round trip (clock before its arrive to its wait returning); one way
  is ``rt / 2`` (arrive issue + delivery + the waiter's wake).

* ``tma`` -- a 2-D TMA load of ``rows x 64`` fp16 (``rows * 128`` bytes, 128B swizzle) of
  the same tile every iteration (after the first: L2 hits).  Rank 0's warp 0 issues
  (``arrive.expect_tx`` first, then the stamp ``t0``, then the copy) and waits on its own
  ``full`` barrier (stamp ``t_local``).  ``multicast``: the copy is ``.multicast::cluster``
  with ``cta_mask = 0b11``; rank 1's warp 0 arms its ``full`` (``arrive.expect_tx``), tells
  rank 0 (remote arrive on ``ready``: rank 0 issues only then), waits on its ``full`` and
  at once arrives remotely on rank 0's ``ack``; rank 0's warp 1 waits on ``ack`` (stamp
  ``t_ack``; then a local arrive on ``seen`` so the issuer never runs a phase ahead of it).
  After the loop the same two threads (rank 0 warp 1, rank 1 warp 0) ping-pong ``N``
  times with remote arrives: row ``cal_rt``, the round trip on this SM pair with the very
  waiter and arriver of the ack path.  Then the peer's latency (issue -> its wait
  returns) is ``t_ack - t0 - median(cal_rt) / 2``.  ``unicast``: the plain copy into rank
  0 only (rank 1 idles; same launch shape).
  Rows ``t0``, ``t_local``, ``t_ack``, ``cal_rt`` (``t_ack``/``cal_rt`` zero for unicast).

* ``dsmem`` -- a dependent chain of ``HOPS`` 32-bit loads in shared memory (each load's
  value is the next index), by rank 0's lane 0: ``where = local`` (``ld.shared.u32``, its
  own memory), ``remote`` (``ld.shared::cluster.u32`` on rank 1's memory through
  ``mapa``), ``selfmapa`` (``ld.shared::cluster`` on its own, through ``mapa``).  Row
  ``chain``: cycles for the ``HOPS`` loads; per load ``chain / HOPS``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

META_WORDS = 16
HOPS = 64  # dependent loads per dsmem chain
DSMEM_WORDS = 1024  # the chain's array: 4 KiB of u32
DSMEM_STRIDE = 33  # next = (i + 33) % 1024: a different bank every hop
WARMUP = 2  # leading iterations of each launch left out of the statistics (cold L2, cold code)
DEFAULT_SPIN = 4000  # cycles the late CTA of a csync phase waits: >> any latency here
DEFAULT_BUDGET = 20_000_000  # cycles a bounded wait may take (~10 ms)
SWEEP_A = 256  # sweep probes: the event is issued this many cycles after the common origin


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str  # csync | pingpong | tma | dsmem
    cluster: int
    n: int  # iterations (phases) per launch
    params: dict = field(default_factory=dict)
    spins: tuple[int, ...] = (0,)  # csync: runtime spin values, one launch set per value
    what: str = ""

    @property
    def threads(self) -> int:
        return 32 if self.kind in ("csync", "dsmem") else 64


def series(p: Probe) -> tuple[str, ...]:
    if p.kind == "csync":
        return tuple(f"arrive{r}" for r in range(p.cluster)) + tuple(f"release{r}" for r in range(p.cluster))
    if p.kind == "pingpong":
        return ("rt",)
    if p.kind == "tma":
        return ("t0", "t_local", "t_ack", "cal_rt")
    if p.kind == "dsmem":
        return ("chain",)
    if p.kind == "sweep":
        return tuple(f"{k}{c}" for c in (0, 1) for k in ("issue", "probe", "ok"))
    raise ValueError(p.kind)


WAITS = (("try", ""), ("spin", "_spin"))
"""How a probe waits on an mbarrier (``wait`` param; name suffix): ``try_wait.parity`` in a loop
(may suspend the thread; the protocol kernels' wait; its wake-ups come in steps of ~208 cycles
on the H200), or ``test_wait.parity`` polled in a loop (never suspends: the latency itself)."""


def _csync(cs: int, relaxed: bool = False) -> Probe:
    sem = "arrive.relaxed" if relaxed else "arrive (release)"
    return Probe(f"csync{cs}{'_relaxed' if relaxed else ''}", "csync", cs, 130, {"relaxed": relaxed},
                 spins=(0, DEFAULT_SPIN), what=f"barrier.cluster {sem} + wait, cluster of {cs}")


PROBES: tuple[Probe, ...] = (
    _csync(2), _csync(4), _csync(2, relaxed=True),
    *(Probe(f"pp_{m}{sfx}", "pingpong", 2, 256, {"mode": m, "wait": w}, what=f"mbarrier ping-pong, {m} arrives, {w} waits")
      for w, sfx in WAITS for m in ("local", "remote", "selfmapa")),
    *(Probe(f"tma_{c}_{kib}k{sfx}", "tma", 2, 64, {"mode": mode, "rows": kib * 8, "wait": w}, what=f"2-D TMA {kib} KiB {mode}, {w} waits")
      for w, sfx in WAITS for c, mode in (("mc", "multicast"), ("uc", "unicast")) for kib in (8, 16)),
    *(Probe(f"ds_{w}", "dsmem", 2, 32, {"where": w}, what=f"dependent ld chain, {w} shared memory") for w in ("local", "remote", "selfmapa")),
    *(Probe(f"sw_arrive_{m}", "sweep", 2, 80 * 2 * 3, {"event": "arrive", "mode": m, "d0": -48, "step": 6, "nsteps": 80},
            what=f"{m} mbarrier.arrive, one test_wait at a swept offset") for m in ("local", "remote")),
    *(Probe(f"sw_tma_{c}_{kib}k", "sweep", 2, 96 * 2 * 3, {"event": "tma", "mode": mode, "rows": kib * 8, "d0": 100, "step": 8, "nsteps": 96},
            what=f"2-D TMA {kib} KiB {mode}, one test_wait at a swept offset")
      for c, mode in (("mc", "multicast"), ("uc", "unicast")) for kib in (8, 16)),
)
BY_NAME = {p.name: p for p in PROBES}


# ----------------------------------------------------------------------------- analysis


def stats(xs) -> dict | None:
    """min / median / p90 / max / n of a list of numbers (``None`` when empty)."""
    xs = sorted(float(x) for x in xs)
    if not xs:
        return None
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    return {"n": len(xs), "min": xs[0], "median": statistics.median(xs), "p90": p90, "max": xs[-1]}


def late_rank(n: int, cs: int) -> int:
    return 0 if n % 2 == 0 else 1 + (n // 2) % (cs - 1)


def csync_samples(p: Probe, rows: dict[str, list[int]], spin: int) -> dict[str, list[float]]:
    """Per-phase samples of one csync launch (warm-up phases dropped)."""
    cs, n = p.cluster, p.n
    a = [rows[f"arrive{r}"] for r in range(cs)]
    rel = [rows[f"release{r}"] for r in range(cs)]
    out: dict[str, list[float]] = {}
    if spin == 0:
        out["period"] = [rel[0][i + 1] - rel[0][i] for i in range(WARMUP, n - 1)]
        return out
    out["self"] = [rel[late_rank(i, cs)][i] - a[late_rank(i, cs)][i] for i in range(WARMUP, n)]
    cross, by_peer = [], {}
    for i in range(max(WARMUP, 1), n):
        if i % 2 == 0:
            continue
        q = late_rank(i, cs)
        r_trip = rel[0][i] - a[0][i - 1]
        dwell = a[q][i] - rel[q][i - 1]
        cross.append((r_trip - dwell) / 2)
        by_peer.setdefault(f"cross_0_{q}", []).append((r_trip - dwell) / 2)
    out["cross"] = cross
    if cs > 2:
        out.update(by_peer)
    # the non-late CTAs' dwell (their wait return to their next arrive): the loop's overhead
    out["dwell"] = [a[r][i] - rel[r][i - 1] for i in range(max(WARMUP, 1), n) for r in range(cs) if r != late_rank(i, cs)]
    return out


def samples(p: Probe, rows: dict[str, list[int]], spin: int = 0) -> dict[str, list[float]]:
    """name -> per-iteration samples of one launch, in cycles."""
    if p.kind == "csync":
        return csync_samples(p, rows, spin)
    if p.kind == "pingpong":
        rt = rows["rt"][WARMUP:]
        return {"rt": rt, "one_way": [x / 2 for x in rt]}
    if p.kind == "tma":
        t0, tl = rows["t0"][WARMUP:], rows["t_local"][WARMUP:]
        out = {"local": [b - a for a, b in zip(t0, tl, strict=True)]}
        if p.params["mode"] == "multicast":
            cal = rows["cal_rt"][WARMUP:]
            one_way = statistics.median(cal) / 2
            out["cal_rt"] = cal
            out["ack"] = [b - a for a, b in zip(t0, rows["t_ack"][WARMUP:], strict=True)]
            out["peer"] = [x - one_way for x in out["ack"]]
            out["peer_minus_local"] = [x - y for x, y in zip(out["peer"], out["local"], strict=True)]
        return out
    if p.kind == "dsmem":
        ch = rows["chain"][WARMUP:]
        return {"chain": ch, "per_load": [x / HOPS for x in ch]}
    if p.kind == "sweep":
        return {"issue_offset": [rows[f"issue{(i // p.params['nsteps']) % 2}"][i] for i in range(p.n)]}
    raise ValueError(p.kind)


def sweep_points(p: Probe, rows: dict[str, list[int]]) -> dict[str, list[tuple[int, int]]]:
    """``(x, ok)`` per probe of one sweep launch, by what was probed: ``x`` is the probe's
    ``test_wait`` time minus the event's issue time (each an offset from the common origin on
    its own SM's clock), ``ok`` whether that ``test_wait`` saw the phase complete.  Keys:
    ``local_dir{s}`` (the barrier of the issuing CTA ``s``), ``peer_dir{s}`` (the other
    CTA's barrier: a remote arrive, or a multicast's peer copy)."""
    out: dict[str, list[tuple[int, int]]] = {}
    ev, mode = p.params["event"], p.params["mode"]
    for i in range(p.n):
        s = (i // p.params["nsteps"]) % 2
        targets = {"multicast": (s, 1 - s), "remote": (1 - s,)}.get(mode, (s,))
        for c in targets:
            ok = rows[f"ok{c}"][i]
            if ok < 0:
                continue
            key = f"{'local' if c == s else 'peer'}_dir{s}"
            out.setdefault(key, []).append((rows[f"probe{c}"][i] - rows[f"issue{s}"][i], int(ok != 0)))
    return out


def threshold(points: list[tuple[int, int]]) -> dict | None:
    """Where ``ok`` turns on along ``x``: the cut with the fewest misclassified probes (``ok``
    before it, not ``ok`` after it), as the midpoint between the probes either side; ``lo`` /
    ``hi``: the last not-``ok`` and the first ``ok`` probe (the transition's width)."""
    if not points:
        return None
    pts = sorted(points)
    xs = sorted({x for x, _ in pts})
    n_ok_total = sum(ok for _, ok in pts)
    best = None
    for cut in xs + [xs[-1] + 1]:
        errors = sum(1 for x, ok in pts if (x < cut and ok) or (x >= cut and not ok))
        if best is None or errors < best[0]:
            best = (errors, cut)
    errors, cut = best
    below = [x for x in xs if x < cut]
    t = (below[-1] + cut) / 2 if below else cut
    return {"threshold": t, "errors": errors, "n": len(pts), "n_ok": n_ok_total,
            "lo": max((x for x, ok in pts if not ok), default=None), "hi": min((x for x, ok in pts if ok), default=None)}


def decode(p: Probe, flat: list[int]) -> dict[str, list[int]]:
    names = series(p)
    return {s: [int(x) for x in flat[i * p.n:(i + 1) * p.n]] for i, s in enumerate(names)}


def summarize(records: list[dict]) -> dict[str, dict]:
    """``"probe[spin]" -> {metric: stats}`` over every ``ok`` record (all launches pooled)."""
    pooled: dict[str, dict[str, list[float]]] = {}
    points: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for r in records:
        if r.get("outcome") != "ok" or r["probe"] not in BY_NAME:
            continue
        p = BY_NAME[r["probe"]]
        key = f"{p.name}[spin={r['spin']}]" if p.kind == "csync" else p.name
        for m, xs in samples(p, r["rows"], r.get("spin", 0)).items():
            pooled.setdefault(key, {}).setdefault(m, []).extend(xs)
        if p.kind == "sweep":
            for m, pts in sweep_points(p, r["rows"]).items():
                points.setdefault(key, {}).setdefault(m, []).extend(pts)
    out = {k: {m: stats(xs) for m, xs in v.items()} for k, v in pooled.items()}
    for k, v in points.items():
        out[k].update({f"thr_{m}": threshold(pts) for m, pts in sorted(v.items())})
    return out


def constants(summary: dict[str, dict]) -> dict[str, dict]:
    """The three ``[cluster]`` constants from a summary (medians; see the module docstring):

    A waiter polling an mbarrier (``try_wait`` or ``test_wait`` in a loop) sees a completion
    only in steps of ~210 cycles on the H200, which hides differences smaller than a step;
    so the mbarrier constants come from the sweep probes (one ``test_wait`` at a swept
    offset from a common origin), averaged over both directions, and fall back to the
    ping-pong medians only when a summary has no sweep.

    * ``remote_arrive_cycles``: when a remote arrive's completion is first seen on the peer's
      barrier, minus when a local arrive's is on its own (sweep);
    * ``cluster_sync_cycles``: barrier.cluster, last arrival to a waiter in another CTA (cross),
      the larger of clusters of 2 and 4;
    * ``multicast_extra_cycles``: multicast TMA, the peer's completion minus the issuer's
      (sweep), the larger of 8 and 16 KiB."""
    def med(key, metric):
        s = summary.get(key, {}).get(metric)
        return None if s is None else s["median"]

    def thr(key, metric):
        s = summary.get(key, {}).get(f"thr_{metric}")
        return None if s is None else s["threshold"]

    def both(key, kind):  # the two directions' mean: the origin's skew between the SMs cancels
        t = [thr(key, f"{kind}_dir{d}") for d in (0, 1)]
        return None if None in t else sum(t) / 2

    out = {}
    loc, rem = both("sw_arrive_local", "local"), both("sw_arrive_remote", "peer")
    if loc is not None and rem is not None:
        out["remote_arrive_cycles"] = {"value": rem - loc, "method": "sweep", "remote": rem, "local": loc}
    else:
        loc, rem = med("pp_local_spin", "one_way"), med("pp_remote_spin", "one_way")
        if loc is not None and rem is not None:
            out["remote_arrive_cycles"] = {"value": rem - loc, "method": "pingpong", "remote_one_way": rem, "local_one_way": loc}
    cross = {cs: med(f"csync{cs}[spin={DEFAULT_SPIN}]", "cross") for cs in (2, 4)}
    selfr = {cs: med(f"csync{cs}[spin={DEFAULT_SPIN}]", "self") for cs in (2, 4)}
    if all(v is not None for v in cross.values()):
        out["cluster_sync_cycles"] = {"value": max(cross.values()), "cross": cross, "self": selfr}
    sw = {kib: (both(f"sw_tma_mc_{kib}k", "peer"), both(f"sw_tma_mc_{kib}k", "local")) for kib in (8, 16)}
    if all(None not in v for v in sw.values()):
        ex = {kib: pe - lo for kib, (pe, lo) in sw.items()}
        out["multicast_extra_cycles"] = {"value": max(ex.values()), "method": "sweep", "by_kib": ex,
                                         "peer": {k: v[0] for k, v in sw.items()}, "local": {k: v[1] for k, v in sw.items()},
                                         "unicast_local": {kib: both(f"sw_tma_uc_{kib}k", "local") for kib in (8, 16)}}
    else:
        ex = {kib: med(f"tma_mc_{kib}k_spin", "peer_minus_local") for kib in (8, 16)}
        if all(v is not None for v in ex.values()):
            out["multicast_extra_cycles"] = {"value": max(ex.values()), "method": "pingpong", "by_kib": ex}
    return out
