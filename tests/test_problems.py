"""Benchmark problems match their definitions (DESIGN.md) and known optima."""

import math

import numpy as np
import pytest

from optim.bench.problems import PROBLEMS, get_problem
from optim.bench.problems.synthetic import styblinski_tang


def test_known_minimizers_reach_the_stated_optima():
    h6 = get_problem("hartmann6")
    xstar = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]
    assert h6({f"x{i}": v for i, v in enumerate(xstar)}) == pytest.approx(-3.32237, abs=1e-5)
    st = get_problem("styblinski_tang2")
    assert st({"x0": -2.903534, "x1": -2.903534}) == pytest.approx(st.optimum, abs=1e-4)
    ex = get_problem("exp2d")
    assert ex({"x1": -1 / math.sqrt(2), "x2": 0.0}) == pytest.approx(-0.428882, abs=1e-6)


def test_jenatton_small_definition():
    p = get_problem("jenatton_small")
    assert p({"x1": 0, "x2": 0, "x4": 0.0, "r8": 0.0}) == pytest.approx(0.1)
    assert p({"x1": 0, "x2": 1, "x5": 0.5, "r8": 0.2}) == pytest.approx(0.25 + 0.2 + 0.2)
    assert p({"x1": 1, "x3": 0, "x6": -1.0, "r9": 1.0}) == pytest.approx(1 + 0.3 + 1)
    assert p({"x1": 1, "x3": 1, "x7": 0.1, "r9": 0.0}) == pytest.approx(0.01 + 0.4)
    assert len(p.space.paths) == 4 and p.space.dim == 9
    q = get_problem("jenatton_small_noshared")
    assert q.space.dim == 7 and q({"x1": 1, "x3": 1, "x7": 0.0}) == pytest.approx(0.4)


def test_jenatton_large_definition():
    p = get_problem("jenatton_large")
    assert len(p.space.paths) == 8
    values = []
    for path in p.space.paths:
        config = {**path.decisions}
        for j in np.flatnonzero(path.active):
            name = p.space.names[j]
            if name not in config:
                config[name] = 0.0
        values.append(p(config))
    assert values == pytest.approx([0.1 * a for a in range(1, 9)])  # leaves left to right, x = r = 0
    config = {"x1": 1, "x3": 1, "x7": 1, "x15": 0.5, "r17": 0.25}
    assert p(config) == pytest.approx(0.25 + 0.8 + 0.25)


def test_augmented_dimensions_are_inert_and_noise_is_seeded():
    p = get_problem("hartmann6_aug20")
    assert p.space.dim == 20
    c = {f"x{i}": 0.3 for i in range(20)}
    d = dict(c, x19=0.9, x7=0.1)
    assert p(c) == p(d)
    noisy1, noisy2 = get_problem("exp2d", noise_std=0.1, seed=3), get_problem("exp2d", noise_std=0.1, seed=3)
    vals1 = [noisy1({"x1": 0.0, "x2": 0.0}) for _ in range(50)]
    assert vals1 == [noisy2({"x1": 0.0, "x2": 0.0}) for _ in range(50)]
    # mean 0 and sd 0.1 within 4 standard errors (n = 50)
    assert abs(np.mean(vals1)) < 4 * 0.1 / math.sqrt(50) and abs(np.std(vals1) - 0.1) < 4 * 0.1 / math.sqrt(100)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_problem_evaluates_random_configs(name):
    p = get_problem(name)
    for c in p.space.sample(5, seed=0):
        if "failure_region" in p.info:  # these raise inside their region (next test)
            continue
        v = p(c)
        assert math.isfinite(v)
        if p.optimum is not None:
            assert v >= p.optimum - 1e-9


@pytest.mark.parametrize("name, base, inside", [
    ("hartmann6_fail", lambda: get_problem("hartmann6"), lambda c: c["x0"] > 0.75),
    ("styblinski_tang4_fail", lambda: styblinski_tang(4), lambda c: c["x0"] > 3.0),
    ("hartmann6_fail_edge", lambda: get_problem("hartmann6"), lambda c: c["x0"] < 0.18),
    ("styblinski_tang4_fail_edge", lambda: styblinski_tang(4), lambda c: c["x0"] < -3.1),
    ("jenatton_small_fail", lambda: get_problem("jenatton_small"),
     lambda c: max(c.get(k, -1.0) for k in ("x4", "x5", "x6", "x7")) > 0.5)])
