/*
 * sim.c — `simulate` (LANGUAGE.md §6): GSL odeiv2 integration of the
 * equations of motion of eom.h, sampling, monitors and projection.
 *
 * Why evolve/step rather than gsl_odeiv2_driver_apply: the driver hides
 * the individual steps, and a run needs them — the constraint residual is
 * monitored after every step, `project` pulls the state back onto the
 * constraints after every step, progress is shown while the run goes on,
 * and a failure must be reported with the time and state of the step that
 * failed.  So a driver is allocated (gsl_odeiv2_driver_alloc_y_new: it
 * owns the step, control and evolve objects and wires the driver pointer
 * that rk1imp, rk2imp, rk4imp, msadams and msbdf need to read the error
 * levels), and the run calls gsl_odeiv2_evolve_apply on the driver's
 * parts (the public fields d->e, d->c, d->s) one step at a time, with the
 * next sample time as the limit: evolve shortens the last step of each
 * interval so that it lands exactly on t0 + k·step, and keeps the step
 * size it proposes for the next interval.
 *
 * The Jacobian the implicit steppers need (rk1imp rk2imp rk4imp bsimp
 * msbdf) is exact: the derivatives of the motion in the state's
 * directions and in t, by forward-mode differentiation of the method's
 * tape and implicit differentiation of its dense solve (eom_tangent, the
 * machinery of `linearize`: doc/stability.md), ns + 1 directions in one
 * pass, into buffers reserved before the run.  It used to be central
 * differences of eom_rhs, 2·(ns + 1) right-hand sides per Jacobian with
 * about 10 correct digits; sim_options_t.jacobian_differences keeps that
 * road for the benchmark that compares the two (bench/bench.c).
 *
 * Projection (`project`): holonomic constraints f(q, t) = 0 at position
 * level by Newton with the least-norm correction Δq = −Jᵀ(JJᵀ)⁻¹f,
 * J = ∂f/∂q; then, for the methods whose state holds every velocity
 * (lagrange, multipliers, second_kind), every constraint at velocity
 * level (f' for a holonomic f) by the correction of least kinetic-energy
 * norm Δq' = −M⁻¹Bᵀ(BM⁻¹Bᵀ)⁻¹C (minimises ½Δq'ᵀMΔq' subject to the
 * linearised constraint; Newton iterations for nonlinear ones).  The
 * methods whose state is (q, independent q') or (q, z) — voronec, naive,
 * maggi, gibbs_appell — derive the remaining velocities from the state,
 * so their velocity-level constraints hold by construction; only their
 * coordinates are projected, at position level.  After a projection that
 * changed the state a one-step method is reset and goes on from it; the
 * multistep ones (msadams, msbdf) only when the projection moved the
 * state well beyond their error level (sim_after_step says why).
 *
 * Monitors: max |C| after every step (after projection) on what the state
 * determines — position level always, velocity level for the (q, q')
 * methods — and at every sample on the completed value vector (both
 * levels, every method).  The energy function E = Σ q_i' ∂L/∂q_i' − L at
 * every sample; it is reported as conserved when check.h's verdict says
 * so (Benenti Theorem 11.6: ideal homogeneous constraints do no work, so
 * with no forces but potential ones and nothing depending on t, E is
 * constant).
 *
 * Failures: the ODE callback returns GSL_EBADFUNC when eom_rhs fails (a
 * singular matrix, a non-finite value) or the state is not finite, after
 * recording the time, the state and the cause; sim_run turns that into an
 * error.  Nothing longjmps, nothing allocates in the callbacks.
 *
 * Must not: print except the progress line; change the system.
 */
#include "interp/run/sim.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>

#include "interp/base/util.h"
#include "interp/analysis/check.h"
#include "interp/eom/linalg.h"
#include "interp/expr/tape.h"
#include "interp/run/event.h"

/* With `project`, msadams and msbdf restart from the projected state
 * when it lies more than this many times the one-step error level away
 * from theirs (see sim_after_step).  Measured on a Cartesian pendulum at
 * rtol 1e-8: 10 costs 1.5–3 times the steps of the plain run, 100 about
 * 1.1–1.5 times, and both are more accurate than the plain run (whose
 * constraint drift spoils the phase); 1 restarts at every step and
 * integrates at order 1. */
#define SIM_MULTISTEP_RESTART 100.0

/* Newton iterations of a projection (quadratic convergence: 2–3 are
 * used in practice). */
#define SIM_NEWTON_MAX 8

/* ---- integrators ---------------------------------------------------- */

const char *const sim_integrators[] = {
    "rk2",     "rk4",    "rkf45",  "rkck",  "rk8pd", "msadams",
    "rk1imp",  "rk2imp", "rk4imp", "bsimp", "msbdf", NULL,
};

static const gsl_odeiv2_step_type *sim_step_type(const char *name)
{
    if (!name)
        return gsl_odeiv2_step_rk8pd;
    static const struct {
        const char *name;
        const gsl_odeiv2_step_type *const *type;
    } table[] = {
        {"rk2", &gsl_odeiv2_step_rk2},       {"rk4", &gsl_odeiv2_step_rk4},
        {"rkf45", &gsl_odeiv2_step_rkf45},   {"rkck", &gsl_odeiv2_step_rkck},
        {"rk8pd", &gsl_odeiv2_step_rk8pd},   {"msadams", &gsl_odeiv2_step_msadams},
        {"rk1imp", &gsl_odeiv2_step_rk1imp}, {"rk2imp", &gsl_odeiv2_step_rk2imp},
        {"rk4imp", &gsl_odeiv2_step_rk4imp}, {"bsimp", &gsl_odeiv2_step_bsimp},
        {"msbdf", &gsl_odeiv2_step_msbdf},
    };
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
        if (strcmp(name, table[k].name) == 0)
            return *table[k].type;
    return NULL;
}

bool sim_integrator_known(const char *name)
{
    return name && sim_step_type(name) != NULL;
}

bool sim_integrator_implicit(const char *name)
{
    static const char *const implicit[] = {"rk1imp", "rk2imp", "rk4imp",
                                           "bsimp", "msbdf"};
    for (size_t k = 0; name && k < sizeof implicit / sizeof *implicit; k++)
        if (strcmp(name, implicit[k]) == 0)
            return true;
    return false;
}

/* ---- small helpers ---------------------------------------------------- */

static void *sim_alloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

static double sim_max_abs(const double *v, size_t n)
{
    double m = 0.0;
    for (size_t k = 0; k < n; k++) {
        if (isnan(v[k]))
            return NAN;
        if (fabs(v[k]) > m)
            m = fabs(v[k]);
    }
    return m;
}

static bool sim_all_finite(const double *v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!isfinite(v[k]))
            return false;
    return true;
}

/* Whether the method's ODE state holds every velocity q' (so velocity
 * constraints can drift and be projected). */
static bool sim_state_has_velocities(const eom_t *e)
{
    switch (eom_method(e)) {
    case EOM_LAGRANGE:
    case EOM_MULTIPLIERS:
    case EOM_SECOND_KIND:
        return true;
    default:
        return false;
    }
}

/* ---- the constraints: residual and projection --------------------------- */

typedef struct sim_cons {
    const nh_system_t *sys;
    size_t n, r, nh;
    size_t *hol;   /* the holonomic constraints' indices (nh) */
    tape_t *tf;    /* f_k (nh) */
    tape_t *tcv;   /* Cv_a (r): C, or f' for a holonomic f */
    tape_t *tpos;  /* f (nh), J = ∂f/∂q (nh×n); NULL unless projecting */
    tape_t *tvel;  /* Cv (r), B = ∂Cv/∂q' (r×n), M upper (n(n+1)/2);
                      NULL unless projecting velocities */
    double *out, *work;
    double *A, *X, *H, *w, *d, *tmp;
    size_t *perm;
} sim_cons_t;

static void sim_tape_sizes(const tape_t *t, size_t *nout, size_t *nwork)
{
    if (!t)
        return;
    if (tape_nout(t) > *nout)
        *nout = tape_nout(t);
    if (tape_work_size(t) > *nwork)
        *nwork = tape_work_size(t);
}

static tape_t *sim_compile(const nh_system_t *sys, const expr_t *const *outs,
                           size_t nout)
{
    tape_t *t = tape_compile(sys->g, outs, nout, expr_graph_nvars(sys->g));
    if (!t)
        nh_out_of_memory();
    return t;
}

/* Derives and compiles what the residual needs and, when POS / VEL, what
 * the position / velocity projections need. */
static void sim_cons_init(sim_cons_t *c, const nh_system_t *sys, bool pos,
                          bool vel)
{
    memset(c, 0, sizeof *c);
    expr_graph_t *g = sys->g;
    size_t n = sys->n, r = sys->r;
    c->sys = sys;
    c->n = n;
    c->r = r;

    c->hol = sim_alloc(r, sizeof *c->hol);
    const expr_t **cv = sim_alloc(r, sizeof *cv);
    c->nh = eom_velocity_level(sys, cv, c->hol); /* f' (LANGUAGE.md §4) */
    size_t nh = c->nh;
    const expr_t **fo = sim_alloc(nh + nh * n, sizeof *fo);
    for (size_t k = 0; k < nh; k++)
        fo[k] = sys->C[c->hol[k]];
    c->tf = sim_compile(sys, fo, nh);
    c->tcv = sim_compile(sys, cv, r);
    if (pos && nh > 0) {
        for (size_t k = 0; k < nh; k++)
            for (size_t i = 0; i < n; i++)
                fo[nh + k * n + i] = expr_diff(g, fo[k], sys->q[i]);
        c->tpos = sim_compile(sys, fo, nh + nh * n);
    }
    if (vel && r > 0) {
        size_t nu = n * (n + 1) / 2, k = 0;
        const expr_t **vo = sim_alloc(r + r * n + nu, sizeof *vo);
        for (size_t a = 0; a < r; a++) {
            vo[a] = cv[a];
            for (size_t i = 0; i < n; i++)
                vo[r + a * n + i] = expr_diff(g, cv[a], sys->qd[i]);
        }
        for (size_t i = 0; i < n; i++) {
            const expr_t *p = expr_diff(g, sys->L, sys->qd[i]);
            for (size_t j = i; j < n; j++)
                vo[r + r * n + k++] = expr_diff(g, p, sys->qd[j]);
        }
        c->tvel = sim_compile(sys, vo, r + r * n + nu);
        free(vo);
    }
    size_t nout = 1, nwork = 1;
    sim_tape_sizes(c->tf, &nout, &nwork);
    sim_tape_sizes(c->tcv, &nout, &nwork);
    sim_tape_sizes(c->tpos, &nout, &nwork);
    sim_tape_sizes(c->tvel, &nout, &nwork);
    c->out = sim_alloc(nout, sizeof *c->out);
    c->work = sim_alloc(nwork, sizeof *c->work);
    size_t big = n > r ? n : r;
    c->A = sim_alloc(big * big, sizeof *c->A);
    c->X = sim_alloc(n * (r ? r : 1), sizeof *c->X);
    c->H = sim_alloc(big * big, sizeof *c->H);
    c->w = sim_alloc(big, sizeof *c->w);
    c->d = sim_alloc(big, sizeof *c->d);
    c->tmp = sim_alloc(big, sizeof *c->tmp);
    c->perm = sim_alloc(big, sizeof *c->perm);
    free(fo);
    free(cv);
}

