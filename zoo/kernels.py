"""Small composable covariance functions in JAX (float64); inputs are encoded rows (zoo.space)."""

import jax.numpy as jnp

SQRT5 = 5.0 ** 0.5


def scaled_sqdist(X1, X2, lengthscale):
    """Squared distance between rows of X1 [N, d] and X2 [M, d] after dividing by lengthscale [d]."""
    A, B = X1 / lengthscale, X2 / lengthscale
    d2 = jnp.sum(A**2, -1)[:, None] + jnp.sum(B**2, -1)[None, :] - 2.0 * A @ B.T
    return jnp.maximum(d2, 0.0)


def _safe_sqrt(x):
    """sqrt with a finite (zero) gradient at 0, where points coincide."""
    pos = x > 1e-30
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def rbf(X1, X2, lengthscale):
    """Squared-exponential ARD kernel with unit variance."""
    return jnp.exp(-0.5 * scaled_sqdist(X1, X2, lengthscale))


def matern52_from_sqdist(d2):
    """Matérn-5/2 with unit variance at squared scaled distance d2 (Rasmussen & Williams 2006, Eq. 4.17);
    d2 is clipped at 0 and the gradient stays finite where points coincide."""
    r = _safe_sqrt(jnp.maximum(d2, 0.0))
    return (1.0 + SQRT5 * r + (5.0 / 3.0) * r**2) * jnp.exp(-SQRT5 * r)


def matern52(X1, X2, lengthscale):
    """Matérn-5/2 ARD kernel with unit variance (Rasmussen & Williams 2006, Eq. 4.17)."""
    return matern52_from_sqdist(scaled_sqdist(X1, X2, lengthscale))


def overlap(C1, C2, lengthscale):
    """Exponentiated overlap kernel for categorical indices: exp(-sum_c [c != c'] / l_c).

    Treats categories as unordered (only equality matters); an inactive column (index -1) is a
    category of its own.
    """
    diff = (C1[:, None, :] != C2[None, :, :]).astype(C1.dtype)
    return jnp.exp(-jnp.sum(diff / lengthscale, -1))


STATIONARY = {"matern52": matern52, "rbf": rbf}


def block_slices(sizes) -> list[slice]:
    """Consecutive slices of a stacked parameter vector, one per block of the given sizes."""
    out, start = [], 0
    for size in sizes:
        out.append(slice(start, start + int(size)))
        start += int(size)
    return out


def on_route(X, cols, idx):
    """[N] 1.0 where a row's decision columns `cols` hold the category indices `idx` (the row's path
    passes through the node those decisions lead to, see `Space.route`), else 0.0; the root is all ones."""
    if len(cols):
        return jnp.all(X[:, cols] == idx, axis=1).astype(X.dtype)
    return jnp.ones(X.shape[0], X.dtype)


WARP_EPS = 1e-6


def kumaraswamy_warp(X, a, b):
    """Input warping w(x) = 1 - (1 - x^a)^b per column of X in [0, 1] (a, b > 0, broadcast over rows).

    Snoek et al. (2013) warp each input by a Beta CDF; the Kumaraswamy CDF has the same shapes (identity at
    a = b = 1, concave, convex and sigmoid otherwise) in closed form, so its gradient in a and b, which
    NUTS needs and JAX's `betainc` does not give, is exact. Inputs are clipped to [eps, 1 - eps] so the
    gradient stays finite at the box edges.
    """
    x = jnp.clip(X, WARP_EPS, 1.0 - WARP_EPS)
    return 1.0 - (1.0 - x**a) ** b
