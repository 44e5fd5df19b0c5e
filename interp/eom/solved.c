/*
 * solved.c — the accelerations of the chosen equations solved
 * symbolically, for `show accel`, `show x''` and any `show` of an
 * expression that holds accelerations (LANGUAGE.md §7.1; eom.h
 * eom_solved).
 *
 * Every method is a linear system in its unknowns, with coefficients
 * that are functions of the state; its rows, as `show eom` prints them
 * (row = left - right), are read off for the matrix A_ij = ∂row_i/∂y_j
 * and the right side b_i = -row_i at y = 0, in the display graph, and
 * simp_solve solves them:
 *   lagrange                  Σ_j M_ij q_j'' + h_i = 0           y = q''
 *   multipliers, second_kind  M q'' + h - Bᵀλ = 0, B q'' + c = 0  y = (q'', λ)
 *   voronec, naive            the reduced rows (Lemos eqs. 8-11)  y = q''_ind
 *   maggi, gibbs_appell       Σ_b G_ab z_b' = rhs_a               y = z'
 * The accelerations that are not unknowns follow from the solved ones:
 * a dependent coordinate of voronec as d/dt Σ_j a_νj q_j' (its velocity
 * row), and every coordinate of maggi as d/dt ψ_i(q, z, t) along q' = ψ
 * (Benenti eq. 22: q'' = β + Ψ z').
 *
 * Must not: change the eom_t or its system (the rows are built in the
 * system's graph as the describers build them; nothing reaches a tape).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/eom/common.h"
#include "interp/expr/simplify.h"

/* The rows (left - right, system's graph) and unknowns of E's linear
 * system; *N rows.  Arrays malloc'ed. */
static void solved_system(const eom_t *e, const expr_t ***rows,
                          uint32_t **unk, size_t *n)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t nq = sys->n, r = sys->r;
    const expr_t **row = NULL;
    uint32_t *y = NULL;
    size_t k = 0;
    switch (e->method) {
    case EOM_LAGRANGE:
    case EOM_MULTIPLIERS:
    case EOM_SECOND_KIND: {
        bool lam = e->method != EOM_LAGRANGE;
        size_t rr = lam ? r : 0;
        row = eom_alloc(nq + rr + 1, sizeof *row);
        y = eom_alloc(nq + rr + 1, sizeof *y);
        for (size_t i = 0; i < nq; i++) {
            const expr_t *s = e->d.h[i];
            for (size_t j = 0; j < nq; j++)
                s = expr_add(g, s, expr_mul(g, e->d.M[i * nq + j],
                                            expr_var(g, sys->qdd[j])));
            for (size_t a = 0; a < rr; a++)
                s = expr_sub(g, s, expr_mul(g, expr_var(g, sys->lam[a]),
                                            e->d.B[a * nq + i]));
            row[k] = s;
            y[k++] = sys->qdd[i];
        }
        for (size_t a = 0; a < rr; a++) {
            const expr_t *s = e->d.c[a];
            for (size_t i = 0; i < nq; i++)
                s = expr_add(g, s, expr_mul(g, e->d.B[a * nq + i],
                                            expr_var(g, sys->qdd[i])));
            row[k] = s;
            y[k++] = sys->lam[a];
        }
        break;
    }
    case EOM_VORONEC:
    case EOM_NAIVE:
        row = eom_alloc(e->mi + 1, sizeof *row);
        y = eom_alloc(e->mi + 1, sizeof *y);
        for (size_t i = 0; i < e->mi; i++) {
            row[k] = expr_sub(g, e->rowl[i], e->rowr[i]);
            y[k++] = sys->qdd[e->ind[i]];
        }
        break;
    default: { /* maggi, gibbs_appell */
        size_t m = sys->m;
        const expr_t **l = eom_alloc(m + 1, sizeof *l);
        const expr_t **rr = eom_alloc(m + 1, sizeof *rr);
        eom_maggi_rows(e, l, rr);
        row = eom_alloc(m + 1, sizeof *row);
        y = eom_alloc(m + 1, sizeof *y);
        for (size_t a = 0; a < m; a++) {
            row[k] = expr_sub(g, l[a], rr[a]);
            y[k++] = sys->zd[a];
        }
        free(l);
        free(rr);
        break;
    }
    }
    *rows = row;
    *unk = y;
    *n = k;
}

/* The accelerations that are not unknowns, as nodes of the system's
 * graph in the unknowns: into EXTRA (nvars entries, NULL elsewhere). */
