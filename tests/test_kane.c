/*
 * test_kane.c — Kane's form without hand-solved kinematics (issue 19):
 * the kinematic equations given for the independent velocities only, the
 * others completed from the constraints (interp/eom/kinematics.h), and
 * Kane's F_r, F*_r (eom_kane).
 *
 * Every expected number is a closed form or a second method:
 *   — the rolling sphere (Lemos, seeds/003), with speeds for its three
 *     Euler angle rates only: x' and y' come from the rolling
 *     constraints; against the multipliers from (q, q') and against the
 *     same model with x', y' written by hand (Lemos eq. 2), whose ψ and
 *     accelerations must be the same;
 *   — the rolling disc of SymPy's test_kane.py (test_rolling_disc), from
 *     its physics: a disc of mass m, radius r, yaw q1 about N.z, lean q2
 *     about the yawed x axis, spin q3 about the leaned y axis (the
 *     disc's axis), its centre r along the leaned z axis from the contact
 *     point (x, y, 0), which is at rest (rolling).  Speeds as SymPy's
 *     test: the angular velocity is u1 L.x + u2 L.y + u3 L.z in the
 *     leaned frame L, so q2' = u1, q1' = u3/cos(q2), q3' = u2 −
 *     u3 tan(q2).  Hand derivation (written out in test_disc_kane below)
 *     of the contact velocity, the centre's position and velocity, the
 *     kinetic energy, and Kane's F_r and F*_r; SymPy's asserted
 *     accelerations u1' = (6 u2 u3 r − u3² r tan q2 + 4 g sin q2)/(5 r),
 *     u2' = −2 u1 u3/3, u3' = u1 (−2 u2 + u3 tan q2);
 *   — the benchmark bicycle of examples/bicycle.nh with speeds for roll,
 *     steer and rear wheel rates only, against the multipliers near
 *     upright, at headings where a pivot in the heading's cosine or sine
 *     would vanish, and at random states; the velocities solved
 *     symbolically against the same solved numerically at each
 *     evaluation.
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

#include "interp/cli/context.h"
#include "interp/cli/session.h"
#include "interp/eom/common.h"
#include "interp/eom/eom.h"
#include "interp/eom/kinematics.h"
#include "tests/sys_builder.h"

static double urand(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * ((double)(*s >> 11) / 9007199254740992.0);
}

/* |a − b| / max(1, |a|, |b|): compare's measure. */
static double rel(double a, double b)
{
    return fabs(a - b) / fmax(1.0, fmax(fabs(a), fabs(b)));
}

static eom_t *prep(const nh_system_t *sys, eom_method_t m, size_t block_max)
{
    diag_t err = {0};
    eom_t *e = eom_prepare_kin(sys, m, block_max, SRC_SPAN_NONE, &err);
    if (!e)
        fail_msg("%s: prepare failed: %s", eom_method_name(m), err.msg);
    return e;
}

static void accel(eom_t *e, const double *vars, double *out, size_t nv)
{
    diag_t err = {0};
    memcpy(out, vars, nv * sizeof *out);
    if (eom_accel(e, out, &err) != 0)
        fail_msg("%s: accel failed: %s", eom_method_name(eom_method(e)),
                 err.msg);
}

/* ---- the rolling sphere -------------------------------------------------- */

#define SPHERE_R 0.7

/* Lemos's sphere with speeds u1, u2, u3 for phi', theta', psi'; x' and y'
 * by hand (Lemos eq. 2) when HAND, else from the constraints. */
