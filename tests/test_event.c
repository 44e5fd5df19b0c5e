/*
 * test_event.c — the events of `simulate` (LANGUAGE.md §6.1):
 * interp/run/event.h's interpolant and root finder, and sim_run with
 * `until` and `sample at`.
 *
 * Every expected number comes from a closed form computed here:
 *   — polynomials, which the Hermite interpolants reproduce exactly, and
 *     exp(t), against the interpolants' error bounds;
 *   — the plane pendulum l θ'' = −g sin θ released from rest at θ0: it
 *     reaches θ = 0 after a quarter period √(l/g)·K(sin(θ0/2)), K the
 *     complete elliptic integral of the first kind, here by the
 *     arithmetic-geometric mean, K(k) = π / (2 AGM(1, √(1 − k²)))
 *     (Abramowitz & Stegun 17.6), and crosses it again every half period;
 *   — the harmonic oscillator x = cos ωt, whose maximum 1 lies just above
 *     a level 1 − ε: two crossings 2·acos(1 − ε)/ω apart, inside one
 *     step of the integrator;
 *   — a knife edge (skate) on a horizontal plane in Kane's form, speeds
 *     v and w constant: y' = v sin(φ0 + w t) vanishes at t = (π − φ0)/w.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/eom/eom.h"
#include "interp/run/event.h"
#include "interp/run/sim.h"
#include "tests/sys_builder.h"

/* ---- the interpolant ------------------------------------------------------ */

/* A polynomial of degree 5 and its derivative. */
static double poly5(double t) { return 1 - 2 * t + 0.5 * t * t * t - 0.25 * pow(t, 5); }
static double dpoly5(double t) { return -2 + 1.5 * t * t - 1.25 * pow(t, 4); }

static void test_interp_polynomials(void **state)
{
    (void)state;
    event_interp_t ip;
    event_interp_init(&ip, 2);
    double t[3] = {0.2, 0.5, 1.1};
    double y[3][2], f[3][2];
    for (int i = 0; i < 3; i++) {
        y[i][0] = poly5(t[i]);
        f[i][0] = dpoly5(t[i]);
        /* a cubic in the second component */
        y[i][1] = 3 - t[i] + 2 * t[i] * t[i] * t[i];
        f[i][1] = -1 + 6 * t[i] * t[i];
    }
    const double *py[3] = {y[0], y[1], y[2]}, *pf[3] = {f[0], f[1], f[2]};
    /* three nodes: degree 5, exact on both */
    event_interp_build(&ip, 3, t, py, pf);
    for (double s = 0.2; s <= 1.1; s += 0.05) {
        double v[2];
        event_interp_eval(&ip, s, v);
        assert_true(fabs(v[0] - poly5(s)) < 1e-14);
        assert_true(fabs(v[1] - (3 - s + 2 * s * s * s)) < 1e-14);
    }
    /* two nodes: degree 3, exact on the cubic */
    event_interp_build(&ip, 2, t + 1, py + 1, pf + 1);
    for (double s = 0.5; s <= 1.1; s += 0.05) {
        double v[2];
        event_interp_eval(&ip, s, v);
        assert_true(fabs(v[1] - (3 - s + 2 * s * s * s)) < 1e-14);
    }
    event_interp_free(&ip);
}

/* exp(t) on [0, h] with the step [−h, 0] before it: the errors within
 * the bounds of event.h, y⁽⁶⁾/6!·max (t+h)²t²(t−h)² and
 * y⁽⁴⁾/4!·max t²(t−h)² (y⁽ᵏ⁾ ≤ e^h on the interval). */
