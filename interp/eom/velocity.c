/*
 * velocity.c — the velocities and speeds that the constraints and the
 * kinematic equations determine (velocity.h): LANGUAGE.md §6 `initial`,
 * and the random states of `compare`.
 *
 * Must not: print; change the system.
 */
#include "interp/eom/velocity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/eom/common.h"
#include "interp/eom/linalg.h"

/* ---- nonlinear least squares for the velocity solvers --------------- */

/* Residual RES (rows) and Jacobian JAC (rows×cols, row-major) at X. */
typedef void (*eom_resid_fn)(void *ctx, const double *x, double *res,
                             double *jac);

static double eom_sumsq(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t k = 0; k < n; k++)
        s += v[k] * v[k];
    return s;
}

/* Levenberg–Marquardt from X (updated in place): Gauss–Newton steps
 * while they reduce |res|², damped when they do not or when the normal
 * matrix is singular (the Jacobian may lose rank at the start, e.g. a
 * nonlinear constraint at zero velocity).  Returns |res|² at X, or NaN
 * when the residual cannot be evaluated. */
static double eom_least_squares(eom_resid_fn f, void *ctx, size_t rows,
                                size_t cols, double *x, double target)
{
    double *res = eom_alloc(rows, sizeof *res);
    double *jac = eom_alloc(rows * cols, sizeof *jac);
    double *res2 = eom_alloc(rows, sizeof *res2);
    double *jac2 = eom_alloc(rows * cols, sizeof *jac2);
    double *d = eom_alloc(cols, sizeof *d);
    double *x2 = eom_alloc(cols, sizeof *x2);
    double *work = eom_alloc(cols * cols + cols, sizeof *work);
    size_t *perm = eom_alloc(cols, sizeof *perm);

    f(ctx, x, res, jac);
    double ss = eom_sumsq(res, rows);
    double mu = 0.0;
    for (int it = 0; it < 200 && isfinite(ss) && ss > target && cols > 0;
         it++) {
        double jscale = eom_sumsq(jac, rows * cols) / (double)cols;
        if (linalg_lsq_step(jac, rows, cols, res, mu, d, work, perm) != 0) {
            mu = mu > 0.0 ? mu * 10.0 : 1e-6 * (jscale > 0.0 ? jscale : 1.0);
            continue;
        }
        double dn = 0.0, xn = 0.0;
        for (size_t k = 0; k < cols; k++) {
            x2[k] = x[k] + d[k];
            dn += d[k] * d[k];
            xn += x[k] * x[k];
        }
        f(ctx, x2, res2, jac2);
        double ss2 = eom_sumsq(res2, rows);
        if (isfinite(ss2) && ss2 < ss) {
            memcpy(x, x2, cols * sizeof *x);
            memcpy(res, res2, rows * sizeof *res);
            memcpy(jac, jac2, rows * cols * sizeof *jac);
            ss = ss2;
            mu = mu * 0.1 < 1e-300 ? 0.0 : mu * 0.1;
            if (dn <= 1e-32 * (1.0 + xn))
                break;
        } else {
            if (dn <= 1e-32 * (1.0 + xn))
                break;
            mu = mu > 0.0 ? mu * 10.0 : 1e-6 * (jscale > 0.0 ? jscale : 1.0);
            if (mu > 1e20 * (jscale > 0.0 ? jscale : 1.0))
                break;
        }
    }
    f(ctx, x, res, jac); /* leave the caller's state at X */
    free(res);
    free(jac);
    free(res2);
    free(jac2);
    free(d);
    free(x2);
    free(work);
    free(perm);
    return ss;
}

/* ---- velocities from the constraints (LANGUAGE.md §6) -------------------- */

typedef struct eom_vel_ctx {
    const nh_system_t *sys;
    tape_t *tape;
    double *vars, *out, *work;
    const size_t *sel; /* the velocities solved for */
    size_t nsel;
} eom_vel_ctx_t;

/* Tape outputs of eom_solve_velocities: C (r), Ceff (r), B (r×n). */
static void eom_vel_eval(eom_vel_ctx_t *c)
{
    tape_eval(c->tape, c->vars, c->out, c->work);
}

static void eom_vel_resid(void *ctx, const double *x, double *res,
                          double *jac)
{
    eom_vel_ctx_t *c = ctx;
    const nh_system_t *sys = c->sys;
    size_t n = sys->n, r = sys->r;
    for (size_t k = 0; k < c->nsel; k++)
        c->vars[sys->qd[c->sel[k]]] = x[k];
    eom_vel_eval(c);
    const double *ceff = c->out + r, *B = c->out + 2 * r;
    for (size_t a = 0; a < r; a++) {
        res[a] = ceff[a];
        for (size_t k = 0; k < c->nsel; k++)
            jac[a * c->nsel + k] = B[a * n + c->sel[k]];
    }
}

/* The scale of a constraint's value, against which "violated by more
 * than 1e-9 (relative)" is judged: its velocity terms Σ_i |B_ai q_i'| for
 * the row ROW = B_a· and OF the velocities (for a holonomic f, Σ_i
 * |∂f/∂q_i q_i| with ROW its gradient and OF the coordinates), at least
 * 1. */
static double eom_constraint_scale(const nh_system_t *sys, const double *row,
                                   const double *vars, const uint32_t *of)
{
    double s = 0.0;
    for (size_t i = 0; i < sys->n; i++)
        s += fabs(row[i] * vars[of[i]]);
    return s > 1.0 ? s : 1.0;
}


