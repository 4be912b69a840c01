"""Grow / prune / change Metropolis–Hastings moves on a forest of heap-array trees (003 App. H).

One call updates every tree of the forest once, in order (Bayesian backfitting of the structure).
For each tree a move type is drawn (grow 0.25, prune 0.25, change 0.5; grow and prune are each
other's inverse and equally likely, change is its own inverse, so the move-type probabilities
cancel). The acceptance ratio is

    log a = [log p(T*) - log p(T)] + [log p(y | T*) - log p(y | T)] + log q(T* -> T) - log q(T -> T*)

with the exact tree prior (zoo.heap_trees.tree_log_prob) and the transition terms of 003 App. H Eq. 6:
grow picks one of w0 growable leaves and draws its rule from the rule prior, the reverse prune picks
one of w1* singly internal nodes of T*, so q(T*->T)/q(T->T*) = w0 / (w1* Pr(rule)); prune is the
inverse; change (on a singly internal node, rule redrawn from the prior) has Pr(old)/Pr(new). The
rule terms cancel against the prior, as the paper notes. (The paper prints Pr(rule) in the numerator
of Eq. 6 and the denominator of Eq. 7; the product, which is all that matters, is the same.)

The likelihood change is the model's: the context a move is given carries a
`zoo.heap_trees.TreeLikelihood` plug-in (BARK's forest-kernel low-rank update, `zoo.bark`; a treed GP's
leaf likelihoods), so the proposal and its Hastings terms are written once for every tree model.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from inference.moves.binary import metropolis_accept
from zoo.heap_trees import (CHANGE, GROW, PRUNE, SPLIT, TreeLikelihood, TreeSpec, all_domains, draw_rule, exists,
                            restrict, route, route_forest, rule_log_prob, singly_internal, split_probabilities)

MOVE_NAMES = ("grow", "prune", "change")
MOVE_PROBABILITIES = (0.25, 0.25, 0.5)


class TreeProposal(NamedTuple):
    """A proposed tree with the non-likelihood parts of its MH log-ratio."""

    tree: jax.Array
    kind: jax.Array  # GROW / PRUNE / CHANGE
    node: jax.Array  # heap index of the node the move acts on
    log_prior_ratio: jax.Array  # log p(T*) - log p(T)
    log_transition_ratio: jax.Array  # log q(T* -> T) - log q(T -> T*)
    possible: jax.Array  # False when the tree has no target for the drawn move type


def _growable(spec: TreeSpec, tree, domains):
    """Leaves that may split (not at the truncation depth, with a feature left to split on)."""
    p = split_probabilities(spec, *domains, jnp.asarray(spec.depth))
    return exists(spec, tree) & (tree[:, SPLIT] < 0.5) & (p > 0)


def _split_term(spec: TreeSpec, lo, hi, reach, depth, row):
    """Prior terms that a decision node with rule `row` and its two leaf children contribute:
    log p(d) + log Pr(rule) + log(1 - p_left(d+1)) + log(1 - p_right(d+1))."""
    p = split_probabilities(spec, lo, hi, reach, depth)
    children = [restrict(spec, lo, hi, reach, row, side) for side in (True, False)]
    p_children = [split_probabilities(spec, *c, depth + 1) for c in children]
    return (jnp.log(p) + rule_log_prob(spec, lo, hi, reach, row)
            + jnp.log1p(-p_children[0]) + jnp.log1p(-p_children[1]))


def propose(spec: TreeSpec, key, tree) -> TreeProposal:
    """Draw a move type, a target node and (grow / change) a rule from the prior at that node.

    The prior ratio is assembled locally: only the target node and its children change their terms
    (the tests check it against the full tree_log_prob difference)."""
    k_type, k_node, k_rule = jax.random.split(key, 3)
    domains = all_domains(spec, tree)
    growable = _growable(spec, tree, domains)
    nog = singly_internal(spec, tree)
    u = jax.random.uniform(k_type)
    kind = jnp.where(u < MOVE_PROBABILITIES[0], GROW,
                     jnp.where(u < MOVE_PROBABILITIES[0] + MOVE_PROBABILITIES[1], PRUNE, CHANGE))
    targets = jnp.where(kind == GROW, growable, nog)
    possible = jnp.any(targets)
    i = jax.random.categorical(k_node, jnp.where(targets, 0.0, -jnp.inf))
    i = jnp.where(possible, i, 0)
    lo, hi, reach = (d[i] for d in domains)
    depth = jnp.asarray(spec.depth)[i]
    rule = draw_rule(spec, k_rule, lo, hi, reach)
    new_tree = tree.at[i].set(jnp.where(kind == PRUNE, jnp.zeros_like(rule), rule))
    old_rule_lp = rule_log_prob(spec, lo, hi, reach, tree[i])
    new_rule_lp = rule_log_prob(spec, lo, hi, reach, rule)
    leaf_term = jnp.log1p(-split_probabilities(spec, lo, hi, reach, depth))
    split_new = _split_term(spec, lo, hi, reach, depth, rule)
    split_old = _split_term(spec, lo, hi, reach, depth, tree[i])
    log_prior = jnp.where(kind == GROW, split_new - leaf_term,
                          jnp.where(kind == PRUNE, leaf_term - split_old, split_new - split_old))
    left, right = jnp.minimum(2 * i + 1, spec.n_nodes - 1), jnp.minimum(2 * i + 2, spec.n_nodes - 1)
    w0, w1 = jnp.sum(growable), jnp.sum(nog)
    w0_after_prune = w0 - growable[left] - growable[right] + 1
    w1_new = jnp.sum(singly_internal(spec, new_tree))
    log = lambda w: jnp.log(jnp.maximum(w, 1).astype(jnp.float64))  # noqa: E731
    log_q = jnp.where(kind == GROW, log(w0) - new_rule_lp - log(w1_new),
                      jnp.where(kind == PRUNE, log(w1) - log(w0_after_prune) + old_rule_lp,
                                old_rule_lp - new_rule_lp))
    return TreeProposal(new_tree, kind, i, log_prior, log_q, possible)


def tree_sweep(key, forest, spec: TreeSpec, X, likelihood: TreeLikelihood):
    """Update each tree of `forest` once by grow / prune / change MH, the likelihood change from the
    model's plug-in; returns (forest, counts [2, 3]) of (proposed, accepted) per move type."""
    m = forest.shape[0]
    leaves = route_forest(spec, forest, X)
    state = likelihood.init(leaves)

    def step(carry, inputs):
        forest, leaves, state = carry
        t, k = inputs
        k_prop, k_acc = jax.random.split(k)
        tree, old_t = forest[t], leaves[t]
        proposal = propose(spec, k_prop, tree)
        new_t = route(spec, proposal.tree, X)
        delta, new_state = likelihood.delta(state, t, proposal.kind, proposal.node, old_t, new_t)
        log_ratio = proposal.log_prior_ratio + delta + proposal.log_transition_ratio
        accept = metropolis_accept(k_acc, jnp.where(proposal.possible, log_ratio, -jnp.inf))
        forest = forest.at[t].set(jnp.where(accept, proposal.tree, tree))
        leaves = leaves.at[t].set(jnp.where(accept, new_t, old_t))
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(accept, a, b), new_state, state)
        onehot = jax.nn.one_hot(proposal.kind, 3)
        return (forest, leaves, state), jnp.stack([onehot, onehot * accept])

    keys = jax.random.split(key, m)
    (forest, _, _), counts = jax.lax.scan(step, (forest, leaves, state), (jnp.arange(m), keys))
    return forest, jnp.sum(counts, axis=0)


def forest_sweep(key, forest, log_density, context):
    """The "forest" move family: `tree_sweep` with the routing and likelihood plug-in of the context
    (`context.spec`, `context.X`, `context.likelihood`). `log_density` is not evaluated: the ratio is
    assembled from the tree prior and the plug-in's exact likelihood change, which the tests check
    against it (evaluating it would score the whole forest prior and a Cholesky per proposal)."""
    del log_density
    return tree_sweep(key, forest, context.spec, context.X, context.likelihood)


__all__ = ["forest_sweep", "tree_sweep", "propose", "TreeProposal", "MOVE_NAMES", "GROW", "PRUNE", "CHANGE"]
