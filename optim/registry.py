"""Registered surrogates (by name) and acquisition optimizers (by name, with their settings class, the
capabilities they need of a surrogate and the acquisitions they can maximize).

A surrogate lists `preferred_optimizers`; `resolve_optimizer` takes the first that it and the chosen
acquisition can serve, or the one the user names, and says at construction (before any evaluation is
spent) why none fits.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from optim.auto import AUTO, choose_surrogate
from optim.conditional_search import addtree_ucb_search, two_step_search
from optim.grid import GridConfig, optimize_grid
from optim.leaf_ascent import LeafAscentConfig, optimize_leaf_ascent
from optim.message_passing import MessagePassingConfig, optimize_message_passing
from optim.mip import MIPConfig, optimize_mip
from optim.path_lbfgs import LBFGSConfig, optimize_acquisition
from zoo.additive import Additive
from zoo.addtree import AddTree
from zoo.bark import BARK
from zoo.base import AdditiveComponents, DependencyForest, ForestPosterior, PathPredictions, Surrogate, offers
from zoo.gp import GP
from zoo.jenatton import Jenatton
from zoo.treed import Treed
from zoo.space import Space

RANDOM = "random"  # random search: no model

SURROGATES: dict[str, Callable[[Space], Surrogate]] = {
    "gp": GP, "addtree": AddTree, "jenatton": Jenatton, "bark": BARK, "additive": Additive,
    "addtree_shared": lambda space: AddTree(space, share_like=True),  # + one term per group of like vertices
    "independent": lambda space: Jenatton(space, shared=False),  # independent leaf GPs (c fixed at 0)
    "gp_saas": lambda space: GP(space, saas=True),  # the SAAS prior on the numeric lengthscales (auto's high-D pick)
    # Yeo-Johnson output warping inferred with the GP (zoo.warping): each draw its own power
    "addtree_yj": lambda space: AddTree(space, output_warp=True),
    "gp_yj": lambda space: GP(space, output_warp=True),
    # the same with the power free to go below 0 (a stronger squeeze of the worst values; zoo.warping's wide form)
    "addtree_yjw": lambda space: AddTree(space, output_warp="yeo-johnson-wide"),
    "gp_yjw": lambda space: GP(space, output_warp="yeo-johnson-wide"),
    "treed": Treed,  # 004's HTBO: the partition rebuilt by Eq. 5 every iteration (variants: zoo.treed.Treed options)
}

#: the registered surrogates that offer a noiseless form (`deterministic=True`); a contract test keeps it true
NOISELESS = ("gp", "gp_saas", "additive", "addtree", "addtree_shared", "jenatton", "independent", "treed", "bark",
             "addtree_yj", "gp_yj", "addtree_yjw", "gp_yjw")


@dataclass(frozen=True)
class OptimizerEntry:
    """A registered acquisition optimizer: `optimize(acqf, space, rng, config) -> (row, value, info)`."""

    name: str
    optimize: Callable
    config: type  # its settings class (a dataclass); saved runs store its fields
    requires: tuple = ()  # zoo.base capability classes the surrogate must offer
    acquisitions: tuple | None = None  # acquisition names it maximizes (None: any)
    #: settings fields added after runs were saved, with the values those runs used (a saved run lacking one
    #: loads with that value, not the field's current default)
    fields_added: dict = field(default_factory=dict)

    def refusal(self, surrogate: Surrogate, acquisition) -> str | None:
        """Why this optimizer cannot serve (surrogate, acquisition), or None if it can."""
        for capability in self.requires:
            if not offers(surrogate, capability):
                return (f"optimizer {self.name!r} needs a surrogate that offers {capability.__name__} "
                        f"and {surrogate.name!r} as built does not")
        if self.acquisitions is not None and acquisition.name not in self.acquisitions:
            return f"optimizer {self.name!r} maximizes {list(self.acquisitions)} only, not {acquisition.name!r}"
        return None


OPTIMIZERS: dict[str, OptimizerEntry] = {}


def register_optimizer(name: str, optimize: Callable, config: type, requires: tuple = (),
                       acquisitions: tuple | None = None, fields_added: dict | None = None) -> None:
    """Register `optimize(acqf, space, rng, config) -> (encoded row, value, info)` under `name`, with its
    settings class `config` (instances are passed to it; a run that used it saves and loads), the
    `zoo.base` capabilities it needs, the acquisition names it can maximize (None: any) and `fields_added`:
    fields of `config` added after runs were saved, mapped to the values those runs used. A surrogate
    uses it when the user names it (`optimizer="name"` or an instance of its config class) or when it is
    first in the surrogate's `preferred_optimizers` that can serve."""
    if not callable(optimize):
        raise TypeError(f"optimize must be callable, got {optimize!r}")
    if not isinstance(config, type):
        raise TypeError(f"config must be the optimizer's settings class, got {config!r}")
    OPTIMIZERS[name] = OptimizerEntry(name, optimize, config, tuple(requires),
                                      None if acquisitions is None else tuple(acquisitions), dict(fields_added or {}))


