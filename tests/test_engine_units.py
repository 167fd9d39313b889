"""The engine's units and the op classes' facts agree: every op is replayed by exactly one
unit, the one its ``Op.unit`` names, and the facts other layers read (accesses, global
traffic, the arch feature it needs) are consistent with the op's fields."""

from __future__ import annotations

import dataclasses

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import Machine
from protosim.engine.units import UNITS
from protosim.ir import OP_TYPES, Access, Op, RoleDecl, Schedule

MACHINE = Machine(Schedule("probe", "b200", (), (), (RoleDecl("r", 1),), ()))


def registered() -> dict[type[Op], list[str]]:
    seen: dict[type[Op], list[str]] = {}
    for unit in MACHINE.units:
        for cls in [*unit.handlers(), *unit.local()]:
            seen.setdefault(cls, []).append(unit.name)
    return seen


def test_every_unit_has_a_distinct_name():
    names = [u.name for u in UNITS]
    assert all(names) and len(set(names)) == len(names)


@pytest.mark.parametrize("cls", OP_TYPES.values(), ids=lambda c: c.kind)
def test_each_op_is_replayed_by_the_unit_it_names(cls):
    assert registered().get(cls) == [cls.unit], f"{cls.__name__}.unit = {cls.unit!r}"


def test_no_unit_registers_an_op_the_ir_does_not_know():
    assert set(registered()) <= set(OP_TYPES.values())


def example(cls: type[Op]) -> Op:
    """An instance with every required field filled (Access fields named after themselves)."""
    required = {f.name: f.type for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING}
    op = cls(**{n: Access(n) if t == "Access" else 1 if t == "int" else n for n, t in required.items()})
    if hasattr(op, "reads"):
        op = dataclasses.replace(op, reads=(Access("a"), Access("b")), writes=(Access("d"),))
    return op


@pytest.mark.parametrize("cls", OP_TYPES.values(), ids=lambda c: c.kind)
def test_accesses_are_the_access_fields(cls):
    """``accesses()`` returns every Access-typed field, so validation and the checkers see them all."""
    op = example(cls)
    expected = [getattr(op, n) for n in ("src", "dst") if isinstance(getattr(op, n, None), Access)]
    expected += [*getattr(op, "reads", ()), *getattr(op, "writes", ())]
    assert list(op.accesses()) == expected


@pytest.mark.parametrize("cls", [c for c in OP_TYPES.values() if c.global_io == "read"], ids=lambda c: c.kind)
def test_global_reads_name_their_source_and_destination(cls):
    """Every read from global memory names what it reads (the L2 model's key) and its bytes;
    one into shared memory its destination -- a load into registers (GlobalLoad) has none."""
    names = {f.name for f in dataclasses.fields(cls)}
    assert {"src", "bytes"} <= names
    assert ("dst" in names) != (cls.kind == "global_load")


def test_needs_match_the_arch_profiles():
    """An op that needs tcgen05 is refused on the H200 and runs on the B200, and so on."""
    h200, b200 = load_profile("h200"), load_profile("b200")
    for cls in OP_TYPES.values():
        if cls.needs == "tcgen05":
            assert h200.unsupported(cls) and not b200.unsupported(cls)
        elif cls.needs == "wgmma":
            assert b200.unsupported(cls) and not h200.unsupported(cls)
        elif cls.needs is None:
            assert not h200.unsupported(cls) and not b200.unsupported(cls)
