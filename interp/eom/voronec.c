/*
 * voronec.c — the equations of motion on the state (q, q'_ind):
 * voronec and naive (LANGUAGE.md §5).
 *
 * Both need every constraint in explicit form q_d' = Σ_j a_dj(q) q_j'
 * (Lemos eq. 8): C^a linear and homogeneous in the velocities, with
 * coefficients of the coordinates only, the velocity written alone on
 * the left side (in no other constraint) dependent; for a component of
 * a vector constraint, which has no left side of its own, one that
 * stands in it alone (vor_pick_dependent).
 * With L̄ the Lagrangian with the dependent velocities substituted (Lemos
 * eq. 9), for every independent coordinate q_i:
 *
 *   voronec (Lemos eqs. 10–11, with forces):
 *     d/dt ∂L̄/∂q_i' − ∂L̄/∂q_i − Σ_ν ∂L̄/∂q_ν a_νi
 *       − Σ_ν Σ_j (∂L/∂q_ν')|subst b^ν_ij q_j' = Q_i + Σ_ν Q_ν a_νi
 *     b^ν_ij = ∂a_νi/∂q_j − ∂a_νj/∂q_i
 *              + Σ_μ (∂a_νi/∂q_μ a_μj − ∂a_νj/∂q_μ a_μi)
 *   naive: d/dt ∂L̄/∂q_i' − ∂L̄/∂q_i = Q_i + Σ_ν Q_ν a_νi   (Lemos eq. 6:
 *     the reduced-Lagrangian shortcut, wrong in general).
 *
 * The forces follow from the multiplier form: with B = [−a | I] the
 * dependent rows give λ_ν = E_ν − Q_ν and the independent rows
 * E_i + Σ_ν a_νi E_ν = Q_i + Σ_ν a_νi Q_ν.  d/dt runs along the motion
 * (q_ν' = Σ_j a_νj q_j'), so d/dt ∂L̄/∂q_i' = Σ_j M̄_ij q_j'' + (the rest),
 * and the compute step solves M̄ q_ind'' = −h̄; the dependent
 * accelerations are q_ν'' = Σ_j a_νj q_j'' + Σ_j (d a_νj/dt) q_j'.  For a
 * small system that solve is built from nodes and compiled into the fast
 * tape of common.c (vor_fast), with h̄ multiplied out first: the sphere's
 * h̄ is products of sums that cancel to Lemos eq. 16.
 *
 * Must not: allocate in the compute function; print.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/eom/common.h"
#include "interp/eom/methods.h"

static size_t vor_nupper(size_t n) { return n * (n + 1) / 2; }

/* Tape outputs: vdep (k), M̄ upper, h̄ (mi), a (k×mi), w (k). */
static int voronec_compute(eom_t *e, double *vars, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t k = e->k, mi = e->mi, nu = vor_nupper(mi);
    tape_eval(e->tape, vars, e->out, e->work);
    if (eom_check_finite(e->out, k + nu + mi + k * mi + k,
                         "the reduced equations", err))
        return -1;
    const double *vdep = e->out, *Mu = vdep + k, *h = Mu + nu;
    const double *a = h + mi, *w = a + k * mi;
    double *Mf = e->scratch, *x = Mf + mi * mi, *wk = x + mi;
    for (size_t nuv = 0; nuv < k; nuv++)
        vars[sys->qd[e->dep[nuv]]] = vdep[nuv];
    for (size_t i = 0; i < mi; i++)
        x[i] = -h[i];
    if (eom_solve_symmetric(Mu, mi, x, Mf, wk, e->perm) != 0) {
        eom_unpack_symmetric(Mu, mi, Mf, mi);
        return eom_singular(err, "reduced mass matrix Mbar", Mf, mi, mi, mi);
    }
    if (eom_check_finite(x, mi, "q''", err))
        return -1;
    for (size_t i = 0; i < mi; i++)
        vars[sys->qdd[e->ind[i]]] = x[i];
    for (size_t nuv = 0; nuv < k; nuv++) {
        double s = w[nuv];
        for (size_t j = 0; j < mi; j++)
            s += a[nuv * mi + j] * x[j];
        if (!isfinite(s))
            return eom_check_finite(&s, 1, "q''", err);
        vars[sys->qdd[e->dep[nuv]]] = s;
    }
    eom_clear_lambda(e, vars);
    return 0;
}

