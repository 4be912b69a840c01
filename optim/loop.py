"""The BO loop: ask/tell with a run journal, and `minimize`.

Each `ask` after the initial design fits the surrogate by MCMC (warm-started from the previous
fit), builds the integrated acquisition over the posterior samples and maximizes it with the first of
the surrogate's preferred optimizers (optim.registry) that can serve it. Several configurations may be in
flight at once (`ask(n)`, or `ask()` again before `tell`): they enter the next proposal as fantasies
(optim.batch). Randomness comes only from keys derived from (seed, index of the proposal), so the same
seed gives the same run, and a run journalled (optim.journal) or saved and loaded continues exactly as if
it had not stopped.
"""

from __future__ import annotations

import base64
import enum
import json
import math
import numbers
import os
import sys
import time
import warnings
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import jax
import numpy as np

from inference import ChainWorkers, Posterior, WarmStart, best_chain_indices, best_chains, sample
from optim.acquisition import UCB, ImprovementMargin, get_acquisition
from optim.auto import AUTO, AutoChoice, choose_surrogate
from optim.batch import check_batch_strategy, with_pending
from optim.integrated import AcquisitionFunction
from optim.journal import JOURNAL_FORMAT, KIND, Journal, is_journal, read_header, read_journal, write_json_atomically
from optim.journal import write_journal_atomically
from optim.parallel import SerialExecutor, as_executor, check_picklable, evaluate_concurrently
from optim.registry import (NOISELESS, available, make_surrogate, optimizer_from_dict, optimizer_to_dict,
                            resolve_optimizer, surrogate_from_dict, surrogate_to_dict, with_added_options)
from optim.transforms import (FIXED_TRANSFORMS, WARPED_TRANSFORM, check_output_transform, check_value_for,
                              transform_outputs, warped_power)
from zoo.base import NoiselessForm, OutputWarping, Surrogate, offers
from zoo.warping import YEO_JOHNSON_WIDE
from zoo.space import Space

FORMAT_VERSION = 2  # JSON snapshots (`save`); 1: before several evaluations could be pending (still loads)
#: largest |objective value| shown to a model: squares and differences of larger values overflow float64
MAX_ABS_VALUE = 1e100
#: what the model makes of failed evaluations (`BayesOpt(on_failure=...)`): "worst" (the default since 2026-12-07)
#: puts each failed configuration in at the worst successful value so far, so that the acquisition stops returning
#: to a region that fails (a crashed or diverged run, a timeout); "ignore" leaves them out of its data, as before.
#: On three problems with a failure region the default cut the failed share of 40 evaluations from 33-79% to 9-12%
#: with no loss of regret (BENCHMARKS.md, "Failed evaluations")
FAILURE_POLICIES = ("worst", "ignore")
DEFAULT_ON_FAILURE = "worst"

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
    #: run MCMC only once the data have grown by this fraction since the last MCMC fit (0.05: at n = 100 every
    #: 5th iteration, at n = 200 every 10th), conditioning the last draws in between; with `refit_every`, MCMC
    #: runs when both allow it. A new point among many barely moves the hyperparameters' posterior, while the
    #: fit's cost grows as n^3; 0: no growth rule
    refit_growth: float = 0.0
    #: every k-th BO iteration (iterations 1 + k, 1 + 2k, ...), the warm-started chains get `num_chains` fresh
    #: cold-started chains beside them on the same data, and the `num_chains` with the highest median log density
    #: are kept (`inference.best_chains`): a warm chain left in a mode the new data no longer support is replaced.
    #: 0: never. It falls on MCMC fits only, so it must be a multiple of `refit_every`
    restart_every: int = 0

    def __post_init__(self):
        if not isinstance(self.refit_every, (int, np.integer)) or isinstance(self.refit_every, bool) \
                or self.refit_every < 1:
            raise ValueError(f"refit_every must be an integer >= 1, got {self.refit_every!r}")
        if not isinstance(self.restart_every, (int, np.integer)) or isinstance(self.restart_every, bool) \
                or self.restart_every < 0:
            raise ValueError(f"restart_every must be an integer >= 0 (0: never), got {self.restart_every!r}")
        if isinstance(self.refit_growth, bool) or not isinstance(self.refit_growth, (int, float, np.integer, np.floating)) \
                or not np.isfinite(self.refit_growth) or self.refit_growth < 0:
            raise ValueError(f"refit_growth must be a finite number >= 0 (0: no growth rule), got {self.refit_growth!r}")
        if self.restart_every % self.refit_every:
            raise ValueError(f"restart_every ({self.restart_every}) must be a multiple of refit_every "
                             f"({self.refit_every}): restarts fall on MCMC fits, which run every refit_every iterations")

    def restarts_at(self, iteration: int) -> bool:
        """Whether the MCMC fit of BO iteration `iteration` (1 for the first proposal after the design) also runs
        cold chains: iterations 1 + k, 1 + 2k, ... for restart_every = k (the first fit is cold anyway)."""
        k = self.restart_every
        return k > 0 and iteration > 1 and (iteration - 1) % k == 0

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
    BATCH = 4  # the outcomes 'fantasy' and 'qei' sample at pending points, the draw 'thompson' picks
    RESTART = 5  # the cold chains run beside warm ones (SamplerSettings.restart_every)
    WARP = 6  # the fit of the warped twin whose power output_transform='yeo-johnson-warped' takes


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


