"""``path/to/kernel.py:FUNC`` plus ``--set`` values -> a TIRx ``PrimFunc`` and its launch.

What ``protosim run kernel.py:FUNC --set M=4096 --set arch=h200`` reads, before
:func:`protosim.frontends.tirx.extract` interprets it:

* the file is imported as a module of its own (a private name, taken out of
  ``sys.modules`` again afterwards; its folder is on ``sys.path`` while it imports, so
  ``import helpers`` of a sibling file works);
* ``FUNC`` is a module-level ``PrimFunc`` (``@T.prim_func``), or a function returning one;
  without ``:FUNC`` the module's only ``PrimFunc``;
* ``--set`` values: those naming a parameter of ``FUNC`` (a function) are passed to it as
  keyword arguments; ``arch`` is the GPU (``b200``, ``h200``, ``gb10``; None: ``extract``
  infers it); every other key names an integer scalar parameter of the ``PrimFunc``
  (``timeout_cycles: T.int32``), its launch value.

Every mistake -- in the path, in ``FUNC``, in a ``--set``, an exception the user's code
raises while importing or building -- is a :class:`TirxError` of one line naming the file
(and the line of the user's code that raised) and the fix; never a traceback.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import itertools
import os
import re
import sys
import warnings
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protosim.frontends.tirx.errors import TirxError

__all__ = ["KernelSource", "load_kernel", "split_spec", "is_kernel_spec"]

TVM_PIN = "apache-tvm==0.27.0.post1"
"""The version ``pyproject.toml`` pins (extra ``kernels``)."""

_SPEC = re.compile(r"(?P<path>.+\.py)(?::(?P<func>[^:/\\]*))?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MSG_MAX = 300
_counter = itertools.count()


@dataclass(frozen=True)
class KernelSource:
    """A TIRx kernel and its launch, as ``extract`` takes them."""

    func: Any
    """The ``tvm.tirx.PrimFunc``."""
    args: dict[str, int] = field(default_factory=dict)
    """Launch values of the PrimFunc's integer scalar parameters, by name (the ones given)."""
    arch: str | None = None
    """``--set arch=...``; None: let ``extract`` infer it from the program."""
    name: str = ""
    """The schedule's name: ``FUNC``."""
    call: dict[str, Any] = field(default_factory=dict)
    """The keyword arguments ``FUNC(...)`` was called with (empty for a PrimFunc)."""
    source: str = ""
    """``path.py:FUNC``, as the user gave the path."""


def is_kernel_spec(text: str | os.PathLike) -> bool:
    """Whether ``text`` names a Python kernel file: ``k.py`` or ``k.py:FUNC``."""
    return _SPEC.fullmatch(str(text)) is not None


def split_spec(text: str | os.PathLike) -> tuple[Path, str | None]:
    """``"dir/k.py:FUNC"`` -> ``(Path("dir/k.py"), "FUNC")``; ``"k.py"`` -> ``(Path("k.py"), None)``."""
    m = _SPEC.fullmatch(str(text))
    if m is None:
        raise TirxError(f"{text}: not a Python kernel; give path/to/kernel.py or path/to/kernel.py:FUNC")
    return Path(m["path"]), m["func"]


# --------------------------------------------------------------------------- #
# values
# --------------------------------------------------------------------------- #
def _value(v: Any) -> Any:
    """A ``--set`` value: ``"4096"`` -> 4096, ``"true"``/``"false"`` -> bool, else the string;
    an already-typed value as it is."""
    if not isinstance(v, str):
        return v
    text = v.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text.replace("_", ""), 0) if re.fullmatch(r"[+-]?(0[xob])?[0-9a-fA-F_]+", text) else text
    except ValueError:
        return text


def _pairs(path: Path, sets: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> dict[str, Any]:
    if sets is None:
        return {}
    items = sets.items() if isinstance(sets, Mapping) else sets
    out: dict[str, Any] = {}
    for item in items:
        try:
            key, value = item
        except (TypeError, ValueError):
            raise TirxError(f"{path}: --set {item!r}: expected KEY=VALUE pairs, e.g. --set M=4096") from None
        if not isinstance(key, str) or not key.strip():
            raise TirxError(f"{path}: --set {key!r}=...: the key must be a parameter name, e.g. --set M=4096")
        out[key.strip()] = _value(value)  # a later --set of the same key wins
    return out


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v) if isinstance(v, int | float) else repr(v)


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= _MSG_MAX else line[: _MSG_MAX - 3] + "..."


