"""Fuzz inputs for the TIRx path: ``protosim run fz_k.py:FUNC --set KEY=VALUE --runs 2``.

The inputs are real TIRx kernel sources, mutated as text:

* bases (:func:`bases`) -- ``tests/fixtures/tirx/mbar_ok.py`` (a module-level
  ``@T.prim_func``); ``tests/fixtures/tirx/mbar_factory.py`` (a function returning one,
  ``--set M=...``); ``examples/tirx/book_step7.py`` with ``kernels/tirx/ws_sm100.py`` copied
  next to it as ``fz_ws.py`` (the wrapper imports the copy, so the book's warp-specialized
  GEMM is what gets mutated; ``fz_k.py:ws_step7`` runs it from a GemmConfig); Hopper's
  ``kernels/tirx/hopper.py`` as ``fz_hop.py`` behind a wrapper taking the step and its knobs
  (wgmma, raw TMA with tensor maps, bounded waits on ``clock64``); the seed's
  ``kernels/tirx/seed_sm100.py`` as ``fz_seed.py`` (``fz_k.py:hgemm_v1`` .. ``hgemm_v6``);
  and two templates written here in the released TIRx spelling (:data:`RING`: a two-stage
  mbarrier ring between two warps; :data:`SPIN`: every thread of two CTAs arrives and spins
  on ``try_wait``, a lagging warp, a named barrier);
* source mutations (:func:`source_mutation`, mostly in the lines of the kernel FUNC
  builds) -- integer literals (barrier counts, parities, byte counts, loop extents,
  thread-id extents, ...) set to 0, negative, off-by-one, huge; statement lines deleted,
  duplicated, swapped; ``==`` / ``!=`` / ``<`` flipped; a statement wrapped in
  ``if <thread id> == K:``, a ``for`` or a counter ``while``; calls of ops the frontend
  knows inserted where they break the protocol, of ops it does not know
  (``T.cuda.syncthreads_and(1)``, ``mbarrier.complete_tx``, ``barrier.cluster.arrive``
  ...), ``while`` / ``if`` on ``clock64``, an ``assert``, TVMScript that does not parse,
  Python that does not compile, module-level code that raises, exits or prints,
  truncation, bytes that are not UTF-8;
* launch mutations (:func:`launch`) -- ``--set`` keys that name nothing, strings / floats
  / arrays / tables / dates for integers, huge and negative integers, an arch that is no
  GPU, a parameter left out, a key given twice, ``--set`` arguments without ``=``;
  ``FUNC`` names that do not exist, are not Python names or name something other than a
  kernel; ``--json`` now and then.

Oracles (:func:`judge_launch` and the checks in :func:`tirx_cases`), written from
docs/tirx.md and the README's exit-status table, not from the frontend's code: an
unmutated base with a valid launch must be judged (0 or 1); these must be refused (2): a
FUNC that names no kernel (or function building one) of the file, a ``--set`` key that is
no parameter, a non-integer or out-of-range value of a PrimFunc scalar, an arch that names
no GPU, a kernel without MMAs and no arch, a missing required parameter, a source that does
not compile, and an unknown op, a branch or loop on ``clock64``, an ``assert`` or a call
TVMScript rejects inserted at the kernel's top level (executed by every thread).
Everything else may be judged or refused (0, 1, 2) -- but never 3, never a traceback,
never a hang, and ``--json`` prints JSON (:mod:`tests.fuzz.contract`).
"""

from __future__ import annotations

import functools
import io
import re
import tokenize
import tomllib
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from . import oracles as O
from .contract import REPO, FuzzCase
from .strategies import BAD_BYTES, _mode, chance

MAIN = "fz_k.py"
"""The kernel file every case runs (``fz_k.py:FUNC``)."""
SIBLING = "fz_ws.py"
"""The book base's copy of kernels/tirx/ws_sm100.py, imported by ``fz_k.py``."""

INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}

# --------------------------------------------------------------------------- templates

RING = '''"""Fuzz template: a two-stage mbarrier ring between two warps (producer warp 0, consumer warp 1).

The producer waits on empty[s] (a fresh ring: parity 1 passes), every lane writes its
element of data[s], and lane 0 arrives on full[s] (count 1); the consumer waits on full[s]
and all 32 lanes arrive on empty[s] (count 32).  8 hand-offs, so each stage is used 4 times.

    protosim run ring.py:kernel --set arch=h200     # exit 0
"""

from tvm.script import tirx as T


@T.prim_func
def kernel(out: T.Buffer((4,), "int32"), lag_ns: T.int32):
    T.device_entry()
    _cta = T.cta_id([1])
    warp_id = T.warp_id([2])
    lane_id = T.lane_id([32])
    pool = T.SMEMPool()
    full = pool.alloc((2,), "uint64", align=8)
    empty = pool.alloc((2,), "uint64", align=8)
    data = pool.alloc((2, 32), "int32", align=128)
    pool.commit()
    if warp_id == 0 and lane_id == 0:
        for s in range(2):
            T.ptx.mbarrier.init.shared.b64(full.ptr_to([s]), T.uint32(1))
            T.ptx.mbarrier.init.shared.b64(empty.ptr_to([s]), T.uint32(32))
    T.ptx.fence.mbarrier_init.release.cluster()
    T.cuda.cta_sync()
    if warp_id == 0:
        for i in range(8):
            T.cuda.mbarrier_wait(empty.ptr_to([i % 2]), (i // 2 + 1) % 2)
            data[i % 2, lane_id] = i
            T.cuda.warp_sync()
            if lane_id == 0:
                T.ptx.mbarrier.arrive.shared.b64(full.ptr_to([i % 2]))
    else:
        for i in range(8):
            T.cuda.mbarrier_wait(full.ptr_to([i % 2]), (i // 2) % 2)
            T.ptx.mbarrier.arrive.shared.b64(empty.ptr_to([i % 2]))
'''