/* Selects up to ROWS unknowns (columns i of the rows×n matrix A with
 * !given[i]) whose columns are independent at the values A was computed
 * at: the rule of LANGUAGE.md §6 for the velocities (A = B) and the
 * coordinates (A = ∂f/∂q of the holonomic constraints) that `initial`
 * solves for.  Walk the coordinates from the last declared to the first
 * and keep one when its column raises the rank — so models that declare
 * the dependent coordinates last (the sphere: x, y after the angles) get
 * those solved, as a user writing `initial` expects — taking first, in
 * the same order, those marked in PREFER (given a starting guess with
 * `~`: the user says they are the dependent ones).  PREFER may be NULL.
 * SEL already holds K unknowns (0 for a fresh choice), which stay; the
 * new count is returned. */
static size_t eom_select_more(const nh_system_t *sys, const double *A,
                              size_t rows, const bool *given,
                              const bool *prefer, size_t *sel, size_t k)
{
    size_t n = sys->n, k0 = k, norder = 0;
    size_t *order = eom_alloc(n + k0 + 1, sizeof *order);
    bool *in_sel = eom_alloc(n + 1, sizeof *in_sel);
    /* the unknowns already chosen first, so that they stay */
    for (size_t j = 0; j < k0; j++) {
        order[norder++] = sel[j];
        in_sel[sel[j]] = true;
    }
    for (int pass = prefer ? 0 : 1; pass < 2; pass++)
        for (size_t i = n; i-- > 0;) {
            bool pref = prefer && prefer[i];
            if (!given[i] && !in_sel[i] && (pass == 0) == pref)
                order[norder++] = i;
        }
    /* the columns of A in that order, each kept when it raises the rank */
    bool *kept = eom_alloc(n + 1, sizeof *kept);
    double *basis = eom_alloc(rows * rows + 1, sizeof *basis);
    size_t *piv = eom_alloc(rows + 1, sizeof *piv);
    linalg_independent(A, 1, n, rows, order, norder, 1e-10, kept, basis,
                       piv);
    size_t nsel = k0;
    for (size_t o = k0; o < norder && nsel < rows; o++)
        if (kept[order[o]])
            sel[nsel++] = order[o];
    free(order);
    free(in_sel);
    free(kept);
    free(basis);
    free(piv);
    return nsel;
}

/* eom_select_more from no unknowns. */
static size_t eom_select_unknowns(const nh_system_t *sys, const double *A,
                                  size_t rows, const bool *given,
                                  const bool *prefer, size_t *sel)
{
    return eom_select_more(sys, A, rows, given, prefer, sel, 0);
}

/* What the solves need, derived and compiled once. */
struct eom_velsolver {
    const nh_system_t *sys;
    eom_derived_t d; /* the constraint rows only */
    tape_t *tape;    /* C (r), Ceff (r), B (r×n) */
    double *out, *work;
    /* The holonomic constraints f_k (nh of them, hol[k] their index) and
     * their gradients: tpos computes f (nh), J = ∂f/∂q (nh×n). */
    size_t nh, *hol;
    tape_t *tpos;
    double *pout, *pwork;
    bool *jdep; /* ∂f_j/∂q_i is not identically 0 (nh×n) */
    tape_t *tspeed; /* eom_velsolver_speeds: ψ and Ψ, compiled when first
                       needed */
    tape_t *trate;  /* eom_velsolver_speed_rates: Ψ and β, the same */
    /* What the last solve solved for (indices of coordinates). */
    size_t *solved_q, nsolved_q, *solved_v, nsolved_v;
    /* eom_velsolver_jacobians' tapes and buffers, made by its first call
     * and kept, so that later calls allocate nothing (lyapunov calls it
     * at every evaluation of the motion): TJAC the values of J and B
     * (nh×n, r×n), TCEFF Ceff alone, differentiated along the JN
     * coordinates it reads (JQ, indices into sys->q: along another its
     * derivative is 0, Cq's column), in as many directions */
    tape_t *tjac, *tceff;
    double *jval, *jvwork;
    size_t *jq, jn;
    double *jdvars, *jdout, *jdwork, *jout;
    /* the value array of the compiled TCEFF (JNSIZE doubles) */
    double *jnval;
    size_t jnsize;
};

eom_velsolver_t *eom_velsolver_new(const nh_system_t *sys)
{
    size_t n = sys->n, r = sys->r;
    eom_velsolver_t *vs = eom_alloc(1, sizeof *vs);
    vs->sys = sys;
    vs->solved_q = eom_alloc(n, sizeof *vs->solved_q);
    vs->solved_v = eom_alloc(n, sizeof *vs->solved_v);
    if (r == 0)
        return vs;
    const expr_t **dv = eom_dvar(sys, NULL);
    bool *vmask = eom_velocity_mask(sys);
    eom_derive_rows(sys, &vs->d, dv, vmask);
    free(dv);
    free(vmask);
    size_t nout = 2 * r + r * n;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    for (size_t a = 0; a < r; a++) {
        outs[a] = sys->C[a];
        outs[r + a] = vs->d.Ceff[a];
        for (size_t i = 0; i < n; i++)
            outs[2 * r + a * n + i] = vs->d.B[a * n + i];
    }
    vs->tape = tape_compile(sys->g, outs, nout, expr_graph_nvars(sys->g));
    if (!vs->tape)
        nh_out_of_memory();
    vs->out = eom_alloc(nout, sizeof *vs->out);
    vs->work = eom_alloc(tape_work_size(vs->tape), sizeof *vs->work);
    vs->hol = eom_alloc(r, sizeof *vs->hol);
    for (size_t a = 0; a < r; a++)
        if (vs->d.holonomic[a])
            vs->hol[vs->nh++] = a;
    if (vs->nh > 0) {
        size_t nh = vs->nh, k = 0;
        for (size_t j = 0; j < nh; j++)
            outs[k++] = sys->C[vs->hol[j]];
        vs->jdep = eom_alloc(nh * n, sizeof *vs->jdep);
        for (size_t j = 0; j < nh; j++)
            for (size_t i = 0; i < n; i++) {
                outs[k] = expr_diff(sys->g, sys->C[vs->hol[j]], sys->q[i]);
                vs->jdep[j * n + i] = !expr_is_const(outs[k], 0.0);
                k++;
            }
        vs->tpos = tape_compile(sys->g, outs, k, expr_graph_nvars(sys->g));
        if (!vs->tpos)
            nh_out_of_memory();
        vs->pout = eom_alloc(k, sizeof *vs->pout);
        vs->pwork = eom_alloc(tape_work_size(vs->tpos), sizeof *vs->pwork);
    }
    free(outs);
    return vs;
}

