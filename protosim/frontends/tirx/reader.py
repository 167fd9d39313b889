"""A TIRx PrimFunc and its launch -> a :class:`protosim.ir.Schedule` (docs/tirx.md).

The program is compiled once (:mod:`.interp`), run once per CTA with a
:class:`~.recognize.Recognizer` collecting its protocol ops, and the raw ops become a
schedule (:mod:`.tags`): roles, issuers, storage, then ``use`` and ``content``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterable, Mapping
from typing import Any

from protosim.arch import UnknownArch, load_profile
from protosim.frontends.tirx.errors import TirxError
from protosim.frontends.tirx.interp import compile_func
from protosim.frontends.tirx.recognize import Raw, Recognizer, tensor_maps
from protosim.frontends.tirx.tags import Storage, derive_tags, drafts_for_role, find_roles, finish_copy, finish_wgmma
from protosim.gcpause import gc_paused
from protosim.ir import L2_AT_LAUNCH, CtaProgram, RoleDecl, Schedule, ScheduleError, validate

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
            workers: int | None = None) -> Schedule:
    """Interpret ``func`` for every CTA of its grid (or those in ``ctas``) with the scalar
    parameters ``args`` (a missing one is 0) and return its schedule on ``arch``.

    ``workers``: processes that interpret CTAs side by side (forked, so the compiled program
    is shared; default: every core for grids of :data:`PARALLEL_FROM` CTAs or more, where
    the fork pays for itself; 1 for none).  The schedule is the same either way.

    Raises :class:`TirxError` for a construct outside the supported subset, naming its line."""
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
    maps = tensor_maps(program)
    indices = list(range(program.n_ctas)) if ctas is None else sorted(set(ctas))
    for i in indices:
        if not 0 <= i < program.n_ctas:
            raise TirxError(f"CTA {i}: the grid has {program.n_ctas} CTAs (0..{program.n_ctas - 1})")
    n_workers = _workers(workers, len(indices))
    if n_workers > 1:
        roles, storage, programs = _in_workers(program, maps, indices, n_workers, profile.clock_ghz)
    else:
        raws, aliases = _interpret(program, maps, indices)
        roles = find_roles(raws, program.threads)
        storage = Storage(raws, roles, aliases)
        programs = _finish(indices, raws, roles, storage, profile.clock_ghz)
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
    )
    try:
        validate(schedule)
    except ScheduleError as e:
        raise TirxError(f"the extracted schedule is not valid ({e}); a frontend gap -- please report it") from None
    return schedule


PARALLEL_FROM = 32
"""CTAs from which extraction forks workers by default (a small grid is faster in one process)."""


def _workers(workers: int | None, n_ctas: int) -> int:
    if workers is not None:
        if workers < 1:
            raise TirxError(f"workers = {workers}; give 1 or more processes")
        return min(workers, n_ctas)
    if n_ctas < PARALLEL_FROM or "fork" not in mp.get_all_start_methods():
        return 1
    return max(1, min(os.cpu_count() or 1, n_ctas))


def _interpret(program: Any, maps: dict, indices: list[int]) -> tuple[list[list[Raw]], dict[str, str]]:
    """Run each CTA of ``indices``: its raw ops, and the barrier names call sites gave."""
    raws = []
    aliases: dict[str, str] = {}
    for i in indices:
        rec = Recognizer(maps, aliases)
        program.run_cta(i, rec)
        raws.append(rec.ops)
    return raws, aliases


def _finish(indices: list[int], raws: list[list[Raw]], roles: list, storage: Storage, clock_ghz: float) -> list[CtaProgram]:
    """Raw ops -> each CTA's program (drafts per role, folded ops, then the tags)."""
    programs = []
    issuers: list[dict] = [{} for _ in roles]  # per role: issuer by (interned mask, kind)
    for i, cta_raws in zip(indices, raws):
        drafts = [drafts_for_role(cta_raws, role, storage, clock_ghz, cache) for role, cache in zip(roles, issuers)]
        for role_drafts in drafts:
            for d in role_drafts:
                if d.raw.kind == "wgmma":
                    finish_wgmma(d)
                elif "_glob" in d.f:
                    finish_copy(d)
        programs.append(CtaProgram(i, tuple(tuple(ops) for ops in derive_tags(drafts))))
    return programs


def _representatives(raws: list[list[Raw]]) -> list[Raw]:
    """One raw op per distinct (kind, threads, storage it names): all that roles and storage
    are decided from (``find_roles``, ``Storage``), small enough to send between processes."""
    out, seen = [], set()
    for cta in raws:
        for r in cta:
            f = r.f
            key = (r.kind, id(r.mask), *((k, _storage_key(v)) for k, v in f.items() if k in STORAGE_FIELDS))
            if key not in seen:
                seen.add(key)
                out.append(r)
    return out


STORAGE_FIELDS = ("bar", "count", "dst", "src", "reads", "writes")


def _storage_key(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_storage_key(x) for x in v)
    if hasattr(v, "buf"):
        return (v.buf.name, getattr(v, "offset", None), getattr(v, "elems", None))
    return v if isinstance(v, (int, str)) else None


def _worker(program: Any, maps: dict, indices: list[int], conn: Any, clock_ghz: float) -> None:
    """A forked worker: interpret its CTAs, send what roles and storage need, receive them,
    send its CTAs' programs."""
    try:
        raws, aliases = _interpret(program, maps, indices)
        conn.send(("ok", _representatives(raws), aliases))
        roles, storage = conn.recv()
        conn.send(("ok", _finish(indices, raws, roles, storage, clock_ghz)))
    except TirxError as e:
        conn.send(("error", str(e)))
    except Exception as e:  # noqa: BLE001 - carried to the parent, which raises it as its own
        conn.send(("crash", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _in_workers(program: Any, maps: dict, indices: list[int], n: int, clock_ghz: float):
    """:func:`_interpret` + :func:`_finish` over ``n`` forked processes, contiguous chunks of
    CTAs each; roles and storage are decided here from every worker's representatives."""
    ctx = mp.get_context("fork")
    size = -(-len(indices) // n)
    chunks = [indices[k:k + size] for k in range(0, len(indices), size)]
    procs = []
    for chunk in chunks:
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(program, maps, chunk, child, clock_ghz), daemon=True)
        p.start()
        child.close()
        procs.append((p, parent))
    try:
        reps, aliases = [], {}
        for _, conn in procs:
            reply = _receive(conn)
            reps.append(reply[1])
            for k, v in reply[2].items():
                aliases.setdefault(k, v)
        roles = find_roles(reps, program.threads)
        storage = Storage(reps, roles, aliases)
        for _, conn in procs:
            conn.send((roles, storage))
        programs = []
        for _, conn in procs:
            programs += _receive(conn)[1]
        return roles, storage, programs
    finally:
        for p, conn in procs:
            conn.close()
            p.join(timeout=5)
            if p.is_alive():
                p.kill()


def _receive(conn: Any) -> tuple:
    try:
        reply = conn.recv()
    except EOFError:
        raise RuntimeError("a TIRx extraction worker died without a word (out of memory?)") from None
    if reply[0] == "error":
        raise TirxError(reply[1])
    if reply[0] == "crash":
        raise RuntimeError(f"a TIRx extraction worker failed: {reply[1]}")
    return reply
