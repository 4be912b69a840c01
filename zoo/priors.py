"""Priors shared by the GP surrogates: one lengthscale prior whose location grows with dimension."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import numpyro.distributions as dist

LENGTHSCALE_SCALE = math.sqrt(3.0)
#: LogNormal(loc, scale) of each input-warping shape parameter (zoo.kernels.kumaraswamy_warp): median 1, i.e.
#: no warping, 95% within [0.18, 5.5] (the scale of BoTorch's warping prior, sqrt 0.75)
WARP_PRIOR = (0.0, math.sqrt(0.75))


def lengthscale_loc(dim: int) -> float:
    """sqrt 2 + log(dim)/2: the log-lengthscale prior location for a kernel on `dim` inputs (Hvarfner et al., 2024)."""
    return math.sqrt(2.0) + 0.5 * math.log(max(dim, 1))


def lengthscale_prior(dim: int):
    """LogNormal(lengthscale_loc(dim), sqrt 3) for one lengthscale of a kernel on `dim` inputs."""
    return dist.LogNormal(lengthscale_loc(dim), LENGTHSCALE_SCALE)


def block_lengthscale_prior(blocks: Sequence[tuple[int, int]]):
    """Lengthscales of several kernels stacked in one vector: `blocks` = (count, kernel dim) per kernel;
    each entry gets the prior location of its own kernel's dimension."""
    locs = np.concatenate([np.full(count, lengthscale_loc(dim)) for count, dim in blocks]) if blocks else np.zeros(0)
    return dist.LogNormal(locs, LENGTHSCALE_SCALE).to_event(1)