/* The derivatives of voronec_compute (eom_tangent): q_ν' = vdep_ν, whose
 * derivatives the tape gives; M̄ x = −h̄ for x = q_ind'' differentiated,
 * M̄ dx = −(dM̄ x + dh̄); q_ν'' = w_ν + Σ_j a_νj x_j, so dq_ν'' =
 * dw_ν + Σ_j (da_νj x_j + a_νj dx_j).  The tape reads the state (q and
 * the independent velocities), never the dependent velocities: L̄, h̄
 * and w have them substituted (eom_prepare_voronec). */
static int voronec_tangent(eom_t *e, double *vars, double *dvars, size_t k,
                           diag_t *err)
{
    const nh_system_t *sys = e->sys;
    /* the blocks after the first: the values are in VARS, M̄ factored */
    if (!e->t_again && e->compute(e, vars, err) != 0)
        return -1;
    eom_tangent_tape(e, vars, dvars, k);
    size_t kd = e->k, mi = e->mi, nu = vor_nupper(mi);
    const double *Mu = e->t_out + kd, *a = Mu + nu + mi;
    const double *dvdep = e->t_dout, *dM = dvdep + kd * k, *dh = dM + nu * k;
    const double *da = dh + mi * k, *dw = da + kd * mi * k;
    double *A = e->t_scratch, *x = A + mi * mi, *dx = x + mi;
    double *wk = dx + mi * k;
    for (size_t i = 0; i < mi; i++) {
        x[i] = vars[sys->qdd[e->ind[i]]];
        for (size_t l = 0; l < mi && !e->t_again; l++)
            A[i * mi + l] = Mu[eom_upper_index(mi, i, l)];
    }
    for (size_t i = 0; i < mi; i++)
        for (size_t j = 0; j < k; j++) {
            double s = dh[i * k + j];
            for (size_t l = 0; l < mi; l++)
                s += dM[eom_upper_index(mi, i, l) * k + j] * x[l];
            dx[i * k + j] = -s;
        }
    if (eom_tangent_solve(e, A, mi, dx, k, wk, e->t_perm,
                          "reduced mass matrix Mbar", err) != 0)
        return -1;
    for (size_t i = 0; i < mi; i++)
        memcpy(dvars + (size_t)sys->qdd[e->ind[i]] * k, dx + i * k,
               k * sizeof *dvars);
    for (size_t nuv = 0; nuv < kd; nuv++) {
        double *dv = dvars + (size_t)sys->qd[e->dep[nuv]] * k;
        double *dq = dvars + (size_t)sys->qdd[e->dep[nuv]] * k;
        memcpy(dv, dvdep + nuv * k, k * sizeof *dv);
        for (size_t j = 0; j < k; j++) {
            double s = dw[nuv * k + j];
            for (size_t l = 0; l < mi; l++)
                s += da[(nuv * mi + l) * k + j] * x[l] +
                     a[nuv * mi + l] * dx[l * k + j];
            dq[j] = s;
        }
    }
    return 0;
}

/* ---- explicit form ------------------------------------------------------- */

#define VORONEC_NEED "Voronec's equations need qd' = Σ a(q) q'"

/* Checks constraint A against the explicit form; the coefficients are
 * the row B_a. */
