"""Write your own protocol as a schedule: a ring position, a ring's ops, a schedule writer.

A schedule's checkers judge each op against its *logical tag* ``use``: the barrier phase
the op belongs to by the protocol's intent (``protosim.ir``).  This package keeps that
bookkeeping, in the manner of CUTLASS's ``PipelineState`` / ``PipelineTmaAsync``, and the
built-in builders (``protosim.builders``) and the TTGIR reader count with it too:

* :class:`PipelineState` (``state``) -- where a role stands in a ring of stages: ``index``
  (the stage), ``phase`` (the parity its next wait passes) and ``count`` (steps taken since
  the kernel began).  :meth:`PipelineState.advance` is the only place the phase flips;
  :meth:`PipelineState.producer_start` the only place the producer's start parity is
  written.  ``use`` is ``count // stages``, so it never depends on the parity.
* :class:`Pipeline` (``emitter``) -- writes a ring's steps: ``producer_acquire`` /
  ``producer_commit`` / ``consumer_wait`` / ``consumer_release``, taking the stage and
  parity from a state and ``use`` from a :class:`UseCounter` (each role's ops counted per
  barrier in program order), so a ring restarted by a bug still carries its intent.
* :class:`ScheduleBuilder` (``builder``) -- declares barriers (arrays of stages), buffers
  and roles, then writes each role's ops (:class:`Role`, or a :class:`Pipeline` from
  :meth:`ScheduleBuilder.pipeline`); :meth:`ScheduleBuilder.build` returns a validated
  :class:`protosim.ir.Schedule`.

You still choose every op, every parity and every byte count, so a bug you write stays a
bug: pass ``parity=`` to a wait to say what a buggy kernel passes, and ``use`` still says
which phase the protocol meant -- which is how ``wrong_parity`` and ``early_return`` find
it.  With :class:`Role` methods the state's count is the intent: keep one state per ring
for the whole kernel.  (A kernel that restarts its ring per tile waits on other stages
than its intent; write that one with a :class:`Pipeline`, whose counters do not restart.)

``docs/api.md`` is the reference; README's "Writing your own protocol in Python" a
complete example.
"""

from protosim.pipeline.builder import BarrierArray, Buffer, Role, ScheduleBuilder
from protosim.pipeline.emitter import Pipeline, UseCounter
from protosim.pipeline.state import PipelineState

__all__ = ["PipelineState", "Pipeline", "UseCounter", "BarrierArray", "Buffer", "Role", "ScheduleBuilder"]
