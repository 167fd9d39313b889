"""The Triton and Gluon corpus and the held-out kernels (tests/fixtures/triton/{corpus,gluon,heldout}),
judged by protosim.

Every record is real compiler output (``kernels/triton/corpus.py`` and
``kernels/triton/gluon_corpus.py`` regenerate them; this module needs no Triton).  For
each one the reader either reads the kernel or refuses it naming the op; the verdict of a
nominal replay is compared with what the record expects:

* Triton corpus and held-out kernels: ``correct`` (each ran correctly on the H200 for sm_90) -- no finding.
* Gluon corpus: the vocabulary of Triton's concurrency sanitizer (ConSan) tests, mapped
  onto protosim's finding kinds by :data:`SANITIZER_KINDS`.

    python -m tests.triton_corpus [--form ttgir|alloc.mlir] [--json]

prints the verdict-agreement table (the one docs/triton.md quotes).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from protosim.frontends.ttgir import TtgirError, metadata, read
from kernels.triton.predicted_vs_measured import CORPORA  # the fixture folders, listed once
from protosim.verdict import judge

ROOT = Path(__file__).resolve().parent / "fixtures" / "triton"
FORMS = ("ttgir", "alloc.mlir")

RACES = {"raw_race", "raw_hazard", "war_race", "war_hazard", "unreleased_write"}
SANITIZER_KINDS: dict[str, set[str]] = {
    "outstanding_writes": RACES,
    "outstanding_reads": {"war_race", "war_hazard"},
    "outstanding": RACES,
    "deadlock": {"deadlock", "lapped_wait", "early_return", "wrong_parity"},
    "expect_bytes_mismatch": {"tx_mismatch", "tx_out_of_range", "deadlock"},
    "barrier_misuse": {"use_before_init", "reinit_without_inval", "arrival_underflow", "count_out_of_range"},
    "overarrive": {"arrival_underflow", "overissue"},
    "missing_fence": {"missing_proxy_fence"},
}
"""ConSan's verdict -> the protosim finding kinds that say the same thing.  ConSan names the
access still pending, protosim names a conflicting pair by its second access: a write over a
buffer an async op still reads is "outstanding reads" and ``war_*``; "outstanding writes"
covers a read before an async write landed (``raw_*``) and a write over a pending write, which
protosim reports as the race on that buffer it sees (``war_*`` or ``raw_*``), so any race
counts for it.  ConSan's deadlock detector
fires on a barrier nobody will complete; protosim reports the hang (``deadlock``) or the
wait that returned on the wrong phase.  A byte-count mismatch hangs (too few bytes) or
overflows the tx-count; "missing fence" is ``missing_proxy_fence`` (a generic-proxy write
read by the async proxy with no ``fence.proxy.async`` between)."""


@dataclass
class Judged:
    corpus: str
    file: str
    target: str
    triton: str
    expected: str
    refused: str = ""
    outcome: str = ""
    kinds: tuple[str, ...] = ()
    shared: int | None = None
    shared_meta: int | None = None
    shared_source: str = ""

    @property
    def agrees(self) -> bool:
        """The verdict says what the record expects."""
        if self.refused:
            return False
        if self.expected in ("correct", "clean"):
            return not self.kinds
        want = SANITIZER_KINDS.get(self.expected, set())
        return bool(want & set(self.kinds)) or (self.expected == "deadlock" and self.outcome == "deadlock")


def records(corpus: str) -> list[dict]:
    return [r for r in json.loads((ROOT / corpus / "index.json").read_text()) if r.get("compiled", True)]


def path_of(corpus: str, record: dict, form: str) -> Path:
    return ROOT / corpus / f"{record['file'].removesuffix('.ttgir')}.{form}"


def judge_record(corpus: str, record: dict, form: str = "ttgir", ctas: int | None = 1) -> Judged:
    """Read and judge one record; ``ctas`` caps the launch (None: the record's own)."""
    path = path_of(corpus, record, form)
    j = Judged(corpus, record["file"].removesuffix(".ttgir"), record["target"], record["triton"], record["expected"])
    try:
        schedule, mod = read(path, launch=None if ctas is None else {"ctas": ctas})
    except TtgirError as e:
        j.refused = str(e).split(": ", 1)[-1]
        return j
    meta = metadata(path) or {}
    verdict, _ = judge(schedule)
    j.outcome = verdict.outcome.kind
    j.kinds = tuple(sorted({f.kind for f in verdict.findings}))
    j.shared, j.shared_meta, j.shared_source = mod.shared_bytes, meta.get("shared"), mod.shared_source
    return j


def fixture_copy(tmp_path: Path, source: Path, text=None, meta: dict | None = None) -> Path:
    """A corpus TTGIR (``source``) and its sidecars copied into ``tmp_path``, for a test that
    edits it: ``text(original)`` gives the edited TTGIR; ``meta``: fields merged into its
    metadata JSON."""
    stem = source.name.removesuffix(".ttgir")
    for side in source.parent.glob(stem + ".*"):
        shutil.copy(side, tmp_path)
    out = tmp_path / source.name
    if text is not None:
        out.write_text(text(source.read_text()))
    if meta:
        m = tmp_path / f"{stem}.json"
        m.write_text(json.dumps({**json.loads(m.read_text()), **meta}))
    return out


def replacing(edits: list[tuple[str, str]]):
    """A ``text`` for :func:`fixture_copy`: each ``(old, new)`` replaced, ``old`` required."""
    def apply(text: str) -> str:
        for old, new in edits:
            assert old in text, f"fixture changed: {old!r} not found"
            text = text.replace(old, new)
        return text
    return apply


def table(rows: list[Judged]) -> str:
    """Expected verdict x (agree / disagree / refused), per corpus."""
    counts: Counter = Counter()
    for r in rows:
        counts[(r.corpus, r.expected, "refused" if r.refused else "agree" if r.agrees else "disagree")] += 1
    keys = sorted({(c, e) for c, e, _ in counts})
    lines = ["| corpus | expected | records | agree | disagree | refused |", "|---|---|---|---|---|---|"]
    for c, e in keys:
        a, d, f = (counts[(c, e, k)] for k in ("agree", "disagree", "refused"))
        lines.append(f"| {c} | {e} | {a + d + f} | {a} | {d} | {f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.triton_corpus", description=__doc__.split("\n\n")[0])
    ap.add_argument("--form", choices=FORMS, default="ttgir", help="the asm TTGIR, or the IR after Triton's allocation")
    ap.add_argument("--only", default="", help="only records whose file contains this")
    ap.add_argument("--json", action="store_true", help="one JSON line per record instead of the table")
    args = ap.parse_args(argv)
    rows = []
    for corpus in CORPORA:
        for rec in records(corpus):
            if args.only in rec["file"]:
                rows.append(judge_record(corpus, rec, args.form))
                if args.json:
                    print(json.dumps({**asdict(rows[-1]), "agrees": rows[-1].agrees}), flush=True)
    if not args.json:
        print(table(rows))
        for r in rows:
            if not r.agrees:
                print(f"  {r.file} [{r.expected}]: " + (f"refused: {r.refused[:160]}" if r.refused
                                                        else f"{r.outcome} {', '.join(r.kinds) or 'no finding'}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
