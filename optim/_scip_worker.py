"""Builds and solves BARK's acquisition MIP with SCIP (PySCIPOpt) in a child process.

Run as a script (``python _scip_worker.py problem.pkl result.pkl``): it imports only numpy and
pyscipopt, so a solver crash (SCIP can abort the process on hard instances) cannot take the BO run
down, and the parent can enforce a timeout. The problem format is written by ``optim.mip``.

Formulation (003 App. J, after Misic 2020 and Thebelt et al. 2022): for every tree t of every
posterior forest s, leaf indicators z (continuous in [0, 1], Eq. 9a, 9g); ordered split binaries
w[j, k] = [x_j <= v_jk] per numeric feature (Eq. 9e, 9f) and one-hot binaries per categorical
feature (Eq. 9d); each decision node's left leaves sum to at most its condition and its right leaves
to at most one minus it (Eq. 9b, 9c). With k_s[i] = (1/m) sum_t z[s, t, leaf_t(x_i)] the kernel
vector at x, the mean is alpha_s' k_s and the variance is 1 - ||u_s||^2 with L_s u_s = k_s; the
standard deviation sigma_s is bounded by the convex constraint sigma_s^2 + ||u_s||^2 <= 1 (Eq. 10c).
Objective: the integrated UCB in standardized units, (1 / S) sum_s (-alpha_s' k_s + sqrt(beta) sigma_s),
maximized (so the relative gap does not depend on the user's offset); the reported objective is in
the user's units, -y_mean + y_std * that.

Two ways to write Eq. 10c (``problem["formulation"]``):
- ``"tangent"`` (default): no u variables. A constraint handler (``VarianceBall``) holds, per forest,
  sigma_s^2 + ||M_s k_s||^2 <= 1 with M_s = L_s^-1, and cuts off an LP point (sigma*, M k*) outside the
  unit ball by the ball's tangent plane through its projection, a sigma + b' M k <= 1 with (a, b) =
  (sigma*, M k*) / ||(sigma*, M k*)||: valid for every feasible point (Cauchy-Schwarz), coefficients of
  modest size whatever sigma* is. The first plane, through the warm start's point, is in the initial LP.
- ``"nonlinear"``: u variables with L_s u_s = k_s and SCIP's nonlinear constraint on (sigma_s, u_s). SCIP
  gives every square its own auxiliary variable and initial rows; on BARK problems at n = 60 its first
  LP did not finish in 10 s (BENCHMARKS.md, "The acquisition MIP's variance constraints").
"""

import pickle
import sys
import time

import numpy as np
from pyscipopt import SCIP_RESULT, Conshdlr

#: time limit (s) from which SCIP keeps its default root separation. On 16 problems captured from BARK runs
#: (TreeFunction, TreeFunctionCat, PestControl at n = 30-60, NLP off as below) with 10 s, default separation
#: ended with a smaller relative gap than a single round on 5, a larger one on 1 and the same on 10, and
#: reached the 10% gap on 2 against 1. Under the default 1 s the single round lets the root LP finish.
LONG_SOLVE_SECONDS = 5.0
FORMULATIONS = ("tangent", "nonlinear")
#: a point counts as inside the variance ball when ||(sigma, M k)|| <= 1 + BALL_TOL. That excess is also the
#: violation of the tangent plane at the point, so every plane added cuts it off by more than SCIP's
#: feasibility tolerance (1e-6) and the LP must move: no enforcement round repeats a point.
BALL_TOL = 2e-6


