"""A TIRx PrimFunc and its launch -> a :class:`protosim.ir.Schedule` (docs/tirx.md).

The program is compiled once (:mod:`.interp`), run once per CTA with a
:class:`~.recognize.Recognizer` collecting its protocol ops, and the raw ops become a
schedule (:mod:`.tags`): roles, issuers, storage, then ``use`` and ``content``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from protosim.arch import UnknownArch, load_profile
from protosim.frontends.tirx.errors import TirxError
from protosim.frontends.tirx.interp import compile_func
from protosim.frontends.tirx.recognize import MAX_OPS, Budget, Raw, Recognizer, tensor_maps
from protosim.frontends.tirx.tags import Storage, derive_tags, drafts_for_role, find_roles, finish_copy, finish_wgmma
from protosim.gcpause import gc_paused
from protosim.ir import L2_AT_LAUNCH, CtaProgram, RoleDecl, Schedule, ScheduleError, validate
from protosim.ptxas import as_compiled, with_copy_streams

ARCH_OF_MMA = {"tcgen05": "b200", "wgmma": "h200"}


def infer_arch(func: Any) -> str:
    """The arch a kernel is written for, from the MMA family it calls."""
    text = func.script()
    if "tcgen05" in text:
        return ARCH_OF_MMA["tcgen05"]
    if "wgmma" in text:
        return ARCH_OF_MMA["wgmma"]
    raise TirxError("the kernel issues neither tcgen05 nor wgmma MMAs, so its arch cannot be inferred; "
                    "pass it (--set arch=h200, or arch= in Python)")


@gc_paused()
def extract(func: Any, arch: str | None = None, *, args: Mapping[str, int] | None = None, name: str | None = None,
            ctas: Iterable[int] | None = None, l2_at_launch: str = "cold", config: dict[str, Any] | None = None,
            max_ops: int = MAX_OPS) -> Schedule:
    """Interpret ``func`` for every CTA of its grid (or those in ``ctas``) with the scalar
    parameters ``args`` (a missing one is 0) and return its schedule on ``arch``.

    Raises :class:`TirxError` for a construct outside the supported subset, naming its line,
    and for a kernel that issues more than ``max_ops`` ops or runs more than
    :data:`~.recognize.MAX_LOOP_STEPS` loop iterations (checked as it runs: a huge grid or an
    endless loop is refused in seconds, not after it)."""
    if l2_at_launch not in L2_AT_LAUNCH:
        raise TirxError(f"l2_at_launch = {l2_at_launch!r}; use 'cold' or 'inputs'")
    arch = arch or infer_arch(func)
    try:
        profile = load_profile(arch)
    except UnknownArch as e:
        raise TirxError(str(e)) from None
    args = dict(args or {})
    for key, value in args.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TirxError(f"argument {key} = {value!r}: the kernel's scalar parameters take integers")
    program = compile_func(func, args)
    cluster = program.cluster
    if cluster > 1 and cluster > profile.max_cluster_size:
        raise TirxError(f"a cluster of {cluster} CTAs ({'x'.join(map(str, program.cluster_dims))}); "
                        + (f"{profile.name} has no thread-block clusters" if not profile.max_cluster_size else
                           f"{profile.name} launches clusters of at most {profile.max_cluster_size}"))
    maps = tensor_maps(program)
    indices = list(range(program.n_ctas)) if ctas is None else sorted(set(ctas))  # n_ctas is bounded (interp)
    for i in indices:
        if not 0 <= i < program.n_ctas:
            raise TirxError(f"CTA {i}: the grid has {program.n_ctas} CTAs (0..{program.n_ctas - 1})")
    if cluster > 1:
        missing = sorted({c * cluster + r for c in {i // cluster for i in indices} for r in range(cluster)} - set(indices))
        if missing:
            raise TirxError(f"CTA(s) {missing[:8]} of the clusters asked for are missing; a cluster of {cluster} CTAs "
                            "runs together -- pass every CTA of each cluster (CTAs c*cluster .. c*cluster + cluster-1)")
    raws, aliases, splits = _interpret(program, maps, indices, Budget(max_ops), cluster)
    roles = find_roles(raws, program.threads, splits)
    storage = Storage(raws, roles, aliases, cluster)
    programs = _finish(indices, raws, roles, storage, profile.clock_ghz, cluster)
    barriers, buffers = storage.decls()
    schedule = Schedule(
        name=name or func.attrs.get("global_symbol", "kernel") if func.attrs is not None else (name or "kernel"),
        arch=profile.name,
        barriers=barriers,
        buffers=buffers,
        roles=tuple(RoleDecl(n, w) for n, _, w in roles),
        ctas=tuple(programs),
        l2_at_launch=l2_at_launch,
        config={"frontend": "tirx", "args": args, **(config or {})},
        cluster=cluster,
    )
    try:
        validate(schedule)
    except ScheduleError as e:
        raise TirxError(f"the extracted schedule is not valid ({e}); a frontend gap -- please report it") from None
    return schedule


def _interpret(program: Any, maps: dict, indices: list[int], budget: Budget,
               cluster: int = 1) -> tuple[list[list[Raw]], dict[str, str], list]:
    """Run each CTA of ``indices``: its raw ops, the barrier names call sites gave, and the
    thread groups op sites were split into (``Recognizer.splits``).
    After the first CTA, a grid whose CTAs would together pass the op budget is refused."""
    raws = []
    splits: list = []
    aliases: dict[str, str] = {}
    for n, i in enumerate(indices):
        rec = Recognizer(maps, aliases, budget, cluster)
        program.run_cta(i, rec)
        raws.append(rec.ops)
        splits += rec.splits
        if n == 0 and len(rec.ops) * len(indices) > budget.max_ops:
            raise TirxError(f"about {len(rec.ops) * len(indices):,} ops ({len(rec.ops):,} in CTA {i}, {len(indices):,} "
                            f"CTAs), more than the limit of {budget.max_ops:,}; pass --max-ops "
                            f"{len(rec.ops) * len(indices)} to read it, or launch fewer CTAs / a smaller problem")
    return raws, aliases, splits


def _finish(indices: list[int], raws: list[list[Raw]], roles: list, storage: Storage, clock_ghz: float,
            cluster: int = 1) -> list[CtaProgram]:
    """Raw ops -> each CTA's program (drafts per role, folded ops, then the tags -- a
    cluster's CTAs together: a remote arrive or a multicast hands data from one to another)."""
    programs = []
    issuers: list[dict] = [{} for _ in roles]  # per role: issuer by (interned mask, kind)
    for start in range(0, len(indices), cluster):
        group = []
        for i, cta_raws in zip(indices[start:start + cluster], raws[start:start + cluster]):
            drafts = [drafts_for_role(cta_raws, role, storage, clock_ghz, cache) for role, cache in zip(roles, issuers)]
            for role_drafts in drafts:
                for d in role_drafts:
                    if d.raw.kind == "wgmma":
                        finish_wgmma(d)
                    elif "_glob" in d.f:
                        finish_copy(d)
            group.append(drafts)
        for i, ops in zip(indices[start:start + cluster], derive_tags(group)):
            programs.append(CtaProgram(i, tuple(as_compiled(with_copy_streams(tuple(role_ops))) for role_ops in ops)))
    return programs
