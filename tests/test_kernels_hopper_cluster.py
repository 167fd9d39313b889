"""ws_cluster (kernels/tirx/hopper_cluster.py): the warp-specialized Hopper GEMM on thread-block
clusters builds for sm_90a, and the generated CUDA holds the protocol its docstring states --
multicast loads with their masks, one local and CM+CN-2 remote (mapa'd) releases per k-tile,
empty barriers counting every releasing CTA, cluster barriers after the barrier init and before
exit -- and each cluster knob changes only its lines.  A 1x1 cluster is the ws kernel.

Builds run in child processes (kernels.toolchain.sources), as in test_kernels_hopper.py.  The
default run builds 9 kernels (~10 s on 2 cores); the 1x2 knobs, 4x1/1x4 and ws's knobs on a
cluster are in the slow run."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kernels.spec import ClusterGeometry, KernelSpec, check, cluster_geometry, grid_ctas
from protosim.config import ConfigError, GemmConfig

BASE = dict(M=512, N=512, K=512, PIPE_DEPTH=4, sm_count=8, arch="h200")  # 16 tiles, 8 k-tiles: the ring wraps
RANK = "((int)tvm_builtin_cluster_ctaid_x())"
MULTICAST = "complete_tx__bytes_multicast__cluster("
PLAIN_LOAD = "complete_tx__bytes("
REMOTE_ARRIVE = "tvm_builtin_ptx_mbarrier_arrive_nocount_arrive_shared__cluster_b64("
LOCAL_ARRIVE = "tvm_builtin_ptx_mbarrier_arrive_nocount_arrive_shared_b64("
MAPA = "tvm_builtin_ptx_mapa_u32_shared__cluster_u32("
CLUSTER_SYNC = "tvm_builtin_cuda_cluster_sync();"


def _cl(cm: int, cn: int, **kw) -> dict:
    return dict(BASE, cluster_m=cm, cluster_n=cn, **kw)


KNOBS = {"skip0": dict(multicast_skip_rank=0), "skip1": dict(multicast_skip_rank=1), "unscaled": dict(release_unscaled=True),
         "local": dict(expect_tx_local=True), "noexit": dict(skip_exit_sync=True)}
JOBS = {"2x1": ("ws_cluster", _cl(2, 1)), "1x2": ("ws_cluster", _cl(1, 2)), "2x2": ("ws_cluster", _cl(2, 2)),
        "1x1": ("ws_cluster", _cl(1, 1)), "ws": ("ws", BASE)}
JOBS |= {f"2x1-{k}": ("ws_cluster", _cl(2, 1, **v)) for k, v in KNOBS.items() if k != "skip0"}
SLOW_JOBS = {"4x1": ("ws_cluster", _cl(4, 1, M=1024)), "1x4": ("ws_cluster", _cl(1, 4, N=1024))}
SLOW_JOBS |= {f"1x2-{k}": ("ws_cluster", _cl(1, 2, **v)) for k, v in KNOBS.items()}
SLOW_JOBS |= {f"2x1-{k}": ("ws_cluster", _cl(2, 1, **v)) for k, v in (
    ("noflip", dict(skip_mma_phase_flip=True)), ("ptma", dict(wait_parity_flip="tma")), ("pmma", dict(wait_parity_flip="mma")),
    ("tx", dict(expect_tx_delta=1024)), ("nostorewait", dict(skip_store_wait=True)), ("reset", dict(reset_phase_per_tile=True)))}


# ----------------------------------------------------------------------------- no build needed


def test_geometry_of_the_shapes_the_docstring_names():
    g = ClusterGeometry(2, 1, 128, 128, 64)
    assert (g.a_rows, g.b_rows, g.empty_count) == (128, 64, 2)
    assert [g.b_mask(r) for r in (0, 1)] == [0b11, 0b11] and [g.a_mask(r) for r in (0, 1)] == [0b01, 0b10]
    assert [g.release_peers(r) for r in (0, 1)] == [[1], [0]]
    assert (g.tx_bytes(), g.tx_bytes(local=True)) == (32768, 24576)
    g = ClusterGeometry(1, 2, 128, 128, 64)
    assert (g.a_rows, g.b_rows, g.empty_count) == (64, 128, 2)
    assert [g.a_mask(r) for r in (0, 1)] == [0b11, 0b11] and [g.release_peers(r) for r in (0, 1)] == [[1], [0]]
    g = ClusterGeometry(2, 2, 128, 128, 64)
    assert [g.a_mask(r) for r in range(4)] == [0b0101, 0b1010, 0b0101, 0b1010]
    assert [g.b_mask(r) for r in range(4)] == [0b0011, 0b0011, 0b1100, 0b1100]
    assert [g.release_peers(r) for r in range(4)] == [[2, 1], [3, 0], [0, 3], [1, 2]] and g.empty_count == 3


@pytest.mark.parametrize("cm, cn", [(2, 1), (1, 2), (2, 2), (4, 1), (1, 4), (2, 4), (8, 1)])
def test_every_stage_byte_has_one_source_and_every_writer_releases(cm, cn):
    """Per CTA: the slices its sources multicast into it tile its A and B exactly once, and the
    CTAs that write into it are the ones it releases (and the empty count is their number)."""
    g = ClusterGeometry(cm, cn, 128, 128, 64)
    for r in range(g.size):
        a_src = [q for q in range(g.size) if g.a_mask(q) >> r & 1]
        b_src = [q for q in range(g.size) if g.b_mask(q) >> r & 1]
        assert sorted(g.rn(q) * g.a_rows for q in a_src) == list(range(0, 128, g.a_rows))
        assert sorted(g.rm(q) * g.b_rows for q in b_src) == list(range(0, 128, g.b_rows))
        writers = set(a_src) | set(b_src)
        assert writers == {r, *g.release_peers(r)} and len(writers) == g.empty_count
        assert len(g.release_peers(r)) == len(set(g.release_peers(r))) == cm + cn - 2


def test_grid_is_whole_clusters_one_per_cluster_tile_at_most():
    cfg = GemmConfig(**_cl(2, 1, sm_count=None, M=4096, N=4096, K=64))
    assert grid_ctas("ws_cluster", cfg) == 132
    assert grid_ctas("ws_cluster", GemmConfig(**_cl(4, 1, sm_count=None, M=4096, N=4096, K=64))) == 132
    assert grid_ctas("ws_cluster", GemmConfig(**_cl(8, 1, sm_count=None, M=4096, N=4096, K=64))) == 128
    assert grid_ctas("ws_cluster", GemmConfig(**_cl(2, 2, sm_count=7))) == 4
    assert grid_ctas("ws_cluster", GemmConfig(**_cl(2, 1, M=256, N=128, sm_count=None))) == 2  # one cluster tile


@pytest.mark.parametrize("cfg, field", [
    (_cl(2, 1, tma_issuer="each_warp"), "tma_issuer"),
    (_cl(1, 1, multicast_skip_rank=0), "multicast_skip_rank"),
    (_cl(1, 1, release_unscaled=True), "release_unscaled"),
    (_cl(1, 1, expect_tx_local=True), "expect_tx_local"),
    (_cl(1, 1, skip_exit_sync=True), "skip_exit_sync"),
    (_cl(2, 1, M=384), "M"),
    (_cl(1, 2, N=384), "N"),
    (_cl(4, 1, BLK_N=16, N=512), "BLK_N"),
    (_cl(2, 2, sm_count=3), "sm_count"),
    (_cl(2, 1, PIPE_DEPTH=8), "PIPE_DEPTH"),
])
def test_unbuildable_cluster_configs_name_the_field(cfg, field):
    with pytest.raises(ConfigError) as err:
        check("ws_cluster", GemmConfig(**cfg))
    assert err.value.field == field


@pytest.mark.parametrize("step", ["v4", "v6", "ws"])
@pytest.mark.parametrize("knob", [dict(cluster_m=2), dict(cluster_n=2), dict(skip_exit_sync=True)])
def test_steps_without_clusters_refuse_cluster_fields(step, knob):
    with pytest.raises(ConfigError) as err:
        check(step, GemmConfig(**dict(BASE, **knob)))
    assert err.value.field == next(iter(knob))


def test_trace_is_refused():
    pytest.importorskip("tvm")
    from kernels.tirx import hopper

    with pytest.raises(ConfigError) as err:
        hopper.build(KernelSpec("ws_cluster", GemmConfig(**_cl(2, 1)), trace=True))
    assert err.value.field == "trace"


def test_names_say_the_cluster_shape_and_keys_differ():
    a, b = KernelSpec("ws_cluster", GemmConfig(**_cl(2, 1))), KernelSpec("ws_cluster", GemmConfig(**_cl(1, 2)))
    assert a.name.startswith("h200_ws_cluster2x1_") and b.name.startswith("h200_ws_cluster1x2_") and a.key != b.key
    assert KernelSpec("ws", GemmConfig(**BASE)).name.startswith("h200_ws_512x")  # other steps' names unchanged


def test_crosscheck_runs_a_ws_case_on_a_cluster_as_ws_cluster():
    from protosim.crosscheck import job_for
    from protosim.strategies import Case

    assert job_for(Case("ws", GemmConfig(**_cl(2, 1))), None)["spec"]["step"] == "ws_cluster"
    assert job_for(Case("ws", GemmConfig(**BASE)), None)["spec"]["step"] == "ws"
    job = job_for(Case("ws", GemmConfig(**_cl(1, 2, release_unscaled=True))), None)
    assert job["spec"]["config"]["cluster_n"] == 2 and job["spec"]["config"]["release_unscaled"] is True


def test_the_cluster_plan_is_buildable():
    from kernels.plans import PLANS, Job

    jobs = PLANS["cluster"]()
    for job in jobs:
        check(job.spec.step, job.spec.config)
        assert Job.from_dict(json.loads(json.dumps(job.to_dict()))) == job
    steps = {(j.spec.config.cluster_m, j.spec.config.cluster_n) for j in jobs if j.spec.step == "ws_cluster"}
    assert {(2, 1), (1, 2)} <= steps


def test_timeout_records_name_rank_and_cluster_and_old_ones_still_read():
    from kernels.report.gemm import detail, timeout_sentence

    new = {"outcome": "timeout", "timeout": {"barrier": "tma_bar", "stage": 0, "role": "mma", "k": 0, "tile": 0, "parity": 0,
                                             "cta": 5, "thread": 3, "threads_timed_out": 1, "rank": 1, "cluster": 2}}
    assert timeout_sentence(new) == "rank 1 of cluster 2 (CTA 5) timed out on tma_bar stage 0 (mma, k-tile 0, tile 0, parity 0)"
    assert detail(new).startswith("rank 1 (cluster 2, CTA 5) tma_bar[0]/mma@k0")
    old = {"outcome": "timeout", "timeout": {"barrier": "empty_bar", "stage": 2, "role": "producer", "k": 4, "tile": 0,
                                             "parity": 1, "cta": 7, "thread": 128, "threads_timed_out": 1}}
    assert detail(old) == "empty_bar/producer@k4"
    assert timeout_sentence(old).startswith("CTA 7 timed out on empty_bar stage 2")
    assert detail({"outcome": "timeout", "timeout": {"host": "child killed"}}) == "child killed"


CLUSTER_RESULTS = Path(__file__).resolve().parents[1] / "results" / "silicon" / "cluster"


def test_recorded_cluster_runs_say_what_ran_and_correct_variants_were_correct():
    rows = [json.loads(line) for p in sorted(CLUSTER_RESULTS.glob("*.jsonl")) for line in p.read_text().splitlines() if line.strip()]
    if not rows:
        pytest.skip("no ws_cluster runs recorded yet")
    for r in rows:
        for k in ("schema", "time", "commit", "gpu", "driver", "torch", "cuda", "name", "step", "config", "knobs", "outcome"):
            assert k in r, (r.get("name"), k)
        cfg = GemmConfig.from_dict(r["config"])
        assert cfg.bug_knobs == r["knobs"] and "H200" in r["gpu"]
        if r["step"] == "ws_cluster" and not r["knobs"]:
            assert r["outcome"] == "correct", r["name"]
        t = r.get("timeout") or {}
        if r["outcome"] == "timeout" and "barrier" in t and cfg.cluster_size > 1:
            assert 0 <= t["rank"] < cfg.cluster_size and t["cta"] % cfg.cluster_size == t["rank"], r["name"]
            assert t["cluster"] == t["cta"] // cfg.cluster_size


# ----------------------------------------------------------------------------- generated CUDA

needs_build = [pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]


def _build(jobs: dict, tmp_path_factory, tag: str) -> dict[str, str]:
    pytest.importorskip("tvm")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the CUDA toolkit is needed to build sm_90a kernels")
    from kernels.toolchain.sources import build_in_children

    return build_in_children({k: {"family": "hopper", "step": s, "config": c, "trace": False} for k, (s, c) in jobs.items()},
                             tmp_path_factory.mktemp(tag))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    return _build(JOBS, tmp_path_factory, "hopper_cluster")


@pytest.fixture(scope="module")
def built_slow(tmp_path_factory) -> dict[str, str]:
    return _build(SLOW_JOBS, tmp_path_factory, "hopper_cluster_slow")


def _src(built: dict[str, str], key: str) -> str:
    from kernel_sources import source

    return source(built, key)


def _body(src: str) -> str:
    from kernel_sources import body

    return body(src)


def count(b: str, name: str) -> int:
    return b.count(name)


SHAPES = {"2x1": (2, 1), "1x2": (1, 2), "2x2": (2, 2)}
MASKS = {  # (A mask, B mask) operands as generated: ROW_MASK0 << rm, COL_MASK0 << (rn * CM), folded where the rank is known
    "2x1": (None, "(ushort)3"),
    "1x2": ("(ushort)3", None),
    "2x2": (f"((ushort)(5 << ({RANK} & 1)))", f"((ushort)(3 << (({RANK} >> 1) * 2)))"),
}


@pytest.mark.parametrize("key", SHAPES)
def test_loads_are_multicast_slices_with_the_cluster_masks(built, key):
    cm, cn = SHAPES[key]
    src = _src(built, key)
    b = _body(src)
    assert "__launch_bounds__(160)" in src
    assert f"int crank = {RANK};" in b  # %cluster_ctarank
    loads = re.findall(r"cp_async_bulk_tensor_g2s\w*\((.*)\);", b)
    multicast = re.findall(rf"{re.escape(MULTICAST)}(.*)\);", b)
    plain = re.findall(rf"{re.escape(PLAIN_LOAD)}(.*)\);", b)
    assert len(loads) == 2 and len(multicast) == (cn > 1) + (cm > 1) and len(plain) == (cn == 1) + (cm == 1)
    g = ClusterGeometry(cm, cn, 128, 128, 64)
    a_mask, b_mask = MASKS[key]
    for args in multicast:
        operand, mask, rows = ("A_map", a_mask, g.a_rows) if "A_map" in args else ("B_map", b_mask, g.b_rows)
        assert args.endswith(f", {mask}"), (operand, args[-80:])
        assert f"* {rows}))," in args  # the slice's first row: (rank's position) * slice rows
    for args in plain:  # an operand no peer shares: the whole tile into this CTA alone
        assert "ushort" not in args


@pytest.mark.parametrize("key", SHAPES)
def test_each_release_is_one_local_and_cm_plus_cn_minus_2_remote_arrives(built, key):
    cm, cn = SHAPES[key]
    b = _body(_src(built, key))
    assert count(b, LOCAL_ARRIVE) == 1
    assert count(b, REMOTE_ARRIVE) == cm + cn - 2 == count(b, MAPA)
    # the release follows wgmma.wait_group 0, the local arrive first
    wait = b.index("wgmma_wait_group_wait_group_sync_aligned_0")
    assert wait < b.index(LOCAL_ARRIVE) < b.index(MAPA) < b.index(REMOTE_ARRIVE)
    # empty barriers count every releasing CTA, full barriers one arrive.expect_tx of the whole stage
    assert re.search(rf"\[\(s \+ 5\)\]\)\)\), \(uint\){cm + cn - 1}\);", b)
    assert "(uint)32768);" in b


@pytest.mark.parametrize("key", SHAPES)
def test_cluster_barrier_after_init_and_before_exit(built, key):
    b = _body(_src(built, key))
    assert count(b, CLUSTER_SYNC) == 2
    assert b.index("fence_mbarrier_init") < b.index(CLUSTER_SYNC) < b.index("while (1)")
    assert b.rstrip().rstrip("}").rstrip().endswith(CLUSTER_SYNC)  # the kernel's last statement
    assert "__syncthreads" not in b


def test_timeout_record_names_rank_and_cluster(built):
    b = _body(_src(built, "2x1"))
    assert b.count(f"diag_ptr[9] = {RANK};") == 2  # both wait sites: consumer tma_bar, producer empty_bar
    assert b.count("diag_ptr[10] = (((int)blockIdx.x) >> 1);") == 2
    assert "diag_ptr[9]" not in _body(_src(built, "ws"))


def test_a_1x1_cluster_is_the_ws_kernel(built):
    assert _src(built, "1x1") == _src(built, "ws")


def _changed(built, a: str, b: str) -> list[str]:
    from kernel_sources import changed

    return changed(_body(_src(built, a)), _body(_src(built, b)))


def test_multicast_skip_rank_guards_only_that_ranks_multicast(built):
    diff = _changed(built, "2x1", "2x1-skip1")
    assert len(diff) == 4 and any(f"if ({RANK} < 1)" in d for d in diff)
    assert all(MULTICAST in d or "if (" in d or d[2:].strip() == "}" for d in diff)


def test_release_unscaled_initialises_the_empty_barrier_for_one_cta(built):
    diff = _changed(built, "2x1", "2x1-unscaled")
    assert len(diff) == 2 and diff[0].endswith("(uint)2);") and diff[1].endswith("(uint)1);")


def test_expect_tx_local_counts_only_its_own_loads(built):
    diff = _changed(built, "2x1", "2x1-local")
    assert len(diff) == 2 and diff[0].endswith("(uint)32768);") and diff[1].endswith("(uint)24576);")  # A 16 KiB + half of B


def test_skip_exit_sync_drops_only_the_final_cluster_barrier(built):
    diff = _changed(built, "2x1", "2x1-noexit")
    assert [(d[0], d[2:].strip()) for d in diff] == [("-", CLUSTER_SYNC), ("+", "tvm_builtin_cuda_cta_sync();")]
    assert count(_body(_src(built, "2x1-noexit")), CLUSTER_SYNC) == 1


@pytest.mark.slow
def test_slow_variants_build_with_their_protocol(built_slow):
    for key, (cm, cn) in (("4x1", (4, 1)), ("1x4", (1, 4))):
        b = _body(_src(built_slow, key))
        assert count(b, REMOTE_ARRIVE) == cm + cn - 2 and count(b, MULTICAST) == 1 and count(b, CLUSTER_SYNC) == 2
    b = _body(_src(built_slow, "1x2-skip0"))
    assert f"if (0 < {RANK})" in b or f"if ({RANK} != 0)" in b
    assert "(uint)24576);" in _body(_src(built_slow, "1x2-local"))  # half of A + whole B
    assert count(_body(_src(built_slow, "1x2-noexit")), CLUSTER_SYNC) == 1
    for key in SLOW_JOBS:
        _src(built_slow, key)  # every knob builds
