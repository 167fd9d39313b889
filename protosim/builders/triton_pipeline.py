"""Triton's ``num_stages`` software pipeline for ``tl.dot`` matmuls, as a builder.

The op stream is what Triton 3.6 emits for the second seed's kernel (global -> shared
through ``cp.async`` groups, ``async_wait``, then the MMA), read off its TTGIR:

* **mma.sync targets** (sm_8x, sm_12x; profile ``gb10``): ``num_stages - 1`` stage
  buffers; the prologue copies k-tiles ``0 .. S-2`` (one group per operand); each
  iteration waits with ``async_wait {num = 2 (S - 2)}``, loads both fragments
  (``local_load``), runs ``mma.sync``, then refills the stage it just read with
  k-tile ``i + S - 1``;
* **wgmma targets** (sm_90; profile ``h200``): ``num_stages`` buffers; the prologue
  copies k-tiles ``0 .. S-2``; each iteration waits with ``{num = 2 (S - 2)}``, issues
  the wgmma on the stage (it reads shared memory itself), waits until one wgmma is
  pending, then refills the stage the previous wgmma read;
* both end with the accumulator's conversion to fp16 and the C tile's ``tt.store`` (16-byte
  ``st.global`` instructions).

Barriers sit where Triton's membar pass puts them and tiles are tagged as the TTGIR
reader tags them (``protosim.frontends.ttgir``), so for the same configuration the
builder and the reader produce the same schedule -- ``tests/test_triton_pipeline.py``
checks that against every Triton fixture.

Bug knobs: ``wait_delta`` (the in-loop ``async_wait`` lets that many more groups stay
in flight), ``alias_stages`` (every copy lands in stage 0), ``pendings_delta``
(wgmma: the in-loop ``warp_group_dot_wait`` allows that many more in flight).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from protosim._dataclass_cache import DataclassCache
from protosim.config import F16_BYTES as F16
from protosim.config import ConfigError
from protosim.ir import (
    WARP_PART,
    Access,
    BufferDecl,
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    CtaProgram,
    CtaSync,
    Fence,
    GlobalStore,
    LocalLoad,
    MmaSync,
    Op,
    RegisterMath,
    RoleDecl,
    Schedule,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

MMA_KIND = {"gb10": "mma_sync", "h200": "wgmma"}


@dataclass(frozen=True)
class PipelineConfig:
    M: int = 64
    N: int = 64
    K: int = 256
    BLOCK_M: int = 64
    BLOCK_N: int = 64
    BLOCK_K: int = 32
    num_stages: int = 2
    num_warps: int = 4
    arch: str = "gb10"
    # bug knobs
    wait_delta: int = 0
    alias_stages: bool = False
    pendings_delta: int = 0

    @property
    def k_tiles(self) -> int:
        return -(-self.K // self.BLOCK_K)

    @property
    def buffers(self) -> int:
        """Stage buffers Triton allocates: one fewer than num_stages for mma.sync."""
        return self.num_stages if self.arch == "h200" else self.num_stages - 1

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PipelineConfig:
        known = {f.name: f for f in dataclasses.fields(cls)}
        for key, value in d.items():
            if key not in known:
                raise ConfigError(key, f"unknown field; known fields: {', '.join(known)}")
            want = bool if key == "alias_stages" else str if key == "arch" else int
            if isinstance(value, bool) != (want is bool) or not isinstance(value, want):
                raise ConfigError(key, f"{value!r} is not {'true/false' if want is bool else want.__name__}")
        cfg = cls(**d)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        for name in ("M", "N", "K", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps"):
            if getattr(self, name) < 1:
                raise ConfigError(name, f"{getattr(self, name)} must be >= 1")
        if not 1 <= self.num_warps <= 32 or self.num_warps & (self.num_warps - 1):
            raise ConfigError("num_warps", f"{self.num_warps}: Triton takes a power of two from 1 to 32 (at most 1024 threads)")
        if self.arch not in MMA_KIND:
            raise ConfigError("arch", f"{self.arch!r}: use gb10 (mma.sync) or h200 (wgmma)")
        if self.num_stages < 2:
            raise ConfigError("num_stages", f"{self.num_stages}: Triton pipelines loops from num_stages = 2")
        for dim, blk in (("M", "BLOCK_M"), ("N", "BLOCK_N")):
            if getattr(self, dim) % getattr(self, blk):
                raise ConfigError(dim, f"{dim}={getattr(self, dim)} is not a multiple of {blk}={getattr(self, blk)}")
        if self.arch == "gb10" and self.pendings_delta:
            raise ConfigError("pendings_delta", "mma.sync has no wgmma wait; the knob applies to arch = h200")
        if self.wait_delta < 0 or self.pendings_delta < 0:
            raise ConfigError("wait_delta", "the deltas count extra groups in flight; use >= 0")


def build(cfg: PipelineConfig) -> Schedule:
    cfg.validate()
    S, nbuf, warps = cfg.num_stages, cfg.buffers, cfg.num_warps
    a_bytes, b_bytes = cfg.BLOCK_M * cfg.BLOCK_K * F16, cfg.BLOCK_K * cfg.BLOCK_N * F16
    wgmma = cfg.arch == "h200"

    def stage(t: int) -> int:
        return 0 if cfg.alias_stages else t % nbuf

    def copies(t: int) -> list[Op]:
        # a copy for a k-tile past the last is issued with its mask off: zeros, no global read
        past = t >= cfg.k_tiles
        return [CpAsync(bytes=a_bytes // warps, dst=Access("a", stage(t), f"a#{t}", WARP_PART), src=f"a@{t}", zero_fill=past),
                CpAsyncCommit(),
                CpAsync(bytes=b_bytes // warps, dst=Access("b", stage(t), f"b#{t}", WARP_PART), src=f"b@{t}", zero_fill=past),
                CpAsyncCommit()]

    grid_m = cfg.M // cfg.BLOCK_M

    def of_cta(op: Op, c: int) -> Op:
        """CTA ``c``'s copy of an op: its tile, and its reads keyed by the tile row (A) or column
        (B) it reads -- CTA c is program (c % grid_m, c // grid_m) of Triton's 2-D launch grid, as
        the TTGIR reader keys them (``Walker.global_key``)."""
        if isinstance(op, CpAsync):  # A by the tile's row, B by its column
            where = f"m={c % grid_m}" if op.dst.buffer == "a" else f"n={c // grid_m}"
            return dataclasses.replace(op, tile=(c, 0), src=f"{op.src}|{where}")
        return dataclasses.replace(op, tile=(c, 0))

    ops: list[Op] = []
    for t in range(S - 1):  # prologue
        ops += copies(t)
    in_loop_wait = 2 * (S - 2) + cfg.wait_delta
    for i in range(cfg.k_tiles):
        ops += [CpAsyncWait(n=in_loop_wait), CtaSync()]
        read = i % nbuf
        if wgmma:
            # fence.proxy.async: the copies went through the generic proxy, wgmma reads through the
            # async one (Triton's lowering puts it after cp.async.wait + bar.sync; PTX of 3.6 and 3.9)
            ops += [Fence(fence="proxy_async"), Wgmma(m=cfg.BLOCK_M, n=cfg.BLOCK_N, k_elems=cfg.BLOCK_K,
                          reads=(Access("a", read, f"a#{i}"), Access("b", read, f"b#{i}"))),
                    WgmmaCommit(), WgmmaWait(n=1 + cfg.pendings_delta),
                    CtaSync()]  # membar (Triton 3.9's pass, printed): the refill rewrites a buffer the wgmma read
        else:
            ops += [LocalLoad(bytes=a_bytes // 2, src=Access("a", read, f"a#{i}")),
                    LocalLoad(bytes=b_bytes // 2, src=Access("b", read, f"b#{i}")),
                    MmaSync(m=cfg.BLOCK_M, n=cfg.BLOCK_N, k_elems=cfg.BLOCK_K),
                    CtaSync()]  # membar: the refill below rewrites a buffer the warps just read
        ops += copies(i + S - 1)
    if wgmma:
        ops.append(WgmmaWait(n=0))
    ops += [CpAsyncWait(n=0), CtaSync()]
    # the epilogue: the fp32 accumulator to fp16 (arith.truncf: one F2FP for two elements of a
    # thread's share), then the C tile's tt.store, each warp its share -- Triton's blocked layout
    # gives a thread 8 contiguous fp16 ({sizePerThread = [1, 8]} in every fixture): 16-byte st.global,
    # 32 contiguous lanes a warp instruction -- 4 lines, as the reader counts them (contiguous stores
    # have their own cost: docs/semantics.md "Global stores")
    per_thread = -(-cfg.BLOCK_M * cfg.BLOCK_N // (32 * warps))
    ops += [RegisterMath(half_rate=-(-per_thread // 2)),
            GlobalStore(bytes=cfg.BLOCK_M * cfg.BLOCK_N * F16 // warps, store_bytes=16, lines=4.0)]
    ctas = (cfg.M // cfg.BLOCK_M) * (cfg.N // cfg.BLOCK_N)
    return Schedule(
        name="triton_pipeline",
        arch=cfg.arch,
        barriers=(),
        buffers=(BufferDecl("a", "smem", nbuf, a_bytes, parts=warps, align=16),
                 BufferDecl("b", "smem", nbuf, b_bytes, parts=warps, align=16)),
        roles=(RoleDecl("warps", warps),),
        ctas=tuple(CtaProgram(c, (tuple(of_cta(op, c) for op in ops),)) for c in range(ctas)),
        config=cfg.to_dict(),
    )


_DATACLASSES.save()  # after the module's last dataclass
