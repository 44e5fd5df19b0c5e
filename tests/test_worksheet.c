/*
 * test_worksheet.c — S. Benenti's worksheets (interp/analysis/worksheet.h;
 * seeds/001_1980ef68f09313b8.txt §12–13).
 *
 * What a wrong sheet would get wrong, and what catches it:
 *   — the last numbers of a sheet: against eom_accel of the matching
 *     method (first ↔ maggi, second and second_reduced ↔ second_kind and
 *     multipliers), and against closed forms written out here: the
 *     rolling sphere of Lemos (seeds/003, eq. 7/16 and the constancy of
 *     the angular velocity, as in test_eom.c), the nonholonomic
 *     bipendulum of Benenti eqs. 80–82, a pendulum written as a holonomic
 *     constraint, and a time-dependent affine constraint solved by hand;
 *   — intermediate objects against Benenti's own hand results for the
 *     bipendulum: g = diag(m1, m1, m2, m2) (preliminary step 4),
 *     H = Δ/(m1 m2 ẏ1² ẏ2²) with Δ of eq. 77 (reduced step 4), step 10
 *     = ẏ2 v1² − ẏ1 v2², X^i = C^i/H; and for the sphere the binomials P_i
 *     and the Christoffel symbols computed by hand;
 *   — every symbolic object against its own numbers (the formula printed
 *     is the one the numbers come from);
 *   — the errors: first without speeds, second_reduced with two
 *     constraints or none, an unknown sheet name; a singular state.
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
#include "interp/analysis/worksheet.h"
#include "tests/sys_builder.h"

/* ---- helpers ------------------------------------------------------------ */

static double urand(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * ((double)(*s >> 11) / 9007199254740992.0);
}

/* |got − want| ≤ tol · max(1, SCALE): relative to the size of the
 * vector the entry belongs to. */
static void close_to(double got, double want, double scale, double tol,
                     const char *what)
{
    double s = fabs(scale) > 1.0 ? fabs(scale) : 1.0;
    if (!(fabs(got - want) <= tol * s))
        fail_msg("%s: got %.17g, expected %.17g (diff %.3g)", what, got, want,
                 got - want);
}

static double max_abs(const double *v, size_t n)
{
    double m = 0.0;
    for (size_t k = 0; k < n; k++)
        if (fabs(v[k]) > m)
            m = fabs(v[k]);
    return m;
}

static worksheet_t *build(const nh_system_t *sys, const double *vars,
                          const char *which)
{
    diag_t err = {0};
    worksheet_t *ws = worksheet_build(sys, vars, which, SRC_SPAN_NONE, &err);
    if (!ws)
        fail_msg("worksheet %s: %s", which, err.msg);
    assert_false(worksheet_stopped(ws, NULL));
    return ws;
}

static const worksheet_step_t *step(const worksheet_t *ws, const char *key)
{
    const worksheet_step_t *st = worksheet_find(ws, key);
    if (!st)
        fail_msg("no step %s", key);
    return st;
}

/* eom_accel of METHOD on a copy of VARS into OUT. */
static void accel(const nh_system_t *sys, eom_method_t m, const double *vars,
                  double *out)
{
    diag_t err = {0};
    eom_t *e = eom_prepare(sys, m, SRC_SPAN_NONE, &err);
    if (!e)
        fail_msg("%s: %s", eom_method_name(m), err.msg);
    memcpy(out, vars, expr_graph_nvars(sys->g) * sizeof *out);
    if (eom_accel(e, out, &err) != 0)
        fail_msg("%s: accel: %s", eom_method_name(m), err.msg);
    eom_free(e);
}

/* The sheet's last numbers (step "qdd", n entries) against eom's q''. */
static void qdd_matches(const worksheet_t *ws, const nh_system_t *sys,
                        const double *ref, double tol, const char *what)
{
    const worksheet_step_t *st = step(ws, "qdd");
    assert_int_equal(st->rows, sys->n);
    double *want = malloc(sys->n * sizeof *want);
    for (size_t i = 0; i < sys->n; i++)
        want[i] = ref[sys->qdd[i]];
    double scale = max_abs(want, sys->n);
    for (size_t i = 0; i < sys->n; i++) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s: %s''", what, sys->qname[i]);
        close_to(st->val[i], want[i], scale, tol, msg);
    }
    free(want);
}

/* Every symbolic object of WS evaluated at VARS equals its numbers. */
static void symbols_match_numbers(const worksheet_t *ws,
                                  const nh_system_t *sys, const double *vars)
{
    for (size_t k = 0; k < worksheet_count(ws); k++) {
        const worksheet_step_t *st = worksheet_step(ws, k);
        if (!st->sym)
            continue;
        size_t count = st->rows * st->cols;
        double scale = max_abs(st->val, count);
        for (size_t e = 0; e < count; e++) {
            char msg[128];
            snprintf(msg, sizeof msg, "step %s (%s) entry %zu: symbol vs value",
                     st->number, st->key, e);
            close_to(expr_eval(sys->g, st->sym[e], vars), st->val[e], scale,
                     1e-11, msg);
        }
    }
}

/* The objects of the first kind live on C with coordinates (q, z)
 * (Benenti eq. 21): no symbol of that sheet may hold a velocity q'. */
