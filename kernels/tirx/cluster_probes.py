"""The cluster timing probes' kernels (sm_90a): ``barrier.cluster``, remote vs local
mbarrier ping-pong, TMA multicast vs unicast, DSMEM load chains.

What each probe does, the rows it writes and how they become cycles is
:mod:`kernels.cluster_probes` (no tvm), which the GPU runner reads too.  Every kernel
has the same signature,

    (out: int64[ROWS * N], meta: int32[16], src: float16[SRC_ROWS, 64], spin: int64, budget: int64)

is launched as one cluster (grid = cluster size; tvm's runtime takes the cluster shape
from ``T.cta_id_in_cluster``), keeps its stamps in shared memory while it runs and
writes them out at the end.  Every mbarrier wait is a ``try_wait.parity`` loop (``wait =
"try"``, which may suspend the thread) or a ``test_wait.parity`` spin (``wait = "spin"``),
bounded by ``budget`` cycles (a wait that runs out counts in ``meta[1]``, and its thread stops
arriving); the only unbounded waits are ``barrier.cluster``'s, which every thread of
every CTA reaches by construction.

    python -m kernels.toolchain.cluster_probes --bundle .gpu/cluster_probes   # CPU
    python -m kernels.runner.cluster_probes --bundle .gpu/cluster_probes --out F.jsonl  # GPU
"""

from __future__ import annotations

from .. import cluster_probes as C

SRC_ROWS = 256
SWIZZLE_128B = 3


def build_kernel(probe: C.Probe):
    """The ``@T.prim_func`` of one probe (not compiled)."""
    return {"csync": _csync, "pingpong": _pingpong, "tma": _tma, "dsmem": _dsmem, "sweep": _sweep}[probe.kind](probe)


