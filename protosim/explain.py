"""``protosim explain``: the first finding of a replay told as a story.

Which wait, with which parity, for which phase; which phase had completed and
when; when the paired producer finished; what was overwritten or read too
early as a consequence; and the outcome.  Everything is read from the
findings' evidence and the event log -- nothing here re-judges the run.
"""

from __future__ import annotations

from protosim.checkers import Finding, undefined_behavior
from protosim.checkers.base import cyc, describe_producer, producers
from protosim.engine import RunResult
from protosim.verdict import Verdict

# Root causes before consequences when two findings share a cycle.
PRIORITY = ("capacity", "launch_failure", "unsupported", "early_return", "wrong_parity", "lapped_wait",
            "tx_mismatch", "overissue", "arrival_underflow", "tx_out_of_range", "use_before_init",
            "reinit_without_inval", "count_out_of_range", "raw_hazard", "war_hazard", "deadlock", "incomplete")

HINTS = {
    "wrong_parity": "pass the parity of the phase you wait for: flip the local phase after every wait on a "
                    "barrier (when the stage ring wraps), and carry it across persistent tiles",
    "early_return": "the wait's parity named an older, already completed phase: fix the phase bookkeeping "
                    "(see wrong_parity) so each wait names the phase it needs",
    "lapped_wait": "a warp fell two phases behind a barrier it waits on: make the fast thread wait for the slow "
                   "warps before re-arming (a cta_sync after the MMA wait, or an 'empty' barrier per stage)",
    "tx_mismatch": "make arrive.expect_tx announce exactly the bytes the TMA loads of that phase deliver",
    "overissue": "issue tile ops (TMA, MMA, commit) from exactly one thread: guard elect_sync() with the warp "
                 "index, or use tid == 0",
    "arrival_underflow": "an arrive came when no arrival was pending (the phase was not finished): a second "
                         "issuer, or a producer re-arming a barrier before its consumers waited",
    "tx_out_of_range": "keep the tx-count within ±(2^20-1): expect bytes per phase, not per kernel",
    "use_before_init": "initialise the mbarrier (and fence + sync) before any thread touches it",
    "raw_hazard": "the reader did not wait for the writer: wait on the barrier or group that tracks the write",
    "war_hazard": "the writer did not wait for the reader: wait for the consumer's release (MMA commit, "
                  "bulk wait_group) before reusing the buffer",
    "deadlock": "some phase can never complete: check arrival counts, expected bytes and which parity each "
                "waiter passes",
    "unreleased_write": "call __syncwarp() (or a bar.sync covering the warp) after the 32 lanes' stores and "
                        "before the elected lane's arrive or TMA store: an elected lane releases only its own writes",
    "reinit_without_inval": "mbarrier.inval a live barrier before initialising it again (the H200 does not trap: "
                            "the re-init silently resets its phase under any waiter)",
    "capacity": "shrink the footprint (fewer stages, smaller tiles) or target a larger architecture",
}


def primary(findings: list[Finding]) -> Finding | None:
    if not findings:
        return None
    rank = {k: i for i, k in enumerate(PRIORITY)}
    return min(findings, key=lambda f: (f.cycle, rank.get(f.kind, len(rank))))


