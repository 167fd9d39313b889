"""Differential microtests of the mbarrier model: what each probe does, what the model predicts.

A *probe* is a short, straight-line sequence of mbarrier operations executed by one
thread of one CTA (``kernels/tirx/mbar_probes.py`` turns it into a TIRx kernel for the
H200).  The same sequence drives :mod:`protosim.ptx.mbarrier`, so the model's
prediction and the silicon's observation come from one definition.  This module is
pure (no tvm, no torch): the GPU runner, the comparison CLI and the tests all read it.

Operations (a tuple each; JSON turns them into lists, :func:`normalize` undoes that):

* ``("init", n)``: ``mbarrier.init`` count n, then ``fence.mbarrier_init``;
* ``("arrive", n)``: ``mbarrier.arrive`` with the count operand n (``None``: without it, i.e. 1);
* ``("expect_tx", b)``: ``mbarrier.expect_tx`` (no arrival);
* ``("complete_tx", b)``: ``mbarrier.complete_tx`` issued by the thread itself;
* ``("arrive_expect_tx", b)``: ``mbarrier.arrive.expect_tx``;
* ``("bulk_copy", b)``: ``cp.async.bulk`` global->shared of b bytes signalling the barrier
  (complete-tx of b when the bytes land), then a fixed settle time (``settle_cycles``)
  so they have landed before the next op;
* ``("snap", label)``: ``test_wait.parity`` 0 and 1, and the raw 64-bit barrier word;
* ``("test_wait", p)``: one ``test_wait.parity p``, timed with ``clock64``;
* ``("try_wait", p, h)``: one ``try_wait.parity p`` (h: suspendTimeHint in ns, or None), timed;
* ``("bounded_wait", p)``: ``try_wait.parity p`` in a loop until true or ``budget_cycles`` pass.

Observation words (int64, what the kernel writes to its output buffer): word 0 is
:data:`DONE` once the thread ran past the last op; then, in op order, ``snap`` writes
3 words (wait(0), wait(1), raw word), each wait 2 (result, cycles), ``bulk_copy`` 2
(first and last 8 bytes of the destination, to check the bytes landed).  The raw
mbarrier word's bit layout is undocumented: it is recorded, never interpreted.

The model's prediction per probe: each observation's booleans, or ``fault`` at the
first operation the model calls undefined (the engine traps there; on the H200 such
cases have killed the kernel, shared/docs/DEVICE.md).  :func:`compare` puts a recorded
run next to it.  Timings (cycles) and raw words are shown, never compared: the pure
model has neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from protosim.ptx import mbarrier as mb

DONE = 0x600D_600D
"""Word 0 once the probe's thread has executed every op (so a record is complete)."""
BULK_BYTES = 1024
"""Bytes per bulk copy: a multiple of 16 (cp.async.bulk's granule), small enough to land in ~1 us."""
SRC_WORDS = BULK_BYTES // 8
PATTERN = 0x5EED_0000_0000_0000
"""Source word i is PATTERN + i: the host fills the source with it, the decoder checks the copy."""
DEFAULT_SETTLE_CYCLES = 200_000
"""~100 us at 1.98 GHz: a 1 KB bulk copy lands in ~1 us, so the bytes are in long before."""
DEFAULT_BUDGET_CYCLES = 2_000_000
"""~1 ms per bounded wait: a satisfiable wait returns in well under 1 us."""

WORDS_PER_OP = {"snap": 3, "test_wait": 2, "try_wait": 2, "bounded_wait": 2, "bulk_copy": 2}
TX_MAX = mb.TX_LIMIT


def src_word(i: int) -> int:
    return PATTERN + i


@dataclass(frozen=True)
class Probe:
    name: str
    rule: str
    """The rule under test, in one line (what the model says)."""
    ops: tuple[tuple, ...]
    why: str = ""
    """Why the sequence is built this way (what differs from its control)."""


