"""The book's step 8 (kernels/tirx/cluster_sm100.py) builds for sm_100a on the released TIRx,
and the generated CUDA has the 2-CTA cluster protocol: the CTA's rank in its cluster picks
its A/B slices, one elected thread of CTA 0 issues ``tcgen05.mma.cta_group::2`` and commits
with the multicast mask of both CTAs, both CTAs' TMA loads complete on CTA 0's barrier
(mapped with ``mapa``) which CTA 0 alone arms for both CTAs' bytes, every writeback thread
arrives on CTA 0's ``ld2mma`` through ``shared::cluster``, TMEM is allocated and freed with
``cta_group::2``; and bug knobs that change exactly the code they name.

Builds run in child processes (``kernels.toolchain.sources``), as in test_kernels_ws_sm100.py.
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

# 2x2 cluster tiles of 256x256 on 2 persistent clusters (4 CTAs): each cluster runs two tiles;
# 4 k-tiles on a depth-2 ring: every ring wraps.  The config says what the kernel is: clusters of 2 along M.
BASE = {"M": 512, "N": 512, "K": 256, "PIPE_DEPTH": 2, "sm_count": 4, "cluster_m": 2}
CLUSTER_KNOBS = {"skiprank": {"multicast_skip_rank": 1}, "unscaled": {"release_unscaled": True},
                 "txlocal": {"expect_tx_local": True}, "noexitsync": {"skip_exit_sync": True}}
"""The cluster bug knobs (protosim/config.py), one build each."""
JOBS = book_jobs(BASE, depths=(3,), knobs=("noflip", "tx", "parity-mma", "parity-tma", "nostorewait"))
JOBS.update({k: dict(BASE, **v) for k, v in CLUSTER_KNOBS.items()})
RANK = "((int)tvm_builtin_cluster_ctaid_x())"
ELECTED = r"if \(tvm_builtin_elect_one_sync_op\(\)\)"
BOTH = "(ushort)3)"  # cta_mask = 0b11


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """key -> CUDA source, or ``ERROR: ...`` when that build failed."""
    return build_book("v8", JOBS, tmp_path_factory)


def roles(src: str) -> dict[str, str]:
    """The code of each role (as in the step-7 test), plus CTA 0's MMA branch."""
    b = body(src)
    wg1 = only(blocks(b, r"if \(\(warp_id_in_cta >> 2\) == 1\)"), "warpgroup 1")
    wb = only([blk for blk in blocks(b, r"if \(\(warp_id_in_cta >> 2\) == 0\)") if "while (1)" in blk], "writeback")
    producer = only(blocks(wg1, r"if \(\(warp_id_in_cta & 3\) == 3\)"), "producer warp")
    mma = only(blocks(wg1, r"if \(\(warp_id_in_cta % 4\) == 0\)"), "MMA warp")
    mma_cta0 = only(blocks(mma, re.escape(f"if ({RANK} == 0)")), "MMA of CTA 0")
    return {"body": b, "producer": producer, "mma": mma, "mma_cta0": mma_cta0, "wb": wb,
            "producer_elected": only(blocks(producer, ELECTED), "producer elect"),
            "mma_elected": only(blocks(mma_cta0, ELECTED), "mma elect")}


@pytest.mark.parametrize("key", JOBS)
def test_builds_for_sm100a_as_clusters_of_two_ctas(built, key):
    src = source(built, key)
    assert "__launch_bounds__(256)" in src
    b = body(src)
    assert "int cbx = ((int)tvm_builtin_cluster_ctaid_x());" in b  # rank in the cluster
    # the scheduler walks cluster tiles: cluster = blockIdx.x / 2, stride = clusters (4 CTAs / 2)
    assert "(((int)blockIdx.x) >> 1)" in b
    assert re.search(r"(\w+)\[0\] = \(\1\[0\] \+ 2\);", b)
    # the cluster is synchronised after the barrier init and before the TMEM dealloc (skip_exit_sync: not before it)
    assert calls(b, "tvm_builtin_cuda_cluster_sync") == (1 if key == "noexitsync" else 2)
    assert b.index("fence_mbarrier_init") < b.index("tvm_builtin_cuda_cluster_sync") < b.index("while (1)")


def test_each_cta_loads_its_own_a_and_b_slice(built):
    r = roles(source(built, "base"))
    loads = re.findall(r"cp_async_bulk_tensor_g2s\w*\((.*)\);", r["producer_elected"])
    assert len(loads) == 2 and calls(r["body"], "cp_async_bulk_tensor_g2s") == 2
    for args in loads:  # row = tile * 256 + rank * 128
        assert f"* 256) + ({RANK} * 128))" in args


