"""`surrogate="auto"`: a surrogate picked from the space and the declared noise, by rules the benchmarks back.

The rules, first match wins (the README's table; the measurements are in BENCHMARKS.md):

1. A conditional space (more than one root-to-leaf path): `gp`. On the seeded conditional family ("A seeded
   family of conditional problems") the flat GP is not behind `addtree`.
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
        return AutoChoice("gp", f"conditional space ({len(space.paths)} paths): the flat GP led the tree-aware "
                                "models on the conditional family")
    numeric = not any(kind == CATEGORICAL for kind in space.kinds)
    if numeric and space.dim >= HIGH_DIMENSIONAL:
        if deterministic:
            return AutoChoice("gp", f"{space.dim} numeric dimensions, but deterministic=True needs a noiseless form, "
                                    "which the additive forest lacks")
        return AutoChoice("additive", f"{space.dim} numeric dimensions (>= {HIGH_DIMENSIONAL}): the additive forest "
                                      "matched the GP's regret at an eighth of its time on Star-20")
    kind = "mixed" if not numeric else "continuous/integer"
    return AutoChoice("gp", f"flat {kind} space of {space.dim} dimensions: the fully Bayesian GP")