static void no_velocities(const worksheet_t *ws, const nh_system_t *sys)
{
    bool *mask = calloc(expr_graph_nvars(sys->g), sizeof *mask);
    for (size_t i = 0; i < sys->n; i++)
        mask[sys->qd[i]] = true;
    for (size_t k = 0; k < worksheet_count(ws); k++) {
        const worksheet_step_t *st = worksheet_step(ws, k);
        for (size_t e = 0; st->sym && e < st->rows * st->cols; e++)
            if (expr_depends_any(sys->g, st->sym[e], mask))
                fail_msg("step %s (%s) of the first kind holds a velocity",
                         st->number, st->key);
    }
    free(mask);
}

/* The printed sheet, as a malloc'ed string. */
static char *print_sheet(const worksheet_t *ws, bool latex, int *rc)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    diag_t err = {0};
    *rc = worksheet_print(ws, latex, f, &err);
    fclose(f);
    return text;
}

/* ---- the rolling sphere (Lemos, seeds/003) ------------------------------- */

#define SPHERE_M 1.3
#define SPHERE_R 0.7

static sb_t *sphere(bool forces)
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
    sb_speed(b, "u1");
    sb_speed(b, "u2");
    sb_speed(b, "u3");
    sb_kinetic(b, "m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + psi'^2 "
                  "+ 2*phi'*psi'*cos(theta))");
    /* Lemos eq. 2 */
    sb_constraint(b, "roll_x",
                  "x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi))");
    sb_constraint(b, "roll_y",
                  "y' - (-R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi))");
    /* speeds = the Euler-angle rates */
    sb_kinematic(b, "phi", "u1");
    sb_kinematic(b, "theta", "u2");
    sb_kinematic(b, "psi", "u3");
    sb_kinematic(b, "x", "R*u2*sin(phi) - R*u3*sin(theta)*cos(phi)");
    sb_kinematic(b, "y", "-R*u2*cos(phi) - R*u3*sin(theta)*sin(phi)");
    if (forces) {
        sb_force(b, "x", "-c*x'");
        sb_force(b, "theta", "-k*sin(theta)*theta'");
        sb_force(b, "psi", "0.3*cos(t)*y'");
        sb_potential(b, "m*g*0.2*x + k*y^2/2");
    }
    return b;
}

/* A random state on the constraints; q''s closed form when FORCELESS. */
static void sphere_state(const nh_system_t *sys, uint64_t *seed, double *vars,
                         double qdd[5])
{
    double ph = urand(seed, -3.0, 3.0), th = urand(seed, 0.3, 2.8);
    double dph = urand(seed, -2.0, 2.0), dth = urand(seed, -2.0, 2.0);
    double dps = urand(seed, -2.0, 2.0), R = SPHERE_R;
    double q[5] = {ph, th, urand(seed, -3.0, 3.0), urand(seed, -1.0, 1.0),
                   urand(seed, -1.0, 1.0)};
    double qd[5] = {dph, dth, dps,
                    R * dth * sin(ph) - R * dps * sin(th) * cos(ph),
                    -R * dth * cos(ph) - R * dps * sin(th) * sin(ph)};
    for (size_t i = 0; i < 5; i++) {
        vars[sys->q[i]] = q[i];
        vars[sys->qd[i]] = qd[i];
    }
    for (size_t a = 0; a < 3; a++)
        vars[sys->z[a]] = qd[a];
    vars[sys->t] = urand(seed, 0.0, 3.0);
    /* the closed form without forces: θ'' = −φ'ψ' sin θ (Lemos eq. 7),
     * ψ'' = (θ'φ' − ψ'θ' cos θ)/sin θ, φ'' = ψ'θ' sin θ − ψ'' cos θ,
     * x'' = y'' = 0 (ω constant in space; see test_eom.c) */
    qdd[1] = -dph * dps * sin(th);
    qdd[2] = (dth * dph - dps * dth * cos(th)) / sin(th);
    qdd[0] = dps * dth * sin(th) - qdd[2] * cos(th);
    qdd[3] = 0.0;
    qdd[4] = 0.0;
}

static void test_sphere_second_and_first(void **state)
{
    (void)state;
    sb_t *b = sphere(false);
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b), *ref = sb_vars(b);
    uint64_t seed = 11;
    for (int trial = 0; trial < 12; trial++) {
        double exact[5];
        sphere_state(sys, &seed, vars, exact);

        worksheet_t *ws = build(sys, vars, "second");
        accel(sys, EOM_SECOND_KIND, vars, ref);
        qdd_matches(ws, sys, ref, 1e-12, "second vs second_kind");
        accel(sys, EOM_MULTIPLIERS, vars, ref);
        qdd_matches(ws, sys, ref, 1e-12, "second vs multipliers");
        const worksheet_step_t *st = step(ws, "qdd");
        for (size_t i = 0; i < 5; i++)
            close_to(st->val[i], exact[i], max_abs(exact, 5), 1e-12,
                     "second vs the closed form");
        /* no forces: both multipliers vanish (Lemos, after eq. 6) */
        st = step(ws, "lambda");
        close_to(st->val[0], 0.0, 1.0, 1e-12, "lambda roll_x");
        close_to(st->val[1], 0.0, 1.0, 1e-12, "lambda roll_y");
        /* D of step 12 is what step 13 lists */
        const worksheet_step_t *D = step(ws, "D");
        assert_string_equal(D->number, "12");
        for (size_t i = 0; i < 5; i++)
            assert_true(D->val[i] == step(ws, "qdd")->val[i]);
        worksheet_free(ws);

        ws = build(sys, vars, "first");
        accel(sys, EOM_MAGGI, vars, ref);
        st = step(ws, "dz"); /* q' = ψ (n rows), then z' (m rows) */
        assert_int_equal(st->rows, 5 + 3);
        double zs[3] = {ref[sys->zd[0]], ref[sys->zd[1]], ref[sys->zd[2]]};
        for (size_t a = 0; a < 3; a++) {
            close_to(st->val[5 + a], zs[a], max_abs(zs, 3), 1e-12,
                     "first: z' vs maggi");
            /* the speeds are the Euler rates: z' = the angles' q'' */
            close_to(st->val[5 + a], exact[a], max_abs(exact, 5), 1e-12,
                     "first: z' vs the closed form");
        }
        for (size_t i = 0; i < 5; i++)
            close_to(st->val[i], vars[sys->qd[i]], 1.0, 1e-14, "q' = psi");
        qdd_matches(ws, sys, ref, 1e-12, "first vs maggi");
        no_velocities(ws, sys);
        worksheet_free(ws);
    }
    sb_free(b);
}

