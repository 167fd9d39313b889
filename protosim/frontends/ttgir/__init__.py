"""Read Triton's TTGIR (the text ``kernel.asm["ttgir"]``) into a protosim schedule.

No Triton is needed: the reader parses the MLIR text line by line, evaluates the
kernel's scalar integer arithmetic (loop bounds, stage indices) with the launch's
argument values, walks ``scf.for`` loops iteration by iteration, and turns the
ops that move or read shared memory into schedule ops:

=====================================  =============================================
TTGIR                                  schedule
=====================================  =============================================
``ttg.local_alloc : () -> memdesc<S x ...>``  a buffer of S stages (an ``i64`` one: mbarriers)
``ttg.local_alloc %t``                 a one-stage buffer written by the warps (``SmemStore``)
``ttg.async_copy_global_to_local``     ``CpAsync`` by every warp (its share of the tile); a zero
                                       fill, no global read, where its mask is off in every lane
``ttg.async_commit_group``             ``CpAsyncCommit``
``ttg.async_wait {num = n}``           ``CpAsyncWait(n)``, then a CTA barrier (below)
``ttg.local_load``                     ``LocalLoad`` by every warp
``tt.dot`` (register operands)         ``MmaSync``
``ttng.warp_group_dot`` / ``_wait``    ``Wgmma`` + ``WgmmaCommit`` / ``WgmmaWait(pendings)``
``ttng.init_barrier`` / ``barrier_expect`` / ``async_tma_copy_global_to_local`` / ``wait_barrier``
                                       ``MbarInit`` / ``ArriveExpectTx`` / ``TmaLoad`` / ``Wait``
=====================================  =============================================

Two rules stand in for what happens after TTGIR:

* **Barriers.**  Triton's membar pass inserts a CTA barrier between shared-memory
  accesses of different threads that conflict; the reader does the same: a barrier
  after each ``async_wait`` (the copies other threads made become visible) and before
  a write to a buffer that warps have read since the last barrier, or a read of one
  they have written.
* **Which data.**  Logical tags pair producers and consumers: the n-th copy into a
  buffer carries tile n of that buffer, and the n-th read of the buffer expects tile
  n.  A streaming pipeline consumes its loads in order, so a read that finds another
  tile (or an unfinished copy) in its stage is a real hazard.  Barrier ops are paired
  the same way, with :class:`protosim.pipeline.UseCounter`: the n-th ``barrier_expect``
  on an mbarrier is its use n, and the copies and waits on it after that belong to it.

* **Which global data.**  The walk covers one CTA (each CTA when a program id decides control
  flow); its reads carry the L2 model's key for the data they read -- the copy's number, plus the
  values of the per-CTA scalars its address is computed from, re-evaluated for every CTA
  (:meth:`Walker.global_key`); a TMA load's key is its descriptor and coordinates.  The launch's
  ``grid`` (in ``<name>.launch.json``; else ``ctas`` as a 1-D grid) gives each CTA its program ids.

Shared memory is counted from the allocations (tile bytes, mbarriers 8 bytes each),
the number Triton's metadata calls ``shared``.

**Input checks.**  :func:`read` refuses, with a :class:`TtgirError` naming the file (and
the line, for the TTGIR text), the field or op and the fix, every input it cannot judge
faithfully: a file that is not UTF-8 TTGIR or is cut short (unbalanced regions, no
``tt.return``, no module attributes, a line that is no operation), module attributes
Triton never emits (``num-warps`` not a power of two in 1..32, another warp size, CTA
clusters, a non-CUDA target), ops the reader does not model or the target cannot run
(wgmma off sm_90, TMA on sm_8x or on the gb10 profile, tcgen05 off sm_10x), invalid SSA
(a value defined twice or used undefined, an ``scf.yield`` that does not match the loop),
scalar arithmetic that has no value (division by zero, an unknown predicate), stage
indices outside their buffer, an ``scf.for`` whose step is not positive, and launch or
metadata JSON that is malformed (wrong types, non-positive sizes, values the compiled
specialization excludes, names that are no argument).  The work is bounded:
``max_ops`` (default :data:`DEFAULT_MAX_OPS`) caps the schedule ops over all CTAs plus
one per loop iteration walked, and a loop whose trip count alone would pass it is
refused before it is unrolled.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from protosim.frontends.ttgir.contents import resolve
from protosim.frontends.ttgir.inputs import (
    check_launch,
    check_metadata,
    load_launch,
    merge_launch,
    metadata,
    metadata_shared,
)
from protosim.frontends.ttgir.ops import check_ops
from protosim.frontends.ttgir.text import (
    DEFAULT_MAX_OPS,
    ELEM_BYTES,
    MAX_NESTING,
    TARGET_ARCH,
    MemDesc,
    Region,
    Stmt,
    Ttgir,
    TtgirError,
    _err,
    parse,
    sidecar,
)
from protosim.frontends.ttgir.walk import ROLE, Walker, key_roots, rekeyed
from protosim.ir import (
    BarrierDecl,
    BufferDecl,
    CtaProgram,
    RoleDecl,
    Schedule,
    ScheduleError,
    TmemAlloc,
    TmemDealloc,
    validate,
)

__all__ = ["DEFAULT_MAX_OPS", "ELEM_BYTES", "MAX_NESTING", "ROLE", "TARGET_ARCH", "MemDesc", "Region", "Stmt", "Ttgir",
           "TtgirError", "check_launch", "check_metadata", "load_launch", "metadata", "metadata_shared", "parse",
           "read"]


def read(path: Path, launch: dict[str, Any] | None = None, arch: str | None = None,
         max_ops: int = DEFAULT_MAX_OPS) -> tuple[Schedule, Ttgir]:
    """Read a TTGIR file into a schedule (and the parsed module).

    ``launch`` overrides values of ``<name>.launch.json``; ``arch`` overrides the profile
    the target maps to; ``max_ops`` bounds the work (see :data:`DEFAULT_MAX_OPS`).  Any
    input that cannot be judged faithfully raises :class:`TtgirError`."""
    path = Path(path)
    if isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 1:
        raise TtgirError(f"{path}: max_ops = {max_ops!r}: give a positive integer")
    try:
        if not path.is_file():  # a FIFO or a device would block or never end
            raise TtgirError(f"{path}: not a regular file; give the path of a .ttgir file")
        data = path.read_bytes()
    except OSError as e:
        raise TtgirError(f"{path}: {e.strerror}; give the path of a .ttgir file") from e
    except ValueError as e:  # a NUL byte in the path
        raise TtgirError(f"{path!r}: not a file name ({e}); give the path of a .ttgir file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TtgirError(f"{path}: not UTF-8 text (a bad byte at offset {e.start}): give the text of "
                         "kernel.asm['ttgir']") from None
    mod = parse(text, str(path))

    from protosim.arch import available

    if arch is None:
        arch = TARGET_ARCH.get(mod.capability)
        if arch is None:
            raise TtgirError(f"{path}: target {mod.target}: no profile; pass an arch (h200 or gb10)")
    elif not isinstance(arch, str) or arch.lower() not in available():
        raise TtgirError(f"{path}: arch {arch!r}: no such profile; use one of {', '.join(available())}")
    arch = arch.lower()
    check_ops(mod, arch)

    side = sidecar(path, ".launch.json")
    from_file = load_launch(path)
    check_launch(mod, from_file, f"launch file {side}")
    if launch is not None:
        check_launch(mod, launch, "the launch given to read()")
    launch = merge_launch(path, from_file, launch, side)
    check_metadata(mod, path)
    meta = metadata(path) or {}
    mod.metadata_shared = meta.get("shared")
    mod.ldg_in_flight = meta.get("ldg_in_flight")
    mod.wgmma_serialized = meta.get("wgmma_serialized")
    if meta.get("enable_fp_fusion") is False:  # compiled without FMA contraction
        mod.fused_adds = frozenset()

    from protosim.arch import load_profile

    limit = load_profile(arch).smem_per_cta_bytes
    if mod.shared_bytes > limit:
        big = max(mod.allocs.values(), key=lambda m: m.bytes)
        raise _err(path, big.line, f"the kernel needs {mod.shared_bytes:,} B of shared memory ({mod.shared_source}); "
                   f"the {arch} profile allows {limit:,} B per CTA (Triton would fail with 'out of resources'): fewer "
                   "stages or smaller tiles")

    grid = tuple(launch["grid"]) + (1,) * (3 - len(launch["grid"])) if "grid" in launch else None
    ctas = launch.get("ctas", grid[0] * grid[1] * grid[2] if grid else 1)
    launch_name = str(side) if side.exists() else f"{side} (none beside the TTGIR)"
    if ctas > max_ops:
        raise TtgirError(f"{path}: ctas = {ctas:,}: at least one op per CTA is more than the limit of {max_ops:,} "
                         f"schedule ops; give fewer ctas in {launch_name} or raise the limit: read(..., max_ops=N), "
                         "protosim --max-ops N")
    walker = Walker(mod, launch, max_ops=max_ops, ctas=ctas, launch_name=launch_name, grid=grid)
    walker.run(mod.body)
    walkers = [walker]
    if walker.per_cta_control and ctas > 1:  # a persistent kernel: each CTA's loop depends on its program id
        walkers = []  # CTA 0 again, keying its reads by its own values as every other CTA's walk does
        for cta in range(ctas):
            walkers.append(Walker(mod, launch, max_ops=max_ops, ctas=ctas, launch_name=launch_name, grid=grid, cta=cta,
                                  exact_keys=True))
            walkers[-1].run(mod.body)
        walker = walkers[0]
    if not walker.op_count:
        raise TtgirError(f"{path}: @{mod.func} has no op the reader models (shared-memory copies and loads, MMAs, "
                         "mbarriers) with this launch: nothing to judge")
    cost = walker.cost if len(walkers) == 1 else sum(w.op_count + w.iterations for w in walkers)
    if cost > max_ops:
        raise TtgirError(f"{path}: {ctas:,} CTAs x {walker.op_count:,} ops: about {cost:,} schedule ops, above "
                         f"the limit of {max_ops:,}; give fewer ctas in {launch_name} or raise the limit: "
                         "read(..., max_ops=N), protosim --max-ops N")
    tmem = [m for m in mod.allocs.values() if m.space == "tmem"]
    per_walk = []
    for w in walkers:
        role_ops = resolve([r.ops for r in w.roles], w.pipelined)
        if tmem:  # Triton allocates the kernel's TMEM once, at entry, and frees it at exit (AllocateTensorMemory)
            columns = _tmem_columns(mod, tmem)
            role_ops[0] = [TmemAlloc(columns=columns, issuer="warp0"), *role_ops[0],
                           TmemDealloc(columns=columns, issuer="warp0")]
        per_walk.append(role_ops)
    parts = max(r.warps for r in walker.roles)
    buffers = tuple(BufferDecl(m.name, "tmem", m.stages, columns=m.columns, parts=parts) if m.space == "tmem"
                    else BufferDecl(m.name, "smem", m.stages, m.stage_bytes, parts=parts, align=16)
                    for m in mod.allocs.values() if not m.barrier)
    barriers = tuple(BarrierDecl(name, count) for name, count in walker.barrier_counts.items())
    # Each CTA computes its own output tile: tagging its ops with it lets a data hazard
    # name the tile it corrupts (the schedule's outcome is derived from those tiles).
    programs = [tuple(tuple(dataclasses.replace(op, tile=(i, 0)) for op in ops) for ops in per_walk[i % len(per_walk)])
                for i in range(ctas)]
    if len(walkers) == 1 and ctas > 1:
        programs = _rekeyed(programs, walker)
    schedule = Schedule(
        name=f"ttgir:{mod.func}",
        arch=arch,
        barriers=barriers,
        buffers=buffers,
        roles=tuple(RoleDecl(r.name, r.warps) for r in walker.roles),
        ctas=tuple(CtaProgram(i, program) for i, program in enumerate(programs)),
        # Registers limit how many CTAs an SM holds, when the compile's metadata says how many
        # (n_regs: the driver's count, which a runner adds; Triton's own metadata and the TTGIR lack it).
        regs_per_thread=meta.get("n_regs") or 0,
        config={"source": str(path), "target": mod.target, "num_warps": mod.num_warps, "launch": launch,
                "walks": len(walkers),
                "shared_bytes": mod.shared_bytes, "shared_source": mod.shared_source,
                # registers ptxas spilled to local memory: traffic the replay does not time
                **({"n_spills": meta["n_spills"]} if meta.get("n_spills") else {})},
    )
    try:
        validate(schedule)
    except ScheduleError as e:  # the checks above should leave nothing for this; the input is still at fault
        raise TtgirError(f"{path}: the schedule read from it is inconsistent ({e}); the TTGIR is hand-edited past "
                         "what the reader checks -- please report it") from None
    return schedule, mod


def _rekeyed(programs: list, walker) -> list:
    """Each CTA's global reads keyed with its own program id's values (``Walker.global_key``):
    one walk, CTA 0's, stands for every CTA, so the per-CTA scalars in a key are re-evaluated
    for each (``Walker.values_for``).  Keys without such scalars are the same in every CTA."""
    spots = [(r, j) for r, ops in enumerate(programs[0]) for j, op in enumerate(ops)
             if isinstance(getattr(op, "src", None), str) and key_roots(op.src)]
    if not spots:
        return programs
    names = {n for r, j in spots for n in key_roots(programs[0][r][j].src)}
    out = [programs[0]]
    for i in range(1, len(programs)):
        values = walker.values_for(i, names)
        roles = [list(ops) for ops in programs[i]]
        for r, j in spots:
            roles[r][j] = dataclasses.replace(roles[r][j], src=rekeyed(roles[r][j].src, values))
        out.append(tuple(tuple(ops) for ops in roles))
    return out


def _tmem_columns(mod: Ttgir, tmem: list) -> int:
    """The kernel's TMEM allocation: Triton's ``ttg.tensor_memory_size`` when the IR carries
    it, else the buffers' columns added up; ``tcgen05.alloc`` takes a power of two >= 32."""
    need = mod.module_tmem if mod.module_tmem else sum(m.columns * m.stages for m in tmem)
    columns = 32
    while columns < need:
        columns *= 2
    return columns
