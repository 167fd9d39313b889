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

import dataclasses
import json
import tomllib
from dataclasses import field
from pathlib import Path
from typing import Any

from protosim._dataclass_cache import DataclassCache
from protosim.arch import ArchProfile, UnknownArch, load_profile
from protosim.builders import BUILDERS, CONFIGS, HONOURS, estimate_ops, unhonoured
from protosim.checkers import FINDING_KINDS
from protosim.config import ConfigError, GemmConfig
from protosim.engine import smem_bytes
from protosim.ir import Schedule, ScheduleError, from_json, to_json, validate_for
from protosim.verdict import OUTCOMES, OutcomeSet, Verdict

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

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

    def to_json(self) -> dict[str, Any]:
        return {"nominal": self.nominal, "findings": list(self.findings), "ok": self.ok,
                "outcomes": list(self.outcomes), "may": list(self.may)}

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
    built: Schedule | None = field(default=None, compare=False, repr=False)
    """The schedule, built once while loading (validation needs it anyway)."""

    @property
    def arch(self) -> str:
        return self.config.arch if self.config else self.schedule_json["arch"]  # type: ignore[index]

    def build(self) -> Schedule:
        if self.built is not None:
            return self.built
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


DEFAULT_MAX_OPS = 2_000_000
"""Largest schedule replayed without asking (``--max-ops`` raises it): the full-chip
4096^3 step 6 is ~600k ops; 8192^3 would be ~5M ops and minutes per replay."""