static void sim_cons_free(sim_cons_t *c)
{
    free(c->hol);
    tape_free(c->tf);
    tape_free(c->tcv);
    tape_free(c->tpos);
    tape_free(c->tvel);
    free(c->out);
    free(c->work);
    free(c->A);
    free(c->X);
    free(c->H);
    free(c->w);
    free(c->d);
    free(c->tmp);
    free(c->perm);
    memset(c, 0, sizeof *c);
}

/* max |f| over the holonomic constraints and, when VEL, max |Cv| over all
 * (VARS must then hold every velocity).  NaN when a value is NaN. */
static double sim_cons_residual(sim_cons_t *c, const double *vars, bool vel)
{
    double m = 0.0;
    if (c->nh > 0) {
        tape_eval(c->tf, vars, c->out, c->work);
        m = sim_max_abs(c->out, c->nh);
    }
    if (vel && c->r > 0 && !isnan(m)) {
        tape_eval(c->tcv, vars, c->out, c->work);
        double v = sim_max_abs(c->out, c->r);
        m = isnan(v) || v > m ? v : m;
    }
    return m;
}

/* Newton at position level: q ← q − Jᵀ(JJᵀ)⁻¹f until the correction is
 * at round-off.  Sets *changed when VARS changed. */
static int sim_project_pos(sim_cons_t *c, double *vars, bool *changed,
                           diag_t *err)
{
    const nh_system_t *sys = c->sys;
    size_t n = c->n, nh = c->nh;
    if (!c->tpos)
        return 0;
    for (int it = 0; it < SIM_NEWTON_MAX; it++) {
        tape_eval(c->tpos, vars, c->out, c->work);
        const double *f = c->out, *J = c->out + nh;
        if (!sim_all_finite(c->out, nh + nh * n))
            return diag_error(err, SRC_SPAN_NONE,
                              "projection: a holonomic constraint or its "
                              "derivative is not finite");
        if (sim_max_abs(f, nh) == 0.0)
            return 0;
        /* H = J Jᵀ (nh×nh) */
        for (size_t k = 0; k < nh; k++)
            for (size_t l = 0; l < nh; l++) {
                double s = 0.0;
                for (size_t i = 0; i < n; i++)
                    s += J[k * n + i] * J[l * n + i];
                c->H[k * nh + l] = s;
            }
        if (linalg_lu(c->H, nh, c->perm, LINALG_RTOL) != 0)
            return diag_error(err, SRC_SPAN_NONE,
                              "projection: the Jacobian ∂f/∂q of the "
                              "holonomic constraints is rank-deficient");
        memcpy(c->w, f, nh * sizeof *c->w);
        linalg_lu_solve(c->H, nh, c->perm, c->w, c->tmp);
        double dn = 0.0, qn = 0.0;
        for (size_t i = 0; i < n; i++) {
            double d = 0.0;
            for (size_t k = 0; k < nh; k++)
                d -= J[k * n + i] * c->w[k];
            double *q = &vars[sys->q[i]];
            if (d != 0.0)
                *changed = true;
            *q += d;
            dn = fabs(d) > dn ? fabs(d) : dn;
            qn = fabs(*q) > qn ? fabs(*q) : qn;
        }
        if (!(dn > 4.0 * DBL_EPSILON * (1.0 + qn)))
            break;
    }
    return 0;
}

/* Newton at velocity level with the kinetic-energy metric:
 * q' ← q' − M⁻¹Bᵀ(BM⁻¹Bᵀ)⁻¹Cv.  When M is singular at the state (a
 * degenerate Lagrangian) the Euclidean metric is used instead. */
static int sim_project_vel(sim_cons_t *c, double *vars, bool *changed,
                           diag_t *err)
{
    const nh_system_t *sys = c->sys;
    size_t n = c->n, r = c->r;
    if (!c->tvel)
        return 0;
    for (int it = 0; it < SIM_NEWTON_MAX; it++) {
        tape_eval(c->tvel, vars, c->out, c->work);
        const double *C = c->out, *B = c->out + r, *U = c->out + r + r * n;
        if (!sim_all_finite(c->out, r + r * n + n * (n + 1) / 2))
            return diag_error(err, SRC_SPAN_NONE,
                              "projection: a constraint, B or M is not "
                              "finite");
        if (sim_max_abs(C, r) == 0.0)
            return 0;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++) {
                c->A[i * n + j] = U[k];
                c->A[j * n + i] = U[k];
                k++;
            }
        bool metric = linalg_lu(c->A, n, c->perm, LINALG_RTOL) == 0;
        /* X = M⁻¹Bᵀ (n×r), column a solves M x = B_a. */
        for (size_t a = 0; a < r; a++) {
            for (size_t i = 0; i < n; i++)
                c->d[i] = B[a * n + i];
            if (metric)
                linalg_lu_solve(c->A, n, c->perm, c->d, c->tmp);
            for (size_t i = 0; i < n; i++)
                c->X[i * r + a] = c->d[i];
        }
        /* H = B X (r×r) */
        for (size_t a = 0; a < r; a++)
            for (size_t b = 0; b < r; b++) {
                double s = 0.0;
                for (size_t i = 0; i < n; i++)
                    s += B[a * n + i] * c->X[i * r + b];
                c->H[a * r + b] = s;
            }
        if (linalg_lu(c->H, r, c->perm, LINALG_RTOL) != 0)
            return diag_error(err, SRC_SPAN_NONE,
                              "projection: the constraint matrix B is "
                              "rank-deficient");
        memcpy(c->w, C, r * sizeof *c->w);
        linalg_lu_solve(c->H, r, c->perm, c->w, c->tmp);
        double dn = 0.0, vn = 0.0;
        for (size_t i = 0; i < n; i++) {
            double d = 0.0;
            for (size_t a = 0; a < r; a++)
                d -= c->X[i * r + a] * c->w[a];
            double *v = &vars[sys->qd[i]];
            if (d != 0.0)
                *changed = true;
            *v += d;
            dn = fabs(d) > dn ? fabs(d) : dn;
            vn = fabs(*v) > vn ? fabs(*v) : vn;
        }
        if (!(dn > 4.0 * DBL_EPSILON * (1.0 + vn)))
            break;
    }
    return 0;
}

double sim_residual(const nh_system_t *sys, const double *vars)
{
    sim_cons_t c;
    sim_cons_init(&c, sys, false, false);
    double m = sim_cons_residual(&c, vars, true);
    sim_cons_free(&c);
    return m;
}

struct sim_projector {
    sim_cons_t c;
};

sim_projector_t *sim_projector_new(const nh_system_t *sys)
{
    sim_projector_t *p = sim_alloc(1, sizeof *p);
    sim_cons_init(&p->c, sys, true, true);
    return p;
}

int sim_projector_run(sim_projector_t *p, double *vars, diag_t *err)
{
    bool changed = false;
    int rc = sim_project_pos(&p->c, vars, &changed, err);
    if (rc == 0)
        rc = sim_project_vel(&p->c, vars, &changed, err);
    return rc;
}

void sim_projector_free(sim_projector_t *p)
{
    if (!p)
        return;
    sim_cons_free(&p->c);
    free(p);
}

int sim_project(const nh_system_t *sys, double *vars, diag_t *err)
{
    sim_projector_t *p = sim_projector_new(sys);
    int rc = sim_projector_run(p, vars, err);
    sim_projector_free(p);
    return rc;
}

/* ---- samples ------------------------------------------------------------ */

void sim_samples_free(sim_samples_t *s)
{
    if (!s)
        return;
    free(s->data);
    free(s->section);
    memset(s, 0, sizeof *s);
}

/* Frees the rows too: the capacity is counted in rows of the old width,
 * and the next run may record wider rows (fuzz finding 006). */
void sim_samples_clear(sim_samples_t *s)
{
    if (!s)
        return;
    free(s->data);
    s->data = NULL;
    s->n = s->cap = 0;
    free(s->section);
    s->section = NULL;
}

/* ---- the ODE callbacks ----------------------------------------------------- */

typedef struct sim_ctx {
    eom_t *e;
    const nh_system_t *sys;
    size_t ns;
    const uint32_t *sv;  /* the state variables */
    double *vars;        /* scratch value vector for eom_rhs */
    double *yj, *f1, *f2; /* the finite-difference Jacobian */
    double *dvars;        /* the exact one: graph variables × (ns + 1) */
    size_t nvars;
    const uint32_t *deriv; /* the variable of each state's rate */
    bool differences;     /* sim_options_t.jacobian_differences */
    size_t nevals, njac;
    /* Looked at before every evaluation, so that a step of a large model
     * (13 factorisations of its mass matrix) does not delay a stop. */
    const nh_stop_t *stop;
    bool stopped;
    eom_native_rhs_fn native; /* eom_native_rhs, taken once per run */
    /* The last failed evaluation: cause, time, state. */
    bool failed;
    diag_t fail;
    double fail_t;
    double *fail_y;
} sim_ctx_t;

