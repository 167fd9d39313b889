"""Frontends that produce schedules.  ``BUILDERS`` maps a builder name (as used in
scenario files) to a function ``config -> Schedule``; ``CONFIGS`` names the config
record each one takes (``GemmConfig`` unless listed).

``HONOURS`` says which knobs each builder reads: a scenario that sets any other knob
away from its default is refused (the knob would be silently ignored), and
``protosim run --help`` prints the table.  ``estimate_ops`` sizes a schedule before
it is built, so a huge configuration is refused in microseconds instead of filling
memory."""

from __future__ import annotations

from typing import Any

from protosim.arch import load_profile
from protosim.builders import book_gemm, triton_pipeline
from protosim.builders.gemm_cta import family
from protosim.builders.seed_gemm import BUILDERS as SEED_BUILDERS
from protosim.builders.seed_gemm import persistent_tiles
from protosim.builders.ws_gemm import BUILDERS as WS_BUILDERS
from protosim.config import BUG_KNOBS, DELAY_KNOBS, GemmConfig

GEMM_BUILDERS = {**SEED_BUILDERS, **WS_BUILDERS, **book_gemm.BUILDERS}
BUILDERS = {**GEMM_BUILDERS, "triton_pipeline": triton_pipeline.build}
CONFIGS = {name: GemmConfig for name in GEMM_BUILDERS} | {"triton_pipeline": triton_pipeline.PipelineConfig}

_SHAPE = {"M", "N", "K", "BLK_M", "BLK_N", "BLK_K", "arch", "l2_at_launch"}
_THREAD_COPY = _SHAPE | {"skip_mma_phase_flip", "wait_parity_flip", "consumer_delay_ns", "lag_warp", "lag_ns"}
_TMA = _THREAD_COPY | {"tma_issuer", "expect_tx_delta", "skip_store_wait", "producer_delay_ns"}
_PERSISTENT = _TMA | {"PIPE_DEPTH", "sm_count", "l2_group_size", "reset_phase_per_tile"}
_BOOK = _SHAPE | {"PIPE_DEPTH", "sm_count", "l2_group_size", "skip_mma_phase_flip", "wait_parity_flip", "expect_tx_delta",
                  "skip_store_wait"}
"""The book's steps 7-9 (book_gemm.py): the knobs their kernels build, no delays, one producer warp."""
_CLUSTER = {"cluster_m", "cluster_n", "multicast_skip_rank", "release_unscaled", "expect_tx_local", "skip_exit_sync"}
HONOURS: dict[str, frozenset[str]] = {
    "hgemm_v1": frozenset(_THREAD_COPY),
    "hgemm_v2": frozenset(_THREAD_COPY),
    "hgemm_v3": frozenset(_THREAD_COPY),
    "hgemm_v4": frozenset(_TMA),
    "hgemm_v5": frozenset(_TMA | {"PIPE_DEPTH"}),
    "hgemm_v6": frozenset(_PERSISTENT),
    "hgemm_ws": frozenset(_PERSISTENT - {"tma_issuer"} | _CLUSTER),
    "hgemm_v7": frozenset(_BOOK | {"reset_phase_per_tile"}),
    "hgemm_v8": frozenset(_BOOK | _CLUSTER),  # its kernel refuses reset_phase_per_tile
    "hgemm_v9": frozenset(_BOOK | {"reset_phase_per_tile"} | _CLUSTER),
    "triton_pipeline": frozenset(f for f in triton_pipeline.PipelineConfig.__dataclass_fields__),
}
"""Config fields each builder reads; every other knob is ignored by it."""
HONOURED_VALUES: dict[tuple[str, str], tuple[Any, ...]] = {
    (b, "wait_parity_flip"): ("", "mma") for b in ("hgemm_v1", "hgemm_v2", "hgemm_v3")
}
"""Values a builder honours where it reads a knob only in part (v1-v3 have no TMA wait)."""


def unhonoured(builder: str, config: Any, given: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, why) for each knob in ``given`` that ``builder`` would ignore at the value
    ``config`` has; knobs left at their default are never reported."""
    defaults = type(config)()
    out = []
    for name in given:
        value = getattr(config, name, None)
        if value == getattr(defaults, name, value):
            continue
        if name not in HONOURS[builder]:
            users = [b for b, fields in HONOURS.items() if name in fields and b != builder]
            out.append((name, f"{name} = {value!r} has no effect on {builder}; remove it, or use "
                              + (", ".join(users) if users else "another builder")))
        elif (builder, name) in HONOURED_VALUES and value not in HONOURED_VALUES[(builder, name)]:
            ok = ", ".join(repr(v) for v in HONOURED_VALUES[(builder, name)])
            out.append((name, f"{name} = {value!r} has no effect on {builder} (it has no such wait); use {ok}"))
    return out


def estimate_ops(builder: str, config: Any, sm_count: int) -> int:
    """An estimate of the schedule's op count, from the loop structure alone: between 1x
    and 2.5x the real count for the built-in builders (tests/test_contract.py holds it to
    that), so a limit refuses sizes that are orders of magnitude too big, never near misses."""
    if builder == "triton_pipeline":
        ctas = (config.M // config.BLOCK_M) * (config.N // config.BLOCK_N)
        return ctas * ((config.k_tiles + config.num_stages) * 12 + 20)
    c: GemmConfig = config
    tiles = c.m_tiles * c.n_tiles
    ctas = tiles
    if builder == "hgemm_v6":
        ctas = c.sm_count or sm_count
        if family(load_profile(c.arch)).clamp_grid:  # Hopper's v6 launches no more CTAs than tiles
            ctas = min(ctas, tiles)
    elif builder == "hgemm_ws":
        ctas = min(c.sm_count or sm_count, tiles)
    elif builder in book_gemm.BUILDERS:
        return book_gemm.estimate(int(builder.removeprefix("hgemm_v")), c, sm_count)
    depth = c.PIPE_DEPTH if "PIPE_DEPTH" in HONOURS[builder] else 1
    return tiles * (c.k_tiles * 10 + 12) + ctas * (2 * depth + 4)


def knob_table() -> str:
    """Which builder honours which knob, as text (``protosim run --help``)."""
    knobs = ["PIPE_DEPTH", "sm_count", "l2_group_size", *BUG_KNOBS, *DELAY_KNOBS]
    gemm = [b for b in BUILDERS if b != "triton_pipeline"]
    width = max(len(k) for k in knobs)
    lines = ["  " + "knob".ljust(width) + "  " + "  ".join(b.removeprefix("hgemm_") for b in gemm)]
    for k in knobs:
        cells = []
        for b in gemm:
            mark = "x" if k in HONOURS[b] else "."
            if (b, k) in HONOURED_VALUES:
                mark = "m"
            cells.append(mark.center(len(b.removeprefix("hgemm_"))))
        lines.append("  " + k.ljust(width) + "  " + "  ".join(cells))
    lines.append("  (x: honoured; m: only wait_parity_flip = \"mma\" -- v1-v3 have no TMA wait; "
                 ".: ignored, so a scenario setting it is refused)")
    return "\n".join(lines)


__all__ = ["BUILDERS", "CONFIGS", "HONOURS", "estimate_ops", "knob_table", "persistent_tiles", "unhonoured"]
