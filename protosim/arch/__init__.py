"""Architecture profiles: one TOML table per GPU, every constant with its source.

The engine never branches on an architecture name; it reads numbers (and the
MMA flavour) from an :class:`ArchProfile`.  Adding a GPU is adding a TOML file
next to this module.  ``protosim profile h200`` prints a table with sources and
marks the guesses.
"""

from __future__ import annotations

import bisect
import marshal
import os
import sys
import tomllib
from dataclasses import field
from importlib.util import MAGIC_NUMBER, cache_from_source
from pathlib import Path
from typing import Any

from protosim._dataclass_cache import DataclassCache

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

_HERE = Path(__file__).parent


@dataclass(frozen=True, slots=True)
class Constant:
    """One number of a profile and where it came from."""

    value: Any
    unit: str
    source: str
    guess: bool = False


@dataclass(frozen=True)
class ArchProfile:
    """Numbers the engine needs for one GPU.  Field docs say how the engine uses them."""

    name: str
    target: str
    description: str
    # chip
    sm_count: int
    clock_ghz: float
    tensor_clock_ghz: float
    """The chip's clock while any SM's tensor core works (wgmma blocks in flight) and the chip is
    lightly loaded: the H200 runs a GEMM's k-loop at ~1.80 GHz, not 1.98 (:mod:`protosim.clock`
    turns a replay's cycles into time)."""
    tensor_clock_ghz_per_tflops: float
    """How much lower the tensor clock runs for each TFLOP/s of wgmma work the whole chip does
    (:func:`protosim.clock.loaded_tensor_clock_ghz`)."""
    tensor_clock_hold_cycles: float
    """Tensor-idle cycles the chip stays at ``tensor_clock_ghz`` through; a longer gap runs at
    ``clock_ghz`` and pays ``tensor_clock_switch_ns``."""
    tensor_clock_switch_ns: tuple[tuple[int, float], ...]
    """Wall time a tensor-idle gap longer than the hold costs beyond its cycles (two clock switches
    that count no cycle), by the gap's length in cycles: piecewise linear, flat past its ends."""
    launch_fixed_us: float
    """What a kernel-only measurement (CUDA events around the launch alone) reads beyond the
    SMs' cycles: an empty kernel's time.  Not part of any replay; added to the predicted
    kernel time (:attr:`protosim.verdict.Timing.kernel_us`)."""
    l2_bytes: int
    l2_bytes_by_sms: tuple[tuple[int, float], ...]
    """What of the L2 the lines of a launch on so many SMs can fill (each line read by one SM):
    piecewise linear in the SM count, flat past its ends (:meth:`l2_capacity`).  A few SMs do
    not reach the whole L2 (the H200: ~28 MB for 1-8 SMs, ~49 MB from 66 on)."""
    hbm_bytes_per_clk: float
    l2_bytes_per_clk: float
    l2_shared_footprint: float
    """How many times its bytes a line read by SMs of more than one TPC takes of the whole L2: a
    buffer of such lines stops fitting at ``l2_bytes / l2_shared_footprint`` (~30 MB on the H200)
    whether 8, 64 or 132 SMs read it, where lines one SM or one TPC reads fill what the readers reach
    (:meth:`l2_shared_footprint_at`; docs/semantics.md "L2 partitions")."""
    sms_per_tpc: int
    """SMs of one TPC (SM ids ``k * sms_per_tpc`` on): two SMs of one TPC reading a line cost the L2
    what one does (:meth:`l2_tpc`)."""
    l2_side1_sms: tuple[tuple[int, int], ...]
    """The SMs that read through the L2's second partition, as ``[first, last]`` SM id ranges
    (every other SM reads through the first): :meth:`l2_side`.  Measured on the H200; no rule of
    the replay reads it (the footprint follows TPCs, not sides)."""
    l2_merge_window_cycles: float
    """A read of a tile that another SM began reading this many cycles earlier or less, while that
    read is still under way, shares its lines: fully if both asked at once, less and less the
    later it asks, nothing past the window (0: no sharing; :meth:`protosim.engine.resources.MemorySystem.read`)."""
    # per SM / CTA limits
    smem_per_sm_bytes: int
    smem_per_cta_bytes: int
    smem_reserved_per_cta_bytes: int
    max_threads_per_sm: int
    max_threads_per_cta: int
    max_ctas_per_sm: int
    regs_per_sm: int
    reg_alloc_unit: int
    """Registers are given to a warp in blocks of this many (``regs_per_thread * 32`` rounded up):
    with ``regs_per_sm`` they bound the CTAs per SM of a schedule that states its registers."""
    named_barriers: int
    tmem_columns: int
    # mbarrier
    mbar_init_cycles: float
    wait_ready_cycles: float
    wait_address_cycles: float
    """Cycles a wait whose barrier address the code computes at run time (a ring stage's barrier,
    :attr:`protosim.ir.Wait.computed_address`) spends before its first try."""
    arrive_cycles: float
    arrive_wait_round_trip_cycles: float
    """From a thread's ``mbarrier.arrive`` that completes a phase to its own warp's ``try_wait`` on
    that phase returning true: the arrive's round trip to the barrier in shared memory.  A try_wait
    the arriving warp makes sooner costs the rest of it (``MBarrierUnit.wait``)."""
    wake_cycles: float
    tma_landing_wake_cycles: float
    """A blocked waiter's return after a TMA load's landing completes the phase (``wake_cycles``
    is for completions by an arrive): the load latency tables are measured to the return."""
    # TMA
    tma_available: bool
    """Whether TMA / bulk-copy ops may appear in a schedule for this profile."""
    tma_issue_cycles: float
    tma_descriptor_fetch_cycles: float
    """A tensor map's first load on an SM in a kernel starts this much later (the descriptor's fetch)."""
    tma_sm_bytes_per_clk: float
    tma_l2_latency: tuple[tuple[int, float], ...]
    tma_dram_latency: tuple[tuple[int, float], ...]
    tma_store_latency: tuple[tuple[int, float], ...]
    # MMA
    mma_kind: str
    mma_inst_m: int
    mma_inst_k: int
    mma_issue_base: float
    mma_issue_per_n: float
    mma_issue_min: float
    mma_tail_cycles: float
    best_gemm_tflops: float
    """The fastest fp16 GEMM measured on this GPU, chip-wide (a roof: protosim/roof.py); 0 = none measured."""
    mma_thread_issue_cycles: float
    wgmma_issue_overhead: float
    wgmma_per_thread_desc_issue_min: float
    wgmma_unit_queue_instructions: float
    """Instructions of each wgmma block in flight the tensor core serves before a block that
    starts later joins the sharing (``engine.resources.SharedTensorCore``)."""
    """``mma_issue_min`` for a wgmma whose descriptors are built in per-thread registers
    (:attr:`protosim.ir.Wgmma.descriptors`)."""
    # TMEM
    tmem_load_latency: float
    tmem_bytes_per_clk: float
    tmem_alloc_cycles: float
    # plain thread work
    global_load_l2_cycles: float
    global_load_dram_cycles: float
    lsu_bytes_per_clk: float
    """Bytes per cycle one SM's loads bring in from L2 (``ld.global``, ``cp.async``)."""
    global_load_issue_cycles: float
    """One SM's cost per warp ``ld.global`` of 4 bytes or more per lane, beside its bytes."""
    global_load_subword_issue_cycles: float
    """The same for 1- and 2-byte loads (``LDG.E.U16``: the seed's Hopper copy)."""
    l1_line_load_cycles: float
    """One SM's cost per 128-byte line a warp ``ld.global`` touches: an instruction whose lanes are
    not contiguous takes ``lines x`` this (``GlobalLoad.lines``) where that is more than its issue."""
    l1_line_store_cycles: float
    """The same for a warp ``st.global`` (``GlobalStore.lines``), against ``global_store_issue_cycles``."""
    copy_store_issue_cycles: float
    """One SM's cost per warp ``st.shared`` of a thread copy (each loaded value is stored once)."""
    smem_bytes_per_clk: float
    smem_latency: float
    global_store_latency: float
    global_store_issue_cycles: float
    """One SM's cost per warp ``st.global`` instruction, whatever its width."""
    global_store_chip_per_clk: float
    """Warp ``st.global`` instructions the chip's L2 takes per cycle, all SMs together, when their
    lanes are scattered over rows (``GlobalStore.lines``: the seed's epilogues)."""
    global_store_contiguous_chip_per_clk: tuple[tuple[int, float], ...]
    """The same for stores whose 32 lanes write contiguous bytes, by bytes a lane: more of the
    narrow ones (a 2-byte store is 64 bytes in two sectors)."""
    global_store_spread_lines_per_clk: tuple[tuple[int, float], ...]
    """Lines a cycle the chip's L2 takes, by lines an instruction, from stores of 1-4 bytes a lane
    whose lanes are apart within one run of lines (``GlobalStore.lines`` above the contiguous
    count): Triton's unaligned stores, lanes along 128-byte rows."""
    alu_fp32_cycles: float
    """A warp's FP32 add / mul / FMA instruction on its SM sub-partition (``engine/units/alu.py``)."""
    alu_half_rate_cycles: float
    """A warp's FMNMX (max / min) or F2FP (fp32 -> packed fp16x2) instruction."""
    alu_mufu_cycles: float
    """A warp's MUFU instruction (ex2, lg2, rcp, rsqrt, sin, cos)."""
    alu_shfl_cycles: float
    """A warp's SHFL (a reduction's butterfly step)."""
    alu_half_issue_cycles: float
    """The issue slots an FMNMX / F2FP takes from its scheduler (its pipe: ``alu_half_rate_cycles``)."""
    alu_mufu_issue_cycles: float
    """The issue slots a MUFU instruction takes from its scheduler (its pipe: ``alu_mufu_cycles``)."""
    sm_subpartitions: int
    """Warp schedulers per SM: a CTA's warp ``g`` issues its register math on sub-partition ``g % n``."""
    issue_share_per_warp: float
    """How much longer a warp's local work (the cycles it pays between visible ops) takes for each
    warp of *another* CTA on the same SM doing its own on the same sub-partition when it starts
    (:mod:`protosim.engine.issue`; 0: co-resident CTAs do not slow each other's issue)."""
    cta_turnover_cycles: float
    """An SM's slot takes its next CTA this long after the last one exited."""
    cta_sync_cycles: float
    fence_cycles: float
    op_issue_cycles: float
    # clusters
    max_cluster_size: int
    """CTAs a cluster may have (0: no clusters on this GPU)."""
    cluster_sync_cycles: float
    remote_arrive_cycles: float
    """A remote mbarrier arrive, or a DSMEM load/store, reaches the peer SM this much later."""
    multicast_extra_cycles: float
    gpc_sms: tuple[int, ...]
    """SMs of each GPC, in SM index order: a cluster's CTAs are placed in one GPC."""
    constants: dict[str, Constant] = field(default_factory=dict, compare=False, repr=False)
    """Every field above with its unit and source."""

    @property
    def has_tmem(self) -> bool:
        return self.tmem_columns > 0

    def mma_cycles(self, m: int, n: int, k_elems: int, issue_min: float | None = None) -> tuple[float, int]:
        """(unit occupancy in cycles, instruction count) of an ``m x n x k`` tile MMA.

        The tile lowers to ceil(m / inst_m) * ceil(k / inst_k) instructions of
        width n; each occupies the tensor core for its issue-to-issue interval
        ``max(issue_min, issue_base + issue_per_n * n)`` (``issue_min``: the profile's
        ``mma_issue_min`` unless given).
        """
        insts = -(-m // self.mma_inst_m) * -(-k_elems // self.mma_inst_k)
        floor = self.mma_issue_min if issue_min is None else issue_min
        per = max(floor, self.mma_issue_base + self.mma_issue_per_n * n)
        return per * insts, insts

    def unsupported(self, op) -> str | None:
        """Why ``op`` (a ``protosim.ir`` op or op class: its ``kind`` and ``needs``) cannot run
        on this arch (None: it can)."""
        need, kind = op.needs, op.kind
        if need == "tcgen05" and self.mma_kind != "tcgen05":
            return f"{kind} is a tcgen05/TMEM op; {self.name} ({self.target}) has no tcgen05 (it has {self.mma_kind})"
        if need == "wgmma" and self.mma_kind != "wgmma":
            return f"{kind} is a wgmma op; {self.name} ({self.target}) has no wgmma (it has {self.mma_kind})"
        if need == "cluster" and not self.max_cluster_size:
            return f"{kind} is a thread-block-cluster op; {self.name} ({self.target}) has no clusters"
        if need == "tma" and not self.tma_available:
            return f"{kind} is a TMA / bulk-copy op; the {self.name} profile has none ({self.constants['tma_available'].source})"
        return None

    def gpcs(self) -> list[range]:
        """The SM indices of each GPC (a cluster is placed within one)."""
        out, start = [], 0
        for n in self.gpc_sms:
            out.append(range(start, start + n))
            start += n
        return out

    def l2_capacity(self, sms: int) -> float:
        """Bytes of L2 a launch whose CTAs run on ``sms`` SMs can fill (:attr:`l2_bytes_by_sms`)."""
        return flat_ends(self.l2_bytes_by_sms, sms)

    def l2_shared_footprint_at(self, capacity: float) -> float:
        """How many times its bytes a line read across TPCs takes of ``capacity`` (what a launch's
        SMs reach, :meth:`l2_capacity`): such lines are held in ``l2_bytes / l2_shared_footprint``
        at most, so on few SMs, whose reach is no more than that, they cost what any line does
        (the H200's 8 SMs: ~28 MB either way, 2026-12-05_h200_l2_side_map.md section 5)."""
        return max(1.0, capacity * self.l2_shared_footprint / self.l2_bytes)

    def l2_tpc(self, sm: int) -> int:
        """The TPC SM ``sm`` belongs to."""
        return sm // self.sms_per_tpc

    def l2_side(self, sm: int) -> int:
        """The L2 partition SM ``sm`` reads through: 1 for the SMs of :attr:`l2_side1_sms`, 0 for
        the rest (the H200's map is measured; its source says how)."""
        return 1 if any(first <= sm <= last for first, last in self.l2_side1_sms) else 0

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / (self.clock_ghz * 1e3)

    def guesses(self) -> list[str]:
        return [k for k, c in self.constants.items() if c.guess]


def flat_ends(table: tuple[tuple[float, float], ...], x: float) -> float:
    """Piecewise linear through the measured points, flat past both ends (one point: flat)."""
    if x <= table[0][0]:
        return float(table[0][1])
    for (x0, y0), (x1, y1) in zip(table, table[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return float(table[-1][1])


def interpolate(table: tuple[tuple[int, float], ...], nbytes: int) -> float:
    """Piecewise-linear in bytes through the measured points, extrapolated at both ends."""
    xs = [x for x, _ in table]
    i = bisect.bisect_left(xs, nbytes)
    i = min(max(i, 1), len(table) - 1)
    (x0, y0), (x1, y1) = table[i - 1], table[i]
    return max(0.0, y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0))


class UnknownArch(ValueError):
    pass


def available() -> list[str]:
    return sorted(p.stem for p in _HERE.glob("*.toml"))


_CACHE: dict[str, ArchProfile] = {}

_TOML_KEY = b"protosim-toml-cache\x00" + MAGIC_NUMBER


def _read_toml(path: Path) -> dict[str, Any]:
    """``tomllib.loads`` of the file, remembered like a .pyc: the parsed table is kept (marshal,
    with the text it came from) beside the module's byte code and used while the file's text is
    the same -- parsing a profile is ~1.5 ms of every cold ``protosim run``.  Not written under
    ``sys.dont_write_bytecode``; an unreadable or stale cache is parsed again."""
    text = path.read_text()
    try:
        cache = cache_from_source(str(path) + ".py")[:-len(".pyc")] + ".marshal"
    except (NotImplementedError, ValueError):
        cache = None
    if cache:
        try:
            with open(cache, "rb") as f:
                blob = f.read()
            if blob.startswith(_TOML_KEY):
                stored, raw = marshal.loads(blob[len(_TOML_KEY):])
                if stored == text and isinstance(raw, dict):
                    return raw
        except (OSError, ValueError, EOFError, TypeError):
            pass
    raw = tomllib.loads(text)
    if cache and not sys.dont_write_bytecode:
        tmp = f"{cache}.{os.getpid()}.tmp"
        try:
            data = _TOML_KEY + marshal.dumps((text, raw))  # ValueError: a value marshal cannot write (a date)
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, cache)
        except (OSError, ValueError):
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return raw


def load_profile(name: str) -> ArchProfile:
    """The profile called *name* (``"h200"``, ``"b200"``)."""
    key = name.lower() if isinstance(name, str) else ""
    if key in _CACHE:
        return _CACHE[key]
    if key not in available():  # a name, never a path: "../arch/h200" is not an arch
        raise UnknownArch(f"unknown arch {name!r}; available: {', '.join(available())}")
    path = _HERE / f"{key}.toml"
    raw = _read_toml(path)
    constants: dict[str, Constant] = {}
    for entries in raw.values():
        if not isinstance(entries, dict):
            continue
        for key_, entry in entries.items():
            constants[key_] = Constant(entry["value"], entry.get("unit", ""), entry["source"], entry.get("guess", False))
    values: dict[str, Any] = {}
    for f in ArchProfile.__dataclass_fields__.values():
        if f.name in ("name", "target", "description"):
            values[f.name] = raw[f.name]
        elif f.name == "constants":
            continue
        elif f.name not in constants:
            raise UnknownArch(f"{path.name}: missing constant {f.name!r}")
        else:
            v = constants[f.name].value
            values[f.name] = tuple(tuple(p) if isinstance(p, list) else p for p in v) if isinstance(v, list) else v
    profile = ArchProfile(**values, constants=constants)
    _CACHE[key] = profile
    return profile


_DATACLASSES.save()  # after the module's last dataclass
