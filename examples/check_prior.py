"""Check a prior and its sampler by simulation-based calibration before trusting it in a BO run.

`inference.calibrate` draws hyperparameters (and structure) from the model's prior, simulates y from the
model, runs the sampler the BO loop uses, and records where the true values rank among the posterior
draws. A correct sampler gives uniform ranks; the ECDF-difference plot shows each quantity inside its
simultaneous band. A wrong target (here the GP with its density tempered by 1/4, a deliberate bug)
gives ranks piled in the middle, and the check says FAILED (`inference.tempered` builds such a negative
control for any surrogate: a check that cannot fail it has no power).
Run: python examples/check_prior.py   (writes sbc_gp.png and sbc_tempered.png next to where you run it)
"""

import os

import matplotlib

matplotlib.use("Agg")

import inference  # noqa: E402
from inference.arviz_io import arviz_major  # noqa: E402
from zoo import GP, Real, Space  # noqa: E402

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"
out_dir = os.environ.get("TREEZOO_EXAMPLES_OUT", ".")


space = Space([Real("x0", 0.0, 1.0), Real("x1", 0.0, 1.0)])
# fast mode: the test suite's quick sampler settings (shared compilation) and too few simulations for a
# verdict (tests/test_calibration.py makes the checks); otherwise a real check
settings = (dict(num_simulations=10, num_warmup=80, num_samples=8, num_chains=2, thinning=2, max_tree_depth=5)
            if FAST else dict(num_simulations=200, num_warmup=200, num_samples=50, num_chains=2, thinning=2))
for label, model in [("gp", GP(space)), ("tempered", inference.tempered(GP(space), 0.25))]:
    result = inference.calibrate(model, n_points=6, seed=0, progress=not FAST, **settings)
    print(result.table())
    result.plot(os.path.join(out_dir, f"sbc_{label}.png"))
    if arviz_major() >= 1:  # ArviZ 1.x draws the same check for one quantity from the PIT values
        import arviz as az
        az.plot_ecdf_pit(result.to_arviz(), var_names=["noise"]).savefig(
            os.path.join(out_dir, f"sbc_{label}_noise_arviz.png"))
print("plots written to", out_dir)
