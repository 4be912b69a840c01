"""The ask/tell loop and minimize: determinism, save/load, bad input, and beating random search."""

import dataclasses
import json
import math

import numpy as np
import pytest

from optim import BayesOpt, minimize
from optim.loop import SamplerSettings
from optim.registry import SURROGATES
from tests.conftest import FAST_OPTIMIZER, FAST_SAMPLER
from zoo import GP, Real, Space
from zoo.addtree import AddTree
from zoo.additive import Additive

FAST = dict(sampler=FAST_SAMPLER, optimizer=FAST_OPTIMIZER)


def branin_like(c):
    return (c["x0"] - 0.3) ** 2 + 2 * (c["x1"] - 0.7) ** 2


def _run(opt, fn, steps):
    for _ in range(steps):
        c = opt.ask()
        opt.tell(c, fn(c))
    return opt


def test_same_seed_same_run_and_same_initial_design_across_surrogates(flat2):
    a = _run(BayesOpt(flat2, "gp", seed=3, n_init=4, **FAST), branin_like, 6)
    b = _run(BayesOpt(flat2, "gp", seed=3, n_init=4, **FAST), branin_like, 6)
    r = _run(BayesOpt(flat2, "random", seed=3, n_init=4, **FAST), branin_like, 6)
    assert [h["config"] for h in a.history] == [h["config"] for h in b.history]
    assert [h["config"] for h in a.history[:4]] == [h["config"] for h in r.history[:4]]
    assert [h["source"] for h in a.history] == ["init"] * 4 + ["bo"] * 2
    assert a.history[-1]["fit_seconds"] > 0 and a.history[-1]["acq_seconds"] > 0


def test_save_load_resumes_bit_identically(flat2, tmp_path):
    straight = _run(BayesOpt(flat2, "gp", seed=1, n_init=3, **FAST), branin_like, 7)
    first = _run(BayesOpt(flat2, "gp", seed=1, n_init=3, **FAST), branin_like, 5)
    first.ask()  # a pending (asked, not told) suggestion survives the round trip too
    path = tmp_path / "run.json"
    first.save(path)
    resumed = BayesOpt.load(path)
    [c] = resumed.pending  # the evaluation in flight at the save: evaluated again, then the run goes on
    resumed.tell(c, branin_like(c))
    _run(resumed, branin_like, 1)
    assert json.dumps([h["config"] for h in resumed.history]) == json.dumps([h["config"] for h in straight.history])
    assert [h["value"] for h in resumed.history] == [h["value"] for h in straight.history]
    assert resumed.best_value == straight.best_value


def test_every_ask_proposes_anew_and_user_points_are_accepted(flat2):
    opt = BayesOpt(flat2, "random", seed=0, n_init=2)
    c = opt.ask()
    d = opt.ask()  # c is in flight: a second ask gives the next configuration, not c again
    assert d != c and opt.pending == [c, d]
    opt.tell({"x0": 0.5, "x1": 0.5}, 1.0)  # not a pending one: recorded as a user point
    assert opt.history[-1]["source"] == "user" and opt.pending == [c, d]
    opt.tell(d, 2.0)  # out of order
    assert opt.history[-1]["source"] == "init" and opt.pending == [c]


def test_bad_tell_raises_and_loses_nothing(flat2):
    opt = BayesOpt(flat2, "random", seed=0, n_init=2)
    opt.tell({"x0": 0.1, "x1": 0.2}, 3.0)
    before = list(opt.history)
    with pytest.raises(ValueError, match="unknown parameter"):
        opt.tell({"x0": 0.1, "x1": 0.2, "x9": 1}, 1.0)
    with pytest.raises(ValueError, match="outside"):
        opt.tell({"x0": 1.5, "x1": 0.2}, 1.0)
    with pytest.raises(TypeError, match="real number"):
        opt.tell({"x0": 0.1, "x1": 0.2}, "1.0")
    with pytest.raises(TypeError, match="scalar"):
        opt.tell({"x0": 0.1, "x1": 0.2}, np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="needs a value"):
        opt.tell({"x0": 0.1, "x1": 0.2})
    assert opt.history == before


def nan_then_crash():
    """An objective whose 2nd evaluation returns NaN and whose 3rd raises; branin_like otherwise."""
    calls = []

    def flaky(c):
        calls.append(c)
        if len(calls) == 2:
            return float("nan")
        if len(calls) == 3:
            raise RuntimeError("simulator crashed")
        return branin_like(c)
    return flaky


def test_nonfinite_and_failing_evaluations_are_recorded_and_with_on_failure_ignore_not_modelled(flat2):
    flaky = nan_then_crash()
    with pytest.warns(UserWarning, match="simulator crashed"):
        res = minimize(flaky, flat2, "gp", budget=6, seed=0, n_init=4, on_failure="ignore", **FAST)
    status = [h["status"] for h in res.history]
    assert status == ["ok", "nonfinite", "error", "ok", "ok", "ok"]
    assert "simulator crashed" in res.history[2]["error"]
    assert res.posterior.X.shape[0] == 3  # the last fit saw the 3 finite values among the first 5
    assert np.isnan(res.values[1]) and np.isnan(res.values[2])
    assert res.best_value == min(h["value"] for h in res.history if h["status"] == "ok")


