/*
 * test_eom.c — the equations of motion of LANGUAGE.md §5 (interp/eom/eom.h).
 *
 * Every expected number comes from a closed form or from a computation
 * written out in this file, never from an earlier run:
 *   — the rolling sphere (Lemos, seeds/003): θ'' = −φ'ψ' sin θ (eq. 7/16);
 *     φ'' and ψ'' from the constancy of the angular velocity ω in space
 *     (Newton: m a_c = F, I ω' = −R k × F, v_c = R ω × k give
 *     (I + mR²) ω'_horizontal = 0 and I ω'_z = 0), with
 *     ω_X = θ' cos φ + ψ' sin θ sin φ, ω_Y = θ' sin φ − ψ' sin θ cos φ,
 *     ω_Z = φ' + ψ' cos θ; differentiating:
 *       θ'' = −φ'ψ' sin θ,
 *       ψ'' = (θ'φ' − ψ'θ' cos θ) / sin θ,
 *       φ'' = ψ'θ' sin θ − ψ'' cos θ,   x'' = y'' = 0,  λ = 0;
 *     the naive equation is Lemos eq. 6; a and b are eqs. 12–14;
 *   — the nonholonomic bipendulum (Benenti, seeds/001 §13): constraint
 *     (73), a multiplier solution written here for the diagonal mass
 *     matrix, and Benenti's eqs. 80–82 (checked against it first);
 *   — the linear bipendulum with a massive hidden point (end of §13);
 *   — a pendulum as a holonomic constraint, a time-dependent constraint
 *     and a Chaplygin-like system, each solved by hand below.
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
#include "interp/eom/velocity.h"
#include "interp/eom/common.h"
#include "interp/eom/linalg.h"
#include "tests/sys_builder.h"

/* ---- helpers -------------------------------------------------------------- */

static double urand(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * ((double)(*s >> 11) / 9007199254740992.0);
}

#define TOL 1e-9

static void close_to(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol * (1.0 + fabs(want))))
        fail_msg("%s: got %.17g, expected %.17g (diff %.3g)", what, got, want,
                 got - want);
}

static eom_t *prep(const nh_system_t *sys, eom_method_t m)
{
    diag_t err = {0};
    eom_t *e = eom_prepare(sys, m, SRC_SPAN_NONE, &err);
    if (!e)
        fail_msg("%s: prepare failed: %s", eom_method_name(m), err.msg);
    return e;
}

/* eom_accel on a copy of VARS (nv entries) into OUT. */
static void accel(eom_t *e, const double *vars, double *out, size_t nv)
{
    diag_t err = {0};
    memcpy(out, vars, nv * sizeof *out);
    if (eom_accel(e, out, &err) != 0)
        fail_msg("%s: accel failed: %s", eom_method_name(eom_method(e)),
                 err.msg);
}

static size_t nvars(const nh_system_t *sys)
{
    return expr_graph_nvars(sys->g);
}

/* eom_prepare must fail, with a message containing every NEEDLE
 * (NULL-terminated list) and, when SPAN is given, that span. */
static void prepare_fails(const nh_system_t *sys, eom_method_t m,
                          const src_span_t *span, ...)
{
    diag_t err = {0};
    eom_t *e = eom_prepare(sys, m, SRC_SPAN_NONE, &err);
    if (e) {
        eom_free(e);
        fail_msg("%s: prepare succeeded, expected an error",
                 eom_method_name(m));
    }
    assert_true(err.set);
    va_list ap;
    va_start(ap, span);
    const char *needle;
    while ((needle = va_arg(ap, const char *)))
        if (!strstr(err.msg, needle))
            fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
    va_end(ap);
    if (span) {
        assert_int_equal(err.span.file, span->file);
        assert_int_equal(err.span.begin, span->begin);
    }
}

/* ---- the rolling sphere ------------------------------------------------- */

#define SPHERE_M 1.3
#define SPHERE_R 0.7

static sb_t *sphere(bool speeds, bool forces)
{
    sb_t *b = sb_new();
    sb_param(b, "m", SPHERE_M);
    sb_param(b, "R", SPHERE_R);
    if (forces) {
        sb_param(b, "c", 0.4);
        sb_param(b, "k", 0.9);
        sb_param(b, "g", 2.5);
    }
    const char *q[] = {"phi", "theta", "psi", "x", "y"};
    for (size_t i = 0; i < 5; i++)
        sb_coord(b, q[i]);
    if (speeds) {
        sb_speed(b, "u1");
        sb_speed(b, "u2");
        sb_speed(b, "u3");
    }
    sb_kinetic(b, "m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + psi'^2 "
                  "+ 2*phi'*psi'*cos(theta))");
    sb_constraint(b, "roll_x",
                  "x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi))");
    sb_constraint(b, "roll_y",
                  "y' - (-R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi))");
    if (speeds) {
        sb_kinematic(b, "phi", "u1");
        sb_kinematic(b, "theta", "u2");
        sb_kinematic(b, "psi", "u3");
        sb_kinematic(b, "x", "R*u2*sin(phi) - R*u3*sin(theta)*cos(phi)");
        sb_kinematic(b, "y", "-R*u2*cos(phi) - R*u3*sin(theta)*sin(phi)");
    }
    if (forces) {
        /* a drag on the centre, a torque-like force on theta, a tilt of
         * the plane as a potential in x, and a force on psi depending on
         * the time and a dependent velocity */
        sb_force(b, "x", "-c*x'");
        sb_force(b, "theta", "-k*sin(theta)*theta'");
        sb_force(b, "psi", "0.3*cos(t)*y'");
        sb_potential(b, "m*g*0.2*x + k*y^2/2");
    }
    return b;
}

typedef struct sphere_state {
    double q[5], qd[5];
} sphere_state_t;

static void sphere_random(uint64_t *seed, sphere_state_t *s)
{
    s->q[0] = urand(seed, -3.0, 3.0);
    s->q[1] = urand(seed, 0.3, 2.8);
    s->q[2] = urand(seed, -3.0, 3.0);
    s->q[3] = urand(seed, -1.0, 1.0);
    s->q[4] = urand(seed, -1.0, 1.0);
    for (int i = 0; i < 3; i++)
        s->qd[i] = urand(seed, -2.0, 2.0);
    double ph = s->q[0], th = s->q[1], dth = s->qd[1], dps = s->qd[2];
    double R = SPHERE_R;
    /* Lemos eq. 2 */
    s->qd[3] = R * dth * sin(ph) - R * dps * sin(th) * cos(ph);
    s->qd[4] = -R * dth * cos(ph) - R * dps * sin(th) * sin(ph);
}

static void sphere_fill(const nh_system_t *sys, const sphere_state_t *s,
                        double *vars, double t)
{
    for (size_t i = 0; i < 5; i++) {
        vars[sys->q[i]] = s->q[i];
        vars[sys->qd[i]] = s->qd[i];
    }
    for (size_t a = 0; a < sys->m; a++)
        vars[sys->z[a]] = s->qd[a]; /* u = the Euler-angle rates */
    vars[sys->t] = t;
}

/* The closed form of the file comment. */
static void sphere_exact(const sphere_state_t *s, double qdd[5])
{
    double th = s->q[1], dph = s->qd[0], dth = s->qd[1], dps = s->qd[2];
    qdd[1] = -dph * dps * sin(th);
    qdd[2] = (dth * dph - dps * dth * cos(th)) / sin(th);
    qdd[0] = dps * dth * sin(th) - qdd[2] * cos(th);
    qdd[3] = 0.0;
    qdd[4] = 0.0;
}

static void test_sphere_closed_form(void **state)
{
    (void)state;
    sb_t *b = sphere(true, false);
    const nh_system_t *sys = sb_system(b);
    size_t nv = nvars(sys);
    eom_method_t ms[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND, EOM_VORONEC,
                         EOM_MAGGI, EOM_GIBBS_APPELL};
    eom_t *e[5];
    for (int k = 0; k < 5; k++)
        e[k] = prep(sys, ms[k]);
    eom_t *naive = prep(sys, EOM_NAIVE);
    double *vars = sb_vars(b), *out = sb_vars(b);
    uint64_t seed = 42;
    double worst = 0.0, naive_gap = 0.0;
    for (int trial = 0; trial < 25; trial++) {
        sphere_state_t s;
        sphere_random(&seed, &s);
        sphere_fill(sys, &s, vars, 0.0);
        double want[5];
        sphere_exact(&s, want);
        for (int k = 0; k < 5; k++) {
            accel(e[k], vars, out, nv);
            for (size_t i = 0; i < 5; i++) {
                char what[96];
                snprintf(what, sizeof what, "%s: %s''",
                         eom_method_name(ms[k]), sys->qname[i]);
                close_to(out[sys->qdd[i]], want[i], TOL, what);
                double d = fabs(out[sys->qdd[i]] - want[i]);
                if (d > worst)
                    worst = d;
                /* the derived velocities match the constraints */
                close_to(out[sys->qd[i]], s.qd[i], 1e-12, "velocity");
            }
            if (eom_has_multipliers(e[k])) {
                /* both multipliers vanish (Lemos, after eq. 6) */
                close_to(out[sys->lam[0]], 0.0, TOL, "lambda roll_x");
                close_to(out[sys->lam[1]], 0.0, TOL, "lambda roll_y");
            } else {
                assert_true(isnan(out[sys->lam[0]]));
            }
            if (ms[k] == EOM_MAGGI || ms[k] == EOM_GIBBS_APPELL)
                for (size_t a = 0; a < 3; a++)
                    close_to(out[sys->zd[a]], want[a], TOL, "u'");
        }
        /* naive: Lemos eq. 6, 7θ'' − 5ψ'² sin θ cos θ + 2φ'ψ' sin θ = 0 */
        accel(naive, vars, out, nv);
        double th = s.q[1], dph = s.qd[0], dps = s.qd[2];
        double wrong = (5 * dps * dps * sin(th) * cos(th) -
                        2 * dph * dps * sin(th)) / 7.0;
        close_to(out[sys->qdd[1]], wrong, TOL, "naive theta'' (Lemos eq. 6)");
        double gap = fabs(out[sys->qdd[1]] - want[1]);
        if (gap > naive_gap)
            naive_gap = gap;
    }
    assert_true(naive_gap > 0.1); /* the shortcut is wrong, visibly */
    printf("# sphere: max |method - closed form| = %.3g over 25 states x 5 "
           "methods; naive differs by up to %.3g\n",
           worst, naive_gap);
    for (int k = 0; k < 5; k++)
        eom_free(e[k]);
    eom_free(naive);
    sb_free(b);
}

