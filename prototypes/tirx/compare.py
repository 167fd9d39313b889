"""Kind sequence of the walker (warp 0, CTA 0) against the hand-written builder's CTA 0 ops."""
import sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent)); sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
import walk
from get_funcs import seed, hop
from protosim.config import GemmConfig
from protosim.builders.seed_gemm import BUILDERS

MAP = {"mbar_init": "mbar_init", "tmem_alloc": "tmem_alloc", "fence": "fence", "cta_sync": "cta_sync",
       "arrive_expect_tx": "arrive_expect_tx", "wait": "wait", "mma_commit": "mma_commit", "arrive": "arrive",
       "wait_ld": "wait_ld", "named_bar_sync": "named_bar_sync", "bulk_commit": "bulk_commit", "bulk_wait": "bulk_wait",
       "tmem_dealloc": "tmem_dealloc", "wgmma_commit": "wgmma_commit", "wgmma_wait": "wgmma_wait", "tma_store": "tma_store", "tma_load": "tma_load"}

def walker_kinds(fn, launch):
    out, _ = walk.walk(fn, launch, verbose=False)
    ops = out[0][0]
    ks = []
    for kind, who, info, loc in ops:
        if kind == "tile.copy_async":
            k = "tma_load" if info.get("mbar") else ("tma_store" if info["args"][0].startswith("'D[") else "tmem_load")
        elif kind == "tile.gemm_async": k = "mma"
        elif kind == "tile.copy": k = "smem_store"
        elif kind == "wgmma": k = "wgmma"
        elif kind in ("desc", "wgmma_fence", "tmem_relinquish"): continue
        else: k = MAP.get(kind, kind)
        if ks and ks[-1] == k and k in ("wgmma", "smem_store"): continue  # one op per run
        ks.append(k)
    return ks

def builder_kinds(name, cfg):
    s = BUILDERS[name](cfg)
    ops = s.ctas[0].roles[0] if hasattr(s.ctas[0], "roles") else s.ctas[0].programs[0]
    return [o.kind for o in ops]

for step, arch in (("v4", "b200"), ("v4", "h200"), ("v5", "h200")):
    cfg = GemmConfig(M=256, N=256, K=256, arch=arch, PIPE_DEPTH=2)
    fn = seed(step, PIPE_DEPTH=2) if arch == "b200" else hop(step, PIPE_DEPTH=2)
    w = walker_kinds(fn, {} if arch == "b200" else walk.HOPPER_LAUNCH)
    try:
        b = builder_kinds(f"hgemm_{step}", cfg)
    except Exception as e:
        print("builder:", type(e).__name__, e); continue
    print(f"== {step} {arch}: walker {len(w)} kinds, builder {len(b)} kinds")
    print("  walker :", " ".join(w))
    print("  builder:", " ".join(b))
