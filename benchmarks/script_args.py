"""What the benchmarks that take one GEMM config apart (memory_by_stage.py, lockstep_share.py)
share: ``--arch`` / ``--shape`` / ``--step`` with their defaults and usage errors, and
``--json`` / ``--no-record`` / ``--note`` with the record each run appends to results/bench/."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from benchmarks.bench import ROOT, _git, machine, versions

T = TypeVar("T")


def add_gemm_args(ap: argparse.ArgumentParser, shape: str = "4096,4096,4096", what: str = "the full chip") -> None:
    ap.add_argument("--arch", default="h200", help="architecture profile (default h200)")
    ap.add_argument("--shape", default=shape, help=f"M,N,K (default {shape}: {what})")
    ap.add_argument("--step", default="hgemm_v6", help="a GEMM builder, hgemm_v1 .. hgemm_v9 or hgemm_ws (default hgemm_v6)")


def with_gemm_config(ap: argparse.ArgumentParser, args: argparse.Namespace,
                     work: Callable[[str, str, tuple[int, int, int]], T]) -> T:
    """``work(step, arch, shape)`` for the config the flags name.  A bad one is ``ap.error``
    (one usage line, exit 2): an unknown arch or step, a malformed shape, or a config the
    step refuses -- the config's own validation, or the builder's (raised inside ``work``)."""
    from protosim.arch import available
    from protosim.builders import BUILDERS
    from protosim.config import ConfigError, GemmConfig

    if args.arch not in available():
        ap.error(f"--arch {args.arch}: one of {', '.join(available())}")
    gemm_steps = sorted(name for name in BUILDERS if name.startswith("hgemm_"))  # the builders of a GemmConfig
    if args.step not in gemm_steps:
        ap.error(f"--step {args.step}: one of {', '.join(gemm_steps)}")
    try:
        shape = tuple(int(x) for x in args.shape.split(","))
        if len(shape) != 3 or min(shape) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--shape {args.shape!r}: give M,N,K, three positive integers")
    try:
        GemmConfig(M=shape[0], N=shape[1], K=shape[2], arch=args.arch).validate()
        return work(args.step, args.arch, shape)
    except ConfigError as e:  # the shape, or a step the arch lacks (hgemm_v7-9 are sm_100a kernels)
        ap.error(f"--step {args.step} --arch {args.arch} --shape {args.shape}: {e}")


def add_record_args(ap: argparse.ArgumentParser, record: Path) -> None:
    ap.add_argument("--json", action="store_true", help="print the record as JSON instead of tables")
    ap.add_argument("--no-record", action="store_true", help=f"do not append to {record.relative_to(ROOT)}")
    ap.add_argument("--note", default="", help="a note stored with the record")


def print_and_record(args: argparse.Namespace, record: Path, fields: dict, text: str) -> None:
    """Print the run (``text``, or the record as JSON with ``--json``) and append its record --
    date, commit, whether the tree had uncommitted changes, machine, versions, note, ``fields``
    -- to ``record`` unless ``--no-record``."""
    out = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": _git("rev-parse", "HEAD"),
           "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
           "machine": machine(), "versions": versions(), "note": args.note, **fields}
    print(json.dumps(out, indent=1) if args.json else text)
    if not args.no_record:
        record.parent.mkdir(parents=True, exist_ok=True)
        with record.open("a") as f:
            f.write(json.dumps(out) + "\n")
        print(f"(appended to {record.relative_to(ROOT)})", file=sys.stderr)
