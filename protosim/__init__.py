"""protosim: a cycle-level simulator of GPU asynchronous protocols.

Layers, top to bottom: builders (``protosim.builders``) produce a
``protosim.ir.Schedule``; the SimPy engine (``protosim.engine``) replays it on an
``protosim.arch.ArchProfile`` and writes one event log; checkers
(``protosim.checkers``) read the log and return findings; ``protosim.verdict``
turns those into a verdict and an outcome class.
"""

__version__ = "0.1.0"
