"""The BO loop: ask/tell with save/load, and `minimize`.

Each `ask` after the initial design fits the surrogate by MCMC (warm-started from the previous
fit), builds the integrated acquisition over the posterior samples and maximizes it with the first of
the surrogate's preferred optimizers (optim.registry) that can serve it. Randomness comes only from keys derived from
(seed, number of evaluations so far), so the same seed gives the same run, and a run saved and
loaded continues exactly as if it had not stopped.
"""

from __future__ import annotations

import enum
import json
import math
import numbers
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import jax
import numpy as np

from inference import Posterior, WarmStart, sample
from optim.acquisition import UCB, get_acquisition
from optim.integrated import AcquisitionFunction
from optim.registry import make_surrogate, optimizer_from_dict, optimizer_to_dict, resolve_optimizer
from optim.transforms import check_output_transform, check_value_for, transform_outputs
from zoo.base import NoiselessForm, Surrogate, offers
from zoo.space import Space

FORMAT_VERSION = 1
#: largest |objective value| shown to a model: squares and differences of larger values overflow float64
MAX_ABS_VALUE = 1e100
#: statuses a history record may have; only "ok" values reach the model
STATUSES = ("ok", "error", "nonfinite", "out_of_range")


@dataclass(frozen=True)
class SamplerSettings:
    """MCMC budget per BO iteration: a long first fit, then short warm-started continuations."""

    num_chains: int = 2
    cold_warmup: int = 300
    warm_warmup: int = 40
    num_samples: int = 16  # kept per chain; the acquisition averages over num_chains * num_samples
    thinning: int = 4
    max_tree_depth: int = 6
    #: run MCMC on every k-th BO iteration only; in between, the last draws are conditioned on the new data
    #: (`Posterior.conditioned_on`), as paper 002 relearns its structure every C = 15 iterations. The draws
    #: are not saved, so the first iteration after `BayesOpt.load` runs MCMC (warm-started)
    refit_every: int = 1

    def __post_init__(self):
        if not isinstance(self.refit_every, (int, np.integer)) or isinstance(self.refit_every, bool) \
                or self.refit_every < 1:
            raise ValueError(f"refit_every must be an integer >= 1, got {self.refit_every!r}")

    @classmethod
    def for_surrogate(cls, surrogate) -> SamplerSettings:
        """The defaults, overridden by the surrogate's own `sampler_defaults` (e.g. BARK's long burn-in)."""
        return cls(**(surrogate.sampler_defaults if surrogate is not None else {}))


class Stream(enum.IntEnum):
    """The purposes randomness is drawn for; each gets its own seed per evaluation index."""

    DESIGN = 0  # the initial design (drawn once, at index 0)
    RANDOM = 1  # random proposals (random search, too few observations, a duplicate proposal)
    SAMPLER = 2  # the MCMC fit
    OPTIMIZER = 3  # the acquisition optimizer


def derive_seed(seed: int, step: int, stream: Stream) -> int:
    """A 32-bit integer seed for (user seed, evaluation index, purpose), via NumPy's SeedSequence."""
    return int(np.random.SeedSequence([int(seed), int(step), int(stream)]).generate_state(1)[0])


DESIGNS = ("sobol", "paths")


def initial_design(space: Space, n_init: int, seed: int, design: str = "sobol") -> list[dict]:
    """The scrambled-Sobol initial design of a run: it depends only on (space, n_init, seed, design), so
    every method benchmarked with the same seed starts from the same points. ``design="paths"`` gives
    the first points one root-to-leaf path each (conditional spaces: every leaf seen once)."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    return space.sobol(n_init, seed=derive_seed(seed, 0, Stream.DESIGN), cover_paths=design == "paths")


def check_save_folder(path) -> None:
    """Refuse a save path whose folder does not exist (before any evaluation is spent)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{path!s}: the folder {folder} does not exist")


def _check_n_init(n_init) -> None:
    if n_init is not None and (not isinstance(n_init, (int, np.integer)) or isinstance(n_init, bool)):
        raise TypeError(f"n_init must be an integer, got {n_init!r}")


