"""The dataclasses of protosim.ir (and of the other modules that use protosim._dataclass_cache)
made through the bytecode cache are the classes plain ``@dataclass`` makes: same fields,
parameters, methods (code objects compare equal), defaults, annotations and names -- with a
cold cache (compiling) and a warm one (loading)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import pickle
import sys
from pathlib import Path

import pytest

import protosim.ir as ir
from protosim import _dataclass_cache
from protosim._dataclass_cache import DataclassCache

IR_FILE = Path(ir.__file__)
ROOT = Path(__file__).resolve().parent.parent
USERS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "protosim").rglob("*.py")
               if "\n_DATACLASSES = DataclassCache(__file__)\n" in p.read_text(encoding="utf-8"))
"""Every module that makes its dataclasses through the cache (found, so a new one is not missed)."""


def _load_ir(name: str, make_cache, path: Path = IR_FILE) -> object:
    """protosim/ir.py (or ``path``) executed again as module ``name``, its DataclassCache made by ``make_cache``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    real = _dataclass_cache.DataclassCache
    ir_globals_patch = pytest.MonkeyPatch()
    try:
        ir_globals_patch.setattr("protosim._dataclass_cache.DataclassCache", make_cache)
        spec.loader.exec_module(module)
    finally:
        ir_globals_patch.undo()
        sys.modules.pop(name, None)
    assert _dataclass_cache.DataclassCache is real
    return module


class _Plain:
    """Stand-in for DataclassCache: the standard library's dataclass, no cache."""

    def __init__(self, _file):
        pass

    dataclass = staticmethod(dataclasses.dataclass)

    def save(self):
        pass


def _classes(module) -> dict[str, type]:
    return {k: v for k, v in vars(module).items() if isinstance(v, type) and dataclasses.is_dataclass(v)
            and v.__module__ == module.__name__}


def _function_facts(fn) -> tuple:
    return (fn.__code__, fn.__defaults__, fn.__kwdefaults__, fn.__annotations__, fn.__qualname__, fn.__name__,
            fn.__doc__)


def _norm(v):
    """A class of the re-executed module by its name (each copy of the module has its own)."""
    return v.__qualname__ if isinstance(v, type) and v.__module__.startswith("protosim_") else v


def _class_facts(cls: type) -> dict:
    facts = {
        "fields": [(f.name, f.type, _norm(f.default), _norm(f.default_factory), f.init, f.repr, f.hash, f.compare, f.kw_only,
                    dict(f.metadata), f._field_type) for f in dataclasses.fields(cls)],
        "all_fields": sorted(cls.__dataclass_fields__),
        "params": repr(cls.__dataclass_params__),
        "match_args": getattr(cls, "__match_args__", None),
        "slots": getattr(cls, "__slots__", None),
        "doc": cls.__doc__,
        "qualname": cls.__qualname__,
        "bases": [b.__name__ for b in cls.__mro__],
        "signature": str(inspect.signature(cls)),
    }
    for name, value in sorted(vars(cls).items()):
        if inspect.isfunction(value):
            facts[f"fn {name}"] = _function_facts(value)
        elif isinstance(value, property):
            facts[f"property {name}"] = _function_facts(value.fget)
        elif isinstance(value, (classmethod, staticmethod)):
            facts[f"{type(value).__name__} {name}"] = _function_facts(value.__func__)
        elif name not in ("__dataclass_fields__", "__dataclass_params__", "__doc__", "__module__", "__slots__",
                          "__match_args__") and not isinstance(value, type(cls.__dict__.get("__weakref__", None))):
            facts[f"attr {name}"] = repr(value) if not isinstance(value, (str, int, type(None), bool)) else value
    return facts


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """The module made plainly, through a cold cache (compiles, saves) and through the warm cache."""
    where = tmp_path_factory.mktemp("dccache")
    made: list[DataclassCache] = []

    def cache(_file):
        c = DataclassCache(str(where / "ir.py"))
        made.append(c)
        return c

    was = sys.dont_write_bytecode
    sys.dont_write_bytecode = False  # this test's cache is written in any environment
    try:
        plain = _load_ir("protosim_ir_plain", _Plain)
        cold = _load_ir("protosim_ir_cold", cache)
        warm = _load_ir("protosim_ir_warm", cache)
    finally:
        sys.dont_write_bytecode = was
    return plain, cold, warm, made