static int vor_check_form(const eom_t *e, size_t a, const bool *vmask,
                          const expr_t **zero_vel, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n;
    const char *meth = e->name;
    if (e->d.holonomic[a])
        return diag_error(err, sys->cspan[a],
                          "constraint %s has no velocity (it is holonomic): "
                          "%s; use `equations multipliers`",
                          sys->cname[a], VORONEC_NEED);
    for (size_t j = 0; j < n; j++) {
        const expr_t *cj = e->d.B[a * n + j];
        if (expr_depends_any(g, cj, vmask)) {
            size_t v = 0;
            while (v < n && !expr_depends(g, cj, sys->qd[v]))
                v++;
            return diag_error(err, sys->cspan[a],
                              "constraint %s: the coefficient of %s' depends "
                              "on %s'; %s (equations %s)",
                              sys->cname[a], sys->qname[j],
                              v < n ? sys->qname[v] : "?", VORONEC_NEED, meth);
        }
        if (expr_depends(g, cj, sys->t))
            return diag_error(err, sys->cspan[a],
                              "constraint %s: the coefficient of %s' depends "
                              "on t; %s (equations %s)",
                              sys->cname[a], sys->qname[j], VORONEC_NEED, meth);
    }
    const expr_t *c0 = expr_subst(g, sys->C[a], zero_vel);
    if (!expr_is_const(c0, 0.0)) {
        char *s = expr_to_text(g, c0);
        int rc = diag_error(err, sys->cspan[a],
                            "constraint %s has a term without velocities "
                            "(%s); %s (equations %s)",
                            sys->cname[a], s, VORONEC_NEED, meth);
        free(s);
        return rc;
    }
    return 0;
}

/* The dependent velocity of every constraint: the one written alone on
 * its left side, qd' = Σ_j a_dj(q) q_j' (LANGUAGE.md §5), which must
 * appear in no other constraint — on no left side and no right side —
 * and not on its own right side either.  nh does not choose another one:
 * the user's choice is what `show reduced` and `show voronec` display,
 * and c1: y' = x*z', c2: z' = x' (z' on a right side) is an error that
 * says to substitute c2 into c1, not a reading with x as the dependent
 * coordinate.  A component of a vector constraint has no written left
 * side (velocity(Q, disk) = [0, 0, 0]): nh takes a velocity that stands
 * in that component alone and is no written one's, coefficient 1 before
 * −1 before others, then the last declared (doc/methods.md). */
static int vor_pick_dependent(eom_t *e, diag_t *err)
{
    const nh_system_t *sys = e->sys;
    size_t n = sys->n, r = sys->r;
    long *owner = eom_alloc(n, sizeof *owner); /* constraint + 1 */
    int rc = 0;
    for (size_t a = 0; a < r && rc == 0; a++) {
        long d = sys->cleft ? sys->cleft[a] : NH_CLEFT_NONE;
        if (d == NH_CLEFT_COMPONENT)
            continue; /* below, once the written ones are known */
        if (d < 0) {
            rc = diag_error(err, sys->cspan[a],
                            "constraint %s: its left side is not one "
                            "velocity alone; %s, the dependent velocity "
                            "on the left (equations %s)",
                            sys->cname[a], VORONEC_NEED, e->name);
            break;
        }
        const expr_t *cd = e->d.B[a * n + (size_t)d];
        if (owner[d]) {
            rc = diag_error(err, sys->cspan[a],
                            "constraint %s: %s' is already the dependent "
                            "velocity of constraint %s; each dependent "
                            "velocity stands on one left side only "
                            "(equations %s)",
                            sys->cname[a], sys->qname[d],
                            sys->cname[owner[d] - 1], e->name);
        } else if (cd->op != EXPR_CONST || cd->value == 0.0 ||
                   !isfinite(cd->value)) {
            rc = diag_error(err, sys->cspan[a],
                            "constraint %s: its dependent velocity %s' "
                            "appears on its right side too; %s (equations "
                            "%s)",
                            sys->cname[a], sys->qname[d], VORONEC_NEED,
                            e->name);
        }
        owner[d] = (long)a + 1;
        e->dep[a] = (size_t)d;
    }
    for (size_t a = 0; a < r && rc == 0; a++) {
        if (!sys->cleft || sys->cleft[a] != NH_CLEFT_COMPONENT)
            continue;
        size_t best = n;
        int bscore = -1;
        for (size_t j = n; j-- > 0;) {
            if (owner[j] || !eom_velocity_alone(e, a, j))
                continue;
            double c = e->d.B[a * n + j]->value;
            int score = c == 1.0 ? 2 : c == -1.0 ? 1 : 0;
            if (score > bscore) {
                bscore = score;
                best = j;
            }
        }
        if (best == n) {
            rc = diag_error(err, sys->cspan[a],
                            "constraint %s: no velocity stands alone in it "
                            "(a constant coefficient, and in no other "
                            "constraint); %s (equations %s)",
                            sys->cname[a], VORONEC_NEED, e->name);
            break;
        }
        owner[best] = (long)a + 1;
        e->dep[a] = best;
    }
    /* A dependent velocity on another constraint's right side. */
    for (size_t a = 0; a < r && rc == 0; a++)
        for (size_t b = 0; b < r && rc == 0; b++) {
            size_t d = e->dep[a];
            if (b != a && !expr_is_const(e->d.B[b * n + d], 0.0))
                rc = diag_error(err, sys->cspan[b],
                                "constraint %s: %s' is the dependent "
                                "velocity of constraint %s and cannot "
                                "appear on a right side: substitute %s "
                                "into %s (Voronec's equations need each "
                                "dependent velocity in one constraint "
                                "only; equations %s)",
                                sys->cname[b], sys->qname[d],
                                sys->cname[a], sys->cname[a], sys->cname[b],
                                e->name);
        }
    if (rc == 0) {
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if (!owner[j])
                e->ind[m++] = j;
    }
    free(owner);
    return rc;
}

