"""Machine-learning tuning problems on conditional spaces (needs the `ml` extra: scikit-learn).

- `mlp_tuning` (001 Section 4.2, shared topology of its Figure 3, bottom): tune scikit-learn's
  MLPClassifier on a bundled dataset; the objective is the validation error on a fixed split.
- `compression` (000 Section 5.2, scaled down): compress the first two layers of a small fully
  connected network trained on scikit-learn's digits, each by SVD (rank) or weight pruning
  (threshold); the objective is gamma * output MSE + compression ratio (000 Eq. 11).
- `svr_diabetes` (003 Section 7 and Table 6, SVRBench's space on a bundled dataset): tune an RBF
  support-vector regressor's epsilon, C and gamma and choose which of 50 features it sees; the
  objective is the validation RMSE.

All are deterministic: data splits, network initializations and training use fixed seeds.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from optim.bench.problems.base import Problem
from zoo.space import Categorical, Integer, Node, Real, Space

ML_EXTRA = "scikit-learn (pip install 'treezoo[ml]')"
MAX_LAYERS = 4
PREPROCESSING = ("none", "l2_rows", "linf_features", "standardize")
ACTIVATIONS = ("identity", "logistic", "tanh", "relu")


def _sklearn():
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"this problem needs {ML_EXTRA}") from exc


def mlp_space(max_layers: int = MAX_LAYERS) -> Space:
    """Shared topology (001 Figure 3, bottom): the root owns the learning rate, tolerance,
    preprocessing and activation (the activation is unused by the 0-layer network); a chain of
    'deeper_j' decisions owns the units u_j of hidden layer j, shared by every deeper network; the
    leaf of a k-layer network owns its own l2 penalty lambda_k. One path per depth 0..max_layers."""

    def l2(k):
        return Real(f"l2_{k}", 1e-6, 1e-1, log=True)

    node = Node(f"layers={max_layers}", params=(Integer(f"units_{max_layers}", 1, 30), l2(max_layers)))
    for j in range(max_layers - 1, -1, -1):
        own = ((Real("learning_rate", 1e-5, 1e-1, log=True), Real("tol", 1e-5, 1e-2, log=True),
                Categorical("preprocessing", PREPROCESSING), Categorical("activation", ACTIVATIONS))
               if j == 0 else (Integer(f"units_{j}", 1, 30),))
        node = Node("root" if j == 0 else f"layers>={j}", params=own, choice=f"deeper_{j + 1}",
                    children={"no": Node(f"layers={j}", params=(l2(j),)), "yes": node})
    return Space(node)


def _depth(config: dict) -> int:
    k = 0
    while config.get(f"deeper_{k + 1}") == "yes":
        k += 1
    return k


@functools.lru_cache(maxsize=4)
def _split(dataset: str):
    """A fixed stratified 80/20 train/validation split of a bundled scikit-learn dataset."""
    _sklearn()
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    loaders = {"breast_cancer": datasets.load_breast_cancer, "digits": datasets.load_digits}
    if dataset not in loaders:
        raise ValueError(f"unknown dataset {dataset!r}; available: {sorted(loaders)}")
    X, y = loaders[dataset](return_X_y=True)
    return train_test_split(X.astype(np.float64), y, test_size=0.2, stratify=y, random_state=0)


def _preprocess(kind: str, X_train, X_val):
    from sklearn.preprocessing import MaxAbsScaler, Normalizer, StandardScaler

    if kind == "none":
        return X_train, X_val
    scaler = {"l2_rows": Normalizer(norm="l2"), "linf_features": MaxAbsScaler(),
              "standardize": StandardScaler()}[kind]
    return scaler.fit_transform(X_train), scaler.transform(X_val)


def mlp_validation_error(config: dict, dataset: str = "breast_cancer", max_iter: int = 100) -> float:
    """Validation error of scikit-learn's MLPClassifier (Adam) trained with `config` (fixed seed)."""
    _sklearn()
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    X_train, X_val, y_train, y_val = _split(dataset)
    X_train, X_val = _preprocess(config["preprocessing"], X_train, X_val)
    k = _depth(config)
    clf = MLPClassifier(hidden_layer_sizes=tuple(int(config[f"units_{j}"]) for j in range(1, k + 1)),
                        activation=config["activation"], alpha=config[f"l2_{k}"], solver="adam",
                        learning_rate_init=config["learning_rate"], tol=config["tol"], max_iter=max_iter,
                        random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_train, y_train)
    return float(1.0 - clf.score(X_val, y_val))


