"""Which TTGIR ops the reader models, which it ignores, and which hardware each needs:
the check that refuses, before any walking, an op it does not know or the target lacks."""

from __future__ import annotations

from typing import Any

from protosim.frontends.ttgir.text import _LOOP, _OPERAND, Ttgir, _err, _walk, operand_head
from protosim.frontends.ttgir.walk import _HANDLERS

_HANDLED = frozenset({*_HANDLERS, "scf.yield", "ttg.warp_yield", "ttg.warp_return", "ttng.tmem_alloc"})
"""Ops with a rule in the walk (``protosim.frontends.ttgir.walk``), and the region terminators."""
_IGNORED = frozenset({
    # registers only: no shared-memory access the model needs, no synchronization (tt.load and
    # tt.store, global memory through registers, are timed: protosim.frontends.ttgir.registers)
    "tt.addptr", "tt.advance", "tt.assert", "tt.bitcast", "tt.broadcast", "tt.cat",
    "tt.clampf", "tt.expand_dims", "tt.extern_elementwise", "tt.fp_to_fp", 
    "tt.histogram", "tt.int_to_ptr", "tt.join", "tt.make_range", "tt.make_tensor_ptr", "tt.mulhiui",
    "tt.precise_divf", "tt.precise_sqrt", "tt.print", "tt.ptr_to_int", "tt.reduce", "tt.reduce.return", "tt.reshape",
    "tt.return", "tt.scan", "tt.scan.return", "tt.splat", "tt.split", "tt.trans", "tt.unsplat",
    "ttg.convert_layout", "ttg.local_dealloc", "ttg.global_scratch_alloc", "ub.poison",
    "tt.make_tensor_descriptor", "tt.dot_scaled", "tt.gather", "tt.map_elementwise",
    "tt.map_elementwise.return", "ttg.fp4_to_fp", "ttg.upcast_mxfp",
    # a TMA load or store into registers: Triton allocates its staging buffer and barrier below
    # the TTGIR and waits for it before the op returns, so no protocol of the kernel's own is exposed
    "tt.descriptor_load", "tt.descriptor_store", "tt.descriptor_gather", "tt.descriptor_scatter",
    "tt.descriptor_reduce",
    # the TMA descriptor's setup and the barriers' teardown
    "ttng.tensormap_create", "ttng.tensormap_fenceproxy_acquire", "ttng.reinterpret_tensor_descriptor",
})
_IGNORED_DIALECTS = ("arith.", "math.")
"""Scalar integer arithmetic is evaluated; the rest of these is register math."""

_FEATURES = {
    "wgmma": ("wgmma (warp-group MMA)", "sm_90a only"),
    "tma": ("TMA (tensor descriptors, cp.async.bulk.tensor, mbarrier expect_tx)", "sm_90 or newer"),
    "tcgen05": ("tcgen05 (5th-generation tensor cores, Tensor Memory)", "sm_100a / sm_101a / sm_103a / sm_110a"),
    "cp.async": ("cp.async", "sm_80 or newer"),
}


def _needs(op: str) -> str | None:
    """The hardware unit an op needs beyond mma.sync-era SIMT (None: any sm_80+ target)."""
    if op in ("ttng.warp_group_dot", "ttng.warp_group_dot_wait"):
        return "wgmma"
    if op.startswith(("ttng.tc_gen5", "ttng.tmem_")):
        return "tcgen05"
    if op.startswith(("ttng.async_tma_", "ttng.tensormap_", "tt.descriptor_")) or op in (
            "ttng.barrier_expect", "ttng.reinterpret_tensor_descriptor", "tt.make_tensor_descriptor"):
        return "tma"
    if op.startswith("ttg.async_copy"):
        return "cp.async"
    return None


def _hardware_has(cap: int, feature: str) -> bool:
    """PTX ISA: wgmma needs sm_90a; cp.async.bulk.tensor sm_90+; tcgen05 sm_100a/101a/103a/110a; cp.async sm_80+."""
    return {"wgmma": cap == 90, "tma": cap >= 90, "tcgen05": cap in (100, 101, 103, 110), "cp.async": cap >= 80}[feature]


def _profile_lacks(profile: Any, feature: str) -> str | None:
    """Why the arch profile cannot replay a feature (None: it can)."""
    if feature == "wgmma" and profile.mma_kind != "wgmma":
        return f"its MMA is {profile.mma_kind}"
    if feature == "tcgen05" and profile.mma_kind != "tcgen05":
        return f"its MMA is {profile.mma_kind}"
    if feature == "tma" and not profile.tma_available:
        return profile.constants["tma_available"].source
    return None


def check_ops(mod: Ttgir, arch: str) -> None:
    """Refuse, before any walking, an op the reader does not model or the target cannot run."""
    from protosim.arch import load_profile

    profile = load_profile(arch)
    cap = int(mod.capability)

    def feature_ok(op: str, line: int, feature: str) -> None:
        what, where = _FEATURES[feature]
        if not _hardware_has(cap, feature):
            raise _err(mod.path, line, f"{op} needs {what}, which exists on {where}; the module's target {mod.target} "
                       f"(sm_{cap}) has none, so Triton does not emit it for this target: give the TTGIR Triton "
                       f"compiled for sm_{cap}, or compile the kernel for a target that has {feature}")
        why = _profile_lacks(profile, feature)
        if why:
            raise _err(mod.path, line, f"{op} needs {what}; target {mod.target} is replayed on the {arch} profile, "
                       f"which has none ({why}): read a compile for sm_90 (the h200 profile) instead")

    if any(a.type == "!tt.tensordesc" for a in mod.arg_info.values()):
        feature_ok("a !tt.tensordesc argument", mod.func_line, "tma")
    for st in _walk(mod.body):
        feature = _needs(st.op)
        if feature:
            feature_ok(st.op, st.line, feature)
        if st.op not in _HANDLED and st.op not in _IGNORED and not st.op.startswith(_IGNORED_DIALECTS):
            raise _err(mod.path, st.line, f"{st.op} is not an op the reader models (it reads shared-memory and TMEM "
                       "traffic: cp.async / TMA copies and stores, local loads and stores, tt.dot, wgmma, tcgen05, mbarriers, "
                       "warp_specialize partitions); ignoring it could hide "
                       "or invent a hazard -- please report the kernel")
        if st.op == "scf.for":
            header = _LOOP.match(st.rest)
            if not header:
                raise _err(mod.path, st.line, "cannot read this scf.for header (%iv = %lb to %ub step %step)")
            carried = [p for p in (header.group(5) or "").split(",") if "=" in p]
            y = next((s for s in st.body if s.op == "scf.yield"), None)
            yielded = _OPERAND.findall(operand_head(y.rest)) if y else []
            if len(yielded) != len(carried):
                raise _err(mod.path, y.line if y else st.line,
                           f"the scf.for at line {st.line} carries {len(carried)} value(s) but its scf.yield gives "
                           f"{len(yielded)}: not valid TTGIR (a line deleted or cut?)")