/* Forces (a drag, a torque, a time-dependent force, a potential): no
 * closed form, but the multiplier solution is an independent road. */
static void test_sphere_forces(void **state)
{
    (void)state;
    sb_t *b = sphere(true);
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b), *ref = sb_vars(b);
    uint64_t seed = 5;
    for (int trial = 0; trial < 10; trial++) {
        double unused[5];
        sphere_state(sys, &seed, vars, unused);
        accel(sys, EOM_MULTIPLIERS, vars, ref);
        worksheet_t *ws = build(sys, vars, "second");
        qdd_matches(ws, sys, ref, 1e-12, "second with forces");
        const worksheet_step_t *lam = step(ws, "lambda");
        double lr[2] = {ref[sys->lam[0]], ref[sys->lam[1]]};
        for (size_t a = 0; a < 2; a++)
            close_to(lam->val[a], lr[a], max_abs(lr, 2), 1e-12, "lambda");
        /* A_i = Q_i − ∂V/∂q^i by hand */
        const worksheet_step_t *A = step(ws, "A");
        double m = SPHERE_M, c = 0.4, k = 0.9, g = 2.5;
        double th = vars[sys->q[1]], t = vars[sys->t];
        double Ah[5] = {0.0, -k * sin(th) * vars[sys->qd[1]],
                        0.3 * cos(t) * vars[sys->qd[4]],
                        -c * vars[sys->qd[3]] - m * g * 0.2,
                        -k * vars[sys->q[4]]};
        for (size_t i = 0; i < 5; i++)
            close_to(A->val[i], Ah[i], 1.0, 1e-14, "A_i by hand");
        symbols_match_numbers(ws, sys, vars);
        worksheet_free(ws);

        ws = build(sys, vars, "first");
        qdd_matches(ws, sys, ref, 1e-12, "first with forces vs multipliers");
        accel(sys, EOM_MAGGI, vars, ref);
        const worksheet_step_t *dz = step(ws, "dz");
        double zs[3] = {ref[sys->zd[0]], ref[sys->zd[1]], ref[sys->zd[2]]};
        for (size_t a = 0; a < 3; a++)
            close_to(dz->val[5 + a], zs[a], max_abs(zs, 3), 1e-12,
                     "first with forces: z' vs maggi");
        symbols_match_numbers(ws, sys, vars);
        no_velocities(ws, sys);
        worksheet_free(ws);
    }
    sb_free(b);
}

static void test_sphere_preliminary(void **state)
{
    (void)state;
    sb_t *b = sphere(false);
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b);
    uint64_t seed = 3;
    double unused[5];
    sphere_state(sys, &seed, vars, unused);
    worksheet_t *ws = build(sys, vars, "preliminary");
    double m = SPHERE_M, R = SPHERE_R, I = 2 * m * R * R / 5;
    double th = vars[sys->q[1]];
    double dph = vars[sys->qd[0]], dth = vars[sys->qd[1]],
           dps = vars[sys->qd[2]];

    /* step 4: g by hand */
    const worksheet_step_t *g = step(ws, "g");
    assert_string_equal(g->number, "");
    double gh[25] = {0};
    gh[0] = gh[6] = gh[12] = I;
    gh[2] = gh[10] = I * cos(th);
    gh[18] = gh[24] = m;
    for (size_t k = 0; k < 25; k++)
        close_to(g->val[k], gh[k], 1.0, 1e-15, "g_ij of the sphere");

    /* step 5: the binomials without accelerations, by hand:
     * P_φ = −I θ'ψ' sin θ, P_θ = I φ'ψ' sin θ, P_ψ = −I φ'θ' sin θ */
    const worksheet_step_t *P = step(ws, "P");
    assert_string_equal(P->number, "5");
    double Ph[5] = {-I * dth * dps * sin(th), I * dph * dps * sin(th),
                    -I * dph * dth * sin(th), 0.0, 0.0};
    for (size_t i = 0; i < 5; i++)
        close_to(P->val[i], Ph[i], 1.0, 1e-14, "P_i of the sphere");

    /* the variant: Γ_θψ,φ = −mR² sin θ/5, Γ_φψ,θ = mR² sin θ/5,
     * Γ_φθ,ψ = −mR² sin θ/5, and no other (eq. 16 by hand) */
    const worksheet_step_t *G = step(ws, "Christoffel");
    assert_int_equal(G->shape, WORKSHEET_LIST);
    assert_int_equal(G->rows, 3);
    const char *lab[3] = {"Γ[theta, psi; phi]", "Γ[phi, psi; theta]",
                          "Γ[phi, theta; psi]"};
    double Gh[3] = {-m * R * R * sin(th) / 5, m * R * R * sin(th) / 5,
                    -m * R * R * sin(th) / 5};
    for (size_t k = 0; k < 3; k++) {
        assert_string_equal(G->row_names[k], lab[k]);
        close_to(G->val[k], Gh[k], 1.0, 1e-15, "Christoffel symbol");
    }
    assert_null(strstr(G->note, "not a quadratic form"));

    /* step 2: C^a_i, and the rank at this regular state */
    const worksheet_step_t *Ci = step(ws, "C_i");
    assert_int_equal(Ci->rows, 2);
    assert_int_equal(Ci->cols, 5);
    close_to(Ci->val[1], -R * sin(vars[sys->q[0]]), 1.0, 1e-15, "C^x_theta");
    assert_non_null(strstr(Ci->note, "rank 2 of 2"));
    symbols_match_numbers(ws, sys, vars);

    /* the numbering of the preliminary sheet */
    const char *want[] = {"1", "2", "", "3", "4", "", "5", "", "A"};
    assert_int_equal(worksheet_count(ws), 9);
    for (size_t k = 0; k < 9; k++)
        assert_string_equal(worksheet_step(ws, k)->number, want[k]);
    worksheet_free(ws);
    sb_free(b);
}

