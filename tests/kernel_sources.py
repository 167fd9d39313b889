"""Building kernels and reading their generated CUDA in kernel tests (shared by the suites)."""

from __future__ import annotations

import difflib
import re

import pytest

from kernels.toolchain.sources import ERROR, build_in_children

KNOB_VARIANTS: dict[str, dict] = {
    "noflip": {"skip_mma_phase_flip": True},
    "tx": {"expect_tx_delta": -16},
    "parity-mma": {"wait_parity_flip": "mma"},
    "parity-tma": {"wait_parity_flip": "tma"},
    "nostorewait": {"skip_store_wait": True},
    "reset": {"reset_phase_per_tile": True},
}
"""The bug-knob builds the book-step suites compare against their base build, by key."""


def book_jobs(base: dict, *, depths: tuple[int, ...] = (3, 1), knobs: tuple[str, ...] = tuple(KNOB_VARIANTS)) -> dict:
    """key -> config: ``base``, one build per extra ring depth (``depth3``: K grown so the ring
    still wraps), and one per bug knob."""
    jobs = {"base": base}
    for d in depths:
        jobs[f"depth{d}"] = dict(base, PIPE_DEPTH=d, **({"K": base["K"] * d // 2} if d > base["PIPE_DEPTH"] else {}))
    jobs.update({k: dict(base, **KNOB_VARIANTS[k]) for k in knobs})
    return jobs


def build_book(step: str, jobs: dict, tmp_path_factory) -> dict[str, str]:
    """key -> CUDA source (or ``ERROR: ...``) of book step ``step`` for every config of ``jobs``."""
    return build_in_children({k: {"family": "book", "step": step, "config": c} for k, c in jobs.items()},
                             tmp_path_factory.mktemp(f"book_{step}"))


def source(built: dict[str, str], key: str) -> str:
    """The CUDA source of ``key``; a failed build fails the test with tvm's reason."""
    src = built[key]
    if src.startswith(ERROR):
        pytest.fail(f"{key} did not build:\n{src[len(ERROR):]}")
    return src


def body(src: str) -> str:
    """The kernel's body: everything after the ``__global__`` definition's brace."""
    m = list(re.finditer(r'extern "C" __global__[^;{]*\{', src))
    assert m, "no __global__ kernel definition in the CUDA source"
    return src[m[-1].end() :]


def calls(text: str, name: str) -> int:
    """Call sites of a generated helper whose name contains ``name``."""
    return len(re.findall(rf"\b\w*{name}\w*\(", text))


def blocks(text: str, header: str) -> list[str]:
    """The brace-balanced bodies of every ``header {`` (a regex) in ``text``."""
    found = []
    for m in re.finditer(header + r"\s*\{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        found.append(text[m.end() : i - 1])
    return found


def only(found: list[str], what: str) -> str:
    assert len(found) == 1, f"{what}: {len(found)} blocks"
    return found[0]


def changed(a: str, b: str) -> list[str]:
    """The ``- ``/``+ `` lines of a line diff from ``a`` to ``b``."""
    return [d for d in difflib.ndiff(a.splitlines(), b.splitlines()) if d[:2] in ("- ", "+ ")]
