"""Q4 evidence: cost of the naive tree-walking interpreter on a 4096^3 kernel (one CTA), and with data args skipped."""
import sys, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import walk
from get_funcs import hop, seed
t = time.perf_counter(); fn = hop("v6", M=4096, N=4096, K=4096, PIPE_DEPTH=4, sm_count=132); print("build PrimFunc 4096^3 v6: %.2fs" % (time.perf_counter() - t))
out, dt = walk.walk(fn, walk.HOPPER_LAUNCH, verbose=False)
print("naive: CTA 0 of 132, %d warps, ops per warp %s, %.2fs" % (len(out), [len(o[0]) for o in out.values()], dt))
# skip data-only evaluation: wgmma accumulator operands and values stored to shared memory
orig = walk.WarpInterp.s_Evaluate
def fast_eval(self, st):
    v = st.value
    if type(v).__name__ == "Call" and v.op.name == "tirx.ptx.wgmma_f16_ss":
        return self.emit("wgmma", st, {})
    return orig(self, st)
walk.WarpInterp.s_Evaluate = fast_eval
def fast_store(self, st):
    b = st.buffer
    if b not in self.local:
        sc = b.scope()
        if sc == "local":
            return
        return self.emit("smem_store" if sc.startswith("shared") else "global_store", st, {"buf": b.name})
    return walk.WarpInterp._orig_store(self, st)
walk.WarpInterp._orig_store = walk.WarpInterp.s_BufferStore
walk.WarpInterp.s_BufferStore = fast_store
out, dt = walk.walk(fn, walk.HOPPER_LAUNCH, verbose=False)
print("data args skipped: %.2fs per CTA -> x132 CTAs = %.0fs" % (dt, dt * 132))
fn = seed("v6", M=4096, N=4096, K=4096, PIPE_DEPTH=4, sm_count=148)
out, dt = walk.walk(fn, {}, verbose=False)
print("seed v6 4096^3: CTA 0 of 148, ops per warp %s, %.2fs per CTA -> x148 = %.0fs" % ([len(o[0]) for o in out.values()], dt, dt * 148))
