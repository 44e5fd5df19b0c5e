/*
 * test_dla.c — `integrator dla` (LANGUAGE.md §6.2, interp/run/dla.h):
 * its order, measured; the constraints at every step; the energy over
 * long runs; the Chaplygin sleigh's asymptote; and the verdict of Modin
 * & Verdier (2020) that reversibility, not the discrete variational
 * principle, keeps the energy of a nonholonomic integrator bounded.
 *
 * References are independent of the scheme: the closed form of the
 * sleigh (examples/chaplygin_sleigh.nh derives it), and for the order a
 * run of GSL's rk8pd at rtol 1e-13 (another method; its own error is
 * below 1e-11, a thousandth of the errors measured).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/cli/session.h"

typedef struct run {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} run_t;

static void run_open(run_t *r, const char *model)
{
    memset(r, 0, sizeof *r);
    r->fout = open_memstream(&r->out, &r->out_len);
    r->ferr = open_memstream(&r->err, &r->err_len);
    r->s = session_new(true, r->fout, r->ferr);
    if (session_run_text(r->s, "<model>", model, strlen(model), false) !=
        RUN_OK) {
        fflush(r->ferr);
        fail_msg("the model: %s", r->err);
    }
}

static void run_close(run_t *r)
{
    session_free(r->s);
    fclose(r->fout);
    fclose(r->ferr);
    free(r->out);
    free(r->err);
}

/* Runs TEXT; what it printed. */
static const char *run_text(run_t *r, const char *text)
{
    fflush(r->fout);
    size_t mark = r->out_len;
    fflush(r->ferr);
    size_t emark = r->err_len;
    if (session_run_text(r->s, "<test>", text, strlen(text), false) !=
        RUN_OK) {
        fflush(r->ferr);
        fail_msg("%s\n%s", text, r->err + emark);
    }
    fflush(r->fout);
    return r->out + mark;
}

/* The rows of `table` after its header: NROWS × NCOLS numbers into X. */
static size_t rows(const char *out, double *x, size_t ncols, size_t max)
{
    const char *p = strchr(out, '\n');
    size_t k = 0;
    while (p && *++p && k + ncols <= max) {
        char *q = (char *)p;
        for (size_t c = 0; c < ncols; c++) {
            x[k + c] = strtod(q, &q);
            if (*q == ',')
                q++;
        }
        k += ncols;
        p = strchr(p, '\n');
    }
    return k / ncols;
}

/* ---- the models -------------------------------------------------------- */

/* The rolling disk of examples/rolling_disk.nh (gravity: a potential). */
static const char disk[] =
    "param m = 1, r = 0.5, g = 9.81\n"
    "coord phi, theta, psi, x, y\n"
    "kinetic T = m/2*(x'^2 + y'^2 + r^2*cos(theta)^2*theta'^2) + "
    "m*r^2/8*(phi'^2*sin(theta)^2 + theta'^2) + m*r^2/4*(phi'*cos(theta) "
    "+ psi')^2\n"
    "potential V = m*g*r*sin(theta)\n"
    "constraint roll_x: x' = r*(theta'*sin(phi)*sin(theta) - "
    "cos(phi)*(phi'*cos(theta) + psi'))\n"
    "constraint roll_y: y' = -r*(theta'*cos(phi)*sin(theta) + "
    "sin(phi)*(phi'*cos(theta) + psi'))\n"
    "set max_steps = 1e7\n";
static const char disk_state[] =
    "initial phi = 0.3, theta = 1.2, phi' = 0.7, theta' = 0.4, psi' = 3\n";

#ifndef DLA_ENERGY
/* The values printed by `print a, b, …` (lines "TEXT = VALUE") into X,
 * at most N; their count. */