def test_warm_cache_compiles_nothing(three):
    _, _, _, made = three
    cold, warm = made
    assert cold.used and cold.misses == 0  # saved: misses reset by save()
    assert warm.used == cold.used and warm.misses == 0
    assert Path(warm.path).is_file()


def test_same_classes_as_plain_dataclass(three):
    plain, cold, warm, _ = three
    ref = _classes(plain)
    assert len(ref) >= 40
    for module in (cold, warm):
        got = _classes(module)
        assert sorted(got) == sorted(ref)
        for name, cls in ref.items():
            a, b = _class_facts(cls), _class_facts(got[name])
            assert a == b, name
            for attr, fn in vars(got[name]).items():
                if inspect.isfunction(fn):  # run in the module's own globals where exec ran it there
                    ref_fn = vars(cls)[attr]
                    assert (fn.__globals__ is vars(module)) == (ref_fn.__globals__ is vars(plain)), (name, attr)
                    assert fn.__globals__ is vars(module) or fn.__globals__ is ref_fn.__globals__


def test_same_behaviour_on_instances(three):
    plain, _, warm, _ = three
    for m in (plain, warm, ir):
        acc = m.Access("a", stage=1, content="A[0]", columns=(0, 64))
        op = m.TmaLoad(barrier="b", dst=acc, bytes=128, use=2, issuer="one")
        assert repr(acc) == "Access(buffer='a', stage=1, content='A[0]', part=None, cta=None, columns=(0, 64))"
        assert hash(acc) == hash(m.Access("a", stage=1, content="A[0]", columns=(0, 64)))
        with pytest.raises(dataclasses.FrozenInstanceError):
            acc.stage = 2
        with pytest.raises(TypeError):
            m.Access()
        if m is ir:  # the others are not importable by name
            assert pickle.loads(pickle.dumps(op)) == op
        assert op == dataclasses.replace(op) and op != dataclasses.replace(op, use=3)
        assert repr(op) == ("TmaLoad(issuer='one', tile=None, k=None, label='', barrier='b', use=2, bytes=128, dst=" + repr(acc)
                            + ", src='', multicast=(), barrier_cta=None)")
        with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'dst'"):
            m.TmaLoad(barrier="b", bytes=128, use=2)


def test_cache_ignores_a_foreign_file(tmp_path):
    bad = DataclassCache(str(tmp_path / "x.py"))
    Path(bad.path).parent.mkdir(parents=True, exist_ok=True)
    Path(bad.path).write_bytes(b"not a cache")
    again = DataclassCache(str(tmp_path / "x.py"))
    assert again.code == {}

    @again.dataclass(frozen=True)
    class P:
        x: int = 1

    assert P() == P(1) and repr(P(2)) == "test_cache_ignores_a_foreign_file.<locals>.P(x=2)"


@pytest.mark.parametrize("module", USERS)
def test_every_user_gets_plain_dataclasses(module, tmp_path):
    path = IR_FILE.parents[1] / module
    assert "DataclassCache(__file__)" in path.read_text()

    def cache(_file):
        return DataclassCache(str(tmp_path / "m.py"))

    was = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        plain = _load_ir("protosim_plain_x", _Plain, path)
        _load_ir("protosim_cold_x", cache, path)
        warm = _load_ir("protosim_warm_x", cache, path)
    finally:
        sys.dont_write_bytecode = was
    ref, got = _classes(plain), _classes(warm)
    assert ref and sorted(ref) == sorted(got)
    for name, cls in ref.items():
        assert _class_facts(cls) == _class_facts(got[name]), name
