"""`surrogate="auto"`: a surrogate picked from the space and the declared noise, by rules the benchmarks back.

The rules, first match wins (the README's table; the measurements are in BENCHMARKS.md):

1. A conditional space (more than one root-to-leaf path): `addtree`. On the seeded conditional family ("A
   seeded family of conditional problems", a 3-seed pilot) its median regret after 30 evaluations is below the
   flat GP's on 7 of 12 instances (2 of the 4 held out), equal on 2 and above on 3, by at most 0.15 in log10.
   It costs 2-6x the GP's seconds per run there. (A conditional space with no parameter outside its decisions
   gets `gp`: Add-Tree needs one.)
2. A flat space of 20 or more real and integer parameters: `additive`, unless `deterministic=True`. On Star-20
   ("Pilot: Star-20") it matched the GP's regret after 100 evaluations (0.93 vs 0.91) in an eighth of the time
   (44 vs 364 s per run). It has no noiseless form (`zoo.base.NoiselessForm`), so a declared-exact objective
   gets `gp`.
3. Anything else (low-dimensional, or with categorical parameters): `gp`. On mixed spaces ("Mixed spaces")
   BARK is ahead on DiscreteRosenbrock and behind on DiscreteAckley; the GP is the safer default.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.space import CATEGORICAL, Space

AUTO = "auto"
HIGH_DIMENSIONAL = 20  # columns from which a flat numeric space gets the additive forest


@dataclass(frozen=True)
class AutoChoice:
    """The surrogate `auto` picked and the rule that picked it (printed by `minimize`, kept in the journal)."""

    name: str
    rule: str


def choose_surrogate(space: Space, deterministic: bool = False) -> AutoChoice:
    """The registered surrogate that `surrogate="auto"` stands for on `space` (see the module's table)."""
    if not isinstance(space, Space):
        raise TypeError(f"space must be a zoo.Space, got {type(space).__name__}")
    if space.is_conditional:
        if not any(node.params for node in space.nodes.values()):
            return AutoChoice("gp", "conditional space whose only columns are its decisions: Add-Tree needs a "
                                    "parameter on some vertex")
        return AutoChoice("addtree", f"conditional space ({len(space.paths)} paths): Add-Tree was ahead of the flat "
                                     "GP on 7 of 12 instances of the conditional family, behind on 3")
    numeric = not any(kind == CATEGORICAL for kind in space.kinds)
    if numeric and space.dim >= HIGH_DIMENSIONAL:
        if deterministic:
            return AutoChoice("gp", f"{space.dim} numeric dimensions, but deterministic=True needs a noiseless form, "
                                    "which the additive forest lacks")
        return AutoChoice("additive", f"{space.dim} numeric dimensions (>= {HIGH_DIMENSIONAL}): the additive forest "
                                      "matched the GP's regret at an eighth of its time on Star-20")
    kind = "mixed" if not numeric else "continuous/integer"
    return AutoChoice("gp", f"flat {kind} space of {space.dim} dimensions: the fully Bayesian GP")
