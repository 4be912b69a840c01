"""Inspect a fully Bayesian GP posterior with ArviZ: summary table, r_hat / ESS, trace and rank plots.

Fits the GP to 30 evaluations of Hartmann-6, then converts the posterior to ArviZ's object: an
``xarray.DataTree`` with ArviZ 1.x (Python >= 3.12), ``InferenceData`` with ArviZ 0.x (Python 3.11).
Run: python examples/inspect_posterior.py   (writes gp_trace.png and gp_rank.png next to where you run it)
"""

import os

import arviz as az
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import inference  # noqa: E402
from inference.arviz_io import arviz_major  # noqa: E402
from optim.bench import get_problem  # noqa: E402
from zoo import GP  # noqa: E402

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"
out_dir = os.environ.get("TREEZOO_EXAMPLES_OUT", ".")

problem = get_problem("hartmann6")
configs = problem.space.sobol(30, seed=1)
X = problem.space.encode(configs)
y = [problem(c) for c in configs]

posterior = inference.sample(GP(problem.space), X, y, key=0, num_warmup=100 if FAST else 500,
                             num_samples=50 if FAST else 500, num_chains=4)
idata = posterior.to_arviz()
print(idata)
summary = az.summary(idata, var_names=["lengthscale", "outputscale", "noise", "mean"])
print(summary[["mean", "sd", "ess_bulk", "ess_tail", "r_hat"]])
print("divergences:", int(idata.sample_stats["diverging"].sum()))

print("lowest bulk ESS:", float(az.ess(idata, var_names=["lengthscale"])["lengthscale"].min()),
      " highest r_hat:", float(az.rhat(idata, var_names=["lengthscale"])["lengthscale"].max()))

path = os.path.join(out_dir, "gp_trace.png")
rank_path = os.path.join(out_dir, "gp_rank.png")
if arviz_major() >= 1:  # ArviZ 1.x (arviz-plots): one call draws densities beside traces; figures are PlotCollections
    az.plot_trace_dist(idata, var_names=["lengthscale", "noise"]).savefig(path, dpi=80)
    az.plot_rank(idata, var_names=["noise"]).savefig(rank_path, dpi=80)
else:  # ArviZ 0.x spellings of the same two plots
    az.plot_trace(idata, var_names=["lengthscale", "noise"], compact=True)
    plt.tight_layout()
    plt.savefig(path, dpi=80)
    az.plot_rank(idata, var_names=["noise"])
    plt.savefig(rank_path, dpi=80)
print("trace plot written to", path, "and rank plot to", rank_path)

mean, var = posterior.predict(X[:3])  # per-sample predictions [S, 3], user units
print("posterior mean at 3 training points:", mean.mean(0).round(3), "observed:", [round(v, 3) for v in y[:3]])
