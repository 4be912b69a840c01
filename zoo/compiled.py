"""The package's one cache of compiled (jitted) functions, shared by models, samplers and optimizers.

A compiled function is keyed by a name and hashable arguments (a surrogate, settings); equal surrogates
(same class, space and `config_key`) share it, so a BO run or a test suite compiles each shape once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Hashable

MAX_ENTRIES = 256
_CACHE: OrderedDict = OrderedDict()


def compiled(name: str, build: Callable[..., Callable], *key: Hashable) -> Callable:
    """`build(*key)` (which returns a jitted function) made once per (name, key) and then reused;
    the least recently used entries go past MAX_ENTRIES."""
    entry = (name,) + key
    fn = _CACHE.get(entry)
    if fn is None:
        fn = _CACHE[entry] = build(*key)
        while len(_CACHE) > MAX_ENTRIES:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(entry)
    return fn


def clear() -> None:
    """Forget every compiled function (frees their memory; the next call compiles again)."""
    _CACHE.clear()
