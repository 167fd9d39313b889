"""Every input of the TTGIR reader validated before work starts (issue 11).

``read()`` either returns a schedule or raises :class:`TtgirError` whose message names the
file (and the line, for TTGIR text), what is wrong and the fix -- never another exception,
never a hang, never a judgement of nonsense.  The table below makes each refusal from a
real fixture (``tests/fixtures/triton/``) by a small edit; the Hypothesis test mutates the
fixtures at random and holds ``read()`` to that contract within a time bound.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protosim.frontends.ttgir import DEFAULT_MAX_OPS, TtgirError, metadata_shared, parse, read
from protosim.ir import WgmmaWait, validate
from protosim.verdict import judge

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"
S3 = "k256_s3.sm121.ttgir"  # cp.async + mma.sync, 2 stage buffers, K loop of 8
S80 = "k256_s3.sm80.ttgir"
H3 = "k256_s3.sm90.ttgir"  # cp.async + wgmma
TMA = "tma_k256_s3.sm90.ttgir"  # TMA + mbarriers + wgmma


# ----------------------------------------------------------------------------- edits


def sub(old: str, new: str, count: int = 1) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, f"fixture changed: {old!r} not found"
        return text.replace(old, new, count)
    return edit


def subs(*pairs: tuple[str, str]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        for old, new in pairs:
            text = sub(old, new, -1)(text)
        return text
    return edit


def lines_where(pred: Callable[[int, str], bool]) -> Callable[[str], str]:
    """Keep the lines (1-based number, text) for which *pred* is true."""
    def edit(text: str) -> str:
        kept = [ln for i, ln in enumerate(text.splitlines(), 1) if pred(i, ln)]
        assert len(kept) < len(text.splitlines()), "edit changed nothing"
        return "\n".join(kept) + "\n"
    return edit


def drop(marker: str) -> Callable[[str], str]:
    return lines_where(lambda _i, ln: marker not in ln)


def cut_after(marker: str) -> Callable[[str], str]:
    """Truncate the text right after the first line containing *marker*."""
    def edit(text: str) -> str:
        out = []
        for ln in text.splitlines():
            out.append(ln)
            if marker in ln:
                return "\n".join(out) + "\n"
        raise AssertionError(f"fixture changed: {marker!r} not found")
    return edit


def dup(marker: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        lines = text.splitlines()
        i = next(i for i, ln in enumerate(lines) if marker in ln)
        return "\n".join(lines[: i + 1] + lines[i:]) + "\n"
    return edit


def insert_after(marker: str, line: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        lines = text.splitlines()
        i = next(i for i, ln in enumerate(lines) if marker in ln)
        return "\n".join(lines[: i + 1] + [line] + lines[i + 1:]) + "\n"
    return edit


def setk(key: str, value: Any) -> Callable[[dict], Any]:
    return lambda d: {**d, key: value}


def delk(key: str) -> Callable[[dict], Any]:
    return lambda d: {k: v for k, v in d.items() if k != key}


def const(value: Any) -> Callable[[Any], Any]:
    return lambda _d: value


def make(tmp: Path, fixture: str, ttgir=None, launch=None, meta=None) -> Path:
    """Copy a fixture (TTGIR, launch, metadata) into *tmp* with edits: each edit maps the
    fixture's text / decoded JSON to the new content (bytes are written as they are)."""
    def write(dst: Path, src: Path, edit, is_json: bool) -> None:
        if edit is None:
            shutil.copy(src, dst)
            return
        content = edit(json.loads(src.read_text()) if is_json else src.read_text())
        if isinstance(content, bytes):
            dst.write_bytes(content)
        else:
            dst.write_text(json.dumps(content) if is_json else content)

    src = FIXTURES / fixture
    out = tmp / fixture
    write(out, src, ttgir, False)
    write(out.with_suffix(".launch.json"), src.with_suffix(".launch.json"), launch, True)
    write(out.with_suffix(".json"), src.with_suffix(".json"), meta, True)
    return out


# ----------------------------------------------------------------------------- the table