static size_t values(const char *out, double *x, size_t n)
{
    size_t k = 0;
    for (const char *p = out; *p && k < n;) {
        const char *eq = strstr(p, " = ");
        if (!eq)
            break;
        x[k++] = strtod(eq + 3, NULL);
        const char *nl = strchr(eq, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    return k;
}

/* Lemos's rolling sphere (LANGUAGE.md §11). */
static const char sphere[] =
    "param m = 1, R = 1\n"
    "coord phi, theta, psi, x, y\n"
    "kinetic T = m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + psi'^2 + "
    "2*phi'*psi'*cos(theta))\n"
    "constraint roll_x: x' = R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi)\n"
    "constraint roll_y: y' = -R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi)\n"
    "set max_steps = 1e7\n";
static const char sphere_state[] =
    "initial theta = 1, phi' = 0.7, theta' = 0.3, psi' = 1.1\n";

/* The largest difference of the coordinates at t = 10 after a dla run
 * with step H and after the reference run. */
static double error_at_10(const char *model, const char *state, double h)
{
    run_t r;
    run_open(&r, model);
    double ref[5], got[5];
    run_text(&r, state);
    run_text(&r, "simulate to 10 step 1 rtol 1e-13 atol 1e-14\n");
    assert_int_equal(values(run_text(&r, "print phi, theta, psi, x, y\n"),
                            ref, 5),
                     5);
    char text[160];
    snprintf(text, sizeof text,
             "reset\nsimulate to 10 step 1 integrator dla h %.17g\n", h);
    run_text(&r, text);
    assert_int_equal(values(run_text(&r, "print phi, theta, psi, x, y\n"),
                            got, 5),
                     5);
    run_close(&r);
    double e = 0;
    for (int i = 0; i < 5; i++)
        e = fmax(e, fabs(got[i] - ref[i]));
    return e;
}

/* Order 2: halving h divides the error by 4 (±10%), twice. */
static void check_order(const char *model, const char *state, double h)
{
    double e1 = error_at_10(model, state, h);
    double e2 = error_at_10(model, state, h / 2);
    double e3 = error_at_10(model, state, h / 4);
    print_message("h = %g: errors %.3e, %.3e, %.3e: ratios %.4f, %.4f\n", h,
                  e1, e2, e3, e1 / e2, e2 / e3);
    assert_true(e1 / e2 > 3.6 && e1 / e2 < 4.4);
    assert_true(e2 / e3 > 3.6 && e2 / e3 < 4.4);
}

static void test_order_sphere(void **state)
{
    (void)state;
    check_order(sphere, sphere_state, 0.02);
}

static void test_order_disk(void **state)
{
    (void)state;
    check_order(disk, disk_state, 0.01);
}

/* The constraints hold at every step to rounding: with a sample at every
 * step, each sample's residual of roll_x and roll_y, against the size of
 * the velocities, and a holonomic constraint (a pendulum in Cartesian
 * coordinates) at position level as well as velocity level. */
static void test_constraints_every_step(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, sphere);
    run_text(&r, sphere_state);
    run_text(&r, "simulate to 20 step 0.01 integrator dla\n");
    static double x[4002 * 3];
    const char *out = run_text(
        &r, "table x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi)), "
            "y' + R*theta'*cos(phi) + R*psi'*sin(theta)*sin(phi), "
            "abs(phi') + abs(theta') + abs(psi') + abs(x') + abs(y')\n");
    size_t n = rows(out, x, 3, sizeof x / sizeof *x);
    assert_int_equal(n, 2001);
    for (size_t k = 0; k < n; k++)
        if (!(fabs(x[3 * k]) <= 1e-13 * x[3 * k + 2] &&
              fabs(x[3 * k + 1]) <= 1e-13 * x[3 * k + 2]))
            fail_msg("sample %zu: residuals %g, %g of velocities %g", k,
                     x[3 * k], x[3 * k + 1], x[3 * k + 2]);
    run_close(&r);

    run_open(&r, "param l = 1.5, g = 9.81\ncoord px, py\n"
                 "kinetic T = (px'^2 + py'^2)/2\npotential V = g*py\n"
                 "constraint ring: px^2 + py^2 = l^2\n");
    run_text(&r, "initial px = 0.9, py ~ -1, px' = 0.5\n");
    run_text(&r, "simulate to 20 step 0.005 integrator dla\n");
    out = run_text(&r, "table px^2 + py^2 - l^2, px*px' + py*py'\n");
    n = rows(out, x, 2, sizeof x / sizeof *x);
    assert_int_equal(n, 4001);
    for (size_t k = 0; k < n; k++)
        if (!(fabs(x[2 * k]) <= 1e-13 * 2.25 && fabs(x[2 * k + 1]) <= 1e-13 * 3))
            fail_msg("sample %zu: residuals %g, %g", k, x[2 * k],
                     x[2 * k + 1]);
    run_close(&r);
}

/* The sleigh reaches v∞ = sqrt(v0² + (I + m a²) w0²/m) and keeps it:
 * from t = 20 on, v is constant to 1e-9 of v∞ (rounding, over 10⁶ steps) while the turning rate
 * has died out, at the speed the scheme converges to: within 2e-5 of v∞
 * at h = 0.01, the distance falling by 4 when h halves (the transient's
 * energy error, of second order, is what is left in the asymptote). */
static double sleigh_offset(double h, bool check_kept)
{
    run_t r;
    run_open(&r, "param m = 2, I = 0.3, a = 0.4\ncoord x, y, th\n"
                 "frame N\nframe S from N about z by th\n"
                 "let P = [x, y, 0]\nlet G = P + a*S.x\n"
                 "body sleigh mass m at G frame S inertia [I, I, I]\n"
                 "constraint knife: dot(velocity(P, sleigh), S.y) = 0\n"
                 "let v = dot(P', S.x)\n"
                 "param v0 = 0.5, w0 = 2, J = I + m*a^2\n"
                 "param vinf = sqrt(v0^2 + J*w0^2/m)\n"
                 "set max_steps = 1e7\n");
    run_text(&r, "initial x' = v0, th' = w0\n");
    char text[160];
    snprintf(text, sizeof text,
             "simulate to %s step 10 integrator dla h %g\n",
             check_kept ? "10000" : "100", h);
    run_text(&r, text);
    static double x[1002 * 3];
    const char *out = run_text(&r, "table t, v/vinf - 1, th'\n");
    size_t n = rows(out, x, 3, sizeof x / sizeof *x);
    assert_int_equal(n, check_kept ? 1001 : 11);
    double off = x[3 * (n - 1) + 1];
    for (size_t k = 2; k < n; k++)
        if (!(fabs(x[3 * k + 1] - off) <= 1e-9 &&
              fabs(x[3 * k + 2]) <= 1e-8))
            fail_msg("t = %g: v/vinf - 1 = %.17g (at the end %.17g), th' = "
                     "%g",
                     x[3 * k], x[3 * k + 1], off, x[3 * k + 2]);
    run_close(&r);
    return off;
}

static void test_sleigh_asymptote(void **state)
{
    (void)state;
    double a = sleigh_offset(0.01, true), b = sleigh_offset(0.005, false);
    print_message("v/vinf - 1: %.4e at h = 0.01, %.4e at h = 0.005\n", a, b);
    assert_true(fabs(a) <= 2e-5);
    assert_true(a / b > 3.6 && a / b < 4.4);
}

#else

/* The energy of a reversible system stays within a bound over 10⁵ time
 * units at a fixed step, with no drift: the error in the second half of
 * the run is no larger than in the first (a drift that grew like t would
 * double it), and the bound is the scheme's: it falls by about 4 when h
 * halves (measured to 10⁴).  The largest relative error over the first
 * and the second half of a run, from 100 samples. */
static void energy_error(const char *model, const char *state, double T,
                         double h, double *early, double *late)
{
    run_t r;
    run_open(&r, model);
    run_text(&r, state);
    char text[200];
    snprintf(text, sizeof text,
             "simulate to %g step %g integrator dla h %g\n", T, T / 100, h);
    run_text(&r, text);
    static double x[102 * 2];
    size_t n = rows(run_text(&r, "table t, T + V\n"), x, 2,
                    sizeof x / sizeof *x);
    assert_int_equal(n, 101);
    double e0 = x[1];
    *early = *late = 0;
    for (size_t k = 1; k < n; k++) {
        double e = fabs(x[2 * k + 1] - e0) / fabs(e0);
        if (k > 50)
            *late = fmax(*late, e);
        else
            *early = fmax(*early, e);
    }
    run_close(&r);
}

static const char sphere_v[] =
    "param m = 1, R = 1\n"
    "coord phi, theta, psi, x, y\n"
    "kinetic T = m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + "
    "psi'^2 + 2*phi'*psi'*cos(theta))\n"
    "let V = 0\n"
    "constraint roll_x: x' = R*theta'*sin(phi) - "
    "R*psi'*sin(theta)*cos(phi)\n"
    "constraint roll_y: y' = -R*theta'*cos(phi) - "
    "R*psi'*sin(theta)*sin(phi)\n"
    "set max_steps = 1e7\n";
/* a spin about the vertical with a small tilt of the axis: theta stays
 * near 1, away from the angles' singularity at 0 */
static const char sphere_spin[] =
    "initial theta = 1, phi' = 3, theta' = 0.2, psi' = 0\n";

static void test_energy_sphere(void **state)
{
    (void)state;
    double early, late;
    energy_error(sphere_v, sphere_spin, 1e5, 0.1, &early, &late);
    print_message("sphere to 1e5, h 0.1: relative energy error %.3e, then "
                  "%.3e\n",
                  early, late);
    assert_true(early < 1e-5 && late < 1e-5);
    assert_true(late <= 1.2 * early);
    double e1, e2, l1, l2;
    energy_error(sphere_v, sphere_spin, 1e4, 0.1, &e1, &l1);
    energy_error(sphere_v, sphere_spin, 1e4, 0.05, &e2, &l2);
    print_message("sphere to 1e4: h 0.1 %.3e, h 0.05 %.3e\n", fmax(e1, l1),
                  fmax(e2, l2));
    assert_true(fmax(e1, l1) / fmax(e2, l2) > 3.5 &&
                fmax(e1, l1) / fmax(e2, l2) < 4.5);
}

static void test_energy_disk(void **state)
{
    (void)state;
    double early, late;
    energy_error(disk, disk_state, 1e5, 0.05, &early, &late);
    print_message("disk to 1e5, h 0.05: relative energy error %.3e, then "
                  "%.3e\n",
                  early, late);
    assert_true(early < 1e-3 && late < 1e-3);
    assert_true(late <= 1.2 * early);
}

/* Modin & Verdier (2020), "What makes nonholonomic integrators work?"
 * (Numer. Math. 145): the near conservation of energy by nonholonomic
 * integrators is owed to reversibility, not to a discrete Lagrange–
 * d'Alembert principle.  The verdict reproduced: the same integrator —
 * dla, variational in both runs — on a nonholonomic particle (L = |q'|²/2
 * − V, z' = y x') keeps the energy within its bound when the problem is
 * reversible (L even in the velocities), and lets it wander far off when
 * reversibility is broken by a magnetic term b (x y' − y x')/2, odd in
 * the velocities, with a potential 0.3 x + 0.2 z that also breaks the
 * reflections which, with the velocities' flip, would make it reversible
 * again.  The energy T + V is conserved by both motions (Benenti Thm
 * 11.6: the magnetic term does no work; rk8pd keeps it to 1e-8 over
 * 5000 time units, doc/dla.md). */
static double particle_energy_error(double b)
{
    run_t r;
    char model[640];
    snprintf(model, sizeof model,
             "param b = %g\ncoord x, y, z\n"
             "lagrangian L = (x'^2 + y'^2 + z'^2)/2 + b*(x*y' - y*x')/2 - "
             "(x^2 + y^2 + z^2)/2 - 0.3*x - 0.2*z\n"
             "constraint c: z' = y*x'\n"
             "let E = (x'^2 + y'^2 + z'^2)/2 + (x^2 + y^2 + z^2)/2 + 0.3*x + "
             "0.2*z\nset max_steps = 1e8\n",
             b);
    run_open(&r, model);
    run_text(&r, "initial x = 1, y = 0.5, x' = 0.2, y' = 0.7\n");
    run_text(&r, "simulate to 50000 step 500 integrator dla h 0.1\n");
    static double x[102 * 2];
    size_t n = rows(run_text(&r, "table t, E\n"), x, 2, sizeof x / sizeof *x);
    assert_int_equal(n, 101);
    double worst = 0;
    for (size_t k = 1; k < n; k++)
        worst = fmax(worst, fabs(x[2 * k + 1] / x[1] - 1));
    run_close(&r);
    return worst;
}

static void test_reversibility_verdict(void **state)
{
    (void)state;
    double rev = particle_energy_error(0), irr = particle_energy_error(0.6);
    print_message("nonholonomic particle to 5e4, h 0.1: relative energy "
                  "error %.3e reversible, %.3e not\n",
                  rev, irr);
    assert_true(rev < 4e-3);
    assert_true(irr > 10 * rev);
}

#endif

/* Built twice (Makefile.am): the energy's long runs as a suite of their
 * own, so that make -j runs it beside the others. */
int main(void)
{
#ifdef DLA_ENERGY
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_sphere),
        cmocka_unit_test(test_energy_disk),
        cmocka_unit_test(test_reversibility_verdict),
    };
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_sphere),
        cmocka_unit_test(test_order_disk),
        cmocka_unit_test(test_constraints_every_step),
        cmocka_unit_test(test_sleigh_asymptote),
    };
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}