def test_tma_completes_on_cta0_barrier_armed_by_cta0_for_both_ctas(built):
    r = roles(source(built, "base"))
    p = r["producer_elected"]
    # tma2mma.remote_view(0): one mapa of the barrier address into CTA 0, outside the roles
    assert re.search(r"mapa_u64\((\w+)\[0\], \(&\(\(\(uint64_t\*\)pool_buf_ptr\)\[1\]\)\), \(uint\)0\);", r["body"])
    assert "mapa" not in p
    assert "cta_group__2" in " ".join(re.findall(r"cp_async_bulk_tensor_g2s\w*", p))
    for load in re.findall(r"cp_async_bulk_tensor_g2s\w*\(.*\);", p):  # the mbar operand: CTA 0's mapped barrier
        assert load.rsplit(", ", 1)[1] == "tvm_builtin_cuda_cvta_generic_to_shared((&(remote_mbar_ptr[tma_ps_stage_ptr[0]]))));"
    arm = only(blocks(p, re.escape(f"if ({RANK} == 0)")), "CTA 0 arms tma2mma")
    assert calls(arm, "mbarrier_arrive_expect_tx_arrive_expect_tx_shared__cluster") == 1
    assert calls(r["body"], "expect_tx") == 1
    assert f"(uint){2 * GemmConfig(**BASE).stage_bytes})" in arm  # both CTAs' bytes


def test_pair_mma_issued_by_one_thread_of_cta0_and_committed_to_both_ctas(built):
    r = roles(source(built, "base"))
    n_mma = GemmConfig(**BASE).BLK_K // 16
    assert calls(r["body"], "tcgen05_mma") == calls(r["mma_elected"], "tcgen05_mma") == n_mma
    assert all("cta_group__2" in m for m in re.findall(r"tcgen05_mma\w*", r["body"]))
    # instruction descriptor: M = 256 (bits 24..28: M >> 4), N = 256 (bits 17..22: N >> 3)
    desc = {int(d) for d in re.findall(r"tcgen05_mma\w*\(\(uint\)0, [^;]*?\(uint\)(\d+),", r["mma_elected"])}
    assert len(desc) == 1 and (desc.pop() >> 17) & 0x3F == 256 >> 3
    commits = re.findall(r"tcgen05_commit\w*\(.*\);", r["body"])
    assert len(commits) == 2 and calls(r["mma_elected"], "tcgen05_commit") == 2
    assert all("cta_group__2" in c and "multicast__cluster" in c and c.endswith(BOTH + ";") for c in commits)
    k_loop = only(blocks(r["mma_elected"], r"for \(int k\w* = 0; k\w* < \d+; \+\+k\w*\)"), "MMA K loop")
    assert calls(k_loop, "tcgen05_commit") == 1  # mma2tma[stage]; mma2ld after the loop


def test_writeback_arrives_on_cta0_ld2mma_counting_both_ctas(built):
    r = roles(source(built, "base"))
    assert "[6]))), (uint)256);" in r["body"]  # ld2mma.init(128 * 2), the last barrier
    assert re.search(r"mapa_u64\((\w+)\[0\], \(&\(\(\(uint64_t\*\)pool_buf_ptr\)\[6\]\)\), \(uint\)0\);", r["body"])
    arrives = re.findall(r"\w*mbarrier_arrive\w*\(.*\);", r["wb"])
    assert arrives == ["tvm_builtin_ptx_mbarrier_arrive_nocount_arrive_shared__cluster_b64(tvm_builtin_cuda_cvta_generic_to_shared((&(remote_mbar_ptr_1[0]))));"]
    assert re.search(r"fence\w*before_thread_sync\(\);\s*\w*mbarrier_arrive", r["wb"])
    # two BLK_N-column chunks of TMEM, each stored by one thread at columns n_tile*4 + {0, 2} (64-wide boxes)
    assert calls(r["wb"], "tcgen05_ld") == 2 and "get_tmem_addr((uint)0, 0, 128)" in r["wb"]
    assert calls(r["wb"], "cp_async_bulk_tensor_s2g") == 2 and calls(r["wb"], "wait_group") == 2
    # the MMA waits for that barrier (locally, in CTA 0) before its K loop
    assert re.search(r"mbarrier_wait\(\(&\(\(\(uint64_t\*\)pool_buf_ptr\)\[\(ld_ps_stage_ptr\[0\] \+ 6\)\]\)\)", r["mma_elected"])


def test_tmem_alloc_and_dealloc_for_the_pair(built):
    b = roles(source(built, "base"))["body"]
    for op in ("tcgen05_alloc", "tcgen05_relinquish", "tcgen05_dealloc"):
        found = re.findall(rf"\w*{op}\w*\(", b)
        assert len(found) == 1 and "cta_group__2" in found[0], (op, found)
    tail = b[b.rindex("tvm_builtin_cuda_cluster_sync()") :]
    assert re.search(r"if \(\(warp_id_in_cta >> 2\) == 0\) \{\s*if \(warp_id_in_cta == 0\) \{\s*\w*relinquish", tail)