# (id, fixture, ttgir edit, launch edit, metadata edit, words the message must contain)
CASES: list[tuple[str, str, Any, Any, Any, tuple[str, ...]]] = [
    # loops that never end or run away
    ("step 0", S3, sub("step %c1_i32", "step %c0_i32"), None, None, ("line 107", "step", "positive")),
    ("negative step", S3, sub("step %c1_i32", "step %c-1_i32"), None, None, ("line 107", "step", "-1")),
    ("K = 2^30: a trip count past the bound", S3, None, setk("K", 2**30), None, ("line 107", "iterations", "max-ops")),
    ("ctas = 2^40", S3, None, setk("ctas", 2**40), None, ("ctas", "limit", "max-ops")),
    # truncated or broken structure
    ("cut inside the loop", S3, cut_after("tt.dot %a_92"), None, None, ("truncated", "line 107")),
    ("cut inside the function", S3, cut_after("%acc_70 = ttg.async_wait"), None, None, ("truncated", "@matmul_kernel")),
    ("cut mid-line", S3, lambda t: t[: t.index("%a_39 = ttg.async_copy") + 5], None, None, ("cannot read", "%a_3")),
    ("cut before the module closes", S3, lines_where(lambda i, _ln: i <= 166), None, None, ("module", "truncated")),
    ("no tt.return", S3, drop("tt.return"), None, None, ("tt.return",)),
    ("an extra }", S3, insert_after("%acc_70 = ttg.async_wait", "  }"), None, None, ("line 146", "tt.return")),
    ("empty file", S3, const(""), None, None, ("not a TTGIR module",)),
    ("TTGIR not UTF-8", S3, lambda t: t.encode()[:2000] + b"\xff\xfe" + t.encode()[2000:], None, None, ("UTF-8",)),
    # module attributes
    ("no num-warps", S3, sub('"ttg.num-warps" = 4 : i32, ', ""), None, None, ("line 17", "ttg.num-warps")),
    ("no target", S3, sub('ttg.target = "cuda:121", ', ""), None, None, ("line 17", "ttg.target")),
    ("num-warps 0", S3, sub('"ttg.num-warps" = 4', '"ttg.num-warps" = 0'), None, None, ("ttg.num-warps", "= 0")),
    ("num-warps negative", S3, sub('"ttg.num-warps" = 4', '"ttg.num-warps" = -4'), None, None, ("ttg.num-warps", "-4")),
    ("num-warps 3", S3, sub('"ttg.num-warps" = 4', '"ttg.num-warps" = 3'), None, None, ("power of two",)),
    ("64 threads per warp", S3, sub('"ttg.threads-per-warp" = 32', '"ttg.threads-per-warp" = 64'), None, None,
     ("threads-per-warp",)),
    ("a cluster", S3, sub('"ttg.num-ctas" = 1', '"ttg.num-ctas" = 2'), None, None, ("num-ctas", "cluster")),
    ("an AMD target", S3, sub('"cuda:121"', '"hip:gfx942"'), None, None, ("hip:gfx942", "NVIDIA")),
    ("no profile for the target", S3, sub('"cuda:121"', '"cuda:75"'), None, None, ("cuda:75", "arch")),
    # ops the target cannot run
    ("wgmma on sm_80", H3, sub('"cuda:90"', '"cuda:80"'), None, None, ("ttng.warp_group_dot", "wgmma", "sm_80")),
    ("wgmma on sm_121", H3, sub('"cuda:90"', '"cuda:121"'), None, None, ("ttng.warp_group_dot", "wgmma", "sm_121")),
    ("TMA on sm_80", TMA, sub('"cuda:90"', '"cuda:80"'), None, None, ("TMA", "sm_80")),
    ("TMA on sm_121 (the gb10 profile)", TMA, sub('"cuda:90"', '"cuda:121"'), None, None, ("TMA", "gb10")),
    ("tcgen05 on sm_90", H3, insert_after("%a = ttg.local_alloc",
                                          "    %t = ttng.tmem_alloc : () -> !ttg.memdesc<64x64xf32, #tmem, mutable>"),
     None, None, ("ttng.tmem_alloc", "tcgen05", "sm_90")),
    # ops the reader does not model
    ("an unknown op", S3, sub("ttg.local_load %a_91", "ttg.local_loadx %a_91"), None, None,
     ("line 115", "ttg.local_loadx", "not an op the reader models")),
    ("an op of a unit the reader lacks", S3, insert_after("%a_90 = ttg.async_wait", "      ttng.cluster_arrive {relaxed = false}"),
     None, None, ("line 114", "ttng.cluster_arrive", "not an op the reader models")),
    ("scf.while", S3, insert_after("%a_90 = ttg.async_wait", "      scf.while : () -> () {\n      }"), None, None,
     ("line 114", "scf.while")),
    ("scf.if on a value the reader cannot evaluate", S3,
     insert_after("%a_90 = ttg.async_wait", "      %x = arith.constant 1.0 : f32\n      %flag = arith.cmpf olt, %x, %x : f32\n      scf.if %flag {\n      }"),
     None, None, ("line 116", "scf.if on %flag", "cannot evaluate")),
    # invalid SSA and values without meaning
    ("a duplicated line", S3, dup("%a_39 = ttg.async_copy_global_to_local"), None, None, ("%a_39", "defined twice")),
    ("no scf.yield", S3, drop("scf.yield"), None, None, ("scf.yield", "carries 9")),
    ("an undefined loop bound", S3, drop("%1 = arith.divsi"), None, None, ("line 69", "arith.cmpi", "%1", "not defined")),
    ("a deleted async_wait", S3, drop("%a_90 = ttg.async_wait"), None, None, ("line 114", "ttg.local_load", "%a_90", "not defined")),
    ("division by zero", S3, sub("%1 = arith.divsi %0, %c32_i32", "%1 = arith.divsi %0, %c0_i32"), None, None,
     ("line 65", "zero")),
    ("unknown predicate", S3, sub("%acc = arith.cmpi sgt", "%acc = arith.cmpi sgx"), None, None, ("predicate", "sgx")),
    ("a stage outside its buffer", S3, sub("%a_56 = ttg.memdesc_index %a[%c1_i32]", "%a_56 = ttg.memdesc_index %a[%c2_i32]"),
     None, None, ("line 94", "index 2", "2 stage")),
    ("async_wait without num", S3, sub("{num = 2 : i32}", "{}"), None, None, ("line 113", "num")),
    ("async_wait num negative", S3, sub("{num = 2 : i32}", "{num = -1 : i32}"), None, None, ("line 113", "-1")),
    ("a dot without shapes", S3, lambda t: t.replace(
        t[t.index("tt.dot %a_92"):].split("\n")[0], "tt.dot %a_92, %b_94, %arg10"), None, None, ("line 118", "shape")),
    ("a zero-sized buffer", S3, sub("memdesc<2x64x32xf16", "memdesc<2x0x32xf16"), None, None, ("line 68", "2x0x32")),
    # (its metadata says so too: with a metadata file beside it, Triton's number is the kernel's)
    ("more shared memory than a CTA has", S3, sub("memdesc<2x64x32xf16", "memdesc<2x64x4096xf16"), None,
     lambda d: {**d, "shared": 1_081_344},
     ("line 68", "shared memory", "101,376")),
    ("a barrier count of 0", TMA, sub("ttng.init_barrier %acc_8, 1", "ttng.init_barrier %acc_8, 0"), None, None,
     ("line 45", "count", ">= 1")),
    ("a wait on a data buffer", TMA, sub("ttng.wait_barrier %acc_33", "ttng.wait_barrier %a_6"), None, None,
     ("ttng.wait_barrier", "mbarrier")),
    # the launch JSON
    ("launch: a list", S3, None, const([64, 64, 256]), None, ("k256_s3.sm121.launch.json", "list", "object")),
    ("launch: a number", S3, None, const(3), None, ("launch.json", "an integer", "object")),
    ("launch: K a string", S3, None, setk("K", "256"), None, ("launch.json", "'K'", "integer")),
    ("launch: K a float", S3, None, setk("K", 256.0), None, ("launch.json", "'K'", "non-integer")),
    ("launch: K a bool", S3, None, setk("K", True), None, ("launch.json", "'K'", "boolean")),
    ("launch: K null", S3, None, setk("K", None), None, ("launch.json", "'K'", "integer")),
    ("launch: K = 0", S3, None, setk("K", 0), None, ("launch.json", "'K'", "positive")),
    ("launch: K negative", S3, None, setk("K", -256), None, ("launch.json", "'K'", "positive")),
    ("launch: K = 2^40", S3, None, setk("K", 2**40), None, ("launch.json", "'K'", "i32")),
    ("launch: K not a multiple of 16", S3, None, setk("K", 100), None, ("launch.json", "'K'", "divisible by 16")),
    ("launch: ctas = 0", S3, None, setk("ctas", 0), None, ("launch.json", "'ctas'", ">= 1")),
    ("launch: ctas negative", S3, None, setk("ctas", -1), None, ("launch.json", "'ctas'", ">= 1")),
    ("launch: ctas a string", S3, None, setk("ctas", "64"), None, ("launch.json", "'ctas'", "integer")),
    ("launch: no K", S3, None, delk("K"), None, ("launch.json", "K", "line 107")),
    ("launch: a misspelt key", S3, None, lambda d: {**delk("K")(d), "k": 256}, None, ("launch.json", "'k'", "did you mean 'K'")),
    ("launch: a grid", S3, None, setk("grid", [8, 8]), None, ("launch.json", "'grid'", "ctas")),
    ("launch: num_warps", S3, None, setk("num_warps", 8), None, ("launch.json", "'num_warps'", "compile")),
    ("launch: a pointer's value", S3, None, setk("a_ptr", 4096), None, ("launch.json", "'a_ptr'", "pointer")),
    ("launch: an unknown non-integer", S3, None, setk("BLOCK", "x"), None, ("launch.json", "'BLOCK'", "not an argument")),
    ("launch: not UTF-8", S3, None, const(b'{"K": 256, "M": "\xff"}'), None, ("launch.json", "UTF-8")),
    ("launch: not JSON", S3, None, const(b'{"K": 256,'), None, ("launch.json", "not valid JSON", "line 1")),
    ("launch: a key twice", S3, None, const(b'{"K": 256, "K": 512}'), None, ("launch.json", "'K'", "twice")),
    ("launch: NaN", S3, None, const(b'{"K": NaN}'), None, ("launch.json", "NaN")),
    # the metadata JSON
    ("metadata: a list", S3, None, None, const([]), ("k256_s3.sm121.json", "list", "object")),
    ("metadata: num_warps 0", S3, None, None, setk("num_warps", 0), ("sm121.json", "num_warps", ">= 1")),
    ("metadata: num_warps negative", S3, None, None, setk("num_warps", -4), ("sm121.json", "num_warps", ">= 1")),
    ("metadata: num_warps of another compile", S3, None, None, setk("num_warps", 8), ("sm121.json", "num_warps", "another")),
    ("metadata: shared negative", S3, None, None, setk("shared", -1), ("sm121.json", "shared", ">= 0")),
    ("metadata: shared a string", S3, None, None, setk("shared", "16384"), ("sm121.json", "shared", "integer")),
    ("metadata: no shared", S3, None, None, delk("shared"), ("sm121.json", "'shared'")),
    ("metadata: another kernel", S3, None, None, setk("name", "other_kernel"), ("sm121.json", "name", "@matmul_kernel")),
    ("metadata: another target", S3, None, None, setk("arch", "sm90"), ("sm121.json", "arch", "cuda:121")),
    ("metadata: not JSON", S3, None, None, const(b"{"), ("sm121.json", "not valid JSON")),
]


