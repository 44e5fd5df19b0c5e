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

/* The scale of constraint A's value: its velocity terms Σ_i |B_ai q_i'|
 * (for a holonomic f, Σ_i |∂f/∂q_i q_i| with Q the coordinates), at
 * least 1. */
static double eom_constraint_scale(const nh_system_t *sys, const double *B,
                                   const double *vars, size_t a,
                                   const uint32_t *of)
{
    double s = 0.0;
    for (size_t i = 0; i < sys->n; i++)
        s += fabs(B[a * sys->n + i] * vars[of[i]]);
    return s > 1.0 ? s : 1.0;
}

/* Selects up to r velocities among the unknown ones whose columns of B
 * are independent at the values in VARS.  The rule: walk the
 * coordinates from the last declared to the first and keep a velocity
 * when its column raises the rank — so models that declare the
 * dependent coordinates last (the sphere: x, y after the angles) get
 * those solved, as a user writing `initial` expects. */
static size_t eom_select_unknowns(const nh_system_t *sys, const double *B,
                                  const bool *given, size_t *sel)
{
    size_t n = sys->n, r = sys->r, k = 0;
    double *cols = eom_alloc(r * (r + 1), sizeof *cols);
    for (size_t i = n; i-- > 0 && k < r;) {
        if (given[i])
            continue;
        sel[k] = i;
        for (size_t a = 0; a < r; a++)
            for (size_t j = 0; j <= k; j++)
                cols[a * (k + 1) + j] = B[a * n + sel[j]];
        if (linalg_rank(cols, r, k + 1, 1e-10) == k + 1)
            k++;
    }
    free(cols);
    return k;
}

/* What a velocity solve needs, derived and compiled once. */
struct eom_velsolver {
    const nh_system_t *sys;
    eom_derived_t d; /* the constraint rows only */
    tape_t *tape;    /* C (r), Ceff (r), B (r×n) */
    double *out, *work;
};

eom_velsolver_t *eom_velsolver_new(const nh_system_t *sys)
{
    size_t n = sys->n, r = sys->r;
    eom_velsolver_t *vs = eom_alloc(1, sizeof *vs);
    vs->sys = sys;
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
        abort();
    free(outs);
    vs->out = eom_alloc(nout, sizeof *vs->out);
    vs->work = eom_alloc(tape_work_size(vs->tape), sizeof *vs->work);
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
    free(vs);
}

int eom_velsolver_run(eom_velsolver_t *vs, double *vars, const bool *given,
                      diag_t *err)
{
    const nh_system_t *sys = vs->sys;
    size_t n = sys->n, r = sys->r;
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
        if (!(fabs(f) <= 1e-9 * eom_constraint_scale(sys, B, vars, a, sys->q)))
            rc = diag_error(err, sys->cspan[a],
                            "the coordinates violate constraint %s: "
                            "residual %.6g",
                            sys->cname[a], f);
    }

    if (rc == 0) {
        size_t k = eom_select_unknowns(sys, B, given, sel);
        if (k < r) {
            /* A nonlinear constraint may have a degenerate Jacobian at
             * the starting values (e.g. x'^2 + y'^2 = v^2 at y' = 0): try
             * once from unit unknown velocities. */
            double *save = eom_alloc(n, sizeof *save);
            for (size_t i = 0; i < n; i++) {
                save[i] = vars[sys->qd[i]];
                if (!given[i])
                    vars[sys->qd[i]] = 1.0;
            }
            eom_vel_eval(&c);
            size_t *sel2 = eom_alloc(r, sizeof *sel2);
            size_t k2 = eom_select_unknowns(sys, B, given, sel2);
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
        const double *ceff = c.out + r;
        for (size_t a = 0; a < r && rc == 0; a++) {
            double res = ceff[a];
            if (!(fabs(res) <=
                  1e-9 * eom_constraint_scale(sys, B, vars, a, sys->qd)))
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

int eom_solve_velocities(const nh_system_t *sys, double *vars,
                         const bool *given, diag_t *err)
{
    eom_velsolver_t *vs = eom_velsolver_new(sys);
    int rc = eom_velsolver_run(vs, vars, given, err);
    eom_velsolver_free(vs);
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

int eom_speeds_from_velocities(const nh_system_t *sys, double *vars,
                               diag_t *err)
{
    size_t n = sys->n, m = sys->m;
    if (m == 0)
        return diag_error(err, SRC_SPAN_NONE, "no speeds declared");
    if (!sys->psi)
        return diag_error(err, SRC_SPAN_NONE, "no kinematic equations declared");
    for (size_t i = 0; i < n; i++)
        if (!sys->psi[i])
            return diag_error(err, SRC_SPAN_NONE,
                              "coordinate %s has no kinematic equation",
                              sys->qname[i]);
    expr_graph_t *g = sys->g;
    size_t nout = n + n * m;
    const expr_t **outs = eom_alloc(nout, sizeof *outs);
    for (size_t i = 0; i < n; i++) {
        outs[i] = sys->psi[i];
        for (size_t a = 0; a < m; a++)
            outs[n + i * m + a] = expr_diff(g, sys->psi[i], sys->z[a]);
    }
    eom_speed_ctx_t c = {.sys = sys, .vars = vars};
    c.tape = tape_compile(g, outs, nout, expr_graph_nvars(g));
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
    tape_free(c.tape);
    free(outs);
    return rc;
}
