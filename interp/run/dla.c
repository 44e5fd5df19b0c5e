/*
 * dla.c — the discrete Lagrange–d'Alembert integrator (dla.h; the scheme
 * and its derivation: doc/dla.md).
 *
 * Three tapes carry what a step evaluates, each with forward-mode
 * derivatives (tape_eval_tangent) in the n directions it needs:
 *   G = [L_q, L_q', Q, C_v]  at (m, v, t_m), in the directions of q_{k+1}
 *                            (½ on q, 1/h on q'): the residual of the
 *                            discrete equations and its Jacobian;
 *   F = [f]                  the holonomic constraints at (q_{k+1},
 *                            t_{k+1}), in the directions of q;
 *   P = [L_q', C_vl]         at a state (q, q', t), in the directions of
 *                            q': the momentum, the constraints at the
 *                            velocity level (f' for a holonomic one), and
 *                            as derivatives the mass matrix L_q'q' and W.
 * Must not: allocate or print in dla_step.
 */
#include "interp/run/dla.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/analysis/check.h"
#include "interp/eom/linalg.h"
#include "interp/eom/velocity.h"
#include "interp/expr/tape.h"

/* Newton's method: at most this many iterations per solve. */
#define DLA_MAX_ITER 40

struct dla {
    const nh_system_t *sys;
    size_t n, r, rv, rh, nvars;
    size_t *vel, *hol;          /* the constraints with velocities, and
                                 * the holonomic ones (indices into C) */
    tape_t *tg, *tf, *tp;
    double *work, *dwork;       /* for the largest of the tapes */
    double *x;                  /* a value vector */
    double *dg, *df, *dp;       /* directions of each tape: nvars × n */
    double dg_h;                /* the h that dg holds */
    double *og, *dog;           /* G: 3n + rv values, their derivatives */
    double *of, *dof;           /* F: rh */
    double *op, *dop;           /* P: n + r */
    double *p;                  /* the momentum at the step's start */
    double *w;                  /* W at the step's start: r × n */
    double *jac, *res, *sol, *lsw;
    size_t *perm;
    double *lam;                /* r */
    double *q1, *v1;
    size_t iters;
};

/* Whether C is linear in the velocities of SYS: its second derivatives
 * in them vanish identically. */
static bool dla_linear(const nh_system_t *sys, const expr_t *c)
{
    for (size_t i = 0; i < sys->n; i++) {
        const expr_t *di = expr_diff(sys->g, c, sys->qd[i]);
        for (size_t j = i; j < sys->n; j++)
            if (!expr_is_const(expr_diff(sys->g, di, sys->qd[j]), 0))
                return false;
    }
    return true;
}

static bool dla_has_velocity(const nh_system_t *sys, const expr_t *c)
{
    for (size_t i = 0; i < sys->n; i++)
        if (expr_depends(sys->g, c, sys->qd[i]))
            return true;
    return false;
}

void dla_free(dla_t *d)
{
    if (!d)
        return;
    tape_free(d->tg);
    tape_free(d->tf);
    tape_free(d->tp);
    free(d->vel);
    free(d->hol);
    free(d->work);
    free(d->dwork);
    free(d->x);
    free(d->dg);
    free(d->df);
    free(d->dp);
    free(d->og);
    free(d->dog);
    free(d->of);
    free(d->dof);
    free(d->op);
    free(d->dop);
    free(d->p);
    free(d->w);
    free(d->jac);
    free(d->res);
    free(d->sol);
    free(d->lsw);
    free(d->perm);
    free(d->lam);
    free(d->q1);
    free(d->v1);
    free(d);
}