def _csync(p: C.Probe):
    from tvm.script import tirx as T

    CS, N = p.cluster, p.n
    ROWS = len(C.series(p))
    RELAXED = p.params.get("relaxed", False)

    @T.prim_func
    def kernel(out: T.Buffer((ROWS * N,), "int64"), meta: T.Buffer((C.META_WORDS,), "int32"),
               src: T.Buffer((SRC_ROWS, 64), "float16"), spin: T.int64, budget: T.int64):
        T.device_entry()
        _bx = T.cta_id([CS])
        tx = T.thread_id([32])
        crank = T.cta_id_in_cluster([CS])
        pool = T.SMEMPool()
        t_arr = pool.alloc((N,), "int64", align=8)
        t_rel = pool.alloc((N,), "int64", align=8)
        pool.commit()
        last = T.local_scalar("int64")
        now = T.local_scalar("int64")
        late = T.local_scalar("int32")
        flag = T.local_scalar("int32")
        T.cuda.cluster_sync()  # start together
        last = T.cast(T.cuda.clock64(), "int64")
        for n in T.serial(N):
            late = T.if_then_else(n % 2 == 0, 0, 1 + (n // 2) % (CS - 1))
            if crank == late:
                flag = 0
                while flag == 0:
                    if T.cast(T.cuda.clock64(), "int64") - last >= spin:
                        flag = 1
            now = T.cast(T.cuda.clock64(), "int64")
            if RELAXED:
                T.ptx.barrier.cluster.arrive.relaxed.aligned()
            else:
                T.ptx.barrier.cluster.arrive.aligned()
            T.ptx.barrier.cluster.wait.aligned()
            last = T.cast(T.cuda.clock64(), "int64")
            if tx == 0:
                t_arr[n] = now
                t_rel[n] = last
        T.cuda.cta_sync()
        if tx == 0:
            for n in T.serial(N):
                out[crank * N + n] = t_arr[n]
                out[(CS + crank) * N + n] = t_rel[n]
            meta[2 + crank] = T.cast(T.cuda.mov_sreg(32, "smid"), "int32")
            T.cuda.atomic_add(T.address_of(meta[0]), T.int32(1))
        T.cuda.cluster_sync()

    return kernel


def _pingpong(p: C.Probe):
    from tvm.script import tirx as T

    N = p.n
    MODE = p.params["mode"]
    REMOTE = MODE == "remote"
    MAPA = MODE in ("remote", "selfmapa")
    SPIN = p.params.get("wait", "try") == "spin"

    @T.prim_func
    def kernel(out: T.Buffer((N,), "int64"), meta: T.Buffer((C.META_WORDS,), "int32"),
               src: T.Buffer((SRC_ROWS, 64), "float16"), spin: T.int64, budget: T.int64):
        T.device_entry()
        _bx = T.cta_id([2])
        tx = T.thread_id([64])
        crank = T.cta_id_in_cluster([2])
        pool = T.SMEMPool()
        bar_ping = pool.alloc((1,), "uint64", align=8)  # the ping waits here
        bar_pong = pool.alloc((1,), "uint64", align=8)  # the pong waits here
        rt = pool.alloc((N,), "int64", align=8)
        pool.commit()
        ok = T.local_scalar("uint32")
        t0 = T.local_scalar("int64")
        t1 = T.local_scalar("int64")
        aborted = T.local_scalar("int32")
        remote = T.local_scalar("uint32")
        polls = T.local_scalar("int32")
        aborted = 0
        if tx == 0:
            T.ptx.mbarrier.init.shared.b64(T.address_of(bar_ping[0]), T.uint32(1))
            T.ptx.mbarrier.init.shared.b64(T.address_of(bar_pong[0]), T.uint32(1))
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cluster_sync()

        @T.inline
        def bwait(bar, parity):
            if aborted == 0:
                if SPIN:  # non-blocking test_wait polls; the budget is read every 16th poll
                    T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                    if ok == T.uint32(0):
                        t1 = T.cast(T.cuda.clock64(), "int64")
                        polls = 0
                        while ok == T.uint32(0) and aborted == 0:
                            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                            polls = polls + 1
                            if ok == T.uint32(0) and polls % 16 == 0:
                                if T.cast(T.cuda.clock64(), "int64") - t1 > budget:
                                    aborted = 1
                                    T.cuda.atomic_add(T.address_of(meta[1]), T.int32(1))
                else:  # try_wait, which may suspend the thread (what the protocol kernels use)
                    T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                    if ok == T.uint32(0):
                        t1 = T.cast(T.cuda.clock64(), "int64")
                        while ok == T.uint32(0) and aborted == 0:
                            T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                            if ok == T.uint32(0):
                                if T.cast(T.cuda.clock64(), "int64") - t1 > budget:
                                    aborted = 1
                                    T.cuda.atomic_add(T.address_of(meta[1]), T.int32(1))

        @T.inline
        def signal(bar, rank):
            # arrive on `bar` (the same offset) in CTA `rank`
            if aborted == 0:
                if MAPA:
                    T.ptx.mapa.shared__cluster.u32(remote, T.cuda.cvta_generic_to_shared(T.address_of(bar[0])), T.uint32(rank))
                    T.ptx.mbarrier.arrive.shared__cluster.b64(remote)
                else:
                    T.ptx.mbarrier.arrive.shared.b64(T.address_of(bar[0]))

        is_ping = T.meta_var(crank == 0 and tx == 0)
        is_pong = T.meta_var((crank == 1 and tx == 0) if REMOTE else (crank == 0 and tx == 32))
        if is_ping:
            for i in T.serial(N):
                t0 = T.cast(T.cuda.clock64(), "int64")
                signal(bar_pong, 1 if REMOTE else 0)
                bwait(bar_ping, i % 2)
                rt[i] = T.cast(T.cuda.clock64(), "int64") - t0
            for i in T.serial(N):
                out[i] = T.if_then_else(aborted == 0, rt[i], T.int64(-1))
        if is_pong:
            for i in T.serial(N):
                bwait(bar_pong, i % 2)
                signal(bar_ping, 0)
        T.cuda.cta_sync()
        if tx == 0:
            meta[2 + crank] = T.cast(T.cuda.mov_sreg(32, "smid"), "int32")
            T.cuda.atomic_add(T.address_of(meta[0]), T.int32(1))
        T.cuda.cluster_sync()  # no CTA leaves while its peer may still arrive on its barriers

    return kernel


def _tma(p: C.Probe):
    from tvm.script import tirx as T

    N = p.n
    ROWS = p.params["rows"]
    BYTES = ROWS * 128
    MC = p.params["mode"] == "multicast"
    SPIN = p.params.get("wait", "try") == "spin"
    DATA_AT = -(-(5 * 8 + 4 * N * 8) // 1024) * 1024

    @T.prim_func
    def kernel(out: T.Buffer((4 * N,), "int64"), meta: T.Buffer((C.META_WORDS,), "int32"),
               src: T.Buffer((SRC_ROWS, 64), "float16"), spin: T.int64, budget: T.int64):
        src_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        # (inner dim, outer dim, outer stride bytes, box inner, box outer, element strides,
        #  interleave, swizzle, L2 promotion, OOB fill): a box of ROWS x 64 fp16, 128B swizzle
        T.call_packed("runtime.cuTensorMapEncodeTiled", src_map, "float16", 2, src.data, 64, SRC_ROWS, 128, 64, ROWS,
                      1, 1, 0, SWIZZLE_128B, 0, 0)
        T.device_entry()
        _bx = T.cta_id([2])
        tx = T.thread_id([64])
        crank = T.cta_id_in_cluster([2])
        pool = T.SMEMPool()
        full = pool.alloc((1,), "uint64", align=8)   # the copy's complete_tx (each CTA)
        ready = pool.alloc((1,), "uint64", align=8)  # rank 0: rank 1 has armed its full barrier
        ack = pool.alloc((1,), "uint64", align=8)    # rank 0: rank 1's full wait returned
        seen = pool.alloc((1,), "uint64", align=8)   # rank 0: warp 1 stamped the ack
        cal = pool.alloc((1,), "uint64", align=8)    # calibration ping-pong (rank 0 warp 1 <-> rank 1 warp 0)
        s_t0 = pool.alloc((N,), "int64", align=8)
        s_tl = pool.alloc((N,), "int64", align=8)
        s_ack = pool.alloc((N,), "int64", align=8)
        s_cal = pool.alloc((N,), "int64", align=8)
        pool.move_base_to(DATA_AT)  # past the barriers and stamps, 1024-aligned (128B swizzle)
        data = pool.alloc((ROWS, 64), "float16", align=1024)
        pool.commit()
        ok = T.local_scalar("uint32")
        t0 = T.local_scalar("int64")
        t1 = T.local_scalar("int64")
        aborted = T.local_scalar("int32")
        remote = T.local_scalar("uint32")
        polls = T.local_scalar("int32")
        aborted = 0
        if tx == 0:
            T.ptx.mbarrier.init.shared.b64(T.address_of(full[0]), T.uint32(1))
            T.ptx.mbarrier.init.shared.b64(T.address_of(ready[0]), T.uint32(1))
            T.ptx.mbarrier.init.shared.b64(T.address_of(ack[0]), T.uint32(1))
            T.ptx.mbarrier.init.shared.b64(T.address_of(seen[0]), T.uint32(1))
            T.ptx.mbarrier.init.shared.b64(T.address_of(cal[0]), T.uint32(1))
            for i in T.serial(N):
                s_ack[i] = T.int64(0)
                s_cal[i] = T.int64(0)
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cluster_sync()

        @T.inline
        def bwait(bar, parity):
            if aborted == 0:
                if SPIN:  # non-blocking test_wait polls; the budget is read every 16th poll
                    T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                    if ok == T.uint32(0):
                        t1 = T.cast(T.cuda.clock64(), "int64")
                        polls = 0
                        while ok == T.uint32(0) and aborted == 0:
                            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                            polls = polls + 1
                            if ok == T.uint32(0) and polls % 16 == 0:
                                if T.cast(T.cuda.clock64(), "int64") - t1 > budget:
                                    aborted = 1
                                    T.cuda.atomic_add(T.address_of(meta[1]), T.int32(1))
                else:  # try_wait, which may suspend the thread (what the protocol kernels use)
                    T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                    if ok == T.uint32(0):
                        t1 = T.cast(T.cuda.clock64(), "int64")
                        while ok == T.uint32(0) and aborted == 0:
                            T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
                            if ok == T.uint32(0):
                                if T.cast(T.cuda.clock64(), "int64") - t1 > budget:
                                    aborted = 1
                                    T.cuda.atomic_add(T.address_of(meta[1]), T.int32(1))

        @T.inline
        def remote_arrive(bar, rank):
            if aborted == 0:
                T.ptx.mapa.shared__cluster.u32(remote, T.cuda.cvta_generic_to_shared(T.address_of(bar[0])), T.uint32(rank))
                T.ptx.mbarrier.arrive.shared__cluster.b64(remote)

        if crank == 0 and tx == 0:  # the issuer
            for i in T.serial(N):
                if MC:
                    bwait(ready, i % 2)
                if aborted == 0:
                    T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(full[0]), T.uint32(BYTES))
                    t0 = T.cast(T.cuda.clock64(), "int64")
                    if MC:
                        T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"](
                            T.address_of(data[0, 0]), T.address_of(src_map), 0, 0, T.address_of(full[0]), T.uint16(3))
                    else:
                        T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"](
                            T.address_of(data[0, 0]), T.address_of(src_map), 0, 0, T.address_of(full[0]))
                bwait(full, i % 2)
                s_tl[i] = T.cast(T.cuda.clock64(), "int64")
                s_t0[i] = t0
                if MC:
                    bwait(seen, i % 2)
        if MC:
            if crank == 0 and tx == 32:  # the ack observer, then the calibration's ping
                for i in T.serial(N):
                    bwait(ack, i % 2)
                    s_ack[i] = T.cast(T.cuda.clock64(), "int64")
                    if aborted == 0:
                        T.ptx.mbarrier.arrive.shared.b64(T.address_of(seen[0]))
                for i in T.serial(N):
                    t0 = T.cast(T.cuda.clock64(), "int64")
                    remote_arrive(cal, 1)
                    bwait(cal, i % 2)
                    s_cal[i] = T.cast(T.cuda.clock64(), "int64") - t0
            if crank == 1 and tx == 0:  # the peer, then the calibration's pong
                for i in T.serial(N):
                    if aborted == 0:
                        T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(full[0]), T.uint32(BYTES))
                    remote_arrive(ready, 0)
                    bwait(full, i % 2)
                    remote_arrive(ack, 0)
                for i in T.serial(N):
                    bwait(cal, i % 2)
                    remote_arrive(cal, 0)
        T.cuda.cta_sync()
        if tx == 0:
            if crank == 0:
                for i in T.serial(N):
                    out[i] = s_t0[i]
                    out[N + i] = s_tl[i]
                    out[2 * N + i] = s_ack[i]
                    out[3 * N + i] = s_cal[i]
            meta[2 + crank] = T.cast(T.cuda.mov_sreg(32, "smid"), "int32")
            T.cuda.atomic_add(T.address_of(meta[0]), T.int32(1))
        T.cuda.cluster_sync()  # no CTA leaves while a peer may still write or arrive into it

    return kernel