static void test_interp_error_bounds(void **state)
{
    (void)state;
    event_interp_t ip;
    event_interp_init(&ip, 1);
    double h = 0.3, t[3] = {-h, 0, h}, y[3], f[3];
    for (int i = 0; i < 3; i++)
        y[i] = f[i] = exp(t[i]);
    const double *py[3] = {&y[0], &y[1], &y[2]};
    const double *pf[3] = {&f[0], &f[1], &f[2]};
    double e5 = 0, e3 = 0;
    event_interp_build(&ip, 3, t, py, pf);
    for (double s = 0; s <= h; s += h / 64) {
        double v;
        event_interp_eval(&ip, s, &v);
        e5 = fmax(e5, fabs(v - exp(s)));
    }
    event_interp_build(&ip, 2, t + 1, py + 1, pf + 1);
    for (double s = 0; s <= h; s += h / 64) {
        double v;
        event_interp_eval(&ip, s, &v);
        e3 = fmax(e3, fabs(v - exp(s)));
    }
    /* max over [0, h] of (t+h)²t²(t−h)² = (2/(3√3))² h⁶, of t²(t−h)² h⁴/16 */
    double b5 = exp(h) / 720 * pow(2 / (3 * sqrt(3)), 2) * pow(h, 6);
    double b3 = exp(h) / 24 * pow(h, 4) / 16;
    printf("# interpolant on exp, h = 0.3: quintic %.3g (bound %.3g), "
           "cubic %.3g (bound %.3g)\n", e5, b5, e3, b3);
    assert_true(e5 <= b5 && e5 > b5 / 20);
    assert_true(e3 <= b3 && e3 > b3 / 20);
    event_interp_free(&ip);
}

/* ---- the root finder ---------------------------------------------------- */

typedef struct fn_ctx {
    int kind;
    bool rate;
    size_t calls;
} fn_ctx_t;

static int fn_probe(void *ctx, double t, double *g, double *dg)
{
    fn_ctx_t *c = ctx;
    c->calls++;
    switch (c->kind) {
    case 0: /* cos t − 0.3 */
        *g = cos(t) - 0.3;
        *dg = -sin(t);
        break;
    case 1: /* a jump at 0.7 */
        *g = t < 0.7 ? -1.0 : 2.0;
        *dg = 0.0;
        break;
    default: /* a triple zero at 1: Newton converges linearly */
        *g = pow(t - 1, 3);
        *dg = 3 * pow(t - 1, 2);
        break;
    }
    if (!c->rate)
        *dg = NAN;
    return 0;
}

static void test_locate(void **state)
{
    (void)state;
    double root = acos(0.3);
    event_root_t r;
    /* with the rate, from a seed 1e-3 away: Newton, few probes */
    fn_ctx_t c = {0, true, 0};
    assert_int_equal(event_locate(fn_probe, &c, 0.5, cos(0.5) - 0.3, 2.0,
                                  cos(2.0) - 0.3, root + 1e-3, 1e-14, 0.0, 60, &r),
                     0);
    double got = r.t + (isfinite(r.newton) ? r.newton : 0);
    printf("# cos t = 0.3 with rates: %zu probes, error %.2g\n", r.probes,
           got - root);
    assert_true(fabs(got - root) < 1e-14);
    assert_true(r.probes <= 3);
    /* without: Illinois from the bracket alone */
    c = (fn_ctx_t){0, false, 0};
    assert_int_equal(event_locate(fn_probe, &c, 0.5, cos(0.5) - 0.3, 2.0,
                                  cos(2.0) - 0.3, NAN, 1e-14, 0.0, 60, &r),
                     0);
    printf("# cos t = 0.3 without rates: %zu probes, error %.2g\n",
           r.probes, r.t - root);
    assert_true(fabs(r.t - root) < 1e-14);
    assert_true(r.probes <= 15);
    /* a jump: the bracket closes on it, whatever the rates say */
    c = (fn_ctx_t){1, true, 0};
    assert_int_equal(event_locate(fn_probe, &c, 0.0, -1.0, 1.0, 2.0, 0.2,
                                  1e-12, 0.0, 100, &r),
                     0);
    assert_true(fabs(r.t - 0.7) <= 1e-12);
    printf("# a jump: %zu probes\n", r.probes);
    /* a triple zero, where Newton converges only linearly: the bracket
     * still at least halves every other probe */
    c = (fn_ctx_t){2, true, 0};
    assert_int_equal(event_locate(fn_probe, &c, 0.0, -1.0, 1.5, 0.125, 1.3,
                                  1e-12, 0.0, 100, &r),
                     0);
    printf("# a triple zero: %zu probes\n", r.probes);
    got = r.t + (isfinite(r.newton) ? r.newton : 0);
    assert_true(fabs(got - 1.0) <= 1e-12);
    assert_true(r.probes <= 2 * 41 + 5); /* 2 log2(1.5e12), and a few */
    /* the seed on an interpolant: to the resolution of the doubles */
    c = (fn_ctx_t){0, false, 0};
    double s = event_seed(fn_probe, &c, 0.5, cos(0.5) - 0.3, 2.0,
                          cos(2.0) - 0.3);
    assert_true(fabs(s - root) <= 4e-16 * 2);
}