dla_t *dla_new(const nh_system_t *sys, diag_t *err)
{
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    dla_t *d = xcalloc(1, sizeof *d);
    d->sys = sys;
    d->n = n;
    d->r = r;
    d->vel = xcalloc(r + 1, sizeof *d->vel);
    d->hol = xcalloc(r + 1, sizeof *d->hol);
    for (size_t a = 0; a < r; a++) {
        if (!dla_has_velocity(sys, sys->C[a])) {
            d->hol[d->rh++] = a;
            continue;
        }
        if (!dla_linear(sys, sys->C[a])) {
            diag_error(err, sys->cspan[a],
                       "integrator dla needs constraints linear in the "
                       "velocities; %s is not (choose another integrator)",
                       sys->cname[a]);
            dla_free(d);
            return NULL;
        }
        d->vel[d->rv++] = a;
    }

    const expr_t **out = xcalloc(3 * n + 2 * r + 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i] = expr_diff(g, sys->L, sys->q[i]);
        out[n + i] = expr_diff(g, sys->L, sys->qd[i]);
        out[2 * n + i] = sys->Q[i];
    }
    for (size_t k = 0; k < d->rv; k++)
        out[3 * n + k] = sys->C[d->vel[k]];
    d->nvars = expr_graph_nvars(g);
    d->tg = tape_compile(g, out, 3 * n + d->rv, d->nvars);
    for (size_t k = 0; k < d->rh; k++)
        out[k] = sys->C[d->hol[k]];
    d->tf = tape_compile(g, out, d->rh, d->nvars);
    for (size_t i = 0; i < n; i++)
        out[i] = expr_diff(g, sys->L, sys->qd[i]);
    const expr_t **cv = xcalloc(r + 1, sizeof *cv);
    size_t *holidx = xcalloc(r + 1, sizeof *holidx);
    eom_velocity_level(sys, cv, holidx);
    for (size_t a = 0; a < r; a++)
        out[n + a] = cv[a];
    free(cv);
    free(holidx);
    d->tp = tape_compile(g, out, n + r, d->nvars);
    free(out);
    d->nvars = expr_graph_nvars(g);

    size_t ws = tape_work_size(d->tg);
    if (tape_work_size(d->tf) > ws)
        ws = tape_work_size(d->tf);
    if (tape_work_size(d->tp) > ws)
        ws = tape_work_size(d->tp);
    size_t k = n ? n : 1, nv = d->nvars ? d->nvars : 1, N = n + r;
    d->work = xcalloc(ws + 1, sizeof *d->work);
    d->dwork = xcalloc((ws + 1) * k, sizeof *d->dwork);
    d->x = xcalloc(nv, sizeof *d->x);
    d->dg = xcalloc(nv * k, sizeof *d->dg);
    d->df = xcalloc(nv * k, sizeof *d->df);
    d->dp = xcalloc(nv * k, sizeof *d->dp);
    for (size_t i = 0; i < n; i++) {
        d->df[sys->q[i] * k + i] = 1;
        d->dp[sys->qd[i] * k + i] = 1;
    }
    d->dg_h = NAN;
    d->og = xcalloc(3 * n + d->rv + 1, sizeof *d->og);
    d->dog = xcalloc((3 * n + d->rv + 1) * k, sizeof *d->dog);
    d->of = xcalloc(d->rh + 1, sizeof *d->of);
    d->dof = xcalloc((d->rh + 1) * k, sizeof *d->dof);
    d->op = xcalloc(n + r + 1, sizeof *d->op);
    d->dop = xcalloc((n + r + 1) * k, sizeof *d->dop);
    d->p = xcalloc(k, sizeof *d->p);
    d->w = xcalloc((r + 1) * k, sizeof *d->w);
    d->jac = xcalloc(N * N + 1, sizeof *d->jac);
    d->res = xcalloc(N + 1, sizeof *d->res);
    d->sol = xcalloc(N + 1, sizeof *d->sol);
    d->lsw = xcalloc(2 * N + 2, sizeof *d->lsw);
    d->perm = xcalloc(N + 1, sizeof *d->perm);
    d->lam = xcalloc(r + 1, sizeof *d->lam);
    d->q1 = xcalloc(k, sizeof *d->q1);
    d->v1 = xcalloc(k, sizeof *d->v1);
    return d;
}