N = BULK_BYTES
PROBES: tuple[Probe, ...] = (
    Probe("vacuous_wait", "wait(P) iff current parity != P: after init wait(1) true, wait(0) false",
          (("init", 1), ("snap", "init"), ("try_wait", 1, None), ("try_wait", 0, None))),
    Probe("arrive_count_completes", "arrive(n) with n pending completes the phase",
          (("init", 2), ("arrive", 2), ("snap", "arrive2")),
          "control for over_arrive_*: the count operand itself works"),
    Probe("tx_negative_bulk", "bytes before expect_tx: tx < 0, phase open until arrive.expect_tx",
          (("init", 1), ("bulk_copy", N), ("snap", "bytes"), ("arrive_expect_tx", N), ("snap", "arrive_tx"))),
    Probe("tx_negative_thread", "complete_tx before expect_tx: tx < 0, arrive.expect_tx completes",
          (("init", 1), ("complete_tx", N), ("snap", "complete"), ("arrive_expect_tx", N), ("snap", "arrive_tx")),
          "tx_negative_bulk without the async proxy"),
    Probe("tx_negative_expect_then_arrive", "early bytes, then expect_tx: open until the arrive",
          (("init", 1), ("bulk_copy", N), ("snap", "bytes"), ("expect_tx", N), ("snap", "expect"), ("arrive", None), ("snap", "arrive"))),
    Probe("tx_expect_first_control", "arrive.expect_tx, then bytes: complete when they land",
          (("init", 1), ("arrive_expect_tx", N), ("snap", "arrive_tx"), ("bulk_copy", N), ("snap", "bytes")),
          "checks the bulk-copy mechanics the other tx probes rely on"),
    Probe("expect_tx_never_completes", "[VERIFY] expect_tx taking tx -N -> 0 at pending 0 never completes",
          (("init", 1), ("bulk_copy", N), ("arrive", None), ("snap", "arrive"), ("expect_tx", N), ("snap", "expect"), ("bounded_wait", 0)),
          "same end state (pending 0, tx 0) as complete_tx_completes; only the op that reaches it differs"),
    Probe("expect_tx_never_completes_thread", "[VERIFY] the same, with a thread-issued complete_tx",
          (("init", 1), ("complete_tx", N), ("arrive", None), ("snap", "arrive"), ("expect_tx", N), ("snap", "expect"), ("bounded_wait", 0))),
    Probe("complete_tx_completes", "complete_tx taking tx N -> 0 at pending 0 completes",
          (("init", 1), ("expect_tx", N), ("arrive", None), ("snap", "arrive"), ("complete_tx", N), ("snap", "complete"), ("bounded_wait", 0)),
          "control for expect_tx_never_completes*"),
    Probe("lapped_two_phases", "two phases on, wait(0) is false again (lapped), wait(1) true",
          (("init", 1), ("arrive", None), ("snap", "phase0_done"), ("arrive", None), ("snap", "phase1_done"),
           ("bounded_wait", 0), ("bounded_wait", 1))),
    Probe("test_vs_try_wait", "test_wait = try_wait: false if open, true if complete (timed)",
          (("init", 1), ("test_wait", 0), ("try_wait", 0, None), ("try_wait", 0, 1_000), ("try_wait", 0, 100_000),
           ("arrive", None), ("test_wait", 0), ("try_wait", 0, None), ("try_wait", 0, 100_000))),
    Probe("over_arrive_count1", "arrive(2) with 1 of 1 pending: undefined",
          (("init", 1), ("snap", "init"), ("arrive", 2), ("snap", "after_ub"))),
    Probe("over_arrive_count2", "arrive(2) with 1 of 2 pending: undefined",
          (("init", 2), ("arrive", 1), ("snap", "arrive1"), ("arrive", 2), ("snap", "after_ub"))),
    Probe("arrive_on_zero_pending", "arrive with 0 pending (bytes outstanding): undefined",
          (("init", 1), ("expect_tx", N), ("arrive", None), ("snap", "arrive"), ("arrive", None), ("snap", "after_ub"))),
    Probe("double_arrive_expect_tx", "2x arrive.expect_tx on count 1 (four issuers): undefined",
          (("init", 1), ("arrive_expect_tx", N), ("snap", "arrive_tx"), ("arrive_expect_tx", N), ("snap", "after_ub"))),
    Probe("tx_overflow", "expect_tx past 2^20-1: undefined",
          (("init", 1), ("expect_tx", TX_MAX), ("snap", "tx_max"), ("expect_tx", 1), ("snap", "after_ub"))),
    Probe("reinit_live", "init on a live mbarrier (no inval): undefined",
          (("init", 1), ("arrive", None), ("snap", "phase0_done"), ("init", 1), ("snap", "reinit"), ("try_wait", 0, None),
           ("arrive", None), ("snap", "arrive_after")),
          "phase 0 completed first, so the current parity is 1: a re-init that acts as a plain store of the init word "
          "shows parity 0 again (reinit:01, try(0)=0, then the arrive completes phase 0: 10); one that is ignored "
          "shows reinit:10, try(0)=1, and the arrive completes phase 1: 01"),
    Probe("reinit_live_count2", "init(2) on a live mbarrier of count 1 (no inval): undefined",
          (("init", 1), ("arrive", None), ("snap", "phase0_done"), ("init", 2), ("snap", "reinit"), ("try_wait", 0, None),
           ("arrive", None), ("snap", "arrive1"), ("arrive", None), ("snap", "arrive2")),
          "tells apart what a re-init resets: a plain store of init(2) gives reinit:01 arrive1:01 arrive2:10; an "
          "ignored re-init gives reinit:10 arrive1:01 arrive2:10 (count 1 kept); phase bit kept but counts reset "
          "gives reinit:10 arrive1:10 arrive2:01"),
)
BY_NAME = {p.name: p for p in PROBES}