/* A partial derivative of L̄ by the chain rule through the substituted
 * velocities q_ν' = Σ_j a_νj q_j' (P_ν = ∂L/∂q_ν' substituted):
 *   ∂L̄/∂q_i' = [∂L/∂q_i']_s + Σ_ν P_ν a_νi                 (VELOCITY)
 *   ∂L̄/∂q_k  = [∂L/∂q_k]_s + Σ_ν P_ν Σ_j ∂a_νj/∂q_k q_j'
 * The same values as differentiating L̄ itself, with smaller expressions
 * (the P_ν are shared), hence a shorter tape. */
static const expr_t *vor_dLbar(const eom_t *e, const expr_t *const *repl,
                               const expr_t *const *P, uint32_t var,
                               bool velocity)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t mi = e->mi;
    const expr_t *s = expr_subst(g, expr_diff(g, sys->L, var), repl);
    for (size_t nu = 0; nu < e->k; nu++) {
        const expr_t *f;
        if (velocity) {
            size_t i = 0;
            while (sys->qd[e->ind[i]] != var)
                i++;
            f = e->a[nu * mi + i];
        } else {
            f = expr_num(g, 0.0);
            for (size_t j = 0; j < mi; j++)
                f = expr_add(g, f,
                             expr_mul(g, expr_diff(g, e->a[nu * mi + j], var),
                                      expr_var(g, sys->qd[e->ind[j]])));
        }
        s = expr_add(g, s, expr_mul(g, P[nu], f));
    }
    return s;
}

/* The fast path (eom.h): M̄ x = −h̄ by nodes; q_ind'' = x, and
 * q_ν'' = Σ_j a_νj x_j + Σ_j (d a_νj/dt) q_j' (the derivative of
 * q_ν' = Σ_j a_νj q_j' along the motion). */
