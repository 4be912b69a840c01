"""Child processes that run one fit's MCMC chains side by side (`sample(..., workers=ChainWorkers(k))`).

Why processes: two chains batched with `vmap` run as one program whose while loops last as long as the slower
chain, and on our 2-core hosts two XLA programs dispatched at once, from threads or onto two XLA CPU devices
(`pmap`, `shard_map`), ran one after the other or slower (BENCHMARKS.md, "Seconds per BO iteration" of the
additive section). A process per block of chains, pinned to its own core, runs them side by side: the warm
refit of `additive` at n = 200, D = 50 and of the GP at n = 100 took 2.5 and 4.3 times less time
(BENCHMARKS.md, "Chains in child processes").

Each worker runs ``inference/_chain_worker.py`` as a script: it reads pickled requests on its stdin and answers on
its stdout (8-byte length, then the pickle), so nothing of the user's ``__main__`` is re-imported, unlike a
spawned multiprocessing pool. A worker keeps its compiled functions (``zoo.compiled``) from one request to
the next, so a BO run compiles in each worker about as often as it would in this process. With
``threads=1`` (the default) each worker's XLA runs on one thread, so k workers use k cores.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import weakref
from pathlib import Path

from inference._chain_worker import read_message, write_frame

#: XLA flags that keep a worker's programs on one thread (appended to the inherited XLA_FLAGS)
ONE_THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
WORKER = Path(__file__).resolve().with_name("_chain_worker.py")
ROOT = WORKER.parents[1]  # the folder holding the inference package


def _stop(procs: list) -> None:
    """Close the workers' stdin (they exit on it) and make sure they are gone."""
    for p in procs:
        try:
            p.stdin.close()
        except OSError:
            pass
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        p.stdout.close()


class ChainWorkers:
    """`n_workers` child processes for MCMC chains, started on first use and stopped by `close` (or when
    garbage-collected, or at exit). `threads`: XLA threads per worker (1: one core each; None: XLA's default).
    `pin`: worker i runs on the i-th core this process may use (round-robin past their number), so a parent
    pinned to one core (e.g. under pytest-xdist) keeps its workers on that core.
    A failure in a worker (its exception, re-raised here with the worker's traceback, or its death) stops all
    of them; the next use starts fresh ones. Calls from several threads take turns."""

    def __init__(self, n_workers: int, threads: int | None = 1, pin: bool = True):
        if not isinstance(n_workers, int) or isinstance(n_workers, bool) or n_workers < 1:
            raise ValueError(f"n_workers must be an integer >= 1, got {n_workers!r}")
        if threads not in (None, 1):
            raise ValueError(f"threads must be 1 (one XLA thread per worker) or None (XLA's default), got {threads!r}")
        self.size = n_workers
        self.threads = threads
        self.pin = bool(pin)
        self._procs: list[subprocess.Popen] = []
        self._finalizer = None
        self._lock = threading.Lock()  # one request round at a time: answers are matched to requests by order

    def _environment(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        if self.threads == 1:
            env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {ONE_THREAD_FLAGS}".strip()
        return env

    def _start(self) -> None:
        env = self._environment()
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        # worker i on the i-th core this process may use, round-robin when there are more workers than cores
        pins = [str(cores[i % len(cores)]) if self.pin and cores else "-" for i in range(self.size)]
        self._procs = [subprocess.Popen([sys.executable, str(WORKER), pin, str(ROOT)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env) for pin in pins]
        self._finalizer = weakref.finalize(self, _stop, self._procs)

    @property
    def running(self) -> bool:
        return bool(self._procs)

    def map(self, task: str, requests: list[dict]) -> list:
        """Run `task` ("sample": `inference.sampler.sample_parts`; "pid", "sleep": for tests) with each
        request's keyword arguments, request i on worker i, all at once; the answers in order. A request that
        does not pickle is refused before anything is sent."""
        if len(requests) > self.size:
            raise ValueError(f"{len(requests)} requests for {self.size} workers")
        try:
            payloads = [pickle.dumps((task, r), protocol=pickle.HIGHEST_PROTOCOL) for r in requests]
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise TypeError("the chain workers are sent the surrogate, data and moves by pickle, and this request "
                            f"does not pickle: {exc}") from exc
        with self._lock:
            answers = self._exchange(payloads)
        for i, (status, value, detail) in enumerate(answers):
            if status == "error":
                self.close()
                if isinstance(value, BaseException):
                    value.add_note(f"raised in chain worker {i}:\n{detail}")
                    raise value
                raise RuntimeError(f"chain worker {i} failed:\n{detail}")
        return [value for _, value, _ in answers]

    def _exchange(self, payloads: list[bytes]) -> list:
        """Send payload i to worker i and read every answer (starting the workers if need be)."""
        if not self._procs:
            self._start()
        answers = []
        try:
            for i, (proc, data) in enumerate(zip(self._procs, payloads)):
                try:
                    write_frame(proc.stdin, data)
                except OSError:  # a broken pipe: the worker is gone
                    raise RuntimeError(f"chain worker {i} has exited (code {proc.wait()}); "
                                       "its error output is above") from None
            for i, proc in enumerate(self._procs[:len(payloads)]):
                try:
                    answers.append(read_message(proc.stdout))
                except EOFError:
                    raise RuntimeError(f"chain worker {i} exited (code {proc.wait()}) before answering; "
                                       "its error output is above") from None
        except BaseException:  # a worker's answer left unread would be taken for the next request's
            self.close()
            raise
        return answers

    def close(self) -> None:
        """Stop the workers (they start again on the next use)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"ChainWorkers({self.size}, threads={self.threads}, running={self.running})"
