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
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import linalg
from zoo.base import AdditiveComponents, Component, NoiselessForm, OutputWarping, PathLocalPredictions, Prepared
from zoo.gp import ExactGP, predict_from_cross
from zoo.kernels import block_slices, matern52, matern52_from_sqdist, on_route, overlap
from zoo.priors import block_lengthscale_prior, lengthscale_prior
from zoo.space import CATEGORICAL, Space
from zoo.warping import output_warp_named, output_warp_option, warped_suffix


class InteractionTerm(NamedTuple):
    """000 Appendix E: one leaf's product of the kernels of the vertices on its path, on when both reach it."""

    leaf: str
    blocks: list  # numeric columns of each parameter-owning vertex on the path, root first
    route_cols: np.ndarray
    route_idx: np.ndarray


class PathTerms(NamedTuple):
    """Gather tables of the kernel terms each path switches on, padded to T terms of d numeric and c categorical
    columns (numpy, [P, T, ...]). Terms are numbered vertices 0..V-1, like-vertex groups V..V+G-1, then one
    padding term of zero variance; a padded column (num_on / cat_on False) gets an infinite lengthscale."""

    term: np.ndarray  # [P, T] term number
    num_cols: np.ndarray  # [P, T, d] the path's encoded columns the term reads (a group: its member's on the path)
    num_ls: np.ndarray  # [P, T, d] index into [lengthscale, shared_lengthscale, 1]
    num_on: np.ndarray  # [P, T, d] True for a real column, False for padding
    cat_cols: np.ndarray  # [P, T, c]
    cat_ls: np.ndarray  # [P, T, c] index into [cat_lengthscale, 1]
    cat_on: np.ndarray  # [P, T, c]
    vertex_num_cols: np.ndarray  # [V, d] each vertex's numeric columns, padded (the data side of vertex terms)
    vertex_cat_cols: np.ndarray  # [V, c]


