"""Integrated acquisitions: exact tails of log-EI, and agreement with Monte Carlo estimates."""

import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

from optim.acquisition import EI, PI, UCB, LogEI, _log_h, get_acquisition

mpmath.mp.dps = 60


def exact_log_h(z):
    z = mpmath.mpf(z)
    return float(mpmath.log(mpmath.npdf(z) + z * mpmath.ncdf(z)))


@pytest.mark.parametrize("z", [5.0, 1.0, 0.0, -0.5, -1.0, -1.0000001, -3.0, -10.0, -39.9, -40.0, -40.1,
                               -100.0, -1e3, -1e5])
def test_log_h_is_accurate_from_the_centre_far_into_the_tail(z):
    got = float(_log_h(jnp.float64(z)))
    want = exact_log_h(z)
    assert got == pytest.approx(want, rel=1e-10, abs=1e-12)


def test_log_ei_gradient_is_finite_in_the_tail():
    g = jax.jit(jax.grad(lambda m: LogEI()(m[None, None], jnp.ones((1, 1)) * 1e-4, 0.0)[0]))(jnp.float64(5.0))
    assert np.isfinite(float(g)) and float(g) < 0


def _per_sample(rng, S=6, N=5):
    mean = rng.normal(size=(S, N))
    var = rng.uniform(0.05, 2.0, size=(S, N))
    return mean, var


def test_integrated_ei_pi_match_monte_carlo():
    rng = np.random.default_rng(0)
    mean, var, best = *_per_sample(rng), -0.3
    M = 400_000
    f = mean[None] + np.sqrt(var)[None] * rng.standard_normal((M,) + mean.shape)  # [M, S, N]
    improvement = np.maximum(best - f, 0).mean(1)  # average over posterior samples -> [M, N]
    indicator = (f < best).mean(1)
    for acq, mc in ((EI(), improvement), (PI(), indicator)):
        got = np.asarray(jax.jit(acq)(mean, var, best))
        se = mc.std(0) / math.sqrt(M)
        assert np.all(np.abs(got - mc.mean(0)) < 4 * se), acq
    log_ei, ei = jax.jit(LogEI())(mean, var, best), jax.jit(EI())(mean, var, best)
    assert np.allclose(np.asarray(log_ei), np.log(np.asarray(ei)), rtol=1e-10)


def test_ucb_is_sample_average_with_kandasamy_beta():
    rng = np.random.default_rng(1)
    mean, var = _per_sample(rng)
    got = np.asarray(UCB()(mean, var, 0.0, t=7.0, dim=3.0))
    beta = 0.2 * 3 * math.log(14)
    assert np.allclose(got, (-mean + math.sqrt(beta) * np.sqrt(var)).mean(0))
    assert np.allclose(np.asarray(UCB(beta=4.0)(mean, var, 0.0)), (-mean + 2 * np.sqrt(var)).mean(0))


def test_get_acquisition():
    assert isinstance(get_acquisition("LogEI"), LogEI)
    assert get_acquisition("logei,xi=0.01") == LogEI(xi=0.01) and get_acquisition("PI, xi=2") == PI(xi=2.0)
    assert get_acquisition("ucb,beta=2") == UCB(beta=2.0) and get_acquisition("ei") == EI(xi=0.0)
    with pytest.raises(ValueError, match="unknown acquisition"):
        get_acquisition("thompson")
    for bad, message in (("logei,beta=1", "'logei' takes 'logei,xi=<number>'"), ("ucb,xi=1", "'ucb' takes"),
                         ("ei,xi", "bad option 'xi'"), ("ei,xi=abc", "bad option"),
                         ("logei,xi=-0.1", "xi must be a finite number >= 0"), ("pi,xi=nan", "xi must be"),
                         ("ucb,beta=-1", "beta must be None or a finite number >= 0")):
        with pytest.raises(ValueError, match=message):
            get_acquisition(bad)


def test_margin_xi_lowers_the_incumbent_by_xi_standard_deviations_of_y(flat2):
    """LogEI(xi) on a posterior scores as LogEI() with the incumbent lowered by xi * std(y) (the data's
    standardization scale), for EI and PI alike; so log-EI is lower everywhere (EI and PI may underflow to 0)."""
    from optim.integrated import AcquisitionFunction, formula
    from tests.conftest import fast_sample
    from zoo import GP

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(8, 2))
    y = 10.0 * np.sin(4 * X[:, 0]) + X[:, 1]
    post = fast_sample(GP(flat2), X, y)
    rows, best, xi = rng.uniform(size=(16, 2)), float(y.min()), 0.5
    assert float(post.data.y_std) == pytest.approx(np.std(y))
    for acq in (LogEI, EI, PI):
        with_margin = AcquisitionFunction(post, acq(xi=xi), best=best).values(rows)
        lowered = AcquisitionFunction(post, acq(), best=best - xi * np.std(y)).values(rows)
        plain = AcquisitionFunction(post, acq(), best=best).values(rows)
        assert np.allclose(with_margin, lowered, rtol=1e-12, atol=0), acq
        assert np.all(with_margin < plain) if acq is LogEI else np.all(with_margin <= plain), acq
        assert formula(acq(xi=xi)) == acq()  # xi acts through the incumbent: one compilation serves every xi


def test_a_posterior_sample_that_cannot_predict_is_replaced_not_averaged_in(flat2):
    """One draw whose predictions are NaN (its factorization failed) would make the sample average NaN at
    every row. The acquisition finds it, gives it the first working draw, and then equals the acquisition
    of that repaired posterior exactly; an intact posterior is left alone."""
    import dataclasses

    from optim.integrated import AcquisitionFunction
    from tests.conftest import fast_sample
    from zoo import GP

    rng = np.random.default_rng(1)
    X = rng.uniform(size=(8, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1]
    post = fast_sample(GP(flat2), X, y)
    rows, best = rng.uniform(size=(16, 2)), float(y.min())

    def with_draw(source):  # draw (chain 0, draw 0) given a NaN noise variance, or another draw's sites
        samples = {k: np.array(v) for k, v in post.samples.items()}
        for name, v in samples.items():
            v[0, 0] = np.nan if source is None and name == "noise" else v[source or (0, 0)]
        return dataclasses.replace(post, samples=samples, _cache={})

    intact = AcquisitionFunction(post, LogEI(), best=best)
    intact.values(rows)
    assert intact.failed_samples == 0
    broken = AcquisitionFunction(with_draw(None), LogEI(), best=best)
    values = broken.values(rows)
    assert broken.failed_samples == 1 and np.all(np.isfinite(values))
    repaired = AcquisitionFunction(with_draw((0, 1)), LogEI(), best=best)
    assert np.array_equal(values, repaired.values(rows))