static int sim_ode_f(double t, const double y[], double dydt[], void *params)
{
    sim_ctx_t *c = params;
    if (nh_stop_due(c->stop)) {
        c->stopped = true;
        return GSL_EBADFUNC; /* GSL restores the step's start */
    }
    c->nevals++;
    int rc = 0;
    if (c->fail.set)
        diag_clear(&c->fail);
    if (!sim_all_finite(y, c->ns) || !isfinite(t))
        rc = diag_error(&c->fail, SRC_SPAN_NONE,
                        "the state is not finite (the integration "
                        "diverged)");
    else if ((!c->native || c->native(t, y, c->vars, dydt) != 0) &&
             eom_rhs(c->e, t, y, dydt, c->vars, &c->fail) != 0)
        rc = -1; /* on success dydt is finite (eom.h): not checked again */
    if (rc == 0)
        return GSL_SUCCESS;
    if (!c->fail.set)
        diag_error(&c->fail, SRC_SPAN_NONE, "the equations of motion "
                                            "cannot be evaluated");
    c->failed = true;
    c->fail_t = t;
    memcpy(c->fail_y, y, c->ns * sizeof *y);
    return GSL_EBADFUNC;
}

/* Central differences (sim_options_t.jacobian_differences):
 * ∂f_i/∂y_j ≈ (f(y + h e_j) − f(y − h e_j)) / 2h, h = ε^(1/3)·max(|y_j|, 1),
 * rounded so that y ± h is exact; the same in t for ∂f/∂t.  GSL's layout:
 * dfdy[i·dim + j] = ∂f_i/∂y_j. */
static int sim_ode_jac_differences(double t, const double y[], double *dfdy,
                                   double dfdt[], sim_ctx_t *c)
{
    size_t ns = c->ns;
    const double eps3 = cbrt(DBL_EPSILON);
    memcpy(c->yj, y, ns * sizeof *y);
    for (size_t j = 0; j < ns; j++) {
        double yj = y[j];
        double h = eps3 * fmax(fabs(yj), 1.0);
        volatile double tmp = yj + h; /* make h exactly representable */
        h = tmp - yj;
        c->yj[j] = yj + h;
        int s = sim_ode_f(t, c->yj, c->f1, c);
        if (s != GSL_SUCCESS)
            return s;
        c->yj[j] = yj - h;
        s = sim_ode_f(t, c->yj, c->f2, c);
        if (s != GSL_SUCCESS)
            return s;
        c->yj[j] = yj;
        for (size_t i = 0; i < ns; i++)
            dfdy[i * ns + j] = (c->f1[i] - c->f2[i]) / (2.0 * h);
    }
    double ht = eps3 * fmax(fabs(t), 1.0);
    volatile double tt = t + ht;
    ht = tt - t;
    int s = sim_ode_f(t + ht, y, c->f1, c);
    if (s != GSL_SUCCESS)
        return s;
    s = sim_ode_f(t - ht, y, c->f2, c);
    if (s != GSL_SUCCESS)
        return s;
    for (size_t i = 0; i < ns; i++)
        dfdt[i] = (c->f1[i] - c->f2[i]) / (2.0 * ht);
    return GSL_SUCCESS;
}

/* The exact Jacobian (the header comment): the state's ns directions and
 * t's, seeded into c->dvars, through eom_tangent; a failure is recorded
 * as sim_ode_f records one. */
static int sim_ode_jac(double t, const double y[], double *dfdy,
                       double dfdt[], void *params)
{
    sim_ctx_t *c = params;
    if (c->differences)
        return sim_ode_jac_differences(t, y, dfdy, dfdt, c);
    if (nh_stop_due(c->stop)) {
        c->stopped = true;
        return GSL_EBADFUNC;
    }
    size_t ns = c->ns, K = ns + 1;
    c->njac++;
    if (c->fail.set)
        diag_clear(&c->fail);
    memset(c->dvars, 0, c->nvars * K * sizeof *c->dvars);
    for (size_t k = 0; k < ns; k++) {
        c->vars[c->sv[k]] = y[k];
        c->dvars[(size_t)c->sv[k] * K + k] = 1.0;
    }
    c->vars[c->sys->t] = t;
    c->dvars[(size_t)c->sys->t * K + ns] = 1.0;
    int rc = 0;
    if (!sim_all_finite(y, ns) || !isfinite(t))
        rc = diag_error(&c->fail, SRC_SPAN_NONE,
                        "the state is not finite (the integration "
                        "diverged)");
    else if (eom_tangent(c->e, c->vars, c->dvars, K, &c->fail) != 0)
        rc = -1;
    for (size_t i = 0; i < ns && rc == 0; i++) {
        const double *row = c->dvars + (size_t)c->deriv[i] * K;
        memcpy(dfdy + i * ns, row, ns * sizeof *dfdy);
        dfdt[i] = row[ns];
        if (!sim_all_finite(row, K))
            rc = diag_error(&c->fail, SRC_SPAN_NONE,
                            "a non-finite value in the Jacobian of the "
                            "motion");
    }
    if (rc == 0)
        return GSL_SUCCESS;
    c->failed = true;
    c->fail_t = t;
    memcpy(c->fail_y, y, ns * sizeof *y);
    return GSL_EBADFUNC;
}

/* ---- progress ------------------------------------------------------------ */

typedef struct sim_progress {
    FILE *out;      /* NULL: off */
    struct timespec start;
    bool shown;
    int last;       /* last percentage printed */
} sim_progress_t;

static double sim_elapsed(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) +
           1e-9 * (double)(now.tv_nsec - start->tv_nsec);
}

static void sim_progress_init(sim_progress_t *p, FILE *out)
{
    memset(p, 0, sizeof *p);
    p->last = -1;
    if (out && isatty(fileno(out)))
        p->out = out;
    clock_gettime(CLOCK_MONOTONIC, &p->start);
}

static void sim_progress_update(sim_progress_t *p, double frac)
{
    if (!p->out)
        return;
    if (!p->shown && sim_elapsed(&p->start) < 1.0)
        return;
    int pct = (int)(100.0 * frac);
    pct = pct < 0 ? 0 : pct > 99 ? 99 : pct;
    if (pct == p->last)
        return;
    p->shown = true;
    p->last = pct;
    fprintf(p->out, "\rsimulate: %2d%%", pct);
    fflush(p->out);
}

static void sim_progress_end(sim_progress_t *p)
{
    if (p->out && p->shown) {
        fprintf(p->out, "\r%*s\r", 14, "");
        fflush(p->out);
    }
}

/* ---- the run --------------------------------------------------------------- */

typedef struct sim_state {
    eom_t *e;
    const nh_system_t *sys;
    const sim_options_t *opt;
    sim_ctx_t ctx;
    sim_cons_t cons;
    bool has_vel;        /* the ODE state holds every velocity */
    /* the monitors (eom_monitor_tape: f, C at the velocity level, L,
     * ∂L/∂q_i'), native when the equations are compiled */
    double *mout, *mwork;
    size_t mnh;
    /* the state the last step's monitors were computed at (mout holds
     * them): a sample at the same state takes them from there */
    const double *mon_y;
    double mon_t, mon_res;
    double *base;        /* the caller's value vector at the start */
    double *row;         /* a completed value vector (the last sample) */
    double *y, *yprev;
    double *yp;          /* the projected state (project) */
    double *sc;          /* scratch: the error scales of sim_first_step */
    bool multistep;      /* msadams, msbdf: see sim_after_step */
    double E0, Escale;
    sim_summary_t sum;
    gsl_odeiv2_system gsys;
    /* The event (LANGUAGE.md §6.1, event.h), when there is one. */
    const sim_event_t *event;
    event_fn_t *ev;
    int ev_side;         /* the sign of the last nonzero g (0: none yet) */
    double ev_g, ev_dg;  /* g and its rate at the end of the last step */
    double ev_start;     /* the run's first time */
    gsl_odeiv2_driver *drv2; /* the probes' integration (sim_reintegrate) */
    bool exact_rates;    /* the stepper leaves f at a step's ends in its
                            evolve object (dydt_in, dydt_out) */
    /* The ends of the last two steps, for the interpolant: NODE[0..2],
     * oldest first, of which NNODES hold a state (the newest last). */
    double node_t[3];
    double *node_y[3], *node_f[3];
    bool node_f_ok[3];
    size_t nnodes;
    event_interp_t ip;
    double *ev_vars;     /* the value vector a probe evaluates g on */
    double *ev_y;        /* the state of the last probe */
    double *ev_rate;     /* its rates (the state's derivatives) */
    double ev_t0;        /* the step being searched starts at (ev_t0, */
    const double *ev_y0; /* ev_y0), where the rates are ev_f0 (NULL: */
    const double *ev_f0; /* not known) */
    double *ev_yerr;     /* a probe's error estimate */
    bool ev_probe_failed;
    diag_t ev_err;       /* why a probe failed */
} sim_state_t;

/* Appends " at t = T; state: a = 1, b' = 2" (the ODE state's variables)
 * to the cause CAUSE and sets *err. */
static int sim_error_at(diag_t *err, const sim_state_t *s, double t,
                        const double *y, const char *cause)
{
    char buf[DIAG_MSG_MAX], num[40];
    size_t len = 0;
    const expr_graph_t *g = s->sys->g;
    int w = snprintf(buf, sizeof buf, "%s at t = %s; state:", cause,
                     expr_format_number(t, num, sizeof num));
    len = w < 0 ? 0 : (size_t)w < sizeof buf ? (size_t)w : sizeof buf - 1;
    for (size_t k = 0; k < s->ctx.ns && len < sizeof buf - 1; k++) {
        w = snprintf(buf + len, sizeof buf - len, "%s %s = %s",
                     k ? "," : "", expr_var_name(g, s->ctx.sv[k]),
                     expr_format_number(y[k], num, sizeof num));
        if (w < 0 || (size_t)w >= sizeof buf - len) {
            /* Too long for one message: end with an ellipsis. */
            strcpy(buf + (sizeof buf - 5), " ...");
            len = sizeof buf - 1;
            break;
        }
        len += (size_t)w;
    }
    return diag_error(err, SRC_SPAN_NONE, "%s", buf);
}

/* The energy function E = Σ q_i' ∂L/∂q_i' − L at the completed value
 * vector V (T + V for L = T − V with T quadratic in q'); *scale =
 * Σ |q_i' ∂L/∂q_i'| + |L|. */