def _with_defaults(run: dict) -> dict:
    """A stored run's settings with the sampler's and optimizer's fields added since it was written set to their
    defaults, so that a journal or snapshot from before a new field resumes (it ran with the default), and the
    model's options added since set to the values it ran with (`with_added_options`)."""
    run = dict(run)
    run.setdefault("on_failure", "ignore")  # recorded since 2026-12-07; earlier runs ignored failures
    if isinstance(run.get("surrogate_model"), dict):
        run["surrogate_model"] = with_added_options(run["surrogate_model"])
    if isinstance(run.get("sampler"), dict):
        run["sampler"] = {**asdict(SamplerSettings()), **run["sampler"]}
    if isinstance(run.get("optimizer"), dict):
        try:
            _, config = optimizer_from_dict(run["optimizer"])
            run["optimizer"] = {**asdict(config), **run["optimizer"]}
        except (TypeError, ValueError):  # unknown settings: compared as stored, so the run is refused by name
            pass
    # as JSON, like the header it is compared with: a default added as a tuple would otherwise never equal its list
    return json.loads(json.dumps(run))


def _stored_settings(path) -> dict | None:
    """The settings of the run saved at `path` (a journal's header, or an older JSON snapshot's keys), or None
    where there is none to resume."""
    if path is None or not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    header = read_header(path)
    if header is not None:
        return header
    try:
        return _read_snapshot(path)
    except (OSError, ValueError):
        return None  # not a saved run: attaching the journal refuses it with the reason