static sb_t *sphere(bool hand)
{
    sb_t *b = sb_new();
    sb_param(b, "m", 1.3);
    sb_param(b, "R", SPHERE_R);
    sb_param(b, "c", 0.4);
    const char *q[] = {"phi", "theta", "psi", "x", "y"};
    for (size_t i = 0; i < 5; i++)
        sb_coord(b, q[i]);
    sb_speed(b, "u1");
    sb_speed(b, "u2");
    sb_speed(b, "u3");
    sb_kinetic(b, "m/2*(x'^2 + y'^2) + m*R^2/5*(phi'^2 + theta'^2 + psi'^2 "
                  "+ 2*phi'*psi'*cos(theta))");
    sb_constraint(b, "roll_x",
                  "x' - (R*theta'*sin(phi) - R*psi'*sin(theta)*cos(phi))");
    sb_constraint(b, "roll_y",
                  "y' - (-R*theta'*cos(phi) - R*psi'*sin(theta)*sin(phi))");
    sb_kinematic(b, "phi", "u1");
    sb_kinematic(b, "theta", "u2");
    sb_kinematic(b, "psi", "u3");
    if (hand) {
        sb_kinematic(b, "x", "R*u2*sin(phi) - R*u3*sin(theta)*cos(phi)");
        sb_kinematic(b, "y", "-R*u2*cos(phi) - R*u3*sin(theta)*sin(phi)");
    }
    /* a drag on the centre, which a dependent velocity carries */
    sb_force(b, "x", "-c*x'");
    return b;
}

/* Speeds u1, u2, u3 and the sphere's coordinates into VARS; the velocities
 * (q' = ψ, Lemos eq. 2 for x', y') into QD. */
static void sphere_state(sb_t *b, uint64_t *seed, double *vars, double *qd)
{
    static const char *const q[] = {"phi", "theta", "psi", "x", "y"};
    double v[5];
    v[0] = urand(seed, -3, 3);
    v[1] = urand(seed, 0.3, 2.8);
    v[2] = urand(seed, -3, 3);
    v[3] = urand(seed, -1, 1);
    v[4] = urand(seed, -1, 1);
    for (int i = 0; i < 5; i++)
        vars[sb_var(b, q[i])] = v[i];
    double u[3];
    for (int a = 0; a < 3; a++)
        u[a] = urand(seed, -2, 2);
    vars[sb_var(b, "u1")] = u[0];
    vars[sb_var(b, "u2")] = u[1];
    vars[sb_var(b, "u3")] = u[2];
    qd[0] = u[0];
    qd[1] = u[1];
    qd[2] = u[2];
    qd[3] = SPHERE_R * u[1] * sin(v[0]) - SPHERE_R * u[2] * sin(v[1]) * cos(v[0]);
    qd[4] = -SPHERE_R * u[1] * cos(v[0]) - SPHERE_R * u[2] * sin(v[1]) * sin(v[0]);
}

/* x', y' solved from the rolling constraints (1×1 blocks of entry 1) give
 * Lemos's eq. 2, and the motion that maggi, gibbs_appell and the
 * multipliers give, symbolically and solved at each evaluation. */