/* ---- the nonholonomic bipendulum (Benenti §13) -------------------------- */

#define M1 1.7
#define M2 0.6

static sb_t *bipendulum(void)
{
    sb_t *b = sb_new();
    sb_param(b, "m1", M1);
    sb_param(b, "m2", M2);
    sb_param(b, "A1x", 0.8);
    sb_param(b, "A1y", -0.3);
    sb_param(b, "A2x", 0.45);
    sb_param(b, "A2y", 0.9);
    sb_coord(b, "x1");
    sb_coord(b, "y1");
    sb_coord(b, "x2");
    sb_coord(b, "y2");
    /* the hidden point P0 = (0, y0): v_ν ⟂ P_ν − P0 (eq. 74) */
    sb_speed(b, "s1");
    sb_speed(b, "s2");
    sb_speed(b, "y0");
    const char *p1[] = {"x1", "y1"}, *p2[] = {"x2", "y2"};
    const char *f1[] = {"A1x", "A1y"}, *f2[] = {"A2x", "A2y"};
    sb_particle(b, "P1", "m1", 2, p1, f1);
    sb_particle(b, "P2", "m2", 2, p2, f2);
    /* Benenti eq. 73 */
    sb_constraint(b, "c1", "x1*x1'*y2' - x2*x2'*y1' + (y1 - y2)*y1'*y2'");
    sb_kinematic(b, "x1", "-s1*(y1 - y0)");
    sb_kinematic(b, "y1", "s1*x1");
    sb_kinematic(b, "x2", "-s2*(y2 - y0)");
    sb_kinematic(b, "y2", "s2*x2");
    return b;
}

typedef struct bip {
    double q[4], qd[4];
} bip_t;

/* A random state on the constraint, away from the singular states (72);
 * the speeds from eq. 75 and y_ν' = s_ν x_ν. */
static void bip_state(const nh_system_t *sys, uint64_t *seed, double *vars,
                      bip_t *s)
{
    for (;;) {
        for (int i = 0; i < 4; i++)
            s->q[i] = urand(seed, -1.5, 1.5);
        for (int i = 0; i < 3; i++)
            s->qd[i] = urand(seed, -1.5, 1.5);
        double x1 = s->q[0], y1 = s->q[1], x2 = s->q[2], y2 = s->q[3];
        double den = x1 * s->qd[0] + (y1 - y2) * s->qd[1];
        if (fabs(den) < 0.2 || fabs(x1) < 0.2 || fabs(x2) < 0.2 ||
            fabs(s->qd[1]) < 0.2)
            continue;
        s->qd[3] = x2 * s->qd[2] * s->qd[1] / den; /* eq. 73 for y2' */
        if (fabs(s->qd[3]) < 0.1 || fabs(s->qd[3]) > 5.0)
            continue;
        break;
    }
    for (size_t i = 0; i < 4; i++) {
        vars[sys->q[i]] = s->q[i];
        vars[sys->qd[i]] = s->qd[i];
    }
    vars[sys->z[0]] = s->qd[1] / s->q[0];
    vars[sys->z[1]] = s->qd[3] / s->q[2];
    vars[sys->z[2]] = s->qd[0] / s->qd[1] * s->q[0] + s->q[1];
}

/* Benenti eqs. 80–82 (right as printed, seeds/README.md). */
static void bip_benenti(const bip_t *s, double qdd[4])
{
    static const double A[4] = {0.8, -0.3, 0.45, 0.9};
    sb_bipendulum_benenti(M1, M2, A, s->q, s->qd, qdd);
}