static double sim_energy(sim_state_t *s, const double *v, double *scale)
{
    const nh_system_t *sys = s->sys;
    const double *eout = s->mout + s->mnh + sys->r; /* L, ∂L/∂q_i' */
    double L = eout[0], E = -L, S = fabs(L);
    for (size_t i = 0; i < sys->n; i++) {
        double t = v[sys->qd[i]] * eout[1 + i];
        E += t;
        S += fabs(t);
    }
    if (scale)
        *scale = S;
    return E;
}

/* The monitors at V (s->mout), and from them what sim_cons_residual
 * gives: max |f| over the holonomic constraints and, when VEL, max |Cv|
 * over all; NaN when a value is NaN. */
static double sim_monitor_residual(sim_state_t *s, const double *v, bool vel)
{
    eom_monitors(s->e, v, s->mout, s->mwork);
    size_t nh = s->mnh, r = s->sys->r;
    double m = nh > 0 ? sim_max_abs(s->mout, nh) : 0.0;
    if (vel && r > 0 && !isnan(m)) {
        double w = sim_max_abs(s->mout + nh, r);
        m = isnan(w) || w > m ? w : m;
    }
    return m;
}

/* Completes the value vector at (T, Y) into s->row with eom_accel,
 * updates the monitors, and appends it to the samples unless !RECORD. */
static int sim_sample(sim_state_t *s, double t, const double *y,
                      sim_samples_t *samples, bool record, bool first,
                      diag_t *err)
{
    const nh_system_t *sys = s->sys;
    size_t width = samples->width;
    memcpy(s->row, s->base, width * sizeof *s->row);
    for (size_t k = 0; k < s->ctx.ns; k++)
        s->row[s->ctx.sv[k]] = y[k];
    s->row[sys->t] = t;
    diag_t d = {0};
    if (eom_accel(s->e, s->row, &d) != 0)
        return sim_error_at(err, s, t, y, d.msg);
    /* the residual and the energy from the monitors; the step that ended
     * here computed them already when the state holds every velocity
     * (they read q, q', t and the parameters alone) */
    double res = y == s->mon_y && t == s->mon_t
                     ? s->mon_res
                     : sim_monitor_residual(s, s->row, true);
    s->mon_y = NULL;
    if (isnan(res) || res > s->sum.max_residual)
        s->sum.max_residual = res;
    double S;
    double E = sim_energy(s, s->row, &S);
    if (first) {
        s->E0 = E;
        s->sum.energy0 = E;
        s->Escale = fabs(E) >= 1e-8 * S && E != 0.0 ? fabs(E)
                    : S > 0.0                       ? S
                                                    : 1.0;
    } else {
        double drift = fabs(E - s->E0) / s->Escale;
        if (isnan(drift) || drift > s->sum.energy_drift)
            s->sum.energy_drift = drift;
    }
    if (record) {
        memcpy(samples->data + samples->n * width, s->row,
               width * sizeof *s->row);
        samples->n++;
        s->sum.samples++;
    }
    return 0;
}

/* Projects Y (at T) onto the constraints; *changed when it moved. */
static int sim_project_state(sim_state_t *s, double t, double *y,
                             bool *changed, diag_t *err)
{
    double *v = s->ctx.vars;
    for (size_t k = 0; k < s->ctx.ns; k++)
        v[s->ctx.sv[k]] = y[k];
    v[s->sys->t] = t;
    diag_t d = {0};
    *changed = false;
    if (sim_project_pos(&s->cons, v, changed, &d) != 0 ||
        (s->has_vel && sim_project_vel(&s->cons, v, changed, &d) != 0))
        return sim_error_at(err, s, t, y, d.msg);
    for (size_t k = 0; k < s->ctx.ns; k++)
        y[k] = v[s->ctx.sv[k]];
    return 0;
}

/* The residual after a step, on what the state determines. */
static void sim_monitor_step(sim_state_t *s, double t, const double *y)
{
    double *v = s->ctx.vars;
    for (size_t k = 0; k < s->ctx.ns; k++)
        v[s->ctx.sv[k]] = y[k];
    v[s->sys->t] = t;
    /* compiled, the monitors cost less than the tapes of the residual,
     * where there is one to watch */
    bool watch = s->mnh > 0 || (s->has_vel && s->sys->r > 0);
    bool native = watch && eom_monitors_native(s->e);
    double res = !watch   ? 0.0
                 : native ? sim_monitor_residual(s, v, s->has_vel)
                          : sim_cons_residual(&s->cons, v, s->has_vel);
    if (isnan(res) || res > s->sum.max_residual)
        s->sum.max_residual = res;
    s->mon_y = native && s->has_vel ? y : NULL;
    s->mon_t = t;
    s->mon_res = res;
}

/* The spacing of the doubles near the times T0 and T_END, times four:
 * sample times closer than this could round to the same double. */
static double sim_time_resolution(double t0, double t_end)
{
    double tmax = fmax(fabs(t0), fabs(t_end));
    return 4.0 * (nextafter(tmax, INFINITY) - tmax);
}

double sim_default_step(double t0, double t_end)
{
    double span = fabs(t_end - t0);
    return fmin(fmax(span / 1000.0, sim_time_resolution(t0, t_end)), span);
}

static int sim_check_options(const sim_options_t *opt, double t0,
                             diag_t *err)
{
    char b1[40], b2[40], b3[40];
    if (!isfinite(t0))
        return diag_error(err, SRC_SPAN_NONE, "the current time is not "
                                              "finite");
    if (!isfinite(opt->t_end))
        return diag_error(err, SRC_SPAN_NONE, "the final time must be "
                                              "finite");
    if (!(opt->step > 0.0) || !isfinite(opt->step))
        return diag_error(err, SRC_SPAN_NONE,
                          "step must be a positive number, not %s",
                          expr_format_number(opt->step, b1, sizeof b1));
    /* A step at least the span records the two ends, which differ. */
    double res = sim_time_resolution(t0, opt->t_end);
    if (opt->step < res && opt->step < fabs(opt->t_end - t0))
        return diag_error(err, SRC_SPAN_NONE,
                          "step %s is finer than the times themselves near "
                          "t = %s (doubles there are %s apart), so sample "
                          "times would repeat: use a larger step",
                          expr_format_number(opt->step, b1, sizeof b1),
                          expr_format_number(fabs(t0) > fabs(opt->t_end)
                                                 ? t0 : opt->t_end,
                                             b2, sizeof b2),
                          expr_format_number(res / 4.0, b3, sizeof b3));
    if (!(opt->rtol >= 0.0) || !(opt->atol >= 0.0) || !isfinite(opt->rtol) ||
        !isfinite(opt->atol))
        return diag_error(err, SRC_SPAN_NONE,
                          "rtol and atol must be finite and >= 0");
    if (opt->rtol == 0.0 && opt->atol == 0.0)
        return diag_error(err, SRC_SPAN_NONE,
                          "rtol and atol cannot both be 0");
    if (!sim_step_type(opt->integrator))
        return diag_error(err, SRC_SPAN_NONE,
                          "unknown integrator '%s' (one of rk2 rk4 rkf45 "
                          "rkck rk8pd msadams rk1imp rk2imp rk4imp bsimp "
                          "msbdf)",
                          opt->integrator);
    return 0;
}

static void sim_state_free(sim_state_t *s)
{
    free(s->ctx.vars);
    free(s->ctx.yj);
    free(s->ctx.f1);
    free(s->ctx.f2);
    free(s->ctx.fail_y);
    free(s->ctx.dvars);
    sim_cons_free(&s->cons);
    free(s->mout);
    free(s->mwork);
    free(s->base);
    free(s->row);
    free(s->y);
    free(s->yprev);
    free(s->yp);
    free(s->sc);
    event_fn_free(s->ev);
    for (int i = 0; i < 3; i++) {
        free(s->node_y[i]);
        free(s->node_f[i]);
    }
    event_interp_free(&s->ip);
    free(s->ev_vars);
    free(s->ev_y);
    free(s->ev_rate);
    free(s->ev_yerr);
}

/* Projection after a step at T: s->yp becomes the projected state and
 * *YOUT points at it (what is monitored and sampled).  One-step methods
 * continue from it, after a reset of the stepper when it moved.  The
 * multistep methods (msadams, msbdf) keep their own Nordsieck history
 * and ignore changes to y unless reset, and a reset restarts them at
 * order 1 (restarting at every step makes them first-order methods); so
 * they continue from the projected state (with a restart) only when the
 * projection moved some component by more than SIM_MULTISTEP_RESTART
 * times the error level the control allows in one step
 * (atol + rtol·|y_i|), and otherwise from their own state, whose drift
 * stays below that; samples and the final state are the projected ones
 * either way. */
static int sim_after_step(sim_state_t *s, gsl_odeiv2_driver *drv, double t,
                          const double **yout, diag_t *err)
{
    size_t ns = s->ctx.ns;
    double *y = s->y;
    memcpy(s->yp, y, ns * sizeof *y);
    bool changed;
    if (sim_project_state(s, t, s->yp, &changed, err) != 0)
        return -1;
    *yout = s->yp;
    if (!changed)
        return 0;
    if (s->multistep) {
        bool big = false;
        for (size_t k = 0; k < ns && !big; k++)
            big = fabs(s->yp[k] - y[k]) >
                  SIM_MULTISTEP_RESTART * (s->opt->atol + s->opt->rtol * fabs(y[k]));
        if (!big)
            return 0;
    }
    memcpy(y, s->yp, ns * sizeof *y);
    /* the evolve object may keep the derivative at the last step's end
     * for the next step's start (a stepper that can use dydt_in): the
     * state moved, so that derivative is stale; resetting costs one
     * evaluation */
    gsl_odeiv2_evolve_reset(drv->e);
    gsl_odeiv2_step_reset(drv->s);
    return 0;
}

/* The step-collapse test: a step size below this times max(|t|, the
 * largest step of the run) is no progress.  Relative to both, so that the
 * test means the same for a run over 1e-11 s as for one over 1e3 s (a
 * fixed floor such as 1e-14 s stops a fast oscillation that needs steps
 * of 1e-14 s for no reason): against |t| it is a few tens of ulps of t,
 * where t + h no longer moves; against the largest step it is a step size
 * fallen by 14 orders of magnitude, the crawl towards a singular state
 * or a discontinuity (fuzz finding 004). */
