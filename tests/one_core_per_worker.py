"""Under pytest-xdist, keep each worker process on a core of its own, before JAX starts its threads.

The suite runs one xdist worker per core (pyproject's addopts). Left to the OS scheduler, two JAX processes on two
cores thrash: a test that takes 17 s alone took 620 s with a second copy of itself running beside it (2026-11-28,
AMD EPYC, 2 cores); with each copy pinned to its own core (`taskset`), 17 s each. XLA's one-thread flags did not
help (one process with them still kept 1.5 cores busy). Threads inherit the affinity of the thread that starts them,
so pinning the main thread before JAX is imported pins all of JAX's.
"""

import os


def apply() -> None:
    """Pin worker gwN to the N-th core this process may run on (modulo their number); outside xdist, nothing."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[int(worker[2:]) % len(cores)]})


apply()
