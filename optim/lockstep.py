"""Independent L-BFGS-B runs from many starts, driven in lockstep so that each round of their requests is one
batched acquisition call.

One L-BFGS-B problem over all starts (the sum of a separable acquisition) shares one line search and one
curvature memory among them: the starts that converge early wait for the slowest, and the stopping rule reads
the relative change of the sum. On captured acquisitions of the conditional family (BENCHMARKS.md,
"Independent L-BFGS-B starts in lockstep"), that joint problem made two to four times the batched calls of
independent runs, for the same best value on each path. Here every start is its own `scipy.optimize.minimize`
run, each in its own thread; a run asking for f and its gradient waits until every run still going has asked, and
then one call of the batched function answers them all. A run's iterates depend only on its own row's values, so the result does not depend
on how the threads interleave (the batched function must give a row the same value whatever the other rows
hold, as a per-row acquisition does).
"""

from __future__ import annotations

import threading

import numpy as np
from scipy.optimize import minimize as scipy_minimize


class _Rounds:
    """The meeting point of the runs: collects their requested rows and answers each round with one call."""

    def __init__(self, fun, X: np.ndarray, cols: np.ndarray):
        self.fun, self.X, self.cols = fun, X, cols
        self.running = set(range(len(X)))
        self.asked: set[int] = set()
        self.answers: dict[int, tuple[float, np.ndarray]] = {}
        self.error: BaseException | None = None
        self.calls = 0
        self.lock = threading.Condition()

    def ask(self, i: int, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Row i's value and gradient at x (negated: scipy minimizes), once every running start has asked."""
        with self.lock:
            self.X[i, self.cols] = x
            self.asked.add(i)
            self._answer_if_all_asked()
            while i not in self.answers and self.error is None:
                self.lock.wait()
            if self.error is not None:
                raise _Abandoned
            return self.answers.pop(i)

    def done(self, i: int) -> None:
        """Row i's run has stopped: the others no longer wait for it."""
        with self.lock:
            self.running.discard(i)
            self._answer_if_all_asked()

    def fail(self, error: BaseException) -> None:
        """Stop every run: a call failed, or the caller was interrupted."""
        with self.lock:
            if self.error is None:
                self.error = error
            self.lock.notify_all()

    def _answer_if_all_asked(self) -> None:
        if not self.asked or self.asked != self.running or self.error is not None:
            return
        try:
            values, grads = self.fun(self.X)
        except BaseException as error:  # surfaced in the caller's thread by lockstep_lbfgsb
            self.error = error
            self.lock.notify_all()
            return
        self.calls += 1
        for i in self.asked:
            self.answers[i] = (-float(values[i]), -np.asarray(grads[i, self.cols], dtype=np.float64))
        self.asked.clear()
        self.lock.notify_all()


class _Abandoned(Exception):
    """Raised inside a run whose round will never be answered."""


def lockstep_lbfgsb(fun, X0: np.ndarray, cols: np.ndarray, maxiter: int) -> tuple[np.ndarray, int]:
    """Maximize each row of `fun` over its columns `cols` in [0, 1], one L-BFGS-B run per row of X0.

    `fun(X)` maps rows [N, D] to (values [N], gradients [N, D]). Returns the rows with their `cols` at each
    run's end (the other columns as in X0) and the number of batched calls made.
    """
    X = np.array(X0, dtype=np.float64)
    if len(cols) == 0 or len(X) == 0:
        return X, 0
    rounds = _Rounds(fun, X.copy(), cols)
    ends: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        try:
            res = scipy_minimize(lambda x: rounds.ask(i, x), X[i, cols], jac=True, method="L-BFGS-B",
                                 bounds=[(0.0, 1.0)] * len(cols), options={"maxiter": maxiter})
            ends[i] = res.x
        except _Abandoned:
            pass
        except BaseException as error:  # noqa: BLE001 (handed to the caller below)
            rounds.fail(error)
        finally:
            rounds.done(i)

    threads = [threading.Thread(target=run, args=(i,), daemon=True, name=f"lbfgsb-start-{i}") for i in range(len(X))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException as error:  # an interrupt in the caller: release the runs before raising it
        rounds.fail(error)
        raise
    if rounds.error is not None:
        raise rounds.error
    for i, x in ends.items():
        X[i, cols] = np.clip(x, 0.0, 1.0)
    return X, rounds.calls
