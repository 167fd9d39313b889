"""The TIRx frontend: a TIRx ``PrimFunc`` (``from tvm.script import tirx as T``) -> a
:class:`protosim.ir.Schedule`, by interpreting the program per CTA with concrete launch
values (``docs/tirx.md``).

* :func:`extract` -- the program and its launch -> a schedule;
* :func:`load_kernel` -- ``path/to/kernel.py:FUNC`` plus ``--set`` values -> the program
  and its launch (what ``protosim run kernel.py:FUNC`` calls);
* :class:`TirxError` -- every input error, naming the source line, the op and the fix.

Importing this package does not import tvm; :func:`extract` and :func:`load_kernel` do.
"""

from __future__ import annotations

from protosim.frontends.tirx.errors import TirxError

__all__ = ["TirxError", "extract", "load_kernel"]


def extract(func, arch=None, *, args=None, name=None, ctas=None, l2_at_launch="cold", config=None, max_ops=None):
    """The schedule of ``func`` (a TIRx ``PrimFunc``) launched on ``arch``; see
    :func:`protosim.frontends.tirx.reader.extract`."""
    from protosim.frontends.tirx.reader import extract as _extract

    from protosim.frontends.tirx.recognize import MAX_OPS

    return _extract(func, arch, args=args, name=name, ctas=ctas, l2_at_launch=l2_at_launch, config=config,
                    max_ops=MAX_OPS if max_ops is None else max_ops)


def load_kernel(path, func_name, sets=None):
    """See :func:`protosim.frontends.tirx.load.load_kernel`."""
    from protosim.frontends.tirx.load import load_kernel as _load_kernel

    return _load_kernel(path, func_name, sets)