static void test_sphere_voronec_coefficients(void **state)
{
    (void)state;
    sb_t *b = sphere(false, false);
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_VORONEC);
    const size_t *dep, *ind;
    size_t mi;
    size_t k = eom_voronec_split(e, &dep, &ind, &mi);
    assert_int_equal(k, 2);
    assert_int_equal(mi, 3);
    assert_int_equal(dep[0], 3); /* x */
    assert_int_equal(dep[1], 4); /* y */
    for (size_t j = 0; j < 3; j++)
        assert_int_equal(ind[j], j);
    assert_null(eom_voronec_a(e, 2, 0));
    assert_null(eom_voronec_b(e, 0, 3, 0));
    double *vars = sb_vars(b);
    uint64_t seed = 7;
    double R = SPHERE_R;
    for (int trial = 0; trial < 10; trial++) {
        double ph = urand(&seed, -3, 3), th = urand(&seed, 0.2, 3.0);
        vars[sys->q[0]] = ph;
        vars[sys->q[1]] = th;
        vars[sys->q[2]] = urand(&seed, -3, 3);
        /* Lemos eq. 12 */
        double a[2][3] = {{0, R * sin(ph), -R * sin(th) * cos(ph)},
                          {0, -R * cos(ph), -R * sin(th) * sin(ph)}};
        /* Lemos eqs. 13-14: b^ν_12, b^ν_13, b^ν_23 (antisymmetric) */
        double b12[2] = {-R * cos(ph), -R * sin(ph)};
        double b13[2] = {-R * sin(th) * sin(ph), R * sin(th) * cos(ph)};
        double b23[2] = {R * cos(th) * cos(ph), R * cos(th) * sin(ph)};
        for (size_t nu = 0; nu < 2; nu++) {
            for (size_t j = 0; j < 3; j++)
                close_to(expr_eval(sys->g, eom_voronec_a(e, nu, j), vars),
                         a[nu][j], 1e-14, "a (Lemos eq. 12)");
            double bw[3][3] = {{0, b12[nu], b13[nu]},
                               {-b12[nu], 0, b23[nu]},
                               {-b13[nu], -b23[nu], 0}};
            for (size_t i = 0; i < 3; i++)
                for (size_t j = 0; j < 3; j++)
                    close_to(expr_eval(sys->g, eom_voronec_b(e, nu, i, j),
                                       vars),
                             bw[i][j], 1e-14, "b (Lemos eqs. 13-14)");
        }
    }
    /* the reduced Lagrangian is Lemos eq. 5 */
    for (int trial = 0; trial < 5; trial++) {
        double th = urand(&seed, 0.2, 3.0);
        double dph = urand(&seed, -2, 2), dth = urand(&seed, -2, 2),
               dps = urand(&seed, -2, 2);
        vars[sys->q[0]] = urand(&seed, -3, 3);
        vars[sys->q[1]] = th;
        vars[sys->qd[0]] = dph;
        vars[sys->qd[1]] = dth;
        vars[sys->qd[2]] = dps;
        double m = SPHERE_M;
        double want = 7 * m * R * R / 10 *
                          (dth * dth + dps * dps * sin(th) * sin(th)) +
                      m * R * R / 5 *
                          (dph * dph + dps * dps * cos(th) * cos(th) +
                           2 * dph * dps * cos(th));
        close_to(expr_eval(sys->g, eom_reduced_lagrangian(e), vars), want,
                 1e-13, "Lbar (Lemos eq. 5)");
    }
    char *text = eom_describe_voronec(e, false);
    assert_non_null(text);
    assert_non_null(strstr(text, "a[x, theta]"));
    assert_non_null(strstr(text, "b[y; theta, psi]"));
    assert_null(strstr(text, "b[x; theta, phi]")); /* i < j only */
    free(text);
    text = eom_describe_voronec(e, true);
    assert_non_null(strstr(text, "&="));
    free(text);
    eom_free(e);
    e = prep(sys, EOM_MULTIPLIERS);
    assert_null(eom_describe_voronec(e, false));
    assert_int_equal(eom_voronec_split(e, &dep, &ind, &mi), 0);
    assert_null(eom_reduced_lagrangian(e));
    eom_free(e);
    sb_free(b);
}

/* With forces, potential and time: no closed form, but five different
 * roads (KKT, Benenti's second kind, Voronec, Maggi, Gibbs–Appell in the
 * eq. 68 form) must give one motion. */
static void test_sphere_forces_agree(void **state)
{
    (void)state;
    sb_t *b = sphere(true, true);
    const nh_system_t *sys = sb_system(b);
    size_t nv = nvars(sys);
    eom_method_t ms[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND, EOM_VORONEC,
                         EOM_MAGGI, EOM_GIBBS_APPELL};
    eom_t *e[5];
    for (int k = 0; k < 5; k++)
        e[k] = prep(sys, ms[k]);
    eom_t *naive = prep(sys, EOM_NAIVE);
    double *vars = sb_vars(b), *ref = sb_vars(b), *out = sb_vars(b);
    uint64_t seed = 99;
    double worst = 0.0, naive_gap = 0.0;
    for (int trial = 0; trial < 20; trial++) {
        sphere_state_t s;
        sphere_random(&seed, &s);
        sphere_fill(sys, &s, vars, urand(&seed, 0.0, 5.0));
        accel(e[0], vars, ref, nv);
        /* the multipliers no longer vanish: the forces load the contact */
        for (int k = 1; k < 5; k++) {
            accel(e[k], vars, out, nv);
            for (size_t i = 0; i < 5; i++) {
                double d = fabs(out[sys->qdd[i]] - ref[sys->qdd[i]]);
                if (d > worst)
                    worst = d;
                close_to(out[sys->qdd[i]], ref[sys->qdd[i]], TOL,
                         eom_method_name(ms[k]));
            }
            if (ms[k] == EOM_SECOND_KIND)
                for (size_t a = 0; a < 2; a++)
                    close_to(out[sys->lam[a]], ref[sys->lam[a]], TOL,
                             "lambda");
        }
        accel(naive, vars, out, nv);
        double gap = fabs(out[sys->qdd[1]] - ref[sys->qdd[1]]);
        if (gap > naive_gap)
            naive_gap = gap;
    }
    assert_true(naive_gap > 1e-3);
    printf("# sphere with forces: max disagreement between 5 methods %.3g\n",
           worst);
    for (int k = 0; k < 5; k++)
        eom_free(e[k]);
    eom_free(naive);
    sb_free(b);
}

/* eom_rhs on each state layout gives what eom_accel gives. */
static void test_rhs_layout(void **state)
{
    (void)state;
    sb_t *b = sphere(true, true);
    const nh_system_t *sys = sb_system(b);
    size_t nv = nvars(sys);
    double *vars = sb_vars(b), *out = sb_vars(b), *scratch = sb_vars(b);
    uint64_t seed = 5;
    sphere_state_t s;
    sphere_random(&seed, &s);
    sphere_fill(sys, &s, vars, 1.25);
    for (int m = EOM_MULTIPLIERS; m < EOM_METHOD_COUNT; m++) {
        eom_t *e = prep(sys, (eom_method_t)m);
        accel(e, vars, out, nv);
        size_t ns = eom_state_size(e);
        const uint32_t *sv = eom_state_vars(e);
        size_t want_ns = m == EOM_MULTIPLIERS || m == EOM_SECOND_KIND ? 10
                         : m == EOM_VORONEC || m == EOM_NAIVE         ? 8
                                                                      : 8;
        assert_int_equal(ns, want_ns);
        double y[16], dy[16];
        for (size_t k = 0; k < ns; k++)
            y[k] = vars[sv[k]];
        for (size_t i = 0; i < 5; i++)
            assert_int_equal(sv[i], sys->q[i]);
        memcpy(scratch, sb_vars(b), nv * sizeof *scratch); /* params only */
        diag_t err = {0};
        assert_int_equal(eom_rhs(e, 1.25, y, dy, scratch, &err), 0);
        for (size_t i = 0; i < 5; i++)
            close_to(dy[i], out[sys->qd[i]], 1e-15, "dq/dt");
        for (size_t k = 5; k < ns; k++) {
            uint32_t v = sv[k];
            double want = NAN;
            for (size_t i = 0; i < 5; i++)
                if (v == sys->qd[i])
                    want = out[sys->qdd[i]];
            for (size_t a = 0; a < sys->m; a++)
                if (v == sys->z[a])
                    want = out[sys->zd[a]];
            close_to(dy[k], want, 1e-15, "dv/dt");
        }
        eom_free(e);
    }
    sb_free(b);
}

