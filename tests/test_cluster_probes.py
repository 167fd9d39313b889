"""The cluster timing probes (kernels/cluster_probes.py, kernels/tirx/cluster_probes.py):
(a) every probe builds for sm_90a here and its generated CUDA holds the instructions it
measures, between clock64 reads; (b) the arithmetic that turns stamps into latencies
recovers known latencies from synthetic stamps on unsynchronised clocks; (c) the recorded
H200 runs (results/silicon/cluster_probes/) parse, say what ran where, and give the
values protosim/arch/h200.toml's [cluster] constants carry."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernels import cluster_probes as C

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "silicon" / "cluster_probes"

CLUSTER_ARRIVE = 'asm volatile("barrier.cluster.arrive.aligned;"'
CLUSTER_ARRIVE_RELAXED = 'asm volatile("barrier.cluster.arrive.relaxed.aligned;"'
CLUSTER_WAIT = 'asm volatile("barrier.cluster.wait.aligned;"'
MAPA = "mapa.shared::cluster.u32"
REMOTE_ARRIVE = "mbarrier.arrive.shared::cluster.b64"
LOCAL_ARRIVE = "mbarrier.arrive.shared.b64"
MULTICAST = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
UNICAST_CALL = "complete_tx__bytes("
TRY_WAIT = "mbarrier.try_wait.parity.shared.b64"
TEST_WAIT = "mbarrier.test_wait.parity.shared.b64"


# ----------------------------------------------------------------------------- (a) the kernels


@pytest.fixture(scope="module")
def cuda(tmp_path_factory) -> dict[str, str]:
    pytest.importorskip("tvm")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the CUDA toolkit is needed to build sm_90a kernels")
    from kernels.toolchain.compiler import env_for_subprocess

    out = tmp_path_factory.mktemp("cluster_probes")
    proc = subprocess.run([sys.executable, "-m", "kernels.toolchain.cluster_probes", "--cuda-out", str(out)], cwd=ROOT,
                          env=env_for_subprocess(), capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {p.name: (out / f"{p.name}.cu").read_text() for p in C.PROBES}


def _body(src: str) -> str:
    m = list(re.finditer(r'extern "C" __global__[^;{]*\{', src))
    assert m, "no __global__ kernel definition"
    return src[m[-1].end():]


def _calls(body: str, helper_part: str) -> int:
    return len(re.findall(rf"\btvm_builtin_\w*{helper_part}\w*\(", body))


@pytest.mark.parametrize("name", [p.name for p in C.PROBES if p.kind == "csync"])
def test_csync_probes_split_arrive_and_wait_between_clock_reads(cuda, name):
    src, p = cuda[name], C.BY_NAME[name]
    assert (CLUSTER_ARRIVE_RELAXED if p.params["relaxed"] else CLUSTER_ARRIVE) in src and CLUSTER_WAIT in src
    b = _body(src)
    loop = b[b.index(f"< {p.n}; ++n)"):]
    seq = [m.group(0) for m in re.finditer(r"tvm_builtin_clock64\(\)|barrier_cluster_(arrive|wait)\w*\(", loop)]
    i = seq.index(next(s for s in seq if "arrive" in s))
    # spin clock, stamp, arrive, wait, stamp
    assert seq[i - 1] == "tvm_builtin_clock64()" and "wait" in seq[i + 1] and seq[i + 2] == "tvm_builtin_clock64()"
    if p.cluster > 2:  # the late rank of odd phases rotates over the peers: 1 + (n // 2) % (CS - 1)
        assert f"(((n % {2 * (p.cluster - 1)}) >> 1) + 1)" in b or f"% {p.cluster - 1}) + 1)" in b


@pytest.mark.parametrize("sfx", ["", "_spin"])
@pytest.mark.parametrize("mode", ["local", "remote", "selfmapa"])
def test_pingpong_probes_arrive_the_way_their_mode_says(cuda, mode, sfx):
    src = cuda[f"pp_{mode}{sfx}"]
    b = _body(src)
    assert "mbarrier_wait(" not in b  # bounded loops, never the library's unbounded spin
    assert (TRY_WAIT in src) == (sfx == "") and (TEST_WAIT in src) == (sfx == "_spin")
    if mode == "local":
        assert _calls(b, "mbarrier_arrive_nocount_arrive_shared_b64") == 2 and MAPA not in src and REMOTE_ARRIVE not in src
    else:
        assert _calls(b, "arrive_shared__cluster_b64") == 2 and _calls(b, "mapa_u32_shared__cluster") == 2
        assert LOCAL_ARRIVE not in src
        ranks = re.findall(r"mapa_u32_shared__cluster_u32\([^;]*\(uint\)(\d)\);", b)
        assert sorted(ranks) == (["0", "1"] if mode == "remote" else ["0", "0"])


@pytest.mark.parametrize("name", [p.name for p in C.PROBES if p.kind == "tma"])
def test_tma_probes_load_the_tile_they_name(cuda, name):
    src, p = cuda[name], C.BY_NAME[name]
    b = _body(src)
    assert (TEST_WAIT in src) == name.endswith("_spin") and (TRY_WAIT in src) != name.endswith("_spin")
    nbytes = p.params["rows"] * 128
    assert f"(uint){nbytes})" in b  # arrive.expect_tx of the tile's bytes
    assert "cuTensorMapEncodeTiled" in src or "CUtensorMap" in src
    if p.params["mode"] == "multicast":
        assert MULTICAST in src and _calls(b, "multicast__cluster") == 1
        assert re.search(r"multicast__cluster\([^;]*\(unsigned short\)3\)|multicast__cluster\([^;]*\(ushort\)3\)", b), "cta_mask 0b11"
        assert _calls(b, "arrive_expect_tx") == 2  # issuer and peer each arm their own full barrier
        assert _calls(b, "arrive_shared__cluster_b64") >= 4  # ready, ack, and the calibration's two arrives
    else:
        assert "multicast" not in b and _calls(b, "arrive_expect_tx") == 1 and REMOTE_ARRIVE not in src
    # the copy lies between the stamp t0 and the wait whose return is stamped
    i = b.index("cp_async_bulk_tensor")
    assert "tvm_builtin_clock64()" in b[b.rindex("\n", 0, i - 200):i]


@pytest.mark.parametrize("where", ["local", "remote", "selfmapa"])
def test_dsmem_probes_chase_through_the_space_they_name(cuda, where):
    src = cuda[f"ds_{where}"]
    b = _body(src)
    helper = "ld_shared_u32" if where == "local" else "ld_shared__cluster_u32"
    assert _calls(b, helper) == C.HOPS
    assert ("ld.shared::cluster.u32" in src) == (where != "local")
    ranks = re.findall(r"mapa_u32_shared__cluster_u32\([^;]*\(uint\)(\d)\);", b)
    assert ranks == {"local": [], "remote": ["1"], "selfmapa": ["0"]}[where]


@pytest.mark.parametrize("name", [p.name for p in C.PROBES if p.kind == "sweep"])
def test_sweep_probes_issue_after_a_common_origin_and_probe_once(cuda, name):
    src, p = cuda[name], C.BY_NAME[name]
    b = _body(src)
    loop = b[b.index(f"< {p.n}; ++i_1)"):]
    # the origin: a full barrier.cluster (arrive + wait) then a clock read, every iteration
    assert re.search(r"tvm_builtin_cuda_cluster_sync\(\);\s*r_ptr\[0\] = \(\(int64_t\)tvm_builtin_clock64\(\)\);", loop)
    assert f"(int64_t){C.SWEEP_A} <=" in loop  # the issuer waits A cycles after the origin
    assert TEST_WAIT in src and TRY_WAIT not in src
    ev, mode = p.params["event"], p.params["mode"]
    if ev == "arrive":
        assert (REMOTE_ARRIVE in src) == (mode == "remote") and (_calls(loop, "mbarrier_arrive_nocount_arrive_shared_b64") == (mode == "local"))
        if mode == "remote":
            assert "(uint)(1 - " in loop  # mapa to the other rank
    else:
        assert (MULTICAST in src) == (mode == "multicast") and f"(uint){p.params['rows'] * 128})" in loop
    # a probe is: spin to r + d, stamp, one test_wait, record its result
    assert re.search(r"\+ 577\)\] = \(\(\(int64_t\)tvm_builtin_clock64\(\)\) - r_ptr\[0\]\);\s*tvm_builtin_ptx_mbarrier_test_wait", loop) \
        or "test_wait" in loop


# ----------------------------------------------------------------------------- (b) the arithmetic


def test_threshold_finds_the_step():
    pts = [(x, int(x >= 137)) for x in range(0, 400, 6)] + [(140, 0), (134, 1)]  # one probe off the step either way
    t = C.threshold(pts)
    assert 132 <= t["threshold"] <= 140 and t["errors"] == 1 and t["lo"] == 140 and t["hi"] == 134


def test_sweep_points_cancel_the_origin_skew():
    p = C.BY_NAME["sw_arrive_remote"]
    true, skew = 150, 7  # rank 1's origin is 7 cycles after rank 0's
    rows = {k: [0] * p.n for k in C.series(p)}
    for i in range(p.n):
        s = (i // p.params["nsteps"]) % 2
        c = 1 - s
        d = C.SWEEP_A + p.params["d0"] + (i % p.params["nsteps"]) * p.params["step"]
        rows[f"issue{s}"][i] = C.SWEEP_A
        rows[f"probe{c}"][i] = d
        # physical probe time minus physical issue time, with rank 1's origin later by `skew`
        phys = (d + (skew if c == 1 else 0)) - (C.SWEEP_A + (skew if s == 1 else 0))
        rows[f"ok{c}"][i] = int(phys >= true)
        rows[f"ok{s}"][i] = -1
    pts = C.sweep_points(p, rows)
    t0, t1 = (C.threshold(pts[f"peer_dir{d}"])["threshold"] for d in (0, 1))
    assert abs(t0 - (true - skew)) <= 6 and abs(t1 - (true + skew)) <= 6 and abs((t0 + t1) / 2 - true) <= 6


def _synthetic_csync(p: C.Probe, spin: int, l_self: float, l_cross: float, dwell: float) -> dict:
    cs, n = p.cluster, p.n
    offset = [random.Random(r).randint(0, 10**12) for r in range(cs)]  # unsynchronised clocks
    a, rel, t = [[0] * n for _ in range(cs)], [[0] * n for _ in range(cs)], [0.0] * cs
    for i in range(n):
        late = C.late_rank(i, cs)
        arr = [t[r] + dwell + (spin if r == late else 0) for r in range(cs)]
        last_rank = max(range(cs), key=lambda r: arr[r])
        for r in range(cs):
            a[r][i] = int(arr[r]) + offset[r]
            t[r] = arr[last_rank] + (l_self if r == last_rank else l_cross)
            rel[r][i] = int(t[r]) + offset[r]
    return {**{f"arrive{r}": a[r] for r in range(cs)}, **{f"release{r}": rel[r] for r in range(cs)}}


@pytest.mark.parametrize("name", ["csync2", "csync4"])
def test_csync_arithmetic_recovers_known_latencies(name):
    p = C.BY_NAME[name]
    got = C.samples(p, _synthetic_csync(p, C.DEFAULT_SPIN, 110, 170, 20), C.DEFAULT_SPIN)
    assert C.stats(got["self"])["median"] == 110 and C.stats(got["cross"])["median"] == 170
    assert C.stats(got["dwell"])["median"] == 20
    loop = C.samples(p, _synthetic_csync(p, 0, 110, 170, 20), 0)["period"]
    assert 110 + 20 <= C.stats(loop)["median"] <= 2 * (170 + 20)  # a round: release -> arrive (dwell) -> release


def test_tma_arithmetic_subtracts_the_calibrated_one_way():
    p = C.BY_NAME["tma_mc_8k"]
    n, off0 = p.n, 10**9
    t0 = [off0 + 10_000 * i for i in range(n)]
    rows = {"t0": t0, "t_local": [t + 400 for t in t0], "t_ack": [t + 430 + 250 for t in t0], "cal_rt": [500] * n}
    s = C.samples(p, rows)
    assert C.stats(s["local"])["median"] == 400 and C.stats(s["peer"])["median"] == 430
    assert C.stats(s["peer_minus_local"])["median"] == 30


def test_constants_come_from_the_medians():
    summary = {"pp_local_spin": {"one_way": {"median": 130.0}}, "pp_remote_spin": {"one_way": {"median": 300.0}},
               f"csync2[spin={C.DEFAULT_SPIN}]": {"cross": {"median": 180.0}, "self": {"median": 150.0}},
               f"csync4[spin={C.DEFAULT_SPIN}]": {"cross": {"median": 190.0}, "self": {"median": 150.0}},
               "tma_mc_8k_spin": {"peer_minus_local": {"median": 40.0}}, "tma_mc_16k_spin": {"peer_minus_local": {"median": 50.0}}}
    c = C.constants(summary)
    assert c["remote_arrive_cycles"]["value"] == 170 and c["cluster_sync_cycles"]["value"] == 190
    assert c["multicast_extra_cycles"]["value"] == 50
    thr = lambda v: {"threshold": v}  # noqa: E731
    summary |= {"sw_arrive_local": {"thr_local_dir0": thr(40), "thr_local_dir1": thr(42)},
                "sw_arrive_remote": {"thr_peer_dir0": thr(140), "thr_peer_dir1": thr(160)},
                **{f"sw_tma_mc_{k}k": {"thr_local_dir0": thr(400), "thr_local_dir1": thr(400), "thr_peer_dir0": thr(420),
                                       "thr_peer_dir1": thr(440 + k)} for k in (8, 16)}}
    c = C.constants(summary)
    assert c["remote_arrive_cycles"]["value"] == 109 and c["remote_arrive_cycles"]["method"] == "sweep"
    assert c["multicast_extra_cycles"]["value"] == 38


def test_stats_percentiles():
    s = C.stats(range(1, 11))
    assert (s["min"], s["median"], s["p90"], s["max"], s["n"]) == (1, 5.5, 9, 10, 10)
    assert C.stats([]) is None


# ----------------------------------------------------------------------------- (c) the records


def _records() -> list[tuple[str, dict]]:
    return [(f"{f.name}:{i}", json.loads(line)) for f in sorted(RESULTS.glob("*.jsonl"))
            for i, line in enumerate(f.read_text().splitlines(), 1) if line.strip()]


def test_records_say_what_ran_and_where():
    recs = _records()
    if not recs:
        pytest.skip("no cluster probe records yet")
    for where, r in recs:
        for k in ("schema", "time", "commit", "run", "gpu", "driver", "torch", "cuda", "tvm", "probe", "spin", "launch", "outcome"):
            assert k in r, f"{where}: missing {k}"
        assert "H200" in r["gpu"], where
        assert r["probe"] in C.BY_NAME, where
        if r["outcome"] == "ok":
            p = C.BY_NAME[r["probe"]]
            assert set(r["rows"]) == set(C.series(p)) and all(len(v) == p.n for v in r["rows"].values()), where
            assert r["ctas_done"] == p.cluster and r["wait_timeouts"] == 0, where


def test_h200_profile_carries_the_measured_constants():
    recs = [r for _, r in _records()]
    if not recs:
        pytest.skip("no cluster probe records yet")
    from protosim.arch import load_profile

    prof = load_profile("h200")
    derived = C.constants(C.summarize(recs))
    for name, d in derived.items():
        assert abs(getattr(prof, name) - round(d["value"])) <= 1, f"h200 {name} = {getattr(prof, name)}, records give {d['value']}"
