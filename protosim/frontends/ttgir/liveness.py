"""Which ``ttng.warp_group_dot`` results no op ever reads: ptxas deletes those wgmmas.

A wgmma's accumulator lives in registers.  When nothing reads it -- it only feeds the next
dot's accumulator, a ``warp_group_dot_wait``, a loop's carried value, and finally nothing
(a test kernel that never stores its product) -- ptxas removes the ``wgmma.mma_async``
instructions.  It keeps one placeholder per dot, ``HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ``,
so the group's fence, commit and wait still have an instruction to order: in the SASS of
the Gluon corpus's ``wgmma_ring`` (Triton 3.9, sm_90a, read with cuobjdump), the loop body's
64 ``wgmma.mma_async.m64n32k16`` of the PTX are one such HGMMA.  On the H200 that kernel ran
its ten 128x128x128 dots in 6.6 us of kernel-only time, 3.9 us past an empty kernel's: less
than the tensor core needs for them (docs/triton.md, "A dot nothing reads is deleted").

The rule, over the function's SSA values (an over-approximation: a value is read when any op
other than those below names it, so a dot is kept whenever in doubt):

* ``warp_group_dot %a, %b, %c``: the accumulator ``%c`` flows into the result (``%a``, ``%b``
  are read);
* ``warp_group_dot_wait``: its operands flow into its results;
* ``scf.for``'s ``iter_args(%x = %init)``: ``%init`` flows into ``%x``; the body's
  ``scf.yield`` flows into the iter_args and the loop's results; an ``scf.if``'s yields into
  its results.

A dot is dead when nothing that reads is reachable from its result.  Only ``warp_group_dot``:
a tcgen05 MMA writes Tensor Memory (not registers), and an ``mma.sync``'s deletion was not read
from SASS here.
"""

from __future__ import annotations

from collections import defaultdict

from protosim.frontends.ttgir.text import _OPERAND, _PAIR, Stmt, operand_head

def _names(st: Stmt) -> list[list[str]]:
    """Each result's names: ``%r`` for one result, ``%r`` / ``%r#j`` for several (``%r:3``)."""
    if not st.results:
        return []
    base, _, count = st.results[0].partition(":")
    n = int(count) if count.isdigit() else max(1, len(st.results))
    if len(st.results) > 1:  # results written out one by one
        return [[r.split(":")[0]] for r in st.results]
    return [[base, f"{base}#0"]] + [[f"{base}#{j}"] for j in range(1, n)]


def dead_dots(body: list[Stmt]) -> frozenset[int]:
    """The lines of the ``ttng.warp_group_dot`` statements whose result nothing reads."""
    flows: dict[str, set[str]] = defaultdict(set)  # value -> the values that carry it on
    read: set[str] = set()
    dots: dict[int, list[str]] = {}

    def visit(stmts: list[Stmt], parent: Stmt | None, carried: list[str]) -> None:
        for st in stmts:
            ops = _OPERAND.findall(operand_head(st.rest))
            results = _names(st)
            if st.op == "ttng.warp_group_dot":
                read.update(ops[:2])
                read.update(ops[3:])  # useC and the rest
                dots[st.line] = [n for names in results for n in names]
                if len(ops) > 2:
                    flows[ops[2]].update(dots[st.line])
            elif st.op == "ttng.warp_group_dot_wait":
                for o in ops:
                    for names in results:
                        flows[o].update(names)
            elif st.op == "scf.yield" and parent is not None and parent.op in ("scf.for", "scf.if"):
                outs = _names(parent)
                for j, o in enumerate(ops):
                    targets = (outs[j] if j < len(outs) else []) + ([carried[j]] if j < len(carried) else [])
                    if targets:
                        flows[o].update(targets)
                    else:
                        read.add(o)
            elif st.op == "scf.for":
                header, _, _ = st.rest.partition("iter_args(")
                read.update(_OPERAND.findall(header))
                pairs = _PAIR.findall(st.rest.split("iter_args(", 1)[1].split(")")[0]) if "iter_args(" in st.rest else []
                for name, init in pairs:
                    flows[init].add(name)
                for reg in st.regions:
                    visit(reg.stmts, st, [name for name, _ in pairs])
                continue
            else:
                read.update(ops)
            for reg in st.regions:
                visit(reg.stmts, st, [])

    visit(body, None, [])
    dead = set()
    for line, names in dots.items():
        seen, todo = set(names), list(names)
        live = False
        while todo and not live:
            v = todo.pop()
            if v in read:
                live = True
            for w in flows.get(v, ()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        if not live:
            dead.add(line)
    return frozenset(dead)