static void vor_fast(eom_t *e, const expr_t *const *Mbar,
                     const expr_t *const *h, const expr_t *const *dv,
                     const expr_t *const *vel)
{
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t k = e->k, mi = e->mi, nval = k + mi + k;
    const expr_t **diag = eom_alloc(mi, sizeof *diag);
    const expr_t **piv = eom_alloc(mi, sizeof *piv);
    const expr_t **b = eom_alloc(mi, sizeof *b);
    const expr_t **x = eom_alloc(mi, sizeof *x);
    const expr_t **val = eom_alloc(nval, sizeof *val);
    uint32_t *var = eom_alloc(nval, sizeof *var);
    const expr_t **M = eom_alloc(mi * mi, sizeof *M);
    memcpy(M, Mbar, mi * mi * sizeof *M);
    eom_expand(g, M, mi * mi);
    for (size_t i = 0; i < mi; i++) {
        diag[i] = M[i * mi + i];
        b[i] = expr_neg(g, h[i]);
    }
    eom_expand(g, b, mi);
    eom_ldlt_nodes(g, M, mi, b, 1, piv, x);
    free(M);
    size_t o = 0;
    for (size_t nu = 0; nu < k; nu++) {
        val[o] = e->vdep[nu];
        var[o++] = sys->qd[e->dep[nu]];
    }
    for (size_t i = 0; i < mi; i++) {
        val[o] = x[i];
        var[o++] = sys->qdd[e->ind[i]];
    }
    for (size_t nu = 0; nu < k; nu++) {
        const expr_t *w = expr_num(g, 0.0);
        for (size_t j = 0; j < mi; j++)
            w = expr_add(g, w, expr_mul(g, expr_dt(g, e->a[nu * mi + j], dv),
                                        vel[e->ind[j]]));
        eom_expand(g, &w, 1);
        for (size_t j = 0; j < mi; j++)
            w = expr_add(g, w, expr_mul(g, e->a[nu * mi + j], x[j]));
        val[o] = w;
        var[o++] = sys->qdd[e->dep[nu]];
    }
    size_t sizes[1] = {mi};
    eom_fast_install(e, 1, sizes, diag, piv, val, var, nval, true);
    free(diag);
    free(piv);
    free(b);
    free(x);
    free(val);
    free(var);
}

/* ---- describe ------------------------------------------------------------- */

static char *voronec_describe(const eom_t *e, bool latex)
{
    const nh_system_t *sys = e->sys;
    eom_buf_t b = eom_buf_start(e);
    if (e->method == EOM_VORONEC)
        eom_buf_heading(&b, latex,
                        "voronec (Lemos eqs. 8-11): d/dt dLbar/dq_i' - "
                        "dLbar/dq_i - sum_nu dLbar/dq_nu a_nu,i - "
                        "sum_nu,j (dL/dq_nu')|subst b^nu_ij q_j' = "
                        "Q_i + sum_nu Q_nu a_nu,i");
    else
        eom_buf_heading(&b, latex,
                        "naive: d/dt dLbar/dq_i' - dLbar/dq_i = Q_i + "
                        "sum_nu Q_nu a_nu,i -- NOT valid in general: it drops "
                        "the constraint terms of Voronec's equations (Lemos: "
                        "wrong for the rolling sphere); kept for teaching and "
                        "comparison");
    for (size_t i = 0; i < e->nrows; i++) {
        if (i == e->mi)
            eom_buf_heading(&b, latex, "dependent velocities:");
        eom_buf_row(&b, sys->g, e->rowl[i], e->rowr[i], latex);
    }
    return eom_buf_finish(&b, latex);
}

/* ---- prepare -------------------------------------------------------------- */