def test_by_default_failed_evaluations_are_fitted_at_the_worst_value(flat2, tmp_path):
    flaky = nan_then_crash()
    journal = tmp_path / "run.journal"
    with pytest.warns(UserWarning, match="simulator crashed"):
        res = minimize(flaky, flat2, "gp", budget=6, seed=0, n_init=4, checkpoint=journal, **FAST)  # on_failure="worst"
    assert [h["status"] for h in res.history] == ["ok", "nonfinite", "error", "ok", "ok", "ok"]
    opt = res.optimizer
    worst = max(h["value"] for h in opt.observations)
    assert [o["value"] for o in opt.model_observations][-2:] == [worst, worst]
    assert [o["config"] for o in opt.model_observations][-2:] == [res.history[1]["config"], res.history[2]["config"]]
    # the last fit (before evaluation 6) saw the 3 finite values among the first 5, then the 2 failed points
    X, y = np.asarray(res.posterior.X), np.asarray(res.posterior.y)
    assert X.shape[0] == 5 and np.allclose(X[3:], flat2.encode([res.history[1]["config"], res.history[2]["config"]]))
    assert y[3] == y[4] == y.max()  # the worst value, on the model's scale
    opt.close()
    assert BayesOpt.load(journal).on_failure == "worst"  # the journal keeps the setting, and a resume must match
    with pytest.raises(ValueError, match="differs in on_failure"):
        BayesOpt(flat2, "gp", seed=0, n_init=4, on_failure="ignore", journal=journal, **FAST)
    BayesOpt(flat2, "gp", seed=0, n_init=4, journal=journal, **FAST).close()  # unset: the journal's, so it resumes
    with pytest.raises(ValueError, match="on_failure must be one of"):
        BayesOpt(flat2, "gp", on_failure="impute")
    # a journal from before the setting ran with failures ignored: unset, it resumes so
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    del events[0]["run"]["on_failure"]
    journal.write_text("".join(json.dumps(e) + "\n" for e in events))
    old = BayesOpt(flat2, "gp", seed=0, n_init=4, journal=journal, **FAST)
    assert old.on_failure == "ignore" and len(old.history) == 6 and len(old.model_observations) == 4
    old.close()


def test_budget_and_initial_design_rules(flat2):
    with pytest.raises(ValueError, match="exceeds budget"):
        minimize(branin_like, flat2, "random", budget=3, n_init=5)
    with pytest.raises(ValueError, match="positive integer"):
        minimize(branin_like, flat2, "random", budget=0)
    res = minimize(branin_like, flat2, "random", budget=2)  # default n_init (3) is capped at the budget
    assert [h["source"] for h in res.history] == ["init", "init"]
    with pytest.raises(ValueError, match="unknown surrogate"):
        BayesOpt(flat2, "forest?")
    other = Space([Real("z", 0, 1)])
    with pytest.raises(ValueError, match="different space"):
        BayesOpt(flat2, GP(other))


def test_constant_and_duplicate_observations_are_handled(flat2):
    opt = BayesOpt(flat2, "gp", seed=0, n_init=2, **FAST)
    for _ in range(3):  # the same point three times, same value: a constant, duplicated data set
        opt.tell({"x0": 0.25, "x1": 0.75}, 2.0)
    c = opt.ask()
    flat2.validate(c)
    assert np.all(np.isfinite(opt.posterior.stats["lp"]))
    assert opt.history[-1]["value"] == 2.0 and len(opt.history) == 3


@pytest.mark.slow  # suite time (14 s of 32 BO runs): BO quality is BENCHMARKS.md's job; the loop has default tests
def test_gp_beats_random_search(flat2):
    """A smooth 2-D bowl with a ripple, 14 evaluations, 16 seeds paired by their initial design: the GP's log10
    regret is lower than random search's by the one-sided Wilcoxon signed-rank test at 0.05. (8 seeds were
    too few: random search is lucky on seed 4, and p moved between 0.039 and 0.074 when an equivalent
    warm-up rewrite changed the runs' last bits; 16 seeds gave p = 0.003.)"""
    from scipy.stats import wilcoxon

    def bowl(c):
        return (c["x0"] - 0.3) ** 2 + 2 * (c["x1"] - 0.7) ** 2 + 0.05 * math.sin(9 * c["x0"])
    grid = np.linspace(0, 1, 2001)
    optimum = min((g - 0.3) ** 2 + 0.05 * math.sin(9 * g) for g in grid)
    regret = {"gp": [], "random": []}
    for method in regret:
        for seed in range(16):
            res = minimize(bowl, flat2, method, budget=14, seed=seed, n_init=4, **FAST)
            regret[method].append(math.log10(res.best_value - optimum + 1e-9))
    assert wilcoxon(regret["gp"], regret["random"], alternative="less").pvalue < 0.05, regret


