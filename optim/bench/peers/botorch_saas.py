"""BoTorch's SAAS fully Bayesian GP (Eriksson & Jankowiak 2021): the standard fully Bayesian baseline for
high-dimensional BO, a half-Cauchy shrinkage prior on inverse lengthscales sampled by NUTS (BoTorch runs
NumPyro's), with log-EI averaged over the posterior samples (qLogExpectedImprovement, q = 1).

The loop, the initial design and the acquisition optimizer are `BoTorchGP`'s; only the model differs.
NUTS runs `warmup` steps and keeps every `thinning`-th of `num_samples` (BoTorch's SAAS tutorial uses
256, 128 and 16). Flat spaces of Real and Integer parameters only, as the model has no categorical
kernel.
"""

from __future__ import annotations

import numpy as np

from optim.bench.peers.botorch_gp import BoTorchGP
from zoo.space import CATEGORICAL


class BoTorchSAAS(BoTorchGP):
    name = "botorch_saas"

    def __init__(self, warmup: int = 256, num_samples: int = 128, thinning: int = 16, **optimizer):
        super().__init__(**optimizer)
        self.warmup, self.num_samples, self.thinning = warmup, num_samples, thinning

    def check_space(self, space) -> None:
        if space.is_conditional or np.any(space.kinds == CATEGORICAL):
            raise ValueError("botorch_saas takes flat spaces of Real and Integer parameters; this space has "
                             "categorical or conditional parameters")

    def acquisition(self, train_x, train_y, cat: np.ndarray):
        from botorch.acquisition.logei import qLogExpectedImprovement
        from botorch.fit import fit_fully_bayesian_model_nuts
        from botorch.models.fully_bayesian import SaasFullyBayesianSingleTaskGP
        from botorch.models.transforms.outcome import Standardize

        model = SaasFullyBayesianSingleTaskGP(train_x, train_y, outcome_transform=Standardize(1))
        fit_fully_bayesian_model_nuts(model, warmup_steps=self.warmup, num_samples=self.num_samples,
                                      thinning=self.thinning, disable_progbar=True)
        return qLogExpectedImprovement(model, best_f=train_y.max())
