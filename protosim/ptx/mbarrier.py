"""The mbarrier object as a pure state machine.

An mbarrier is a 64-bit word in shared memory that counts two things per *phase*:
thread arrivals and bytes of asynchronous transfers.  A phase completes when both
counts reach zero; the barrier then moves to the next phase and reloads its
arrival count.  Waiters never name a phase, only its parity, and that is where
the bugs live: a wait on parity *P* succeeds whenever the most recently completed
phase had parity *P*, whichever phase that was.

Every operation here is a pure function ``op(state, ...) -> Step``.  Undefined
behaviour (PTX says so in words) comes back as ``Step.undefined``, with the state
left untouched -- never clamped, never silently modelled.  On the H200 most of
these cases trap the kernel ("unspecified launch failure", shared/docs/DEVICE.md).
The kinds silicon was recorded *not* to trap on are :data:`SILICON_TOLERATED_UB`;
for those, ``Undefined.after`` is the state the probes showed the barrier left in,
which the engine installs instead of trapping when a replay asks for it
(``Perturbation.tolerate_ub``).

Sources (PTX ISA 9.1, section 9.7.13.15 "mbarrier"):

* 9.7.13.15.2 *Contents*: expected arrivals in [1, 2^20-1], pending arrivals in
  [0, 2^20-1], tx-count in [-(2^20-1), 2^20-1].
* 9.7.13.15.3 *Lifecycle*: must be initialized before use; invalidated before its
  memory is repurposed.  9.7.13.15.9 *init*: init on a valid object is undefined.
* 9.7.13.15.5 *expect-tx* adds to tx-count; *complete-tx* subtracts and may
  complete the phase.  9.7.13.15.7 *arrive-on* subtracts *count* from pending
  and may complete the phase.  ``arrive.expect_tx`` does expect-tx first.
* 9.7.13.15.6 *Phase completion*: pending == 0 and tx-count == 0; then, atomically,
  next phase and pending := expected.
* 9.7.13.15.16 *test_wait / try_wait .parity*: tests completion of the phase with
  the given parity, valid only for the current (False) or the immediately
  preceding (True) phase.  Hence: ``wait(P)`` is True iff current parity != P.

The rule "when does a phase complete" lives in exactly one place:
:func:`_settle`.
"""

from __future__ import annotations

from typing import Literal

from protosim._dataclass_cache import DataclassCache

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

MAX_COUNT = (1 << 20) - 1
"""Largest expected / pending arrival count (PTX 9.7.13.15.2)."""
TX_LIMIT = (1 << 20) - 1
"""tx-count must stay within [-TX_LIMIT, TX_LIMIT] (PTX 9.7.13.15.2)."""

UndefinedKind = Literal[
    "use_before_init",
    "reinit_without_inval",
    "count_out_of_range",
    "arrival_underflow",
    "tx_out_of_range",
]


SILICON_TOLERATED_UB: frozenset[str] = frozenset({
    # expect_tx taking tx-count to exactly 2^20: no trap, the phase stayed open (probe
    # tx_overflow, 2/2 launches, results/silicon/mbar_probes/2026-11-29_h200_9d1664d.jsonl).
    "tx_out_of_range",
    # init on a live barrier (a completed phase, no inval): no trap; the barrier read as
    # freshly initialised -- parity 0, pending = the new count (probes reinit_live and
    # reinit_live_count2, 3/3 launches each, results/silicon/mbar_probes/2026-11-30_h200_20a0208.jsonl).
    "reinit_without_inval",
})
"""Undefined-behaviour kinds the H200 was recorded to run through without trapping.
Each has an ``Undefined.after`` state: what the barrier holds if the kernel goes on."""


@dataclass(frozen=True, slots=True)
class Undefined:
    """An operation the PTX ISA leaves undefined; the hardware traps on most of these."""

    kind: UndefinedKind
    detail: str
    after: MBarrierState | None = None
    """For a kind in :data:`SILICON_TOLERATED_UB`: the state the barrier is left in when the
    hardware does not trap (a re-init: phase 0, pending = expected = count, tx 0, as a plain
    store of the init word; a tx-count out of range: the arithmetic value, phase still open).
    ``None`` for every other kind."""


@dataclass(frozen=True, slots=True)
class MBarrierState:
    """The observable contents of one mbarrier.

    ``expected == 0`` means "not a valid mbarrier object" (never initialized, or
    invalidated): PTX forbids an expected count of zero, so the value is free to
    mean that.
    """

    expected: int = 0
    """Arrivals each phase needs; set by ``init``."""
    pending: int = 0
    """Arrivals the current phase still needs."""
    tx: int = 0
    """Bytes of asynchronous transfers the current phase still waits for (may be negative)."""
    completed: int = 0
    """Phases completed since ``init``.  Not hardware state: it makes verdicts explainable."""

    @property
    def initialized(self) -> bool:
        return self.expected > 0

    @property
    def parity(self) -> int:
        """Parity of the current (incomplete) phase."""
        return self.completed & 1

    def check(self) -> None:
        """Assert the representation invariants (for tests)."""
        assert 0 <= self.expected <= MAX_COUNT
        assert self.completed >= 0
        if not self.initialized:
            assert self.pending == 0 and self.tx == 0
            return
        assert 0 <= self.pending <= self.expected
        assert -TX_LIMIT <= self.tx <= TX_LIMIT


@dataclass(frozen=True, slots=True)
class Step:
    """Result of one operation: the new state and what happened."""

    state: MBarrierState
    phase_completed: bool = False
    undefined: Undefined | None = None


