"""The surrogate contract: what every model gives, and the optional capabilities an optimizer may ask for.

Every surrogate subclasses `Surrogate` and writes `model` (the NumPyro generative model), `prepare`
(per-posterior-sample arrays, returned as a `Prepared`), `predict_prepared` and `log_likelihood`. It
names its discrete sites and the move family of each, its preferred acquisition optimizers (by their
registered names, best first), and may override the declared defaults below (sampler settings, ArviZ
naming, summaries of discrete structure).

What a surrogate offers beyond that is declared by subclassing a capability class
(`AdditiveComponents`, `PathPredictions`, `PathLocalPredictions`, `StructureMoves`, `ForestPosterior`,
`CoordinateMoments`, `DependencyForest`, `NoiselessForm`, `OutputWarping`). Optimizers and the loop ask
`offers(surrogate, Capability)`; a surrogate whose capability depends on how it was built (Add-Tree with
interaction terms is not additive) says so in `Surrogate.offers`. Nothing is sniffed with `getattr`; nothing
outside a model reads its prepared arrays except through a capability's declared method.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo.compiled import compiled
from zoo.data import Data
from zoo.space import Space

#: LogNormal(loc, scale) prior on the noise variance (standardized y) for a deterministic objective:
#: median e^-12 = 6e-6, a noise sd of 0.25% of y's sd, on top of the models' fixed floor of 1e-6.
NOISELESS_PRIOR = (-12.0, 1.0)


class Prepared(NamedTuple):
    """What `Surrogate.prepare` returns: the posterior draws, the data and the model's own per-sample
    arrays (a NamedTuple with leading dim S, e.g. Cholesky solves); read only by the model itself."""

    samples: dict
    data: Data
    arrays: Any


class Surrogate:
    """Base class: subclass it and write `model`, `prepare`, `predict_prepared` and `log_likelihood`."""

    #: registered name, e.g. "gp", "bark"
    name: str = "surrogate"
    #: acquisition used when the user names none (the one the model's optimizer is built for)
    default_acquisition: str = "logei"
    #: registered acquisition optimizers (optim.registry) in order of preference; the loop takes the
    #: first whose required capabilities and acquisitions this surrogate and the user's acquisition meet
    preferred_optimizers: tuple[str, ...] = ("lbfgs",)
    #: discrete sample sites -> move family (a key of inference.moves.MOVES) that updates them
    discrete_sites: Mapping[str, str] = {}
    #: SamplerSettings fields this model wants by default in the BO loop (e.g. BARK's long burn-in)
    sampler_defaults: Mapping[str, Any] = {}
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
    def prepare(self, samples: dict, data: Data) -> Prepared:
        """Per-sample quantities reused by every prediction (e.g. Cholesky solves); leading dim S."""
        return Prepared(samples, data, ())

    def predict_prepared(self, prepared: Prepared, Xq) -> tuple[jax.Array, jax.Array]:
        """Latent mean and variance [S, N] at encoded rows Xq, in the user's units."""
        raise NotImplementedError

    def predict(self, samples: dict, data: Data, Xq):
        """Per-sample latent mean and variance [S, N] at encoded rows Xq (user units); compiled once per
        surrogate and shape (run op by op, a prediction compiles each primitive on its own)."""
        return compiled("surrogate_predict", _predict_fn, self)(samples, data, jnp.asarray(Xq))

    def log_likelihood(self, sample: dict, data: Data, loo: bool = False) -> jax.Array:
        """Pointwise log-likelihood [n_pad] of one posterior sample, user units (0 on padded rows): the
        chain-rule terms log p(y_i | y_<i, theta), which sum to the joint, or with `loo` the leave-one-out
        terms log p(y_i | y_-i, theta) that PSIS-LOO (ArviZ's loo / compare) needs."""
        raise NotImplementedError

    # --- the generative direction: simulation-based calibration ------------------------------
    #: whether `draw_joint` can run inside `jax.jit`: False where a site's exact prior sampler runs in
    #: NumPy (the additive model's forest prior), and `simulate` then runs it eagerly, op by op
    prior_is_traceable: bool = True

    def simulate(self, key, data: Data) -> tuple[dict, jax.Array]:
        """One draw of every site from the prior and of standardized y [n_pad] given it (0 on padded rows):
        the joint density the sampler targets, run forwards (inference.calibrate checks the sampler
        against it). Runs `draw_joint` compiled once per (surrogate, data bucket) where the prior allows."""
        if not self.prior_is_traceable:
            return self.draw_joint(key, data)
        return compiled("simulate", _simulate_fn, self)(key, data)

    def draw_joint(self, key, data: Data) -> tuple[dict, jax.Array]:
        """`simulate`'s draw, traceable where `prior_is_traceable`. Default: the NumPyro model run forwards,
        y drawn at its observed site ``y``; a model that scores y through factors overrides this."""
        from numpyro import handlers

        k_sites, k_y = jax.random.split(key)
        trace = handlers.trace(handlers.seed(self.model, k_sites)).get_trace(data)
        if "y" not in trace or not trace["y"].get("is_observed"):
            raise NotImplementedError(f"{self.name!r} has no observed site 'y' to simulate from: it must "
                                      "override Surrogate.draw_joint to be calibrated")
        sample = {name: site["value"] for name, site in trace.items()
                  if site["type"] == "deterministic" or (site["type"] == "sample" and not site["is_observed"])}
        return sample, jnp.where(data.mask, trace["y"]["fn"].sample(k_y), 0.0)

    # --- ArviZ naming and summaries (declared defaults) -------------------------------------
    def arviz_dims(self) -> tuple[dict, dict]:
        """(dims, coords) naming the axes of the sites, e.g. lengthscales after their parameters."""
        return {}, {}

    def summarize_discrete(self, samples: dict) -> dict:
        """Arrays [C, S, ...] that stand for the discrete sites in ArviZ (default: the raw values)."""
        return {k: samples[k] for k in self.discrete_sites}

    def summarize_moves(self, move_stats: dict) -> dict:
        """sample_stats entries [C, S] from each discrete site's move statistics (default: mean acceptance)."""
        return {f"accept_{site}": np.asarray(acc).reshape(np.shape(acc)[:2] + (-1,)).mean(-1)
                for site, acc in move_stats.items()}

    # --- capabilities ---------------------------------------------------------------------
    def offers(self, capability: type) -> bool:
        """Whether this instance serves a capability its class declares (override where it depends on
        construction options); `offers(surrogate, capability)` also checks the class declares it."""
        return True

    # --- identity: equal configurations share compiled (jitted) code -----------------------
    def config_key(self) -> tuple:
        """Everything that defines the model besides the space: its `options` where it declares them (equal
        options share compiled code), else its identity; override where more than the options defines it."""
        options = self.options()
        if not options:
            return (id(self),)
        return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(options.items()))

    def options(self) -> dict:
        """The keyword arguments (JSON values) that rebuild this model on its space, `type(self)(space,
        **options)`: what a run's journal records so that it resumes with the same model. Default: none."""
        return {}

    #: options added to `options` after journals recorded the model, each with the value that runs recorded
    #: without it used (an earlier default), so that such a journal resumes with the model it ran
    options_added: dict = {}

    def __eq__(self, other):
        return (type(self) is type(other) and self.space.key == other.space.key
                and self.config_key() == other.config_key())

    def __hash__(self):
        return hash((type(self).__name__, self.space.key, self.config_key()))

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r}, dim={self.space.dim})"


