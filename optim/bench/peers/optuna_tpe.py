"""Optuna's TPE sampler; conditional spaces through define-by-run suggestions along the chosen path."""

from __future__ import annotations

from optim.bench.peers.base import Peer, Stopwatch, evaluate, record
from zoo.space import CATEGORICAL, INTEGER


class OptunaTPE(Peer):
    name = "optuna_tpe"
    requires = ("optuna",)

    def run(self, problem, budget, seed, initial):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=len(initial))
        study = optuna.create_study(sampler=sampler, direction="minimize")
        for config in initial:
            study.enqueue_trial(config)
        history, watch = [], Stopwatch()
        for i in range(budget):
            trial = study.ask()

            def param(p, trial=trial):
                if p.kind == CATEGORICAL:
                    return trial.suggest_categorical(p.name, list(p.choices))
                if p.kind == INTEGER:
                    return trial.suggest_int(p.name, p.low, p.high)
                return trial.suggest_float(p.name, p.low, p.high, log=p.log)

            config = problem.space.walk(
                param, lambda node, trial=trial: trial.suggest_categorical(node.choice, list(node.children)))
            spent = watch.lap()
            value, status, error = evaluate(problem, config)
            watch.lap()
            if status == "ok":
                study.tell(trial, value)
            else:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            history.append(record(config, value, status, error, "init" if i < len(initial) else "peer", spent))
        return history  # (tell time counts toward the next suggestion)