@pytest.mark.parametrize("label, fixture, ttgir, launch, meta, words", CASES, ids=[c[0] for c in CASES])
def test_malformed_input_is_one_clear_error(tmp_path, label, fixture, ttgir, launch, meta, words):
    path = make(tmp_path, fixture, ttgir, launch, meta)
    t0 = time.perf_counter()
    with pytest.raises(TtgirError) as err:
        read(path)
    assert time.perf_counter() - t0 < 30, f"{label}: refused, but slowly"  # bounds a runaway, with room for a loaded CI machine
    message = str(err.value)
    assert path.name.split(".")[0] in message, message  # names the file (the TTGIR, or the JSON beside it)
    for word in words:
        assert word in message, f"{label}: {word!r} not in {message!r}"


def test_the_fixtures_themselves_read():
    for path in sorted(FIXTURES.glob("*.ttgir")):
        schedule, mod = read(path)
        validate(schedule)
        assert metadata_shared(path) == mod.shared_bytes


def test_the_op_bound_is_a_keyword_with_a_default():
    assert DEFAULT_MAX_OPS == 2_000_000
    path = FIXTURES / "grid_512_k512_s3.sm121.ttgir"  # 64 CTAs x 172 ops (the loop's 170; the epilogue's truncf, tt.store)
    schedule, _ = read(path, max_ops=DEFAULT_MAX_OPS)
    assert schedule.op_count() == 64 * 172
    with pytest.raises(TtgirError) as err:
        read(path, max_ops=10_000)
    assert "10,000" in str(err.value) and "max-ops" in str(err.value)
    with pytest.raises(TtgirError, match="max_ops"):
        read(path, max_ops=0)


