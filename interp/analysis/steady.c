/*
 * steady.c — steady motions of the chosen equations (steady.h,
 * LANGUAGE.md §7.3): the cyclic coordinates, the steady equations, and
 * Newton's method on them.
 *
 * Newton's method on the constraint manifold.  The unknowns u are some of
 * the independent variables x; the residual is F_R(x), the rates of the
 * independent variables R that are not cyclic coordinates, with the
 * dependent variables d(x) solved from the constraints at each iterate
 * (steady_project: Newton on f(q) = 0 for the dependent coordinates,
 * then on Ceff(q, q') = 0 for the dependent velocities, to rounding).
 * The Jacobian ∂F_R/∂u is exact: lin_directions differentiates the
 * equations' tapes and solves in the directions of the unknowns, the
 * dependent variables following by implicit differentiation — the
 * columns U of linearize's A.  The step is the minimum-norm least-
 * squares solution of J δ = −F, rows scaled by their equations' scales
 * and columns by the unknowns' sizes, by the SVD (svd.h): it copes with
 * dependent equations (a conserved energy E gives Σ ∂E/∂x_i F_i ≡ 0, so
 * at a solution the rows of J are dependent) and with a family (more
 * unknowns than independent equations: Gauss–Newton with minimum-norm
 * steps converges to a point of the family).  A backtracking line search
 * on |S F|² keeps the iteration from running away from a poor guess.
 *
 * Must not: print; change the system.
 */
#include "interp/analysis/steady.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/analysis/svd.h"
#include "interp/base/util.h"
#include "interp/eom/linalg.h"

#define STEADY_NONE ((size_t)-1)
/* Newton's steps drop the singular values below this times the largest:
 * near a family (or a dependent equation) the Jacobian has a singular
 * value of the order of the residual, whose direction would otherwise
 * take a step of order one along the family. */
#define STEADY_STEP_RTOL 1e-10

struct steady {
    const nh_system_t *sys;
    eom_t *e;
    lin_t *l;
    eom_velsolver_t *vs;
    size_t nv, n;
    bool all_velocities; /* the state holds every q' */
    unsigned char *how;  /* nv */

    /* steady_begin */
    size_t N;            /* independent variables */
    const uint32_t *ind; /* lin_vars */
    size_t *pos;         /* nv: the index in ind, or STEADY_NONE */
    bool *cyclic;        /* N */
    size_t *row, nrow;   /* the steady equations: indices into ind */
    size_t *unk, k;      /* the unknowns: indices into ind */
    uint32_t *unk_var;   /* their graph variables */
    size_t *dq, nq;      /* dependent coordinates (coordinate indices) */
    size_t *dv, ndv;     /* dependent velocities (coordinate indices) */
    bool *named_dep;     /* nv: named, and dependent */
    bool *natural_dep;   /* nv: dependent when nothing is named */
    double *A;           /* N×N */
    double *rate;        /* N */
    double *scale;       /* N */
    double *dvars;       /* nv × (N + 1) directions */

    /* the report */
    steady_report_t rep;
    uint32_t *cyc_var;
    double *cyc_rate;
    bool *cyc_const;
};

steady_t *steady_new(const nh_system_t *sys, eom_t *e, lin_t *l,
                     eom_velsolver_t *vs)
{
    steady_t *st = xcalloc(1, sizeof *st);
    st->sys = sys;
    st->e = e;
    st->l = l;
    st->vs = vs;
    st->nv = expr_graph_nvars(sys->g);
    st->n = sys->n;
    size_t ns = eom_state_size(e);
    const uint32_t *sv = eom_state_vars(e);
    st->all_velocities = ns == 2 * sys->n;
    for (size_t i = 0; i < sys->n && st->all_velocities; i++)
        st->all_velocities = sv[sys->n + i] == sys->qd[i];
    size_t nv = st->nv, n = st->n;
    st->how = xcalloc(nv + 1, sizeof *st->how);
    st->pos = xcalloc(nv + 1, sizeof *st->pos);
    st->named_dep = xcalloc(nv + 1, sizeof *st->named_dep);
    st->natural_dep = xcalloc(nv + 1, sizeof *st->natural_dep);
    st->cyclic = xcalloc(ns + 1, sizeof *st->cyclic);
    st->row = xcalloc(ns + 1, sizeof *st->row);
    st->unk = xcalloc(ns + 1, sizeof *st->unk);
    st->unk_var = xcalloc(ns + 1, sizeof *st->unk_var);
    st->dq = xcalloc(n + 1, sizeof *st->dq);
    st->dv = xcalloc(n + 1, sizeof *st->dv);
    st->A = xcalloc(ns * ns + 1, sizeof *st->A);
    st->rate = xcalloc(ns + 1, sizeof *st->rate);
    st->scale = xcalloc(ns + 1, sizeof *st->scale);
    st->dvars = xcalloc(nv * (ns + 2) + 1, sizeof *st->dvars);
    st->cyc_var = xcalloc(ns + 1, sizeof *st->cyc_var);
    st->cyc_rate = xcalloc(ns + 1, sizeof *st->cyc_rate);
    st->cyc_const = xcalloc(ns + 1, sizeof *st->cyc_const);
    return st;
}

void steady_free(steady_t *st)
{
    if (!st)
        return;
    free(st->how);
    free(st->pos);
    free(st->named_dep);
    free(st->natural_dep);
    free(st->cyclic);
    free(st->row);
    free(st->unk);
    free(st->unk_var);
    free(st->dq);
    free(st->dv);
    free(st->A);
    free(st->rate);
    free(st->scale);
    free(st->dvars);
    free(st->cyc_var);
    free(st->cyc_rate);
    free(st->cyc_const);
    free(st);
}

