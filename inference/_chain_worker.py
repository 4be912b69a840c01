"""The child process of `inference.ChainWorkers`: answers framed pickled requests on stdin until it closes.

Run as a script, ``python _chain_worker.py CORE ROOT`` (CORE a core number or "-"), so that nothing is imported
before it pins itself to CORE: a thread started by an import (NumPy's BLAS, XLA) keeps the affinity it was born
with, and unpinned threads of two workers cost each worker a factor of about 3 at n = 200, D = 50
(BENCHMARKS.md). ROOT, the folder holding the packages, then replaces the script's folder on ``sys.path``.

Its stdout carries only the answers: the real stdout is kept on a duplicate descriptor and file descriptor 1
is pointed at stderr, so that anything a library prints cannot corrupt a message. Ctrl-C is left to the
parent, which stops the workers.
"""

import os
import pickle
import signal
import struct
import sys
import threading
import time
import traceback

_HEADER = struct.Struct(">Q")


def write_frame(stream, data: bytes) -> None:
    """One framed message: its length as 8 bytes, then the (pickled) bytes."""
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_message(stream):
    """The next framed pickle from `stream`, or EOFError when the other side closed it."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError("the stream ended")
    n = _HEADER.unpack(head)[0]
    data = stream.read(n)
    if len(data) < n:
        raise EOFError("the stream ended inside a message")
    return pickle.loads(data)


def _sample(**request):
    from inference.sampler import sample_parts  # JAX is imported by the first fit, not at start-up
    return sample_parts(**request)


def _answer(tasks: dict, task: str, kwargs: dict) -> bytes:
    """The pickled answer to one request: ("ok", value, None), or ("error", the exception, its traceback), with
    None for an exception that does not pickle; every failure goes back to the parent."""
    try:
        return pickle.dumps(("ok", tasks[task](**kwargs), None), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001
        detail = traceback.format_exc()
        try:
            return pickle.dumps(("error", exc, detail), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001
            return pickle.dumps(("error", None, detail), protocol=pickle.HIGHEST_PROTOCOL)


def _exit_with_parent(parent: int) -> None:
    """End this worker once the process that started it is gone (killed, even with -9), mid-fit or not: a fit
    can take minutes, and nobody would read its answer."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.argv[1] != "-":  # the core this worker runs on, set before any import starts a thread
        os.sched_setaffinity(0, {int(sys.argv[1])})
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="exit-with-parent", daemon=True).start()
    sys.path[0] = sys.argv[2]  # the folder holding the packages, in place of this script's own folder
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    tasks = {"sample": _sample, "pid": os.getpid, "sleep": lambda seconds: time.sleep(seconds)}  # pid, sleep: tests
    requests = sys.stdin.buffer
    while True:
        try:
            task, kwargs = read_message(requests)
        except EOFError:
            return
        try:
            write_frame(answers, _answer(tasks, task, kwargs))
        except BrokenPipeError:  # the parent closed its end: nobody to answer
            return


if __name__ == "__main__":
    main()