def test_output_transforms_keep_the_order_and_check_their_domain():
    from optim.transforms import check_output_transform, transform_outputs

    y = np.random.default_rng(0).lognormal(0.0, 2.0, size=40)  # heavy right tail
    order = np.argsort(y)
    for kind in ("none", "log", "yeo-johnson"):
        z = transform_outputs(y, kind)
        assert np.all(np.diff(z[order]) > 0), kind  # strictly monotone: same ranks, same minimizer
    yj = transform_outputs(y, "yeo-johnson")
    def skew(a):
        return np.mean((a - a.mean()) ** 3) / np.std(a) ** 3
    assert abs(skew(yj)) < 0.5 * abs(skew(y))  # the tail is pulled in
    assert np.all(np.diff(transform_outputs(y - 5.0, "yeo-johnson")[order]) > 0)  # any sign
    assert np.array_equal(transform_outputs(np.full(4, 2.0), "yeo-johnson"), np.full(4, 2.0))
    # fitted on the first n_fit values, then one fixed map: later values do not move the earlier ones
    np.testing.assert_array_equal(transform_outputs(y, "yeo-johnson-design", n_fit=len(y)), yj)
    design = transform_outputs(y, "yeo-johnson-design", n_fit=10)
    np.testing.assert_array_equal(design[:25], transform_outputs(y[:25], "yeo-johnson-design", n_fit=10))
    assert not np.allclose(design, yj) and np.all(np.diff(design[order]) > 0)
    with pytest.raises(ValueError, match="positive"):
        transform_outputs(np.array([1.0, -1.0]), "log")
    with pytest.raises(ValueError, match="output_transform must be one of"):
        check_output_transform("sqrt")


def test_the_log_tail_transform_keeps_the_better_half_and_pulls_in_the_worse():
    """"log-tail": identity up to the median, m + s log(1 + (y - m) / s) above it with s = m - min(y); strictly
    monotone, continuous with slope 1 at the median, and a value 1e6 spreads above the median lands within
    s log(1e6) of it. A power transform (Yeo-Johnson) moves the better half too: the check that this one does not
    fails for it."""
    from optim.transforms import transform_outputs

    y = np.random.default_rng(1).lognormal(0.0, 2.0, size=41)  # odd size: the median is a value
    z = transform_outputs(y, "log-tail")
    m, s = np.median(y), np.median(y) - y.min()
    low = y <= m
    np.testing.assert_array_equal(z[low], y[low])
    assert not np.allclose(transform_outputs(y, "yeo-johnson")[low], y[low])
    order = np.argsort(y)
    assert np.all(np.diff(z[order]) > 0)
    np.testing.assert_allclose(z[~low], m + s * np.log1p((y[~low] - m) / s), rtol=1e-12)
    # two values added, one each side of the median, leave the median and s as they were
    far = transform_outputs(np.append(y, [y.min() + 0.5 * s, m + 1e6 * s]), "log-tail")[-1]
    assert m < far <= m + s * math.log1p(1e6) + 1e-9 * s
    eps = 1e-7 * s  # slope 1 at the median: the step just above it equals eps to O(eps / s)
    above = transform_outputs(np.append(y, [y.min() + 0.5 * s, m + eps]), "log-tail")[-1]
    assert above - m == pytest.approx(eps, rel=1e-6)
    # half the values tie with the least one (s = 0), too few values, any sign: as given or shifted alike
    ties = np.array([1.0, 1.0, 1.0, 5.0, 9.0])
    np.testing.assert_array_equal(transform_outputs(ties, "log-tail"), ties)
    np.testing.assert_array_equal(transform_outputs(np.array([3.0, 1.0]), "log-tail"), [3.0, 1.0])
    np.testing.assert_allclose(transform_outputs(y - 50.0, "log-tail"), z - 50.0, rtol=0, atol=1e-9)


def test_the_copula_transform_gives_normal_scores_of_the_ranks():
    """"copula": Phi^-1((rank - 1/2) / n), ties at their mean rank. Only the order matters: any increasing map of
    y (here exp and an affine map) gives the same values, and the best values 1e-6 apart are spread as far as any
    two neighbours in rank, where the values themselves are not."""
    from scipy import stats

    from optim.transforms import transform_outputs

    y = np.random.default_rng(2).normal(size=30)
    y[:2] = y.min() - np.array([1e-6, 2e-6])  # the two best, 1e-6 apart
    z = transform_outputs(y, "copula")
    np.testing.assert_allclose(np.sort(z), stats.norm.ppf((np.arange(1, 31) - 0.5) / 30), rtol=0, atol=1e-12)
    assert np.all(np.diff(z[np.argsort(y)]) > 0)
    np.testing.assert_array_equal(transform_outputs(np.exp(y), "copula"), z)
    np.testing.assert_array_equal(transform_outputs(3.0 * y - 7.0, "copula"), z)
    assert z[0] - z[1] == pytest.approx(stats.norm.ppf(1.5 / 30) - stats.norm.ppf(0.5 / 30))
    np.testing.assert_allclose(transform_outputs(np.array([2.0, 1.0, 2.0]), "copula"),
                               stats.norm.ppf([2.0 / 3, 0.5 / 3, 2.0 / 3]))  # ranks 2.5, 1, 2.5
    np.testing.assert_array_equal(transform_outputs(np.array([4.0]), "copula"), [0.0])