void eom_velsolver_free(eom_velsolver_t *vs)
{
    if (!vs)
        return;
    eom_derived_free(&vs->d);
    tape_free(vs->tape);
    free(vs->out);
    free(vs->work);
    free(vs->hol);
    tape_free(vs->tpos);
    tape_free(vs->tspeed);
    tape_free(vs->trate);
    free(vs->jdep);
    tape_free(vs->tceff);
    tape_free(vs->tjac);
    free(vs->jval);
    free(vs->jvwork);
    free(vs->jq);
    free(vs->jnval);
    free(vs->jdvars);
    free(vs->jdout);
    free(vs->jdwork);
    free(vs->jout);
    free(vs->pout);
    free(vs->pwork);
    free(vs->solved_q);
    free(vs->solved_v);
    free(vs);
}

/* ---- coordinates from the holonomic constraints (LANGUAGE.md §6) ------- */

typedef struct eom_pos_ctx {
    eom_velsolver_t *vs;
    double *vars;
    const size_t *sel;
    size_t nsel;
} eom_pos_ctx_t;

static void eom_pos_resid(void *ctx, const double *x, double *res,
                          double *jac)
{
    eom_pos_ctx_t *c = ctx;
    eom_velsolver_t *vs = c->vs;
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, nh = vs->nh;
    for (size_t k = 0; k < c->nsel; k++)
        c->vars[sys->q[c->sel[k]]] = x[k];
    tape_eval(vs->tpos, c->vars, vs->pout, vs->pwork);
    const double *J = vs->pout + nh;
    for (size_t a = 0; a < nh; a++) {
        res[a] = vs->pout[a];
        for (size_t k = 0; k < c->nsel; k++)
            jac[a * c->nsel + k] = J[a * n + c->sel[k]];
    }
}

/* The largest |f_j| relative to its scale at the values of the last
 * evaluation of vs->tpos (at VARS); *worst its index.  NaN as soon as
 * one is NaN (a constraint undefined there). */
static double eom_pos_misfit(const eom_velsolver_t *vs, const double *vars,
                             size_t *worst)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, nh = vs->nh;
    const double *f = vs->pout, *J = vs->pout + nh;
    double m = 0.0;
    *worst = 0;
    for (size_t j = 0; j < nh; j++) {
        double v = fabs(f[j]) / eom_constraint_scale(sys, J + j * n, vars,
                                                     sys->q);
        if (!(v <= m)) {
            m = v;
            *worst = j;
            if (isnan(v))
                break;
        }
    }
    return m;
}

/* Pseudo-random numbers in [-2, 2) from *SEED (a fixed sequence, so that
 * `initial` does the same thing every time). */
static double eom_scatter(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return 4.0 * ((double)(*seed >> 11) / 9007199254740992.0) - 2.0;
}

