"""The one place that speaks to ArviZ: which major version is installed, and plain NumPy groups turned into
its posterior object (``InferenceData`` on ArviZ 0.x, ``xarray.DataTree`` on ArviZ 1.x).

ArviZ 1.x needs Python >= 3.12, so a Python 3.11 environment gets 0.x and a newer one gets 1.x; both are
supported with the same groups, variable names, dims and coordinates.
"""

from __future__ import annotations

from importlib.metadata import version


_FROM_DICT_GROUPS_0X = {"posterior", "posterior_predictive", "predictions", "sample_stats", "log_likelihood",
                        "prior", "prior_predictive", "sample_stats_prior", "observed_data", "constant_data",
                        "predictions_constant_data"}


def arviz_major() -> int:
    """Major version of the installed ArviZ (0 or 1)."""
    return int(version("arviz").split(".")[0])


def from_groups(groups: dict, coords: dict, dims: dict):
    """ArviZ object from {group: {variable: array}}: InferenceData (0.x) or DataTree (1.x)."""
    import arviz as az

    groups = {name: variables for name, variables in groups.items() if variables}
    if arviz_major() >= 1:
        return az.from_dict(groups, coords=coords, dims=dims)
    extra = {name: groups.pop(name) for name in list(groups) if name not in _FROM_DICT_GROUPS_0X}
    idata = az.from_dict(**groups, coords=coords, dims=dims)
    if extra:  # groups ArviZ 0.x's from_dict does not name (e.g. prior_sbc)
        idata.add_groups({name: az.dict_to_dataset(v, coords=coords, dims=dims) for name, v in extra.items()})
    return idata


def group_names(obj) -> list[str]:
    """Names of the groups of an InferenceData or a DataTree, e.g. ['posterior', 'sample_stats', ...]."""
    if arviz_major() >= 1:
        return list(obj.children)
    return list(obj.groups())