def test_a_runaway_loop_is_refused_before_it_is_unrolled():
    """K = 2^30 (an i32 the specialization allows): 2^25 iterations, refused from the
    trip count, not after walking them."""
    t0 = time.perf_counter()
    with pytest.raises(TtgirError, match="iterations"):
        read(FIXTURES / S3, launch={"K": 2**30})
    assert time.perf_counter() - t0 < 10  # walking 2^25 iterations would take many minutes


def test_the_launch_argument_is_checked_like_the_file(tmp_path):
    with pytest.raises(TtgirError, match="the launch given to read"):
        read(FIXTURES / S3, launch={"K": "512"})
    with pytest.raises(TtgirError, match="object"):
        read(FIXTURES / S3, launch=[("K", 512)])  # type: ignore[arg-type]
    with pytest.raises(TtgirError, match="no such profile"):
        read(FIXTURES / S3, arch="h100")
    with pytest.raises(TtgirError, match="wgmma"):
        read(FIXTURES / H3, arch="gb10")  # an sm_90 compile replayed on a profile with no wgmma


def test_a_stride_or_offset_of_zero_or_below_is_a_launch_like_any_other():
    """Only the problem's sizes (M, N, K) must be positive: a stride of 0 broadcasts a row (every
    row of A the same line), a negative stride walks backwards; both are launches a program makes."""
    base, _ = read(FIXTURES / S3)
    broadcast, _ = read(FIXTURES / S3, launch={"stride_am": 0})
    backwards, _ = read(FIXTURES / S3, launch={"stride_am": -256})
    for schedule in (broadcast, backwards):
        validate(schedule)
        assert schedule.op_count() == base.op_count()  # the same loop
        verdict, _ = judge(schedule)
        assert verdict.outcome.kind == "correct" and not verdict.findings, verdict.findings
    with pytest.raises(TtgirError, match="problem size"):
        read(FIXTURES / S3, launch={"M": 0})
    with pytest.raises(TtgirError, match="at least"):
        read(FIXTURES / S3, launch={"stride_am": -(2**31) - 16})


