"""`surrogate="auto"`: a surrogate picked from the space and the declared noise, by rules the benchmarks back.

The rules, first match wins (the README's table; the measurements are in BENCHMARKS.md):

1. A conditional space (more than one root-to-leaf path): `addtree`, fitted to the Yeo-Johnson transform of
   the values (`output_transform="yeo-johnson"`, unless the run names a transform). On the seeded conditional
   family ("The output transform on the conditional family": 12 instances, 3 seeds) its median regret after
   30 evaluations is at or below the flat GP's on 12 of 12 instances and at least 0.5 log10 below it on 7
   (3 of the 4 held out; the same counts at 10 seeds there); untransformed, Add-Tree was at or below on 8
   and 0.5 below on 3. The transform
   keeps the leaves whose values run to 5-13 from dominating the standardized model. On two conditional
   problems outside the family (Jenatton small, 10 seeds; compression, 5 seeds) the pairing made no
   difference the seeds could show ("The pairing on problems outside the family"). It costs 1.3-2.8x the
   GP's seconds per iteration ("Seconds per iteration"). (A conditional space with no parameter outside its
   decisions gets `gp`: Add-Tree needs one.)
2. A flat space of 20 or more real and integer parameters: `additive` (with `deterministic=True`, its noiseless
   form). On Star-20
   ("The SAAS prior on Star-20", all methods on one commit) it is below the GP after 100 evaluations (0.84 vs
   0.96, p = 0.014) in an eighth of the time (40 vs 320 s per run), level with the SAAS-prior GP; on Tree-50 ("Tree-50 and Styblinski–Tang-50") it is below the GP (1.55 vs 1.64,
   p = 0.006) in under a third of the time, and on Styblinski–Tang-50 it is below the GP too (3.07 vs 3.13,
   p = 0.002), though the SAAS-prior GP (2.89) and Optuna's TPE (3.02) are ahead of both there, and the SAAS GP
   is level with it on Star-20 and Tree-50. Where the objective is far from additive the GP wins:
   on Hartmann-6 among 14 inert inputs ("Hartmann-6 among 14 inert dimensions") it reaches -4.02 against -1.20
   at 100 evaluations (10 seeds, lower on every seed), at eight times the cost. Declared exact ("Exact objectives
   in high dimensions"), `additive`'s noiseless form is level with `additive` on Star-20 and Styblinski–Tang-50
   and 0.04 above it on Tree-50 (p = 0.049), and still below the flat GP on Tree-50 and Styblinski–Tang-50
   (p = 0.002) and level with it on Star-20; the GP's noiseless form was not run there.
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
    """The surrogate `auto` picked, the rule that picked it (printed by `minimize`, kept in the journal) and the
    output transform that goes with it (used unless the run names one)."""

    name: str
    rule: str
    output_transform: str = "none"


def choose_surrogate(space: Space, deterministic: bool = False) -> AutoChoice:
    """The registered surrogate that `surrogate="auto"` stands for on `space` (see the module's table). No rule
    depends on `deterministic` today (every pick has a noiseless form); it is taken so that one can."""
    if not isinstance(space, Space):
        raise TypeError(f"space must be a zoo.Space, got {type(space).__name__}")
    if space.is_conditional:
        if not any(node.params for node in space.nodes.values()):
            return AutoChoice("gp", "conditional space whose only columns are its decisions: Add-Tree needs a "
                                    "parameter on some vertex")
        return AutoChoice("addtree", f"conditional space ({len(space.paths)} paths): Add-Tree on Yeo-Johnson-"
                                     "transformed values was at or below the flat GP's median regret on 12 of 12 "
                                     "instances of the conditional family, 0.5 log10 below on 7", "yeo-johnson")
    numeric = not any(kind == CATEGORICAL for kind in space.kinds)
    if numeric and space.dim >= HIGH_DIMENSIONAL:
        return AutoChoice("additive", f"{space.dim} numeric dimensions (>= {HIGH_DIMENSIONAL}): the additive forest "
                                      "was below the flat GP on Star-20, Tree-50 and Styblinski–Tang-50, in a third "
                                      "of its time or less")
    kind = "mixed" if not numeric else "continuous/integer"
    return AutoChoice("gp", f"flat {kind} space of {space.dim} dimensions: the fully Bayesian GP")