int eom_prepare_voronec(eom_t *e, src_span_t where, diag_t *err)
{
    (void)where;
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    uint32_t nv = e->nvars;
    bool voronec = e->method == EOM_VORONEC;

    bool *vmask = eom_alloc(nv, sizeof *vmask);
    const expr_t **zero_vel = eom_alloc(nv, sizeof *zero_vel);
    for (size_t i = 0; i < n; i++) {
        vmask[sys->qd[i]] = true;
        zero_vel[sys->qd[i]] = expr_num(g, 0.0);
    }
    int rc = 0;
    for (size_t a = 0; a < r && rc == 0; a++)
        rc = vor_check_form(e, a, vmask, zero_vel, err);
    free(vmask);
    free(zero_vel);
    if (rc != 0)
        return -1;

    e->dep = eom_alloc(r, sizeof *e->dep);
    e->ind = eom_alloc(n, sizeof *e->ind);
    if (vor_pick_dependent(e, err) != 0)
        return -1;
    /* Each constraint took its own velocity, so r <= n here. */
    size_t k = r, mi = n - r;
    e->k = k;
    e->mi = mi;

    /* a_νj = −(coefficient of q_j')/(coefficient of q_ν') (Lemos eq. 8). */
    e->a = eom_alloc(k * mi, sizeof *e->a);
    e->vdep = eom_alloc(k, sizeof *e->vdep);
    const expr_t **vel = eom_alloc(n, sizeof *vel);
    for (size_t j = 0; j < mi; j++)
        vel[e->ind[j]] = expr_var(g, sys->qd[e->ind[j]]);
    for (size_t nu = 0; nu < k; nu++) {
        const expr_t *cd = e->d.B[nu * n + e->dep[nu]];
        const expr_t *s = expr_num(g, 0.0);
        for (size_t j = 0; j < mi; j++) {
            const expr_t *aj =
                expr_div(g, expr_neg(g, e->d.B[nu * n + e->ind[j]]), cd);
            e->a[nu * mi + j] = aj;
            s = expr_add(g, s, expr_mul(g, aj, vel[e->ind[j]]));
        }
        e->vdep[nu] = s;
        vel[e->dep[nu]] = s;
    }
    const expr_t **repl = eom_subst_velocities(sys, vel);
    const expr_t **dv = eom_dvar(sys, vel);
    const expr_t *const *A = e->a;

    /* b^ν_ij (Lemos eq. 11). */
    e->b = eom_alloc(k * mi * mi, sizeof *e->b);
    for (size_t nu = 0; nu < k; nu++)
        for (size_t i = 0; i < mi; i++)
            for (size_t j = 0; j < mi; j++) {
                const expr_t *ai = A[nu * mi + i], *aj = A[nu * mi + j];
                const expr_t *s =
                    expr_sub(g, expr_diff(g, ai, sys->q[e->ind[j]]),
                             expr_diff(g, aj, sys->q[e->ind[i]]));
                for (size_t mu = 0; mu < k; mu++) {
                    uint32_t qmu = sys->q[e->dep[mu]];
                    s = expr_add(g, s,
                                 expr_sub(g,
                                          expr_mul(g, expr_diff(g, ai, qmu),
                                                   A[mu * mi + j]),
                                          expr_mul(g, expr_diff(g, aj, qmu),
                                                   A[mu * mi + i])));
                }
                e->b[(nu * mi + i) * mi + j] = s;
            }

    /* The reduced equations M̄ q_ind'' + h̄0 = Q̄. */
    e->Lbar = expr_subst(g, sys->L, repl);
    const expr_t **pbar = eom_alloc(mi, sizeof *pbar);
    const expr_t **Mbar = eom_alloc(mi * mi, sizeof *Mbar);
    const expr_t **h0 = eom_alloc(mi, sizeof *h0);
    const expr_t **Qbar = eom_alloc(mi, sizeof *Qbar);
    const expr_t **P = eom_alloc(k, sizeof *P);
    for (size_t nu = 0; nu < k; nu++)
        P[nu] = expr_subst(g, e->d.p[e->dep[nu]], repl);
    for (size_t i = 0; i < mi; i++)
        pbar[i] = vor_dLbar(e, repl, P, sys->qd[e->ind[i]], true);
    for (size_t i = 0; i < mi; i++) {
        for (size_t j = i; j < mi; j++) {
            Mbar[i * mi + j] = expr_diff(g, pbar[i], sys->qd[e->ind[j]]);
            Mbar[j * mi + i] = Mbar[i * mi + j];
        }
        const expr_t *s =
            expr_sub(g, expr_dt(g, pbar[i], dv),
                     vor_dLbar(e, repl, P, sys->q[e->ind[i]], false));
        const expr_t *q = sys->Q[e->ind[i]];
        for (size_t nu = 0; nu < k; nu++) {
            const expr_t *ani = A[nu * mi + i];
            q = expr_add(g, q, expr_mul(g, sys->Q[e->dep[nu]], ani));
            if (!voronec)
                continue;
            s = expr_sub(g, s,
                         expr_mul(g,
                                  vor_dLbar(e, repl, P, sys->q[e->dep[nu]],
                                            false),
                                  ani));
            const expr_t *bq = expr_num(g, 0.0);
            for (size_t j = 0; j < mi; j++)
                bq = expr_add(g, bq,
                              expr_mul(g, e->b[(nu * mi + i) * mi + j],
                                       vel[e->ind[j]]));
            s = expr_sub(g, s, expr_mul(g, P[nu], bq));
        }
        h0[i] = s;
        Qbar[i] = expr_subst(g, q, repl);
    }

    /* Outputs: vdep, M̄ (upper), h̄ = h̄0 − Q̄, a, w. */
    size_t nout = k + vor_nupper(mi) + mi + k * mi + k;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    size_t o = 0;
    for (size_t nu = 0; nu < k; nu++)
        outs[o++] = e->vdep[nu];
    for (size_t i = 0; i < mi; i++)
        for (size_t j = i; j < mi; j++)
            outs[o++] = Mbar[i * mi + j];
    const expr_t **outs_h = eom_alloc(mi, sizeof *outs_h);
    for (size_t i = 0; i < mi; i++)
        outs[o++] = outs_h[i] = expr_sub(g, h0[i], Qbar[i]);
    for (size_t nu = 0; nu < k; nu++)
        for (size_t j = 0; j < mi; j++)
            outs[o++] = A[nu * mi + j];
    for (size_t nu = 0; nu < k; nu++) {
        const expr_t *s = expr_num(g, 0.0);
        for (size_t j = 0; j < mi; j++)
            s = expr_add(g, s, expr_mul(g, expr_dt(g, A[nu * mi + j], dv),
                                        vel[e->ind[j]]));
        outs[o++] = s;
    }
    eom_compile(e, outs, nout);
    free(outs);

    /* Rows for describe: the reduced equations, then q_ν' = Σ a q'. */
    e->nrows = mi + k;
    e->rowl = eom_alloc(e->nrows, sizeof *e->rowl);
    e->rowr = eom_alloc(e->nrows, sizeof *e->rowr);
    for (size_t i = 0; i < mi; i++) {
        const expr_t *s = h0[i];
        for (size_t j = 0; j < mi; j++)
            s = expr_add(g, s, expr_mul(g, Mbar[i * mi + j],
                                        expr_var(g, sys->qdd[e->ind[j]])));
        e->rowl[i] = s;
        e->rowr[i] = Qbar[i];
    }
    for (size_t nu = 0; nu < k; nu++) {
        e->rowl[mi + nu] = expr_var(g, sys->qd[e->dep[nu]]);
        e->rowr[mi + nu] = e->vdep[nu];
    }

    uint32_t *sv = eom_alloc(mi, sizeof *sv), *sd = eom_alloc(mi, sizeof *sd);
    for (size_t i = 0; i < mi; i++) {
        sv[i] = sys->qd[e->ind[i]];
        sd[i] = sys->qdd[e->ind[i]];
    }
    eom_set_state(e, sv, sd, mi);
    eom_alloc_scratch(e, mi * mi + 2 * mi, mi);
    e->compute = voronec_compute;
    e->describe = voronec_describe;
    e->tangent = voronec_tangent;
    if (eom_fast_pays(e))
        vor_fast(e, Mbar, outs_h, dv, vel);

    free(sv);
    free(sd);
    free(outs_h);
    free(pbar);
    free(Mbar);
    free(h0);
    free(Qbar);
    free(P);
    free(vel);
    free(repl);
    free(dv);
    return 0;
}