class AddTree(ExactGP, AdditiveComponents, PathLocalPredictions, NoiselessForm, OutputWarping):
    """GP with the Add-Tree kernel built from a conditional `Space`.

    Sites: ``lengthscale`` [numeric params, dim ``numeric_param``], ``cat_lengthscale`` [categorical
    params], ``variance`` [vertices with parameters, dim ``vertex``], ``noise``, ``mean``. With
    ``pooled=True`` (off by default, as in 000) the lengthscales are partially pooled across vertices through
    ``lengthscale_shift`` / ``lengthscale_spread`` / ``lengthscale_raw`` (``lengthscale`` is then a
    deterministic site): a leaf seen once borrows the smoothness learned at its siblings. With
    ``share_like=True`` each group of like vertices adds ``shared_lengthscale`` [dim ``shared_param``] and
    ``shared_variance`` [dim ``vertex_group``]: a leaf seen once borrows the function learned at its siblings.
    With ``output_warp=True`` the GP scores a Yeo-Johnson warp of y whose power ``yj_lambda`` is sampled with the
    rest (zoo.warping; "addtree_yj"), the warped GP's answer to values whose spread differs between leaves;
    ``output_warp="yeo-johnson-wide"`` lets the power below 0 ("addtree_yjw").
    """

    name = "addtree"
    default_acquisition = "logei"  # exact per-path log-EI; "ucb" runs Algorithm 2 of 000 (per vertex)
    preferred_optimizers = ("vertex_ucb", "lbfgs")  # Algorithm 2 serves UCB; per-path L-BFGS-B the rest
    #: BO-loop MCMC: NUTS trees of depth 3 (at most 7 leapfrog steps; the loop's default is 6). The warm refits'
    #: trajectories ran 15 steps, and each gradient sums every vertex's kernel, so the fit cost up to 4x the GP's;
    #: at depth 3 the warm fit takes about a quarter of depth 6's seconds, at the same regret on the conditional
    #: family (BENCHMARKS.md, "Shallower NUTS trees for Add-Tree"). ``share_like=True`` keeps the loop's default
    #: (not measured at depth 3)
    sampler_defaults = {"max_tree_depth": 3}

    #: journals written before the option existed ran without it
    options_added = {"output_warp": False}

    def __init__(self, space: Space, noise_prior=(-4.0, 1.0), pooled: bool = False, interactions: bool = False,
                 share_like: bool = False, output_warp: bool | str = False):
        super().__init__(space)
        self.output_warp = output_warp_named(output_warp)
        if self.output_warp is not None:
            self.name = "addtree" + warped_suffix(self.output_warp)
        self.noise_prior = tuple(noise_prior)
        self.pooled = bool(pooled)
        self.interactions = bool(interactions)
        self.share_like = bool(share_like)
        if self.share_like:
            self.sampler_defaults = {}
        kinds = space.kinds
        vertices = []  # the parameter-owning vertices of the space, as additive components
        for name, node in space.nodes.items():
            cols = [space.col[p.name] for p in node.params]
            if not cols:
                continue
            vertices.append(Component(name, np.array([c for c in cols if kinds[c] != CATEGORICAL], dtype=np.int64),
                                      np.array([c for c in cols if kinds[c] == CATEGORICAL], dtype=np.int64),
                                      *space.route(name)))
        if not vertices:
            raise ValueError("the space has no parameters outside its decisions")
        self.vertices = self.components = tuple(vertices)
        self.num_cols = np.concatenate([v.numeric_cols for v in self.vertices])
        self.cat_cols = np.concatenate([v.categorical_cols for v in self.vertices])
        self.num_slices = block_slices(len(v.numeric_cols) for v in self.vertices)
        self.cat_slices = block_slices(len(v.categorical_cols) for v in self.vertices)
        depth = max(sum(1 for v in self.vertices if v.name in p.nodes) for p in space.paths)
        self.variance_loc = -math.log(depth)  # each path's prior variance sums to about 1 (standardized y)
        # Appendix E interaction terms: per leaf, the product of the kernels of every parameter-owning
        # vertex on its path (numeric parameters), switched on only when both points reach that leaf
        self.interaction_terms = []  # InteractionTerm per leaf whose path has >= 2 vertices with numeric parameters
        if self.interactions:
            owners = {v.name: v for v in self.vertices}
            for path in space.paths:
                on_path = [owners[n] for n in path.nodes if n in owners and len(owners[n].numeric_cols)]
                if len(on_path) >= 2 and path.leaf in owners:
                    leaf = owners[path.leaf]
                    self.interaction_terms.append(InteractionTerm(path.leaf, [v.numeric_cols for v in on_path],
                                                                 leaf.route_cols, leaf.route_idx))
        self.interaction_cols = (np.concatenate([c for t in self.interaction_terms for c in t.blocks])
                                 if self.interaction_terms else np.zeros(0, dtype=np.int64))
        self.interaction_slices = block_slices(len(c) for t in self.interaction_terms for c in t.blocks)
        # share_like: groups of >= 2 like vertices (leaves by their number d of numeric parameters, inner
        # vertices by depth and d), as indices into self.vertices; members' columns align in declared order
        self.vertex_groups = []
        if self.share_like:
            leaves = {p.leaf for p in space.paths}
            depth = {n: i for p in space.paths for i, n in enumerate(p.nodes)}
            by_kind = {}
            for v, vertex in enumerate(self.vertices):
                name, num = vertex.name, vertex.numeric_cols
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
        self.group_dims = [len(self.vertices[group[0]].numeric_cols) for group in self.vertex_groups]
        self.group_slices = block_slices(self.group_dims)
        self.path_terms = None if self.interaction_terms else self._path_terms()
        # data_kernel's blocks: vertices with equally many numeric and categorical columns, stacked
        # (vertex indices [G], numeric columns [G, d], their lengthscale indices, categorical ditto)
        by_shape: dict = {}
        for v, vertex in enumerate(self.vertices):
            by_shape.setdefault((len(vertex.numeric_cols), len(vertex.categorical_cols)), []).append(v)
        num_index, cat_index = np.arange(len(self.num_cols)), np.arange(len(self.cat_cols))
        self.stacked_vertices = [
            (np.array(vs), np.stack([self.vertices[v].numeric_cols for v in vs]),
             np.stack([num_index[self.num_slices[v]] for v in vs]),
             np.stack([self.vertices[v].categorical_cols for v in vs]),
             np.stack([cat_index[self.cat_slices[v]] for v in vs])) for _, vs in sorted(by_shape.items())]

    def _path_terms(self) -> PathTerms:
        """The tables `predict_on_path` gathers from: per path, its vertices and the groups of its members."""
        V, n_num, n_shared = len(self.vertices), len(self.num_cols), sum(self.group_dims)
        on_paths = []
        for path in self.space.paths:
            terms = []  # (term number, numeric columns, their lengthscale indices, categorical ditto)
            for v, (vertex, s_num, s_cat) in enumerate(zip(self.vertices, self.num_slices, self.cat_slices)):
                if vertex.name in path.nodes:
                    terms.append((v, vertex.numeric_cols, np.arange(n_num)[s_num], vertex.categorical_cols,
                                  np.arange(len(self.cat_cols))[s_cat]))
            for g, (group, sl) in enumerate(zip(self.vertex_groups, self.group_slices)):
                member = [v for v in group if self.vertices[v].name in path.nodes]
                if member:  # a path meets at most one member of a group
                    terms.append((V + g, self.vertices[member[0]].numeric_cols, n_num + np.arange(n_shared)[sl],
                                  np.zeros(0, np.int64), np.zeros(0, np.int64)))
            on_paths.append(terms)
        T = max(len(t) for t in on_paths)
        d = max(1, max(len(c) for t in on_paths for _, c, _, _, _ in t))
        c = max(1, max(len(c) for t in on_paths for _, _, _, c, _ in t))
        P = len(on_paths)
        tables = dict(term=np.full((P, T), V + len(self.vertex_groups), np.int32),
                      num_cols=np.zeros((P, T, d), np.int32), num_ls=np.full((P, T, d), n_num + n_shared, np.int32),
                      num_on=np.zeros((P, T, d), bool), cat_cols=np.zeros((P, T, c), np.int32),
                      cat_ls=np.full((P, T, c), len(self.cat_cols), np.int32), cat_on=np.zeros((P, T, c), bool))
        for p, terms in enumerate(on_paths):
            for t, (term, num, num_ls, cat, cat_ls) in enumerate(terms):
                tables["term"][p, t] = term
                k, j = len(num), len(cat)
                tables["num_cols"][p, t, :k], tables["num_ls"][p, t, :k], tables["num_on"][p, t, :k] = num, num_ls, True
                tables["cat_cols"][p, t, :j], tables["cat_ls"][p, t, :j], tables["cat_on"][p, t, :j] = cat, cat_ls, True
        vertex_num = np.zeros((V, d), np.int32)
        vertex_cat = np.zeros((V, c), np.int32)
        for v, vertex in enumerate(self.vertices):
            vertex_num[v, :len(vertex.numeric_cols)] = vertex.numeric_cols
            vertex_cat[v, :len(vertex.categorical_cols)] = vertex.categorical_cols
        return PathTerms(**tables, vertex_num_cols=vertex_num, vertex_cat_cols=vertex_cat)

    def options(self) -> dict:
        return {"noise_prior": list(self.noise_prior), "pooled": self.pooled, "interactions": self.interactions,
                "share_like": self.share_like, "output_warp": output_warp_option(self.output_warp)}

    @property
    def additive(self) -> bool:
        """Whether the posterior splits into per-vertex components (Algorithm 2 needs it). Shared terms
        fold into their members (see `component_kernels`); interaction terms span whole paths."""
        return not self.interaction_terms

    def offers(self, capability) -> bool:
        """Additive components and path-local predictions only without interaction terms (they span paths)."""
        return self.additive if capability in (AdditiveComponents, PathLocalPredictions) else super().offers(capability)

    def group_coordinates(self, X, membership, group):
        """(u [N, d], in_group [N]): the numeric parameters of the group member on each row's path,
        aligned across members, and whether the row's path passes through a member at all
        (`membership` is `self.membership(X)`)."""
        on = membership[:, group]
        u = sum(on[:, g:g + 1] * X[:, self.vertices[v].numeric_cols] for g, v in enumerate(group))
        return u, jnp.sum(on, axis=1)

    def membership(self, X):
        """[N, V] indicator that each row's path passes through each parameter-owning vertex."""
        return jnp.stack([on_route(X, v.route_cols, v.route_idx) for v in self.vertices], 1)

    def sample_hyperparameters(self) -> dict:
        params = {}
        if len(self.num_cols):
            prior = block_lengthscale_prior([(len(v.numeric_cols), len(v.columns)) for v in self.vertices])
            if self.pooled:
                # partial pooling: log l_j = loc_j + shift + spread * raw_j (non-centred). The marginal
                # of each log l_j has variance 1.5^2 + E[spread^2] = 3.25, close to the unpooled 3;
                # a vertex with few points borrows the lengthscale scale learned on the others.
                shift = numpyro.sample("lengthscale_shift", dist.Normal(0.0, 1.5))
                spread = numpyro.sample("lengthscale_spread", dist.HalfNormal(1.0))
                locs = prior.base_dist.loc
                raw = numpyro.sample("lengthscale_raw", dist.Normal(0.0, 1.0).expand([len(locs)]).to_event(1))
                params["lengthscale"] = numpyro.deterministic("lengthscale", jnp.exp(locs + shift + spread * raw))
            else:
                params["lengthscale"] = numpyro.sample("lengthscale", prior)
        if len(self.cat_cols):
            params["cat_lengthscale"] = numpyro.sample(
                "cat_lengthscale", lengthscale_prior(1).expand([len(self.cat_cols)]).to_event(1))
        params["variance"] = numpyro.sample(
            "variance", dist.LogNormal(self.variance_loc, 1.0).expand([len(self.vertices)]).to_event(1))
        if self.interaction_terms:
            sizes = [sum(len(c) for c in t.blocks) for t in self.interaction_terms]
            params["interaction_lengthscale"] = numpyro.sample(
                "interaction_lengthscale", block_lengthscale_prior([(d, d) for d in sizes]))
            params["interaction_variance"] = numpyro.sample(
                "interaction_variance",
                dist.LogNormal(self.variance_loc - 1.0, 1.0).expand([len(self.interaction_terms)]).to_event(1))
        if self.vertex_groups:
            params["shared_lengthscale"] = numpyro.sample(
                "shared_lengthscale", block_lengthscale_prior([(d, d) for d in self.group_dims]))
            params["shared_variance"] = numpyro.sample(
                "shared_variance", dist.LogNormal(self.variance_loc, 1.0).expand([len(self.group_dims)]).to_event(1))
        params["noise"] = numpyro.sample("noise", dist.LogNormal(*self.noise_prior))
        params["mean"] = numpyro.sample("mean", dist.Normal(0.0, 1.0))
        return params

    def vertex_kernels(self, X1, X2, params):
        """[V, N, M]: the per-vertex terms sigma_v^2 * delta_v * k_v of Definition 4 (Algorithm 1, lines 4-8)."""
        m1, m2 = self.membership(X1), self.membership(X2)
        terms = []
        for v, (vertex, s_num, s_cat) in enumerate(zip(self.vertices, self.num_slices, self.cat_slices)):
            num, cat = vertex.numeric_cols, vertex.categorical_cols
            K = params["variance"][v] * m1[:, v][:, None] * m2[:, v][None, :]
            if len(num):
                K = K * matern52(X1[:, num], X2[:, num], params["lengthscale"][s_num])
            if len(cat):
                K = K * overlap(X1[:, cat], X2[:, cat], params["cat_lengthscale"][s_cat])
            terms.append(K)
        return jnp.stack(terms + self._other_terms(X1, X2, params, m1, m2))

    def _other_terms(self, X1, X2, params, m1, m2) -> list:
        """The terms beyond the vertices' (each [N, M]): Appendix E interactions, then share_like groups."""
        terms = []
        slices = iter(self.interaction_slices)
        for t, (_, groups, route_cols, route_idx) in enumerate(self.interaction_terms):
            on1 = on_route(X1, route_cols, route_idx)
            on2 = on_route(X2, route_cols, route_idx)
            K = params["interaction_variance"][t] * on1[:, None] * on2[None, :]
            for cols in groups:  # k_r k_1 ... (000 Appendix E, Eq. 12-14)
                K = K * matern52(X1[:, cols], X2[:, cols], params["interaction_lengthscale"][next(slices)])
            terms.append(K)
        for g, (group, sl) in enumerate(zip(self.vertex_groups, self.group_slices)):  # share_like: like vertices
            u1, on1 = self.group_coordinates(X1, m1, group)
            u2, on2 = self.group_coordinates(X2, m2, group)
            terms.append(params["shared_variance"][g] * on1[:, None] * on2[None, :]
                         * matern52(u1, u2, params["shared_lengthscale"][sl]))
        return terms

    def data_kernel(self, X1, X2, params):
        """`kernel` with the vertex terms of equal column counts computed as one stacked block [G, N, M]. On the
        training rows (the likelihood, inside every NUTS step) this cut the warm fit 1.25-2x on 9 of 12 instances
        of the conditional family (BENCHMARKS); on 1,024 query rows the stacked form is 8x slower, so predictions
        keep `kernel`."""
        m1, m2 = self.membership(X1), self.membership(X2)
        total = 0.0
        for vs, num, num_ls, cat, cat_ls in self.stacked_vertices:
            K = params["variance"][vs][:, None, None] * m1[:, vs].T[:, :, None] * m2[:, vs].T[:, None, :]
            if num.shape[1]:
                ls = params["lengthscale"][num_ls][:, None, :]  # [G, 1, d]
                A, B = jnp.transpose(X1[:, num], (1, 0, 2)) / ls, jnp.transpose(X2[:, num], (1, 0, 2)) / ls
                d2 = (jnp.sum(A**2, -1)[:, :, None] + jnp.sum(B**2, -1)[:, None, :]
                      - 2.0 * jnp.einsum("gnd,gmd->gnm", A, B))
                K = K * matern52_from_sqdist(d2)
            if cat.shape[1]:
                differs = (jnp.transpose(X1[:, cat], (1, 0, 2))[:, :, None, :]
                           != jnp.transpose(X2[:, cat], (1, 0, 2))[:, None])
                K = K * jnp.exp(-jnp.sum(differs / params["cat_lengthscale"][cat_ls][:, None, None, :], -1))
            total = total + jnp.sum(K, axis=0)
        for K in self._other_terms(X1, X2, params, m1, m2):
            total = total + K
        return total

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

    def predict_components(self, prepared: Prepared, Xq):
        """Per-vertex posterior of the additive components f_v at Xq: mean, var [S, V, N] (user scale).

        Each component is Gaussian given the data: mean K_v(Xq, X) alpha and variance
        k_v(x, x) - K_v(Xq, X) K^-1 K_v(X, Xq) (000 Section 4.2, Algorithm 2, line 4). The constant
        mean is shared by every path and left out; shared terms are folded into their members.
        """
        if not self.additive:
            raise ValueError("with interaction terms the posterior is not additive over vertices")
        samples, data, arrays = prepared

        def one(s, a):
            Kv = self.component_kernels(Xq, data.X, s).transpose(0, 2, 1) * data.mask[None, :, None]  # [V, n, N]
            mean = jnp.einsum("vnq,n->vq", Kv, a.alpha)
            prior = self.membership(Xq).T * self.vertex_scales(s)[:, None]  # [V, N]
            var = prior - jnp.einsum("vnq,nm,vmq->vq", Kv, a.Kinv, Kv)
            return mean, jnp.maximum(var, 1e-12 * (prior + 1e-12))

        return linalg.to_user_scale(data, *jax.vmap(one)(samples, arrays))

    def _term_data(self, X):
        """The data side of every term (vertices, groups, padding) at rows X: (numeric coordinates [V+G+1, N, d],
        categorical [V+G+1, N, c], whether each row's path switches the term on [V+G+1, N]). A group's
        coordinates are those of the member on each row's path (`group_coordinates`)."""
        tables = self.path_terms
        m = self.membership(X)
        d, N = tables.num_on.shape[-1], X.shape[0]
        num = [jnp.transpose(X[:, tables.vertex_num_cols], (1, 0, 2))]
        cat = [jnp.transpose(X[:, tables.vertex_cat_cols], (1, 0, 2))]
        on = [m.T]
        for group, dim in zip(self.vertex_groups, self.group_dims):
            u, in_group = self.group_coordinates(X, m, group)
            num.append(jnp.pad(u, ((0, 0), (0, d - dim)))[None])
            on.append(in_group[None])
        num.append(jnp.zeros((1, N, d), X.dtype))  # the padding term
        on.append(jnp.zeros((1, N), X.dtype))
        cat.append(jnp.zeros((len(self.vertex_groups) + 1,) + cat[0].shape[1:], X.dtype))  # groups have none
        return jnp.concatenate(num), jnp.concatenate(cat), jnp.concatenate(on)

    def predict_on_path(self, prepared: Prepared, Xq, path):
        """`predict_prepared` for rows Xq that all lie on `space.paths[path]`: the kernel is summed over that
        path's terms only (its vertices, and the groups of its members), so a query costs T terms instead of
        V + G (Definition 4 of 000 with every vertex off the path dropped, since delta_v(xq) = 0 there)."""
        if self.path_terms is None:
            raise ValueError("with interaction terms the kernel does not split by path")
        tables = self.path_terms
        t = tables._replace(**{name: jnp.asarray(getattr(tables, name))[path] for name in PathTerms._fields[:7]})
        data = prepared.data
        z_num, z_cat, z_on = self._term_data(data.X)
        z_num, z_cat, z_on = z_num[t.term], z_cat[t.term], z_on[t.term]  # [T, n, d], [T, n, c], [T, n]

        def cross(s):
            scale = jnp.concatenate([s["lengthscale"] if len(self.num_cols) else jnp.zeros(0),
                                     s["shared_lengthscale"] if self.vertex_groups else jnp.zeros(0), jnp.ones(1)])
            cat_scale = jnp.concatenate([s["cat_lengthscale"] if len(self.cat_cols) else jnp.zeros(0), jnp.ones(1)])
            variance = jnp.concatenate([s["variance"], s["shared_variance"] if self.vertex_groups else jnp.zeros(0),
                                        jnp.zeros(1)])[t.term]  # [T]
            Kxq = 0.0
            # one [n, N] block per term: on 1024 rows XLA ran these 3x faster than the same terms stacked [T, n, N].
            # A padded column gets an infinite lengthscale, so it adds nothing to the distance or the overlap.
            for j in range(t.term.shape[0]):
                k = matern52(z_num[j], Xq[:, t.num_cols[j]], jnp.where(t.num_on[j], scale[t.num_ls[j]], jnp.inf))
                if len(self.cat_cols):
                    k = k * overlap(z_cat[j], Xq[:, t.cat_cols[j]],
                                    jnp.where(t.cat_on[j], cat_scale[t.cat_ls[j]], jnp.inf))
                Kxq = Kxq + variance[j] * z_on[j][:, None] * k
            return Kxq, jnp.full(Xq.shape[0], jnp.sum(variance), Xq.dtype)

        return predict_from_cross(prepared, cross)

    def arviz_dims(self):
        names = np.array(self.space.names)
        dims = {"lengthscale": ["numeric_param"], "lengthscale_raw": ["numeric_param"],
                "cat_lengthscale": ["categorical_param"], "variance": ["vertex"],
                "interaction_variance": ["interaction"], "interaction_lengthscale": ["interaction_param"],
                "shared_variance": ["vertex_group"], "shared_lengthscale": ["shared_param"]}
        coords = {"numeric_param": list(names[self.num_cols]), "categorical_param": list(names[self.cat_cols]),
                  "vertex": [v.name for v in self.vertices],
                  "interaction": [t.leaf for t in self.interaction_terms],
                  "interaction_param": [f"{t.leaf}:{names[c]}" for t in self.interaction_terms for g in t.blocks
                                        for c in g],
                  "vertex_group": ["/".join(self.vertices[v].name for v in g) for g in self.vertex_groups],
                  "shared_param": ["/".join(names[self.vertices[v].numeric_cols[k]] for v in g)
                                   for g, d in zip(self.vertex_groups, self.group_dims) for k in range(d)]}
        return dims, coords
