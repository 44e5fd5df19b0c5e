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
#include "interp/expr/tape.h"
#include "interp/eom/velocity.h"

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
    /* lin_matrix's buffers, sized by lin_choose, so that lin_matrix_at
     * allocates nothing: the seeds (variables × directions), the
     * dependent blocks and their right sides, the solves' scratch, and
     * the Jacobians at lin_matrix_at's state */
    double *dvars, *Jd, *rq, *Bd, *rv, *lw;
    size_t *perm;
    double *Jat, *Cqat, *Bat;
    /* how well the dependent variables are determined at the state of
     * the last lin_matrix (lin_chart_quality) */
    double quality;
    /* The coordinates nothing of the motion reads (L, Q, C, ψ): their
     * columns of A are zero at every state, so lin_matrix seeds no
     * direction for them (the bicycle's x, y, heading and wheel angles:
     * half its independent variables).  CYCLIC has n entries; DIR lists
     * the independent variables (indices into ind) that get a direction,
     * NDIR of them. */
    bool *cyclic;
    size_t *dir, ndir;
    uint32_t *seedvar; /* the graph variable of each direction: ind[dir[d]] */
    /* lin_seed_dirs' scratch: a row's nonzero entries and the places of
     * their variables' seeds (2n each) */
    double *nzf;
    size_t *nzr;
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
    l->Jat = xcalloc(l->nh * sys->n + 1, sizeof *l->Jat);
    l->Cqat = xcalloc(sys->r * sys->n + 1, sizeof *l->Cqat);
    l->Bat = xcalloc(sys->r * sys->n + 1, sizeof *l->Bat);
    l->dir = xcalloc(ns + 1, sizeof *l->dir);
    l->seedvar = xcalloc(ns + 1, sizeof *l->seedvar);
    /* the coordinates the motion does not read: those no tape of L, Q,
     * C and ψ takes as input */
    size_t nout = 0, n = sys->n;
    const expr_t **outs = xcalloc(2 * n + sys->r + 1, sizeof *outs);
    outs[nout++] = sys->L;
    for (size_t i = 0; i < n; i++)
        outs[nout++] = sys->Q[i];
    for (size_t a = 0; a < sys->r; a++)
        outs[nout++] = sys->C[a];
    for (size_t i = 0; sys->psi && i < n; i++)
        if (sys->psi[i])
            outs[nout++] = sys->psi[i];
    tape_t *tp = tape_compile(sys->g, outs, nout, l->nv);
    bool *read = xcalloc(l->nv + 1, sizeof *read);
    size_t nin;
    const uint32_t *in = tape_inputs(tp, &nin);
    for (size_t k = 0; k < nin; k++)
        read[in[k]] = true;
    l->cyclic = xcalloc(n + 1, sizeof *l->cyclic);
    for (size_t i = 0; i < n; i++)
        l->cyclic[i] = !read[sys->q[i]];
    free(read);
    tape_free(tp);
    free(outs);
    l->nzf = xcalloc(2 * n + 1, sizeof *l->nzf);
    l->nzr = xcalloc(2 * n + 1, sizeof *l->nzr);
    return l;
}

static void lin_free_buffers(lin_t *l)
{
    free(l->dvars);
    free(l->Jd);
    free(l->rq);
    free(l->Bd);
    free(l->rv);
    free(l->lw);
    free(l->perm);
    l->dvars = l->Jd = l->rq = l->Bd = l->rv = l->lw = NULL;
    l->perm = NULL;
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
    free(l->Jat);
    free(l->Cqat);
    free(l->Bat);
    free(l->cyclic);
    free(l->dir);
    free(l->seedvar);
    free(l->nzf);
    free(l->nzr);
    lin_free_buffers(l);
    free(l);
}

/* The dependent graph variables and the independent ones (with their
 * places in the state) from the choice in l->dep. */
static void lin_set_dependent(lin_t *l)
{
    const nh_system_t *sys = l->sys;
    size_t ns = eom_state_size(l->e);
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
    free(dep);
    l->ndir = 0;
    for (size_t j = 0; j < l->nind; j++) {
        bool cyc = false;
        for (size_t i = 0; i < sys->n && !cyc; i++)
            cyc = l->ind[j] == sys->q[i] && l->cyclic[i];
        if (!cyc) {
            l->seedvar[l->ndir] = l->ind[j];
            l->dir[l->ndir++] = j;
        }
    }
}

