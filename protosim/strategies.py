"""Hypothesis strategies for GEMM pipeline configurations (public API).

Every case these strategies draw builds both as a simulator schedule
(``protosim.builders``) and as a Hopper kernel (``kernels/``, sm_90a): the
constraints of both sides are built into the draws rather than filtered after,
so shrinking stays fast and a failing example shrinks to a small, legal config.

Use them to property-test your own phase logic::

    from hypothesis import given
    from protosim.strategies import cases, note_scenario
    from protosim.verdict import judge

    @given(cases(bugs=False))
    def test_correct_protocols_replay_clean(case):
        note_scenario(case)                  # a failure prints a `protosim run`-able scenario
        verdict, _ = judge(case.build())
        assert verdict.outcome.kind == "correct"

A :class:`Case` is a step (``v2`` ... ``v6``, ``ws``) plus a :class:`GemmConfig`.
Draws lean small (a few CTAs, a few k-tiles) because shrinking and replay cost
grow with the schedule; pass ``max_ctas`` / ``max_k_tiles`` to widen them.

Needs ``hypothesis`` (``pip install 'protosim[test]'``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

try:
    from hypothesis import note
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - only without the extra
    raise ImportError("protosim.strategies needs hypothesis: pip install 'protosim[test]'") from e

from protosim.config import GemmConfig

STEPS = ("v2", "v3", "v4", "v5", "v6", "ws")
"""Steps that exist on both sides (v1 has no Hopper kernel)."""
TMA_STEPS = ("v4", "v5", "v6", "ws")
PERSISTENT_STEPS = ("v6", "ws")

BLK_M = 128  # one warpgroup of rows, both sides
BLK_K = 64   # one 128-byte swizzle span of fp16: the Hopper kernels' operand layout
BLK_N_CHOICES = (64, 128)
"""The Hopper kernels take multiples of 16 up to 128; these two are the ones run on silicon."""
EXPECT_TX_DELTAS = (-1024, -16, 16, 1024)
"""Bytes off in ``arrive.expect_tx``: a 16-byte TMA granule and a whole 1 KiB, both signs."""
CLUSTER_SHAPES = ((2, 1), (1, 2), (2, 2), (4, 1), (1, 4))
"""``(cluster_m, cluster_n)`` of the cluster draws: the Hopper cluster kernel's multicast along
one dimension, both, and four CTAs on one operand (kernels/tirx/hopper_cluster.py)."""
CLUSTER_KNOBS = ("multicast_skip_rank", "release_unscaled", "expect_tx_local", "skip_exit_sync")
DELAYS_NS = (2_000, 20_000)
"""Explicit ``nanosleep`` delays: 20 us made most races' outcomes repeatable on the H200
(DEVICE.md); 2 us is about two k-tiles of work."""


@dataclass(frozen=True)
class Case:
    """One configuration of one step: what the simulator replays and the GPU runs."""

    step: str
    config: GemmConfig
    copy_cycles: float | None = None
    """What the kernel that ran says of its thread copy: the cycles one k-tile's copy stream takes
    in the issue model of its SASS at the unloaded load latency (``kernels.toolchain.sass``,
    recorded by the build).  None: the builder's rule for a typical build."""

    @property
    def builder(self) -> str:
        return f"hgemm_{self.step}"

    def build(self):
        """The simulator's schedule for this case (its copies as the compiled kernel's, where
        :attr:`copy_cycles` says)."""
        from protosim.builders import BUILDERS

        return self.with_compiled_copy(BUILDERS[self.builder](self.config))

    def with_compiled_copy(self, schedule):
        """``schedule`` with every thread-copy stream waiting the rounds :attr:`copy_cycles` gives
        at the profile's ``global_load_l2_cycles``; unchanged without it."""
        if not self.copy_cycles:
            return schedule
        from protosim.arch import load_profile
        from protosim.ptxas import with_compiled_copy

        rounds = self.copy_cycles / load_profile(schedule.arch).global_load_l2_cycles
        return replace(schedule, ctas=tuple(replace(c, roles=tuple(with_compiled_copy(ops, rounds) for ops in c.roles))
                                            for c in schedule.ctas))

    @property
    def delayed(self) -> bool:
        c = self.config
        return bool(c.producer_delay_ns or c.consumer_delay_ns or c.lag_ns)

    def label(self) -> str:
        c = self.config
        knobs = ",".join(f"{k}={v}" for k, v in sorted(c.bug_knobs.items())) or "correct"
        delays = ",".join(f"{k}={getattr(c, k)}" for k in ("producer_delay_ns", "consumer_delay_ns", "lag_ns") if getattr(c, k))
        cluster = f" c{c.cluster_m}x{c.cluster_n}" if c.cluster_size > 1 else ""
        return f"{self.step}{cluster} {c.M}x{c.N}x{c.K} p{c.PIPE_DEPTH}" + (f" n{c.BLK_N}" if c.BLK_N != 128 else "") + \
            (f" sm{c.sm_count}" if c.sm_count else "") + \
            f" {knobs}" + (f" [{delays}" + (f" warp {c.lag_warp}" if c.lag_ns else "") + "]" if delays else "") + \
            (" L2 cold" if c.l2_at_launch == "cold" else "")

    def to_dict(self) -> dict[str, Any]:
        d = {"step": self.step, "config": self.config.to_dict()}
        if self.copy_cycles:
            d["copy_cycles"] = self.copy_cycles
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        return cls(d["step"], GemmConfig.from_dict(d["config"]), d.get("copy_cycles"))


