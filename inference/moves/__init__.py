"""Discrete Metropolis–Hastings moves, keyed by the move family a surrogate names for a site.

A move is a pure function ``move(key, value, log_density) -> (new_value, accept_stat)`` where
``log_density(value)`` is the joint log-density (prior, likelihood and Jacobians of the current
continuous state) with the site set to ``value``; the acceptance ratio it applies includes the
proposal (Hastings) term. ``accept_stat`` is a float array (acceptance indicators) that the
sampler averages into per-move acceptance rates. A move with ``needs_context = True`` is called
as ``move(key, value, log_density, context)`` with ``context = surrogate.move_context(data, z)``:
the data and current continuous values it needs for a fast exact ratio (BARK's tree moves).
"""

from inference.moves.binary import flip_one_bit
from inference.moves.noise import noise_walk
from inference.moves.trees import forest_sweep

MOVES = {"binary": flip_one_bit, "forest": forest_sweep, "noise": noise_walk}


def register_move(family: str, move) -> None:
    """Make `move` the update for every discrete site of this family."""
    MOVES[family] = move


__all__ = ["MOVES", "register_move", "flip_one_bit", "forest_sweep", "noise_walk"]
