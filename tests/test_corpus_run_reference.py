"""corpus_run's reference expressions: evaluated over the record's tensors with no builtins,
yet a C function that imports lazily must still work (held-out set 8's rotary and
histogram references raised KeyError '__import__' on the H200: torch.remainder with a
Python scalar imports inside).  No torch here: stand-ins with the same behaviour."""

from __future__ import annotations

import datetime
import types

import pytest

from kernels.triton.corpus_run import reference


class Tensor:
    def __init__(self, v: float):
        self.v = v

    def float(self) -> Tensor:
        return self


def record(expr: str) -> dict:
    return {"reference": {"op": "torch", "expr": expr, "out": "Y"}}


# datetime.strptime imports _strptime from C through the calling frame's builtins, as
# torch.remainder does: the same failure without torch.
TORCH = types.SimpleNamespace(strptime=datetime.datetime.strptime)


def test_a_reference_calling_a_lazily_importing_c_function_evaluates():
    out, ref = reference(TORCH, record("torch.strptime('2020', '%Y').year + X.v"), {"X": Tensor(1.5), "Y": Tensor(0)})
    assert ref == 2021.5
    assert out.v == 0


def test_a_reference_still_sees_no_other_builtins():
    with pytest.raises(NameError, match="open"):
        reference(TORCH, record("open('/etc/passwd')"), {"Y": Tensor(0)})


def test_a_reference_reads_the_tensors_as_they_were_before_the_launch():
    _, ref = reference(TORCH, record("X.v * 2"), {"X": Tensor(5.0), "Y": Tensor(0)}, before={"X": Tensor(3.0)})
    assert ref == 6.0
