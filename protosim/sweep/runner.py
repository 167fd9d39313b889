"""The one sweep runner: a list of work items, one function, results in item order.

Three engines behind one call (the package docstring has the signature):

* **inline** (``workers=1``, or fewer than two items): a plain loop in this process -- the
  baseline every other engine is measured against, and the easiest to debug.
* **local processes** (default: one per core): a ``ProcessPoolExecutor`` fed chunks of
  items, so a fast item (a ~1 ms single-CTA verdict) does not pay a task's overhead alone.
* **Ray** (``ray="HOST:PORT"``, ``"auto"`` or ``"local"``): the same chunks as ``ray.remote``
  tasks on a cluster; the driver's ``protosim`` package is shipped to the workers
  (``runtime_env`` ``py_modules``) so every node runs the code that planned the sweep.

Whatever the engine, a result is stored under its item's index and the list comes back in
item order: the same items and the same function give the same list on any engine, as long as
the function itself is deterministic (every seed it uses must be part of the item).

Ctrl-C (SIGINT) stops the sweep: workers ignore SIGINT (only the parent decides), pending
work is cancelled, the workers are stopped, and :class:`SweepInterrupted` -- a
``KeyboardInterrupt``, so a caller that does not care still exits 130 -- carries what finished.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Progress = Callable[[int, int], None]
OnResult = Callable[[int, Any], None]

MAX_CHUNK = 32
"""Items per task at most: ~32 ms of 1 ms verdicts, enough to hide a task's ~0.3 ms overhead,
few enough that progress moves and the last tasks finish together."""
CHUNKS_PER_WORKER = 8
"""Aim for this many tasks per worker, so a slow chunk at the end leaves the others little idle time."""
IN_FLIGHT_PER_WORKER = 3
"""Chunks submitted ahead per worker: enough that none idles between tasks, few enough that a
sweep of 10^5 configs does not hold every pickled chunk in the queue (and Ctrl-C has little to cancel)."""


class SweepError(Exception):
    """A sweep that cannot start (Ray missing or unreachable): one line, exit status 2."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep.  ``done`` maps item index -> result for every item that
    finished; ``total`` is how many items there were."""

    def __init__(self, done: dict[int, Any], total: int):
        super().__init__(f"interrupted: {total - len(done)} of {total} items not run")
        self.done, self.total = done, total

    @property
    def missing(self) -> int:
        return self.total - len(self.done)


def run_sweep(items: Sequence[Any], work_fn: Callable[[Any], Any], workers: int | None = None, ray: str | None = None,
              progress: Progress | None = None, on_result: OnResult | None = None,
              chunk_size: int | None = None) -> list[Any]:
    """``[work_fn(item) for item in items]``, spread over ``workers`` local processes
    (default: every core; 1: in this process) or over a Ray cluster (``ray``).

    ``work_fn`` and the items must pickle (a module-level function; small items: send a
    config, not a built schedule).  ``progress(done, total)`` and ``on_result(index,
    result)`` are called in this process as results arrive (in completion order).
    ``chunk_size``: items per task (default: about :data:`CHUNKS_PER_WORKER` tasks per
    worker, at most :data:`MAX_CHUNK` items each; pass 1 when every item takes seconds).
    An exception from ``work_fn`` stops the sweep and is raised here."""
    items = list(items)
    total = len(items)
    done: dict[int, Any] = {}

    def record(index: int, result: Any) -> None:
        done[index] = result
        if on_result:
            on_result(index, result)
        if progress:
            progress(len(done), total)

    try:
        if ray is not None:
            _run_ray(ray, items, work_fn, record, chunk_size)
        else:
            workers = workers or default_workers()
            if workers == 1 or total < 2:
                for i, item in enumerate(items):
                    record(i, work_fn(item))
            else:
                _run_pool(min(workers, total), _chunks(total, workers, chunk_size), items, work_fn, record)
    except KeyboardInterrupt:
        raise SweepInterrupted(done, total) from None
    return [done[i] for i in range(total)]


def default_workers() -> int:
    """The cores this process may run on (a container's or ``taskset``'s share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _chunks(total: int, workers: int, chunk_size: int | None) -> list[range]:
    """Index ranges covering ``0..total``, in order."""
    size = chunk_size or max(1, min(MAX_CHUNK, total // (workers * CHUNKS_PER_WORKER)))
    return [range(start, min(start + size, total)) for start in range(0, total, size)]


def _run_chunk(work_fn: Callable[[Any], Any], indexed: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """One task: a chunk of ``(index, item)`` pairs -> ``(index, result)`` pairs."""
    return [(i, work_fn(item)) for i, item in indexed]


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the parent, which collects what finished and stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# ----------------------------------------------------------------------------- local processes


def _run_pool(workers: int, chunks: list[range], items: list[Any], work_fn, record) -> None:
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pool = ProcessPoolExecutor(workers, initializer=_ignore_sigint)
    todo = iter(chunks)
    pending: set = set()

    def submit(n: int) -> None:  # keep a few chunks queued per worker, not all: memory stays flat for 10^5 items
        for chunk in itertools.islice(todo, n):
            pending.add(pool.submit(_run_chunk, work_fn, [(i, items[i]) for i in chunk]))

    try:
        submit(IN_FLIGHT_PER_WORKER * workers)
        while pending:
            # A timeout, so that this thread runs Python often: a Ctrl-C the kernel delivered to
            # the executor's thread is acted on here within half a second, not at the next result.
            finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            pending.difference_update(finished)
            submit(len(finished))
            for future in finished:
                for i, result in future.result():  # re-raises the work function's exception
                    record(i, result)
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _stop_pool(pool) -> None:
    """Cancel what has not started and end the workers now: a chunk of slow items must not
    keep an interrupted sweep waiting.  (Python 3.14 has ``terminate_workers``; before it,
    the executor's process table is the only handle on its workers.)"""
    pool.shutdown(wait=False, cancel_futures=True)
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.terminate()
        except (OSError, AttributeError):
            pass


# ----------------------------------------------------------------------------- Ray


def _run_ray(address: str, items: list[Any], work_fn, record, chunk_size: int | None) -> None:
    ray = _connect(address)
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
        task = ray.remote(num_cpus=1)(_run_chunk)
        todo = iter(_chunks(len(items), cpus, chunk_size))
        pending: list = []

        def submit(n: int) -> None:  # as for the pool: a bounded queue, so the object store holds a few chunks per CPU
            pending.extend(task.remote(work_fn, [(i, items[i]) for i in chunk]) for chunk in itertools.islice(todo, n))

        try:
            submit(IN_FLIGHT_PER_WORKER * cpus)
            while pending:
                ready, rest = ray.wait(pending, num_returns=1)
                pending[:] = rest
                submit(len(ready))
                for ref in ready:
                    for i, result in ray.get(ref):
                        record(i, result)
        except BaseException:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - a task that just finished cannot be cancelled; nothing to do
                    pass
            raise
    finally:
        ray.shutdown()  # disconnects this driver; a cluster started with `ray start` keeps running


def _connect(address: str):
    """``ray.init`` for ``address`` ("auto", "HOST:PORT", "ray://HOST:10001", or "local":
    start a private cluster in this process), shipping this ``protosim`` to the workers."""
    try:
        import ray
    except ImportError:
        raise SweepError(f"--ray {address}: Ray is not installed; pip install 'protosim[sweep]' "
                         "(or drop --ray to use local processes)") from None
    if ray.is_initialized():  # a caller (a test, a notebook) connected already: use that cluster
        return ray
    _check_reachable(address)
    _adopt_auth_token(address)
    package = Path(__file__).resolve().parent.parent
    runtime_env = {"py_modules": [str(package)], "excludes": ["__pycache__", "*.pyc"]}
    try:
        ray.init(address=None if address == "local" else address, runtime_env=runtime_env,
                 logging_level="ERROR", log_to_driver=False, **({"include_dashboard": False} if address == "local" else {}))
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SweepError(f"--ray {address}: cannot connect to a Ray cluster ({first}); start one with "
                         "`ray start --head` and pass its address (HOST:6379), or use --ray local") from None
    return ray


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A ``HOST:PORT`` nobody listens on makes ``ray.init`` retry for minutes, logging as it
    goes: one TCP connection first turns that into an error in seconds."""
    import socket

    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if address in ("auto", "local") or not colon:
        return
    if not port.isdigit():
        raise SweepError(f"--ray {address}: the port {port!r} is not a number; give HOST:PORT, e.g. 10.0.0.1:6379")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise SweepError(f"--ray {address}: nothing answers there ({e.strerror or e}); start the head with "
                         f"`ray start --head --port {port}` (docs/sweep.md), or check the address") from None


def _adopt_auth_token(address: str) -> None:
    """Ray 2.5x clusters started by ``ray start --head`` require a token (``~/.ray/auth_token``,
    or ``RAY_AUTH_TOKEN`` / ``RAY_AUTH_TOKEN_PATH``), but a driver joining one sends it only when
    ``RAY_AUTH_MODE=token``: where a token is at hand and the mode is not chosen, send it."""
    if address == "local" or "RAY_AUTH_MODE" in os.environ:
        return
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH") or (Path.home() / ".ray" / "auth_token").is_file():
        os.environ["RAY_AUTH_MODE"] = "token"
