"""ReplayEnvironment shares back-to-back events due together; nothing may tell the difference.

Random little programs of processes (timeouts of a few delays, waits on barrier-like
wake-ups fired in a loop, waits on events succeeded in a loop) run on SimPy's own
Environment and on ReplayEnvironment: the order in which processes resume, and when, must
be the same event for event.  The last test shows why the module's one precondition is
needed: a process started from a shared timeout's step resumes after the timeout's other
waiters, where SimPy would have run it first.
"""

from __future__ import annotations

import simpy
from hypothesis import example, given, settings
from hypothesis import strategies as st

from protosim.engine.environment import ReplayEnvironment, SharedTimeout, WaiterEvent, WaiterWakeup
from protosim.engine.state import Wakeup

DELAYS = st.sampled_from([0, 0, 1, 1, 2, 3.5])
STEP = st.one_of(
    st.tuples(st.just("sleep"), DELAYS),          # yield env.timeout(d)
    st.tuples(st.just("sleep_value"), DELAYS),    # a timeout with a value (shared only with the same value)
    st.tuples(st.just("at"), DELAYS),             # a callback d later (Machine.at's shape)
    st.tuples(st.just("wait"), st.integers(0, 2)),     # wait on barrier b (woken by the next 'fire b')
    st.tuples(st.just("fire"), st.tuples(st.integers(0, 2), st.sampled_from([1, 2]), st.integers(0, 1))),
    # wake barrier b's waiters d later with news n
    st.tuples(st.just("group"), st.integers(0, 1)),    # wait on group g (woken by the next 'done g')
    st.tuples(st.just("done"), st.integers(0, 1)),
)
PROGRAMS = st.lists(st.lists(STEP, min_size=1, max_size=12), min_size=1, max_size=6)


def run(programs, replay: bool) -> list:
    env = ReplayEnvironment() if replay else simpy.Environment()
    trace: list = []
    barriers: dict[int, list] = {0: [], 1: [], 2: []}
    groups: dict[int, list] = {0: [], 1: []}
    wake = WaiterWakeup if replay else Wakeup
    group_event = WaiterEvent if replay else simpy.Event
    news = (object(), object())

    def proc(p: int, steps):
        for s, (what, arg) in enumerate(steps):
            if what == "sleep":
                yield env.timeout(arg)
            elif what == "sleep_value":
                got = yield env.timeout(arg, value=arg)
                trace.append((env.now, p, s, "value", got))
            elif what == "at":
                ev = env.timeout(arg)
                ev.callbacks.append(lambda _ev, p=p, s=s: trace.append((env.now, p, s, "at")))
            elif what == "wait":
                ev = wake(env)
                barriers[arg].append(ev)
                got = yield ev
                trace.append((env.now, p, s, "woken", news.index(got)))
            elif what == "fire":
                b, delay, n = arg
                waiting, barriers[b] = barriers[b], []
                for ev in waiting:  # MBarrierUnit.wake's loop
                    ev.fire_in(delay, news[n])
            elif what == "group":
                ev = group_event(env)
                groups[arg].append(ev)
                yield ev
            elif what == "done":
                waiting, groups[arg] = groups[arg], []
                for ev in waiting:  # ThreadGroups.complete's loop
                    ev.succeed()
            trace.append((env.now, p, s))

    for p, steps in enumerate(programs):
        env.process(proc(p, steps))
    env.run()
    return trace


@given(PROGRAMS)
@settings(max_examples=400)
# two barriers fired back to back: due apart (1 and 2), and due together with other news
@example([[("wait", 0)], [("wait", 1)], [("sleep", 0), ("fire", (0, 1, 0)), ("fire", (1, 2, 0))]])
@example([[("wait", 0)], [("wait", 1)], [("sleep", 0), ("fire", (0, 1, 0)), ("fire", (1, 1, 1))]])
# a warp's timeout asked for while the last one scheduled has been popped already
@example([[("sleep", 0), ("sleep", 1)], [("sleep", 0), ("sleep", 0)]])
# a group's waiter done while the last event scheduled (another's) was processed already
@example([[("group", 0), ("done", 1)], [("sleep", 0), ("done", 0), ("group", 1)]])
def test_processes_resume_in_the_same_order_as_on_simpy(programs):
    assert run(programs, replay=True) == run(programs, replay=False)


def test_a_timeout_due_with_the_last_one_is_that_one():
    env = ReplayEnvironment()
    a = env.timeout(2)
    assert env.timeout(2) is a
    assert env.timeout(3) is not a          # another time
    b = env.timeout(3)
    assert env.timeout(3, value=7) is not b  # another value
    assert isinstance(a, SharedTimeout)


def test_a_timeout_is_not_shared_across_another_schedule():
    env = ReplayEnvironment()
    a = env.timeout(2)
    simpy.Timeout(env, 5)  # anything scheduled in between: the next one would sort after it
    assert env.timeout(2) is not a


def test_a_plain_timeout_is_never_shared():
    env = ReplayEnvironment()
    a = simpy.Timeout(env, 2)
    assert env.timeout(2) is not a


def test_a_process_started_from_a_shared_step_is_why_launchers_use_plain_timeouts():
    """A resume that starts a process schedules an URGENT event: SimPy runs it before the next
    timeout due at that instant, a shared step after the timeout's other waiters."""

    def program(env, trace, make):
        def child():
            trace.append(("child", env.now))
            yield env.timeout(0)

        def starter():
            yield make(env, 1)
            env.process(child())

        def other():
            yield env.timeout(1)
            trace.append(("other", env.now))

        env.process(starter())
        env.process(other())
        env.run()
        return trace

    simpy_order = program(simpy.Environment(), [], lambda env, d: env.timeout(d))
    assert simpy_order == [("child", 1), ("other", 1)]
    # shared: 'other' joins the starter's timeout and resumes before the child starts
    assert program(ReplayEnvironment(), [], lambda env, d: env.timeout(d)) == [("other", 1), ("child", 1)]
    # a plain Timeout (what Machine._start_later waits on) keeps SimPy's order
    assert program(ReplayEnvironment(), [], lambda env, d: simpy.Timeout(env, d)) == simpy_order