def _dsmem(p: C.Probe):
    from tvm.script import tirx as T

    N = p.n
    WHERE = p.params["where"]
    W, HOPS, STRIDE = C.DSMEM_WORDS, C.HOPS, C.DSMEM_STRIDE
    OWNER = 1 if WHERE == "remote" else 0

    @T.prim_func
    def kernel(out: T.Buffer((N,), "int64"), meta: T.Buffer((C.META_WORDS,), "int32"),
               src: T.Buffer((SRC_ROWS, 64), "float16"), spin: T.int64, budget: T.int64):
        T.device_entry()
        _bx = T.cta_id([2])
        tx = T.thread_id([32])
        crank = T.cta_id_in_cluster([2])
        pool = T.SMEMPool()
        arr = pool.alloc((W,), "uint32", align=128)
        chain = pool.alloc((N,), "int64", align=8)
        pool.commit()
        idx = T.local_scalar("uint32")
        base = T.local_scalar("uint32")
        t0 = T.local_scalar("int64")
        if tx == 0:
            for i in T.serial(W):
                arr[i] = T.cast((i + STRIDE) % W, "uint32")
        T.cuda.cluster_sync()  # the owner's array is written before anyone reads it
        if crank == 0 and tx == 0:
            base = T.cuda.cvta_generic_to_shared(T.address_of(arr[0]))
            if WHERE != "local":
                T.ptx.mapa.shared__cluster.u32(base, T.cuda.cvta_generic_to_shared(T.address_of(arr[0])), T.uint32(OWNER))
            idx = T.uint32(0)
            for i in T.serial(N):
                t0 = T.cast(T.cuda.clock64(), "int64")
                for _h in T.unroll(HOPS):
                    if WHERE == "local":
                        T.ptx.ld.shared.u32(idx, base + idx * T.uint32(4))
                    else:
                        T.ptx.ld.shared__cluster.u32(idx, base + idx * T.uint32(4))
                chain[i] = T.cast(T.cuda.clock64(), "int64") - t0
            for i in T.serial(N):
                out[i] = chain[i]
            meta[8] = T.cast(idx, "int32")  # the chain's end, so no load is dead code
        T.cuda.cta_sync()
        if tx == 0:
            meta[2 + crank] = T.cast(T.cuda.mov_sreg(32, "smid"), "int32")
            T.cuda.atomic_add(T.address_of(meta[0]), T.int32(1))
        T.cuda.cluster_sync()  # the owner stays until the chase is done

    return kernel


