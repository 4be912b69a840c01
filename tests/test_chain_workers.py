"""Chains in child processes (`inference.ChainWorkers`): the same chains as in this process, wired into the BO
loop, and failures that surface as errors instead of hangs or wrong answers."""

import os
import signal

import jax
import numpy as np
import pytest

import inference
from inference import ChainWorkers
from optim.loop import BayesOpt
from tests.conftest import FAST_SAMPLER, fast_sample
from zoo import GP

#: the BO loop's warm fits under FAST_SAMPLER, so that the workers compile them once for the tests below
KW = dict(num_warmup=FAST_SAMPLER.warm_warmup, num_samples=FAST_SAMPLER.num_samples, num_chains=2,
          thinning=FAST_SAMPLER.thinning, max_tree_depth=FAST_SAMPLER.max_tree_depth)


@pytest.fixture(scope="module")
def workers():
    pool = ChainWorkers(2)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def toy(flat2):
    rng = np.random.default_rng(11)
    X = rng.random((8, 2))
    return X, np.sin(6 * X[:, 0]) + X[:, 1]


def test_chains_in_workers_are_the_chains_of_this_process(flat2, toy, workers):
    """A warm-started fit with its 2 chains in 2 workers equals, chain by chain, the in-process runs of each
    chain alone (`chains=(i, i + 1)`): the same program with the same flags gives the same numbers in another
    process (rtol 1e-12, far below the O(1) difference a swapped key or start would make), and a chain run
    alone is the full run's chain to rounding (rtol 1e-6, as batched against sequential chains in
    test_inference)."""
    X, y = toy
    gp = GP(flat2)
    start = fast_sample(gp, X, y, key=3)
    pooled = inference.sample(gp, X, y, 4, init=start, workers=workers, **KW)
    assert pooled.num_chains == 2 and workers.running
    full = inference.sample(gp, X, y, 4, init=start, **KW)
    for i in range(2):
        init = jax.tree_util.tree_map(lambda a: np.asarray(a)[i:i + 1], start.last_state)
        alone = inference.sample(gp, X, y, 4, init=init, chains=(i, i + 1), **KW)
        for site in ("lengthscale", "outputscale", "noise", "mean"):
            np.testing.assert_allclose(pooled.samples[site][i], alone.samples[site][0], rtol=1e-12, err_msg=site)
            np.testing.assert_allclose(full.samples[site][i], alone.samples[site][0], rtol=1e-6, err_msg=site)
    assert not np.allclose(pooled.samples["outputscale"][0], pooled.samples["outputscale"][1])  # two chains
    # the joined warm start continues the chains: a second pooled fit runs from it
    again = inference.sample(gp, X, y, 5, init=pooled, workers=workers, **KW)
    assert np.all(np.isfinite(again.samples["outputscale"]))


def test_bad_chains_and_init_are_refused(flat2, toy):
    X, y = toy
    gp = GP(flat2)
    for bad in [(1, 1), (0, 3), (-1, 1), [0, 1], (0.0, 1)]:
        with pytest.raises(ValueError, match="chains must be a pair"):
            inference.sample(gp, X, y, 0, chains=bad, **KW)
    start = fast_sample(gp, X, y, key=3)
    with pytest.raises(ValueError, match="init has 2 chains, asked for 1"):
        inference.sample(gp, X, y, 0, init=start, chains=(0, 1), **KW)


def test_bo_loop_runs_its_fits_in_the_workers(flat2, workers):
    """BayesOpt(chain_workers=pool): every fit runs in the pool, the posterior has the run's chains, and close()
    leaves a pool it did not make running; BayesOpt(chain_workers=2) makes its own and stops it."""
    pids = workers.map("pid", [{}, {}])
    opt = BayesOpt(flat2, "gp", seed=1, n_init=3, sampler=FAST_SAMPLER, chain_workers=workers)
    for _ in range(5):
        config = opt.ask()
        opt.tell(config, (config["x0"] - 0.3) ** 2 + config["x1"])
    assert opt.posterior.num_chains == FAST_SAMPLER.num_chains
    assert all(h["fit_seconds"] > 0 for h in opt.history[3:])
    opt.close()
    assert workers.running and workers.map("pid", [{}, {}]) == pids  # the same processes served the fits
    own = BayesOpt(flat2, "gp", seed=1, n_init=3, chain_workers=2)
    assert isinstance(own.chain_workers, ChainWorkers) and own.chain_workers.size == 2
    assert BayesOpt(flat2, "gp", chain_workers=1).chain_workers is None  # one worker: in this process
    own.close()
    assert not own.chain_workers.running
    for bad in (-1, 2.0, True, "2"):
        with pytest.raises(ValueError, match="chain_workers"):
            BayesOpt(flat2, "gp", chain_workers=bad)


def test_a_failing_or_dead_worker_is_an_error_and_the_pool_starts_afresh():
    pool = ChainWorkers(2)
    try:
        with pytest.raises(TypeError, match="does not pickle"):  # refused before anything is sent: no worker started
            pool.map("pid", [{"f": lambda: 0}])
        assert not pool.running
        first = pool.map("pid", [{}, {}])
        assert len(set(first)) == 2 and os.getpid() not in first
        with pytest.raises(TypeError) as err:  # the worker's own exception, with its traceback as a note
            pool.map("pid", [{"unexpected": 1}])
        assert "raised in chain worker 0" in "".join(getattr(err.value, "__notes__", []))
        assert not pool.running  # stopped: an unread answer could not be taken for the next request's
        second = pool.map("pid", [{}, {}])
        assert set(second).isdisjoint(first)
        os.kill(second[1], signal.SIGKILL)
        with pytest.raises(RuntimeError, match="chain worker 1"):
            pool.map("pid", [{}, {}])
        assert not pool.running
        assert len(pool.map("pid", [{}])) == 1
    finally:
        pool.close()
    with pytest.raises(ValueError, match="n_workers"):
        ChainWorkers(0)
    with pytest.raises(ValueError, match="threads"):
        ChainWorkers(2, threads=2)


def test_workers_end_when_their_parent_is_killed(tmp_path):
    """A parent killed with SIGKILL while its worker is busy (a 60-s task) leaves no worker behind: each watches
    its parent and exits within about a second of losing it."""
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text("from inference import ChainWorkers\n"
                      "w = ChainWorkers(1)\n"
                      "print(w.map('pid', [{}])[0], flush=True)\n"
                      "w.map('sleep', [{'seconds': 60}])\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker = int(parent.stdout.readline())
    time.sleep(0.5)  # the worker is inside its 60-s task
    parent.kill()
    parent.wait()
    def alive(pid):  # a zombie (exited, not yet reaped by whoever adopted it) counts as gone
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    for _ in range(50):
        if not alive(worker):
            break
        time.sleep(0.1)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the worker outlived its killed parent by 5 s")
