"""The Surrogate contract shared by every model in the zoo.

A surrogate binds a NumPyro model (priors on structure and hyperparameters, observed site ``y``)
to a search space, names its discrete sites and the family of moves that update them, and gives
per-posterior-sample predictions. Inference and the BO loop only talk to this contract, so a new
surrogate needs no change in ``inference`` or ``optim``.
"""

from __future__ import annotations

import copy
from typing import Mapping

import jax
import jax.numpy as jnp

from zoo.data import Data
from zoo.space import Space

#: LogNormal(loc, scale) prior on the noise variance (standardized y) for a deterministic objective:
#: median e^-12 = 6e-6, a noise sd of 0.25% of y's sd, on top of the models' fixed floor of 1e-6.
NOISELESS_PRIOR = (-12.0, 1.0)


class Surrogate:
    """Base class: subclass it and write `model`, `prepare` and `predict_prepared`."""

    #: registered name, e.g. "gp", "bark"
    name: str = "surrogate"
    #: which acquisition optimizer suits the model: "flat" (multi-start L-BFGS-B per path),
    #: later "forest" (MIP), "tree" (per-vertex search), "additive" (message passing), "partition"
    structure: str = "flat"
    #: acquisition used when the user names none (the one the model's optimizer is built for)
    default_acquisition: str = "logei"
    #: discrete sample sites -> move family (a key of inference.moves.MOVES) that updates them
    discrete_sites: Mapping[str, str] = {}

    #: padded-row buckets (see zoo.data.bucket_size): each new bucket compiles the sampler once more
    bucket_steps: tuple = (1.0,)

    def __init__(self, space: Space):
        if not isinstance(space, Space):
            raise TypeError(f"a surrogate needs a zoo.Space, got {type(space).__name__}")
        self.space = space

    # --- the generative model -------------------------------------------------------------
    def model(self, data: Data) -> None:
        """NumPyro model: priors as `numpyro.sample` sites, observed site `y` (standardized)."""
        raise NotImplementedError

    def init_discrete(self, key, data: Data) -> dict:
        """Initial values of the discrete sites for a fresh chain (jittable)."""
        return {}

    # --- predictions ----------------------------------------------------------------------
    def prepare(self, samples: dict, data: Data):
        """Per-sample quantities reused by every prediction (e.g. Cholesky solves); leading dim S."""
        return (samples, data)

    def predict_prepared(self, cache, Xq) -> tuple[jax.Array, jax.Array]:
        """Latent mean and variance [S, N] at encoded rows Xq, in the user's units."""
        raise NotImplementedError

    def predict(self, samples: dict, data: Data, Xq):
        """Per-sample latent mean and variance [S, N] at encoded rows Xq (user units)."""
        return self.predict_prepared(self.prepare(samples, data), jnp.asarray(Xq))

    def log_likelihood(self, sample: dict, data: Data) -> jax.Array:
        """Pointwise log-likelihood [n_pad] of one posterior sample (0 on padded rows)."""
        raise NotImplementedError

    def noiseless(self) -> "Surrogate":
        """A copy for a deterministic objective: its noise prior becomes NOISELESS_PRIOR.

        Models with a LogNormal noise prior (attribute ``noise_prior``) support it; others refuse,
        so that a user's declaration that y is exact is never silently ignored.
        """
        if not isinstance(getattr(self, "noise_prior", None), tuple):
            raise ValueError(f"the {self.name!r} surrogate has no noiseless form (deterministic=True needs a model "
                             "with a LogNormal noise prior: gp, addtree, addtree_shared, jenatton, independent)")
        model = copy.copy(self)
        model.noise_prior = NOISELESS_PRIOR
        return model

    # --- identity: equal configurations share compiled (jitted) code -----------------------
    def config_key(self) -> tuple:
        """Everything that defines the model besides the space; override to share compilations."""
        return (id(self),)

    def __eq__(self, other):
        return (type(self) is type(other) and self.space.key == other.space.key
                and self.config_key() == other.config_key())

    def __hash__(self):
        return hash((type(self).__name__, self.space.key, self.config_key()))

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r}, dim={self.space.dim})"


def on_route(X, cols, idx):
    """[N] 1.0 where a row's decision columns `cols` hold the category indices `idx` (the row's path
    passes through the node those decisions lead to), else 0.0; an empty route (the root) is all ones."""
    if len(cols):
        return jnp.all(X[:, cols] == idx, axis=1).astype(X.dtype)
    return jnp.ones(X.shape[0], X.dtype)
