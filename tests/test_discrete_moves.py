"""Metropolis-within-Gibbs through the full sampler: a surrogate with a discrete site reproduces its prior
without data (binary relevance indicators of examples/custom_surrogate.py, updated by bit flips)."""

import importlib.util
import math
from pathlib import Path

import arviz as az
import numpy as np
import pytest
from scipy.stats import binom

import inference
from zoo import Real, Space

_spec = importlib.util.spec_from_file_location(
    "custom_surrogate", Path(__file__).resolve().parent.parent / "examples" / "custom_surrogate.py")
custom_surrogate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(custom_surrogate)


@pytest.mark.slow  # suite time (a statistical check)
def test_discrete_indicators_and_continuous_sites_reproduce_the_prior():
    space = Space([Real(f"x{i}", 0.0, 1.0) for i in range(3)])
    model = custom_surrogate.RelevanceGP(space, inclusion=0.3)
    post = inference.sample(model, np.zeros((0, 3)), np.zeros(0), key=2, num_warmup=200, num_samples=1500,
                            num_chains=4)
    relevant = post.samples["relevant"].astype(float)  # [C, S, 3]
    for j in range(3):
        ess = float(az.ess(relevant[..., j]))
        assert ess > 200, ess
        assert abs(relevant[..., j].mean() - 0.3) < 4 * math.sqrt(0.3 * 0.7 / ess)
    # the number of relevant dimensions per draw follows Binomial(3, 0.3)
    counts = np.bincount(relevant.sum(-1).astype(int).ravel(), minlength=4) / relevant[..., 0].size
    ess_min = min(float(az.ess(relevant[..., j])) for j in range(3))
    expected = binom.pmf(np.arange(4), 3, 0.3)
    assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected * (1 - expected) / ess_min))
    log_ls = np.log(post.samples["lengthscale"])
    ess = float(az.ess(log_ls[..., 0]))
    assert abs(log_ls[..., 0].mean()) < 4 / math.sqrt(ess)  # LogNormal(0, 1) prior
    assert 0.1 < post.move_stats["relevant"].mean() < 0.9  # both accepted and rejected flips happen
