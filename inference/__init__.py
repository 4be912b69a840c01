"""treezoo inference: NUTS for continuous sites, custom MH moves for discrete structure."""

import zoo  # noqa: F401  (enables float64 before any JAX array is made)
from inference.moves import MOVES, register_move
from inference.posterior import Posterior, WarmStart, best_chain_indices, best_chains
from inference.sampler import sample
from inference.chain_workers import ChainWorkers
from inference.calibration import CalibrationResult, calibrate, tempered

__all__ = ["MOVES", "register_move", "Posterior", "WarmStart", "best_chain_indices", "best_chains", "sample", "ChainWorkers", "calibrate", "CalibrationResult", "tempered"]