def test_a_loop_bound_read_from_memory_is_refused_as_such():
    """Held-out set 8's paged decode attention runs its KV loop to a length it loads (vLLM's form):
    the refusal names the load and the pointer, and asks for no pointer value in the launch."""
    path = FIXTURES / "heldout8" / "triton-3.6.0" / "h8_paged_decode_gqa_bf16_16x64_s2_w4.sm90.ttgir"
    with pytest.raises(TtgirError) as err:
        read(path)
    message = str(err.value)
    assert "reads from memory" in message and "tt.load at line" in message and "lens_ptr" in message
    assert "pass them" not in message


def test_a_directory_or_a_missing_file(tmp_path):
    with pytest.raises(TtgirError, match="ttgir"):
        read(tmp_path)
    with pytest.raises(TtgirError, match="ttgir"):
        read(tmp_path / "none.ttgir")


def test_parse_alone_refuses_cut_text():
    text = (FIXTURES / S3).read_text()
    with pytest.raises(TtgirError, match="truncated"):
        parse(text[: len(text) // 2], "half.ttgir")


def test_a_loop_closed_with_attributes_ends_its_body():
    """``} {tt.num_stages = 3 : i32}`` closes the TMA kernel's loop: what follows (the
    epilogue's warp_group_dot_wait {pendings = 0}) runs once, after the loop -- not in
    every iteration, as a reader that only knew a bare ``}`` had it."""
    schedule, mod = read(FIXTURES / TMA)
    loop = next(s for s in mod.body if s.op == "scf.for")
    assert loop.body[-1].op == "scf.yield" and mod.body[-1].op == "tt.return"
    waits = [o.n for o in schedule.ctas[0].roles[0] if isinstance(o, WgmmaWait)]
    assert waits == [1] * 8 + [0]


# ----------------------------------------------------------------------------- mutations

SMALL = ["seed_64x32x64_s2.sm121.ttgir", "k256_s2.sm80.ttgir", "k256_s3.sm90.ttgir", TMA, "grid_512_k512_s3.sm121.ttgir"]
MAX_OPS = 5_000
NUMBERS = [0, 1, -1, 2, 3, 16, 31, 2**31 - 1, 2**31, 2**40, -(2**40), 10**40]
ODD_VALUES = [0, -1, 1, 2**40, "256", 1.5, True, None, [1], {}]

_text = st.sampled_from(SMALL)


@st.composite
def mutations(draw):
    """A fixture and a few edits of its TTGIR text, launch and metadata."""
    name = draw(_text)
    path = FIXTURES / name
    lines = path.read_text().splitlines()
    launch: Any = json.loads(path.with_suffix(".launch.json").read_text())
    meta: Any = json.loads(path.with_suffix(".json").read_text())
    raw_ttgir: bytes | None = None
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "delete", "duplicate", "number", "number", "launch", "meta", "bytes"]))
        if kind == "truncate":
            lines = lines[: draw(st.integers(0, len(lines)))]
        elif kind == "delete" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
        elif kind == "number" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            spots = list(re.finditer(r"-?\d+", lines[i]))
            if spots:
                m = draw(st.sampled_from(spots))
                new = draw(st.sampled_from([*NUMBERS, int(m.group()) + 1, int(m.group()) - 1]))
                lines[i] = lines[i][: m.start()] + str(new) + lines[i][m.end():]
        elif kind == "launch":
            action = draw(st.sampled_from(["set", "delete", "replace"]))
            if action == "replace" or not isinstance(launch, dict):
                launch = draw(st.sampled_from([[], "x", 3, None, {"ctas": 1}]))
            elif action == "set":
                key = draw(st.sampled_from([*launch, "ctas", "k", "grid", "a_ptr", "extra"]))
                launch = {**launch, key: draw(st.sampled_from([*ODD_VALUES, *NUMBERS]))}
            else:
                launch = {k: v for k, v in launch.items() if k != draw(st.sampled_from(sorted(launch) or ["K"]))}
        elif kind == "meta" and isinstance(meta, dict):
            key = draw(st.sampled_from(["num_warps", "shared", "name", "arch", "num_stages"]))
            meta = {**meta, key: draw(st.sampled_from([*ODD_VALUES, 4, 8, "sm90"]))}
        elif kind == "bytes":
            text = "\n".join(lines).encode()
            at = draw(st.integers(0, len(text)))
            raw_ttgir = text[:at] + b"\xc3\x28" + text[at:]
    return name, raw_ttgir if raw_ttgir is not None else "\n".join(lines).encode(), launch, meta


