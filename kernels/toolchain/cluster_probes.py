"""Build the cluster timing probes (:mod:`kernels.tirx.cluster_probes`) on the CPU and write
the folder the GPU machine needs.

    python -m kernels.toolchain.cluster_probes --bundle .gpu/cluster_probes [--no-runtime]
    python -m kernels.toolchain.cluster_probes --cuda-out DIR     # the generated CUDA, for tests

Bundle layout: ``probes/<name>.so``, ``manifest.json`` (name, kind, cluster, n, params,
spins, file), and, as in :mod:`kernels.toolchain.build`, tvm trimmed to its runtime
(``tvm/``) and the ``apache-tvm-ffi`` cp312 wheel (``wheels/``).  Run it with
:mod:`kernels.runner.cluster_probes`.  The build itself is
:mod:`kernels.toolchain.probe_bundle`'s, shared with the mbarrier probes.
"""

from __future__ import annotations

import dataclasses
import sys

from .. import cluster_probes as C
from . import probe_bundle as B
from .probe_bundle import ROOT

SOURCES = (ROOT / "kernels" / "tirx" / "cluster_probes.py", ROOT / "kernels" / "cluster_probes.py")
FAMILY = B.Family(kind="cluster_probes", label="cluster probe", bundle=".gpu/cluster_probes", sources=SOURCES,
                  kernels="kernels.tirx.cluster_probes", probes=C.PROBES, entry=dataclasses.asdict)
DEFAULT_CACHE = FAMILY.cache
cuda_source = FAMILY.cuda_source  # (name) -> the probe's generated CUDA; the caller has the stub libcuda loaded
build_bundle = FAMILY.build_bundle  # (bundle, cache, workers, only=None, runtime=True, log=print) -> summary


def main(argv: list[str] | None = None) -> int:
    return FAMILY.main(__doc__, argv, cuda_out=True)


if __name__ == "__main__":
    sys.exit(main())
