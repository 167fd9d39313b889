"""What a thread copy compiled to: its loads, how many ptxas keeps in flight, its registers.

protosim times a thread copy from its instruction stream (docs/semantics.md "Thread copies"):
``bytes / 32 / load_bytes`` loads per lane, ``in_flight`` of them outstanding, one load latency
per round.  Those numbers are ptxas's, so this module reads them off a cubin's SASS:

* the loads and shared stores of the copy, in program order (``LDG`` / ``STS`` up to the
  first ``MEMBAR`` or ``BAR``: the copy's fence and barrier end it);
* an in-order issue model of that stream, whose time divided by the latency is the copy's
  *rounds*.  Where the listing carries the instructions' encodings (``cuobjdump -sass`` prints
  them) it reads ptxas's own schedule from each instruction's control bits
  (:func:`control_stream`): the stall cycles before the next instruction issues, and the
  dependency barriers (scoreboards) -- a load sets one when it issues and clears it ``latency``
  cycles later, and an instruction that waits on it waits for every load set on it, not only
  the one it reads (ptxas has six a warp and groups loads on them).  Without encodings, a load
  issues one cycle after the instruction before it and a store waits for its own load
  (:func:`issue_time`);
* the registers per thread (``cuobjdump -res-usage``).

``KERNEL`` is a cubin or fat binary, or a library TVM exported (``kernels.toolchain.build``'s
``kernels/<key>.so``): its embedded fat binary is read (:func:`device_code`).  **Read the
kernel that runs.**  TVM compiles with its own ptxas options (``--register-usage-level=10``,
``--use_fast_math``: ``tvm.support.nvcc``), and the same CUDA source through a plain
``nvcc -O3`` gets another schedule: the v3 kernel at 128 x 128 x 2048, BLK_N 16 keeps 7 loads
out (17.6 rounds) as TVM builds it, 11 (10.4 rounds) through ``nvcc -O3``
(results/silicon/timing/2026-12-03_v3_m128.md).

Needs ``cuobjdump`` (the CUDA toolkit, or the copy the ``triton`` wheel ships in
``triton/backends/nvidia/bin``).  Run:

    python -m kernels.toolchain.sass KERNEL.cubin|KERNEL.so [--latency 315]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from .compiler import FATBIN_MAGIC

LOAD = re.compile(r"\bLDG(?:\.[A-Z0-9]+)*\s+(R\d+),")
STORE = re.compile(r"\bSTS(?:\.[A-Z0-9]+)*\s+\[[^\]]*\],\s*(R\d+)")
END = re.compile(r"\b(?:MEMBAR|BAR\.SYNC|BAR\.ARV)\b")
WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def find_cuobjdump() -> str | None:
    """``cuobjdump`` on PATH, else the one in an installed ``triton`` wheel."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import importlib.util

        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    if spec and spec.origin:
        tool = Path(spec.origin).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        if tool.is_file():
            return str(tool)
    return None


@dataclasses.dataclass(frozen=True)
class CopyStream:
    """One lane's thread copy as ptxas scheduled it."""

    loads: int
    load_bytes: int
    max_in_flight: int
    rounds: float
    """In-order issue time of the stream / the load latency it was modelled with."""
    latency: float
    regs_per_thread: int
    cycles: float = 0.0
    """The issue model's time for the stream at ``latency`` (``rounds * latency``)."""
    scoreboards: bool = False
    """Whether the model read ptxas's control bits (stalls, dependency barriers)."""

    @property
    def in_flight(self) -> float:
        """Loads outstanding on average: what ``ThreadCopy.in_flight`` stands for."""
        return self.loads / self.rounds


def copy_ops(sass: str) -> list[tuple[str, str, int]]:
    """(``L`` or ``S``, register, bytes) of the first copy stream: the loads and shared stores
    from the first global load up to the fence or barrier after its first store.  A barrier
    between the loads and their stores (Triton's, before it overwrites a buffer others read)
    is inside the stream: the loads stay in flight across it."""
    ops: list[tuple[str, str, int]] = []
    stored = False
    for line in sass.splitlines():
        m = LOAD.search(line)
        if m:
            opcode = line[m.start():].split()[0].split(".")  # LDG.E.U16.CONSTANT -> its modifiers
            width = next((WIDTH[x] for x in opcode if x in WIDTH), 4)
            ops.append(("L", m.group(1), width))
            continue
        if not ops:
            continue
        m = STORE.search(line)
        if m:
            ops.append(("S", m.group(1), 0))
            stored = True
        elif stored and END.search(line):
            break
    return ops