int lin_choose(lin_t *l, const double *vars, const bool *given_q,
               const bool *guess_q, const bool *given_v,
               const bool *guess_v, diag_t *err)
{
    const nh_system_t *sys = l->sys;
    l->chosen = false;
    l->dep = (eom_dependent_t){l->dq, 0, l->dv, 0};
    if (sys->r > 0)
        eom_velsolver_jacobians(l->vs, l->e, vars, l->J, l->Cq, l->B);
    if (eom_velsolver_choose_from(l->vs, l->J, l->B, given_q, guess_q,
                                  given_v, guess_v, l->all_velocities,
                                  &l->dep, err) != 0)
        return -1;
    lin_set_dependent(l);
    /* lin_matrix's buffers for this choice */
    size_t K = l->nind ? l->nind : 1, nq = l->dep.nq, nvd = l->dep.nv;
    size_t big = (nq > nvd ? nq : nvd) + 1;
    lin_free_buffers(l);
    l->dvars = xcalloc(l->nv * K + 1, sizeof *l->dvars);
    l->Jd = xcalloc(nq * nq + 1, sizeof *l->Jd);
    l->rq = xcalloc(nq * K + 1, sizeof *l->rq);
    l->Bd = xcalloc(nvd * nvd + 1, sizeof *l->Bd);
    l->rv = xcalloc(nvd * K + 1, sizeof *l->rv);
    l->lw = xcalloc(2 * big, sizeof *l->lw);
    l->perm = xcalloc(big, sizeof *l->perm);
    eom_tangent_reserve(l->e, K);
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
 * A destroyed, with the scratch of lin_choose; -1 when A is singular. */
static int lin_solve(lin_t *l, double *a, size_t n, double *b, size_t k)
{
    if (n == 0)
        return 0;
    int rc = linalg_lu(a, n, l->perm, LINALG_RTOL);
    if (rc == 0)
        linalg_lu_solve_many(a, n, l->perm, b, k, l->lw);
    return rc;
}

/* How well the LU factors of an M×M block (in place, linalg_lu's: 1/U_kk
 * on the diagonal) of rows scaled to a unit sum of magnitudes over all
 * the variables determine it: its smallest pivot (1 for an empty block),
 * about the block's smallest singular value relative to its rows. */
static double lin_block_quality(const double *lu, size_t m)
{
    double piv = 1.0;
    for (size_t i = 0; i < m; i++)
        piv = fmin(piv, 1.0 / fabs(lu[i * m + i]));
    return piv;
}

/* The sum of magnitudes of row A of the matrix M (N columns); 1 for a
 * zero row. */
static double lin_row_scale(const double *M, size_t a, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += fabs(M[a * n + i]);
    return s > 0 ? s : 1.0;
}

/* Seeds in DVARS (a row of K per graph variable): direction d on the
 * graph variable SEED[d] (independent variables, and the inputs of
 * lin_io), the dependent variables following by the constraints (J, Cq,
 * B at the state):
 *     J_d dq_d = −(J_x e_x + f_u e_u)
 *     B_d dv_d = −(Cq dq + B_x e_x + Ceff_u e_u)
 * with FU (nh×K) and CU (r×K) the constraints' direct derivatives along
 * the directions (an input's, LANGUAGE.md §7.2.1; NULL: none).  JD, RQ,
 * BD, RV are the blocks' buffers, sized for K; *QUALITY receives how
 * well the blocks are determined (lin_chart_quality). */
static int lin_seed_dirs(lin_t *l, const double *J, const double *Cq,
                         const double *B, double *dvars, size_t K,
                         const uint32_t *seed, const double *fu,
                         const double *cu, double *Jd, double *rq,
                         double *Bd, double *rv, double *quality,
                         diag_t *err)
{
    const nh_system_t *sys = l->sys;
    size_t n = sys->n, r = sys->r, nh = l->nh;
    size_t nq = l->dep.nq, nvd = l->dep.nv;
    memset(dvars, 0, l->nv * (K ? K : 1) * sizeof *dvars);
    for (size_t j = 0; j < K; j++)
        dvars[(size_t)seed[j] * K + j] = 1.0;
    int rc = 0;
    *quality = 1.0;
    if (r > 0) {
        /* The independent coordinates' seeds are the columns of the
         * identity, so J_x e_x is J's column.  (Each row scaled by its
         * size: the pivots then say how well the block is determined,
         * lin_chart_quality; each sum over the row's nonzero entries, in
         * order.) */
        for (size_t a1 = 0; a1 < nq; a1++) {
            double sc = 1.0 / lin_row_scale(J, a1, n);
            for (size_t b1 = 0; b1 < nq; b1++)
                Jd[a1 * nq + b1] = sc * J[a1 * n + l->dq[b1]];
            size_t nz = 0;
            for (size_t i = 0; i < n; i++)
                if (J[a1 * n + i] != 0) {
                    l->nzf[nz] = J[a1 * n + i];
                    l->nzr[nz++] = (size_t)sys->q[i] * K;
                }
            for (size_t j = 0; j < K; j++) {
                double s = fu ? fu[a1 * K + j] : 0.0;
                for (size_t p = 0; p < nz; p++)
                    s += l->nzf[p] * dvars[l->nzr[p] + j];
                rq[a1 * K + j] = -sc * s;
            }
        }
        if (nq != nh || lin_solve(l, Jd, nq, rq, K) != 0)
            rc = diag_error(err, SRC_SPAN_NONE,
                            "the holonomic constraints do not determine the "
                            "dependent coordinates at this state");
        else
            *quality = lin_block_quality(Jd, nq);
        for (size_t b1 = 0; b1 < nq && rc == 0; b1++)
            for (size_t j = 0; j < K; j++)
                dvars[(size_t)sys->q[l->dq[b1]] * K + j] = rq[b1 * K + j];
        if (rc == 0 && nvd > 0) {
            for (size_t a1 = 0; a1 < r; a1++) {
                double sc = 1.0 / lin_row_scale(B, a1, n);
                for (size_t c = 0; c < nvd; c++)
                    Bd[a1 * nvd + c] = sc * B[a1 * n + l->dv[c]];
                size_t nz = 0;
                for (size_t i = 0; i < n; i++)
                    if (Cq[a1 * n + i] != 0 || B[a1 * n + i] != 0) {
                        l->nzf[2 * nz] = Cq[a1 * n + i];
                        l->nzf[2 * nz + 1] = B[a1 * n + i];
                        l->nzr[2 * nz] = (size_t)sys->q[i] * K;
                        l->nzr[2 * nz + 1] = (size_t)sys->qd[i] * K;
                        nz++;
                    }
                for (size_t j = 0; j < K; j++) {
                    double s = cu ? cu[a1 * K + j] : 0.0;
                    for (size_t p = 0; p < nz; p++)
                        s += l->nzf[2 * p] * dvars[l->nzr[2 * p] + j] +
                             l->nzf[2 * p + 1] * dvars[l->nzr[2 * p + 1] + j];
                    rv[a1 * K + j] = -sc * s;
                }
            }
            if (nvd != r || lin_solve(l, Bd, nvd, rv, K) != 0)
                rc = diag_error(err, SRC_SPAN_NONE,
                                "the constraints do not determine the "
                                "dependent velocities at this state");
            else
                *quality = fmin(*quality, lin_block_quality(Bd, nvd));
            for (size_t c = 0; c < nvd && rc == 0; c++)
                for (size_t j = 0; j < K; j++)
                    dvars[(size_t)sys->qd[l->dv[c]] * K + j] =
                        rv[c * K + j];
        }
    }
    return rc;
}

/* The seeds of lin_matrix in l->dvars: one direction per independent
 * variable that is not cyclic (l->dir), the dependent ones following by
 * the constraints (J, Cq, B at the state), and l->quality of the
 * dependent blocks.  Allocates nothing (lin_choose's buffers). */
static int lin_seeds(lin_t *l, const double *J, const double *Cq,
                     const double *B, diag_t *err)
{
    return lin_seed_dirs(l, J, Cq, B, l->dvars, l->ndir, l->seedvar, NULL,
                         NULL, l->Jd, l->rq, l->Bd, l->rv, &l->quality, err);
}

/* lin_matrix with the constraints' Jacobians J, Cq, B at VARS. */
static int lin_matrix_with(lin_t *l, double *vars, const double *J,
                           const double *Cq, const double *B, double *a,
                           diag_t *err)
{
    size_t N = l->nind, K = l->ndir;
    double *dvars = l->dvars;
    int rc = lin_seeds(l, J, Cq, B, err);
    /* The motion's derivatives along T's columns; A's row i is the
     * derivative of independent variable i's rate (the columns of the
     * cyclic coordinates are 0). */
    if (rc == 0 && eom_tangent(l->e, vars, dvars, K, err) != 0)
        rc = -1;
    if (rc == 0) {
        const uint32_t *deriv = eom_state_derivs(l->e);
        memset(a, 0, N * N * sizeof *a);
        for (size_t i = 0; i < N; i++) {
            const double *row = dvars + (size_t)deriv[l->ind_state[i]] * K;
            for (size_t d = 0; d < K && rc == 0; d++) {
                size_t j = l->dir[d];
                a[i * N + j] = row[d] == 0 ? 0.0 : row[d];
                if (!isfinite(row[d]))
                    rc = diag_error(err, SRC_SPAN_NONE,
                                    "the derivative of %s' by %s is not "
                                    "finite: the equations are not "
                                    "differentiable here",
                                    expr_var_name(l->sys->g, l->ind[i]),
                                    expr_var_name(l->sys->g, l->ind[j]));
            }
        }
    }
    return rc;
}

int lin_matrix(lin_t *l, double *vars, double *a, diag_t *err)
{
    return lin_matrix_with(l, vars, l->J, l->Cq, l->B, a, err);
}

int lin_matrix_at(lin_t *l, double *vars, double *a, diag_t *err)
{
    if (l->sys->r > 0)
        eom_velsolver_jacobians(l->vs, l->e, vars, l->Jat, l->Cqat, l->Bat);
    return lin_matrix_with(l, vars, l->Jat, l->Cqat, l->Bat, a, err);
}

/* Row I of the derivatives of the independent variables' rates (their
 * rows of the motion's derivative, K of KALL directions from FIRST) into
 * OUT, checked finite: a derivative of I's rate by the direction NAMES[j]
 * that is not finite is an error. */
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

/* LANGUAGE.md §7.2.1.  Every independent variable gets a direction here,
 * the cyclic ones too (an output may read a coordinate the motion does
 * not: the bicycle's heading), then one per input; the inputs' direct
 * effect on the constraints (f_u, Ceff_u: eom_velsolver_pos_tangent and
 * _vel_tangent with only the inputs seeded) enters the dependent
 * variables' tangents. */
int lin_io(lin_t *l, double *vars, const expr_t *const *h,
           const char *const *hname, size_t nh, double *a, double *b,
           double *c, double *d, diag_t *err)
{
    const nh_system_t *sys = l->sys;
    size_t ni = sys->ni, N = l->nind, K = N + ni, nhol = l->nh;
    size_t nq = l->dep.nq, nvd = l->dep.nv;
    uint32_t *seed = xcalloc(K + 1, sizeof *seed);
    memcpy(seed, l->ind, N * sizeof *seed);
    for (size_t u = 0; u < ni; u++)
        seed[N + u] = sys->in[u];
    double *dvars = xcalloc(l->nv * K + 1, sizeof *dvars);
    double *fu = xcalloc(nhol * K + 1, sizeof *fu);
    double *cu = xcalloc(sys->r * K + 1, sizeof *cu);
    double *Jd = xcalloc(nq * nq + 1, sizeof *Jd);
    double *rq = xcalloc(nq * K + 1, sizeof *rq);
    double *Bd = xcalloc(nvd * nvd + 1, sizeof *Bd);
    double *rv = xcalloc(nvd * K + 1, sizeof *rv);
    if (ni > 0 && sys->r > 0) {
        for (size_t u = 0; u < ni; u++)
            dvars[(size_t)sys->in[u] * K + N + u] = 1.0;
        eom_velsolver_pos_tangent(l->vs, vars, dvars, K, NULL, NULL, fu);
        eom_velsolver_vel_tangent(l->vs, vars, dvars, K, NULL, NULL, cu);
    }
    double quality;
    int rc = lin_seed_dirs(l, l->J, l->Cq, l->B, dvars, K, seed, fu, cu, Jd,
                           rq, Bd, rv, &quality, err);
    if (rc == 0 && eom_tangent(l->e, vars, dvars, K, err) != 0)
        rc = -1;
    if (rc == 0)
        rc = lin_rows(l, dvars, K, 0, N, l->ind, a, err);
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
                                    hname[o], expr_var_name(sys->g, seed[j]));
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
    free(seed);
    free(dvars);
    free(fu);
    free(cu);
    free(Jd);
    free(rq);
    free(Bd);
    free(rv);
    return rc;
}