/* ---- the nonholonomic bipendulum (Benenti §13) ------------------------- */

static sb_t *bipendulum(bool speeds)
{
    sb_t *b = sb_new();
    sb_param(b, "m1", 1.7);
    sb_param(b, "m2", 0.6);
    sb_param(b, "A1x", 0.8);
    sb_param(b, "A1y", -0.3);
    sb_param(b, "A2x", 0.45);
    sb_param(b, "A2y", 0.9);
    sb_coord(b, "x1");
    sb_coord(b, "y1");
    sb_coord(b, "x2");
    sb_coord(b, "y2");
    if (speeds) {
        sb_speed(b, "s1");
        sb_speed(b, "s2");
        sb_speed(b, "y0");
    }
    const char *p1[] = {"x1", "y1"}, *p2[] = {"x2", "y2"};
    const char *f1[] = {"A1x", "A1y"}, *f2[] = {"A2x", "A2y"};
    sb_particle(b, "P1", "m1", 2, p1, f1);
    sb_particle(b, "P2", "m2", 2, p2, f2);
    /* Benenti eq. 73 */
    sb_constraint(b, "c1", "x1*x1'*y2' - x2*x2'*y1' + (y1 - y2)*y1'*y2'");
    if (speeds) {
        /* the hidden point P0 = (0, y0) as a speed: v_ν ⟂ P_ν − P0 */
        sb_kinematic(b, "x1", "-s1*(y1 - y0)");
        sb_kinematic(b, "y1", "s1*x1");
        sb_kinematic(b, "x2", "-s2*(y2 - y0)");
        sb_kinematic(b, "y2", "s2*x2");
    }
    return b;
}

typedef struct bip {
    double m1, m2, A[4], q[4], qd[4];
} bip_t;

static void bip_random(uint64_t *seed, bip_t *s)
{
    s->m1 = 1.7;
    s->m2 = 0.6;
    s->A[0] = 0.8;
    s->A[1] = -0.3;
    s->A[2] = 0.45;
    s->A[3] = 0.9;
    for (;;) {
        for (int i = 0; i < 4; i++)
            s->q[i] = urand(seed, -1.5, 1.5);
        for (int i = 0; i < 3; i++)
            s->qd[i] = urand(seed, -1.5, 1.5);
        double x1 = s->q[0], y1 = s->q[1], x2 = s->q[2], y2 = s->q[3];
        double dx1 = s->qd[0], dy1 = s->qd[1], dx2 = s->qd[2];
        double den = x1 * dx1 + (y1 - y2) * dy1;
        if (fabs(den) < 0.2 || fabs(x1) < 0.2 || fabs(x2) < 0.2 ||
            fabs(dy1) < 0.2)
            continue; /* keep away from the singular states (72) */
        /* eq. 73 solved for y2' */
        s->qd[3] = x2 * dx2 * dy1 / den;
        if (fabs(s->qd[3]) < 0.1 || fabs(s->qd[3]) > 5.0)
            continue;
        return;
    }
}

/* Independent multiplier solution for M = diag(m1, m1, m2, m2):
 * M q'' = A + λ B, B q'' + c = 0  ⇒  λ = −(Σ B_i A_i/M_i + c)/Σ B_i²/M_i. */
static void bip_kkt(const bip_t *s, double qdd[4], double *lambda)
{
    double x1 = s->q[0], y1 = s->q[1], x2 = s->q[2], y2 = s->q[3];
    double dx1 = s->qd[0], dy1 = s->qd[1], dx2 = s->qd[2], dy2 = s->qd[3];
    double Bv[4] = {x1 * dy2, -x2 * dx2 + (y1 - y2) * dy2, -x2 * dy1,
                    x1 * dx1 + (y1 - y2) * dy1};
    /* Σ ∂C/∂q_i q_i' (Benenti's worksheet step 10) */
    double c = dx1 * dx1 * dy2 + dy1 * dy1 * dy2 - dx2 * dx2 * dy1 -
               dy1 * dy2 * dy2;
    double Mv[4] = {s->m1, s->m1, s->m2, s->m2};
    double num = c, den = 0.0;
    for (int i = 0; i < 4; i++) {
        num += Bv[i] * s->A[i] / Mv[i];
        den += Bv[i] * Bv[i] / Mv[i];
    }
    *lambda = -num / den;
    for (int i = 0; i < 4; i++)
        qdd[i] = (s->A[i] + *lambda * Bv[i]) / Mv[i];
}

/* Benenti eqs. 80–82. */
static void bip_benenti(const bip_t *s, double qdd[4])
{
    sb_bipendulum_benenti(s->m1, s->m2, s->A, s->q, s->qd, qdd);
}

static void test_bipendulum(void **state)
{
    (void)state;
    sb_t *b = bipendulum(true);
    const nh_system_t *sys = sb_system(b);
    size_t nv = nvars(sys);
    eom_t *mul = prep(sys, EOM_MULTIPLIERS), *sec = prep(sys, EOM_SECOND_KIND);
    eom_t *mag = prep(sys, EOM_MAGGI), *gib = prep(sys, EOM_GIBBS_APPELL);
    double *vars = sb_vars(b), *out = sb_vars(b), *tmp = sb_vars(b);
    uint64_t seed = 2024;
    double worst_ben = 0.0, worst = 0.0;
    for (int trial = 0; trial < 25; trial++) {
        bip_t s;
        bip_random(&seed, &s);
        double kkt[4], ben[4], lam;
        bip_kkt(&s, kkt, &lam);
        bip_benenti(&s, ben);
        for (int i = 0; i < 4; i++) {
            close_to(ben[i], kkt[i], 1e-10, "Benenti eqs. 80-82 vs KKT");
            if (fabs(ben[i] - kkt[i]) > worst_ben)
                worst_ben = fabs(ben[i] - kkt[i]);
        }
        for (size_t i = 0; i < 4; i++) {
            vars[sys->q[i]] = s.q[i];
            vars[sys->qd[i]] = s.qd[i];
        }
        /* the speeds of this state: eq. 75 and y_ν' = s_ν x_ν */
        double y0 = s.qd[0] / s.qd[1] * s.q[0] + s.q[1];
        vars[sys->z[0]] = s.qd[1] / s.q[0];
        vars[sys->z[1]] = s.qd[3] / s.q[2];
        vars[sys->z[2]] = y0;
        eom_t *es[] = {mul, sec, mag, gib};
        for (int k = 0; k < 4; k++) {
            accel(es[k], vars, out, nv);
            for (size_t i = 0; i < 4; i++) {
                close_to(out[sys->qd[i]], s.qd[i], 1e-12, "q' = psi");
                close_to(out[sys->qdd[i]], kkt[i], TOL,
                         eom_method_name(eom_method(es[k])));
                double d = fabs(out[sys->qdd[i]] - kkt[i]);
                if (d > worst)
                    worst = d;
            }
            if (eom_has_multipliers(es[k]))
                close_to(out[sys->lam[0]], lam, TOL, "lambda");
        }
        /* gibbs_appell equals maggi in z' too */
        accel(mag, vars, out, nv);
        accel(gib, vars, tmp, nv);
        for (size_t a = 0; a < 3; a++)
            close_to(tmp[sys->zd[a]], out[sys->zd[a]], TOL, "z' gibbs/maggi");
        /* the speeds are recovered from the velocities */
        memcpy(tmp, vars, nv * sizeof *tmp);
        tmp[sys->z[0]] = 0.1;
        tmp[sys->z[1]] = -0.2;
        tmp[sys->z[2]] = 0.0;
        diag_t err = {0};
        if (eom_speeds_from_velocities(sys, tmp, &err) != 0)
            fail_msg("speeds: %s", err.msg);
        for (size_t a = 0; a < 3; a++)
            close_to(tmp[sys->z[a]], vars[sys->z[a]], 1e-8, "speeds");
    }
    printf("# bipendulum: Benenti 80-82 vs KKT %.3g; methods vs KKT %.3g\n",
           worst_ben, worst);
    eom_free(mul);
    eom_free(sec);
    eom_free(mag);
    eom_free(gib);
    sb_free(b);
}

/* The linear bipendulum: P0 = (0, y0) has mass m0 (Benenti §13, last
 * part): five coordinates, the linear constraints
 * x1 x1' + (y1 − y0) y1' = 0, x2 x2' + (y2 − y0) y2' = 0. */
