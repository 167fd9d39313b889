"""Hopper (sm_90a) protocol kernels: the seed's mbarrier / TMA / stage-ring
protocol with ``wgmma`` as the MMA, built from one :class:`GemmConfig`.

Our GPU is an H200, where ``tcgen05`` does not exist.  These kernels keep the
seed's protocol op for op and stand ``wgmma.wait_group 0`` followed by one
thread's ``mbarrier.arrive`` in for ``tcgen05.commit`` (DEVICE.md, "Hopper
specifics") -- the same port the simulator's H200 builders emit, so one config
means the same schedule on both sides.

Steps (``STEPS``):

``v2``/``v3``  thread copies into one SMEM stage, a barrier, MMA, wait on ``mma_bar``
               (v2: one output tile; v3: the 2-D grid -- the code is the same);
``v4``         TMA loads with ``arrive.expect_tx`` on ``tma_bar``, load-then-wait,
               TMA store drained with ``cp.async.bulk.wait_group 0``;
``v5``         a ``PIPE_DEPTH`` ring of stages with prefetch;
``v6``         persistent CTAs walking tiles in L2-group order around the v5 loop,
               phases reset per tile (the seed) or carried (the fix);
``ws``         warp-specialized and persistent: one TMA producer warp and one wgmma
               consumer warpgroup hand stages over through full/empty barriers;
``ws_cluster`` ``ws`` on ``cluster_m x cluster_n`` thread-block clusters: operand slices
               multicast across the cluster, stages released in every CTA they reach,
               cluster barriers after init and before exit (protocol: hopper_cluster.py).

Bug knobs are compile-time (each variant is its own binary); delay knobs and the
watchdog budget are kernel arguments, so one binary serves every delay.

Every wait is bounded (:func:`_macros` ``bounded_wait``): after
``timeout_cycles`` it writes one timeout record (which barrier, which role,
which iteration) to ``diag`` and the thread stops waiting *and stops issuing
arrivals and copies*, so a hung protocol ends as a clean ``timeout`` rather than
a hang or a fault.  Threads keep executing the warpgroup-collective ``wgmma``
and barrier syncs so the warpgroup stays converged.  A thread whose wait has
lasted a sixteenth of the budget also polls ``diag[0]``: once any thread timed
out, the whole grid drains within about one budget.  The poll is off the fast
path (normal waits end long before), so correct runs pay nothing for it.

``diag`` (int32[DIAG_WORDS]) layout is :data:`DIAG_FIELDS`; ``trace``
(int64[TRACE_CAP, 4]) holds ``(event, k, clock64, tile)`` rows of CTA 0 when the
kernel is built with ``trace=True`` (:data:`TRACE_EVENTS`).
"""

from __future__ import annotations

from tvm.script import tirx as T

from protosim.config import ConfigError

from ..spec import CLUSTER_STEPS, DIAG_WORDS, TRACE_CAP, KernelSpec, check, cluster_geometry, grid_ctas, stages


def build(spec: KernelSpec):
    """The ``@T.prim_func`` for ``spec`` (not compiled).  ``ws_cluster`` is documented in
    :mod:`kernels.tirx.hopper_cluster`; its code is the ``ws`` step's below, with the cluster's
    loads, releases and barriers in the places ``CLUSTER`` marks."""
    check(spec.step, spec.config)
    if spec.step in CLUSTER_STEPS:
        if spec.trace:
            raise ConfigError("trace", f"{spec.step} is not built with trace (its observers would follow one CTA of a cluster)")
        if spec.config.cluster_size == 1:
            # a 1x1 cluster is the ws protocol: no multicast, no remote arrive, no cluster barrier
            return _kernel(KernelSpec("ws", spec.config, spec.trace))
    if spec.trace and (spec.config.bug_knobs.keys() - {"reset_phase_per_tile"} or spec.config.reset_phase_per_tile):
        # the observer follows the correct, carried phase sequence; a bug's sequence is the thing under test
        raise ConfigError("trace", f"trace builds time correct protocols; {spec.config.bug_knobs} sets a bug knob")
    return _kernel(spec)




# ----------------------------------------------------------------------------- the kernel