double lin_chart_quality(const lin_t *l) { return l->quality; }

/* lin_rechoose keeps a new choice only when it determines the dependent
 * variables this many times better (lin_chart_quality). */
#define LIN_RECHOOSE_GAIN 4.0

/* The ROWS columns of the rows×n matrix A that a QR factorisation with
 * column pivoting takes first — each time the column farthest from the
 * span of those taken (Businger & Golub 1965) — into SEL, in increasing
 * order; their count (fewer when A's rank is). */
static size_t lin_pivot_columns(const double *A, size_t rows, size_t n,
                                size_t *sel)
{
    double *W = xcalloc(rows * n + 1, sizeof *W);
    bool *taken = xcalloc(n + 1, sizeof *taken);
    memcpy(W, A, rows * n * sizeof *W);
    size_t k = 0;
    for (; k < rows; k++) {
        size_t best = n;
        double bn = 0.0;
        for (size_t c = 0; c < n; c++) {
            double s = 0.0;
            for (size_t a = 0; a < rows; a++)
                s += W[a * n + c] * W[a * n + c];
            if (!taken[c] && s > bn) {
                bn = s;
                best = c;
            }
        }
        if (best == n)
            break;
        taken[best] = true;
        sel[k] = best;
        double nb = sqrt(bn);
        for (size_t c = 0; c < n; c++) {
            if (taken[c])
                continue;
            double d = 0.0;
            for (size_t a = 0; a < rows; a++)
                d += W[a * n + best] * W[a * n + c];
            for (size_t a = 0; a < rows; a++)
                W[a * n + c] -= d / (nb * nb) * W[a * n + best];
        }
    }
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && sel[j - 1] > sel[j]; j--) {
            size_t t = sel[j];
            sel[j] = sel[j - 1];
            sel[j - 1] = t;
        }
    free(W);
    free(taken);
    return k;
}

