"""SMAC3's random-forest facade (HPO facade); conditional spaces as ConfigSpace conditions."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from optim.bench.peers.base import Peer, Stopwatch, evaluate, record
from zoo.space import CATEGORICAL, INTEGER


def config_space(space, seed):
    """A ConfigSpace equivalent of a treezoo space: one EqualsCondition per parameter below a decision."""
    from ConfigSpace import (Categorical, ConfigurationSpace, EqualsCondition, Float, Integer)

    cs = ConfigurationSpace(seed=seed)
    conditions = []

    def add(node, parent_decision=None, value=None):
        for p in node.params:
            if p.kind == CATEGORICAL:
                hp = Categorical(p.name, [str(c) for c in p.choices])
            elif p.kind == INTEGER:
                hp = Integer(p.name, (p.low, p.high))
            else:
                hp = Float(p.name, (p.low, p.high), log=p.log)
            cs.add(hp)
            if parent_decision is not None:
                conditions.append(EqualsCondition(hp, parent_decision, value))
        if node.children:
            dec = Categorical(node.choice, [str(v) for v in node.children])
            cs.add(dec)
            if parent_decision is not None:
                conditions.append(EqualsCondition(dec, parent_decision, value))
            for v, child in node.children.items():
                add(child, dec, str(v))
    add(space.root)
    cs.add(conditions)
    return cs


def _to_treezoo(values: dict, space) -> dict:
    out = {}
    for k, v in values.items():
        p = space.columns[space.col[k]]
        out[k] = next(c for c in p.choices if str(c) == v) if p.kind == CATEGORICAL else v
    return space.validate(out)


class SMACRandomForest(Peer):
    name = "smac_rf"
    requires = ("smac", "ConfigSpace")

    def run(self, problem, budget, seed, initial):
        with tempfile.TemporaryDirectory(prefix="treezoo-smac-") as out:
            return self._run(problem, budget, seed, initial, Path(out))

    def _run(self, problem, budget, seed, initial, out):
        from ConfigSpace import Configuration
        from smac import HyperparameterOptimizationFacade as HPO, Scenario
        from smac.runhistory.dataclasses import TrialValue

        space = problem.space
        cs = config_space(space, seed)
        scenario = Scenario(cs, deterministic=True, n_trials=budget, seed=seed, output_directory=out)
        init = [Configuration(cs, values={k: (str(v) if space.columns[space.col[k]].kind == CATEGORICAL else v)
                                          for k, v in c.items()}) for c in initial]
        design = HPO.get_initial_design(scenario, n_configs=0, additional_configs=init)
        smac = HPO(scenario, lambda config, seed=0: 0.0, initial_design=design, overwrite=True, logging_level=40)
        history, watch = [], Stopwatch()
        for i in range(budget):
            info = smac.ask()
            config = _to_treezoo(dict(info.config), space)
            spent = watch.lap()
            value, status, error = evaluate(problem, config)
            watch.lap()
            smac.tell(info, TrialValue(cost=value if status == "ok" else math.inf))
            history.append(record(config, value, status, error, "init" if i < len(initial) else "peer", spent))
        return history
