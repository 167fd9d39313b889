"""Q1: obtain the PrimFuncs of seed v4 and hopper v4 without compiling; dump scripts."""
import sys, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from protosim.config import GemmConfig
t=time.perf_counter()
from kernels.tirx.seed_sm100 import SEED_STEPS
from kernels.tirx import hopper
from kernels.spec import KernelSpec
print("import", time.perf_counter()-t)

def seed(step="v4", **kw):
    cfg = GemmConfig(**{"M":256,"N":256,"K":256, **kw})
    return SEED_STEPS[step](cfg)

def hop(step="v4", trace=False, **kw):
    cfg = GemmConfig(**{"M":256,"N":256,"K":256,"arch":"h200", **kw})
    return hopper.build(KernelSpec(step, cfg, trace))

if __name__ == "__main__":
    for name, f in (("seed_v4", lambda: seed("v4")), ("hopper_v4", lambda: hop("v4"))):
        t=time.perf_counter(); fn=f(); dt=time.perf_counter()-t
        print(name, type(fn), "built in %.2fs" % dt)
        print(" params", [str(p) for p in fn.params], "attrs", fn.attrs)
        print(" body type", type(fn.body).__name__)
        s = fn.script()
        open(f"/tmp/{name}.parsed.py","w").write(s)
        print(" script lines", s.count("\n"))
