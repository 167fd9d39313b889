"""Property tests: protosim.ptx.mbarrier and protosim.ptx.groups against
independent reference models written from the PTX ISA 9.1 text.

Reference sources (PTX ISA 9.1):
  9.7.13.15.2   contents: expected arrivals [1, 2^20-1], pending [0, 2^20-1],
                tx-count [-(2^20-1), 2^20-1]
  9.7.13.15.3   lifecycle: init before use, inval before repurposing
  9.7.13.15.4   phase: current phase incomplete, all prior phases complete
  9.7.13.15.5.1 expect-tx: tx-count += expectCount
  9.7.13.15.5.2 complete-tx: tx-count -= completeCount, then maybe complete
  9.7.13.15.6   phase completion: pending == 0 and tx == 0 -> next phase,
                pending reloaded with expected
  9.7.13.15.7   arrive-on: pending -= count, then maybe complete
  9.7.13.15.9   init: phase 0, expected = pending = count, tx = 0; init on a
                valid object is undefined
  9.7.13.15.10  inval: any op other than init on a non-valid object is UB
  9.7.13.15.13  arrive.expect_tx: expect-tx is performed *prior to* arrive-on
  9.7.13.15.16  test_wait.parity: phaseParity names the current phase
                (waitComplete False) or the immediately preceding phase (True)
  9.7.9.25.3.2/3, 9.7.9.27.2.1/2  commit_group / wait_group{.read} N:
                wait until only N or fewer of the most recent groups are
                pending and all prior groups are complete; empty groups are
                trivially complete.

The reference models below are plain mutable classes; they never call into the
implementation.  The implementation is only touched through its public API.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from protosim.ptx import mbarrier as mb
from protosim.ptx.groups import AsyncGroups
from protosim.ptx.mbarrier import MAX_COUNT, TX_LIMIT, MBarrierState, Step, Undefined
from tests.sizes import examples

# Limits straight from the ISA table (9.7.13.15.2), not from the implementation.
ISA_LIMIT = 2**20 - 1
TMA_TILE = 16384  # a typical TMA box: 128 x 64 bf16

UB_KINDS = {
    "use_before_init",
    "reinit_without_inval",
    "count_out_of_range",
    "arrival_underflow",
    "tx_out_of_range",
}


def test_limits_match_isa():
    assert MAX_COUNT == ISA_LIMIT
    assert TX_LIMIT == ISA_LIMIT


# ---------------------------------------------------------------------------
# mbarrier reference model
# ---------------------------------------------------------------------------


class RefUB(Exception):
    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


class RefMBarrier:
    """Mutable model of one mbarrier object, written from the ISA text.

    `phase` is the index of the current (incomplete) phase, i.e. the number of
    phases completed since mbarrier.init.  UB is reported by raising RefUB and
    leaves the model untouched (every op validates fully before mutating).

    Precedence when several UB conditions hold at once (the ISA is silent, this
    is the model's own choice): object validity first, then operand ranges,
    then state-dependent range conditions.  arrive.expect_tx is the sequential
    composition expect-tx ; arrive-on (9.7.13.15.13), so expect-tx's UB is
    reported before arrive-on's.
    """

    def __init__(self) -> None:
        self.valid = False
        self.expected = 0
        self.pending = 0
        self.tx = 0
        self.phase = 0

    def copy(self) -> "RefMBarrier":
        r = RefMBarrier()
        r.__dict__.update(self.__dict__)
        return r

    def fields(self) -> tuple[int, int, int, int]:
        return (self.expected, self.pending, self.tx, self.phase)

    # -- helpers --
    def _need_valid(self) -> None:
        if not self.valid:
            raise RefUB("use_before_init")

    def _maybe_complete_phase(self) -> bool:
        # 9.7.13.15.6: complete when pending arrivals reached zero AND tx-count
        # reached zero; atomically move to next phase and reload pending.
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected
            return True
        return False

    # -- operations; each returns phase_completed or raises RefUB --
    def init(self, count: int) -> bool:
        if self.valid:
            raise RefUB("reinit_without_inval")
        if not (1 <= count <= ISA_LIMIT):
            raise RefUB("count_out_of_range")
        self.valid = True
        self.phase = 0
        self.expected = count
        self.pending = count
        self.tx = 0
        return False

    def inval(self) -> bool:
        self._need_valid()
        self.valid = False
        self.expected = self.pending = self.tx = self.phase = 0
        return False

    def arrive(self, count: int) -> bool:
        self._need_valid()
        if not (1 <= count <= ISA_LIMIT):
            raise RefUB("count_out_of_range")
        # pending arrivals may not go below 0 (range table)
        if self.pending - count < 0:
            raise RefUB("arrival_underflow")
        self.pending -= count
        return self._maybe_complete_phase()

    def expect_tx(self, nbytes: int) -> bool:
        self._need_valid()
        if not (0 <= nbytes <= ISA_LIMIT):
            raise RefUB("count_out_of_range")
        if not (-ISA_LIMIT <= self.tx + nbytes <= ISA_LIMIT):
            raise RefUB("tx_out_of_range")
        self.tx += nbytes
        # The ISA names only arrive-on and complete-tx as completing a phase; the H200
        # completes one on expect-tx as well (results/silicon/mbar_probes/, probe
        # expect_tx_never_completes), and the model follows the silicon.
        return self._maybe_complete_phase()

    def complete_tx(self, nbytes: int) -> bool:
        self._need_valid()
        if not (0 <= nbytes <= ISA_LIMIT):
            raise RefUB("count_out_of_range")
        if not (-ISA_LIMIT <= self.tx - nbytes <= ISA_LIMIT):
            raise RefUB("tx_out_of_range")
        self.tx -= nbytes
        return self._maybe_complete_phase()

    def arrive_expect_tx(self, nbytes: int, count: int = 1) -> bool:
        # Atomic: run both parts on a scratch copy, commit only if both defined.
        scratch = self.copy()
        scratch.expect_tx(nbytes)
        done = scratch.arrive(count)
        self.__dict__.update(scratch.__dict__)
        return done

    def wait_parity(self, parity: int) -> bool:
        # The parity names either the current phase (incomplete -> False) or
        # the immediately preceding phase (complete -> True).  Right after
        # init, "phase -1" (parity 1) counts as complete: the vacuous wait.
        current = self.phase
        if parity == current % 2:
            return False  # current phase, incomplete by definition
        preceding = current - 1
        assert preceding % 2 == parity
        return True  # preceding phase: all prior phases are complete


def run_both(ref: RefMBarrier, real_state: MBarrierState, op: str, *args):
    """Apply `op` to the model and the implementation; compare; return new real state."""
    before = real_state
    ref_before = ref.copy()
    try:
        ref_done = getattr(ref, op)(*args)
        ref_kind = None
    except RefUB as e:
        ref_done = False
        ref_kind = e.kind
        ref.__dict__.update(ref_before.__dict__)

    event(f"{op}: {ref_kind or 'defined'}{' +phase' if ref_done else ''}")
    if ref.valid and ref.phase >= 2:
        event("reached phase >= 2")
    step = getattr(mb, op)(real_state, *args)
    ctx = f"{op}{args} on {before!r} (model before: {ref_before.__dict__})"
    assert isinstance(step, Step), ctx
    if ref_kind is None:
        assert step.undefined is None, f"{ctx}: impl says UB {step.undefined!r}, model says defined"
    else:
        assert step.undefined is not None, f"{ctx}: model says UB {ref_kind!r}, impl defined -> {step.state!r}"
        assert isinstance(step.undefined, Undefined), ctx
        assert step.undefined.kind in UB_KINDS, ctx
        assert step.undefined.kind == ref_kind, (
            f"{ctx}: UB kind impl={step.undefined.kind!r} model={ref_kind!r}"
        )
        # On UB the implementation must hand back the original state unchanged.
        assert step.state == before, f"{ctx}: state changed on UB -> {step.state!r}"
    assert step.phase_completed == ref_done, (
        f"{ctx}: phase_completed impl={step.phase_completed} model={ref_done}"
    )
    s = step.state
    assert (s.expected, s.pending, s.tx, s.completed) == ref.fields(), (
        f"{ctx}: impl -> {s!r}, model -> {ref.__dict__}"
    )
    assert s.initialized == ref.valid, ctx
    if not ref.valid:
        assert s == MBarrierState(), ctx
    return s


# --- strategies ------------------------------------------------------------

small_counts = st.integers(1, 4)
init_counts = st.one_of(
    small_counts,
    small_counts,
    small_counts,
    st.sampled_from([0, -1, ISA_LIMIT, ISA_LIMIT - 1, ISA_LIMIT + 1, 2**32 - 1]),
    st.integers(1, ISA_LIMIT),
)

# Byte operands as u32 values (txCount is a 32-bit unsigned operand).
u32_bytes = st.one_of(
    st.integers(0, 8).map(lambda k: k * TMA_TILE),
    st.integers(0, 8).map(lambda k: k * TMA_TILE),
    st.sampled_from([0, 1, 16, 128, ISA_LIMIT - 1, ISA_LIMIT, ISA_LIMIT + 1, 2**20, 2**32 - 1]),
    st.integers(ISA_LIMIT - 4 * TMA_TILE, ISA_LIMIT + 2),
    st.integers(0, 2 * ISA_LIMIT),
)
# ... plus negative Python ints, which the API must reject as count_out_of_range
# (outside [0, TX_LIMIT]; no u32 operand can encode them).
any_int_bytes = st.one_of(
    u32_bytes,
    st.sampled_from([-1, -TMA_TILE, -ISA_LIMIT]),
    st.integers(-2, 2),
)


def expect_bytes(data, ref: RefMBarrier, generic_bytes) -> int:
    """Bytes for expect-tx, biased towards tx hitting 0 and the upper limit."""
    special = []
    if ref.valid:
        if ref.tx < 0:
            special.append(-ref.tx)  # bytes landed first; expect-tx brings tx back to 0
        special += [ISA_LIMIT - ref.tx, ISA_LIMIT - ref.tx + 1, ISA_LIMIT - ref.tx - 1]
    special = [b for b in special if b >= 0] or [0]
    return data.draw(st.one_of(generic_bytes, st.sampled_from(special), st.sampled_from(special)), label="nbytes")


def complete_bytes(data, ref: RefMBarrier, generic_bytes) -> int:
    """Bytes for complete-tx, biased towards tx hitting 0 and the lower limit."""
    special = []
    if ref.valid:
        if ref.tx > 0:
            special += [ref.tx, ref.tx - 1, ref.tx + 1]
        special += [ISA_LIMIT + ref.tx, ISA_LIMIT + ref.tx + 1]
    special = [b for b in special if b >= 0] or [0]
    return data.draw(st.one_of(generic_bytes, st.sampled_from(special), st.sampled_from(special)), label="nbytes")


def arrive_count(data, ref: RefMBarrier) -> int:
    special = [ref.pending, ref.pending + 1] if ref.valid else [1]
    return data.draw(
        st.one_of(
            st.just(1),
            st.integers(1, 4),
            st.sampled_from(special),
            st.just(special[0]),
            st.sampled_from([0, -1, ISA_LIMIT, ISA_LIMIT + 1]),
        ),
        label="count",
    )


class MBarrierMachine(RuleBasedStateMachine):
    byte_operands = any_int_bytes

    def __init__(self) -> None:
        super().__init__()
        self.ref = RefMBarrier()
        self.state = MBarrierState()

    @initialize(count=st.one_of(small_counts, small_counts, init_counts))
    def start(self, count):
        # Begin from raw (never-initialised) memory and try an init.
        self.state = run_both(self.ref, self.state, "init", count)

    @rule(count=init_counts)
    def init(self, count):
        self.state = run_both(self.ref, self.state, "init", count)

    @rule(go=st.integers(0, 2))
    def inval(self, go):
        # fires on a third of its draws, so runs spend most steps on a live barrier
        if go == 0:
            self.state = run_both(self.ref, self.state, "inval")

    @rule(data=st.data())
    def arrive(self, data):
        count = arrive_count(data, self.ref)
        self.state = run_both(self.ref, self.state, "arrive", count)

    @rule()
    def arrive_default(self):
        # count omitted: ISA default of 1
        assert mb.arrive(self.state) == mb.arrive(self.state, 1)
        self.state = run_both(self.ref, self.state, "arrive", 1)

    @precondition(lambda self: self.ref.valid)
    @rule(data=st.data())
    def settle_phase(self, data):
        """Protocol-correct completion of the current phase, one op at a time
        (every op still goes through run_both): the outstanding bytes land or
        get expected, the missing arrivals come, in a drawn order."""
        order = data.draw(st.sampled_from(["tx first", "arrive first", "combined"]), label="order")
        if order == "combined" and self.ref.tx <= 0 and self.ref.pending > 0:
            # one arrive.expect_tx covering both the early bytes and all arrivals
            self.state = run_both(
                self.ref, self.state, "arrive_expect_tx", -self.ref.tx, self.ref.pending
            )
        for part in ("tx", "arrive") if order == "tx first" else ("arrive", "tx"):
            if part == "tx" and self.ref.tx > 0:
                self.state = run_both(self.ref, self.state, "complete_tx", self.ref.tx)
            elif part == "tx" and self.ref.tx < 0:
                self.state = run_both(self.ref, self.state, "expect_tx", -self.ref.tx)
            elif part == "arrive" and self.ref.pending > 0:
                self.state = run_both(self.ref, self.state, "arrive", self.ref.pending)
        if self.ref.pending == 0 and self.ref.tx == 0:
            # stuck state: expect-tx brought tx to 0 after the last arrival;
            # only complete-tx (here with 0 bytes) or arrive-on can finish it.
            self.state = run_both(self.ref, self.state, "complete_tx", 0)

    @rule(data=st.data())
    def expect_tx(self, data):
        self.state = run_both(self.ref, self.state, "expect_tx", expect_bytes(data, self.ref, self.byte_operands))

    @rule(data=st.data())
    def complete_tx(self, data):
        self.state = run_both(self.ref, self.state, "complete_tx", complete_bytes(data, self.ref, self.byte_operands))

    @rule(data=st.data())
    def arrive_expect_tx(self, data):
        nbytes = expect_bytes(data, self.ref, self.byte_operands)
        if data.draw(st.booleans(), label="explicit count"):
            count = arrive_count(data, self.ref)
            self.state = run_both(self.ref, self.state, "arrive_expect_tx", nbytes, count)
        else:
            # count omitted: .expect_tx implies arrive-on count 1
            assert mb.arrive_expect_tx(self.state, nbytes) == mb.arrive_expect_tx(self.state, nbytes, 1)
            self.state = run_both(self.ref, self.state, "arrive_expect_tx", nbytes, 1)

    @precondition(lambda self: self.ref.valid)
    @rule()
    def wait_parity(self):
        for parity in (0, 1):
            got = mb.test_wait_parity(self.state, parity)
            want = self.ref.wait_parity(parity)
            assert got is want or got == want, (
                f"test_wait_parity({self.state!r}, {parity}) = {got}, model {want} "
                f"(model phase {self.ref.phase})"
            )
        # exactly one parity names the current (incomplete) phase
        assert mb.test_wait_parity(self.state, 0) != mb.test_wait_parity(self.state, 1)
        for bad in (2, -1, 3):
            with pytest.raises(ValueError):
                mb.test_wait_parity(self.state, bad)

    @invariant()
    def representation_ok(self):
        self.state.check()

    @invariant()
    def matches_model(self):
        s = self.state
        assert s.initialized == self.ref.valid
        assert (s.expected, s.pending, s.tx, s.completed) == self.ref.fields()
        if self.ref.valid:
            assert s.parity == self.ref.phase % 2
            # ISA ranges (9.7.13.15.2) hold in every reachable valid state
            assert 1 <= s.expected <= ISA_LIMIT
            assert 0 <= s.pending <= s.expected
            assert -ISA_LIMIT <= s.tx <= ISA_LIMIT


MBarrierMachine.TestCase.settings = settings(
    max_examples=examples(200, 1000),
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMBarrier = MBarrierMachine.TestCase


class MBarrierU32BytesMachine(MBarrierMachine):
    """Same machine, byte operands restricted to what a u32 txCount can encode.

    Not a replacement for TestMBarrier: it keeps the rest of the state space
    explored even while negative byte counts are mishandled (a failure there
    stops TestMBarrier's search early)."""

    byte_operands = u32_bytes


MBarrierU32BytesMachine.TestCase.settings = MBarrierMachine.TestCase.settings
TestMBarrierU32Bytes = MBarrierU32BytesMachine.TestCase


# ---------------------------------------------------------------------------
# async-group reference model
# ---------------------------------------------------------------------------

ISSUED, READ, DONE = 0, 1, 2


class RefOp:
    __slots__ = ("op_id", "stage")

    def __init__(self, op_id: int) -> None:
        self.op_id = op_id
        self.stage = ISSUED


class RefGroups:
    """Per-thread async groups.  Each op is its own object, so an id that is
    reused after completion is a *different* operation."""

    def __init__(self) -> None:
        self.uncommitted: list[RefOp] = []
        self.groups: list[list[RefOp]] = []  # oldest first
        self.live: dict[int, RefOp] = {}  # op id -> op not yet done

    def issue(self, op_id: int) -> None:
        op = RefOp(op_id)
        self.uncommitted.append(op)
        self.live[op_id] = op

    def commit(self) -> None:
        self.groups.append(self.uncommitted)  # possibly an empty group
        self.uncommitted = []

    def complete(self, op_id: int, stage: str) -> None:
        op = self.live[op_id]
        if stage == "read":
            op.stage = max(op.stage, READ)
        else:
            op.stage = DONE
            del self.live[op_id]

    @staticmethod
    def _group_complete(group: list[RefOp], read_only: bool) -> bool:
        need = READ if read_only else DONE
        return all(op.stage >= need for op in group)  # empty -> trivially complete

    def wait_satisfied(self, n: int, read_only: bool) -> bool:
        # "wait till only N or fewer of the most recent groups are pending and
        # all the prior groups committed by the executing thread are complete"
        older = self.groups[: max(len(self.groups) - n, 0)]
        return all(self._group_complete(g, read_only) for g in older)

    def pending_groups(self, read_only: bool) -> int:
        return sum(1 for g in self.groups if not self._group_complete(g, read_only))


class AsyncGroupsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ref = RefGroups()
        self.g = AsyncGroups()
        self.next_id = 0

    def _live_ids(self, stages) -> list[int]:
        return sorted(i for i, op in self.ref.live.items() if op.stage in stages)

    @rule()
    def issue(self):
        op_id = self.next_id
        self.next_id += 1
        self.g = self.g.issue(op_id)
        self.ref.issue(op_id)

    @precondition(lambda self: self.ref.live)
    @rule(data=st.data())
    def issue_duplicate(self, data):
        # An id still in flight cannot be issued again.
        op_id = data.draw(st.sampled_from(sorted(self.ref.live)), label="dup id")
        with pytest.raises(ValueError):
            self.g.issue(op_id)

    @rule()
    def commit(self):
        self.g = self.g.commit()
        self.ref.commit()

    @precondition(lambda self: any(op.stage == ISSUED for op in self.ref.live.values()))
    @rule(data=st.data())
    def complete_read(self, data):
        op_id = data.draw(st.sampled_from(self._live_ids({ISSUED})), label="op")
        self.g = self.g.complete(op_id, stage="read")
        self.ref.complete(op_id, "read")

    @precondition(lambda self: self.ref.live)
    @rule(data=st.data())
    def complete_done(self, data):
        op_id = data.draw(st.sampled_from(self._live_ids({ISSUED, READ})), label="op")
        if data.draw(st.booleans(), label="explicit stage"):
            self.g = self.g.complete(op_id, stage="done")
        else:
            self.g = self.g.complete(op_id)  # default stage is "done"
        self.ref.complete(op_id, "done")

    @rule(n=st.integers(0, 4), read_only=st.booleans())
    def check_wait(self, n, read_only):
        got = self.g.wait_satisfied(n, read_only=read_only)
        want = self.ref.wait_satisfied(n, read_only)
        assert got == want, (
            f"wait_satisfied({n}, read_only={read_only}) = {got}, model {want}; "
            f"groups={[[(o.op_id, o.stage) for o in g] for g in self.ref.groups]} "
            f"uncommitted={[(o.op_id, o.stage) for o in self.ref.uncommitted]} impl={self.g!r}"
        )
        if not read_only:
            assert self.g.wait_satisfied(n) == want  # default is the full (non-.read) wait

    @rule()
    def check_bad_n(self):
        with pytest.raises(ValueError):
            self.g.wait_satisfied(-1)
        with pytest.raises(ValueError):
            self.g.wait_satisfied(-1, read_only=True)

    @invariant()
    def representation_ok(self):
        self.g.check()

    @invariant()
    def pending_matches(self):
        for ro in (False, True):
            assert self.g.pending_groups(read_only=ro) == self.ref.pending_groups(ro), (
                f"pending_groups(read_only={ro}) impl={self.g.pending_groups(read_only=ro)} "
                f"model={self.ref.pending_groups(ro)}; "
                f"groups={[[(o.op_id, o.stage) for o in g] for g in self.ref.groups]} impl={self.g!r}"
            )
        assert self.g.pending_groups() == self.ref.pending_groups(False)
        # .read is weaker than the full wait
        assert self.g.pending_groups(read_only=True) <= self.g.pending_groups()
        # wait_group 0 after everything committed and done is always satisfied
        # iff no group is pending
        assert self.g.wait_satisfied(0) == (self.ref.pending_groups(False) == 0)


AsyncGroupsMachine.TestCase.settings = settings(
    max_examples=examples(100, 500),
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestAsyncGroups = AsyncGroupsMachine.TestCase


class AsyncGroupsIdReuseMachine(AsyncGroupsMachine):
    """AsyncGroupsMachine plus reuse of the id of a finished operation."""

    @precondition(lambda self: any(op.stage == DONE for g in self.ref.groups for op in g))
    @rule(data=st.data())
    def reissue_done_id(self, data):
        # Reusing the id of a finished op: the model treats it as a fresh op.
        # Whether the simulator accepts the id is its own choice (op ids are
        # not an ISA concept), but if it accepts it, the old group must stay
        # complete and the new op must be tracked as a new, incomplete op.
        done_ids = sorted(
            {op.op_id for g in self.ref.groups for op in g if op.stage == DONE} - set(self.ref.live)
        )
        if not done_ids:
            return
        op_id = data.draw(st.sampled_from(done_ids), label="reused id")
        try:
            new_g = self.g.issue(op_id)
        except ValueError:
            return
        self.g = new_g
        self.ref.issue(op_id)


AsyncGroupsIdReuseMachine.TestCase.settings = settings(
    max_examples=examples(60, 300),
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestAsyncGroupsIdReuse = AsyncGroupsIdReuseMachine.TestCase


# ---------------------------------------------------------------------------
# Deterministic examples: the classic cases
# ---------------------------------------------------------------------------


def _ok(step: Step) -> MBarrierState:
    assert step.undefined is None, step.undefined
    step.state.check()
    return step.state


def test_vacuous_wait_parity1_after_init():
    s = _ok(mb.init(MBarrierState(), 2))
    assert s.completed == 0 and s.parity == 0
    # parity 1 names the (fictitious, complete) phase before phase 0
    assert mb.test_wait_parity(s, 1) is True
    # parity 0 names the current, incomplete phase 0
    assert mb.test_wait_parity(s, 0) is False


def test_phase_flip_bug_wait_parity0_after_phase0_completed():
    s = _ok(mb.init(MBarrierState(), 1))
    step = mb.arrive(s, 1)
    s = _ok(step)
    assert step.phase_completed
    assert s.completed == 1 and s.parity == 1 and s.pending == 1
    # phase 0 is now the immediately preceding phase: the wait returns at once
    assert mb.test_wait_parity(s, 0) is True
    # a consumer that wants the *next* fill must wait on parity 1
    assert mb.test_wait_parity(s, 1) is False


def test_bytes_land_before_expect_tx():
    s = _ok(mb.init(MBarrierState(), 1))
    # TMA bytes land before the producer's arrive.expect_tx: tx goes negative
    step = mb.complete_tx(s, 2 * TMA_TILE)
    s = _ok(step)
    assert not step.phase_completed
    assert s.tx == -2 * TMA_TILE and s.pending == 1 and s.completed == 0
    assert mb.test_wait_parity(s, 0) is False
    # expect-tx brings tx back to 0 but alone cannot complete the phase
    step = mb.expect_tx(s, 2 * TMA_TILE)
    s = _ok(step)
    assert not step.phase_completed
    assert s.tx == 0 and s.pending == 1 and s.completed == 0
    # the arrive completes it
    step = mb.arrive(s)
    s = _ok(step)
    assert step.phase_completed
    assert (s.expected, s.pending, s.tx, s.completed) == (1, 1, 0, 1)
    assert mb.test_wait_parity(s, 0) is True


def test_bytes_land_before_arrive_expect_tx():
    s = _ok(mb.init(MBarrierState(), 1))
    s = _ok(mb.complete_tx(s, TMA_TILE))
    assert s.tx == -TMA_TILE
    step = mb.arrive_expect_tx(s, TMA_TILE)
    s = _ok(step)
    assert step.phase_completed
    assert (s.expected, s.pending, s.tx, s.completed) == (1, 1, 0, 1)


def test_arrive_expect_tx_then_bytes_complete_phase():
    s = _ok(mb.init(MBarrierState(), 1))
    step = mb.arrive_expect_tx(s, 3 * TMA_TILE)
    s = _ok(step)
    assert not step.phase_completed
    assert (s.pending, s.tx) == (0, 3 * TMA_TILE)
    s = _ok(mb.complete_tx(s, TMA_TILE))
    step = mb.complete_tx(s, 2 * TMA_TILE)
    s = _ok(step)
    assert step.phase_completed and s.completed == 1 and s.pending == 1 and s.tx == 0


def test_arrival_beyond_count_is_underflow_and_state_unchanged():
    s = _ok(mb.init(MBarrierState(), 2))
    s = _ok(mb.arrive(s, 1))
    step = mb.arrive(s, 2)
    assert step.undefined is not None
    assert step.undefined.kind == "arrival_underflow"
    assert step.state == s
    assert not step.phase_completed
    # pending 0 while tx outstanding: any further arrive underflows too
    s = _ok(mb.arrive_expect_tx(s, TMA_TILE))
    assert (s.pending, s.tx, s.completed) == (0, TMA_TILE, 0)
    step = mb.arrive(s)
    assert step.undefined is not None and step.undefined.kind == "arrival_underflow"
    assert step.state == s


def test_lapped_barrier_two_phases_behind():
    s = _ok(mb.init(MBarrierState(), 1))
    # a waiter intends to wait for phase 0 (parity 0) but is descheduled ...
    s = _ok(mb.arrive(s))  # phase 0 completes
    s = _ok(mb.arrive(s))  # phase 1 completes
    assert s.completed == 2 and s.parity == 0
    # ... phase 0 completed long ago, yet parity 0 now names phase 2, which
    # is the current incomplete phase: the waiter blocks (lapped barrier).
    assert mb.test_wait_parity(s, 0) is False
    assert mb.test_wait_parity(s, 1) is True


def test_lifecycle_ub():
    raw = MBarrierState()
    for op, args in [
        (mb.inval, ()),
        (mb.arrive, (1,)),
        (mb.expect_tx, (16,)),
        (mb.complete_tx, (16,)),
        (mb.arrive_expect_tx, (16,)),
    ]:
        step = op(raw, *args)
        assert step.undefined is not None and step.undefined.kind == "use_before_init", op
        assert step.state == raw
    s = _ok(mb.init(raw, 3))
    step = mb.init(s, 3)
    assert step.undefined is not None and step.undefined.kind == "reinit_without_inval"
    assert step.state == s
    s2 = _ok(mb.inval(s))
    assert not s2.initialized and s2 == MBarrierState()
    assert _ok(mb.init(s2, 5)).expected == 5
    for bad in (0, MAX_COUNT + 1):
        step = mb.init(raw, bad)
        assert step.undefined is not None and step.undefined.kind == "count_out_of_range"
        assert step.state == raw


def test_tx_limits():
    s = _ok(mb.init(MBarrierState(), 1))
    s = _ok(mb.expect_tx(s, TX_LIMIT))
    step = mb.expect_tx(s, 1)
    assert step.undefined is not None and step.undefined.kind == "tx_out_of_range"
    assert step.state == s
    s = _ok(mb.init(MBarrierState(), 1))
    s = _ok(mb.complete_tx(s, TX_LIMIT))
    assert s.tx == -TX_LIMIT
    step = mb.complete_tx(s, 1)
    assert step.undefined is not None and step.undefined.kind == "tx_out_of_range"
    assert step.state == s
    # arrive_expect_tx is atomic: an underflowing arrive leaves tx untouched
    s = _ok(mb.init(MBarrierState(), 1))
    step = mb.arrive_expect_tx(s, TMA_TILE, 2)
    assert step.undefined is not None and step.undefined.kind == "arrival_underflow"
    assert step.state == s


def test_wait_group_is_position_based():
    g = AsyncGroups().issue(0).commit().issue(1).commit()
    g = g.complete(1)  # the *newer* group finishes first
    g.check()
    assert g.pending_groups() == 1
    # one group pending, but it is the OLDER one: wait_group 1 must still wait
    assert g.wait_satisfied(1) is False
    assert g.wait_satisfied(2) is True
    g = g.complete(0, stage="read")
    assert g.wait_satisfied(0, read_only=True) is True
    assert g.wait_satisfied(0) is False
    g = g.complete(0)
    assert g.wait_satisfied(0) is True and g.pending_groups() == 0


def test_empty_groups_and_uncommitted_ops():
    g = AsyncGroups().issue(0).commit().commit()  # second group empty
    assert g.wait_satisfied(1) is False  # group 0 is older than the 1 most recent
    g = AsyncGroups().commit().commit()
    assert g.wait_satisfied(0) is True and g.pending_groups() == 0
    g = AsyncGroups().issue(7)  # never committed: never waited for
    assert g.wait_satisfied(0) is True and g.pending_groups() == 0


@pytest.mark.parametrize("op", ["expect_tx", "complete_tx", "arrive_expect_tx"])
@pytest.mark.parametrize("nbytes", [-1, -TMA_TILE])
def test_negative_byte_count_is_out_of_range(op, nbytes):
    # txCount is a 32-bit unsigned operand (9.7.13.15.11/12/13); the API
    # contract is count_out_of_range for nbytes outside [0, TX_LIMIT].
    s = _ok(mb.init(MBarrierState(), 1))
    step = getattr(mb, op)(s, nbytes)
    assert step.undefined is not None, f"{op}({nbytes}) accepted -> {step.state!r}"
    assert step.undefined.kind == "count_out_of_range"
    assert step.state == s and not step.phase_completed


@pytest.mark.parametrize("still_tracked", [False, True])
def test_reused_op_id_does_not_reopen_finished_group(still_tracked):
    # Op ids are a simulator artefact, not an ISA concept: refusing to reuse
    # the id of a finished op is acceptable; accepting it and then treating the
    # finished op's group as pending again (or breaking check()) is not.
    g = AsyncGroups().issue(0)
    if still_tracked:
        g = g.issue(1)  # keeps group 0 alive after op 0 finishes
    g = g.commit().complete(0)
    if still_tracked:
        g = g.complete(1, stage="read")
    assert g.wait_satisfied(0, read_only=True) and g.pending_groups(read_only=True) == 0
    try:
        g2 = g.issue(0)  # op 0 is finished, so it is not outstanding
    except ValueError:
        return
    g2.check()
    # the new op 0 is uncommitted: never waited for
    assert g2.wait_satisfied(0, read_only=True) is True
    assert g2.pending_groups(read_only=True) == 0
    assert g2.pending_groups() == (1 if still_tracked else 0)
    g3 = g2.commit()
    g3.check()
    assert g3.wait_satisfied(1, read_only=True) is True  # older group was read
    assert g3.wait_satisfied(0) is False  # the new group is not done
    assert g3.pending_groups() == (2 if still_tracked else 1)