def mlp_tuning(dataset: str = "breast_cancer", noise_std: float = 0.0, seed: int = 0) -> Problem:
    """MLP tuning on a bundled dataset (001 Section 4.2); optimum unknown, so tables show best values."""
    return Problem(f"mlp_{dataset}", mlp_space(), functools.partial(mlp_validation_error, dataset=dataset),
                   None, noise_std, seed)


# ----------------------------------------------------------------------------- compression
HIDDEN = (128, 128)  # the network compressed: 64 -> 128 -> 128 -> 10, ReLU
GAMMA = 0.01  # 000 Eq. 11 trade-off, as in the paper
N_PROBE = 50  # samples that estimate the output MSE (000 Section 5.2)


@functools.lru_cache(maxsize=1)
def _network():
    """The trained reference network: weights, biases and the probe inputs (all deterministic)."""
    _sklearn()
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    X_train, X_val, y_train, _ = _split("digits")
    scale = 16.0  # digits pixels are 0..16
    clf = MLPClassifier(hidden_layer_sizes=HIDDEN, activation="relu", max_iter=300, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_train / scale, y_train)
    probe = X_val[:N_PROBE] / scale
    return [w.copy() for w in clf.coefs_], [b.copy() for b in clf.intercepts_], probe


def _forward(weights, biases, X):
    h = X
    for i, (W, b) in enumerate(zip(weights, biases)):
        h = h @ W + b
        if i < len(weights) - 1:
            h = np.maximum(h, 0.0)
    return h  # logits


def compression_space() -> Space:
    """Layer 1's method at the root, its parameter on the depth-1 node; layer 2's method and
    parameter below it (names carry the layer-1 branch, since names are unique in a space). SVD
    keeps `rank` singular values; pruning zeroes weights below `threshold` * max |w|."""
    n_in, h1, h2 = 64, HIDDEN[0], HIDDEN[1]

    def layer2(given):
        return {"svd": Node(f"layer1={given},layer2=svd", params=(Integer(f"rank_2_given_{given}", 1, min(h1, h2)),)),
                "prune": Node(f"layer1={given},layer2=prune", params=(Real(f"threshold_2_given_{given}", 0.0, 1.0),))}

    return Space(Node("root", choice="layer1", children={
        "svd": Node("layer1=svd", params=(Integer("rank_1", 1, min(n_in, h1)),), choice="layer2_given_svd",
                    children=layer2("svd")),
        "prune": Node("layer1=prune", params=(Real("threshold_1", 0.0, 1.0),), choice="layer2_given_prune",
                      children=layer2("prune"))}))


def _layer_settings(config: dict) -> list[tuple[str, float]]:
    """[(method, rank or threshold)] for layers 1 and 2 of a compression configuration."""
    m1 = config["layer1"]
    m2 = config[f"layer2_given_{m1}"]
    v1 = config["rank_1"] if m1 == "svd" else config["threshold_1"]
    v2 = config[f"rank_2_given_{m1}"] if m2 == "svd" else config[f"threshold_2_given_{m1}"]
    return [(m1, v1), (m2, v2)]


def _compress(W, method: str, value) -> tuple[np.ndarray, int]:
    """Compressed weight matrix and its stored-weight count."""
    if method == "svd":
        U, s, Vt = np.linalg.svd(W, full_matrices=False)
        r = int(value)
        return (U[:, :r] * s[:r]) @ Vt[:r], r * (W.shape[0] + W.shape[1])
    kept = np.abs(W) >= value * np.abs(W).max()
    return W * kept, int(kept.sum())


