"""The first import of the ``protosim`` command: SimPy without ``importlib.metadata``.

SimPy's ``__init__`` imports ``importlib.metadata`` only to set ``simpy.__version__``; that
import pulls in ``email``, ``zipfile``, ``csv``, ``socket``, ``calendar``... -- ~14 ms of a
~60 ms target for a cold ``protosim run`` (issue 15).  :func:`import_simpy` imports SimPy
with a stand-in ``importlib.metadata`` whose ``version(name)`` reads the ``Version:`` line
of the ``<name>-*.dist-info/METADATA`` beside the package being imported -- what the real
``version`` finds for a package installed by pip -- and hands anything else (or a package
laid out otherwise) to the real module.  The stand-in is gone once SimPy is imported: a
later ``import importlib.metadata`` gets the real one.  Importing this module does it; only
the command line does (``protosim.cli``'s first import): importing ``protosim`` as a library
leaves SimPy's import alone.
"""

from __future__ import annotations

import os
import sys
import types


def _real():
    """Drop the stand-in and import the real ``importlib.metadata``."""
    import importlib

    if isinstance(sys.modules.get("importlib.metadata"), _StandIn):
        del sys.modules["importlib.metadata"]
        if isinstance(vars(importlib).get("metadata"), _StandIn):
            del importlib.metadata
    import importlib.metadata

    return importlib.metadata


def _dist_info_version(name: str) -> str | None:
    module = sys.modules.get(name)
    where = getattr(module, "__file__", None)
    if not where:
        return None
    site = os.path.dirname(os.path.dirname(where))
    wanted = name.replace("-", "_").replace(".", "_").lower()
    try:  # <name>-<version>.dist-info, the name with - and . as _
        entries = [e for e in os.listdir(site)
                   if e.endswith(".dist-info") and e.split("-", 1)[0].replace(".", "_").lower() == wanted]
    except OSError:
        return None
    if len(entries) != 1:  # none, or several installs side by side: let the real module decide
        return None
    try:
        with open(os.path.join(site, entries[0], "METADATA"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():  # end of the headers
                    break
    except OSError:
        return None
    return None


class _StandIn(types.ModuleType):
    def version(self, name: str) -> str:
        found = _dist_info_version(name)
        return found if found is not None else _real().version(name)

    def __getattr__(self, attr: str):
        return getattr(_real(), attr)


def import_simpy() -> None:
    """``import simpy``, with the stand-in ``importlib.metadata`` while its ``__init__`` runs."""
    if "simpy" in sys.modules or "importlib.metadata" in sys.modules:
        return
    import importlib

    stand_in = _StandIn("importlib.metadata", "protosim._startup's stand-in while simpy is imported")
    sys.modules["importlib.metadata"] = stand_in
    importlib.metadata = stand_in  # what `import importlib.metadata` binds when the module is already loaded
    try:
        import simpy  # noqa: F401
    finally:
        if sys.modules.get("importlib.metadata") is stand_in:
            del sys.modules["importlib.metadata"]
        if vars(importlib).get("metadata") is stand_in:
            del importlib.metadata


import_simpy()
