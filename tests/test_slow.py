"""Heavier end-to-end checks, run with `python -m pytest -m slow` (10 min 23 s for the six slow tests here and in test_additive.py and test_problems.py, on 2 cores, 2026-11-23, before the RKHS check was added, which takes 15 min 25 s alone; the treed prior check in test_treed.py took 9 min 34 s by itself, on a machine shared with a benchmark run)."""

import pytest

from optim import minimize
from optim.bench import get_problem


@pytest.mark.slow
def test_gp_finds_the_right_branch_of_jenatton_small():
    """The fully Bayesian GP with per-path log-EI reaches regret < 1e-2 within 40 evaluations in at
    least 4 of 5 seeds (BENCHMARKS.md: 5/5 within 1e-2 by 50 evaluations)."""
    problem = get_problem("jenatton_small")
    hits = 0
    for seed in range(5):
        res = minimize(problem, problem.space, "gp", budget=40, seed=seed, n_init=10)
        hits += problem.regret(res.best_value) < 1e-2
    assert hits >= 4, hits


@pytest.mark.slow
def test_bark_beats_random_search_on_tree_function():
    """BARK BO (MIP-optimized UCB) against random search from the same 20-point design, 5 seeds,
    15 BO iterations: BARK's best value is lower in at least 4 of 5 seeds."""
    problem = get_problem("tree_function")
    wins = 0
    for seed in range(5):
        bark = minimize(problem, problem.space, "bark", budget=35, seed=seed, n_init=20).best_value
        rand = minimize(problem, problem.space, "random", budget=35, seed=seed, n_init=20).best_value
        wins += bark < rand
    assert wins >= 4, wins


@pytest.mark.slow
def test_the_treed_gp_beats_the_flat_gp_on_rkhs_across_seeds():
    """Issue 17's end-to-end check, on seeds 0-3 with 5 + 35 evaluations and `deterministic=True` for both:
    `Treed(space, partition="mcmc", likelihood="leaves", warp=True)` against the flat `gp`. BENCHMARKS.md ("Per-leaf
    warping on the sampled partition") has the treed model within 1e-2 of the minimum on 16 of 16 seeds and the
    flat GP on 6 of 16. The flat GP's misses end at the smooth local minimum (-4.968, a gap of 0.77). 16 of 16 puts
    the treed model's miss rate below 0.17 (95%, the exact binomial bound 1 - 0.05^(1/16)), so it misses twice in 4 with probability below
    0.14 (0.006 at the point estimate 1/32). The mean gap of 0.1 asks for at least one more hit than the flat GP,
    whose 4 of 4 at its rate of 6/16 has probability 0.02."""
    from zoo.treed import Treed

    problem = get_problem("rkhs1d")
    treed, flat = [], []
    for seed in range(4):
        model = Treed(problem.space, partition="mcmc", likelihood="leaves", warp=True)
        treed.append(minimize(problem, problem.space, model, budget=40, seed=seed, n_init=5,
                              deterministic=True).best_value)
        flat.append(minimize(problem, problem.space, "gp", budget=40, seed=seed, n_init=5,
                             deterministic=True).best_value)
    hits = sum(problem.regret(v) < 1e-2 for v in treed)
    assert hits >= 3, (treed, flat)
    assert sum(treed) / 4 < sum(flat) / 4 - 0.1, (treed, flat)
