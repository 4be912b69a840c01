"""Smooth here, jagged there: a treed GP (paper 004) splits the input where the objective changes character.

The RKHS function of 004 Fig. 1 on [0, 1] is smooth on the left and jagged on the right. One stationary GP
has to pick one lengthscale for both; `treed_bayes` samples a partition of [0, 1] (grow / prune / change
moves on a tree prior) with an independent Matérn GP in each leaf. The script prints the leaves' ArviZ
summary and draws the posterior mean, a 2-sd band and where the sampled partitions split.
Run: python examples/treed_partition.py   (writes treed_partition.png next to where you run it)
"""

import os

import arviz as az
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import inference  # noqa: E402
from optim.bench.problems.nonstationary import rkhs_value  # noqa: E402
from zoo import Real, Space  # noqa: E402
from zoo.treed import Treed  # noqa: E402

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"
out_dir = os.environ.get("TREEZOO_EXAMPLES_OUT", ".")

space = Space([Real("x", 0.0, 1.0)])
X = np.array([[c["x"]] for c in space.sobol(24, seed=1)])
y = -rkhs_value(X[:, 0])  # minimized, as in the benchmarks

model = Treed(space, partition="mcmc", likelihood="leaves")
# fast mode: the settings of the test suite's quick fits (shared compilation); otherwise a real run
settings = (dict(num_warmup=80, num_samples=8, num_chains=2, thinning=2, max_tree_depth=5) if FAST
            else dict(num_warmup=400, num_samples=200, num_chains=4, thinning=2))
posterior = inference.sample(model, X, y, key=0, **settings)
idata = posterior.to_arviz()
print(az.summary(idata, var_names=["n_leaves", "leaf_size", "leaf_lengthscale"], kind="stats"))
print("acceptance rate, grow / prune / change:",
      *(round(float(np.nanmean(idata.sample_stats[f"accept_{k}"])), 3) for k in ("grow", "prune", "change")))

grid = np.linspace(0.0, 1.0, 400)[:, None]
mean, var = posterior.predict(grid)
mu = mean.mean(0)
sd = np.sqrt(var.mean(0) + mean.var(0))  # the mixture's variance over posterior samples
thresholds = idata.posterior["split_threshold"].values.ravel()
thresholds = thresholds[~np.isnan(thresholds)]

fig, ax = plt.subplots(figsize=(6.0, 3.4))
ax.plot(grid[:, 0], -rkhs_value(grid[:, 0]), color="0.6", lw=1, label="objective")
ax.plot(grid[:, 0], mu, color="C0", label="posterior mean")
ax.fill_between(grid[:, 0], mu - 2 * sd, mu + 2 * sd, color="C0", alpha=0.2, label="±2 sd")
ax.scatter(X[:, 0], y, color="k", s=12, zorder=3, label="data")
ax2 = ax.twinx()
ax2.hist(thresholds, bins=40, range=(0, 1), color="C3", alpha=0.35)
ax2.set_ylabel("split thresholds (draws)", color="C3")
ax.set_xlabel("x")
ax.legend(loc="lower left", fontsize=7)
plt.tight_layout()
path = os.path.join(out_dir, "treed_partition.png")
plt.savefig(path, dpi=80)
print("posterior-and-partition plot written to", path)
