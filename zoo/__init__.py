"""treezoo models: search spaces, kernels, GP algebra, the surrogate contract and one NumPyro model per surrogate."""

import jax

jax.config.update("jax_enable_x64", True)

from zoo import kernels, linalg  # noqa: E402
from zoo.space import Categorical, Integer, Node, Real, Space  # noqa: E402
from zoo.data import Data, make_data  # noqa: E402
from zoo.base import Prepared, Surrogate, offers  # noqa: E402
from zoo.gp import GP, ExactGP  # noqa: E402

__all__ = ["kernels", "linalg", "Categorical", "Integer", "Node", "Real", "Space", "Data", "make_data", "Prepared",
           "Surrogate", "offers", "ExactGP", "GP"]