static void test_linear_bipendulum(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    double m[5] = {1.7, 1.7, 0.6, 0.6, 0.35}, A[5] = {0.8, -0.3, 0.45, 0.9, -0.7};
    sb_param(b, "m1", m[0]);
    sb_param(b, "m2", m[2]);
    sb_param(b, "m0", m[4]);
    const char *qn[] = {"x1", "y1", "x2", "y2", "y0"};
    for (int i = 0; i < 5; i++)
        sb_coord(b, qn[i]);
    sb_speed(b, "s1");
    sb_speed(b, "s2");
    sb_speed(b, "v0");
    const char *p1[] = {"x1", "y1"}, *p2[] = {"x2", "y2"}, *p0[] = {"0", "y0"};
    const char *f1[] = {"0.8", "-0.3"}, *f2[] = {"0.45", "0.9"},
               *f0[] = {"0", "-0.7"};
    sb_particle(b, "P1", "m1", 2, p1, f1);
    sb_particle(b, "P2", "m2", 2, p2, f2);
    sb_particle(b, "P0", "m0", 2, p0, f0);
    sb_constraint(b, "l1", "x1*x1' + (y1 - y0)*y1'");
    sb_constraint(b, "l2", "x2*x2' + (y2 - y0)*y2'");
    sb_kinematic(b, "x1", "-s1*(y1 - y0)");
    sb_kinematic(b, "y1", "s1*x1");
    sb_kinematic(b, "x2", "-s2*(y2 - y0)");
    sb_kinematic(b, "y2", "s2*x2");
    sb_kinematic(b, "y0", "v0");
    const nh_system_t *sys = sb_system(b);
    size_t nv = nvars(sys);
    eom_method_t ms[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND, EOM_MAGGI,
                         EOM_GIBBS_APPELL};
    eom_t *e[4];
    for (int k = 0; k < 4; k++)
        e[k] = prep(sys, ms[k]);
    double *vars = sb_vars(b), *out = sb_vars(b);
    uint64_t seed = 11;
    double worst = 0.0;
    for (int trial = 0; trial < 20; trial++) {
        double q[5], z[3], qd[5];
        for (int i = 0; i < 5; i++)
            q[i] = urand(&seed, -1.5, 1.5);
        for (int a = 0; a < 3; a++)
            z[a] = urand(&seed, -1.5, 1.5);
        qd[0] = -z[0] * (q[1] - q[4]);
        qd[1] = z[0] * q[0];
        qd[2] = -z[1] * (q[3] - q[4]);
        qd[3] = z[1] * q[2];
        qd[4] = z[2];
        for (size_t i = 0; i < 5; i++) {
            vars[sys->q[i]] = q[i];
            vars[sys->qd[i]] = qd[i];
        }
        for (size_t a = 0; a < 3; a++)
            vars[sys->z[a]] = z[a];
        /* Independent: M q'' = A + Bᵀλ, B q'' + c = 0 with M diagonal:
         * H λ = −(B M⁻¹ A + c), H = B M⁻¹ Bᵀ (2×2, by Cramer). */
        double B[2][5] = {{q[0], q[1] - q[4], 0, 0, 0},
                          {0, 0, q[2], q[3] - q[4], 0}};
        /* c_a = Σ ∂C^a/∂q_i q_i' */
        double c[2] = {qd[0] * qd[0] + qd[1] * qd[1] - qd[4] * qd[1],
                       qd[2] * qd[2] + qd[3] * qd[3] - qd[4] * qd[3]};
        double H[2][2], g[2];
        for (int a = 0; a < 2; a++) {
            g[a] = c[a];
            for (int i = 0; i < 5; i++)
                g[a] += B[a][i] * A[i] / m[i];
            for (int bb = 0; bb < 2; bb++) {
                H[a][bb] = 0;
                for (int i = 0; i < 5; i++)
                    H[a][bb] += B[a][i] * B[bb][i] / m[i];
            }
        }
        double det = H[0][0] * H[1][1] - H[0][1] * H[1][0];
        double lam[2] = {-(g[0] * H[1][1] - g[1] * H[0][1]) / det,
                         -(H[0][0] * g[1] - H[1][0] * g[0]) / det};
        double want[5];
        for (int i = 0; i < 5; i++)
            want[i] = (A[i] + lam[0] * B[0][i] + lam[1] * B[1][i]) / m[i];
        for (int k = 0; k < 4; k++) {
            accel(e[k], vars, out, nv);
            for (size_t i = 0; i < 5; i++) {
                close_to(out[sys->qdd[i]], want[i], TOL,
                         eom_method_name(ms[k]));
                double d = fabs(out[sys->qdd[i]] - want[i]);
                if (d > worst)
                    worst = d;
            }
            if (eom_has_multipliers(e[k]))
                for (size_t a = 0; a < 2; a++)
                    close_to(out[sys->lam[a]], lam[a], TOL, "lambda");
        }
    }
    printf("# linear bipendulum: max |method - independent| = %.3g\n", worst);
    for (int k = 0; k < 4; k++)
        eom_free(e[k]);
    sb_free(b);
}

/* ---- smaller systems with hand-made answers ------------------------------ */

/* A pendulum as x^2 + y^2 = l^2 with gravity (V = m g y): from
 * m x'' = 2λx, m y'' + m g = 2λy, x x'' + y y'' + v² = 0:
 * x'' = (g y − v²) x / l², y'' = (g y − v²) y / l² − g,
 * λ = m (g y − v²) / (2 l²).  Maggi with x' = −w y, y' = w x. */
static void test_pendulum_holonomic(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "m", 0.8);
    sb_param(b, "g", 9.81);
    sb_param(b, "l", 1.3);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "w");
    sb_kinetic(b, "m/2*(x'^2 + y'^2)");
    sb_potential(b, "m*g*y");
    sb_constraint(b, "ring", "x^2 + y^2 - l^2");
    sb_kinematic(b, "x", "-w*y");
    sb_kinematic(b, "y", "w*x");
    const nh_system_t *sys = sb_system(b);
    size_t nv = nvars(sys);
    eom_method_t ms[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND, EOM_MAGGI,
                         EOM_GIBBS_APPELL};
    double *vars = sb_vars(b), *out = sb_vars(b);
    uint64_t seed = 3;
    for (int k = 0; k < 4; k++) {
        eom_t *e = prep(sys, ms[k]);
        for (int trial = 0; trial < 10; trial++) {
            double th = urand(&seed, -3, 3), w = urand(&seed, -2, 2);
            double l = 1.3, g = 9.81, m = 0.8;
            double x = l * cos(th), y = l * sin(th);
            double dx = -w * y, dy = w * x, v2 = dx * dx + dy * dy;
            vars[sys->q[0]] = x;
            vars[sys->q[1]] = y;
            vars[sys->qd[0]] = dx;
            vars[sys->qd[1]] = dy;
            vars[sys->z[0]] = w;
            accel(e, vars, out, nv);
            close_to(out[sys->qdd[0]], (g * y - v2) * x / (l * l), TOL, "x''");
            close_to(out[sys->qdd[1]], (g * y - v2) * y / (l * l) - g, TOL,
                     "y''");
            if (eom_has_multipliers(e))
                close_to(out[sys->lam[0]], m * (g * y - v2) / (2 * l * l), TOL,
                         "lambda ring");
        }
        eom_free(e);
    }
    /* voronec refuses a holonomic constraint, naming it */
    prepare_fails(sys, EOM_VORONEC, &sys->cspan[0], "ring", "holonomic", NULL);
    sb_free(b);
}

/* Deriving builds no guards of its own (expr_graph_keep_domains, expr.h):
 * the sphere's pivots (m, and m R² sums) meet zero entries in the fast
 * path's LDLᵀ, and with guards kept there 0·(1/m) would be "0 where
 * m != 0", not the node 0 — longer tapes for nothing, the fast path
 * checking its pivots anyway (43 instructions would be 60 for voronec).
 * Every method's tapes are as long as those of the same model derived
 * with no guards anywhere, and the graph keeps domains again after. */
static void test_derivation_builds_no_guards(void **state)
{
    (void)state;
    sb_t *b = sphere(true, false), *bare = sphere(true, false);
    expr_graph_keep_domains(sb_graph(bare), false);
    const nh_system_t *sys = sb_system(b), *ref = sb_system(bare);
    for (int m = 0; m < EOM_METHOD_COUNT; m++) {
        if (m == EOM_LAGRANGE)
            continue; /* the sphere has constraints */
        eom_t *e = prep(sys, (eom_method_t)m);
        eom_t *r = prep(ref, (eom_method_t)m);
        assert_int_equal(tape_length(e->tape), tape_length(r->tape));
        assert_int_equal(e->fast != NULL, r->fast != NULL);
        if (e->fast)
            assert_int_equal(tape_length(e->fast), tape_length(r->fast));
        eom_free(e);
        eom_free(r);
    }
    assert_true(expr_graph_keep_domains(sb_graph(b), true));
    sb_free(b);
    sb_free(bare);
}

/* Ten random states of the driven pair of test_time_dependent_constraint
 * (x'' = −(k x + t x' + t cos t)/(1 + t²), y'' = t x'' + x' + cos t, with
 * k = 2.2): E's accelerations against that closed form, and λ = LAM·y''
 * when E has multipliers.  The speed, when SYS has one, is x'. */