/* ---- the cyclic coordinates ------------------------------------------- */

/* Whether graph variable V is a coordinate; its index into *I. */
static bool steady_coordinate(const nh_system_t *sys, uint32_t v, size_t *i)
{
    for (size_t j = 0; j < sys->n; j++)
        if (sys->q[j] == v) {
            if (i)
                *i = j;
            return true;
        }
    return false;
}

void steady_cyclic(const nh_system_t *sys, const uint32_t *ind, size_t n,
                   const double *a, bool *cyclic)
{
    /* The largest set closed under "its columns are zero outside its
     * rows": start from every coordinate and drop, until none is
     * dropped, each whose column is nonzero in a row outside the set.
     * (Sets with that property are closed under union, so pruning finds
     * the largest; adding one coordinate at a time from none would miss
     * two that feed each other only.) */
    double *rmax = xcalloc(n + 1, sizeof *rmax);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            rmax[i] = fmax(rmax[i], fabs(a[i * n + j]));
    for (size_t j = 0; j < n; j++)
        cyclic[j] = steady_coordinate(sys, ind[j], NULL);
    bool changed = true;
    while (changed) {
        changed = false;
        for (size_t j = 0; j < n; j++) {
            if (!cyclic[j])
                continue;
            for (size_t i = 0; i < n; i++)
                if (!cyclic[i] &&
                    fabs(a[i * n + j]) > STEADY_RANK_RTOL * rmax[i]) {
                    cyclic[j] = false;
                    changed = true;
                    break;
                }
        }
    }
    free(rmax);
}

void steady_scales(const uint32_t *ind, size_t n, const double *a,
                   const double *vars, double *scale)
{
    for (size_t i = 0; i < n; i++) {
        double s = 0.0;
        for (size_t j = 0; j < n; j++)
            s += fabs(a[i * n + j]) * fmax(1.0, fabs(vars[ind[j]]));
        scale[i] = s > 1.0 ? s : 1.0;
    }
}

/* ---- the constraints ----------------------------------------------------- */

/* Newton's method on the dependent variables X (COUNT of them, the graph
 * variables VAR[j]) for RES(X) = 0 with the Jacobian's columns COL[j]
 * (ROWS == COUNT rows of N); EVAL writes the residual and the Jacobian at
 * VARS.  Returns 0 when the step reaches rounding. */
typedef void (*steady_cons_fn)(steady_t *st, const double *vars, double *res,
                               double *jac);

static void steady_pos_eval(steady_t *st, const double *vars, double *res,
                            double *jac)
{
    eom_velsolver_pos_tangent(st->vs, vars, NULL, 0, res, jac, NULL);
}

static void steady_vel_eval(steady_t *st, const double *vars, double *res,
                            double *jac)
{
    eom_velsolver_vel_tangent(st->vs, vars, NULL, 0, res, jac, NULL);
}

static int steady_newton_cons(steady_t *st, double *vars, steady_cons_fn fn,
                              const size_t *idx, const uint32_t *var,
                              size_t count)
{
    size_t n = st->n;
    if (count == 0)
        return 0;
    double *res = xcalloc(count + 1, sizeof *res);
    double *jac = xcalloc(count * n + 1, sizeof *jac);
    double *m = xcalloc(count * count + 1, sizeof *m);
    double *w = xcalloc(2 * count + 1, sizeof *w);
    size_t *perm = xcalloc(count + 1, sizeof *perm);
    int rc = -1;
    double last = INFINITY;
    for (int it = 0; it < 40; it++) {
        fn(st, vars, res, jac);
        bool finite = true;
        for (size_t a = 0; a < count; a++) {
            finite &= isfinite(res[a]);
            for (size_t b = 0; b < count; b++)
                m[a * count + b] = jac[a * n + idx[b]];
        }
        if (!finite || linalg_lu(m, count, perm, LINALG_RTOL) != 0)
            break;
        for (size_t a = 0; a < count; a++)
            res[a] = -res[a];
        linalg_lu_solve(m, count, perm, res, w);
        double big = 0.0;
        for (size_t b = 0; b < count; b++) {
            vars[var[b]] += res[b];
            big = fmax(big, fabs(res[b]) / fmax(1.0, fabs(vars[var[b]])));
        }
        if (!isfinite(big))
            break;
        /* at rounding: the step stops shrinking, or is a few ulps */
        if (big <= 4e-16 || (big <= 1e-12 && big >= 0.5 * last)) {
            rc = 0;
            break;
        }
        last = big;
    }
    free(res);
    free(jac);
    free(m);
    free(w);
    free(perm);
    return rc;
}

int steady_project(steady_t *st, double *vars)
{
    const nh_system_t *sys = st->sys;
    uint32_t *var = xcalloc(st->n + 1, sizeof *var);
    for (size_t j = 0; j < st->nq; j++)
        var[j] = sys->q[st->dq[j]];
    int rc = steady_newton_cons(st, vars, steady_pos_eval, st->dq, var,
                                st->nq);
    for (size_t j = 0; j < st->ndv && rc == 0; j++)
        var[j] = sys->qd[st->dv[j]];
    if (rc == 0)
        rc = steady_newton_cons(st, vars, steady_vel_eval, st->dv, var,
                                st->ndv);
    free(var);
    return rc;
}

/* ---- the start ----------------------------------------------------------- */

/* Coordinates the model holds nowhere but in their velocities: not in
 * the Lagrangian, the forces or a holonomic constraint (position,
 * heading, a wheel's angle).  Their velocities are the natural dependent
 * ones of a steady motion: they move along it. */
