"""Hyperopt's TPE; conditional spaces as nested `hp.choice`, the initial design via `points_to_evaluate`."""

from __future__ import annotations

import math
from functools import partial

from optim.bench.peers.base import Peer, Stopwatch, evaluate, record
from zoo.space import CATEGORICAL, INTEGER

_VALUE = "__treezoo_choice__"


def _hp_space(node, hp):
    out = {}
    for p in node.params:
        if p.kind == CATEGORICAL:
            out[p.name] = hp.choice(p.name, list(p.choices))
        elif p.kind == INTEGER:
            out[p.name] = hp.uniformint(p.name, p.low, p.high)
        elif p.log:
            out[p.name] = hp.loguniform(p.name, math.log(p.low), math.log(p.high))
        else:
            out[p.name] = hp.uniform(p.name, p.low, p.high)
    if node.children:
        out[node.choice] = hp.choice(node.choice, [{_VALUE: v, **_hp_space(child, hp)}
                                                    for v, child in node.children.items()])
    return out


def _flatten(sample, space) -> dict:
    config = {}

    def rec(d):
        for k, v in d.items():
            if isinstance(v, dict):
                config[k] = v[_VALUE]
                rec({kk: vv for kk, vv in v.items() if kk != _VALUE})
            else:
                p = space.columns[space.col[k]]
                config[k] = int(round(v)) if p.kind == INTEGER else v
    rec(sample)
    return space.validate(config)


def _as_point(config, space) -> dict:
    """hyperopt's points_to_evaluate format: choices by index, other values as they are."""
    point = {}
    for k, v in config.items():
        p = space.columns[space.col[k]]
        point[k] = p.index(v) if p.kind == CATEGORICAL else v
    return point


class HyperoptTPE(Peer):
    name = "hyperopt_tpe"
    requires = ("hyperopt",)

    def run(self, problem, budget, seed, initial):
        import numpy as np
        from hyperopt import STATUS_FAIL, STATUS_OK, Trials, fmin, hp, tpe
        from hyperopt.fmin import generate_trial

        space = problem.space
        history, watch = [], Stopwatch()

        def objective(sample):
            spent = watch.lap()
            config = _flatten(sample, space)
            value, status, error = evaluate(problem, config)
            source = "init" if len(history) < len(initial) else "peer"
            history.append(record(config, value, status, error, source, spent))
            watch.lap()
            return {"loss": value, "status": STATUS_OK} if status == "ok" else {"status": STATUS_FAIL}

        # The initial design as queued trials. hyperopt's own points_to_evaluate omits the labels a
        # point leaves inactive, which breaks TPE on nested choices: give them empty value lists.
        trials = Trials()
        docs = []
        for tid, config in enumerate(initial):
            doc = generate_trial(tid, _as_point(config, space))
            for label in space.names:
                doc["misc"]["idxs"].setdefault(label, [])
                doc["misc"]["vals"].setdefault(label, [])
            docs.append(doc)
        trials.insert_trial_docs(docs)
        trials.refresh()
        fmin(objective, _hp_space(space.root, hp), algo=partial(tpe.suggest, n_startup_jobs=len(initial)),
             max_evals=budget, trials=trials, rstate=np.random.default_rng(seed), show_progressbar=False)
        return history
