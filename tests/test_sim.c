/*
 * test_sim.c — `simulate` (interp/run/sim.h): integration, sampling, monitors,
 * projection and failures.
 *
 * Every expected number comes from a closed form or from an independent
 * computation written out in this file, never from an earlier run:
 *   — a harmonic oscillator, x = x0 cos ωt + (v0/ω) sin ωt;
 *   — the rolling sphere (LANGUAGE.md §11, Lemos seeds/003): with no
 *     forces the centre moves uniformly on a straight line (m a = F = 0)
 *     and the angular velocity in space is constant (I ω' = R×F = 0),
 *       ω_X = θ' cos φ + ψ' sin θ sin φ,  ω_Y = θ' sin φ − ψ' sin θ cos φ,
 *       ω_Z = φ' + ψ' cos θ;
 *     and the energy T is conserved (Benenti Thm 11.6);
 *   — a pendulum in Cartesian coordinates under x² + y² = l², against an
 *     RK4 integration of l θ'' + g sin θ = 0 written here;
 *   — the nonholonomic bipendulum (Benenti seeds/001 §13): without forces
 *     each point keeps its own kinetic energy (eqs. 85–87); with equal
 *     masses on the incline the symmetric motion is the plane pendulum
 *     l θ'' + g sin θ = 0 (eq. 94 and after), again against the RK4 here;
 *   — projection: the radial projection onto a circle and the
 *     kinetic-energy orthogonality of the velocity correction, with M and
 *     the null space of B written by hand.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "interp/eom/eom.h"
#include "interp/run/sim.h"
#include "tests/sys_builder.h"

/* ---- helpers -------------------------------------------------------------- */

static size_t nvars(const nh_system_t *sys)
{
    return expr_graph_nvars(sys->g);
}

static eom_t *prep(const nh_system_t *sys, eom_method_t m)
{
    diag_t err = {0};
    eom_t *e = eom_prepare(sys, m, SRC_SPAN_NONE, &err);
    if (!e)
        fail_msg("%s: prepare failed: %s", eom_method_name(m), err.msg);
    return e;
}

static sim_options_t opts(double t_end, double step, const char *integ,
                          double rtol, double atol)
{
    sim_options_t o = {.t_end = t_end, .step = step, .rtol = rtol,
                       .atol = atol, .integrator = integ};
    return o;
}

/* sim_run that must succeed. */
static void run_ok(eom_t *e, const nh_system_t *sys, double *vars,
                   const sim_options_t *o, sim_samples_t *s,
                   sim_summary_t *sum)
{
    diag_t err = {0};
    if (sim_run(e, sys, vars, o, s, sum, &err) != 0)
        fail_msg("%s/%s: sim_run failed: %s", eom_method_name(eom_method(e)),
                 o->integrator ? o->integrator : "rk8pd", err.msg);
}

static const double *row(const sim_samples_t *s, size_t k)
{
    return s->data + k * s->width;
}

/* ---- the harmonic oscillator ------------------------------------------------ */

#define OSC_M 2.0
#define OSC_K 8.0 /* ω = 2 */

static sb_t *oscillator(void)
{
    sb_t *b = sb_new();
    sb_param(b, "m", OSC_M);
    sb_param(b, "k", OSC_K);
    sb_coord(b, "x");
    sb_kinetic(b, "m/2*x'^2");
    sb_potential(b, "k/2*x^2");
    return b;
}

/* The closed form from x(t0) = X0, x'(t0) = V0. */
static void osc_exact(double t, double t0, double x0, double v0, double *x,
                      double *v, double *a)
{
    double w = sqrt(OSC_K / OSC_M), s = t - t0;
    *x = x0 * cos(w * s) + v0 / w * sin(w * s);
    *v = -x0 * w * sin(w * s) + v0 * cos(w * s);
    *a = -w * w * *x;
}

