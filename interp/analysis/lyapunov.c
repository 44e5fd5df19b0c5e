/*
 * lyapunov.c — the Lyapunov exponents of the reduced motion (lyapunov.h,
 * LANGUAGE.md §7.4).
 *
 * Why the tangent flow in the independent variables, integrated with the
 * motion.  The exponents are those of the motion on the constraint
 * manifold, whose coordinates are the independent variables x of §7.2;
 * its linearization along the run is δx' = A(y(t)) δx with the exact A of
 * linearize.c, taken at each evaluation where the run is (lin_matrix_at:
 * the constraints' Jacobians there, the dependent variables of the
 * choice made at the start).  Integrating the k tangent vectors with the
 * motion, by the same stepper and under the same error control, keeps
 * them as accurate as the motion itself; finite differences of nearby
 * runs (the other classical road) lose half the digits and need a
 * renormalisation of their own.  The motion is the full state y of the
 * equations (what simulate integrates), so that the dependent variables
 * follow the constraints as they do there.  Only explicit steppers: an
 * implicit one would need the Jacobian of A(y) δx, a second derivative of
 * the motion.
 *
 * The variables: the independent ones of §7.2, those `initial` leaves
 * free, as long as the constraints determine the others well.  A motion
 * can leave that region (a sleigh given x' and th' solves y' =
 * x' tan(th), which fails as its heading turns through 90°, and no fixed
 * choice serves that motion); there the dependent variables are chosen
 * anew (lin_rechoose: those best determined at that state), the tangent
 * vectors are carried over to the new variables, δx_new = C δx_old, and
 * log|det C|, the change of volume of that change of variables, is added
 * to the integral of the divergence — so that the sum of the exponents
 * and the mean divergence still agree, each now of the motion in the
 * variables used along the run.  Over a long run the exponents do not
 * depend on the variables (a bounded change of variables changes them by
 * O(1/T)).  With VARS the variables are fixed: the restriction's motion
 * depends on which variables are independent.
 *
 * The re-orthonormalisation: every S (the step), and sooner when the
 * vectors' lengths spread over more than LYAP_SPREAD or the diagonal of
 * their R over more than LYAP_TURN (their directions then hold fewer
 * digits than the exponents need), Δ = QR, the logs of
 * |R_jj| are added up and Δ becomes Q.  The exponents do not depend on
 * when this happens (the product of the R's is the R of the whole flow),
 * only their rounding does.
 *
 * Must not: print, except the progress line; allocate in the ODE
 * callback (lin_matrix_at uses the buffers of lin_choose).
 */
#include "interp/analysis/lyapunov.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_odeiv2.h>
#include <gsl/gsl_vector.h>

#include "interp/base/util.h"
#include "interp/eom/linalg.h"

/* Orthonormalise before a step when the tangent vectors' lengths spread
 * over more than this (or one leaves [1/LYAP_BIG, LYAP_BIG]). */
#define LYAP_SPREAD 1e4
#define LYAP_BIG 1e100
/* ... or the diagonal of their R over more than this (lyap_spread): the
 * bicycle's lyapunov to 100 with step 5 then agrees with the default
 * step's exponents to 3e-10 and its sum with the mean divergence to the
 * tolerance (1e4 left them 4e-8 apart). */
#define LYAP_TURN 1e2
/* The tangent vectors' absolute error is held to this times rtol (they
 * are of length 1 after each QR).  Measured on the bench bicycle's
 * lyapunov to 100 against a run at rtol 1e-13, atol 1e-15: 1 gives the
 * exponents to 2.7e-11 in 4010 steps, 10 to 2.8e-10 (2.2e-11 of
 * |lyap10| = 13.04, below rtol = 1e-10) in 3012, 100 to 3.7e-9 (above
 * it); the sum's distance from the mean divergence follows the error
 * (doc/performance.md). */
#define LYAP_TANGENT_TOL 10.0
/* The step-collapse test of simulate (sim.c): a step below this times
 * max(|t|, the largest step) is no progress. */
#define LYAP_MIN_REL_STEP 1e-14
/* The dependent variables are chosen anew where the constraints
 * determine them worse than this (lin_chart_quality). */
#define LYAP_CHART 0.02