/* ---- the coefficients, for `show voronec` and tests ------------------ */

static bool vor_has(const eom_t *e)
{
    return e && (e->method == EOM_VORONEC || e->method == EOM_NAIVE);
}

size_t eom_voronec_split(const eom_t *e, const size_t **dep,
                         const size_t **ind, size_t *nind)
{
    if (!vor_has(e)) {
        if (dep)
            *dep = NULL;
        if (ind)
            *ind = NULL;
        if (nind)
            *nind = 0;
        return 0;
    }
    if (dep)
        *dep = e->dep;
    if (ind)
        *ind = e->ind;
    if (nind)
        *nind = e->mi;
    return e->k;
}

const expr_t *eom_voronec_a(const eom_t *e, size_t nu, size_t j)
{
    if (!vor_has(e) || nu >= e->k || j >= e->mi)
        return NULL;
    return e->a[nu * e->mi + j];
}

const expr_t *eom_voronec_b(const eom_t *e, size_t nu, size_t i, size_t j)
{
    if (!vor_has(e) || nu >= e->k || i >= e->mi || j >= e->mi)
        return NULL;
    return e->b[(nu * e->mi + i) * e->mi + j];
}

const expr_t *eom_reduced_lagrangian(const eom_t *e)
{
    return vor_has(e) ? e->Lbar : NULL;
}

