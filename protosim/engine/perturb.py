"""Seeded timing perturbation: how a replay explores the timing envelope.

The same protocol bug gives an early return, a deadlock or a fault on silicon
depending on timing (shared/docs/DEVICE.md).  A :class:`Perturbation` shifts the
timing of one replay, reproducibly from its seed:

* *jitter*: every hardware latency (TMA, MMA, wake-up, memory) is scaled by a
  factor drawn uniformly from [1 - jitter, 1 + jitter];
* *warp stalls*: before each op, a warp stalls with probability ``stall_prob``
  for a uniform 0..``stall_max`` cycles (a scheduler hiccup, a slow neighbour);
* *unit stalls*: with the same probability an asynchronous unit's completion (a
  TMA landing, a TMA store's read of shared memory, an MMA) is late by as much
  (a congested memory system).

* *skew*: warp ``skew_warp`` of every role sleeps ``skew_cycles`` before each of
  its mbarrier waits -- a deterministic lag, used to measure a schedule's slack;
* *sleep range*: each explicit ``nanosleep`` (a ``Sleep`` op) lasts its nominal time
  scaled by a factor drawn from [``sleep_lo``, ``sleep_hi``].  PTX promises only that
  ``nanosleep t`` sleeps "in the interval [0, 2*t]", and the H200 uses that room: a
  20 us producer sleep in the ws kernel averaged ~3 us, in v6 ~30 us (results/silicon,
  docs/crosscheck.md).  So a delay knob moves timing, but not deterministically.

* *tolerated UB*: with ``tolerate_ub``, undefined behaviour of a kind the H200 was
  recorded to run through (:data:`protosim.ptx.mbarrier.SILICON_TOLERATED_UB`: a
  tx-count out of range, a re-init of a live barrier) does not trap; the engine logs it
  (the checkers still report its finding kind) and goes on with the state silicon
  showed.  Not a timing change: it asks "what if this kernel survived the UB, as the
  H200 did in the probes?"

``Perturbation.none()`` is the nominal replay.  Explicit delays are not
perturbations: they are ``Sleep`` ops in the schedule (the config's delay knobs).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from protosim._dataclass_cache import DataclassCache

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)


@dataclass(frozen=True, slots=True)
class Perturbation:
    seed: int = 0
    jitter: float = 0.0
    stall_prob: float = 0.0
    stall_max: int = 0
    warp_stalls: bool = True
    unit_stalls: bool = True
    skew_warp: int = 1
    skew_cycles: int = 0
    skew_role: str = ""
    """Only that role's warp ``skew_warp`` lags (empty: warp ``skew_warp`` of every role)."""
    l2_hit_extra: int = 0
    """Cycles added to every L2 hit (the far L2 partition; :data:`L2_FAR_EXTRA_CYCLES`)."""
    sleep_lo: float = 1.0
    sleep_hi: float = 1.0
    tolerate_ub: bool = False
    """Run through undefined behaviour of a kind in ``SILICON_TOLERATED_UB`` instead of
    trapping (the H200 did not trap there); every other kind still traps."""

    @staticmethod
    def none() -> Perturbation:
        return Perturbation()

    @property
    def active(self) -> bool:
        return (self.jitter > 0 or (self.stall_prob > 0 and self.stall_max > 0) or self.skew_cycles > 0
                or (self.sleep_lo, self.sleep_hi) != (1.0, 1.0) or self.l2_hit_extra > 0)

    @property
    def magnitude(self) -> float:
        """A scalar for "how hard was timing pushed", in cycles: the skew or the largest
        stall, or the jitter as a fraction of a 1000-cycle latency when there is neither."""
        if self.skew_cycles:
            return float(self.skew_cycles)
        return float(self.stall_max) if self.stall_prob > 0 else 1000.0 * self.jitter

    def describe(self) -> str:
        text = self._describe_timing()
        if self.tolerate_ub:
            text += "; silicon-tolerated UB does not trap (tolerate_ub)"
        return text

    def _describe_timing(self) -> str:
        if not self.active:
            return "nominal"
        parts = []
        if self.jitter:
            parts.append(f"jitter ±{self.jitter:.0%}")
        if self.stall_prob and self.stall_max:
            where = "warps+units" if self.warp_stalls and self.unit_stalls else "warps" if self.warp_stalls else "units"
            parts.append(f"{where} stall p={self.stall_prob:g} ≤{self.stall_max} cyc")
        if self.skew_cycles:
            who = f"{self.skew_role}.w{self.skew_warp}" if self.skew_role else f"warp {self.skew_warp}"
            parts.append(f"{who} lags {self.skew_cycles} cyc before each wait")
        if (self.sleep_lo, self.sleep_hi) != (1.0, 1.0):
            parts.append(f"nanosleep x{self.sleep_lo:g}..{self.sleep_hi:g}")
        if self.l2_hit_extra:
            parts.append(f"L2 hits +{self.l2_hit_extra} cyc")
        return f"seed {self.seed}: " + ", ".join(parts)