KNOWN_DIFFERENCES: dict[str, str] = {
    "tx_overflow": "PTX leaves a tx-count past 2^20-1 undefined and the model traps (tx_out_of_range); the H200 did not "
                   "trap and left the phase open (2/2 launches, results/silicon/mbar_probes/2026-11-29_h200_9d1664d.jsonl). "
                   "What tx becomes is undocumented, so the engine keeps the trap unless a replay asks for silicon's "
                   "behaviour (Perturbation.tolerate_ub, protosim.ptx.mbarrier.SILICON_TOLERATED_UB).",
    "reinit_live": "PTX leaves init on a valid mbarrier undefined and the model traps (reinit_without_inval); the H200 did "
                   "not trap, and the re-init acted as a plain store of the init word: parity 0 again, wait(0) false, "
                   "one arrive completes phase 0 (3/3 launches, results/silicon/mbar_probes/2026-11-30_h200_20a0208.jsonl). "
                   "Perturbation.tolerate_ub replays with that state.",
    "reinit_live_count2": "as reinit_live, with init(2) on a count-1 barrier: the new count took effect (the first arrive "
                          "left the phase open, the second completed it; 3/3 launches, "
                          "results/silicon/mbar_probes/2026-11-30_h200_20a0208.jsonl).",
}
"""probe name -> why silicon and the model differ there, citing the recorded run.

Filled only from recorded evidence (results/silicon/mbar_probes/); empty until the
probes have run on the H200.  tests/test_mbar_probes.py accepts a disagreeing record
only for a probe listed here."""


# ----------------------------------------------------------------------------- layout


def normalize(ops) -> tuple[tuple, ...]:
    """Ops as tuples (a JSON record stores lists)."""
    return tuple(tuple(op) for op in ops)


def word_offsets(ops) -> list[int | None]:
    """First output word of each op (None for ops that record nothing); word 0 is DONE."""
    offsets, nxt = [], 1
    for op in ops:
        n = WORDS_PER_OP.get(op[0], 0)
        offsets.append(nxt if n else None)
        nxt += n
    return offsets


def n_words(ops) -> int:
    return 1 + sum(WORDS_PER_OP.get(op[0], 0) for op in ops)


