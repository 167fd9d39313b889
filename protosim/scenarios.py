"""Scenario files: a builder, a config, an arch, and the outcome we expect.

A scenario is a small TOML file (``scenarios/*.toml``)::

    name = "v2-no-phase-flip"
    description = "Step 2's K loop with phase_mma ^= 1 left out."
    builder = "hgemm_v2"

    [config]            # protosim.config.GemmConfig fields
    arch = "b200"
    K = 512
    skip_mma_phase_flip = true

    [expect]
    nominal = "wrong"                       # outcome of the unperturbed replay
    findings = ["early_return", "wrong_parity"]   # kinds it must report (at least)
    outcomes = ["wrong"]                    # must be reached while exploring
    may = ["deadlock"]                      # may also be reached

    [explore]
    runs = 40           # perturbed replays (the first is nominal)
    max_stall = 2000    # cycles
    seed = 0

Every user mistake raises :class:`ScenarioError` naming the file, the field and
the fix; the CLI prints it as one line and exits 2.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protosim.arch import UnknownArch, load_profile
from protosim.builders import BUILDERS, CONFIGS
from protosim.checkers import FINDING_KINDS
from protosim.config import ConfigError, GemmConfig
from protosim.engine import smem_bytes
from protosim.ir import Schedule, ScheduleError, from_json
from protosim.verdict import OUTCOMES, OutcomeSet, Verdict

TOP_LEVEL = ("name", "description", "builder", "config", "expect", "explore")


class ScenarioError(ValueError):
    def __init__(self, path: Path | str, field: str, message: str):
        super().__init__(f"{path}: {field}: {message}")
        self.path, self.field, self.message = str(path), field, message


@dataclass(frozen=True)
class Expectation:
    nominal: str | None = None
    findings: tuple[str, ...] = ()
    ok: bool | None = None
    outcomes: tuple[str, ...] = ()
    may: tuple[str, ...] = ()

    @property
    def declared(self) -> bool:
        return self.nominal is not None or bool(self.findings) or self.ok is not None or bool(self.outcomes)


@dataclass(frozen=True)
class Scenario:
    path: Path
    name: str
    description: str
    builder: str
    config: Any  # GemmConfig, or the record CONFIGS names for the builder; None for schedules and TTGIR
    expect: Expectation = field(default_factory=Expectation)
    runs: int | None = None
    """Perturbed replays to explore; None: the default for the schedule's size."""
    max_stall: int = 2000
    seed: int = 0
    schedule_json: dict[str, Any] | None = None
    """Set when the file is a raw schedule (JSON) rather than a builder + config."""

    @property
    def arch(self) -> str:
        return self.config.arch if self.config else self.schedule_json["arch"]  # type: ignore[index]

    def build(self) -> Schedule:
        if self.schedule_json is not None:
            return from_json(self.schedule_json)
        return BUILDERS[self.builder](self.config)  # type: ignore[arg-type]