#define SIM_MIN_REL_STEP 1e-14

/* At the step limit, a step below this times the largest step of the run
 * is named in the error as a sign of a singular state ahead. */
#define SIM_SHRUNK 1e-4

/* The RMS norm of V/SC (n values): Hairer, Nørsett & Wanner's norm for
 * the error control and the starting step. */
static double sim_rms(const double *v, const double *sc, size_t n)
{
    double s = 0.0;
    for (size_t k = 0; k < n; k++) {
        double x = v[k] / sc[k];
        s += x * x;
    }
    return n ? sqrt(s / (double)n) : 0.0;
}

/* The first step size, estimated from the motion at the start — Hairer,
 * Nørsett & Wanner, Solving Ordinary Differential Equations I (2nd ed.),
 * §II.4, "Starting step size" — never from the sample spacing.  With
 * sc_i = atol + rtol·|y0_i| and ‖·‖ the RMS norm of the components over
 * sc: d0 = ‖y0‖, d1 = ‖f(t0, y0)‖; h0 = 0.01·d0/d1 (a step over which y
 * changes by 1% of itself in Euler's approximation); one Euler step of
 * h0 gives d2 = ‖f(t0 + h0, y1) − f0‖/h0, an estimate of the second
 * derivative; then h1 = (0.01/max(d1, d2))^(1/(p+1)) for a method of
 * order p, and the first step is min(100·h0, h1, span).  Where HNW use
 * fixed values (1e-6 when d0 or d1 is tiny, a state at rest), this takes
 * 1e-6 of the span, so that the estimate scales with the run.
 *
 * Why this matters (the cause of the blow-ups with sparse samples): the
 * first step was 1e-2 times the sample spacing, so `simulate to 1e7`
 * tried a first step of 100 on a motion whose time scale is 1.  Its
 * stages left any region where the error estimate means something —
 * rk8pd's thirteen stages grow like (h·λ)^k and overflowed — and GSL's
 * evolve gives up on a stage it cannot evaluate instead of shortening
 * the step (sim_integrate now does), so the run ended in a non-finite
 * value at t = 65, or went on from a state of size 1e89. */
static double sim_first_step(sim_state_t *s, double t0, const double *y0,
                             double span, double dir, unsigned order)
{
    size_t ns = s->ctx.ns;
    const sim_options_t *opt = s->opt;
    /* The finite-difference Jacobian's scratch rows are free here. */
    double *f0 = s->ctx.f1, *f1 = s->ctx.f2, *y1 = s->ctx.yj;
    double *sc = s->sc, fallback = 1e-6 * span;
    for (size_t k = 0; k < ns; k++)
        sc[k] = opt->atol + opt->rtol * fabs(y0[k]);
    if (sim_ode_f(t0, y0, f0, &s->ctx) != GSL_SUCCESS)
        return fallback; /* evolve will report it, with the state */
    double d0 = sim_rms(y0, sc, ns), d1 = sim_rms(f0, sc, ns);
    double h0 = d0 < 1e-5 || d1 < 1e-5 ? fallback : 0.01 * d0 / d1;
    h0 = fmin(h0, span);
    double d2 = -1.0;
    /* An Euler step out of the equations' domain is too long: shorter. */
    for (int tries = 0; tries < 20 && d2 < 0.0 && h0 > 0.0; tries++) {
        for (size_t k = 0; k < ns; k++)
            y1[k] = y0[k] + dir * h0 * f0[k];
        if (sim_ode_f(t0 + dir * h0, y1, f1, &s->ctx) == GSL_SUCCESS) {
            for (size_t k = 0; k < ns; k++)
                f1[k] -= f0[k];
            d2 = sim_rms(f1, sc, ns) / h0;
        } else {
            h0 *= 0.1;
        }
    }
    s->ctx.failed = false;
    if (!(d2 >= 0.0) || !(h0 > 0.0))
        return fallback;
    double dm = fmax(d1, d2);
    double h1 = dm <= 1e-15 ? fmax(fallback, 1e-3 * h0)
                            : pow(0.01 / dm, 1.0 / (double)(order + 1));
    return fmin(fmin(100.0 * h0, h1), span);
}

/* Whether the last failed evaluation was at (T, Y): the start of the
 * step, where the motion itself fails — not a trial stage of a step
 * that was too long. */
static bool sim_failed_at(const sim_state_t *s, double t, const double *y)
{
    return s->ctx.fail_t == t &&
           memcmp(s->ctx.fail_y, y, s->ctx.ns * sizeof *y) == 0;
}

/* ---- events (LANGUAGE.md §6.1, event.h) -------------------------------- */

/* An event's time is located to this fraction of the shorter of the step
 * that holds it and of the time itself (LANGUAGE.md §6.1 asks 1e-12
 * relative), and never finer than a few doubles. */
#define SIM_EVENT_RTOL 1e-13
/* The probes (steps integrated again) one event may take: Newton needs
 * one or two, the Illinois fallback a few tens at worst. */
#define SIM_EVENT_PROBES 60
/* A crossing within this fraction of the first step of the run is the
 * start itself (a run that begins where an `until` stopped, on the event
 * within rounding, and on either side of it). */
#define SIM_EVENT_AT_START 1e-9
/* The golden-section search for a pair of crossings inside one step
 * (sim_event_pair): enough to narrow the step to 1e-9 of itself. */
#define SIM_EVENT_DIP_ITERATIONS 44

/* Fills the state Y and time T into the value vector V. */
static void sim_fill(const sim_state_t *s, double *v, double t,
                     const double *y)
{
    for (size_t k = 0; k < s->ctx.ns; k++)
        v[s->ctx.sv[k]] = y[k];
    v[s->sys->t] = t;
}

/* The event function at (T, Y) into *G and its rate into *DG (NaN when
 * unknown).  When g reads what the equations derive, the value vector is
 * completed by eom_accel, and the rate comes from it; otherwise it is
 * g's gradient along YDOT (the state's rates; NULL: no rate), and with
 * COMPLETE the vector is completed all the same (a probe's rates).  A
 * value that is not finite is an error with the time and the state
 * (summary.event_failed: the caller places it at the expression). */
static int sim_event_eval(sim_state_t *s, double t, const double *y,
                          const double *ydot, bool complete, double *g,
                          double *dg, diag_t *err)
{
    double *v = s->ev_vars;
    sim_fill(s, v, t, y);
    bool completion = event_fn_needs_completion(s->ev);
    if (complete || completion) {
        diag_t d = {0};
        if (eom_accel(s->e, v, &d) != 0)
            return sim_error_at(err, s, t, y, d.msg);
    }
    if (completion || complete)
        event_fn_eval(s->ev, v, g, dg);
    else if (ydot)
        event_fn_eval_along(s->ev, v, ydot, g, dg);
    else {
        event_fn_eval(s->ev, v, g, NULL);
        *dg = NAN;
    }
    if (!isfinite(*g)) {
        char cause[96], num[40];
        snprintf(cause, sizeof cause, "the event's expression is not finite "
                                      "(%s)",
                 expr_format_number(*g, num, sizeof num));
        s->sum.event_failed = true;
        return sim_error_at(err, s, t, y, cause);
    }
    return 0;
}

/* The integrator's solution at T, integrated again from (T0, Y0) into Y
 * with the probes' driver (one step when it accepts the length T − T0, as
 * it should: the step from T0 that the run took was longer). */
static int sim_reintegrate(sim_state_t *s, double t0, const double *y0,
                           double t, double *y, diag_t *err)
{
    gsl_odeiv2_driver *d = s->drv2;
    size_t ns = s->ctx.ns;
    memcpy(y, y0, ns * sizeof *y);
    gsl_odeiv2_evolve_reset(d->e);
    gsl_odeiv2_step_reset(d->s);
    /* One step of the stepper from T0, with the rates there that the run
     * computed (rk8pd: 12 evaluations), kept when its error estimate
     * passes the run's control, as it should; else evolve from T0. */
    if (s->ev_f0) {
        double h = t - t0;
        s->ctx.failed = false;
        int st = gsl_odeiv2_step_apply(d->s, t0, h, y, s->ev_yerr, s->ev_f0,
                                       NULL, &s->gsys);
        if (st == GSL_SUCCESS &&
            gsl_odeiv2_control_hadjust(d->c, d->s, y, s->ev_yerr,
                                       s->ev_rate, &h) != GSL_ODEIV_HADJ_DEC)
            return 0;
        if (s->ctx.stopped)
            return sim_error_at(err, s, t0, y0, nh_stop_reason(s->opt->stop));
        memcpy(y, y0, ns * sizeof *y);
        gsl_odeiv2_step_reset(d->s);
    }
    /* h beyond the end: evolve takes the step to T itself and lands on T
     * exactly (a step of exactly T − T0 would end at T0 + h, which may
     * round past T) */
    double tt = t0, h = 2.0 * (t - t0);
    for (int it = 0; tt != t; it++) {
        double tp = tt;
        s->ctx.failed = false;
        int st = gsl_odeiv2_evolve_apply(d->e, d->c, d->s, &s->gsys, &tt, t,
                                         &h, y);
        if (st == GSL_EBADFUNC && !s->ctx.stopped && s->ctx.failed &&
            it < 60) {
            /* a trial stage out of the equations' domain: shorter */
            tt = tp;
            memcpy(y, d->e->y0, ns * sizeof *y);
            h *= 0.5;
            gsl_odeiv2_step_reset(d->s);
            continue;
        }
        if (st != GSL_SUCCESS || it >= 1000) {
            if (s->ctx.stopped)
                return sim_error_at(err, s, t0, y0,
                                    nh_stop_reason(s->opt->stop));
            if (s->ctx.failed)
                return sim_error_at(err, s, s->ctx.fail_t, s->ctx.fail_y,
                                    s->ctx.fail.msg);
            char cause[160];
            snprintf(cause, sizeof cause,
                     "the step that holds the event cannot be integrated "
                     "again (%s)", gsl_strerror(st));
            return sim_error_at(err, s, tp, y, cause);
        }
    }
    return 0;
}

