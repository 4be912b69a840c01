"""Rows near the incumbent (optim.local_rows): which inputs move, and that moved rows stay valid on its path."""

import numpy as np

from optim.local_rows import local_rows, mixed_local_rows, moved_inputs
from zoo.space import CATEGORICAL, INTEGER


def test_moved_inputs_count_is_log_uniform():
    """P(k) = log((k + 1) / k) / log(21) for D >= 20: 4000 rows, each count's frequency within 4.5 binomial
    standard errors (a count drawn uniformly on 1..20 puts 0.05 on k = 1, 8 standard errors below 0.228)."""
    move = moved_inputs(4000, 30, np.random.default_rng(0))
    k = move.sum(axis=1)
    assert k.min() >= 1 and k.max() <= 20
    for count in (1, 2, 5, 20):
        p = np.log((count + 1) / count) / np.log(21)
        assert abs(np.mean(k == count) - p) < 4.5 * np.sqrt(p * (1 - p) / 4000)
    assert np.all(moved_inputs(50, 3, np.random.default_rng(1)).sum(axis=1) <= 3)


def test_local_rows_keep_their_random_stream():
    """The additive surrogate's local rows draw the same numbers as before they shared `moved_inputs`: the
    moved inputs come from the first two draws, the steps from the next one."""
    rng = np.random.default_rng(4)
    centre = np.full(8, 0.5)
    rows = local_rows(centre, 100, rng)
    again = np.random.default_rng(4)
    move = moved_inputs(100, 8, again)
    assert np.array_equal(rows, np.clip(centre + move * again.normal(0.0, 1.0, (100, 8)) * 0.1, 0.0, 1.0))


def test_mixed_local_rows_stay_on_the_incumbents_path_and_move_categories_to_other_values(mixed_space):
    space = mixed_space
    rng = np.random.default_rng(0)
    for config in space.sample(6, seed=3):
        x = space.encode(config)
        active = space.active_mask(x[None])[0]
        x[active & (space.kinds != CATEGORICAL)] = 0.5  # numeric inputs inside their bounds (0.5: on both grids)
        x = space.round_encoded(x[None])[0]
        rows = mixed_local_rows(space, x, 300, rng)
        assert rows.shape == (300, space.dim)
        assert np.all(space.path_index(rows) == space.path_index(x[None])[0])  # no decision changes
        changed = rows != x
        assert np.all(changed.sum(axis=1) >= 1)  # inside the bounds every moved input changes (integers by >= 1)
        assert not np.any(changed[:, ~active])  # inactive columns keep their fills
        decisions = [space.col[d] for d in space.paths[space.path_index(x[None])[0]].decisions]
        for j in np.setdiff1d(np.flatnonzero(active & (space.kinds == CATEGORICAL)), decisions):
            moved = rows[changed[:, j], j]
            assert len(moved) and np.all(moved != x[j]) and np.all(np.isin(moved, np.arange(space.n_choices[j])))
        for j in np.flatnonzero(space.kinds == INTEGER):
            span = space.columns[j].high - space.columns[j].low
            assert np.allclose(rows[:, j] * span, np.round(rows[:, j] * span))  # on the grid
        for row in rows:
            space.validate(space.decode(row))
    assert mixed_local_rows(space, x, 0, rng).shape == (0, space.dim)