def issue_time(ops: list[tuple[str, str, int]], latency: float, issue: float = 1.0) -> float:
    """Cycles the stream takes issued in order: a store waits for its register's load, and the
    copy is not over before the last load has returned."""
    t = 0.0
    ready: dict[str, float] = {}
    for kind, reg, _ in ops:
        if kind == "L":
            ready[reg] = t + latency
        else:
            t = max(t, ready.get(reg, 0.0))
        t += issue
    return max([t, *ready.values()])


UNLOADED_LATENCY = 315.0
"""An L2-hit ``LDG`` to its use with nothing else in flight on the H200: 313-317 cycles
(kernels/microbench/load_window.cu, results/silicon/microbench/2026-12-01_h200_load_window.md)."""
SHORT_LATENCY = 20.0
"""What the issue model charges the copy's other variable-latency instructions (a constant-bank
``LDC``, ``S2R``) before the scoreboard they set clears: an assumption, not measured -- there are
a few per copy, none on the loads' path in the builds read."""
READ_LATENCY = 10.0
"""Cycles until an instruction's read scoreboard (its source registers read) clears: assumed."""
NO_BARRIER = 7


@dataclasses.dataclass(frozen=True)
class Control:
    """One instruction and the scheduling ptxas encoded in it (Volta and later: the top 23 bits
    of the 128-bit word -- stall cycles, yield, write and read scoreboard, wait mask, reuse)."""

    text: str
    stall: int
    write_barrier: int
    read_barrier: int
    wait_mask: int


ENCODED = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;\s*/\*\s*0x[0-9a-f]{16}\s*\*/")
HIGH_WORD = re.compile(r"^\s*/\*\s*(0x[0-9a-f]{16})\s*\*/\s*$")


def control_stream(sass: str) -> list[Control]:
    """Every instruction of the listing with its control bits; empty when the listing has no
    encodings (``cuobjdump -sass`` prints each instruction's low word beside it and the high
    word on the next line)."""
    lines = sass.splitlines()
    out = []
    for i, line in enumerate(lines[:-1]):
        m = ENCODED.search(line)
        high = HIGH_WORD.match(lines[i + 1]) if m else None
        if high:
            c = int(high.group(1), 16) >> 41
            out.append(Control(m.group(1), c & 0xF, (c >> 5) & 7, (c >> 8) & 7, (c >> 11) & 0x3F))
    return out


def copy_controls(stream: list[Control]) -> list[Control]:
    """The copy's instructions, everything between: from the first ``LDG`` to the fence or
    barrier after its first shared store (as :func:`copy_ops`)."""
    start = next((i for i, c in enumerate(stream) if LOAD.search(c.text)), None)
    if start is None:
        return []
    stored = False
    for end in range(start, len(stream)):
        if STORE.search(stream[end].text):
            stored = True
        elif stored and END.search(stream[end].text):
            return stream[start:end + 1]
    return stream[start:]


def scoreboard_time(stream: list[Control], latency: float) -> float:
    """Cycles the copy takes issued as ptxas scheduled it: each instruction ``stall`` cycles
    (at least one) after the one before, later if its wait mask names a scoreboard still set; a
    load's write scoreboard clears ``latency`` cycles after it issues.  Not over before the last
    load has returned."""
    t = 0.0
    clears = [0.0] * 6
    for c in stream:
        for b in range(6):
            if c.wait_mask >> b & 1:
                t = max(t, clears[b])
        if c.write_barrier != NO_BARRIER:
            done = t + (latency if LOAD.search(c.text) else SHORT_LATENCY)
            clears[c.write_barrier] = max(clears[c.write_barrier], done)
        if c.read_barrier != NO_BARRIER:
            clears[c.read_barrier] = max(clears[c.read_barrier], t + READ_LATENCY)
        t += max(1, c.stall)
    return max(t, *clears)


def max_in_flight(ops: list[tuple[str, str, int]]) -> int:
    out = peak = 0
    for kind, _, _ in ops:
        out += 1 if kind == "L" else -1
        peak = max(peak, out)
    return peak


INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")  # addresses past 0xffff have more digits


def loads_in_flight(sass: str) -> int | None:
    """The most global loads into registers (``LDG``) one thread has out at once: for each load, it
    and the loads issued after it before the first instruction that reads its destination, the
    largest of those counts over the kernel; None when it has no ``LDG``.

    Triton's ``tt.load`` of a tile is several ``LDG`` per thread; ptxas usually issues them all
    before their first use, but a masked load with ``other`` (the zero it must write where the mask
    is off) can be scheduled one at a time, each waiting for the one before to be consumed: held-out
    set 5's bias gradient, 8 ``LDG.E.128`` a thread each behind its own ``CS2R`` zeroing and
    ``FADD`` use, ran 1.7x the time of the same loads unmasked (results/silicon/microbench/
    2026-12-02_h200_strip_read.md).  A linear scan: a load whose first use is in the next iteration
    of a loop counts the loads up to the listing's end of that use or its end."""
    body = INSTRUCTION.findall(sass)
    best = None
    for i, text in enumerate(body):
        m = LOAD.search(text)
        if not m:
            continue
        opcode = text[m.start():].split()[0].split(".")
        width = next((WIDTH[x] for x in opcode if x in WIDTH), 4)
        first = int(m.group(1)[1:])
        regs = [f"R{first + k}" for k in range(max(1, width // 4))]
        use = re.compile(r"\b(?:%s)\b" % "|".join(regs))
        out = 1
        for later in body[i + 1:]:
            if LOAD.search(later):
                out += 1
                continue
            _, _, operands = later.partition(" ")
            sources = operands.split(",", 1)[1] if "," in operands else operands
            if use.search(sources):
                break
        best = out if best is None else max(best, out)
    return best


GLOBAL = re.compile(r"\b(LDG|STG)((?:\.[A-Z0-9]+)*)\s")


def global_widths(sass: str) -> dict[str, list[int]]:
    """The byte widths of the kernel's global loads (``LDG``) and stores (``STG``), each listed
    once, smallest first: ``{"ldg": [4], "stg": [4]}`` for a kernel whose every access is one
    32-bit element a lane (``LDG.E``), ``[16]`` for ``LDG.E.128``.  What the lowering made of each
    ``tt.load`` / ``tt.store``'s vector -- the TTGIR reader's ``proven_width`` is held to it
    (tests/test_ttgir_vector_width.py)."""
    out: dict[str, set[int]] = {"ldg": set(), "stg": set()}
    for text in INSTRUCTION.findall(sass):
        m = GLOBAL.search(text)
        if m:
            parts = m.group(2).split(".")
            out[m.group(1).lower()].add(next((WIDTH[x] for x in parts if x in WIDTH), 4))
    return {k: sorted(v) for k, v in out.items() if v}


HGMMA = re.compile(r"\bHGMMA\.")
DRAIN = re.compile(r"\bWARPGROUP\.DEPBAR\.LE\s+gsb0\s*,\s*0x0\b")


def wgmma_serialized(sass: str) -> bool | None:
    """Whether ptxas serialized the kernel's wgmmas: every ``HGMMA`` waits for itself to complete
    (``WARPGROUP.DEPBAR.LE gsb0, 0x0``) before the next one issues, where the PTX chained them
    (several ``wgmma.mma_async`` before one ``wgmma.wait_group``).  ptxas does this when it cannot
    keep the accumulator registers untouched across the chain and says so only in its verbose log
    (``C7515 Potential Performance Loss: wgmma.mma_async instructions are serialized due to non
    wgmma instructions defining accumulator registers of a wgmma between start and end of the
    pipeline stage``): Triton's pointer GEMM with W stored N x K at 128 x 256 (gemm_parts, results/
    silicon/triton/2026-12-02_h200_gemm_parts.md) ran 31-34% slower than with W K x N, whose
    four HGMMAs a k-step issue back to back.  None when the kernel has fewer than two ``HGMMA``."""
    body = INSTRUCTION.findall(sass)
    at = [i for i, text in enumerate(body) if HGMMA.search(text)]
    if len(at) < 2:
        return None
    for i, nxt in zip(at, [*at[1:], len(body)]):
        if not any(DRAIN.search(text) for text in body[i + 1:nxt]):
            return False
    return True


def registers(cubin: Path, tool: str) -> int:
    text = subprocess.run([tool, "-res-usage", str(cubin)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"REG:(\d+)", text)
    return int(m.group(1)) if m else 0


def device_code(path: Path, out_dir: Path) -> Path:
    """``path`` itself when it is a cubin or fat binary, else (a library TVM exported, which
    keeps its fat binary as data cuobjdump does not look into) the first fat binary embedded
    in it, written to ``out_dir``."""
    data = Path(path).read_bytes()
    at = data.find(FATBIN_MAGIC)
    if data[:4] != b"\x7fELF" or at < 0 or Path(path).suffix in (".cubin", ".fatbin"):
        return Path(path)
    header, size = struct.unpack_from("<HQ", data, at + 6)  # magic, version (2), header size, fat size
    fatbin = Path(out_dir) / (Path(path).stem + ".fatbin")
    fatbin.write_bytes(data[at:at + header + size])
    return fatbin


def disassemble(code: Path, tool: str) -> str:
    """``cuobjdump -sass`` of a cubin or fat binary (a library: :func:`device_code` first)."""
    return subprocess.run([tool, "-sass", str(code)], capture_output=True, text=True, check=True).stdout


def instructions(sass: str) -> list[str]:
    """The instructions of a listing, addresses and encodings dropped (two builds of one kernel
    compare equal when ptxas scheduled them alike)."""
    return INSTRUCTION.findall(sass)


def analyse(cubin: Path, latency: float = UNLOADED_LATENCY, tool: str | None = None) -> CopyStream:
    """The copy stream of the first kernel in ``cubin`` (a cubin, a fat binary or a library TVM
    exported)."""
    tool = tool or find_cuobjdump()
    if tool is None:
        raise FileNotFoundError("no cuobjdump: install the CUDA toolkit or `pip install triton` (it ships one)")
    with tempfile.TemporaryDirectory() as tmp:
        code = device_code(Path(cubin), Path(tmp))
        sass = disassemble(code, tool)
        regs = registers(code, tool)
    ops = copy_ops(sass)
    loads = [op for op in ops if op[0] == "L"]
    if not loads:
        why = " (it copies with cp.async, LDGSTS: an asynchronous copy, not a thread copy)" if "LDGSTS" in sass else ""
        raise ValueError(f"{cubin}: no global load stored to shared memory: no thread copy to read{why}")
    controls = copy_controls(control_stream(sass))
    cycles = scoreboard_time(controls, latency) if controls else issue_time(ops, latency)
    return CopyStream(loads=len(loads), load_bytes=loads[0][2], max_in_flight=max_in_flight(ops),
                      rounds=cycles / latency, latency=latency, regs_per_thread=regs, cycles=cycles,
                      scoreboards=bool(controls))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.toolchain.sass", description=__doc__.split("\n\n")[0])
    ap.add_argument("cubin", type=Path, nargs="+", help="a cubin, fat binary, or kernel library TVM exported (.so)")
    ap.add_argument("--latency", type=float, default=UNLOADED_LATENCY,
                    help=f"load latency of the issue model, cycles (default {UNLOADED_LATENCY:g}: the H200's unloaded L2 hit)")
    ap.add_argument("--json", action="store_true", help="one JSON object per cubin")
    args = ap.parse_args(argv)
    tool = find_cuobjdump()
    if tool is None:
        print("sass: no cuobjdump on PATH or in an installed triton wheel; install the CUDA toolkit or triton", file=sys.stderr)
        return 2
    status = 0
    for path in args.cubin:
        try:
            s = analyse(path, args.latency, tool)
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            print(f"sass: {path}: {e}", file=sys.stderr)
            status = 1
            continue
        if args.json:
            print(json.dumps({"cubin": str(path), **dataclasses.asdict(s), "in_flight": s.in_flight}))
        else:
            print(f"{path}: {s.loads} loads of {s.load_bytes} B per lane, at most {s.max_in_flight} in flight, "
                  f"{s.rounds:.1f} rounds at {s.latency:.0f} cycles = {s.cycles:,.0f} cycles "
                  f"({'ptxas scoreboards' if s.scoreboards else 'no encodings: own-load waits'}; in_flight ~{s.in_flight:.1f}), "
                  f"{s.regs_per_thread} registers per thread")
    return status


if __name__ == "__main__":
    sys.exit(main())