# --------------------------------------------------------------------------- #
# tvm
# --------------------------------------------------------------------------- #
def _prim_func_class(path: Path) -> type:
    try:
        from tvm.tirx import PrimFunc
    except ImportError:
        raise TirxError(f"{path}: reading TIRx kernels needs apache-tvm; install it: pip install '{TVM_PIN}' "
                        f"(the version pyproject.toml pins, extra 'kernels': pip install -e '.[kernels]')") from None
    return PrimFunc


def _int_scalar_params(func: Any) -> dict[str, str]:
    """The PrimFunc's integer (and bool) scalar parameters: name -> dtype."""
    from tvm.ir import PrimType

    out = {}
    for p in func.params:
        ty = getattr(p, "ty", None)
        if isinstance(ty, PrimType):
            dtype = str(ty.dtype)
            if dtype.startswith(("int", "uint")) or dtype == "bool":
                out[str(p.name)] = dtype
    return out


def _range(dtype: str) -> tuple[int, int]:
    if dtype == "bool":
        return 0, 1
    m = re.fullmatch(r"(u?)int(\d+)", dtype)
    bits = int(m[2]) if m else 64
    return (0, 2**bits - 1) if m and m[1] else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


# --------------------------------------------------------------------------- #
# the user's code
# --------------------------------------------------------------------------- #
def _inside(filename: str, folder: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def _where(exc: BaseException, path: Path) -> str:
    """``file:line`` of the user's code that raised ``exc``: the innermost frame in the
    kernel file or its folder (a sibling module; not an installed library), else the
    kernel file."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return _display(exc.filename, path) + f":{exc.lineno}"
    m = re.search(r"-->\s*(.+?):(\d+):\d+", str(exc))  # a TVMScript parser diagnostic
    if m:
        return _display(m[1], path) + f":{m[2]}"
    real = path.resolve()
    for fr in reversed(traceback.extract_tb(exc.__traceback__)):
        if _same(fr.filename, real) or (_inside(fr.filename, real.parent) and not _installed(fr.filename)):
            return _display(fr.filename, path) + f":{fr.lineno}"
    return str(path)


def _installed(filename: str) -> bool:
    """A library's file (tvm, numpy, protosim itself), even when a virtual environment or
    the checkout lies inside the kernel's folder."""
    parts = Path(filename).parts
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    here = Path(__file__).resolve().parents[2]  # the protosim package
    return _inside(filename, here)


def _same(filename: str, real: Path) -> bool:
    try:
        return Path(filename).resolve() == real
    except OSError:
        return False


def _display(filename: str, path: Path) -> str:
    """The kernel file as the user spelled it; another file as the traceback names it."""
    return str(path) if _same(filename, path.resolve()) else filename


def _describe(exc: BaseException) -> str:
    kind = type(exc).__name__
    if isinstance(exc, SyntaxError):
        return f"{kind}: {exc.msg}"
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r})"
    if kind == "DiagnosticError":  # TVMScript: "error: MSG\n --> file:line:col ..."
        return "TVMScript error: " + _one_line(re.sub(r"^error:\s*", "", str(exc).strip()))
    msg = _one_line(str(exc))
    return f"{kind}: {msg}" if msg else kind