int eom_velsolver_positions(eom_velsolver_t *vs, double *vars,
                            const bool *given, const bool *guessed,
                            diag_t *err)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, nh = vs->nh, worst;
    vs->nsolved_q = 0;
    if (nh == 0)
        return 0;
    const double *f = vs->pout, *J = vs->pout + nh;
    tape_eval(vs->tpos, vars, vs->pout, vs->pwork);
    /* Coordinates that already fit stay as they are: the conical
     * pendulum's y = 0 on x² + y² + z² = l² (Gauss–Newton on the double
     * root y² = 0 would creep to y ~ 1e-8). */
    if (eom_pos_misfit(vs, vars, &worst) <= EOM_STATE_RTOL)
        return 0;
    size_t *sel = eom_alloc(nh, sizeof *sel), *sel2 = eom_alloc(nh, sizeof *sel2);
    double *x = eom_alloc(nh, sizeof *x), *best = eom_alloc(nh, sizeof *best);
    double *start = eom_alloc(n, sizeof *start);
    for (size_t i = 0; i < n; i++)
        start[i] = vars[sys->q[i]];
    size_t k = eom_select_unknowns(sys, J, nh, given, guessed, sel);
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    if (k < nh) {
        /* The gradient may lose rank at the start (x² + y² = 1 at y = 0,
         * a linkage at all angles 0): choose the columns at a scattered
         * point instead, where they have the rank the constraints have. */
        for (size_t i = 0; i < n; i++)
            if (!given[i])
                vars[sys->q[i]] = start[i] + eom_scatter(&seed);
        tape_eval(vs->tpos, vars, vs->pout, vs->pwork);
        size_t k2 = eom_select_unknowns(sys, J, nh, given, guessed, sel2);
        if (k2 > k) {
            k = k2;
            memcpy(sel, sel2, nh * sizeof *sel);
        }
        for (size_t i = 0; i < n; i++)
            vars[sys->q[i]] = start[i];
    }
    /* Levenberg–Marquardt from the start (0, or the guesses); when it
     * ends off the constraints (at a point where the gradient vanishes, or
     * in a local minimum of |f|²), again from the chosen coordinates that
     * have no guess at 1, then at scattered values; the best end wins. */
    eom_pos_ctx_t c = {.vs = vs, .vars = vars, .sel = sel, .nsel = k};
    double best_misfit = INFINITY;
    for (int attempt = 0; attempt < 10 && k > 0; attempt++) {
        for (size_t j = 0; j < k; j++) {
            size_t i = sel[j];
            bool fixed = attempt == 0 || (guessed && guessed[i]);
            x[j] = fixed ? start[i] : attempt == 1 ? 1.0 : eom_scatter(&seed);
        }
        eom_least_squares(eom_pos_resid, &c, nh, k, x, 0.0);
        tape_eval(vs->tpos, vars, vs->pout, vs->pwork);
        double mf = eom_pos_misfit(vs, vars, &worst);
        if (mf < best_misfit) {
            best_misfit = mf;
            memcpy(best, x, k * sizeof *x);
        }
        if (mf <= EOM_STATE_RTOL)
            break;
    }
    for (size_t j = 0; j < k; j++)
        vars[sys->q[sel[j]]] = best[j];
    tape_eval(vs->tpos, vars, vs->pout, vs->pwork);
    /* Reported in declaration order. */
    vs->nsolved_q = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < k; j++)
            if (sel[j] == i)
                vs->solved_q[vs->nsolved_q++] = i;
    int rc = 0;
    if (!(eom_pos_misfit(vs, vars, &worst) <= EOM_STATE_RTOL)) {
        size_t a = vs->hol[worst];
        /* The first coordinate solved for that this constraint involves. */
        const char *moved = NULL;
        for (size_t l = 0; l < vs->nsolved_q && !moved; l++)
            if (vs->jdep[worst * n + vs->solved_q[l]])
                moved = sys->qname[vs->solved_q[l]];
        if (!isfinite(f[worst]))
            rc = diag_error(err, sys->cspan[a],
                            "constraint %s has no finite value at these "
                            "coordinates%s%s",
                            sys->cname[a], moved ? ", also after solving for "
                                                 : "",
                            moved ? moved : "");
        else if (!moved)
            rc = diag_error(err, sys->cspan[a],
                            "the coordinates violate constraint %s: "
                            "residual %.6g",
                            sys->cname[a], f[worst]);
        else
            rc = diag_error(err, sys->cspan[a],
                            "the coordinates violate constraint %s: "
                            "residual %.6g after solving for %s (if it can "
                            "be met, a starting guess may find it: `initial "
                            "%s ~ VALUE`)",
                            sys->cname[a], f[worst], moved, moved);
    }
    free(sel);
    free(sel2);
    free(x);
    free(best);
    free(start);
    return rc;
}

/* ---- the velocities ------------------------------------------------------ */

int eom_velsolver_solve(eom_velsolver_t *vs, double *vars, const bool *given,
                        const bool *guessed, diag_t *err)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r;
    vs->nsolved_v = 0;
    if (r == 0)
        return 0;
    eom_vel_ctx_t c = {.sys = sys, .tape = vs->tape, .vars = vars,
                       .out = vs->out, .work = vs->work};
    size_t *sel = eom_alloc(r, sizeof *sel);
    double *x = eom_alloc(r, sizeof *x);
    const double *B = c.out + 2 * r;
    int rc = 0;

    /* Holonomic constraints first hold at position level. */
    eom_vel_eval(&c);
    for (size_t a = 0; a < r && rc == 0; a++) {
        if (!vs->d.holonomic[a])
            continue;
        double f = c.out[a];
        if (!(fabs(f) <= EOM_STATE_RTOL *
                             eom_constraint_scale(sys, B + a * n, vars, sys->q)))
            rc = diag_error(err, sys->cspan[a],
                            "the coordinates violate constraint %s: "
                            "residual %.6g",
                            sys->cname[a], f);
    }

    if (rc == 0) {
        size_t k = eom_select_unknowns(sys, B, r, given, guessed, sel);
        if (k < r) {
            /* A nonlinear constraint may have a degenerate Jacobian at
             * the starting values (e.g. x'^2 + y'^2 = v^2 at y' = 0): try
             * once from unit unknown velocities (those without a guess). */
            double *save = eom_alloc(n, sizeof *save);
            for (size_t i = 0; i < n; i++) {
                save[i] = vars[sys->qd[i]];
                if (!given[i] && !(guessed && guessed[i]))
                    vars[sys->qd[i]] = 1.0;
            }
            eom_vel_eval(&c);
            size_t *sel2 = eom_alloc(r, sizeof *sel2);
            size_t k2 = eom_select_unknowns(sys, B, r, given, guessed, sel2);
            bool *keep = eom_alloc(n, sizeof *keep);
            if (k2 > k) {
                k = k2;
                memcpy(sel, sel2, r * sizeof *sel);
                for (size_t j = 0; j < k; j++)
                    keep[sel[j]] = true;
            }
            for (size_t i = 0; i < n; i++)
                if (!keep[i])
                    vars[sys->qd[i]] = save[i];
            free(keep);
            free(sel2);
            free(save);
        }
        c.sel = sel;
        c.nsel = k;
        for (size_t j = 0; j < k; j++)
            x[j] = vars[sys->qd[sel[j]]];
        if (k > 0)
            eom_least_squares(eom_vel_resid, &c, r, k, x, 0.0);
        eom_vel_eval(&c);
        memcpy(vs->solved_v, sel, k * sizeof *sel);
        vs->nsolved_v = k;
        const double *ceff = c.out + r;
        for (size_t a = 0; a < r && rc == 0; a++) {
            double res = ceff[a];
            if (!(fabs(res) <= EOM_STATE_RTOL *
                                   eom_constraint_scale(sys, B + a * n, vars,
                                                        sys->qd)))
                rc = diag_error(err, sys->cspan[a],
                                "the velocities violate constraint %s: "
                                "residual %.6g",
                                sys->cname[a], res);
        }
    }
    free(sel);
    free(x);
    return rc;
}