static const struct {
    const char *name;
    const gsl_odeiv2_step_type *const *type;
} lyap_steppers[] = {
    {"rk2", &gsl_odeiv2_step_rk2},     {"rk4", &gsl_odeiv2_step_rk4},
    {"rkf45", &gsl_odeiv2_step_rkf45}, {"rkck", &gsl_odeiv2_step_rkck},
    {"rk8pd", &gsl_odeiv2_step_rk8pd},
};

static const gsl_odeiv2_step_type *lyap_type(const char *name)
{
    if (!name)
        return gsl_odeiv2_step_rk8pd;
    for (size_t i = 0; i < sizeof lyap_steppers / sizeof *lyap_steppers; i++)
        if (strcmp(name, lyap_steppers[i].name) == 0)
            return *lyap_steppers[i].type;
    return NULL;
}

bool lyap_integrator_ok(const char *name) { return lyap_type(name) != NULL; }

typedef struct lyap_ctx {
    lin_t *l;
    const nh_system_t *sys;
    size_t ns, N, k;
    const uint32_t *sv, *deriv;
    const size_t *keep;  /* k indices into lin_vars */
    double *vars;        /* scratch value vector */
    double *A;           /* N×N */
    /* the point (t, y) of the last evaluation, when it succeeded: A and
     * VARS are its own (the chart unchanged since) */
    bool have_last;
    double last_t, *last_y;
    double *nzv;         /* lyap_f's scratch: a row's nonzero entries (k) */
    size_t *nzm;         /* and their places in Δ */
    const nh_stop_t *stop;
    bool stopped;
    size_t nevals;
    /* the last failed evaluation */
    bool failed;
    diag_t fail;
    double fail_t;
    double *fail_y;
} lyap_ctx_t;

static bool lyap_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* The motion and its tangent flow: Y = (y, Δ (k×k, a row per variable
 * kept, a column per vector), ∫ tr A dt). */
static int lyap_f(double t, const double Y[], double dY[], void *params)
{
    lyap_ctx_t *c = params;
    if (nh_stop_due(c->stop)) {
        c->stopped = true;
        return GSL_EBADFUNC;
    }
    c->nevals++;
    if (c->fail.set)
        diag_clear(&c->fail);
    size_t ns = c->ns, N = c->N, k = c->k;
    int rc = 0;
    if (!lyap_finite(Y, ns + k * k + 1) || !isfinite(t)) {
        rc = diag_error(&c->fail, SRC_SPAN_NONE,
                        "the state is not finite (the integration "
                        "diverged)");
    } else if (!(c->have_last && t == c->last_t &&
                 memcmp(Y, c->last_y, ns * sizeof *Y) == 0)) {
        for (size_t i = 0; i < ns; i++)
            c->vars[c->sv[i]] = Y[i];
        c->vars[c->sys->t] = t;
        rc = lin_matrix_at(c->l, c->vars, c->A, &c->fail);
        c->have_last = rc == 0;
        c->last_t = t;
        memcpy(c->last_y, Y, ns * sizeof *Y);
    }
    /* (else the motion is where the last evaluation left it: the start
     * of a step after an orthonormalisation, whose Δ alone changed; A
     * and the values in VARS are those of that point) */
    if (rc == 0) {
        for (size_t i = 0; i < ns; i++)
            dY[i] = c->vars[c->deriv[i]];
        if (!lyap_finite(dY, ns))
            rc = diag_error(&c->fail, SRC_SPAN_NONE,
                            "the equations of motion give a value that is "
                            "not finite");
    }
    if (rc != 0) {
        if (!c->fail.set)
            diag_error(&c->fail, SRC_SPAN_NONE,
                       "the equations of motion cannot be evaluated");
        c->failed = true;
        c->fail_t = t;
        memcpy(c->fail_y, Y, ns * sizeof *Y);
        return GSL_EBADFUNC;
    }
    /* dΔ = A Δ, each entry a sum over the nonzero entries of A's row, in
     * order: the columns of the coordinates nothing reads are zero, and
     * a zero term (±0) would not change a sum that starts at +0 (which
     * is never −0), so this is the sum over every term */
    const double *M = Y + ns;
    double *dM = dY + ns, tr = 0.0;
    for (size_t i = 0; i < k; i++) {
        const double *row = c->A + c->keep[i] * N;
        tr += row[c->keep[i]];
        size_t nz = 0;
        for (size_t m = 0; m < k; m++)
            if (row[c->keep[m]] != 0) {
                c->nzv[nz] = row[c->keep[m]];
                c->nzm[nz++] = m * k;
            }
        for (size_t j = 0; j < k; j++) {
            double s = 0.0;
            for (size_t p = 0; p < nz; p++)
                s += c->nzv[p] * M[c->nzm[p] + j];
            dM[i * k + j] = s;
        }
    }
    dY[ns + k * k] = tr;
    return GSL_SUCCESS;
}

