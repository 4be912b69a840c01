"""The package's compile cache: equal surrogates share a compiled function, and the cache is bounded."""

from collections import OrderedDict

import zoo.compiled as compiled_cache
from zoo import GP, Real, Space


def test_equal_surrogates_share_one_compiled_function_and_old_entries_go(monkeypatch):
    monkeypatch.setattr(compiled_cache, "_CACHE", OrderedDict())  # the suite's own entries stay untouched
    monkeypatch.setattr(compiled_cache, "MAX_ENTRIES", 3)
    builds = []

    def build(surrogate):
        builds.append(surrogate)
        return lambda: surrogate
    space = Space([Real("a", 0.0, 1.0)])
    first = compiled_cache.compiled("test-build", build, GP(space))
    again = compiled_cache.compiled("test-build", build, GP(Space([Real("a", 0.0, 1.0)])))  # an equal model
    other = compiled_cache.compiled("test-build", build, GP(space, kernel="rbf"))
    assert first is again and other is not first and len(builds) == 2
    for i in range(3):  # push the least recently used entries out
        compiled_cache.compiled("test-filler", lambda k: k, i)
    assert len(compiled_cache._CACHE) == 3
    compiled_cache.compiled("test-build", build, GP(space))
    assert len(builds) == 3