static void drive_trials(eom_t *e, const nh_system_t *sys, sb_t *b,
                         uint64_t seed, double lam)
{
    size_t nv = nvars(sys);
    double *vars = sb_vars(b), *out = sb_vars(b);
    for (int trial = 0; trial < 10; trial++) {
        double t = urand(&seed, -2, 2), x = urand(&seed, -1, 1);
        double dx = urand(&seed, -1, 1), kk = 2.2;
        vars[sys->t] = t;
        vars[sys->q[0]] = x;
        vars[sys->q[1]] = urand(&seed, -1, 1);
        vars[sys->qd[0]] = dx;
        vars[sys->qd[1]] = t * dx + sin(t);
        if (sys->m > 0)
            vars[sys->z[0]] = dx;
        accel(e, vars, out, nv);
        double xdd = -(kk * x + t * dx + t * cos(t)) / (1 + t * t);
        double ydd = t * xdd + dx + cos(t);
        close_to(out[sys->qdd[0]], xdd, TOL, "x''");
        close_to(out[sys->qdd[1]], ydd, TOL, "y''");
        if (eom_has_multipliers(e))
            close_to(out[sys->lam[0]], lam * ydd, TOL, "lambda drive");
    }
}

/* A time-dependent affine constraint y' = t x' + sin t with V = k x²/2:
 * B = [−t, 1], c = −x' − cos t; then
 * x'' = −(k x + t x' + t cos t)/(1 + t²), y'' = λ = t x'' + x' + cos t. */
static void test_time_dependent_constraint(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "k", 2.2);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_potential(b, "k*x^2/2");
    sb_constraint(b, "drive", "y' - t*x' - sin(t)");
    sb_kinematic(b, "x", "u");
    sb_kinematic(b, "y", "t*u + sin(t)");
    const nh_system_t *sys = sb_system(b);
    eom_method_t ms[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND, EOM_MAGGI,
                         EOM_GIBBS_APPELL};
    for (int k = 0; k < 4; k++) {
        eom_t *e = prep(sys, ms[k]);
        drive_trials(e, sys, b, 17 + (uint64_t)k, 1.0);
        eom_free(e);
    }
    /* voronec: a coefficient depends on t */
    prepare_fails(sys, EOM_VORONEC, &sys->cspan[0], "drive",
                  "coefficient of x' depends on t", NULL);
    sb_free(b);
}

/* The multipliers' fast path eliminates them when every constraint has
 * a velocity alone in it (mult.c, mult_fast_reduced): one factored
 * matrix of size n − r instead of the blocks' two, and on the sphere a
 * tape no longer than voronec's (the blocks took 81 instructions, with
 * three chained divisions, against voronec's 43).  With a coefficient
 * other than 1, on a velocity that no left side names: C = 2t x' − 2y'
 * + 2 sin t is the drive of test_time_dependent_constraint times −2, so
 * q'' is the same and λ = −y''/2 (B_y λ = −2λ is the force y'' that the
 * drive's B_y = 1 gave to its λ = y''). */
static void test_multipliers_eliminated(void **state)
{
    (void)state;
    sb_t *b = sphere(true, false);
    const nh_system_t *sys = sb_system(b);
    eom_t *mu = prep(sys, EOM_MULTIPLIERS), *vo = prep(sys, EOM_VORONEC);
    assert_non_null(mu->fast);
    assert_int_equal(mu->fast_ngroup, 1);
    assert_int_equal(mu->fast_group[0], sys->n - sys->r);
    assert_true(tape_length(mu->fast) <= tape_length(vo->fast));
    eom_free(mu);
    eom_free(vo);
    sb_free(b);

    b = sb_new();
    sb_param(b, "k", 2.2);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_potential(b, "k*x^2/2");
    sb_constraint(b, "drive", "2*t*x' - 2*y' + 2*sin(t)");
    sys = sb_system(b);
    eom_t *e = prep(sys, EOM_MULTIPLIERS);
    assert_non_null(e->fast);
    assert_int_equal(e->fast_ngroup, 1);
    assert_true(eom_has_multipliers(e));
    drive_trials(e, sys, b, 23, -0.5);
    eom_free(e);
    sb_free(b);
}

/* Voronec where a_νj depends on the dependent coordinate (the μ-sum of
 * Lemos eq. 11) and L on t: coordinates u, v, w, constraint
 * w' = w u' + v', so a = (w, 1), b^w_uv = ∂a_u/∂w a_v = 1.  Checked
 * against the multipliers. */
static void test_voronec_dependent_coefficients(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "k", 0.7);
    sb_coord(b, "u");
    sb_coord(b, "v");
    sb_coord(b, "w");
    sb_kinetic(b, "(1 + 0.1*t)*u'^2/2 + v'^2/2 + (2 + cos(u))*w'^2/2");
    sb_potential(b, "k*u^2/2 + sin(v)*w");
    sb_force(b, "u", "-0.2*w'");
    sb_force(b, "w", "0.5*u' - 0.1*w");
    sb_constraint(b, "cw", "w' - w*u' - v'");
    const nh_system_t *sys = sb_system(b);
    size_t nv = nvars(sys);
    eom_t *vor = prep(sys, EOM_VORONEC), *mul = prep(sys, EOM_MULTIPLIERS);
    eom_t *nai = prep(sys, EOM_NAIVE);
    const size_t *dep, *ind;
    size_t mi;
    assert_int_equal(eom_voronec_split(vor, &dep, &ind, &mi), 1);
    assert_int_equal(dep[0], 2);
    double *vars = sb_vars(b), *o1 = sb_vars(b), *o2 = sb_vars(b);
    uint64_t seed = 23;
    double gap = 0.0;
    for (int trial = 0; trial < 15; trial++) {
        for (size_t i = 0; i < 3; i++)
            vars[sys->q[i]] = urand(&seed, -1, 1);
        vars[sys->qd[0]] = urand(&seed, -1, 1);
        vars[sys->qd[1]] = urand(&seed, -1, 1);
        vars[sys->qd[2]] =
            vars[sys->q[2]] * vars[sys->qd[0]] + vars[sys->qd[1]];
        vars[sys->t] = urand(&seed, 0, 3);
        close_to(expr_eval(sys->g, eom_voronec_b(vor, 0, 0, 1), vars), 1.0,
                 1e-15, "b^w_uv");
        accel(vor, vars, o1, nv);
        accel(mul, vars, o2, nv);
        for (size_t i = 0; i < 3; i++)
            close_to(o1[sys->qdd[i]], o2[sys->qdd[i]], TOL, "voronec");
        accel(nai, vars, o1, nv);
        double d = fabs(o1[sys->qdd[0]] - o2[sys->qdd[0]]);
        if (d > gap)
            gap = d;
    }
    assert_true(gap > 1e-3);
    eom_free(vor);
    eom_free(mul);
    eom_free(nai);
    sb_free(b);
}

/* A bead on a wire turning at rate w, with a spring, drag, and a particle
 * force: P = [r cos wt, r sin wt], T = m/2 (r'^2 + w² r²), V = k r²/2,
 * Q_r = −c r' + [0, −m g]·∂P/∂r.  Lagrange's equation gives
 * r'' = w² r − (k r + c r' + m g sin wt)/m.  Gibbs–Appell builds S from
 * the particle (its position depends on t), maggi from L. */
static void test_bead_on_rotating_wire(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    double m = 0.9, w = 1.7, k = 0.4, c = 0.3, g = 9.81;
    sb_param(b, "m", m);
    sb_param(b, "w", w);
    sb_param(b, "k", k);
    sb_param(b, "c", c);
    sb_param(b, "g", g);
    sb_coord(b, "r");
    sb_speed(b, "u");
    const char *pos[] = {"r*cos(w*t)", "r*sin(w*t)"}, *f[] = {"0", "-m*g"};
    sb_particle(b, "P", "m", 2, pos, f);
    sb_potential(b, "k*r^2/2");
    sb_force(b, "r", "-c*r'");
    sb_kinematic(b, "r", "u");
    const nh_system_t *sys = sb_system(b);
    assert_true(sys->T_only_particles);
    size_t nv = nvars(sys);
    eom_method_t ms[] = {EOM_LAGRANGE, EOM_MAGGI, EOM_GIBBS_APPELL};
    double *vars = sb_vars(b), *out = sb_vars(b);
    uint64_t seed = 51;
    for (int kk = 0; kk < 3; kk++) {
        eom_t *e = prep(sys, ms[kk]);
        for (int trial = 0; trial < 10; trial++) {
            double r = urand(&seed, -2, 2), dr = urand(&seed, -2, 2);
            double t = urand(&seed, 0, 4);
            vars[sys->q[0]] = r;
            vars[sys->qd[0]] = dr;
            vars[sys->z[0]] = dr;
            vars[sys->t] = t;
            accel(e, vars, out, nv);
            close_to(out[sys->qdd[0]],
                     w * w * r - (k * r + c * dr + m * g * sin(w * t)) / m,
                     TOL, eom_method_name(ms[kk]));
        }
        eom_free(e);
    }
    sb_free(b);
}

/* ---- M and h from the particles ------------------------------------------- */

/* eom_derive builds p, M and h from the particles (M = Σ m JᵀJ, h from
 * the accelerations) when T is their energy; here the values are held
 * to the Lagrangian derivation (∂²L/∂q'∂q' and the rest from L) at
 * random states: two independent roads to the same objects. */
static void particle_form_agrees(sb_t *b, const char *what)
{
    const nh_system_t *sys = sb_system(b);
    assert_true(sys->T_only_particles);
    assert_true(eom_particle_form(sys));
    char where[256];
    double d = sb_forms_differ(sys, sb_vars(b), 0x5eed, 20, where,
                               sizeof where);
    if (!(d <= 1e-12))
        fail_msg("%s: %s", what, where);
}