SPIN = '''"""Fuzz template: every thread of each of two CTAs arrives on one barrier (count 128) and
spins on try_wait for the phase it completes, three times; warp 0 sleeps first (the
lagging-warp form); a named barrier closes each round.

    protosim run spin.py:kernel --set arch=h200 --set delay_ns=500     # exit 0
"""

from tvm.script import tirx as T


@T.prim_func
def kernel(out: T.Buffer((1,), "int32"), delay_ns: T.int32):
    T.device_entry()
    _cta = T.cta_id([2])
    tid = T.thread_id([128])
    pool = T.SMEMPool()
    bar = pool.alloc((1,), "uint64", align=8)
    pool.commit()
    ok = T.local_scalar("uint32")
    if tid == 0:
        T.ptx.mbarrier.init.shared.b64(bar.ptr_to([0]), T.uint32(128))
    T.ptx.fence.mbarrier_init.release.cluster()
    T.cuda.cta_sync()
    for it in range(3):
        if tid < 32:
            T.cuda.nano_sleep(T.uint64(delay_ns))
        T.ptx.mbarrier.arrive.shared.b64(bar.ptr_to([0]))
        ok = T.uint32(0)
        while ok == T.uint32(0):
            T.ptx.mbarrier.try_wait.parity.shared.b64(ok, bar.ptr_to([0]), T.uint32(it % 2))
        T.cuda.warpgroup_sync(1)
'''


HOPPER_WRAPPER = '''"""Fuzz base: the Hopper kernels of kernels/tirx/hopper.py (wgmma, raw TMA with tensor maps, bounded
wait loops on clock64), copied next to this file as fz_hop.py; ``kernel(...)`` builds one step.

    protosim run fz_k.py:kernel --set step=v5 --set M=128 --set N=128 --set K=128     # exit 0
"""

import sys

sys.path.insert(0, {repo!r})  # the repository root (kernels/)

from fz_hop import build  # noqa: E402
from kernels.spec import KernelSpec  # noqa: E402
from protosim.config import GemmConfig  # noqa: E402


def kernel(step="v5", M=128, N=128, K=128, PIPE_DEPTH=2, sm_count=1, expect_tx_delta=0, wait_parity_flip="",
           skip_mma_phase_flip=False, skip_store_wait=False, reset_phase_per_tile=False, tma_issuer="one", trace=False):
    cfg = GemmConfig(arch="h200", M=M, N=N, K=K, PIPE_DEPTH=PIPE_DEPTH, sm_count=sm_count, expect_tx_delta=expect_tx_delta,
                     wait_parity_flip=wait_parity_flip, skip_mma_phase_flip=skip_mma_phase_flip,
                     skip_store_wait=skip_store_wait, reset_phase_per_tile=reset_phase_per_tile, tma_issuer=tma_issuer)
    return build(KernelSpec(step, cfg, trace))
'''
HOPPER = "fz_hop.py"
"""The Hopper base's copy of kernels/tirx/hopper.py (its relative import made absolute)."""
SEED_WRAPPER = '''"""Fuzz base: the seed's steps v1-v6 of kernels/tirx/seed_sm100.py, copied next to this file as
fz_seed.py; each ``hgemm_vN(cfg: GemmConfig)`` runs as it is, with a GemmConfig from --set.

    protosim run fz_k.py:hgemm_v6 --set M=256 --set N=256 --set K=256 --set sm_count=2     # exit 0
"""

import sys

sys.path.insert(0, {repo!r})  # the repository root (kernels/)

from fz_seed import hgemm_v1, hgemm_v2, hgemm_v3, hgemm_v4, hgemm_v5, hgemm_v6  # noqa: E402

__all__ = ["hgemm_v1", "hgemm_v2", "hgemm_v3", "hgemm_v4", "hgemm_v5", "hgemm_v6"]
'''
SEED = "fz_seed.py"
"""The seed base's copy of kernels/tirx/seed_sm100.py."""


# --------------------------------------------------------------------------- bases


@dataclass(frozen=True)
class Base:
    name: str
    files: dict[str, bytes]
    target: str
    """The file the source mutations edit."""
    func: str
    region: tuple[str, str | None]
    """Lines from the first one starting with region[0] up to (excluding) the first after it
    starting with region[1] (None: the end): where lines are deleted, wrapped, inserted."""
    params: dict[str, str] | str = field(default_factory=dict)
    """FUNC's parameters (a function base): name -> "required" | "optional"; or CONFIG: FUNC
    takes a GemmConfig, built from the --set values naming its fields (docs/tirx.md)."""
    alt_funcs: dict[str, dict[str, str] | str] = field(default_factory=dict)
    """Other names in the kernel file that build a kernel, and their parameters (as ``params``);
    a valid launch may name one with the pseudo-pair ``("@func", NAME)``."""
    knob_free: tuple[tuple[str, str], ...] = ()
    """Pairs of a valid launch that rule out the extra (bug) knobs."""
    scalars: dict[str, str] = field(default_factory=dict)
    """The PrimFunc's integer scalar parameters: name -> dtype."""
    mma: bool = False
    """The kernel issues tcgen05 / wgmma, so its arch is inferred."""
    thread_vars: tuple[str, ...] = ()
    barriers: tuple[str, ...] = ()
    """Expressions of an mbarrier's address, for inserted calls."""
    objects: tuple[str, ...] = ()
    """TIRx barrier objects (``tma2mma``: .wait / .arrive / .init), for inserted calls."""
    valid_sets: tuple[tuple[tuple[str, str], ...], ...] = ()
    """Launches that are correct for the unmutated base (one is drawn)."""
    extra_valid: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """More valid values of some keys (bug knobs: judged 1, never refused)."""


CONFIG = "GemmConfig"


def _read(rel: str) -> bytes:
    return (REPO / rel).read_bytes()