def test_a_failure_region_raises_inside_and_is_the_wrapped_problem_outside(name, base, inside):
    from optim.bench.problems.failing import FailedRun
    p, wrapped = get_problem(name), base()
    configs = p.space.sample(200, seed=1)
    assert 20 < sum(map(inside, configs)) < 100  # a sixth to a quarter of the box fails
    for c in configs:
        if inside(c):
            with pytest.raises(FailedRun):
                p(c)
        else:
            assert p(c) == wrapped(c)
    assert p.optimum == wrapped.optimum  # the optimum is feasible: the regret is the wrapped problem's


def test_mlp_tuning_space_and_objective():
    pytest.importorskip("sklearn")
    from optim.bench.problems.ml import mlp_space, mlp_validation_error

    space = mlp_space()
    assert len(space.paths) == 5  # 0..4 hidden layers
    depths = sorted(sum(1 for n in space.names if n.startswith("units_") and p.active[space.col[n]])
                    for p in space.paths)
    assert depths == [0, 1, 2, 3, 4]  # a k-layer path activates units_1..units_k ...
    for p in space.paths:  # ... and exactly its own l2 penalty
        assert sum(p.active[space.col[f"l2_{k}"]] for k in range(5)) == 1
    config = {"learning_rate": 1e-2, "tol": 1e-4, "preprocessing": "standardize", "activation": "relu",
              "deeper_1": "yes", "units_1": 10, "deeper_2": "no", "l2_1": 1e-4}
    error = get_problem("mlp_breast_cancer")(config)
    assert 0.0 <= error < 0.1  # a sensible network on breast cancer is accurate
    assert error == mlp_validation_error(config)  # deterministic
    assert get_problem("mlp_breast_cancer")(dict(config, preprocessing="none", learning_rate=1e-5)) > error


def test_svr_objective_rewards_choosing_the_real_features():
    """SVRBench's space on diabetes: 3 log-scale reals and 50 flags. The 10 real features predict better than 3
    of them and than the constant predictor, whose RMSE is what choosing no feature gives."""
    pytest.importorskip("sklearn")
    from optim.bench.problems.ml import SVR_FEATURES, _svr_split

    p = get_problem("svr_diabetes")
    assert p.space.dim == 3 + SVR_FEATURES and p.optimum is None

    def first(k):
        return p({"epsilon": 0.1, "C": 1.0, "gamma": 0.1, **{f"h{i}": int(i < k) for i in range(SVR_FEATURES)}})

    y_val = _svr_split()[3]
    assert first(0) == pytest.approx(np.sqrt(np.mean(y_val**2)))
    assert first(10) < first(3) < first(0) and first(10) < 0.8 * first(0)
    assert first(10) == first(10)  # deterministic


def test_compression_objective_trades_size_for_accuracy():
    pytest.importorskip("sklearn")
    from optim.bench.problems.ml import compression_objective

    p = get_problem("compression")
    assert len(p.space.paths) == 4
    keep_all = {"layer1": "prune", "threshold_1": 0.0, "layer2_given_prune": "prune", "threshold_2_given_prune": 0.0}
    assert p(keep_all) == pytest.approx(1.0)  # nothing removed: ratio 1, no output error
    svd = {"layer1": "svd", "rank_1": 10, "layer2_given_svd": "svd", "rank_2_given_svd": 10}
    assert p(svd) < 1.0  # a low-rank network is smaller at a small error cost
    tiny = dict(svd, rank_1=1, rank_2_given_svd=1)
    assert compression_objective(tiny) > p(svd)  # too aggressive: the output error dominates
    assert compression_objective(tiny, gamma=0.0) < compression_objective(svd, gamma=0.0)


def test_path_covering_design():
    p = get_problem("jenatton_large")
    configs = p.space.sobol(10, seed=3, cover_paths=True)
    paths = p.space.path_index(p.space.encode(configs))
    assert sorted(paths[:8]) == list(range(8))
    assert configs == p.space.sobol(10, seed=3, cover_paths=True)


