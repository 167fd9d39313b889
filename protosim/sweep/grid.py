"""What ``protosim sweep`` sweeps: a scenario's parameter grid or a Hypothesis strategy's
draws, one verdict row per config, and the table a person reads.

A work item (:class:`Item`) is small and self-contained: the scenario file's *text* (so a Ray
node needs no copy of the file), the ``--set`` overrides of its grid point and the exploration
settings.  :func:`judge_item` runs on a worker: it loads and judges the item exactly as
``protosim run FILE --set ...`` does (``scenarios.load_scenario`` + ``report.run_scenario``), so
a row's verdict is ``run``'s verdict for the same config.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_POINTS = 1_000_000
"""A grid larger than this is almost certainly a typo in a range (1..1000000)."""

ALIASES = {"stages": "PIPE_DEPTH", "depth": "PIPE_DEPTH", "pipe_depth": "PIPE_DEPTH", "ctas": "sm_count",
           "sms": "sm_count", "blk_n": "BLK_N", "blk_k": "BLK_K", "blk_m": "BLK_M", "m": "M", "n": "N", "k": "K"}
"""Names people type for a config field: the error suggests the field (no silent renaming)."""


class GridError(ValueError):
    """A bad ``--set`` range or parameter: one line naming it and the fix (exit status 2)."""


@dataclass(frozen=True)
class Item:
    """One config of a sweep, as sent to a worker."""

    name: str
    """The scenario file's stem (a scenario without ``name`` is named after its file)."""
    text: str
    """The scenario TOML."""
    overrides: tuple[tuple[str, Any], ...]
    """This grid point's ``--set`` pairs (all of them, swept or fixed)."""
    params: tuple[tuple[str, Any], ...]
    """What the table shows for this row: the swept parameters, or a drawn case's label."""
    runs: int | None
    seed: int | None
    max_stall: int | None
    max_ops: int
    source: str
    """Where it came from, for the JSON row: the scenario path, or ``strategy:NAME``."""


