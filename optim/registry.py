"""Registered surrogates (by name) and the acquisition optimizer each model structure calls for."""

from __future__ import annotations

from typing import Callable

from optim.lbfgs import LBFGSConfig, optimize_acquisition
from optim.mip import MIPConfig, optimize_mip
from optim.tree_search import tree_optimizer
from zoo.addtree import AddTree
from zoo.bark import BARK
from zoo.base import Surrogate
from zoo.gp import GP
from zoo.jenatton import Jenatton
from zoo.space import Space

RANDOM = "random"  # random search: no model

SURROGATES: dict[str, Callable[[Space], Surrogate]] = {
    "gp": GP, "addtree": AddTree, "jenatton": Jenatton, "bark": BARK,
    "addtree_shared": lambda space: AddTree(space, share_like=True),  # + one term per group of like vertices
    "independent": lambda space: Jenatton(space, shared=False),  # independent leaf GPs (c fixed at 0)
}
OPTIMIZERS: dict[str, Callable] = {"flat": optimize_acquisition, "tree": tree_optimizer, "forest": optimize_mip}

CONFIGS = {"LBFGSConfig": LBFGSConfig, "MIPConfig": MIPConfig}  # optimizer settings classes, by name
DEFAULT_CONFIG = {"forest": MIPConfig}  # structure -> settings class (others: LBFGSConfig)


def default_optimizer_config(surrogate):
    """The optimizer settings a surrogate gets when the user gives none."""
    structure = getattr(surrogate, "structure", "flat")
    return DEFAULT_CONFIG.get(structure, LBFGSConfig)()


def optimizer_config_from_dict(d: dict):
    """Inverse of {'type': class name, **fields} as saved by BayesOpt.save (older saves: LBFGSConfig)."""
    d = dict(d)
    cls = CONFIGS[d.pop("type", "LBFGSConfig")]
    return cls(**d)


def register_surrogate(name: str, factory: Callable[[Space], Surrogate]) -> None:
    """Make `minimize(..., surrogate=name)` build `factory(space)`."""
    SURROGATES[name] = factory


def register_optimizer(structure: str, optimizer: Callable) -> None:
    """Use `optimizer(acqf, space, rng, config)` for surrogates whose `structure` is this."""
    OPTIMIZERS[structure] = optimizer


def available() -> list[str]:
    return sorted(SURROGATES) + [RANDOM]


def make_surrogate(surrogate, space: Space):
    """A Surrogate built on `space` from a registered name, an instance (checked), or None for 'random'."""
    if isinstance(surrogate, str):
        if surrogate == RANDOM:
            return None
        if surrogate not in SURROGATES:
            raise ValueError(f"unknown surrogate {surrogate!r}; registered: {available()}")
        return SURROGATES[surrogate](space)
    if isinstance(surrogate, Surrogate):
        if surrogate.space != space:
            raise ValueError("the surrogate was built on a different space than the one being optimized")
        return surrogate
    raise TypeError(f"surrogate must be a registered name {available()} or a zoo.Surrogate, got {surrogate!r}")


def optimizer_for(surrogate: Surrogate) -> Callable:
    if surrogate.structure not in OPTIMIZERS:
        raise ValueError(f"no acquisition optimizer registered for structure {surrogate.structure!r}")
    return OPTIMIZERS[surrogate.structure]
