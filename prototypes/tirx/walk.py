"""Q3 prototype: a SIMT interpreter over the *parsed* TIRx PrimFunc (IR level (a)).

One warp at a time, 32 lanes as numpy vectors with an active mask: guards on tid / lane /
elect_sync become lane masks, warp-uniform values stay Python ints.  Loops run with concrete
trip counts; ``while`` runs until no active lane's condition holds (lanes drop out).

Waits: ``mbarrier.try_wait`` writes 1 into its result (the optimistic oracle: the schedule's
Wait is blocking, the engine decides when it returns), so the kernels' bounded-wait loop
(first probe, clock64 deadline, diag record, abort poll) collapses to one wait; the dead
timeout branch is never entered.  ``T.cuda.mbarrier_wait`` is one wait.

Prints, per warp of CTA 0, the protocol ops with evaluated arguments and who issues them
(``all`` = 32 lanes, ``lane0`` = one lane, ...).  Unknown calls raise with the source line.

    python walk.py              # hopper v4 and seed v4, M=N=K=256, CTA 0
    python walk.py --all        # also every other step (v2..v6, ws; seed v1..v6)
"""

from __future__ import annotations

import collections
import sys
import time

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))

WARP = 32
LANES = np.arange(WARP)


class Unsupported(Exception):
    pass


class Opaque:
    """A value the interpreter does not compute (clock64, atomics, float data, tensormaps)."""

    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return f"<{self.what}>"


class Addr:
    """``address_of(buf[idx])``: a buffer element, the identity of an mbarrier or a tile base."""

    def __init__(self, buf, idx):
        self.buf, self.idx = buf, idx

    def __repr__(self):
        return f"&{self.buf}[{','.join(map(str, self.idx))}]"


def uniform(v, what, node=None):
    """A warp-uniform value, or raise (a lane-divergent trip count / barrier index / ...)."""
    if isinstance(v, np.ndarray):
        if (v == v[0]).all():
            return v[0].item()
        raise Unsupported(f"lane-divergent {what}: {v.tolist()[:8]}... at {where(node)}")
    return v


def where(node):
    sp = getattr(node, "span", None) if node is not None else None
    if sp is None:
        return "?"
    if type(sp).__name__ == "SequentialSpan":  # an inlined macro: call site + body lines
        return "+".join(where_span(x) for x in sp.spans)
    return where_span(sp)


def where_span(sp):
    return f"{str(sp.source_name.name).split('/')[-1]}:{sp.line}"


def show(v):
    if isinstance(v, np.ndarray):
        u = np.unique(v)
        return str(u[0].item()) if len(u) == 1 else f"lanes{v.tolist()}"
    if isinstance(v, (np.integer, np.bool_)):
        return str(v.item())
    return repr(v)


# ------------------------------------------------------------------ protocol calls
# Call op name -> protocol kind.  None: pure / no protocol effect (still "known").
PROTOCOL = {
    "tirx.ptx.mbarrier_init": "mbar_init",
    "tirx.ptx.mbarrier_arrive_expect_tx": "arrive_expect_tx",
    "tirx.ptx.mbarrier_expect_tx": "expect_tx",
    "tirx.ptx.mbarrier_arrive_nocount": "arrive",
    "tirx.ptx.mbarrier_arrive": "arrive",
    "tirx.ptx.mbarrier_try_wait_parity_no_hint": "try_wait",
    "tirx.ptx.mbarrier_try_wait_parity": "try_wait",
    "tirx.ptx.mbarrier_test_wait_parity": "try_wait",
    "tirx.cuda.mbarrier_wait": "wait",
    "tirx.ptx.cp_async_bulk_tensor_g2s_cluster": "tma_load",
    "tirx.ptx.cp_async_bulk_tensor_g2s": "tma_load",
    "tirx.ptx.cp_async_bulk_tensor_s2g": "tma_store",
    "tirx.ptx.cp_async_bulk_commit_group": "bulk_commit",
    "tirx.ptx.cp_async_bulk_wait_group": "bulk_wait",
    "tirx.ptx.fence_proxy": "fence",
    "tirx.ptx.fence_mbarrier_init": "fence",
    "tirx.ptx.tcgen05_fence": "fence",
    "tirx.cuda.cta_sync": "cta_sync",
    "tirx.cuda.warpgroup_sync": "named_bar_sync",
    "tirx.cuda.nano_sleep": "sleep",
    "tirx.ptx.wgmma_fence": "wgmma_fence",
    "tirx.ptx.wgmma_f16_ss": "wgmma",
    "tirx.ptx.wgmma_commit_group": "wgmma_commit",
    "tirx.ptx.wgmma_wait_group": "wgmma_wait",
    "tirx.ptx.tcgen05_alloc": "tmem_alloc",
    "tirx.ptx.tcgen05_dealloc": "tmem_dealloc",
    "tirx.ptx.tcgen05_relinquish_alloc_permit": "tmem_relinquish",
    "tirx.ptx.tcgen05_commit": "mma_commit",
    "tirx.ptx.tcgen05_wait": "wait_ld",
    "tirx.cuda.wgmma_encode_matrix_descriptor": "desc",  # operand address of the next wgmma
    "tirx.tvm_call_packed": None,  # host: cuTensorMapEncodeTiled
}
TILE = {"tirx.tile.copy_async", "tirx.tile.gemm_async", "tirx.tile.copy", "tirx.tile.cast"}