/* ---- the pendulum ----------------------------------------------------------- */

#define PEND_G 9.81
#define PEND_L 1.5

static sb_t *pendulum(void)
{
    sb_t *b = sb_new();
    sb_param(b, "m", 2.0);
    sb_param(b, "g", PEND_G);
    sb_param(b, "l", PEND_L);
    sb_coord(b, "theta");
    sb_kinetic(b, "m*l^2/2*theta'^2");
    sb_potential(b, "-m*g*l*cos(theta)");
    return b;
}

static double agm(double a, double b)
{
    for (int i = 0; i < 40 && a != b; i++) {
        double m = 0.5 * (a + b);
        b = sqrt(a * b);
        a = m;
    }
    return a;
}

/* √(l/g)·K(sin(θ0/2)), K(k) = π/(2 AGM(1, √(1 − k²))). */
static double quarter_period(double th0)
{
    return sqrt(PEND_L / PEND_G) * M_PI / (2 * agm(1, cos(th0 / 2)));
}

static eom_t *prep(const nh_system_t *sys, eom_method_t m)
{
    diag_t err = {0};
    eom_t *e = eom_prepare(sys, m, SRC_SPAN_NONE, &err);
    if (!e)
        fail_msg("%s: prepare failed: %s", eom_method_name(m), err.msg);
    return e;
}

static void run_ok(eom_t *e, const nh_system_t *sys, double *vars,
                   const sim_options_t *o, sim_samples_t *s,
                   sim_summary_t *sum)
{
    diag_t err = {0};
    if (sim_run(e, sys, vars, o, s, sum, &err) != 0)
        fail_msg("sim_run failed: %s", err.msg);
}

static const double *row(const sim_samples_t *s, size_t k)
{
    return s->data + k * s->width;
}

/* until theta = 0 from rest: the quarter period, to 1e-12 relative. */
static void test_until_quarter_period(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta");
    sim_event_t ev = {sb_expr(b, "theta"), 0, false};
    const double th0s[] = {0.3, 1.0, 2.0, 3.0};
    for (size_t i = 0; i < 4; i++) {
        double *vars = sb_vars(b);
        vars[th] = th0s[i];
        sim_samples_t s = {0};
        sim_summary_t sum;
        sim_options_t o = {.t_end = 10, .step = 0.01, .rtol = 1e-13,
                           .atol = 1e-15, .event = &ev};
        run_ok(e, sys, vars, &o, &s, &sum);
        double q = quarter_period(th0s[i]);
        printf("# until theta = 0 from %g: t = %.17g, quarter period "
               "%.17g, rel. error %.2g, %zu probes\n",
               th0s[i], vars[sys->t], q, (vars[sys->t] - q) / q,
               sum.event_probes);
        assert_true(sum.event_hit);
        assert_int_equal(sum.event_dir, -1);
        assert_true(fabs(vars[sys->t] - q) <= 1e-12 * q);
        assert_true(sum.event_t == vars[sys->t]);
        /* the event is the last sample, after the grid's before it */
        assert_int_equal(s.n, (size_t)floor(q / 0.01) + 2);
        assert_true(row(&s, s.n - 1)[sys->t] == vars[sys->t]);
        assert_true(row(&s, s.n - 2)[sys->t] < vars[sys->t]);
        assert_true(fabs(vars[th]) < 1e-13);
        assert_true(sum.event_probes <= 2);
        sim_samples_free(&s);
    }
    eom_free(e);
    sb_free(b);
}