class BayesOpt:
    """Ask/tell Bayesian optimization (minimization) of a black box over a `zoo.Space`.

    >>> opt = BayesOpt(space, seed=0)   # surrogate="auto": picked from the space (optim.auto), see opt.auto_choice
    >>> config = opt.ask(); opt.tell(config, f(config))
    >>> batch = opt.ask(4)   # four distinct configurations to evaluate in parallel, told in any order

    `on_failure`: what the model makes of a failed evaluation (an exception, a timeout, NaN/inf, `tell(...,
    error=...)`): "worst" (default) fits it at the worst successful value so far, so that the acquisition leaves a
    region where runs fail; "ignore" leaves it out of the model's data; None: a resumed journal's setting.

    `optimizer`: None (the surrogate's preferred optimizer for the acquisition), a registered name
    ("lbfgs", "vertex_ucb", "two_step", "mip", "leaf_ascent", "grid", "message_passing", or one added by
    `optim.register_optimizer`), a settings instance (`LBFGSConfig(...)`, `MIPConfig(...)`), or a (name,
    settings) pair. An optimizer the surrogate cannot serve is refused here, before any evaluation is spent.
    `batch_strategy`: how configurations in flight enter the next proposal ("believer", "liar", "fantasy",
    "qei" or "thompson", see optim.batch). `journal`: a path; every ask and tell is appended to it as it happens
    (optim.journal), and an existing journal of the same run is resumed (one of another run is refused).
    `output_transform`: None (a resumed journal's; otherwise the transform `surrogate="auto"` pairs with its
    pick, else "none"), "none", "log", "yeo-johnson", "yeo-johnson-design" (fitted once, on the first `n_init`
    values), "log-tail" (the values above their median on a log scale), "copula" (normal scores of the ranks) or
    "yeo-johnson-warped" (optim.transforms: one map at the median power of the surrogate's warped twin, `warp_twin`,
    fitted beside the model; each BO step records `warp_power`); the run's is `opt.output_transform`.
    `chain_workers`: 0 (default) or 1 runs each fit's MCMC chains in this process; k >= 2 runs them in k child
    processes side by side, one core each (`inference.ChainWorkers`, started at the first fit and stopped by
    `close`); or a `ChainWorkers` of the caller's, which `close` leaves running. It pays where one fit takes
    seconds (many rows, many dimensions: BENCHMARKS.md); a run is then repeatable for the same seed and k, and
    differs from the in-process run in rounding only.
    """

    def __init__(self, space: Space, surrogate="auto", acquisition=None, seed: int = 0,
                 n_init: int | None = None, sampler: SamplerSettings | None = None,
                 optimizer=None, design: str = "sobol", output_transform: str | None = None,
                 deterministic: bool = False, batch_strategy: str = "believer", journal=None,
                 chain_workers: int = 0, on_failure: str | None = None):
        if not isinstance(space, Space):
            raise TypeError(f"space must be a zoo.Space, got {type(space).__name__}")
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        _check_n_init(n_init)
        if isinstance(chain_workers, ChainWorkers):  # the caller's pool (shared between runs, say): not closed here
            self.chain_workers, self._own_chain_workers = chain_workers, False
        elif (isinstance(chain_workers, (int, np.integer)) and not isinstance(chain_workers, bool)
              and chain_workers >= 0):
            # child processes for the chains of each fit (None: in this process); started at the first fit
            self.chain_workers = ChainWorkers(int(chain_workers)) if chain_workers >= 2 else None
            self._own_chain_workers = True
        else:
            raise ValueError("chain_workers must be an integer >= 0 (0 or 1: chains in this process) or an "
                             f"inference.ChainWorkers, got {chain_workers!r}")
        self.space = space
        if on_failure is None:  # a resumed run's (runs saved before the setting ignored failures), else the default
            stored = _stored_settings(journal)
            on_failure = DEFAULT_ON_FAILURE if stored is None else stored.get("on_failure", "ignore")
        if on_failure not in FAILURE_POLICIES:
            raise ValueError(f"on_failure must be one of {FAILURE_POLICIES}, got {on_failure!r}")
        self.on_failure = on_failure
        if not isinstance(deterministic, (bool, np.bool_)):
            raise TypeError(f"deterministic must be True or False, got {deterministic!r}")
        self.deterministic = bool(deterministic)
        # "auto": a registered surrogate picked from the space and the declared noise (optim.auto); the journal
        # and snapshot record the pick and its rule, and BayesOpt.load restores both
        self.auto_choice: AutoChoice | None = None
        if isinstance(surrogate, str) and surrogate == AUTO:
            self.auto_choice = choose_surrogate(space, self.deterministic)
            surrogate = self.auto_choice.name
        self.surrogate_spec = (surrogate if isinstance(surrogate, str)
                               else surrogate.name if isinstance(surrogate, Surrogate) else "custom")
        self.surrogate = make_surrogate(surrogate, space)
        # the model as built (class and options, before the noiseless switch): a journal rebuilds it from this
        self._surrogate_as_built = self.surrogate
        self.surrogate_record = None if self.surrogate is None else surrogate_to_dict(self.surrogate)
        if self.deterministic:  # the user declares y exact: the model's noise prior moves near zero
            if self.surrogate is None:
                raise ValueError("deterministic=True needs a model; random search has no noise to switch off")
            if not offers(self.surrogate, NoiselessForm):
                raise ValueError(f"the {self.surrogate.name!r} surrogate has no noiseless form (deterministic=True "
                                 "needs a model that offers zoo.base.NoiselessForm: " + ", ".join(NOISELESS) + ")")
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
        self.batch_strategy = check_batch_strategy(batch_strategy)
        self.history: list[dict] = []
        self.posterior: Posterior | None = None
        self._warm: WarmStart | None = None
        self._since_fit = 0  # BO iterations since the last MCMC run (see SamplerSettings.refit_every)
        self._fit_n = 0  # observations the last MCMC run saw (see SamplerSettings.refit_growth)
        self._pending: list[dict] = []  # asked, not told: {"index", "config", "source", fit/acq info}
        self.design = design
        self._design = initial_design(space, self.n_init, self.seed, design)
        # the model sees transform(y) (monotone: same minimizer); the history keeps the user's values.
        # None: the journal's when resuming one, else the transform auto paired with its pick, else "none"
        if output_transform is None:
            header = read_header(journal) if journal is not None else None  # None too where there is no journal
            output_transform = ((header or {}).get("output_transform")
                                or (self.auto_choice.output_transform if self.auto_choice is not None else "none"))
        self.output_transform = check_output_transform(output_transform)
        # "yeo-johnson-warped": the surrogate's warped twin, fitted at each MCMC fit for the power of the one map
        self.warp_twin, self._warp_warm, self.warp_power = self._warped_twin(), None, None
        self.journal: Journal | None = None
        self.resumed = 0  # evaluations found in an existing journal at construction
        if journal is not None:
            self._attach_journal(journal)

    def _warped_twin(self) -> Surrogate | None:
        """The surrogate with the wide output warp (zoo.warping), where the transform takes its power from it; a
        surrogate that cannot be warped, or is warped already, is refused here, before any evaluation."""
        if self.output_transform != WARPED_TRANSFORM:
            return None
        model = self.surrogate
        if model is None or not isinstance(model, OutputWarping) or offers(model, OutputWarping):
            raise ValueError(f"output_transform={WARPED_TRANSFORM!r} needs an unwarped surrogate whose class declares "
                             f"zoo.base.OutputWarping (gp, addtree), got {self.surrogate_spec!r}")
        twin = type(model)(self.space, **{**model.options(), "output_warp": YEO_JOHNSON_WIDE})
        return twin.noiseless() if self.deterministic else twin

    @staticmethod
    def default_n_init(space: Space) -> int:
        """max(dim + 1, number of paths), capped at 20: enough to see every branch once."""
        return min(max(space.dim + 1, len(space.paths), 2), 20)

    # ------------------------------------------------------------------ observations
    @property
    def observations(self) -> list[dict]:
        return [h for h in self.history if h["status"] == "ok"]

    @property
    def model_observations(self) -> list[dict]:
        """What the model is fitted to, as {"config", "value"}: the successful evaluations and, with
        on_failure="worst", every failed one at the largest successful value so far (none before a success)."""
        obs = [{"config": h["config"], "value": h["value"]} for h in self.observations]
        if self.on_failure == "worst" and obs:
            worst = max(o["value"] for o in obs)
            obs += [{"config": h["config"], "value": worst} for h in self.history if h["status"] != "ok"]
        return obs

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

    @property
    def pending(self) -> list[dict]:
        """The configurations asked and not yet told (in flight), oldest first."""
        return [dict(p["config"]) for p in self._pending]

    def to_dataframe(self):
        """The history as a pandas DataFrame, a row per evaluation and a column per parameter (optim.frames)."""
        from optim.frames import history_frame
        return history_frame(self.history, self.space)

    @property
    def in_flight(self) -> list[dict]:
        """The evaluations asked and not yet told, oldest first: each one's `index` (its place in the run),
        `config`, `source` and `asked_at` (wall-clock seconds since the epoch; None in runs saved before the
        stamps, 2026-12-07), e.g. to find an evaluation that has been out too long."""
        return [{"index": p["index"], "config": dict(p["config"]), "source": p["source"],
                 "asked_at": p.get("asked_at")} for p in self._pending]

    # ------------------------------------------------------------------ ask
    def ask(self, n: int | None = None):
        """The next configuration to evaluate, or with `n` a list of n distinct ones (a batch).

        Every call proposes new configurations: those already asked and not told are in flight, and
        the proposals avoid them (optim.batch). After a restart, `pending` lists the evaluations that
        were in flight."""
        if n is None:
            return self._propose(1)[0]
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ValueError(f"ask(n) needs an integer n >= 1, got {n!r}")
        return self._propose(int(n))

    def _propose(self, n: int) -> list[dict]:
        out, fitted = [], False
        for _ in range(n):
            step = len(self.history) + len(self._pending)  # the proposal's index: seeds derive from it
            info = {"fit_seconds": 0.0, "acq_seconds": 0.0, "acq_value": None}
            warm = None
            if step < self.n_init:
                config, source = self._design[step], "init"
            elif self.surrogate is None:
                config, source = self._random(step), "random"
            elif len(obs := self.model_observations) < 2:
                config, source = self._random(step), "random:too-few-observations"
            else:  # one MCMC fit per call; the other proposals of a batch condition it on the pending ones
                config, source, info = self._suggest(step, obs, refit=not fitted)
                if not fitted:
                    warm = self._warm
                fitted = True
            # wall-clock stamps (seconds since the epoch) let a run be plotted against time (optim.plots); they
            # are metadata, never read by a proposal, so a seed still fixes the run
            entry = {"index": step, "config": config, "source": source, **info, "asked_at": time.time()}
            if self.journal is not None:
                self.journal.append({"event": "ask", **entry,
                                     "warm_start": None if warm is None else _tree_to_b64(warm._asdict())})
            self._pending.append(entry)
            out.append(dict(config))
        return out

    def _random(self, step: int) -> dict:
        return self.space.sample(1, seed=derive_seed(self.seed, step, Stream.RANDOM))[0]

    def _suggest(self, step: int, obs: list[dict], refit: bool = True):
        s = self.sampler
        X = self.space.encode([h["config"] for h in obs])
        values = [h["value"] for h in obs]
        t0 = time.perf_counter()
        cold_refits, restart, conditioned = 0, None, False
        cold = self._warm is None
        restarting = refit and not cold and s.restarts_at(step - self.n_init + 1)
        conditioning = refit and not cold and not restarting and self.posterior is not None and (
            self._since_fit + 1 < s.refit_every or len(obs) < (1.0 + s.refit_growth) * self._fit_n)
        if self.warp_twin is not None and (self.warp_power is None or (refit and not conditioning)):
            self.warp_power = self._fit_warp_power(step, X, np.asarray(values, dtype=np.float64))
        y = transform_outputs(values, self.output_transform, n_fit=self.n_init, power=self.warp_power)
        if refit:
            if conditioning:
                self._since_fit, conditioned = self._since_fit + 1, True
                # a fixed transform keeps each value's place on the model's scale, so the draws are conditioned in
                # the last fit's standardization: each draw's exact GP update. A refitted transform moves every
                # value, and the new rows are standardized afresh, as a refit would
                self.posterior = self.posterior.conditioned_on(
                    X, y, keep_scale=self.output_transform in FIXED_TRANSFORMS)
            else:
                self._since_fit, self._fit_n = 0, len(obs)

                def fit(start, stream):
                    return sample(
                        self.surrogate, X, y, derive_seed(self.seed, step, stream),
                        num_warmup=s.warm_warmup if start is not None else s.cold_warmup, num_samples=s.num_samples,
                        num_chains=s.num_chains, thinning=s.thinning, init=start, max_tree_depth=s.max_tree_depth,
                        workers=self.chain_workers)
                for start in (self._warm, None):  # a warm start whose chains froze is redone from a cold one
                    self.posterior = fit(start, Stream.SAMPLER)
                    if start is None or not np.any(self.posterior.frozen_chains()):
                        break
                    cold_refits += 1
                if start is not None and restarting:
                    self.posterior, restart = self._restarted(self.posterior, fit(None, Stream.RESTART))
            self._warm = self.posterior.last_state
        t1 = time.perf_counter()
        X_pending = (self.space.encode([p["config"] for p in self._pending]) if self._pending
                     else np.zeros((0, X.shape[1])))
        batch_rng = np.random.default_rng(derive_seed(self.seed, step, Stream.BATCH)) if len(X_pending) else None
        seen = np.vstack([X, X_pending])

        def propose(strategy):
            posterior, best = with_pending(strategy, self.posterior, X, y, X_pending, batch_rng)
            acqf = AcquisitionFunction(posterior, self.acquisition, best=best, t=step - self.n_init + 1)
            rng = np.random.default_rng(derive_seed(self.seed, step, Stream.OPTIMIZER))
            x, value, extra = self.optimizer_entry.optimize(acqf, self.space, rng, self.optimizer)
            config = self.space.decode(x) if x is not None and np.isfinite(value) else None
            duplicate = config is not None and bool(
                np.any(np.all(np.abs(seen - self.space.encode(config)) < 1e-12, axis=1)))
            return acqf, config, value, extra, duplicate

        acqf, config, value, extra, duplicate = propose(self.batch_strategy)
        fallback = self.batch_strategy == "thompson" and duplicate
        if fallback:  # one draw may still favour a pending point (a noisy leaf): the whole posterior's proposal
            acqf, config, value, extra, duplicate = propose("believer")
        if config is None:  # every candidate's acquisition failed numerically
            config, source = self._random(step), "random:acquisition_failed"
        elif duplicate:
            config, source = self._random(step), "random:duplicate"
        else:
            source = "bo"
        info = {"fit_seconds": t1 - t0, "acq_seconds": time.perf_counter() - t1, "acq_value": float(value),
                **({"warp_power": round(self.warp_power, 4)} if self.warp_twin is not None else {}),
                **({"conditioned": True} if conditioned else {}),  # no MCMC: the last draws, given the new data
                **({"thompson_fallback": "the draw's proposal repeated a point: the believer's"} if fallback else {}),
                **({"cold_refit": "the warm-started chains froze"} if cold_refits else {}),
                **({"restart": restart} if restart is not None else {}),
                **({"failed_samples": acqf.failed_samples} if acqf.failed_samples else {})}
        if isinstance(extra, dict):  # e.g. the MIP's status, gap and whether it fell back to the pool
            info["optimizer_info"] = extra
        return config, source, info

    def _fit_warp_power(self, step: int, X, values) -> float:
        """The median power of the warped twin's draws given the user's values (warm-started from its last fit)."""
        s = self.sampler
        for start in (self._warp_warm, None):  # a warm start whose chains froze is redone from a cold one
            posterior = sample(self.warp_twin, X, values, derive_seed(self.seed, step, Stream.WARP),
                               num_warmup=s.warm_warmup if start is not None else s.cold_warmup,
                               num_samples=s.num_samples, num_chains=s.num_chains, thinning=s.thinning, init=start,
                               max_tree_depth=s.max_tree_depth, workers=self.chain_workers)
            if start is None or not np.any(posterior.frozen_chains()):
                break
        self._warp_warm = posterior.last_state
        return warped_power(posterior)

    @staticmethod
    def _restarted(warm: Posterior, cold: Posterior) -> tuple[Posterior, dict]:
        """The best chains of a warm-started fit and a cold one on the same data (`SamplerSettings.restart_every`),
        and what the history records of the choice: how many cold chains were kept, the median log density of
        every chain (warm ones first)."""
        lp = [float(np.median(c)) for p in (warm, cold) for c in np.asarray(p.stats["lp"])]
        keep = best_chain_indices([warm, cold], warm.num_chains)
        kept, n_cold = best_chains([warm, cold], warm.num_chains), int(np.sum(keep >= warm.num_chains))
        return kept, {"cold_chains_kept": n_cold, "median_lp": [round(v, 3) for v in lp]}

    # ------------------------------------------------------------------ tell
    def tell(self, config: dict, value=None, *, error: str | None = None) -> None:
        """Record an evaluation, of a pending configuration (in any order) or of one the user chose.
        NaN/inf values, values beyond MAX_ABS_VALUE and `error=` (a failed evaluation) are kept in the
        history with their status; the model sees them only as `on_failure` says (at the worst value, or not). A bad config or value (or one the output
        transform cannot take) raises and changes nothing."""
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
                                                 "magnitude the models take; kept in the history, treated as a failure")
        row = self.space.encode(config).tolist()
        match = next((i for i, p in enumerate(self._pending) if self.space.encode(p["config"]).tolist() == row), None)
        if match is not None:
            pending = self._pending[match]
            record = {k: v for k, v in pending.items() if k not in ("config", "index")}
        else:
            record = {"source": "user", "fit_seconds": 0.0, "acq_seconds": 0.0, "acq_value": None}
        record = {"config": config, "value": value, "status": status, "error": error, **record,
                  "told_at": time.time()}
        if self.journal is not None:  # durable before the state changes: a failed write loses nothing
            self.journal.append({"event": "tell", "index": None if match is None else self._pending[match]["index"],
                                 "record": record})
        if match is not None:
            del self._pending[match]
        self.history.append(record)

    # ------------------------------------------------------------------ persistence
    def settings_dict(self) -> dict:
        """What defines the run (space and settings), as JSON: a journal's header, a snapshot's first keys."""
        acq = self.acquisition
        return {
            "space": self.space.to_dict(), "surrogate": self.surrogate_spec,
            "surrogate_model": self.surrogate_record,
            "acquisition": {"name": acq.name, "beta": acq.beta if isinstance(acq, UCB) else None,
                            **({"xi": acq.xi} if isinstance(acq, ImprovementMargin) and acq.xi else {})},
            "seed": self.seed, "n_init": self.n_init, "design": self.design, "output_transform": self.output_transform,
            "deterministic": self.deterministic, "sampler": asdict(self.sampler),
            "optimizer": (None if self.optimizer_entry is None
                          else optimizer_to_dict(self.optimizer_entry, self.optimizer)),
            "batch_strategy": self.batch_strategy, "on_failure": self.on_failure,
            **({} if self.auto_choice is None else {"auto": self.auto_choice.rule}),
        }

    def state_dict(self) -> dict:
        return {"format": FORMAT_VERSION, **self.settings_dict(), "history": self.history, "pending": self._pending,
                "warm_start": None if self._warm is None else _tree_to_json(self._warm._asdict())}

    def save(self, path) -> None:
        """Write the whole run (space, settings, history, pending, MCMC warm start) as one JSON snapshot,
        atomically: a crash leaves the previous snapshot or this one. For a run that is written as it goes,
        pass ``journal=`` instead."""
        write_json_atomically(path, self.state_dict())

    @classmethod
    def _from_settings(cls, d: dict, surrogate=None) -> "BayesOpt":
        space = Space.from_dict(d["space"])
        acq = d["acquisition"]
        acquisition = (UCB(beta=acq["beta"]) if acq["name"] == "ucb"
                       else get_acquisition(acq["name"] + (f",xi={acq['xi']!r}" if acq.get("xi") else "")))
        if d.get("surrogate_model") is not None:  # the model's class and options (recorded since 2026-11-27)
            given = make_surrogate(surrogate, space) if isinstance(surrogate, str) else surrogate
            surrogate = surrogate_from_dict(d["surrogate_model"], space, given)
        elif surrogate is None and d["surrogate"] not in available():
            raise ValueError(f"this run's surrogate ({d['surrogate']!r}) was an object, not a registered name; pass "
                             "the same object again: BayesOpt.load(path, surrogate=...)")
        surrogate = surrogate if surrogate is not None else d["surrogate"]  # auto's pick, as recorded
        optimizer = None
        if d["optimizer"] is not None and surrogate != "random":
            name, config = optimizer_from_dict(d["optimizer"])
            optimizer = config if name is None else (name, config)
        opt = cls(space, surrogate=surrogate, acquisition=acquisition, seed=d["seed"], n_init=d["n_init"],
                  sampler=SamplerSettings(**d["sampler"]), optimizer=optimizer,
                  design=d.get("design", "sobol"), output_transform=d.get("output_transform", "none"),
                  deterministic=d.get("deterministic", False), batch_strategy=d.get("batch_strategy", "believer"),
                  on_failure=d.get("on_failure", "ignore"))
        if d.get("auto") is not None:
            opt.auto_choice = AutoChoice(opt.surrogate_spec, d["auto"], opt.output_transform)
        return opt

    @classmethod
    def load(cls, path, surrogate=None) -> "BayesOpt":
        """Resume a journal or a saved snapshot, read-only (to append to a journal, construct the run with
        ``journal=path``). The zoo's models are rebuilt from the recorded class and options; a model of your own
        class is passed again as `surrogate=` (checked against the record)."""
        if is_journal(path):
            records = read_journal(path)
            opt = cls._from_settings(records[0]["run"], surrogate)
            opt._replay(path, records[1:])
            return opt
        d = _read_snapshot(path)
        opt = cls._from_settings(d, surrogate)
        opt._restore_snapshot(path, d)
        return opt

    def _restore_snapshot(self, path, d: dict) -> None:
        space = self.space
        try:
            self.history = [_checked_record(space, h) for h in d["history"]]
            pending = d["pending"]
            if isinstance(pending, dict):  # format 1: at most one pending configuration
                pending = [dict(pending, index=len(self.history))]
            self._pending = [dict(p, config=space.validate(p["config"])) for p in (pending or [])]
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{path}: damaged history or pending evaluation: {exc}") from None
        if d["warm_start"] is not None:
            self._warm = WarmStart(**_tree_from_json(d["warm_start"]))

    def _replay(self, path, events: list[dict]) -> None:
        """Rebuild history, pending evaluations and warm start from a journal's events, checking each."""
        for number, e in enumerate(events, start=2):
            try:
                if e["event"] == "ask":
                    entry = {k: v for k, v in e.items() if k not in ("event", "warm_start")}
                    entry["config"] = self.space.validate(entry["config"])
                    self._pending.append(entry)
                    if e.get("warm_start") is not None:
                        self._warm = WarmStart(**_tree_from_json(e["warm_start"]))
                elif e["event"] == "tell":
                    record = _checked_record(self.space, e["record"])
                    if e["index"] is not None:
                        match = next(i for i, p in enumerate(self._pending) if p["index"] == e["index"])
                        del self._pending[match]
                    self.history.append(record)
                elif e["event"] == "warm":  # the MCMC state of a migrated snapshot
                    self._warm = WarmStart(**_tree_from_json(e["warm_start"]))
                else:
                    raise ValueError(f"unknown event {e['event']!r}")
            except (ValueError, TypeError, KeyError, StopIteration) as exc:
                raise ValueError(f"{path}: line {number} of the journal is not a valid event: {exc!r}") from None

    def _attach_journal(self, path) -> None:
        """Open `path` for appending: a new journal gets this run's header; an existing one of the same run
        is replayed (and continued); a legacy JSON snapshot is migrated; another run's is refused."""
        check_save_folder(path)
        header = {"event": "start", "kind": KIND, "format": JOURNAL_FORMAT,
                  "run": json.loads(json.dumps(self.settings_dict()))}
        if os.path.exists(path) and os.path.getsize(path) > 0 and not is_journal(path):
            self._migrate_snapshot(path, header)
        journal = Journal(path)
        try:
            if not journal.records:
                journal.append(header)
            else:
                first = journal.records[0]
                if first.get("kind") != KIND or first.get("format") != JOURNAL_FORMAT:
                    raise ValueError(f"{path}: not a treezoo journal of format {JOURNAL_FORMAT}")
                # "auto" is how the surrogate was named, not a setting: a run begun with "auto" resumes under
                # the surrogate it picked, named or auto's (if auto's rules changed since, "surrogate" differs)
                stored = _with_defaults(first["run"])
                # a journal written before the model's options were recorded is compared on the name alone
                differ = [k for k in header["run"] if k != "auto" and stored.get(k) != header["run"][k]
                          and (k != "surrogate_model" or k in stored)]
                if "surrogate" in differ and self.auto_choice is not None and first["run"].get("auto") is not None:
                    raise ValueError(
                        f"{path} is a run begun with surrogate='auto', which picked {stored['surrogate']!r} by the "
                        f"rules of the version that began it; auto now picks {self.auto_choice.name!r}. Pass "
                        f"surrogate={stored['surrogate']!r} to resume it")
                model = stored.get("surrogate_model")
                if differ == ["surrogate_model"] and isinstance(model, dict) and header["run"]["surrogate_model"]:
                    raise ValueError(
                        f"{path} is a run of the same settings with another model: {model['class']} with "
                        f"{model['options']} (this one's: {header['run']['surrogate_model']['options']}); pass that "
                        "model to resume it (BayesOpt.load(path).surrogate is it), or another path")
                if differ:
                    raise ValueError(
                        f"{path} holds a different run (it differs in {', '.join(differ)}); pass another path, "
                        "or the same settings to resume it (BayesOpt.load(path) holds them: its surrogate, sampler, "
                        "acquisition and optimizer)")
                self._replay(path, journal.records[1:])
                self.resumed = len(self.history)
        except BaseException:
            journal.close()
            raise
        self.journal = journal

    def _migrate_snapshot(self, path, header: dict) -> None:
        """Turn a JSON snapshot of this run (an older checkpoint) into a journal in place, atomically."""
        d = _read_snapshot(path)
        stored = _with_defaults(d)
        differ = [k for k in header["run"] if k in stored and stored[k] != header["run"][k]]
        if differ:
            raise ValueError(f"{path} is a saved run of different settings (it differs in {', '.join(differ)}); "
                             "pass another path, or the same settings to resume it")
        old = type(self)._from_settings(d, self._surrogate_as_built)  # this run's own: the settings matched above
        old._restore_snapshot(path, d)
        events = [header] + [{"event": "tell", "index": None, "record": h} for h in old.history]
        warm = None if old._warm is None else _tree_to_b64(old._warm._asdict())
        events += [{"event": "ask", **p, "warm_start": None} for p in old._pending]
        if warm is not None:
            events.append({"event": "warm", "warm_start": warm})
        write_journal_atomically(path, events)
        warnings.warn(f"{path}: a JSON snapshot of this run was converted to a journal ({len(old.history)} "
                      "evaluations kept); it is now appended to as the run goes on", stacklevel=4)

    def close(self) -> None:
        """Close the journal (releasing its lock) and stop the chain workers; the run can be resumed from the
        journal later, and a later fit starts the workers again."""
        if self.chain_workers is not None and self._own_chain_workers:
            self.chain_workers.close()
        if self.journal is not None:
            self.journal.close()
            self.journal = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _read_snapshot(path) -> dict:
    """A JSON snapshot written by `save`, checked for the keys a run needs."""
    with open(path) as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not a saved treezoo run (invalid or truncated JSON: {exc})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path}: not a saved treezoo run (a JSON {type(d).__name__}, not an object)")
    if d.get("format") not in (1, FORMAT_VERSION):
        raise ValueError(f"{path}: unsupported format {d.get('format')!r}")
    missing = sorted({"space", "surrogate", "acquisition", "seed", "n_init", "sampler", "optimizer", "history",
                      "pending", "warm_start"} - set(d))
    if missing:
        raise ValueError(f"{path}: not a complete saved treezoo run; missing {missing}")
    return d


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