def test_initial_design_options_and_method_specs():
    from optim.bench.runner import split_method
    from optim.loop import initial_design

    space = get_problem("jenatton_small").space
    design = initial_design(space, 5, seed=1, design="paths")
    assert sorted(space.path_index(space.encode(design))[:4]) == [0, 1, 2, 3]
    assert initial_design(space, 5, seed=1) != design  # the default stays plain Sobol
    with pytest.raises(ValueError, match="design"):
        initial_design(space, 5, seed=1, design="grid")
    assert split_method("addtree:ucb") == ("addtree", "ucb", None, False)
    assert split_method("gp") == ("gp", None, None, False)
    assert split_method("gp:ei/yeo-johnson") == ("gp", "ei", "yeo-johnson", False)
    assert split_method("addtree_shared+deterministic") == ("addtree_shared", None, None, True)
    assert split_method("gp:ei/log+deterministic") == ("gp", "ei", "log", True)
    with pytest.raises(ValueError, match="deterministic"):
        split_method("gp+exact")
    from optim.bench.runner import batch_options
    assert split_method("gp+q4+liar") == ("gp", None, None, False) and batch_options("gp+q4+liar") == (4, "liar")
    assert batch_options("gp") == (1, "believer") and batch_options("gp+deterministic+q2") == (2, "believer")
    from optim.bench.runner import mip_options
    assert split_method("bark+scip10+forests4") == ("bark", None, None, False)
    assert mip_options("bark+scip10+forests4") == {"time_limit": 10.0, "forests": 4} and mip_options("bark") == {}
    with pytest.raises(ValueError, match="scipT"):
        split_method("bark+scip0")
    assert mip_options("bark+starts4+near128") == {"n_starts": 4, "n_local": 128}
    from optim.bench.runner import forest_search_config
    from optim.leaf_ascent import LeafAscentConfig
    from optim.mip import MIPConfig
    assert forest_search_config("bark+starts4+near128") == MIPConfig(n_starts=4, n_local=128)
    assert forest_search_config("bark:ucb,beta=3.8416+near64") == MIPConfig(n_local=64)
    # log-EI is served by leaf_ascent, not the MIP: its pool flags go there, and a SCIP-only flag is refused
    assert forest_search_config("bark:logei+near128") == LeafAscentConfig(n_local=128)
    assert forest_search_config("bark:ei+starts4") == LeafAscentConfig(n_starts=4) and forest_search_config("bark") is None
    with pytest.raises(ValueError, match=r"\+scip, \+forests set the MIP"):
        forest_search_config("bark:logei+scip10+forests4+near128")
    from optim.bench.runner import message_passing_options
    assert message_passing_options("bark+starts4+near128") == {} and mip_options("additive+local64") == {}
    with pytest.raises(ValueError, match="startsK"):
        split_method("bark+starts0")
    from optim.bench.runner import message_passing_options
    assert split_method("additive+polish0") == ("additive", None, None, False)
    assert message_passing_options("additive+polish0") == {"n_polish": 0} and message_passing_options("bark+scip10") == {}
    assert mip_options("additive+polish0") == {}
    assert message_passing_options("additive_ls015:ucb+hybrids0+local0") == {"hybrids": False, "n_local": 0}
    assert message_passing_options("additive+hybrids1+local64") == {"hybrids": True, "n_local": 64}
    assert message_passing_options("additive+fine2") == {"local_scales": (0.01, 0.1)}
    with pytest.raises(ValueError, match="fineE"):
        split_method("additive+fine1")  # (0.1, 0.1) is the default: the flag starts at 2
    from optim.bench.runner import sampler_options
    assert split_method("additive+depth3") == ("additive", None, None, False)
    assert sampler_options("additive_ls015:logei+depth3+local256") == {"max_tree_depth": 3}
    assert sampler_options("treed_bayes_warp+deterministic+restart5") == {"restart_every": 5}
    assert sampler_options("treed+restart0+depth4") == {"restart_every": 0, "max_tree_depth": 4}
    assert sampler_options("bark+thin100+scip10") == {"thinning": 100}
    assert sampler_options("additive+local256") == {} and message_passing_options("additive+depth3") == {}
    with pytest.raises(ValueError, match="depthK"):
        split_method("additive+depth0")
    with pytest.raises(ValueError, match="polishK"):
        split_method("additive+polish")
    from optim.bench.runner import EXPLORE_PATHS, explore_paths
    assert split_method("addtree/yeo-johnson+explore") == ("addtree", None, "yeo-johnson", False)
    assert explore_paths("addtree/yeo-johnson+explore") == EXPLORE_PATHS > 0 and explore_paths("gp+q4") == 0.0
    from optim.bench.runner import method_settings
    from optim.path_lbfgs import LBFGSConfig
    space = get_problem("jenatton_small").space
    assert method_settings("addtree/yeo-johnson+pathnear64", space)[2]["optimizer"] == LBFGSConfig(n_local=64)
    assert method_settings("gp+explore+pathnear8", space)[2]["optimizer"] == LBFGSConfig(explore_paths=EXPLORE_PATHS,
                                                                                          n_local=8)
    assert mip_options("addtree+pathnear64") == {} and "optimizer" not in method_settings("addtree", space)[2]


