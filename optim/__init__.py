"""treezoo optim: integrated acquisitions, their optimizers, the ask/tell loop and `minimize`.

Benchmark problems, peers and the `treezoo-bench` runner live in `optim.bench` (not imported here).
"""

import zoo  # noqa: F401  (float64)
from optim.acquisition import EI, PI, UCB, LogEI, get_acquisition
from optim.integrated import AcquisitionFunction
from optim.loop import BayesOpt, Result, SamplerSettings, minimize
from optim.grid import GridConfig
from optim.mip import MIPConfig
from optim.path_lbfgs import LBFGSConfig
from optim.registry import OPTIMIZERS, SURROGATES, register_optimizer, register_surrogate

__all__ = ["EI", "PI", "UCB", "LogEI", "get_acquisition", "AcquisitionFunction", "BayesOpt", "Result",
           "SamplerSettings", "minimize", "MIPConfig", "LBFGSConfig", "GridConfig", "OPTIMIZERS", "SURROGATES",
           "register_optimizer", "register_surrogate"]