int lin_rechoose(lin_t *l, double *vars, double *change, bool *changed,
                 diag_t *err)
{
    const nh_system_t *sys = l->sys;
    size_t n = sys->n, r = sys->r, N = l->nind, ns = eom_state_size(l->e);
    *changed = false;
    if (r == 0)
        return 0;
    eom_velsolver_jacobians(l->vs, l->e, vars, l->Jat, l->Cqat, l->Bat);
    /* the state's derivatives along the old independent variables */
    if (lin_seeds(l, l->Jat, l->Cqat, l->Bat, err) != 0)
        return -1;
    /* (a cyclic coordinate's direction moves it alone) */
    const uint32_t *sv = eom_state_vars(l->e);
    double *T = xcalloc(ns * N + 1, sizeof *T);
    size_t K = l->ndir;
    for (size_t k = 0; k < ns; k++)
        for (size_t d = 0; d < K; d++)
            T[k * N + l->dir[d]] = l->dvars[(size_t)sv[k] * K + d];
    for (size_t j = 0, d = 0; j < N; j++) {
        if (d < K && l->dir[d] == j) {
            d++;
            continue;
        }
        T[l->ind_state[j] * N + j] = 1.0;
    }
    size_t *dq = xcalloc(n + 1, sizeof *dq), *dv = xcalloc(n + 1, sizeof *dv);
    size_t nq = lin_pivot_columns(l->Jat, l->nh, n, dq);
    size_t nvd = l->dep.nv ? lin_pivot_columns(l->Bat, r, n, dv) : 0;
    int rc = 0;
    if (nq != l->dep.nq || nvd != l->dep.nv)
        rc = diag_error(err, SRC_SPAN_NONE,
                        "the constraints are not independent at this "
                        "state");
    bool same = rc == 0 &&
                memcmp(dq, l->dq, nq * sizeof *dq) == 0 &&
                memcmp(dv, l->dv, nvd * sizeof *dv) == 0;
    if (rc == 0 && !same) {
        /* the new choice, kept only when it is clearly better: a choice
         * that is merely other would change the variables for nothing */
        double old = l->quality;
        size_t *oq = xcalloc(n + 1, sizeof *oq), *ov = xcalloc(n + 1, sizeof *ov);
        memcpy(oq, l->dq, nq * sizeof *oq);
        memcpy(ov, l->dv, nvd * sizeof *ov);
        memcpy(l->dq, dq, nq * sizeof *dq);
        memcpy(l->dv, dv, nvd * sizeof *dv);
        lin_set_dependent(l);
        diag_t d = {0};
        if (lin_seeds(l, l->Jat, l->Cqat, l->Bat, &d) == 0 &&
            l->quality > LIN_RECHOOSE_GAIN * old) {
            for (size_t i = 0; i < N; i++)
                memcpy(change + i * N, T + l->ind_state[i] * N,
                       N * sizeof *change);
            *changed = true;
        } else {
            memcpy(l->dq, oq, nq * sizeof *oq);
            memcpy(l->dv, ov, nvd * sizeof *ov);
            lin_set_dependent(l);
            l->quality = old;
        }
        free(oq);
        free(ov);
    }
    free(T);
    free(dq);
    free(dv);
    return rc;
}

