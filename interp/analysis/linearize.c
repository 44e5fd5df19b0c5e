/*
 * linearize.c — the motion linearized on the constraint manifold, its
 * eigenvalues and the verdict (linearize.h, LANGUAGE.md §7.2).
 *
 * The equations' state y = (q, w) — w the velocities (lagrange,
 * multipliers, second_kind), the independent velocities (voronec,
 * naive) or the speeds (maggi, gibbs_appell) — moves by y' = f(y) on the
 * manifold Φ(y) = 0 of the constraints that the state does not satisfy
 * by construction: the holonomic f(q) = 0 always, and C(q, q') = 0 (f'
 * for a holonomic f) when w holds every velocity.  Split y into the
 * independent x and the dependent d, Φ_d invertible (the choice of
 * `initial`): on the manifold d = d(x) with dd/dx = −Φ_d⁻¹ Φ_x
 * (implicit differentiation), so y = y(x) has the tangent matrix
 * T = dy/dx (identity rows at x), and the motion in x is
 * x' = P f(y(x)) with P picking x's rows:
 *
 *     A = P · (∂f/∂y) · T.
 *
 * ∂f/∂y · T is computed directly, column by column, as the derivatives of
 * the equations in the directions T's columns (eom_tangent), so the full
 * Jacobian is never formed.  With the holonomic part first: Φ is
 * block-triangular — f depends on q only — so
 *     J_d dq_d = −J_x e_x                    (J = ∂f/∂q)
 *     B_d dv_d = −(Cq dq + B_x e_x)          (Cq = ∂Ceff/∂q, B = ∂Ceff/∂q')
 * for each direction e (a unit vector on one independent variable).
 * At a steady motion the coordinates the equations do not contain have
 * zero columns; at a state that is no equilibrium A is still the
 * Jacobian of the motion there (the eigenvalues say something about
 * stability at equilibria and steady motions, §7.2 and doc/stability.md).
 *
 * Must not: print; change the system.
 */
#include "interp/analysis/linearize.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/linalg.h"
#include "interp/eom/velocity.h"
#include "interp/expr/tape.h"

struct lin {
    const nh_system_t *sys;
    eom_t *e;
    eom_velsolver_t *vs;
    size_t nv;           /* variables of the graph */
    bool all_velocities; /* the state holds every q' (the (q, q') methods) */
    size_t n, r, nh;     /* coordinates, constraints, holonomic ones */

    /* lin_choose */
    size_t *dq, *dv;     /* dependent coordinates, velocities (indices) */
    eom_dependent_t dep;
    uint32_t *ind;       /* independent graph variables, A's order */
    size_t *ind_state;   /* their places in the state */
    size_t nind;
    uint32_t *depvars;   /* dependent graph variables */
    size_t ndep;
    bool chosen;
    /* the constraints' Jacobians at the state of lin_choose, which
     * lin_matrix reads: J = ∂f/∂q (nh×n), Cq = ∂Ceff/∂q, B = ∂Ceff/∂q'
     * (r×n) */
    double *J, *Cq, *B;
};

lin_t *lin_new(const nh_system_t *sys, eom_t *e)
{
    lin_t *l = xcalloc(1, sizeof *l);
    l->sys = sys;
    l->e = e;
    l->vs = eom_velsolver_new(sys);
    l->nv = expr_graph_nvars(sys->g);
    l->n = sys->n;
    l->r = sys->r;
    const size_t *hol;
    l->nh = eom_velsolver_holonomic(l->vs, &hol);
    size_t ns = eom_state_size(e);
    const uint32_t *sv = eom_state_vars(e);
    l->all_velocities = ns == 2 * sys->n;
    for (size_t i = 0; i < sys->n && l->all_velocities; i++)
        l->all_velocities = sv[sys->n + i] == sys->qd[i];
    l->dq = xcalloc(sys->n + 1, sizeof *l->dq);
    l->dv = xcalloc(sys->n + 1, sizeof *l->dv);
    l->ind = xcalloc(ns + 1, sizeof *l->ind);
    l->ind_state = xcalloc(ns + 1, sizeof *l->ind_state);
    l->depvars = xcalloc(2 * sys->n + 1, sizeof *l->depvars);
    l->J = xcalloc(l->nh * sys->n + 1, sizeof *l->J);
    l->Cq = xcalloc(sys->r * sys->n + 1, sizeof *l->Cq);
    l->B = xcalloc(sys->r * sys->n + 1, sizeof *l->B);
    return l;
}