static void test_sphere_completed(void **state)
{
    (void)state;
    static const char *const q[] = {"phi", "theta", "psi", "x", "y"};
    sb_t *b = sphere(false), *h = sphere(true);
    const nh_system_t *sys = sb_system(b), *hs = sb_system(h);
    size_t nv = expr_graph_nvars(sys->g);

    diag_t err = {0};
    eom_kin_t *kin = eom_kin_new(sys, "maggi", EOM_KIN_BLOCK_MAX,
                                 SRC_SPAN_NONE, &err);
    assert_non_null(kin);
    assert_int_equal(eom_kin_mode(kin), EOM_KIN_SYMBOLIC);
    const size_t *dep, *order, *sizes;
    const expr_t *const *seq;
    assert_int_equal(eom_kin_dependent(kin, &dep), 2);
    assert_int_equal(dep[0], 3);
    assert_int_equal(dep[1], 4);
    assert_int_equal(eom_kin_blocks(kin, &order, &sizes, &seq), 2);
    assert_int_equal(sizes[0], 1);
    assert_int_equal(sizes[1], 1);
    assert_int_equal(eom_kin_largest_block(kin), 1);

    eom_t *e[4] = {prep(sys, EOM_MAGGI, EOM_KIN_BLOCK_MAX),
                   prep(sys, EOM_MAGGI, 0),
                   prep(sys, EOM_GIBBS_APPELL, EOM_KIN_BLOCK_MAX),
                   prep(sys, EOM_GIBBS_APPELL, 0)};
    assert_false(e[0]->kin_numeric);
    assert_true(e[1]->kin_numeric);
    assert_true(e[3]->kin_numeric);
    eom_t *hand = prep(hs, EOM_MAGGI, EOM_KIN_BLOCK_MAX);
    eom_t *mult = prep(sys, EOM_MULTIPLIERS, EOM_KIN_BLOCK_MAX);
    double *vars = sb_vars(b), *hv = sb_vars(h);
    double *out = calloc(nv, sizeof *out), *ref = calloc(nv, sizeof *ref);
    uint64_t seed = 19;
    double worst = 0;
    for (int s = 0; s < 50; s++) {
        double qd[5];
        sphere_state(b, &seed, vars, qd);
        for (size_t k = 0; k < nv; k++)
            hv[k] = vars[k];
        /* ψ of the completion is Lemos eq. 2 */
        const expr_t *const *psi = eom_kin_psi(kin);
        for (int i = 0; i < 5; i++) {
            double v = expr_eval(sys->g, psi[i], vars);
            assert_true(rel(v, qd[i]) < 1e-14);
            vars[sys->qd[i]] = qd[i];
        }
        /* the multipliers from (q, q') */
        accel(mult, vars, ref, nv);
        accel(hand, hv, out, nv);
        for (int i = 0; i < 5; i++)
            worst = fmax(worst, rel(out[hs->qdd[i]], ref[sys->qdd[i]]));
        for (int k = 0; k < 4; k++) {
            accel(e[k], vars, out, nv);
            for (int i = 0; i < 5; i++) {
                double d = rel(out[sys->qdd[i]], ref[sys->qdd[i]]);
                if (!(d < 1e-12))
                    fail_msg("%s (%s), %s'': %.17g, multipliers %.17g",
                             eom_method_name(eom_method(e[k])),
                             e[k]->kin_numeric ? "numeric" : "symbolic",
                             q[i], out[sys->qdd[i]], ref[sys->qdd[i]]);
                worst = fmax(worst, d);
            }
            /* q' = ψ written back, the same as Lemos's */
            for (int i = 0; i < 5; i++)
                assert_true(rel(out[sys->qd[i]], qd[i]) < 1e-14);
        }
    }
    assert_true(worst < 1e-12);
    print_message("sphere: largest relative difference %g\n", worst);
    for (int k = 0; k < 4; k++)
        eom_free(e[k]);
    eom_free(hand);
    eom_free(mult);
    eom_kin_free(kin);
    free(out);
    free(ref);
    sb_free(b);
    sb_free(h);
}

/* ---- a car with two trailers, made of particles -------------------------- */

/* The N-trailer of bench/ntrailer.sh with N = 2: particles at the axles
 * (P0 the car's, P1, P2 the trailers', each d behind the one before) and
 * C ahead of the car; knife edges at the axles.  Speeds v (the car's
 * speed) and w (its turning rate) with x' = v cos th0, y' = v sin th0,
 * th0' = w; the trailers' rates th1', th2' come from their knife edges
 * (1×1 blocks).  gibbs_appell builds S from the particles, and, with the
 * rates solved at each evaluation, in the accelerations q'' (maggi.c,
 * gibbs_numeric). */