static void steady_ignorable(steady_t *st, bool *out)
{
    const nh_system_t *sys = st->sys;
    expr_graph_t *g = sys->g;
    const size_t *hol;
    size_t nh = eom_velsolver_holonomic(st->vs, &hol);
    for (size_t i = 0; i < sys->n; i++) {
        uint32_t q = sys->q[i];
        bool used = expr_depends(g, sys->L, q);
        for (size_t j = 0; j < sys->n && !used; j++)
            used = expr_depends(g, sys->Q[j], q);
        for (size_t h = 0; h < nh && !used; h++)
            used = expr_depends(g, sys->C[hol[h]], q);
        out[i] = !used;
    }
}

/* The full A at VARS (on the constraints) into st->A, the rates into
 * st->rate; VARS completed. */
static int steady_full(steady_t *st, double *vars, diag_t *err)
{
    size_t N = st->N, nv = st->nv;
    memset(st->dvars, 0, nv * (N ? N : 1) * sizeof *st->dvars);
    for (size_t j = 0; j < N; j++)
        st->dvars[(size_t)st->ind[j] * N + j] = 1.0;
    if (lin_directions(st->l, vars, st->dvars, N, st->A, err) != 0)
        return -1;
    lin_rates(st->l, vars, st->rate);
    return 0;
}

/* The rows and unknowns from the cyclic coordinates and HOW. */
static void steady_layout(steady_t *st)
{
    st->nrow = st->k = 0;
    for (size_t j = 0; j < st->N; j++) {
        if (!st->cyclic[j])
            st->row[st->nrow++] = j;
        if (st->how[st->ind[j]] == STEADY_UNKNOWN) {
            st->unk_var[st->k] = st->ind[j];
            st->unk[st->k++] = j;
        }
    }
}

/* The dependent variables of the last lin_choose, as coordinate indices
 * (st->dq, st->dv). */
static void steady_take_dependent(steady_t *st)
{
    const nh_system_t *sys = st->sys;
    const uint32_t *dep;
    size_t nd = lin_dependent(st->l, &dep);
    st->nq = st->ndv = 0;
    for (size_t k = 0; k < nd; k++)
        for (size_t i = 0; i < sys->n; i++) {
            if (dep[k] == sys->q[i])
                st->dq[st->nq++] = i;
            if (dep[k] == sys->qd[i])
                st->dv[st->ndv++] = i;
        }
}

