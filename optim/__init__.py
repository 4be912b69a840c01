"""treezoo optim: integrated acquisitions, their optimizers, the ask/tell loop and `minimize`."""

import zoo  # noqa: F401  (float64)
from optim.acquisition import EI, PI, UCB, LogEI, get_acquisition
from optim.lbfgs import LBFGSConfig
from optim.loop import BayesOpt, Result, SamplerSettings, minimize
from optim.problems import PROBLEMS, Problem, get_problem
from optim.registry import register_optimizer, register_surrogate

__all__ = ["EI", "PI", "UCB", "LogEI", "get_acquisition", "LBFGSConfig", "BayesOpt", "Result",
           "SamplerSettings", "minimize", "PROBLEMS", "Problem", "get_problem", "register_optimizer",
           "register_surrogate"]