def _settle(s: MBarrierState) -> Step:
    """Phase completion (PTX 9.7.13.15.6): the only place a phase completes."""
    if s.pending == 0 and s.tx == 0:
        return Step(MBarrierState(s.expected, s.expected, 0, s.completed + 1), True)
    return Step(s)


def _ub(s: MBarrierState, kind: UndefinedKind, detail: str, after: MBarrierState | None = None) -> Step:
    return Step(s, False, Undefined(kind, detail, after))


def _need_init(s: MBarrierState, op: str) -> Step | None:
    if not s.initialized:
        return _ub(s, "use_before_init", f"{op} on an mbarrier that was never initialized (or was invalidated)")
    return None


def init(s: MBarrierState, count: int) -> Step:
    """``mbarrier.init [addr], count``: phase 0, pending = expected = count, tx = 0."""
    valid = 1 <= count <= MAX_COUNT
    fresh = MBarrierState(expected=count, pending=count, tx=0, completed=0) if valid else None
    if s.initialized:
        # On the H200 a re-init is a plain store of the init word (SILICON_TOLERATED_UB).
        return _ub(s, "reinit_without_inval", "init on a valid mbarrier object; mbarrier.inval it first", fresh)
    if fresh is None:
        return _ub(s, "count_out_of_range", f"init count {count} outside [1, {MAX_COUNT}]")
    return Step(fresh)


def inval(s: MBarrierState) -> Step:
    """``mbarrier.inval``: the memory is no longer an mbarrier object."""
    return _need_init(s, "inval") or Step(MBarrierState())


def arrive(s: MBarrierState, count: int = 1) -> Step:
    """Arrive-on with *count* (PTX 9.7.13.15.7)."""
    if bad := _need_init(s, "arrive"):
        return bad
    if not 1 <= count <= MAX_COUNT:
        return _ub(s, "count_out_of_range", f"arrive count {count} outside [1, {MAX_COUNT}]")
    if count > s.pending:
        return _ub(
            s,
            "arrival_underflow",
            f"arrive({count}) with only {s.pending} arrival(s) pending in phase {s.completed}",
        )
    return _settle(MBarrierState(s.expected, s.pending - count, s.tx, s.completed))


def expect_tx(s: MBarrierState, nbytes: int) -> Step:
    """Expect-tx (PTX 9.7.13.15.5.1): tx-count += nbytes, then maybe complete.

    The ISA says only arrive-on and complete-tx "potentially complete the current
    phase".  The H200 checks completion on expect-tx too: after all arrivals, an
    expect_tx that brings a negative tx-count back to 0 completes the phase
    (probes ``expect_tx_never_completes``/``_thread``, results/silicon/mbar_probes/,
    delta M2 in docs/semantics.md).  The model follows the silicon.
    """
    if bad := _need_init(s, "expect_tx"):
        return bad
    return _change_tx(s, nbytes, +1, "expect_tx")


def complete_tx(s: MBarrierState, nbytes: int) -> Step:
    """Complete-tx (PTX 9.7.13.15.5.2): tx-count -= nbytes, then maybe complete."""
    if bad := _need_init(s, "complete_tx"):
        return bad
    return _change_tx(s, nbytes, -1, "complete_tx")


def _change_tx(s: MBarrierState, nbytes: int, sign: int, op: str) -> Step:
    # txCount is a 32-bit unsigned operand (PTX 9.7.13.15.11-12): a negative count cannot
    # be expressed, and one above the tx-count range can never be valid.
    if not 0 <= nbytes <= TX_LIMIT:
        return _ub(s, "count_out_of_range", f"{op} byte count {nbytes} outside [0, {TX_LIMIT}]")
    tx = s.tx + sign * nbytes
    if not -TX_LIMIT <= tx <= TX_LIMIT:
        # On the H200 the phase stayed open (SILICON_TOLERATED_UB): keep the arithmetic value.
        return _ub(s, "tx_out_of_range", f"{op}({nbytes}) would take tx-count from {s.tx} to {tx}",
                   MBarrierState(s.expected, s.pending, tx, s.completed))
    return _settle(MBarrierState(s.expected, s.pending, tx, s.completed))


def arrive_expect_tx(s: MBarrierState, nbytes: int, count: int = 1) -> Step:
    """``mbarrier.arrive.expect_tx``: expect-tx(nbytes), then arrive-on(count).

    Atomic: if the arrive-on is undefined, the expect-tx does not happen either.  An
    expect-tx that silicon tolerates (``Undefined.after``) is followed by the arrive-on in
    that ``after`` state, so a replay that runs through it still counts the arrival.
    """
    first = expect_tx(s, nbytes)
    if first.undefined:
        u = first.undefined
        if u.after is not None:
            then = arrive(u.after, count)
            after = then.state if then.undefined is None else None
            return Step(s, False, Undefined(u.kind, u.detail, after))
        return first
    second = arrive(first.state, count)
    if second.undefined:
        return Step(s, False, second.undefined)
    return second


def test_wait_parity(s: MBarrierState, parity: int) -> bool:
    """``test_wait.parity`` / ``try_wait.parity``: has the phase of this parity completed?

    True iff the current phase has the other parity, i.e. the most recently
    completed phase had parity *parity*.  Right after init that is parity 1
    (a "phase -1" counts as complete), which is why producers start at 1.
    A wait on an object that is not a valid mbarrier is undefined: callers check
    ``state.initialized`` first (the engine traps ``use_before_init``).
    """
    if parity not in (0, 1):
        raise ValueError(f"parity must be 0 or 1, got {parity}")
    return s.parity != parity


_DATACLASSES.save()  # after the module's last dataclass