static void test_trailers_particles(void **state)
{
    (void)state;
    sb_t *b = sb_new();
    sb_param(b, "m", 1.0);
    sb_param(b, "d", 0.8);
    sb_param(b, "a", 0.5);
    const char *q[] = {"x", "y", "th0", "th1", "th2"};
    for (size_t i = 0; i < 5; i++)
        sb_coord(b, q[i]);
    sb_speed(b, "v");
    sb_speed(b, "w");
    const char *pc[] = {"x + a*cos(th0)", "y + a*sin(th0)"};
    const char *p0[] = {"x", "y"};
    const char *p1[] = {"x - d*cos(th1)", "y - d*sin(th1)"};
    const char *p2[] = {"x - d*cos(th1) - d*cos(th2)",
                        "y - d*sin(th1) - d*sin(th2)"};
    sb_particle(b, "C", "m", 2, pc, NULL);
    sb_particle(b, "P0", "m", 2, p0, NULL);
    sb_particle(b, "P1", "m", 2, p1, NULL);
    sb_particle(b, "P2", "m", 2, p2, NULL);
    sb_constraint(b, "k0", "-sin(th0)*x' + cos(th0)*y'");
    sb_constraint(b, "k1", "-sin(th1)*(x' + d*sin(th1)*th1') + "
                           "cos(th1)*(y' - d*cos(th1)*th1')");
    sb_constraint(b, "k2", "-sin(th2)*(x' + d*sin(th1)*th1' + "
                           "d*sin(th2)*th2') + cos(th2)*(y' - "
                           "d*cos(th1)*th1' - d*cos(th2)*th2')");
    sb_kinematic(b, "x", "v*cos(th0)");
    sb_kinematic(b, "y", "v*sin(th0)");
    sb_kinematic(b, "th0", "w");
    const nh_system_t *sys = sb_system(b);
    assert_true(sys->T_only_particles);
    size_t nv = expr_graph_nvars(sys->g);
    eom_t *e[4] = {prep(sys, EOM_MAGGI, EOM_KIN_BLOCK_MAX),
                   prep(sys, EOM_MAGGI, 0),
                   prep(sys, EOM_GIBBS_APPELL, EOM_KIN_BLOCK_MAX),
                   prep(sys, EOM_GIBBS_APPELL, 0)};
    assert_true(e[2]->S_particles && e[3]->S_particles);
    assert_true(e[3]->kin_numeric);
    eom_t *mult = prep(sys, EOM_MULTIPLIERS, EOM_KIN_BLOCK_MAX);
    double *vars = sb_vars(b);
    double *out = calloc(nv, sizeof *out), *ref = calloc(nv, sizeof *ref);
    uint64_t seed = 77;
    double worst = 0;
    for (int s = 0; s < 40; s++) {
        for (size_t i = 0; i < 5; i++)
            vars[sys->q[i]] = urand(&seed, -1.5, 1.5);
        vars[sys->z[0]] = urand(&seed, -2, 2);
        vars[sys->z[1]] = urand(&seed, -2, 2);
        accel(e[0], vars, out, nv); /* q' = ψ, for the multipliers */
        accel(mult, out, ref, nv);
        for (int k = 0; k < 4; k++) {
            accel(e[k], vars, out, nv);
            for (size_t i = 0; i < 5; i++) {
                double dd = rel(out[sys->qdd[i]], ref[sys->qdd[i]]);
                if (!(dd < 1e-12))
                    fail_msg("%s (%s), %s'': %.17g, multipliers %.17g",
                             eom_method_name(eom_method(e[k])),
                             e[k]->kin_numeric ? "numeric" : "symbolic",
                             q[i], out[sys->qdd[i]], ref[sys->qdd[i]]);
                worst = fmax(worst, dd);
            }
        }
    }
    print_message("trailers: largest relative difference %g\n", worst);
    for (int k = 0; k < 4; k++)
        eom_free(e[k]);
    eom_free(mult);
    free(out);
    free(ref);
    sb_free(b);
}

/* ---- SymPy's rolling disc ------------------------------------------------ */