const double *dla_multipliers(const dla_t *d) { return d->lam; }

size_t dla_iterations(const dla_t *d) { return d->iters; }

static double dla_max_abs(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double a = fabs(v[i]);
        if (!(a <= m))
            m = a; /* a NaN stays */
    }
    return m;
}

/* P at the state in VARS: the momentum into op[0..n), the constraints
 * at velocity level into op[n..n+r), and their derivatives in q'
 * (L_q'q' and W) into dop. */
static void dla_eval_p(dla_t *d, const double *vars)
{
    tape_eval_tangent(d->tp, vars, d->dp, d->n ? d->n : 1, d->op, d->dop,
                      d->work, d->dwork);
}

/* The velocity on the constraints at (q1, t1) in d->x whose momentum is
 * P1 plus a constraint impulse: Newton on L_q'(q1, v) − P1 − Wᵀν = 0,
 * C_vl(q1, v) = 0 from v = d->x's velocities.  0, or -1. */
static int dla_velocity(dla_t *d, const double *p1, diag_t *err)
{
    const nh_system_t *sys = d->sys;
    size_t n = d->n, r = d->r, N = n + r, k = n ? n : 1;
    double *x = d->x, last = INFINITY;
    for (size_t it = 0; it < DLA_MAX_ITER; it++) {
        dla_eval_p(d, x);
        for (size_t i = 0; i < n; i++)
            d->res[i] = -(d->op[i] - p1[i]);
        for (size_t a = 0; a < r; a++)
            d->res[n + a] = -d->op[n + a];
        /* [L_q'q'  −Wᵀ; W  0] (v, ν) */
        memset(d->jac, 0, N * N * sizeof *d->jac);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                d->jac[i * N + j] = d->dop[i * k + j];
        for (size_t a = 0; a < r; a++)
            for (size_t j = 0; j < n; j++) {
                double wa = d->dop[(n + a) * k + j];
                d->jac[(n + a) * N + j] = wa;
                d->jac[j * N + n + a] = -wa;
            }
        if (linalg_lu(d->jac, N, d->perm, LINALG_RTOL) != 0)
            return diag_error(err, SRC_SPAN_NONE,
                              "the mass matrix and the constraints are "
                              "singular at the step's end");
        linalg_lu_solve(d->jac, N, d->perm, d->res, d->lsw);
        double dv = 0, vs = 0;
        for (size_t i = 0; i < n; i++) {
            x[sys->qd[i]] += d->res[i];
            dv = fmax(dv, fabs(d->res[i]));
            vs = fmax(vs, fabs(x[sys->qd[i]]));
        }
        if (!isfinite(dv))
            return diag_error(err, SRC_SPAN_NONE,
                              "a value is not finite in a step of "
                              "integrator dla (a function outside its "
                              "domain at the step's end)");
        /* converged: the update at rounding, or it stopped shrinking
         * near there (L quadratic in q': exact after one iteration) */
        double tol = 16 * 2.220446049250313e-16 * (vs + 1e-300);
        if (dv <= tol || (it >= 1 && dv >= 0.5 * last && dv <= 1e6 * tol)) {
            dla_eval_p(d, x); /* W at the new state, for the next step */
            return 0;
        }
        last = dv;
    }
    return diag_error(err, SRC_SPAN_NONE,
                      "the velocity on the constraints at the step's end "
                      "did not converge");
}

