"""Peer optimizers for side-by-side benchmarks, behind one small adapter interface (`Peer`).

Each adapter imports its package only when it runs; one whose package is missing is skipped by
`treezoo-bench` with a one-line message. Add a peer: subclass `Peer`, put it in `PEERS`.
"""

from optim.bench.peers.base import Peer
from optim.bench.peers.botorch_gp import BoTorchGP
from optim.bench.peers.botorch_saas import BoTorchSAAS
from optim.bench.peers.hyperopt_tpe import HyperoptTPE
from optim.bench.peers.optuna_tpe import OptunaTPE
from optim.bench.peers.smac_rf import SMACRandomForest

PEERS: dict[str, Peer] = {p.name: p for p in (OptunaTPE(), HyperoptTPE(), SMACRandomForest(), BoTorchGP(),
                                           BoTorchSAAS())}

__all__ = ["PEERS", "Peer"]