class VarianceBall(Conshdlr):
    """Eq. 10c per forest as sigma_s^2 + ||M_s k_s||^2 <= 1, enforced by tangent planes of the unit ball
    (module docstring); ``data[name] = (sigma var, k vars, M)``."""

    def __init__(self):
        self.data = {}
        self.n_cuts = 0

    def _excess(self, cons, sol):
        """||(sigma, M k)|| - 1 at `sol` (None: the current LP solution), with sigma and M k."""
        sigma, ks, M = self.data[cons.name]
        s = self.model.getSolVal(sol, sigma)
        u = M @ np.array([self.model.getSolVal(sol, v) for v in ks])
        return float(np.sqrt(s * s + u @ u)) - 1.0, s, u

    def _separate(self, constraints) -> bool:
        found = False
        for cons in constraints:
            excess, s, u = self._excess(cons, None)
            if excess <= BALL_TOL:
                continue
            sigma, ks, M = self.data[cons.name]
            r = 1.0 + excess
            coef = M.T @ (u / r)
            row = self.model.createEmptyRowUnspec(name=f"{cons.name}_cut{self.n_cuts}", rhs=1.0)
            self.model.cacheRowExtensions(row)
            self.model.addVarToRow(row, sigma, float(s / r))
            for var, a in zip(ks, coef):
                if a != 0.0:
                    self.model.addVarToRow(row, var, float(a))
            self.model.flushRowExtensions(row)
            self.model.addCut(row, forcecut=True)
            self.model.releaseRow(row)
            self.n_cuts += 1
            found = True
        return found

    def conscheck(self, constraints, solution, checkintegrality, checklprows, printreason, completely):
        bad = any(self._excess(cons, solution)[0] > BALL_TOL for cons in constraints)
        return {"result": SCIP_RESULT.INFEASIBLE if bad else SCIP_RESULT.FEASIBLE}

    def consenfolp(self, constraints, nusefulconss, solinfeasible):
        return {"result": SCIP_RESULT.SEPARATED if self._separate(constraints) else SCIP_RESULT.FEASIBLE}

    def consenfops(self, constraints, nusefulconss, solinfeasible, objinfeasible):
        bad = any(self._excess(cons, None)[0] > BALL_TOL for cons in constraints)
        return {"result": SCIP_RESULT.SOLVELP if bad else SCIP_RESULT.FEASIBLE}

    def conssepalp(self, constraints, nusefulconss):
        return {"result": SCIP_RESULT.SEPARATED if self._separate(constraints) else SCIP_RESULT.DIDNOTFIND}

    def conslock(self, constraint, locktype, nlockspos, nlocksneg):
        sigma, ks, _ = self.data[constraint.name]
        self.model.addVarLocks(sigma, nlocksneg, nlockspos)  # a larger sigma can violate it
        for var in ks:
            self.model.addVarLocks(var, nlockspos + nlocksneg, nlockspos + nlocksneg)


def add_forest_structure(model, p):
    """Eq. 9a-9g: ordered split binaries w, one-hot categoricals c, and per tree leaf indicators z with
    the routing constraints of every decision node; returns (w, c, z[s][t])."""
    from pyscipopt import quicksum

    w = {j: [model.addVar(vtype="B", name=f"w{j}_{k}") for k in range(len(v))] for j, v in p["thresholds"].items()}
    for ws in w.values():
        for a, b in zip(ws[:-1], ws[1:]):
            model.addCons(a <= b)
    c = {j: [model.addVar(vtype="B", name=f"c{j}_{q}") for q in range(n)] for j, n in p["categories"].items()}
    for cs in c.values():
        model.addCons(quicksum(cs) == 1)
    z_all = []
    for s, forest in enumerate(p["trees"]):
        z_all.append([])
        for t, tree in enumerate(forest):
            z = [model.addVar(lb=0.0, ub=1.0, name=f"z{s}_{t}_{l}") for l in range(tree["n_leaves"])]
            z_all[-1].append(z)
            model.addCons(quicksum(z) == 1)
            for kind, j, arg, left, right in tree["splits"]:
                cond = w[j][arg] if kind == "num" else quicksum(c[j][q] for q in arg)
                if left:
                    model.addCons(quicksum(z[l] for l in left) <= cond)
                if right:
                    model.addCons(quicksum(z[l] for l in right) <= 1 - cond)
    return w, c, z_all


def forest_k(p, s: int, leaves) -> np.ndarray:
    """The kernel vector k_s of forest s at a point whose leaves (positions per tree) are `leaves`."""
    kv = np.zeros(p["n"])
    for t, tree in enumerate(p["trees"][s]):
        kv += np.asarray(tree["point_leaf"]) == leaves[t]
    return kv / p["m"]