def test_the_design_fitted_transform_is_fitted_on_the_initial_design(flat2):
    from optim.transforms import transform_outputs

    opt = _run(BayesOpt(flat2, "gp", seed=2, n_init=4, output_transform="yeo-johnson-design", **FAST), branin_like, 6)
    values = [h["value"] for h in opt.history[:5]]  # the posterior of the last proposal saw five values
    expected = transform_outputs(values, "yeo-johnson-design", n_fit=4)
    assert opt.posterior.data.y_mean == pytest.approx(np.mean(expected))
    assert opt.posterior.data.y_mean != pytest.approx(np.mean(transform_outputs(values, "yeo-johnson")))


def test_the_warped_transform_is_the_wide_warp_of_the_standardized_values_at_the_given_power():
    from optim.transforms import transform_outputs
    from zoo.warping import TAIL_SLOPE, WideYeoJohnson

    y = np.random.default_rng(0).lognormal(0.0, 1.5, 30)
    z = (y - y.mean()) / y.std()
    order = np.argsort(y)
    for power in (-0.8, 0.0, 0.4, 1.5):
        out = transform_outputs(y, "yeo-johnson-warped", power=power)
        np.testing.assert_allclose(out, np.asarray(WideYeoJohnson().forward(z, power)), rtol=1e-12)
        assert np.all(np.diff(out[order]) > 0)
    # at lambda = 1 Yeo-Johnson is the identity, so the wide map is z plus its tail slope
    np.testing.assert_allclose(transform_outputs(y, "yeo-johnson-warped", power=1.0), (1 + TAIL_SLOPE) * z, rtol=1e-12)
    with pytest.raises(ValueError, match="power"):
        transform_outputs(y, "yeo-johnson-warped")


def test_the_warped_transform_takes_the_twins_median_power_and_fits_one_scale(flat2):
    """At a fit the loop samples the surrogate's wide-warped twin and maps the values at the median of its draws'
    lambda; the model it then fits has no lambda of its own, so every draw predicts on that one scale."""
    from inference import sample
    from optim.loop import Stream, derive_seed
    from optim.transforms import transform_outputs, warped_power
    from zoo.warping import WARP_SITE, WideYeoJohnson

    opt = _run(BayesOpt(flat2, "gp", seed=2, n_init=4, output_transform="yeo-johnson-warped", **FAST), branin_like, 6)
    assert isinstance(opt.warp_twin, GP) and isinstance(opt.warp_twin.output_warp, WideYeoJohnson)
    powers = [h["warp_power"] for h in opt.history[4:]]
    assert all(-1.0 < p < 2.0 for p in powers) and powers[0] != powers[1]
    # the first BO step's power: the twin's cold fit on the design, with the WARP stream's seed
    X = flat2.encode([h["config"] for h in opt.history[:4]])
    values = np.array([h["value"] for h in opt.history[:4]])
    s = FAST_SAMPLER
    twin = sample(opt.warp_twin, X, values, derive_seed(2, 4, Stream.WARP), num_warmup=s.cold_warmup,
                  num_samples=s.num_samples, num_chains=s.num_chains, thinning=s.thinning,
                  max_tree_depth=s.max_tree_depth)
    assert powers[0] == round(warped_power(twin), 4)
    # the last fit: the values at the last power, and no lambda among the model's sites
    fitted = transform_outputs([h["value"] for h in opt.history[:5]], "yeo-johnson-warped", power=opt.warp_power)
    np.testing.assert_allclose(opt.posterior.y, fitted, rtol=1e-12)
    assert WARP_SITE not in opt.posterior.flat_samples()
    again = _run(BayesOpt(flat2, "gp", seed=2, n_init=4, output_transform="yeo-johnson-warped", **FAST), branin_like, 6)
    assert [h["config"] for h in again.history] == [h["config"] for h in opt.history]


def test_the_warped_transform_refuses_models_it_cannot_warp_before_any_evaluation(flat2):
    from zoo.base import NOISELESS_PRIOR

    for surrogate in ("random", "gp_yjw", "additive"):
        with pytest.raises(ValueError, match="yeo-johnson-warped"):
            BayesOpt(flat2, surrogate, output_transform="yeo-johnson-warped")
    exact = BayesOpt(flat2, "gp", deterministic=True, output_transform="yeo-johnson-warped")
    assert exact.warp_twin.noise_prior == exact.surrogate.noise_prior == NOISELESS_PRIOR


def test_log_output_transform_fits_log_values_and_survives_save_load(flat2, tmp_path):
    def fn(c):
        return math.exp(5.0 * branin_like(c))
    opt = _run(BayesOpt(flat2, "gp", seed=2, n_init=4, output_transform="log", **FAST), fn, 5)
    logs = np.log([h["value"] for h in opt.history[:4]])
    assert opt.posterior.data.y_mean == pytest.approx(np.mean(logs))  # the model saw log y
    assert opt.best_value == min(h["value"] for h in opt.history)  # the history keeps the user's values
    before = list(opt.history)
    opt.ask()
    with pytest.raises(ValueError, match="positive"):
        opt.tell(opt.ask(), 0.0)
    assert opt.history == before
    with pytest.raises(ValueError, match="output_transform"):
        BayesOpt(flat2, "gp", output_transform="sqrt")
    opt.save(tmp_path / "run.json")
    assert BayesOpt.load(tmp_path / "run.json").output_transform == "log"