/* Every integrator locates the event on its own solution: to its
 * accuracy (msadams' and msbdf's steps are integrated again by rk8pd and
 * bsimp). */
static void test_until_integrators(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta");
    sim_event_t ev = {sb_expr(b, "theta"), -1, false};
    double q = quarter_period(1.0);
    for (size_t k = 0; sim_integrators[k]; k++) {
        const char *name = sim_integrators[k];
        bool low = strcmp(name, "rk1imp") == 0 || strcmp(name, "rk2") == 0;
        double rtol = low ? 1e-7 : 1e-10;
        double *vars = sb_vars(b);
        vars[th] = 1.0;
        sim_samples_t s = {0};
        sim_summary_t sum;
        sim_options_t o = {.t_end = 5, .step = 0.5, .rtol = rtol,
                           .atol = rtol * 1e-2, .integrator = name,
                           .event = &ev};
        run_ok(e, sys, vars, &o, &s, &sum);
        printf("# until theta = 0, %-8s: error %.2g, %zu steps, %zu probes\n",
               name, vars[sys->t] - q, sum.steps, sum.event_probes);
        assert_true(sum.event_hit);
        assert_true(fabs(vars[sys->t] - q) < (low ? 1e-3 : 1e-7));
        /* on the integrator's solution: θ there is 0 to its rounding */
        assert_true(fabs(vars[th]) < 1e-12);
        sim_samples_free(&s);
    }
    eom_free(e);
    sb_free(b);
}

/* sample at theta = 0 rising: the crossings, one period apart; the
 * rising and falling ones alternate half a period apart. */
static void test_section_period(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta"), thd = sb_var(b, "theta'");
    double q = quarter_period(2.0);
    for (int dir = -1; dir <= 1; dir++) {
        sim_event_t ev = {sb_expr(b, "theta"), dir, true};
        double *vars = sb_vars(b);
        vars[th] = 2.0;
        sim_samples_t s = {0};
        sim_summary_t sum;
        sim_options_t o = {.t_end = 30, .step = 1, .rtol = 1e-13,
                           .atol = 1e-15, .event = &ev};
        run_ok(e, sys, vars, &o, &s, &sum);
        /* falling at q, 5q, 9q, …; rising at 3q, 7q, … (before 30) */
        size_t want = 0;
        for (int j = 1; (2 * j - 1) * q < 30; j++)
            want += dir == 0 || (j % 2 == 1 ? dir == -1 : dir == 1);
        assert_int_equal(sum.crossings, want);
        assert_int_equal(s.n, want);
        assert_int_equal(sum.samples, want);
        double worst = 0;
        for (size_t k = 0; k < s.n; k++) {
            const double *r = row(&s, k);
            int j = dir == 0 ? (int)k + 1 : dir == -1 ? 2 * (int)k + 1
                                                      : 2 * (int)k + 2;
            worst = fmax(worst, fabs(r[sys->t] - (2 * j - 1) * q));
            assert_true(fabs(r[th]) < 1e-12);
            assert_true(dir == 0 || r[thd] * dir > 0);
        }
        printf("# sample at theta = 0, dir %+d: %zu crossings, max |t - "
               "(2j-1)q| = %.2g\n", dir, s.n, worst);
        assert_true(worst < 1e-11);
        /* the state is the final one, not a sample */
        assert_true(vars[sys->t] == 30);
        sim_samples_free(&s);
    }
    eom_free(e);
    sb_free(b);
}

/* A run that starts where `until` stopped finds the next crossing, not
 * the one it starts on (on either side of it within rounding); one that
 * starts exactly on the level does not count the start. */
