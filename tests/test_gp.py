"""Kernels and GP algebra against direct NumPy computations."""

import jax
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from zoo import GP, Categorical, Real, Space, kernels, linalg, make_data
from zoo.data import bucket_size
from tests.conftest import jitted


def np_matern52(A, B, ls):
    d = np.sqrt(np.sum(((A[:, None] - B[None]) / ls) ** 2, -1))
    return (1 + np.sqrt(5) * d + 5 / 3 * d**2) * np.exp(-np.sqrt(5) * d)


def test_matern_rbf_overlap_match_direct_formulas():
    rng = np.random.default_rng(0)
    A, B, ls = rng.random((7, 3)), rng.random((5, 3)), np.array([0.3, 1.0, 2.0])
    assert np.allclose(kernels.matern52(A, B, ls), np_matern52(A, B, ls), atol=1e-12)
    rbf = np.exp(-0.5 * np.sum(((A[:, None] - B[None]) / ls) ** 2, -1))
    assert np.allclose(kernels.rbf(A, B, ls), rbf, atol=1e-12)
    C1, C2 = rng.integers(-1, 3, (6, 2)).astype(float), rng.integers(-1, 3, (4, 2)).astype(float)
    cl = np.array([0.5, 2.0])
    direct = np.exp(-np.sum((C1[:, None] != C2[None]) / cl, -1))
    assert np.allclose(kernels.overlap(C1, C2, cl), direct)


def test_overlap_is_unordered():
    """Categories 0 and 2 are as far apart as 0 and 1: no ordering is implied."""
    C = np.array([[0.0], [1.0], [2.0]])
    K = np.asarray(kernels.overlap(C, C, np.array([1.0])))
    assert K[0, 1] == K[0, 2] == K[1, 2]


def test_kernel_psd_and_gradient_finite_at_coincident_points():
    rng = np.random.default_rng(1)
    X = rng.random((12, 4))
    X[5] = X[3]
    K = np.asarray(jax.jit(kernels.matern52)(X, X, np.full(4, 0.4)))
    assert np.linalg.eigvalsh(K).min() > -1e-10
    g = jax.jit(jax.grad(lambda x: kernels.matern52(x[None], X, np.full(4, 0.4)).sum()))(X[3])
    assert np.all(np.isfinite(np.asarray(g)))


def _sample_params(space):
    return {"lengthscale": np.array([0.4, 0.7]), "cat_lengthscale": np.array([0.8]),
            "outputscale": np.float64(1.7), "noise": np.float64(0.05), "mean": np.float64(0.3)}


def _dense_gp(space, X, y, Xq, s):
    """Direct NumPy GP posterior of the latent function in user units (R&W Eq. 2.25-2.26)."""
    def k(A, B):
        Kc = np_matern52(A[:, :2], B[:, :2], s["lengthscale"])
        Kcat = np.exp(-((A[:, None, 2] != B[None, :, 2]) / s["cat_lengthscale"][0]))
        return s["outputscale"] * Kc * Kcat
    ym, ys = y.mean(), y.std()
    z = (y - ym) / ys
    K = k(X, X) + (s["noise"] + 1e-6 + 1e-8) * np.eye(len(X))
    Ks = k(X, Xq)
    mean = s["mean"] + Ks.T @ np.linalg.solve(K, z - s["mean"])
    var = s["outputscale"] - np.sum(Ks * np.linalg.solve(K, Ks), 0)
    return ym + ys * mean, ys**2 * var, multivariate_normal(s["mean"] * np.ones(len(z)), K).logpdf(z) - len(z) * np.log(ys)


@pytest.fixture(scope="module")
def gp_setup():
    space = Space([Real("a", 0, 1), Real("b", 0, 1), Categorical("c", ("p", "q", "r"))])
    rng = np.random.default_rng(2)
    configs = space.sample(13, seed=rng)
    X = space.encode(configs)
    y = np.sin(5 * X[:, 0]) + X[:, 1] + 0.5 * (X[:, 2] == 1) + 0.01 * rng.standard_normal(13)
    Xq = space.encode(space.sample(9, seed=rng))
    return space, X, y, Xq


def test_gp_predictive_matches_numpy_with_padding(gp_setup):
    space, X, y, Xq = gp_setup
    gp = GP(space)
    s = _sample_params(space)
    data = make_data(X, y, fill_row=space.fill_row())
    assert data.X.shape[0] == 32 and data.n == 13
    samples = {k: np.asarray(v)[None] for k, v in s.items()}
    mean, var = gp.predict(samples, data, Xq)
    m_ref, v_ref, _ = _dense_gp(space, X, y, Xq, s)
    assert np.allclose(mean[0], m_ref, atol=1e-8)
    assert np.allclose(var[0], v_ref, atol=1e-8)


def test_padded_likelihood_equals_unpadded_and_chain_rule_sums(gp_setup):
    space, X, y, _ = gp_setup
    gp = GP(space)
    s = {k: np.asarray(v) for k, v in _sample_params(space).items()}
    _, _, ll_ref = _dense_gp(space, X, y, X[:1], s)
    for size in (13, 32, 64):
        data = make_data(X, y, size=size, fill_row=space.fill_row())
        pointwise = np.asarray(jitted(gp).log_likelihood(s, data))
        assert np.all(pointwise[13:] == 0.0)
        assert pointwise.sum() == pytest.approx(ll_ref, rel=1e-9)


def test_gaussian_logpdf_matches_scipy():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    K = A @ A.T + np.eye(6)
    y, loc = rng.standard_normal(6), rng.standard_normal(6)
    L = linalg.cholesky(K, jitter=0.0)
    assert float(linalg.gaussian_logpdf(y, loc, L)) == pytest.approx(multivariate_normal(loc, K).logpdf(y), rel=1e-10)


def test_make_data_standardizes_and_handles_constant_observations():
    X = np.zeros((4, 2))
    d = make_data(X, [1.0, 2.0, 3.0, 4.0])
    assert d.y[:4].mean() == pytest.approx(0) and d.y[:4].std() == pytest.approx(1)
    c = make_data(X, [5.0, 5.0, 5.0, 5.0])
    assert c.y_std == 1.0 and np.all(c.y == 0)
    with pytest.raises(ValueError, match="finite"):
        make_data(X, [1.0, np.nan, 2.0, 3.0])
    assert [bucket_size(n) for n in (0, 20, 33, 100)] == [32, 32, 64, 128]
    assert [bucket_size(n, steps=(1.0, 1.5)) for n in (20, 33, 49, 64, 65, 97)] == [32, 48, 64, 64, 96, 128]
