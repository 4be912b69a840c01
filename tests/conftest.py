"""Shared fixtures: small sampler settings and spaces reused across tests so JAX compiles once."""

import functools
import math

import tests.one_core_per_worker  # noqa: F401  (before JAX starts its threads: see its docstring)
import tests.xla_test_flags  # noqa: F401  (before JAX starts: see its docstring)

import arviz as az
import jax
import numpy as np
import pytest

import zoo  # noqa: F401  (float64)
from optim.path_lbfgs import LBFGSConfig
from optim.loop import SamplerSettings
from zoo import Categorical, Integer, Node, Real, Space

# One sampler / optimizer configuration for every loop test: a single compilation per data bucket.
FAST_SAMPLER = SamplerSettings(num_chains=2, cold_warmup=80, warm_warmup=10, num_samples=8, thinning=2,
                               max_tree_depth=5)
FAST_OPTIMIZER = LBFGSConfig(n_raw=128, n_restarts=8, maxiter=30)
#: FAST_SAMPLER's cold-run sizes with NUTS trees of depth 3 (at most 7 leapfrog steps): test_treed's fitted fixture
#: and the reduced treed_bayes calibration share this run, whose simulation takes 0.6 s against 1.7 s at depth 5
TREED_FAST = dict(num_warmup=80, num_samples=8, num_chains=2, thinning=2, max_tree_depth=3)


#: Test files whose tests run the same compiled programs (equal model, settings and data bucket), which
#: pytest-xdist gives to one worker so that they compile once (pytest_xdist_make_scheduler below): the BO loop with
#: the FAST settings (on the 2-D bowl, the Jenatton and Add-Tree trace runs) and the trace runs; ArviZ's LOO fits and
#: the examples that repeat them; BARK's fits and its calibration. Any other file goes to a worker whole. Measured on
#: 2 cores (2026-11-28), in a worker without the rest of its group against after it in one process: the trace tests
#: 85 s against 24 s, the batch of Jenatton's trace run 26 s against 4 s, BARK's calibration 27 s against 9 s.
SHARED_COMPILATION = {"loop": ("test_acquisition.py", "test_addtree.py", "test_bad_input.py", "test_contract.py",
                               "test_jenatton.py", "test_loop.py", "test_parallel.py", "test_traces.py"),
                      "arviz_fits": ("test_arviz.py", "test_examples_cli.py"),
                      "bark": ("test_bark.py", "test_calibration.py")}
_GROUP_OF_FILE = {f: g for g, files in SHARED_COMPILATION.items() for f in files}


def pytest_xdist_make_scheduler(config, log):
    """xdist's per-file scheduling, with the files of one SHARED_COMPILATION group as one unit."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedCompilationScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return _GROUP_OF_FILE.get(path.rsplit("/", 1)[-1], path)

    return SharedCompilationScheduling(config, log)


def process_gone(pid: int) -> bool:
    """No process `pid`, or only its zombie (a container's init may not reap what it inherits)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def fast_sample(surrogate, X, y, key=0):
    """A cold MCMC fit with the FAST_SAMPLER settings, exactly as the BO loop's first fit calls it, so that it
    shares its compiled run with the loop and trace runs of an equal surrogate (same data bucket)."""
    import inference
    s = FAST_SAMPLER
    return inference.sample(surrogate, X, y, key, num_warmup=s.cold_warmup, num_samples=s.num_samples,
                            num_chains=s.num_chains, thinning=s.thinning, max_tree_depth=s.max_tree_depth)


class _JittedMethods:
    """A model whose methods are each compiled on first use: test code that calls model functions outside
    `jit` then compiles one function per method and shape, not one computation per primitive."""

    def __init__(self, model):
        self._model, self._fns = model, {}

    def __getattr__(self, name):
        if name not in self._fns:
            self._fns[name] = jax.jit(getattr(self._model, name))
        return self._fns[name]


@functools.lru_cache(maxsize=None)
def jitted(model):
    """`model`'s array methods, jitted (see _JittedMethods); one proxy per equal model."""
    return _JittedMethods(model)


@pytest.fixture(scope="session")
def mixed_space():
    """A conditional space with every parameter kind, a log-scale real and a 3-way decision."""
    leaf_a = Node("a", params=(Real("lr", 1e-5, 1e-1, log=True), Integer("units", 1, 30)))
    leaf_b = Node("b", params=(Categorical("act", ("relu", "tanh", "logistic")),))
    leaf_c = Node("c", params=(Real("alpha", -2.0, 3.0), Categorical("flag", (True, False))))
    return Space(Node("root", params=(Integer("layers", 0, 4), Real("tol", 0.0, 1.0)), choice="kind",
                      children={"sgd": leaf_a, "adam": leaf_b, "lbfgs": leaf_c}))


@pytest.fixture(scope="session")
def flat2():
    return Space([Real("x0", 0.0, 1.0), Real("x1", 0.0, 1.0)])


def gp_prior_draw(X, lengthscale, outputscale, noise, rng):
    """y ~ N(0, outputscale * Matern52(X; lengthscale) + noise I), computed in NumPy."""
    d = np.sqrt(np.sum(((X[:, None, :] - X[None, :, :]) / lengthscale) ** 2, -1))
    K = outputscale * (1 + np.sqrt(5) * d + 5 / 3 * d**2) * np.exp(-np.sqrt(5) * d)
    return rng.multivariate_normal(np.zeros(len(X)), K + noise * np.eye(len(X)))


def within_mc_error(draws, true_mean, true_sd, true_median, min_ess=100):
    """Mean, sd and P(x < median) of MCMC draws [C, S] of a normal quantity agree with the truth within 4
    Monte Carlo standard errors, each from the ESS of its own functional (x for the mean, (x - mean)^2 for
    the sd, whose SE is sd / sqrt(2 ESS) under normality, the indicator for the proportion, SE
    sqrt(p(1-p)/ESS)). A two-sided 4-SE band is exceeded with probability 6e-5 per check, so a test of 60
    checks fails by chance 0.4% of the time."""
    draws = np.asarray(draws, dtype=np.float64)
    draws = draws[None] if draws.ndim == 1 else draws

    def ess(f):
        return float(az.ess(f))
    ess_mean, ess_sq, ess_below = ess(draws), ess((draws - true_mean) ** 2), ess((draws < true_median) * 1.0)
    assert min(ess_mean, ess_sq, ess_below) > min_ess, (ess_mean, ess_sq, ess_below)
    mean, sd = draws.mean(), draws.std()
    assert abs(mean - true_mean) < 4 * true_sd / math.sqrt(ess_mean), (mean, true_mean, ess_mean)
    assert abs(sd - true_sd) < 4 * true_sd / math.sqrt(2 * ess_sq), (sd, true_sd, ess_sq)
    below = (draws < true_median).mean()
    assert abs(below - 0.5) < 4 * 0.5 / math.sqrt(ess_below), (below, ess_below)
