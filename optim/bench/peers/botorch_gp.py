"""A flat BoTorch GP with log-EI: MixedSingleTaskGP on the encoded space, optimized per path.

Categorical columns (decisions included) are labels shifted by one so that 'inactive' is a category of
its own; the acquisition is maximized with `optimize_acqf_mixed` over one fixed-feature set per
root-to-leaf path (decisions fixed, inactive columns at their fill), active categoricals enumerated.
Where that enumeration would pass `max_enumerated` sets on a flat space (PestControl has 5^25), it is
maximized instead by BoTorch's `optimize_acqf_mixed_alternating` (local search on the categorical and
integer columns alternating with L-BFGS on the real ones), the optimizer 003's GP baseline uses on such
spaces (003 App. D.1).
"""

from __future__ import annotations

import itertools

import numpy as np

from optim.bench.peers.base import Peer, Stopwatch, evaluate, record
from zoo.space import CATEGORICAL, INTEGER


class BoTorchGP(Peer):
    name = "botorch_gp"
    requires = ("botorch", "torch")
    install_hint = 'pip install torch==2.13.0 botorch  (a CPU build of torch)'

    def __init__(self, raw_samples: int = 512, num_restarts: int = 8, max_enumerated: int = 256):
        self.raw_samples, self.num_restarts, self.max_enumerated = raw_samples, num_restarts, max_enumerated

    @staticmethod
    def _free_categoricals(space, path) -> list[int]:
        """The categorical columns active on `path` that are not its decisions: those enumerated per path."""
        decisions = {space.col[name] for name in path.decisions}
        return [j for j in np.flatnonzero(path.active & (space.kinds == CATEGORICAL)) if j not in decisions]

    def _enumeration_size(self, space) -> int:
        """How many fixed-feature sets `_fixed_features` would list (counted without listing them)."""
        return sum(int(np.prod([int(space.n_choices[j]) for j in self._free_categoricals(space, path)], dtype=object))
                   for path in space.paths)

    @staticmethod
    def _alternating_dims(space) -> tuple[dict, dict]:
        """(integer columns, categorical columns) -> their allowed values in the peer's encoding."""
        discrete, categorical = {}, {}
        for j, p in enumerate(space.columns):
            if space.kinds[j] == CATEGORICAL:
                categorical[j] = [float(v) for v in range(1, int(space.n_choices[j]) + 1)]
            elif space.kinds[j] == INTEGER:
                span = p.high - p.low
                discrete[j] = [k / span for k in range(span + 1)]
        return discrete, categorical

    def _fixed_features(self, space):
        """One dict {column: value} per path x categorical assignment, in the shifted encoding."""
        out = []
        for path in space.paths:
            row = space.path_row(path)
            cat = space.kinds == CATEGORICAL
            fixed = {j: float(row[j] + 1 if cat[j] else row[j]) for j in range(space.dim) if not path.active[j]}
            for name in path.decisions:
                j = space.col[name]
                fixed[j] = float(row[j] + 1)
            free_cats = self._free_categoricals(space, path)
            for combo in itertools.product(*[range(1, int(space.n_choices[j]) + 1) for j in free_cats]):
                out.append({**fixed, **{j: float(v) for j, v in zip(free_cats, combo)}})
        return out

    def check_space(self, space) -> None:
        """Raise ValueError for a space this peer cannot take (this one takes every space)."""

    def acquisition(self, train_x, train_y, cat: np.ndarray):
        """The fitted model's log-EI on the data (y negated: BoTorch maximizes)."""
        from botorch.acquisition.analytic import LogExpectedImprovement
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import MixedSingleTaskGP, SingleTaskGP
        from botorch.models.transforms.outcome import Standardize
        from gpytorch.mlls import ExactMarginalLogLikelihood

        if len(cat):
            model = MixedSingleTaskGP(train_x, train_y, cat_dims=list(cat), outcome_transform=Standardize(1))
        else:
            model = SingleTaskGP(train_x, train_y, outcome_transform=Standardize(1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return LogExpectedImprovement(model, best_f=train_y.max())

    def run(self, problem, budget, seed, initial):
        import torch
        from botorch.optim import optimize_acqf, optimize_acqf_mixed
        from botorch.optim.optimize_mixed import optimize_acqf_mixed_alternating

        self.check_space(problem.space)
        torch.manual_seed(seed)
        space = problem.space
        cat = np.flatnonzero(space.kinds == CATEGORICAL)
        upper = np.where(space.kinds == CATEGORICAL, space.n_choices, 1.0).astype(float)
        bounds = torch.tensor(np.stack([np.zeros(space.dim), upper]), dtype=torch.float64)
        alternating = (len(space.paths) == 1 and len(cat) > 0
                       and self._enumeration_size(space) > self.max_enumerated)
        fixed = self._fixed_features(space) if len(cat) and not alternating else None
        if alternating:
            discrete, categorical = self._alternating_dims(space)
            # with no real column there is no continuous relaxation to start from: random starts
            start = {} if len(discrete) + len(categorical) < space.dim else {"initialization_strategy": "random"}
        X, Y, history, watch = [], [], [], Stopwatch()
        for i in range(budget):
            if i < len(initial) or len(Y) < 2:
                config = initial[i] if i < len(initial) else space.sample(1, seed=seed * 1000 + i)[0]
                source = "init" if i < len(initial) else "peer:random"
            else:
                train_x = torch.tensor(np.array(X), dtype=torch.float64)
                train_y = -torch.tensor(np.array(Y), dtype=torch.float64)[:, None]  # BoTorch maximizes
                acq = self.acquisition(train_x, train_y, cat)
                if alternating:
                    x, _ = optimize_acqf_mixed_alternating(
                        acq, bounds, discrete_dims=discrete, cat_dims=categorical, q=1,
                        num_restarts=self.num_restarts, raw_samples=self.raw_samples, options=start)
                elif fixed is None:
                    x, _ = optimize_acqf(acq, bounds, q=1, num_restarts=self.num_restarts, raw_samples=self.raw_samples)
                else:
                    x, _ = optimize_acqf_mixed(acq, bounds, q=1, num_restarts=self.num_restarts,
                                               raw_samples=self.raw_samples, fixed_features_list=fixed)
                row = x.detach().numpy()[0].copy()
                row[cat] = np.round(row[cat]) - 1
                config, source = space.decode(space.round_encoded(row[None])[0]), "peer"
            spent = watch.lap()
            value, status, error = evaluate(problem, config)
            watch.lap()
            if status == "ok":
                enc = space.encode(config)
                enc[cat] += 1
                X.append(enc)
                Y.append(value)
            history.append(record(config, value, status, error, source, spent))
        return history
