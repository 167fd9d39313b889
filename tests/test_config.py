"""GemmConfig validation: each mistake names its field."""

from __future__ import annotations

import pytest

from protosim.config import BUG_KNOBS, ConfigError, GemmConfig


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"K": 100}, "K"),
        ({"M": 200}, "M"),
        ({"BLK_K": 24}, "BLK_K"),
        ({"BLK_M": 64}, "BLK_M"),
        ({"BLK_N": 300}, "BLK_N"),
        ({"PIPE_DEPTH": 0}, "PIPE_DEPTH"),
        ({"tma_issuer": "all"}, "tma_issuer"),
        ({"wait_parity_flip": "both"}, "wait_parity_flip"),
        ({"lag_warp": 4}, "lag_warp"),
        ({"producer_delay_ns": -1}, "producer_delay_ns"),
        ({"expect_tx_delta": -10**6}, "expect_tx_delta"),
        ({"K": "512"}, "K"),
        ({"skip_store_wait": 1}, "skip_store_wait"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_field_is_named(fields, field):
    with pytest.raises(ConfigError) as err:
        GemmConfig.from_dict(fields)
    assert err.value.field == field


def test_defaults_are_the_correct_protocol():
    assert GemmConfig().bug_knobs == {}
    cfg = GemmConfig.from_dict({"skip_mma_phase_flip": True, "expect_tx_delta": -16})
    assert cfg.bug_knobs == {"skip_mma_phase_flip": True, "expect_tx_delta": -16}
    assert set(cfg.bug_knobs) <= set(BUG_KNOBS)


def test_round_trip():
    cfg = GemmConfig.from_dict({"M": 256, "K": 512, "arch": "h200", "reset_phase_per_tile": True})
    assert GemmConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.stage_bytes == (128 + 128) * 64 * 2


def test_to_dict_is_asdict():
    """GemmConfig.to_dict copies its fields shallowly (every field is a scalar): the same dict
    dataclasses.asdict makes, for the default and for a config with every knob changed."""
    import dataclasses

    from protosim.config import GemmConfig

    changed = GemmConfig(M=256, N=512, K=1024, arch="h200", sm_count=3, tma_issuer="each_warp", expect_tx_delta=16,
                         wait_parity_flip="tma", skip_mma_phase_flip=True, lag_ns=100, release_unscaled=True)
    for cfg in (GemmConfig(), changed):
        assert cfg.to_dict() == dataclasses.asdict(cfg)
        assert GemmConfig.from_dict(cfg.to_dict()) == cfg