/* " at t = T; state: a = 1, b' = 2" after CAUSE, into *err. */
static int lyap_error_at(diag_t *err, const lyap_ctx_t *c, double t,
                         const double *y, const char *cause)
{
    char buf[DIAG_MSG_MAX], num[40];
    const expr_graph_t *g = c->sys->g;
    int w = snprintf(buf, sizeof buf, "%s at t = %s; state:", cause,
                     expr_format_number(t, num, sizeof num));
    size_t len = w < 0 ? 0 : (size_t)w < sizeof buf ? (size_t)w
                                                    : sizeof buf - 1;
    for (size_t i = 0; i < c->ns && len < sizeof buf - 1; i++) {
        w = snprintf(buf + len, sizeof buf - len, "%s %s = %s", i ? "," : "",
                     expr_var_name(g, c->sv[i]),
                     expr_format_number(y[i], num, sizeof num));
        if (w < 0 || (size_t)w >= sizeof buf - len) {
            strcpy(buf + (sizeof buf - 5), " ...");
            break;
        }
        len += (size_t)w;
    }
    return diag_error(err, SRC_SPAN_NONE, "%s", buf);
}

/* Δ = QR: adds log|R_jj| to LSUM and makes Δ (k×k in M) Q.  -1 when a
 * vector has vanished (an exponent of −∞). */
static int lyap_orthonormalise(double *M, size_t k, gsl_vector *tau,
                               gsl_matrix *Q, gsl_matrix *R, double *lsum)
{
    gsl_matrix_view mv = gsl_matrix_view_array(M, k, k);
    if (gsl_linalg_QR_decomp(&mv.matrix, tau) != GSL_SUCCESS)
        return -1;
    for (size_t j = 0; j < k; j++) {
        double r = fabs(M[j * k + j]);
        if (!(r > 0.0) || !isfinite(r))
            return -1;
        lsum[j] += log(r);
    }
    gsl_linalg_QR_unpack(&mv.matrix, tau, Q, R);
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++)
            M[i * k + j] = gsl_matrix_get(Q, i, j);
    return 0;
}

/* Whether the vectors have spread too far (the header): their lengths,
 * or — what the lengths do not show — their directions.  Vectors that
 * all grow at the largest rate keep lengths alike while they turn
 * towards the one leading direction, and the others' exponents are then
 * lost in rounding (the bicycle's lyapunov to 100 step 5: λ10 = −7.30
 * instead of −13.04).  So the diagonal of their R (a QR of a copy, in
 * SCRATCH, k×k, with TAU) must not spread over more than LYAP_TURN. */
static bool lyap_spread(const double *M, size_t k, double *scratch,
                        gsl_vector *tau)
{
    double lo = INFINITY, hi = 0.0;
    for (size_t j = 0; j < k; j++) {
        double s = 0.0;
        for (size_t i = 0; i < k; i++)
            s += M[i * k + j] * M[i * k + j];
        s = sqrt(s);
        lo = fmin(lo, s);
        hi = fmax(hi, s);
    }
    if (hi > LYAP_SPREAD * lo || hi > LYAP_BIG || lo < 1.0 / LYAP_BIG)
        return true;
    if (k < 2)
        return false;
    memcpy(scratch, M, k * k * sizeof *scratch);
    gsl_matrix_view mv = gsl_matrix_view_array(scratch, k, k);
    if (gsl_linalg_QR_decomp(&mv.matrix, tau) != GSL_SUCCESS)
        return true;
    double rlo = INFINITY, rhi = 0.0;
    for (size_t j = 0; j < k; j++) {
        double r = fabs(scratch[j * k + j]);
        rlo = fmin(rlo, r);
        rhi = fmax(rhi, r);
    }
    return !(rhi <= LYAP_TURN * rlo);
}