def test_a_warm_start_whose_chains_freeze_is_refitted_from_a_cold_start(flat2):
    """A warm start whose step size is 1e-300 (what dual averaging is clipped to when a new point makes the
    posterior too narrow) cannot grow it enough in the 10 warm-up sweeps: every kept draw has one log
    density. The loop sees the frozen chains, refits from a cold start and records it; the run's step before,
    warm-started intact, does not."""
    opt = _run(BayesOpt(flat2, "gp", seed=4, n_init=4, **FAST), branin_like, 6)  # proposal 6: a warm fit
    assert "cold_refit" not in opt.history[-1] and not np.any(opt.posterior.frozen_chains())
    opt._warm = opt._warm._replace(step_size=np.full_like(opt._warm.step_size, 1e-300))
    _run(opt, branin_like, 1)
    assert opt.history[-1]["cold_refit"] == "the warm-started chains froze"
    assert not np.any(opt.posterior.frozen_chains())
    assert np.all(opt.posterior.stats["step_size"] > 1e-6)


def test_refit_growth_runs_mcmc_once_the_data_have_grown_by_that_fraction(flat2):
    """refit_growth=0.5 from 4 observations: MCMC at n = 4 (the cold fit), 6 (>= 1.5 x 4) and 9 (>= 1.5 x 6); the
    asks at n = 5, 7, 8, 10 and 11 condition the last fit's draws on the new data (hyperparameters unchanged, the
    data grown), and the history marks them. Untransformed values keep their place on the model's scale, so a
    conditioned ask standardizes by the last MCMC fit's y_mean and y_std (each draw's exact GP update), where the
    grown data's own would differ; an MCMC fit standardizes afresh."""
    sampler = dataclasses.replace(FAST_SAMPLER, refit_growth=0.5)
    opt = BayesOpt(flat2, "gp", seed=2, n_init=4, sampler=sampler, optimizer=FAST_OPTIMIZER)
    draws, scales = [], []
    for _ in range(12):
        c = opt.ask()
        opt.tell(c, branin_like(c))
        if opt.posterior is not None:
            draws.append((len(opt.posterior.X), np.array(opt.posterior.samples["lengthscale"])))
            scales.append((opt.posterior.data.y_mean, opt.posterior.data.y_std,
                           np.mean(opt.posterior.y), np.std(opt.posterior.y)))
    conditioned = [h.get("conditioned", False) for h in opt.history[4:]]
    assert conditioned == [False, True, False, True, True, False, True, True]
    assert [n for n, _ in draws] == list(range(4, 12))
    for (n, ls), flag, (_, before) in zip(draws[1:], conditioned[1:], draws):
        assert np.array_equal(ls, before) == flag, n  # a conditioned ask keeps the draws, an MCMC fit moves them
    fit_scale = None
    for flag, (mean, std, data_mean, data_std) in zip(conditioned, scales):
        if not flag:  # an MCMC fit: the standardization of its own data
            np.testing.assert_allclose([mean, std], [data_mean, data_std], rtol=1e-12)
            fit_scale = (mean, std)
        else:  # conditioned: the last fit's, not that of its grown data (more than 1e-6 apart here)
            assert (mean, std) == fit_scale
            assert abs(std - data_std) > 1e-6 * data_std
    plain = _run(BayesOpt(flat2, "gp", seed=2, n_init=4, **FAST), branin_like, 8)
    assert not any("conditioned" in h for h in plain.history)  # the default (0) runs MCMC on every iteration
    assert [h["config"] for h in plain.history[:5]] == [h["config"] for h in opt.history[:5]]  # the first fit is the same


def test_between_refits_a_refitted_transform_standardizes_the_rows_afresh(flat2):
    """Yeo-Johnson is refitted on every call, so every value moves on the model's scale between two asks: the fit's
    standardization would no longer centre them, and a conditioned ask standardizes its rows afresh instead."""
    sampler = dataclasses.replace(FAST_SAMPLER, refit_every=3)
    opt = BayesOpt(flat2, "gp", seed=2, n_init=4, sampler=sampler, optimizer=FAST_OPTIMIZER,
                   output_transform="yeo-johnson")
    _run(opt, branin_like, 6)
    assert [h.get("conditioned", False) for h in opt.history[4:]] == [False, True]
    post = opt.posterior
    np.testing.assert_allclose([post.data.y_mean, post.data.y_std], [np.mean(post.y), np.std(post.y)], rtol=1e-12)


