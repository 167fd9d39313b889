"""What the Triton microbenchmark runners (``atomic_rate``, ``hbm_mix``, ``gemv_parts``) share:
their command line (``--out`` JSON lines, appended; ``--commit`` the tree that runs) and the
environment each record row carries (GPU, torch, Triton, CUDA, commit)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLOCK_HZ = 1.98e9
"""The H200's SM clock under these runs (nvidia-smi: 1980 MHz): what rates per cycle divide by."""


def arguments(doc: str, argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="JSON lines, appended to")
    ap.add_argument("--commit", default="unknown", help="the commit of the tree that runs (it goes in every row)")
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    return args


def environment(commit: str):
    """(torch, triton, the fields every row starts with); the repository on ``sys.path`` so that
    the runner can import its kernel from ``kernels.microbench``."""
    import torch
    import triton

    sys.path.insert(0, str(ROOT))
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda, "commit": commit}
    return torch, triton, env