def _tree_to_b64(tree):
    """Arrays as base64 of their zlib-compressed bytes: exact, and small (a BARK forest is mostly empty heap
    slots: 1.2 MB of arrays for 4 chains of 50 trees): the journal's form of a warm start."""
    def leaf(a):
        a = np.ascontiguousarray(a)
        return {"dtype": str(a.dtype), "shape": list(a.shape),
                "zb64": base64.b64encode(zlib.compress(a.tobytes(), 1)).decode()}
    return jax.tree_util.tree_map(leaf, tree)


def _tree_from_json(tree):
    if isinstance(tree, dict) and set(tree) == {"dtype", "data"}:
        return np.asarray(tree["data"], dtype=tree["dtype"])
    if isinstance(tree, dict) and set(tree) == {"dtype", "shape", "zb64"}:
        raw = zlib.decompress(base64.b64decode(tree["zb64"]))
        return np.frombuffer(raw, dtype=tree["dtype"]).reshape(tree["shape"]).copy()
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

    def plot(self, optimum: float | None = None, *, seconds: bool = False, wall_clock: bool = False, ax=None,
             title: str | None = None, path=None):
        """The run's convergence plot (optim.plots.plot_history): each evaluation and the best so far; the
        regret on a log scale given a known `optimum`; by wall-clock seconds with `wall_clock`; needs matplotlib."""
        from optim.plots import plot_history
        return plot_history(self.history, optimum, seconds=seconds, wall_clock=wall_clock, ax=ax, title=title,
                            path=path)

    def to_dataframe(self):
        """The history as a pandas DataFrame, a row per evaluation and a column per parameter (optim.frames)."""
        from optim.frames import history_frame
        return history_frame(self.history, None if self.optimizer is None else self.optimizer.space)

    def __repr__(self):
        failed = sum(h["status"] != "ok" for h in self.history)
        return (f"Result(best_value={self.best_value!r}, best_config={self.best_config!r}, "
                f"evaluations={len(self.history)}, failed={failed})")