int dla_step(dla_t *d, double *vars, double h, diag_t *err)
{
    const nh_system_t *sys = d->sys;
    size_t n = d->n, r = d->r, rv = d->rv, N = n + r, k = n ? n : 1;
    double *x = d->x;
    memcpy(x, vars, d->nvars * sizeof *x);
    double t0 = vars[sys->t];

    /* the momentum and W at (q_k, q_k') */
    dla_eval_p(d, x);
    memcpy(d->p, d->op, n * sizeof *d->p);
    for (size_t a = 0; a < r; a++)
        for (size_t j = 0; j < n; j++)
            d->w[a * k + j] = d->dop[(n + a) * k + j];
    if (d->dg_h != h) {
        for (size_t i = 0; i < n; i++) {
            d->dg[sys->q[i] * k + i] = 0.5;
            d->dg[sys->qd[i] * k + i] = 1 / h;
        }
        d->dg_h = h;
    }

    /* Newton on (q_{k+1}, λ) from q_k + h q_k' and the last λ */
    double *q1 = d->q1;
    for (size_t i = 0; i < n; i++)
        q1[i] = vars[sys->q[i]] + h * vars[sys->qd[i]];
    double tm = t0 + h / 2, t1 = t0 + h;
    double last = INFINITY, scale = 0, rnorm = INFINITY;
    bool done = false;
    d->iters = 0;
    for (size_t it = 0; it < DLA_MAX_ITER && !done; it++) {
        d->iters++;
        for (size_t i = 0; i < n; i++) {
            double q0 = vars[sys->q[i]];
            x[sys->q[i]] = 0.5 * (q0 + q1[i]);
            x[sys->qd[i]] = (q1[i] - q0) / h;
        }
        x[sys->t] = tm;
        tape_eval_tangent(d->tg, x, d->dg, k, d->og, d->dog, d->work,
                          d->dwork);
        const double *lq = d->og, *lv = d->og + n, *qf = d->og + 2 * n;
        const double *cvv = d->og + 3 * n;
        const double *dlq = d->dog, *dlv = d->dog + n * k,
                     *dqf = d->dog + 2 * n * k, *dcv = d->dog + 3 * n * k;
        memset(d->jac, 0, N * N * sizeof *d->jac);
        scale = dla_max_abs(d->p, n);
        for (size_t i = 0; i < n; i++) {
            double wl = 0;
            for (size_t a = 0; a < r; a++) {
                wl += d->w[a * k + i] * d->lam[a];
                d->jac[i * N + n + a] = -h * d->w[a * k + i];
            }
            d->res[i] = d->p[i] + 0.5 * h * lq[i] - lv[i] + 0.5 * h * qf[i] -
                        h * wl;
            scale = fmax(scale, fabs(lv[i]));
            for (size_t j = 0; j < n; j++)
                d->jac[i * N + j] = 0.5 * h * dlq[i * k + j] -
                                    dlv[i * k + j] + 0.5 * h * dqf[i * k + j];
        }
        for (size_t c = 0; c < rv; c++) {
            size_t a = d->vel[c];
            d->res[n + a] = cvv[c];
            for (size_t j = 0; j < n; j++)
                d->jac[(n + a) * N + j] = dcv[c * k + j];
        }
        if (d->rh) {
            for (size_t i = 0; i < n; i++) {
                x[sys->q[i]] = q1[i];
                x[sys->qd[i]] = 0;
            }
            x[sys->t] = t1;
            tape_eval_tangent(d->tf, x, d->df, k, d->of, d->dof, d->work,
                              d->dwork);
            for (size_t c = 0; c < d->rh; c++) {
                size_t a = d->hol[c];
                /* f/h: the same units as the other rows */
                d->res[n + a] = d->of[c] / h;
                for (size_t j = 0; j < n; j++)
                    d->jac[(n + a) * N + j] = d->dof[c * k + j] / h;
            }
        }
        rnorm = dla_max_abs(d->res, N);
        if (!isfinite(rnorm))
            return diag_error(err, SRC_SPAN_NONE,
                              "a value is not finite in a step of %g of "
                              "integrator dla (a function outside its domain "
                              "between this time and the next step)",
                              h);
        if (linalg_lu(d->jac, N, d->perm, LINALG_RTOL) != 0)
            return diag_error(err, SRC_SPAN_NONE,
                              "the discrete equations of integrator dla are "
                              "singular (the mass matrix, or the constraints "
                              "dependent)");
        for (size_t i = 0; i < N; i++)
            d->sol[i] = -d->res[i];
        linalg_lu_solve(d->jac, N, d->perm, d->sol, d->lsw);
        double dq = 0, qs = 0;
        for (size_t i = 0; i < n; i++) {
            q1[i] += d->sol[i];
            dq = fmax(dq, fabs(d->sol[i]));
            /* the step's increment, and the coordinate's own rounding */
            qs = fmax(qs, fabs(q1[i] - vars[sys->q[i]]) +
                              fabs(q1[i]) / 64);
        }
        for (size_t a = 0; a < r; a++)
            d->lam[a] += d->sol[n + a];
        /* converged: the update is at the rounding of the step's
         * increment, or it stopped shrinking there */
        double tol = 64 * 2.220446049250313e-16 * (qs + 1e-300);
        if (dq <= tol || (it >= 2 && dq >= last && dq <= 1e6 * tol))
            done = true;
        last = dq;
    }
    if (!done)
        return diag_error(err, SRC_SPAN_NONE,
                          "integrator dla: Newton's method did not converge "
                          "in a step of %g (residual %g against momenta of "
                          "%g; a smaller h helps)",
                          h, rnorm, scale);

    /* the momentum at the end, and the velocity on the constraints */
    for (size_t i = 0; i < n; i++) {
        double q0 = vars[sys->q[i]];
        x[sys->q[i]] = 0.5 * (q0 + q1[i]);
        x[sys->qd[i]] = (q1[i] - q0) / h;
    }
    x[sys->t] = tm;
    tape_eval(d->tg, x, d->og, d->work);
    double *p1 = d->v1;
    for (size_t i = 0; i < n; i++)
        p1[i] = 0.5 * h * d->og[i] + d->og[n + i] + 0.5 * h * d->og[2 * n + i];
    for (size_t i = 0; i < n; i++) {
        x[sys->q[i]] = q1[i];
        /* x's velocities: the step's, a start for the velocity */
    }
    x[sys->t] = t1;
    if (dla_velocity(d, p1, err) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        vars[sys->q[i]] = x[sys->q[i]];
        vars[sys->qd[i]] = x[sys->qd[i]];
    }
    vars[sys->t] = t1;
    return 0;
}