static void test_bipendulum_reduced(void **state)
{
    (void)state;
    sb_t *b = bipendulum();
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b), *ref = sb_vars(b);
    uint64_t seed = 2024;
    for (int trial = 0; trial < 20; trial++) {
        bip_t s;
        bip_state(sys, &seed, vars, &s);
        worksheet_t *ws = build(sys, vars, "second_reduced");
        double x1 = s.q[0], y1 = s.q[1], x2 = s.q[2], y2 = s.q[3];
        double dx1 = s.qd[0], dy1 = s.qd[1], dx2 = s.qd[2], dy2 = s.qd[3];
        double v1 = dx1 * dx1 + dy1 * dy1, v2 = dx2 * dx2 + dy2 * dy2;

        /* step 1: g^ij = diag(1/m1, 1/m1, 1/m2, 1/m2) */
        const worksheet_step_t *gi = step(ws, "ginv");
        for (size_t i = 0; i < 4; i++)
            for (size_t j = 0; j < 4; j++)
                close_to(gi->val[i * 4 + j],
                         i != j ? 0.0 : i < 2 ? 1 / M1 : 1 / M2, 1.0, 1e-15,
                         "g^ij");

        /* step 2: C_i as in the preliminary sheet of §13 */
        double Ch[4] = {x1 * dy2, -x2 * dx2 + (y1 - y2) * dy2, -x2 * dy1,
                        x1 * dx1 + (y1 - y2) * dy1};
        const worksheet_step_t *Ci = step(ws, "C_i");
        for (size_t i = 0; i < 4; i++)
            close_to(Ci->val[i], Ch[i], 1.0, 1e-14, "C_i (§13, step 2)");

        /* step 4: H = Δ/(m1 m2 ẏ1² ẏ2²) with Δ of eq. 77 — Benenti's
         * closed form, which uses the constraint (eq. 76) */
        double Delta = M1 * x2 * x2 * pow(dy1, 4) * v2 +
                       M2 * x1 * x1 * pow(dy2, 4) * v1;
        double Hb = Delta / (M1 * M2 * dy1 * dy1 * dy2 * dy2);
        const worksheet_step_t *H = step(ws, "H");
        assert_string_equal(H->number, "4");
        assert_int_equal(H->shape, WORKSHEET_SCALAR);
        close_to(H->val[0], Hb, Hb, 1e-12, "H = Δ/(m1 m2 ẏ1² ẏ2²) (eq. 77)");

        /* step 5: X^i = C^i/H */
        const worksheet_step_t *X = step(ws, "X");
        assert_string_equal(X->number, "5");
        double Mi[4] = {M1, M1, M2, M2};
        for (size_t i = 0; i < 4; i++)
            close_to(X->val[i], Ch[i] / (Mi[i] * Hb), 1.0, 1e-12, "X^i");

        /* step 10: q'^i ∂C/∂q^i = ẏ2 v1² − ẏ1 v2² (§13, step 10) */
        const worksheet_step_t *cq = step(ws, "cq");
        assert_string_equal(cq->number, "10");
        close_to(cq->val[0], dy2 * v1 - dy1 * v2, 1.0, 1e-13,
                 "step 10 (∂C/∂q, not ∂C/∂q')");

        /* the last step: eqs. 80–82, second_kind and multipliers */
        double ben[4];
        bip_benenti(&s, ben);
        const worksheet_step_t *qdd = step(ws, "qdd");
        assert_string_equal(qdd->number, "12");
        for (size_t i = 0; i < 4; i++)
            close_to(qdd->val[i], ben[i], max_abs(ben, 4), 1e-11,
                     "reduced sheet vs Benenti eqs. 80-82");
        accel(sys, EOM_SECOND_KIND, vars, ref);
        qdd_matches(ws, sys, ref, 1e-12, "second_reduced vs second_kind");
        close_to(step(ws, "lambda")->val[0], ref[sys->lam[0]],
                 ref[sys->lam[0]], 1e-12, "lambda (eq. 43)");
        accel(sys, EOM_MULTIPLIERS, vars, ref);
        qdd_matches(ws, sys, ref, 1e-12, "second_reduced vs multipliers");
        symbols_match_numbers(ws, sys, vars);
        worksheet_free(ws);

        /* the general sheet says the same with r = 1 */
        ws = build(sys, vars, "second");
        qdd_matches(ws, sys, ref, 1e-12, "second (r = 1) vs multipliers");
        close_to(step(ws, "H")->val[0], Hb, Hb, 1e-12, "H^11");
        symbols_match_numbers(ws, sys, vars);
        worksheet_free(ws);
    }
    sb_free(b);
}

static void test_bipendulum_first(void **state)
{
    (void)state;
    sb_t *b = bipendulum();
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b), *ref = sb_vars(b);
    uint64_t seed = 77;
    for (int trial = 0; trial < 20; trial++) {
        bip_t s;
        bip_state(sys, &seed, vars, &s);
        worksheet_t *ws = build(sys, vars, "first");
        /* step 3 by hand: ψ_s1 = (y0 − y1, x1, 0, 0),
         * ψ_s2 = (0, 0, y0 − y2, x2), ψ_y0 = (s1, 0, s2, 0) */
        double s1 = vars[sys->z[0]], s2 = vars[sys->z[1]],
               y0 = vars[sys->z[2]];
        double x1 = s.q[0], y1 = s.q[1], x2 = s.q[2], y2 = s.q[3];
        double Gh[9] = {M1 * (x1 * x1 + (y0 - y1) * (y0 - y1)), 0.0,
                        M1 * s1 * (y0 - y1), 0.0,
                        M2 * (x2 * x2 + (y0 - y2) * (y0 - y2)),
                        M2 * s2 * (y0 - y2), M1 * s1 * (y0 - y1),
                        M2 * s2 * (y0 - y2), M1 * s1 * s1 + M2 * s2 * s2};
        const worksheet_step_t *G = step(ws, "G");
        assert_string_equal(G->number, "3");
        for (size_t k = 0; k < 9; k++)
            close_to(G->val[k], Gh[k], max_abs(Gh, 9), 1e-14, "G_αβ");
        /* step 4 is its inverse */
        const worksheet_step_t *Gi = step(ws, "Ginv");
        for (size_t a = 0; a < 3; a++)
            for (size_t c = 0; c < 3; c++) {
                double sum = 0.0;
                for (size_t k = 0; k < 3; k++)
                    sum += Gh[a * 3 + k] * Gi->val[k * 3 + c];
                close_to(sum, a == c, 1.0, 1e-12, "G G^-1 = 1");
            }
        /* the last numbers */
        accel(sys, EOM_MAGGI, vars, ref);
        const worksheet_step_t *dz = step(ws, "dz");
        assert_string_equal(dz->number, "10");
        double zs[3] = {ref[sys->zd[0]], ref[sys->zd[1]], ref[sys->zd[2]]};
        for (size_t a = 0; a < 3; a++)
            close_to(dz->val[4 + a], zs[a], max_abs(zs, 3), 1e-12,
                     "first: z' vs maggi");
        qdd_matches(ws, sys, ref, 1e-12, "first vs maggi");
        double ben[4];
        bip_benenti(&s, ben);
        const worksheet_step_t *qdd = step(ws, "qdd");
        for (size_t i = 0; i < 4; i++)
            close_to(qdd->val[i], ben[i], max_abs(ben, 4), 1e-11,
                     "first vs Benenti eqs. 80-82");
        symbols_match_numbers(ws, sys, vars);
        no_velocities(ws, sys);
        worksheet_free(ws);
    }
    sb_free(b);
}