def test_depth3_ring_wraps_at_3(built):
    r = roles(source(built, "depth3"))
    assert "tma_ps_stage_ptr[0] == 3" in r["producer_elected"] and "mma_ps_stage_ptr[0] == 3" in r["mma_elected"]


# --------------------------------------------------------------------------- #
def test_skip_mma_phase_flip_removes_only_the_producer_flip(built):
    diff = changed(source(built, "base"), source(built, "noflip"))
    assert diff == ["-               tma_ps_phase_ptr[0] = (tma_ps_phase_ptr[0] ^ 1);"], diff


def test_expect_tx_delta_changes_only_cta0_expect_tx_bytes(built):
    diff = changed(source(built, "base"), source(built, "tx"))
    assert len(diff) == 2 and all("mbarrier_arrive_expect_tx" in d for d in diff), diff
    nbytes = 2 * GemmConfig(**BASE).stage_bytes
    assert diff[0][2:].replace(f"(uint){nbytes})", f"(uint){nbytes - 16})") == diff[1][2:]


@pytest.mark.parametrize("key, ps", [("parity-mma", "tma_ps"), ("parity-tma", "mma_ps")])
def test_wait_parity_flip_inverts_only_that_wait(built, key, ps):
    diff = changed(source(built, "base"), source(built, key))
    assert len(diff) == 2 and all("mbarrier_wait" in d and f"{ps}_phase_ptr" in d for d in diff), diff
    assert diff[0][2:].replace(f"({ps}_phase_ptr[0] ^ 0)", f"({ps}_phase_ptr[0] ^ 1)") == diff[1][2:]


def test_skip_store_wait_removes_only_the_two_wait_groups(built):
    diff = changed(body(source(built, "base")), body(source(built, "nostorewait")))
    assert len(diff) == 2 and all(d.startswith("- ") and "wait_group" in d for d in diff), diff


def test_multicast_skip_rank_guards_only_the_two_loads_with_the_rank(built):
    diff = [(d[:1], d[2:].strip()) for d in changed(body(source(built, "base")), body(source(built, "skiprank")))]
    diff = [(sign, line) for sign, line in diff if line]
    # the loads (and the k offset they share) move into `if (rank != 1)`, which nvcc sees as rank < 1
    assert diff[0] == ("+", f"if ({RANK} < 1) {{") and diff[-1] == ("+", "}"), diff
    moved = diff[1:-1]
    assert sorted(line for sign, line in moved if sign == "-") == sorted(line for sign, line in moved if sign == "+")
    assert sum("cp_async_bulk_tensor_g2s" in line for _, line in moved) == 4  # the two loads, re-indented


def test_release_unscaled_initialises_ld2mma_for_one_cta(built):
    diff = changed(source(built, "base"), source(built, "unscaled"))
    assert len(diff) == 2 and all("mbarrier_init" in d and "[6]" in d for d in diff), diff
    assert diff[0][2:].replace("(uint)256)", "(uint)128)") == diff[1][2:]


def test_expect_tx_local_arms_cta0_with_its_own_bytes_only(built):
    diff = changed(source(built, "base"), source(built, "txlocal"))
    stage = GemmConfig(**BASE).stage_bytes
    assert len(diff) == 2 and all("mbarrier_arrive_expect_tx" in d for d in diff), diff
    assert diff[0][2:].replace(f"(uint){2 * stage})", f"(uint){stage})") == diff[1][2:]


def test_skip_exit_sync_syncs_only_the_cta_before_the_dealloc(built):
    diff = [(d[:1], d[2:].strip()) for d in changed(body(source(built, "base")), body(source(built, "noexitsync")))]
    assert diff == [("-", "tvm_builtin_cuda_cluster_sync();"), ("+", "tvm_builtin_cuda_cta_sync();")], diff
    b = body(source(built, "noexitsync"))
    assert b.index("tvm_builtin_cuda_cta_sync()") < b.index("tcgen05_dealloc")


# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "cfg, field",
    [
        (dict(BASE, reset_phase_per_tile=True), "reset_phase_per_tile"),
        (dict(BASE, tma_issuer="each_warp"), "tma_issuer"),
        (dict(BASE, consumer_delay_ns=100), "consumer_delay_ns"),
        (dict(BASE, BLK_N=256, N=1024), "BLK_N"),
        (dict(BASE, M=384), "M"),
        (dict(BASE, N=384), "N"),
        (dict(BASE, sm_count=3), "sm_count"),
        (dict(BASE, PIPE_DEPTH=7), "PIPE_DEPTH"),
        (dict(BASE, cluster_m=1), "cluster_m"),  # the kernel is a 2-CTA cluster: the config must say so
        (dict(BASE, cluster_n=2), "cluster_n"),
    ],
)
def test_unbuildable_configs_raise_config_error(cfg, field):
    from kernels.tirx.cluster_sm100 import cluster_step8

    with pytest.raises(ConfigError) as info:
        cluster_step8(GemmConfig(**cfg))
    assert info.value.field == field