def offers(surrogate, capability: type) -> bool:
    """Whether `surrogate` declares `capability` (subclasses it) and serves it as built."""
    return isinstance(surrogate, capability) and surrogate.offers(capability)


# ----------------------------------------------------------------------------- capabilities
class Component(NamedTuple):
    """One additive component of a surrogate: the columns it reads and the route that switches it on."""

    name: str
    numeric_cols: np.ndarray  # int64 encoded columns of its real/integer parameters
    categorical_cols: np.ndarray  # int64 encoded columns of its categorical parameters
    route_cols: np.ndarray  # decision columns on the way from the root to it
    route_idx: np.ndarray  # float64 category index each of those decisions must take

    @property
    def columns(self) -> np.ndarray:
        """Every encoded column the component reads."""
        return np.concatenate([self.numeric_cols, self.categorical_cols]).astype(np.int64)


class AdditiveComponents:
    """The latent function is a sum of components, each on a few columns (Add-Tree; 000 Algorithm 2)."""

    #: the components, in the order of `predict_components`' V axis
    components: tuple[Component, ...]

    def predict_components(self, prepared: Prepared, Xq) -> tuple[jax.Array, jax.Array]:
        """Posterior mean and variance [S, V, N] of each component at Xq (user scale, no constant mean)."""
        raise NotImplementedError


class PathPredictions:
    """A path-level latent value that depends only on a row's decisions and shared (inner-node) columns
    (Jenatton et al.; 001 Eq. 6), for a search that picks a path before its leaf."""

    def path_predict_prepared(self, prepared: Prepared, Xq) -> tuple[jax.Array, jax.Array]:
        """Mean and variance [S, N] of the path-level value of each row's path (user units)."""
        raise NotImplementedError

    def shared_columns(self, path) -> np.ndarray:
        """Encoded columns the path-level value of `path` reads (its inner nodes' parameters)."""
        raise NotImplementedError


class PathLocalPredictions:
    """`predict_prepared` for rows that all lie on one root-to-leaf path, from that path's own terms only
    (Add-Tree: the kernel terms of the few vertices on the path, not of every vertex in the space): the
    same numbers for less work, for optimizers that search one path at a time."""

    def predict_on_path(self, prepared: Prepared, Xq, path) -> tuple[jax.Array, jax.Array]:
        """Latent mean and variance [S, N] at rows Xq that all lie on `space.paths[path]` (an int32 index,
        traced, so every path shares one compilation); rows off that path get wrong values."""
        raise NotImplementedError