static void test_oscillator_closed_form(void **state)
{
    (void)state;
    sb_t *b = oscillator();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    double *vars = sb_vars(b);
    uint32_t x = sb_var(b, "x"), xd = sb_var(b, "x'"), xdd = sb_var(b, "x''");
    double t0 = 0.3, x0 = 1.0, v0 = 0.5;
    vars[x] = x0;
    vars[xd] = v0;
    vars[sys->t] = t0;
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = opts(2.35, 0.1, NULL, 1e-10, 1e-12);
    run_ok(e, sys, vars, &o, &s, &sum);

    /* Sample times exactly t0 + k·step, then the final time. */
    assert_int_equal(s.n, 22);
    assert_int_equal(sum.samples, 22);
    assert_int_equal(s.width, nvars(sys));
    for (size_t k = 0; k + 1 < s.n; k++)
        assert_true(row(&s, k)[sys->t] == t0 + (double)k * 0.1);
    assert_true(row(&s, s.n - 1)[sys->t] == 2.35);

    double worst = 0.0;
    for (size_t k = 0; k < s.n; k++) {
        const double *r = row(&s, k);
        double X, V, A;
        osc_exact(r[sys->t], t0, x0, v0, &X, &V, &A);
        worst = fmax(worst, fabs(r[x] - X));
        worst = fmax(worst, fabs(r[xd] - V));
        worst = fmax(worst, fabs(r[xdd] - A));
    }
    printf("# oscillator rk8pd: max |x, x', x'' - closed form| = %.3g\n",
           worst);
    assert_true(worst < 1e-8);
    /* The final state is left in VARS. */
    assert_true(vars[sys->t] == 2.35);
    assert_true(vars[x] == row(&s, s.n - 1)[x]);
    /* E = m/2 x'² + k/2 x² is conserved and reported so. */
    assert_true(sum.energy_conserved);
    double E0 = OSC_M / 2 * v0 * v0 + OSC_K / 2 * x0 * x0;
    assert_true(fabs(sum.energy0 - E0) < 1e-14);
    assert_true(sum.energy_drift < 1e-9);
    assert_true(sum.steps > 0 && sum.evaluations >= sum.steps);
    assert_true(sum.max_residual == 0.0); /* no constraints */

    /* A second run appends without repeating the shared sample. */
    o = opts(3.0, 0.25, NULL, 1e-10, 1e-12);
    run_ok(e, sys, vars, &o, &s, &sum);
    assert_int_equal(sum.samples, 3); /* 2.6, 2.85, 3.0 (2.35 not again) */
    assert_int_equal(s.n, 25);
    assert_true(row(&s, 22)[sys->t] == 2.35 + 0.25);
    double X, V, A;
    osc_exact(3.0, t0, x0, v0, &X, &V, &A);
    assert_true(fabs(vars[x] - X) < 1e-8);

    /* Backwards to before the start. */
    o = opts(-1.0, 0.5, NULL, 1e-10, 1e-12);
    run_ok(e, sys, vars, &o, &s, &sum);
    assert_true(vars[sys->t] == -1.0);
    osc_exact(-1.0, t0, x0, v0, &X, &V, &A);
    assert_true(fabs(vars[x] - X) < 1e-8 && fabs(vars[xd] - V) < 1e-8);
    assert_true(row(&s, 25)[sys->t] == 3.0 - 0.5);

    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

/* Every integrator reaches the closed form within its tolerance. */
static void test_oscillator_integrators(void **state)
{
    (void)state;
    sb_t *b = oscillator();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t x = sb_var(b, "x"), xd = sb_var(b, "x'");
    for (size_t k = 0; sim_integrators[k]; k++) {
        const char *name = sim_integrators[k];
        assert_true(sim_integrator_known(name));
        bool low = strcmp(name, "rk1imp") == 0;
        double rtol = low ? 1e-7 : 1e-9, tol = 1e-5;
        double *vars = sb_vars(b);
        vars[x] = 1.0;
        vars[xd] = 0.5;
        sim_samples_t s = {0};
        sim_summary_t sum;
        sim_options_t o = opts(5.0, 0.5, name, rtol, rtol * 1e-2);
        run_ok(e, sys, vars, &o, &s, &sum);
        double worst = 0.0;
        for (size_t j = 0; j < s.n; j++) {
            double X, V, A;
            const double *r = row(&s, j);
            osc_exact(r[sys->t], 0.0, 1.0, 0.5, &X, &V, &A);
            worst = fmax(worst, fmax(fabs(r[x] - X), fabs(r[xd] - V)));
        }
        printf("# oscillator %-8s rtol %.0e: %6zu steps, %7zu evaluations, "
               "max error %.2g\n",
               name, rtol, sum.steps, sum.evaluations, worst);
        /* Implicit Euler (order 1) needs tens of thousands of steps:
         * its global error is bounded by the sum of the local errors the
         * control accepts, each below atol + rtol·|y| <= atol + rtol·2.07
         * (|x'| <= sqrt(v0² + ω² x0²) = 2.06), not by a fixed number. */
        if (low)
            tol = (double)sum.steps * (rtol * 1e-2 + rtol * 2.07);
        assert_int_equal(s.n, 11);
        assert_true(worst < tol);
        sim_samples_free(&s);
    }
    assert_false(sim_integrator_known("rk45"));
    assert_false(sim_integrator_known(NULL));
    eom_free(e);
    sb_free(b);
}

static void expect_error(eom_t *e, const nh_system_t *sys, double *vars,
                         const sim_options_t *o, sim_samples_t *s,
                         const char *needle)
{
    diag_t err = {0};
    assert_int_equal(sim_run(e, sys, vars, o, s, NULL, &err), -1);
    assert_true(err.set);
    if (!strstr(err.msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_options(void **state)
{
    (void)state;
    sb_t *b = oscillator();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    double *vars = sb_vars(b);
    vars[sb_var(b, "x")] = 1.0;
    sim_samples_t s = {0};

    /* Too many samples: refused before anything is allocated. */
    sim_options_t o = opts(100.0, 0.01, NULL, 1e-10, 1e-12);
    o.max_samples = 1000;
    expect_error(e, sys, vars, &o, &s, "limit of 1000");
    assert_null(s.data);
    assert_int_equal(s.n, 0);
    o = opts(1e300, 1e-300, NULL, 1e-10, 1e-12);
    expect_error(e, sys, vars, &o, &s, "use a larger step");
    assert_null(s.data);

    o = opts(1.0, 0.0, NULL, 1e-10, 1e-12);
    expect_error(e, sys, vars, &o, &s, "step");
    o = opts(1.0, 0.1, "rk45", 1e-10, 1e-12);
    expect_error(e, sys, vars, &o, &s, "rk8pd");
    o = opts(NAN, 0.1, NULL, 1e-10, 1e-12);
    expect_error(e, sys, vars, &o, &s, "finite");
    o = opts(1.0, 0.1, NULL, 0.0, 0.0);
    expect_error(e, sys, vars, &o, &s, "both");
    assert_null(s.data);

    /* Exactly the limit is allowed: 0, 0.1, ..., 1 is 11 samples. */
    o = opts(1.0, 0.1, NULL, 1e-10, 1e-12);
    o.max_samples = 11;
    diag_t err = {0};
    assert_int_equal(sim_run(e, sys, vars, &o, &s, NULL, &err), 0);
    assert_int_equal(s.n, 11);
    /* Appending beyond the limit is refused and leaves the samples. */
    o = opts(1.5, 0.1, NULL, 1e-10, 1e-12);
    o.max_samples = 11;
    expect_error(e, sys, vars, &o, &s, "limit of 11");
    assert_int_equal(s.n, 11);
    /* A run to the current time records the one sample, once. */
    sim_samples_clear(&s);
    double t = vars[sys->t];
    o = opts(t, 0.1, NULL, 1e-10, 1e-12);
    assert_int_equal(sim_run(e, sys, vars, &o, &s, NULL, &err), 0);
    assert_int_equal(s.n, 1);
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

/* ---- the rolling sphere ----------------------------------------------------- */

#define SPH_M 1.0
#define SPH_R 1.0

static sb_t *sphere(void)
{
    sb_t *b = sb_new();
    sb_param(b, "m", SPH_M);
    sb_param(b, "R", SPH_R);
    const char *q[] = {"phi", "theta", "psi", "x", "y"};
    for (size_t i = 0; i < 5; i++)
        sb_coord(b, q[i]);
    sb_speed(b, "u1");
    sb_speed(b, "u2");
    sb_speed(b, "u3");
    /* LANGUAGE.md §11 */
    sb_kinetic(b, "m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + psi'^2 "
                  "+ 2*phi'*psi'*cos(theta))");
    sb_constraint(b, "roll_x",
                  "x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi))");
    sb_constraint(b, "roll_y",
                  "y' - (-R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi))");
    sb_kinematic(b, "phi", "u1");
    sb_kinematic(b, "theta", "u2");
    sb_kinematic(b, "psi", "u3");
    sb_kinematic(b, "x", "R*u2*sin(phi) - R*u3*sin(theta)*cos(phi)");
    sb_kinematic(b, "y", "-R*u2*cos(phi) - R*u3*sin(theta)*sin(phi)");
    return b;
}

typedef struct sphere_vars {
    uint32_t q[5], qd[5], u[3];
} sphere_vars_t;

static sphere_vars_t sphere_lookup(sb_t *b)
{
    sphere_vars_t v;
    const char *q[] = {"phi", "theta", "psi", "x", "y"};
    const char *qd[] = {"phi'", "theta'", "psi'", "x'", "y'"};
    for (int i = 0; i < 5; i++) {
        v.q[i] = sb_var(b, q[i]);
        v.qd[i] = sb_var(b, qd[i]);
    }
    v.u[0] = sb_var(b, "u1");
    v.u[1] = sb_var(b, "u2");
    v.u[2] = sb_var(b, "u3");
    return v;
}

/* The state of LANGUAGE.md §11 (theta = 1, phi' = 0.7, theta' = 0.3,
 * psi' = 1.1), x = 0.2, y = -0.4, the centre's velocity from Lemos eq. 2,
 * the speeds = the Euler-angle rates. */
static void sphere_initial(const sphere_vars_t *v, double *vars)
{
    double q[5] = {0.0, 1.0, 0.0, 0.2, -0.4}, qd[5] = {0.7, 0.3, 1.1, 0, 0};
    double R = SPH_R;
    qd[3] = R * qd[1] * sin(q[0]) - R * qd[2] * sin(q[1]) * cos(q[0]);
    qd[4] = -R * qd[1] * cos(q[0]) - R * qd[2] * sin(q[1]) * sin(q[0]);
    for (int i = 0; i < 5; i++) {
        vars[v->q[i]] = q[i];
        vars[v->qd[i]] = qd[i];
    }
    for (int a = 0; a < 3; a++)
        vars[v->u[a]] = qd[a];
}

static void sphere_omega(const sphere_vars_t *v, const double *r,
                         double w[3])
{
    double ph = r[v->q[0]], th = r[v->q[1]];
    double dph = r[v->qd[0]], dth = r[v->qd[1]], dps = r[v->qd[2]];
    w[0] = dth * cos(ph) + dps * sin(th) * sin(ph);
    w[1] = dth * sin(ph) - dps * sin(th) * cos(ph);
    w[2] = dph + dps * cos(th);
}

/* Max deviation of the samples from the closed form: the centre's
 * velocity and ω constant, the centre on x0 + x'0 (t − t0). */
static double sphere_deviation(const sphere_vars_t *v, const nh_system_t *sys,
                               const sim_samples_t *s)
{
    const double *r0 = row(s, 0);
    double w0[3];
    sphere_omega(v, r0, w0);
    double dev = 0.0;
    for (size_t k = 0; k < s->n; k++) {
        const double *r = row(s, k);
        double t = r[sys->t] - r0[sys->t], w[3];
        sphere_omega(v, r, w);
        for (int i = 0; i < 3; i++)
            dev = fmax(dev, fabs(w[i] - w0[i]));
        for (int i = 3; i < 5; i++) {
            dev = fmax(dev, fabs(r[v->qd[i]] - r0[v->qd[i]]));
            dev = fmax(dev, fabs(r[v->q[i]] - (r0[v->q[i]] +
                                               r0[v->qd[i]] * t)));
        }
    }
    return dev;
}

/* Runs the sphere from sphere_initial to O's t_end with E: the final
 * state in *VARS (sb_vars's), |x(T) − x0 − x'0 T| and |y(T) − ...| in
 * EXY[0], EXY[1] (the centre's straight line, Lemos). */
static void sphere_run_line(sb_t *b, const sphere_vars_t *v, eom_t *e,
                            const sim_options_t *o, sim_samples_t *s,
                            sim_summary_t *sum, double **vars, double exy[2])
{
    const nh_system_t *sys = sb_system(b);
    *vars = sb_vars(b);
    sphere_initial(v, *vars);
    double x0 = (*vars)[v->q[3]], y0 = (*vars)[v->q[4]];
    double vx = (*vars)[v->qd[3]], vy = (*vars)[v->qd[4]];
    double T = o->t_end - (*vars)[sys->t];
    run_ok(e, sys, *vars, o, s, sum);
    exy[0] = fabs((*vars)[v->q[3]] - (x0 + vx * T));
    exy[1] = fabs((*vars)[v->q[4]] - (y0 + vy * T));
}

static void test_sphere_methods(void **state)
{
    (void)state;
    sb_t *b = sphere();
    const nh_system_t *sys = sb_system(b);
    sphere_vars_t v = sphere_lookup(b);
    const eom_method_t methods[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND,
                                    EOM_VORONEC, EOM_MAGGI,
                                    EOM_GIBBS_APPELL};
    for (size_t mi = 0; mi < sizeof methods / sizeof methods[0]; mi++) {
        for (int project = 0; project < 2; project++) {
            eom_t *e = prep(sys, methods[mi]);
            double *vars = sb_vars(b);
            sphere_initial(&v, vars);
            sim_samples_t s = {0};
            sim_summary_t sum;
            sim_options_t o = opts(20.0, 0.05, NULL, 1e-10, 1e-12);
            o.project = project;
            run_ok(e, sys, vars, &o, &s, &sum);
            double dev = sphere_deviation(&v, sys, &s);
            printf("# sphere %-12s%s: %3zu steps, max deviation from the "
                   "straight line / constant ω %.2g, energy drift %.2g, "
                   "max |C| %.2g\n",
                   eom_method_name(methods[mi]), project ? " project" : "",
                   sum.steps, dev, sum.energy_drift, sum.max_residual);
            assert_int_equal(s.n, 401);
            assert_true(dev < 1e-8);
            assert_true(sum.energy_conserved);
            assert_true(sum.energy_drift < 1e-9);
            assert_true(sum.max_residual < 1e-9);
            /* T at the start, by hand: m/2 v_c² + m R²/5 (...) */
            double E0 = 0.5 * (0.7 * 0.7 + 0.3 * 0.3 + 1.1 * 1.1 +
                               2 * 0.7 * 1.1 * cos(1.0)) * 2.0 / 5.0;
            double vx = -1.1 * sin(1.0), vy = -0.3;
            E0 += 0.5 * (vx * vx + vy * vy);
            assert_true(fabs(sum.energy0 - E0) < 1e-13);
            sim_samples_free(&s);
            eom_free(e);
        }
    }
    sb_free(b);
}

/* Every integrator, on two state layouts, reaches x(T) = x0 + x'0 T. */
static void test_sphere_integrators(void **state)
{
    (void)state;
    sb_t *b = sphere();
    const nh_system_t *sys = sb_system(b);
    sphere_vars_t v = sphere_lookup(b);
    const eom_method_t methods[] = {EOM_MULTIPLIERS, EOM_VORONEC};
    for (size_t mi = 0; mi < 2; mi++) {
        eom_t *e = prep(sys, methods[mi]);
        for (size_t k = 0; sim_integrators[k]; k++) {
            const char *name = sim_integrators[k];
            bool low = strcmp(name, "rk1imp") == 0;
            double rtol = low ? 1e-6 : 1e-9, tol = low ? 1e-3 : 1e-6;
            double *vars, exy[2];
            sim_samples_t s = {0};
            sim_summary_t sum;
            sim_options_t o = opts(5.0, 0.5, name, rtol, rtol * 1e-2);
            sphere_run_line(b, &v, e, &o, &s, &sum, &vars, exy);
            double ex = exy[0], ey = exy[1];
            double dev = sphere_deviation(&v, sys, &s);
            printf("# sphere %-11s %-8s: %6zu steps, %7zu evaluations, "
                   "|x(T) - closed form| %.2g, |y(T) - ...| %.2g, max "
                   "deviation %.2g\n",
                   eom_method_name(methods[mi]), name, sum.steps,
                   sum.evaluations, ex, ey, dev);
            assert_true(ex < tol && ey < tol && dev < tol);
            sim_samples_free(&s);
        }
        eom_free(e);
    }
    sb_free(b);
}

/* Sparse samples do not change the integration (LANGUAGE.md §6): a run
 * that records only its two ends reaches the closed form x(T) = x0 + x'0 T
 * as a run sampled every time unit does, and the two agree to the
 * tolerances, for methods of both state layouts.  The first step used to
 * be 1e-2 of the sample spacing (10 here, on a motion of time scale 1:
 * its stages overflowed, "a non-finite value (inf) in M, h, B, c"). */
static void test_sparse_samples(void **state)
{
    (void)state;
    sb_t *b = sphere();
    const nh_system_t *sys = sb_system(b);
    sphere_vars_t v = sphere_lookup(b);
    const eom_method_t methods[] = {EOM_MULTIPLIERS, EOM_VORONEC, EOM_MAGGI};
    const double T = 1000.0;
    for (size_t mi = 0; mi < 3; mi++) {
        eom_t *e = prep(sys, methods[mi]);
        double end[2][4];
        size_t steps[2];
        for (int dense = 0; dense < 2; dense++) {
            double *vars, exy[2];
            sim_samples_t s = {0};
            sim_summary_t sum;
            sim_options_t o = opts(T, dense ? 1.0 : T, NULL, 1e-10, 1e-12);
            sphere_run_line(b, &v, e, &o, &s, &sum, &vars, exy);
            assert_int_equal(s.n, dense ? (size_t)T + 1 : 2);
            end[dense][0] = vars[v.q[3]];
            end[dense][1] = vars[v.q[4]];
            end[dense][2] = vars[v.q[1]];
            end[dense][3] = vars[v.qd[1]];
            steps[dense] = sum.steps;
            /* Global error: about T·rtol on positions of size T. */
            assert_true(exy[0] < 1e-6 && exy[1] < 1e-6);
            assert_true(sum.energy_drift < 1e-9);
            sim_samples_free(&s);
        }
        double d = 0.0;
        for (int i = 0; i < 4; i++)
            d = fmax(d, fabs(end[0][i] - end[1][i]));
        printf("# sphere %-12s to %g: sparse %zu steps, dense %zu steps, "
               "max |sparse - dense| %.2g\n",
               eom_method_name(methods[mi]), T, steps[0], steps[1], d);
        assert_true(d < 1e-7);
        eom_free(e);
    }
    sb_free(b);
}

/* ---- failures ------------------------------------------------------------------ */

/* M = [[1, t], [t, 1]] is singular at t = 1; at rest the motion is q'' = 0
 * (h = ∂²L/∂q'∂t = (y', x') = 0), so the run reaches t = 1 exactly at a
 * sample time and must stop there with the time and the state. */
static void test_singular_mass_matrix(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_lagrangian(b, "(x'^2 + 2*t*x'*y' + y'^2)/2");
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    double *vars = sb_vars(b), *before = sb_vars(b);
    vars[sb_var(b, "x")] = 0.25;
    vars[sb_var(b, "y")] = -0.5;
    memcpy(before, vars, nvars(sys) * sizeof *vars);
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = opts(2.0, 0.25, NULL, 1e-10, 1e-12);
    diag_t err = {0};
    assert_int_equal(sim_run(e, sys, vars, &o, &s, &sum, &err), -1);
    printf("# singular M: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "singular"));
    /* The run goes up to where M is singular within the rank test's
     * tolerance: det M = 1 − t² below 1e-12 or so, t within 1e-11 of 1
     * (the trial steps that reach past it are shortened, not fatal). */
    const char *at = strstr(err.msg, "at t = ");
    assert_non_null(at);
    double tf = strtod(at + 7, NULL);
    assert_true(tf <= 1.0 && tf > 1.0 - 1e-11);
    assert_non_null(strstr(err.msg, "x = 0.25"));
    assert_non_null(strstr(err.msg, "y = -0.5"));
    /* The samples before it stay: t = 0, 0.25, 0.5, 0.75. */
    assert_int_equal(s.n, 4);
    assert_int_equal(sum.samples, 4);
    for (size_t k = 0; k < 4; k++)
        assert_true(row(&s, k)[sys->t] == 0.25 * (double)k);
    /* VARS is left at the last sample (LANGUAGE.md §6): the state at rest
     * at t = 0.75, so that a next run continues from there. */
    before[sys->t] = 0.75;
    for (uint32_t v = 0; v < nvars(sys); v++)
        if (v == sys->t || v == sb_var(b, "x") || v == sb_var(b, "y") ||
            v == sb_var(b, "x'") || v == sb_var(b, "y'"))
            assert_true(vars[v] == before[v]);
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

/* x'' = log(x) from x = 1, x' = -1: x reaches 0 in finite time and the
 * right-hand side becomes NaN; the run stops with the time and state. */
static void test_nonfinite_rhs(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_coord(b, "x");
    sb_kinetic(b, "x'^2/2");
    sb_force(b, "x", "log(x)");
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    double *vars = sb_vars(b);
    uint32_t x = sb_var(b, "x");
    vars[x] = 1.0;
    vars[sb_var(b, "x'")] = -1.0;
    sim_samples_t s = {0};
    sim_options_t o = opts(5.0, 0.1, NULL, 1e-10, 1e-12);
    diag_t err = {0};
    assert_int_equal(sim_run(e, sys, vars, &o, &s, NULL, &err), -1);
    printf("# non-finite: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "non-finite"));
    assert_non_null(strstr(err.msg, "at t = "));
    assert_non_null(strstr(err.msg, "state: x = "));
    /* x(t) <= 1 - t (x'' <= 0 while 0 < x <= 1): it fails before t = 1. */
    double tf = strtod(strstr(err.msg, "at t = ") + 7, NULL);
    assert_true(tf > 0.0 && tf < 1.0);
    assert_true(s.n >= 2);
    for (size_t k = 0; k < s.n; k++) {
        assert_true(row(&s, k)[x] > 0.0);
        assert_true(row(&s, k)[sys->t] < tf);
    }
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

/* ---- the Cartesian pendulum: projection ------------------------------------- */

#define PEN_G 9.81
#define PEN_L 1.5

/* θ'' = −(g/l) sin θ by classical RK4 with a fine fixed step: the
 * independent reference (θ from the downward vertical). */
static void pendulum_rk4(double th0, double om0, double T, double g, double l,
                         double *th, double *om)
{
    size_t n = (size_t)ceil(T / 1e-4);
    double h = T / (double)n, a = th0, w = om0;
    for (size_t k = 0; k < n; k++) {
        double k1a = w, k1w = -g / l * sin(a);
        double k2a = w + h / 2 * k1w, k2w = -g / l * sin(a + h / 2 * k1a);
        double k3a = w + h / 2 * k2w, k3w = -g / l * sin(a + h / 2 * k2a);
        double k4a = w + h * k3w, k4w = -g / l * sin(a + h * k3a);
        a += h / 6 * (k1a + 2 * k2a + 2 * k3a + k4a);
        w += h / 6 * (k1w + 2 * k2w + 2 * k3w + k4w);
    }
    *th = a;
    *om = w;
}

static sb_t *cartesian_pendulum(bool speeds)
{
    sb_t *b = sb_new();
    sb_param(b, "m", 0.8);
    sb_param(b, "g", PEN_G);
    sb_param(b, "l", PEN_L);
    sb_coord(b, "x");
    sb_coord(b, "y");
    if (speeds) {
        /* u = θ': x' = −u y, y' = u x hold the circle by construction at
         * velocity level, not at position level. */
        sb_speed(b, "u");
        sb_kinematic(b, "x", "-u*y");
        sb_kinematic(b, "y", "u*x");
    }
    sb_kinetic(b, "m/2*(x'^2 + y'^2)");
    sb_potential(b, "m*g*y");
    sb_constraint(b, "ring", "x^2 + y^2 - l^2");
    return b;
}

static void pendulum_initial(sb_t *b, double *vars, double th, double om)
{
    vars[sb_var(b, "x")] = PEN_L * sin(th);
    vars[sb_var(b, "y")] = -PEN_L * cos(th);
    vars[sb_var(b, "x'")] = PEN_L * om * cos(th);
    vars[sb_var(b, "y'")] = PEN_L * om * sin(th);
}

static void test_projection_pendulum(void **state)
{
    (void)state;
    sb_t *b = cartesian_pendulum(false);
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_MULTIPLIERS);
    uint32_t x = sb_var(b, "x"), y = sb_var(b, "y");
    double res[2];
    for (int project = 0; project < 2; project++) {
        double *vars = sb_vars(b);
        pendulum_initial(b, vars, 1.2, 0.4);
        sim_samples_t s = {0};
        sim_summary_t sum;
        sim_options_t o = opts(200.0, 0.5, "rkf45", 1e-6, 1e-6);
        o.project = project;
        run_ok(e, sys, vars, &o, &s, &sum);
        /* an independent measure of the drift of x² + y² − l² */
        double worst = 0.0;
        for (size_t k = 0; k < s.n; k++) {
            const double *r = row(&s, k);
            worst = fmax(worst, fabs(r[x] * r[x] + r[y] * r[y] -
                                     PEN_L * PEN_L));
        }
        printf("# pendulum rkf45 rtol 1e-6 to t = 200%s: %zu steps, max |C| "
               "%.3g (samples: %.3g), energy drift %.3g\n",
               project ? " with project" : "", sum.steps, sum.max_residual,
               worst, sum.energy_drift);
        /* the monitor sees every step, the samples among them */
        assert_true(sum.max_residual >= worst * (1.0 - 1e-9));
        res[project] = sum.max_residual;
        sim_samples_free(&s);
    }
    assert_true(res[0] > 1e-6);   /* the plain run drifts */
    assert_true(res[1] <= 1e-12); /* projection keeps it at round-off */
    eom_free(e);

    /* The projected run is the pendulum: θ against the RK4 reference. */
    e = prep(sys, EOM_SECOND_KIND);
    double *vars = sb_vars(b);
    pendulum_initial(b, vars, 1.2, 0.4);
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = opts(10.0, 0.5, NULL, 1e-10, 1e-12);
    o.project = true;
    run_ok(e, sys, vars, &o, &s, &sum);
    double worst = 0.0;
    for (size_t k = 0; k < s.n; k += 4) {
        const double *r = row(&s, k);
        double th, om;
        pendulum_rk4(1.2, 0.4, r[sys->t], PEN_G, PEN_L, &th, &om);
        worst = fmax(worst, fabs(atan2(r[x], -r[y]) - th));
    }
    printf("# pendulum projected vs RK4 of l θ'' + g sin θ = 0: max |Δθ| = "
           "%.3g, max |C| %.3g\n",
           worst, sum.max_residual);
    assert_true(worst < 1e-8);
    assert_true(sum.max_residual <= 1e-12);
    sim_samples_free(&s);

    /* Projection resets the stepper: multistep and implicit ones too. */
    const char *integ[] = {"msadams", "msbdf", "rk4imp", "bsimp", "rk2"};
    for (size_t k = 0; k < sizeof integ / sizeof integ[0]; k++) {
        vars = sb_vars(b);
        pendulum_initial(b, vars, 1.2, 0.4);
        o = opts(10.0, 0.5, integ[k], 1e-8, 1e-10);
        o.project = true;
        run_ok(e, sys, vars, &o, &s, &sum);
        double th, om;
        pendulum_rk4(1.2, 0.4, 10.0, PEN_G, PEN_L, &th, &om);
        double dth = fabs(atan2(vars[x], -vars[y]) - th);
        printf("# pendulum projected, %-7s rtol 1e-8: %5zu steps, |Δθ(10)| "
               "%.3g, max |C| %.3g\n",
               integ[k], sum.steps, dth, sum.max_residual);
        assert_true(dth < 1e-4);
        assert_true(sum.max_residual <= 1e-12);
        sim_samples_free(&s);
    }
    eom_free(e);
    sb_free(b);
}

/* With speeds (maggi, gibbs_appell) only the coordinates are projected:
 * the circle drifts at position level without it and not with it. */
static void test_projection_speeds(void **state)
{
    (void)state;
    sb_t *b = cartesian_pendulum(true);
    const nh_system_t *sys = sb_system(b);
    const eom_method_t methods[] = {EOM_MAGGI, EOM_GIBBS_APPELL};
    for (size_t mi = 0; mi < 2; mi++) {
        eom_t *e = prep(sys, methods[mi]);
        double res[2];
        for (int project = 0; project < 2; project++) {
            double *vars = sb_vars(b);
            pendulum_initial(b, vars, 1.2, 0.4);
            vars[sb_var(b, "u")] = 0.4;
            sim_samples_t s = {0};
            sim_summary_t sum;
            sim_options_t o = opts(200.0, 0.5, "rkf45", 1e-6, 1e-6);
            o.project = project;
            run_ok(e, sys, vars, &o, &s, &sum);
            printf("# pendulum %s%s: max |C| %.3g\n",
                   eom_method_name(methods[mi]),
                   project ? " with project" : "", sum.max_residual);
            res[project] = sum.max_residual;
            sim_samples_free(&s);
        }
        assert_true(res[0] > 1e-6);
        assert_true(res[1] <= 1e-12);
        eom_free(e);
    }
    sb_free(b);
}

/* sim_project alone: a point off the circle goes radially onto it (the
 * least-norm correction is along ∇f = 2(x, y)), and the velocity
 * correction of least kinetic-energy norm with M = m·I is along (x, y). */
static void test_project_circle(void **state)
{
    (void)state;
    sb_t *b = cartesian_pendulum(false);
    const nh_system_t *sys = sb_system(b);
    uint32_t x = sb_var(b, "x"), y = sb_var(b, "y");
    uint32_t xd = sb_var(b, "x'"), yd = sb_var(b, "y'");
    double *vars = sb_vars(b);
    vars[x] = 0.9;
    vars[y] = -1.7;
    vars[xd] = 0.3;
    vars[yd] = 0.8;
    assert_true(sim_residual(sys, vars) > 0.1);
    diag_t err = {0};
    assert_int_equal(sim_project(sys, vars, &err), 0);
    double r = hypot(0.9, -1.7);
    assert_true(fabs(vars[x] - PEN_L * 0.9 / r) < 1e-15);
    assert_true(fabs(vars[y] - PEN_L * -1.7 / r) < 1e-15);
    double dx = vars[xd] - 0.3, dy = vars[yd] - 0.8;
    assert_true(fabs(dx * vars[y] - dy * vars[x]) < 1e-15); /* Δv ∥ q */
    assert_true(fabs(vars[x] * vars[xd] + vars[y] * vars[yd]) < 1e-15);
    assert_true(sim_residual(sys, vars) < 1e-14);
    sb_free(b);
}

/* The sphere: after a perturbation of the velocities, the projection
 * satisfies the constraints and its correction Δ is M-orthogonal to every
 * admissible velocity (the null space of B, written by hand from Lemos
 * eq. 2): Δᵀ M v = 0, the condition for the least kinetic-energy norm. */
static void test_project_sphere_metric(void **state)
{
    (void)state;
    sb_t *b = sphere();
    const nh_system_t *sys = sb_system(b);
    sphere_vars_t v = sphere_lookup(b);
    double *vars = sb_vars(b);
    sphere_initial(&v, vars);
    vars[v.q[0]] = 0.4; /* phi: a generic configuration */
    double before[5];
    vars[v.qd[3]] += 0.3;
    vars[v.qd[4]] -= 0.2;
    vars[v.qd[0]] += 0.1;
    for (int i = 0; i < 5; i++)
        before[i] = vars[v.qd[i]];
    diag_t err = {0};
    assert_int_equal(sim_project(sys, vars, &err), 0);
    assert_true(sim_residual(sys, vars) < 1e-14);
    double d[5];
    for (int i = 0; i < 5; i++)
        d[i] = vars[v.qd[i]] - before[i];
    double ph = vars[v.q[0]], th = vars[v.q[1]], R = SPH_R, I = 0.4 * SPH_M;
    /* M d: the angle block I·[[1,0,cosθ],[0,1,0],[cosθ,0,1]], then m. */
    double Md[5] = {I * (d[0] + cos(th) * d[2]), I * d[1],
                    I * (cos(th) * d[0] + d[2]), SPH_M * d[3], SPH_M * d[4]};
    double basis[3][5] = {
        {1, 0, 0, 0, 0},
        {0, 1, 0, R * sin(ph), -R * cos(ph)},
        {0, 0, 1, -R * sin(th) * cos(ph), -R * sin(th) * sin(ph)},
    };
    for (int k = 0; k < 3; k++) {
        double s = 0.0;
        for (int i = 0; i < 5; i++)
            s += Md[i] * basis[k][i];
        assert_true(fabs(s) < 1e-14);
    }
    /* The coordinates were on the constraints' manifold already (none
     * holonomic): untouched. */
    assert_true(vars[v.q[3]] == 0.2);
    sb_free(b);
}

/* ---- the nonholonomic bipendulum (Benenti §13) ------------------------------- */

static sb_t *bipendulum(double m1, double m2, double g)
{
    sb_t *b = sb_new();
    sb_param(b, "m1", m1);
    sb_param(b, "m2", m2);
    sb_param(b, "g", g);
    sb_coord(b, "x1");
    sb_coord(b, "y1");
    sb_coord(b, "x2");
    sb_coord(b, "y2");
    sb_kinetic(b, "m1/2*(x1'^2 + y1'^2) + m2/2*(x2'^2 + y2'^2)");
    /* forces along +x proportional to the masses (§13.6.4) */
    sb_potential(b, "-m1*g*x1 - m2*g*x2");
    /* Benenti eq. 73 */
    sb_constraint(b, "c", "x1*x1'*y2' - x2*x2'*y1' + (y1 - y2)*y1'*y2'");
    return b;
}

/* Spontaneous motions (g = 0): T1 and T2 constant separately (eqs. 85–87). */
static void test_bipendulum_energies(void **state)
{
    (void)state;
    double m1 = 1.0, m2 = 2.5;
    sb_t *b = bipendulum(m1, m2, 0.0);
    const nh_system_t *sys = sb_system(b);
    uint32_t x1 = sb_var(b, "x1"), y1 = sb_var(b, "y1"), x2 = sb_var(b, "x2"),
             y2 = sb_var(b, "y2");
    uint32_t dx1 = sb_var(b, "x1'"), dy1 = sb_var(b, "y1'"),
             dx2 = sb_var(b, "x2'"), dy2 = sb_var(b, "y2'");
    const eom_method_t methods[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND};
    for (size_t mi = 0; mi < 2; mi++) {
        eom_t *e = prep(sys, methods[mi]);
        double *vars = sb_vars(b);
        vars[x1] = 1.0;
        vars[y1] = 0.5;
        vars[x2] = 1.5;
        vars[y2] = -0.7;
        vars[dx1] = 0.3;
        vars[dy1] = 0.9;
        vars[dy2] = -0.6;
        /* x2' from eq. 73 */
        vars[dx2] = (vars[x1] * vars[dx1] * vars[dy2] +
                     (vars[y1] - vars[y2]) * vars[dy1] * vars[dy2]) /
                    (vars[x2] * vars[dy1]);
        double T1 = m1 / 2 * (0.3 * 0.3 + 0.9 * 0.9);
        double T2 = m2 / 2 * (vars[dx2] * vars[dx2] + 0.6 * 0.6);
        sim_samples_t s = {0};
        sim_summary_t sum;
        sim_options_t o = opts(3.0, 0.05, NULL, 1e-11, 1e-13);
        run_ok(e, sys, vars, &o, &s, &sum);
        double worst = 0.0, moved = 0.0;
        for (size_t k = 0; k < s.n; k++) {
            const double *r = row(&s, k);
            moved = fmax(moved, fabs(r[dx1] - 0.3));
            double t1 = m1 / 2 * (r[dx1] * r[dx1] + r[dy1] * r[dy1]);
            double t2 = m2 / 2 * (r[dx2] * r[dx2] + r[dy2] * r[dy2]);
            worst = fmax(worst, fmax(fabs(t1 - T1) / T1, fabs(t2 - T2) / T2));
        }
        printf("# bipendulum spontaneous (%s): max relative change of T1, "
               "T2 = %.3g (x1' changed by up to %.3g), max |C| %.3g\n",
               eom_method_name(methods[mi]), worst, moved, sum.max_residual);
        assert_true(moved > 0.1); /* the velocities do turn */
        assert_true(worst < 1e-9);
        assert_true(sum.energy_conserved); /* homogeneous, no forces */
        assert_true(sum.max_residual < 1e-9);
        sim_samples_free(&s);
        eom_free(e);
    }
    sb_free(b);
}

/* Equal masses on the incline, symmetric motion (x2 = x1, y2 = −y1): the
 * plane pendulum l θ'' + g sin θ = 0 with x = l cos θ, y = l sin θ. */
static void test_bipendulum_symmetric(void **state)
{
    (void)state;
    double g = 1.0, l = 1.0, th0 = 0.1, om0 = 1.0;
    sb_t *b = bipendulum(1.0, 1.0, g);
    const nh_system_t *sys = sb_system(b);
    uint32_t x1 = sb_var(b, "x1"), y1 = sb_var(b, "y1"), x2 = sb_var(b, "x2"),
             y2 = sb_var(b, "y2");
    uint32_t dx1 = sb_var(b, "x1'"), dy1 = sb_var(b, "y1'"),
             dx2 = sb_var(b, "x2'"), dy2 = sb_var(b, "y2'");
    eom_t *e = prep(sys, EOM_MULTIPLIERS);
    double *vars = sb_vars(b);
    vars[x1] = vars[x2] = l * cos(th0);
    vars[y1] = l * sin(th0);
    vars[y2] = -vars[y1];
    vars[dx1] = vars[dx2] = -l * om0 * sin(th0);
    vars[dy1] = l * om0 * cos(th0);
    vars[dy2] = -vars[dy1];
    sim_samples_t s = {0};
    sim_summary_t sum;
    /* θ' stays away from 0 (a singular state, eq. 72c) until t = 0.8 */
    sim_options_t o = opts(0.8, 0.05, NULL, 1e-11, 1e-13);
    run_ok(e, sys, vars, &o, &s, &sum);
    double dth = 0.0, dsym = 0.0, dr = 0.0;
    for (size_t k = 0; k < s.n; k++) {
        const double *r = row(&s, k);
        double th, om;
        pendulum_rk4(th0, om0, r[sys->t], g, l, &th, &om);
        dth = fmax(dth, fabs(atan2(r[y1], r[x1]) - th));
        dsym = fmax(dsym, fmax(fabs(r[x2] - r[x1]), fabs(r[y2] + r[y1])));
        dr = fmax(dr, fabs(hypot(r[x1], r[y1]) - l));
    }
    double th, om;
    pendulum_rk4(th0, om0, 0.8, g, l, &th, &om);
    printf("# bipendulum symmetric motion vs RK4 pendulum: max |Δθ| %.3g, "
           "symmetry %.3g, |r - l| %.3g (θ'(0.8) = %.3f)\n",
           dth, dsym, dr, om);
    assert_true(dth < 1e-8);
    assert_true(dsym < 1e-10);
    assert_true(dr < 1e-8);
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oscillator_closed_form),
        cmocka_unit_test(test_oscillator_integrators),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_sphere_methods),
        cmocka_unit_test(test_sphere_integrators),
        cmocka_unit_test(test_sparse_samples),
        cmocka_unit_test(test_singular_mass_matrix),
        cmocka_unit_test(test_nonfinite_rhs),
        cmocka_unit_test(test_projection_pendulum),
        cmocka_unit_test(test_projection_speeds),
        cmocka_unit_test(test_project_circle),
        cmocka_unit_test(test_project_sphere_metric),
        cmocka_unit_test(test_bipendulum_energies),
        cmocka_unit_test(test_bipendulum_symmetric),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
