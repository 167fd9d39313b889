"""``missing_proxy_fence``: data written through the generic proxy and read by the async
proxy with no ``fence.proxy.async`` between them.

Shared memory is reached through two proxies (PTX ISA, "Proxies" in the memory
consistency model): threads' ``st.shared`` and ``cp.async`` go through the *generic*
proxy; TMA (``cp.async.bulk``), wgmma and tcgen05 operand reads through the *async*
proxy.  A write becomes visible to the other proxy only after the writing thread executes
``fence.proxy.async``; a barrier or an mbarrier release alone does not carry it across.
So, per role and in program order:

* a generic write (``SmemStore``, ``ThreadCopy``, ``CpAsync``) makes its buffer stage
  *unfenced* for the writing role until the role's next ``Fence(proxy_async)``;
* a release (``Arrive``, ``ArriveExpectTx``, ``MmaCommit``) carries the role's unfenced
  stages to that phase of the barrier, and a ``Wait`` on the phase takes them on;
* an async-proxy read (``TmaStore`` source, ``Wgmma`` / ``Mma`` operand, ``TmemCopy``
  source) of a stage unfenced for the reading role -- written by itself, or acquired
  from a writer that released before fencing, with no fence of the reader's since -- is
  the finding.

Judged by program order, not time: the bug is there whatever the timing (a fence after
the arrive is too late).  The TTGIR reader puts in the fence Triton's lowering adds
between a role's own generic writes and its own async reads (``ProxyFenceInsertion``), so
on Triton output this reports what Triton cannot fix: a write published to another
partition unfenced -- Triton's sanitizer test
``test_fence_async_shared_across_warp_specialize``.  One finding per read op.
"""

from __future__ import annotations

from protosim.checkers.base import Finding
from protosim.ir import (
    Arrive,
    ArriveExpectTx,
    CpAsync,
    Fence,
    Mma,
    MmaCommit,
    SmemStore,
    ThreadCopy,
    TmaStore,
    TmemCopy,
    Wait,
    Wgmma,
)

KIND = "missing_proxy_fence"
GENERIC_WRITES = (SmemStore, ThreadCopy, CpAsync)
RELEASES = (Arrive, ArriveExpectTx, MmaCommit)


_KINDS = ((GENERIC_WRITES, "write"), (Fence, "fence"), (RELEASES, "release"), (Wait, "wait"),
          ((TmaStore, TmemCopy, Wgmma, Mma), "read"))
_ROLE: dict[type, str | None] = {}
"""What an op class is to this checker (None: it plays no part), by class: learnt once per class."""


def _role(cls: type) -> str | None:
    what = _ROLE[cls] = next((what for classes, what in _KINDS if issubclass(cls, classes)), None)
    return what


def _async_reads(op) -> tuple:
    if isinstance(op, (TmaStore, TmemCopy)):
        return (op.src,)
    if isinstance(op, (Wgmma, Mma)):
        return tuple(a for a in op.reads if a.cta is None)
    return ()


def check(result) -> list[Finding]:
    schedule = result.schedule
    findings: list[Finding] = []
    seen: set[tuple[str, int]] = set()  # one finding per read op of the program, in the first CTA it shows
    for cta in schedule.ctas:
        carried: dict[tuple[str, int], dict[tuple[str, int], str]] = {}
        for role, ops in zip(schedule.roles, cta.roles, strict=True):  # releases first: they are keyed by phase
            unfenced: dict[tuple[str, int], str] = {}
            for op in ops:
                cls = type(op)
                what = _ROLE[cls] if cls in _ROLE else _role(cls)
                if what is None:
                    continue
                if what == "write":
                    unfenced[(op.dst.buffer, op.dst.stage)] = role.name
                elif what == "fence":
                    if op.fence == "proxy_async":
                        unfenced.clear()
                elif what == "release" and unfenced:
                    carried.setdefault((op.barrier, op.use), {}).update(unfenced)
        for role, ops in zip(schedule.roles, cta.roles, strict=True):
            unfenced = {}
            for i, op in enumerate(ops):
                cls = type(op)
                what = _ROLE[cls] if cls in _ROLE else _role(cls)
                if what is None:
                    continue
                if what == "write":
                    unfenced[(op.dst.buffer, op.dst.stage)] = role.name
                elif what == "fence":
                    if op.fence == "proxy_async":
                        unfenced = {}  # the writer's fence, or the reader's after its acquire (either orders the proxies)
                elif what == "wait":
                    if carried:
                        unfenced.update(carried.get((op.barrier, op.use), {}))
                if not unfenced:
                    continue  # nothing unfenced: no read can be the finding
                for a in _async_reads(op):
                    writer = unfenced.get((a.buffer, a.stage))
                    if writer is not None and (role.name, i) not in seen:
                        seen.add((role.name, i))
                        whose = "its own" if writer == role.name else f"{writer}'s"
                        findings.append(Finding(
                            KIND, cta.index, role.name, i, 0.0,
                            f"CTA {cta.index}: {role.name} op #{i} ({op.kind}) reads {a.buffer}[{a.stage}] through the "
                            f"async proxy, but {whose} generic-proxy write of it was not followed by fence.proxy.async "
                            f"before {'the read' if writer == role.name else 'the release this role acquired it by'}: "
                            "the async proxy may not see it; put fence.proxy.async (fence_async_shared) after the "
                            "writes, before the arrive",
                            {"buffer": a.buffer, "stage": a.stage, "writer": writer}))
                        unfenced.pop((a.buffer, a.stage), None)
    return findings