static void test_until_again(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta"), thd = sb_var(b, "theta'");
    sim_event_t ev = {sb_expr(b, "theta"), 0, false};
    double q = quarter_period(1.0);
    double *vars = sb_vars(b);
    vars[th] = 1.0;
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = {.t_end = 10, .step = 0.1, .rtol = 1e-13,
                       .atol = 1e-15, .event = &ev};
    for (int j = 1; j <= 4; j++) {
        run_ok(e, sys, vars, &o, &s, &sum);
        assert_true(sum.event_hit);
        assert_int_equal(sum.event_dir, j % 2 ? -1 : 1);
        assert_true(fabs(vars[sys->t] - (2 * j - 1) * q) < 1e-11);
    }
    /* exactly on the level at the start, moving */
    double *v2 = sb_vars(b);
    v2[th] = 0.0;
    v2[thd] = 1.0;
    sim_samples_t s2 = {0};
    run_ok(e, sys, v2, &o, &s2, &sum);
    assert_true(sum.event_hit);
    assert_int_equal(sum.event_dir, -1);
    assert_true(v2[sys->t] > 0.5);
    sim_samples_free(&s);
    sim_samples_free(&s2);
    eom_free(e);
    sb_free(b);
}

/* An event function that holds an acceleration has no rate: the
 * Illinois iteration alone, to the same accuracy. */
static void test_until_acceleration(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta");
    /* θ'' = −(g/l) sin θ: 0 where θ is */
    sim_event_t ev = {sb_expr(b, "theta''"), 0, false};
    double *vars = sb_vars(b);
    vars[th] = 1.0;
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = {.t_end = 10, .step = 0.1, .rtol = 1e-13,
                       .atol = 1e-15, .event = &ev};
    run_ok(e, sys, vars, &o, &s, &sum);
    double q = quarter_period(1.0);
    printf("# until theta'' = 0: rel. error %.2g, %zu probes\n",
           (vars[sys->t] - q) / q, sum.event_probes);
    assert_true(sum.event_hit);
    assert_true(fabs(vars[sys->t] - q) <= 1e-12 * q);
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

/* ---- two crossings inside one step ------------------------------------------ */

/* x = cos 2t from t = −1 (ω = 2): x rises through 1 − ε at −acos(1 − ε)/2
 * and falls back through it at +acos(1 − ε)/2, 2e-3 apart for ε = 2e-6:
 * far inside the rk8pd steps of this smooth motion. */
static void test_pair_in_one_step(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "m", 2.0);
    sb_param(b, "k", 8.0);
    sb_coord(b, "x");
    sb_kinetic(b, "m/2*x'^2");
    sb_potential(b, "k/2*x^2");
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t x = sb_var(b, "x"), xd = sb_var(b, "x'");
    double eps = 2e-6, tc = acos(1 - eps) / 2;
    sim_event_t ev = {sb_expr(b, "x - (1 - 2e-6)"), 0, false};
    double *vars = sb_vars(b);
    vars[sys->t] = -1.0;
    vars[x] = cos(-2.0);
    vars[xd] = -2 * sin(-2.0);
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = {.t_end = 1, .step = 2, .rtol = 1e-13, .atol = 1e-15,
                       .event = &ev};
    run_ok(e, sys, vars, &o, &s, &sum);
    printf("# x = cos 2t through 1 - 2e-6: t = %.17g (want %.17g), %zu "
           "steps for the span of %.2g\n", vars[sys->t], -tc, sum.steps,
           2 * tc);
    assert_true(sum.event_hit);
    assert_int_equal(sum.event_dir, 1);
    /* |x'| = 2 sin(2 tc) = 4e-3 there: the solution's 1e-14 is 2.5e-12 in t */
    assert_true(fabs(vars[sys->t] + tc) < 1e-10);
    /* the steps are longer than the pair's span (the case tested) */
    assert_true(sum.steps < 2.0 / (2 * tc));
    /* both, as a section */
    ev.section = true;
    double *v2 = sb_vars(b);
    v2[sys->t] = -1.0;
    v2[x] = cos(-2.0);
    v2[xd] = -2 * sin(-2.0);
    sim_samples_t s2 = {0};
    run_ok(e, sys, v2, &o, &s2, &sum);
    assert_int_equal(s2.n, 2);
    assert_true(fabs(row(&s2, 0)[sys->t] + tc) < 1e-10);
    assert_true(fabs(row(&s2, 1)[sys->t] - tc) < 1e-10);
    /* and only the falling one when asked */
    ev.section = false;
    ev.dir = -1;
    double *v3 = sb_vars(b);
    v3[sys->t] = -1.0;
    v3[x] = cos(-2.0);
    v3[xd] = -2 * sin(-2.0);
    sim_samples_t s3 = {0};
    run_ok(e, sys, v3, &o, &s3, &sum);
    assert_true(sum.event_hit);
    assert_true(fabs(v3[sys->t] - tc) < 1e-10);
    sim_samples_free(&s);
    sim_samples_free(&s2);
    sim_samples_free(&s3);
    eom_free(e);
    sb_free(b);
}

