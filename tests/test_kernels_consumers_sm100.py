"""The book's step 9 (kernels/tirx/consumers_sm100.py) builds for sm_100a on the released
TIRx, and the generated CUDA has the multi-consumer protocol on step 8's 2-CTA cluster: one
producer warp per CTA loading two A blocks and one shared B slice per stage onto CTA 0's
full barrier, two MMA consumer warps in CTA 0 each issuing ``tcgen05.mma.cta_group::2`` from
one elected lane on its own A block and TMEM columns, two writeback warpgroups per CTA, the
empty ring released by both consumers (count 2), the accumulator handoff indexed by
consumer (``ld2mma`` counting both CTAs' 128 threads) -- and bug knobs that change exactly
the code they name.

Builds run in child processes (``kernels.toolchain.sources``), once per module; the
CUDA-reading helpers are tests/kernel_sources.py's.
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

# 2x2 cluster tiles of 512x256 on 3 persistent clusters of 2 CTAs (cluster 0 runs two tiles),
# 4 k-tiles: every ring wraps.  The config says what the kernel is: clusters of 2 along M.
BASE = {"M": 1024, "N": 512, "K": 256, "PIPE_DEPTH": 2, "sm_count": 6, "cluster_m": 2}
JOBS = book_jobs(BASE, depths=(3, 1))
JOBS["cluster"] = dict(BASE, multicast_skip_rank=0, release_unscaled=True, expect_tx_local=True, skip_exit_sync=True)
"""The four cluster bug knobs in one build (each changes its own lines: step 8's suite builds them one by one)."""
cfg = GemmConfig(**BASE)
MMA_N = 2 * cfg.BLK_N  # each consumer's accumulator columns per CTA
TX_BYTES = 2 * (2 * cfg.BLK_M + cfg.BLK_N) * cfg.BLK_K * 2  # both CTAs' two A blocks + B slice
CHUNKS = MMA_N // 64  # writeback chunks of EPI_N = 64 columns
RANK = "((int)tvm_builtin_cluster_ctaid_x())"  # the CTA's rank in its cluster


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """key -> CUDA source, or ``ERROR: ...`` when that build failed."""
    return build_book("v9", JOBS, tmp_path_factory)


def inits(b: str) -> list[tuple[int, int]]:
    """(pool slot, arrival count) of every mbarrier.init, in order."""
    return [(int(s), int(c)) for s, c in re.findall(r"mbarrier_init\w*\(.*?pool_buf_ptr\)\[(\d+)\]\)+, \(uint\)(\d+)\);", b)]


ELECTED = r"if \(tvm_builtin_elect_one_sync_op\(\)\)"
WARP_C, WG_C = "(warp_id_in_cta & 3)", "(warp_id_in_cta >> 2)"  # consumer index: MMA warp / writeback warpgroup
WARP, WG = re.escape(WARP_C), re.escape(WG_C)


def roles(src: str) -> dict[str, str]:
    """Warpgroup 2: warp 3 producer, warps 0-1 MMA consumers (CTA 0); warpgroups 0-1 writeback."""
    b = body(src)
    wg2 = only(blocks(b, rf"if \({WG} == 2\)"), "warpgroup 2")
    producer = only(blocks(wg2, rf"if \({WARP} == 3\)"), "producer warp")
    mma = only(blocks(wg2, rf"if \({WARP} < 2\)"), "MMA consumer warps")
    wb = only([blk for blk in blocks(b, r"if \(warp_id_in_cta < 8\)") if "while (1)" in blk], "writeback")
    return {"body": b, "producer": producer, "mma": mma, "wb": wb,
            "producer_elected": only(blocks(producer, ELECTED), "producer elect"),
            "mma_cta0": only(blocks(mma, rf"if \({re.escape(RANK)} == 0\)"), "MMA in CTA 0"),
            "mma_elected": only(blocks(mma, ELECTED), "mma elect")}


def slots(b: str, depth: int) -> dict[str, int]:
    s = inits(b)
    first = s[0][0]
    assert [x for x, _ in s] == list(range(first, first + 2 * depth + 4)), s
    return {"full": first, "empty": first + depth, "mma2ld": first + 2 * depth, "ld2mma": first + 2 * depth + 2}


BAR = r"\(\(uint64_t\*\)pool_buf_ptr\)\[\({} \+ {}\)\]"  # barrier[index + first slot]
WAIT = r"tvm_builtin_cuda_mbarrier_wait\(\(&\({}\)\), \(*{}_phase_ptr\[0\]"


# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("key", JOBS)
def test_builds_for_sm100a_as_clusters_of_two_ctas_with_three_warpgroups(built, key):
    src = source(built, key)
    assert "__launch_bounds__(384)" in src  # two writeback warpgroups + producer/MMA warpgroup
    b = body(src)
    assert "blockIdx.y" not in b and f"int cbx = {RANK};" in b
    assert re.search(rf"(\w+)\[0\] = \(\1\[0\] \+ {BASE['sm_count'] // 2}\);", b)  # persistent: stride = clusters
    # the cluster syncs after the barrier init (CTA 1 reaches CTA 0's barriers) and before the dealloc
    # (skip_exit_sync: a cta_sync before the dealloc)
    assert calls(b, "tvm_builtin_cuda_cluster_sync") == (1 if key == "cluster" else 2)
    assert b.index("fence_mbarrier_init") < b.index("tvm_builtin_cuda_cluster_sync") < b.index("while (1)")
    assert calls(b, "tcgen05_dealloc_dealloc_cta_group__2") == calls(b, "tcgen05_alloc_alloc_cta_group__2") == 1


@pytest.mark.parametrize("key, depth", [("base", 2), ("depth3", 3), ("depth1", 1)])
def test_barriers_empty_ring_counts_both_consumers_and_handoff_is_per_consumer(built, key, depth):
    b = body(source(built, key))
    # tma2mma[depth]: 1 (expect_tx); mma2tma[depth]: 2 (one commit per consumer);
    # mma2ld[2]: 1 (its consumer's commit); ld2mma[2]: 256 (its writeback warpgroup in both CTAs)
    assert [c for _, c in inits(b)] == [1] * depth + [2] * depth + [1, 1] + [256, 256], inits(b)
    s = slots(b, depth)
    # CTA 1 reaches CTA 0's full ring and ld2mma through mapa (rank 0)
    assert re.findall(r"mapa_u64\(\w+\[0\], \(&\(\(\(uint64_t\*\)pool_buf_ptr\)\[(\d+)\]\)\), \(uint\)0\);", b) == [str(s["full"]), str(s["ld2mma"])]


def test_producer_one_elected_thread_per_cta_loads_two_a_blocks_and_one_shared_b(built):
    r = roles(source(built, "base"))
    s = slots(r["body"], 2)
    g2s = r"cp_async_bulk_tensor_g2s\w*\("
    assert calls(r["body"], "cp_async_bulk_tensor_g2s") == calls(r["producer_elected"], "cp_async_bulk_tensor_g2s") == 3
    loads = re.findall(g2s + r".*", r["producer_elected"])
    assert [("A_tensormap" in ld, "B_tensormap" in ld) for ld in loads] == [(True, False), (True, False), (False, True)]
    assert all("cta_group__2" in ld for ld in loads)
    # this CTA's rows of consumer 0, of consumer 1 (2 * BLK_M further), its B slice; the cluster tile is 512 x 256
    rows = [re.search(r"\(k \* 64\), (.*?), tvm_builtin", ld).group(1) for ld in loads]
    assert rows == [f"((_ptr[0] * 512) + ({RANK} * 128))", f"(((_ptr[0] * 512) + ({RANK} * 128)) + 256)", f"((_ptr_1[0] * 256) + ({RANK} * 128))"], rows
    # all three complete on CTA 0's full barrier; CTA 0's lane arms it once with both CTAs' bytes
    assert all(ld.endswith(r"remote_mbar_ptr[tma_ps_stage_ptr[0]]))));") for ld in loads), loads
    assert calls(r["body"], "mbarrier_arrive_expect_tx") == calls(r["producer_elected"], "mbarrier_arrive_expect_tx") == 1
    arm = only(blocks(r["producer_elected"], rf"if \({re.escape(RANK)} == 0\)"), "CTA 0's arm")
    assert re.search(rf"expect_tx_shared__cluster\w*\(\w+\(\(&\(remote_mbar_ptr\[tma_ps_stage_ptr\[0\]\]\)\)\), \(uint\){TX_BYTES}\);", arm)
    assert re.search(WAIT.format(BAR.format(r"tma_ps_stage_ptr\[0\]", s["empty"]), "tma_ps"), r["producer_elected"])
    assert calls(r["mma"], "cp_async_bulk_tensor") == calls(r["wb"], "cp_async_bulk_tensor_g2s") == 0


def test_two_mma_consumers_in_cta0_issue_from_one_elected_lane_on_their_own_rows_and_tmem_columns(built):
    r = roles(source(built, "base"))
    s = slots(r["body"], 2)
    me = r["mma_elected"]
    assert me in r["mma_cta0"]  # only CTA 0 issues the pair MMAs
    n_mma = cfg.BLK_K // 16
    assert calls(r["body"], "tcgen05_mma") == calls(me, "tcgen05_mma") == n_mma  # one code path, warps 0 and 1
    a_block = cfg.BLK_M * cfg.BLK_K * 2 // 16  # Asmem[stage, c]: descriptor units of 16 B
    for mma in re.findall(r"tcgen05_mma\w*\((.*)\);", me):
        assert mma.startswith(f"((uint)({WARP_C} * {MMA_N}))"), mma  # TMEM cols [c*2*BLK_N, ...)
    assert all("cta_group__2" in m for m in re.findall(r"\w*tcgen05_mma\w*", me))
    assert len(re.findall(rf"{WARP} \* {a_block}\)", me)) >= n_mma  # A descriptor: + c * A block
    # both consumers wait on the same full barrier and commit onto the same empty one
    assert re.search(WAIT.format(BAR.format(r"mma_ps_stage_ptr\[0\]", s["full"]), "mma_ps"), me)
    k_loop = only(blocks(me, r"for \(int k\w* = 0; k\w* < \d+; \+\+k\w*\)"), "MMA K loop")
    assert re.search(r"tcgen05_commit\w*\(\w+\(\(&\(" + BAR.format(r"mma_ps_stage_ptr\[0\]", s["empty"]), k_loop)
    # then its own accumulator handoff slot, indexed by the warp
    assert calls(me, "tcgen05_commit") == calls(r["body"], "tcgen05_commit") == 2
    commits = re.findall(r"\w*tcgen05_commit\w*\(.*", me)
    assert all("cta_group__2" in c and "multicast__cluster" in c and c.endswith("(ushort)3);") for c in commits), commits
    assert re.search(r"tcgen05_commit\w*\(\w+\(\(&\(" + BAR.format(WARP, s["mma2ld"]), me)
    assert re.search(WAIT.format(BAR.format(WARP, s["ld2mma"]), "ld_ps"), me)
    assert re.search(r"ld_ps_phase_ptr\[0\] \^ 1\);\s*tvm_builtin_ptx_tcgen05_fence\w*after_thread_sync\(\)", me)


def test_each_writeback_warpgroup_reads_its_consumers_columns_and_rows(built):
    r = roles(source(built, "base"))
    s = slots(r["body"], 2)
    wb = r["wb"]
    assert re.search(WAIT.format(BAR.format(WG, s["mma2ld"]), "wb_ps"), wb)
    lds = re.findall(r"tcgen05_ld\w*\(.*get_tmem_addr\(\(uint\)0, 0, (.*)\)\);", wb)
    assert lds == [f"({WG_C} * {MMA_N})"] + [f"(({WG_C} * {MMA_N}) + {64 * i})" for i in range(1, CHUNKS)], lds
    assert calls(r["body"], "tcgen05_ld") == len(lds)
    # per chunk: named barrier 10 + c around one thread's TMA store of this consumer's rows
    assert len(re.findall(rf"tvm_builtin_cuda_warpgroup_sync\(\({WG} \+ 10\)\);", wb)) == 2 * CHUNKS
    stores = blocks(wb, r"if \(\(warp_id_in_cta % 4\) == 0\)")
    assert len(stores) == CHUNKS and calls(r["body"], "cp_async_bulk_tensor_s2g") == CHUNKS
    for st in stores:
        assert "% 32) == 0)" in st and calls(st, "commit_group") == calls(st, "wait_group") == 1
        assert f"(((_ptr[0] * 512) + ({WG_C} * 256)) + ({RANK} * 128))" in st  # consumer c's rows in this CTA
    # after the chunks, all 128 threads release this consumer's TMEM columns on CTA 0's ld2mma[c]
    arrive = re.search(r"\n( *)tvm_builtin_ptx_tcgen05_fence\w*before_thread_sync\(\);\s*\w*mbarrier_arrive\w*shared__cluster\w*\(\w+\(\(&\(remote_mbar_ptr_1\[" + WG + r"\]", wb)
    assert arrive and arrive.group(1) == re.search(r"\n( *)tvm_builtin_cuda_mbarrier_wait", wb).group(1)
    assert wb.rindex("cp_async_bulk_tensor_s2g") < arrive.start()


def test_pipeline_states_start_phases_flip_and_single_dealloc(built):
    r = roles(source(built, "base"))
    for role, ps, phase in (("producer", "tma_ps", 1), ("mma", "mma_ps", 0), ("mma", "ld_ps", 1), ("wb", "wb_ps", 0)):
        assert f"{ps}_phase_ptr[0] = {phase};" in r[role].split("while (1)")[0], ps
        assert len(re.findall(rf"{ps}_phase_ptr\[0\] = \({ps}_phase_ptr\[0\] \^ 1\);", r["body"])) == 1, ps
    assert calls(r["body"], "tvm_builtin_cuda_mbarrier_wait") == 4
    assert calls(r["body"], "tcgen05_dealloc") == calls(r["body"], "tcgen05_alloc") == 1
    tail = r["body"][r["body"].rindex("tvm_builtin_cuda_cluster_sync()") :]
    assert re.search(r"if \(\(warp_id_in_cta >> 2\) == 0\) \{\s*if \(warp_id_in_cta == 0\) \{\s*\w*relinquish", tail)


def test_depth1_uses_stage_zero_and_depth3_wraps_at_3(built):
    d1, d3 = roles(source(built, "depth1")), roles(source(built, "depth3"))
    assert "tma_ps_stage_ptr[0] *" not in d1["producer_elected"]
    assert "tma_ps_stage_ptr[0] == 3" in d3["producer_elected"] and "mma_ps_stage_ptr[0] == 3" in d3["mma_elected"]


# --------------------------------------------------------------------------- #
# Each bug knob changes exactly the code it names.
def test_skip_mma_phase_flip_removes_only_the_producer_flip(built):
    diff = changed(source(built, "base"), source(built, "noflip"))
    assert diff == ["-               tma_ps_phase_ptr[0] = (tma_ps_phase_ptr[0] ^ 1);"], diff


def test_expect_tx_delta_changes_only_the_expect_tx_bytes(built):
    diff = changed(source(built, "base"), source(built, "tx"))
    assert len(diff) == 2 and all("mbarrier_arrive_expect_tx" in d for d in diff), diff
    assert diff[0][2:].replace(f"(uint){TX_BYTES})", f"(uint){TX_BYTES - 16})") == diff[1][2:]


@pytest.mark.parametrize("key, ps", [("parity-mma", "tma_ps"), ("parity-tma", "mma_ps")])
def test_wait_parity_flip_inverts_only_that_wait(built, key, ps):
    diff = changed(source(built, "base"), source(built, key))
    assert len(diff) == 2 and all("mbarrier_wait" in d and f"{ps}_phase_ptr" in d for d in diff), diff
    assert diff[0][2:].replace(f"({ps}_phase_ptr[0] ^ 0)", f"({ps}_phase_ptr[0] ^ 1)") == diff[1][2:]


def test_skip_store_wait_removes_only_the_wait_groups(built):
    diff = changed(body(source(built, "base")), body(source(built, "nostorewait")))
    assert len(diff) == CHUNKS and all(d.startswith("- ") and "wait_group" in d for d in diff), diff


def test_reset_phase_per_tile_only_adds_reinits_inside_the_tile_loops(built):
    diff = changed(source(built, "base"), source(built, "reset"))
    assert all(d.startswith("+ ") for d in diff), diff
    expected = {f"{ps}_{f}_ptr[0] = {v};" for ps, v in (("tma_ps", 1), ("mma_ps", 0), ("ld_ps", 1), ("wb_ps", 0)) for f, v in (("stage", 0), ("phase", v))}
    assert sorted(d[2:].strip() for d in diff) == sorted(expected)
    r = roles(source(built, "reset"))
    for role, ps in (("producer", "tma_ps"), ("mma", "mma_ps"), ("mma", "ld_ps"), ("wb", "wb_ps")):
        assert f"{ps}_stage_ptr[0] = 0;" in r[role][r[role].index("while (1)") :], ps


def test_cluster_knobs_change_only_their_lines(built):
    """multicast_skip_rank = 0 guards the loads with the rank, release_unscaled inits both ld2mma
    slots for one CTA (128), expect_tx_local arms CTA 0 with one CTA's bytes, skip_exit_sync
    syncs only the CTA before the dealloc -- and nothing else changes."""
    base, knobs = body(source(built, "base")), body(source(built, "cluster"))
    diff = [(d[:1], d[2:].strip()) for d in changed(base, knobs)]
    diff = [(sign, line) for sign, line in diff if line]
    s = slots(base, 2)
    inits_changed = [(sign, line) for sign, line in diff if "mbarrier_init" in line]
    assert sorted(line for sign, line in inits_changed if sign == "+") == sorted(
        line.replace("(uint)256)", "(uint)128)") for sign, line in inits_changed if sign == "-")
    assert {re.search(r"pool_buf_ptr\)\[(\d+)\]", line).group(1) for _, line in inits_changed} == {str(s["ld2mma"]), str(s["ld2mma"] + 1)}
    tx = [(sign, line) for sign, line in diff if "expect_tx" in line]
    assert [line.replace(f"(uint){TX_BYTES})", f"(uint){TX_BYTES // 2})") for sign, line in tx if sign == "-"] == [
        line for sign, line in tx if sign == "+"] and len(tx) == 2
    syncs = [(sign, line) for sign, line in diff if "_sync()" in line]
    assert syncs == [("-", "tvm_builtin_cuda_cluster_sync();"), ("+", "tvm_builtin_cuda_cta_sync();")]
    guard = [(sign, line) for sign, line in diff if sign == "+" and line in (f"if (0 < {RANK}) {{", "}")]
    assert len(guard) == 2, diff
    rest = [d for d in diff if d not in inits_changed + tx + guard + syncs]
    assert sorted(line for sign, line in rest if sign == "-") == sorted(line for sign, line in rest if sign == "+")
    assert sum("cp_async_bulk_tensor_g2s" in line for _, line in rest) == 6  # the three loads, re-indented under the guard


# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "cfg, field",
    [
        (dict(BASE, tma_issuer="each_warp"), "tma_issuer"),
        (dict(BASE, producer_delay_ns=100), "producer_delay_ns"),
        (dict(BASE, M=768), "M"),  # not a multiple of the cluster tile's 2 consumers x 2 CTAs x BLK_M = 512
        (dict(BASE, N=384), "N"),  # not a multiple of 2 * BLK_N
        (dict(BASE, N=256, BLK_N=256), "BLK_N"),  # the pair MMA's N = 2 * BLK_N > 256
        (dict(BASE, N=96, BLK_N=48), "BLK_N"),  # 2 * BLK_N not a multiple of EPI_N = 64
        (dict(BASE, sm_count=5), "sm_count"),  # clusters of 2
        (dict(BASE, PIPE_DEPTH=5), "PIPE_DEPTH"),  # 5 x 48 KB stages: over 227 KB
        (dict(BASE, cluster_m=1), "cluster_m"),  # the kernel is a 2-CTA cluster: the config must say so
        (dict(BASE, cluster_n=2), "cluster_n"),
    ],
)
def test_unbuildable_configs_raise_config_error(cfg, field):
    from kernels.tirx.consumers_sm100 import consumers_step9

    with pytest.raises(ConfigError) as info:
        consumers_step9(GemmConfig(**cfg))
    assert info.value.field == field