steady_fault_t steady_begin(steady_t *st, double *vars,
                            const unsigned char *how, diag_t *err)
{
    const nh_system_t *sys = st->sys;
    size_t n = sys->n, nv = st->nv;
    memcpy(st->how, how, nv * sizeof *st->how);
    memset(st->named_dep, 0, nv * sizeof *st->named_dep);
    memset(st->natural_dep, 0, nv * sizeof *st->natural_dep);
    bool *flags = xcalloc(6 * n + 1, sizeof *flags);
    bool *named_q = flags, *named_v = flags + n, *solved_q = flags + 2 * n;
    bool *prefer_v = flags + 3 * n, *ign = flags + 4 * n;
    for (size_t i = 0; i < n; i++) {
        named_q[i] = how[sys->q[i]] != STEADY_FREE;
        named_v[i] = st->all_velocities && how[sys->qd[i]] != STEADY_FREE;
    }
    steady_ignorable(st, ign);
    steady_fault_t fault = STEADY_OK;

    /* Onto the constraints, as `initial` (robust: Levenberg–Marquardt
     * from the values named and 0, started again elsewhere when it
     * stalls): coordinates, then velocities. */
    if (eom_velsolver_positions(st->vs, vars, named_q, NULL, err) != 0) {
        /* Named coordinates that the holonomic constraints hold (their
         * columns of J) and that leave too few unnamed ones to solve for
         * (the bicycle's pitch named `theta ~ 0`): that is the fault, not
         * the constraint left unsolved.  Those with a guess are the
         * likelier meant to be solved. */
        fault = STEADY_CONSTRAINTS;
        const size_t *hol;
        size_t nh = eom_velsolver_holonomic(st->vs, &hol);
        double *J = xcalloc(nh * n + 1, sizeof *J);
        eom_velsolver_pos_tangent(st->vs, vars, NULL, 0, NULL, J, NULL);
        double *Ju = xcalloc(nh * n + 1, sizeof *Ju);
        size_t nu = 0;
        for (size_t i = 0; i < n; i++)
            if (!named_q[i]) {
                for (size_t h = 0; h < nh; h++)
                    Ju[h * n + nu] = J[h * n + i];
                nu++;
            }
        size_t rank = nu ? linalg_rank(Ju, nh, n, 1e-10) : 0;
        strbuf_t who;
        strbuf_init(&who);
        for (size_t i = 0; i < n && rank < nh; i++) {
            bool held = false;
            for (size_t h = 0; h < nh; h++)
                held |= J[h * n + i] != 0.0;
            if (named_q[i] && held) {
                st->named_dep[sys->q[i]] = true;
                st->natural_dep[sys->q[i]] =
                    how[sys->q[i]] == STEADY_UNKNOWN;
                strbuf_addf(&who, "%s%s", who.len ? ", " : "",
                            sys->qname[i]);
                fault = STEADY_DEPENDENT;
            }
        }
        if (fault == STEADY_DEPENDENT) {
            diag_clear(err);
            diag_error(err, SRC_SPAN_NONE,
                       "the holonomic constraints determine %zu of %s, and "
                       "%s named",
                       nh - rank, who.data,
                       !strchr(who.data, ',')       ? "it is"
                       : strchr(strchr(who.data, ',') + 1, ',') ? "all are"
                                                                : "both are");
        }
        strbuf_free(&who);
        free(J);
        free(Ju);
        goto done;
    }
    /* The dependent coordinates (by `initial`'s rule, there: the solver
     * above leaves coordinates that already fit unsolved, and says it
     * solved none) and, first among the dependent velocities, theirs. */
    {
        eom_dependent_t d = {xcalloc(n + 1, sizeof(size_t)), 0, NULL, 0};
        diag_t tmp = {0};
        if (eom_velsolver_choose(st->vs, vars, named_q, NULL, NULL, NULL,
                                 false, &d, &tmp) == 0)
            for (size_t j = 0; j < d.nq; j++)
                solved_q[d.q[j]] = true;
        free(d.q);
    }
    for (size_t i = 0; i < n; i++)
        prefer_v[i] = !named_v[i] && (solved_q[i] || ign[i]);
    if (st->all_velocities &&
        eom_velsolver_solve(st->vs, vars, named_v, prefer_v, err) != 0) {
        /* As for the coordinates: velocities named that the constraints
         * need (the columns of B of those not named fall short of its
         * rank), those with a guess the likelier meant. */
        fault = STEADY_CONSTRAINTS;
        size_t r = sys->r;
        double *B = xcalloc(r * n + 1, sizeof *B);
        double *Bu = xcalloc(r * n + 1, sizeof *Bu), *Ba = xcalloc(r * n + 1, sizeof *Ba);
        eom_velsolver_vel_tangent(st->vs, vars, NULL, 0, NULL, B, NULL);
        memcpy(Ba, B, r * n * sizeof *Ba);
        size_t nu = 0;
        for (size_t i = 0; i < n; i++)
            if (!named_v[i]) {
                for (size_t a = 0; a < r; a++)
                    Bu[a * n + nu] = B[a * n + i];
                nu++;
            }
        size_t rank = nu ? linalg_rank(Bu, r, n, 1e-10) : 0;
        size_t full = linalg_rank(Ba, r, n, 1e-10);
        /* the ones `initial` would solve for with nothing named */
        eom_dependent_t d = {NULL, 0, xcalloc(n + 1, sizeof(size_t)), 0};
        d.q = xcalloc(n + 1, sizeof(size_t));
        bool *nat = xcalloc(n + 1, sizeof *nat), any_nat = false;
        diag_t tmp = {0};
        if (eom_velsolver_choose(st->vs, vars, NULL, NULL, NULL, NULL, true,
                                 &d, &tmp) == 0)
            for (size_t j = 0; j < d.nv; j++) {
                nat[d.v[j]] = named_v[d.v[j]];
                any_nat |= nat[d.v[j]];
            }
        free(d.q);
        free(d.v);
        strbuf_t who;
        strbuf_init(&who);
        for (size_t i = 0; i < n && rank < full; i++) {
            bool held = false;
            for (size_t a = 0; a < r; a++)
                held |= B[a * n + i] != 0.0;
            if (named_v[i] && held) {
                st->named_dep[sys->qd[i]] = true;
                st->natural_dep[sys->qd[i]] =
                    any_nat ? nat[i] : how[sys->qd[i]] == STEADY_UNKNOWN;
                strbuf_addf(&who, "%s%s'", who.len ? ", " : "",
                            sys->qname[i]);
                fault = STEADY_DEPENDENT;
            }
        }
        if (fault == STEADY_DEPENDENT) {
            diag_clear(err);
            diag_error(err, SRC_SPAN_NONE,
                       "the constraints determine %zu of the velocities %s, "
                       "and they are named",
                       full - rank, who.data);
        }
        strbuf_free(&who);
        free(nat);
        free(B);
        free(Bu);
        free(Ba);
        goto done;
    }

    /* The dependent variables there, by the same rule; then again with
     * the velocities of the cyclic coordinates that chart finds preferred
     * (the structural guess above misses a heading that the Lagrangian
     * holds in terms that cancel), until the cyclic coordinates stay the
     * same.  The velocities not named and not dependent are 0. */
    bool *prefer2 = flags + 5 * n;
    for (int pass = 0; pass < 4; pass++) {
        if (lin_choose(st->l, vars, named_q, solved_q, named_v, prefer_v,
                       err) != 0) {
            fault = STEADY_CONSTRAINTS;
            goto done;
        }
        steady_take_dependent(st);
        st->N = lin_size(st->l);
        st->ind = lin_vars(st->l);
        for (size_t v = 0; v < nv; v++)
            st->pos[v] = STEADY_NONE;
        for (size_t j = 0; j < st->N; j++)
            st->pos[st->ind[j]] = j;
        if (!st->all_velocities)
            break;
        for (size_t i = 0; i < n; i++)
            if (!named_v[i])
                vars[sys->qd[i]] = 0.0;
        if (steady_project(st, vars) != 0 ||
            steady_full(st, vars, err) != 0)
            break; /* decided below, with the choice as it is */
        steady_cyclic(sys, st->ind, st->N, st->A, st->cyclic);
        bool same = true;
        for (size_t i = 0; i < n; i++) {
            size_t j = st->pos[sys->q[i]];
            bool cyc = j != STEADY_NONE && st->cyclic[j];
            prefer2[i] = !named_v[i] && (solved_q[i] || cyc);
            same &= prefer2[i] == prefer_v[i];
        }
        if (same)
            break;
        memcpy(prefer_v, prefer2, n * sizeof *prefer_v);
    }
    bool named_dependent = false;
    for (size_t j = 0; j < st->nq; j++)
        named_dependent |= st->named_dep[sys->q[st->dq[j]]] =
            named_q[st->dq[j]];
    for (size_t j = 0; j < st->ndv; j++)
        named_dependent |= st->named_dep[sys->qd[st->dv[j]]] =
            named_v[st->dv[j]];
    if (named_dependent) {
        /* the velocities the constraints had to take from the named ones */
        strbuf_t who;
        strbuf_init(&who);
        for (size_t j = 0; j < st->ndv; j++)
            if (named_v[st->dv[j]]) {
                st->natural_dep[sys->qd[st->dv[j]]] =
                    how[sys->qd[st->dv[j]]] == STEADY_UNKNOWN;
                strbuf_addf(&who, "%s%s'", who.len ? ", " : "",
                            sys->qname[st->dv[j]]);
            }
        for (size_t j = 0; j < st->nq; j++)
            if (named_q[st->dq[j]])
                strbuf_addf(&who, "%s%s", who.len ? ", " : "",
                            sys->qname[st->dq[j]]);
        diag_error(err, SRC_SPAN_NONE,
                   "the constraints determine %s here, from the other "
                   "variables",
                   who.data ? who.data : "it");
        strbuf_free(&who);
        fault = STEADY_DEPENDENT;
        goto done;
    }

    /* To rounding, then the cyclic coordinates from A there. */
    if (steady_project(st, vars) != 0) {
        diag_error(err, SRC_SPAN_NONE,
                   "the constraints cannot be solved for the dependent "
                   "variables at the starting values");
        fault = STEADY_CONSTRAINTS;
        goto done;
    }
    if (steady_full(st, vars, err) != 0) {
        fault = STEADY_EQUATIONS;
        goto done;
    }
    steady_cyclic(sys, st->ind, st->N, st->A, st->cyclic);
    steady_layout(st);
    for (size_t j = 0; j < st->k; j++)
        if (st->cyclic[st->unk[j]]) {
            diag_error(err, SRC_SPAN_NONE, "an unknown is cyclic");
            fault = STEADY_CYCLIC;
            goto done;
        }
done:
    free(flags);
    return fault;
}