@contextlib.contextmanager
def _quiet():
    """The user's module runs with its prints and warnings kept away from protosim's own output:
    ``--json`` stays JSON on stdout and a refusal stays one line on stderr."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


class _Imported:
    """The kernel file imported as a private module, its folder on ``sys.path``; leaving
    takes the module, the folder and the sibling modules imported through it out again."""

    def __init__(self, path: Path):
        self.path = path
        self.folder = path.resolve().parent
        # A file inside a package (kernels/tirx/ws_sm100.py) imports its package absolutely
        # (`from kernels.tirx... import`): the folder above the top package goes on the path too.
        top = self.folder
        while (top / "__init__.py").exists():
            top = top.parent
        self.package = self.folder.relative_to(top).parts[0] if top != self.folder else None
        self.root = top if top != self.folder else None
        stem = re.sub(r"\W", "_", path.stem)
        self.name = f"_protosim_tirx_kernel_{stem}_{next(_counter)}"
        self.module: Any = None

    def __enter__(self) -> _Imported:
        self.before = set(sys.modules)
        self.added = str(self.folder) not in sys.path
        if self.added:
            sys.path.insert(0, str(self.folder))
        self.added_root = self.root is not None and str(self.root) not in sys.path
        if self.added_root:
            sys.path.insert(1, str(self.root))
        if self.package is not None:  # its real dotted name, so `from ..spec import` resolves
            dotted = ".".join(self.path.resolve().relative_to(self.root).with_suffix("").parts)
            if dotted not in sys.modules:
                self.name = dotted
                try:
                    with _quiet():
                        importlib.import_module(dotted.rpartition(".")[0])
                except Exception:  # noqa: BLE001 - the parent package's own error shows when the file runs
                    pass
        spec = importlib.util.spec_from_file_location(self.name, self.path)
        if spec is None or spec.loader is None:  # pragma: no cover - a .py always has a loader
            self.__exit__(None, None, None)
            raise TirxError(f"{self.path}: cannot import it as a Python module; give a .py file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.name] = module  # dataclasses, pickling and T.prim_func's source lookup need it
        try:
            with _quiet():
                spec.loader.exec_module(module)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's code: any error is an input error
            self.__exit__(None, None, None)
            raise TirxError(f"{_where(e, self.path)}: {_describe(e)} -- raised while importing {self.path}; "
                            f"fix the module so that it imports") from None
        self.module = module
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.modules.pop(self.name, None)
        if self.added_root:
            try:
                sys.path.remove(str(self.root))
            except ValueError:
                pass
            for name in set(sys.modules) - self.before:  # the file's own package, imported through the root
                if name == self.package or name.startswith(f"{self.package}."):
                    sys.modules.pop(name, None)
        if self.added:
            try:
                sys.path.remove(str(self.folder))
            except ValueError:
                pass
            for name in set(sys.modules) - self.before:  # siblings importable only through the folder
                f = getattr(sys.modules.get(name), "__file__", None)
                if f and _inside(f, self.folder):
                    sys.modules.pop(name, None)


# --------------------------------------------------------------------------- #
# load_kernel
# --------------------------------------------------------------------------- #
def _check_path(path: Path) -> None:
    fix = "give path/to/kernel.py[:FUNC]"
    if not path.exists():
        raise TirxError(f"{path}: no such file; {fix}")
    if path.is_dir():
        raise TirxError(f"{path}: is a directory; {fix}")
    if not path.is_file():
        raise TirxError(f"{path}: not a regular file; {fix}")
    if path.suffix != ".py":
        raise TirxError(f"{path}: not a Python file (.py); {fix}")
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise TirxError(f"{path}: cannot read it ({e.strerror}); {fix}") from None


def _candidates(module: Any, prim_func: type) -> tuple[list[str], list[str]]:
    """Module-level PrimFuncs, and functions defined in the module (not imported)."""
    prims, funcs = [], []
    for n, v in vars(module).items():
        if n.startswith("_"):
            continue
        if isinstance(v, prim_func):
            prims.append(n)
        elif inspect.isfunction(v) and getattr(v, "__module__", None) == module.__name__:
            funcs.append(n)
    return prims, funcs


def _listing(prims: list[str], funcs: list[str]) -> str:
    parts = []
    if prims:
        parts.append("PrimFuncs: " + ", ".join(prims))
    if funcs:
        parts.append("functions: " + ", ".join(funcs))
    return "; ".join(parts) if parts else "no PrimFunc or function at module level"


def _signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _sig_text(sig: inspect.Signature | None) -> str:
    if sig is None:
        return "(unknown)"
    return ", ".join(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
                     for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)) or "none"


def load_kernel(path: str | os.PathLike, func_name: str | None = None,
                sets: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> KernelSource:
    """Import ``path`` (a ``.py`` file), find ``func_name`` in it (None: the module's only
    ``PrimFunc``), call it with the ``sets`` that name its parameters if it is a function,
    and sort the rest of ``sets`` into the arch (``arch``) and the PrimFunc's integer
    scalar arguments.  Raises :class:`TirxError` (one line: the file, what, the fix)."""
    path = Path(path)
    _check_path(path)
    if func_name is not None and not _IDENT.fullmatch(func_name):
        raise TirxError(f"{path}:{func_name}: FUNC must be a Python name (path/to/kernel.py:FUNC); "
                        f"give the name of the PrimFunc or of the function returning one, or leave ':FUNC' off")
    values = _pairs(path, sets)
    prim_func = _prim_func_class(path)

    with _Imported(path) as imp:
        module = imp.module
        prims, funcs = _candidates(module, prim_func)
        if func_name is None:
            if len(prims) > 1:
                raise TirxError(f"{path}: {len(prims)} PrimFuncs at module level ({', '.join(prims)}); "
                                f"name the one to read: {path}:{prims[0]}")
            if not prims:
                raise TirxError(f"{path}: no PrimFunc at module level; name the function that returns one: "
                                f"{path}:FUNC (functions here: {', '.join(funcs) or 'none'})")
            func_name = prims[0]
        source = f"{path}:{func_name}"
        if not hasattr(module, func_name):
            raise TirxError(f"{source}: {path} has no {func_name!r} at module level ({_listing(prims, funcs)}); "
                            f"give one of those after the ':'")
        obj = getattr(module, func_name)
        call: dict[str, Any] = {}
        sig = None
        if isinstance(obj, prim_func):
            func = obj
        elif callable(obj):
            sig = _signature(obj)
            params = {} if sig is None else {
                n: p for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            call = {k: v for k, v in values.items() if k in params}
            config_param = next((n for n, p in params.items() if _takes_config(p) and n not in call), None)
            if config_param is not None:  # a kernel built from a GemmConfig (the repository's kernels)
                call[config_param] = _config(source, values)
            missing = [n for n, p in params.items() if p.default is inspect.Parameter.empty and n not in call]
            if missing:
                raise TirxError(f"{source}: {func_name}({_sig_text(sig)}) needs "
                                + ", ".join(missing) + "; pass " + " ".join(f"--set {n}=VALUE" for n in missing))
            try:
                with _quiet():
                    func = obj(**call)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's code: any error is an input error
                shown = ", ".join(f"{k}={_show(v)}" for k, v in call.items())
                where = _where(e, path)
                inside = "" if where.startswith(f"{path}:") else f" in {path}"
                raise TirxError(f"{where}: {_describe(e)} -- raised by {func_name}({shown}){inside}; "
                                f"fix {func_name} or the --set values it takes") from None
            if not isinstance(func, prim_func):
                raise TirxError(f"{source}: {func_name}(...) returned {type(func).__name__}, not a TIRx PrimFunc; "
                                f"return the @T.prim_func it builds (from tvm.script import tirx as T)")
        else:
            raise TirxError(f"{source}: {func_name} is {type(obj).__name__}, not a TIRx PrimFunc or a function "
                            f"returning one ({_listing(prims, funcs)})")

    scalars = _int_scalar_params(func)
    config = next((v for v in call.values() if type(v).__name__ == "GemmConfig"), None)
    arch: str | None = config.arch if config is not None else None
    args: dict[str, int] = {}
    for key, value in values.items():
        if key == "arch":
            arch = _arch(source, value)
        elif key in scalars:  # (a delay knob is a config field and a kernel argument: it is both)
            args[key] = _scalar(source, key, value, scalars[key])
        elif key in call or (config is not None and key in _config_fields()):
            continue
        else:
            takes = f"{func_name}'s parameters: {_sig_text(sig)}; " if sig is not None else ""
            raise TirxError(f"{source}: --set {key}: not a parameter; {takes}the PrimFunc's integer scalar "
                            f"parameters: {', '.join(scalars) or 'none'}; and arch=b200|h200|gb10")
    shown = {k: ({f: values[f] for f in values if f in _config_fields()} if type(v).__name__ == "GemmConfig" else v)
             for k, v in call.items()}  # a config shows the --set fields it was built from (JSON-ready)
    return KernelSource(func=func, args=args, arch=arch, name=func_name, call=shown, source=source)


def _takes_config(p: inspect.Parameter) -> bool:
    """A parameter annotated ``GemmConfig``: the kernel is built from ``--set`` config fields."""
    ann = p.annotation
    return ann is not inspect.Parameter.empty and (getattr(ann, "__name__", None) == "GemmConfig"
                                                   or (isinstance(ann, str) and ann.split(".")[-1] == "GemmConfig"))


def _config_fields() -> set[str]:
    import dataclasses

    from protosim.config import GemmConfig

    return {f.name for f in dataclasses.fields(GemmConfig)}


def _config(source: str, values: Mapping[str, Any]) -> Any:
    """A :class:`~protosim.config.GemmConfig` from the ``--set`` values that name its fields."""
    from protosim.config import ConfigError, GemmConfig

    try:
        return GemmConfig.from_dict({k: v for k, v in values.items() if k in _config_fields()})
    except ConfigError as e:
        raise TirxError(f"{source}: --set {e.field}: {e.message}") from None


def _arch(source: str, value: Any) -> str:
    from protosim.arch import available

    names = available()
    if not isinstance(value, str) or value not in names:
        raise TirxError(f"{source}: --set arch={_show(value)}: not a GPU protosim models; use one of {', '.join(names)}")
    return value


def _scalar(source: str, key: str, value: Any, dtype: str) -> int:
    if dtype == "bool" and isinstance(value, bool):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TirxError(f"{source}: --set {key}={_show(value)}: {key} is the PrimFunc's {dtype} parameter; "
                        f"give an integer, e.g. --set {key}=0")
    low, high = _range(dtype)
    if not low <= value <= high:
        raise TirxError(f"{source}: --set {key}={value}: out of range for {dtype} ({low}..{high})")
    return value