def test_cold_chains_every_kth_iteration_replace_a_warm_start_left_in_a_poor_mode(flat2):
    """restart_every=2: the fits of BO iterations 3, 5, ... (1 + 2k) also run two cold chains on the same data and
    keep the two of the four with the highest median log density, recorded in the history. A warm start moved onto
    the plateau of 1e-4 lengthscales (where the likelihood has no slope) with a step size of 1e-5 stays there
    through its 10 warm-up sweeps without restarts, about 30 nats below a fit of the data; with them, the cold
    chains replace it."""
    stuck = {}
    for every in (0, 2):
        sampler = dataclasses.replace(FAST_SAMPLER, restart_every=every)
        opt = _run(BayesOpt(flat2, "gp", seed=4, n_init=4, sampler=sampler, optimizer=FAST_OPTIMIZER), branin_like, 6)
        z = dict(opt._warm.z, lengthscale=np.full_like(opt._warm.z["lengthscale"], np.log(1e-4)))
        opt._warm = opt._warm._replace(z=z, step_size=np.full_like(opt._warm.step_size, 1e-5))
        _run(opt, branin_like, 1)  # BO iteration 3, from the poor warm start
        stuck[every] = np.median(opt.posterior.stats["lp"], 1)
        _run(opt, branin_like, 2)  # iterations 4 and 5
        restarted = [h.get("restart") for h in opt.history[4:]]
        if every == 0:
            assert restarted == [None] * 5
            continue
        assert [r is not None for r in restarted] == [False, False, True, False, True]
        first = restarted[2]
        assert first["cold_chains_kept"] == 2  # both warm chains were left on the plateau
        warm_lp, cold_lp = first["median_lp"][:2], first["median_lp"][2:]
        assert max(warm_lp) < min(cold_lp) - 10
        assert max(stuck[0]) < min(cold_lp) - 10  # the same start without restarts: its chains stayed there
        np.testing.assert_allclose(np.sort(stuck[2]), np.sort(cold_lp), atol=1e-3)
        later = restarted[4]  # the kept chains are the two best of the four recorded
        kept = np.sort(np.median(opt.posterior.stats["lp"], 1))
        np.testing.assert_allclose(kept, np.sort(later["median_lp"])[2:], atol=1e-3)
        assert later["cold_chains_kept"] == int(np.sum(np.argsort(later["median_lp"])[2:] >= 2))


def _acquisition_failing_where(monkeypatch, failing):
    """Make the integrated acquisition NaN on the encoded rows where `failing(rows)` holds, as a posterior
    sample whose factorization failed makes it."""
    import optim.integrated as integrated

    real = integrated.compiled

    def compiled_with_failures(name, *args):
        fn = real(name, *args)
        if name == "acq_values":  # the values-only path (Sobol pools) fails where the gradient path does
            return lambda prepared, X, *rest: np.where(failing(np.asarray(X)), np.nan, np.asarray(fn(prepared, X, *rest)))
        if name != "acq_value_and_grad":
            return fn

        def failing_fn(prepared, X, *rest):
            v, g = fn(prepared, X, *rest)
            return np.where(failing(np.asarray(X)), np.nan, np.asarray(v)), g
        return failing_fn
    monkeypatch.setattr(integrated, "compiled", compiled_with_failures)


def test_rows_whose_acquisition_is_nan_are_never_proposed(flat2, monkeypatch):
    """NaN on half the box: the optimizer proposes from the other half (NaN must rank last, not win argmax)."""
    opt = _run(BayesOpt(flat2, "gp", seed=4, n_init=4, **FAST), branin_like, 4)
    _acquisition_failing_where(monkeypatch, lambda X: X[:, 0] > 0.5)
    config = opt.ask()
    opt.tell(config, branin_like(config))
    assert opt.history[-1]["source"] == "bo" and config["x0"] <= 0.5


def test_an_acquisition_nan_everywhere_gives_a_recorded_random_point(flat2, monkeypatch):
    """No finite acquisition value at all: the loop proposes a seeded random configuration and says why."""
    opt = _run(BayesOpt(flat2, "gp", seed=4, n_init=4, **FAST), branin_like, 4)
    _acquisition_failing_where(monkeypatch, lambda X: np.ones(len(X), bool))
    config = opt.ask()
    opt.tell(config, branin_like(config))
    assert opt.history[-1]["source"] == "random:acquisition_failed"
    flat2.validate(config)


def test_acquisition_options_survive_save_load_and_default_settings_keep_their_keys(flat2, tmp_path):
    from optim.acquisition import UCB, LogEI

    for name, want in (("logei,xi=0.01", LogEI(xi=0.01)), ("ucb,beta=2", UCB(beta=2.0))):
        opt = BayesOpt(flat2, "gp", acquisition=name, seed=0, **FAST)
        assert opt.acquisition == want
        opt.save(tmp_path / "run.json")
        assert BayesOpt.load(tmp_path / "run.json").acquisition == want
    # a run without a margin records what it recorded before the option existed (journals stay resumable)
    assert BayesOpt(flat2, "gp", **FAST).settings_dict()["acquisition"] == {"name": "logei", "beta": None}


