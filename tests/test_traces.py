"""Full traces (configs, values, sources, acquisition values) of short seeded runs of every registered
surrogate, pinned in tests/data/traces.json: a refactor that changes any number of a run shows here.
Rewrite the file with `python -m tests.trace_runs` only for a change of numbers that is intended and
explained (the git log says which). The traces hold bit for bit only on the processor, library
versions and XLA flags they were written with (tests/trace_runs.py says why): elsewhere the comparison is skipped
with a message; `test_loop.py::test_save_load_resumes_bit_identically` still checks on any machine that a
seed fixes the run."""

import json

import pytest

from optim.registry import RANDOM, SURROGATES
from tests.trace_runs import PATH, RUNS, fingerprint, run, trace

FILE = json.loads(PATH.read_text())
PINNED = FILE["traces"]
SAME_MACHINE = FILE["fingerprint"] == fingerprint()


def test_every_registered_surrogate_has_a_pinned_run():
    assert set(SURROGATES) | {RANDOM} <= {run[1] for run in RUNS.values()}
    assert set(PINNED) == set(RUNS)


HEAVY = {"bark", "treed", "independent", "gp_saas", "gp_yj", "gp_yjw"}  # each compiles its own sampler and optimizer (about 20 s): slow run only


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in sorted(RUNS)])
def test_a_seeded_run_repeats_its_pinned_trace_exactly(name):
    if not SAME_MACHINE:
        pytest.skip(f"traces pinned on {FILE['fingerprint']}, this is {fingerprint()}: bit-identical runs are "
                    "not expected across processors, library versions or XLA flags "
                    "(python -m tests.trace_runs pins here)")
    history = run(name)
    assert [h["source"] for h in history] == [h["source"] for h in PINNED[name]]
    assert trace(history) == PINNED[name]
    if name == "bark":  # every BO step went through the MIP optimizer and says how it ended
        bo = [h for h in history if h["source"] == "bo"]
        assert bo and all(h["optimizer_info"]["optimizer"] == "mip" and "status" in h["optimizer_info"] for h in bo)
