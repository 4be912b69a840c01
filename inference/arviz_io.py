"""The one place that speaks to ArviZ: which major version is installed, and plain NumPy groups turned into
its posterior object (``InferenceData`` on ArviZ 0.x, ``xarray.DataTree`` on ArviZ 1.x).

ArviZ 1.x needs Python >= 3.12, so a Python 3.11 environment gets 0.x and a newer one gets 1.x; both are
supported with the same groups, variable names, dims and coordinates.
"""

from __future__ import annotations

from importlib.metadata import version


def arviz_major() -> int:
    """Major version of the installed ArviZ (0 or 1)."""
    return int(version("arviz").split(".")[0])


def from_groups(groups: dict, coords: dict, dims: dict):
    """ArviZ object from {group: {variable: array}}: InferenceData (0.x) or DataTree (1.x)."""
    import arviz as az

    groups = {name: variables for name, variables in groups.items() if variables}
    if arviz_major() >= 1:
        return az.from_dict(groups, coords=coords, dims=dims)
    return az.from_dict(**groups, coords=coords, dims=dims)


def group_names(obj) -> list[str]:
    """Names of the groups of an InferenceData or a DataTree, e.g. ['posterior', 'sample_stats', ...]."""
    if arviz_major() >= 1:
        return list(obj.children)
    return list(obj.groups())
