"""Asynchronous evaluation: keep every worker of a `concurrent.futures.Executor` busy with proposals of one run.

A free worker is fed at once (`BayesOpt.ask` for as many configurations as there are free workers, with the
ones in flight entering as fantasies), and the model is refitted as each result arrives, not in lock-step
batches. Any `Executor` works (a thread or process pool, `dask.distributed.Client.get_executor()`, an MPI
pool); a `dask.distributed.Client` is accepted as it is. With one worker and no executor, evaluations run in
the calling thread, in order: the run is the sequential one, bit for bit.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import pickle
import time
import warnings
from concurrent.futures.process import BrokenProcessPool
from typing import Callable


class SerialExecutor(cf.Executor):
    """Runs each call at submission, in the calling thread: the sequential loop, as an Executor."""

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the objective's failure is the future's outcome, as in a pool
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            future.set_exception(exc)
        return future


# What a worker process runs first, through the builtin `exec` (so that it imports nothing of treezoo for
# it): a daemon thread that ends the worker once the process that spawned it is gone.
_EXIT_WITH_PARENT = """
import os, threading, time
def _watch(parent):
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
threading.Thread(target=_watch, args=(parent,), name="exit-with-parent", daemon=True).start()
"""


def tied_to_this_process() -> dict:
    """`ProcessPoolExecutor` keyword arguments that end each worker once this process is gone (killed, even
    with -9): otherwise a worker runs its evaluation on for nobody, holding a core or a licence for as long
    as the objective takes, and a resumed run evaluates the same point again beside it."""
    return {"initializer": exec, "initargs": (_EXIT_WITH_PARENT, {"parent": os.getpid()})}


class OwnProcessPool:
    """The default when n_workers > 1: one single-process pool per worker, spawned (JAX in the parent makes
    fork unsafe). Keeping the workers apart means that a worker that dies (a segfault in the objective)
    fails its own evaluation only, and that a timed-out evaluation can be stopped: its process is killed
    and the worker replaced, which no shared pool allows. A worker ends when the driver's process does."""

    def __init__(self, n_workers: int):
        self._context = multiprocessing.get_context("spawn")
        self._pools: list[cf.ProcessPoolExecutor | None] = [None] * n_workers
        self._process: list = [None] * n_workers  # each worker's process, once started
        self._running: dict[cf.Future, int] = {}  # future -> its worker

    def submit(self, fn, *args) -> cf.Future:
        self._running = {f: i for f, i in self._running.items() if not f.done()}
        busy = set(self._running.values())
        i = next(i for i in range(len(self._pools)) if i not in busy)  # the driver never overfills
        for _ in range(2):
            if self._pools[i] is None:
                self._pools[i] = cf.ProcessPoolExecutor(1, mp_context=self._context, **tied_to_this_process())
            before = {p.pid for p in multiprocessing.active_children()}
            try:
                future = self._pools[i].submit(fn, *args)
                break
            except BrokenProcessPool:  # its process died with the previous evaluation: a new one
                self._retire(i)
        started = [p for p in multiprocessing.active_children() if p.pid not in before]
        if started:  # a single-process pool starts its process at its first submission
            self._process[i] = started[0]
        self._running[future] = i
        return future

    def stop(self, future: cf.Future) -> None:
        """Kill the process running `future` (a timed-out evaluation); the worker is replaced at next use."""
        i = self._running.pop(future, None)
        if i is not None:
            self._retire(i)

    def _retire(self, i: int) -> None:
        pool, process = self._pools[i], self._process[i]
        self._pools[i] = self._process[i] = None
        if process is not None and process.is_alive():
            process.kill()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        for i, pool in enumerate(self._pools):
            if pool is not None and any(j == i and not f.done() for f, j in self._running.items()):
                self._retire(i)  # still running (the driver was interrupted): stop it
            elif pool is not None:
                pool.shutdown(wait=True)


def check_picklable(objective) -> None:
    """Refuse, before any evaluation, an objective that the default process pool cannot send to a worker."""
    try:
        pickle.dumps(objective)
    except Exception as exc:
        raise TypeError(f"with n_workers > 1 (or a timeout) the objective runs in worker processes and must pickle, "
                        f"and this one does not ({type(exc).__name__}: {exc}): define it at module level (not a "
                        "lambda or a local function), or pass executor=concurrent.futures.ThreadPoolExecutor(...)") from None