static void test_particle_form(void **state)
{
    (void)state;
    /* the bipendulum of Benenti §13: forces, two free particles */
    sb_t *b = bipendulum(true);
    particle_form_agrees(b, "bipendulum");
    sb_free(b);

    /* the 3-trailer of bench/ntrailer.sh (a chain: the particles share
     * their columns ∂P/∂th_i), with a potential, a force on a particle
     * and a mass of its own for each, and a cart that is driven along a
     * moving rail (positions read t) */
    b = sb_new();
    sb_param(b, "m0", 1.3);
    sb_param(b, "m1", 0.7);
    sb_param(b, "m2", 1.1);
    sb_param(b, "m3", 0.9);
    sb_param(b, "mc", 2.0);
    sb_param(b, "d", 1.2);
    sb_param(b, "a", 0.5);
    sb_param(b, "k", 0.8);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_coord(b, "th0");
    sb_coord(b, "th1");
    sb_coord(b, "th2");
    sb_coord(b, "th3");
    const char *pc[] = {"x + a*cos(th0) + t^2", "y + a*sin(th0)"};
    const char *p0[] = {"x", "y"};
    const char *p1[] = {"x - d*cos(th1)", "y - d*sin(th1)"};
    const char *p2[] = {"x - d*cos(th1) - d*cos(th2)",
                        "y - d*sin(th1) - d*sin(th2)"};
    const char *p3[] = {"x - d*cos(th1) - d*cos(th2) - d*cos(th3)",
                        "y - d*sin(th1) - d*sin(th2) - d*sin(th3)"};
    const char *f2[] = {"0.3*y", "-k"};
    sb_particle(b, "C", "mc", 2, pc, NULL);
    sb_particle(b, "P0", "m0", 2, p0, NULL);
    sb_particle(b, "P1", "m1", 2, p1, NULL);
    sb_particle(b, "P2", "m2", 2, p2, f2);
    sb_particle(b, "P3", "m3", 2, p3, NULL);
    sb_potential(b, "k/2*(x^2 + y^2) + k*cos(th2 - th3)");
    sb_force(b, "th1", "-0.2*th1'");
    particle_form_agrees(b, "3-trailer");
    sb_free(b);

    /* a kinetic energy of its own: the derivation from L */
    b = sb_new();
    sb_param(b, "m", 1.0);
    sb_coord(b, "x");
    const char *px[] = {"x", "0"};
    sb_particle(b, "P", "m", 2, px, NULL);
    sb_kinetic(b, "x'^2");
    assert_false(eom_particle_form(sb_system(b)));
    sb_free(b);
}

/* ---- velocities from the constraints --------------------------------------- */

static void test_solve_velocities(void **state)
{
    (void)state;
    /* the sphere: the angle rates given, x' and y' solved (linear) */
    sb_t *b = sphere(false, false);
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b);
    uint64_t seed = 31;
    sphere_state_t s;
    sphere_random(&seed, &s);
    for (size_t i = 0; i < 5; i++)
        vars[sys->q[i]] = s.q[i];
    for (size_t i = 0; i < 3; i++)
        vars[sys->qd[i]] = s.qd[i];
    bool given[5] = {true, true, true, false, false};
    diag_t err = {0};
    assert_int_equal(eom_solve_velocities(sys, vars, given, &err), 0);
    close_to(vars[sys->qd[3]], s.qd[3], 1e-14, "x'");
    close_to(vars[sys->qd[4]], s.qd[4], 1e-14, "y'");
    /* only theta' given: the last declared velocities are solved for,
     * phi' and psi' stay 0 */
    double *v2 = sb_vars(b);
    for (size_t i = 0; i < 5; i++)
        v2[sys->q[i]] = s.q[i];
    v2[sys->qd[1]] = 0.8;
    bool given2[5] = {false, true, false, false, false};
    assert_int_equal(eom_solve_velocities(sys, v2, given2, &err), 0);
    assert_true(v2[sys->qd[0]] == 0.0 && v2[sys->qd[2]] == 0.0);
    close_to(v2[sys->qd[3]], SPHERE_R * 0.8 * sin(s.q[0]), 1e-14, "x' (2)");
    close_to(v2[sys->qd[4]], -SPHERE_R * 0.8 * cos(s.q[0]), 1e-14, "y' (2)");
    /* every velocity given and consistent: nothing changes */
    double *v3 = sb_vars(b);
    for (size_t i = 0; i < 5; i++) {
        v3[sys->q[i]] = s.q[i];
        v3[sys->qd[i]] = s.qd[i];
    }
    bool all[5] = {true, true, true, true, true};
    assert_int_equal(eom_solve_velocities(sys, v3, all, &err), 0);
    for (size_t i = 0; i < 5; i++)
        assert_true(v3[sys->qd[i]] == s.qd[i]);
    /* an inconsistent given set: x' off by 0.3 */
    v3[sys->qd[3]] += 0.3;
    assert_int_equal(eom_solve_velocities(sys, v3, all, &err), -1);
    assert_non_null(strstr(err.msg, "roll_x"));
    assert_non_null(strstr(err.msg, "residual 0.3"));
    assert_int_equal(err.span.begin, sys->cspan[0].begin);
    sb_free(b);

    /* a nonlinear constraint x'^2 + y'^2 = 4 with x' = 1: y' = ±√3
     * (the Jacobian vanishes at the start y' = 0) */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "speed", "x'^2 + y'^2 - 4");
    sys = sb_system(b);
    vars = sb_vars(b);
    vars[sys->qd[0]] = 1.0;
    bool gx[2] = {true, false};
    diag_clear(&err);
    assert_int_equal(eom_solve_velocities(sys, vars, gx, &err), 0);
    close_to(fabs(vars[sys->qd[1]]), sqrt(3.0), 1e-12, "y' nonlinear");
    /* x' = 3 cannot be completed: an error with the residual */
    vars[sys->qd[0]] = 3.0;
    vars[sys->qd[1]] = 0.0;
    diag_clear(&err);
    assert_int_equal(eom_solve_velocities(sys, vars, gx, &err), -1);
    assert_non_null(strstr(err.msg, "speed"));
    assert_non_null(strstr(err.msg, "residual"));
    sb_free(b);

    /* the bipendulum: y2' from eq. 73 (nonlinear constraint, linear in
     * the unknown) */
    b = bipendulum(false);
    sys = sb_system(b);
    vars = sb_vars(b);
    bip_t bs;
    bip_random(&seed, &bs);
    for (size_t i = 0; i < 4; i++)
        vars[sys->q[i]] = bs.q[i];
    for (size_t i = 0; i < 3; i++)
        vars[sys->qd[i]] = bs.qd[i];
    bool g3[4] = {true, true, true, false};
    diag_clear(&err);
    assert_int_equal(eom_solve_velocities(sys, vars, g3, &err), 0);
    close_to(vars[sys->qd[3]], bs.qd[3], 1e-12, "y2'");
    sb_free(b);

    /* a holonomic ring: position checked, velocity from f' = 0 */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "ring", "x^2 + y^2 - 1");
    sys = sb_system(b);
    vars = sb_vars(b);
    vars[sys->q[0]] = 0.6;
    vars[sys->q[1]] = 0.8;
    vars[sys->qd[0]] = 0.8;
    diag_clear(&err);
    assert_int_equal(eom_solve_velocities(sys, vars, gx, &err), 0);
    close_to(vars[sys->qd[1]], -0.6, 1e-14, "ring y'");
    vars[sys->q[1]] = 0.9;
    diag_clear(&err);
    assert_int_equal(eom_solve_velocities(sys, vars, gx, &err), -1);
    assert_non_null(strstr(err.msg, "ring"));
    assert_non_null(strstr(err.msg, "coordinates"));
    sb_free(b);
}

static void test_speeds_from_velocities(void **state)
{
    (void)state;
    sb_t *b = sphere(true, false);
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b);
    uint64_t seed = 77;
    sphere_state_t s;
    sphere_random(&seed, &s);
    sphere_fill(sys, &s, vars, 0.0);
    for (size_t a = 0; a < 3; a++)
        vars[sys->z[a]] = 0.0;
    diag_t err = {0};
    assert_int_equal(eom_speeds_from_velocities(sys, vars, &err), 0);
    for (size_t a = 0; a < 3; a++)
        close_to(vars[sys->z[a]], s.qd[a], 1e-10, "u");
    /* velocities off the constraints: no speeds reproduce them */
    vars[sys->qd[3]] += 0.5;
    assert_int_equal(eom_speeds_from_velocities(sys, vars, &err), -1);
    assert_non_null(strstr(err.msg, "speeds"));
    sb_free(b);
    /* no speeds at all */
    b = sphere(false, false);
    sys = sb_system(b);
    vars = sb_vars(b);
    diag_clear(&err);
    assert_int_equal(eom_speeds_from_velocities(sys, vars, &err), -1);
    assert_non_null(strstr(err.msg, "no speeds"));
    sb_free(b);
}

/* ---- errors and singular states ------------------------------------------- */

