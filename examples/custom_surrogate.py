"""Write a new surrogate prior as a NumPyro model and run it through the same sampler and BO loop.

`RelevanceGP` is an RBF GP with a binary relevance indicator per input dimension (a spike-and-slab
prior on which dimensions matter): ``relevant ~ Bernoulli(0.5)^d`` is a *discrete* site, updated by
the library's single-bit-flip Metropolis–Hastings move inside the same sweep as NUTS for the
continuous hyperparameters. Nothing in `inference` or `optim` changes for it.
Run: python examples/custom_surrogate.py
"""

import os

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from optim import get_problem, minimize
from zoo import Surrogate, linalg
from zoo.kernels import rbf
from zoo.space import CATEGORICAL

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"


class RelevanceGP(Surrogate):
    """GP whose kernel only sees the dimensions a discrete indicator marks as relevant."""

    name = "relevance_gp"
    discrete_sites = {"relevant": "binary"}  # site -> move family (inference.moves.MOVES)

    def __init__(self, space, inclusion=0.5):
        super().__init__(space)
        if (space.kinds == CATEGORICAL).any():
            raise ValueError("this example handles numeric parameters only")
        self.inclusion = inclusion

    def config_key(self):
        return (self.inclusion,)

    def model(self, data):
        d = self.space.dim
        relevant = numpyro.sample("relevant", dist.Bernoulli(self.inclusion).expand([d]).to_event(1))
        lengthscale = numpyro.sample("lengthscale", dist.LogNormal(0.0, 1.0).expand([d]).to_event(1))
        outputscale = numpyro.sample("outputscale", dist.LogNormal(0.0, 1.0))
        noise = numpyro.sample("noise", dist.LogNormal(-4.0, 1.0))
        L = self._cholesky(data, relevant, lengthscale, outputscale, noise)
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros_like(data.y), scale_tril=L, validate_args=False), obs=data.y)

    def init_discrete(self, key, data):
        return {"relevant": jnp.ones(self.space.dim, dtype=jnp.int32)}

    def _k(self, X1, X2, s):
        w = s["relevant"]
        return s["outputscale"] * rbf(X1 * w, X2 * w, s["lengthscale"])

    def _cholesky(self, data, relevant, lengthscale, outputscale, noise):
        s = {"relevant": relevant, "lengthscale": lengthscale, "outputscale": outputscale}
        K = self._k(data.X, data.X, s) + (noise + 1e-6) * jnp.eye(data.X.shape[0])
        return linalg.padded_cholesky(K, data.mask)

    def prepare(self, samples, data):
        def one(s):
            L = self._cholesky(data, s["relevant"], s["lengthscale"], s["outputscale"], s["noise"])
            alpha, Kinv = linalg.precision_terms(L, data.y)
            return {"alpha": alpha, "Kinv": Kinv}
        return samples, data, jax.vmap(one)(samples)

    def predict_prepared(self, cache, Xq):
        samples, data, pre = cache

        def one(s, p):
            Kxq = self._k(data.X, Xq, s) * data.mask[:, None]
            return linalg.latent_posterior(p["alpha"], p["Kinv"], Kxq, s["outputscale"] * jnp.ones(Xq.shape[0]))
        mean, var = jax.vmap(one)(samples, pre)
        return data.y_mean + data.y_std * mean, data.y_std**2 * var


if __name__ == "__main__":
    problem = get_problem("hartmann6_aug20") if not FAST else get_problem("styblinski_tang2")
    surrogate = RelevanceGP(problem.space)
    result = minimize(problem, problem.space, surrogate=surrogate, budget=8 if FAST else 40, seed=0,
                      n_init=5 if FAST else 10, progress=not FAST)
    print(result)
    idata = result.posterior.to_arviz()
    inclusion = idata.posterior["relevant"].mean(("chain", "draw")).values
    print("posterior inclusion probability per dimension:", inclusion.round(2))
    print("relevant-move acceptance rate:", float(idata.sample_stats["accept_relevant"].mean()))