void lin_free(lin_t *l)
{
    if (!l)
        return;
    eom_velsolver_free(l->vs);
    free(l->dq);
    free(l->dv);
    free(l->ind);
    free(l->ind_state);
    free(l->depvars);
    free(l->J);
    free(l->Cq);
    free(l->B);
    free(l);
}

int lin_choose(lin_t *l, const double *vars, const bool *given_q,
               const bool *guess_q, const bool *given_v,
               const bool *guess_v, diag_t *err)
{
    const nh_system_t *sys = l->sys;
    l->chosen = false;
    l->dep = (eom_dependent_t){l->dq, 0, l->dv, 0};
    if (sys->r > 0)
        eom_velsolver_jacobians(l->vs, vars, l->J, l->Cq, l->B);
    if (eom_velsolver_choose_from(l->vs, l->J, l->B, given_q, guess_q,
                                  given_v, guess_v, l->all_velocities,
                                  &l->dep, err) != 0)
        return -1;
    size_t n = sys->n, ns = eom_state_size(l->e);
    const uint32_t *sv = eom_state_vars(l->e);
    bool *dep = xcalloc(l->nv + 1, sizeof *dep);
    l->ndep = 0;
    for (size_t j = 0; j < l->dep.nq; j++) {
        dep[sys->q[l->dq[j]]] = true;
        l->depvars[l->ndep++] = sys->q[l->dq[j]];
    }
    for (size_t j = 0; j < l->dep.nv; j++) {
        dep[sys->qd[l->dv[j]]] = true;
        l->depvars[l->ndep++] = sys->qd[l->dv[j]];
    }
    l->nind = 0;
    for (size_t k = 0; k < ns; k++)
        if (!dep[sv[k]]) {
            l->ind_state[l->nind] = k;
            l->ind[l->nind++] = sv[k];
        }
    (void)n;
    free(dep);
    l->chosen = true;
    return 0;
}

size_t lin_size(const lin_t *l) { return l->nind; }

const uint32_t *lin_vars(const lin_t *l) { return l->ind; }

size_t lin_dependent(const lin_t *l, const uint32_t **vars)
{
    *vars = l->depvars;
    return l->ndep;
}

/* Solves the n×n system A X = B for K right sides (B: n rows of k),
 * A destroyed; -1 when A is singular. */
static int lin_solve(double *a, size_t n, double *b, size_t k)
{
    if (n == 0)
        return 0;
    size_t *perm = xcalloc(n, sizeof *perm);
    double *w = xcalloc(2 * n, sizeof *w);
    int rc = linalg_lu(a, n, perm, LINALG_RTOL);
    if (rc == 0)
        linalg_lu_solve_many(a, n, perm, b, k, w);
    free(perm);
    free(w);
    return rc;
}

/* The derivatives of the motion along T's columns (K = lin_size
 * directions, one per independent variable) and, after them, along NU
 * input directions (LANGUAGE.md §7.2.1: the input seeded, the state's
 * independent variables held, the dependent ones moving as the
 * constraints make them).  Returns DVARS (nv rows of K + NU, the
 * caller frees), or NULL with *err set. */