register_optimizer("lbfgs", optimize_acquisition, LBFGSConfig)
register_optimizer("grid", optimize_grid, GridConfig)
register_optimizer("vertex_ucb", addtree_ucb_search, LBFGSConfig, requires=(AdditiveComponents,), acquisitions=("ucb",))
register_optimizer("two_step", two_step_search, LBFGSConfig, requires=(PathPredictions,))
# runs saved before n_local was added (2026-12-03) scored the Sobol pool alone
register_optimizer("mip", optimize_mip, MIPConfig, requires=(ForestPosterior,), acquisitions=("ucb",),
                   fields_added={"n_local": 0})
register_optimizer("leaf_ascent", optimize_leaf_ascent, LeafAscentConfig, requires=(ForestPosterior,),
                   fields_added={"n_local": 0})
# runs saved before 2026-11-28 scored the paper's candidates alone (see MessagePassingConfig); runs saved before
# local_scales was added (2026-11-28, later that day) stepped their local rows by sd 0.1
register_optimizer("message_passing", optimize_message_passing, MessagePassingConfig, requires=(DependencyForest,),
                   acquisitions=("ucb", "logei", "ei"),
                   fields_added={"hybrids": False, "n_local": 0, "local_scales": (0.1, 0.1)})


def resolve_optimizer(surrogate: Surrogate, acquisition, optimizer=None) -> tuple[OptimizerEntry, object]:
    """(entry, settings) for a surrogate and acquisition. `optimizer`: None (the surrogate's first preferred
    optimizer that can serve), a registered name (default settings), a settings instance (the preferred
    optimizer whose config class it is, else the one registered optimizer with that class), or a
    (name, settings) pair. Raises ValueError saying why none fits."""
    if isinstance(optimizer, tuple):  # (name, settings): exactly that optimizer with those settings
        name, config = optimizer
        if name not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {name!r}; registered: {sorted(OPTIMIZERS)}")
        entry = OPTIMIZERS[name]
        if not isinstance(config, entry.config):
            raise TypeError(f"optimizer {name!r} takes {entry.config.__name__} settings, got {type(config).__name__}")
        why = entry.refusal(surrogate, acquisition)
        if why is not None:
            raise ValueError(why)
        return entry, config
    if optimizer is None or isinstance(optimizer, str):
        if optimizer is not None:
            if optimizer not in OPTIMIZERS:
                raise ValueError(f"unknown optimizer {optimizer!r}; registered: {sorted(OPTIMIZERS)}")
            candidates = [optimizer]
        else:
            candidates = list(surrogate.preferred_optimizers)
        reasons = []
        for name in candidates:
            entry = OPTIMIZERS.get(name)
            if entry is None:
                reasons.append(f"{name!r} is not registered")
                continue
            why = entry.refusal(surrogate, acquisition)
            if why is None:
                return entry, entry.config()
            reasons.append(why)
        raise ValueError(f"no acquisition optimizer for {surrogate.name!r} with {acquisition.name!r}: "
                         + "; ".join(reasons))
    preferred = [n for n in surrogate.preferred_optimizers if n in OPTIMIZERS and type(optimizer) is OPTIMIZERS[n].config]
    others = [n for n, e in OPTIMIZERS.items() if type(optimizer) is e.config and n not in preferred]
    if not preferred and len(others) > 1:
        raise ValueError(f"settings {type(optimizer).__name__} belong to several optimizers {others}, none of them "
                         f"preferred by {surrogate.name!r}; name one with optimizer='...'")
    reasons = []
    for name in preferred or others:
        why = OPTIMIZERS[name].refusal(surrogate, acquisition)
        if why is None:
            return OPTIMIZERS[name], optimizer
        reasons.append(why)
    raise ValueError(f"optimizer settings {type(optimizer).__name__} cannot be used with {surrogate.name!r} and "
                     f"{acquisition.name!r}: " + ("; ".join(reasons) or "no registered optimizer takes them"))


def optimizer_to_dict(entry: OptimizerEntry, config) -> dict:
    """What a saved run stores of its optimizer: its name, its settings class and fields."""
    return {"name": entry.name, "type": type(config).__name__, **asdict(config)}