/* g on the interpolant of the last steps (event_seed's probe, and the
 * search for a pair of crossings). */
static int sim_interp_probe(void *ctx, double t, double *g, double *dg)
{
    sim_state_t *s = ctx;
    *dg = NAN;
    event_interp_eval(&s->ip, t, s->ev_y);
    double *v = s->ev_vars;
    sim_fill(s, v, t, s->ev_y);
    if (event_fn_needs_completion(s->ev)) {
        diag_t d = {0};
        if (eom_accel(s->e, v, &d) != 0)
            return -1;
    }
    event_fn_eval(s->ev, v, g, NULL);
    return isfinite(*g) ? 0 : -1;
}

/* event_locate's probe: g and its rate on the integrator's solution at T,
 * integrated again from the start of the step (s->ev_t0, s->ev_y0); the
 * state is left in s->ev_y, its rates in s->ev_rate. */
static int sim_event_probe(void *ctx, double t, double *g, double *dg)
{
    sim_state_t *s = ctx;
    s->sum.event_probes++;
    if (sim_reintegrate(s, s->ev_t0, s->ev_y0, t, s->ev_y, &s->ev_err) != 0 ||
        sim_event_eval(s, t, s->ev_y, NULL, true, g, dg, &s->ev_err) != 0) {
        s->ev_probe_failed = true;
        return -1;
    }
    const uint32_t *deriv = eom_state_derivs(s->e);
    for (size_t k = 0; k < s->ctx.ns; k++)
        s->ev_rate[k] = s->ev_vars[deriv[k]];
    return 0;
}

/* Appends the end of the step from TPREV (s->yprev) to T (s->y) to the
 * interpolant's nodes, with the rates there when the stepper left them. */
static void sim_event_nodes(sim_state_t *s, gsl_odeiv2_driver *drv,
                            double tprev, double t)
{
    size_t ns = s->ctx.ns;
    for (int end = 0; end < 2; end++) {
        double tn = end ? t : tprev;
        if (!end && s->nnodes > 0 && s->node_t[s->nnodes - 1] == tprev)
            continue; /* the last step ended where this one starts */
        if (!end)
            s->nnodes = 0; /* not joined to the nodes kept (the start) */
        if (s->nnodes == 3) {
            double *y = s->node_y[0], *f = s->node_f[0];
            for (int i = 0; i < 2; i++) {
                s->node_t[i] = s->node_t[i + 1];
                s->node_y[i] = s->node_y[i + 1];
                s->node_f[i] = s->node_f[i + 1];
                s->node_f_ok[i] = s->node_f_ok[i + 1];
            }
            s->node_y[2] = y;
            s->node_f[2] = f;
            s->nnodes = 2;
        }
        size_t i = s->nnodes++;
        s->node_t[i] = tn;
        memcpy(s->node_y[i], end ? s->y : s->yprev, ns * sizeof(double));
        s->node_f_ok[i] = s->exact_rates;
        if (s->exact_rates)
            memcpy(s->node_f[i], end ? drv->e->dydt_out : drv->e->dydt_in,
                   ns * sizeof(double));
    }
}

/* The rates the stepper left at node time T (the start of the step being
 * searched), or NULL. */
static const double *sim_node_rates(const sim_state_t *s, double t)
{
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->node_t[i] == t && s->node_f_ok[i])
            return s->node_f[i];
    return NULL;
}

/* Builds the interpolant of the last step (and of the one before it, when
 * the nodes hold it); false when it cannot (a rate cannot be computed). */
static bool sim_event_interp(sim_state_t *s)
{
    const double *ty[3], *tf[3];
    for (size_t i = 0; i < s->nnodes; i++) {
        if (!s->node_f_ok[i]) {
            if (sim_ode_f(s->node_t[i], s->node_y[i], s->node_f[i],
                          &s->ctx) != GSL_SUCCESS)
                return false;
            s->node_f_ok[i] = true;
        }
        ty[i] = s->node_y[i];
        tf[i] = s->node_f[i];
    }
    s->ctx.failed = false;
    if (s->nnodes < 2)
        return false;
    event_interp_build(&s->ip, s->nnodes, s->node_t, ty, tf);
    return true;
}

/* Makes room for one more sample of a section, within the limits of §6
 * (the rows, and their memory, of all runs together). */
static int sim_section_room(sim_state_t *s, sim_samples_t *samples,
                            double t, const double *y, diag_t *err)
{
    const sim_options_t *opt = s->opt;
    size_t limit = opt->max_samples ? opt->max_samples
                                    : SIM_DEFAULT_MAX_SAMPLES;
    size_t width = samples->width ? samples->width : 1;
    size_t mem = SIM_MAX_SAMPLE_BYTES / sizeof(double) / width;
    if (samples->n + 1 > limit || samples->n + 1 > mem) {
        char cause[256];
        snprintf(cause, sizeof cause,
                 "a crossing beyond the limit of %zu recorded samples (%d MiB "
                 "of rows; simulate a shorter time, or reset)",
                 limit < mem ? limit : mem, (int)(SIM_MAX_SAMPLE_BYTES >> 20));
        return sim_error_at(err, s, t, y, cause);
    }
    if (samples->n + 1 > samples->cap) {
        size_t cap = samples->cap ? 2 * samples->cap : 64;
        cap = cap < limit ? cap : limit;
        cap = cap < mem ? cap : mem;
        double *p = realloc(samples->data, cap * width * sizeof(double));
        if (!p)
            nh_out_of_memory();
        samples->data = p;
        samples->cap = cap;
    }
    return 0;
}

/* The crossing of g from GA at TA to GB at TB (opposite signs, neither
 * 0), inside the step from TPREV (s->yprev), DIR its direction: located
 * on the integrator's solution (event_locate on probes seeded by the
 * interpolant, when INTERP) and recorded — a section's sample, or
 * `until`'s last sample, and then *STOP. */
static int sim_event_cross(sim_state_t *s, double tprev, double ta,
                           double ga, double tb, double gb, int dir,
                           bool interp, sim_samples_t *samples, bool *stop,
                           diag_t *err)
{
    size_t ns = s->ctx.ns;
    double *ye = s->ev_y;
    double seed = interp ? event_seed(sim_interp_probe, s, ta, ga, tb, gb)
                         : NAN;
    s->ctx.failed = false;
    double at = isfinite(seed) ? fabs(seed) : fmax(fabs(ta), fabs(tb));
    double tmax = fmax(fabs(ta), fabs(tb));
    double tol = fmax(SIM_EVENT_RTOL * fmin(fabs(tb - ta), at),
                      4.0 * (nextafter(tmax, INFINITY) - tmax));
    s->ev_t0 = tprev;
    s->ev_y0 = s->yprev;
    s->ev_f0 = sim_node_rates(s, tprev);
    s->ev_probe_failed = false;
    event_root_t r;
    /* g is known to about the absolute tolerance of the state it is made
     * of (doc/language.md, "Events": a crossing that shallow is located
     * to atol/|g'| in time, what the integration itself determines) */
    int rc = event_locate(sim_event_probe, s, ta, ga, tb, gb, seed, tol,
                          s->opt->atol, SIM_EVENT_PROBES, &r);
    if (rc != 0 && s->ev_probe_failed) {
        *err = s->ev_err;
        return -1;
    }
    /* (probes spent: the last one is within the narrowed bracket) */
    double te = r.t;
    if (isfinite(r.newton) && r.newton != 0) {
        /* the zero is at t + newton: the state there to second order */
        te += r.newton;
        for (size_t k = 0; k < ns; k++)
            ye[k] += r.newton * s->ev_rate[k];
    }
    if (ta == s->ev_start &&
        fabs(te - s->ev_start) <= SIM_EVENT_AT_START * fabs(tb - ta) +
                                      8.0 * (nextafter(fabs(ta), INFINITY) -
                                             fabs(ta)))
        return 0; /* the start itself */
    if (s->opt->project) {
        bool changed;
        if (sim_project_state(s, te, ye, &changed, err) != 0)
            return -1;
    }
    s->sum.event_t = te;
    s->sum.event_dir = dir;
    if (s->event->section) {
        if (sim_section_room(s, samples, te, ye, err) != 0)
            return -1;
        s->sum.crossings++;
        return sim_sample(s, te, ye, samples, true, false, err);
    }
    s->sum.event_hit = true;
    *stop = true;
    /* an event at the time of the last sample is that sample */
    bool again = samples->n > 0 &&
                 samples->data[(samples->n - 1) * samples->width +
                               s->sys->t] == te;
    return sim_sample(s, te, ye, samples, !again, false, err);
}

/* Whether g, on the same side SIDE at both ends of the step from TPREV
 * to T, dips to the other side inside it (two crossings that the ends do
 * not show: the rattleback's spin changes sign twice 3e-4 apart inside
 * one step of 2.7e-3).  Only where |g| falls at the start and grows at
 * the end (G0·DG0 < 0 < G1·DG1) is there a dip to look for: its deepest
 * point on the interpolant, by golden-section search, and then a probe
 * there confirms it on the integrator's solution: *TM, *GM. */
static bool sim_event_pair(sim_state_t *s, double tprev, double t, int side,
                           double g0, double dg0, double g1, double dg1,
                           double *tm, double *gm, diag_t *err, int *rc)
{
    *rc = 0;
    if (!(g0 * dg0 < 0 && g1 * dg1 > 0) || !sim_event_interp(s))
        return false;
    const double phi = 0.6180339887498949;
    double a = tprev, b = t, c = b - phi * (b - a), d = a + phi * (b - a);
    double fc, fd, dummy;
    if (sim_interp_probe(s, c, &fc, &dummy) != 0 ||
        sim_interp_probe(s, d, &fd, &dummy) != 0)
        return false;
    fc *= side;
    fd *= side;
    for (int it = 0; it < SIM_EVENT_DIP_ITERATIONS && fc >= 0 && fd >= 0;
         it++) {
        if (fc < fd) {
            b = d;
            d = c;
            fd = fc;
            c = b - phi * (b - a);
            if (sim_interp_probe(s, c, &fc, &dummy) != 0)
                return false;
            fc *= side;
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + phi * (b - a);
            if (sim_interp_probe(s, d, &fd, &dummy) != 0)
                return false;
            fd *= side;
        }
    }
    if (fc >= 0 && fd >= 0)
        return false;
    *tm = fc < 0 ? c : d;
    s->ev_t0 = tprev;
    s->ev_y0 = s->yprev;
    s->ev_f0 = sim_node_rates(s, tprev);
    s->ev_probe_failed = false;
    double dgm;
    if (sim_event_probe(s, *tm, gm, &dgm) != 0) {
        *err = s->ev_err;
        *rc = -1;
        return false;
    }
    return *gm * side < 0;
}