int eom_velsolver_run(eom_velsolver_t *vs, double *vars, const bool *given,
                      diag_t *err)
{
    return eom_velsolver_solve(vs, vars, given, NULL, err);
}

size_t eom_velsolver_holonomic(const eom_velsolver_t *vs, const size_t **which)
{
    *which = vs->hol;
    return vs->nh;
}

size_t eom_velsolver_solved(const eom_velsolver_t *vs, bool coordinates,
                            const size_t **which)
{
    *which = coordinates ? vs->solved_q : vs->solved_v;
    return coordinates ? vs->nsolved_q : vs->nsolved_v;
}

double eom_velsolver_violation(eom_velsolver_t *vs, const double *vars,
                               char *names, size_t size)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r, len = 0;
    if (size)
        names[0] = '\0';
    if (r == 0)
        return 0.0;
    tape_eval(vs->tape, vars, vs->out, vs->work);
    if (vs->tpos)
        tape_eval(vs->tpos, vars, vs->pout, vs->pwork);
    const double *C = vs->out, *ceff = vs->out + r, *B = vs->out + 2 * r;
    double worst = 0.0;
    for (size_t a = 0, j = 0; a < r; a++) {
        /* Velocity level for every constraint (Ceff: C, or f'), and
         * position level for a holonomic f (C is f; hol[j] == a). */
        double v = fabs(ceff[a]) /
                   eom_constraint_scale(sys, B + a * n, vars, sys->qd);
        double res = ceff[a];
        if (vs->d.holonomic[a]) {
            double p = fabs(C[a]) /
                       eom_constraint_scale(sys, vs->pout + vs->nh + j * n,
                                            vars, sys->q);
            j++;
            if (!(p <= v)) {
                v = p;
                res = C[a];
            }
        }
        if (!(v <= worst) && !isnan(worst))
            worst = v; /* NaN once one is NaN */
        if (!(v <= EOM_STATE_RTOL) && len + 1 < size) {
            int w = isfinite(res)
                        ? snprintf(names + len, size - len,
                                   "%s%s (residual %.6g)", len ? ", " : "",
                                   sys->cname[a], res)
                        : snprintf(names + len, size - len,
                                   "%s%s (not finite)", len ? ", " : "",
                                   sys->cname[a]);
            len = w < 0 ? len : len + (size_t)w < size ? len + (size_t)w
                                                        : size - 1;
        }
    }
    return worst;
}

double eom_constraint_violation(const nh_system_t *sys, const double *vars,
                                char *names, size_t size)
{
    eom_velsolver_t *vs = eom_velsolver_new(sys);
    double v = eom_velsolver_violation(vs, vars, names, size);
    eom_velsolver_free(vs);
    return v;
}

int eom_solve_velocities(const nh_system_t *sys, double *vars,
                         const bool *given, diag_t *err)
{
    eom_velsolver_t *vs = eom_velsolver_new(sys);
    int rc = eom_velsolver_run(vs, vars, given, err);
    eom_velsolver_free(vs);
    return rc;
}

/* ---- the constraints' derivatives and the dependent variables ----------- */

/* The tapes and buffers of eom_velsolver_jacobians (the header of the
 * struct), made once. */
static void eom_velsolver_jacobian_init(eom_velsolver_t *vs)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r, nh = vs->nh;
    if (vs->tceff || r == 0)
        return;
    size_t nv = expr_graph_nvars(sys->g);
    /* J and B by one tape (the same nodes as TPOS's and TAPE's, so the
     * same numbers), Cq by forward-mode derivatives of Ceff along the
     * coordinates it reads: a coordinate no constraint reads (the
     * bicycle's x, y and wheel angles) has a zero column, and its
     * direction would be work on zeros */
    const expr_t **outs = eom_alloc(nh * n + r * n, sizeof *outs);
    for (size_t j = 0; j < nh; j++)
        for (size_t i = 0; i < n; i++)
            outs[j * n + i] = expr_diff(sys->g, sys->C[vs->hol[j]], sys->q[i]);
    for (size_t k = 0; k < r * n; k++)
        outs[nh * n + k] = vs->d.B[k];
    vs->tjac = tape_compile(sys->g, outs, nh * n + r * n, nv);
    free(outs);
    vs->tceff = tape_compile(sys->g, vs->d.Ceff, r, nv);
    if (!vs->tjac || !vs->tceff)
        nh_out_of_memory();
    vs->jval = eom_alloc(nh * n + r * n, sizeof *vs->jval);
    vs->jvwork = eom_alloc(tape_work_size(vs->tjac), sizeof *vs->jvwork);
    bool *read = eom_alloc(nv, sizeof *read);
    size_t nin;
    const uint32_t *in = tape_inputs(vs->tceff, &nin);
    for (size_t k = 0; k < nin; k++)
        read[in[k]] = true;
    vs->jq = eom_alloc(n, sizeof *vs->jq);
    for (size_t i = 0; i < n; i++)
        if (read[sys->q[i]])
            vs->jq[vs->jn++] = i;
    free(read);
    size_t k = vs->jn ? vs->jn : 1, w = tape_work_size(vs->tceff) + 1;
    vs->jdvars = eom_alloc(nv * k, sizeof *vs->jdvars);
    vs->jdout = eom_alloc(r * k, sizeof *vs->jdout);
    vs->jdwork = eom_alloc(w * k, sizeof *vs->jdwork);
    vs->jout = eom_alloc(r + w, sizeof *vs->jout);
    for (size_t d = 0; d < vs->jn; d++)
        vs->jdvars[(size_t)sys->q[vs->jq[d]] * k + d] = 1.0;
}