def _read_text(path: Path) -> str:
    if path.is_dir():
        raise ScenarioError(path, "file", f"is a directory; give {_INPUTS}")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ScenarioError(path, "file", f"cannot read it ({e.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(path, "file", f"not UTF-8 text (byte {e.start}); save it as UTF-8") from None


def parse_override(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` from ``--set``: the value is read as a TOML value (``K=1024``,
    ``skip_store_wait=true``), else taken as a string (``tma_issuer=each_warp``).  A key
    without a table (``K``) is a ``[config]`` field; ``explore.runs`` names its table."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError("--set", text, "expected KEY=VALUE, e.g. --set K=1024 or --set tma_issuer=each_warp")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return key, parsed


def _apply_overrides(raw: dict[str, Any], overrides: list[tuple[str, Any]]) -> None:
    for key, value in overrides:
        table, dot, name = key.rpartition(".")
        if not dot:
            table, name = ("config", key) if key not in TOP_LEVEL else ("", key)
        if table and table not in ("config", "expect", "explore"):
            raise ScenarioError("--set", key, "use a [config] field (K=...), or expect.FIELD / explore.FIELD")
        if table:
            sub = raw.setdefault(table, {})
            if not isinstance(sub, dict):
                raise ScenarioError("--set", key, f"the scenario's {table} is not a table")
            sub[name] = value
        else:
            raw[name] = value


_INPUTS = "a scenario .toml, a schedule .json, a Triton .ttgir (or .mlir) or a TIRx kernel.py:FUNC"


def _is_kernel_spec(path: str | Path) -> bool:
    if ".py" not in str(path):  # the spec's pattern needs it: no need to import the TIRx loader (~1.5 ms)
        return False
    from protosim.frontends.tirx.load import is_kernel_spec  # no tvm: that is imported on loading

    return is_kernel_spec(path)


def load_scenario(path: str | Path, overrides: list[tuple[str, Any]] = (), max_ops: int = DEFAULT_MAX_OPS) -> Scenario:
    """Parse and validate a scenario (``.toml``), a raw schedule (``.json``), a Triton
    TTGIR file (``.ttgir``) or a TIRx kernel (``kernel.py[:FUNC]``): every field, every
    reference, the arch's capabilities, the knobs the builder honours and the schedule's
    size, before any replay.  ``overrides`` are ``--set`` pairs (scenario files: fields;
    TIRx kernels: FUNC's parameters, ``arch``, the PrimFunc's scalar parameters; none for
    schedules and TTGIR); ``max_ops`` the size limit."""
    if _is_kernel_spec(path):  # kernel.py or kernel.py:FUNC -- the part before ':' is the file
        return _load_tirx(str(path), overrides, max_ops)
    path = Path(path)
    if not path.exists():
        raise ScenarioError(path, "file", f"no such file; give {_INPUTS}")
    if not path.is_dir() and not path.is_file():  # a FIFO or a device would block or never end
        raise ScenarioError(path, "file", f"not a regular file; give {_INPUTS}")
    if path.suffix in (".json", ".ttgir", ".mlir") and overrides:
        raise ScenarioError(path, "--set", "applies to scenario .toml files only (a schedule or TTGIR has no config to change)")
    if path.suffix == ".json":
        return _load_schedule_json(path, max_ops)
    if path.suffix in (".ttgir", ".mlir"):  # .mlir: TTGIR printed after Triton's allocation passes
        return _load_ttgir(path, max_ops)
    try:
        raw = tomllib.loads(_read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(path, "toml", f"not valid TOML ({e})") from None
    _apply_overrides(raw, list(overrides))
    for key in raw:
        if key not in TOP_LEVEL:
            raise ScenarioError(path, key, f"unknown field; a scenario has {', '.join(TOP_LEVEL)}")
    for key in ("name", "description"):
        if key in raw and not isinstance(raw[key], str):
            raise ScenarioError(path, key, f"{raw[key]!r} must be a string")
    builder = raw.get("builder")
    if builder is None:
        raise ScenarioError(path, "builder", f"missing; name one of {', '.join(BUILDERS)}")
    if not isinstance(builder, str) or builder not in BUILDERS:
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
    ignored = unhonoured(builder, config, conf)
    if ignored:
        raise ScenarioError(path, f"config.{ignored[0][0]}", ignored[0][1])
    scenario = Scenario(
        path=path,
        name=str(raw.get("name", path.stem)),
        description=str(raw.get("description", "")).strip(),
        builder=builder,
        config=config,
        expect=_expectation(path, raw.get("expect", {})),
        **_explore_fields(path, raw.get("explore", {})),
    )
    _check_size_before_build(path, builder, config, arch, max_ops)
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
    try:
        validate_for(schedule, arch)
    except ScheduleError as e:
        raise ScenarioError(path, "config.arch", f"{builder} on {arch.name}: {e}") from None
    return dataclasses.replace(scenario, built=schedule)


def _check_size_before_build(path: Path, builder: str, config: Any, arch: ArchProfile, max_ops: int) -> None:
    """Refuse, before building anything, a config whose stages cannot fit in shared
    memory or whose schedule would exceed ``max_ops`` ops."""
    if "PIPE_DEPTH" in HONOURS[builder] and isinstance(config, GemmConfig):
        ring = config.PIPE_DEPTH * config.stage_bytes
        if ring > arch.smem_per_cta_bytes:
            raise ScenarioError(path, "config.PIPE_DEPTH",
                                f"{config.PIPE_DEPTH} stages of {config.stage_bytes:,} bytes need {ring:,} bytes of shared "
                                f"memory; {arch.name} allows {arch.smem_per_cta_bytes:,} per CTA. Lower PIPE_DEPTH or BLK_N/BLK_K")
    ops = estimate_ops(builder, config, arch.sm_count)
    if ops > max_ops:
        raise ScenarioError(path, "config", f"the schedule would have ~{ops:,} ops, more than the limit of {max_ops:,} "
                                            f"(a replay of that size takes minutes and gigabytes); shrink M/N/K, or pass "
                                            f"--max-ops {ops} to replay it anyway")


def _explore_fields(path: Path, explore: Any) -> dict[str, Any]:
    """``[explore]`` (TOML) or ``"explore"`` (schedule JSON) as Scenario fields."""
    if not isinstance(explore, dict):
        raise ScenarioError(path, "explore", "must be a table (runs, max_stall, seed)")
    for key in explore:
        if key not in ("runs", "max_stall", "seed"):
            raise ScenarioError(path, f"explore.{key}", "unknown field; use runs, max_stall, seed")
    return {"runs": _int(path, "explore.runs", explore["runs"], 1) if "runs" in explore else None,
            "max_stall": _int(path, "explore.max_stall", explore.get("max_stall", 2000), 0),
            "seed": _int(path, "explore.seed", explore.get("seed", 0), 0)}


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


def _load_schedule_json(path: Path, max_ops: int = DEFAULT_MAX_OPS) -> Scenario:
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise ScenarioError(path, "json", f"not valid JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise ScenarioError(path, "json", "nested too deeply to be a schedule") from None
    if not isinstance(data, dict):
        raise ScenarioError(path, "json", "a schedule is a JSON object")
    try:
        schedule = from_json(data, max_ops=max_ops)
        arch = load_profile(schedule.arch)
        validate_for(schedule, arch)
    except ScheduleError as e:
        raise ScenarioError(path, "schedule", str(e)) from None
    except UnknownArch as e:
        raise ScenarioError(path, "arch", str(e)) from None
    description = data.get("description", "hand-written schedule")
    if not isinstance(description, str):
        raise ScenarioError(path, "description", f"{description!r} must be a string")
    return Scenario(path=path, name=schedule.name, description=description.strip(), builder="(schedule json)",
                    config=None, expect=_expectation(path, data.get("expect", {})), schedule_json=data,
                    built=schedule, **_explore_fields(path, data.get("explore", {})))


def schedule_file(scenario: Scenario) -> dict[str, Any]:
    """The schedule as a file that keeps the scenario's name, description, expectation and
    exploration settings (``protosim schedule``): ``protosim run`` on it judges alike."""
    data = to_json(scenario.build())
    data["name"] = scenario.name
    if scenario.description:
        data["description"] = scenario.description
    expect = {k: v for k, v in scenario.expect.to_json().items() if v is not None and v != []}
    if expect:
        data["expect"] = expect
    explore = {"max_stall": scenario.max_stall, "seed": scenario.seed} | ({"runs": scenario.runs} if scenario.runs else {})
    if explore != {"max_stall": 2000, "seed": 0}:
        data["explore"] = explore
    return data


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
            problems.append(f"exploration never reached {', '.join(sorted(lacking))} in {outcomes.runs} replays "
                            f"(reached {', '.join(sorted(seen))})")
        for k in sorted(extra):
            c = outcomes.classes[k]
            problems.append(f"exploration reached {k} in {c.runs}/{outcomes.runs} replays (first under {c.first}), "
                            f"which [expect] neither requires (outcomes) nor allows (may)")
    return problems


def builtin_dir() -> Path:
    """The repository's ``scenarios/`` folder (next to the package in a checkout)."""
    return Path(__file__).resolve().parent.parent / "scenarios"


def _load_ttgir(path: Path, max_ops: int = DEFAULT_MAX_OPS) -> Scenario:
    """A Triton TTGIR file, read by ``protosim.frontends.ttgir`` (its launch from
    ``<name>.launch.json`` beside it).  The description compares the shared memory the
    IR allocates with the ``shared`` field of the compiled kernel's metadata
    (``<name>.json`` beside it), when there is one."""
    from protosim.frontends.ttgir import TtgirError, metadata, metadata_shared, read

    try:
        schedule, mod = read(path, max_ops=max_ops)
        meta = metadata_shared(path)
        spills = (metadata(path) or {}).get("n_spills")
        validate_for(schedule, load_profile(schedule.arch))
    except TtgirError as e:
        raise ScenarioError(path, "ttgir", str(e).split(": ", 1)[-1]) from None
    except ScheduleError as e:
        raise ScenarioError(path, "ttgir", f"target {schedule.arch}: {e}") from None
    if meta is None:
        smem = f"shared memory {mod.shared_bytes:,} B ({mod.shared_source}; no metadata JSON beside it)"
    elif mod.module_shared is not None:
        smem = (f"shared memory {mod.module_shared:,} B from the IR's ttg.shared, {meta:,} B in Triton's metadata: "
                f"{'match' if meta == mod.module_shared else 'MISMATCH'}")
    else:
        smem = (f"shared memory {meta:,} B (Triton's metadata); the IR's allocations live at once: "
                f"{mod.live_peak:,} B (without Triton's scratch for layout conversions)")
    desc = f"Triton TTGIR @{mod.func}, target {mod.target}, {mod.num_warps} warps; {smem}"
    if mod.dead_dots:
        lines = ", ".join(str(n) for n in sorted(mod.dead_dots))
        desc += (f"; nothing reads the result of the warp_group_dot at line(s) {lines}: ptxas deletes its wgmmas, "
                 "timed as the one placeholder HGMMA.64x8x16 it keeps (docs/triton.md)")
    if schedule.regs_per_thread:
        desc += f"; {schedule.regs_per_thread} registers a thread (the metadata's n_regs) bound the CTAs an SM holds"
    if spills:
        desc += (f"; ptxas spilled {spills} registers a thread to local memory (the metadata's n_spills): the replay "
                 "does not time spill traffic, so expect the kernel slower than predicted (docs/triton.md \"Timing\")")
    return Scenario(path=path, name=path.stem, description=desc, builder="ttgir", config=None,
                    schedule_json=to_json(schedule), built=schedule)


def _load_tirx(spec: str, overrides: list[tuple[str, Any]] = (), max_ops: int = DEFAULT_MAX_OPS) -> Scenario:
    """A TIRx kernel, ``path/to/kernel.py[:FUNC]``: the program and its launch from
    ``protosim.frontends.tirx.load_kernel`` (``overrides``: the ``--set`` pairs), its
    schedule from ``protosim.frontends.tirx.extract``; the arch's capabilities, shared
    memory and ``max_ops`` checked like every other input."""
    from protosim.frontends.tirx import extract
    from protosim.frontends.tirx.errors import TirxError
    from protosim.frontends.tirx.load import load_kernel, split_spec

    def error(e: Exception) -> ScenarioError:
        msg = str(e)
        for prefix in (f"{spec}: ", f"{path}: "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
                break
        return ScenarioError(spec, "tirx", msg)

    path, func_name = split_spec(spec)
    if not path.exists():
        raise ScenarioError(spec, "file", f"no such file {str(path)!r}; give {_INPUTS}")
    if not path.is_file():  # a folder, a FIFO or a device
        raise ScenarioError(spec, "file", f"{str(path)!r} is not a regular file; give {_INPUTS}")
    try:
        src = load_kernel(path, func_name, list(overrides))
        config = {"frontend": "tirx", "source": src.source, "call": dict(src.call), "args": dict(src.args)}
        schedule = extract(src.func, src.arch, args=src.args, name=src.name, config=config, max_ops=max_ops)
    except (TirxError, ScheduleError) as e:
        raise error(e) from None
    n_ops = schedule.op_count()
    if n_ops > max_ops:
        raise ScenarioError(spec, "tirx", f"the schedule has {n_ops:,} ops, more than the limit of {max_ops:,}; "
                                          f"pass --max-ops {n_ops} to replay it, or launch fewer CTAs / a smaller problem")
    try:
        arch = load_profile(schedule.arch)
    except UnknownArch as e:
        raise ScenarioError(spec, "arch", str(e)) from None
    need = smem_bytes(schedule)
    if need > arch.smem_per_cta_bytes:
        raise ScenarioError(spec, "tirx", f"the CTA needs {need:,} bytes of shared memory; {arch.name} allows "
                                          f"{arch.smem_per_cta_bytes:,} per CTA. Allocate less shared memory "
                                          f"(fewer stages, smaller tiles)")
    try:
        validate_for(schedule, arch)
    except ScheduleError as e:
        raise ScenarioError(spec, "tirx", f"on {arch.name}: {e}") from None
    call = ", ".join(f"{k}={v!r}" for k, v in src.call.items())
    args = ", ".join(f"{k}={v}" for k, v in src.args.items())
    desc = (f"TIRx kernel {src.source}" + (f"({call})" if call else "") + f" on {arch.name}"
            + (f", scalar arguments {args}" if args else "") + f"; {len(schedule.ctas)} CTA(s), {n_ops:,} ops")
    return Scenario(path=Path(spec), name=src.name, description=desc, builder="tirx", config=None,
                    schedule_json=to_json(schedule), built=schedule)


_DATACLASSES.save()  # after the module's last dataclass