static double *lin_tangents(lin_t *l, double *vars, size_t nu, diag_t *err)
{
    const nh_system_t *sys = l->sys;
    size_t n = sys->n, r = sys->r, nh = l->nh, K = l->nind + nu;
    size_t nq = l->dep.nq, nvd = l->dep.nv;
    /* Seeds: one direction per independent variable, then per input. */
    double *dvars = xcalloc(l->nv * (K ? K : 1), sizeof *dvars);
    for (size_t j = 0; j < l->nind; j++)
        dvars[(size_t)l->ind[j] * K + j] = 1.0;
    for (size_t u = 0; u < nu; u++)
        dvars[(size_t)sys->in[u] * K + l->nind + u] = 1.0;
    int rc = 0;
    if (r > 0) {
        const double *J = l->J, *Cq = l->Cq, *B = l->B;
        /* How the inputs move the constraints directly: f_u and Ceff_u,
         * zero columns for the state's directions (their seeds are on q
         * and q', which J, Cq and B account for). */
        double *fu = xcalloc(nh * K + 1, sizeof *fu);
        double *cu = xcalloc(r * K + 1, sizeof *cu);
        if (nu > 0) {
            double *du = xcalloc(l->nv * K, sizeof *du);
            for (size_t u = 0; u < nu; u++)
                du[(size_t)sys->in[u] * K + l->nind + u] = 1.0;
            eom_velsolver_tangent(l->vs, vars, du, K, fu, cu);
            free(du);
        }
        /* J_d dq_d = −(J_x e_x + f_u e_u): the independent coordinates'
         * seeds are the columns of the identity, so J_x e_x is J's
         * column. */
        double *Jd = xcalloc(nq * nq + 1, sizeof *Jd);
        double *rq = xcalloc(nq * K + 1, sizeof *rq);
        for (size_t a1 = 0; a1 < nq; a1++) {
            for (size_t b1 = 0; b1 < nq; b1++)
                Jd[a1 * nq + b1] = J[a1 * n + l->dq[b1]];
            for (size_t j = 0; j < K; j++) {
                double s = fu[a1 * K + j];
                for (size_t i = 0; i < n; i++)
                    s += J[a1 * n + i] * dvars[(size_t)sys->q[i] * K + j];
                rq[a1 * K + j] = -s;
            }
        }
        if (nq != nh || lin_solve(Jd, nq, rq, K) != 0)
            rc = diag_error(err, SRC_SPAN_NONE,
                            "the holonomic constraints do not determine the "
                            "dependent coordinates at this state");
        for (size_t b1 = 0; b1 < nq && rc == 0; b1++)
            for (size_t j = 0; j < K; j++)
                dvars[(size_t)sys->q[l->dq[b1]] * K + j] = rq[b1 * K + j];
        /* B_d dv_d = −(Cq dq + B_x e_x + Ceff_u e_u). */
        if (rc == 0 && nvd > 0) {
            double *Bd = xcalloc(nvd * nvd, sizeof *Bd);
            double *rv = xcalloc(nvd * K, sizeof *rv);
            for (size_t a1 = 0; a1 < r; a1++) {
                for (size_t c = 0; c < nvd; c++)
                    Bd[a1 * nvd + c] = B[a1 * n + l->dv[c]];
                for (size_t j = 0; j < K; j++) {
                    double s = cu[a1 * K + j];
                    for (size_t i = 0; i < n; i++)
                        s += Cq[a1 * n + i] *
                                 dvars[(size_t)sys->q[i] * K + j] +
                             B[a1 * n + i] *
                                 dvars[(size_t)sys->qd[i] * K + j];
                    rv[a1 * K + j] = -s;
                }
            }
            if (nvd != r || lin_solve(Bd, nvd, rv, K) != 0)
                rc = diag_error(err, SRC_SPAN_NONE,
                                "the constraints do not determine the "
                                "dependent velocities at this state");
            for (size_t c = 0; c < nvd && rc == 0; c++)
                for (size_t j = 0; j < K; j++)
                    dvars[(size_t)sys->qd[l->dv[c]] * K + j] =
                        rv[c * K + j];
            free(Bd);
            free(rv);
        }
        free(Jd);
        free(rq);
        free(fu);
        free(cu);
    }
    /* The motion's derivatives along those directions. */
    if (rc == 0 && eom_tangent(l->e, vars, dvars, K, err) != 0)
        rc = -1;
    if (rc != 0) {
        free(dvars);
        return NULL;
    }
    return dvars;
}

/* Row I of the derivative of the independent variables' rates (their
 * rows of the motion's derivative, K of KALL directions from FIRST) into
 * OUT, checked finite: the derivative of I's rate by the direction
 * NAMES[j] is not finite is an error. */