void eom_velsolver_jacobian_tapes(eom_velsolver_t *vs, const tape_t **tjac,
                                  const tape_t **tceff)
{
    eom_velsolver_jacobian_init(vs);
    *tjac = vs->tjac;
    *tceff = vs->tceff;
}

void eom_velsolver_jacobians(eom_velsolver_t *vs, const eom_t *e,
                             const double *vars, double *J, double *Cq,
                             double *B)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r, nh = vs->nh;
    if (r == 0)
        return;
    eom_velsolver_jacobian_init(vs);
    bool native = e && e->native_jac && e->native_ceff;
    if (native && vs->jnsize < e->ceff_values) {
        free(vs->jnval);
        vs->jnval = eom_alloc(e->ceff_values + 1, sizeof *vs->jnval);
        vs->jnsize = e->ceff_values;
    }
    if (native)
        e->native_jac(vars, vs->jval);
    else
        tape_eval(vs->tjac, vars, vs->jval, vs->jvwork);
    memcpy(J, vs->jval, nh * n * sizeof *J);
    memcpy(B, vs->jval + nh * n, r * n * sizeof *B);
    size_t k = vs->jn;
    memset(Cq, 0, r * n * sizeof *Cq);
    if (k == 0)
        return;
    if (native)
        e->native_ceff(vars, vs->jdvars, (long)k, vs->jout, vs->jdout,
                       vs->jnval, vs->jdwork);
    else
        tape_eval_tangent(vs->tceff, vars, vs->jdvars, k, vs->jout,
                          vs->jdout, vs->jout + r, vs->jdwork);
    for (size_t a = 0; a < r; a++)
        for (size_t d = 0; d < k; d++)
            Cq[a * n + vs->jq[d]] = vs->jdout[a * k + d];
}

void eom_velsolver_pos_tangent(eom_velsolver_t *vs, const double *vars,
                               const double *dvars, size_t k, double *f,
                               double *J, double *df)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, nh = vs->nh;
    if (nh == 0)
        return;
    size_t nout = tape_nout(vs->tpos);
    double *dout = NULL;
    if (k > 0 && dvars) {
        dout = eom_alloc(nout * k, sizeof *dout);
        double *dwork = eom_alloc((tape_work_size(vs->tpos) + 1) * k,
                                  sizeof *dwork);
        tape_eval_tangent(vs->tpos, vars, dvars, k, vs->pout, dout,
                          vs->pwork, dwork);
        free(dwork);
    } else {
        tape_eval(vs->tpos, vars, vs->pout, vs->pwork);
    }
    if (f)
        memcpy(f, vs->pout, nh * sizeof *f);
    if (J)
        memcpy(J, vs->pout + nh, nh * n * sizeof *J);
    if (df && dout)
        memcpy(df, dout, nh * k * sizeof *df);
    free(dout);
}

void eom_velsolver_vel_tangent(eom_velsolver_t *vs, const double *vars,
                               const double *dvars, size_t k, double *ceff,
                               double *B, double *dceff)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r;
    if (r == 0)
        return;
    size_t nout = tape_nout(vs->tape);
    double *dout = NULL;
    if (k > 0 && dvars) {
        dout = eom_alloc(nout * k, sizeof *dout);
        double *dwork = eom_alloc((tape_work_size(vs->tape) + 1) * k,
                                  sizeof *dwork);
        tape_eval_tangent(vs->tape, vars, dvars, k, vs->out, dout, vs->work,
                          dwork);
        free(dwork);
    } else {
        tape_eval(vs->tape, vars, vs->out, vs->work);
    }
    if (ceff)
        memcpy(ceff, vs->out + r, r * sizeof *ceff);
    if (B)
        memcpy(B, vs->out + 2 * r, r * n * sizeof *B);
    if (dceff && dout)
        memcpy(dceff, dout + r * k, r * k * sizeof *dceff);
    free(dout);
}

/* Sorts the N indices of SEL in increasing order (declaration order). */
static void eom_sort_indices(size_t *sel, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && sel[j - 1] > sel[j]; j--) {
            size_t t = sel[j];
            sel[j] = sel[j - 1];
            sel[j - 1] = t;
        }
}

/* ROWS unknowns among the columns of A: initial's choice (not GIVEN,
 * PREFER first), completed from the given ones where that choice falls
 * short at this state; their count. */
static size_t eom_choose_rows(const nh_system_t *sys, const double *A,
                              size_t rows, const bool *given,
                              const bool *prefer, size_t *sel)
{
    size_t n = sys->n;
    bool *none = eom_alloc(n + 1, sizeof *none);
    const bool *excl = given ? given : none;
    size_t k = eom_select_more(sys, A, rows, excl, prefer, sel, 0);
    if (k < rows) {
        for (size_t j = 0; j < k; j++)
            none[sel[j]] = true;
        k = eom_select_more(sys, A, rows, none, NULL, sel, k);
    }
    free(none);
    eom_sort_indices(sel, k);
    return k;
}