def scenario_toml(case: Case, name: str | None = None) -> str:
    """A scenario file for ``protosim run`` that replays ``case``: the fields its builder
    reads (the kernel's other fields, such as v2's PIPE_DEPTH, do not change the schedule,
    and a scenario that set them would be refused)."""
    from protosim.builders import HONOURS

    defaults = GemmConfig()
    lines = [f'name = "{name or case.step + "-case"}"', f'description = "{case.label()}"', f'builder = "{case.builder}"', "",
             "[config]"]
    for key, value in case.config.to_dict().items():
        if (value == getattr(defaults, key) and key != "arch") or key not in HONOURS[case.builder]:
            continue
        if value is None:
            continue
        lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def note_scenario(case: Case) -> None:
    """Attach ``case`` as a scenario file to the current Hypothesis example: when the
    test fails, Hypothesis prints it after shrinking, ready to save and ``protosim run``."""
    # Hypothesis may print more notes after this one (under CI it adds a
    # @reproduce_failure blob), so the file is fenced by TOML comments: copying
    # the fences along is harmless, and a script can cut the block out exactly.
    note("protosim scenario (save the fenced lines below as case.toml, then `protosim run case.toml`):\n"
         f"{SCENARIO_BEGIN}\n{scenario_toml(case)}{SCENARIO_END}")


SCENARIO_BEGIN = "# --- begin protosim scenario ---"
SCENARIO_END = "# --- end protosim scenario ---"


def scenario_from_notes(text: str) -> str:
    """The scenario file inside printed Hypothesis notes (the first fenced block)."""
    try:
        start = text.index(SCENARIO_BEGIN)
        end = text.index(SCENARIO_END, start)
    except ValueError:
        raise ValueError("no protosim scenario in the text: the failing test must call note_scenario(case)") from None
    return text[start:end + len(SCENARIO_END)] + "\n"


@st.composite
def _bug(draw, step: str, k_tiles: int, cluster: tuple[int, int] = (1, 1)) -> dict[str, Any]:
    """At most one bug knob, legal for the step (and, on a cluster, the cluster knobs twice as
    likely as each single-CTA one: they are what a cluster draw is for)."""
    size = cluster[0] * cluster[1]
    if size > 1 and draw(st.booleans()):
        knob = draw(st.sampled_from(CLUSTER_KNOBS))
        if knob == "multicast_skip_rank":
            return {knob: draw(st.integers(0, size - 1))}
        return {knob: True}
    choices = ["skip_mma_phase_flip", "wait_parity_flip_mma"]
    if step in TMA_STEPS:
        choices += ["wait_parity_flip_tma", "expect_tx_delta", "skip_store_wait"]
        if step != "ws":
            choices.append("tma_issuer")
    if step in PERSISTENT_STEPS:
        choices.append("reset_phase_per_tile")
    bug = draw(st.sampled_from(choices))
    if bug == "skip_mma_phase_flip":
        return {"skip_mma_phase_flip": True}
    if bug.startswith("wait_parity_flip_"):
        return {"wait_parity_flip": bug.rsplit("_", 1)[1]}
    if bug == "expect_tx_delta":
        return {"expect_tx_delta": draw(st.sampled_from(EXPECT_TX_DELTAS))}
    if bug == "tma_issuer":
        return {"tma_issuer": "each_warp"}
    return {bug: True}


@st.composite
def _delays(draw) -> dict[str, Any]:
    which = draw(st.sampled_from(("producer", "consumer", "lag")))
    ns = draw(st.sampled_from(DELAYS_NS))
    if which == "lag":
        return {"lag_ns": ns, "lag_warp": draw(st.integers(0, 3))}
    return {f"{which}_delay_ns": ns}