def compression_objective(config: dict, gamma: float = GAMMA) -> float:
    """gamma * mean squared output (logit) error on the probe set + compression ratio (000 Eq. 11).
    The ratio counts the weights of the whole network after compression over those before."""
    weights, biases, probe = _network()
    new, stored = list(weights), 0
    for i, (method, value) in enumerate(_layer_settings(config)):
        new[i], count = _compress(weights[i], method, value)
        stored += count
    stored += weights[2].size
    total = sum(W.size for W in weights)
    mse = float(np.mean(np.sum((_forward(new, biases, probe) - _forward(weights, biases, probe)) ** 2, axis=1)))
    return gamma * mse + stored / total


def compression(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """Model compression of a 64-128-128-10 digits network (000 Section 5.2, scaled down)."""
    return Problem("compression", compression_space(), compression_objective, None, noise_std, seed)


# ----------------------------------------------------------------------------- SVR with feature selection
SVR_FEATURES = 50  # SVRBench's 50 feature-inclusion flags (003 Table 6)
SVR_NOISE_SEED = 0


@functools.lru_cache(maxsize=1)
def _svr_split():
    """scikit-learn's diabetes data (442 rows, 10 features) with 40 columns of fixed N(0, 1) noise after them,
    so that 50 features can be chosen, 40 of them carrying no information; inputs and target standardized on
    the training part of a fixed 70/30 split."""
    _sklearn()
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    X, y = datasets.load_diabetes(return_X_y=True)
    noise = np.random.default_rng(SVR_NOISE_SEED).standard_normal((len(X), SVR_FEATURES - X.shape[1]))
    X = np.hstack([X, noise])
    X_train, X_val, y_train, y_val = train_test_split(X, y.astype(np.float64), test_size=0.3, random_state=0)
    mu, sd = X_train.mean(0), X_train.std(0)
    y_mu, y_sd = y_train.mean(), y_train.std()
    return (X_train - mu) / sd, (X_val - mu) / sd, (y_train - y_mu) / y_sd, (y_val - y_mu) / y_sd


def svr_space() -> Space:
    """SVRBench's space (003 Table 6): log10 epsilon in [-2, 0], log10 C in [-2, 2], log10 gamma in [-1, 1]
    (as log-scale reals; gamma per chosen feature, see `svr_validation_rmse`) and 50 include/exclude flags,
    here integers in {0, 1} (for two levels an ordered and an unordered choice are the same choice)."""
    return Space([Real("epsilon", 1e-2, 1.0, log=True), Real("C", 1e-2, 1e2, log=True),
                  Real("gamma", 1e-1, 1e1, log=True)]
                 + [Integer(f"h{i}", 0, 1) for i in range(SVR_FEATURES)])


def svr_validation_rmse(config: dict) -> float:
    """Validation RMSE (in standard deviations of the target) of scikit-learn's RBF SVR on the k chosen
    features, with kernel exp(-gamma ||x - x'||^2 / k); with none chosen, the RMSE of predicting the training
    mean."""
    _sklearn()
    from sklearn.svm import SVR

    X_train, X_val, y_train, y_val = _svr_split()
    chosen = np.array([config[f"h{i}"] == 1 for i in range(SVR_FEATURES)])
    if not chosen.any():
        return float(np.sqrt(np.mean(y_val**2)))
    # gamma per chosen feature (sklearn's "scale" on standardized inputs is 1 / k): one gamma range suits every k
    model = SVR(kernel="rbf", C=config["C"], epsilon=config["epsilon"], gamma=config["gamma"] / chosen.sum())
    model.fit(X_train[:, chosen], y_train)
    return float(np.sqrt(np.mean((model.predict(X_val[:, chosen]) - y_val) ** 2)))


def svr_diabetes(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """SVR tuning with feature selection on diabetes plus 40 noise features (003's SVRBench space, 53-D
    mixed); optimum unknown, so tables show best values."""
    return Problem("svr_diabetes", svr_space(), svr_validation_rmse, None, noise_std, seed)