/* ---- what the equations derive ---------------------------------------------- */

/* The skate in Kane's form: y' is derived from the speed (y' = v sin φ),
 * so the event's value vector is completed at every step. */
static void test_until_derived_velocity(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "m", 1.5);
    sb_param(b, "I", 0.2);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_coord(b, "phi");
    sb_speed(b, "v");
    sb_speed(b, "w");
    sb_kinetic(b, "m/2*(x'^2 + y'^2) + I/2*phi'^2");
    sb_constraint(b, "knife", "-x'*sin(phi) + y'*cos(phi)");
    sb_kinematic(b, "x", "v*cos(phi)");
    sb_kinematic(b, "y", "v*sin(phi)");
    sb_kinematic(b, "phi", "w");
    const nh_system_t *sys = sb_system(b);
    for (int method = 0; method < 2; method++) {
        eom_t *e = prep(sys, method ? EOM_GIBBS_APPELL : EOM_MAGGI);
        sim_event_t ev = {sb_expr(b, "y'"), 0, false};
        double *vars = sb_vars(b);
        double phi0 = 0.4, w = 0.7;
        vars[sb_var(b, "phi")] = phi0;
        vars[sb_var(b, "v")] = 1.3;
        vars[sb_var(b, "w")] = w;
        sim_samples_t s = {0};
        sim_summary_t sum;
        sim_options_t o = {.t_end = 20, .step = 0.5, .rtol = 1e-13,
                           .atol = 1e-15, .event = &ev};
        run_ok(e, sys, vars, &o, &s, &sum);
        double want = (M_PI - phi0) / w;
        printf("# %s until y' = 0: error %.2g, %zu probes\n",
               eom_method_name(eom_method(e)), vars[sys->t] - want,
               sum.event_probes);
        assert_true(sum.event_hit);
        assert_int_equal(sum.event_dir, -1);
        assert_true(fabs(vars[sys->t] - want) < 1e-12 * want);
        sim_samples_free(&s);
        eom_free(e);
    }
    sb_free(b);
}

/* ---- failures ------------------------------------------------------------------ */

/* An event function that is not finite at a step is an error with the
 * time and the state (event_failed), after the samples before it. */
static void test_event_not_finite(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta");
    /* sqrt(theta − 0.5): NaN once θ < 0.5 */
    sim_event_t ev = {sb_expr(b, "sqrt(theta - 0.5)"), 0, false};
    double *vars = sb_vars(b);
    vars[th] = 1.0;
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = {.t_end = 10, .step = 0.1, .rtol = 1e-10,
                       .atol = 1e-12, .event = &ev};
    diag_t err = {0};
    assert_int_equal(sim_run(e, sys, vars, &o, &s, &sum, &err), -1);
    printf("# %s\n", err.msg);
    assert_true(sum.event_failed);
    assert_non_null(strstr(err.msg, "the event's expression is not finite"));
    assert_non_null(strstr(err.msg, "state: theta = "));
    /* at the last sample, before θ fell below 0.5 */
    assert_true(s.n > 1);
    assert_true(vars[sys->t] == row(&s, s.n - 1)[sys->t]);
    assert_true(vars[th] >= 0.5);
    sim_samples_free(&s);
    /* not finite at the start: nothing recorded, nothing changed */
    vars = sb_vars(b);
    vars[th] = 0.2;
    diag_clear(&err);
    sim_samples_t s2 = {0};
    assert_int_equal(sim_run(e, sys, vars, &o, &s2, &sum, &err), -1);
    assert_true(sum.event_failed);
    assert_true(vars[th] == 0.2);
    sim_samples_free(&s2);
    eom_free(e);
    sb_free(b);
}