char *eom_describe_voronec(const eom_t *e, bool latex)
{
    if (!vor_has(e))
        return NULL;
    const nh_system_t *sys = e->sys;
    expr_graph_t *g = sys->g;
    eom_buf_t b = eom_buf_start(e);
    eom_buf_heading(&b, latex,
                    "Voronec's coefficients (Lemos eqs. 8, 11): "
                    "q_nu' = sum_j a_nu,j q_j'");
    for (size_t nu = 0; nu < e->k; nu++)
        for (size_t j = 0; j < e->mi; j++) {
            uint32_t qn = sys->q[e->dep[nu]], qj = sys->q[e->ind[j]];
            char *ln = eom_latex_var(g, qn), *lj = eom_latex_var(g, qj);
            strbuf_t text, tex; /* a name may be as long as a line */
            strbuf_init(&text);
            strbuf_init(&tex);
            strbuf_addf(&text, "a[%s, %s]", sys->qname[e->dep[nu]],
                        sys->qname[e->ind[j]]);
            strbuf_addf(&tex, "a_{%s,%s}", ln, lj);
            eom_buf_object(&b, g, text.data, tex.data, e->a[nu * e->mi + j],
                           latex);
            strbuf_free(&text);
            strbuf_free(&tex);
            free(ln);
            free(lj);
        }
    eom_buf_heading(&b, latex,
                    "nonzero b^nu_ij for i < j (b^nu_ji = -b^nu_ij)");
    for (size_t nu = 0; nu < e->k; nu++)
        for (size_t i = 0; i < e->mi; i++)
            for (size_t j = i + 1; j < e->mi; j++) {
                const expr_t *bij = e->b[(nu * e->mi + i) * e->mi + j];
                if (expr_is_const(bij, 0.0))
                    continue;
                char *ln = eom_latex_var(g, sys->q[e->dep[nu]]);
                char *li = eom_latex_var(g, sys->q[e->ind[i]]);
                char *lj = eom_latex_var(g, sys->q[e->ind[j]]);
                const char *qn = sys->qname[e->dep[nu]];
                const char *qi = sys->qname[e->ind[i]];
                const char *qj = sys->qname[e->ind[j]];
                strbuf_t text, tex;
                strbuf_init(&text);
                strbuf_init(&tex);
                strbuf_addf(&text, "b[%s; %s, %s]", qn, qi, qj);
                strbuf_addf(&tex, "b^{%s}_{%s,%s}", ln, li, lj);
                eom_buf_object(&b, g, text.data, tex.data, bij, latex);
                strbuf_free(&text);
                strbuf_free(&tex);
                free(ln);
                free(li);
                free(lj);
            }
    return eom_buf_finish(&b, latex);
}