/* ---- a run ------------------------------------------------------------------ */

/* "CAUSE at t = T; state: q = …, q' = …" (sim.c's form) into *err. */
static int dla_error_at(diag_t *err, const nh_system_t *sys,
                        const double *vars, const char *cause)
{
    char buf[DIAG_MSG_MAX], num[40];
    int w = snprintf(buf, sizeof buf, "%s at t = %s; state:", cause,
                     expr_format_number(vars[sys->t], num, sizeof num));
    size_t len = w < 0 ? 0 : (size_t)w < sizeof buf ? (size_t)w : sizeof buf - 1;
    for (size_t k = 0; k < 2 * sys->n && len < sizeof buf - 1; k++) {
        uint32_t v = k < sys->n ? sys->q[k] : sys->qd[k - sys->n];
        w = snprintf(buf + len, sizeof buf - len, "%s %s = %s", k ? "," : "",
                     expr_var_name(sys->g, v),
                     expr_format_number(vars[v], num, sizeof num));
        if (w < 0 || (size_t)w >= sizeof buf - len) {
            strcpy(buf + (sizeof buf - 5), " ...");
            break;
        }
        len += (size_t)w;
    }
    return diag_error(err, SRC_SPAN_NONE, "%s", buf);
}

typedef struct dla_mon {
    eom_t *e;
    const nh_system_t *sys;
    eom_velsolver_t *vs; /* the speeds of a method that has them */
    size_t nh;
    double *out, *work, *row;
    double E0, Escale;
} dla_mon_t;