@functools.cache
def bases() -> dict[str, Base]:
    book = _read("examples/tirx/book_step7.py").decode()
    book = re.sub(r"^sys\.path\.insert\(0, .*$", f"sys.path.insert(0, {str(REPO)!r})  # the repository root (kernels/)",
                  book, count=1, flags=re.M)
    book = book.replace("from kernels.tirx.ws_sm100 import ws_step7", "from fz_ws import ws_step7")
    assert "from fz_ws import ws_step7" in book and repr(str(REPO)) in book, "examples/tirx/book_step7.py changed shape"
    sizes = (("M", "128"), ("N", "128"), ("K", "128"), ("sm_count", "1"))
    hopper = _read("kernels/tirx/hopper.py").decode()
    assert "from ..spec import" in hopper, "kernels/tirx/hopper.py changed shape"
    hopper = hopper.replace("from ..spec import", "from kernels.spec import").encode()
    steps = tuple(f"hgemm_v{i}" for i in range(1, 7))
    out = [
        Base("mbar_ok", {MAIN: _read("tests/fixtures/tirx/mbar_ok.py")}, MAIN, "kernel", ("@T.prim_func", None),
             scalars={"timeout_cycles": "int32"}, thread_vars=("warp_id", "lane_id"), barriers=("bar.ptr_to([0])",),
             valid_sets=((("arch", "h200"),), (("arch", "b200"),), (("arch", "gb10"), ("timeout_cycles", "1000")),
                         (("arch", "h200"), ("timeout_cycles", "-1")))),
        Base("mbar_factory", {MAIN: _read("tests/fixtures/tirx/mbar_factory.py")}, MAIN, "build", ("def build", "def not_a_kernel"),
             params={"M": "required", "parity": "optional"}, scalars={"timeout_cycles": "int32", "lag_ns": "int64"},
             thread_vars=("warp_id", "lane_id"), barriers=("bar.ptr_to([0])",),
             valid_sets=((("arch", "h200"), ("M", "128")), (("arch", "b200"), ("M", "256"), ("parity", "1")),
                         (("arch", "h200"), ("M", "1024"), ("lag_ns", "200"), ("timeout_cycles", "7")))),
        Base("ring", {MAIN: RING.encode()}, MAIN, "kernel", ("@T.prim_func", None), scalars={"lag_ns": "int32"},
             thread_vars=("warp_id", "lane_id"), barriers=("full.ptr_to([0])", "empty.ptr_to([1])"),
             valid_sets=((("arch", "h200"),), (("arch", "b200"), ("lag_ns", "100")), (("arch", "gb10"),))),
        Base("spin", {MAIN: SPIN.encode()}, MAIN, "kernel", ("@T.prim_func", None), scalars={"delay_ns": "int32"},
             thread_vars=("tid",), barriers=("bar.ptr_to([0])",),
             valid_sets=((("arch", "h200"),), (("arch", "h200"), ("delay_ns", "500")), (("arch", "b200"), ("delay_ns", "2000")))),
        Base("book_step7", {MAIN: book.encode(), SIBLING: _read("kernels/tirx/ws_sm100.py")}, SIBLING, "kernel",
             ("def ws_step7", "    return kernel"),
             params={k: "optional" for k in ("M", "N", "K", "PIPE_DEPTH", "sm_count", "expect_tx_delta", "wait_parity_flip",
                                             "skip_mma_phase_flip", "skip_store_wait", "reset_phase_per_tile")},
             alt_funcs={"ws_step7": CONFIG}, mma=True, thread_vars=("wg_id", "warp_id", "lane_id"),
             barriers=("tma2mma.ptr_to([0])", "ld2mma.ptr_to([0])", "mma2ld.ptr_to([0])"),
             objects=("tma2mma", "mma2tma", "mma2ld", "ld2mma"),
             valid_sets=(sizes, (("M", "128"), ("N", "128"), ("K", "256"), ("sm_count", "1"), ("PIPE_DEPTH", "1")),
                         (("M", "256"), ("N", "128"), ("K", "256"), ("sm_count", "2")),
                         (("M", "128"), ("N", "256"), ("K", "128"), ("sm_count", "2"), ("arch", "b200")),
                         (("@func", "ws_step7"), ("M", "256"), ("N", "128"), ("K", "128"), ("sm_count", "2"))),
             extra_valid={"expect_tx_delta": ("-1024", "16"), "wait_parity_flip": ("tma", "mma"),
                          "skip_mma_phase_flip": ("true",), "skip_store_wait": ("true",), "reset_phase_per_tile": ("true",)}),
        Base("hopper", {MAIN: HOPPER_WRAPPER.format(repo=str(REPO)).encode(), HOPPER: hopper}, HOPPER, "kernel",
             ("def _kernel", None),
             params={k: "optional" for k in ("step", "M", "N", "K", "PIPE_DEPTH", "sm_count", "expect_tx_delta", "wait_parity_flip",
                                             "skip_mma_phase_flip", "skip_store_wait", "reset_phase_per_tile", "tma_issuer",
                                             "trace")},
             scalars={"timeout_cycles": "int64", "producer_delay_ns": "int32", "consumer_delay_ns": "int32", "lag_warp": "int32",
                      "lag_ns": "int32"},
             mma=True, thread_vars=("tx",), barriers=("tma_bar.ptr_to([0])", "mma_bar.ptr_to([0])"),
             valid_sets=((("step", "v5"),), (("step", "v4"), ("lag_ns", "200")), (("step", "ws"), ("K", "256")),
                         (("step", "v6"), ("M", "256"), ("sm_count", "2"), ("timeout_cycles", "1099511627776")),
                         (("step", "v3"), ("M", "256")), (("step", "v5"), ("trace", "true"))),
             extra_valid={"expect_tx_delta": ("-1024", "16"), "wait_parity_flip": ("tma", "mma"), "skip_store_wait": ("true",),
                          "skip_mma_phase_flip": ("true",), "producer_delay_ns": ("2000",), "lag_warp": ("0", "3")},
             knob_free=(("step", "v3"), ("trace", "true"))),
        Base("seed", {MAIN: SEED_WRAPPER.format(repo=str(REPO)).encode(), SEED: _read("kernels/tirx/seed_sm100.py")}, SEED,
             "hgemm_v6", ("def _check", "def _main"), params=CONFIG, alt_funcs={f: CONFIG for f in steps[:-1]}, mma=True,
             thread_vars=("warp_id", "lane_id"), barriers=("tma_bar.ptr_to([0])", "mma_bar.ptr_to([0])"),
             valid_sets=((("@func", "hgemm_v1"), ("K", "64")), (("@func", "hgemm_v2"), ("K", "128")),
                         (("@func", "hgemm_v3"), ("M", "256")), (("@func", "hgemm_v4"), ("M", "256"), ("K", "128")),
                         (("@func", "hgemm_v5"), ("K", "256"), ("PIPE_DEPTH", "2")),
                         (("M", "256"), ("N", "256"), ("K", "256"), ("sm_count", "2")),
                         (("M", "256"), ("K", "128"), ("sm_count", "1"), ("reset_phase_per_tile", "true"))),
             extra_valid={"skip_mma_phase_flip": ("true",)}, knob_free=(("@func", "hgemm_v1"), ("@func", "hgemm_v2"),
                                                                       ("@func", "hgemm_v3"), ("@func", "hgemm_v4"))),
    ]
    return {b.name: b for b in out}