/* The numbering follows Benenti's text; the corrected typos are said. */
static void test_numbering_and_print(void **state)
{
    (void)state;
    sb_t *b = bipendulum();
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b);
    uint64_t seed = 1;
    bip_t s;
    bip_state(sys, &seed, vars, &s);

    static const char *const reduced[] = {"1", "2", "3",  "4",  "5", "6",
                                          "7", "8", "9",  "10", "11", "12",
                                          "A", "",  "λ",  ""};
    static const char *const second[] = {"1",  "2",  "3",  "4", "5", "6",
                                         "7",  "8",  "9",  "",  "10", "11",
                                         "12", "13", "A",  "",  "λ", ""};
    static const char *const first[] = {"1", "2", "3", "4",  "5", "6",
                                        "7", "8", "9", "10", "",  "11"};
    struct {
        const char *which;
        const char *const *num;
        size_t count;
    } sheets[] = {{"second_reduced", reduced, 16},
                  {"second", second, 18},
                  {"first", first, 12}};
    for (size_t k = 0; k < 3; k++) {
        worksheet_t *ws = build(sys, vars, sheets[k].which);
        assert_int_equal(worksheet_count(ws), sheets[k].count);
        for (size_t j = 0; j < sheets[k].count; j++)
            assert_string_equal(worksheet_step(ws, j)->number,
                                sheets[k].num[j]);
        int rc;
        char *text = print_sheet(ws, false, &rc);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(text, "at the state:"));
        assert_non_null(strstr(text, "\n1. "));
        /* every step that shows an object says what it is for, in one
         * line (LANGUAGE.md §7.1) */
        size_t purposes = 0, objects = 0;
        for (const char *c = text; (c = strstr(c, "\n   purpose: ")); c++)
            purposes++;
        for (size_t j = 0; j < sheets[k].count; j++)
            objects += worksheet_step(ws, j)->shape != WORKSHEET_TEXT;
        assert_true(purposes >= objects);
        /* remarks on Benenti's misprints are in `help worksheet`, not in
         * the sheet (§7.1) */
        assert_null(strstr(text, "is meant"));
        assert_null(strstr(text, "see A below"));
        free(text);
        text = print_sheet(ws, true, &rc);
        assert_int_equal(rc, 0);
        /* LaTeX (§7.1): a sheet that breaks across pages, a display per
         * step, the steps' numbers and titles typeset (bold text rows,
         * not comments) */
        static const char head[] = "{\\allowdisplaybreaks\n\\begin{align*}\n";
        assert_true(strncmp(text, head, sizeof head - 1) == 0);
        assert_non_null(strstr(text, "\\begin{pmatrix}"));
        assert_non_null(strstr(text, "\\end{align*}\n}\n"));
        assert_non_null(strstr(text, "&\\textbf{1. "));
        assert_null(strstr(text, "\n%"));
        size_t displays = 0, numbered = 0;
        for (const char *c = text; (c = strstr(c, "\\begin{align*}")); c++)
            displays++;
        for (size_t j = 0; j < sheets[k].count; j++)
            numbered += *worksheet_step(ws, j)->number != '\0';
        assert_true(displays > numbered);
        free(text);
        worksheet_free(ws);
    }

    worksheet_t *ws = build(sys, vars, "second_reduced");
    int rc;
    char *text = print_sheet(ws, false, &rc);
    /* g^ij as Benenti writes it, and X^i in terms of H */
    assert_non_null(strstr(text, "   [1/m1, 0, 0, 0]\n"));
    assert_non_null(strstr(text, "x1*y2'/(m1*H)"));
    assert_non_null(strstr(text, "where H is"));
    free(text);
    worksheet_free(ws);

    /* the preliminary sheet: g = diag(m1, m1, m2, m2), all Γ vanish */
    ws = build(sys, vars, "preliminary");
    const worksheet_step_t *g = step(ws, "g");
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++) {
            const expr_t *e = g->sym[i * 4 + j];
            if (i != j)
                assert_true(expr_is_const(e, 0.0));
            else
                assert_ptr_equal(e, sb_expr(b, i < 2 ? "m1" : "m2"));
        }
    assert_non_null(strstr(step(ws, "Christoffel")->note, "all vanish"));
    worksheet_free(ws);
    sb_free(b);
}

