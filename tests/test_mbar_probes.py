"""The mbarrier probes: (a) each compiles for sm_90a here and lowers to the PTX its ops
name; (b) the silicon-vs-model comparison agrees with the PTX rule and catches a flipped
observation; (c) every recorded H200 run agrees with the model or is a documented
known difference.  The probes and the model side: protosim/ptx/probes.py; the kernels:
kernels/tirx/mbar_probes.py; build, run and compare: kernels/{toolchain,runner,report}/mbar_probes.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from protosim.ptx import probes as P
from protosim.ptx.mbarrier import TX_LIMIT

RESULTS = Path(__file__).resolve().parents[1] / "results" / "silicon" / "mbar_probes"
UB = {"over_arrive_count1": "arrival_underflow", "over_arrive_count2": "arrival_underflow", "arrive_on_zero_pending": "arrival_underflow",
      "double_arrive_expect_tx": "arrival_underflow", "tx_overflow": "tx_out_of_range", "reinit_live": "reinit_without_inval",
      "reinit_live_count2": "reinit_without_inval"}


# ----------------------------------------------------------------------------- (a) the kernels


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    pytest.importorskip("tvm")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the CUDA toolkit is needed to build sm_90a kernels")
    from kernels.toolchain.sources import build_in_children

    jobs = {p.name: {"family": "probe", "probe": p.name} for p in P.PROBES}
    return build_in_children(jobs, tmp_path_factory.mktemp("probes"))


def _body(built, name: str) -> str:
    from kernel_sources import body, source

    return body(source(built, name))


CALL = {  # generated helper (by the PTX it wraps) -> how many calls a probe's ops make
    "mbarrier_init_init_shared_b64": lambda ops: _n(ops, "init"),
    "mbarrier_arrive_arrive_shared_b64": lambda ops: sum(op[0] == "arrive" and op[1] is not None for op in ops),  # with count operand
    "mbarrier_arrive_nocount_arrive_shared_b64": lambda ops: sum(op[0] == "arrive" and op[1] is None for op in ops),
    "mbarrier_expect_tx_expect_tx_shared_b64": lambda ops: _n(ops, "expect_tx"),
    "mbarrier_complete_tx_complete_tx_shared_b64": lambda ops: _n(ops, "complete_tx"),
    "mbarrier_arrive_expect_tx_arrive_expect_tx_shared_b64": lambda ops: _n(ops, "arrive_expect_tx"),
    "cp_async_bulk_g2s_cluster_async_bulk_shared__cluster_global_mbarrier__complete_tx__bytes": lambda ops: _n(ops, "bulk_copy"),
    "mbarrier_test_wait_parity_test_wait_parity_shared_b64": lambda ops: 2 * _n(ops, "snap") + _n(ops, "test_wait"),
    "mbarrier_try_wait_parity_no_hint_try_wait_parity_shared_b64":
        lambda ops: sum(op[0] == "try_wait" and op[2] is None for op in ops) + _n(ops, "bounded_wait"),
    "mbarrier_try_wait_parity_try_wait_parity_shared_b64": lambda ops: sum(op[0] == "try_wait" and op[2] is not None for op in ops),
}


def _n(ops, kind: str) -> int:
    return sum(op[0] == kind for op in ops)


@pytest.mark.parametrize("probe", P.PROBES, ids=lambda p: p.name)
def test_probe_lowers_to_the_ptx_its_ops_name(built, probe):
    b = _body(built, probe.name)
    for helper, expected in CALL.items():
        got = len(re.findall(rf"\btvm_builtin_ptx_{helper}\(", b))
        assert got == expected(probe.ops), f"{probe.name}: {helper} called {got} times, ops say {expected(probe.ops)}"
    assert "mbarrier_wait(" not in b  # never the library's unbounded spin
    assert f"out_ptr[0] = (int64_t){P.DONE};" in b  # the done marker, after the last op
    assert max(int(i) for i in re.findall(r"out_ptr\[(\d+)\] =", b)) == P.n_words(probe.ops) - 1  # the layout's last word


def test_arrive_count_operand_reaches_the_instruction(built):
    src = _body(built, "over_arrive_count1")
    assert re.search(r"tvm_builtin_ptx_mbarrier_arrive_arrive_shared_b64\([^;]*\(uint\)2\);", src)
    from kernel_sources import source

    assert 'mbarrier.arrive.shared.b64 _, [%0], %1;' in source(built, "over_arrive_count1")  # the count form, not the plain arrive


def test_try_wait_hints_and_test_wait(built):
    from kernel_sources import source

    full = source(built, "test_vs_try_wait")
    assert "mbarrier.try_wait.parity.shared.b64 pd0, [%1], %2, %3;" in full  # with suspendTimeHint
    assert "mbarrier.try_wait.parity.shared.b64 pd0, [%1], %2;" in full
    assert "mbarrier.test_wait.parity.shared.b64 pd0, [%1], %2;" in full
    b = _body(built, "test_vs_try_wait")
    assert "(uint)1000);" in b and "(uint)100000);" in b
    assert b.count("tvm_builtin_clock64()") == 2 * _n(P.BY_NAME["test_vs_try_wait"].ops, "test_wait") + 2 * _n(P.BY_NAME["test_vs_try_wait"].ops, "try_wait")


def test_expect_tx_bytes_and_tx_limit(built):
    assert "tvm_builtin_ptx_mbarrier_expect_tx_expect_tx_shared_b64(" in _body(built, "tx_overflow")
    assert f"(uint){TX_LIMIT});" in _body(built, "tx_overflow")
    assert f"(uint){P.BULK_BYTES}, " in _body(built, "tx_negative_bulk")  # the bulk copy's size operand


# ----------------------------------------------------------------------------- (b) the comparison


def test_layout_and_predicted_outcomes():
    for p in P.PROBES:
        offs = [o for o in P.word_offsets(p.ops) if o is not None]
        assert offs == sorted(set(offs)) and (not offs or offs[0] == 1)
        pred = P.predict(p.ops)
        # the probe table's intent: these and only these exercise undefined behaviour
        assert (pred["outcome"], pred.get("undefined")) == (("fault", UB[p.name]) if p.name in UB else ("ok", None)), p.name


def _words(*groups) -> list[int]:
    return [P.DONE, *[w for g in groups for w in g]]


def test_agrees_with_records_written_from_the_ptx_rule():
    """Records written by hand from PTX 9.7.13.15.16 (wait(P) true iff the current phase's
    parity is not P) and 9.7.13.15.6 (complete when pending and tx are both 0)."""
    raw = 0x1234
    hand = {
        # after init the current phase is 0: wait(1) true, wait(0) false
        "vacuous_wait": _words((0, 1, raw), (1, 40), (0, 5000)),
        # two completed phases: current parity 0 again
        "lapped_two_phases": _words((1, 0, raw), (0, 1, raw), (0, 2_000_100), (1, 30)),
        # tx = -N with the arrival pending: open; arrive.expect_tx(N): complete
        "tx_negative_thread": _words((0, 1, raw), (1, 0, raw)),
        # expect_tx bringing tx to 0 after the arrival completes the phase (delta M2: the
        # H200 does this although the ISA text names only arrive-on and complete-tx)
        "expect_tx_never_completes_thread": _words((0, 1, raw), (1, 0, raw), (1, 94)),
        "tx_negative_bulk": _words((P.src_word(0), P.src_word(P.SRC_WORDS - 1)), (0, 1, raw), (1, 0, raw)),
    }
    for name, words in hand.items():
        p = P.BY_NAME[name]
        c = P.compare({"probe": name, "ops": [list(op) for op in p.ops], "outcome": "ok", "words": words})
        assert c.verdict == "agree", (name, c)
    c = P.compare({"probe": "over_arrive_count1", "ops": P.BY_NAME["over_arrive_count1"].ops, "outcome": "fault",
                   "fault": "RuntimeError: CUDA error: unspecified launch failure", "words": None})
    assert c.verdict == "agree" and "arrival_underflow" in c.model


@pytest.mark.parametrize("probe", P.PROBES, ids=lambda p: p.name)
def test_synthetic_record_agrees_and_each_flip_disagrees(probe):
    assert P.compare(P.synthetic_record(probe)).verdict == "agree"
    if P.predict(probe.ops)["outcome"] == "fault":
        # silicon that ran through undefined behaviour without trapping is a disagreement
        ran = {"probe": probe.name, "ops": probe.ops, "outcome": "ok", "words": _words(*[(0,) * P.WORDS_PER_OP.get(op[0], 0) for op in probe.ops])}
        c = P.compare(ran)
        assert c.verdict == "disagree" and "undefined" in c.reason
        return
    for i, op in enumerate(probe.ops):
        if op[0] in P.WORDS_PER_OP:
            c = P.compare(P.synthetic_record(probe, flip=i))
            expected = "inconclusive" if op[0] == "bulk_copy" else "disagree"  # bytes that never landed void the probe
            assert c.verdict == expected, (probe.name, i, c)
    fault = {"probe": probe.name, "ops": probe.ops, "outcome": "fault", "fault": "unspecified launch failure", "words": None}
    assert P.compare(fault).verdict == "disagree"


def test_incomplete_record_is_inconclusive_and_raw_words_decode_unsigned():
    rec = P.synthetic_record(P.BY_NAME["vacuous_wait"])
    rec["words"][3] = -1  # the raw barrier word as torch's int64 hands it back
    assert P.decode(rec["ops"], rec["words"])["observations"][0]["raw"] == "0xffffffffffffffff"
    rec["words"][0] = 0
    assert P.compare(rec).verdict == "inconclusive"


def test_compare_cli_table_and_json(tmp_path, capsys):
    from kernels.report.mbar_probes import main

    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps({**P.synthetic_record(p), "launch": 0}) + "\n" for p in P.PROBES))
    assert main([str(f)]) == 0
    out = capsys.readouterr().out
    assert [c.strip() for c in out.splitlines()[0].split(" | ")] == ["probe", "rule", "silicon", "model", "agree"]
    assert [line.rsplit(" | ", 1)[1] for line in out.splitlines()[2:]] == ["agree"] * len(P.PROBES)
    assert main([str(f), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["probe"] for r in rows} == set(P.BY_NAME) and all(r["verdict"] == "agree" for r in rows)


def test_run_without_a_gpu_exits_2_with_one_message(tmp_path, monkeypatch, capsys):
    import kernels.runner.mbar_probes as M
    from kernels.runner import launch

    monkeypatch.setattr(launch, "have_gpu", lambda: False)
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "mbar_probes", "probes": []}))
    assert M.main(["--bundle", str(tmp_path), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no NVIDIA GPU" in err[0]
    assert not (tmp_path / "o.jsonl").exists()


# ----------------------------------------------------------------------------- (c) recorded runs


def _recorded() -> list[tuple[str, dict]]:
    from kernels.report.mbar_probes import load_records

    return load_records(sorted(RESULTS.glob("*.jsonl")))


def test_known_differences_name_real_probes():
    assert set(P.KNOWN_DIFFERENCES) <= set(P.BY_NAME)
    assert all(reason.strip() for reason in P.KNOWN_DIFFERENCES.values())


def test_every_recorded_run_agrees_or_is_a_known_difference():
    rows = _recorded()
    if not rows:
        pytest.skip(f"no H200 probe runs recorded under {RESULTS.relative_to(RESULTS.parents[2])}/ yet "
                    "(python -m kernels.runner.mbar_probes --bundle .gpu/probes --out results/silicon/mbar_probes/<date>_h200_<commit>.jsonl)")
    bad = []
    for where, r in rows:
        missing = [k for k in ("schema", "time", "commit", "gpu", "driver", "torch", "cuda", "probe", "ops", "outcome") if k not in r]
        assert not missing, f"{where}: missing {missing}"
        c = P.compare(r)
        if c.verdict != "agree" and r["probe"] not in P.KNOWN_DIFFERENCES:
            bad.append(f"{where} {c.probe}: {c.verdict}: silicon {c.silicon!r} vs model {c.model!r} ({c.reason})")
    assert not bad, "\n".join(bad)


def test_silicon_tolerated_ub_is_backed_by_records_and_its_states_match_them():
    """Every kind in SILICON_TOLERATED_UB has a recorded H200 run through it (no trap), and
    every such run's observations equal the model's with the UB tolerated (Undefined.after)."""
    from protosim.ptx.mbarrier import SILICON_TOLERATED_UB

    rows = _recorded()
    if not rows:
        pytest.skip("no H200 probe runs recorded")
    survived: dict[str, int] = {}
    for where, r in rows:
        match = P.tolerated_matches(r)
        if match is None:
            continue
        assert match, f"{where} {r['probe']}: silicon differs from the tolerated state"
        kind = P.predict(r["ops"])["undefined"]
        survived[kind] = survived.get(kind, 0) + 1
    assert set(survived) == set(SILICON_TOLERATED_UB), survived
    for where, r in rows:  # no recorded fault on a tolerated kind
        pred = P.predict(r["ops"])
        if pred["outcome"] == "fault" and pred["undefined"] in SILICON_TOLERATED_UB:
            assert r["outcome"] == "ok", f"{where}: {r['probe']} faulted on silicon"
