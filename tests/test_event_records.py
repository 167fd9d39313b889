"""The event log's records (issue 15): frequent kinds are tuples with named slots, and
``e.data`` must give back exactly the dict the event was written with."""

from __future__ import annotations

import gc
import pickle

import pytest

from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.engine.log import ABSENT, RECORDS, Event, EventLog
from protosim.verdict import judge


def test_every_record_gives_back_the_fields_it_was_written_with():
    for kind, cls in RECORDS.items():
        names = cls._fields[5:]
        required = names[:len(names) - len(cls._defaults)]
        optional = names[len(required):]
        for present in (set(), set(optional)):
            data = {n: (i, n) for i, n in enumerate(names) if n in required or n in present}
            log = EventLog()
            log.emit(7.5, kind, 3, "mma.w1", 12, **data)
            (e,) = log.events
            assert (e.t, e.kind, e.cta, e.who, e.op) == (7.5, kind, 3, "mma.w1", 12)
            assert e.data == data
            assert [getattr(e, n) for n in names] == [data.get(n, ABSENT) for n in names]
            assert log.of_kind(kind) == [e]
            assert pickle.loads(pickle.dumps(e)) == e


def test_a_field_may_hold_none_and_still_be_present():
    log = EventLog()
    fields = dict(buffer="acc", stage=0, part=None, mode="w", content="c", t0=1.0, t1=2.0, tile=None, seq=1,
                  clock=(1, 0), lanes=1, mma=None, owner=0, columns=None)
    log.emit(1.0, "access", 0, "mma.w0", 4, **fields)
    assert log.events[0].data == fields  # columns=None is a field it has, not one it lacks


def test_a_record_refuses_fields_it_does_not_have_and_needs_those_it_has():
    log = EventLog()
    with pytest.raises(TypeError, match="no field"):
        log.emit(0.0, "phase", 0, "tma", 1, barrier="full", completed=1, colour="red")
    with pytest.raises(TypeError, match="needs the field 'completed'"):
        log.emit(0.0, "phase", 0, "tma", 1, barrier="full")


def test_other_kinds_keep_their_dict():
    log = EventLog()
    log.emit(0.0, "trap", 0, "launch", -1, ub="launch_failure", target="launch", what="launch", detail="x")
    (e,) = log.events
    assert e.kind == "trap" and e.data["detail"] == "x"


def test_a_finished_replay_is_freed_with_its_result_not_by_the_collector():
    """The machine's units point back at it (a cycle): the log must not hang off that cycle,
    or every replay's events wait for a full collection (716k objects after a 148-CTA replay)."""
    schedule = BUILDERS["hgemm_v6"](GemmConfig(M=1024, N=1024, K=512, arch="b200"))
    gc.collect()
    verdict, result = judge(schedule)
    assert len(result.log) > 5000
    del result
    records = (Event, *RECORDS.values())
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        stranded = sum(isinstance(o, records) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert stranded == 0
