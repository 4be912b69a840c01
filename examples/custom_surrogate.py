"""Write a new surrogate prior as a NumPyro model and run it through the same sampler and BO loop.

`RelevanceGP` is an RBF GP with a binary relevance indicator per input dimension (a spike-and-slab
prior on which dimensions matter): ``relevant ~ Bernoulli(0.5)^d`` is a *discrete* site, updated by
the library's single-bit-flip Metropolis–Hastings move inside the same sweep as NUTS for the
continuous hyperparameters. It implements the contract of `zoo.base` (through `zoo.ExactGP`, which
supplies the likelihood, predictions and noise policy); nothing in `zoo`, `inference` or `optim`
changes for it.
Run: python examples/custom_surrogate.py
"""

import os

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from optim import minimize
from optim.bench import get_problem
from zoo.gp import ExactGP
from zoo.kernels import rbf
from zoo.space import CATEGORICAL

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"


class RelevanceGP(ExactGP):
    """RBF GP whose kernel only sees the dimensions a discrete indicator marks as relevant.

    `ExactGP` supplies the likelihood y ~ N(mean, K + noise I) through the Cholesky factor and the
    per-sample predictions; a subclass writes the priors (NumPyro sample sites) and the kernel.
    """

    name = "relevance_gp"
    discrete_sites = {"relevant": "binary"}  # site -> move family (inference.moves.MOVES)

    def __init__(self, space, inclusion=0.5):
        super().__init__(space)
        if (space.kinds == CATEGORICAL).any():
            raise ValueError("this example handles numeric parameters only")
        self.inclusion = inclusion

    def config_key(self):  # equal settings share compiled code
        return (self.inclusion,)

    def sample_hyperparameters(self):
        d = self.space.dim
        return {
            "relevant": numpyro.sample("relevant", dist.Bernoulli(self.inclusion).expand([d]).to_event(1)),
            "lengthscale": numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([d]).to_event(1)),
            "outputscale": numpyro.sample("outputscale", dist.LogNormal(0.0, 1.0)),
            "noise": numpyro.sample("noise", dist.LogNormal(-4.0, 1.0)),
            "mean": numpyro.sample("mean", dist.Normal(0.0, 1.0)),
        }

    def init_discrete(self, key, data):
        return {"relevant": jnp.ones(self.space.dim, dtype=jnp.int32)}

    def kernel(self, X1, X2, params):
        w = params["relevant"]  # an irrelevant dimension contributes no distance
        return params["outputscale"] * rbf(X1 * w, X2 * w, params["lengthscale"])

    def kernel_diag(self, X, params):
        return params["outputscale"] * jnp.ones(X.shape[0])

    def arviz_dims(self):  # ArviZ names each indicator and lengthscale after its parameter
        return {"relevant": ["dim"], "lengthscale": ["dim"]}, {"dim": list(self.space.names)}


if __name__ == "__main__":
    problem = get_problem("hartmann6_aug20") if not FAST else get_problem("styblinski_tang2")
    surrogate = RelevanceGP(problem.space)
    result = minimize(problem, problem.space, surrogate=surrogate, budget=6 if FAST else 40, seed=0,
                      n_init=5 if FAST else 10, progress=not FAST)
    print(result)
    idata = result.posterior.to_arviz()
    inclusion = idata.posterior["relevant"].mean(("chain", "draw"))
    print("posterior inclusion probability per dimension:",
          dict(zip(inclusion.coords["dim"].values.tolist(), inclusion.values.round(2).tolist())))
    print("relevant-move acceptance rate:", float(idata.sample_stats["accept_relevant"].mean()))
