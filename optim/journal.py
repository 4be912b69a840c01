"""The run journal: an append-only JSON-lines log of a BO run that survives `kill -9` and refuses a second writer.

The first line states the run (space and settings); every later line is one event (``ask``: a configuration
handed out, with the MCMC warm start of the fit behind it; ``tell``: a history record). Both carry wall-clock
stamps (``asked_at`` in the ask and its record, ``told_at`` in the record; absent in journals written before
2026-12-07, which load as before), so a run can be plotted against time (optim.plots). Replaying the lines
gives back the exact state, pending evaluations included. Each append is one ``write`` of one whole line
followed by ``fsync``: a process killed mid-write leaves at most a torn last line (no newline), which the next
open detects, reports and cuts off; earlier lines are never rewritten. The cost of an append depends on the
size of the record, not on the length of the run.

One writer at a time: the journal holds an exclusive ``flock`` while it is open for appending, and a second
process (or a second open in the same process) gets a clear error instead of silently interleaving. The lock
dies with its process, so a killed run never leaves a stale lock behind.
"""

from __future__ import annotations

import json
import os
import warnings

try:
    import fcntl
except ImportError:  # pragma: no cover  (Windows: single-writer rule, documented, not enforced)
    fcntl = None

JOURNAL_FORMAT = 2
KIND = "treezoo-journal"


class JournalLocked(RuntimeError):
    """Another process (or another open BayesOpt in this one) is appending to this journal."""


def _parse_lines(path, data: bytes) -> tuple[list[dict], int, bool]:
    """(records, bytes of whole lines, whether a torn last line was found) of a journal's contents."""
    records, end, torn = [], 0, False
    lines = data.split(b"\n")
    for number, line in enumerate(lines[:-1], start=1):  # every element but the last ended with a newline
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: line {number} of the journal is damaged ({exc}); the lines before it are "
                             "intact: copy them to a new file to recover the run") from None
        if not isinstance(record, dict) or "event" not in record:
            raise ValueError(f"{path}: line {number} is not a journal event")
        records.append(record)
        end += len(line) + 1
    if lines[-1]:  # bytes after the last newline: a write that a crash cut short
        torn = True
    return records, end, torn


def is_journal(path) -> bool:
    """Whether `path` starts like a journal (its first line is a treezoo journal header)."""
    try:
        with open(path, "rb") as f:
            first = f.readline()
    except OSError:
        return False
    try:
        head = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(head, dict) and head.get("kind") == KIND


def read_header(path) -> dict | None:
    """The run settings in a journal's header, or None if `path` is not a journal."""
    if not is_journal(path):
        return None
    with open(path, "rb") as f:
        return json.loads(f.readline())["run"]


def read_journal(path) -> list[dict]:
    """Every whole record of a journal (a torn last line is ignored), for reading without appending."""
    with open(path, "rb") as f:
        records, _, torn = _parse_lines(path, f.read())
    if torn:
        warnings.warn(f"{path}: the last line of the journal is incomplete (a write cut short by a crash); "
                      "it is ignored", stacklevel=2)
    return records


class Journal:
    """An open journal: `records` read at open, `append(record)` durable before it returns, `close()`."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise JournalLocked(
                        f"{self.path}: this journal is open for writing in another process (or another BayesOpt); "
                        "one writer at a time. Wait for it to finish, or read it with BayesOpt.load") from None
            size = os.fstat(self._fd).st_size
            data = os.pread(self._fd, size, 0) if size else b""
            self.records, end, torn = _parse_lines(self.path, data)
            if torn:  # cut the torn tail so that the next append starts on a clean line
                warnings.warn(f"{self.path}: dropped an incomplete last line ({size - end} bytes, a write cut short "
                              "by a crash); every complete record is kept", stacklevel=3)
                os.ftruncate(self._fd, end)
                os.fsync(self._fd)
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, record: dict) -> None:
        """Write one record as one line and fsync it: on return it survives a crash of this process."""
        if self._fd is None:
            raise ValueError(f"{self.path}: the journal is closed")
        line = (json.dumps(record, separators=(",", ":"), allow_nan=True) + "\n").encode()
        view = memoryview(line)
        while view:  # os.write may write less than asked (signals, pipes); a regular file takes it at once
            view = view[os.write(self._fd, view):]
        os.fsync(self._fd)
        self.records.append(record)

    def close(self) -> None:
        """Release the lock and the file (also done when the process ends, however it ends)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        self.close()


def write_journal_atomically(path, records: list[dict]) -> None:
    """Replace `path` by a journal of `records` at once (a migrated run): written beside it, then renamed."""
    tmp = f"{os.fspath(path)}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        for record in records:
            f.write((json.dumps(record, separators=(",", ":")) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json_atomically(path, obj) -> None:
    """Write a JSON file so that a crash leaves the old file or the new one, never a part of either."""
    tmp = f"{os.fspath(path)}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