/* After the step from TPREV to T (YOUT the state there as sampled):
 * whether g changed sign over it (in the direction asked), or twice
 * inside it; each crossing is located and recorded (sim_event_cross). */
static int sim_event_step(sim_state_t *s, gsl_odeiv2_driver *drv,
                          double tprev, double t, const double *yout,
                          sim_samples_t *samples, bool *stop, diag_t *err)
{
    sim_event_nodes(s, drv, tprev, t);
    if (isnan(s->ev_dg) && s->exact_rates) {
        /* g's rate at the start, from the rates the first step computed
         * there (no evaluation of its own) */
        double g0;
        if (sim_event_eval(s, tprev, s->yprev, drv->e->dydt_in, false, &g0,
                           &s->ev_dg, err) != 0)
            return -1;
    }
    double g, dg, g0 = s->ev_g, dg0 = s->ev_dg;
    if (sim_event_eval(s, t, yout, s->exact_rates ? drv->e->dydt_out : NULL,
                       false, &g, &dg, err) != 0)
        return -1;
    int side = g > 0 ? 1 : g < 0 ? -1 : 0, from = s->ev_side;
    s->ev_g = g;
    s->ev_dg = dg;
    if (side != 0)
        s->ev_side = side;
    int want = s->event->dir;
    if (side != 0 && from != 0 && side != from) {
        if (want != 0 && side != want)
            return 0;
        if (g0 == 0) {
            /* g was 0 at the end of the last step: the crossing is there */
            memcpy(s->ev_y, s->yprev, s->ctx.ns * sizeof(double));
            if (s->event->section) {
                if (sim_section_room(s, samples, tprev, s->ev_y, err) != 0)
                    return -1;
                s->sum.crossings++;
            } else {
                s->sum.event_hit = true;
                *stop = true;
            }
            s->sum.event_t = tprev;
            s->sum.event_dir = side;
            bool again = samples->n > 0 &&
                         samples->data[(samples->n - 1) * samples->width +
                                       s->sys->t] == tprev;
            return sim_sample(s, tprev, s->ev_y, samples, !again, false, err);
        }
        return sim_event_cross(s, tprev, tprev, g0, t, g, side,
                               sim_event_interp(s), samples, stop, err);
    }
    double tm, gm;
    int rc = 0;
    if (side == 0 || side != from || g0 == 0)
        return 0;
    if (!sim_event_pair(s, tprev, t, side, g0, dg0, g, dg, &tm, &gm, err,
                        &rc))
        return rc;
    /* two crossings: away from SIDE, then back */
    if (want == 0 || want == -side) {
        if (sim_event_cross(s, tprev, tprev, g0, tm, gm, -side, true,
                            samples, stop, err) != 0)
            return -1;
        if (*stop)
            return 0;
    }
    if (want == 0 || want == side)
        return sim_event_cross(s, tprev, tm, gm, t, g, side, true, samples,
                               stop, err);
    return 0;
}

/* The integration proper, between the samples.  GRID(k) is the time of
 * sample k (0..count-1). */
static int sim_integrate(sim_state_t *s, double t0, double t_end,
                         size_t count, double step, double dir,
                         sim_samples_t *samples, diag_t *err)
{
    const sim_options_t *opt = s->opt;
    size_t ns = s->ctx.ns;
    double *y = s->y;
    s->gsys = (gsl_odeiv2_system){sim_ode_f, sim_ode_jac, ns, &s->ctx};
    gsl_odeiv2_system gsys = s->gsys;
    double span = fabs(t_end - t0);
    const gsl_odeiv2_step_type *type = sim_step_type(opt->integrator);
    gsl_odeiv2_driver *drv = gsl_odeiv2_driver_alloc_y_new(
        &gsys, type, dir * span, opt->atol, opt->rtol);
    if (!drv)
        nh_out_of_memory(); /* GSL allocates nothing else that can fail */
    if (s->event) {
        /* The probes integrate again a step the run took: with the run's
         * stepper, but for the multistep ones, whose history a step from
         * elsewhere cannot use: rk8pd for msadams, bsimp (implicit, with
         * the same exact Jacobian) for msbdf. */
        const gsl_odeiv2_step_type *t2 =
            type == gsl_odeiv2_step_msadams ? gsl_odeiv2_step_rk8pd
            : type == gsl_odeiv2_step_msbdf ? gsl_odeiv2_step_bsimp
                                            : type;
        s->drv2 = gsl_odeiv2_driver_alloc_y_new(&s->gsys, t2, dir * span,
                                                opt->atol, opt->rtol);
        if (!s->drv2)
            nh_out_of_memory();
        s->exact_rates = type->can_use_dydt_in && type->gives_exact_dydt_out;
    }
    unsigned order = gsl_odeiv2_step_order(drv->s);
    /* No shorter than the times can tell apart (t + h must move t), nor
     * than 0 when the estimate underflows (a span of 5e-324). */
    double h = fmax(sim_first_step(s, t0, y, span, dir, order ? order : 1),
                    fmin(sim_time_resolution(t0, t_end), span));
    h *= dir;
    size_t max_steps = opt->max_steps ? opt->max_steps : SIM_DEFAULT_MAX_STEPS;
    sim_progress_t prog;
    sim_progress_init(&prog, opt->progress);
    double t = t0, hmax = fabs(h);
    int rc = 0;
    bool ended = false; /* at `until`'s event */
    bool section = s->event && s->event->section;
    for (size_t k = 1; k < count && rc == 0 && !ended; k++) {
        double tk = k + 1 == count ? t_end : t0 + dir * (double)k * step;
        while (t != tk) {
            double tprev = t;
            memcpy(s->yprev, y, ns * sizeof *y);
            s->ctx.failed = false;
            int status = gsl_odeiv2_evolve_apply(drv->e, drv->c, drv->s,
                                                 &gsys, &t, tk, &h, y);
            if (status == GSL_EBADFUNC && !s->ctx.stopped && s->ctx.failed &&
                !sim_failed_at(s, tprev, s->yprev)) {
                /* A stage of the trial step could not be evaluated (a
                 * non-finite value, a singular matrix): the step was too
                 * long for the motion — GSL gives up on it; shorten it
                 * and try again, as GSL does for a stepper's own
                 * failures.  Steps that fall to the collapse size end the
                 * run with the failure's cause, time and state. */
                t = tprev;
                memcpy(y, s->yprev, ns * sizeof *y);
                h = 0.5 * dir * fmin(fabs(h), fabs(tk - t));
                gsl_odeiv2_step_reset(drv->s);
                if (fabs(h) >= SIM_MIN_REL_STEP * fmax(fabs(t), hmax))
                    continue;
                char cause[DIAG_MSG_MAX];
                snprintf(cause, sizeof cause, "%s", s->ctx.fail.msg);
                rc = sim_error_at(err, s, s->ctx.fail_t, s->ctx.fail_y, cause);
                break;
            }
            if (status != GSL_SUCCESS) {
                char cause[DIAG_MSG_MAX];
                if (s->ctx.stopped) {
                    rc = sim_error_at(err, s, tprev, s->yprev,
                                      nh_stop_reason(opt->stop));
                } else if (s->ctx.failed && status == GSL_EBADFUNC) {
                    snprintf(cause, sizeof cause, "%s", s->ctx.fail.msg);
                    rc = sim_error_at(err, s, s->ctx.fail_t, s->ctx.fail_y,
                                      cause);
                } else {
                    char hb[40];
                    snprintf(cause, sizeof cause,
                             "the integrator %.20s cannot take a step (%s; step "
                             "size %s)%s%.400s",
                             opt->integrator ? opt->integrator : "rk8pd",
                             gsl_strerror(status),
                             expr_format_number(h, hb, sizeof hb),
                             s->ctx.failed ? "; last failure: " : "",
                             s->ctx.failed ? s->ctx.fail.msg : "");
                    rc = sim_error_at(err, s, tprev, s->yprev, cause);
                }
                break;
            }
            s->sum.steps++;
            s->sum.t_reached = t;
            /* A step size that has collapsed: the motion runs into a
             * singular state or a discontinuity the integrator can only
             * crawl towards (fuzz finding 004). */
            if (fabs(h) < SIM_MIN_REL_STEP * fmax(fabs(t), hmax) &&
                t != tk) {
                char cause[256], hb[40];
                snprintf(cause, sizeof cause,
                         "the integrator's step size fell to %s: the motion "
                         "runs into a singular state or a discontinuity",
                         expr_format_number(h, hb, sizeof hb));
                rc = sim_error_at(err, s, t, y, cause);
                break;
            }
            hmax = fmax(hmax, fabs(h));
            if (s->sum.steps >= max_steps) {
                char cause[400], hb[40], hb2[40];
                int w = snprintf(cause, sizeof cause,
                                 "the run needs more than %zu integrator "
                                 "steps: simulate a shorter time, loosen "
                                 "rtol/atol, or raise the limit with `set "
                                 "max_steps = ...`",
                                 max_steps);
                /* A step size now orders of magnitude below the run's
                 * largest (h is the integrator's next step): typically a
                 * crawl towards a time where the equations become
                 * singular (H = B M⁻¹ Bᵀ → 0, say), too slow for the
                 * collapse test above to see. */
                if (w > 0 && (size_t)w < sizeof cause &&
                    fabs(h) < SIM_SHRUNK * hmax)
                    snprintf(cause + w, sizeof cause - (size_t)w,
                             "; the step size has fallen from %s to %s, as "
                             "when the motion runs into a singular state",
                             expr_format_number(hmax, hb, sizeof hb),
                             expr_format_number(fabs(h), hb2, sizeof hb2));
                rc = sim_error_at(err, s, t, y, cause);
                break;
            }
            if (nh_stop_due(opt->stop)) {
                rc = sim_error_at(err, s, t, y, nh_stop_reason(opt->stop));
                break;
            }
            const double *yout = y;
            if (opt->project) {
                rc = sim_after_step(s, drv, t, &yout, err);
                if (rc != 0)
                    break;
            }
            sim_monitor_step(s, t, yout);
            if (s->event) {
                rc = sim_event_step(s, drv, tprev, t, yout, samples, &ended,
                                    err);
                if (rc != 0 || ended)
                    break;
            }
            sim_progress_update(&prog, span > 0.0 ? fabs(t - t0) / span : 1);
        }
        if (rc == 0 && !ended)
            rc = sim_sample(s, tk, opt->project ? s->yp : y, samples,
                            !section, false, err);
    }
    sim_progress_end(&prog);
    gsl_odeiv2_driver_free(drv);
    if (s->drv2)
        gsl_odeiv2_driver_free(s->drv2);
    s->drv2 = NULL;
    return rc;
}