def item_key(item: Item) -> str:
    """What a sweep's row says it judged: a digest of everything that decides the row (the
    scenario text, its --set pairs, runs, seed, stall bound, op limit).  ``--resume`` keeps a
    row of an earlier run only where the key of its index is this sweep's."""
    text = json.dumps([item.name, item.text, [list(p) for p in item.overrides], item.runs, item.seed, item.max_stall,
                       item.max_ops], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- ranges


def parse_values(key: str, text: str) -> list[Any]:
    """The values of ``--set KEY=TEXT``: a comma list whose elements are TOML values
    (``256``, ``true``, ``"tma"`` or a bare word) or inclusive integer ranges ``A..B`` /
    ``A..B:STEP``.  ``K=256,512``, ``PIPE_DEPTH=1..4``, ``K=256..1024:256``."""
    from protosim.scenarios import parse_override

    values: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise GridError(f"--set {key}={text}: an empty value; write values separated by commas, e.g. {key}=1,2")
        m = re.fullmatch(r"([+-]?\d+)\s*\.\.\s*([+-]?\d+)(?:\s*:\s*([+-]?\d+))?", part)
        if m:
            low, high, step = int(m[1]), int(m[2]), int(m[3] or 1)
            if step < 1:
                raise GridError(f"--set {key}={text}: the step of {part} must be >= 1")
            if high < low:
                raise GridError(f"--set {key}={text}: the range {part} is empty; write LOW..HIGH (inclusive), e.g. 1..4")
            if len(range(low, high + 1, step)) > MAX_POINTS:
                raise GridError(f"--set {key}={text}: {part} has {len(range(low, high + 1, step)):,} values, more than a sweep "
                                f"takes ({MAX_POINTS:,}); narrow it or add a step (LOW..HIGH:STEP)")
            values.extend(range(low, high + 1, step))
        elif ".." in part:
            raise GridError(f"--set {key}={text}: {part!r} is not a range; write LOW..HIGH or LOW..HIGH:STEP with integers")
        else:
            values.append(parse_override(f"{key}={part}")[1])
    seen: list[Any] = []
    for v in values:  # a value twice would judge the same config twice
        if not any(v == s and type(v) is type(s) for s in seen):
            seen.append(v)
    return seen


def parse_sets(sets: list[str]) -> list[tuple[str, list[Any]]]:
    """``--set`` flags -> ``[(key, values)]`` in the order given (the first varies slowest)."""
    out: list[tuple[str, list[Any]]] = []
    for text in sets:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise GridError(f"--set {text}: expected KEY=VALUES, e.g. --set K=256,512 or --set PIPE_DEPTH=1..4")
        if any(k == key for k, _ in out):
            raise GridError(f"--set {key} is given twice; give it once with every value, e.g. --set {key}=1,2,3")
        out.append((key, parse_values(key, value)))
    return out


def check_keys(sets: list[tuple[str, list[Any]]], builder: str) -> None:
    """Every key must be a field of the builder's config (or ``explore.runs`` / ``.seed`` /
    ``.max_stall``): an unknown one is named with the field it most likely means."""
    from protosim.builders import CONFIGS, HONOURS

    fields = [f.name for f in dataclasses.fields(CONFIGS[builder])]
    explore = ["explore.runs", "explore.seed", "explore.max_stall"]
    for key, _ in sets:
        name = key.removeprefix("config.")
        if name in fields or key in explore:
            continue
        guess = ALIASES.get(name.lower()) or next(iter(difflib.get_close_matches(name, fields + explore, n=1)), None)
        hint = f"did you mean {guess}? " if guess else ""
        honoured = sorted(HONOURS.get(builder, fields))
        raise GridError(f"--set {key}: unknown parameter for {builder}; {hint}sweepable: {', '.join(honoured)}, "
                        f"{', '.join(explore)}")


def grid(sets: list[tuple[str, list[Any]]]) -> list[tuple[tuple[str, Any], ...]]:
    """The Cartesian product of the values, as override tuples; the last key varies fastest."""
    size = 1
    for _, values in sets:
        size *= len(values)
    if size > MAX_POINTS:
        raise GridError(f"the --set ranges make {size:,} configs, more than {MAX_POINTS:,}; narrow a range or add a step (A..B:STEP)")
    keys = [k for k, _ in sets]
    return [tuple(zip(keys, point, strict=True)) for point in itertools.product(*(v for _, v in sets))]


# ----------------------------------------------------------------------------- items


def scenario_items(path: Path, sets: list[str], runs: int | None, seed: int | None, max_stall: int | None,
                   max_ops: int) -> list[Item]:
    """The grid of a scenario file.  The scenario itself and the first grid point are loaded
    here, so a bad file, an unknown parameter or a mistyped value stops the sweep before any
    replay; a later point that cannot be built (too many stages for shared memory, say) is
    judged ``invalid`` in its row."""
    from protosim.scenarios import ScenarioError, load_scenario

    if path.suffix != ".toml":
        raise GridError(f"{path}: sweep takes a scenario .toml (its [config] fields are what --set varies); "
                        "for a schedule .json, .ttgir or kernel.py use `protosim run`")
    base = load_scenario(path, max_ops=max_ops)  # ScenarioError: the file itself is wrong
    parsed = parse_sets(sets)
    check_keys(parsed, base.builder)
    _check_types(path, parsed, base)
    points = grid(parsed)
    swept = {k for k, v in parsed if len(v) > 1}
    text = path.read_text(encoding="utf-8")
    try:
        load_scenario(path, overrides=list(points[0]), max_ops=max_ops)
    except ScenarioError as e:
        if len(points) == 1 or not _only_capacity(e):
            raise GridError(f"{e} (the first grid point: {_label(points[0])})") from None
    return [Item(path.stem, text, point, tuple((k, v) for k, v in point if k in swept) or point, runs, seed, max_stall,
                 max_ops, str(path)) for point in points]


def _check_types(path: Path, sets: list[tuple[str, list[Any]]], base) -> None:
    """A value of the wrong type (``K=64,abc``) is a typo wherever it sits in the grid: refuse
    it before any replay.  (Whether a *combination* of values builds is each row's business.)"""
    from protosim.config import ConfigError

    if base.config is None or not hasattr(base.config, "to_dict"):
        return
    fields = base.config.to_dict()
    for key, values in sets:
        name = key.removeprefix("config.")
        if name not in fields:
            continue
        for value in values:
            try:
                type(base.config).from_dict({**fields, name: value})
            except ConfigError as e:
                if any(t in e.message for t in ("is not an integer", "is not true/false", "is not a string")):
                    raise GridError(f"{path}: --set {key}: {e.message}") from None
            except (TypeError, ValueError):
                pass  # a combination the loader judges per row


def _only_capacity(e) -> bool:
    """Errors that depend on the combination of values (shared memory, size, arch): a grid
    corner may hit them while the other points are fine."""
    return e.field in ("config.PIPE_DEPTH", "config", "config.arch") or "shared memory" in e.message


def strategy_items(name: str, examples: int, seed: int, runs: int | None, max_stall: int | None, max_ops: int,
                   **strategy_args) -> list[Item]:
    """``examples`` distinct cases drawn (seeded) from a Hypothesis strategy of
    :class:`~protosim.strategies.Case` -- ``cases`` (default), ``correct_cases`` or
    ``module:attribute`` -- each as the scenario ``protosim run`` would replay
    (``strategies.scenario_toml``)."""
    from protosim.crosscheck import draw_cases
    from protosim.strategies import scenario_toml

    strategy = _strategy(name, **strategy_args)
    items = []
    for i, case in enumerate(draw_cases(examples, seed, strategy=strategy)):
        stem = f"case{i}"
        items.append(Item(stem, scenario_toml(case, name=stem), (), (("case", case.label()),), runs, None, max_stall,
                          max_ops, f"strategy:{name}"))
    return items


def _strategy(name: str, **strategy_args):
    import importlib

    from hypothesis.strategies import SearchStrategy

    from protosim import strategies

    if name in ("cases", "correct_cases"):
        return getattr(strategies, name)(**strategy_args)
    module, colon, attr = name.partition(":")
    if not colon or not module or not attr:
        raise GridError(f"--strategy {name}: use cases, correct_cases, or MODULE:ATTRIBUTE (a strategy of protosim.strategies.Case)")
    if strategy_args:
        raise GridError(f"--strategy {name}: --steps/--bugs/--clusters apply to the built-in strategies only")
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise GridError(f"--strategy {name}: cannot import it ({type(e).__name__}: {e}); run from where MODULE imports") from None
    found = found() if callable(found) and not isinstance(found, SearchStrategy) else found
    if not isinstance(found, SearchStrategy):
        raise GridError(f"--strategy {name}: {type(found).__name__} is not a Hypothesis strategy")
    return found


def _label(point) -> str:
    return " ".join(f"{k}={v}" for k, v in point) or "(the scenario as written)"


# ----------------------------------------------------------------------------- the work function


def judge_item(item: Item) -> dict[str, Any]:
    """One row: the item's config loaded and judged as ``protosim run`` does.  A config that
    cannot be built is a row with outcome ``invalid`` and the loader's one-line reason."""
    from protosim.arch import UnknownArch
    from protosim.config import ConfigError
    from protosim.ir import ScheduleError
    from protosim.report import run_scenario
    from protosim.scenarios import ScenarioError, load_scenario

    row: dict[str, Any] = {"params": dict(item.params), "source": item.source}
    path = _scenario_file(item)
    try:
        scenario = load_scenario(path, overrides=list(item.overrides), max_ops=item.max_ops)
    except (ScenarioError, ScheduleError, ConfigError, UnknownArch) as e:
        # the loader names the file it read: the user's is the one to name
        return row | {"outcome": "invalid", "ok": None, "error": str(e).replace(f"{path}: ", "")}
    rep = run_scenario(scenario, runs=item.runs, seed=item.seed, max_stall=item.max_stall)
    v, o = rep.verdict, rep.outcomes
    findings = set(v.kinds()) | ({k for c in o.classes.values() for k in c.finding_kinds} if o else set())
    return row | {
        "outcome": v.outcome.kind, "reachable": sorted(o.kinds()) if o else None, "runs": o.runs if o else 1,
        "findings": sorted(findings), "cycles": round(v.timing.cycles), "us": round(v.timing.microseconds, 3),
        "ok": rep.ok, "headline": rep.headline(), "config": scenario.config.to_dict(), "builder": scenario.builder,
        "schedule": v.schedule_hash,
    }


def _scenario_file(item: Item) -> Path:
    """The item's scenario text as a file ``load_scenario`` can read, written once per
    process and content: a worker (a Ray node too) needs no copy of the user's file."""
    digest = hashlib.sha256(item.text.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"protosim-sweep-{os.getuid() if hasattr(os, 'getuid') else 'u'}" / digest
    path = folder / f"{item.name}.toml"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{item.name}.{os.getpid()}.tmp"
        tmp.write_text(item.text, encoding="utf-8")
        os.replace(tmp, path)  # atomic: workers writing the same file never see half of it
    return path


# ----------------------------------------------------------------------------- the table


def status(rows: list[dict[str, Any] | None]) -> int:
    """The exit status of a sweep (``protosim --help``): 1 when some config is NOT OK (a
    finding, or a reachable outcome other than correct) -- as ``run``; else 2 when some
    grid point could not be built; else 0."""
    from protosim.report import BAD_INPUT, BUG, OK

    done = [r for r in rows if r is not None]
    if any(r["ok"] is False for r in done):
        return BUG
    if any(r["outcome"] == "invalid" for r in done):
        return BAD_INPUT
    return OK


def render(rows: list[dict[str, Any] | None], total: int) -> str:
    """One line per config in item order: its parameters, verdict (OK / NOT OK / invalid),
    nominal outcome, reachable set, simulated time and findings (or why it is invalid);
    then a summary line."""
    done = [(i, r) for i, r in enumerate(rows) if r is not None]
    keys = list(dict.fromkeys(k for _, r in done for k in r["params"]))
    head = ["#", *keys, "verdict", "nominal", "reachable", "cycles", "µs", "findings"]
    numeric = {0, len(head) - 3, len(head) - 2} | {1 + j for j, k in enumerate(keys)  # integer parameters align right
                                                    if all(isinstance(r["params"].get(k), int) and not isinstance(r["params"].get(k), bool)
                                                           for _, r in done)}
    table = []
    for i, r in done:
        params = [_cell(r["params"].get(k)) for k in keys]
        if r["outcome"] == "invalid":
            table.append([str(i), *params, "invalid", "-", "-", "-", "-", r["error"]])
            continue
        reach = ",".join(r["reachable"]) if r["reachable"] is not None else "(nominal only)"
        table.append([str(i), *params, "OK" if r["ok"] else "NOT OK", r["outcome"], reach, f"{r['cycles']:,}",
                      f"{r['us']:,.2f}", ",".join(r["findings"]) or "-"])
    widths = [max(len(row[c]) for row in [head, *table]) for c in range(len(head))]
    widths[-1] = len(head[-1])

    def line(cells: list[str]) -> str:  # the last column (findings, reasons) is long: not padded
        return "  ".join(c.rjust(w) if j in numeric else c.ljust(w) for j, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(head), line(["-" * w for w in widths])] + [line(t) for t in table]
    ok = sum(r["ok"] is True for _, r in done)
    bad = sum(r["ok"] is False for _, r in done)
    invalid = sum(r["ok"] is None for _, r in done)
    summary = f"{len(done)} of {total} configs judged: {ok} OK" + (f", {bad} NOT OK" if bad else "") + (
        f", {invalid} invalid (cannot be built)" if invalid else "")
    return "\n".join([*out, "", summary])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "":
        return '""'
    return str(value)
