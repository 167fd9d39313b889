"""The book's step 7 (kernels/tirx/ws_sm100.py) builds for sm_100a on the released TIRx,
and the generated CUDA has the warp-specialized protocol: a TMA producer warp, an MMA
warp and a writeback warpgroup on four barriers (full/empty per stage, the accumulator
handoff pair), PipelineState stage/phase bookkeeping, and bug knobs that change exactly
the code they name.

As in test_kernels_seed.py, builds need the stub ``libcuda.so.1`` on ``LD_LIBRARY_PATH``
at process start, so they run in child processes (``kernels.toolchain.sources``), once per module.
"""

from __future__ import annotations

import re
import shutil

import pytest

pytest.importorskip("tvm")
if shutil.which("nvcc") is None:
    pytest.skip("nvcc is not on PATH: the CUDA toolkit (12.8+) is needed to build sm_100a kernels", allow_module_level=True)

from kernel_sources import blocks, body, book_jobs, build_book, calls, changed, only, source

from protosim.config import ConfigError, GemmConfig

# 2x2 tiles on 3 persistent CTAs (CTA 0 runs two tiles), 4 k-tiles: every ring wraps.
BASE = {"M": 256, "N": 256, "K": 256, "PIPE_DEPTH": 2, "sm_count": 3}
JOBS = book_jobs(BASE, depths=(3, 1))

@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """key -> CUDA source, or ``ERROR: ...`` when that build failed."""
    return build_book("v7", JOBS, tmp_path_factory)

ELECTED = r"if \(tvm_builtin_elect_one_sync_op\(\)\)"

def roles(src: str) -> dict[str, str]:
    """The code of each role: warpgroup 1 warp 3 (producer), warp 0 (MMA), warpgroup 0 (writeback)."""
    b = body(src)
    wg1 = only(blocks(b, r"if \(\(warp_id_in_cta >> 2\) == 1\)"), "warpgroup 1")
    wb = only([blk for blk in blocks(b, r"if \(\(warp_id_in_cta >> 2\) == 0\)") if "while (1)" in blk], "writeback")
    producer = only(blocks(wg1, r"if \(\(warp_id_in_cta & 3\) == 3\)"), "producer warp")
    mma = only(blocks(wg1, r"if \(\(warp_id_in_cta % 4\) == 0\)"), "MMA warp")
    return {"body": b, "producer": producer, "mma": mma, "wb": wb,
            "producer_elected": only(blocks(producer, ELECTED), "producer elect"),
            "mma_elected": only(blocks(mma, ELECTED), "mma elect")}

def inits(b: str) -> list[tuple[int, int]]:
    """(pool slot, arrival count) of every mbarrier.init, in order."""
    return [(int(s), int(c)) for s, c in re.findall(r"mbarrier_init\w*\(.*?pool_buf_ptr\)\[(\d+)\]\)+, \(uint\)(\d+)\);", b)]

# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("key", JOBS)
def test_builds_for_sm100a_with_two_warpgroups_on_a_1d_grid(built, key):
    src = source(built, key)
    assert "__launch_bounds__(256)" in src  # two warpgroups
    b = body(src)
    assert "blockIdx.y" not in b
    assert re.search(rf"(\w+)\[0\] = \(\1\[0\] \+ {BASE['sm_count']}\);", b)  # persistent: stride = CTAs

@pytest.mark.parametrize("key, depth", [("base", 2), ("depth3", 3), ("depth1", 1)])
def test_four_barriers_full_empty_sized_pipe_depth_plus_accumulator_pair(built, key, depth):
    r = roles(source(built, key))
    slots = inits(r["body"])
    # tma2mma[depth], mma2tma[depth], mma2ld[1]: one arrival; ld2mma[1]: the 128 writeback threads
    assert [c for _, c in slots] == [1] * (2 * depth + 1) + [128], slots
    first = slots[0][0]
    assert [s for s, _ in slots] == list(range(first, first + 2 * depth + 2))
    full, empty, mma2ld, ld2mma = first, first + depth, first + 2 * depth, first + 2 * depth + 1
    at = r"\(\(uint64_t\*\)pool_buf_ptr\)\[{}\]"
    staged = lambda ps, base: at.format(rf"\({ps}_stage_ptr\[0\] \+ {base}\)")  # noqa: E731  (the state's stage var)
    wait = r"tvm_builtin_cuda_mbarrier_wait\(\(&\({}\)\), \(*{}_phase_ptr\[0\]"
    # full: the MMA waits (mma_ps); TMA completes it, the producer arms it with expect_tx
    assert re.search(wait.format(staged("mma_ps", full), "mma_ps"), r["mma_elected"])
    assert re.search(r"expect_tx\w*\(\w+\(\(&\(" + staged("tma_ps", full), r["producer_elected"])
    # empty: the producer waits (tma_ps); the MMA's tcgen05.commit arrives
    assert re.search(wait.format(staged("tma_ps", empty), "tma_ps"), r["producer_elected"])
    assert re.search(r"tcgen05_commit\w*\(\w+\(\(&\(" + staged("mma_ps", empty), r["mma_elected"])
    # mma2ld: the MMA commits after its K loop; the writeback waits (wb_ps)
    assert re.search(r"tcgen05_commit\w*\(\w+\(\(&\(" + at.format(mma2ld), r["mma_elected"])
    assert re.search(wait.format(staged("wb_ps", mma2ld), "wb_ps"), r["wb"])
    # ld2mma: every writeback thread arrives; the MMA waits (ld_ps) before its K loop
    assert re.search(r"mbarrier_arrive_arrive\w*\(\w+\(\(&\(" + at.format(ld2mma), r["wb"])
    assert re.search(wait.format(staged("ld_ps", ld2mma), "ld_ps"), r["mma_elected"])