/* The residual max |C| at the value vector V (holonomic constraints at
 * position and velocity level, the others at velocity level). */
static double dla_residual(dla_mon_t *m, const double *v)
{
    eom_monitors(m->e, v, m->out, m->work);
    double res = dla_max_abs(m->out, m->nh + m->sys->r);
    return res;
}

/* Completes VARS into m->row (the chosen equations' accelerations and
 * multipliers, and their speeds from the velocities), updates the
 * summary's residual and energy, and appends the row unless !RECORD. */
static int dla_sample(dla_mon_t *m, const double *vars, sim_samples_t *samples,
                      bool record, bool first, sim_summary_t *sum,
                      diag_t *err)
{
    const nh_system_t *sys = m->sys;
    size_t width = samples->width;
    memcpy(m->row, vars, width * sizeof *m->row);
    diag_t d = {0};
    if ((m->vs && eom_velsolver_speeds(m->vs, m->row, &d) != 0) ||
        eom_accel(m->e, m->row, &d) != 0)
        return dla_error_at(err, sys, vars, d.msg);
    double res = dla_residual(m, m->row);
    if (!(res <= sum->max_residual))
        sum->max_residual = res;
    const double *eo = m->out + m->nh + sys->r; /* L, ∂L/∂q' */
    double E = -eo[0], S = fabs(eo[0]);
    for (size_t i = 0; i < sys->n; i++) {
        double t = m->row[sys->qd[i]] * eo[1 + i];
        E += t;
        S += fabs(t);
    }
    if (first) {
        m->E0 = E;
        sum->energy0 = E;
        m->Escale = fabs(E) >= 1e-8 * S && E != 0.0 ? fabs(E)
                    : S > 0.0                       ? S
                                                    : 1.0;
    } else {
        double drift = fabs(E - m->E0) / m->Escale;
        if (!(drift <= sum->energy_drift))
            sum->energy_drift = drift;
    }
    if (record) {
        memcpy(samples->data + samples->n * width, m->row,
               width * sizeof *m->row);
        samples->n++;
        sum->samples++;
    }
    return 0;
}

