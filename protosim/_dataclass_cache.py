"""``@dataclass`` with its generated methods' bytecode cached on disk, like a module's .pyc.

Creating a dataclass is slow: ``dataclasses`` writes the source of ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__``... as text and ``exec``\\ s each one, and compiling
that text is most of the cost (the 44 frozen classes of :mod:`protosim.ir` took ~25 ms of
every ``protosim`` start).  :class:`DataclassCache` runs the standard ``dataclasses.dataclass``
unchanged, except that the text it would ``exec`` is compiled once and the code object kept,
keyed by the exact text, in a file beside the module's .pyc; the next process ``exec``\\ s the
stored code object instead of compiling the same text again.

Why the classes are the very same: ``exec(text, g, ns)`` compiles ``text`` as
``compile(text, "<string>", "exec")`` with no inherited ``__future__`` flags (``dataclasses``
has none) and runs the result; the cache runs ``compile(text, "<string>", "exec",
dont_inherit=True)`` -- the same code object, ``==`` equal -- in the same globals and
namespace.  Everything else (fields, defaults, ``__match_args__``, slots, ``__qualname__``\\ s,
the frozen ``__setattr__``) is the standard library's own work.  Text not in the cache is
compiled as before; a cache from another Python (another magic number) or an unreadable one
is ignored.  The file is written like a .pyc: not when ``sys.dont_write_bytecode`` is set,
under ``sys.pycache_prefix`` when that is set, atomically, and a failure to write is silent.
``tests/test_ir.py`` compares every class of :mod:`protosim.ir` with a plain ``@dataclass``.
"""

from __future__ import annotations

import _thread
import builtins
import dataclasses
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER, cache_from_source

_KEY = b"protosim-dataclass-cache\x00" + MAGIC_NUMBER
_compile = builtins.compile
_exec = builtins.exec
_PATCH = _thread.RLock()
"""One thread at a time swaps ``dataclasses.exec`` (two imports in two threads would restore
each other's)."""


class DataclassCache:
    """One module's cache: ``dataclass = DataclassCache(__file__).dataclass`` at the top of the
    module, ``.save()`` at its end."""

    def __init__(self, module_file: str):
        self.path = None
        try:
            pyc = cache_from_source(module_file)
            self.path = pyc[:-len(".pyc")] + ".dataclasses" if pyc.endswith(".pyc") else pyc + ".dataclasses"
        except (NotImplementedError, ValueError):  # no cache tag: an odd interpreter; compile as usual
            pass
        self.code: dict[str, object] = {}
        self.misses = 0
        if self.path:
            try:
                with open(self.path, "rb") as f:
                    blob = f.read()
                if blob.startswith(_KEY):
                    table = marshal.loads(blob[len(_KEY):])
                    if isinstance(table, dict):
                        self.code = table
            except (OSError, ValueError, EOFError, TypeError):
                self.code = {}
        self.used: set[str] = set()

    def _exec(self, source, globals=None, locals=None):
        """What ``dataclasses._create_fn`` calls as ``exec(txt, globals, ns)``."""
        if source.__class__ is not str:  # not dataclasses' text: leave it alone
            return _exec(source, globals, locals)
        self.used.add(source)
        code = self.code.get(source)
        if code is None:
            code = self.code[source] = _compile(source, "<string>", "exec", dont_inherit=True)
            self.misses += 1
        return _exec(code, globals, locals)

    def dataclass(self, cls=None, /, **params):
        """``dataclasses.dataclass(cls, **params)``, its generated methods from the cache."""
        def wrap(c):
            with _PATCH:
                had = "exec" in vars(dataclasses)
                old = vars(dataclasses).get("exec")
                dataclasses.exec = self._exec  # a module global shadows the builtin in _create_fn
                try:
                    return dataclasses.dataclass(c, **params)
                finally:
                    if had:
                        dataclasses.exec = old
                    else:
                        del dataclasses.exec
        return wrap if cls is None else wrap(cls)

    def save(self) -> None:
        """Write the cache when this import compiled something new (as Python writes a .pyc):
        the code this import used, so text of a class since changed does not pile up."""
        if not self.misses or not self.path or sys.dont_write_bytecode:
            return
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(_KEY + marshal.dumps({k: v for k, v in self.code.items() if k in self.used}))
            os.replace(tmp, self.path)
            self.misses = 0
        except (OSError, ValueError):
            try:
                os.unlink(tmp)
            except OSError:
                pass
