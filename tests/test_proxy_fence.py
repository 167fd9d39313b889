"""``missing_proxy_fence`` (protosim/checkers/proxy_fence.py): a generic-proxy write read by
the async proxy needs fence.proxy.async between them -- by the writer before its release,
or by the reader after its acquire; a fence after the arrive is too late."""

from __future__ import annotations

import pytest

from protosim.ir import (
    Access,
    Arrive,
    BarrierDecl,
    BufferDecl,
    BulkCommit,
    BulkWait,
    CtaProgram,
    Fence,
    MbarInit,
    CtaSync,
    RoleDecl,
    Schedule,
    SmemStore,
    TmaStore,
    Wait,
)
from protosim.verdict import judge

FENCE = Fence(fence="proxy_async")


def _schedule(producer_tail: list, consumer_head: list) -> Schedule:
    """A producer warp stores a tile and arrives; a consumer warp waits and TMA-stores it."""
    store = SmemStore(bytes=4096, dst=Access("D", 0, "D#0"))
    producer = (MbarInit(barrier="full", issuer="one"), CtaSync(), store, *producer_tail)
    consumer = (CtaSync(), Wait(barrier="full", parity=0, use=0), *consumer_head,
                TmaStore(bytes=4096, src=Access("D", 0, "D#0"), issuer="one"), BulkCommit(issuer="one"),
                BulkWait(n=0, issuer="one"))
    return Schedule(name="proxy", arch="h200", barriers=(BarrierDecl("full", 1),),
                    buffers=(BufferDecl("D", "smem", 1, 4096),),
                    roles=(RoleDecl("producer", 1), RoleDecl("consumer", 1)),
                    ctas=(CtaProgram(0, ((producer), (consumer))),))


ARRIVE = Arrive(barrier="full", use=0, issuer="one")
CASES = [
    ("no fence at all", [ARRIVE], [], True),
    ("the writer fences before its arrive", [FENCE, ARRIVE], [], False),
    ("the writer fences after its arrive: too late", [ARRIVE, FENCE], [], True),
    ("the reader fences after its wait", [ARRIVE], [FENCE], False),
]


@pytest.mark.parametrize("label, producer_tail, consumer_head, found", CASES, ids=[c[0] for c in CASES])
def test_missing_proxy_fence(label, producer_tail, consumer_head, found):
    verdict, _ = judge(_schedule(producer_tail, consumer_head))
    kinds = verdict.kinds()
    assert ("missing_proxy_fence" in kinds) == found, f"{label}: {kinds}"
