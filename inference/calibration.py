"""Simulation-based calibration (SBC, Talts et al. 2018) of any surrogate's sampler, with simultaneous ECDF
bands (Säilynoja, Bürkner & Vehtari 2022): the check to run first after writing a new prior.

Each simulation draws every site from the prior and y from the likelihood (`Surrogate.simulate`), runs the
same sampler the BO loop uses on that y, and records the rank of the true value among the posterior draws
for every continuous site (element by element), for the model's scalar structure summaries
(`Surrogate.summarize_discrete`: leaves, depth, edges, ...) and for the joint log-likelihood of the
simulated y. If the sampler targets the posterior, each rank is uniform on {0, ..., L} (L draws).

Which density is calibrated: the models' priors are on *standardized* y, and `inference.sample` normally
standardizes the data first (an empirical-Bayes step). Here the simulated y is handed to the sampler with
``standardize=False`` (mean 0, scale 1 kept), so the sampler targets exactly p(sites | y) of the model as
written, the density SBC can check. The standardization itself is a fixed transform of the data and is not
what is being tested.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from scipy import stats

from inference.arviz_io import from_groups
from inference.sampler import sample
from zoo.base import Surrogate
from zoo.compiled import compiled
from zoo.data import bucket_size, make_data

NULL_SIMULATIONS = 4000  # uniform samples that give the null distribution of the band statistic


@dataclass
class CalibrationResult:
    """Ranks of the true values among L posterior draws, per quantity, over the simulations."""

    surrogate: str
    ranks: dict  # quantity -> int ranks [num_simulations] in {0, ..., num_draws}
    pit: dict  # quantity -> randomized fractional ranks (rank + U) / (L + 1) in (0, 1) [num_simulations]
    num_draws: int
    p_values: dict  # quantity -> p-value of the simultaneous ECDF test of uniformity
    alpha: float  # family-wise level; each quantity is tested at alpha / (number of quantities)
    seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def num_simulations(self) -> int:
        return len(next(iter(self.ranks.values())))

    @property
    def level(self) -> float:
        """Per-quantity level after the Bonferroni correction for the number of quantities."""
        return self.alpha / len(self.ranks)

    def failed(self) -> list[str]:
        """Quantities whose ECDF leaves the simultaneous band at the corrected level."""
        return [q for q, p in self.p_values.items() if p < self.level]

    @property
    def passed(self) -> bool:
        return not self.failed()

    def table(self) -> str:
        """One line per quantity: p-value, pass/fail, and the overall verdict with the correction stated."""
        width = max(len(q) for q in self.ranks)
        lines = [f"SBC of {self.surrogate}: {self.num_simulations} simulations, {self.num_draws} draws each, "
                 f"{len(self.ranks)} quantities, each tested at alpha/{len(self.ranks)} = {self.level:.2g} "
                 f"(Bonferroni, family-wise {self.alpha})"]
        for q, p in self.p_values.items():
            lines.append(f"  {q:<{width}}  p = {p:6.3f}  {'ok' if p >= self.level else 'FAIL'}")
        lines.append("passed" if self.passed else f"FAILED: {', '.join(self.failed())}")
        return "\n".join(lines)

    def to_arviz(self):
        """The PIT values as ArviZ's ``prior_sbc`` group (one chain, a draw per simulation), the input of
        ArviZ 1.x's ``az.plot_ecdf_pit``."""
        pit = {q: v[None, :] for q, v in self.pit.items()}
        return from_groups({"prior_sbc": pit}, coords={}, dims={})

    def plot(self, path=None, quantities=None, ncols: int = 4):
        """ECDF minus the uniform CDF of each quantity's PIT values, with its simultaneous band at the
        corrected level; returns the matplotlib figure (written to `path` if given)."""
        import matplotlib.pyplot as plt

        names = list(quantities or self.ranks)
        ncols = min(ncols, len(names))
        nrows = -(-len(names) // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.0 * ncols, 2.3 * nrows), squeeze=False)
        z = _grid(self.num_simulations)
        lo, hi = ecdf_band(self.num_simulations, self.level)
        for ax, q in zip(axes.flat, names):
            diff = _ecdf(self.pit[q], z) - z
            ax.fill_between(z, lo - z, hi - z, color="0.85", step="mid", label=f"{1 - self.level:.3g} band")
            ax.plot(z, diff, color="C0" if self.p_values[q] >= self.level else "C3", drawstyle="steps-mid")
            ax.axhline(0.0, color="0.4", linewidth=0.6)
            ax.set_title(f"{q}  (p={self.p_values[q]:.2f})", fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        fig.suptitle(f"SBC of {self.surrogate}: ECDF difference of the ranks", fontsize=9)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=80)
        return fig


# ------------------------------------------------------------------ uniformity test and bands
def _grid(n: int) -> np.ndarray:
    """Evaluation points z_i = i / K, K = min(n, 100), interior only (Säilynoja et al. 2022, Section 2)."""
    K = min(n, 100)
    return np.arange(1, K) / K


def _ecdf(u, z):
    return np.searchsorted(np.sort(u), z, side="right") / len(u)


def _min_tail_probability(u: np.ndarray, z: np.ndarray) -> np.ndarray:
    """For samples u [..., n]: min over z of the two-sided binomial tail probability of n * ECDF(z), whose
    null law is Binomial(n, z) at each z."""
    n = u.shape[-1]
    counts = (u[..., None] <= z).sum(-2)  # [..., K]
    lower = stats.binom.cdf(counts, n, z)
    upper = stats.binom.sf(counts - 1, n, z)
    return np.minimum(1.0, 2.0 * np.minimum(lower, upper)).min(-1)


_NULL: dict = {}


def _null_statistic(n: int) -> np.ndarray:
    """The band statistic of NULL_SIMULATIONS uniform samples of size n (fixed seed: deterministic)."""
    if n not in _NULL:
        u = np.random.default_rng(20220101 + n).random((NULL_SIMULATIONS, n))
        _NULL[n] = np.sort(_min_tail_probability(u, _grid(n)))
    return _NULL[n]


def uniformity_p_value(u: np.ndarray) -> float:
    """P-value of the simultaneous ECDF test that u [n] is uniform on (0, 1): the share of uniform samples
    whose smallest binomial tail probability is as small or smaller (Säilynoja et al. 2022, simulation)."""
    u = np.asarray(u, dtype=np.float64)
    null = _null_statistic(len(u))
    observed = _min_tail_probability(u, _grid(len(u)))
    return float((np.searchsorted(null, observed, side="right") + 1) / (len(null) + 1))


def ecdf_band(n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Simultaneous (1 - level) band for the ECDF of n uniforms at `_grid(n)`: binomial quantiles at the
    adjusted pointwise level gamma, the `level`-quantile of the null band statistic."""
    z = _grid(n)
    gamma = float(np.quantile(_null_statistic(n), level))
    return stats.binom.ppf(gamma / 2, n, z) / n, stats.binom.ppf(1 - gamma / 2, n, z) / n


# ------------------------------------------------------------------ the calibration run
def _joint_loglik_fn(surrogate):
    return compiled("joint_loglik", lambda s: jax.jit(lambda smp, d: jnp.sum(s.log_likelihood(smp, d))), surrogate)


def _scalar_quantities(surrogate: Surrogate, draws: dict, structure: dict) -> dict:
    """name -> values [..., ] per draw: continuous sites element by element (named by their ArviZ
    coordinates where the model gives them) and structure summaries with at most 16 elements."""
    dims, coords = surrogate.arviz_dims()
    out = {}
    for site, v in list(draws.items()) + list(structure.items()):
        v = np.asarray(v, dtype=np.float64)
        lead = v.shape[:2]
        flat = v.reshape(lead + (-1,))
        if flat.shape[-1] == 1 and v.ndim == 2:
            out[site] = flat[..., 0]
            continue
        if flat.shape[-1] > 16 and site in structure:
            continue
        labels = coords.get(dims.get(site, [None])[0]) if site in dims and len(dims[site]) == 1 else None
        for i in range(flat.shape[-1]):
            label = labels[i] if labels is not None and len(labels) == flat.shape[-1] else i
            out[f"{site}[{label}]"] = flat[..., i]
    return out


def calibrate(surrogate: Surrogate, n_points: int = 8, num_simulations: int = 100, seed: int = 0, *, X=None,
              num_warmup: int = 200, num_samples: int = 50, num_chains: int = 2, thinning: int = 2,
              max_tree_depth: int = 8, warm_start: bool = False, warm_warmup: int = 40, alpha: float = 0.05,
              progress: bool = True) -> CalibrationResult:
    """Simulation-based calibration of `surrogate`'s sampler on `n_points` design points.

    Per simulation: sites and y drawn from the model (`Surrogate.simulate`), the sampler run on y
    unstandardized (see the module docstring), ranks of the truth among the num_chains x num_samples
    draws (ties among equal draws broken at random). A summary that is not defined in every simulation and
    draw (NaN, e.g. the size of a leaf a partition does not have) is left out and named in
    ``settings["undefined"]``. `warm_start=True` checks the BO loop's path instead: a cold run on the first
    n - 1 points, then `warm_warmup` sweeps warm-started from it on all n.
    `X`: the design (encoded rows), default `n_points` random configurations of the space. Returns a
    `CalibrationResult`: ranks, PIT values, a p-value per quantity and the verdict at family-wise `alpha`.
    """
    if not isinstance(surrogate, Surrogate):
        raise TypeError(f"calibrate needs a zoo.Surrogate, got {type(surrogate).__name__}")
    for name, v, low in (("n_points", n_points, 2), ("num_simulations", num_simulations, 10),
                         ("num_samples", num_samples, 1), ("num_chains", num_chains, 1)):
        if not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    space = surrogate.space
    X = space.encode(space.sample(n_points, seed=seed)) if X is None else np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    size = bucket_size(n, steps=surrogate.bucket_steps)
    template = make_data(X, np.zeros(n), size=size, fill_row=space.fill_row())  # y_mean 0, y_std 1
    simulate, joint = surrogate.simulate, _joint_loglik_fn(surrogate)
    settings = dict(num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains, thinning=thinning,
                    max_tree_depth=max_tree_depth)
    rng = np.random.default_rng(seed)
    root = jax.random.PRNGKey(seed)
    ranks: dict = {}
    pit: dict = {}
    undefined: set = set()
    iterator = range(num_simulations)
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(iterator, desc=f"SBC {surrogate.name}", unit="sim")
    t0 = time.perf_counter()
    for k in iterator:
        k_sim, k_fit, k_warm = jax.random.split(jax.random.fold_in(root, k), 3)
        truth, y_sim = simulate(k_sim, template)
        y = np.asarray(y_sim)[:n]
        if warm_start:
            first = sample(surrogate, X[:-1], y[:-1], k_fit, standardize=False, size=size, **settings)
            post = sample(surrogate, X, y, k_warm, init=first, standardize=False, size=size,
                          **{**settings, "num_warmup": warm_warmup})
        else:
            post = sample(surrogate, X, y, k_fit, standardize=False, size=size, **settings)
        truth = {site: np.asarray(v)[None, None] for site, v in truth.items()}
        continuous = [s for s in post.samples if s not in surrogate.discrete_sites and s in truth]
        true_q = _scalar_quantities(surrogate, {s: truth[s] for s in continuous},
                                    _structure(surrogate, truth))
        draw_q = _scalar_quantities(surrogate, {s: post.samples[s] for s in continuous},
                                    _structure(surrogate, post.samples))
        true_q["log_likelihood"] = np.asarray(joint({s: v[0, 0] for s, v in truth.items()}, post.data))[None, None]
        draw_q["log_likelihood"] = post.log_likelihood().sum(-1)
        for q, t in true_q.items():
            d = np.asarray(draw_q[q]).reshape(-1)
            t = float(np.asarray(t).reshape(-1)[0])
            if not (np.isfinite(t) and np.all(np.isfinite(d))):
                undefined.add(q)  # e.g. a leaf that does not exist in every draw: no rank
                continue
            less, ties = int(np.sum(d < t)), int(np.sum(d == t))
            r = less + int(rng.integers(0, ties + 1))
            ranks.setdefault(q, []).append(r)
            pit.setdefault(q, []).append((r + rng.random()) / (d.size + 1))
    ranks = {q: np.asarray(v) for q, v in ranks.items() if q not in undefined}
    pit = {q: np.asarray(v) for q, v in pit.items() if q not in undefined}
    p_values = {q: uniformity_p_value(u) for q, u in pit.items()}
    return CalibrationResult(surrogate=surrogate.name, ranks=ranks, pit=pit, num_draws=num_chains * num_samples,
                             p_values=p_values, alpha=alpha, seconds=time.perf_counter() - t0,
                             settings={**settings, "n_points": n, "num_simulations": num_simulations, "seed": seed,
                                       "warm_start": warm_start, "warm_warmup": warm_warmup,
                                       "undefined": sorted(undefined)})


_TEMPERED: dict = {}


def tempered(surrogate: Surrogate, power: float) -> Surrogate:
    """A copy of `surrogate` whose whole density (prior and likelihood) is raised to `power`, while its
    `simulate` still draws from the untempered model: a deliberately wrong target for the sampler, the
    negative control that shows a calibration check can fail (power 1/4 makes posteriors about twice too
    wide). Tempered is what the NumPyro model scores; a discrete move with its own likelihood plug-in (BARK's
    tree moves) still sees the untempered likelihood. Equal (surrogate, power) pairs share compiled code."""
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    base = type(surrogate)
    if base not in _TEMPERED:
        def model(self, data):
            with numpyro.handlers.scale(scale=self.power):
                base.model(self, data)

        def config_key(self):
            return base.config_key(self) + (("tempered", self.power),)
        _TEMPERED[base] = type(f"Tempered{base.__name__}", (base,),
                               {"model": model, "config_key": config_key, "name": f"tempered_{base.name}",
                                "__doc__": f"{base.__name__} with its density raised to a power (inference.tempered)."})
    out = copy.copy(surrogate)
    out.__class__ = _TEMPERED[base]
    out.power = float(power)
    return out


def _structure(surrogate: Surrogate, values: dict) -> dict:
    """The model's summaries of its discrete sites [C, S, ...] (none when it has no discrete sites)."""
    if not surrogate.discrete_sites:
        return {}
    summary = surrogate.summarize_discrete(values)
    return {k: v for k, v in summary.items() if k not in values or k in surrogate.discrete_sites}