int dla_run(eom_t *e, const nh_system_t *sys, double *vars,
            const sim_options_t *opt, double h, sim_samples_t *samples,
            sim_summary_t *summary, diag_t *err)
{
    sim_summary_t sum = {0};
    if (summary)
        *summary = sum;
    size_t width = expr_graph_nvars(sys->g);
    if (samples->width == 0)
        samples->width = width;
    double t0 = vars[sys->t], T = opt->t_end, span = fabs(T - t0);
    double dir = T >= t0 ? 1 : -1, H = fabs(h), step = opt->step;
    char n1[40], n2[40];
    /* samples at multiples of the step (doc/language.md) */
    double ratio = step / H;
    double per = floor(ratio + 0.5);
    if (!(per >= 1) || fabs(ratio - per) > 1e-9 * ratio)
        return diag_error(err, SRC_SPAN_NONE,
                          "integrator dla samples every whole number of "
                          "steps: the sample step %s is not a multiple of "
                          "h = %s",
                          expr_format_number(step, n1, sizeof n1),
                          expr_format_number(H, n2, sizeof n2));
    double nsteps_d = ceil(span / H - 1e-9);
    size_t max_steps = opt->max_steps ? opt->max_steps : SIM_DEFAULT_MAX_STEPS;
    if (!(nsteps_d <= (double)max_steps))
        return diag_error(err, SRC_SPAN_NONE,
                          "integrator dla would take %.0f steps of h = %s, "
                          "more than max_steps (%zu): take a larger h or "
                          "set max_steps",
                          nsteps_d, expr_format_number(H, n1, sizeof n1),
                          max_steps);
    size_t nsteps = (size_t)nsteps_d, every = (size_t)per;
    bool skip_first = samples->n > 0 &&
                      samples->data[(samples->n - 1) * width + sys->t] == t0;
    size_t add = nsteps / every + 2;
    size_t max_samples = opt->max_samples ? opt->max_samples
                                          : SIM_DEFAULT_MAX_SAMPLES;
    if (samples->n + add > max_samples ||
        (samples->n + add) > SIM_MAX_SAMPLE_BYTES / (width * sizeof(double)))
        return diag_error(err, SRC_SPAN_NONE,
                          "the run would record %zu samples, more than the "
                          "%zu allowed: take a larger step",
                          samples->n + add,
                          samples->n + add > max_samples
                              ? max_samples
                              : SIM_MAX_SAMPLE_BYTES / (width * sizeof(double)));
    dla_t *d = dla_new(sys, err);
    if (!d)
        return -1;
    if (samples->n + add > samples->cap) {
        double *p = realloc(samples->data,
                            (samples->n + add) * width * sizeof(double));
        if (!p)
            nh_out_of_memory();
        samples->data = p;
        samples->cap = samples->n + add;
    }
    dla_mon_t m = {e, sys, NULL, 0, NULL, NULL, NULL, 0, 0};
    const size_t *hol;
    m.nh = eom_monitor_holonomic(e, &hol);
    m.out = xcalloc(eom_monitor_count(e) + 1, sizeof *m.out);
    m.work = xcalloc(eom_monitor_work_size(e) + 1, sizeof *m.work);
    m.row = xcalloc(width, sizeof *m.row);
    if (sys->m > 0 && (eom_method(e) == EOM_MAGGI ||
                       eom_method(e) == EOM_GIBBS_APPELL))
        m.vs = eom_velsolver_new(sys);
    {
        int verdict = eom_memo_energy(e);
        if (verdict == 0) {
            check_report_t rep;
            diag_t dd = {0};
            verdict = 3;
            if (check_analyse(sys, vars, &rep, &dd) == 0) {
                verdict = rep.energy_conserved ? 1 : 2;
                check_report_free(&rep);
            }
            eom_set_memo_energy(e, verdict);
        }
        sum.energy_conserved = verdict == 1;
    }

    double *cur = xcalloc(width, sizeof *cur);
    memcpy(cur, vars, width * sizeof *cur);
    sum.t_reached = t0;
    int rc = dla_sample(&m, cur, samples, !skip_first, true, &sum, err);
    for (size_t k = 1; k <= nsteps && rc == 0; k++) {
        if (nh_stop_due(opt->stop)) {
            rc = dla_error_at(err, sys, cur, nh_stop_reason(opt->stop));
            break;
        }
        double tk = k == nsteps ? T : t0 + dir * (double)k * H;
        diag_t dd = {0};
        if (dla_step(d, cur, tk - cur[sys->t], &dd) != 0) {
            rc = dla_error_at(err, sys, cur, dd.msg);
            break;
        }
        cur[sys->t] = tk;
        sum.steps++;
        sum.t_reached = tk; /* an interrupt's message says it (motion.c) */
        sum.evaluations += dla_iterations(d);
        if (k % every == 0 || k == nsteps) {
            rc = dla_sample(&m, cur, samples, true, false, &sum, err);
        } else {
            double res = dla_residual(&m, cur);
            if (!(res <= sum.max_residual))
                sum.max_residual = res;
        }
    }
    if (rc == 0)
        memcpy(vars, m.row, width * sizeof *vars);
    else if (sum.samples > 0) /* LANGUAGE.md §6: at the last sample */
        memcpy(vars, samples->data + (samples->n - 1) * width,
               width * sizeof *vars);
    if (summary)
        *summary = sum;
    free(cur);
    free(m.out);
    free(m.work);
    free(m.row);
    eom_velsolver_free(m.vs);
    dla_free(d);
    return rc;
}
