"""The launch (``<name>.launch.json``) and the compiled kernel's metadata (``<name>.json``)
beside a TTGIR file: decoded, and refused with a message naming the file when they
cannot belong to this compile."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from protosim.frontends.ttgir.scalars import _bits
from protosim.frontends.ttgir.text import Ttgir, TtgirError, _a, _an, sidecar

class _DuplicateKey(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _load_json(side: Path, ttgir: Path | str, what: str) -> Any:
    """A JSON file beside the TTGIR, decoded; any fault is a :class:`TtgirError` naming it."""
    where = f"{ttgir}: {what} {side}"
    if not side.is_file():  # a FIFO or a device would block or never end
        raise TtgirError(f"{where}: not a regular file; give a JSON file")
    try:
        data = side.read_bytes()
    except OSError as e:
        raise TtgirError(f"{where}: cannot read it ({e.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TtgirError(f"{where}: not UTF-8 text (a bad byte at offset {e.start}): save it as UTF-8 JSON") from None
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except _DuplicateKey as e:
        raise TtgirError(f"{where}: key {e.args[0]!r} is given twice: keep one") from None
    except json.JSONDecodeError as e:
        raise TtgirError(f"{where}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except (ValueError, RecursionError) as e:
        raise TtgirError(f"{where}: not valid JSON ({e})") from None


def load_launch(path: Path) -> dict[str, Any]:
    """The launch that goes with ``kernel.ttgir``: ``kernel.launch.json`` beside it, if any
    (decoded and checked to be an object; :func:`check_launch` checks its values)."""
    side = sidecar(path, ".launch.json")
    if not side.exists():
        return {}
    data = _load_json(side, path, "launch file")
    if not isinstance(data, dict):
        raise TtgirError(f"{path}: launch file {side}: the top level is {_a(data)}; it must be an object "
                         'of kernel argument values and ctas, e.g. {"M": 64, "N": 64, "K": 256, "ctas": 1}')
    return data


_NOT_LAUNCH = {
    "num_ctas": "the CTA count of the launch is ctas; num_ctas (clusters) comes from the compile",
    "num_warps": "num_warps comes from the compile (the module's \"ttg.num-warps\"), not the launch",
    "num_stages": "num_stages comes from the compile (the TTGIR's buffers), not the launch",
    "shared": "shared memory comes from the compile (the metadata JSON), not the launch",
}


def merge_launch(path: Path, from_file: dict[str, Any], given: dict[str, Any] | None, side: Path) -> dict[str, Any]:
    """The launch file's values with those given to ``read()`` over them (each already checked).
    ``ctas`` given alone with a file that has a ``grid`` takes the first CTAs of that grid, each
    with its own program ids; more CTAs than the grid has is refused."""
    if given is not None and "ctas" in given and "grid" not in given and "grid" in from_file:
        whole = math.prod(from_file["grid"])
        if given["ctas"] > whole:
            raise TtgirError(f"{path}: ctas = {given['ctas']:,} given to read(), but {side} launches the grid "
                             f"{from_file['grid']} ({whole:,} CTAs): give a grid too, or at most {whole:,} ctas")
    return {**from_file, **(given or {})}


PROBLEM_SIZES = ("M", "N", "K")
"""Arguments read as the problem's sizes (the convention of every matmul kernel): 0 or below is
refused.  Any other integer argument may take any value its type holds -- a tile offset or a start
position of 0, a stride of 0 (a broadcast), a negative offset -- as a launch can pass them."""


def check_launch(mod: Ttgir, launch: Any, where: str) -> None:
    """Refuse a launch whose values the compiled kernel could not have been launched with.

    Keys are the kernel's scalar arguments, ``ctas`` (the CTA count, >= 1) and ``grid`` (1 to 3
    positive integers, x fastest: each CTA's program ids; without it, ``ctas`` is a 1-D grid).  Other
    integer keys are let through: a launch file may list the Python call's arguments, and
    Triton drops some from the TTGIR (unit strides specialized to constants; a TMA kernel's
    strides live in its descriptors)."""
    if not isinstance(launch, dict):
        raise TtgirError(f"{mod.path}: {where}: {_a(launch)}; the launch is an object of kernel argument "
                         'values and ctas, e.g. {"K": 256, "ctas": 1}')
    lower = {a.lower(): a for a in [*mod.args, "ctas"]}
    for key, value in launch.items():
        if not isinstance(key, str):
            raise TtgirError(f"{mod.path}: {where}: key {key!r} is not a name; keys are kernel argument names and ctas")
        at = f"{mod.path}: {where}: {key!r}"
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if key == "grid":
            if (not isinstance(value, list) or not 1 <= len(value) <= 3
                    or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in value)):
                raise TtgirError(f"{at} = {value!r}: the grid is a list of 1 to 3 positive integers (x, y, z), e.g. [16, 8]")
            ctas = launch.get("ctas")
            product = value[0] * (value[1] if len(value) > 1 else 1) * (value[2] if len(value) > 2 else 1)
            if isinstance(ctas, int) and not isinstance(ctas, bool) and ctas != product:
                raise TtgirError(f"{at} = {value}: {product} CTAs, but ctas = {ctas}; give one or make them agree")
            continue
        if key == "ctas":
            if not is_int or value < 1:
                raise TtgirError(f"{at} = {value!r}: the number of CTAs must be an integer >= 1 (the grid's size)")
            continue
        arg = mod.arg_info.get(key)
        if arg is None:
            if key in _NOT_LAUNCH:
                raise TtgirError(f"{at}: not a launch value; {_NOT_LAUNCH[key]}")
            if key.lower() in lower:
                raise TtgirError(f"{at}: no argument of @{mod.func} is called that; did you mean {lower[key.lower()]!r}? "
                                 "(names are case-sensitive)")
            if not is_int:
                raise TtgirError(f"{at} = {value!r}: not an argument of @{mod.func} ({', '.join(mod.args)}), and not "
                                 "an integer; remove it")
            continue
        if arg.type in ("!tt.ptr", "!tt.tensordesc"):
            raise TtgirError(f"{at}: a pointer argument ({arg.type}) takes no value in the launch; remove it")
        if arg.type.startswith("f") or arg.type.startswith("bf"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TtgirError(f"{at} = {value!r}: {_an(arg.type)} argument takes a number")
            continue
        if not is_int:
            raise TtgirError(f"{at} = {value!r}: {_an(arg.type)} argument takes an integer, not {_a(value)}; "
                             f"e.g. {{\"{key}\": 256}}")
        bits = _bits(arg.type) if re.fullmatch(r"i\d{1,3}|index", arg.type) else 64
        if bits == 1:
            if value not in (0, 1):
                raise TtgirError(f"{at} = {value}: an i1 argument is 0 or 1")
            continue
        if value < 1 and key in PROBLEM_SIZES:
            raise TtgirError(f"{at} = {value}: a problem size must be a positive integer")
        if value < -(1 << (bits - 1)):
            raise TtgirError(f"{at} = {value}: does not fit the argument's type {arg.type} (at least {-(1 << (bits - 1))})")
        if value >= 1 << (bits - 1):
            raise TtgirError(f"{at} = {value}: does not fit the argument's type {arg.type} (at most {(1 << (bits - 1)) - 1})")
        if arg.divisibility and value % arg.divisibility:
            raise TtgirError(f"{at} = {value}: this TTGIR was specialized for {key} divisible by {arg.divisibility} "
                             f"(tt.divisibility = {arg.divisibility}); Triton compiles another kernel for {value}: give a "
                             f"multiple of {arg.divisibility}, or the TTGIR of that compile")


def _metadata(path: Path) -> tuple[Path, dict[str, Any]] | None:
    side = sidecar(path, ".json")
    if not side.exists():
        return None
    data = _load_json(side, path, "metadata")
    if not isinstance(data, dict):
        raise TtgirError(f"{path}: metadata {side}: the top level is {_a(data)}; Triton's metadata is an "
                         "object (kernel.metadata, or the .json in Triton's cache)")
    for key in ("shared", "num_warps"):
        if key not in data:
            raise TtgirError(f"{path}: metadata {side}: no {key!r} field; give Triton's metadata JSON of this compile, "
                             "or move the file away")
    for key, low in (("shared", 0), ("num_warps", 1), ("num_ctas", 1), ("num_stages", 0), ("tmem_size", 0)):
        if key in data:
            v = data[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise TtgirError(f"{path}: metadata {side}: {key} = {v!r}: must be an integer >= {low}")
    if data.get("n_regs") is not None:  # absent from Triton's own metadata: a runner adds kernel.n_regs
        v = data["n_regs"]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 255:
            raise TtgirError(f"{path}: metadata {side}: n_regs = {v!r}: registers per thread are an integer from 1 "
                             "to 255 (the compiled kernel's n_regs); fix it or remove the field")
    if data.get("n_spills") is not None:  # a runner's kernel.n_spills, or cuobjdump's STACK / 4 (kernels/triton/corpus.py)
        v = data["n_spills"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise TtgirError(f"{path}: metadata {side}: n_spills = {v!r}: registers spilled per thread are an integer "
                             ">= 0 (the compiled kernel's n_spills); fix it or remove the field")
    if data.get("ldg_in_flight") is not None:  # read off the SASS by kernels/triton/corpus.py
        v = data["ldg_in_flight"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise TtgirError(f"{path}: metadata {side}: ldg_in_flight = {v!r}: the most global loads a thread has out "
                             "at once is an integer >= 1 (kernels.toolchain.sass.loads_in_flight); fix it or remove the "
                             "field")
    if data.get("wgmma_serialized") is not None and not isinstance(data["wgmma_serialized"], bool):
        raise TtgirError(f"{path}: metadata {side}: wgmma_serialized = {data['wgmma_serialized']!r}: whether ptxas "
                         "serialized the kernel's wgmmas is true or false (kernels.toolchain.sass.wgmma_serialized); fix "
                         "it or remove the field")
    return side, data


def check_metadata(mod: Ttgir, path: Path) -> None:
    """Refuse metadata beside the TTGIR that cannot be this compile's."""
    got = _metadata(path)
    if got is None:
        return
    side, data = got
    where = f"{path}: metadata {side}"
    # A warp-specialized kernel's metadata counts its partitions' warps too, padded to whole
    # warpgroups by Triton's allocate-warp-groups pass.
    if data["num_warps"] not in (mod.num_warps, mod.total_warps, -(-mod.total_warps // 4) * 4):
        raise TtgirError(f"{where}: num_warps = {data['num_warps']}, but the TTGIR's \"ttg.num-warps\" is "
                         f"{mod.num_warps}: the metadata is another compile's; give this compile's")
    if "name" in data and data["name"] != mod.func:
        raise TtgirError(f"{where}: name = {data['name']!r}, but the TTGIR's kernel is @{mod.func}: the metadata is "
                         "another kernel's; give this compile's")
    arch = data.get("arch")
    if isinstance(arch, str) and re.fullmatch(r"sm\d+a?", arch) and arch.rstrip("a")[2:] != mod.capability:
        raise TtgirError(f"{where}: arch = {arch!r}, but the TTGIR's target is {mod.target}: the metadata is another "
                         "target's compile; give this compile's")


def metadata(path: Path) -> dict[str, Any] | None:
    """The compiled kernel's metadata JSON beside the TTGIR (None when there is none)."""
    got = _metadata(Path(path))
    return None if got is None else got[1]


def metadata_shared(path: Path) -> int | None:
    """The ``shared`` field of the compiled kernel's metadata JSON beside the TTGIR
    (None when there is none; a malformed file is a :class:`TtgirError`)."""
    got = _metadata(Path(path))
    return None if got is None else got[1]["shared"]

