"""Objectives for the parallel-evaluation tests, in a module that imports nothing heavy: a spawned worker
process unpickles them by importing this module, so a worker starts in a fraction of a second."""

import os
import time


def bowl(c):
    """A 2-D bowl on the unit square with its minimum 0 at (0.3, 0.7)."""
    return (c["x0"] - 0.3) ** 2 + 2 * (c["x1"] - 0.7) ** 2


def sleepy_bowl(c, seconds=0.05):
    time.sleep(seconds)
    return bowl(c)


def bowl_with_faults(c):
    """The bowl, except that a few regions fail in the ways real objectives fail: an exception, a hang past
    any sensible timeout, and (in a worker process) the process dying outright."""
    if c["x0"] < 0.1:
        raise RuntimeError("simulation diverged")
    if c["x0"] > 0.9:
        time.sleep(3.0)  # longer than the tests' timeout
    if 0.4 < c["x0"] < 0.55 and os.getpid() != int(os.environ.get("TREEZOO_TEST_PARENT", "0")):
        os._exit(13)  # a crash (segfault-like) that takes the worker process down
    return bowl(c)


def recorded_bowl(c, path):
    """The bowl, after appending x0 to `path` durably: the record of evaluations that returned."""
    value = sleepy_bowl(c, seconds=0.01)
    with open(path, "a") as f:
        f.write(f"{c['x0']!r}\n")
        f.flush()
        os.fsync(f.fileno())
    return value


def pid_then_sleep(c, path):
    """Append this worker's process id to `path`, then sleep a minute: an evaluation still running when its
    driver is killed."""
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(60.0)
    return bowl(c)