/* Hand derivation.  Frames: Y = N turned by q1 about z, L = Y turned by q2
 * about x, R = L turned by q3 about y (the disc, axis L.y):
 *   L.x = (cos q1, sin q1, 0), L.y = (−cos q2 sin q1, cos q2 cos q1, sin q2),
 *   L.z = (sin q2 sin q1, −sin q2 cos q1, cos q2).
 * Angular velocity, on L's axes: ω = (q2', q1' sin q2 + q3', q1' cos q2),
 * so u1 = q2', u2 = q1' sin q2 + q3', u3 = q1' cos q2.
 * Centre G = (x, y, 0) + r L.z; the contact point P = (x, y, 0) is a
 * point of the disc at rest: G' = ω × (G − P) = r ω_y L.x − r ω_x L.y.
 * Its first component against G' from G's position:
 *   x' + r (cos q2 sin q1 q2' + sin q2 cos q1 q1') = r (q1' sin q2 + q3') cos q1
 *                                                  + r q2' cos q2 sin q1,
 * so x' = r q3' cos q1, and likewise y' = r q3' sin q1 (the vertical
 * component holds identically).  T = m/2 |G'|² + ½ ωᵀ I ω with I =
 * diag(m r²/4, m r²/2, m r²/4) on L; V = m g r cos q2.
 * Kane's form: partial velocities ∂ω/∂u_r = L.x, L.y, L.z and, from
 * v_G = ω × r L.z = r u2 L.x − r u1 L.y, ∂v_G/∂u_r = −r L.y, r L.x, 0.
 *   F_r = F·∂v_G/∂u_r with F = −m g N.z, N.z = sin q2 L.y + cos q2 L.z:
 *   F_1 = m g r sin q2, F_2 = F_3 = 0.
 * The frame L turns with ω_L = (u1, u3 tan q2, u3) on its own axes, so
 *   a_G = r (u2' + u1 u3, −u1' + u2 u3, −u1² − u2 u3 tan q2) on L, and
 *   the angular momentum H = m r² (u1/4, u2/2, u3/4) changes by
 *   H' = m r² (u1'/4 + u3² tan q2/4 − u2 u3/2, u2'/2,
 *              u3'/4 + u1 u2/2 − u1 u3 tan q2/4).
 *   F*_r = −m a_G·∂v_G/∂u_r − H'·∂ω/∂u_r:
 *   F*_1 = −m r² (5 u1'/4 − 3 u2 u3/2 + u3² tan q2/4)
 *   F*_2 = −m r² (3 u2'/2 + u1 u3)
 *   F*_3 = −m r² (u3'/4 + u1 u2/2 − u1 u3 tan q2/4),
 * and F_r + F*_r = 0 gives SymPy's accelerations (the file comment). */
static sb_t *disc(void)
{
    sb_t *b = sb_new();
    sb_param(b, "m", 2.0);
    sb_param(b, "r", 0.5);
    sb_param(b, "g", 9.81);
    const char *q[] = {"q1", "q2", "q3", "x", "y"};
    for (size_t i = 0; i < 5; i++)
        sb_coord(b, q[i]);
    sb_speed(b, "u1");
    sb_speed(b, "u2");
    sb_speed(b, "u3");
    sb_kinetic(b,
               "m/2*((x' + r*(cos(q2)*sin(q1)*q2' + sin(q2)*cos(q1)*q1'))^2 "
               "+ (y' - r*(cos(q2)*cos(q1)*q2' - sin(q2)*sin(q1)*q1'))^2 "
               "+ (r*sin(q2)*q2')^2) "
               "+ m*r^2/8*(q2'^2 + (q1'*cos(q2))^2) "
               "+ m*r^2/4*(q1'*sin(q2) + q3')^2");
    sb_potential(b, "m*g*r*cos(q2)");
    sb_constraint(b, "roll_x", "x' - r*q3'*cos(q1)");
    sb_constraint(b, "roll_y", "y' - r*q3'*sin(q1)");
    sb_kinematic(b, "q1", "u3/cos(q2)");
    sb_kinematic(b, "q2", "u1");
    sb_kinematic(b, "q3", "u2 - u3*sin(q2)/cos(q2)");
    return b;
}