def test_a_run_reloads_with_the_model_it_was_built_with(flat2, tmp_path):
    """The journal records the model's class and options: a zoo model with any options (a name not registered,
    GP(space, warp=True): "gp_warp"; a registered name with other options, Additive(space, gamma=0.5)) reloads
    as built; resuming it under other options is refused; a snapshot of such a run converts to a journal."""
    warped = GP(flat2, warp=True)
    assert warped.name not in SURROGATES
    BayesOpt(flat2, warped, seed=0, **FAST).save(tmp_path / "run.json")
    assert BayesOpt.load(tmp_path / "run.json").surrogate.warp  # rebuilt from the record, no object needed
    with pytest.warns(UserWarning, match="converted to a journal"):
        opt = BayesOpt(flat2, warped, seed=0, journal=tmp_path / "run.json", **FAST)
    opt.journal.close()
    assert BayesOpt.load(tmp_path / "run.json").surrogate_spec == "gp_warp"

    sparse = Additive(flat2, gamma=0.5)
    BayesOpt(flat2, sparse, seed=0, sampler=FAST_SAMPLER, journal=tmp_path / "add.jsonl").journal.close()
    assert BayesOpt.load(tmp_path / "add.jsonl").surrogate == sparse  # not the registered "additive" (gamma None)
    with pytest.raises(ValueError, match="another model: Additive with .*'gamma': 0.5.*BayesOpt.load"):
        BayesOpt(flat2, "additive", seed=0, sampler=FAST_SAMPLER, journal=tmp_path / "add.jsonl")
    with pytest.raises(ValueError, match="differs in gamma"):
        BayesOpt.load(tmp_path / "add.jsonl", surrogate=Additive(flat2))
    # a journal from before the model was recorded resumes under its name, as it did
    lines = (tmp_path / "add.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    del header["run"]["surrogate_model"]
    (tmp_path / "old.jsonl").write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    with BayesOpt(flat2, "additive", seed=0, sampler=FAST_SAMPLER, journal=tmp_path / "old.jsonl") as resumed:
        assert resumed.surrogate == Additive(flat2)
    # a journal recorded before Additive's lengthscale_prior was an option ran the earlier prior (None): it loads
    # and resumes with that model, and the name alone (today's prior) is refused with what to pass
    header = json.loads(lines[0])
    header["run"]["surrogate_model"]["options"] = {"gamma": None, "noise_prior": [-4.0, 1.0], "graph": "posterior"}
    (tmp_path / "before.jsonl").write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    earlier = Additive(flat2, lengthscale_prior=None)
    assert BayesOpt.load(tmp_path / "before.jsonl").surrogate == earlier
    with pytest.raises(ValueError, match="another model: .*'lengthscale_prior': None.*BayesOpt.load"):
        BayesOpt(flat2, "additive", seed=0, sampler=FAST_SAMPLER, journal=tmp_path / "before.jsonl")
    with BayesOpt(flat2, earlier, seed=0, sampler=FAST_SAMPLER, journal=tmp_path / "before.jsonl") as resumed:
        assert resumed.surrogate == earlier and len(resumed.history) == len(lines) - 1


def test_a_run_of_a_user_surrogate_class_reloads_only_with_that_object(flat2, tmp_path):
    """A user's class (here a subclass of GP that keeps its name "gp") cannot be rebuilt from a journal: load
    says to pass it again, takes it, and refuses a model of another class; a snapshot from before the model was
    recorded loads from the name, as it did."""

    class MyGP(GP):
        pass

    mine = MyGP(flat2)
    BayesOpt(flat2, mine, seed=0, **FAST).save(tmp_path / "run.json")
    with pytest.raises(ValueError, match="pass the same object again"):
        BayesOpt.load(tmp_path / "run.json")
    assert type(BayesOpt.load(tmp_path / "run.json", surrogate=mine).surrogate) is MyGP
    with pytest.raises(ValueError, match="differs in class"):
        BayesOpt.load(tmp_path / "run.json", surrogate=GP(flat2))
    legacy = json.loads((tmp_path / "run.json").read_text())
    del legacy["surrogate_model"]
    (tmp_path / "run.json").write_text(json.dumps(legacy))
    assert type(BayesOpt.load(tmp_path / "run.json").surrogate) is GP


def test_deterministic_objective_makes_the_model_interpolate_and_survives_save_load(flat2, tmp_path):
    from zoo.base import NOISELESS_PRIOR

    fits = {}
    for det in (False, True):
        opt = BayesOpt(flat2, "gp", seed=0, n_init=8, deterministic=det, **FAST)
        _run(opt, branin_like, 8)
        opt.ask()  # fits the 8 observations
        X = flat2.encode([h["config"] for h in opt.history])
        y = np.array([h["value"] for h in opt.history])
        mean, _ = opt.surrogate.predict(opt.posterior.flat_samples(), opt.posterior.data, X)
        fits[det] = (np.max(np.abs(np.mean(mean, 0) - y)) / np.std(y), np.median(opt.posterior.flat_samples()["noise"]))
    assert fits[True][0] < 1e-3 < 1e-2 < fits[False][0]  # exact values are interpolated, not smoothed
    assert fits[True][1] < 1e-4 < fits[False][1]
    assert opt.surrogate.noise_prior == NOISELESS_PRIOR and opt.deterministic
    assert BayesOpt(flat2, "gp").surrogate.noise_prior != NOISELESS_PRIOR  # the registered model is untouched
    opt.save(tmp_path / "run.json")
    loaded = BayesOpt.load(tmp_path / "run.json")
    assert loaded.deterministic and loaded.surrogate == opt.surrogate
    from zoo.base import NoiselessForm

    class WithoutNoiselessForm(GP):  # a model that, as built, does not serve the capability its class declares
        def offers(self, capability):
            return capability is not NoiselessForm

    with pytest.raises(ValueError, match="no noiseless form"):
        BayesOpt(flat2, WithoutNoiselessForm(flat2), deterministic=True)
    with pytest.raises(ValueError, match="random search"):
        BayesOpt(flat2, "random", deterministic=True)
    with pytest.raises(TypeError, match="deterministic"):
        BayesOpt(flat2, "gp", deterministic="yes")


def test_an_additive_journal_from_before_the_rows_near_the_incumbent_loads_as_it_ran(tmp_path):
    """Runs of `additive` saved before 2026-11-28 scored the paper's candidates alone by UCB; their optimizer
    record lacks `hybrids`, `n_local` and `local_scales`, which load as the values those runs used, not today's
    defaults."""
    from optim.acquisition import UCB
    from optim.message_passing import MessagePassingConfig

    space = Space([Real("a", 0, 1), Real("b", 0, 1), Real("c", 0, 1)])
    path = tmp_path / "add.jsonl"
    BayesOpt(space, "additive", sampler=FAST_SAMPLER, journal=path).journal.close()
    header = json.loads(path.read_text().splitlines()[0])
    assert header["run"]["acquisition"]["name"] == "logei" and header["run"]["optimizer"]["hybrids"] is True
    header["run"]["acquisition"] = {"name": "ucb", "beta": None}
    assert header["run"]["optimizer"]["local_scales"] == [0.1, 0.1]
    del header["run"]["optimizer"]["hybrids"], header["run"]["optimizer"]["n_local"]
    del header["run"]["optimizer"]["local_scales"]
    path.write_text(json.dumps(header) + "\n")
    before = MessagePassingConfig(hybrids=False, n_local=0)
    old = BayesOpt.load(path)
    assert old.acquisition == UCB() and old.optimizer == before
    with pytest.raises(ValueError, match="differs in acquisition, optimizer.*BayesOpt.load"):
        BayesOpt(space, "additive", sampler=FAST_SAMPLER, journal=path)
    with BayesOpt(space, "additive", acquisition="ucb", optimizer=before, sampler=FAST_SAMPLER, journal=path) as again:
        assert again.optimizer == before


@pytest.mark.parametrize("name, before_depth", [("additive", 4), ("addtree", 6)])
def test_a_journal_from_before_depth_3_trees_is_refused_by_name_and_resumes_with_its_sampler(tmp_path, name,
                                                                                             before_depth):
    """`additive`'s loop default ran NUTS trees of depth 4 until 2026-11-28, `addtree`'s the loop's 6 (3 since, for
    both): such a journal, resumed under today's defaults, is refused with `sampler` named and the way to resume
    given; its own settings resume it."""
    space = Space([Real("a", 0, 1), Real("b", 0, 1), Real("c", 0, 1)])
    path = tmp_path / f"{name}.jsonl"
    model = SURROGATES[name](space)
    assert SamplerSettings.for_surrogate(model).max_tree_depth == 3
    before = dataclasses.replace(SamplerSettings.for_surrogate(model), max_tree_depth=before_depth)
    BayesOpt(space, name, sampler=before, journal=path).journal.close()
    assert BayesOpt.load(path).sampler == before
    with pytest.raises(ValueError, match="differs in sampler.*its surrogate, sampler"):
        BayesOpt(space, name, journal=path)
    with BayesOpt(space, name, sampler=BayesOpt.load(path).sampler, journal=path) as again:
        assert again.sampler.max_tree_depth == before_depth


def test_addtree_runs_depth_3_trees_and_its_shared_variant_the_loop_default():
    """Depth 3 was measured for plain Add-Tree only; `share_like=True` keeps the loop's NUTS depth."""
    from optim.bench.problems import get_problem

    space = get_problem("jenatton_small").space  # its four leaves are alike, as share_like needs
    assert SamplerSettings.for_surrogate(AddTree(space)).max_tree_depth == 3
    shared = AddTree(space, share_like=True)
    assert SamplerSettings.for_surrogate(shared).max_tree_depth == SamplerSettings().max_tree_depth
    assert AddTree.sampler_defaults == {"max_tree_depth": 3}  # the instance's setting did not leak to the class


def test_a_journal_written_before_a_settings_field_existed_resumes_and_a_changed_field_is_refused(tmp_path):
    from optim.path_lbfgs import LBFGSConfig

    space = Space([Real("a", 0, 1), Real("b", 0, 1)])
    path = tmp_path / "run.jsonl"
    minimize(lambda c: c["a"] + c["b"], space, "gp", budget=2, n_init=2, checkpoint=path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    del header["run"]["optimizer"]["explore_paths"], header["run"]["sampler"]["refit_every"]  # as older runs wrote
    del header["run"]["sampler"]["restart_every"]
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    with BayesOpt(space, "gp", n_init=2, journal=path) as resumed:  # those fields' defaults are what it ran with
        assert len(resumed.history) == 2
    with pytest.raises(ValueError, match="differs in optimizer"):
        BayesOpt(space, "gp", n_init=2, journal=path, optimizer=LBFGSConfig(explore_paths=0.5))