int sim_run(eom_t *e, const nh_system_t *sys, double *vars,
            const sim_options_t *opt, sim_samples_t *samples,
            sim_summary_t *summary, diag_t *err)
{
    if (summary)
        memset(summary, 0, sizeof *summary);
    size_t width = expr_graph_nvars(sys->g);
    double t0 = vars[sys->t];
    if (sim_check_options(opt, t0, err) != 0)
        return -1;
    if (eom_state_size(e) == 0)
        return diag_error(err, SRC_SPAN_NONE,
                          "the model has no coordinates: there is nothing "
                          "to integrate");
    if (samples->n > 0 && samples->width != width)
        return diag_error(err, SRC_SPAN_NONE,
                          "the recorded samples belong to another model "
                          "(%zu values per sample, not %zu): reset first",
                          samples->width, width);
    if (samples->width != width)
        samples->cap = 0; /* rows of another width: reallocate */
    samples->width = width;

    /* The sample grid t0 + k·step, k = 0..K, and t_end when it is not on
     * it (a grid time within 1e-9·step of t_end is t_end). */
    double t_end = opt->t_end, step = opt->step;
    double dir = t_end >= t0 ? 1.0 : -1.0, span = fabs(t_end - t0);
    /* A section has no grid: its samples are the crossings, recorded as
     * they come (sim_section_room keeps the limits), and the two ends
     * are computed but not recorded. */
    bool section = opt->event && opt->event->section;
    double kd = section ? 1.0 : floor(span / step + 1e-9);
    size_t limit = opt->max_samples ? opt->max_samples
                                    : SIM_DEFAULT_MAX_SAMPLES;
    bool skip_first = section ||
                      (samples->n > 0 &&
                       samples->data[(samples->n - 1) * width + sys->t] == t0);
    char b1[40], b2[40], b3[40];
    expr_format_number(t_end, b1, sizeof b1);
    expr_format_number(step, b2, sizeof b2);
    if (!(kd + 1.0 <= (double)limit))
        return diag_error(err, SRC_SPAN_NONE,
                          "simulating to %s with step %s would record %s "
                          "samples, more than the limit of %zu: use a "
                          "larger step",
                          b1, b2, expr_format_number(kd + 1.0, b3, sizeof b3),
                          limit);
    size_t K = (size_t)kd;
    bool on_grid = section || fabs(t0 + dir * kd * step - t_end) <= 1e-9 * step;
    size_t count = K + 1 + (on_grid ? 0 : 1);
    size_t add = section ? 0 : count - (skip_first ? 1 : 0);
    if (samples->n + add > limit)
        return diag_error(err, SRC_SPAN_NONE,
                          "simulating to %s with step %s would bring the "
                          "recorded samples to %zu, more than the limit of "
                          "%zu: use a larger step or reset",
                          b1, b2, samples->n + add, limit);
    if (samples->n + add > SIM_MAX_SAMPLE_BYTES / sizeof(double) / (width ? width : 1))
        return diag_error(err, SRC_SPAN_NONE,
                          "simulating to %s with step %s would need %.0f MiB "
                          "for the samples (%zu rows of %zu values), more "
                          "than the limit of %d MiB: use a larger step or "
                          "reset",
                          b1, b2,
                          (double)(samples->n + add) * (double)width * 8.0 /
                              (1 << 20),
                          samples->n + add, width,
                          (int)(SIM_MAX_SAMPLE_BYTES >> 20));

    gsl_error_handler_t *old_handler = gsl_set_error_handler_off();
    sim_state_t s = {.e = e, .sys = sys, .opt = opt};
    size_t ns = eom_state_size(e);
    s.ctx = (sim_ctx_t){.e = e, .sys = sys, .ns = ns,
                        .sv = eom_state_vars(e), .stop = opt->stop,
                        .native = eom_native_rhs(e)};
    s.ctx.vars = sim_alloc(width, sizeof(double));
    s.ctx.yj = sim_alloc(ns, sizeof(double));
    s.ctx.f1 = sim_alloc(ns, sizeof(double));
    s.ctx.f2 = sim_alloc(ns, sizeof(double));
    s.ctx.fail_y = sim_alloc(ns, sizeof(double));
    s.ctx.nvars = width;
    s.ctx.deriv = eom_state_derivs(e);
    s.ctx.differences = opt->jacobian_differences;
    if (sim_integrator_implicit(opt->integrator) &&
        !opt->jacobian_differences) {
        /* allocated now: the callback allocates nothing */
        s.ctx.dvars = sim_alloc(width * (ns + 1), sizeof(double));
        eom_tangent_reserve(e, ns + 1);
    }
    s.base = sim_alloc(width, sizeof(double));
    s.row = sim_alloc(width, sizeof(double));
    s.y = sim_alloc(ns, sizeof(double));
    s.yprev = sim_alloc(ns, sizeof(double));
    s.yp = sim_alloc(ns, sizeof(double));
    s.sc = sim_alloc(ns, sizeof(double));
    s.multistep = opt->integrator && (strcmp(opt->integrator, "msadams") == 0 ||
                                      strcmp(opt->integrator, "msbdf") == 0);
    memcpy(s.base, vars, width * sizeof *vars);
    memcpy(s.ctx.vars, vars, width * sizeof *vars);
    s.has_vel = sim_state_has_velocities(e);
    sim_cons_init(&s.cons, sys, opt->project, opt->project && s.has_vel);
    if (opt->event) {
        s.event = opt->event;
        s.ev = event_fn_new(sys, opt->event->g, s.ctx.sv, ns);
        for (int i = 0; i < 3; i++) {
            s.node_y[i] = sim_alloc(ns, sizeof(double));
            s.node_f[i] = sim_alloc(ns, sizeof(double));
        }
        event_interp_init(&s.ip, ns);
        s.ev_vars = sim_alloc(width, sizeof(double));
        memcpy(s.ev_vars, vars, width * sizeof *vars);
        s.ev_y = sim_alloc(ns, sizeof(double));
        s.ev_rate = sim_alloc(ns, sizeof(double));
        s.ev_yerr = sim_alloc(ns, sizeof(double));
    }
    {
        const size_t *hol;
        s.mnh = eom_monitor_holonomic(e, &hol);
        s.mout = sim_alloc(eom_monitor_count(e), sizeof(double));
        s.mwork = sim_alloc(eom_monitor_work_size(e), sizeof(double));
    }
    {
        /* Benenti Theorem 11.6, decided by check.h once for the equations
         * (its tests are symbolic, with parameters, coordinates,
         * velocities and t all moving in its samples: a property of the
         * system, not of this run's values); kept with them, as the
         * analysis costs more than a short run (760 k instructions on the
         * sphere against 25 M for simulate to 100). 1: conserved, 2: not,
         * 3: the analysis failed. */
        int verdict = eom_memo_energy(e);
        if (verdict == 0) {
            check_report_t rep;
            diag_t d = {0};
            verdict = 3;
            if (check_analyse(sys, vars, &rep, &d) == 0) {
                verdict = rep.energy_conserved ? 1 : 2;
                check_report_free(&rep);
            }
            eom_set_memo_energy(e, verdict);
        }
        s.sum.energy_conserved = verdict == 1;
    }

    /* Reserve every row now: no reallocation while integrating (but for
     * a section's, which come as they come); `until`'s event may add one
     * between two times of the grid. */
    size_t room = add + (opt->event && !section ? 1 : 0);
    if (samples->n + room > samples->cap) {
        double *p = realloc(samples->data,
                            (samples->n + room) * width * sizeof(double));
        if (!p)
            nh_out_of_memory();
        samples->data = p;
        samples->cap = samples->n + room;
    }

    int rc = 0;
    for (size_t k = 0; k < ns; k++)
        s.y[k] = vars[s.ctx.sv[k]];
    if (opt->project) {
        bool changed;
        rc = sim_project_state(&s, t0, s.y, &changed, err);
        memcpy(s.yp, s.y, ns * sizeof *s.y);
    }
    s.sum.t_reached = t0;
    if (rc == 0)
        rc = sim_sample(&s, t0, s.y, samples, !skip_first, true, err);
    if (rc == 0 && s.event) {
        /* the side the run starts on (none when g is 0 there) */
        /* (its rate comes from the first step: sim_event_step) */
        rc = sim_event_eval(&s, t0, s.y, NULL, false, &s.ev_g, &s.ev_dg,
                            err);
        s.ev_side = s.ev_g > 0 ? 1 : s.ev_g < 0 ? -1 : 0;
        s.ev_start = t0;
    }
    if (rc == 0 && count > 1)
        rc = sim_integrate(&s, t0, t_end, count, step, dir, samples, err);
    if (rc == 0)
        memcpy(vars, s.row, width * sizeof *vars);
    else if (s.sum.samples > 0) /* LANGUAGE.md §6: at the last sample */
        memcpy(vars, samples->data + (samples->n - 1) * width,
               width * sizeof *vars);
    s.sum.evaluations = s.ctx.nevals;
    s.sum.jacobians = s.ctx.njac;
    if (summary)
        *summary = s.sum;
    sim_state_free(&s);
    gsl_set_error_handler(old_handler);
    return rc;
}
