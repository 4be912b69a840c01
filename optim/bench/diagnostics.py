"""Counting XLA compilations, to check that a long BO run compiles only a handful of times."""

from __future__ import annotations

import jax

_COUNT = {"compiles": 0}
_REGISTERED = False


def _listener(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COUNT["compiles"] += 1


def compile_count() -> int:
    """Number of XLA backend compilations since the counter was first installed."""
    global _REGISTERED
    if not _REGISTERED:
        jax.monitoring.register_event_duration_secs_listener(_listener)
        _REGISTERED = True
    return _COUNT["compiles"]
