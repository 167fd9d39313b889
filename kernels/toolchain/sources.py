"""Build kernels in child processes and hand back their generated CUDA sources.

Tests and reviewers read the CUDA a kernel lowers to.  A build needs the stub
``libcuda.so.1`` on ``LD_LIBRARY_PATH`` at process start (compiler.py), which
the caller (pytest, say) may not have, so builds run in children started with
:func:`kernels.toolchain.compiler.env_for_subprocess`.

A job is ``{"family": "seed" | "book" | "hopper", "step": ..., "config": {...}, "trace": bool}``:
``seed`` is the article's Blackwell steps for sm_100a, ``book`` the book's later steps
(``v7``..``v9``, kernels/tirx/book.py) for sm_100a, ``hopper`` the sm_90a protocol kernels; ``{"family": "probe", "probe": name}`` is one of the mbarrier
probes (kernels/tirx/mbar_probes.py).  A failed build yields ``"ERROR: <tvm's message>"`` for that key.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import traceback
from pathlib import Path

from .compiler import env_for_subprocess

ROOT = Path(__file__).resolve().parents[2]
ERROR = "ERROR: "


def _build_one(job: dict) -> str:
    if job["family"] == "probe":
        from .mbar_probes import cuda_source as probe_source

        return probe_source(job["probe"])
    from protosim.config import GemmConfig

    from .compiler import compile_primfunc, cuda_source

    cfg = GemmConfig.from_dict(job["config"])
    if job["family"] == "seed":
        from ..tirx.seed_sm100 import SEED_STEPS

        return cuda_source(compile_primfunc(SEED_STEPS[job["step"]](cfg), "sm_100a", f"seed {job['step']}"))
    if job["family"] == "book":
        from ..tirx.book import book_step

        return cuda_source(compile_primfunc(book_step(job["step"])(cfg), "sm_100a", f"book {job['step']}"))
    from ..tirx import hopper

    spec = hopper.KernelSpec(job["step"], cfg, job.get("trace", False))
    return cuda_source(compile_primfunc(hopper.build(spec), "sm_90a", spec.name))


def _child(jobs: dict[str, dict], out: Path) -> None:
    for key, job in jobs.items():
        t = time.perf_counter()
        try:
            (out / f"{key}.cu").write_text(_build_one(job))
            (out / f"{key}.json").write_text(json.dumps({"seconds": time.perf_counter() - t}))
        except Exception as exc:  # noqa: BLE001  (record tvm's reason for this key and go on with the rest)
            msg = f"{type(exc).__name__}: {exc}"
            if len(msg) > 6000:  # tvm appends a dump of the script: keep the reason and the end
                msg = msg[:4500] + "\n[...]\n" + msg[-1500:]
            (out / f"{key}.err").write_text(msg + "\n" + "".join(traceback.format_tb(exc.__traceback__)[-3:]))


def build_in_children(jobs: dict[str, dict], out: Path, workers: int = 2, timeout: float = 3600) -> dict[str, str]:
    """key -> CUDA source (or ``ERROR: ...``), built by ``workers`` children."""
    out.mkdir(parents=True, exist_ok=True)
    keys = list(jobs)
    shares = [keys[i::workers] for i in range(workers) if keys[i::workers]]
    env = env_for_subprocess()
    procs = [
        subprocess.Popen([sys.executable, "-m", "kernels.toolchain.sources", json.dumps({k: jobs[k] for k in share}), str(out)],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for share in shares
    ]
    logs = [p.communicate(timeout=timeout)[0] for p in procs]
    result = {}
    for key in keys:
        cu, err = out / f"{key}.cu", out / f"{key}.err"
        if cu.exists():
            result[key] = cu.read_text()
        elif err.exists():
            result[key] = ERROR + err.read_text()
        else:
            result[key] = ERROR + "the build child wrote nothing; its output:\n" + "\n".join(logs)[-6000:]
    return result


if __name__ == "__main__":
    _child(json.loads(sys.argv[1]), Path(sys.argv[2]))