# Swizzle mode 3 = CU_TENSOR_MAP_SWIZZLE_128B in both the tensor map and the wgmma
# descriptor encoder (tvm.backend.cuda.cpp.descriptors); a 64-element fp16 row is
# exactly one 128-byte swizzle span, and 8 rows (1024 bytes) are one swizzle atom,
# hence the descriptor's stride-byte offset of 1024 / 16 = 64.
SWIZZLE_128B = 3
SWIZZLE_NONE = 0
DESC_SBO = 1024 // 16
STORE_BAR = 1  # named barrier for the MMA warpgroup's epilogue (bar 0 is __syncthreads)
MMA_SYNC_BAR = 2  # the seed's cta_syncs inside the loops: the 128 MMA threads (a traced build has an observer warp too)


def _kernel(spec: KernelSpec):
    cfg = spec.config
    STEP = spec.step
    M, N, K = cfg.M, cfg.N, cfg.K
    BM, BN, BK = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    KT = cfg.k_tiles
    PIPE = stages(STEP, cfg)
    ACC = BN // 2  # fp32 accumulator registers per thread for one m64 half
    CTAS = grid_ctas(STEP, cfg)
    # ws_cluster (kernels/tirx/hopper_cluster.py): ws on cluster_m x cluster_n clusters.  The
    # persistent walk runs over cluster tiles (CM x CN output tiles), one walker per cluster.
    CLUSTER = STEP == "ws_cluster"
    WS = STEP in ("ws", "ws_cluster")
    CM, CN = (cfg.cluster_m, cfg.cluster_n) if CLUSTER else (1, 1)
    CS = CM * CN
    GEO = cluster_geometry(cfg)
    NUM_M, NUM_TILES = cfg.m_tiles // CM, (cfg.m_tiles // CM) * (cfg.n_tiles // CN)
    WALKERS = CTAS // CS  # the persistent stride: CTAs, or clusters
    A_ROWS = GEO.a_rows if CLUSTER else BM  # rows of A one CTA loads (its multicast slice along N)
    B_ROWS = GEO.b_rows if CLUSTER else BN  # rows of B one CTA loads (its multicast slice along M)
    A_MC = CLUSTER and CN > 1  # A slices are multicast along the rank row
    B_MC = CLUSTER and CM > 1  # B slices along the rank column
    ROW_MASK0 = sum(1 << (j * CM) for j in range(CN))  # rank rm's A mask: ROW_MASK0 << rm
    COL_MASK0 = (1 << CM) - 1                          # rank (rm, rn)'s B mask: COL_MASK0 << (rn * CM)
    EMPTY_COUNT = GEO.empty_count if CLUSTER and not cfg.release_unscaled else 1
    SKIP_RANK = cfg.multicast_skip_rank if CLUSTER else -1
    EXIT_CLUSTER_SYNC = CLUSTER and not cfg.skip_exit_sync
    # warps 0-3: the MMA warpgroup; ws adds the producer warp 4; a traced build adds one
    # observer warp that only polls barriers (never arrives) to time phase completions.
    BASE_THREADS = 160 if WS else 128
    OBS_WARP = BASE_THREADS // 32
    THREADS = BASE_THREADS + (64 if spec.trace else 0)  # observers: one for loads, one for MMA completions
    CTA0_K_TILES = -(-NUM_TILES // CTAS) * KT  # k-tiles CTA 0 runs (tiles bx, bx + CTAS, ...)
    TRACE_QUARTER = TRACE_CAP // 4
    TMA = STEP not in ("v2", "v3")
    PERSISTENT = STEP in ("v6", "ws", "ws_cluster")
    TX_BYTES = (GEO.tx_bytes(local=cfg.expect_tx_local) if CLUSTER else cfg.stage_bytes) + cfg.expect_tx_delta
    # Persistent tile order: TIRx ClusterPersistentScheduler2D's group-major walk,
    # the same function as protosim.builders.seed_gemm.persistent_tiles.
    GROUP = cfg.l2_group_size
    FULL_GROUPS = NUM_M // GROUP
    TAIL = max(NUM_M - FULL_GROUPS * GROUP, 1)
    SPAN = GROUP * (cfg.n_tiles // CN)
    # bug knobs, as compile-time constants
    FLIP_MMA = not cfg.skip_mma_phase_flip
    RESET = cfg.reset_phase_per_tile
    EACH_WARP = cfg.tma_issuer == "each_warp"
    WRONG_TMA = 1 if cfg.wait_parity_flip == "tma" else 0
    WRONG_MMA = 1 if cfg.wait_parity_flip == "mma" else 0
    STORE_WAIT = not cfg.skip_store_wait
    TRACE = spec.trace
    POLL_SHIFT = 4  # a wait older than budget/16 also polls the grid-wide abort flag

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), "float16"),
        B: T.Buffer((N, K), "float16"),
        D: T.Buffer((M, N), "float16"),
        diag: T.Buffer((DIAG_WORDS,), "int32"),
        trace: T.Buffer((TRACE_CAP, 4), "int64"),
        timeout_cycles: T.int64,
        producer_delay_ns: T.int32,
        consumer_delay_ns: T.int32,
        lag_warp: T.int32,
        lag_ns: T.int32,
    ):
        A_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        B_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        D_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        if TMA:
            # (inner dim, outer dim, outer stride bytes, box inner, box outer,
            #  element strides, interleave, swizzle, L2 promotion, OOB fill)
            T.call_packed("runtime.cuTensorMapEncodeTiled", A_map, "float16", 2, A.data, K, M, K * 2, BK, A_ROWS, 1, 1, 0, SWIZZLE_128B, 0, 0)
            T.call_packed("runtime.cuTensorMapEncodeTiled", B_map, "float16", 2, B.data, K, N, K * 2, BK, B_ROWS, 1, 1, 0, SWIZZLE_128B, 0, 0)
            T.call_packed("runtime.cuTensorMapEncodeTiled", D_map, "float16", 2, D.data, N, M, N * 2, BN, BM, 1, 1, 0, SWIZZLE_NONE, 0, 0)
        T.device_entry()
        bx = T.cta_id([CTAS])
        tx = T.thread_id([THREADS])
        if CLUSTER:
            crank = T.cta_id_in_cluster([CS])  # %cluster_ctarank = blockIdx.x % CS

        pool = T.SMEMPool()
        tma_bar = pool.alloc((PIPE,), "uint64", align=8)   # full barrier per stage (the seed calls it tma_bar too)
        mma_bar = pool.alloc((1,), "uint64", align=8)
        empty_bar = pool.alloc((PIPE,), "uint64", align=8)  # ws only: stage released by the MMA
        pool.move_base_to(1024)
        Asmem = pool.alloc((PIPE, BM, BK), "float16")
        Bsmem = pool.alloc((PIPE, BN, BK), "float16")
        Dsmem = pool.alloc((BM, BN), "float16")
        pool.commit()

        acc = T.alloc_buffer((2 * ACC,), "float32", scope="local")
        descA: T.uint64
        descB: T.uint64
        ok = T.local_scalar("uint32")
        t0 = T.local_scalar("int64")
        elapsed = T.local_scalar("int64")
        aborted = T.local_scalar("int32")
        phase_tma = T.local_scalar("int32")
        phase_mma = T.local_scalar("int32")
        phase_empty = T.local_scalar("int32")
        stage = T.local_scalar("int32")
        kc = T.local_scalar("int32")       # k-tiles this thread has started, over all its tiles
        tile_no = T.local_scalar("int32")
        t = T.local_scalar("int32")
        m_idx = T.local_scalar("int32")
        n_idx = T.local_scalar("int32")
        row = T.local_scalar("int32")
        stamp = T.local_scalar("int64")
        row_end = T.local_scalar("int32")
        if CLUSTER:
            remote = T.local_scalar("uint32")  # a peer's barrier address (mapa)
        aborted = 0
        kc = 0
        tile_no = 0
        stage = 0
        phase_tma = 0
        phase_mma = 0
        phase_empty = 1  # a producer's first wait on a fresh empty barrier passes (parity 1 = "the phase before")
        warp = T.meta_var(tx // 32)
        lane = T.meta_var(tx % 32)
        # trace rows: thread 0 | producer lane 0 (ws) | load observer | completion observer
        if TRACE:
            row = T.if_then_else(tx >= BASE_THREADS, (2 + (tx - BASE_THREADS) // 32) * TRACE_QUARTER, (tx // 128) * TRACE_QUARTER)
            row_end = row + TRACE_QUARTER

        if tx == 0:
            for s in T.serial(PIPE):
                T.ptx.mbarrier.init.shared.b64(T.address_of(tma_bar[s]), T.uint32(1))
                T.ptx.mbarrier.init.shared.b64(T.address_of(empty_bar[s]), T.uint32(EMPTY_COUNT))
            T.ptx.mbarrier.init.shared.b64(T.address_of(mma_bar[0]), T.uint32(1))
        T.ptx.fence.mbarrier_init.release.cluster()
        if CLUSTER:
            T.cuda.cluster_sync()  # every peer's barriers are initialised before any multicast or remote arrive
        else:
            T.cuda.cta_sync()

        # ------------------------------------------------------------ inline pieces
        @T.inline
        def bounded_wait(bar_addr, parity, bar_kind, bar_index, role):
            # try_wait.parity in a loop with a clock64 deadline, never an unbounded spin.
            # The first probe is outside the loop: a satisfied wait reads no clock.
            if aborted == 0:
                T.ptx.mbarrier.try_wait.parity.shared.b64(ok, bar_addr, T.uint32(parity))
                if ok == T.uint32(0):
                    t0 = T.cast(T.cuda.clock64(), "int64")
                    while ok == T.uint32(0) and aborted == 0:
                        T.ptx.mbarrier.try_wait.parity.shared.b64(ok, bar_addr, T.uint32(parity))
                        if ok == T.uint32(0):
                            elapsed = T.cast(T.cuda.clock64(), "int64") - t0
                            if elapsed > timeout_cycles:
                                aborted = 1
                                if T.cuda.atomic_add(T.address_of(diag[0]), 1) == 0:
                                    diag[1] = bar_kind
                                    diag[2] = bar_index
                                    diag[3] = role
                                    diag[4] = kc
                                    diag[5] = tile_no
                                    diag[6] = parity
                                    diag[7] = bx
                                    diag[8] = tx
                                    if CLUSTER:
                                        diag[9] = crank
                                        diag[10] = bx // CS
                            elif elapsed > (timeout_cycles >> POLL_SHIFT):
                                if T.cuda.atomic_add(T.address_of(diag[0]), 0) != 0:
                                    aborted = 1

        @T.inline
        def lag():
            if lag_ns > 0:
                if warp == lag_warp:
                    T.cuda.nano_sleep(T.cast(lag_ns, "uint64"))

        @T.inline
        def trace_row(event, k_tile, tile_ordinal):
            # Each tracing thread owns a quarter of the buffer (row .. row_end), so a row
            # costs one clock read and fire-and-forget stores: no atomic to wait for
            # between, say, wait_group 0 and the arrive it delays.
            if row < row_end:
                stamp = T.cast(T.cuda.clock64(), "int64")
                trace[row, 0] = T.int64(event)
                trace[row, 1] = T.cast(k_tile, "int64")
                trace[row, 2] = stamp
                trace[row, 3] = T.cast(tile_ordinal, "int64")
                row = row + 1

        @T.inline
        def record(event):
            if TRACE:
                if bx == 0 and tx % 128 == 0:  # thread 0 of the MMA warpgroup, lane 0 of the producer
                    trace_row(event, kc, tile_no)

        @T.inline
        def observe_wait(bar_addr, parity):
            # The observer's own bounded wait: it never touches the timeout record, so a
            # phase it failed to see (lapped) ends its trace (event 99), not the kernel.
            if aborted == 0:
                ok = T.uint32(0)
                t0 = T.cast(T.cuda.clock64(), "int64")
                while ok == T.uint32(0) and aborted == 0:
                    T.ptx.mbarrier.try_wait.parity.shared.b64(ok, bar_addr, T.uint32(parity))
                    if ok == T.uint32(0):
                        if T.cast(T.cuda.clock64(), "int64") - t0 > timeout_cycles:
                            aborted = 1
                            trace_row(99, kc, 0)

        @T.inline
        def observe_loads():
            # Lane 0 of the first observer warp in CTA 0 follows the full barriers' phases
            # in ring order (carried) and records when each completed: the bytes landed.
            for j in T.serial(CTA0_K_TILES):
                kc = j
                observe_wait(T.address_of(tma_bar[j % PIPE]), (j // PIPE) % 2)
                if aborted == 0:
                    trace_row(7, j, j // KT)

        @T.inline
        def observe_completions():
            # The second observer: when each MMA's arrival completed mma_bar's phase (or,
            # in ws, the empty barrier's: the stage was released).  Loads run ahead of the
            # MMA by up to PIPE_DEPTH stages, hence one observer per sequence.
            for j in T.serial(CTA0_K_TILES):
                kc = j
                if STEP == "ws":
                    observe_wait(T.address_of(empty_bar[j % PIPE]), (j // PIPE) % 2)
                    if aborted == 0:
                        trace_row(9, j, j // KT)
                else:
                    observe_wait(T.address_of(mma_bar[0]), j % 2)
                    if aborted == 0:
                        trace_row(8, j, j // KT)

        @T.inline
        def tma_load(st, kk):
            # One k-tile of A and B into stage st, then arrive.expect_tx: the seed's tma_load.
            if aborted == 0:
                if producer_delay_ns > 0:
                    T.cuda.nano_sleep(T.cast(producer_delay_ns, "uint64"))
                if TRACE:
                    if bx == 0 and tx % 128 == 0:
                        trace_row(1, tile_no * KT + kk, tile_no)  # the k-tile being loaded (prefetches run ahead of kc)
                T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"](
                    T.address_of(Asmem[st, 0, 0]), T.address_of(A_map), kk * BK, m_idx * BM, T.address_of(tma_bar[st]))
                T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"](
                    T.address_of(Bsmem[st, 0, 0]), T.address_of(B_map), kk * BK, n_idx * BN, T.address_of(tma_bar[st]))
                T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(tma_bar[st]), T.uint32(TX_BYTES))

        @T.inline
        def multicast_a(st, kk):
            # this CTA's slice rn of the A tile (A_ROWS rows) into every CTA of its rank row
            T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"](
                T.address_of(Asmem[st, (crank // CM) * A_ROWS, 0]), T.address_of(A_map), kk * BK,
                m_idx * BM + (crank // CM) * A_ROWS, T.address_of(tma_bar[st]), T.cast(ROW_MASK0 << (crank % CM), "uint16"))

        @T.inline
        def multicast_b(st, kk):
            # this CTA's slice rm of the B tile (B_ROWS rows) into every CTA of its rank column
            T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"](
                T.address_of(Bsmem[st, (crank % CM) * B_ROWS, 0]), T.address_of(B_map), kk * BK,
                n_idx * BN + (crank % CM) * B_ROWS, T.address_of(tma_bar[st]), T.cast(COL_MASK0 << ((crank // CM) * CM), "uint16"))

        @T.inline
        def cluster_tma_load(st, kk):
            # ws_cluster's producer: its own A and B loads (a multicast slice where the tile is
            # shared, the whole tile where it is not), then arrive.expect_tx on its own full barrier
            # for every byte all sources deliver to it (the whole stage).
            if aborted == 0:
                if producer_delay_ns > 0:
                    T.cuda.nano_sleep(T.cast(producer_delay_ns, "uint64"))
                if A_MC:
                    if SKIP_RANK < 0:
                        multicast_a(st, kk)
                    else:
                        if crank != SKIP_RANK:
                            multicast_a(st, kk)
                else:
                    T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"](
                        T.address_of(Asmem[st, 0, 0]), T.address_of(A_map), kk * BK, m_idx * BM, T.address_of(tma_bar[st]))
                if B_MC:
                    if SKIP_RANK < 0:
                        multicast_b(st, kk)
                    else:
                        if crank != SKIP_RANK:
                            multicast_b(st, kk)
                else:
                    T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"](
                        T.address_of(Bsmem[st, 0, 0]), T.address_of(B_map), kk * BK, n_idx * BN, T.address_of(tma_bar[st]))
                T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(tma_bar[st]), T.uint32(TX_BYTES))

        @T.inline
        def remote_arrive(bar_addr, rank):
            # mbarrier.arrive.shared::cluster on the barrier at the same offset in CTA `rank`
            T.ptx.mapa.shared__cluster.u32(remote, T.cuda.cvta_generic_to_shared(bar_addr), T.uint32(rank))
            T.ptx.mbarrier.arrive.shared__cluster.b64(remote)

        @T.inline
        def cluster_release(st):
            # ws_cluster's consumer releases a stage in every CTA that multicast into it: its own
            # empty barrier, then its rank row's peers (A came from them), then its rank column's (B).
            if tx == 0:
                if aborted == 0:
                    T.ptx.mbarrier.arrive.shared.b64(T.address_of(empty_bar[st]))
                    if CN > 1:
                        for j in T.unroll(CN - 1):
                            remote_arrive(T.address_of(empty_bar[st]), crank % CM + ((crank // CM + 1 + j) % CN) * CM)
                    if CM > 1:
                        for i in T.unroll(CM - 1):
                            remote_arrive(T.address_of(empty_bar[st]), (crank % CM + 1 + i) % CM + (crank // CM) * CM)

        @T.inline
        def tma_issuer_load(st, kk):
            # tid == 0 (one issuer) or elect-one-per-warp (four issuers: the seed's warning)
            if EACH_WARP:
                if lane == 0:
                    tma_load(st, kk)
            else:
                if tx == 0:
                    tma_load(st, kk)

        @T.inline
        def zero_acc():
            for i in T.unroll(2 * ACC):
                acc[i] = T.float32(0)

        @T.inline
        def wgmma_stage(st):
            # 128 x BN x 64 as 2 (m64 halves) x 4 (k16 steps) wgmma on 128B-swizzled,
            # K-major tiles; a k16 step advances the start address by 32 bytes.
            if consumer_delay_ns > 0:
                if tx == 0:
                    T.cuda.nano_sleep(T.cast(consumer_delay_ns, "uint64"))
            record(3)
            T.ptx.wgmma.fence.sync.aligned()
            for h in T.unroll(2):
                for kk in T.unroll(BK // 16):
                    T.cuda.wgmma.encode_matrix_descriptor(T.address_of(descA), T.address_of(Asmem[st, h * 64, kk * 16]), 1, DESC_SBO, SWIZZLE_128B)
                    T.cuda.wgmma.encode_matrix_descriptor(T.address_of(descB), T.address_of(Bsmem[st, 0, kk * 16]), 1, DESC_SBO, SWIZZLE_128B)
                    T.ptx[f"wgmma.mma_async.sync.aligned.m64n{BN}k16.f32.f16.f16"](
                        *[acc[h * ACC + i] for i in range(ACC)], descA, descB, T.bool(True), 1, 1, 0, 0)
            T.ptx.wgmma.commit_group.sync.aligned()
            T.ptx.wgmma.wait_group.sync.aligned(0)
            record(4)

        @T.inline
        def mma_and_commit(st):
            # Hopper's tcgen05.commit: wait_group 0, then one thread arrives on mma_bar.
            wgmma_stage(st)
            if tx == 0:
                if aborted == 0:
                    T.ptx.mbarrier.arrive.shared.b64(T.address_of(mma_bar[0]))

        @T.inline
        def thread_copy(kk):
            # v2/v3: every thread copies its share of A and B into the 128B-swizzled layout
            # the descriptors name: 16-byte chunk j of row r lands at chunk j ^ (r % 8).
            for i in T.serial(BM * BK // 128):
                e = T.meta_var(i * 128 + tx)
                r = T.meta_var(e // BK)
                c = T.meta_var(e % BK)
                Asmem[0, r, ((c // 8) ^ (r % 8)) * 8 + c % 8] = A[m_idx * BM + r, kk * BK + c]
            for i in T.serial(BN * BK // 128):
                e = T.meta_var(i * 128 + tx)
                r = T.meta_var(e // BK)
                c = T.meta_var(e % BK)
                Bsmem[0, r, ((c // 8) ^ (r % 8)) * 8 + c % 8] = B[n_idx * BN + r, kk * BK + c]
            # generic-proxy writes read by wgmma (async proxy)
            T.ptx.fence.proxy.async_.shared__cta()
            T.cuda.warpgroup_sync(MMA_SYNC_BAR)  # the seed's cta_sync: all of the MMA warpgroup

        @T.inline
        def store_direct():
            # m64nNk16 accumulator fragment: register 4i+{0,1} at row warp*16 + lane/4,
            # columns 8i + 2*(lane%4) + {0,1}; registers 4i+{2,3} eight rows lower.
            for h in T.unroll(2):
                for i in T.unroll(ACC // 4):
                    r = T.meta_var(m_idx * BM + h * 64 + warp * 16 + lane // 4)
                    c = T.meta_var(n_idx * BN + i * 8 + (lane % 4) * 2)
                    D[r, c] = T.cast(acc[h * ACC + i * 4], "float16")
                    D[r, c + 1] = T.cast(acc[h * ACC + i * 4 + 1], "float16")
                    D[r + 8, c] = T.cast(acc[h * ACC + i * 4 + 2], "float16")
                    D[r + 8, c + 1] = T.cast(acc[h * ACC + i * 4 + 3], "float16")

        @T.inline
        def store_tma():
            # registers -> Dsmem -> one thread's TMA store, drained before Dsmem is reused.
            T.cuda.warpgroup_sync(STORE_BAR)  # the previous tile's store has been drained
            for h in T.unroll(2):
                for i in T.unroll(ACC // 4):
                    r = T.meta_var(h * 64 + warp * 16 + lane // 4)
                    c = T.meta_var(i * 8 + (lane % 4) * 2)
                    Dsmem[r, c] = T.cast(acc[h * ACC + i * 4], "float16")
                    Dsmem[r, c + 1] = T.cast(acc[h * ACC + i * 4 + 1], "float16")
                    Dsmem[r + 8, c] = T.cast(acc[h * ACC + i * 4 + 2], "float16")
                    Dsmem[r + 8, c + 1] = T.cast(acc[h * ACC + i * 4 + 3], "float16")
            T.ptx.fence.proxy.async_.shared__cta()
            T.cuda.warpgroup_sync(STORE_BAR)
            if tx == 0:
                if aborted == 0:
                    record(5)
                    T.ptx["cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"](
                        T.address_of(D_map), n_idx * BN, m_idx * BM, T.address_of(Dsmem[0, 0]))
                    T.ptx.cp.async_.bulk.commit_group()
                    if STORE_WAIT:
                        T.ptx.cp.async_.bulk.wait_group(0)
                    record(6)
            T.cuda.warpgroup_sync(STORE_BAR)

        @T.inline
        def tile_coords():
            if PERSISTENT:
                m_idx = T.if_then_else(
                    t < FULL_GROUPS * SPAN,
                    (t // SPAN) * GROUP + (t % SPAN) % GROUP,
                    FULL_GROUPS * GROUP + (t - FULL_GROUPS * SPAN) % TAIL)
                n_idx = T.if_then_else(
                    t < FULL_GROUPS * SPAN,
                    (t % SPAN) // GROUP,
                    (t - FULL_GROUPS * SPAN) // TAIL)
                if CLUSTER:
                    # the cluster tile's (m, n) -> this CTA's output tile: rm along M, rn along N
                    m_idx = m_idx * CM + crank % CM
                    n_idx = n_idx * CN + crank // CM
            else:
                m_idx = t % NUM_M
                n_idx = t // NUM_M

        @T.inline
        def ring_k_loop():
            # The seed's step-5 loop for one tile, from the ring's current position.
            if RESET:
                stage = 0
                phase_tma = 0
                phase_mma = 0
            for s in T.serial(min(PIPE, KT)):
                tma_issuer_load((stage + s) % PIPE, s)
            for k in T.serial(KT):
                lag()
                bounded_wait(T.address_of(tma_bar[stage]), phase_tma ^ WRONG_TMA, 1, stage, 0)
                record(2)
                mma_and_commit(stage)
                lag()
                bounded_wait(T.address_of(mma_bar[0]), phase_mma ^ WRONG_MMA, 2, 0, 0)
                if FLIP_MMA:
                    phase_mma = phase_mma ^ 1
                if k + PIPE < KT:
                    tma_issuer_load(stage, k + PIPE)
                stage = stage + 1
                if stage == PIPE:
                    stage = 0
                    phase_tma = phase_tma ^ 1
                kc = kc + 1

        # ------------------------------------------------------------ the steps
        t = bx
        if CLUSTER:
            t = bx // CS  # the cluster walks cluster tiles
        if TRACE:
            if TMA and warp == OBS_WARP and lane == 0 and bx == 0:
                observe_loads()
            if warp == OBS_WARP + 1 and lane == 0 and bx == 0:
                observe_completions()
        if (STEP == "v2" or STEP == "v3") and warp < 4:
            tile_coords()
            zero_acc()
            for k in T.serial(KT):
                thread_copy(k)
                mma_and_commit(0)
                lag()
                bounded_wait(T.address_of(mma_bar[0]), phase_mma ^ WRONG_MMA, 2, 0, 0)
                if FLIP_MMA:
                    phase_mma = phase_mma ^ 1
                kc = kc + 1
            store_direct()
        if STEP == "v4" and warp < 4:
            tile_coords()
            zero_acc()
            for k in T.serial(KT):
                tma_issuer_load(0, k)
                lag()
                bounded_wait(T.address_of(tma_bar[0]), phase_tma ^ WRONG_TMA, 1, 0, 0)
                record(2)
                mma_and_commit(0)
                lag()
                bounded_wait(T.address_of(mma_bar[0]), phase_mma ^ WRONG_MMA, 2, 0, 0)
                phase_tma = phase_tma ^ 1
                if FLIP_MMA:
                    phase_mma = phase_mma ^ 1
                kc = kc + 1
            store_tma()
        if STEP == "v5" and warp < 4:
            tile_coords()
            zero_acc()
            ring_k_loop()
            store_tma()
        if STEP == "v6" and warp < 4:
            while t < NUM_TILES:
                tile_coords()
                zero_acc()
                ring_k_loop()
                store_tma()
                T.cuda.warpgroup_sync(MMA_SYNC_BAR)  # the seed's end-of-tile cta_sync
                t = t + CTAS
                tile_no = tile_no + 1
        if WS:
            if warp == 4:
                # TMA producer warp: wait until the MMA released a stage, refill it.
                while t < NUM_TILES:
                    tile_coords()
                    if RESET:
                        stage = 0
                        phase_empty = 1
                    for k in T.serial(KT):
                        bounded_wait(T.address_of(empty_bar[stage]), phase_empty ^ WRONG_MMA, 3, stage, 1)
                        if lane == 0:
                            if CLUSTER:
                                cluster_tma_load(stage, k)
                            else:
                                tma_load(stage, k)
                        stage = stage + 1
                        if stage == PIPE:
                            stage = 0
                            if FLIP_MMA:
                                phase_empty = phase_empty ^ 1
                        kc = kc + 1
                    t = t + WALKERS
                    tile_no = tile_no + 1
            if warp < 4:
                # MMA warpgroup: wait for a full stage, multiply, release it; epilogue per tile.
                while t < NUM_TILES:
                    tile_coords()
                    if RESET:
                        stage = 0
                        phase_tma = 0
                    zero_acc()
                    for k in T.serial(KT):
                        lag()
                        bounded_wait(T.address_of(tma_bar[stage]), phase_tma ^ WRONG_TMA, 1, stage, 0)
                        record(2)
                        wgmma_stage(stage)
                        if CLUSTER:
                            cluster_release(stage)
                        else:
                            if tx == 0:
                                if aborted == 0:
                                    T.ptx.mbarrier.arrive.shared.b64(T.address_of(empty_bar[stage]))
                        stage = stage + 1
                        if stage == PIPE:
                            stage = 0
                            phase_tma = phase_tma ^ 1
                        kc = kc + 1
                    store_tma()
                    t = t + WALKERS
                    tile_no = tile_no + 1
        if EXIT_CLUSTER_SYNC:
            # no CTA leaves while a peer may still arrive on its barriers or multicast into it;
            # every thread gets here (bounded waits), so a hung cluster still meets here
            T.cuda.cluster_sync()
        else:
            T.cuda.cta_sync()

    return kernel
