"""Fuzz the tirx input path: TIRx kernels (``protosim run kernel.py:FUNC --set KEY=VALUE``),
real kernel sources mutated (tests/fuzz/tirx_mutants.py).

Every example must keep the exit-status contract (tests/fuzz/contract.py): 0, 1 or 2, a
refusal one ``protosim: `` line naming the file, never 3, never a traceback, never past
the wall-clock limit (``PROTOSIM_FUZZ_TIMEOUT``, 180 s).  CI size by default (derandomized;
``PROTOSIM_FUZZ_RANDOM=1`` draws new inputs); ``pytest -m slow`` runs the large variant.
Needs apache-tvm.

``test_tirx_found`` replays, one input each, the breaches the fuzzer found when it was
written (``FOUND`` below); they must keep the contract like any other input.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
from pathlib import Path

import pytest
from hypothesis import given

from . import sizes
from .contract import assert_contract, check, materialize
from .tirx_mutants import explicit_case, tirx_cases, valid_cases

pytest.importorskip("tvm", reason="TIRx kernels are read with apache-tvm, which is not installed")


_DONE: dict[str, str | None] = {}
"""Inputs already run in this process -> their failure report (None: kept the contract).
Hypothesis draws some inputs more than once; a repeat reports what the first run found
without spending the wall-clock again."""


def _key(case) -> str:
    h = hashlib.sha256(json.dumps([case.argv, case.mode]).encode())
    for k in sorted(case.files):
        h.update(k.encode() + b"\0" + case.files[k] + b"\0")
    return h.hexdigest()


def _run(case) -> None:
    key = _key(case)
    if key not in _DONE:
        try:
            assert_contract(case)
            _DONE[key] = None
        except AssertionError as e:
            _DONE[key] = f"{e}\nthe input's files: {_keep(case, key)}"
    if _DONE[key] is not None:
        raise AssertionError(_DONE[key])


def _keep(case, key: str) -> str:
    """Write a failing input's files where they can be rerun (the kernel files are too long
    for the reproducer's inline text): ``cd`` there and run the reproducer's command."""
    folder = Path(os.environ.get("PROTOSIM_FUZZ_TMP") or tempfile.gettempdir()) / "protosim-tirx-fuzz-failures" / key[:12]
    try:
        materialize(case, folder)
        (folder / "command.sh").write_text("protosim " + " ".join(shlex.quote(a) for a in case.argv) + "\n")
    except OSError as e:
        return f"(not kept: {e})"
    return str(folder)


class _Shown:
    """A drawn case that Hypothesis prints as its summary (the kernel files are tens of KB;
    the failure report has the reproducer)."""

    def __init__(self, case):
        self.case = case

    def __repr__(self) -> str:
        return repr(self.case)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self.case))


def test_tirx_bases_are_judged():
    """The unmutated bases with their valid launches: judged (0 or 1), never refused."""
    for case in valid_cases():
        checked = check(case)
        assert not checked.violations, checked.report()


@sizes.fuzz("tirx")
@given(drawn=tirx_cases().map(_Shown))
def test_tirx(drawn):
    _run(drawn.case)


@pytest.mark.slow
@sizes.fuzz("tirx", slow=True)
@given(drawn=tirx_cases().map(_Shown))
def test_tirx_large(drawn):
    _run(drawn.case)


_BOOK_SMALL = (("M", "128"), ("N", "128"), ("K", "128"), ("sm_count", "1"))
FOUND = {
    "bulk_wait_group_negative": explicit_case(
        "mbar_ok", (("    pool.commit()\n", "    pool.commit()\n    T.ptx.cp.async_.bulk.wait_group(-1)\n"),),
        note="cp.async.bulk.wait_group(-1) executed by every thread"),
    "cp_async_wait_group_negative": explicit_case(
        "mbar_ok", (("    pool.commit()\n", "    pool.commit()\n    T.ptx.cp.async_.wait_group(-1)\n"),),
        note="cp.async.wait_group(-1) executed by every thread"),
    "sleep_negative": explicit_case(
        "mbar_ok", (("    T.cuda.cta_sync()\n", "    T.cuda.nano_sleep(-1000)\n    T.cuda.cta_sync()\n"),),
        note="T.cuda.nano_sleep(-1000) executed by every thread"),
    "thread_extent_huge": explicit_case(
        "mbar_ok", (("T.warp_id_in_wg([4])", "T.warp_id_in_wg([2147483648])"),), note="2^31 warps per warpgroup"),
    "grid_huge": explicit_case("ring", (("T.cta_id([1])", "T.cta_id([4294967296])"),), note="a grid of 2^32 CTAs"),
    "for_extent_huge": explicit_case(
        "mbar_ok", (("    T.cuda.cta_sync()\n", "    for _fz in range(1000000000):\n        T.cuda.cta_sync()\n"),),
        note="a CTA barrier in a loop of 10^9 iterations"),
    "set_size_huge": explicit_case("book_step7", sets=(("M", "128"), ("N", "128"), ("K", "1099511627776"), ("sm_count", "1")),
                                   note="the book's step 7 with --set K=2^40"),
    "tile_loop_never_advances": explicit_case(
        "book_step7", (("                T.cuda.warpgroup_sync(WB_BAR)\n\n                tile_scheduler.next_tile()\n",
                        "                T.cuda.warpgroup_sync(WB_BAR)\n\n"),), sets=_BOOK_SMALL,
        note="the writeback's tile_scheduler.next_tile() left out: its while loop never ends"),
    "million_ops_replay": explicit_case(
        "mbar_ok", (("        T.ptx.mbarrier.init.shared.b64(bar.ptr_to([0]), T.uint32(1))\n",
                     "        for _fz in range(1000000):\n            T.ptx.mbarrier.init.shared.b64(bar.ptr_to([0]), T.uint32(1))\n"),),
        note="10^6 mbarrier.init by thread 0: a schedule of 1,000,004 ops, under the default --max-ops"),
    "user_print_breaks_json": explicit_case(
        "mbar_ok", (("from tvm.script import tirx as T\n", "from tvm.script import tirx as T\n\nprint(\"building the kernel\")\n"),),
        json_out=True, note="the kernel module prints while it is imported; run --json"),
    "user_warning_breaks_refusal": explicit_case(
        "mbar_ok", (("from tvm.script import tirx as T\n",
                     "from tvm.script import tirx as T\nimport warnings\n\nwarnings.warn(\"this kernel is experimental\")\n"),),
        sets=(("arch", "h200"), ("fz_unknown", "1")), mode="subprocess",  # pytest records warnings in a forked child
        note="the kernel module warns while it is imported; a refused --set"),
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_tirx_found(name):
    case = FOUND[name]
    checked = check(case)
    assert not checked.violations, f"{checked.report()}\nthe input's files: {_keep(case, _key(case))}"
