"""``tt.atomic_rmw`` costs what the ``st.global`` of the same tensor costs (it was ignored: free).

The held-out split-K kernels (``kernels/triton/heldout.py`` ``mm_splitk_kernel``) end with
``tl.atomic_add`` of their fp32 partial tile; Triton emits ``atom.global.gpu.relaxed.add.v4.f32``
(16 bytes a lane).  On the H200 such atomics into lines in L2 retire at 0.8-0.85x the store rate
(results/silicon/microbench/2026-12-02_h200_atomic_rate.md); the reader charges the store."""

from __future__ import annotations

from pathlib import Path

from protosim.engine.machine import replay
from protosim.frontends.ttgir import read
from protosim.ir import GlobalStore
from tests.triton_corpus import fixture_copy

HELDOUT = Path(__file__).resolve().parent / "fixtures" / "triton" / "heldout" / "triton-3.6.0"
SPLITK = HELDOUT / "ho_splitk8_256x1024x16384_64x64x64_w4_s4.sm90.ttgir"
ATOMIC = "%1 = tt.atomic_rmw fadd, relaxed, gpu,"
LAUNCH = {"ctas": 8}


def test_the_atomic_add_is_a_store_of_the_tile():
    schedule, _ = read(SPLITK, LAUNCH)
    stores = [op for op in schedule.ctas[0].roles[0] if isinstance(op, GlobalStore)]
    warps = schedule.roles[0].warps
    assert [(op.bytes, op.store_bytes) for op in stores] == [(64 * 64 * 4 // warps, 16)]


def _without_the_atomic(tmp_path: Path) -> Path:
    """The same kernel with its atomic deleted (its result is unused)."""
    def drop(text: str) -> str:
        lines = text.splitlines(keepends=True)
        hits = [i for i, ln in enumerate(lines) if ATOMIC in ln]
        assert len(hits) == 1, "fixture changed: one tt.atomic_rmw expected"
        return "".join(lines[:hits[0]] + lines[hits[0] + 1:])
    return fixture_copy(tmp_path, SPLITK, drop)


def test_the_atomics_take_the_stores_time(tmp_path):
    """Each warp's 32 ``atom`` instructions (4096 B at 16 B a lane) issue at the SM's store
    rate, one ``global_store_issue_cycles`` each: the kernel ends that much later."""
    with_atomic = replay(read(SPLITK, LAUNCH)[0])
    without = replay(read(_without_the_atomic(tmp_path), LAUNCH)[0])
    per_warp = 64 * 64 * 4 // 4 // (32 * 16)
    assert with_atomic.end_cycle - without.end_cycle >= per_warp * with_atomic.arch.global_store_issue_cycles


def test_an_atomic_is_not_ignored_any_more():
    from protosim.frontends.ttgir.ops import _HANDLED, _IGNORED

    assert {"tt.atomic_rmw", "tt.atomic_cas"} <= _HANDLED
    assert not {"tt.atomic_rmw", "tt.atomic_cas"} & _IGNORED