static void test_disc_kane(void **state)
{
    (void)state;
    sb_t *b = disc();
    const nh_system_t *sys = sb_system(b);
    size_t nv = expr_graph_nvars(sys->g);
    const double m = 2.0, r = 0.5, g = 9.81;
    eom_t *e = prep(sys, EOM_MAGGI, EOM_KIN_BLOCK_MAX);
    eom_t *ga = prep(sys, EOM_GIBBS_APPELL, EOM_KIN_BLOCK_MAX);
    eom_t *num = prep(sys, EOM_MAGGI, 0);
    eom_t *mult = prep(sys, EOM_MULTIPLIERS, EOM_KIN_BLOCK_MAX);
    /* the fast path is taken where it pays (eom_fast_pays: a numeric
     * tape of at most EOM_FAST_TAPE_MAX instructions) */
    assert_true((e->fast != NULL) == eom_fast_pays(e));
    const expr_t *F[3], *Fs[3];
    bool vin = true;
    diag_t err = {0};
    assert_int_equal(eom_kane(e, F, Fs, &vin, &err), 0);
    assert_false(vin); /* gravity is a potential of (q, t): in F_r */
    /* solved numerically, there is no closed form to show */
    const expr_t *G[3], *Gs[3];
    assert_int_equal(eom_kane(num, G, Gs, &vin, &err), -1);
    assert_non_null(strstr(err.msg, "Kane's form is shown in closed form, "
                                    "but the velocities without a kinematic "
                                    "equation are solved numerically"));
    /* nor for equations that are not on speeds */
    diag_clear(&err);
    assert_int_equal(eom_kane(mult, G, Gs, &vin, &err), -1);
    assert_string_equal(err.msg, "Kane's form needs the equations on speeds "
                                 "(maggi, gibbs_appell)");
    diag_clear(&err);
    /* gibbs_appell has the same Kane's form */
    assert_int_equal(eom_kane(ga, G, Gs, &vin, &err), 0);

    double *vars = sb_vars(b);
    double *out = calloc(nv, sizeof *out), *ref = calloc(nv, sizeof *ref);
    uint64_t seed = 2023;
    double worst_f = 0, worst_a = 0;
    for (int s = 0; s < 100; s++) {
        double q1 = urand(&seed, -3, 3), q2 = urand(&seed, -1.2, 1.2);
        double q3 = urand(&seed, -3, 3);
        double u1 = urand(&seed, -2, 2), u2 = urand(&seed, -2, 2);
        double u3 = urand(&seed, -2, 2);
        /* z' anything: F*_r is linear in z', the identity holds for all */
        double d1 = urand(&seed, -5, 5), d2 = urand(&seed, -5, 5);
        double d3 = urand(&seed, -5, 5);
        vars[sb_var(b, "q1")] = q1;
        vars[sb_var(b, "q2")] = q2;
        vars[sb_var(b, "q3")] = q3;
        vars[sb_var(b, "x")] = urand(&seed, -1, 1);
        vars[sb_var(b, "y")] = urand(&seed, -1, 1);
        vars[sb_var(b, "u1")] = u1;
        vars[sb_var(b, "u2")] = u2;
        vars[sb_var(b, "u3")] = u3;
        vars[sb_var(b, "u1'")] = d1;
        vars[sb_var(b, "u2'")] = d2;
        vars[sb_var(b, "u3'")] = d3;
        double tq = tan(q2), mr2 = m * r * r;
        double want_F[3] = {m * g * r * sin(q2), 0, 0};
        double want_Fs[3] = {
            -mr2 * (5 * d1 / 4 - 3 * u2 * u3 / 2 + u3 * u3 * tq / 4),
            -mr2 * (3 * d2 / 2 + u1 * u3),
            -mr2 * (d3 / 4 + u1 * u2 / 2 - u1 * u3 * tq / 4)};
        for (int k = 0; k < 3; k++) {
            double f = expr_eval(sys->g, F[k], vars);
            double fs = expr_eval(sys->g, Fs[k], vars);
            double fg = expr_eval(sys->g, G[k], vars);
            double fgs = expr_eval(sys->g, Gs[k], vars);
            worst_f = fmax(worst_f, fmax(rel(f, want_F[k]), rel(fs, want_Fs[k])));
            worst_f = fmax(worst_f, fmax(rel(fg, want_F[k]), rel(fgs, want_Fs[k])));
        }
        /* the accelerations: SymPy's, and the multipliers' */
        double want_u[3] = {(6 * u2 * u3 * r - u3 * u3 * r * tq + 4 * g * sin(q2)) /
                                (5 * r),
                            -2 * u1 * u3 / 3, u1 * (-2 * u2 + u3 * tq)};
        eom_t *es[3] = {e, ga, num};
        for (int k = 0; k < 3; k++) {
            accel(es[k], vars, out, nv);
            for (int a = 0; a < 3; a++)
                worst_a = fmax(worst_a, rel(out[sys->zd[a]], want_u[a]));
            /* x' = r q3' cos q1 (the completion) */
            worst_a = fmax(worst_a, rel(out[sb_var(b, "x'")],
                                        r * (u2 - u3 * tq) * cos(q1)));
            /* the multipliers from the same (q, q') */
            accel(mult, out, ref, nv);
            for (size_t i = 0; i < 5; i++)
                worst_a = fmax(worst_a, rel(out[sys->qdd[i]], ref[sys->qdd[i]]));
        }
    }
    print_message("disc: F_r, F*_r within %g, accelerations within %g\n",
                  worst_f, worst_a);
    assert_true(worst_f < 1e-12);
    assert_true(worst_a < 1e-12);
    char *t = eom_describe_kane(e, false);
    assert_non_null(strstr(t, "F_u1 = "));
    assert_non_null(strstr(t, "F*_u3 = "));
    free(t);
    t = eom_describe_kane(e, true);
    assert_non_null(strstr(t, "F^{*}_{u_{2}} &= "));
    free(t);
    assert_null(eom_describe_kane(num, false));
    eom_free(e);
    eom_free(ga);
    eom_free(num);
    eom_free(mult);
    free(out);
    free(ref);
    sb_free(b);
}

