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
