"""Discrete Metropolis–Hastings moves, keyed by the move family a surrogate names for a site.

A move's update is a pure function ``update(key, value, log_density) -> (new_value, stats)`` where
``log_density(value)`` is the joint log-density (prior, likelihood and Jacobians of the current
continuous state) with the site set to ``value``; the acceptance ratio it applies includes the
proposal (Hastings) term. ``stats`` is a float array (e.g. acceptance indicators) that the sampler
averages over each thinning block and the surrogate's ``summarize_moves`` turns into ArviZ
sample_stats. A move declared with ``needs_context=True`` is called as
``update(key, value, log_density, context)`` with ``context = surrogate.move_context(data, z, sites)``
(``zoo.base.StructureMoves``): the data, the other sites and the model's likelihood plug-in, for a
fast exact ratio (BARK's tree and noise moves).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from inference.moves.binary import flip_one_bit
from inference.moves.graphs import graph_sweep, prior_graph_sweep
from inference.moves.noise import noise_walk
from inference.moves.tree_moves import forest_sweep, tree_sweep


class Move(NamedTuple):
    """A discrete update and whether it needs the surrogate's move context."""

    update: Callable
    needs_context: bool = False


MOVES: dict[str, Move] = {"binary": Move(flip_one_bit), "forest": Move(forest_sweep, needs_context=True),
                          "noise": Move(noise_walk, needs_context=True), "graph": Move(graph_sweep),
                          "graph_prior": Move(prior_graph_sweep, needs_context=True)}


def register_move(family: str, update: Callable, needs_context: bool = False) -> None:
    """Make `update` the move for every discrete site of this family."""
    if not callable(update):
        raise TypeError(f"a move's update must be callable, got {update!r}")
    MOVES[family] = Move(update, bool(needs_context))


__all__ = ["MOVES", "Move", "register_move", "flip_one_bit", "graph_sweep", "prior_graph_sweep", "forest_sweep", "tree_sweep", "noise_walk"]
