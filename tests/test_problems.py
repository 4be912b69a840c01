"""Benchmark problems match their definitions (DESIGN.md) and known optima."""

import math

import numpy as np
import pytest

from optim.problems import PROBLEMS, get_problem


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
        v = p(c)
        assert math.isfinite(v)
        if p.optimum is not None:
            assert v >= p.optimum - 1e-9
