"""Which inputs interact? The `additive` surrogate's posterior over dependency forests, read with ArviZ.

An objective on [0, 1]^6 that is a sum of parts on (x0, x1), (x2, x3) and x4 alone (x5 is inert). The
model samples forests over the six inputs together with per-input lengthscales and scales (paper
002); the posterior edge-inclusion probabilities say which pairs interact. Writes a matrix plot of
those probabilities with the true edges outlined.
Run: python examples/additive_forest.py   (writes additive_edges.png next to where you run it)
"""

import os

import arviz as az
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import inference  # noqa: E402
from zoo import Real, Space  # noqa: E402
from zoo.additive import Additive  # noqa: E402

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"
out_dir = os.environ.get("TREEZOO_EXAMPLES_OUT", ".")
TRUE_EDGES = [(0, 1), (2, 3)]


def objective(x):
    return (np.sin(5 * x[:, 0]) * np.cos(4 * x[:, 1]) + np.sin(6 * x[:, 2] + 4 * x[:, 3])
            + 0.5 * (x[:, 4] - 0.5) ** 2)


space = Space([Real(f"x{i}", 0.0, 1.0) for i in range(6)])
X = np.array([[c[n] for n in space.names] for c in space.sobol(30, seed=2)])
y = objective(X)

model = Additive(space)
# fast mode: the settings of the test suite's quick fits (shared compilation); otherwise a real run
settings = (dict(num_warmup=80, num_samples=8, num_chains=2, thinning=2, max_tree_depth=5) if FAST
            else dict(num_warmup=500, num_samples=250, num_chains=4, thinning=2))
posterior = inference.sample(model, X, y, key=0, **settings)
idata = posterior.to_arviz()
print(az.summary(idata, var_names=["lengthscale", "scale", "noise", "n_edges"])[["mean", "sd", "ess_bulk", "r_hat"]])
print("acceptance rate, toggle / mutation:", float(idata.sample_stats["accept_toggle"].mean()),
      float(idata.sample_stats["accept_mutation"].mean()))

P = model.edge_probabilities(posterior.samples)
print("posterior edge-inclusion probabilities:")
print(np.array2string(P, precision=2, suppress_small=True))

fig, ax = plt.subplots(figsize=(4.2, 3.6))
image = ax.imshow(P, vmin=0, vmax=1, cmap="viridis")
for i, j in TRUE_EDGES:
    for a, b in ((i, j), (j, i)):
        ax.add_patch(plt.Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
ax.set_xticks(range(6), space.names)
ax.set_yticks(range(6), space.names)
ax.set_title("P(edge | data); true edges outlined")
fig.colorbar(image, ax=ax)
plt.tight_layout()
path = os.path.join(out_dir, "additive_edges.png")
plt.savefig(path, dpi=80)
print("edge-probability plot written to", path)