bool steady_named_dependent(const steady_t *st, uint32_t var, bool *natural)
{
    if (var >= st->nv)
        return false;
    if (natural)
        *natural = st->natural_dep[var];
    return st->named_dep[var];
}

bool steady_is_cyclic(const steady_t *st, uint32_t var)
{
    return var < st->nv && st->pos[var] != STEADY_NONE &&
           st->cyclic[st->pos[var]];
}

/* ---- the steady equations -------------------------------------------------- */

size_t steady_unknowns(const steady_t *st, const uint32_t **vars)
{
    *vars = st->unk_var;
    return st->k;
}

size_t steady_rows(const steady_t *st, const size_t **rows)
{
    *rows = st->row;
    return st->nrow;
}

const char *steady_equation(const steady_t *st, size_t i, char *buf,
                            size_t size)
{
    snprintf(buf, size, "%s' = 0",
             expr_var_name(st->sys->g, st->ind[st->row[i]]));
    return buf;
}

int steady_eval(steady_t *st, double *vars, const double *dirs, size_t k,
                double *f, double *jac, diag_t *err)
{
    size_t N = st->N, nv = st->nv;
    if (k == 0) {
        if (eom_accel(st->e, vars, err) != 0)
            return -1;
        lin_rates(st->l, vars, st->rate);
    } else {
        memcpy(st->dvars, dirs, nv * k * sizeof *st->dvars);
        double *rates = xcalloc(N * k + 1, sizeof *rates);
        int rc = lin_directions(st->l, vars, st->dvars, k, rates, err);
        if (rc == 0) {
            lin_rates(st->l, vars, st->rate);
            for (size_t i = 0; i < st->nrow; i++)
                memcpy(jac + i * k, rates + st->row[i] * k,
                       k * sizeof *jac);
        }
        free(rates);
        if (rc != 0)
            return -1;
    }
    for (size_t i = 0; i < st->nrow; i++)
        f[i] = st->rate[st->row[i]];
    return 0;
}

int steady_row_scales(steady_t *st, double *vars, double *scale,
                      diag_t *err)
{
    if (steady_full(st, vars, err) != 0)
        return -1;
    steady_scales(st->ind, st->N, st->A, vars, st->scale);
    for (size_t i = 0; i < st->nrow; i++)
        scale[i] = st->scale[st->row[i]];
    return 0;
}

/* The largest |F_i| / s_i, and its row (*worst). */
static double steady_misfit(const double *f, const double *s, size_t m,
                            size_t *worst)
{
    double r = 0.0;
    *worst = 0;
    for (size_t i = 0; i < m; i++) {
        double v = fabs(f[i]) / s[i];
        if (!(v <= r)) {
            r = v;
            *worst = i;
            if (isnan(v))
                break;
        }
    }
    return r;
}

static double steady_merit(const double *f, const double *s, size_t m)
{
    double r = 0.0;
    for (size_t i = 0; i < m; i++)
        r += (f[i] / s[i]) * (f[i] / s[i]);
    return r;
}

/* "delta = 0.0123, thR' = -20" of the unknowns at VARS, into B. */
static void steady_unknowns_text(const steady_t *st, const double *vars,
                                 strbuf_t *b)
{
    char num[40];
    for (size_t j = 0; j < st->k; j++)
        strbuf_addf(b, "%s%s = %s", j ? ", " : "",
                    expr_var_name(st->sys->g, st->unk_var[j]),
                    expr_format_number(vars[st->unk_var[j]], num,
                                       sizeof num));
}

/* The ranks of the steady equations at VARS (st->A, st->scale current):
 * in the unknowns (*RU) and in every variable that is not a cyclic
 * coordinate (*RF); a null direction of the unknowns into NULLV (k). */