def optimizer_from_dict(d: dict):
    """Inverse of `optimizer_to_dict` (saves before names were stored: the settings instance alone). Fields the
    record lacks because they were added later take the value its run used (`OptimizerEntry.fields_added`)."""
    d = dict(d)
    name, type_name = d.pop("name", None), d.pop("type", "LBFGSConfig")
    if name is not None:
        if name not in OPTIMIZERS:
            raise ValueError(f"the run used optimizer {name!r}, which is not registered in this process; "
                             "call optim.register_optimizer before BayesOpt.load")
        entry = OPTIMIZERS[name]
    else:
        entries = {e.config.__name__: e for e in reversed(OPTIMIZERS.values())}  # the first registered with it
        if type_name not in entries:
            raise ValueError(f"the run used optimizer settings {type_name!r}, which no registered optimizer takes; "
                             f"registered: {sorted(entries)}")
        entry = entries[type_name]
    return name, entry.config(**{**entry.fields_added, **d})


def available() -> list[str]:
    """Names `surrogate=` takes: "auto" (optim.auto), the registered surrogates, "random"."""
    return [AUTO] + sorted(SURROGATES) + [RANDOM]


def register_surrogate(name: str, factory: Callable[[Space], Surrogate]) -> None:
    """Make `minimize(..., surrogate=name)` build `factory(space)`."""
    if name in (AUTO, RANDOM):
        meaning = "a pick by optim.auto" if name == AUTO else "no model"
        raise ValueError(f"the surrogate name {name!r} is reserved: surrogate={name!r} means {meaning}")
    SURROGATES[name] = factory


#: the zoo's own surrogate classes: a run of any of them, with any options, is rebuilt from its journal alone
ZOO_CLASSES = {cls.__name__: cls for cls in (GP, AddTree, Jenatton, BARK, Additive, Treed)}


def surrogate_to_dict(model: Surrogate) -> dict:
    """What a journal records of the run's model: its class (the zoo's by name, a user's by import path) and
    the options that rebuild it (`Surrogate.options`), as JSON values."""
    cls = type(model)
    name = cls.__name__ if ZOO_CLASSES.get(cls.__name__) is cls else f"{cls.__module__}.{cls.__qualname__}"
    options = json.loads(json.dumps(model.options(), default=_plain))
    return {"class": name, "options": options}


def _plain(value):
    """NumPy scalars as Python numbers, for JSON."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"a surrogate option must be a JSON value, got {value!r}")


def with_added_options(record: dict) -> dict:
    """A journal's model record with the options its zoo class added since (`Surrogate.options_added`) set to the
    values its run used, so that it compares equal to, and rebuilds, the model that ran."""
    cls = ZOO_CLASSES.get(record.get("class"))
    if cls is None or not cls.options_added:
        return record
    return {**record, "options": {**cls.options_added, **record["options"]}}


def surrogate_from_dict(record: dict, space: Space, given: Surrogate | None = None) -> Surrogate:
    """The model a journal records: `given` after checking it is the same (class and options), else the zoo
    class rebuilt from its options; a user's class cannot be rebuilt and must be given again. Options the record
    lacks because they were added later take the value its run used (`with_added_options`)."""
    record = with_added_options(record)
    if given is not None:
        mine = surrogate_to_dict(given)
        if mine != record:
            differ = ("class" if mine["class"] != record["class"] else
                      ", ".join(sorted(k for k in set(mine["options"]) | set(record["options"])
                                       if mine["options"].get(k) != record["options"].get(k))))
            raise ValueError(f"the surrogate passed is not the run's: it differs in {differ} (the run's: "
                             f"{record['class']} with {record['options']})")
        return given
    if record["class"] not in ZOO_CLASSES:
        raise ValueError(f"this run's surrogate is a {record['class']} object, which a journal cannot rebuild; pass "
                         "the same object again: BayesOpt.load(path, surrogate=...)")
    return ZOO_CLASSES[record["class"]](space, **record["options"])


def make_surrogate(surrogate, space: Space):
    """A Surrogate built on `space` from a registered name, an instance (checked), or None for 'random'."""
    if isinstance(surrogate, str):
        if surrogate == RANDOM:
            return None
        if surrogate == AUTO:
            surrogate = choose_surrogate(space).name
        if surrogate not in SURROGATES:
            raise ValueError(f"unknown surrogate {surrogate!r}; registered: {available()}")
        return SURROGATES[surrogate](space)
    if isinstance(surrogate, Surrogate):
        if surrogate.space != space:
            raise ValueError("the surrogate was built on a different space than the one being optimized")
        return surrogate
    raise TypeError(f"surrogate must be a registered name {available()} or a zoo.Surrogate, got {surrogate!r}")
