"""Build the mbarrier probe kernels (:mod:`kernels.tirx.mbar_probes`) on the CPU and write
the folder the GPU machine needs.

    python -m kernels.toolchain.mbar_probes --bundle .gpu/probes

Bundle layout: ``probes/<name>.so``, ``manifest.json`` (name, rule, ops, words, file),
and, as in :mod:`kernels.toolchain.build`, tvm trimmed to its runtime (``tvm/``) and the
``apache-tvm-ffi`` cp312 wheel (``wheels/``).  Run it with :mod:`kernels.runner.mbar_probes`.
The build itself is :mod:`kernels.toolchain.probe_bundle`'s, shared with the cluster probes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from protosim.ptx import probes as P

from . import probe_bundle as B
from .probe_bundle import ROOT

KERNELS = ROOT / "kernels" / "tirx" / "mbar_probes.py"


def _entry(p: P.Probe) -> dict:
    return {"name": p.name, "rule": p.rule, "ops": [list(op) for op in p.ops], "words": P.n_words(p.ops),
            "may_fault": P.predict(p.ops)["outcome"] == "fault"}


FAMILY = B.Family(kind="mbar_probes", label="probe", bundle=".gpu/probes", sources=(KERNELS, Path(P.__file__)),
                  kernels="kernels.tirx.mbar_probes", probes=P.PROBES, entry=_entry)
DEFAULT_CACHE = FAMILY.cache
cuda_source = FAMILY.cuda_source  # (name) -> the probe's generated CUDA; the caller has the stub libcuda loaded
build_bundle = FAMILY.build_bundle  # (bundle, cache, workers, only=None, runtime=True, log=print) -> summary


def main(argv: list[str] | None = None) -> int:
    return FAMILY.main(__doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