static void steady_ranks(steady_t *st, const double *vars, size_t *ru,
                         size_t *rf, double *nullv)
{
    size_t N = st->N, m = st->nrow, k = st->k;
    size_t nc = 0;
    size_t *col = xcalloc(N + 1, sizeof *col);
    for (size_t j = 0; j < N; j++)
        if (!st->cyclic[j])
            col[nc++] = j;
    double *a = xcalloc(m * (nc > k ? nc : k) + 1, sizeof *a);
    svd_t d = {0};
    for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < nc; c++)
            a[i * nc + c] = st->A[st->row[i] * N + col[c]] *
                            fmax(1.0, fabs(vars[st->ind[col[c]]])) /
                            st->scale[st->row[i]];
    *rf = svd_factor(&d, a, m, nc) == 0 ? svd_rank(&d, STEADY_RANK_RTOL) : 0;
    for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < k; c++)
            a[i * k + c] = st->A[st->row[i] * N + st->unk[c]] *
                           fmax(1.0, fabs(vars[st->unk_var[c]])) /
                           st->scale[st->row[i]];
    *ru = k == 0 ? 0
          : svd_factor(&d, a, m, k) == 0 ? svd_rank(&d, STEADY_RANK_RTOL)
                                         : 0;
    if (k && nullv)
        svd_null(&d, nullv);
    svd_free(&d);
    free(a);
    free(col);
}

/* The cyclic coordinates' rates at VARS (a steady motion) into the
 * report, each marked constant when it stays the same with every cyclic
 * coordinate moved (the dependent variables solved again there). */
static void steady_cyclic_rates(steady_t *st, const double *vars)
{
    const nh_system_t *sys = st->sys;
    size_t nc = 0;
    for (size_t j = 0; j < st->N; j++)
        if (st->cyclic[j]) {
            size_t i = 0;
            steady_coordinate(sys, st->ind[j], &i);
            st->cyc_var[nc] = st->ind[j];
            st->cyc_rate[nc] = vars[sys->qd[i]];
            st->cyc_const[nc] = true;
            nc++;
        }
    double *moved = xcalloc(st->nv + 1, sizeof *moved);
    memcpy(moved, vars, st->nv * sizeof *moved);
    for (size_t c = 0; c < nc; c++)
        moved[st->cyc_var[c]] += 0.7853981633974483 + 0.1 * (double)c;
    diag_t tmp = {0};
    bool ok = steady_project(st, moved) == 0 &&
              eom_accel(st->e, moved, &tmp) == 0;
    for (size_t c = 0; c < nc; c++) {
        size_t i = 0;
        steady_coordinate(sys, st->cyc_var[c], &i);
        double a = st->cyc_rate[c], b = moved[sys->qd[i]];
        st->cyc_const[c] =
            ok && fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
        st->cyc_rate[c] = a == 0 ? 0.0 : a;
    }
    free(moved);
    st->rep.ncyclic = nc;
    st->rep.cyclic = st->cyc_var;
    st->rep.rate = st->cyc_rate;
    st->rep.constant = st->cyc_const;
    bool eq = true;
    for (size_t i = 0; i < sys->n; i++)
        eq &= vars[sys->qd[i]] == 0.0 || fabs(vars[sys->qd[i]]) <= 1e-14;
    for (size_t a = 0; a < sys->m; a++)
        eq &= fabs(vars[sys->z[a]]) <= 1e-14;
    st->rep.equilibrium = eq;
}

/* One run of Newton's method from VARS for the current rows and
 * unknowns.  Returns the number of iterations; *STALLED when the line
 * search found no decrease. */
typedef struct steady_newton {
    int iterations;
    bool stalled;
    bool failed;   /* the equations failed at the current iterate */
} steady_newton_t;

static steady_newton_t steady_newton(steady_t *st, double *vars,
                                     diag_t *err)
{
    size_t m = st->nrow, k = st->k, nv = st->nv;
    steady_newton_t res = {0, false, false};
    double *f = xcalloc(m + 1, sizeof *f), *f2 = xcalloc(m + 1, sizeof *f2);
    double *jac = xcalloc(m * k + 1, sizeof *jac);
    double *sj = xcalloc(m * k + 1, sizeof *sj);
    double *b = xcalloc(m + 1, sizeof *b);
    double *s = xcalloc(m + 1, sizeof *s);
    double *y = xcalloc(k + 1, sizeof *y), *x0 = xcalloc(k + 1, sizeof *x0);
    double *trial = xcalloc(nv + 1, sizeof *trial);
    svd_t d = {0};
    double last_big = INFINITY;
    for (int it = 0; it < STEADY_MAX_ITER; it++) {
        res.iterations = it;
        /* F, its scales and its Jacobian in the unknowns: A's rows R and
         * columns U */
        if (steady_full(st, vars, err) != 0) {
            res.failed = true;
            break;
        }
        steady_scales(st->ind, st->N, st->A, vars, st->scale);
        for (size_t i = 0; i < m; i++) {
            f[i] = st->rate[st->row[i]];
            s[i] = st->scale[st->row[i]];
            for (size_t j = 0; j < k; j++)
                jac[i * k + j] = st->A[st->row[i] * st->N + st->unk[j]];
        }
        size_t worst;
        double mis = steady_misfit(f, s, m, &worst);
        if (!(mis > 0.0) || k == 0)
            break;
        /* the scaled least-squares step */
        for (size_t i = 0; i < m; i++) {
            b[i] = -f[i] / s[i];
            for (size_t j = 0; j < k; j++)
                sj[i * k + j] = jac[i * k + j] *
                                fmax(1.0, fabs(vars[st->unk_var[j]])) / s[i];
        }
        if (svd_factor(&d, sj, m, k) != 0) {
            res.stalled = true;
            break;
        }
        svd_solve(&d, b, STEADY_STEP_RTOL, y);
        double big = 0.0;
        for (size_t j = 0; j < k; j++) {
            x0[j] = vars[st->unk_var[j]];
            y[j] *= fmax(1.0, fabs(x0[j]));
            big = fmax(big, fabs(y[j]) / fmax(1.0, fabs(x0[j])));
        }
        /* converged: the step is at rounding, or the residual is and the
         * steps no longer shrink (a step computed from rounding noise) */
        if (big <= 1e-15 || (mis <= 1e-15 && big >= 0.5 * last_big))
            break;
        last_big = big;
        /* backtracking on |S F|² */
        double merit = steady_merit(f, s, m);
        bool accepted = false;
        for (double alpha = 1.0; alpha >= 0x1p-30 && !accepted;
             alpha *= 0.5) {
            memcpy(trial, vars, nv * sizeof *trial);
            for (size_t j = 0; j < k; j++)
                trial[st->unk_var[j]] = x0[j] + alpha * y[j];
            diag_t tmp = {0};
            if (steady_project(st, trial) != 0 ||
                steady_eval(st, trial, NULL, 0, f2, NULL, &tmp) != 0)
                continue;
            double m2 = steady_merit(f2, s, m);
            if (m2 <= (1.0 - 1e-4 * alpha) * merit ||
                (alpha == 1.0 && big <= 1e-12 && m2 <= 4.0 * merit)) {
                memcpy(vars, trial, nv * sizeof *vars);
                accepted = true;
            }
        }
        if (!accepted) {
            res.stalled = true;
            break;
        }
        /* converged to rounding: a full step of a few ulps */
        if (big <= 1e-15)
            break;
    }
    svd_free(&d);
    free(f);
    free(f2);
    free(jac);
    free(sj);
    free(b);
    free(s);
    free(y);
    free(x0);
    free(trial);
    return res;
}