int lin_directions(lin_t *l, double *vars, double *dvars, size_t k,
                   double *rates, diag_t *err)
{
    const nh_system_t *sys = l->sys;
    size_t n = sys->n, r = sys->r, nh = l->nh, K = k;
    size_t nq = l->dep.nq, nvd = l->dep.nv, ns = eom_state_size(l->e);
    const uint32_t *sv = eom_state_vars(l->e);
    /* Only the inputs keep their rows: the state (dependent variables
     * cleared below), the parameters and t. */
    bool *input = xcalloc(l->nv + 1, sizeof *input);
    for (size_t j = 0; j < ns; j++)
        input[sv[j]] = true;
    for (size_t j = 0; j < sys->np; j++)
        input[sys->p[j]] = true;
    input[sys->t] = true;
    for (size_t j = 0; j < l->ndep; j++)
        input[l->depvars[j]] = false;
    for (size_t v = 0; v < l->nv; v++)
        if (!input[v])
            memset(dvars + v * K, 0, K * sizeof *dvars);
    free(input);
    int rc = 0;
    if (K > 0 && nq > 0) {
        /* J_d dq_d = −df, df the holonomic constraints' derivative
         * along the direction with dq_d = 0. */
        double *J = xcalloc(nh * n + 1, sizeof *J);
        double *df = xcalloc(nh * K + 1, sizeof *df);
        double *Jd = xcalloc(nq * nq + 1, sizeof *Jd);
        eom_velsolver_pos_tangent(l->vs, vars, dvars, K, NULL, J, df);
        for (size_t a = 0; a < nq; a++) {
            for (size_t b = 0; b < nq; b++)
                Jd[a * nq + b] = J[a * n + l->dq[b]];
            for (size_t j = 0; j < K; j++)
                df[a * K + j] = -df[a * K + j];
        }
        if (nq != nh || lin_solve(l, Jd, nq, df, K) != 0)
            rc = diag_error(err, SRC_SPAN_NONE,
                            "the holonomic constraints do not determine the "
                            "dependent coordinates at this state");
        for (size_t b = 0; b < nq && rc == 0; b++)
            memcpy(dvars + (size_t)sys->q[l->dq[b]] * K, df + b * K,
                   K * sizeof *dvars);
        free(J);
        free(df);
        free(Jd);
    }
    if (rc == 0 && K > 0 && nvd > 0) {
        /* B_d dv_d = −dCeff, with dq complete and dv_d = 0. */
        double *B = xcalloc(r * n + 1, sizeof *B);
        double *dc = xcalloc(r * K + 1, sizeof *dc);
        double *Bd = xcalloc(nvd * nvd + 1, sizeof *Bd);
        eom_velsolver_vel_tangent(l->vs, vars, dvars, K, NULL, B, dc);
        for (size_t a = 0; a < r; a++) {
            for (size_t c = 0; c < nvd && a < nvd; c++)
                Bd[a * nvd + c] = B[a * n + l->dv[c]];
            for (size_t j = 0; j < K; j++)
                dc[a * K + j] = -dc[a * K + j];
        }
        if (nvd != r || lin_solve(l, Bd, nvd, dc, K) != 0)
            rc = diag_error(err, SRC_SPAN_NONE,
                            "the constraints do not determine the "
                            "dependent velocities at this state");
        for (size_t c = 0; c < nvd && rc == 0; c++)
            memcpy(dvars + (size_t)sys->qd[l->dv[c]] * K, dc + c * K,
                   K * sizeof *dvars);
        free(B);
        free(dc);
        free(Bd);
    }
    if (rc == 0 && eom_tangent(l->e, vars, dvars, K, err) != 0)
        rc = -1;
    if (rc == 0) {
        const uint32_t *deriv = eom_state_derivs(l->e);
        for (size_t i = 0; i < l->nind; i++) {
            const double *row = dvars + (size_t)deriv[l->ind_state[i]] * K;
            for (size_t j = 0; j < K && rc == 0; j++) {
                rates[i * K + j] = row[j] == 0 ? 0.0 : row[j];
                if (!isfinite(row[j]))
                    rc = diag_error(err, SRC_SPAN_NONE,
                                    "the derivative of %s' is not finite: "
                                    "the equations are not differentiable "
                                    "here",
                                    expr_var_name(sys->g, l->ind[i]));
            }
        }
    }
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
        nh_out_of_memory();
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
