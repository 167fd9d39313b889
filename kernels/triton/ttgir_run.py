"""Compile TTGIR files with Triton and run them on the GPU: Triton's own pipeline and
the seeded edits the simulator judges (tests/test_ttgir.py), so silicon can say what
each edit does.  One JSON line per launch.

    python -m kernels.triton.ttgir_run --results FILE.jsonl [--launches 10]

The kernels are the second seed's matmul compiled by Triton 3.6 for sm_90
(tests/fixtures/triton/grid_512_k512_s3.sm90.ttgir: 64 CTAs, K = 512, num_stages 3).
Edits change one line of the TTGIR text; Triton then lowers the edited IR as it would
its own.  An edit the GPU shows nothing for is recorded as such.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "triton" / "grid_512_k512_s3.sm90.ttgir"
EDITS = {
    "triton_own": [],
    "async_wait_plus_1": [("%a_92 = ttg.async_wait %a_83, %b_85 {num = 2 : i32}", "%a_92 = ttg.async_wait %a_83, %b_85 {num = 3 : i32}")],
    "async_wait_plus_2": [("%a_92 = ttg.async_wait %a_83, %b_85 {num = 2 : i32}", "%a_92 = ttg.async_wait %a_83, %b_85 {num = 4 : i32}")],
    "wgmma_pendings_plus_1": [("%b_94 {pendings = 1 : i32}", "%b_94 {pendings = 2 : i32}")],
    "copy_aliased_onto_read_stage": [("%a_108 = ttg.memdesc_index %a[%acc_101]", "%a_108 = ttg.memdesc_index %a[%acc_91]"),
                                     ("%b_116 = ttg.memdesc_index %b[%acc_101]", "%b_116 = ttg.memdesc_index %b[%acc_91]")],
}
M = N = K = 512


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
    args = ap.parse_args()
    import torch
    import triton

    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda, "commit": args.commit, "fixture": FIXTURE.name}
    base = FIXTURE.read_text()
    tmp = Path(tempfile.mkdtemp())
    with args.results.open("a") as f:
        for name, edits in EDITS.items():
            text = base
            for old, new in edits:
                if old not in text:
                    raise SystemExit(f"{name}: the fixture no longer has {old!r}")
                text = text.replace(old, new)
            path = tmp / f"{name}.ttgir"
            path.write_text(text)
            rec0 = {"schema": 1, **env, "kind": "triton_ttgir", "name": name, "edits": edits}
            try:
                kernel = triton.compile(str(path))
            except Exception as exc:  # noqa: BLE001  (Triton refused the edited IR: that is the result)
                f.write(json.dumps({**rec0, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "launch": 0,
                                    "outcome": "compile_error", "error": f"{type(exc).__name__}: {str(exc)[:400]}"}) + "\n")
                continue
            for i in range(args.launches):
                g = torch.Generator(device="cuda").manual_seed(2000 + i)
                a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
                b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
                c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
                rec = {**rec0, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "launch": i}
                try:
                    kernel[(M // 64, N // 64, 1)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
                    torch.cuda.synchronize()
                    ref = a.float() @ b.float()
                    tiles = ((c.float() - ref).abs().reshape(M // 64, 64, N // 64, 64).amax(dim=(1, 3))
                             / ref.abs().reshape(M // 64, 64, N // 64, 64).amax(dim=(1, 3)))
                    tiles = torch.nan_to_num(tiles, nan=float("inf"))
                    bad = int((tiles > 1e-2).sum())
                    rec.update(outcome="wrong" if bad else "correct", wrong_tiles=bad, tiles=tiles.numel(),
                               max_rel_err=float(tiles.max()) if bad == 0 else "see wrong_tiles")
                except Exception as exc:  # noqa: BLE001  (a fault poisons the context: stop this variant)
                    rec.update(outcome="fault", error=f"{type(exc).__name__}: {str(exc)[:300]}")
                    f.write(json.dumps(rec) + "\n")
                    f.flush()
                    return 3
                f.write(json.dumps(rec) + "\n")
                f.flush()
            print(name, "done", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