class StructureMoves:
    """Discrete sites moved by moves that need more than the joint density (`needs_context` moves)."""

    def move_context(self, data: Data, z: dict, sites: dict):
        """What the moves read besides the site they update: data, the other sites' values and the
        model's likelihood plug-in (e.g. BARK's `ForestContext`). `z`: unconstrained continuous sites."""
        raise NotImplementedError


class ForestPosterior:
    """The posterior is a GP whose kernel is a forest of heap-array trees (BARK), for the MIP optimizer."""

    #: the zoo.heap_trees.TreeSpec the forests are written in
    spec: Any

    def forest_posterior(self, prepared: Prepared) -> "ForestGP":
        """The forests, training leaves, Cholesky factors and K^-1 y of the prepared samples."""
        raise NotImplementedError


class ForestGP(NamedTuple):
    """Per-sample pieces of a forest-kernel GP posterior (standardized units), leading dim S."""

    forests: Any  # [S, m, nodes, width]
    train_leaves: Any  # [S, m, n_pad] leaf of every training row in every tree
    cholesky: Any  # [S, n_pad, n_pad] of K + noise I
    alpha: Any  # [S, n_pad] (K + noise I)^-1 y


class CoordinateMoments:
    """Cheap predictions of one row with a single column moved (BARK: only the trees splitting on it)."""

    def coordinate_moments(self, prepared: Prepared, x, column, values, trees, valid):
        """Mean and variance [S, K] of row x with `column` set to each of `values` [K]."""
        raise NotImplementedError


class DependencyForest:
    """Each posterior sample's latent function is a sum of 1-D and 2-D components over a forest on the
    encoded columns (Han et al.; 002 Eq. 1-3), for max-sum message passing on that forest."""

    def dependency_graphs(self, prepared: Prepared):
        """Adjacency [S, D, D] (bool) of every prepared sample's forest."""
        raise NotImplementedError

    def component_moments(self, prepared: Prepared, sample, a, b, pair, grid_a, grid_b):
        """Mean and variance [C, R, R] of components (a_c, b_c) (1-D where pair_c is False) of one sample at
        the grid points (grid_a[c, r], grid_b[c, q]); user scale, without the constant mean."""
        raise NotImplementedError


class NoiselessForm:
    """Has a prior on the noise variance that `noiseless()` moves near zero for a deterministic objective:
    attribute `noise_prior`, the (loc, scale) of a LogNormal (None where a model keeps its own default family
    until then: BARK's InverseGamma, 003)."""

    noise_prior: tuple

    def noiseless(self):
        """A copy for a deterministic objective: its noise prior becomes NOISELESS_PRIOR."""
        model = copy.copy(self)
        model.noise_prior = NOISELESS_PRIOR
        return model


class OutputWarping:
    """The model scores a monotone warp of y that each posterior draw infers for itself (a warped GP; Snelson et
    al. 2004), so `predict_prepared` gives moments on each draw's warped scale (taken to the user's units by the
    standardization, not by the inverse warp): an incumbent, a fantasy or any value compared with a prediction
    crosses between the scales through these two maps. Both keep the order of values within a draw."""

    def to_model_scale(self, samples: dict, data: Data, values) -> jax.Array:
        """Values in the user's units, [N] or [S, N], on each draw's prediction scale: [S, N]."""
        raise NotImplementedError

    def from_model_scale(self, samples: dict, data: Data, values) -> jax.Array:
        """Values [S, N] on each draw's prediction scale back in the user's units (a draw's predictive mean maps to
        its predictive median)."""
        raise NotImplementedError


CAPABILITIES = (AdditiveComponents, PathPredictions, PathLocalPredictions, StructureMoves, ForestPosterior,
                CoordinateMoments, DependencyForest, NoiselessForm, OutputWarping)


def prepare_samples(surrogate: Surrogate, samples: dict, data: Data) -> Prepared:
    """`surrogate.prepare(samples, data)`, where `data.y` may also be [S, n_pad]: one target vector per posterior
    sample (the per-draw fantasies of optim.batch's ``qei``). Then every sample is prepared on its own row of y, by
    the model's own `prepare` applied to that one sample, so no surrogate needs to know about it. Traceable; which
    branch runs is decided by the shape of y."""
    if np.ndim(data.y) == 1:
        return surrogate.prepare(samples, data)

    def one(sample, y):
        arrays = surrogate.prepare(jax.tree_util.tree_map(lambda a: a[None], sample), data._replace(y=y)).arrays
        return jax.tree_util.tree_map(lambda a: a[0], arrays)
    return Prepared(samples, data, jax.vmap(one)(samples, data.y))


def _predict_fn(surrogate: Surrogate):
    """Jitted (samples, data, Xq) -> `surrogate.predict_prepared(prepare_samples(surrogate, samples, data), Xq)`."""
    return jax.jit(lambda samples, data, Xq: surrogate.predict_prepared(prepare_samples(surrogate, samples, data), Xq))


def _simulate_fn(surrogate: Surrogate):
    """Jitted (key, data) -> `surrogate.draw_joint(key, data)`."""
    return jax.jit(surrogate.draw_joint)
