"""Minima of the built-in additive GP instances, computed by `python -m optim.bench.problems.additive`
(optim.bench.problems.additive.compute_optimum); do not edit by hand."""

OPTIMA = {
    "star20/0": -23.964992735073363,
    "tree50/0": -67.47250846389255,
    "grid25/0": -47.4379211594502,
    "partition12/0": -19.067293033980672,
    "path100/0": -157.90226222780558,
}
