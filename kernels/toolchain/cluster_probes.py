"""Build the cluster timing probes (:mod:`kernels.tirx.cluster_probes`) on the CPU and write
the folder the GPU machine needs.

    python -m kernels.toolchain.cluster_probes --bundle .gpu/cluster_probes [--no-runtime]
    python -m kernels.toolchain.cluster_probes --cuda-out DIR     # the generated CUDA, for tests

Bundle layout: ``probes/<name>.so``, ``manifest.json`` (name, kind, cluster, n, params,
spins, file), and, as in :mod:`kernels.toolchain.build`, tvm trimmed to its runtime
(``tvm/``) and the ``apache-tvm-ffi`` cp312 wheel (``wheels/``).  Run it with
:mod:`kernels.runner.cluster_probes`.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from .. import cluster_probes as C
from . import build as kbuild
from . import compiler

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = ROOT / "build" / "cluster_probes"
SOURCES = (ROOT / "kernels" / "tirx" / "cluster_probes.py", ROOT / "kernels" / "cluster_probes.py")


def _fingerprint() -> str:
    h = hashlib.sha256(kbuild.toolchain_fingerprint().encode())
    for f in SOURCES:
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _compile(name: str):
    from kernels.tirx.cluster_probes import build_kernel

    return compiler.compile_primfunc(build_kernel(C.BY_NAME[name]), "sm_90a", f"cluster probe {name}")


def _compile_one(name: str, out: str) -> tuple[str, float]:
    t = time.perf_counter()
    compiler.export(_compile(name), Path(out), name)
    return name, time.perf_counter() - t


def cuda_source(name: str) -> str:
    """The generated CUDA of one probe (the caller has the stub libcuda on its loader path)."""
    return compiler.cuda_source(_compile(name))


def build_bundle(bundle: Path, cache: Path, workers: int, only: str | None = None, runtime: bool = True, log=print) -> dict:
    probes = [p for p in C.PROBES if not only or only in p.name]
    fp = _fingerprint()
    paths = {p.name: cache / f"{p.name}-{fp}.so" for p in probes}
    missing = [n for n, path in paths.items() if not path.exists()]
    log(f"{len(probes)} cluster probes, {len(probes) - len(missing)} cached, {len(missing)} to build ({workers} workers)")
    t = time.perf_counter()
    if missing:
        cache.mkdir(parents=True, exist_ok=True)
        kbuild.compile_in_pool(_compile_one, {f"cluster probe {n}": (n, str(paths[n])) for n in missing}, workers, log)
    folder = bundle / "probes"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.so"):
        old.unlink()
    manifest = []
    for p in probes:
        (folder / f"{p.name}.so").write_bytes(paths[p.name].read_bytes())
        manifest.append({**dataclasses.asdict(p), "so": f"probes/{p.name}.so"})
    (bundle / "manifest.json").write_text(json.dumps({"kind": "cluster_probes", "fingerprint": fp, "probes": manifest}, indent=1))
    if runtime:
        kbuild.trim_tvm(bundle / "tvm")
        kbuild.ffi_wheel(bundle / "wheels")
    total = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file())
    log(f"bundle {bundle}: {len(manifest)} probes{', tvm runtime + ffi wheel' if runtime else ''}; {total / 1e6:.1f} MB in all")
    return {"probes": len(manifest), "seconds": round(time.perf_counter() - t, 1), "bytes": total, "bundle": str(bundle)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.toolchain.cluster_probes", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path, default=ROOT / ".gpu" / "cluster_probes")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", help="only probes whose name contains this")
    ap.add_argument("--no-runtime", action="store_true", help="leave out tvm/ and wheels/ (carry another bundle's)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cuda-out", type=Path, help="write each probe's generated CUDA to DIR/<name>.cu instead (tests read it)")
    args = ap.parse_args(argv)
    compiler.ensure_stub_on_path()  # re-executes this process once, before tvm is imported
    if args.cuda_out:
        args.cuda_out.mkdir(parents=True, exist_ok=True)
        for p in C.PROBES:
            if not args.only or args.only in p.name:
                (args.cuda_out / f"{p.name}.cu").write_text(cuda_source(p.name))
        return 0
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    try:
        summary = build_bundle(args.bundle, args.cache, max(1, args.jobs), args.only, not args.no_runtime, log)
    except compiler.BuildError as exc:
        print(f"kernels.toolchain.cluster_probes: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary) if args.json else f"done in {summary['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