static int lin_rows(const lin_t *l, const double *dvars, size_t kall,
                    size_t first, size_t k, const uint32_t *names,
                    double *out, diag_t *err)
{
    const uint32_t *deriv = eom_state_derivs(l->e);
    for (size_t i = 0; i < l->nind; i++) {
        const double *row = dvars + (size_t)deriv[l->ind_state[i]] * kall;
        for (size_t j = 0; j < k; j++) {
            double x = row[first + j];
            out[i * k + j] = x == 0 ? 0.0 : x;
            if (!isfinite(x))
                return diag_error(err, SRC_SPAN_NONE,
                                  "the derivative of %s' by %s is not "
                                  "finite: the equations are not "
                                  "differentiable here",
                                  expr_var_name(l->sys->g, l->ind[i]),
                                  expr_var_name(l->sys->g, names[j]));
        }
    }
    return 0;
}

int lin_matrix(lin_t *l, double *vars, double *a, diag_t *err)
{
    double *dvars = lin_tangents(l, vars, 0, err);
    if (!dvars)
        return -1;
    int rc = lin_rows(l, dvars, l->nind, 0, l->nind, l->ind, a, err);
    free(dvars);
    return rc;
}

int lin_io(lin_t *l, double *vars, const expr_t *const *h,
           const char *const *hname, size_t nh, double *a, double *b,
           double *c, double *d, diag_t *err)
{
    const nh_system_t *sys = l->sys;
    size_t ni = sys->ni, N = l->nind, K = N + ni;
    double *dvars = lin_tangents(l, vars, ni, err);
    if (!dvars)
        return -1;
    int rc = lin_rows(l, dvars, K, 0, N, l->ind, a, err);
    if (rc == 0)
        rc = lin_rows(l, dvars, K, N, ni, sys->in, b, err);
    if (rc == 0 && nh > 0) {
        /* The outputs' derivatives along the same directions: their
         * tape reads the completed value vector (the derived velocities
         * and the accelerations included) and its derivatives. */
        tape_t *t = tape_compile(sys->g, h, nh, (uint32_t)l->nv);
        double *out = xcalloc(nh + 1, sizeof *out);
        double *dout = xcalloc(nh * K + 1, sizeof *dout);
        double *w = xcalloc(tape_work_size(t) + 1, sizeof *w);
        double *dw = xcalloc((tape_work_size(t) + 1) * (K ? K : 1),
                             sizeof *dw);
        tape_eval_tangent(t, vars, dvars, K, out, dout, w, dw);
        for (size_t o = 0; o < nh && rc == 0; o++)
            for (size_t j = 0; j < K && rc == 0; j++) {
                double x = dout[o * K + j];
                if (!isfinite(x) || !isfinite(out[o]))
                    rc = diag_error(err, SRC_SPAN_NONE,
                                    "output %s or its derivative by %s is "
                                    "not finite",
                                    hname[o],
                                    expr_var_name(sys->g,
                                                  j < N ? l->ind[j]
                                                        : sys->in[j - N]));
                else if (j < N)
                    c[o * N + j] = x == 0 ? 0.0 : x;
                else
                    d[o * ni + j - N] = x == 0 ? 0.0 : x;
            }
        free(out);
        free(dout);
        free(w);
        free(dw);
        tape_free(t);
    }
    free(dvars);
    return rc;
}

void lin_rates(const lin_t *l, const double *vars, double *rate)
{
    const uint32_t *deriv = eom_state_derivs(l->e);
    for (size_t i = 0; i < l->nind; i++)
        rate[i] = vars[deriv[l->ind_state[i]]];
}

bool lin_time_dependent(const lin_t *l)
{
    const nh_system_t *sys = l->sys;
    expr_graph_t *g = sys->g;
    bool t = expr_depends(g, sys->L, sys->t);
    for (size_t i = 0; i < sys->n && !t; i++)
        t = expr_depends(g, sys->Q[i], sys->t) ||
            (sys->psi && sys->psi[i] && expr_depends(g, sys->psi[i], sys->t));
    for (size_t a = 0; a < sys->r && !t; a++)
        t = expr_depends(g, sys->C[a], sys->t);
    return t;
}