def test_mixed_problems_of_the_bark_paper():
    from optim.bench.problems import get_problem
    from optim.bench.problems.mixed import DISCRETE_ACKLEY_MIN, ackley, pest_control_value

    ack = get_problem("discrete_ackley")
    best = {**{f"b{i}": i % 2 for i in range(10)}, "r0": 0.0, "r1": 0.0, "r2": 0.0}
    assert ack(best) == pytest.approx(DISCRETE_ACKLEY_MIN, abs=1e-12) == pytest.approx(3.21777, abs=1e-5)
    assert ackley(np.zeros(13)) == pytest.approx(0.0, abs=1e-12)
    assert min(ack(c) for c in ack.space.sample(300, seed=0)) > ack.optimum
    ros = get_problem("discrete_rosenbrock")
    values = [ros(c) for c in ros.space.sample(300, seed=0)]
    assert min(values) > ros.optimum > 0
    ones = {**{f"i{k}": 0 for k in range(6)}, **{f"r{k}": 0.0 for k in range(4)}}
    assert ros(ones) == pytest.approx(9.0)  # nine (1 - 0)^2 terms
    assert ros.optimum < 9.0
    pest = get_problem("pest_control")
    c = pest.space.sample(1, seed=4)[0]
    assert pest(c) == pest(c)  # deterministic: a fixed internal seed
    assert pest.optimum is None and pest.space.dim == 25
    assert pest_control_value([0] * 25) > pest_control_value([4] * 25) - 100  # finite, comparable costs


def test_an_optimum_given_as_a_function_is_computed_once_on_first_read():
    from optim.bench.problems.base import Problem
    from zoo import Real, Space

    calls = []
    p = Problem("q", Space([Real("x", 0.0, 1.0)]), lambda c: c["x"], lambda: calls.append(1) or -2.0)
    assert not calls and not p.optimum_computed  # building the problem (or listing it) does not pay for it
    assert p.regret(1.0) == 3.0 and p.optimum == -2.0 and p.optimum_computed
    assert calls == [1]
    assert Problem("r", p.space, p.fn).optimum is None and Problem("s", p.space, p.fn, 0.5).optimum_computed


@pytest.mark.parametrize("name", ["tree_function", "tree_function_cat"])
def test_tree_function_optimum_is_a_lower_bound(name):
    from optim.bench.problems import get_problem

    p = get_problem(name)
    values = [p(c) for c in p.space.sample(400, seed=1)]
    assert min(values) > p.optimum - 1e-9
    assert p.space.dim == (20 if name.endswith("cat") else 10)
    assert get_problem(name).optimum == p.optimum  # fixed by the function seed


def test_additive_gp_problems_expose_their_graph_and_their_terms_add_up():
    from optim.bench.problems.additive import additive_function, structure_edges

    star = get_problem("additive_star20")
    assert len(star.info["edges"]) == 19 and all(0 in e for e in star.info["edges"])
    assert len(get_problem("additive_grid25").info["edges"]) == 40
    assert len(structure_edges("tree", 12, np.random.default_rng(0))) == 11
    fn = additive_function("star", 20, 0)
    grid = np.linspace(0, 1, 5)
    pair, unary = fn.component_tables(grid)
    idx = np.random.default_rng(1).integers(0, 5, 20)
    by_terms = sum(pair[e][idx[a], idx[b]] for e, (a, b) in enumerate(fn.edges)) + sum(unary[v][idx[v]] for v in range(20))
    assert by_terms == pytest.approx(fn(grid[idx][None])[0], abs=1e-9)
    perm = get_problem("hartmann6_perm20")
    x = {f"x{i}": 0.5 for i in range(20)}
    for k, v in zip(perm.info["active"], [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]):
        x[f"x{k}"] = v
    assert perm(x) == pytest.approx(perm.optimum, abs=1e-4)


@pytest.mark.slow
def test_stored_additive_optima_are_what_the_procedure_computes():
    from optim.bench.problems.additive import compute_optimum
    from optim.bench.problems.additive_optima import OPTIMA

    for kind, dim in (("star", 20), ("grid", 25)):  # a forest (max-sum) and a graph with cycles (ICM)
        assert compute_optimum(kind, dim, 0) == pytest.approx(OPTIMA[f"{kind}{dim}/0"], abs=1e-9)