static void test_prepare_errors(void **state)
{
    (void)state;
    sb_t *b = sphere(false, false);
    const nh_system_t *sys = sb_system(b);
    prepare_fails(sys, EOM_LAGRANGE, NULL, "roll_x", "multipliers", NULL);
    prepare_fails(sys, EOM_MAGGI, NULL, "no speeds", NULL);
    prepare_fails(sys, EOM_GIBBS_APPELL, NULL, "no speeds", NULL);
    sb_free(b);

    /* speeds, but no kinematic equations / one missing */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sys = sb_system(b);
    prepare_fails(sys, EOM_MAGGI, NULL, "no kinematic equations", NULL);
    sb_free(b);
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_kinematic(b, "x", "u");
    sys = sb_system(b);
    prepare_fails(sys, EOM_MAGGI, NULL,
                  "the constraints do not determine y', which has no "
                  "kinematic equation",
                  "`kinematic y' = ...`", NULL);
    sb_free(b);

    /* velocities without a kinematic equation (y', z'): a constraint
     * determines y' but none z' */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_coord(b, "z");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2 + z'^2)/2");
    sb_constraint(b, "tie", "y' - 2*x'");
    sb_kinematic(b, "x", "u");
    sys = sb_system(b);
    prepare_fails(sys, EOM_MAGGI, NULL, "do not determine z'",
                  "(they determine y')", NULL);
    sb_free(b);

    /* y' only in a constraint not linear in it */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "speed", "y'^2 + x'^2 - 1");
    sb_kinematic(b, "x", "u");
    sys = sb_system(b);
    prepare_fails(sys, EOM_GIBBS_APPELL, &sys->cspan[0],
                  "constraint speed is not linear in y', which has no "
                  "kinematic equation",
                  NULL);
    sb_free(b);

    /* y', z' from two constraints, and a third that contradicts them */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_coord(b, "z");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2 + z'^2)/2");
    sb_constraint(b, "c1", "y' - x'");
    sb_constraint(b, "c2", "z' - y'");
    sb_constraint(b, "c3", "z' - 2*x'");
    sb_kinematic(b, "x", "u");
    sys = sb_system(b);
    prepare_fails(sys, EOM_MAGGI, &sys->cspan[2], "constraint c3",
                  "over-determine the velocities", NULL);
    sb_free(b);

    /* kinematic equations that break a declared constraint */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "tie", "y' - 2*x'");
    sb_kinematic(b, "x", "u");
    sb_kinematic(b, "y", "3*u");
    sys = sb_system(b);
    prepare_fails(sys, EOM_MAGGI, &sys->cspan[0], "tie", NULL);
    prepare_fails(sys, EOM_GIBBS_APPELL, &sys->cspan[0], "tie", NULL);
    sb_free(b);

    /* voronec on the nonlinear bipendulum constraint */
    b = bipendulum(false);
    sys = sb_system(b);
    prepare_fails(sys, EOM_VORONEC, &sys->cspan[0], "constraint c1",
                  "the coefficient of x1' depends on y2'",
                  "Voronec's equations need", NULL);
    prepare_fails(sys, EOM_NAIVE, &sys->cspan[0], "constraint c1", NULL);
    sb_free(b);

    /* voronec: no velocity alone on the left (x' has the coefficient x) */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "lin", "x*x' + y*y'");
    sys = sb_system(b);
    prepare_fails(sys, EOM_VORONEC, &sys->cspan[0], "lin",
                  "not one velocity alone", NULL);
    sb_free(b);

    /* voronec: a coefficient depending on t */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "moving", "y' - t*x'");
    sys = sb_system(b);
    prepare_fails(sys, EOM_VORONEC, &sys->cspan[0], "moving",
                  "coefficient of x' depends on t", NULL);
    sb_free(b);

    /* voronec: an inhomogeneous constraint */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "pushed", "y' - x' - sin(t)");
    sys = sb_system(b);
    prepare_fails(sys, EOM_VORONEC, &sys->cspan[0], "pushed",
                  "without velocities", "sin(t)", NULL);
    sb_free(b);
}

static void test_singular_states(void **state)
{
    (void)state;
    diag_t err = {0};
    /* L without y': M = diag(1, 0) */
    sb_t *b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_lagrangian(b, "x'^2/2 - y^2");
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b);
    vars[sys->q[1]] = 0.3;
    eom_t *e = prep(sys, EOM_LAGRANGE);
    assert_int_equal(eom_accel(e, vars, &err), -1);
    assert_non_null(strstr(err.msg, "mass matrix M is singular (rank 1 of 2)"));
    assert_false(isnan(vars[sys->qdd[0]]) || isnan(vars[sys->qdd[1]]));
    double y[4] = {0, 0.3, 0, 0}, dy[4] = {0};
    diag_clear(&err);
    assert_int_equal(eom_rhs(e, 0.0, y, dy, vars, &err), -1);
    assert_true(err.set);
    eom_free(e);
    sb_free(b);

    /* a non-finite value: sqrt of a negative coordinate */
    b = sb_new();
    sb_coord(b, "x");
    sb_lagrangian(b, "x'^2/2 - sqrt(x)");
    sys = sb_system(b);
    vars = sb_vars(b);
    vars[sys->q[0]] = -1.0;
    e = prep(sys, EOM_LAGRANGE);
    diag_clear(&err);
    assert_int_equal(eom_accel(e, vars, &err), -1);
    assert_non_null(strstr(err.msg, "non-finite"));
    assert_false(isnan(vars[sys->qdd[0]]));
    eom_free(e);
    sb_free(b);

    /* the sphere at theta = 0: phi and psi turn about one axis */
    b = sphere(true, false);
    sys = sb_system(b);
    vars = sb_vars(b);
    sphere_state_t s = {{0.3, 0.0, 0.2, 0, 0}, {0.5, 0.1, 0.4, 0, 0}};
    s.qd[3] = SPHERE_R * 0.1 * sin(0.3);
    s.qd[4] = -SPHERE_R * 0.1 * cos(0.3);
    sphere_fill(sys, &s, vars, 0.0);
    e = prep(sys, EOM_MULTIPLIERS);
    diag_clear(&err);
    assert_int_equal(eom_accel(e, vars, &err), -1);
    assert_non_null(strstr(err.msg, "mass matrix M is singular (rank 4 of 5)"));
    eom_free(e);
    e = prep(sys, EOM_SECOND_KIND);
    diag_clear(&err);
    assert_int_equal(eom_accel(e, vars, &err), -1);
    assert_non_null(strstr(err.msg, "mass matrix M is singular (rank 4 of 5)"));
    eom_free(e);
    eom_method_t rest[] = {EOM_VORONEC, EOM_MAGGI, EOM_GIBBS_APPELL};
    for (int k = 0; k < 3; k++) {
        e = prep(sys, rest[k]);
        diag_clear(&err);
        assert_int_equal(eom_accel(e, vars, &err), -1);
        assert_non_null(strstr(err.msg, "singular (rank 2 of 3)"));
        eom_free(e);
    }
    sb_free(b);

    /* the same constraint twice: B has rank 1 of 2 */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_coord(b, "z");
    sb_kinetic(b, "(x'^2 + y'^2 + z'^2)/2");
    sb_constraint(b, "c1", "x' - y'");
    sb_constraint(b, "c2", "2*x' - 2*y'");
    sys = sb_system(b);
    vars = sb_vars(b);
    eom_method_t two[] = {EOM_MULTIPLIERS, EOM_SECOND_KIND};
    for (int k = 0; k < 2; k++) {
        e = prep(sys, two[k]);
        diag_clear(&err);
        assert_int_equal(eom_accel(e, vars, &err), -1);
        /* named, not a bare singular matrix (LANGUAGE.md §4) */
        assert_non_null(strstr(err.msg, "the constraints c1, c2 are not "
                                        "independent"));
        assert_non_null(strstr(err.msg, "rank 1 of 2"));
        eom_free(e);
    }
    sb_free(b);
}

/* ---- describe and the method table -------------------------------------- */

static void test_describe(void **state)
{
    (void)state;
    sb_t *b = sphere(true, false);
    const nh_system_t *sys = sb_system(b);
    for (int m = EOM_MULTIPLIERS; m < EOM_METHOD_COUNT; m++) {
        eom_t *e = prep(sys, (eom_method_t)m);
        char *t = eom_describe(e, false), *l = eom_describe(e, true);
        assert_non_null(t);
        assert_non_null(l);
        assert_non_null(strstr(t, eom_method_name((eom_method_t)m)));
        /* rows of an align* (aligned at "&=", or each on the whole line,
         * "&L = R", when they do not fit aligned) */
        assert_non_null(strstr(l, "\\begin{align*}"));
        assert_true(strstr(l, "&=") || strstr(l, "\n&"));
        if (m == EOM_NAIVE)
            assert_non_null(strstr(t, "NOT valid in general"));
        if (m == EOM_MULTIPLIERS) {
            assert_non_null(strstr(t, "lambda(roll_x)"));
            assert_non_null(strstr(t, "theta''"));
        }
        if (m == EOM_VORONEC)
            assert_non_null(strstr(t, "x' = "));
        if (m == EOM_MAGGI || m == EOM_GIBBS_APPELL)
            assert_non_null(strstr(t, "u1'"));
        free(t);
        free(l);
        eom_free(e);
    }
    sb_free(b);
    b = sb_new();
    sb_coord(b, "x");
    sb_kinetic(b, "x'^2/2");
    sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    char *t = eom_describe(e, false);
    assert_non_null(strstr(t, "x'' = 0"));
    free(t);
    eom_free(e);
    sb_free(b);
}

