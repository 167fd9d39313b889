"""Reading generated CUDA in kernel tests (shared by the seed and Hopper suites)."""

from __future__ import annotations

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