/* ---- the bicycle ---------------------------------------------------------- */

typedef struct bike {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} bike_t;

static void bike_run(bike_t *k, const char *text)
{
    if (session_run_text(k->s, "<test>", text, strlen(text), false) !=
        RUN_OK) {
        fflush(k->ferr);
        fail_msg("%s\n%s", text, k->err);
    }
}

/* At states near upright, at headings 0, 90 and 180 degrees, and at
 * random ones: maggi with the five velocities solved from the constraints
 * (symbolically, and numerically at each evaluation) against the
 * multipliers from the same (q, q'). */
static void test_bicycle(void **state)
{
    (void)state;
    bike_t k = {0};
    k.fout = open_memstream(&k.out, &k.out_len);
    k.ferr = open_memstream(&k.err, &k.err_len);
    k.s = session_new(true, k.fout, k.ferr);
    const char *dir = getenv("NH_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/bicycle_model.nh",
             dir ? dir : ".");
    if (session_run_file(k.s, path) != RUN_OK) {
        fflush(k.ferr);
        fail_msg("bicycle_model.nh: %s", k.err);
    }
    bike_run(&k, "equations maggi\n");
    ctx_t *c = session_ctx(k.s);
    diag_t err = {0};
    lower_t *lw = ctx_lowered(c, &err);
    assert_non_null(lw);
    const nh_system_t *sys = lower_system(lw);
    size_t nv = expr_graph_nvars(sys->g), n = sys->n;
    eom_t *sym = prep(sys, EOM_MAGGI, EOM_KIN_BLOCK_MAX);
    eom_t *num = prep(sys, EOM_MAGGI, 0);
    eom_t *mult = prep(sys, EOM_MULTIPLIERS, EOM_KIN_BLOCK_MAX);
    assert_false(sym->kin_numeric);
    assert_true(num->kin_numeric);
    assert_int_equal(sym->kin_k, 5);
    /* no fast path: with the Cramer quotients substituted into G its tape
     * would be 18 times the full path's (mag_fast) */
    assert_null(sym->fast);
    /* blocks: the pitch rate, x', y', then yaw and front spin together */
    const size_t *order, *sizes;
    const expr_t *const *seq;
    assert_int_equal(eom_kin_blocks(sym->kin, &order, &sizes, &seq), 4);
    assert_int_equal(eom_kin_largest_block(sym->kin), 2);

    /* β (q'' at z' = 0) two ways: the dependent entries from the
     * constraints differentiated, solved by ψ_D's blocks (eom_kin_beta:
     * maggi's), and ψ's derivative along q' = ψ */
    const expr_t **dvpsi = eom_dvar(sys, eom_kin_psi(sym->kin));
    const expr_t **bref = calloc(n, sizeof *bref);
    const expr_t **bimp = calloc(n, sizeof *bimp);
    eom_dt_forward(sys->g, eom_kin_psi(sym->kin), n, dvpsi, bref);
    memcpy(bimp, bref, n * sizeof *bimp);
    const size_t *dep;
    assert_int_equal(eom_kin_dependent(sym->kin, &dep), 5);
    for (size_t j = 0; j < 5; j++)
        bimp[dep[j]] = NULL;
    eom_derive_c(sys, &sym->d);
    eom_kin_beta(sym->kin, sym->d.B, sym->d.c, bimp);
    double *vars = calloc(nv, sizeof *vars), *a = calloc(nv, sizeof *a);
    double *b = calloc(nv, sizeof *b), *ref = calloc(nv, sizeof *ref);
    uint64_t seed = 1234;
    double bworst = 0;
    double worst = 0;
    for (int s = 0; s < 60; s++) {
        /* 0-17: upright or within 1e-6 of it, headings 0, pi/2, pi;
         * then leaning and steering up to 0.4 at any heading */
        double psi = s < 18 ? (s % 3) * M_PI / 2 : urand(&seed, -M_PI, M_PI);
        double lean = s < 6 ? 0.0 : s < 18 ? 1e-6 : 0.4;
        char text[512];
        snprintf(text, sizeof text,
                 "initial x = %.17g, y = %.17g, psi = %.17g, phi = %.17g, "
                 "delta = %.17g, thR = %.17g, thF = %.17g, u1 = %.17g, "
                 "u2 = %.17g, u3 = %.17g\n",
                 urand(&seed, -1, 1), urand(&seed, -1, 1), psi,
                 lean * urand(&seed, -1, 1), lean * urand(&seed, -1, 1),
                 urand(&seed, -3, 3), urand(&seed, -3, 3),
                 urand(&seed, -1, 1), urand(&seed, -1, 1),
                 urand(&seed, -20, 0));
        bike_run(&k, text);
        lower_fill_vars(lw, &c->model, vars);
        accel(sym, vars, a, nv);
        accel(num, vars, b, nv);
        /* the multipliers from the q' that `initial` solved for */
        accel(mult, vars, ref, nv);
        for (size_t i = 0; i < n; i++) {
            double d1 = rel(a[sys->qdd[i]], ref[sys->qdd[i]]);
            double d2 = rel(b[sys->qdd[i]], ref[sys->qdd[i]]);
            if (!(d1 < 1e-12) || !(d2 < 1e-12))
                fail_msg("state %d, %s'': symbolic %.17g, numeric %.17g, "
                         "multipliers %.17g",
                         s, sys->qname[i], a[sys->qdd[i]], b[sys->qdd[i]],
                         ref[sys->qdd[i]]);
            worst = fmax(worst, fmax(d1, d2));
            assert_true(rel(a[sys->qd[i]], vars[sys->qd[i]]) < 1e-13);
            assert_true(rel(b[sys->qd[i]], vars[sys->qd[i]]) < 1e-13);
        }
        /* at q' = ψ (a holds it), the two β of each dependent coordinate */
        for (size_t j = 0; j < 5; j++) {
            double x = expr_eval(sys->g, bimp[dep[j]], a);
            double y = expr_eval(sys->g, bref[dep[j]], a);
            double d = fabs(x - y) / fmax(1.0, fabs(y));
            if (!(d < 1e-12))
                fail_msg("state %d, beta of %s: %.17g from the constraints, "
                         "%.17g from psi's derivative",
                         s, sys->qname[dep[j]], x, y);
            bworst = fmax(bworst, d);
        }
    }
    print_message("bicycle: largest relative difference %g, beta %g\n",
                  worst, bworst);
    free(dvpsi);
    free(bref);
    free(bimp);
    eom_free(sym);
    eom_free(num);
    eom_free(mult);
    free(vars);
    free(a);
    free(b);
    free(ref);
    session_free(k.s);
    fclose(k.fout);
    fclose(k.ferr);
    free(k.out);
    free(k.err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sphere_completed),
        cmocka_unit_test(test_trailers_particles),
        cmocka_unit_test(test_disc_kane),
        cmocka_unit_test(test_bicycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