/* ---- eigenvalues ------------------------------------------------------ */

/* §7.2's order: decreasing real part, then decreasing imaginary part. */
static int lin_order(const void *pa, const void *pb)
{
    const double *a = pa, *b = pb;
    if (a[0] != b[0])
        return a[0] > b[0] ? -1 : 1;
    if (a[1] != b[1])
        return a[1] > b[1] ? -1 : 1;
    return 0;
}

/* Within a group of equal real parts: decreasing imaginary part, then
 * decreasing real part. */
static int lin_order_imag(const void *pa, const void *pb)
{
    const double *a = pa, *b = pb;
    if (a[1] != b[1])
        return a[1] > b[1] ? -1 : 1;
    if (a[0] != b[0])
        return a[0] > b[0] ? -1 : 1;
    return 0;
}

/* PAIR (N (re, im) pairs, sorted by lin_order) with real parts that are
 * equal to within TOL taken as equal: a run of them, each within TOL of
 * the next or both on the imaginary axis (|re| <= TOL, as lin_classify
 * says), is ordered by the imaginary part.  Rounding moves a real part
 * that is 0 in exact arithmetic by up to √ε·|A| (a Jordan block), and
 * the order must not follow that noise (doc/stability.md). */
static void lin_order_groups(double *pair, size_t n, double tol)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n) {
            double a = pair[2 * (j - 1)], b = pair[2 * j];
            if (!(a - b <= tol || (fabs(a) <= tol && fabs(b) <= tol)))
                break;
            j++;
        }
        qsort(pair + 2 * i, j - i, 2 * sizeof *pair, lin_order_imag);
        i = j;
    }
}

int lin_eigen(const double *a, size_t n, double *re, double *im)
{
    if (n == 0)
        return 0;
    gsl_matrix *m = gsl_matrix_alloc(n, n);
    gsl_vector_complex *ev = gsl_vector_complex_alloc(n);
    gsl_matrix_complex *vec = gsl_matrix_complex_alloc(n, n);
    gsl_eigen_nonsymmv_workspace *w = gsl_eigen_nonsymmv_alloc(n);
    if (!m || !ev || !vec || !w)
        abort(); /* out of memory: the one fatal case */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            gsl_matrix_set(m, i, j, a[i * n + j]);
    int rc = gsl_eigen_nonsymmv(m, ev, vec, w) == GSL_SUCCESS ? 0 : -1;
    double *pair = xcalloc(2 * n, sizeof *pair);
    for (size_t i = 0; i < n && rc == 0; i++) {
        gsl_complex z = gsl_vector_complex_get(ev, i);
        /* -0 reads as 0 */
        pair[2 * i] = GSL_REAL(z) == 0 ? 0.0 : GSL_REAL(z);
        pair[2 * i + 1] = GSL_IMAG(z) == 0 ? 0.0 : GSL_IMAG(z);
    }
    if (rc == 0) {
        double scale = 0;
        for (size_t k = 0; k < n * n; k++)
            scale = fmax(scale, fabs(a[k]));
        qsort(pair, n, 2 * sizeof *pair, lin_order);
        lin_order_groups(pair, n, LIN_AXIS_RTOL * fmax(1.0, scale));
        for (size_t i = 0; i < n; i++) {
            re[i] = pair[2 * i];
            im[i] = pair[2 * i + 1];
        }
    }
    free(pair);
    gsl_eigen_nonsymmv_free(w);
    gsl_matrix_complex_free(vec);
    gsl_vector_complex_free(ev);
    gsl_matrix_free(m);
    return rc;
}

lin_verdict_t lin_classify(const double *re, size_t n, double scale,
                           bool *one)
{
    double tol = LIN_AXIS_RTOL * fmax(1.0, scale);
    bool positive = false, axis = false;
    for (size_t i = 0; i < n; i++) {
        positive |= re[i] > tol;
        axis |= fabs(re[i]) <= tol;
    }
    for (size_t i = 0; i < n; i++)
        one[i] = positive ? re[i] > tol : fabs(re[i]) <= tol;
    return positive ? LIN_UNSTABLE : axis ? LIN_NEITHER : LIN_STABLE;
}