def test_tma_issued_by_one_elected_thread_of_the_producer_warp(built):
    r = roles(source(built, "base"))
    assert calls(r["body"], "cp_async_bulk_tensor_g2s") == 2  # A and B, nowhere else
    assert calls(r["producer_elected"], "cp_async_bulk_tensor_g2s") == 2
    assert calls(r["body"], "mbarrier_arrive_expect_tx") == calls(r["producer_elected"], "mbarrier_arrive_expect_tx") == 1
    assert f"(uint){GemmConfig(**BASE).stage_bytes})" in r["producer_elected"]
    assert calls(r["mma"], "cp_async_bulk_tensor") == calls(r["wb"], "cp_async_bulk_tensor_g2s") == 0

def test_mma_issued_by_one_elected_thread_of_the_mma_warp_and_committed(built):
    r = roles(source(built, "base"))
    n_mma = GemmConfig(**BASE).BLK_K // 16  # one tcgen05.mma per 16-wide K slice
    assert calls(r["body"], "tcgen05_mma") == calls(r["mma_elected"], "tcgen05_mma") == n_mma
    assert calls(r["body"], "tcgen05_commit") == calls(r["mma_elected"], "tcgen05_commit") == 2  # mma2tma[stage], mma2ld
    k_loop = only(blocks(r["mma_elected"], r"for \(int k\w* = 0; k\w* < \d+; \+\+k\w*\)"), "MMA K loop")
    assert calls(k_loop, "tcgen05_commit") == 1  # per k-tile: release the stage; per tile: mma2ld

def test_writeback_warpgroup_syncs_itself_and_stores_from_one_thread(built):
    r = roles(source(built, "base"))
    wb = r["wb"]
    assert calls(wb, "warpgroup_sync") == 2 and "tvm_builtin_cuda_warpgroup_sync(10);" in wb
    assert "bar.sync" in source(built, "base")  # named barrier 10 of 128 threads
    store = only(blocks(wb, r"if \(warp_id_in_cta == 0\)"), "store warp")
    assert calls(store, "cp_async_bulk_tensor_s2g") == 1 and calls(r["body"], "cp_async_bulk_tensor_s2g") == 1
    assert "% 32) == 0)" in store  # lane 0
    assert calls(store, "commit_group") == 1 and calls(store, "wait_group") == 1
    # the ld2mma arrive is at the loop's level: all 128 threads arrive, unguarded
    indent = lambda pat: re.search(rf"\n( *)\w*{pat}", wb).group(1)  # noqa: E731
    assert indent("mbarrier_arrive_arrive") == indent("tvm_builtin_cuda_mbarrier_wait")
    assert calls(r["body"], "tcgen05_ld") == calls(wb, "tcgen05_ld") >= 1

def test_pipeline_states_start_phases_and_flip(built):
    r = roles(source(built, "base"))
    start = {"producer": ("tma_ps", 1), "mma": ("mma_ps", 0), "wb": ("wb_ps", 0)}
    for role, (ps, phase) in start.items():
        before_loop = r[role].split("while (1)")[0]
        assert f"{ps}_phase_ptr[0] = {phase};" in before_loop, role
    assert "ld_ps_phase_ptr[0] = 1;" in r["mma"].split("while (1)")[0]  # TMEM starts free
    for ps in ("tma_ps", "mma_ps", "ld_ps", "wb_ps"):
        assert len(re.findall(rf"{ps}_phase_ptr\[0\] = \({ps}_phase_ptr\[0\] \^ 1\);", r["body"])) == 1, ps
    # waits pass the phase variables; 4 waits in all
    assert calls(r["body"], "tvm_builtin_cuda_mbarrier_wait") == 4