static int lyap_decreasing(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y ? 1 : 0;
}

/* The progress line on a terminal, after the first second. */
typedef struct lyap_progress {
    FILE *out;
    double start;
    int last;
    bool shown;
} lyap_progress_t;

static void lyap_progress(lyap_progress_t *p, double frac)
{
    if (!p->out || (!p->shown && nh_clock() - p->start < 1.0))
        return;
    int pct = (int)(100.0 * frac);
    pct = pct < 0 ? 0 : pct > 99 ? 99 : pct;
    if (pct == p->last)
        return;
    p->shown = true;
    p->last = pct;
    fprintf(p->out, "\rlyapunov: %2d%%", pct);
    fflush(p->out);
}

int lyap_run(lin_t *l, eom_t *e, const nh_system_t *sys, double *vars,
             const lyap_options_t *opt, double *exponents,
             lyap_summary_t *summary, diag_t *err)
{

    lyap_summary_t sum = {0};
    if (summary)
        *summary = sum;
    size_t N = lin_size(l), k = opt->keep ? opt->nkeep : N;
    size_t ns = eom_state_size(e), nv = expr_graph_nvars(sys->g);
    double t0 = vars[sys->t], t_end = opt->t_end, S = opt->step;
    const gsl_odeiv2_step_type *type = lyap_type(opt->integrator);
    if (!type)
        return diag_error(err, SRC_SPAN_NONE,
                          "lyapunov integrates with an explicit method: "
                          "rk2, rk4, rkf45, rkck or rk8pd, not %s",
                          opt->integrator);
    if (!isfinite(t_end) || !isfinite(t0) || !(S > 0.0) || !isfinite(S))
        return diag_error(err, SRC_SPAN_NONE,
                          "lyapunov needs a finite end and a positive step");
    size_t *all = NULL;
    if (!opt->keep) {
        all = xcalloc(N + 1, sizeof *all);
        for (size_t j = 0; j < N; j++)
            all[j] = j;
    }
    lyap_ctx_t c = {.l = l, .sys = sys, .ns = ns, .N = N, .k = k,
                    .sv = eom_state_vars(e), .deriv = eom_state_derivs(e),
                    .keep = opt->keep ? opt->keep : all, .stop = opt->stop};
    c.vars = xcalloc(nv + 1, sizeof *c.vars);
    memcpy(c.vars, vars, nv * sizeof *vars);
    c.A = xcalloc(N * N + 1, sizeof *c.A);
    c.nzv = xcalloc(k + 1, sizeof *c.nzv);
    c.last_y = xcalloc(ns + 1, sizeof *c.last_y);
    c.nzm = xcalloc(k + 1, sizeof *c.nzm);
    c.fail_y = xcalloc(ns + 1, sizeof *c.fail_y);
    size_t D = ns + k * k + 1;
    double *Y = xcalloc(D, sizeof *Y), *Yprev = xcalloc(D, sizeof *Y);
    double *lsum = xcalloc(k + 1, sizeof *lsum);
    /* a change of variables: C, C·Δ, LU's permutation */
    double *C = xcalloc(N * N + 1, sizeof *C), *CM = xcalloc(N * N + 1,
                                                            sizeof *CM);
    size_t *perm = xcalloc(N + 1, sizeof *perm);
    for (size_t i = 0; i < ns; i++)
        Y[i] = vars[c.sv[i]];
    for (size_t j = 0; j < k; j++)
        Y[ns + j * k + j] = 1.0;
    gsl_vector *tau = gsl_vector_alloc(k ? k : 1);
    gsl_matrix *Q = gsl_matrix_alloc(k ? k : 1, k ? k : 1);
    gsl_matrix *R = gsl_matrix_alloc(k ? k : 1, k ? k : 1);
    double *spread = xcalloc(k * k + 1, sizeof *spread);
    if (!tau || !Q || !R)
        nh_out_of_memory();

    gsl_error_handler_t *old_handler = gsl_set_error_handler_off();
    gsl_odeiv2_system gsys = {lyap_f, NULL, D, &c};
    double dir = t_end >= t0 ? 1.0 : -1.0, span = fabs(t_end - t0);
    gsl_odeiv2_driver *drv = gsl_odeiv2_driver_alloc_y_new(
        &gsys, type, dir * span, opt->atol, opt->rtol);
    if (!drv)
        nh_out_of_memory();
    {
        /* The tangent vectors are of length 1 after each QR: their
         * absolute error is held to LYAP_TANGENT_TOL rtol (their
         * relative accuracy), not to atol, which is meant for the
         * motion's own scale (a tangent component near 0 would otherwise
         * ask 1e-12 of a vector of length 1, and steps several times
         * shorter than the motion needs).  The motion and the
         * divergence's integral keep the standard control. */
        double *sa = xcalloc(D, sizeof *sa);
        double tan_scale =
            opt->atol > 0
                ? fmax(1.0, LYAP_TANGENT_TOL * opt->rtol / opt->atol)
                : 1.0;
        for (size_t i = 0; i < D; i++)
            sa[i] = i >= ns && i < ns + k * k ? tan_scale : 1.0;
        gsl_odeiv2_control *ctl = gsl_odeiv2_control_scaled_new(
            opt->atol, opt->rtol, 1.0, 0.0, sa, D);
        free(sa);
        if (!ctl)
            nh_out_of_memory();
        gsl_odeiv2_control_free(drv->c);
        drv->c = ctl;
        gsl_odeiv2_control_set_driver(drv->c, drv);
    }
    size_t max_steps = opt->max_steps ? opt->max_steps
                                      : LYAP_DEFAULT_MAX_STEPS;
    lyap_progress_t prog = {NULL, nh_clock(), -1, false};
    if (opt->progress && isatty(fileno(opt->progress)))
        prog.out = opt->progress;
    /* the first step: a thousandth of the interval between
     * orthonormalisations; the control grows it fivefold a step */
    double h = dir * 1e-3 * fmin(S, span), t = t0, hmax = fabs(h);
    double kd = floor(span / S + 1e-9);
    int rc = 0;
    for (double j = 1; rc == 0 && t != t_end; j++) {
        double tk = j > kd ? t_end : t0 + dir * j * S;
        if (fabs(tk - t_end) <= 1e-9 * S)
            tk = t_end;
        while (rc == 0 && t != tk) {
            double tprev = t;
            memcpy(Yprev, Y, D * sizeof *Y);
            c.failed = false;
            int st = gsl_odeiv2_evolve_apply(drv->e, drv->c, drv->s, &gsys,
                                             &t, tk, &h, Y);
            if (st == GSL_EBADFUNC && !c.stopped && c.failed &&
                !(c.fail_t == tprev &&
                  memcmp(c.fail_y, Yprev, ns * sizeof *Y) == 0)) {
                /* a trial stage out of the equations' domain: shorter */
                t = tprev;
                memcpy(Y, Yprev, D * sizeof *Y);
                h = 0.5 * dir * fmin(fabs(h), fabs(tk - t));
                gsl_odeiv2_step_reset(drv->s);
                if (fabs(h) >= LYAP_MIN_REL_STEP * fmax(fabs(t), hmax))
                    continue;
                rc = lyap_error_at(err, &c, c.fail_t, c.fail_y,
                                   c.fail.msg);
                break;
            }
            if (st != GSL_SUCCESS) {
                if (c.stopped)
                    rc = lyap_error_at(err, &c, tprev, Yprev,
                                       nh_stop_reason(opt->stop));
                else if (c.failed)
                    rc = lyap_error_at(err, &c, c.fail_t, c.fail_y,
                                       c.fail.msg);
                else {
                    char cause[200], hb[40];
                    snprintf(cause, sizeof cause,
                             "the integrator cannot take a step (%s; step "
                             "size %s)",
                             gsl_strerror(st),
                             expr_format_number(h, hb, sizeof hb));
                    rc = lyap_error_at(err, &c, tprev, Yprev, cause);
                }
                break;
            }
            sum.steps++;
            if (fabs(h) < LYAP_MIN_REL_STEP * fmax(fabs(t), hmax) &&
                t != tk) {
                rc = lyap_error_at(err, &c, t, Y,
                                   "the integrator's step size collapsed: "
                                   "the motion runs into a singular state");
                break;
            }
            hmax = fmax(hmax, fabs(h));
            if (sum.steps >= max_steps) {
                char cause[300];
                snprintf(cause, sizeof cause,
                         "the run needs more than %zu integrator steps: "
                         "a shorter time, looser rtol/atol, or `set "
                         "max_steps = ...`",
                         max_steps);
                rc = lyap_error_at(err, &c, t, Y, cause);
                break;
            }
            if (nh_stop_due(opt->stop)) {
                rc = lyap_error_at(err, &c, t, Y, nh_stop_reason(opt->stop));
                break;
            }
            if (!opt->keep && lin_chart_quality(l) < LYAP_CHART) {
                /* the dependent variables anew (the header) */
                bool changed;
                c.have_last = false; /* VARS and perhaps the chart */
                for (size_t i = 0; i < ns; i++)
                    c.vars[c.sv[i]] = Y[i];
                c.vars[sys->t] = t;
                diag_t d = {0};
                if (lin_rechoose(l, c.vars, C, &changed, &d) != 0) {
                    rc = lyap_error_at(err, &c, t, Y, d.msg);
                    break;
                }
                if (changed) {
                    double *M = Y + ns;
                    for (size_t i = 0; i < N; i++)
                        for (size_t j = 0; j < N; j++) {
                            double v = 0.0;
                            for (size_t m = 0; m < N; m++)
                                v += C[i * N + m] * M[m * N + j];
                            CM[i * N + j] = v;
                        }
                    memcpy(M, CM, N * N * sizeof *M);
                    double ld = 0.0;
                    if (linalg_lu(C, N, perm, LINALG_RTOL) != 0) {
                        rc = lyap_error_at(err, &c, t, Y,
                                           "the change of the dependent "
                                           "variables is singular");
                        break;
                    }
                    for (size_t i = 0; i < N; i++) /* 1/U_ii there */
                        ld -= log(fabs(C[i * N + i]));
                    Y[ns + k * k] += ld;
                    sum.charts++;
                    gsl_odeiv2_evolve_reset(drv->e);
                    gsl_odeiv2_step_reset(drv->s);
                }
            }
            if (t == tk || lyap_spread(Y + ns, k, spread, tau)) {
                if (lyap_orthonormalise(Y + ns, k, tau, Q, R, lsum) != 0) {
                    rc = lyap_error_at(err, &c, t, Y,
                                       "the tangent vectors degenerated "
                                       "(an exponent of -infinity)");
                    break;
                }
                sum.orthonormalisations++;
                /* Y changed: the evolve object's rates at the start of
                 * the next step are stale (GSL 2 keeps the last step's
                 * end), and so is the stepper's state */
                gsl_odeiv2_evolve_reset(drv->e);
                gsl_odeiv2_step_reset(drv->s);
            }
            lyap_progress(&prog, span > 0 ? fabs(t - t0) / span : 1.0);
        }
    }
    if (prog.shown) {
        fprintf(prog.out, "\r%*s\r", 14, "");
        fflush(prog.out);
    }
    if (rc == 0) {
        /* the final state, completed */
        for (size_t i = 0; i < ns; i++)
            c.vars[c.sv[i]] = Y[i];
        c.vars[sys->t] = t_end;
        diag_t d = {0};
        if (eom_accel(e, c.vars, &d) != 0)
            rc = lyap_error_at(err, &c, t_end, Y, d.msg);
    }
    if (rc == 0) {
        double T = t_end - t0;
        sum.k = k;
        for (size_t j = 0; j < k; j++)
            exponents[j] = lsum[j] / T;
        qsort(exponents, k, sizeof *exponents, lyap_decreasing);
        for (size_t j = 0; j < k; j++)
            sum.sum += exponents[j];
        sum.divergence = Y[ns + k * k] / T;
        memcpy(vars, c.vars, nv * sizeof *vars);
    }
    sum.evaluations = c.nevals;
    if (summary)
        *summary = sum;
    gsl_odeiv2_driver_free(drv);
    gsl_set_error_handler(old_handler);
    gsl_vector_free(tau);
    gsl_matrix_free(Q);
    gsl_matrix_free(R);
    free(spread);
    free(all);
    free(c.vars);
    free(c.A);
    free(c.nzv);
    free(c.last_y);
    free(c.nzm);
    free(c.fail_y);
    free(Y);
    free(Yprev);
    free(lsum);
    free(C);
    free(CM);
    free(perm);
    return rc;
}
