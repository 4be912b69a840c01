"""Add-Tree covariance GP for conditional spaces (Ma & Blaschko 2020, paper 000).

k(x, x') = sum over vertices v of [v lies on both points' paths] * sigma_v^2 * k_v(x|_v, x'|_v)
(Definition 4, Eq. 5; Algorithm 1): each vertex with parameters contributes a Matérn-5/2 ARD kernel on
its own numeric parameters (times an overlap kernel on its categorical ones), switched on only when
both points pass through it. Vertices without parameters contribute nothing, so two points whose
paths share no parameter-owning vertex are uncorrelated. Fully Bayesian: NUTS over every vertex's
lengthscales and variance, the noise and a constant mean.

Option ``share_like=True`` (ours, not in 000) adds one term per group of like vertices: leaves with
equally many numeric parameters, and inner vertices at the same depth with equally many numeric
parameters. The term is sigma_g^2 * [both paths pass through a member] * k_g(u(x), u(x')), where u(x)
are the unit-scaled numeric parameters of the member on x's path, in declared order. It encodes the
belief that alternative branches' parameters (the learning rate of optimizer A and of optimizer B) act
alike, so a vertex seen once borrows the shape learned at its like vertices; sigma_g -> 0 recovers Add-Tree.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo.base import on_route
from zoo.gp import ExactGP, lengthscale_prior
from zoo.kernels import matern52, overlap
from zoo.space import CATEGORICAL, Space


class AddTree(ExactGP):
    """GP with the Add-Tree kernel built from a conditional `Space`.

    Sites: ``lengthscale`` [numeric params, dim ``numeric_param``], ``cat_lengthscale`` [categorical
    params], ``variance`` [vertices with parameters, dim ``vertex``], ``noise``, ``mean``. With
    ``pooled=True`` (off by default, as in 000) the lengthscales are partially pooled across vertices through
    ``lengthscale_shift`` / ``lengthscale_spread`` / ``lengthscale_raw`` (``lengthscale`` is then a
    deterministic site): a leaf seen once borrows the smoothness learned at its siblings. With
    ``share_like=True`` each group of like vertices adds ``shared_lengthscale`` [dim ``shared_param``] and
    ``shared_variance`` [dim ``vertex_group``]: a leaf seen once borrows the function learned at its siblings.
    """

    name = "addtree"
    structure = "tree"
    default_acquisition = "logei"  # exact per-path log-EI; "ucb" runs Algorithm 2 of 000 (per vertex)

    def __init__(self, space: Space, noise_prior=(-4.0, 1.0), pooled: bool = False, interactions: bool = False,
                 share_like: bool = False):
        super().__init__(space)
        self.noise_prior = tuple(noise_prior)
        self.pooled = bool(pooled)
        self.interactions = bool(interactions)
        self.share_like = bool(share_like)
        kinds = space.kinds
        self.vertices = []  # (name, numeric cols, categorical cols, route cols, route category indices)
        for name, node in space.nodes.items():
            cols = [space.col[p.name] for p in node.params]
            if not cols:
                continue
            route = self._route(name)
            self.vertices.append((name,
                                  np.array([c for c in cols if kinds[c] != CATEGORICAL], dtype=np.int64),
                                  np.array([c for c in cols if kinds[c] == CATEGORICAL], dtype=np.int64),
                                  np.array([space.col[d] for d, _ in route], dtype=np.int64),
                                  np.array([i for _, i in route], dtype=np.float64)))
        if not self.vertices:
            raise ValueError("the space has no parameters outside its decisions")
        self.num_cols = np.concatenate([v[1] for v in self.vertices])
        self.cat_cols = np.concatenate([v[2] for v in self.vertices])
        depth = max(sum(1 for v in self.vertices if v[0] in p.nodes) for p in space.paths)
        self.variance_loc = -math.log(depth)  # each path's prior variance sums to about 1 (standardized y)
        # Appendix E interaction terms: per leaf, the product of the kernels of every parameter-owning
        # vertex on its path (numeric parameters), switched on only when both points reach that leaf
        self.interaction_terms = []  # (leaf name, [numeric cols per vertex on the path], leaf route cols, idx)
        if self.interactions:
            owners = {v[0]: v for v in self.vertices}
            for path in space.paths:
                on_path = [owners[n] for n in path.nodes if n in owners and len(owners[n][1])]
                if len(on_path) >= 2 and path.leaf in owners:
                    leaf = owners[path.leaf]
                    self.interaction_terms.append((path.leaf, [v[1] for v in on_path], leaf[3], leaf[4]))
        self.interaction_cols = (np.concatenate([c for t in self.interaction_terms for c in t[1]])
                                 if self.interaction_terms else np.zeros(0, dtype=np.int64))
        # share_like: groups of >= 2 like vertices (leaves by their number d of numeric parameters, inner
        # vertices by depth and d), as indices into self.vertices; members' columns align in declared order
        self.vertex_groups = []
        if self.share_like:
            leaves = {p.leaf for p in space.paths}
            depth = {n: i for p in space.paths for i, n in enumerate(p.nodes)}
            by_kind = {}
            for v, (name, num, _, _, _) in enumerate(self.vertices):
                if len(num):
                    kind = ("leaf", 0, len(num)) if name in leaves else ("inner", depth[name], len(num))
                    by_kind.setdefault(kind, []).append(v)
            self.vertex_groups = [members for _, members in sorted(by_kind.items()) if len(members) >= 2]
            if not self.vertex_groups:
                raise ValueError("share_like needs two leaves, or two inner vertices at one depth, with the same "
                                 "number of numeric parameters")
        self.group_member = np.zeros((len(self.vertices), len(self.vertex_groups)))  # [V, G]: v is in group g
        for g, group in enumerate(self.vertex_groups):
            self.group_member[group, g] = 1.0

    def _route(self, node_name):
        """(decision name, category index) pairs from the root down to `node_name`."""
        for path in self.space.paths:
            if node_name in path.nodes:
                k = path.nodes.index(node_name)
                route = []
                for parent, child in zip(path.nodes[:k], path.nodes[1:k + 1]):
                    node = self.space.nodes[parent]
                    value = next(v for v, c in node.children.items() if c.name == child)
                    route.append((node.choice, node.decision.index(value)))
                return route
        raise KeyError(node_name)

    def config_key(self):
        return (self.noise_prior, self.pooled, self.interactions, self.share_like)

    @property
    def additive(self) -> bool:
        """Whether the posterior splits into per-vertex components (Algorithm 2 needs it). Shared terms
        fold into their members (see `component_kernels`); interaction terms span whole paths."""
        return not self.interaction_terms

    def group_coordinates(self, X, membership, group):
        """(u [N, d], in_group [N]): the numeric parameters of the group member on each row's path,
        aligned across members, and whether the row's path passes through a member at all
        (`membership` is `self.membership(X)`)."""
        on = membership[:, group]
        u = sum(on[:, g:g + 1] * X[:, self.vertices[v][1]] for g, v in enumerate(group))
        return u, jnp.sum(on, axis=1)

    def membership(self, X):
        """[N, V] indicator that each row's path passes through each parameter-owning vertex."""
        return jnp.stack([on_route(X, route_cols, route_idx) for _, _, _, route_cols, route_idx in self.vertices], 1)

    def sample_hyperparameters(self) -> dict:
        params = {}
        if len(self.num_cols):
            locs = np.concatenate([np.full(len(v[1]), math.sqrt(2.0) + 0.5 * math.log(len(v[1]) + len(v[2])))
                                   for v in self.vertices])
            if self.pooled:
                # partial pooling: log l_j = loc_j + shift + spread * raw_j (non-centred). The marginal
                # of each log l_j has variance 1.5^2 + E[spread^2] = 3.25, close to the unpooled 3;
                # a vertex with few points borrows the lengthscale scale learned on the others.
                shift = numpyro.sample("lengthscale_shift", dist.Normal(0.0, 1.5))
                spread = numpyro.sample("lengthscale_spread", dist.HalfNormal(1.0))
                raw = numpyro.sample("lengthscale_raw", dist.Normal(0.0, 1.0).expand([len(locs)]).to_event(1))
                params["lengthscale"] = numpyro.deterministic("lengthscale", jnp.exp(locs + shift + spread * raw))
            else:
                params["lengthscale"] = numpyro.sample("lengthscale",
                                                       dist.LogNormal(locs, math.sqrt(3.0)).to_event(1))
        if len(self.cat_cols):
            params["cat_lengthscale"] = numpyro.sample(
                "cat_lengthscale", lengthscale_prior(1).expand([len(self.cat_cols)]).to_event(1))
        params["variance"] = numpyro.sample(
            "variance", dist.LogNormal(self.variance_loc, 1.0).expand([len(self.vertices)]).to_event(1))
        if self.interaction_terms:
            params["interaction_lengthscale"] = numpyro.sample(
                "interaction_lengthscale",
                dist.LogNormal(np.concatenate([np.full(sum(len(c) for c in t[1]), math.sqrt(2.0) + 0.5 * math.log(
                    sum(len(c) for c in t[1]))) for t in self.interaction_terms]), math.sqrt(3.0)).to_event(1))
            params["interaction_variance"] = numpyro.sample(
                "interaction_variance",
                dist.LogNormal(self.variance_loc - 1.0, 1.0).expand([len(self.interaction_terms)]).to_event(1))
        if self.vertex_groups:
            dims = [len(self.vertices[group[0]][1]) for group in self.vertex_groups]
            params["shared_lengthscale"] = numpyro.sample(
                "shared_lengthscale", dist.LogNormal(np.concatenate([np.full(d, math.sqrt(2.0) + 0.5 * math.log(d))
                                                                     for d in dims]), math.sqrt(3.0)).to_event(1))
            params["shared_variance"] = numpyro.sample(
                "shared_variance", dist.LogNormal(self.variance_loc, 1.0).expand([len(dims)]).to_event(1))
        params["noise"] = numpyro.sample("noise", dist.LogNormal(*self.noise_prior))
        params["mean"] = numpyro.sample("mean", dist.Normal(0.0, 1.0))
        return params

    def vertex_kernels(self, X1, X2, params):
        """[V, N, M]: the per-vertex terms sigma_v^2 * delta_v * k_v of Definition 4 (Algorithm 1, lines 4-8)."""
        m1, m2 = self.membership(X1), self.membership(X2)
        terms, i_num, i_cat = [], 0, 0
        for v, (_, num, cat, _, _) in enumerate(self.vertices):
            K = params["variance"][v] * m1[:, v][:, None] * m2[:, v][None, :]
            if len(num):
                K = K * matern52(X1[:, num], X2[:, num], params["lengthscale"][i_num:i_num + len(num)])
                i_num += len(num)
            if len(cat):
                K = K * overlap(X1[:, cat], X2[:, cat], params["cat_lengthscale"][i_cat:i_cat + len(cat)])
                i_cat += len(cat)
            terms.append(K)
        j = 0
        for t, (_, groups, route_cols, route_idx) in enumerate(self.interaction_terms):
            on1 = on_route(X1, route_cols, route_idx)
            on2 = on_route(X2, route_cols, route_idx)
            K = params["interaction_variance"][t] * on1[:, None] * on2[None, :]
            for cols in groups:  # k_r k_1 ... (000 Appendix E, Eq. 12-14)
                K = K * matern52(X1[:, cols], X2[:, cols], params["interaction_lengthscale"][j:j + len(cols)])
                j += len(cols)
            terms.append(K)
        j = 0
        for g, group in enumerate(self.vertex_groups):  # share_like: one term per group of like vertices
            d = len(self.vertices[group[0]][1])
            u1, on1 = self.group_coordinates(X1, m1, group)
            u2, on2 = self.group_coordinates(X2, m2, group)
            terms.append(params["shared_variance"][g] * on1[:, None] * on2[None, :]
                         * matern52(u1, u2, params["shared_lengthscale"][j:j + d]))
            j += d
        return jnp.stack(terms)


    def kernel(self, X1, X2, params):
        return jnp.sum(self.vertex_kernels(X1, X2, params), axis=0)

    def kernel_diag(self, X, params):
        diag = self.membership(X) @ self.vertex_scales(params)
        for t, (_, _, route_cols, route_idx) in enumerate(self.interaction_terms):
            diag = diag + params["interaction_variance"][t] * on_route(X, route_cols, route_idx)
        return diag

    def vertex_scales(self, params):
        """[V]: prior variance of each vertex's component, its group's shared variance folded in."""
        if not self.vertex_groups:
            return params["variance"]
        return params["variance"] + self.group_member @ params["shared_variance"]

    def component_kernels(self, Xq, X, params):
        """[V, N, M]: covariance between each vertex's component at Xq and f at X.

        A row's path meets at most one member of a group, so a group's shared term is folded into that
        member's component (its kernel then reads only the member's own parameters): the components
        still sum to f along every path, and Algorithm 2 of 000 applies with share_like.
        """
        terms = self.vertex_kernels(Xq, X, params)
        V = len(self.vertices)
        if not self.vertex_groups:
            return terms[:V]
        folded = jnp.einsum("vg,gnm->vnm", self.group_member, terms[V:]) * self.membership(Xq).T[:, :, None]
        return terms[:V] + folded

    def predict_components(self, cache, Xq):
        """Per-vertex posterior of the additive components f_v at Xq: mean, var [S, V, N] (user scale).

        Each component is Gaussian given the data: mean K_v(Xq, X) alpha and variance
        k_v(x, x) - K_v(Xq, X) K^-1 K_v(X, Xq) (000 Section 4.2, Algorithm 2, line 4). The constant
        mean is shared by every path and left out; shared terms are folded into their members.
        """
        if not self.additive:
            raise ValueError("with interaction terms the posterior is not additive over vertices")
        samples, data, pre = cache

        def one(s, p):
            Kv = self.component_kernels(Xq, data.X, s).transpose(0, 2, 1) * data.mask[None, :, None]  # [V, n, N]
            mean = jnp.einsum("vnq,n->vq", Kv, p["alpha"])
            prior = self.membership(Xq).T * self.vertex_scales(s)[:, None]  # [V, N]
            var = prior - jnp.einsum("vnq,nm,vmq->vq", Kv, p["Kinv"], Kv)
            return mean, jnp.maximum(var, 1e-12 * (prior + 1e-12))

        mean, var = jax.vmap(one)(samples, pre)
        return data.y_std * mean, data.y_std**2 * var

    def arviz_dims(self):
        names = np.array(self.space.names)
        dims = {"lengthscale": ["numeric_param"], "lengthscale_raw": ["numeric_param"],
                "cat_lengthscale": ["categorical_param"], "variance": ["vertex"],
                "interaction_variance": ["interaction"], "interaction_lengthscale": ["interaction_param"],
                "shared_variance": ["vertex_group"], "shared_lengthscale": ["shared_param"]}
        coords = {"numeric_param": list(names[self.num_cols]), "categorical_param": list(names[self.cat_cols]),
                  "vertex": [v[0] for v in self.vertices],
                  "interaction": [t[0] for t in self.interaction_terms],
                  "interaction_param": [f"{t[0]}:{names[c]}" for t in self.interaction_terms for g in t[1] for c in g],
                  "vertex_group": ["/".join(self.vertices[v][0] for v in g) for g in self.vertex_groups],
                  "shared_param": ["/".join(names[self.vertices[v][1][k]] for v in g)
                                   for g in self.vertex_groups for k in range(len(self.vertices[g[0]][1]))]}
        return dims, coords