def test_added_tcgen05_fences_and_single_dealloc(built):
    r = roles(source(built, "base"))
    # the MMA orders its accumulator writes after the writeback's tcgen05.ld (ld2mma)
    assert re.search(r"ld_ps_phase_ptr\[0\] \^ 1\);\s*tvm_builtin_ptx_tcgen05_fence\w*after_thread_sync\(\)", r["mma_elected"])
    assert re.search(r"wait__ld\w*\(\);\s*tvm_builtin_ptx_tcgen05_fence\w*before_thread_sync\(\);\s*\w*mbarrier_arrive", r["wb"])
    assert calls(r["body"], "tcgen05_dealloc") == 1 and calls(r["body"], "tcgen05_alloc") == 1
    tail = r["body"][r["body"].rindex("tvm_builtin_cuda_cta_sync()") :]
    assert re.search(r"if \(\(warp_id_in_cta >> 2\) == 0\) \{\s*if \(warp_id_in_cta == 0\) \{\s*\w*relinquish", tail)

def test_depth1_uses_stage_zero_and_depth3_wraps_at_3(built):
    d1, d3 = roles(source(built, "depth1")), roles(source(built, "depth3"))
    assert "tma_ps_stage_ptr[0] *" not in d1["producer_elected"]  # Asmem[0]: a constant offset
    assert "tma_ps_stage_ptr[0] == 3" in d3["producer_elected"] and "mma_ps_stage_ptr[0] == 3" in d3["mma_elected"]

# --------------------------------------------------------------------------- #
# Each bug knob changes exactly the code it names.
def test_skip_mma_phase_flip_removes_only_the_producer_flip(built):
    diff = changed(source(built, "base"), source(built, "noflip"))
    assert diff == ["-               tma_ps_phase_ptr[0] = (tma_ps_phase_ptr[0] ^ 1);"], diff

def test_expect_tx_delta_changes_only_the_expect_tx_bytes(built):
    diff = changed(source(built, "base"), source(built, "tx"))
    assert len(diff) == 2 and all("mbarrier_arrive_expect_tx" in d for d in diff), diff
    nbytes = GemmConfig(**BASE).stage_bytes
    assert diff[0][2:].replace(f"(uint){nbytes})", f"(uint){nbytes - 16})") == diff[1][2:]

@pytest.mark.parametrize("key, ps", [("parity-mma", "tma_ps"), ("parity-tma", "mma_ps")])
def test_wait_parity_flip_inverts_only_that_wait(built, key, ps):
    diff = changed(source(built, "base"), source(built, key))
    assert len(diff) == 2 and all("mbarrier_wait" in d and f"{ps}_phase_ptr" in d for d in diff), diff
    assert diff[0][2:].replace(f"({ps}_phase_ptr[0] ^ 0)", f"({ps}_phase_ptr[0] ^ 1)") == diff[1][2:]

def test_skip_store_wait_removes_only_the_wait_group(built):
    diff = changed(body(source(built, "base")), body(source(built, "nostorewait")))
    assert len(diff) == 1 and diff[0].startswith("- ") and "wait_group" in diff[0], diff

def test_reset_phase_per_tile_only_adds_reinits_inside_the_tile_loops(built):
    diff = changed(source(built, "base"), source(built, "reset"))
    assert all(d.startswith("+ ") for d in diff), diff
    expected = {f"{ps}_{f}_ptr[0] = {v};" for ps, v in (("tma_ps", 1), ("mma_ps", 0), ("ld_ps", 1), ("wb_ps", 0)) for f, v in (("stage", 0), ("phase", v))}
    assert sorted(d[2:].strip() for d in diff) == sorted(expected)
    r = roles(source(built, "reset"))
    for role, ps in (("producer", "tma_ps"), ("mma", "mma_ps"), ("wb", "wb_ps")):
        loop = r[role][r[role].index("while (1)") :]
        assert f"{ps}_stage_ptr[0] = 0;" in loop, role

# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "cfg, field",
    [
        (dict(BASE, tma_issuer="each_warp"), "tma_issuer"),
        (dict(BASE, producer_delay_ns=100), "producer_delay_ns"),
        (dict(BASE, N=512, BLK_N=256, PIPE_DEPTH=4), "PIPE_DEPTH"),
    ],
)
def test_unbuildable_configs_raise_config_error(cfg, field):
    from kernels.tirx.ws_sm100 import ws_step7

    with pytest.raises(ConfigError) as info:
        ws_step7(GemmConfig(**cfg))
    assert info.value.field == field