def explain(verdict: Verdict, result: RunResult, title: str = "") -> str:
    lines = []
    arch = result.arch
    head = title or verdict.name
    lines.append(f"{head}: {verdict.name} on {arch.name} ({arch.target}), schedule {verdict.schedule_hash}")
    lines.append(f"Replay ({verdict.perturbation}): {verdict.outcome.summary()} after {cyc(verdict.timing.cycles)} "
                 f"cycles ({verdict.timing.microseconds:.2f} µs).")
    first = primary(verdict.findings)
    if first is None:
        lines.append("No findings: every wait returned after the phase it waits for, every read saw the data it "
                     "expects, and nothing trapped or hung.")
        return "\n".join(lines)
    lines.append("")
    lines.append(f"What went wrong first (cycle {cyc(first.cycle)}), [{first.kind}]:")
    lines += ["  " + line for line in _narrate(first, result)]
    # Consequences: what was actually corrupted, hung or trapped first, then what nothing
    # ordered (races: corrupted under other timings).
    later = [f for f in verdict.findings if f is not first and f.cycle >= first.cycle
             and f.kind in ("raw_hazard", "war_hazard", "deadlock", *_TRAPS)]
    races = [f for f in verdict.findings if f is not first and f.kind in ("raw_race", "war_race")]
    if later or races:
        lines.append("")
        lines.append("Because of that:")
        for f in later[:4]:
            lines.append(f"  [{f.kind}] {f.message}")
        if len(later) > 4:
            lines.append(f"  ... and {len(later) - 4} more")
        for f in races[:3]:
            lines.append(f"  [{f.kind}] {f.message}")
        if len(races) > 3:
            lines.append(f"  ... and {len(races) - 3} more unordered accesses")
    roots = [f for f in verdict.findings if f is not first and f.kind in ("wrong_parity", "tx_mismatch", "overissue")]
    if roots:
        lines.append("")
        lines.append("Protocol errors behind it (these hold whatever the timing):")
        seen = set()
        for f in roots:
            if (f.kind, f.cta) in seen:
                continue
            seen.add((f.kind, f.cta))
            lines.append(f"  [{f.kind}] {f.message}")
            if len(seen) >= 4:
                break
    hint = HINTS.get(first.kind)
    if hint:
        lines.append("")
        lines.append(f"Fix: {hint}.")
    return "\n".join(lines)


_TRAPS = tuple(k for k in undefined_behavior.KINDS if k not in ("launch_failure", "unsupported"))


def _narrate(f: Finding, result: RunResult) -> list[str]:
    ev = f.evidence
    if f.kind == "early_return":
        out = [
            f"CTA {f.cta}, warp(s) {', '.join(ev['warps'])}, op #{f.op}: try_wait.parity({ev['barrier']}, {ev['parity']}) "
            f"for phase {ev['use']} (tile {ev['tile']}, k-tile {ev['k']}).",
        ]
        if ev["satisfied_by_phase"] >= 0:
            when = f" at cycle {cyc(ev['satisfied_at'])}" if ev["satisfied_at"] is not None else ""
            out.append(f"{ev['phases_completed']} phase(s) had completed; the last, phase {ev['satisfied_by_phase']} "
                       f"(parity {ev['satisfied_by_phase'] & 1}), completed{when}. Parity {ev['parity']} matched "
                       f"that older phase, so the wait returned at cycle {cyc(ev['returned'])}.")
        else:
            out.append(f"No phase had completed: right after init, parity 1 counts as complete, so the wait "
                       f"returned at cycle {cyc(ev['returned'])}.")
        prods = sorted(producers(result.log, f.cta, ev["barrier"], ev["use"]), key=lambda e: e.t)
        if prods:
            last = prods[-1]
            out.append(f"Phase {ev['use']}'s producer finished later: {describe_producer(last)}, "
                       f"{cyc(last.t - ev['returned'])} cycles after the wait returned.")
        else:
            out.append(f"Phase {ev['use']}'s producer never ran in this replay.")
        return out
    if f.kind in ("raw_hazard", "war_hazard"):
        out = [f.message]
        w = ev.get("writer")
        if w:
            out.append(f"The conflicting write: {w['who']} op #{w['op']} put {w['content']} there over cycles "
                       f"{cyc(w['t0'])}..{cyc(w['t1'])}.")
        return out
    if f.kind == "deadlock":
        out = [f.message]
        st = ev.get("barrier_state")
        if st:
            out.append(f"Barrier state at the end: phase {st['phase']} (parity {st['parity']}), pending "
                       f"{st['pending']}/{st['expected']}, tx-count {st['tx']}.")
        for w in ev.get("warps", [])[:4]:
            line = f"  {w['who']} at op #{w['op']} ({w['op_kind']}) since cycle {cyc(w['since'])}, tile {w['tile']}, k={w['k']}"
            site = w.get("kernel_site")
            if site:  # what a watchdog in the kernel would record (protosim.hangs)
                stage = f" stage {site['stage']}" if site["stage"] is not None else ""
                line += f"; as the kernel counts it: {site['barrier']}{stage}, role {site['role']}, k-tile {site['k']}"
            out.append(line)
        return out
    return [f.message]