# --------------------------------------------------------------------------- source helpers

INTS = (0, 0, 1, 2, 3, -1, -2, 4, 7, 8, 31, 32, 33, 63, 64, 96, 127, 128, 129, 255, 256, 1000, 1023, 1024, 1025, 4096,
        2**16, 2**20, 2**31 - 1, 2**31, 2**32, 2**40, 10**9, 2**63, -2**31)
HOT = re.compile(r"cta_id|thread_id|warp_id|lane_id|warpgroup_id|range\(|uint32\(|uint64\(|mbarrier_wait|wait_group|ptr_to|"
                 r"alloc|\.init\(|\.wait\(|\.arrive\(|warpgroup_sync|bar\.sync|TX_BYTES|K_TILES|SM_COUNT|_START|WB_BAR|phase|"
                 r"parity|% 2|// 2")
"""Lines whose integers are the protocol's: barrier counts, parities, ids, extents, bytes."""
SMALL_K = (0, 1, 2, 3, 4, 5, 31, 32, 64, 127, 128, -1, 2**31)
EXTENTS = (0, 1, 2, 3, 7, 100, 2**20, 10**9)
WHILE_LIMITS = (0, 1, 5, 1000, 2**20 - 1, 2**20, 2**21, 10**9)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _depths(lines: list[str]) -> list[int]:
    """Bracket depth at the start of every line (strings and comments skipped, roughly)."""
    out, depth, quote = [], 0, ""
    for ln in lines:
        out.append(depth)
        i = 0
        while i < len(ln):
            ch = ln[i]
            if quote:
                if ln.startswith(quote, i):
                    i += len(quote) - 1
                    quote = ""
                elif ch == "\\":
                    i += 1
            elif ch == "#":
                break
            elif ln.startswith('"""', i) or ln.startswith("'''", i):
                quote = ln[i:i + 3]
                i += 2
            elif ch in "\"'":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(depth - 1, 0)
            i += 1
        if quote in ("'", '"'):
            quote = ""  # a one-line string never spans lines
    return out


def _region(lines: list[str], base: Base, func: str | None = None) -> range:
    own = next((i for i, ln in enumerate(lines) if func and ln.startswith(f"def {func}(")), None)
    if own is not None:  # a file of several kernels (the seed's steps): the one FUNC builds
        end = next((i for i in range(own + 1, len(lines)) if lines[i][:1] not in ("", " ", "#", ")")), len(lines))
        return range(own + 1, end)
    start = next((i for i, ln in enumerate(lines) if ln.startswith(base.region[0])), None)
    if start is None:
        return range(0)
    end = len(lines)
    if base.region[1] is not None:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(base.region[1])), len(lines))
    return range(start + 1, end)


def _statements(lines: list[str], base: Base, simple: bool = True, func: str | None = None) -> list[int]:
    """Indices of lines in the region that start a statement; ``simple``: one-line statements
    that are no block header (the ones a wrap or a swap keeps well-formed)."""
    depths = _depths(lines)
    out = []
    for i in _region(lines, base, func):
        s = lines[i].strip()
        if not s or s.startswith(("#", "@", '"', "'")) or depths[i] != 0 or not lines[i].startswith(" "):
            continue
        if simple:
            nxt = depths[i + 1] if i + 1 < len(depths) else 0
            if s.endswith((":", "\\")) or nxt != 0 or s.startswith(("def ", "elif", "else", "return", "class ")):
                continue
        out.append(i)
    return out


