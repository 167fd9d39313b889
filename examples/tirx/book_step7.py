"""Check a TIRx kernel with protosim: the book's step 7 (warp-specialized Blackwell GEMM).

``kernel(...)`` returns the uncompiled ``@T.prim_func`` of ``kernels/tirx/ws_sm100.py`` for
the sizes and knobs given; protosim interprets it per CTA and judges the protocol::

    protosim run examples/tirx/book_step7.py:kernel --set M=256 --set N=256 --set K=512
    protosim run examples/tirx/book_step7.py:kernel --set expect_tx_delta=-1024   # a seeded bug
    protosim explain examples/tirx/book_step7.py:kernel --set wait_parity_flip=tma

Your own kernel works the same way: a module-level ``@T.prim_func`` (``file.py:NAME``), or a
function returning one whose parameters ``--set`` fills (docs/tirx.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, where kernels/ lives

from kernels.tirx.ws_sm100 import ws_step7  # noqa: E402
from protosim.config import GemmConfig  # noqa: E402


def kernel(M: int = 256, N: int = 256, K: int = 512, PIPE_DEPTH: int = 2, sm_count: int = 2,
           expect_tx_delta: int = 0, wait_parity_flip: str = "", skip_mma_phase_flip: bool = False,
           skip_store_wait: bool = False, reset_phase_per_tile: bool = False):
    return ws_step7(GemmConfig(M=M, N=N, K=K, PIPE_DEPTH=PIPE_DEPTH, sm_count=sm_count, expect_tx_delta=expect_tx_delta,
                               wait_parity_flip=wait_parity_flip, skip_mma_phase_flip=skip_mma_phase_flip,
                               skip_store_wait=skip_store_wait, reset_phase_per_tile=reset_phase_per_tile))