int eom_velsolver_choose_from(eom_velsolver_t *vs, const double *J,
                              const double *B, const bool *given_q,
                              const bool *guess_q, const bool *given_v,
                              const bool *guess_v, bool velocities,
                              eom_dependent_t *dep, diag_t *err)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r, nh = vs->nh;
    dep->nq = dep->nv = 0;
    if (r == 0)
        return 0;
    double *buf = eom_alloc(r * n, sizeof *buf);
    int rc = eom_check_independent(sys, B, buf, err);
    free(buf);
    if (rc != 0)
        return rc;
    dep->nq = eom_choose_rows(sys, J, nh, given_q, guess_q, dep->q);
    if (velocities)
        dep->nv = eom_choose_rows(sys, B, r, given_v, guess_v, dep->v);
    /* B of rank r has the f' rows' J of rank nh, so both are full */
    if (dep->nq < nh || (velocities && dep->nv < r))
        return diag_error(err, SRC_SPAN_NONE,
                          "the constraints do not determine %zu "
                          "coordinates and %zu velocities at this state",
                          nh, velocities ? r : 0);
    return 0;
}

int eom_velsolver_choose(eom_velsolver_t *vs, const double *vars,
                         const bool *given_q, const bool *guess_q,
                         const bool *given_v, const bool *guess_v,
                         bool velocities, eom_dependent_t *dep, diag_t *err)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r, nh = vs->nh;
    double *J = eom_alloc(nh * n + 1, sizeof *J);
    double *Cq = eom_alloc(r * n + 1, sizeof *Cq);
    double *B = eom_alloc(r * n + 1, sizeof *B);
    eom_velsolver_jacobians(vs, NULL, vars, J, Cq, B);
    int rc = eom_velsolver_choose_from(vs, J, B, given_q, guess_q, given_v,
                                       guess_v, velocities, dep, err);
    free(J);
    free(Cq);
    free(B);
    return rc;
}

/* ---- speeds from velocities --------------------------------------------- */

typedef struct eom_speed_ctx {
    const nh_system_t *sys;
    tape_t *tape;
    double *vars, *out, *work;
    const double *qd; /* the target velocities */
} eom_speed_ctx_t;

/* Tape outputs: psi (n), Psi (n×m). */
static void eom_speed_resid(void *ctx, const double *x, double *res,
                            double *jac)
{
    eom_speed_ctx_t *c = ctx;
    const nh_system_t *sys = c->sys;
    size_t n = sys->n, m = sys->m;
    for (size_t a = 0; a < m; a++)
        c->vars[sys->z[a]] = x[a];
    tape_eval(c->tape, c->vars, c->out, c->work);
    for (size_t i = 0; i < n; i++) {
        res[i] = c->out[i] - c->qd[i];
        for (size_t a = 0; a < m; a++)
            jac[i * m + a] = c->out[n + i * m + a];
    }
}

/* The tape of eom_speeds_solve: ψ (n), Ψ = ∂ψ/∂z (n×m); NULL (with *err
 * set) when the system has no speeds or a coordinate no kinematic
 * equation. */
static tape_t *eom_speeds_tape(const nh_system_t *sys, diag_t *err)
{
    size_t n = sys->n, m = sys->m;
    if (m == 0) {
        diag_error(err, SRC_SPAN_NONE, "no speeds declared");
        return NULL;
    }
    if (!sys->psi) {
        diag_error(err, SRC_SPAN_NONE, "no kinematic equations declared");
        return NULL;
    }
    expr_graph_t *g = sys->g;
    size_t nout = n + n * m;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    /* A velocity without a kinematic equation is one the constraints
     * determine (kinematics.h): through them it follows the others, so
     * its residual is 0 here. */
    for (size_t i = 0; i < n; i++) {
        outs[i] = sys->psi[i] ? sys->psi[i] : expr_var(g, sys->qd[i]);
        for (size_t a = 0; a < m; a++)
            outs[n + i * m + a] = expr_diff(g, outs[i], sys->z[a]);
    }
    tape_t *t = tape_compile(g, outs, nout, expr_graph_nvars(g));
    if (!t)
        nh_out_of_memory();
    free(outs);
    return t;
}

/* eom_speeds_from_velocities with the tape of eom_speeds_tape. */
static int eom_speeds_solve(const nh_system_t *sys, tape_t *tape,
                            double *vars, diag_t *err)
{
    size_t n = sys->n, m = sys->m, nout = n + n * m;
    eom_speed_ctx_t c = {.sys = sys, .vars = vars, .tape = tape};
    c.out = eom_alloc(nout, sizeof *c.out);
    c.work = eom_alloc(tape_work_size(c.tape), sizeof *c.work);
    double *qd = eom_alloc(n, sizeof *qd);
    double *z = eom_alloc(m, sizeof *z);
    double *z0 = eom_alloc(m, sizeof *z0);
    for (size_t a = 0; a < m; a++)
        z0[a] = vars[sys->z[a]];
    double scale = 1.0;
    for (size_t i = 0; i < n; i++) {
        qd[i] = vars[sys->qd[i]];
        if (fabs(qd[i]) > scale)
            scale = fabs(qd[i]);
    }
    c.qd = qd;
    /* ψ nonlinear in z (the bipendulum's y0 s1) can trap Gauss–Newton
     * in a local minimum of |ψ − q'|: start again from zero and from a
     * few deterministic pseudo-random points until one succeeds. */
    double tol = 1e-9 * scale;
    size_t worst = 0;
    double wres = INFINITY;
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    for (int start = 0; start < 24 && !(wres <= tol); start++) {
        for (size_t a = 0; a < m; a++) {
            double v = z0[a];
            if (start == 0)
                z[a] = isfinite(v) ? v : 0.0;
            else if (start == 1)
                z[a] = 0.0;
            else {
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                double u = (double)(seed >> 11) / 9007199254740992.0;
                z[a] = (4.0 * u - 2.0) * scale;
            }
        }
        eom_least_squares(eom_speed_resid, &c, n, m, z, 0.0);
        wres = 0.0;
        for (size_t i = 0; i < n; i++) {
            double res = c.out[i] - qd[i];
            if (!(fabs(res) <= wres)) {
                wres = fabs(res);
                worst = i;
            }
        }
    }
    int rc = 0;
    if (!(wres <= tol)) {
        rc = diag_error(err, SRC_SPAN_NONE,
                        "no speeds reproduce the velocities: "
                        "%s' differs by %.6g",
                        sys->qname[worst], wres);
        for (size_t a = 0; a < m; a++) /* a failure changes nothing */
            vars[sys->z[a]] = z0[a];
    }
    free(qd);
    free(z);
    free(z0);
    free(c.out);
    free(c.work);
    return rc;
}