static void solved_extras(const eom_t *e, const expr_t **extra)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    if (e->method == EOM_VORONEC || e->method == EOM_NAIVE) {
        /* q_dep' = vdep: d/dt along q' = (q_ind', vdep), q_ind'' free */
        const expr_t **vel = eom_alloc(sys->n + 1, sizeof *vel);
        for (size_t nu = 0; nu < e->k; nu++)
            vel[e->dep[nu]] = e->vdep[nu];
        const expr_t **dv = eom_dvar(sys, vel);
        for (size_t i = 0; i < e->mi; i++)
            dv[sys->qd[e->ind[i]]] = expr_var(g, sys->qdd[e->ind[i]]);
        for (size_t nu = 0; nu < e->k; nu++)
            extra[sys->qdd[e->dep[nu]]] = expr_dt(g, e->vdep[nu], dv);
        free(dv);
        free(vel);
    } else if (e->method == EOM_MAGGI || e->method == EOM_GIBBS_APPELL) {
        /* q'' = d/dt ψ(q, z, t) along q' = ψ, z' free (Benenti eq. 22) */
        const expr_t **dv = eom_dvar(sys, e->psi);
        for (size_t a = 0; a < sys->m; a++)
            dv[sys->z[a]] = expr_var(g, sys->zd[a]);
        for (size_t i = 0; i < sys->n; i++)
            extra[sys->qdd[i]] = expr_dt(g, e->psi[i], dv);
        free(dv);
    }
}

int eom_solved(const eom_t *e, struct simp *sp, const expr_t **val,
               char *why, size_t whysize)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *dg = simp_graph(sp);
    uint32_t nv = expr_graph_nvars(sys->g);
    memset(val, 0, nv * sizeof *val);
    if (e->kin_numeric) {
        /* Kane's form with the dependent velocities solved at each
         * evaluation (doc/language.md): ψ has no closed form to solve */
        snprintf(why, whysize,
                 "the velocities without a kinematic equation are solved "
                 "numerically at each evaluation (show kinematics)");
        return -1;
    }
    const expr_t **row;
    uint32_t *y;
    size_t n;
    solved_system(e, &row, &y, &n);
    if (n > SIMP_SOLVE_MAX) {
        snprintf(why, whysize,
                 "the system has %zu unknowns, and nh solves up to %d "
                 "symbolically",
                 n, SIMP_SOLVE_MAX);
        free(row);
        free(y);
        return -1;
    }
    /* A and b in the display graph: the rows are linear in y */
    const expr_t **A = eom_alloc(n * n + 1, sizeof *A);
    const expr_t **b = eom_alloc(n + 1, sizeof *b);
    const expr_t **zero = eom_alloc(expr_graph_nvars(dg) + 1, sizeof *zero);
    for (size_t j = 0; j < n; j++)
        zero[y[j]] = expr_num(dg, 0);
    for (size_t i = 0; i < n; i++) {
        const expr_t *ri = simp_import(sp, row[i]);
        for (size_t j = 0; j < n; j++)
            A[i * n + j] = expr_diff(dg, ri, y[j]);
        b[i] = expr_neg(dg, expr_subst(dg, ri, zero));
    }
    const expr_t **x = eom_alloc(n + 1, sizeof *x);
    int status = simp_solve(sp, A, b, n, x);
    if (status != 0)
        /* entries too long to multiply out: solved over them as atoms,
         * shown with named subexpressions (LANGUAGE.md §7.1, v3) */
        status = simp_solve_named(sp, A, b, n, x);
    if (status != 0) {
        snprintf(why, whysize,
                 "solving the %zu equations symbolically meets entries or "
                 "determinants too long to read (over %d terms, or past "
                 "the display's size limit), or a matrix that is singular "
                 "everywhere",
                 n, SIMP_MAX_TERMS);
    } else {
        /* (the display graph may hold more variables than the system's:
         * simp_solve_named's symbols) */
        const expr_t **repl =
            eom_alloc(expr_graph_nvars(dg) + 1, sizeof *repl);
        for (size_t j = 0; j < n; j++) {
            val[y[j]] = x[j];
            repl[y[j]] = x[j];
        }
        const expr_t **extra = eom_alloc(nv, sizeof *extra);
        solved_extras(e, extra);
        for (uint32_t v = 0; v < nv; v++)
            if (extra[v])
                val[v] = simp_simplify_within(
                    sp, expr_subst(dg, simp_import(sp, extra[v]), repl),
                    NULL);
        free(extra);
        free(repl);
    }
    free(x);
    free(zero);
    free(A);
    free(b);
    free(row);
    free(y);
    return status;
}
