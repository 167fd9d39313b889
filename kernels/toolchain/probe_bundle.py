"""What the probe families' CPU builds share (:mod:`kernels.toolchain.mbar_probes`,
:mod:`kernels.toolchain.cluster_probes`): each family is a :class:`Family` record, and this
record's methods fingerprint its sources, compile its probes (cached by fingerprint, in a
process pool) and write its bundle: ``probes/<name>.so``, ``manifest.json`` and, as in
:mod:`kernels.toolchain.build`, tvm trimmed to its runtime (``tvm/``) and the
``apache-tvm-ffi`` cp312 wheel (``wheels/``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import build as kbuild
from . import compiler

ROOT = Path(__file__).resolve().parents[2]


def _compile(kernels: str, probe, label: str):
    build_kernel = importlib.import_module(kernels).build_kernel
    return compiler.compile_primfunc(build_kernel(probe), "sm_90a", label)


def _compile_one(kernels: str, probe, label: str, out: str) -> tuple[str, float]:
    """The pool's worker: plain arguments, so it pickles whatever the family record holds."""
    t = time.perf_counter()
    compiler.export(_compile(kernels, probe, label), Path(out), probe.name)
    return probe.name, time.perf_counter() - t


@dataclass(frozen=True)
class Family:
    kind: str
    """``manifest.json``'s kind; also the cache ``build/<kind>`` and the CLI ``kernels.toolchain.<kind>``."""
    label: str
    """What one probe is called in build logs and errors ("probe", "cluster probe")."""
    bundle: str
    """The default bundle folder, relative to the repository."""
    sources: tuple[Path, ...]
    """Hashed in this order, after the toolchain's fingerprint, into the cache key."""
    kernels: str
    """The module whose ``build_kernel(probe)`` gives the PrimFunc (imported only to compile: it needs tvm)."""
    probes: tuple
    """The probe records (each has a ``name``)."""
    entry: Callable[[Any], dict]
    """A probe's manifest entry, less ``so``."""

    @property
    def module(self) -> str:
        return f"kernels.toolchain.{self.kind}"

    @property
    def cache(self) -> Path:
        return ROOT / "build" / self.kind

    def probe(self, name: str):
        return {p.name: p for p in self.probes}[name]

    def fingerprint(self) -> str:
        h = hashlib.sha256(kbuild.toolchain_fingerprint().encode())
        for f in self.sources:
            h.update(f.read_bytes())
        return h.hexdigest()[:16]

    def cuda_source(self, name: str) -> str:
        """The generated CUDA of one probe (the caller has the stub libcuda on its loader path)."""
        return compiler.cuda_source(_compile(self.kernels, self.probe(name), f"{self.label} {name}"))

    def build_bundle(self, bundle: Path, cache: Path, workers: int, only: str | None = None, runtime: bool = True, log=print) -> dict:
        probes = [p for p in self.probes if not only or only in p.name]
        fp = self.fingerprint()
        paths = {p.name: cache / f"{p.name}-{fp}.so" for p in probes}
        missing = [p for p in probes if not paths[p.name].exists()]
        log(f"{len(probes)} {self.label}s, {len(probes) - len(missing)} cached, {len(missing)} to build ({workers} workers)")
        t = time.perf_counter()
        if missing:
            cache.mkdir(parents=True, exist_ok=True)
            todo = {f"{self.label} {p.name}": (self.kernels, p, f"{self.label} {p.name}", str(paths[p.name])) for p in missing}
            kbuild.compile_in_pool(_compile_one, todo, workers, log)
        folder = bundle / "probes"
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.so"):
            old.unlink()
        manifest = []
        for p in probes:
            (folder / f"{p.name}.so").write_bytes(paths[p.name].read_bytes())
            manifest.append({**self.entry(p), "so": f"probes/{p.name}.so"})
        (bundle / "manifest.json").write_text(json.dumps({"kind": self.kind, "fingerprint": fp, "probes": manifest}, indent=1))
        if runtime:  # the same runtime kernels.toolchain.build ships, so this folder is self-contained
            kbuild.trim_tvm(bundle / "tvm")
            kbuild.ffi_wheel(bundle / "wheels")
        total = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file())
        log(f"bundle {bundle}: {len(manifest)} probes{', tvm runtime + ffi wheel' if runtime else ''}; {total / 1e6:.1f} MB in all")
        return {"probes": len(manifest), "seconds": round(time.perf_counter() - t, 1), "bytes": total, "bundle": str(bundle)}

    def main(self, description: str, argv: list[str] | None = None, cuda_out: bool = False) -> int:
        """The family's CLI; ``cuda_out`` adds ``--cuda-out DIR`` (each probe's generated CUDA, for tests)."""
        ap = argparse.ArgumentParser(prog=f"python -m {self.module}", description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("--bundle", type=Path, default=ROOT / self.bundle)
        ap.add_argument("--cache", type=Path, default=self.cache)
        ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
        ap.add_argument("--only", help="only probes whose name contains this")
        ap.add_argument("--no-runtime", action="store_true", help="leave out tvm/ and wheels/ (carry another bundle's)")
        ap.add_argument("--json", action="store_true")
        if cuda_out:
            ap.add_argument("--cuda-out", type=Path, help="write each probe's generated CUDA to DIR/<name>.cu instead (tests read it)")
        args = ap.parse_args(argv)
        compiler.ensure_stub_on_path()  # re-executes this process once, before tvm is imported
        if cuda_out and args.cuda_out:
            args.cuda_out.mkdir(parents=True, exist_ok=True)
            for p in self.probes:
                if not args.only or args.only in p.name:
                    (args.cuda_out / f"{p.name}.cu").write_text(self.cuda_source(p.name))
            return 0
        log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
        try:
            summary = self.build_bundle(args.bundle, args.cache, max(1, args.jobs), args.only, not args.no_runtime, log)
        except compiler.BuildError as exc:
            print(f"{self.module}: {exc}", file=sys.stderr)
            return 2
        print(json.dumps(summary) if args.json else f"done in {summary['seconds']} s")
        return 0
