"""Why the joint log-likelihood's SBC ranks lean low (BENCHMARKS.md, calibration section): the GP's rank
histogram at the table's settings and with a longer warm-up and more thinning, the binomial tail of its
lowest tenth, and the rank-0 simulations rerun with 8 chains. Run: python benchmarks/scripts/sbc_loglik.py"""

import jax
import numpy as np
from scipy import stats

import inference
from inference.calibration import _joint_loglik_fn
from zoo import GP, Real, Space
from zoo.data import bucket_size, make_data

SPACE = Space([Real("x0", 0.0, 1.0), Real("x1", 0.0, 1.0)])


def histogram(warmup, thinning):
    res = inference.calibrate(GP(SPACE), n_points=8, num_simulations=100, seed=1, num_warmup=warmup, num_samples=25,
                              num_chains=2, thinning=thinning, progress=False)
    ranks = res.ranks["log_likelihood"]
    counts = np.histogram(ranks, bins=10, range=(0, res.num_draws + 1))[0]
    tail = stats.binom.sf(counts[0] - 1, len(ranks), 0.1)
    print(f"warm-up {warmup}, thinning {thinning}: deciles {counts.tolist()}, rank 0: {(ranks == 0).sum()}, "
          f"P(lowest tenth >= {counts[0]} | uniform) = {tail:.3f}")


def rank_zero_reruns():
    """The simulations of calibrate(seed=1) whose truth ranks 0, refitted with 8 chains x 400 draws."""
    gp = GP(SPACE)
    X = SPACE.encode(SPACE.sample(8, seed=1))
    size = bucket_size(8, steps=gp.bucket_steps)
    template = make_data(X, np.zeros(8), size=size, fill_row=SPACE.fill_row())
    joint = _joint_loglik_fn(gp)
    root = jax.random.PRNGKey(1)
    for k in range(100):  # the same keys as inference.calibrate
        k_sim, k_fit, _ = jax.random.split(jax.random.fold_in(root, k), 3)
        truth, y = gp.simulate(k_sim, template)
        y = np.asarray(y)[:8]
        post = inference.sample(gp, X, y, k_fit, standardize=False, size=size, num_warmup=150, num_samples=25,
                                num_chains=2, thinning=2)
        t = float(joint({s: np.asarray(v) for s, v in truth.items()}, post.data))
        if (post.log_likelihood().sum(-1) < t).sum() > 0:
            continue
        big = inference.sample(gp, X, y, 7, standardize=False, size=size, num_warmup=600, num_samples=400,
                               num_chains=8, thinning=2)
        medians = np.median(np.log(big.samples["noise"]), axis=1)
        print(f"simulation {k}: true noise {float(truth['noise']):.4f}, lengthscales "
              f"{np.round(np.asarray(truth['lengthscale']), 2).tolist()}; 8 chains' median log noise spread "
              f"{medians.max() - medians.min():.2f}; share of draws below the true log-likelihood "
              f"{(big.log_likelihood().sum(-1) < t).mean():.3f}")


if __name__ == "__main__":
    histogram(150, 2)
    histogram(600, 6)
    rank_zero_reruns()