@settings(max_examples=500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations())
def test_mutated_inputs_read_or_raise_ttgir_error(case):
    name, ttgir, launch, meta = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(ttgir)
        path.with_suffix(".launch.json").write_text(json.dumps(launch))
        path.with_suffix(".json").write_text(json.dumps(meta))
        t0 = time.perf_counter()
        try:
            schedule, _ = read(path, max_ops=MAX_OPS)
        except TtgirError as e:
            assert str(e).startswith(str(path)), e  # every message names the file first
        else:
            validate(schedule)
            assert schedule.op_count() <= MAX_OPS
        assert time.perf_counter() - t0 < 30  # bounds a runaway, with room for a loaded CI machine


def test_a_splat_to_an_unreadable_tensor_type_reads_or_raises_ttgir_error(tmp_path):
    """Found by the mutation test above (2026-12-04): `tensor<-1xi32, ...>` as a splat's result
    gave the axis analysis tuples of two lengths, and an IndexError rather than a TtgirError."""
    src = FIXTURES / "k256_s3.sm90.ttgir"
    text = src.read_text()
    old = "%offs_n_10 = tt.splat %offs_n : i32 -> tensor<64xi32,"
    assert old in text
    path = tmp_path / src.name
    path.write_text(text.replace(old, "%offs_n_10 = tt.splat %offs_n : i32 -> tensor<-1xi32,"))
    for side in (".launch.json", ".json"):
        path.with_suffix(side).write_text(src.with_suffix(side).read_text())
    try:
        schedule, _ = read(path, max_ops=MAX_OPS)
    except TtgirError as e:
        assert str(e).startswith(str(path)), e
    else:
        validate(schedule)
