"""Reading generated CUDA in kernel tests (shared by the seed and Hopper suites)."""

from __future__ import annotations

import difflib
import re

import pytest

from kernels.toolchain.sources import ERROR


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