def minimize(objective: Callable[[dict], float], space: Space, surrogate="auto", budget: int = 50,
             seed: int = 0, n_init: int | None = None, acquisition=None, progress: bool = False,
             checkpoint=None, callback: Callable | None = None, n_workers: int | None = None, executor=None,
             timeout: float | None = None, propose_ahead: bool = False, **settings) -> Result:
    """Minimize `objective(config) -> float` over `space` with `budget` evaluations.

    `surrogate`: "auto" (default: picked from the space and `deterministic` by the rules of optim.auto,
    printed with the progress bar and kept in `result.optimizer.auto_choice` and the journal), a registered
    name (optim.registry.available()), "random", or a `zoo.Surrogate` instance.

    The first `n_init` evaluations are a scrambled Sobol design (default: max(dim + 1, number of
    paths), capped at 20 and at the budget); `settings` may pass `design="paths"` so that the first
    points cover every root-to-leaf path once. An objective that raises or returns NaN/inf is
    recorded as a failed evaluation (it counts toward the budget); the model is fitted to it at the worst
    successful value so far, so that proposals leave a region that fails (`on_failure="ignore"` in
    `settings` leaves it out of the model instead; see `BayesOpt`).
    `checkpoint`: a journal path (optim.journal): every evaluation is appended as it happens, and
    calling `minimize` again with the same path and settings resumes the run (the budget counts the
    evaluations already there; those in flight when it stopped are evaluated again). `progress`: a tqdm bar.

    Parallel evaluation: `n_workers` evaluations run at once on `executor` (any
    `concurrent.futures.Executor`, or a `dask.distributed.Client`; default: a pool of spawned processes,
    so `objective` must be picklable), and a worker is given a new proposal as soon as it is free.
    `timeout`: seconds after which a running evaluation is recorded as failed. With one worker (the
    default) evaluations run in this thread and the run is reproducible bit for bit; with more, which
    results arrive first decides what the model has seen at each proposal, so runs vary with timing.
    `propose_ahead=True`: while every worker is busy, the next proposal is fitted and made, so that a freed
    worker starts at once instead of waiting for the driver; each proposal then has one more pending point
    behind it. Off by default: on Hartmann-6 with 4-s evaluations it saved 3 s of a 41-s run on 4 workers and
    reached a worse regret (BENCHMARKS.md, "Asynchronous workers"); it pays where a fit takes about as long as
    an evaluation.

    `settings`: `sampler=SamplerSettings(...)`, `optimizer=` (see `BayesOpt`), `design="sobol"|"paths"`,
    `batch_strategy="believer"|"liar"|"fantasy"|"qei"|"thompson"` (optim.batch),
    `output_transform="none"|"log"|"yeo-johnson"|"yeo-johnson-design"|"log-tail"|"copula"|"yeo-johnson-warped"` (the model fits a monotone
    transform of the values: for heavy-tailed objectives; unset, a resumed checkpoint's, otherwise the transform that
    `surrogate="auto"` pairs with its pick, else "none"), `deterministic=True` (the objective returns exact
    values, e.g. a simulation: the model's noise prior moves to `zoo.base.NOISELESS_PRIOR`), `chain_workers=k` (each
    fit's MCMC chains in k child processes, see `BayesOpt`); unset, they default to what the surrogate asks for.
    """
    if not callable(objective):
        raise TypeError("objective must be callable: config dict -> float")
    if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget!r}")
    _check_n_init(n_init)
    if n_init is not None and n_init > budget:
        raise ValueError(f"n_init={n_init} exceeds budget={budget}: the initial design must fit in the budget")
    if n_workers is not None and (not isinstance(n_workers, (int, np.integer)) or isinstance(n_workers, bool)
                                  or n_workers < 1):
        raise ValueError(f"n_workers must be an integer >= 1, got {n_workers!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, numbers.Real)
                                or not timeout > 0 or not math.isfinite(timeout)):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if not isinstance(propose_ahead, bool):
        raise TypeError(f"propose_ahead must be True or False, got {propose_ahead!r}")
    executor, n_workers = as_executor(executor, n_workers)
    if timeout is not None and isinstance(executor, SerialExecutor):  # a call in this thread cannot be stopped
        executor = None  # the default process pool (of one worker)
    if executor is None:
        check_picklable(objective)
    if checkpoint is not None:
        check_save_folder(checkpoint)
        header = read_header(checkpoint)  # None where there is no journal yet
        if n_init is None and header is not None:  # resuming: the run's own design size, whatever the budget
            n_init = header["n_init"]
    if n_init is None and isinstance(space, Space):
        n_init = min(BayesOpt.default_n_init(space), int(budget))
    opt = BayesOpt(space, surrogate=surrogate, acquisition=acquisition, seed=seed, n_init=n_init,
                   journal=checkpoint, **settings)
    if opt.resumed or opt.pending:
        warnings.warn(f"{checkpoint}: resuming the run journalled there: {len(opt.history)} evaluations done, "
                      f"{len(opt.pending)} in flight when it stopped (evaluated again), budget {budget}",
                      stacklevel=2)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        if opt.auto_choice is not None:
            paired = (f" (output transform {opt.auto_choice.output_transform})"
                      if opt.auto_choice.output_transform != "none" else "")
            print(f"treezoo: surrogate auto -> {opt.auto_choice.name}{paired}: {opt.auto_choice.rule}",
                  file=sys.stderr, flush=True)
        bar = tqdm(total=int(budget), initial=min(len(opt.history), int(budget)),
                   desc=f"treezoo[{opt.surrogate_spec}]", unit="eval")

    def after_tell(running: int) -> None:
        if callback is not None:
            callback(opt)
        if bar is not None:
            postfix = {} if n_workers == 1 else {"running": running}
            if opt.best_value is not None:
                postfix["best"] = f"{opt.best_value:.6g}"
            bar.set_postfix(postfix, refresh=False)  # drawn once, by the update
            bar.update(1)

    try:
        evaluate_concurrently(opt, objective, int(budget), executor, n_workers, timeout, after_tell, propose_ahead)
    finally:
        if bar is not None:
            bar.close()
        opt.close()
    return Result(opt.best_config, opt.best_value, opt.history, opt.posterior, opt)