class Perturber:
    """The perturbation as the engine uses it: ``scale`` latencies, draw ``stall``s."""

    def __init__(self, p: Perturbation):
        self.p = p
        self._rng = random.Random(p.seed)
        self.jitter = p.jitter
        on = p.stall_prob > 0 and p.stall_max > 0
        self.stalls = on and p.warp_stalls
        """Do warps stall before ops?"""
        self._unit_stalls = on and p.unit_stalls

    def scale(self, cycles: float) -> float:
        if not self.jitter:
            return cycles
        return cycles * (1.0 + self.jitter * (2.0 * self._rng.random() - 1.0))

    def stall(self) -> float:
        if self._rng.random() < self.p.stall_prob:
            return self._rng.uniform(0, self.p.stall_max)
        return 0.0

    def unit_stall(self) -> float:
        return self.stall() if self._unit_stalls else 0.0

    def sleep(self, cycles: float) -> float:
        """An explicit nanosleep's length: nominal, or scaled within the run's sleep range."""
        lo, hi = self.p.sleep_lo, self.p.sleep_hi
        if lo == hi == 1.0 or not cycles:
            return cycles
        return cycles * (lo + (hi - lo) * self._rng.random())


STYLES = ("jitter", "warps", "units", "warps+units")


SLEEP_RANGES = ((0.0, 2.0), (0.0, 0.25), (0.25, 1.0), (1.0, 2.0))
"""Ranges of the nanosleep factor that ``explore_plan(..., sleeps=True)`` rotates through:
PTX's whole [0, 2] and three slices of it, so short and long sleeps both get runs."""


def explore_plan(runs: int, seed: int = 0, max_stall: int = 2000, sleeps: bool = False, far_l2: bool = False) -> list[Perturbation]:
    """``runs`` perturbations: the nominal replay first, then a seeded rotation of
    jitter only, warp stalls, unit stalls and both (each with some jitter), stall
    sizes spread up to ``max_stall`` cycles.  Warps and units are stalled apart as
    well as together because some hazards need one side slow and the other not.
    ``far_l2``: L2 hits also rotate through 0, half and all of
    :data:`L2_FAR_EXTRA_CYCLES` (the same draws otherwise)."""
    return list(itertools.islice(iter_explore_plan(seed, max_stall, sleeps, far_l2), max(runs, 0)))


def iter_explore_plan(seed: int = 0, max_stall: int = 2000, sleeps: bool = False, far_l2: bool = False) -> Iterator[Perturbation]:
    """:func:`explore_plan` without an end: a caller that stops on a budget never builds
    a list of the ``runs`` it was asked for (``--runs 10**30``)."""
    rng = random.Random(seed)
    yield Perturbation.none()
    for i in itertools.count(1):
        style = STYLES[(i - 1) % len(STYLES)]
        jitter = rng.choice((0.1, 0.25, 0.5)) if style == "jitter" else rng.choice((0.0, 0.1))
        stall_max = int(max_stall * rng.choice((0.25, 0.5, 1.0))) if style != "jitter" else 0
        stall_prob = rng.choice((0.01, 0.05, 0.2)) if stall_max else 0.0
        # offset every fourth run so sleep ranges do not pair with one style for good
        lo, hi = SLEEP_RANGES[(i - 1 + (i - 1) // len(STYLES)) % len(SLEEP_RANGES)] if sleeps else (1.0, 1.0)
        # a rotation, not a draw: the other draws stay what they were without it
        far = L2_FAR_EXTRA_CYCLES * ((i - 1) // len(STYLES) % 3) // 2 if far_l2 else 0
        yield Perturbation(seed=seed * 100003 + i, jitter=jitter, stall_prob=stall_prob, stall_max=stall_max,
                           warp_stalls="warps" in style, unit_stalls="units" in style, sleep_lo=lo, sleep_hi=hi,
                           l2_hit_extra=far)


# Race resolution.  A replay orders two events by the model's cycle counts; when
# they are closer than the model's known timing error, silicon may order them the
# other way, and the model should not claim one winner (docs/crosscheck.md,
# "Races below the model's resolution").  These are the two errors we measured.
RACE_SKEW_CYCLES = (130, 260)
"""How much slower per step a role's issuing warp may be than modelled: up to 260
cycles, the excess of silicon's k-iteration over the model's where one CTA has the SM
(v6, 4 stages, 4096^3: 1,514 against 1,250 cycles per iteration; H200 bench records,
docs/crosscheck.md "Timing"), and half of it."""
L2_FAR_EXTRA_CYCLES = 235
"""How much slower an L2 hit may be than the measured table: far-partition against
near-partition L2 latency, ~600 against ~365 cycles (HPMLL/NVIDIA-Hopper-Benchmark,
H800; TIMING_SOURCES.md).  The table's 2 KiB hit (361) is a near-partition number,
and a tile's lines are spread over both partitions."""


def race_plan(roles: tuple[str, ...]) -> list[Perturbation]:
    """Replays that push the model's closest races the other way: each role's first warp
    (the one that issues TMA / MMA in every builder) slower per step by each of
    :data:`RACE_SKEW_CYCLES`, L2 hits at the far partition's latency, and both."""
    plan = [Perturbation(skew_role=r, skew_warp=0, skew_cycles=s) for r in roles for s in RACE_SKEW_CYCLES]
    plan.append(Perturbation(l2_hit_extra=L2_FAR_EXTRA_CYCLES))
    plan += [Perturbation(skew_role=r, skew_warp=0, skew_cycles=max(RACE_SKEW_CYCLES), l2_hit_extra=L2_FAR_EXTRA_CYCLES)
             for r in roles]
    return plan


_DATACLASSES.save()  # after the module's last dataclass