def _strings(path: Path, field: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ScenarioError(path, field, f"{value!r} is not a list of strings")
    for v in value:
        if v not in allowed:
            raise ScenarioError(path, field, f"{v!r} is not one of {', '.join(allowed)}")
    return tuple(value)


def _int(path: Path, field: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ScenarioError(path, field, f"{value!r} must be an integer >= {low}")
    return value


def load_scenario(path: str | Path) -> Scenario:
    """Parse and validate a scenario (``.toml``) or a raw schedule (``.json``)."""
    path = Path(path)
    if not path.exists():
        raise ScenarioError(path, "file", "no such file; give a scenario .toml or a schedule .json")
    if path.suffix == ".json":
        return _load_schedule_json(path)
    if path.suffix == ".ttgir":
        return _load_ttgir(path)
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(path, "toml", f"not valid TOML ({e})") from None
    except UnicodeDecodeError:
        raise ScenarioError(path, "file", "not a text file") from None
    for key in raw:
        if key not in TOP_LEVEL:
            raise ScenarioError(path, key, f"unknown field; a scenario has {', '.join(TOP_LEVEL)}")
    builder = raw.get("builder")
    if builder is None:
        raise ScenarioError(path, "builder", f"missing; name one of {', '.join(BUILDERS)}")
    if builder not in BUILDERS:
        raise ScenarioError(path, "builder", f"unknown builder {builder!r}; use one of {', '.join(BUILDERS)}")
    conf = raw.get("config", {})
    if not isinstance(conf, dict):
        raise ScenarioError(path, "config", "must be a table of GemmConfig fields")
    try:
        config = CONFIGS[builder].from_dict(conf)
        arch = load_profile(config.arch)
    except ConfigError as e:
        raise ScenarioError(path, f"config.{e.field}", e.message) from None
    except UnknownArch as e:
        raise ScenarioError(path, "config.arch", str(e)) from None
    expect = _expectation(path, raw.get("expect", {}))
    explore = raw.get("explore", {})
    for key in explore:
        if key not in ("runs", "max_stall", "seed"):
            raise ScenarioError(path, f"explore.{key}", "unknown field; use runs, max_stall, seed")
    scenario = Scenario(
        path=path,
        name=str(raw.get("name", path.stem)),
        description=str(raw.get("description", "")).strip(),
        builder=builder,
        config=config,
        expect=expect,
        runs=_int(path, "explore.runs", explore["runs"], 1) if "runs" in explore else None,
        max_stall=_int(path, "explore.max_stall", explore.get("max_stall", 2000), 0),
        seed=_int(path, "explore.seed", explore.get("seed", 0), 0),
    )
    # Build once here so that shape errors and capacity show up as input errors.
    try:
        schedule = scenario.build()
    except ConfigError as e:
        raise ScenarioError(path, f"config.{e.field}", e.message) from None
    need = smem_bytes(schedule)
    if need > arch.smem_per_cta_bytes:
        raise ScenarioError(
            path, "config.PIPE_DEPTH",
            f"the CTA needs {need:,} bytes of shared memory; {arch.name} allows {arch.smem_per_cta_bytes:,} per CTA. "
            f"Lower PIPE_DEPTH or BLK_N/BLK_K",
        )
    return scenario


def _expectation(path: Path, raw: Any) -> Expectation:
    if not isinstance(raw, dict):
        raise ScenarioError(path, "expect", "must be a table")
    for key in raw:
        if key not in ("nominal", "findings", "ok", "outcomes", "may"):
            raise ScenarioError(path, f"expect.{key}", "unknown field; use nominal, findings, ok, outcomes, may")
    nominal = raw.get("nominal")
    if nominal is not None and nominal not in OUTCOMES:
        raise ScenarioError(path, "expect.nominal", f"{nominal!r} is not one of {', '.join(OUTCOMES)}")
    ok = raw.get("ok")
    if ok is not None and not isinstance(ok, bool):
        raise ScenarioError(path, "expect.ok", "must be true or false")
    return Expectation(
        nominal=nominal,
        findings=_strings(path, "expect.findings", raw.get("findings", []), FINDING_KINDS),
        ok=ok,
        outcomes=_strings(path, "expect.outcomes", raw.get("outcomes", []), OUTCOMES),
        may=_strings(path, "expect.may", raw.get("may", []), OUTCOMES),
    )


def _load_schedule_json(path: Path) -> Scenario:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ScenarioError(path, "json", f"not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict):
        raise ScenarioError(path, "json", "a schedule is a JSON object")
    try:
        schedule = from_json(data)
        load_profile(schedule.arch)
    except ScheduleError as e:
        raise ScenarioError(path, "schedule", str(e)) from None
    except UnknownArch as e:
        raise ScenarioError(path, "arch", str(e)) from None
    return Scenario(path=path, name=schedule.name, description="hand-written schedule", builder="(schedule json)",
                    config=None, schedule_json=data)


def check_expectation(expect: Expectation, verdict: Verdict, outcomes: OutcomeSet | None) -> list[str]:
    """Every way the results disagree with the expectation (empty: they agree)."""
    problems = []
    if expect.nominal is not None and verdict.outcome.kind != expect.nominal:
        problems.append(f"nominal outcome is {verdict.outcome.kind}, expected {expect.nominal}")
    if expect.ok is not None and verdict.ok != expect.ok:
        problems.append(f"verdict ok={verdict.ok}, expected ok={expect.ok} ({', '.join(verdict.kinds()) or 'no findings'})")
    missing = [k for k in expect.findings if k not in verdict.kinds()]
    if missing:
        problems.append(f"nominal replay lacks finding(s) {', '.join(missing)} (has {', '.join(verdict.kinds()) or 'none'})")
    if outcomes is not None and expect.outcomes:
        seen = outcomes.kinds()
        lacking = set(expect.outcomes) - seen
        extra = seen - set(expect.outcomes) - set(expect.may)
        if lacking:
            problems.append(f"exploration never reached {', '.join(sorted(lacking))}")
        if extra:
            problems.append(f"exploration reached unexpected {', '.join(sorted(extra))}")
    return problems


def builtin_dir() -> Path:
    """The repository's ``scenarios/`` folder (next to the package in a checkout)."""
    return Path(__file__).resolve().parent.parent / "scenarios"


def _load_ttgir(path: Path) -> Scenario:
    """A Triton TTGIR file, read by ``protosim.frontends.ttgir`` (its launch from
    ``<name>.launch.json`` beside it).  The description compares the shared memory the
    IR allocates with the ``shared`` field of the compiled kernel's metadata
    (``<name>.json`` beside it), when there is one."""
    from protosim.frontends.ttgir import TtgirError, metadata_shared, read
    from protosim.ir import to_json

    try:
        schedule, mod = read(path)
    except TtgirError as e:
        raise ScenarioError(path, "ttgir", str(e).split(": ", 1)[-1]) from None
    meta = metadata_shared(path)
    if meta is None:
        smem = f"shared memory {mod.shared_bytes:,} B (no metadata JSON beside it to compare)"
    else:
        smem = (f"shared memory {mod.shared_bytes:,} B from the IR, {meta:,} B in Triton's metadata: "
                f"{'match' if meta == mod.shared_bytes else 'MISMATCH'}")
    desc = f"Triton TTGIR @{mod.func}, target {mod.target}, {mod.num_warps} warps; {smem}"
    return Scenario(path=path, name=path.stem, description=desc, builder="ttgir", config=None,
                    schedule_json=to_json(schedule))