def start_point(p, s: int):
    """Forest s at the warm start: its kernel vector k, u = L^-1 k and standard deviation sqrt(1 - ||u||^2)."""
    kv = forest_k(p, s, p["x0_leaf"][s])
    u = np.linalg.solve(p["L"][s], kv) if p["n"] else kv
    return kv, u, np.sqrt(max(1.0 - float(u @ u), 0.0))


def start_objective(p) -> float:
    """The objective (standardized units) at the warm start: what SCIP must beat to improve on it."""
    total = 0.0
    for s in range(p["S"]):
        kv, _, sd = start_point(p, s)
        total += -float(p["alpha"][s] @ kv) + np.sqrt(p["beta"]) * sd
    return total / p["S"]


def build(p):
    """The model of the module docstring; returns (model, w, c, z, (k, u or None, sigma), objective var)."""
    from pyscipopt import SCIP_PARAMSETTING, Model, quicksum

    formulation = p.get("formulation", "tangent")
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    model = Model("bark-ucb")
    model.hideOutput()
    model.setParam("limits/time", float(p["time_limit"]))
    model.setParam("limits/gap", float(p["gap"]))
    model.setParam("randomization/randomseedshift", int(p["seed"]) % 2**31)
    if formulation == "tangent":
        ball = VarianceBall()
        model.includeConshdlr(ball, "variance_ball", "Eq. 10c by tangent planes", sepapriority=10, enfopriority=-10,
                              chckpriority=-10, sepafreq=1, propfreq=-1, eagerfreq=-1, maxprerounds=0,
                              delaysepa=False, delayprop=False, needscons=True)
    w, c, z_all = add_forest_structure(model, p)
    S, m, n = p["S"], p["m"], p["n"]
    sig, k_all, u_all = [], [], []
    objective = 0
    for s in range(S):
        k_terms = [[] for _ in range(n)]
        for t, tree in enumerate(p["trees"][s]):
            for i, l in enumerate(tree["point_leaf"]):
                k_terms[i].append(z_all[s][t][l])
        k = [model.addVar(lb=0.0, ub=1.0, name=f"k{s}_{i}") for i in range(n)]
        k_all.append(k)
        for i in range(n):
            model.addCons(m * k[i] == quicksum(k_terms[i]))
        sg = model.addVar(lb=0.0, ub=1.0, name=f"sigma{s}")
        sig.append(sg)
        L = p["L"][s]
        if formulation == "nonlinear":
            u = [model.addVar(lb=None, ub=None, name=f"u{s}_{i}") for i in range(n)]
            u_all.append(u)
            for i in range(n):
                row = L[i, : i + 1]
                model.addCons(quicksum(float(row[r]) * u[r] for r in range(i + 1) if row[r] != 0.0) == k[i])
            model.addCons(sg * sg + quicksum(ui * ui for ui in u) <= 1.0)
        else:
            M = np.linalg.solve(L, np.eye(n)) if n else np.zeros((0, 0))
            cons = model.createCons(ball, f"ball{s}", initial=True, separate=True, enforce=True, check=True,
                                    propagate=False)
            ball.data[cons.name] = (sg, k, M)
            model.addPyCons(cons)
            if p.get("x0") is not None:  # the first tangent plane, through the warm start's point
                u0 = M @ forest_k(p, s, p["x0_leaf"][s])
                s0 = np.sqrt(max(1.0 - float(u0 @ u0), 0.0))
                r = np.sqrt(s0 * s0 + float(u0 @ u0))
                coef = M.T @ (u0 / r)
                model.addCons(float(s0 / r) * sg + quicksum(float(a) * ki for a, ki in zip(coef, k) if a != 0.0) <= 1.0)
        alpha = p["alpha"][s]
        objective += quicksum(float(-alpha[i]) * k[i] for i in range(n)) + float(np.sqrt(p["beta"])) * sg
    obj_var = model.addVar(lb=None, ub=None, name="acq")  # standardized units: the gap is scale-free
    model.addCons(obj_var == (1.0 / S) * objective)
    model.setObjective(obj_var, "maximize")
    # Fast presolve (default probing alone takes seconds). Under a short limit, one root separation round
    # lets the root LP finish early, so the LP-based heuristics (RENS) run within the limit; from
    # LONG_SOLVE_SECONDS on, SCIP's default separation tightens the bound instead. Set once the model is
    # built. (Separation off once made SCIP abort in free(), before the NLP was turned off.)
    model.setPresolve(SCIP_PARAMSETTING.FAST)
    # No NLP relaxation: SCIP's NLP heuristics (subnlp) call Ipopt, whose MUMPS ordering (METIS) corrupted the
    # heap on captured BARK problems after a few seconds of solving (free(): invalid pointer in
    # libmetis__FreeGraph under dmumps_; SCIP 10 and 9 alike), aborting or hanging the worker. The convex
    # variance constraints are still enforced through SCIP's LP cuts (the brute-force test ends optimal).
    model.setParam("nlp/disable", True)
    if formulation == "tangent":  # the handler's cuts name the k variables: keep them out of multi-aggregations
        model.setParam("presolving/donotmultaggr", True)
    if float(p["time_limit"]) < LONG_SOLVE_SECONDS:
        model.setParam("separating/maxroundsroot", 1)
    return model, w, c, z_all, (k_all, u_all or None, sig), obj_var


