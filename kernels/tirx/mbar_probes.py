"""Differential microtests of the mbarrier model on the H200: the probe kernels, one tiny
TIRx kernel per rule.

The probes themselves (name, rule, op sequence, output-word layout), the model's
prediction and the comparison live in :mod:`protosim.ptx.probes` (pure Python, no
tvm): one op sequence drives both the kernel built here and the model.

Each kernel is one CTA of one warp; lane 0 executes the probe's ops in order on one
mbarrier in shared memory and writes int64 observation words to ``out``.  Every wait
is bounded (a single ``test_wait``/``try_wait``, or a ``try_wait`` loop with a
``clock64`` budget), so a kernel never hangs.  Probes of undefined behaviour may
trap, which poisons the CUDA context: the runner (:mod:`kernels.runner.mbar_probes`)
therefore gives each probe a child process of its own, and a fresh one after every fault.

    python -m kernels.toolchain.mbar_probes --bundle .gpu/probes      # CPU: compile every probe
    python -m kernels.runner.mbar_probes --bundle .gpu/probes --out F.jsonl --commit SHA   # GPU
    python -m kernels.report.mbar_probes results/silicon/mbar_probes/*.jsonl [--json]
"""

from __future__ import annotations

from protosim.ptx import probes as P


def _steps(ops) -> list[tuple]:
    """Ops as kernel steps ``(kind, a, b, first output word)``: plain ints and strings only,
    so every branch on them is decided while the TIRx script is parsed."""
    steps = []
    for op, at in zip(ops, P.word_offsets(ops), strict=True):
        kind, a = op[0], op[1] if len(op) > 1 else 0
        b = 0
        if kind == "arrive" and a is None:
            kind, a = "arrive_plain", 0  # the form without a count operand
        if kind == "try_wait" and op[2] is not None:
            kind, b = "try_wait_hint", op[2]
        if kind == "snap":
            a = 0  # the label is the host's business
        steps.append((kind, a, b, at or 0))
    return steps


def build_kernel(probe: P.Probe):
    """The ``@T.prim_func`` of one probe (not compiled).

    Signature: ``(out: int64[words], src: int64[SRC_WORDS], settle_cycles, budget_cycles)``.
    """
    from tvm.script import tirx as T

    WORDS = P.n_words(probe.ops)
    SRC_WORDS = P.SRC_WORDS

    @T.inline
    def timed_wait(kind, parity, hint, at, bar, out, ok, t0):
        # One probe of the barrier between two clock64 reads: result and cycles.
        t0 = T.cast(T.cuda.clock64(), "int64")
        if kind == "test_wait":
            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
        if kind == "try_wait":
            T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
        if kind == "try_wait_hint":
            T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity), T.uint32(hint))
        out[at + 1] = T.cast(T.cuda.clock64(), "int64") - t0
        out[at] = T.cast(ok, "int64")

    @T.inline
    def do_step(kind, a, b, at, bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles):
        if kind == "init":
            T.ptx.mbarrier.init.shared.b64(T.address_of(bar[0]), T.uint32(a))
            T.ptx.fence.mbarrier_init.release.cluster()  # before the async proxy may signal it
        if kind == "arrive":
            T.ptx.mbarrier.arrive.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "arrive_plain":
            T.ptx.mbarrier.arrive.shared.b64(T.address_of(bar[0]))
        if kind == "expect_tx":
            T.ptx.mbarrier.expect_tx.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "complete_tx":
            T.ptx.mbarrier.complete_tx.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "arrive_expect_tx":
            T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "bulk_copy":
            T.ptx["cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"](
                T.address_of(data[0]), T.address_of(src[0]), T.uint32(a), T.address_of(bar[0]))
            # Settle by time, not by the barrier: the barrier is the thing under test.
            t0 = T.cast(T.cuda.clock64(), "int64")
            flag = 0
            while flag == 0:
                T.cuda.nano_sleep(T.uint64(1000))
                if T.cast(T.cuda.clock64(), "int64") - t0 >= settle_cycles:
                    flag = 1
            # A memory clobber, so the reads below are not hoisted above the loop; and it
            # orders the async proxy's writes before these generic reads.
            T.ptx.fence.proxy.async_.shared__cta()
            out[at] = data[0]
            out[at + 1] = data[a // 8 - 1]
        if kind == "snap":
            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(0))
            out[at] = T.cast(ok, "int64")
            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(1))
            out[at + 1] = T.cast(ok, "int64")
            out[at + 2] = T.cast(bar[0], "int64")  # an ordinary 64-bit load of the barrier word
        if kind == "test_wait" or kind == "try_wait" or kind == "try_wait_hint":
            timed_wait(kind, a, b, at, bar, out, ok, t0)
        if kind == "bounded_wait":
            t0 = T.cast(T.cuda.clock64(), "int64")
            flag = 0
            while flag == 0:
                T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(a))
                if ok != T.uint32(0):
                    flag = 1
                else:
                    if T.cast(T.cuda.clock64(), "int64") - t0 > budget_cycles:
                        flag = 2
            out[at + 1] = T.cast(T.cuda.clock64(), "int64") - t0
            out[at] = T.cast(ok, "int64")

    def chain(steps):
        # TIRx has no loop over a Python list: unroll it into nested inline calls.
        if not steps:
            @T.inline
            def done(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles):
                out[0] = T.int64(P.DONE)
            return done
        first, rest = steps[0], chain(steps[1:])

        @T.inline
        def step(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles):
            do_step(first[0], first[1], first[2], first[3], bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles)
            rest(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles)
        return step

    run_probe = chain(_steps(P.normalize(probe.ops)))

    @T.prim_func
    def kernel(
        out: T.Buffer((WORDS,), "int64"),
        src: T.Buffer((SRC_WORDS,), "int64"),
        settle_cycles: T.int64,
        budget_cycles: T.int64,
    ):
        T.device_entry()
        _cta = T.cta_id([1])
        tx = T.thread_id([32])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(128)
        data = pool.alloc((SRC_WORDS,), "int64", align=128)  # bulk-copy destination
        pool.commit()
        ok = T.local_scalar("uint32")
        t0 = T.local_scalar("int64")
        flag = T.local_scalar("int32")
        if tx == 0:
            for i in T.serial(SRC_WORDS):
                data[i] = T.int64(0)  # so a copy that never landed reads as 0, not as stale data
            T.ptx.fence.proxy.async_.shared__cta()  # generic writes before the async proxy's
            run_probe(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles)

    return kernel