def _check_value(value) -> float:
    """A real scalar (Python, NumPy or a 0-d JAX / NumPy array) as a float; anything else is a TypeError."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or not (isinstance(value, numbers.Real)
                                                               or hasattr(value, "__array__")):
        raise TypeError(f"the objective value must be a real number, got {value!r}")
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"the objective value must be a real number, got {value!r}")
    arr = arr.astype(np.float64)
    if arr.size != 1:
        raise TypeError(f"the objective value must be a scalar, got an array of shape {arr.shape}")
    return float(arr.reshape(()))


class BayesOpt:
    """Ask/tell Bayesian optimization (minimization) of a black box over a `zoo.Space`.

    >>> opt = BayesOpt(space, surrogate="gp", seed=0)
    >>> config = opt.ask(); opt.tell(config, f(config))

    `optimizer`: None (the surrogate's preferred optimizer for the acquisition), a registered name
    ("lbfgs", "vertex_ucb", "two_step", "mip", or one added by `optim.register_optimizer`), a settings
    instance (`LBFGSConfig(...)`, `MIPConfig(...)`), or a (name, settings) pair. An optimizer the
    surrogate cannot serve is refused here, before any evaluation is spent.
    """

    def __init__(self, space: Space, surrogate="gp", acquisition=None, seed: int = 0,
                 n_init: int | None = None, sampler: SamplerSettings | None = None,
                 optimizer=None, design: str = "sobol", output_transform: str = "none",
                 deterministic: bool = False):
        if not isinstance(space, Space):
            raise TypeError(f"space must be a zoo.Space, got {type(space).__name__}")
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        _check_n_init(n_init)
        self.space = space
        self.surrogate_spec = (surrogate if isinstance(surrogate, str)
                               else surrogate.name if isinstance(surrogate, Surrogate) else "custom")
        self.surrogate = make_surrogate(surrogate, space)
        if not isinstance(deterministic, (bool, np.bool_)):
            raise TypeError(f"deterministic must be True or False, got {deterministic!r}")
        self.deterministic = bool(deterministic)
        if self.deterministic:  # the user declares y exact: the model's noise prior moves near zero
            if self.surrogate is None:
                raise ValueError("deterministic=True needs a model; random search has no noise to switch off")
            if not offers(self.surrogate, NoiselessForm):
                raise ValueError(f"the {self.surrogate.name!r} surrogate has no noiseless form (deterministic=True "
                                 "needs a model that offers zoo.base.NoiselessForm: gp, addtree, addtree_shared, "
                                 "jenatton, independent)")
            self.surrogate = self.surrogate.noiseless()
        if acquisition is None:  # the surrogate's own choice (UCB for BARK, log-EI for the others)
            acquisition = self.surrogate.default_acquisition if self.surrogate is not None else "logei"
        self.acquisition = get_acquisition(acquisition)
        # the optimizer is chosen (and a surrogate it cannot serve refused) before any evaluation is spent
        self.optimizer_entry, self.optimizer = (resolve_optimizer(self.surrogate, self.acquisition, optimizer)
                                                if self.surrogate is not None else (None, None))
        self.seed = int(seed)
        self.n_init = self.default_n_init(space) if n_init is None else int(n_init)
        if self.n_init < 1:
            raise ValueError(f"n_init must be >= 1, got {n_init!r}")
        # defaults come from the surrogate: BARK wants 4 chains and a long first burn-in, and a MIP
        self.sampler = sampler if sampler is not None else SamplerSettings.for_surrogate(self.surrogate)
        self.history: list[dict] = []
        self.posterior: Posterior | None = None
        self._warm: WarmStart | None = None
        self._since_fit = 0  # BO iterations since the last MCMC run (see SamplerSettings.refit_every)
        self._pending: dict | None = None
        self.design = design
        self._design = initial_design(space, self.n_init, self.seed, design)
        # the model sees transform(y) (monotone: same minimizer); the history keeps the user's values
        self.output_transform = check_output_transform(output_transform)

    @staticmethod
    def default_n_init(space: Space) -> int:
        """max(dim + 1, number of paths), capped at 20: enough to see every branch once."""
        return min(max(space.dim + 1, len(space.paths), 2), 20)

    # ------------------------------------------------------------------ observations
    @property
    def observations(self) -> list[dict]:
        return [h for h in self.history if h["status"] == "ok"]

    @property
    def best(self) -> dict | None:
        obs = self.observations
        return min(obs, key=lambda h: h["value"]) if obs else None

    @property
    def best_config(self):
        return None if self.best is None else dict(self.best["config"])

    @property
    def best_value(self):
        return None if self.best is None else self.best["value"]

    # ------------------------------------------------------------------ ask
    def ask(self) -> dict:
        """The next configuration to evaluate (the same one again until it is told)."""
        if self._pending is not None:
            return dict(self._pending["config"])
        step = len(self.history)
        info = {"fit_seconds": 0.0, "acq_seconds": 0.0, "acq_value": None}
        obs = self.observations
        if step < self.n_init:
            config, source = self._design[step], "init"
        elif self.surrogate is None:
            config, source = self._random(step), "random"
        elif len(obs) < 2:
            config, source = self._random(step), "random:too-few-observations"
        else:
            config, source, info = self._suggest(step, obs)
        self._pending = {"config": config, "source": source, **info}
        return dict(config)

    def _random(self, step: int) -> dict:
        return self.space.sample(1, seed=derive_seed(self.seed, step, Stream.RANDOM))[0]

    def _suggest(self, step: int, obs: list[dict]):
        s = self.sampler
        X = self.space.encode([h["config"] for h in obs])
        y = transform_outputs([h["value"] for h in obs], self.output_transform)
        t0 = time.perf_counter()
        cold = self._warm is None
        if not cold and self._since_fit + 1 < s.refit_every and self.posterior is not None:
            self._since_fit += 1
            self.posterior = self.posterior.conditioned_on(X, y)
        else:
            self._since_fit = 0
            self.posterior = sample(
                self.surrogate, X, y, derive_seed(self.seed, step, Stream.SAMPLER),
                num_warmup=s.cold_warmup if cold else s.warm_warmup, num_samples=s.num_samples,
                num_chains=s.num_chains, thinning=s.thinning, init=self._warm, max_tree_depth=s.max_tree_depth)
        self._warm = self.posterior.last_state
        t1 = time.perf_counter()
        acqf = AcquisitionFunction(self.posterior, self.acquisition, best=float(np.min(y)),
                                   t=step - self.n_init + 1)
        rng = np.random.default_rng(derive_seed(self.seed, step, Stream.OPTIMIZER))
        x, value, extra = self.optimizer_entry.optimize(acqf, self.space, rng, self.optimizer)
        config, source = self.space.decode(x), "bo"
        if np.any(np.all(np.abs(X - self.space.encode(config)) < 1e-12, axis=1)):
            config, source = self._random(step), "random:duplicate"
        info = {"fit_seconds": t1 - t0, "acq_seconds": time.perf_counter() - t1, "acq_value": float(value)}
        if isinstance(extra, dict):  # e.g. the MIP's status, gap and whether it fell back to the pool
            info["optimizer_info"] = extra
        return config, source, info

    # ------------------------------------------------------------------ tell
    def tell(self, config: dict, value=None, *, error: str | None = None) -> None:
        """Record an evaluation. NaN/inf values, values beyond MAX_ABS_VALUE and `error=` (a failed
        evaluation) are kept in the history with their status but never shown to the model. A bad config or
        value (or one the output transform cannot take) raises and changes nothing."""
        config = self.space.validate(config)
        if error is not None and value is not None:
            raise ValueError("tell() takes a value or error='...' (a failed evaluation), not both")
        if error is not None:
            status, value = "error", None
        else:
            if value is None:
                raise TypeError("tell() needs a value (or error='...' for a failed evaluation)")
            value = _check_value(value)
            check_value_for(self.output_transform, value)
            status = "ok" if math.isfinite(value) else "nonfinite"
            if status == "ok" and abs(value) > MAX_ABS_VALUE:  # standardizing it would overflow
                status, error = "out_of_range", (f"|value| = {abs(value):.3g} exceeds {MAX_ABS_VALUE:g}, the largest "
                                                 "magnitude the models take; kept in the history, not modelled")
        pending = self._pending
        if pending is not None and self.space.encode(pending["config"]).tolist() == self.space.encode(config).tolist():
            record, self._pending = {k: v for k, v in pending.items() if k != "config"}, None
        else:
            record = {"source": "user", "fit_seconds": 0.0, "acq_seconds": 0.0, "acq_value": None}
        self.history.append({"config": config, "value": value, "status": status, "error": error, **record})

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        acq = self.acquisition
        return {
            "format": FORMAT_VERSION, "space": self.space.to_dict(), "surrogate": self.surrogate_spec,
            "acquisition": {"name": acq.name, "beta": acq.beta if isinstance(acq, UCB) else None},
            "seed": self.seed, "n_init": self.n_init, "design": self.design, "output_transform": self.output_transform,
            "deterministic": self.deterministic, "sampler": asdict(self.sampler),
            "optimizer": (None if self.optimizer_entry is None
                          else optimizer_to_dict(self.optimizer_entry, self.optimizer)), "history": self.history,
            "pending": self._pending,
            "warm_start": None if self._warm is None else _tree_to_json(self._warm._asdict()),
        }

    def save(self, path) -> None:
        """Write the whole run (space, settings, history, MCMC warm start) as JSON."""
        with open(path, "w") as f:
            json.dump(self.state_dict(), f)

    @classmethod
    def load(cls, path, surrogate=None) -> "BayesOpt":
        """Resume a saved run; pass `surrogate=` for a custom (unregistered) surrogate object."""
        with open(path) as f:
            try:
                d = json.load(f)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: not a saved treezoo run (invalid or truncated JSON: {exc})") from None
        if not isinstance(d, dict):
            raise ValueError(f"{path}: not a saved treezoo run (a JSON {type(d).__name__}, not an object)")
        if d.get("format") != FORMAT_VERSION:
            raise ValueError(f"{path}: unsupported format {d.get('format')!r}")
        missing = sorted({"space", "surrogate", "acquisition", "seed", "n_init", "sampler", "optimizer", "history",
                          "pending", "warm_start"} - set(d))
        if missing:
            raise ValueError(f"{path}: not a complete saved treezoo run; missing {missing}")
        space = Space.from_dict(d["space"])
        acq = d["acquisition"]
        acquisition = UCB(beta=acq["beta"]) if acq["name"] == "ucb" else acq["name"]
        surrogate = surrogate if surrogate is not None else d["surrogate"]
        optimizer = None
        if d["optimizer"] is not None and surrogate != "random":
            name, config = optimizer_from_dict(d["optimizer"])
            optimizer = config if name is None else (name, config)
        opt = cls(space, surrogate=surrogate,
                  acquisition=acquisition, seed=d["seed"], n_init=d["n_init"],
                  sampler=SamplerSettings(**d["sampler"]), optimizer=optimizer,
                  design=d.get("design", "sobol"), output_transform=d.get("output_transform", "none"),
                  deterministic=d.get("deterministic", False))
        try:
            opt.history = [_checked_record(space, h) for h in d["history"]]
            if d["pending"] is not None:
                opt._pending = dict(d["pending"], config=space.validate(d["pending"]["config"]))
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{path}: damaged history or pending evaluation: {exc}") from None
        if d["warm_start"] is not None:
            opt._warm = WarmStart(**_tree_from_json(d["warm_start"]))
        return opt


def _checked_record(space: Space, h) -> dict:
    """A saved history record, checked: a valid config, a known status, and a finite value where it is ok."""
    if not isinstance(h, dict) or h.get("status") not in STATUSES:
        raise ValueError(f"a record needs a status in {STATUSES}, got {h!r}")
    if h["status"] == "ok":
        value = _check_value(h.get("value"))
        if not (math.isfinite(value) and abs(value) <= MAX_ABS_VALUE):
            raise ValueError(f"an 'ok' record holds the value {h.get('value')!r}")
    return dict(h, config=space.validate(h["config"]))


def _tree_to_json(tree):
    return jax.tree_util.tree_map(lambda a: {"dtype": str(np.asarray(a).dtype), "data": np.asarray(a).tolist()},
                                  tree)


def _tree_from_json(tree):
    if isinstance(tree, dict) and set(tree) == {"dtype", "data"}:
        return np.asarray(tree["data"], dtype=tree["dtype"])
    return {k: _tree_from_json(v) for k, v in tree.items()}


# ---------------------------------------------------------------------- minimize
@dataclass
class Result:
    """Outcome of `minimize`: the best evaluation, the whole history and the last posterior."""

    best_config: dict | None
    best_value: float | None
    history: list[dict]
    posterior: Posterior | None = None
    optimizer: Any = field(default=None, repr=False)

    @property
    def values(self) -> np.ndarray:
        """Objective value per evaluation (NaN where it failed)."""
        return np.array([np.nan if h["value"] is None else h["value"] for h in self.history])

    def __repr__(self):
        failed = sum(h["status"] != "ok" for h in self.history)
        return (f"Result(best_value={self.best_value!r}, best_config={self.best_config!r}, "
                f"evaluations={len(self.history)}, failed={failed})")


def minimize(objective: Callable[[dict], float], space: Space, surrogate="gp", budget: int = 50,
             seed: int = 0, n_init: int | None = None, acquisition=None, progress: bool = False,
             checkpoint=None, callback: Callable | None = None, **settings) -> Result:
    """Minimize `objective(config) -> float` over `space` with `budget` evaluations.

    The first `n_init` evaluations are a scrambled Sobol design (default: max(dim + 1, number of
    paths), capped at 20 and at the budget); `settings` may pass `design="paths"` so that the first
    points cover every root-to-leaf path once. An objective that raises or returns NaN/inf is
    recorded as a failed evaluation (it counts toward the budget and is never shown to the model).
    `checkpoint`: a path saved after every evaluation, for `BayesOpt.load`. `progress`: a tqdm bar.
    `settings`: `sampler=SamplerSettings(...)`, `optimizer=` (see `BayesOpt`), `design="sobol"|"paths"`, `output_transform="none"|"log"|"yeo-johnson"` (the model fits a
    monotone transform of the values: for heavy-tailed objectives), `deterministic=True` (the objective
    returns exact values, e.g. a simulation: the model's noise prior moves to
    `zoo.base.NOISELESS_PRIOR`); unset, they default to what the surrogate asks for.
    """
    if not callable(objective):
        raise TypeError("objective must be callable: config dict -> float")
    if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget!r}")
    _check_n_init(n_init)
    if n_init is not None and n_init > budget:
        raise ValueError(f"n_init={n_init} exceeds budget={budget}: the initial design must fit in the budget")
    if n_init is None and isinstance(space, Space):
        n_init = min(BayesOpt.default_n_init(space), int(budget))
    if checkpoint is not None:
        check_save_folder(checkpoint)
    opt = BayesOpt(space, surrogate=surrogate, acquisition=acquisition, seed=seed, n_init=n_init, **settings)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=int(budget), desc=f"treezoo[{opt.surrogate_spec}]", unit="eval")
    try:
        for _ in range(int(budget)):
            config = opt.ask()
            try:
                value = objective(dict(config))
            except Exception as exc:  # a failing objective is data, not a crash
                opt.tell(config, error=f"{type(exc).__name__}: {exc}")
                warnings.warn(f"objective raised {type(exc).__name__}: {exc}; recorded as failed", stacklevel=2)
            else:
                try:
                    opt.tell(config, value)
                except (TypeError, ValueError) as exc:  # not a real scalar, or not one the transform takes
                    opt.tell(config, error=str(exc))
                    warnings.warn(f"{exc}; recorded as failed", stacklevel=2)
            if checkpoint is not None:
                opt.save(checkpoint)
            if callback is not None:
                callback(opt)
            if bar is not None:
                bar.update(1)
                if opt.best_value is not None:
                    bar.set_postfix(best=f"{opt.best_value:.6g}")
    finally:
        if bar is not None:
            bar.close()
    return Result(opt.best_config, opt.best_value, opt.history, opt.posterior, opt)