@st.composite
def cases(draw, steps: tuple[str, ...] = STEPS, bugs: bool | None = None, delays: bool | None = None,
          max_ctas: int = 16, max_k_tiles: int = 20, arch: str = "h200", l2: tuple[str, ...] = ("inputs", "cold"),
          clusters: bool | None = False) -> Case:
    """A :class:`Case`.  ``bugs`` / ``delays``: ``True`` always one, ``False`` never,
    ``None`` either (the draw decides).  Grids stay within ``max_ctas`` CTAs (v2-v5)
    or ``max_ctas`` output tiles (v6/ws, on up to that many persistent CTAs).
    ``l2``: the launch conditions to draw ``l2_at_launch`` from (``inputs`` first: it
    is what a launch right after writing the inputs sees, and what shrinking keeps).
    ``clusters``: ``True`` draws ``ws`` on a thread-block cluster (:data:`CLUSTER_SHAPES`,
    whole clusters of output tiles, a persistent grid of whole clusters, the cluster knobs
    among the bugs), ``False`` never, ``None`` either."""
    on_cluster = draw(st.booleans()) if clusters is None else clusters
    if on_cluster:
        return draw(_cluster_case(bugs, delays, max_ctas, max_k_tiles, arch, l2))
    step = draw(st.sampled_from(steps))
    blk_n = draw(st.sampled_from(BLK_N_CHOICES))
    # The largest draw (BLK_N 128, 4 stages) needs 161 KiB of shared memory, within sm_90's
    # 227 KiB; kernels.spec.check enforces the limit (tests/test_crosscheck.py draws through it).
    depth = draw(st.integers(1, 4)) if step in ("v5", "v6", "ws") else 1
    # sampled_from rather than integers: Hypothesis' integers lean hard on the bounds
    k_tiles = draw(st.sampled_from(range(1, max_k_tiles + 1)))
    if step == "v2":
        m_tiles = n_tiles = 1
    else:
        m_tiles = draw(st.sampled_from(range(1, max_ctas + 1)))
        n_tiles = draw(st.sampled_from(range(1, max(1, max_ctas // m_tiles) + 1)))
    fields: dict[str, Any] = {"arch": arch, "M": m_tiles * BLK_M, "N": n_tiles * blk_n, "K": k_tiles * BLK_K,
                              "BLK_M": BLK_M, "BLK_N": blk_n, "BLK_K": BLK_K, "PIPE_DEPTH": depth}
    if step in PERSISTENT_STEPS:
        # fewer CTAs than tiles, so CTAs walk several tiles (where per-tile phase bugs live)
        fields["sm_count"] = draw(st.integers(1, m_tiles * n_tiles))
        fields["l2_group_size"] = draw(st.sampled_from((1, 2, 8)))
    with_bug = draw(st.booleans()) if bugs is None else bugs
    if with_bug:
        fields.update(draw(_bug(step, k_tiles)))
    with_delay = draw(st.booleans()) if delays is None else delays
    if with_delay:
        fields.update(draw(_delays()))
    fields["l2_at_launch"] = draw(st.sampled_from(l2))
    return Case(step, GemmConfig(**fields))


@st.composite
def _cluster_case(draw, bugs: bool | None, delays: bool | None, max_ctas: int, max_k_tiles: int, arch: str,
                  l2: tuple[str, ...]) -> Case:
    """``ws`` on a cluster: every field the Hopper cluster kernel accepts (kernels.spec.check_cluster)."""
    cm, cn = draw(st.sampled_from(CLUSTER_SHAPES))
    size = cm * cn
    blk_n = draw(st.sampled_from(BLK_N_CHOICES))
    depth = draw(st.integers(1, 4))
    k_tiles = draw(st.sampled_from(range(1, max_k_tiles + 1)))
    blocks = max(1, max_ctas // size)  # cluster tiles (each cm x cn output tiles)
    bm = draw(st.sampled_from(range(1, blocks + 1)))
    bn = draw(st.sampled_from(range(1, max(1, blocks // bm) + 1)))
    fields: dict[str, Any] = {"arch": arch, "M": bm * cm * BLK_M, "N": bn * cn * blk_n, "K": k_tiles * BLK_K,
                              "BLK_M": BLK_M, "BLK_N": blk_n, "BLK_K": BLK_K, "PIPE_DEPTH": depth,
                              "cluster_m": cm, "cluster_n": cn,
                              # fewer clusters than cluster tiles, so clusters walk several (persistent)
                              "sm_count": size * draw(st.integers(1, bm * bn)),
                              "l2_group_size": draw(st.sampled_from((1, 2, 8)))}
    with_bug = draw(st.booleans()) if bugs is None else bugs
    if with_bug:
        fields.update(draw(_bug("ws", k_tiles, (cm, cn))))
    with_delay = draw(st.booleans()) if delays is None else delays
    if with_delay:
        fields.update(draw(_delays()))
    fields["l2_at_launch"] = draw(st.sampled_from(l2))
    return Case("ws", GemmConfig(**fields))


def correct_cases(**kw) -> st.SearchStrategy[Case]:
    """Cases with every bug knob at its correct setting."""
    return cases(bugs=False, **kw)