class WarpInterp:
    def __init__(self, fn, cta, warp, launch, n_warps_hint=None):
        self.fn, self.cta, self.warp, self.launch = fn, cta, warp, launch
        self.env = {}
        self.local = {}  # buffer var -> np.ndarray (WARP, size), int64, per lane
        self.ops = []
        self.unknown = collections.Counter()
        self.notes = collections.Counter()
        self.steps = 0
        for p in fn.params:
            name = p.name
            if name in launch:
                self.env[p] = launch[name]
            else:
                self.env[p] = Opaque(f"param {name}")

    # ------------------------------------------------------------- expressions
    def ev(self, e):
        if isinstance(e, (bool, int, float, str)):
            return e
        t = type(e).__name__
        f = getattr(self, "e_" + t, None)
        if f is None:
            raise Unsupported(f"expression {t} ({e}) at {where(e)}")
        return f(e)

    def e_IntImm(self, e):
        return int(e.value)

    def e_FloatImm(self, e):
        return float(e.value)

    def e_StringImm(self, e):
        return e.value

    def e_Var(self, e):
        if e in self.env:
            return self.env[e]
        if e.name in ("tx", "threadIdx.x"):
            raise Unsupported(f"unbound var {e.name}")
        raise Unsupported(f"unbound var {e.name} at {where(e)}")

    def _bin(fn):
        def h(self, e):
            a, b = self.ev(e.a), self.ev(e.b)
            if isinstance(a, Opaque) or isinstance(b, Opaque):
                return Opaque(f"{type(e).__name__}({a},{b})")
            return fn(a, b)
        return h

    e_Add = _bin(lambda a, b: a + b)
    e_Sub = _bin(lambda a, b: a - b)
    e_Mul = _bin(lambda a, b: a * b)
    e_FloorDiv = _bin(lambda a, b: a // b)
    e_FloorMod = _bin(lambda a, b: a % b)
    e_Div = _bin(lambda a, b: a // b if isinstance(a, (int, np.ndarray)) else a / b)
    e_Mod = _bin(lambda a, b: a % b)
    e_Min = _bin(lambda a, b: np.minimum(a, b))
    e_Max = _bin(lambda a, b: np.maximum(a, b))
    e_EQ = _bin(lambda a, b: a == b)
    e_NE = _bin(lambda a, b: a != b)
    e_LT = _bin(lambda a, b: a < b)
    e_LE = _bin(lambda a, b: a <= b)
    e_GT = _bin(lambda a, b: a > b)
    e_GE = _bin(lambda a, b: a >= b)
    e_And = _bin(lambda a, b: np.logical_and(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a and b))
    e_Or = _bin(lambda a, b: np.logical_or(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a or b))
    e_BitwiseXor = _bin(lambda a, b: a ^ b)
    e_BitwiseAnd = _bin(lambda a, b: a & b)
    e_BitwiseOr = _bin(lambda a, b: a | b)
    e_LShift = _bin(lambda a, b: a << b)
    e_RShift = _bin(lambda a, b: a >> b)

    def e_Not(self, e):
        a = self.ev(e.a)
        return np.logical_not(a) if isinstance(a, np.ndarray) else (not a)

    def e_Cast(self, e):
        v = self.ev(e.value)
        if isinstance(v, (Opaque, Addr)):
            return v
        if str(e.ty).startswith(("int", "uint", "T.int", "T.uint")) or "int" in str(e.ty):
            return v.astype(np.int64) if isinstance(v, np.ndarray) else int(v)
        return v

    def e_Select(self, e):
        c, a, b = self.ev(e.condition), self.ev(e.true_value), self.ev(e.false_value)
        return np.where(c, a, b) if isinstance(c, np.ndarray) else (a if c else b)

    def e_TensorLoad(self, e):
        buf = e.source
        if buf in self.local:
            idx = self.flat(buf, [self.ev(i) for i in e.indices], e)
            return self.local[buf][:, idx].copy()
        self.notes[f"read of {buf.scope()} buffer {buf.name} (value not tracked)"] += 1
        return Opaque(f"{buf.name}[...]")

    def flat(self, buf, idx, node):
        idx = [uniform(i, f"index into {buf.name}", node) for i in idx]
        shape = [int(s) for s in buf.shape]
        f = 0
        for i, s in zip(idx, shape):
            f = f * s + i
        return f

    def e_Call(self, e):
        op = e.op.name
        if op == "tirx.address_of":
            (x,) = e.args
            if type(x).__name__ == "TensorLoad":
                return Addr(x.source.name, tuple(uniform(self.ev(i), "address index", e) for i in x.indices))
            return Addr(str(x), ())
        if op in ("tirx.cuda.cvta_generic_to_shared", "tirx.reinterpret"):
            return self.ev(e.args[-1])
        if op in ("tirx.if_then_else", "prim.if_then_else"):
            c = self.ev(e.args[0])
            a, b = self.ev(e.args[1]), self.ev(e.args[2])
            return np.where(c, a, b) if isinstance(c, np.ndarray) else (a if c else b)
        if op == "tirx.cuda.elect_sync":
            m = np.zeros(WARP, bool)
            act = np.flatnonzero(self.mask)
            if len(act):
                m[act[0]] = True
            return m
        if op == "tirx.cuda.clock64":
            self.notes["clock64 read (opaque)"] += 1
            return Opaque("clock64")
        if op == "tirx.cuda.atomic_add":
            self.notes["atomic_add (diag; opaque result)"] += 1
            return Opaque("atomic")
        if op in ("tirx.tvm_stack_alloca", "tirx.buffer_data"):
            return Opaque(op)
        raise Unsupported(f"call {op} in an expression at {where(e)}")

    # ------------------------------------------------------------- statements
    def run(self):
        self.mask = np.ones(WARP, bool)
        self.s(self.fn.body)
        return self.ops

    def s(self, st):
        self.steps += 1
        t = type(st).__name__
        f = getattr(self, "s_" + t, None)
        if f is None:
            raise Unsupported(f"statement {t} at {where(st)}")
        f(st)

    def s_SeqStmt(self, st):
        for x in st.seq:
            self.s(x)

    def s_AttrStmt(self, st):
        self.s(st.body)

    def s_Bind(self, st):
        self.env[st.var] = self.ev(st.value)

    def s_ScopeIdDefStmt(self, st):
        d = getattr(st, "def")
        ids, ext = list(d.def_ids), [int(x) for x in d.extents]
        tid = self.warp * WARP + LANES
        scope = d.scope
        if scope in (0, 1, 2):  # kernel/cluster -> cta: blockIdx, x fastest
            rem = self.cta
            for v, n in zip(ids, ext):
                self.env[v] = rem % n
                rem //= n
            return
        val = {3: self.warp // 4, 4: self.warp, 5: self.warp % 4, 6: LANES.copy(), 7: tid, 8: tid % 128}[scope]
        if len(ids) != 1:
            raise Unsupported(f"multi-dim scope id {ids} at {where(st)}")
        self.env[ids[0]] = val if not isinstance(val, np.ndarray) else val.astype(np.int64)

    def s_AllocBuffer(self, st):
        b = st.buffer
        if b.scope() == "local" and str(b.dtype).startswith(("int", "uint")):
            n = int(np.prod([int(x) for x in b.shape]))
            self.local[b] = np.zeros((WARP, n), np.int64)
        # shared pool / float registers: nothing to track

    def s_DeclBuffer(self, st):
        pass

    def s_BufferStore(self, st):
        b = st.buffer
        if b in self.local:
            v = self.ev(st.value)
            if isinstance(v, (Opaque, Addr)):
                self.notes[f"opaque value stored to local {b.name}"] += 1
                return
            idx = self.flat(b, [self.ev(i) for i in st.indices], st)
            self.local[b][:, idx] = np.where(self.mask, v, self.local[b][:, idx])
            return
        sc = b.scope()
        if sc == "local":
            return  # float registers (acc): data, not protocol
        # a thread store to shared or global memory
        self.emit("smem_store" if sc.startswith("shared") else "global_store", st, {"buf": b.name})

    def s_IfThenElse(self, st):
        c = self.ev(st.condition)
        if isinstance(c, Opaque):
            raise Unsupported(f"opaque condition {st.condition} at {where(st)}")
        saved = self.mask
        if isinstance(c, np.ndarray):
            then_m, else_m = saved & c.astype(bool), saved & ~c.astype(bool)
        else:
            then_m, else_m = (saved, saved & False) if c else (saved & False, saved)
        if then_m.any():
            self.mask = then_m
            self.s(st.then_case)
        if st.else_case is not None and else_m.any():
            self.mask = else_m
            self.s(st.else_case)
        self.mask = saved

    def s_For(self, st):
        lo = uniform(self.ev(st.min), "loop min", st)
        n = uniform(self.ev(st.extent), "trip count", st)
        for i in range(lo, lo + n):
            self.env[st.loop_var] = i
            self.s(st.body)

    def s_While(self, st):
        saved = self.mask
        it = 0
        while True:
            c = self.ev(st.condition)
            if isinstance(c, Opaque):
                raise Unsupported(f"opaque while condition at {where(st)}")
            m = self.mask & (c.astype(bool) if isinstance(c, np.ndarray) else bool(c))
            if not m.any():
                break
            self.mask = m
            self.s(st.body)
            it += 1
            if it > 100000:
                raise Unsupported(f"while loop did not terminate at {where(st)}")
        self.mask = saved

    def s_Evaluate(self, st):
        v = st.value
        if type(v).__name__ == "IntImm":
            return
        if type(v).__name__ != "Call":
            raise Unsupported(f"evaluate of {type(v).__name__} at {where(st)}")
        op = v.op.name
        if op not in PROTOCOL:
            self.unknown[op] += 1
            raise Unsupported(f"unknown call {op} at {where(st)}")
        kind = PROTOCOL[op]
        if kind is None:
            return
        args = [self.ev(a) for a in v.args if type(a).__name__ != "StringImm"]
        if kind == "try_wait":
            # args: result, barrier, parity -> one blocking wait; the result reads "done"
            res, bar, parity = v.args[0], args[1], args[2]
            if type(res).__name__ == "TensorLoad" and res.source in self.local:
                idx = self.flat(res.source, [self.ev(i) for i in res.indices], st)
                self.local[res.source][:, idx] = np.where(self.mask, 1, self.local[res.source][:, idx])
            self.emit("wait", st, {"bar": bar, "parity": parity, "form": "try_wait loop"})
            return
        info = {}
        if kind == "wait":
            info = {"bar": args[0], "parity": args[1], "form": "T.cuda.mbarrier_wait"}
        elif kind == "mbar_init":
            info = {"bar": args[0], "count": args[1]}
        elif kind in ("arrive", "mma_commit"):
            info = {"bar": args[0]}
        elif kind == "arrive_expect_tx":
            info = {"bar": args[0], "bytes": args[1]}
        elif kind == "tma_load":
            info = {"dst": args[0], "map": args[1], "coords": args[2:-1], "bar": args[-1]}
        elif kind == "tma_store":
            info = {"map": args[0], "coords": args[1:-1], "src": args[-1]}
        elif kind in ("bulk_wait", "wgmma_wait"):
            info = {"n": args[0]}
        elif kind == "named_bar_sync":
            info = {"id": args[0]}
        elif kind == "sleep":
            info = {"ns": args[0]}
        elif kind == "fence":
            info = {"which": ".".join(a.value for a in v.args if type(a).__name__ == "StringImm" and a.value)}
        elif kind == "desc":
            info = {"smem": args[1]}
        elif kind == "wgmma":
            info = {"shape": [a.value for a in v.args if type(a).__name__ == "StringImm"][3]}
        elif kind in ("tmem_alloc", "tmem_dealloc"):
            info = {"cols": args[-1]}
        self.emit(kind, st, info)

    def region(self, r):
        buf = r.source
        parts = []
        for rg in r.region:
            lo, ext = self.ev(rg.min), self.ev(rg.extent)
            parts.append(f"{show(lo)}:+{show(ext)}")
        return f"{buf.name}[{','.join(parts)}]"

    def s_TilePrimitiveCall(self, st):
        op = st.op.name
        if op not in TILE:
            raise Unsupported(f"tile primitive {op} at {where(st)}")
        regs = [self.region(a) if type(a).__name__ == "TensorRegion" else show(self.ev(a)) for a in st.args]
        cfg = {k: (self.ev(v) if hasattr(v, "dtype") or type(v).__name__ in ("Call", "IntImm") else v) for k, v in st.config.items()}
        if op == "tirx.tile.cast":
            return  # register conversion
        kind = {"tirx.tile.copy_async": "tile.copy_async", "tirx.tile.gemm_async": "tile.gemm_async",
                "tirx.tile.copy": "tile.copy"}[op]
        self.emit(kind, st, {"args": regs, "dispatch": st.dispatch, "scope": st.scope.name, **cfg})

    def emit(self, kind, st, info):
        act = np.flatnonzero(self.mask)
        who = "all" if len(act) == WARP else (f"lane{act[0]}" if len(act) == 1 else f"lanes{act.tolist()}")
        self.ops.append((kind, who, {k: show(v) if not isinstance(v, list) else [show(x) for x in v] for k, v in info.items()}, where(st)))


def runs(ops):
    """Run-length: consecutive ops equal in kind, issuer and arguments print once with a count."""
    out = []
    for o in ops:
        if out and out[-1][0][:3] == o[:3]:
            out[-1][1] += 1
        else:
            out.append([o, 1])
    return out


def threads_of(fn):
    """Threads per CTA from the ScopeIdDefStmts (thread_id extent, or 32 * warps * warpgroups)."""
    ext = {}

    def go(n):
        t = type(n).__name__
        if t == "ScopeIdDefStmt":
            d = getattr(n, "def")
            ext[d.scope] = [int(x) for x in d.extents]
        for name in ("seq", "body", "then_case", "else_case"):
            c = getattr(n, name, None)
            if c is None:
                continue
            for x in (c if isinstance(c, (list, tuple)) or type(c).__name__ == "Array" else [c]):
                go(x)
    go(fn.body)
    if 7 in ext:
        return ext[7][0]
    wg = ext.get(3, [1])[0]
    return wg * ext.get(5, [4])[0] * ext.get(6, [32])[0]


def walk(fn, launch, cta=0, verbose=True, title=""):
    n_warps = threads_of(fn) // WARP
    out = {}
    t = time.perf_counter()
    for w in range(n_warps):
        it = WarpInterp(fn, cta, w, launch)
        try:
            it.run()
            err = None
        except Unsupported as e:
            err = str(e)
        except Exception as e:  # an interpreter gap, not a kernel construct
            err = f"INTERPRETER {type(e).__name__}: {e}"
        out[w] = (it.ops, err, it.notes)
    dt = time.perf_counter() - t
    if verbose:
        print(f"=================== {title}: CTA {cta}, {n_warps} warps, interpreted in {dt * 1000:.0f} ms")
        for w, (ops, err, notes) in out.items():
            print(f"--- warp {w}: {len(ops)} ops" + (f"   STOPPED: {err}" if err else ""))
            if w > 0 and [o[:3] for o in ops] == [o[:3] for o in out[0][0]]:
                print("    (same op sequence as warp 0)")
                continue
            for (kind, who, info, loc), n in runs([o for o in ops if o[0] != "desc"]):
                print(f"    {kind:16s} {who:6s} {info}  @{loc}" + (f"   x{n}" if n > 1 else ""))
            for n, c in notes.items():
                print(f"    note: {n} x{c}")
    return out, dt


HOPPER_LAUNCH = dict(timeout_cycles=1 << 40, producer_delay_ns=0, consumer_delay_ns=0, lag_warp=1, lag_ns=0)

if __name__ == "__main__":
    from get_funcs import hop, seed

    walk(hop("v4"), HOPPER_LAUNCH, title="hopper v4 M=N=K=256")
    walk(seed("v4"), {}, title="seed v4 M=N=K=256")
    if "--all" in sys.argv:
        walk(hop("v2", M=128, N=128), HOPPER_LAUNCH, title="hopper v2 M=N=128 K=256")
        for st in ("v3", "v5", "v6", "ws"):
            walk(hop(st, PIPE_DEPTH=2, sm_count=3), HOPPER_LAUNCH, title=f"hopper {st} PIPE_DEPTH=2 sm_count=3")
        walk(hop("v4", lag_ns=100, lag_warp=1, tma_issuer="each_warp"), dict(HOPPER_LAUNCH, lag_ns=100), title="hopper v4 each_warp + lag_ns=100")
        walk(hop("v5", trace=True, PIPE_DEPTH=2), HOPPER_LAUNCH, title="hopper v5 trace=True")
        for st, kw in (("v1", dict(M=128, N=128, K=64)), ("v2", dict(M=128, N=128, K=256)), ("v3", {}), ("v5", dict(PIPE_DEPTH=2)),
                       ("v6", dict(PIPE_DEPTH=2, sm_count=3)), ("v6", dict(PIPE_DEPTH=2, sm_count=3, reset_phase_per_tile=True))):
            walk(seed(st, **kw), {}, title=f"seed {st} {kw}")
