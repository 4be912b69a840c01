"""`surrogate="auto"`: a surrogate picked from the space and the declared noise, by rules the benchmarks back.

The rules, first match wins (the README's table; the measurements are in BENCHMARKS.md):

1. A conditional space (more than one root-to-leaf path): `addtree`, fitted to the Yeo-Johnson transform of
   the values (`output_transform="yeo-johnson"`, unless the run names a transform). On the seeded conditional
   family (12 instances, 4 of them held out of every choice; 10 seeds, "Instances 0-7 at 60 evaluations" and
   "60 evaluations on the held-out instances") its median regret is at or below the flat GP's on 11 of 12
   instances after 30 evaluations and 10 of 12 after 60, at least 0.5 log10 below on 6 and 7; where it is
   above, the difference is a tie paired by seed. Untransformed (3 seeds, "The output transform on the
   conditional family"), Add-Tree was at or below on 8 of 12 and 0.5 below on 3. The transform
   keeps the leaves whose values run to 5-13 from dominating the standardized model. On two conditional
   problems outside the family (Jenatton small, 10 seeds; compression, 5 seeds) the pairing made no
   difference the seeds could show ("The pairing on problems outside the family"). With NUTS trees of depth 3
   it costs 0.63-2.0x the GP's seconds per iteration ("Shallower NUTS trees for Add-Tree"). (A conditional
   space with no parameter outside its decisions gets `gp`: Add-Tree needs one.)
2. A flat space of 20 or more real and integer parameters: `gp_saas`, the fully Bayesian GP with the SAAS prior
   on its lengthscales (with `deterministic=True`, its noiseless form). On the four high-dimensional problems
   measured at 10 seeds and 100 evaluations it is at or below the flat GP: level on Star-20 (p = 0.43) and
   Hartmann-6 among 14 inert inputs (p = 0.38), below on Tree-50 (p = 0.004) and Styblinski–Tang-50 (p = 0.002).
   Against the additive forest with its lengthscale prior of 2026-11-27 ("A shorter lengthscale prior for
   `additive`") it is below on Styblinski–Tang-50 (2.89 vs 2.96, p = 0.027), level on Tree-50 (1.52 vs 1.47,
   p = 0.85) and Hartmann (-3.10 vs -2.46, p = 0.084), and above on Star-20 (0.87 vs 0.47, p = 0.002). It costs
   238-538 s per 100-evaluation run there, 3-11x `additive`'s and about the flat GP's; name `additive` when
   evaluations are cheap or the objective is a sum of low-dimensional parts. Declared exact, its noiseless form
   was level with it on Star-20 (0.73 vs 0.87, p = 0.38; "Exact objectives in high dimensions"; not run on the
   other three). Until 2026-11-27 this rule picked `additive` (with its earlier prior, which the SAAS GP was at
   or below on all four problems). With its search of 2026-11-28 (log-EI over rows near the incumbent, "Rows
   near the incumbent"), `additive` is below the SAAS GP on Star-20 (0.31 vs 0.87, p = 0.002) and Tree-50 (1.42
   vs 1.52, p = 0.027) and level on Styblinski–Tang-50 (2.90 vs 2.89, p = 1.0); on Hartmann-6 among 14 inert
   inputs it is behind the SAAS GP (-1.78 vs -3.10, p = 0.064; "The new search on problems it was not tuned on"),
   so the rule stands. On Grid-25 (a 25-D additive function whose graph is not a forest; measured 2026-11-28) the
   SAAS GP is below the flat GP (1.22 vs 1.38, p = 0.002) and level with `additive` (1.22 vs 1.17, p = 0.28).
3. Anything else (low-dimensional, or with categorical parameters): `gp`. On mixed spaces ("Mixed spaces")
   BARK is ahead on DiscreteRosenbrock and behind on DiscreteAckley; the GP is the safer default.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.space import CATEGORICAL, Space

AUTO = "auto"
HIGH_DIMENSIONAL = 20  # columns from which a flat numeric space gets the SAAS-prior GP


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
                                     "transformed values was at or below the flat GP's median regret on 11 of 12 "
                                     "instances of the conditional family after 30 evaluations and 10 of 12 after "
                                     "60 (ties paired by seed where above), 0.5 log10 below on 6 and 7",
                              "yeo-johnson")
    numeric = not any(kind == CATEGORICAL for kind in space.kinds)
    if numeric and space.dim >= HIGH_DIMENSIONAL:
        return AutoChoice("gp_saas", f"{space.dim} numeric dimensions (>= {HIGH_DIMENSIONAL}): the SAAS-prior GP was at "
                                     "or below the flat GP on Star-20, Tree-50, Styblinski–Tang-50 and Hartmann-6 "
                                     "among 14 inert inputs, and lost to the additive forest on Star-20 only")
    kind = "mixed" if not numeric else "continuous/integer"
    return AutoChoice("gp", f"flat {kind} space of {space.dim} dimensions: the fully Bayesian GP")