def warm_start(model, p, w, c, z_all, kus, obj_var):
    """Give SCIP the pool's best point as a complete feasible solution (every variable set)."""
    x0 = p["x0"]
    sol = model.createSol()
    for j, ws in w.items():
        for k, var in enumerate(ws):
            model.setSolVal(sol, var, float(x0[j] <= p["thresholds"][j][k]))
    for j, cs in c.items():
        for q, var in enumerate(cs):
            model.setSolVal(sol, var, float(q == p["x0_cat"][j]))
    k_all, u_all, sig = kus
    total = 0.0
    for s in range(p["S"]):
        for t in range(len(p["trees"][s])):
            leaf = p["x0_leaf"][s][t]
            for l, var in enumerate(z_all[s][t]):
                model.setSolVal(sol, var, float(l == leaf))
        kv, u, sd = start_point(p, s)
        for var, val in zip(k_all[s], kv):
            model.setSolVal(sol, var, float(val))
        if u_all is not None:
            for var, val in zip(u_all[s], u):
                model.setSolVal(sol, var, float(val))
        sd *= 1 - 1e-9  # strictly inside the variance ball
        model.setSolVal(sol, sig[s], sd)
        total += -float(p["alpha"][s] @ kv) + np.sqrt(p["beta"]) * sd
    model.setSolVal(sol, obj_var, total / p["S"])
    return model.addSol(sol, free=True)


def solve(p):
    t0 = time.perf_counter()
    model, w, c, z_all, kus, obj_var = build(p)
    t_build = time.perf_counter() - t0
    accepted = bool(warm_start(model, p, w, c, z_all, kus, obj_var)) if p.get("x0") is not None else False
    model.optimize()
    out = {"status": model.getStatus(), "build_seconds": t_build, "solve_seconds": model.getSolvingTime(),
           "n_vars": model.getNVars(), "n_conss": model.getNConss(), "n_sols": model.getNSols(),
           "warm_start_accepted": accepted, "n_nodes": model.getNNodes(), "lp_iterations": model.getNLPIterations()}
    to_user = lambda v: -p["y_mean"] + p["y_std"] * v  # noqa: E731
    if model.getNSols() > 0:
        sol = model.getBestSol()
        out["objective"] = to_user(model.getSolVal(sol, obj_var))
        out["dual_bound"] = to_user(model.getDualbound())
        out["gap"] = model.getGap()
        out["w"] = {j: [model.getSolVal(sol, v) for v in ws] for j, ws in w.items()}
        out["c"] = {j: [model.getSolVal(sol, v) for v in cs] for j, cs in c.items()}
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        problem = pickle.load(f)
    result = solve(problem)
    with open(sys.argv[2], "wb") as f:
        pickle.dump(result, f)
