"""XLA settings for the test process, applied before JAX starts its CPU backend.

The suite is dominated by compiling (about 200 of its 350 s on 2 cores), one small program after another.
XLA's older CPU code generator (`--xla_cpu_use_fusion_emitters=false`) compiles our sampler programs faster
and the whole default suite ran in 278 s against 348 s with the default one (2026-11-27, AMD EPYC, 2 cores).
It is a test-only setting: the library leaves XLA's defaults alone, because in a real BO run the compiled
programs run long enough that the default generator wins (a 30-evaluation `treezoo run` took 29.5 s with it
and 35.6 s without). Values agree to rounding, not bit for bit, so the pinned traces record these flags in
their fingerprint (tests/trace_runs.py). XLA aborts on a flag it does not know, so the flag is set only for
the jaxlib minor version it was checked on; set TREEZOO_TEST_DEFAULT_XLA=1 to test with XLA's defaults.
"""

import os
import sys

FLAG = "--xla_cpu_use_fusion_emitters=false"
CHECKED_JAXLIB = "0.10."


def apply() -> None:
    """Add FLAG to XLA_FLAGS unless JAX is already running, the user opted out, or jaxlib is unchecked."""
    from importlib.metadata import version

    if os.environ.get("TREEZOO_TEST_DEFAULT_XLA") == "1" or "jax" in sys.modules:
        return
    if not version("jaxlib").startswith(CHECKED_JAXLIB):
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_use_fusion_emitters" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {FLAG}".strip()


apply()