static void test_method_table(void **state)
{
    (void)state;
    assert_int_equal(eom_method_lookup("lagrange"), EOM_LAGRANGE);
    assert_int_equal(eom_method_lookup("multipliers"), EOM_MULTIPLIERS);
    assert_int_equal(eom_method_lookup("second_kind"), EOM_SECOND_KIND);
    assert_int_equal(eom_method_lookup("voronec"), EOM_VORONEC);
    assert_int_equal(eom_method_lookup("naive"), EOM_NAIVE);
    assert_int_equal(eom_method_lookup("maggi"), EOM_MAGGI);
    assert_int_equal(eom_method_lookup("first_kind"), EOM_MAGGI);
    assert_int_equal(eom_method_lookup("kane"), EOM_MAGGI);
    assert_int_equal(eom_method_lookup("gibbs_appell"), EOM_GIBBS_APPELL);
    assert_int_equal(eom_method_lookup("Lagrange"), -1);
    assert_int_equal(eom_method_lookup(""), -1);
    size_t k = 0;
    while (eom_method_names[k]) {
        assert_true(eom_method_lookup(eom_method_names[k]) >= 0);
        k++;
    }
    assert_int_equal(k, 9);
    for (int m = 0; m < EOM_METHOD_COUNT; m++)
        assert_int_equal(eom_method_lookup(eom_method_name((eom_method_t)m)),
                         m);
    sb_t *b = sphere(false, false);
    assert_int_equal(eom_default_method(sb_system(b)), EOM_MULTIPLIERS);
    sb_free(b);
    b = sb_new();
    sb_coord(b, "x");
    sb_kinetic(b, "x'^2/2");
    assert_int_equal(eom_default_method(sb_system(b)), EOM_LAGRANGE);
    sb_free(b);
}

/* ---- the dense solver ------------------------------------------------------- */

/* LDLᵀ on definite matrices, against a product computed here; an
 * indefinite or singular matrix is refused (the callers then use LU). */
static void test_ldlt(void **state)
{
    (void)state;
    uint64_t seed = 21;
    for (size_t n = 1; n <= 10; n++) {
        double b0[100], a[100], x[10], rhs[10];
        for (size_t i = 0; i < n * n; i++)
            b0[i] = urand(&seed, -1, 1);
        for (int sign = 1; sign >= -1; sign -= 2) {
            /* A = ±(B0ᵀB0 + I/2): definite of either sign */
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                    double t = i == j ? 0.5 : 0.0;
                    for (size_t k = 0; k < n; k++)
                        t += b0[k * n + i] * b0[k * n + j];
                    a[i * n + j] = sign * t;
                }
            for (size_t i = 0; i < n; i++)
                x[i] = urand(&seed, -1, 1);
            for (size_t i = 0; i < n; i++) {
                rhs[i] = 0;
                for (size_t j = 0; j < n; j++)
                    rhs[i] += a[i * n + j] * x[j];
            }
            assert_int_equal(linalg_ldlt(a, n, LINALG_RTOL), 0);
            linalg_ldlt_solve(a, n, rhs);
            for (size_t i = 0; i < n; i++)
                close_to(rhs[i], x[i], 1e-9, "ldlt solve");
        }
    }
    double ind[4] = {1, 0, 0, -1}, sing[4] = {1, 2, 2, 4}, z[4] = {0};
    assert_int_equal(linalg_ldlt(ind, 2, LINALG_RTOL), -1);
    assert_int_equal(linalg_ldlt(sing, 2, LINALG_RTOL), -1);
    assert_int_equal(linalg_ldlt(z, 2, LINALG_RTOL), -1);
}

/* An indefinite mass matrix: the fast path's LDLᵀ refuses it and the
 * numeric path (LU with pivoting) gives the motion.  L = x'²/2 − y'²/2
 * − (x² + y²)/2 + x'y'/4: M = [1 1/4; 1/4 −1] and M q'' = ∂L/∂q =
 * [−x; −y]. */
static void test_indefinite_mass(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_lagrangian(b, "x'^2/2 - y'^2/2 - (x^2 + y^2)/2 + x'*y'/4");
    const nh_system_t *sys = sb_system(b);
    eom_t *e = prep(sys, EOM_LAGRANGE);
    double *vars = sb_vars(b), *out = malloc(nvars(sys) * sizeof *out);
    vars[sb_var(b, "x")] = 0.3;
    vars[sb_var(b, "y")] = -1.1;
    vars[sb_var(b, "x'")] = 0.5;
    accel(e, vars, out, nvars(sys));
    /* [1 1/4; 1/4 -1] [x''; y''] = [-0.3; 1.1], by Cramer's rule */
    double det = -1.0 - 1.0 / 16.0;
    double xdd = (-0.3 * -1.0 - 0.25 * 1.1) / det;
    double ydd = (1.0 * 1.1 - 0.25 * -0.3) / det;
    close_to(out[sb_var(b, "x''")], xdd, 1e-14, "x''");
    close_to(out[sb_var(b, "y''")], ydd, 1e-14, "y''");
    free(out);
    eom_free(e);
    sb_free(b);
}

static void test_linalg(void **state)
{
    (void)state;
    uint64_t seed = 8;
    for (size_t n = 1; n <= 10; n++) {
        double a[100], lu[100], x[10], bvec[10], w[10];
        size_t perm[10];
        for (size_t i = 0; i < n * n; i++)
            a[i] = urand(&seed, -1, 1);
        for (size_t i = 0; i < n; i++)
            x[i] = urand(&seed, -1, 1);
        for (size_t i = 0; i < n; i++) {
            bvec[i] = 0;
            for (size_t j = 0; j < n; j++)
                bvec[i] += a[i * n + j] * x[j];
        }
        memcpy(lu, a, sizeof lu);
        assert_int_equal(linalg_lu(lu, n, perm, LINALG_RTOL), 0);
        linalg_lu_solve(lu, n, perm, bvec, w);
        for (size_t i = 0; i < n; i++)
            close_to(bvec[i], x[i], 1e-9, "lu solve");
        memcpy(lu, a, sizeof lu);
        assert_int_equal(linalg_rank(lu, n, n, LINALG_RTOL), n);
    }
    /* a rank-2 3×3 matrix */
    double s[9] = {1, 2, 3, 2, 4, 6.5, 3, 7, 9.5}, c[9];
    size_t perm[3];
    memcpy(c, s, sizeof c);
    assert_int_equal(linalg_rank(c, 3, 3, LINALG_RTOL), 3);
    double t[9] = {1, 2, 3, 2, 4, 6, 0, 1, 1};
    memcpy(c, t, sizeof c);
    assert_int_equal(linalg_rank(c, 3, 3, LINALG_RTOL), 2);
    memcpy(c, t, sizeof c);
    assert_int_equal(linalg_lu(c, 3, perm, LINALG_RTOL), -1);
    double z[4] = {0, 0, 0, 0};
    assert_int_equal(linalg_lu(z, 2, perm, LINALG_RTOL), -1);
}

/* The forward time derivative and the expansion of a graph 400 000 nodes
 * deep (e = x*sin(e), 200 000 times: a chain of frames makes such depths,
 * issue 31) visit it by explicit stacks; by recursion they overflowed an
 * 8 MiB stack.  The values are the recurrences' in C. */
static void test_deep_graph(void **state)
{
    (void)state;
    expr_graph_t *g = expr_graph_new();
    uint32_t x = expr_var_declare(g, "x"), xd = expr_var_declare(g, "x'");
    enum { LEVELS = 200000 };
    const expr_t *vx = expr_var(g, x), *e = vx;
    for (int i = 0; i < LEVELS; i++)
        e = expr_mul(g, vx, expr_call(g, EXPR_SIN, e, NULL));
    const expr_t *dv[2] = {expr_var(g, xd), NULL};
    const expr_t *dt;
    eom_dt_forward(g, &e, 1, dv, &dt);
    const expr_t *ex = e;
    eom_expand(g, &ex, 1);
    double vars[2] = {0.9, -1.5};
    double v = 0.9, dvx = 1.0;
    for (int i = 0; i < LEVELS; i++) {
        dvx = sin(v) + 0.9 * cos(v) * dvx;
        v = 0.9 * sin(v);
    }
    assert_true(fabs(expr_eval(g, dt, vars) - -1.5 * dvx) <=
                1e-9 * fabs(dvx));
    assert_true(fabs(expr_eval(g, ex, vars) - v) <= 1e-12 * fabs(v));
    expr_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_method_table),
        cmocka_unit_test(test_deep_graph),
        cmocka_unit_test(test_linalg),
        cmocka_unit_test(test_ldlt),
        cmocka_unit_test(test_indefinite_mass),
        cmocka_unit_test(test_sphere_closed_form),
        cmocka_unit_test(test_sphere_voronec_coefficients),
        cmocka_unit_test(test_sphere_forces_agree),
        cmocka_unit_test(test_rhs_layout),
        cmocka_unit_test(test_bipendulum),
        cmocka_unit_test(test_linear_bipendulum),
        cmocka_unit_test(test_pendulum_holonomic),
        cmocka_unit_test(test_derivation_builds_no_guards),
        cmocka_unit_test(test_time_dependent_constraint),
        cmocka_unit_test(test_multipliers_eliminated),
        cmocka_unit_test(test_voronec_dependent_coefficients),
        cmocka_unit_test(test_bead_on_rotating_wire),
        cmocka_unit_test(test_particle_form),
        cmocka_unit_test(test_solve_velocities),
        cmocka_unit_test(test_speeds_from_velocities),
        cmocka_unit_test(test_prepare_errors),
        cmocka_unit_test(test_singular_states),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
