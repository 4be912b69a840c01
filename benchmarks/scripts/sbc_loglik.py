"""Is the low lean of the joint log-likelihood's SBC ranks (BENCHMARKS.md, calibration section) a sampler bias?

Three runs on the GP of the table (2 reals, 8 design points, seed 1's design):
1. the table's run (inference.calibrate, seed 1): the rank histogram of the log-likelihood;
2. an exact reference sampler on the same 100 simulated data sets: sampling-importance-resampling from
   100,000 prior draws (50 draws per data set, importance-sampling ESS printed), ranked the same way;
3. the reference on 1000 fresh simulations, and NUTS (inference.calibrate) on 300 fresh ones (seed 2).
If the reference leans as NUTS does on the same data, the lean belongs to those data sets, not to NUTS.
`--models additive addtree [--seed 2 --simulations 100]` instead reruns the table's cold rows of those models on
fresh simulations.

Ranks take 51 values (0..50): the lowest of 10 equal-width bins holds 6 of them, so its share under
uniformity is 6/51, not 1/10. Run: python benchmarks/scripts/sbc_loglik.py (about 8 minutes here)."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

import inference
from inference.calibration import _joint_loglik_fn, uniformity_p_value
from zoo import GP, Real, Space
from zoo.data import bucket_size, make_data

SPACE = Space([Real("x0", 0.0, 1.0), Real("x1", 0.0, 1.0)])
GP2 = GP(SPACE)
N, DRAWS, POOL = 8, 50, 100_000
X = SPACE.encode(SPACE.sample(N, seed=1))  # inference.calibrate's design for seed 1


def report(label, ranks, rng, p=None):
    """Deciles of ranks in 0..DRAWS, the binomial tail of the lowest bin at its true share, the ECDF p-value
    (`p`, or computed here from ranks jittered into PIT values)."""
    ranks = np.asarray(ranks)
    counts = np.histogram(ranks, bins=10, range=(0, DRAWS + 1))[0]
    share = np.sum(np.arange(DRAWS + 1) < (DRAWS + 1) / 10) / (DRAWS + 1)
    tail = stats.binom.sf(counts[0] - 1, len(ranks), share)
    p = uniformity_p_value((ranks + rng.random(len(ranks))) / (DRAWS + 1)) if p is None else p
    print(f"{label}: {len(ranks)} simulations, deciles {counts.tolist()}; lowest bin {counts[0]} against "
          f"{share * len(ranks):.1f} expected, P(>= | uniform) = {tail:.3f}; ECDF test p = {p:.3f}", flush=True)


def calibrate_ranks(seed, num_simulations):
    res = inference.calibrate(GP2, n_points=N, num_simulations=num_simulations, seed=seed, num_warmup=150,
                              num_samples=25, num_chains=2, thinning=2, progress=False)
    return res.ranks["log_likelihood"]


class Reference:
    """Sampling-importance-resampling from a fixed pool of prior draws: exact as the pool grows."""

    def __init__(self):
        template = make_data(X, np.zeros(N), size=N, fill_row=SPACE.fill_row(), standardize=False)
        self.template = template
        self.pool = jax.jit(jax.vmap(lambda k: GP2.simulate(k, template)[0]))(
            jax.random.split(jax.random.PRNGKey(123), POOL))
        self.loglik = jax.jit(jax.vmap(lambda s, d: jnp.sum(GP2.log_likelihood(s, d)), in_axes=(0, None)))
        self.joint = _joint_loglik_fn(GP2)

    def rank(self, truth, y, rng):
        """(rank of the truth's log-likelihood among DRAWS resampled draws, importance-sampling ESS)."""
        data = make_data(X, np.asarray(y)[:N], size=N, fill_row=SPACE.fill_row(), standardize=False)
        t = float(self.joint({s: np.asarray(v) for s, v in truth.items()}, data))
        ll = np.asarray(self.loglik(self.pool, data))
        w = np.exp(ll - ll.max())
        w /= w.sum()
        picked = ll[rng.choice(POOL, size=DRAWS, p=w)]
        return int(np.sum(picked < t)), 1.0 / np.sum(w**2)


def main():
    rng = np.random.default_rng(0)
    report("1. NUTS, the table's run (seed 1)", calibrate_ranks(1, 100), rng)

    ref = Reference()
    padded = make_data(X, np.zeros(N), size=bucket_size(N, steps=GP2.bucket_steps), fill_row=SPACE.fill_row(),
                       standardize=False)
    root = jax.random.PRNGKey(1)
    same, ess = [], []
    for k in range(100):  # the same keys, hence the same truths and y, as inference.calibrate(seed=1)
        k_sim, _, _ = jax.random.split(jax.random.fold_in(root, k), 3)
        truth, y = GP2.simulate(k_sim, padded)
        r, e = ref.rank(truth, y, rng)
        same.append(r)
        ess.append(e)
    report("2. reference, the same 100 data sets", same, rng)
    print(f"   importance-sampling ESS: smallest {min(ess):.0f}, median {np.median(ess):.0f}")

    fresh_root = jax.random.PRNGKey(3)
    fresh = [ref.rank(*GP2.simulate(jax.random.fold_in(fresh_root, k), ref.template), rng)[0] for k in range(1000)]
    report("3a. reference, 1000 fresh data sets", fresh, rng)
    report("3b. NUTS, 300 fresh data sets (seed 2)", calibrate_ranks(2, 300), rng)


def other_models(names, seed=2, num_simulations=100):
    """The table's cold calibration of each named model (its space as in treezoo-bench calibrate) with another seed."""
    from optim.bench.runner import calibration_model

    rng = np.random.default_rng(0)
    for name in names:
        model, _ = calibration_model(name)
        res = inference.calibrate(model, n_points=N, num_simulations=num_simulations, seed=seed, num_warmup=150,
                                  num_samples=25, num_chains=2, thinning=2, progress=False)
        smallest = min(res.p_values, key=res.p_values.get)
        print(f"{name}, seed {seed}: {'pass' if res.passed else 'FAIL'}, smallest p {res.p_values[smallest]:.3f} "
              f"({smallest}) against the level {res.level:.4f}", flush=True)
        for q in dict.fromkeys([smallest, "log_likelihood"]):
            report(f"   {name}'s {q}", res.ranks[q], rng, p=res.p_values[q])


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="rerun these models' cold rows instead of the GP study")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--simulations", type=int, default=100)
    args = parser.parse_args()
    if args.models:
        other_models(args.models, seed=args.seed, num_simulations=args.simulations)
    else:
        main()