def decode(ops, words: list[int]) -> dict:
    """The kernel's output words as named observations, in op order."""
    ops = normalize(ops)
    obs = []
    for op, at in zip(ops, word_offsets(ops), strict=True):
        if at is None:
            continue
        w = words[at : at + WORDS_PER_OP[op[0]]]
        kind = op[0]
        if kind == "snap":
            obs.append({"op": "snap", "label": op[1], "wait0": bool(w[0]), "wait1": bool(w[1]), "raw": f"0x{w[2] & (2**64 - 1):016x}"})
        elif kind == "bulk_copy":
            landed = w[0] == src_word(0) and w[1] == src_word(op[1] // 8 - 1)
            obs.append({"op": "bulk_copy", "nbytes": op[1], "landed": landed, "first": f"0x{w[0] & (2**64 - 1):016x}",
                        "last": f"0x{w[1] & (2**64 - 1):016x}"})
        else:
            o = {"op": kind, "parity": op[1], "result": bool(w[0]), "cycles": w[1]}
            if kind == "try_wait":
                o["hint_ns"] = op[2]
            obs.append(o)
    return {"done": bool(words) and words[0] == DONE, "observations": obs}


# ----------------------------------------------------------------------------- the model


def predict(ops, tolerate_ub: bool = False) -> dict:
    """Drive the pure MBarrier model with the probe's ops.

    Returns ``{"outcome": "ok", "observations": [...]}`` or, at the first undefined
    operation, ``{"outcome": "fault", "undefined": kind, "detail": ..., "at_op": i,
    "observations": [those before it]}``.  A bulk copy is a complete-tx of its bytes
    at the point it appears: the probe waits for the bytes to land before going on.

    ``tolerate_ub``: as the engine under ``Perturbation.tolerate_ub``, undefined behaviour
    of a kind in ``SILICON_TOLERATED_UB`` goes on in its ``Undefined.after`` state (the
    result then lists the kinds it ran through under ``"tolerated"``).
    """
    ops = normalize(ops)
    s = mb.MBarrierState()
    obs: list[dict] = []
    tolerated: list[str] = []
    for i, op in enumerate(ops):
        kind = op[0]
        step = None
        if kind == "init":
            step = mb.init(s, op[1])
        elif kind == "arrive":
            step = mb.arrive(s, 1 if op[1] is None else op[1])
        elif kind == "expect_tx":
            step = mb.expect_tx(s, op[1])
        elif kind in ("complete_tx", "bulk_copy"):
            step = mb.complete_tx(s, op[1])
            if kind == "bulk_copy" and not step.undefined:
                obs.append({"op": "bulk_copy", "nbytes": op[1], "landed": True})
        elif kind == "arrive_expect_tx":
            step = mb.arrive_expect_tx(s, op[1])
        elif kind == "snap":
            obs.append({"op": "snap", "label": op[1], "wait0": mb.test_wait_parity(s, 0), "wait1": mb.test_wait_parity(s, 1),
                        "state": {"phase": s.completed, "pending": s.pending, "tx": s.tx}})
        elif kind in ("test_wait", "try_wait", "bounded_wait"):
            # Nothing else touches the barrier while one thread waits, so a bounded wait
            # ends true iff the wait is already satisfied.
            o = {"op": kind, "parity": op[1], "result": mb.test_wait_parity(s, op[1])}
            if kind == "try_wait":
                o["hint_ns"] = op[2]
            obs.append(o)
        else:
            raise ValueError(f"unknown probe op {op!r}")
        if step is not None:
            u = step.undefined
            if u and tolerate_ub and u.after is not None and u.kind in mb.SILICON_TOLERATED_UB:
                tolerated.append(u.kind)
                s = u.after
                if kind == "bulk_copy":
                    obs.append({"op": "bulk_copy", "nbytes": op[1], "landed": True})
                continue
            if u:
                return {"outcome": "fault", "undefined": u.kind, "detail": u.detail, "at_op": i, "observations": obs}
            s = step.state
    return {"outcome": "ok", "observations": obs, **({"tolerated": tolerated} if tolerated else {})}


# ----------------------------------------------------------------------------- comparison

COMPARED = {"snap": ("wait0", "wait1"), "bulk_copy": ("landed",), "test_wait": ("result",), "try_wait": ("result",), "bounded_wait": ("result",)}


def _bit(v: bool) -> str:
    return "1" if v else "0"


def token(o: dict, timing: bool = False) -> str:
    """One observation as text: ``label:01`` for a snap (wait(0), wait(1)), ``try(0)=0`` for a wait."""
    b = _bit
    if o["op"] == "snap":
        return f"{o['label']}:{b(o['wait0'])}{b(o['wait1'])}"
    if o["op"] == "bulk_copy":
        return "landed" if o["landed"] else "NOT-landed"
    name = {"test_wait": "test", "try_wait": "try", "bounded_wait": "wait"}[o["op"]]
    hint = f",{o['hint_ns']}ns" if o.get("hint_ns") is not None else ""
    cyc = f"[{o['cycles']}c]" if timing and "cycles" in o else ""
    return f"{name}({o['parity']}{hint})={b(o['result'])}{cyc}"


@dataclass(frozen=True)
class Comparison:
    probe: str
    rule: str
    silicon: str
    model: str
    verdict: str
    """agree | disagree | inconclusive"""
    reason: str
    known: str | None = None
    """KNOWN_DIFFERENCES' entry for this probe, if any."""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def model_text(pred: dict) -> str:
    text = " ".join(token(o) for o in pred["observations"])
    if pred["outcome"] == "fault":
        text = f"{text} fault[{pred['undefined']}]".strip()
    return text


def compare(record: dict) -> Comparison:
    """Silicon (one recorded run of a probe) against the model on the same ops."""
    name = record["probe"]
    ops = normalize(record["ops"])
    rule = record.get("rule") or (BY_NAME[name].rule if name in BY_NAME else "")
    pred = predict(ops)
    mtext = model_text(pred)
    outcome = record["outcome"]
    known = KNOWN_DIFFERENCES.get(name)

    def result(verdict: str, silicon: str, reason: str) -> Comparison:
        return Comparison(name, rule, silicon, mtext, verdict, reason, known)

    if outcome != "ok":
        what = record.get("fault") or record.get("timeout") or ""
        silicon = f"{outcome}: {str(what)[:60]}".rstrip(": ")
        if pred["outcome"] == "fault" and outcome == "fault":
            return result("agree", silicon, f"undefined behaviour ({pred['undefined']}) and the kernel faulted")
        return result("disagree", silicon, f"the model predicts {pred['outcome']}, the kernel ended in {outcome}")
    seen = decode(ops, record["words"])
    stext = " ".join(token(o, timing=True) for o in seen["observations"])
    if not seen["done"]:
        return result("inconclusive", stext, "the kernel returned without its done marker: the record is incomplete")
    if any(o["op"] == "bulk_copy" and not o["landed"] for o in seen["observations"]):
        return result("inconclusive", stext, "a bulk copy had not landed after the settle time: the probe's premise failed")
    if pred["outcome"] == "fault":
        reason = f"the model calls op {pred['at_op']} undefined ({pred['undefined']}); the kernel ran to the end"
        if pred["undefined"] in mb.SILICON_TOLERATED_UB:
            tol = predict(ops, tolerate_ub=True)
            same = tol["outcome"] == "ok" and _differences(tol, seen) == []
            reason += ("; silicon matches the state the engine tolerates it with (tolerate_ub)" if same
                       else "; silicon differs from the state the engine tolerates it with (tolerate_ub)")
        return result("disagree", stext, reason)
    diffs = _differences(pred, seen)
    if diffs:
        return result("disagree", stext, "; ".join(diffs))
    return result("agree", stext, "every observation matches")


def _differences(pred: dict, seen: dict) -> list[str]:
    return [
        f"{token(m)} vs silicon {token(o)}"
        for m, o in zip(pred["observations"], seen["observations"], strict=True)
        if any(m[k] != o[k] for k in COMPARED[m["op"]])
    ]


def tolerated_matches(record: dict) -> bool | None:
    """For a recorded run through undefined behaviour the engine may tolerate: do the
    silicon's observations equal the model's with ``tolerate_ub``?  ``None`` when the
    record is not such a run (the model does not fault there, or on another kind, or
    the kernel did not run to the end)."""
    ops = normalize(record["ops"])
    pred = predict(ops)
    if pred["outcome"] != "fault" or pred["undefined"] not in mb.SILICON_TOLERATED_UB or record["outcome"] != "ok":
        return None
    seen = decode(ops, record["words"])
    if not seen["done"]:
        return None
    tol = predict(ops, tolerate_ub=True)
    return tol["outcome"] == "ok" and _differences(tol, seen) == []


def synthetic_record(probe: Probe, flip: int | None = None) -> dict:
    """A record as the GPU runner writes it, built from the model itself (tests).

    ``flip`` (an index into ``probe.ops``, a recording op) inverts what that op observed."""
    pred = predict(probe.ops)
    if pred["outcome"] == "fault":
        return {"probe": probe.name, "rule": probe.rule, "ops": [list(op) for op in probe.ops], "outcome": "fault",
                "fault": "RuntimeError: CUDA error: unspecified launch failure", "words": None}
    words = [0] * n_words(probe.ops)
    words[0] = DONE
    preds = iter(pred["observations"])
    for i, (op, at) in enumerate(zip(probe.ops, word_offsets(probe.ops), strict=True)):
        if at is None:
            continue
        o = next(preds)
        if op[0] == "snap":
            words[at : at + 3] = [int(o["wait0"]), int(o["wait1"]), 0]
        elif op[0] == "bulk_copy":
            words[at : at + 2] = [src_word(0), src_word(op[1] // 8 - 1)]
        else:
            words[at : at + 2] = [int(o["result"]), 100]
        if flip is not None and i == flip:
            words[at] = int(not words[at]) if op[0] != "bulk_copy" else 0
    return {"probe": probe.name, "rule": probe.rule, "ops": [list(op) for op in probe.ops], "outcome": "ok", "words": words}