def _int_tokens(text: str) -> list[tuple[int, int, int, str]]:
    """(line index, start col, end col, text) of every integer literal (tokenize; [] when the
    text does not tokenize -- an earlier mutation broke it)."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NUMBER and re.fullmatch(r"(0[xXoObB])?[0-9a-fA-F_]+", tok.string) \
                    and not re.search(r"[eEjJ.]", tok.string):
                out.append((tok.start[0] - 1, tok.start[1], tok.end[1], tok.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return out


def _top(lines: list[str], region: range) -> int | None:
    """The line right after the kernel's ``pool.commit()`` (every thread executes what is
    inserted there), or None when an earlier mutation moved it."""
    for i in region:
        if lines[i].strip() == "pool.commit()":
            return i + 1
    return None


def _compiles(text: str) -> bool:
    try:
        compile(text, MAIN, "exec")
    except (SyntaxError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------- inserted code

UNKNOWN_OPS = ("T.cuda.syncthreads_and(1)", "T.cuda.syncthreads_or(0)", "T.ptx.barrier.cluster.arrive()",
               "T.ptx.tcgen05.wait__st.sync.aligned()", "T.ptx.mbarrier.complete_tx.shared.b64({bar}, T.uint32(16))",
               "T.ptx.mbarrier.inval.shared.b64({bar})", "T.cuda.elect_sync()")
"""Calls TVMScript parses but the frontend has no model of: refused where executed."""
NOT_TVMSCRIPT = ("T.no_such_op(0)", "T.cuda.syncthreads_count(1)", "T.cuda.trap()", "fz_undefined_name(1)",
                 "T.uint32(\"x\")", "T.ptx.mbarrier.init.shared.b64()", "T.ptx.mbarrier.arrive_nocount.shared.b64({bar})",
                 "T.ptx.elect_sync()", "T.cuda.mbarrier_wait()", "T.cuda.nano_sleep(T.uint64(-1))")
"""Lines a kernel body cannot hold: TVMScript refuses them when it parses the function."""
NOT_PYTHON = ("if tid == :", "T.cuda.cta_sync(", "    T.cuda.cta_sync()  # over-indented", "break", "continue",
              "return return", "def", "T.cuda.cta_sync())", "x = = 1", "yield from", "lambda: (", "\u00a0T.cuda.cta_sync()")
"""Lines that are not Python where they are inserted (most of them anywhere)."""
REJECTED_STATEMENTS = ("assert {var} >= 0", "assert {var} != 1000")
"""Statements docs/tirx.md says the frontend refuses (break / continue / assert)."""
MODULE_LEVEL = ("raise RuntimeError(\"fz: raised while importing\")", "import fz_no_such_module",
                "import sys; sys.exit(3)", "raise SystemExit(\"fz\")", "fz_x = 1 / 0", "T = None",
                "kernel = 42", "build = 42", "raise ValueError(\"a\\nb\\nc\")", "import sys; sys.exit(0)",
                "raise RecursionError(\"fz\")", "raise MemoryError()", "exit(2)", "print(\"fz: building the kernel\")",
                "import sys; print(\"fz: building the kernel\", file=sys.stderr)",
                "import warnings; warnings.warn(\"fz: this kernel is experimental\")")
"""Module-level code appended to the file: the import (or the lookup of FUNC) fails, or the
module prints (a user's kernel file may: protosim's own output must stay what it promises)."""


def _known_ops(base: Base, k: int) -> list[str]:
    bar = base.barriers[k % len(base.barriers)] if base.barriers else "bar.ptr_to([0])"
    ops = ["T.cuda.cta_sync()", "T.cuda.warp_sync()", f"T.cuda.warpgroup_sync({k % 16})", f"T.cuda.nano_sleep(T.uint64({k}))",
           "T.ptx.fence.proxy.async_.shared__cta()", "T.ptx.fence.mbarrier_init.release.cluster()",
           f"T.ptx.mbarrier.init.shared.b64({bar}, T.uint32({k}))", f"T.ptx.mbarrier.arrive.shared.b64({bar})",
           f"T.ptx.mbarrier.arrive.shared.b64({bar}, T.uint32({k}))",
           f"T.ptx.mbarrier.expect_tx.shared.b64({bar}, T.uint32({k}))",
           f"T.ptx.mbarrier.arrive.expect_tx.shared.b64({bar}, T.uint32({k}))",
           f"T.cuda.mbarrier_wait({bar}, {k})", "T.ptx.cp.async_.bulk.commit_group()", f"T.ptx.cp.async_.bulk.wait_group({k})",
           "T.ptx.tcgen05.fence__after_thread_sync()", "T.ptx.wgmma.fence.sync.aligned()", f"T.ptx.bar.sync({k % 16}, 64)",
           "T.cuda.printf(\"fz\")", "print(\"fz\")", "fz_x = [i for i in range(3)]", f"out[0] = {k}",
           f"T.cuda.warpgroup_sync({k})", f"T.ptx.bar.sync(1, {k})", f"T.ptx.cp.async_.bulk.wait_group({k})"]
    for obj in base.objects:
        ops += [f"{obj}.wait(0, {k})", f"{obj}.arrive(0)", f"{obj}.init({k})"]
    return ops


# --------------------------------------------------------------------------- source mutation


KINDS = (("int",) * 8 + ("del", "dup", "swap") * 2 + ("cmp",) * 2 + ("wrap_if",) * 5 + ("wrap_for", "wrap_while")
         + ("known_op",) * 7 + ("unknown_op", "clock_while", "not_tvmscript", "not_python", "rejected", "module_level",
                                "truncate", "bad_bytes", "empty"))
"""Source mutations, weighted: most keep the kernel a program the frontend reads (so its
schedule is replayed and judged), a few make it one it must refuse."""


@dataclass
class Source:
    text: str
    notes: list[str] = field(default_factory=list)
    refuse: list[str] = field(default_factory=list)
    """Oracle reasons this source must be refused for (rule: detail)."""
    func: str | None = None
    """FUNC of the launch: in a file of several kernels, the one mutated."""


@st.composite
def source_mutation(draw, src: Source, base: Base) -> None:
    """One mutation of ``src`` in place."""
    lines = src.text.split("\n")
    kind = draw(st.sampled_from(KINDS))
    every = _statements(lines, base, func=src.func)
    top = _top(lines, _region(lines, base, src.func))
    protocol = [i for i in every if top is not None and i >= top]
    # mostly the protocol (after the declarations), sometimes any statement of the region
    stmts = protocol if protocol and not chance(draw, 20) else every
    if kind == "int":
        toks = _int_tokens(src.text)
        if not toks:
            src.notes.append("no-op int (the text does not tokenize)")
            return
        hot = [t for t in toks if HOT.search(lines[t[0]])]
        li, a, b, old = draw(st.sampled_from(hot if hot and not chance(draw, 30) else toks))
        v = draw(st.sampled_from(INTS))
        lines[li] = lines[li][:a] + str(v) + lines[li][b:]
        src.text = "\n".join(lines)
        src.notes.append(f"line {li + 1}: {old} -> {v}: {lines[li].strip()[:70]!r}")
        return
    if kind in ("del", "dup", "swap", "cmp", "wrap_if", "wrap_for", "wrap_while") and not stmts:
        src.notes.append(f"no-op {kind} (no statement left)")
        return
    if kind in ("del", "dup"):
        blocks = [i for i in _statements(lines, base, simple=False, func=src.func) if top is None or i >= top]
        i = draw(st.sampled_from(blocks if blocks and chance(draw, 30) else stmts))
        if kind == "del":
            lines[i:i + 1] = [_indent(lines[i]) + "pass"] if draw(st.booleans()) else []
        else:
            lines.insert(i, lines[i])
        src.text = "\n".join(lines)
        src.notes.append(f"line {i + 1} {'deleted' if kind == 'del' else 'duplicated'}: {lines[i].strip()[:70]!r}")
        return
    if kind == "swap":
        i = draw(st.sampled_from(stmts))
        j = min((k for k in stmts if k > i), default=None)
        if j is None:
            src.notes.append("no-op swap (last statement)")
            return
        a, b = lines[i], lines[j]
        lines[i], lines[j] = _indent(a) + b.strip(), _indent(b) + a.strip()
        src.text = "\n".join(lines)
        src.notes.append(f"lines {i + 1} and {j + 1} swapped: {a.strip()[:40]!r} <-> {b.strip()[:40]!r}")
        return
    if kind == "cmp":
        region = list(_region(lines, base, src.func))
        hits = [(i, m.start(), m.group(0)) for i in region for m in re.finditer(r"==|!=|<=|>=|(?<![<>=-])[<>](?![<>=])", lines[i])
                if not lines[i].lstrip().startswith("#")]
        if not hits:
            src.notes.append("no-op cmp")
            return
        i, at, op = draw(st.sampled_from(hits))
        new = draw(st.sampled_from([o for o in ("==", "!=", "<", ">=", ">") if o != op]))
        lines[i] = lines[i][:at] + new + lines[i][at + len(op):]
        src.text = "\n".join(lines)
        src.notes.append(f"line {i + 1}: {op} -> {new}: {lines[i].strip()[:70]!r}")
        return
    if kind in ("wrap_if", "wrap_for", "wrap_while"):
        i = draw(st.sampled_from(stmts))
        ind, body = _indent(lines[i]), lines[i].strip()
        if kind == "wrap_if":
            var = draw(st.sampled_from(base.thread_vars or ("tid",)))
            k = draw(st.sampled_from(SMALL_K))
            op = draw(st.sampled_from(("==", "==", "!=", "<", ">=")))
            new = [f"{ind}if {var} {op} {k}:", f"{ind}    {body}"]
            what = f"if {var} {op} {k}"
        elif kind == "wrap_for":
            n = draw(st.sampled_from(EXTENTS))
            new = [f"{ind}for _fz in range({n}):", f"{ind}    {body}"]
            what = f"for _fz in range({n})"
        else:
            n = draw(st.sampled_from(WHILE_LIMITS))
            new = [f'{ind}fz_n = T.local_scalar("int32")', f"{ind}fz_n = 0", f"{ind}while fz_n < {n}:", f"{ind}    {body}",
                   f"{ind}    fz_n = fz_n + 1"]
            what = f"while fz_n < {n} (a counter)"
        lines[i:i + 1] = new
        src.text = "\n".join(lines)
        src.notes.append(f"line {i + 1} wrapped in `{what}`: {body[:60]!r}")
        return
    if kind in ("known_op", "unknown_op", "clock_while", "not_tvmscript", "rejected"):
        if top is None and not stmts:
            src.notes.append(f"no-op {kind} (no statement left)")
            return
        at_top = top is not None and (not stmts or chance(draw, 40))
        if at_top:
            i, ind = top, _indent(lines[top - 1])
        else:
            i = draw(st.sampled_from(stmts))
            ind = _indent(lines[i])
        k = draw(st.sampled_from(SMALL_K))
        bar = draw(st.sampled_from(base.barriers or ("bar.ptr_to([0])",)))
        if kind == "known_op":
            new = [draw(st.sampled_from(_known_ops(base, k)))]
        elif kind == "unknown_op":
            new = [draw(st.sampled_from(UNKNOWN_OPS)).format(bar=bar)]
        elif kind == "clock_while":
            new = draw(st.sampled_from((
                [f"while T.cuda.clock64() < T.uint64({abs(k)}):", "    T.cuda.nano_sleep(T.uint64(10))"],
                [f"while T.cast(T.cuda.clock64(), \"int64\") < T.int64({k}):", "    T.cuda.nano_sleep(T.uint64(10))"],
                [f"if T.cuda.clock64() > T.uint64({abs(k)}):", "    T.cuda.cta_sync()"])))
        elif kind == "not_tvmscript":
            new = [draw(st.sampled_from(NOT_TVMSCRIPT)).format(bar=bar)]
        else:
            var = draw(st.sampled_from(base.thread_vars or ("tid",)))
            new = [draw(st.sampled_from(REJECTED_STATEMENTS)).format(var=var)]
        lines[i:i] = [ind + ln for ln in new]
        src.text = "\n".join(lines)
        where = "the kernel's top level" if at_top else "before line"
        src.notes.append(f"{' / '.join(ln.strip() for ln in new)[:90]!r} inserted at {where} {i + 1}")
        # refusals docs/tirx.md promises for what every thread executes (the top level); an
        # op the frontend does not know is refused where executed.  (Not for base objects'
        # methods: their calls are TIRx's own macros.)
        if at_top and kind in ("unknown_op", "clock_while", "rejected"):
            src.refuse.append(f"tirx.{kind}: {new[0].strip()[:60]} at the kernel's top level")
        if at_top and kind == "not_tvmscript":
            src.refuse.append(f"tirx.not_tvmscript: {new[0].strip()[:60]} in the kernel")
        return
    if kind == "not_python":
        i = draw(st.sampled_from(stmts or [len(lines) - 1]))
        g = draw(st.sampled_from(NOT_PYTHON))
        lines.insert(i, _indent(lines[i]) + g)
        src.text = "\n".join(lines)
        src.notes.append(f"{g!r} inserted before line {i + 1}")
        return
    if kind == "module_level":
        g = draw(st.sampled_from(MODULE_LEVEL))
        src.text = src.text.rstrip("\n") + "\n\n" + g + "\n"
        src.notes.append(f"module-level {g!r} appended")
        return
    if kind == "truncate":
        n = draw(st.sampled_from(range(len(lines))))
        src.text = "\n".join(lines[:n]) + "\n"
        src.notes.append(f"truncated after line {n}")
        return
    if kind == "bad_bytes":
        src.notes.append("bad bytes")  # applied on the bytes, see tirx_cases
        return
    src.text = ""
    src.notes.append("emptied")


# --------------------------------------------------------------------------- launch (--set, FUNC)

WEIRD_VALUES = ("abc", "", " ", "1.5", "true", "false", "[1]", "{a = 1}", "1979-05-27", "0x10", "1_000", "-1", "0",
                "2147483647", "2147483648", "-2147483649", "9223372036854775808", "18446744073709551616", "1e9", "inf",
                "nan", '"64"', "'x'", "64 ", "\uff10", "2**10", "None", "-0", "+5", "0b101", "h200", "\x7f")
HUGE_VALUES = ("1048576", "1073741824", "1099511627776", "1000000000", "4611686018427387904", "9223372036854775807",
               "-9223372036854775808", "340282366920938463463374607431768211456")
BOGUS_KEYS = ("fz_unknown", "Timeout_cycles", "m", "explore.runs", "config.M", "M", "K", "out", "A", "D", "kernel",
              "self", "T", "arch ", " parity", "PARITY", "ARCH", "lag", "__class__")
ARCH_TEXT = ("b200", "h200", "gb10", "H200", "B200", "sm_100", "h100", "", " h200", "gb10 ", "../arch/h200", "h200.toml",
             "[1]", "1", "true", "x" * 200)
FUNCS = ("nope", "Kernel", "kernel2", "_private", "", "1kernel", "kernel ", "a.b", "ker-nel", "T", "__name__", "__builtins__",
         "__doc__", "__file__", "sys", "Path", "GemmConfig", "KernelSpec", "ws_step7", "not_a_kernel", "LIMIT", "build",
         "kernel", "__spec__", "\u212ap", "main", "hgemm_v1", "hgemm_v5", "hgemm_v7", "hgemm_ws")


def toml_parse(text: str) -> tuple[bool, Any]:
    """A ``--set`` value as the README says it is read: a TOML value, else the raw string."""
    try:
        return True, tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return False, text.strip()


def params_of(base: Base, func: str | None) -> dict[str, str] | None:
    """The parameters FUNC takes (name -> "required" | "optional"), None when ``func`` names
    nothing in the base that builds a kernel."""
    if func is None and base.region[0] == "@T.prim_func":
        func = base.func  # the module's only PrimFunc
    p = base.params if func == base.func else base.alt_funcs.get(func) if func is not None else None
    if p is None:
        return None
    return {k: "optional" for k in O.GEMM_FIELDS} if p == CONFIG else dict(p)


def judge_launch(j: O.Judgement, base: Base, func: str | None, sets: list[tuple[str | None, str]], mutated_source: bool) -> None:
    """Refusals of the launch alone (the FUNC name and the --set pairs) -- see the module doc."""
    malformed = [t for t in sets if t[0] is None]
    if malformed:
        j.refuse("tirx.set_syntax", f"--set {malformed[0][1]!r} is no KEY=VALUE pair")
        return
    params = params_of(base, func)
    if params is None:
        j.refuse("tirx.func", f"FUNC {func!r} names no kernel (or function building one) of the file" if func is not None
                 else f"no :FUNC, and the file has no module-level PrimFunc ({base.func} is a function)")
    final: dict[str, Any] = {}
    for key, value in sets:
        k = key.strip()
        if not k:
            j.refuse("tirx.set_syntax", f"--set {key}={value}: an empty key")
            continue
        final[k] = toml_parse(value)
    if params is None:
        return
    for k, (parsed_ok, v) in final.items():
        if k == "arch":
            if not isinstance(v, str) or O.arch_nonsense(v.strip()):
                j.refuse("tirx.arch", f"arch={O._short(v)} names no GPU")
        elif k in base.scalars:
            low, high = INT_RANGES[base.scalars[k]]
            if parsed_ok and (isinstance(v, bool) or isinstance(v, (float, list, dict)) or type(v).__name__ in
                              ("date", "datetime", "time")):
                j.refuse("tirx.scalar_type", f"{k}={O._short(v)}: the PrimFunc's {base.scalars[k]} parameter")
            elif O.is_int(v) and not low <= v <= high:
                j.refuse("tirx.scalar_range", f"{k}={v}: out of {base.scalars[k]}")
            elif isinstance(v, str) and not re.fullmatch(r"[+-]?[0-9a-fA-FxXoObB_]+", v.strip()):
                j.refuse("tirx.scalar_type", f"{k}={O._short(v)}: not an integer")
        elif k in params:
            pass  # the user's function decides
        else:
            j.refuse("tirx.set_key", f"--set {k}: no parameter of {func} nor of the PrimFunc, not arch")
    for k, need in params.items():
        if need == "required" and k not in final:
            j.refuse("tirx.set_missing", f"{func} needs {k}")
    if not mutated_source and not base.mma and "arch" not in final:
        j.refuse("tirx.no_arch", "no tcgen05 / wgmma in the kernel and no --set arch")


def _split(pairs) -> tuple[str, list[tuple[str | None, str]]]:
    """A valid launch -> (FUNC, its --set pairs): the pseudo-pair ``("@func", NAME)`` names FUNC."""
    func = None
    sets = []
    for k, v in pairs:
        if k == "@func":
            func = v
        else:
            sets.append((k, v))
    return func, sets


@st.composite
def launch(draw, base: Base) -> tuple[str | None, list[tuple[str | None, str]], list[str]]:
    """FUNC, the --set pairs (key None: a malformed ``--set`` argument, the text in value) and notes."""
    chosen = draw(st.sampled_from(base.valid_sets))
    func, sets = _split(chosen)
    func = func or base.func
    notes: list[str] = []
    if not any(pair in base.knob_free for pair in chosen):
        for k, vals in base.extra_valid.items():
            if chance(draw, 12):
                sets.append((k, draw(st.sampled_from(vals))))
    for _ in range(draw(st.sampled_from((0, 0, 0, 0, 0, 0, 0, 1, 1, 2)))):
        kind = draw(st.sampled_from(("bogus_key", "weird", "weird", "huge", "huge", "drop", "dup", "arch", "no_arch",
                                     "malformed", "func", "func")))
        keys = sorted(set(params_of(base, func) or {}) | set(base.scalars))
        if kind == "bogus_key":
            k = draw(st.sampled_from(BOGUS_KEYS))
            v = draw(st.sampled_from(("1", "128", "abc", "true")))
            sets.append((k, v))
            notes.append(f"--set {k}={v}")
        elif kind in ("weird", "huge") and keys:
            k = draw(st.sampled_from(keys))
            v = draw(st.sampled_from(WEIRD_VALUES if kind == "weird" else HUGE_VALUES + ("0", "-1", "-128")))
            sets = [s for s in sets if s[0] != k] + [(k, v)]
            notes.append(f"--set {k}={v!r}")
        elif kind == "drop" and sets:
            i = draw(st.sampled_from(range(len(sets))))
            notes.append(f"--set {sets[i][0]}=... left out")
            del sets[i]
        elif kind == "dup" and sets and sets[0][0] is not None:
            k = sets[0][0]
            v = draw(st.sampled_from(("abc", "-1", "0", sets[0][1])))
            sets.append((k, v))
            notes.append(f"--set {k} given twice, last {v!r}")
        elif kind == "arch":
            v = draw(st.sampled_from(ARCH_TEXT))
            sets = [s for s in sets if s[0] != "arch"] + [("arch", v)]
            notes.append(f"--set arch={v!r}")
        elif kind == "no_arch":
            sets = [s for s in sets if s[0] != "arch"]
            notes.append("no --set arch")
        elif kind == "malformed":
            v = draw(st.sampled_from(("=3", "M", "", "=", " =1")))
            sets.append((None, v))
            notes.append(f"--set {v!r}")
        elif kind == "func":
            func = draw(st.sampled_from((*FUNCS, None)))
            notes.append(f"FUNC {func!r}" if func is not None else "no :FUNC")
    return func, sets, notes


# --------------------------------------------------------------------------- the cases


_PRELOADED = False


def preload() -> None:
    """Import tvm, the TIRx frontend and the book's kernels once in this process, so the
    forked children (tests/fuzz/contract.py) start warm; without tvm this does nothing (every
    case is then refused: reading TIRx needs apache-tvm)."""
    global _PRELOADED
    if _PRELOADED:
        return
    _PRELOADED = True
    import importlib
    import sys

    from .contract import preload as preload_protosim

    preload_protosim()
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    for mod in ("tvm", "tvm.script.tirx", "tvm.tirx", "tvm.backend.cuda.lang.pipeline", "tvm.backend.cuda.lang.tile_scheduler",
                "protosim.frontends.tirx.load", "protosim.frontends.tirx.reader", "protosim.scenarios", "protosim.report",
                "kernels.tirx.seed_sm100", "kernels.tirx.ws_sm100"):
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001 - the run will say what is missing
            pass


MAX_OPS = ("--max-ops", "200000")
"""Every case runs under a 200,000-op cap: the fuzzed kernels are small, and a schedule the user
allows to be a million ops long (10^6 mbarrier.init, within the default --max-ops) replays for
tens of seconds -- work asked for, not a hang, but past the harness's 30 s.  Under the cap the
same input is refused in seconds, which is what the op budget is there to do."""


@st.composite
def tirx_cases(draw) -> FuzzCase:
    preload()
    table = bases()
    base = table[draw(st.sampled_from(("mbar_ok", "mbar_factory", "ring", "spin", "book_step7", "hopper", "seed", "ring",
                                       "spin", "book_step7", "hopper", "seed")))]
    files = dict(base.files)
    func, sets, notes = draw(launch(base))
    src = Source(files[base.target].decode(), func=func)
    if base.target != MAIN and chance(draw, 15):  # the wrapper's own defaults and imports
        wrapper = Base(base.name, {}, MAIN, base.func, ("def kernel", None))
        wsrc = Source(files[MAIN].decode())
        draw(source_mutation(wsrc, wrapper))
        files[MAIN] = wsrc.text.encode()
        src.notes += ["fz_k.py: " + n for n in wsrc.notes]
        src.refuse += wsrc.refuse
    n_mut = draw(st.sampled_from((0, 1, 1, 1, 1, 2, 2, 3)))
    for _ in range(n_mut):
        draw(source_mutation(src, base))
    files[base.target] = src.text.encode()
    for i, note in enumerate(src.notes):  # "bad bytes": inserted into the bytes of the file the note is about
        if note.endswith("bad bytes"):
            rel = MAIN if note.startswith("fz_k.py: ") else base.target
            data = files[rel]
            pos = draw(st.sampled_from(range(len(data) + 1)))
            b = draw(st.sampled_from(BAD_BYTES))
            files[rel] = data[:pos] + b + data[pos:]
            src.notes[i] = note.replace("bad bytes", f"bytes {b!r} inserted at {pos}")
    mutated_source = any(files[k] != base.files[k] for k in files)

    j = O.Judgement()
    for r in src.refuse:
        rule, _, detail = r.partition(": ")
        j.refuse(rule, detail)
    for name, blob in files.items():
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError as e:
            j.refuse("tirx.utf8", f"{name}: byte {e.start} is not UTF-8")
            continue
        if not _compiles(text):
            j.refuse("tirx.syntax", f"{name} does not compile")
    judge_launch(j, base, func, sets, mutated_source)

    argv = ["run", f"{MAIN}:{func}" if func is not None else MAIN, "--runs", "2", *MAX_OPS]
    if chance(draw, 25):
        argv.append("--json")
    for k, v in sets:
        argv += ["--set", v if k is None else f"{k}={v}"]
    expect = j.verdict
    mutations = src.notes + notes
    if not mutations:
        expect = "valid"
    return FuzzCase(path="tirx", argv=argv, files=files, expect=expect, reasons=j.reasons, problem_files=("fz_", "--set"),
                    json_stdout="--json" in argv, run_json="--json" in argv, expect_declared=False, mode=_mode(draw),
                    mutations=mutations, base=base.name)


def explicit_case(base_name: str, edits: tuple[tuple[str, str], ...] = (), sets: tuple[tuple[str, str], ...] | None = None,
                  note: str = "", wrapper_edits: tuple[tuple[str, str], ...] = (), json_out: bool = False,
                  mode: str = "") -> FuzzCase:
    """One hand-written input: ``base_name`` with each ``(old, new)`` text replacement made
    once in the mutated file (``wrapper_edits``: in ``fz_k.py`` of the book base), launched
    with ``sets`` (default: the base's first valid launch).  May be judged or refused."""
    preload()
    base = bases()[base_name]
    files = dict(base.files)
    for rel, ed in ((base.target, edits), (MAIN, wrapper_edits)):
        text = files[rel].decode()
        for old, new in ed:
            assert old in text, f"{base_name}: {old!r} is not in {rel}"
            text = text.replace(old, new, 1)
        files[rel] = text.encode()
    func, pairs = _split(base.valid_sets[0] if sets is None else sets)
    argv = ["run", f"{MAIN}:{func or base.func}", "--runs", "2", *MAX_OPS] + (["--json"] if json_out else [])
    for k, v in pairs:
        argv += ["--set", f"{k}={v}"]
    note = note or "; ".join(f"{o!r} -> {n!r}" for o, n in edits + wrapper_edits)
    return FuzzCase(path="tirx", argv=argv, files=files, expect="any", problem_files=("fz_",), expect_declared=False,
                    json_stdout=json_out, run_json=json_out, mode=mode, mutations=[note], base=base_name)


def valid_cases() -> list[FuzzCase]:
    """Every base with each of its valid launches, unmutated (the harness checks they are judged)."""
    preload()
    out = []
    for base in bases().values():
        for sets in base.valid_sets:
            func, pairs = _split(sets)
            argv = ["run", f"{MAIN}:{func or base.func}", "--runs", "2", *MAX_OPS]
            for k, v in pairs:
                argv += ["--set", f"{k}={v}"]
            out.append(FuzzCase(path="tirx", argv=argv, files=dict(base.files), expect="valid", problem_files=("fz_",),
                                expect_declared=False, base=base.name))
    return out