def _sweep(p: C.Probe):
    """Probe at an offset: a barrier.cluster gives both CTAs a common time origin (its release
    reaches every CTA of the cluster at the same time: ``self == cross`` in the csync probes);
    the issuer acts ``A`` cycles after it, each target's prober makes one ``test_wait`` ``D``
    cycles after it; ``D`` sweeps a range.  See :mod:`kernels.cluster_probes`."""
    from tvm.script import tirx as T

    N = p.n
    EVENT, MODE = p.params["event"], p.params["mode"]
    TMA = EVENT == "tma"
    MC = TMA and MODE == "multicast"
    REMOTE = (not TMA) and MODE == "remote"
    ROWS = p.params.get("rows", 8)
    BYTES = ROWS * 128
    A, D0, STEP, NSTEPS = C.SWEEP_A, p.params["d0"], p.params["step"], p.params["nsteps"]
    DATA_AT = -(-(8 + 3 * N * 8) // 1024) * 1024

    @T.prim_func
    def kernel(out: T.Buffer((6 * N,), "int64"), meta: T.Buffer((C.META_WORDS,), "int32"),
               src: T.Buffer((SRC_ROWS, 64), "float16"), spin: T.int64, budget: T.int64):
        src_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        if TMA:
            T.call_packed("runtime.cuTensorMapEncodeTiled", src_map, "float16", 2, src.data, 64, SRC_ROWS, 128, 64, ROWS,
                          1, 1, 0, SWIZZLE_128B, 0, 0)
        T.device_entry()
        _bx = T.cta_id([2])
        tx = T.thread_id([64])
        crank = T.cta_id_in_cluster([2])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)  # the barrier the event completes (each CTA)
        s_issue = pool.alloc((N,), "int64", align=8)
        s_probe = pool.alloc((N,), "int64", align=8)
        s_ok = pool.alloc((N,), "int64", align=8)
        pool.move_base_to(DATA_AT)
        data = pool.alloc((ROWS, 64), "float16", align=1024)
        pool.commit()
        ok = T.local_scalar("uint32")
        r = T.local_scalar("int64")
        t1 = T.local_scalar("int64")
        ph = T.local_scalar("int32")
        flag = T.local_scalar("int32")
        aborted = T.local_scalar("int32")
        remote = T.local_scalar("uint32")
        source = T.local_scalar("int32")
        target = T.local_scalar("int32")
        d = T.local_scalar("int64")
        aborted = 0
        ph = 0
        if tx == 0:
            T.ptx.mbarrier.init.shared.b64(T.address_of(bar[0]), T.uint32(1))
            for i in T.serial(N):
                s_issue[i] = T.int64(0)
                s_probe[i] = T.int64(0)
                s_ok[i] = T.int64(-1)
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cluster_sync()
        for i in T.serial(N):
            source = (i // NSTEPS) % 2
            d = T.int64(A + D0) + T.cast((i % NSTEPS) * STEP, "int64")
            # is this CTA's barrier completed by this iteration's event?
            if MC:
                target = 1
            elif REMOTE:
                target = T.if_then_else(crank != source, 1, 0)
            else:
                target = T.if_then_else(crank == source, 1, 0)
            if TMA and tx == 32 and target == 1 and aborted == 0:
                T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(bar[0]), T.uint32(BYTES))  # armed before the origin
            T.cuda.cluster_sync()  # the common origin
            r = T.cast(T.cuda.clock64(), "int64")
            if tx == 0 and crank == source:  # the issuer
                flag = 0
                while flag == 0:
                    if T.cast(T.cuda.clock64(), "int64") - r >= T.int64(A):
                        flag = 1
                s_issue[i] = T.cast(T.cuda.clock64(), "int64") - r
                if aborted == 0:
                    if TMA:
                        if MC:
                            T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"](
                                T.address_of(data[0, 0]), T.address_of(src_map), 0, 0, T.address_of(bar[0]), T.uint16(3))
                        else:
                            T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"](
                                T.address_of(data[0, 0]), T.address_of(src_map), 0, 0, T.address_of(bar[0]))
                    elif REMOTE:
                        T.ptx.mapa.shared__cluster.u32(remote, T.cuda.cvta_generic_to_shared(T.address_of(bar[0])), T.uint32(1 - crank))
                        T.ptx.mbarrier.arrive.shared__cluster.b64(remote)
                    else:
                        T.ptx.mbarrier.arrive.shared.b64(T.address_of(bar[0]))
            if tx == 32 and target == 1:  # the prober: one test_wait at r + d, then drain the phase
                flag = 0
                while flag == 0:
                    if T.cast(T.cuda.clock64(), "int64") - r >= d:
                        flag = 1
                s_probe[i] = T.cast(T.cuda.clock64(), "int64") - r
                T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(ph))
                s_ok[i] = T.cast(ok, "int64")
                if aborted == 0:
                    t1 = T.cast(T.cuda.clock64(), "int64")
                    while ok == T.uint32(0) and aborted == 0:
                        T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(ph))
                        if ok == T.uint32(0):
                            if T.cast(T.cuda.clock64(), "int64") - t1 > budget:
                                aborted = 1
                                T.cuda.atomic_add(T.address_of(meta[1]), T.int32(1))
                ph = ph ^ 1
        T.cuda.cta_sync()
        if tx == 0:
            for i in T.serial(N):
                out[crank * 3 * N + i] = s_issue[i]
                out[crank * 3 * N + N + i] = s_probe[i]
                out[crank * 3 * N + 2 * N + i] = s_ok[i]
            meta[2 + crank] = T.cast(T.cuda.mov_sreg(32, "smid"), "int32")
            T.cuda.atomic_add(T.address_of(meta[0]), T.int32(1))
        T.cuda.cluster_sync()

    return kernel