int eom_speeds_from_velocities(const nh_system_t *sys, double *vars,
                               diag_t *err)
{
    tape_t *t = eom_speeds_tape(sys, err);
    if (!t)
        return -1;
    int rc = eom_speeds_solve(sys, t, vars, err);
    tape_free(t);
    return rc;
}

int eom_velsolver_speeds(eom_velsolver_t *vs, double *vars, diag_t *err)
{
    if (!vs->tspeed && !(vs->tspeed = eom_speeds_tape(vs->sys, err)))
        return -1;
    return eom_speeds_solve(vs->sys, vs->tspeed, vars, err);
}

/* The tape of eom_velsolver_speed_rates: for each coordinate i, Ψ_ia =
 * ∂ψ_i/∂z_a (m) and β_i = Σ_j ∂ψ_i/∂q_j q_j' + ∂ψ_i/∂t, so that the
 * kinematic equation differentiated along the motion reads q_i'' = β_i +
 * Σ_a Ψ_ia z_a'; zeros for a coordinate without one. */
static tape_t *eom_rates_tape(const nh_system_t *sys)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, m = sys->m, nout = n * (m + 1);
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    for (size_t i = 0; i < n; i++) {
        const expr_t *psi = sys->psi[i];
        const expr_t *beta = expr_num(g, 0);
        for (size_t a = 0; a < m; a++)
            outs[i * (m + 1) + a] =
                psi ? expr_diff(g, psi, sys->z[a]) : expr_num(g, 0);
        for (size_t j = 0; psi && j < n; j++)
            beta = expr_add(g, beta,
                            expr_mul(g, expr_diff(g, psi, sys->q[j]),
                                     expr_var(g, sys->qd[j])));
        if (psi)
            beta = expr_add(g, beta, expr_diff(g, psi, sys->t));
        outs[i * (m + 1) + m] = beta;
    }
    tape_t *t = tape_compile(g, outs, nout, expr_graph_nvars(g));
    if (!t)
        nh_out_of_memory();
    free(outs);
    return t;
}

int eom_velsolver_speed_rates(eom_velsolver_t *vs, double *vars, bool rates,
                              diag_t *err)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, m = sys->m;
    if (eom_velsolver_speeds(vs, vars, err) != 0)
        return -1;
    if (!rates)
        return 0;
    if (!vs->trate)
        vs->trate = eom_rates_tape(sys);
    double *out = eom_alloc(n * (m + 1), sizeof *out);
    double *work = eom_alloc(tape_work_size(vs->trate), sizeof *work);
    double *J = eom_alloc(n * m, sizeof *J), *res = eom_alloc(n, sizeof *res);
    double *d = eom_alloc(m, sizeof *d);
    double *lw = eom_alloc(m * m + m, sizeof *lw);
    size_t *perm = eom_alloc(m, sizeof *perm);
    tape_eval(vs->trate, vars, out, work);
    /* min |Ψ z' + β − q''|² over the coordinates with an equation */
    double scale = 1.0;
    for (size_t i = 0; i < n; i++) {
        if (!sys->psi[i])
            continue;
        for (size_t a = 0; a < m; a++)
            J[i * m + a] = out[i * (m + 1) + a];
        res[i] = out[i * (m + 1) + m] - vars[sys->qdd[i]];
        scale = fmax(scale, fabs(vars[sys->qdd[i]]));
    }
    int rc = 0;
    if (linalg_lsq_step(J, n, m, res, 0.0, d, lw, perm) != 0) {
        rc = diag_error(err, SRC_SPAN_NONE,
                        "the accelerations do not determine the speeds' "
                        "derivatives: the kinematic equations' matrix "
                        "dpsi/dz is singular here");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!sys->psi[i])
            continue;
        double r = res[i];
        for (size_t a = 0; a < m; a++)
            r += J[i * m + a] * d[a];
        if (!(fabs(r) <= 1e-9 * scale)) {
            rc = diag_error(err, SRC_SPAN_NONE,
                            "no speeds' derivatives reproduce the "
                            "accelerations: %s'' differs by %.6g",
                            sys->qname[i], r);
            goto done;
        }
    }
    for (size_t a = 0; a < m; a++)
        vars[sys->zd[a]] = d[a];
done:
    free(out);
    free(work);
    free(J);
    free(res);
    free(d);
    free(lw);
    free(perm);
    return rc;
}