steady_fault_t steady_solve(steady_t *st, double *vars, diag_t *err)
{
    const nh_system_t *sys = st->sys;
    expr_graph_t *g = sys->g;
    size_t m, k = st->k;
    steady_newton_t nr = {0, false, false};
    /* The cyclic coordinates are those of the solution: found again
     * there, Newton is run again when they differ from the start's (a
     * column that vanished at the guess by accident). */
    for (int round = 0; round < 3; round++) {
        nr = steady_newton(st, vars, err);
        if (nr.failed)
            return STEADY_EQUATIONS;
        if (steady_full(st, vars, err) != 0)
            return STEADY_EQUATIONS;
        bool *was = xcalloc(st->N + 1, sizeof *was);
        memcpy(was, st->cyclic, st->N * sizeof *was);
        steady_cyclic(sys, st->ind, st->N, st->A, st->cyclic);
        bool same = memcmp(was, st->cyclic, st->N * sizeof *was) == 0;
        free(was);
        steady_layout(st);
        if (same)
            break;
    }
    m = st->nrow;
    steady_scales(st->ind, st->N, st->A, vars, st->scale);
    size_t worst = 0;
    double mis = 0.0;
    double *f = xcalloc(m + 1, sizeof *f), *s = xcalloc(m + 1, sizeof *s);
    for (size_t i = 0; i < m; i++) {
        f[i] = st->rate[st->row[i]];
        s[i] = st->scale[st->row[i]];
    }
    mis = steady_misfit(f, s, m, &worst);
    size_t ru = 0, rf = 0;
    double *nullv = xcalloc(k + 1, sizeof *nullv);
    steady_ranks(st, vars, &ru, &rf, nullv);
    st->rep.nunknown = k;
    st->rep.unknown = st->unk_var;
    st->rep.residual = mis;
    st->rep.nequation = m;
    st->rep.rank = rf;

    strbuf_t at, eq;
    strbuf_init(&at);
    strbuf_init(&eq);
    steady_unknowns_text(st, vars, &at);
    char num[40], num2[40];
    if (m > 0) {
        const char *name = expr_var_name(g, st->ind[st->row[worst]]);
        strbuf_addf(&eq, "%s' = 0 stays unsatisfied: %s' = %s (%s of its "
                         "scale)",
                    name, name,
                    expr_format_number(f[worst], num, sizeof num),
                    expr_format_number(mis, num2, sizeof num2));
    }
    steady_fault_t fault = STEADY_OK;
    /* a family: the unknowns meet fewer independent equations than there
     * are of them, at a solution (or so near one that only rounding is
     * left, 1e-9) */
    if ((mis <= STEADY_RTOL || (mis <= 1e-9 && k > 0)) && ru < k) {
        /* the unknowns least determined: the largest components of the
         * null direction */
        strbuf_t who;
        strbuf_init(&who);
        double big = 0.0;
        for (size_t j = 0; j < k; j++)
            big = fmax(big, fabs(nullv[j]));
        for (size_t j = 0, c = 0; j < k; j++)
            if (fabs(nullv[j]) >= 0.1 * big)
                strbuf_addf(&who, "%s%s", c++ ? ", " : "",
                            expr_var_name(g, st->unk_var[j]));
        diag_error(err, SRC_SPAN_NONE,
                   "the steady motions form a family here: %zu unknown%s "
                   "but only %zu independent steady equation%s in them; "
                   "give %zu of them a value with `=` (%s), or trace the "
                   "family with `follow`",
                   k, k == 1 ? "" : "s", ru, ru == 1 ? "" : "s", k - ru,
                   who.data ? who.data : "");
        strbuf_free(&who);
        fault = STEADY_FAMILY;
    } else if (mis <= STEADY_RTOL) {
        fault = STEADY_OK;
    } else if (k == 0) {
        diag_error(err, SRC_SPAN_NONE,
                   "these values are not a steady motion, and there is no "
                   "unknown to solve for: %s; make some of the values "
                   "unknowns (`~`)",
                   eq.data);
        fault = STEADY_FEWER;
    } else if (ru < k) {
        diag_error(err, SRC_SPAN_NONE,
                   "the steady equations are singular in the unknowns at "
                   "%s (rank %zu for %zu unknown%s), and %s; try another "
                   "starting guess",
                   at.data, ru, k, k == 1 ? "" : "s", eq.data);
        fault = STEADY_SINGULAR;
    } else if (nr.stalled) {
        diag_error(err, SRC_SPAN_NONE,
                   "no steady motion found: the residual has a minimum "
                   "that is not 0 at %s, where %s; there may be too few "
                   "unknowns for these values (make more of them unknowns "
                   "with `~`), or another starting guess may find one",
                   at.data, eq.data);
        fault = STEADY_FEWER;
    } else {
        diag_error(err, SRC_SPAN_NONE,
                   "Newton's method did not converge in %d steps: %s at "
                   "%s; try another starting guess",
                   nr.iterations + 1, eq.data, at.data);
        fault = STEADY_DIVERGED;
    }
    if (fault == STEADY_OK)
        steady_cyclic_rates(st, vars);
    strbuf_free(&at);
    strbuf_free(&eq);
    free(f);
    free(s);
    free(nullv);
    return fault;
}