/* ---- models with a holonomic constraint, a Lagrangian, time -------------- */

/* A pendulum of length l as x² + y² = l² (a holonomic constraint, which
 * enters as its derivative), under gravity V = m g y: the closed form
 * φ'' = −(g/l) sin φ for x = l sin φ, y = −l cos φ. */
static void test_pendulum_holonomic(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "m", 0.8);
    sb_param(b, "l", 1.3);
    sb_param(b, "g", 9.81);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_kinetic(b, "m/2*(x'^2 + y'^2)");
    sb_potential(b, "m*g*y");
    sb_constraint(b, "rod", "x^2 + y^2 - l^2");
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b), *ref = sb_vars(b);
    uint64_t seed = 9;
    for (int trial = 0; trial < 10; trial++) {
        double l = 1.3, g = 9.81, ph = urand(&seed, -2.5, 2.5),
               w = urand(&seed, -2.0, 2.0);
        vars[sys->q[0]] = l * sin(ph);
        vars[sys->q[1]] = -l * cos(ph);
        vars[sys->qd[0]] = l * w * cos(ph);
        vars[sys->qd[1]] = l * w * sin(ph);
        double pdd = -g / l * sin(ph);
        double want[2] = {l * (pdd * cos(ph) - w * w * sin(ph)),
                          l * (pdd * sin(ph) + w * w * cos(ph))};
        worksheet_t *ws = build(sys, vars, "second_reduced");
        const worksheet_step_t *qdd = step(ws, "qdd");
        for (size_t i = 0; i < 2; i++)
            close_to(qdd->val[i], want[i], max_abs(want, 2), 1e-12,
                     "pendulum: the closed form");
        accel(sys, EOM_MULTIPLIERS, vars, ref);
        qdd_matches(ws, sys, ref, 1e-12, "pendulum vs multipliers");
        assert_non_null(strstr(step(ws, "C_i")->note, "rod has no velocity"));
        /* A = −∂V/∂q = (0, −m g) */
        close_to(step(ws, "A")->val[1], -0.8 * g, 1.0, 1e-15, "A_y");
        symbols_match_numbers(ws, sys, vars);
        worksheet_free(ws);
    }
    sb_free(b);
}

/* A Lagrangian (no T, V) and an affine, time-dependent constraint
 * x' − t y' − 1 = 0: the Lagrangian form, and ∂C/∂t in step 10.
 * By hand, with L = m/2 (x'² + y'²) − k/2 (x² + y²): M = m I, h = k q,
 * B = (1, −t), c = ∂C/∂t = −y', λ = −(B F + c)/(B M⁻¹ Bᵀ), F = −k q/m,
 * q'' = F + λ Bᵀ/m. */
static void test_lagrangian_time(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "m", 1.6);
    sb_param(b, "k", 2.2);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_lagrangian(b, "m/2*(x'^2 + y'^2) - k/2*(x^2 + y^2)");
    sb_constraint(b, "c1", "x' - t*y' - 1");
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b), *ref = sb_vars(b);
    uint64_t seed = 4;
    double m = 1.6, k = 2.2;
    for (int trial = 0; trial < 10; trial++) {
        double t = urand(&seed, -2, 2), x = urand(&seed, -1, 1),
               y = urand(&seed, -1, 1), dy = urand(&seed, -1, 1);
        double dx = 1 + t * dy;
        vars[sys->q[0]] = x;
        vars[sys->q[1]] = y;
        vars[sys->qd[0]] = dx;
        vars[sys->qd[1]] = dy;
        vars[sys->t] = t;
        double F[2] = {-k * x / m, -k * y / m}, B[2] = {1, -t};
        double lam = -(B[0] * F[0] + B[1] * F[1] - dy) /
                     ((B[0] * B[0] + B[1] * B[1]) / m);
        double want[2] = {F[0] + lam * B[0] / m, F[1] + lam * B[1] / m};
        for (int sheet = 0; sheet < 2; sheet++) {
            worksheet_t *ws =
                build(sys, vars, sheet ? "second" : "second_reduced");
            const worksheet_step_t *qdd = step(ws, "qdd");
            for (size_t i = 0; i < 2; i++)
                close_to(qdd->val[i], want[i], max_abs(want, 2), 1e-12,
                         "time-dependent constraint by hand");
            close_to(step(ws, "cq")->val[0], -dy, 1.0, 1e-15,
                     "step 10 holds ∂C/∂t");
            close_to(step(ws, "lambda")->val[0], lam, lam, 1e-12, "lambda");
            accel(sys, EOM_SECOND_KIND, vars, ref);
            qdd_matches(ws, sys, ref, 1e-12, "vs second_kind");
            /* Lagrangian form: A = Q = 0, the potential in P = k q */
            close_to(step(ws, "A")->val[0], 0.0, 1.0, 0.0, "A = Q");
            close_to(step(ws, "Gamma")->val[0], k * x / m, 1.0, 1e-15,
                     "g^ij P_j holds the potential");
            symbols_match_numbers(ws, sys, vars);
            int rc;
            char *text = print_sheet(ws, false, &rc);
            assert_non_null(strstr(text, "Lagrangian form"));
            free(text);
            worksheet_free(ws);
        }
        worksheet_t *ws = build(sys, vars, "preliminary");
        assert_non_null(strstr(step(ws, "Christoffel")->note,
                               "not a quadratic form"));
        worksheet_free(ws);
    }
    sb_free(b);
}