def as_executor(executor, n_workers: int | None):
    """(executor, number of workers) from what the user passed: an Executor, a dask Client, or None."""
    if executor is None:
        n = 1 if n_workers is None else n_workers
        return (SerialExecutor() if n == 1 else None), n
    if isinstance(executor, cf.Executor):
        return executor, 1 if n_workers is None else n_workers
    try:
        from distributed import Client
    except ImportError:
        Client = None
    if Client is not None and isinstance(executor, Client):
        n = sum(executor.nthreads().values()) if n_workers is None else n_workers
        return executor.get_executor(), n
    raise TypeError("executor must be a concurrent.futures.Executor or a dask.distributed.Client, "
                    f"got {type(executor).__name__}")


def evaluate_concurrently(opt, objective: Callable, budget: int, executor, n_workers: int,
                          timeout: float | None, after_tell: Callable[[int], None],
                          propose_ahead: bool = False) -> None:
    """Run `opt` until its history holds `budget` evaluations, with up to `n_workers` in flight.

    Configurations pending in `opt` (in flight when an earlier driver stopped) are evaluated first. A call
    that raises, or whose result is not a real number, is told as failed; one still running `timeout`
    seconds after submission is told as failed ("timeout"): the default pool kills its process, another
    executor is asked to cancel it, and if it cannot (a running thread), the call keeps its worker until it
    returns and its result is ignored. `after_tell(number running)` follows every tell.

    `propose_ahead`: while every worker is busy, the driver fits and asks for the next configuration, so
    that a worker that frees up is given it at once instead of waiting for a fit. The price is one more
    pending point behind each proposal: it is made before the result that frees its worker is known."""
    own = OwnProcessPool(n_workers) if executor is None else None
    submit = own.submit if own is not None else executor.submit
    running: dict[cf.Future, tuple[dict, float]] = {}
    stuck: set[cf.Future] = set()  # timed out, still holding a worker
    ready = list(opt.pending)  # asked, not yet submitted: in flight when an earlier driver stopped, or ahead
    try:
        while len(opt.history) < budget:
            stuck = {f for f in stuck if not f.done()}
            free = min(n_workers - len(running) - len(stuck), budget - len(opt.history) - len(running))
            if free > 0:
                batch, ready = ready[:free], ready[free:]
                if len(batch) < free:
                    batch += opt.ask(free - len(batch))
                for config in batch:
                    running[submit(objective, dict(config))] = (config, time.monotonic())
            if (propose_ahead and not ready and running and not any(f.done() for f in running)
                    and len(opt.history) + len(running) < budget):
                ready = opt.ask(1)  # every worker busy: the next proposal, made while they run
            wait_for = None
            if timeout is not None and running:
                wait_for = max(0.0, min(t for _, t in running.values()) + timeout - time.monotonic())
            cf.wait(set(running) | stuck, timeout=wait_for, return_when=cf.FIRST_COMPLETED)
            for future in [f for f in running if f.done()]:
                config, _ = running.pop(future)
                tell_outcome(opt, config, future)
                after_tell(len(running))
            if timeout is not None:
                now = time.monotonic()
                for future, (config, started) in list(running.items()):
                    if now - started >= timeout:
                        del running[future]
                        if own is not None:
                            own.stop(future)
                        elif not future.cancel():
                            stuck.add(future)
                        opt.tell(config, error=f"timeout: no result {timeout:g} s after submission")
                        warnings.warn(f"an evaluation timed out after {timeout:g} s; recorded as failed", stacklevel=3)
                        after_tell(len(running))
    finally:
        for future in running:
            future.cancel()
        if own is not None:
            own.shutdown()


def tell_outcome(opt, config: dict, future: cf.Future) -> None:
    """Tell the result of a finished call: its value, or the failure (exception, bad value) as an error."""
    try:
        value = future.result()
    except Exception as exc:  # a failing objective (or a dead worker) is data, not a crash
        opt.tell(config, error=f"{type(exc).__name__}: {exc}")
        warnings.warn(f"objective raised {type(exc).__name__}: {exc}; recorded as failed", stacklevel=4)
        return
    try:
        opt.tell(config, value)
    except (TypeError, ValueError) as exc:  # not a real scalar, or not one the transform takes
        opt.tell(config, error=str(exc))
        warnings.warn(f"{exc}; recorded as failed", stacklevel=4)