const steady_report_t *steady_report(const steady_t *st)
{
    return &st->rep;
}

/* ---- inertial components (check) ------------------------------------------ */

long steady_inertial(const nh_system_t *sys, lin_t *l, double *vars,
                     uint32_t *vel, uint32_t *turn, size_t *cons, size_t max,
                     diag_t *err)
{
    size_t N = lin_size(l), nv = expr_graph_nvars(sys->g), n = sys->n;
    const uint32_t *ind = lin_vars(l);
    double *A = xcalloc(N * N + 1, sizeof *A);
    double *d = xcalloc(nv * (N ? N : 1) + 1, sizeof *d);
    bool *cyclic = xcalloc(N + 1, sizeof *cyclic);
    bool *cyc_q = xcalloc(n + 1, sizeof *cyc_q);
    for (size_t j = 0; j < N; j++)
        d[(size_t)ind[j] * N + j] = 1.0;
    long count = 0;
    if (lin_directions(l, vars, d, N, A, err) != 0) {
        count = -1;
        goto done;
    }
    steady_cyclic(sys, ind, N, A, cyclic);
    for (size_t j = 0; j < N; j++) {
        size_t i;
        if (cyclic[j] && steady_coordinate(sys, ind[j], &i))
            cyc_q[i] = true;
    }
    /* Position-like cyclic coordinates: held by no expression but through
     * their velocities (a sleigh's x and y; not a disk's heading, which
     * its rolling constraints hold). */
    bool *pos = xcalloc(n + 1, sizeof *pos);
    for (size_t i = 0; i < n; i++) {
        bool held = expr_depends(sys->g, sys->L, sys->q[i]);
        for (size_t c = 0; c < n && !held; c++)
            held = expr_depends(sys->g, sys->Q[c], sys->q[i]) ||
                   (sys->psi && sys->psi[c] &&
                    expr_depends(sys->g, sys->psi[c], sys->q[i]));
        for (size_t a = 0; a < sys->r && !held; a++)
            held = expr_depends(sys->g, sys->C[a], sys->q[i]);
        pos[i] = cyc_q[i] && !held;
    }
    /* In a constraint, the coefficients of the velocities of such
     * coordinates form a vector that turns with a coordinate q_k that is
     * not cyclic — each coefficient moves with q_k, the sum of their
     * squares does not (-sin(th), cos(th)) — so each of those velocities
     * is one inertial component of a motion whose direction q_k gives. */
    const expr_t **coef = xcalloc(n + 1, sizeof *coef);
    for (size_t a = 0; a < sys->r && (size_t)count < max; a++) {
        size_t np = 0;
        for (size_t i = 0; i < n; i++) {
            coef[i] = pos[i] ? expr_diff(sys->g, sys->C[a], sys->qd[i]) : NULL;
            if (coef[i] && expr_is_const(coef[i], 0.0))
                coef[i] = NULL;
            np += coef[i] != NULL;
        }
        if (np < 2)
            continue;
        for (size_t k = 0; k < n && (size_t)count < max; k++) {
            if (cyc_q[k])
                continue;
            double moves = 0.0, sum = 0.0, scale = 0.0;
            for (size_t i = 0; i < n; i++) {
                if (!coef[i])
                    continue;
                double c = expr_eval(sys->g, coef[i], vars);
                double dc = expr_eval(
                    sys->g, expr_diff(sys->g, coef[i], sys->q[k]), vars);
                moves = fmax(moves, fabs(dc));
                sum += 2.0 * c * dc; /* d/dq_k of the sum of squares */
                scale += c * c;
            }
            if (!(moves > 1e-9 * sqrt(scale)) ||
                !(fabs(sum) <= 1e-12 * fmax(scale, 1e-300)))
                continue;
            /* the independent ones of them are the trouble */
            for (size_t i = 0; i < n && (size_t)count < max; i++) {
                if (!coef[i])
                    continue;
                bool indep = false;
                for (size_t j = 0; j < N; j++)
                    indep |= ind[j] == sys->qd[i];
                if (!indep)
                    continue;
                bool seen = false;
                for (long c = 0; c < count; c++)
                    seen |= vel[c] == sys->qd[i];
                if (seen)
                    continue;
                vel[count] = sys->qd[i];
                turn[count] = sys->q[k];
                cons[count] = a;
                count++;
            }
        }
    }
    free(coef);
    free(pos);
done:
    free(A);
    free(d);
    free(cyclic);
    free(cyc_q);
    return count;
}