def test_non_stationary_problems_of_the_treed_paper():
    """RKHS (004 Fig. 1): -5.73839 at x = 0.89235, smooth bumps (width 0.1) on the left and jagged ones (0.01)
    on the right; no point of a 10^5 grid beats the stored minimum. Gramacy & Lee: -0.869011 at x = 0.548563,
    the same grid check. Bowl-and-basin: the stored minimum is below every grid point and the bowl's own local
    minimum is near 0."""
    from optim.bench.problems.nonstationary import bowl_basin_value, gramacy_lee_value, rkhs_value

    p = get_problem("rkhs1d")
    assert p({"x": 0.89235}) == pytest.approx(-5.73839, abs=1e-5)
    grid = np.linspace(0.0, 1.0, 100_001)
    values = -rkhs_value(grid)
    assert p.optimum <= values.min() <= p.optimum + 1e-6
    # over the same step 0.01 the jagged right moves far more than the smooth left
    assert abs(rkhs_value(0.99) - rkhs_value(0.98)) > 5 * abs(rkhs_value(0.1) - rkhs_value(0.11))
    g = get_problem("gramacy_lee1d")
    assert g({"x": 0.548563}) == pytest.approx(-0.869011, abs=1e-6)
    grid = np.linspace(0.5, 2.5, 100_001)
    assert g.optimum <= gramacy_lee_value(grid).min() <= g.optimum + 1e-6
    b = get_problem("bowl_basin4")
    assert b.space.dim == 4 and b({f"x{i}": 0.3 for i in range(4)}) == pytest.approx(0.0, abs=0.01)
    pts = np.random.default_rng(0).uniform(size=(200_000, 4))
    assert b.optimum < bowl_basin_value(pts).min() and b.optimum < bowl_basin_value(np.full(4, 0.85))


def test_the_conditional_family_covers_the_kinds_of_tree_the_issue_names():
    from optim.bench.problems import FAMILY_SIZE, HELD_OUT

    facts = [get_problem(f"conditional_{i}").info for i in range(FAMILY_SIZE)]
    assert {f["depth"] for f in facts} == {2, 3, 4}
    assert {b for f in facts for b in f["branching"]} == {2, 3}
    assert {f["balanced"] for f in facts} == {True, False}
    assert all(f["shared"] > 0 for f in facts)  # parameters on inner vertices in every instance
    assert {s for f in facts for s in f["shapes"]} == {"bowl", "narrow", "ridge", "multimodal"}
    assert all(len(f["shapes"]) >= 2 for f in facts)  # leaves unlike each other within an instance
    assert sum(f["integers"] > 0 for f in facts) >= 6 and sum(f["categoricals"] > 0 for f in facts) >= 6
    assert [i for i, f in enumerate(facts) if f["held_out"]] == list(HELD_OUT)


@pytest.mark.parametrize("index", range(12))
def test_a_family_instance_reaches_its_stated_optimum_and_nothing_goes_below_it(index):
    p = get_problem(f"conditional_{index}")
    argmin = p.info["argmin"]
    assert p.space.validate(argmin) == argmin
    assert p(argmin) == pytest.approx(p.optimum, abs=1e-12)
    values = np.array([p(c) for c in p.space.sample(400, seed=index)])
    assert values.min() > p.optimum + 1e-4  # random configurations are feasible and above the optimum
    # every wrong decision on the optimal path costs at least 0.1 (its penalty) whatever else is chosen
    path = p.space.active_path(argmin)
    for decision, value in path.decisions.items():
        others = [c for c in p.space.sample(200, seed=index + 1) if c.get(decision, value) != value]
        assert all(p(c) >= 0.1 for c in others)
    # a small move of one numeric parameter away from the argmin does not improve on it
    rng = np.random.default_rng(index)
    for param in p.space.columns:
        if param.name in argmin and param.kind != 2:
            u = param.to_unit(argmin[param.name]) + rng.choice([-1, 1]) * 0.05
            moved = dict(argmin, **{param.name: param.from_unit(min(max(u, 0.0), 1.0))})
            assert p(moved) >= p.optimum


def test_family_instances_are_reproducible_and_distinct():
    from optim.bench.problems.conditional_family import conditional_family

    a, b, c = conditional_family(3), conditional_family(3), conditional_family(4)
    assert a.space == b.space and a.info["argmin"] == b.info["argmin"]
    assert a.space != c.space
    configs = a.space.sample(20, seed=0)
    assert [a(x) for x in configs] == [b(x) for x in configs]
    with pytest.raises(ValueError, match="non-negative integer"):
        conditional_family(-1)