/* A section beyond the sample limit: an error at the crossing that would
 * exceed it; the crossings before it stay and the state is the last. */
static void test_section_limit(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta");
    sim_event_t ev = {sb_expr(b, "theta"), 0, true};
    double *vars = sb_vars(b);
    vars[th] = 1.0;
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = {.t_end = 100, .step = 1, .rtol = 1e-10,
                       .atol = 1e-12, .max_samples = 5, .event = &ev};
    diag_t err = {0};
    assert_int_equal(sim_run(e, sys, vars, &o, &s, &sum, &err), -1);
    printf("# %s\n", err.msg);
    assert_non_null(strstr(err.msg, "beyond the limit of 5 recorded samples"));
    assert_int_equal(s.n, 5);
    double q = quarter_period(1.0);
    assert_true(fabs(vars[sys->t] - 9 * q) < 1e-8);
    assert_true(vars[sys->t] == row(&s, 4)[sys->t]);
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

/* A stop request (Ctrl-C, the C API's time limit) ends the run with an
 * error; the samples stay. */
static void test_event_stop(void **state)
{
    (void)state;
    sb_t *b = pendulum();
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    uint32_t th = sb_var(b, "theta");
    sim_event_t ev = {sb_expr(b, "theta"), 0, true};
    double *vars = sb_vars(b);
    vars[th] = 1.0;
    sim_samples_t s = {0};
    nh_stop_t stop = {.raised = 1};
    sim_options_t o = {.t_end = 100, .step = 1, .rtol = 1e-10,
                       .atol = 1e-12, .event = &ev, .stop = &stop};
    diag_t err = {0};
    assert_int_equal(sim_run(e, sys, vars, &o, &s, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "interrupted"));
    assert_int_equal(s.n, 0);
    assert_true(vars[th] == 1.0);
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

/* With `project`, the pendulum in Cartesian coordinates: the event on
 * the circle, at the quarter period. */
static void test_until_project(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "m", 2.0);
    sb_param(b, "g", PEND_G);
    sb_param(b, "l", PEND_L);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "m/2*(x'^2 + y'^2)");
    sb_potential(b, "m*g*y");
    sb_constraint(b, "rod", "x^2 + y^2 - l^2");
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_MULTIPLIERS);
    sim_event_t ev = {sb_expr(b, "x"), 0, false};
    double *vars = sb_vars(b);
    vars[sb_var(b, "x")] = PEND_L * sin(2.0);
    vars[sb_var(b, "y")] = -PEND_L * cos(2.0);
    sim_samples_t s = {0};
    sim_summary_t sum;
    sim_options_t o = {.t_end = 10, .step = 0.1, .rtol = 1e-13,
                       .atol = 1e-15, .project = true, .event = &ev};
    run_ok(e, sys, vars, &o, &s, &sum);
    double q = quarter_period(2.0);
    assert_true(sum.event_hit);
    assert_true(fabs(vars[sys->t] - q) < 1e-12 * q);
    assert_true(fabs(vars[sb_var(b, "y")] + PEND_L) < 1e-12);
    sim_samples_free(&s);
    eom_free(e);
    sb_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interp_polynomials),
        cmocka_unit_test(test_interp_error_bounds),
        cmocka_unit_test(test_locate),
        cmocka_unit_test(test_until_quarter_period),
        cmocka_unit_test(test_until_integrators),
        cmocka_unit_test(test_section_period),
        cmocka_unit_test(test_until_again),
        cmocka_unit_test(test_until_acceleration),
        cmocka_unit_test(test_pair_in_one_step),
        cmocka_unit_test(test_until_derived_velocity),
        cmocka_unit_test(test_event_not_finite),
        cmocka_unit_test(test_section_limit),
        cmocka_unit_test(test_event_stop),
        cmocka_unit_test(test_until_project),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
