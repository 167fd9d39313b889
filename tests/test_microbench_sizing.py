"""The TMA stream microbenchmark sizes each CTA's dynamic shared memory so that exactly
``ctas_per_sm`` CTAs share an SM (kernels/runner/tma_stream.py ``smem_for``).  Getting the
kernel's static shared memory wrong cost every multi-CTA row of a record one CTA an SM."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernels.runner import tma_stream as R

SOURCE = Path(__file__).resolve().parent.parent / "kernels" / "microbench" / "tma_stream.cu"


def need(static: int, per_sm: int) -> int:
    """Shared memory ``per_sm`` CTAs hold on an SM: dynamic + static + the 1 KiB reserved each."""
    return per_sm * (R.smem_for(per_sm) + static + R.SMEM_RESERVED)


@pytest.mark.parametrize("per_sm", [2, 3, 4, 6, 8])
def test_each_row_fits_exactly_its_ctas_per_sm(per_sm):
    assert need(R.STATIC_SMEM, per_sm) <= R.SMEM_PER_SM
    assert (per_sm + 1) * (R.smem_for(per_sm) + R.STATIC_SMEM + R.SMEM_RESERVED) > R.SMEM_PER_SM  # and no more


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (CUDA toolkit) to read ptxas's shared-memory count")
def test_the_static_shared_memory_counted_covers_what_ptxas_allocates(tmp_path):
    out = subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                          str(SOURCE)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    used = [int(b) for b in re.findall(r"(\d+) bytes smem", out.stderr)]
    assert len(used) == 2  # tma_stream and tma_stream_2d
    assert max(used) <= R.STATIC_SMEM