/* ---- errors -------------------------------------------------------------- */

/* worksheet_build must fail with every NEEDLE (NULL-terminated) in the
 * message and, unless AT_WHERE is false, the span of the statement. */
static void build_fails(const nh_system_t *sys, const double *vars,
                        const char *which, bool at_where, ...)
{
    diag_t err = {0};
    src_span_t where = {0, 3, 12};
    worksheet_t *ws = worksheet_build(sys, vars, which, where, &err);
    if (ws) {
        worksheet_free(ws);
        fail_msg("worksheet %s: built, expected an error", which);
    }
    assert_true(err.set);
    if (at_where)
        assert_int_equal(err.span.begin, 3);
    va_list ap;
    va_start(ap, at_where);
    const char *needle;
    while ((needle = va_arg(ap, const char *)))
        if (!strstr(err.msg, needle))
            fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
    va_end(ap);
}

static void test_errors(void **state)
{
    (void)state;
    /* first without speeds; second_reduced with two constraints */
    sb_t *b = sb_new();
    sb_param(b, "m", 1.0);
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_coord(b, "z");
    sb_kinetic(b, "m/2*(x'^2 + y'^2 + z'^2)");
    sb_constraint(b, "a", "x' - y'");
    sb_constraint(b, "b", "y' - z*x'");
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b);
    build_fails(sys, vars, "first", true, "speed", "kinematic", NULL);
    build_fails(sys, vars, "second_reduced", true, "single constraint", "has 2",
                "worksheet second", NULL);
    build_fails(sys, vars, "secnd", true, "unknown worksheet 'secnd'",
                "did you mean 'second'", NULL);
    build_fails(sys, vars, "xyzzy", true, "unknown worksheet 'xyzzy'",
                "preliminary, first, second and second_reduced", NULL);
    build_fails(sys, vars, "second_reducd", true,
                "did you mean 'second_reduced'", NULL);
    sb_free(b);

    /* first with speeds but a coordinate without its kinematic equation */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_kinematic(b, "x", "u");
    sys = sb_system(b);
    vars = sb_vars(b);
    build_fails(sys, vars, "first", true, "y has none", "kinematic y'", NULL);
    /* no constraint at all */
    build_fails(sys, vars, "second_reduced", true, "has none", NULL);
    build_fails(sys, vars, "second", true, "at least one constraint", NULL);
    /* the preliminary sheet needs nothing */
    worksheet_t *ws = build(sys, vars, "preliminary");
    assert_non_null(worksheet_find(ws, "C"));
    assert_int_equal(step(ws, "C")->shape, WORKSHEET_TEXT);
    worksheet_free(ws);
    sb_free(b);

    /* first, with kinematic equations that break a declared constraint:
     * eom's check is passed on */
    b = sb_new();
    sb_coord(b, "x");
    sb_coord(b, "y");
    sb_speed(b, "u");
    sb_kinetic(b, "(x'^2 + y'^2)/2");
    sb_constraint(b, "same", "x' - y'");
    sb_kinematic(b, "x", "u");
    sb_kinematic(b, "y", "2*u");
    sys = sb_system(b);
    vars = sb_vars(b);
    build_fails(sys, vars, "first", false, "same", NULL); /* at `same` */
    sb_free(b);
}

/* A singular state of the bipendulum (eq. 72 c: both points at rest):
 * C_i = 0, H = 0.  The sheet stops after H and says so. */
static void test_singular_state(void **state)
{
    (void)state;
    sb_t *b = bipendulum();
    const nh_system_t *sys = sb_system(b);
    double *vars = sb_vars(b);
    vars[sys->q[0]] = 0.5;
    vars[sys->q[1]] = 0.2;
    vars[sys->q[2]] = -0.4;
    vars[sys->q[3]] = 0.1;
    diag_t err = {0};
    worksheet_t *ws =
        worksheet_build(sys, vars, "second_reduced", SRC_SPAN_NONE, &err);
    assert_non_null(ws);
    const char *why;
    assert_true(worksheet_stopped(ws, &why));
    assert_non_null(strstr(why, "singular"));
    assert_non_null(worksheet_find(ws, "H"));
    assert_null(worksheet_find(ws, "qdd"));
    int rc;
    char *text = print_sheet(ws, false, &rc);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(text, "4. H = C^i C_i"));
    free(text);
    worksheet_free(ws);

    /* worksheet_run prints the steps and returns the error */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    diag_clear(&err);
    assert_int_equal(worksheet_run(sys, vars, "second_reduced", false,
                                   SRC_SPAN_NONE, f, &err),
                     -1);
    fclose(f);
    assert_true(err.set);
    assert_non_null(strstr(err.msg, "H is singular"));
    assert_non_null(strstr(out, "3. C^i"));
    free(out);

    /* the preliminary sheet reports the rank at this state */
    ws = build(sys, vars, "preliminary");
    assert_non_null(strstr(step(ws, "C_i")->note, "a singular state"));
    worksheet_free(ws);
    sb_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sphere_second_and_first),
        cmocka_unit_test(test_sphere_forces),
        cmocka_unit_test(test_sphere_preliminary),
        cmocka_unit_test(test_bipendulum_reduced),
        cmocka_unit_test(test_bipendulum_first),
        cmocka_unit_test(test_numbering_and_print),
        cmocka_unit_test(test_pendulum_holonomic),
        cmocka_unit_test(test_lagrangian_time),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_singular_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
