/*
 * test_bodies.c — a model written with frames and a body against the same
 * model written by hand (LANGUAGE.md §4.1): examples/rolling_disk_body.nh
 * and examples/rolling_disk.nh, loaded into two sessions, give the same
 * accelerations to 1e-12 at random states, by every method.  The hand
 * model's kinetic energy and constraints were derived on paper (its
 * comments); the body model's come from the frames, the body and the
 * contact point, so the agreement checks the composition of angular
 * velocities, the body's energy, velocity(), the vector constraint and the
 * dropping of its vertical component.  For maggi and gibbs_appell both
 * sessions get the same speeds and kinematic equations (the hand model's
 * rolling velocities).
 *
 * test_body_form: the bodies' M, p and h by Kane's generalized inertia
 * forces (common.c, eom_derive_rotations) against the same objects
 * differentiated from the Lagrangian, at random states.
 */
#include <math.h>
#include <stdbool.h>
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
#include "tests/sys_builder.h"

typedef struct example {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} example_t;

static void model_open(example_t *m, const char *example)
{
    memset(m, 0, sizeof *m);
    m->fout = open_memstream(&m->out, &m->out_len);
    m->ferr = open_memstream(&m->err, &m->err_len);
    m->s = session_new(true, m->fout, m->ferr);
    const char *dir = getenv("NH_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/%s", dir ? dir : ".", example);
    if (session_run_file(m->s, path) != RUN_OK) {
        fflush(m->ferr);
        fail_msg("%s: %s", example, m->err);
    }
}

static void model_close(example_t *m)
{
    session_free(m->s);
    fclose(m->fout);
    fclose(m->ferr);
    free(m->out);
    free(m->err);
}

/* Runs TEXT; the numbers it printed ("TEXT = VALUE" lines) into V (at
 * most N); returns how many. */
static size_t model_run(example_t *m, const char *text, double *v, size_t n)
{
    fflush(m->fout);
    size_t mark = m->out_len;
    fflush(m->ferr);
    size_t emark = m->err_len;
    if (session_run_text(m->s, "<test>", text, strlen(text), false) !=
        RUN_OK) {
        fflush(m->ferr);
        fail_msg("%s\n%s", text, m->err + emark);
    }
    fflush(m->fout);
    size_t k = 0;
    for (const char *p = m->out + mark; (p = strstr(p, " = ")) && k < n;
         p += 3)
        v[k++] = strtod(p + 3, NULL);
    return k;
}

/* Uniform in [lo, hi) from a fixed-seed generator (the same states every
 * run). */
static double uniform(uint64_t *s, double lo, double hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(*s >> 11) * 0x1.0p-53;
}

/* The speeds of the first-kind methods: u1, u2, u3 the Euler angles'
 * rates, and the centre's velocity from the rolling condition (the hand
 * model's constraints solved for x', y'). */
static const char speeds[] =
    "speed u1, u2, u3\n"
    "kinematic phi' = u1\n"
    "kinematic theta' = u2\n"
    "kinematic psi' = u3\n"
    "kinematic x' = r*(u2*sin(phi)*sin(theta) - cos(phi)*(u1*cos(theta) + "
    "u3))\n"
    "kinematic y' = -r*(u2*cos(phi)*sin(theta) + sin(phi)*(u1*cos(theta) + "
    "u3))\n";

/* A session that ran TEXT, a model. */
static void model_open_text(example_t *m, const char *text)
{
    memset(m, 0, sizeof *m);
    m->fout = open_memstream(&m->out, &m->out_len);
    m->ferr = open_memstream(&m->err, &m->err_len);
    m->s = session_new(true, m->fout, m->ferr);
    model_run(m, text, NULL, 0);
}

/* BODY, a rolling disk (as rolling_disk_body.nh), against the hand model
 * rolling_disk.nh: the same accelerations at 25 random states by every
 * method. */
static void disk_against_hand(example_t *body)
{
    example_t hand;
    model_open(&hand, "rolling_disk.nh");
    static const char *const methods[] = {"multipliers", "second_kind",
                                          "voronec",     "naive",
                                          "maggi",       "gibbs_appell"};
    uint64_t seed = 20070718;
    double worst = 0;
    size_t compared = 0;
    for (size_t k = 0; k < sizeof methods / sizeof *methods; k++) {
        if (strcmp(methods[k], "maggi") == 0) {
            model_run(&hand, speeds, NULL, 0);
            model_run(body, speeds, NULL, 0);
        }
        for (int i = 0; i < 25; i++) {
            char text[1024];
            snprintf(text, sizeof text,
                     "equations %s\n"
                     "initial phi = %.17g, theta = %.17g, psi = %.17g, "
                     "x = %.17g, y = %.17g, phi' = %.17g, theta' = %.17g, "
                     "psi' = %.17g\n"
                     "print phi'', theta'', psi'', x'', y''\n",
                     methods[k], uniform(&seed, -3, 3),
                     uniform(&seed, 0.3, 2.8), uniform(&seed, -3, 3),
                     uniform(&seed, -1, 1), uniform(&seed, -1, 1),
                     uniform(&seed, -2, 2), uniform(&seed, -2, 2),
                     uniform(&seed, -5, 5));
            double a[5], b[5];
            assert_int_equal(model_run(&hand, text, a, 5), 5);
            assert_int_equal(model_run(body, text, b, 5), 5);
            for (int j = 0; j < 5; j++) {
                double d = fabs(a[j] - b[j]) /
                           fmax(1.0, fmax(fabs(a[j]), fabs(b[j])));
                if (!(d <= 1e-12))
                    fail_msg("%s, state %d, acceleration %d: hand %.17g, "
                             "body %.17g",
                             methods[k], i, j + 1, a[j], b[j]);
                worst = fmax(worst, d);
                compared++;
            }
        }
    }
    assert_int_equal(compared, 6 * 25 * 5);
    print_message("largest relative difference: %g\n", worst);
    model_close(&hand);
}

static void test_disk_body_against_hand(void **state)
{
    (void)state;
    example_t body;
    model_open(&body, "rolling_disk_body.nh");
    disk_against_hand(&body);
    model_close(&body);
}

/* The rolling contact exactly as LANGUAGE.md §4.1 writes it: the centre
 * at the height r*sin(theta) and the contact point from the geometry,
 * G - r*(N.z - dot(N.z, W.y)*W.y)/norm(...), with W.y the disk's axis.
 * The vertical component of its velocity vanishes where the disk stands
 * (sin(theta) > 0) and not where it would lie on its other side: it is
 * dropped where the motion is (LANGUAGE.md §4), and the disk is the hand
 * model's, by every method. */
static void test_disk_contract_contact(void **state)
{
    (void)state;
    example_t body;
    model_open_text(&body,
                    "param m = 1, r = 0.5, g = 9.81\n"
                    "coord phi, theta, psi, x, y\n"
                    "frame N\n"
                    "frame A from N about z by phi\n"
                    "frame B from A about x by theta\n"
                    "frame C from B about z by psi\n"
                    "frame W from C about x by pi/2\n"
                    "let G = [x, y, r*sin(theta)]\n"
                    "let Q = G - r*(N.z - dot(N.z, W.y)*W.y)/norm(N.z - "
                    "dot(N.z, W.y)*W.y)\n"
                    "body disk mass m at G frame W inertia [m*r^2/4, "
                    "m*r^2/2, m*r^2/4]\n"
                    "gravity [0, 0, -g]\n"
                    "constraint roll: velocity(Q, disk) = [0, 0, 0]\n");
    disk_against_hand(&body);
    model_close(&body);
}

/* A model declared one statement at a time extends its lowering with each
 * frame, body, load and vector constraint (lower_extend); a new parameter
 * lowers it whole again (lower_model).  The two must be the same system:
 * the same accelerations and multipliers, to the last bit, by every
 * method, on the bicycle (nine frames, four bodies, vector constraints
 * with a dropped component, a Kane form). */
static void test_extension_is_full_lowering(void **state)
{
    (void)state;
    example_t bike;
    model_open(&bike, "bicycle_model.nh");
    static const char *const methods[] = {"multipliers", "second_kind",
                                          "maggi", "gibbs_appell"};
    static const char probe[] =
        "initial phi = 0.3, x = 0.2, psi = -0.4, phi' = 0.5, delta' = 0.9, "
        "thR' = -12\n"
        "print x'', y'', psi'', phi'', theta'', delta'', thR'', thF''\n";
    static const char lambdas[] =
        "print lambda(pitch), lambda(rear[1]), lambda(rear[2]), "
        "lambda(front[1]), lambda(front[2])\n";
    for (size_t k = 0; k < sizeof methods / sizeof *methods; k++) {
        bool mult = k < 2; /* the methods with multipliers */
        char text[64];
        snprintf(text, sizeof text, "equations %s\n", methods[k]);
        model_run(&bike, text, NULL, 0);
        double a[13], b[13];
        size_t na = model_run(&bike, probe, a, 8);
        if (mult)
            na += model_run(&bike, lambdas, a + 8, 5);
        /* the inertial frame declared again replaces it: the whole
         * model is lowered (a new parameter would extend the lowering) */
        model_run(&bike, "frame N\n", NULL, 0);
        size_t nb = model_run(&bike, probe, b, 8);
        if (mult)
            nb += model_run(&bike, lambdas, b + 8, 5);
        assert_int_equal(na, mult ? 13 : 8);
        assert_int_equal(nb, na);
        for (size_t j = 0; j < na; j++)
            if (memcmp(&a[j], &b[j], sizeof a[j]) != 0 &&
                !(isnan(a[j]) && isnan(b[j])))
                fail_msg("%s, value %zu: extended %.17g, whole %.17g",
                         methods[k], j + 1, a[j], b[j]);
    }
    model_close(&bike);

    /* Gravity first: the bodies and particles declared after it extend
     * the lowering with their weights; a let after a vector constraint. */
    example_t m;
    memset(&m, 0, sizeof m);
    m.fout = open_memstream(&m.out, &m.out_len);
    m.ferr = open_memstream(&m.err, &m.err_len);
    m.s = session_new(true, m.fout, m.ferr);
    model_run(&m,
              "param g = 9.81, r = 0.4\n"
              "coord a, b, x, y\n"
              "frame N\n"
              "gravity [0, 0, -g]\n"
              "frame A from N about z by a\n"
              "frame B from A about [1, 1, 0] by b\n"
              "particle P mass 0.5 at [x, y, r*cos(b)]\n"
              "body arm mass 2 at [x, y, 0] + r*B.z frame B inertia [0.1, "
              "0.2, 0.3, 0.01, 0.02, 0.03]\n"
              "force arm at [x, y, 0] + r*B.x = [1, 2, 3]\n"
              "torque arm = [0.1, -0.2, 0.3]\n"
              "constraint c: velocity([x, y, 0], arm) = [0, 0, 0]\n"
              "let spin = on(B, omega(B))\n",
              NULL, 0);
    static const char probe2[] =
        "initial a = 0.3, b = 0.7, x = 0.2, y = -0.1, a' = 0.4, b' = -0.3\n"
        "print a'', b'', x'', y'', lambda(c[1]), lambda(c[2]), spin[1]\n";
    double a[7], b[7];
    assert_int_equal(model_run(&m, probe2, a, 7), 7);
    model_run(&m, "frame N\n", NULL, 0);
    assert_int_equal(model_run(&m, probe2, b, 7), 7);
    for (size_t j = 0; j < 7; j++)
        if (memcmp(&a[j], &b[j], sizeof a[j]) != 0)
            fail_msg("value %zu: extended %.17g, whole %.17g", j + 1, a[j],
                     b[j]);
    model_close(&m);
}

/* A model declared one statement at a time, frames, bodies, a particle,
 * loads and a vector constraint interleaved with parameters and
 * coordinates (each declaration extends the session's lowering: a new
 * variable is declared last, a particle after a body is summed apart
 * from the bodies), against the same model lowered at once (the inertial
 * frame declared again replaces it): bit-identical accelerations and
 * multipliers, by each method that takes the constraints as they are. */
static void test_interleaved_is_full_lowering(void **state)
{
    (void)state;
    example_t m;
    memset(&m, 0, sizeof m);
    m.fout = open_memstream(&m.out, &m.out_len);
    m.ferr = open_memstream(&m.err, &m.err_len);
    m.s = session_new(true, m.fout, m.ferr);
    static const char *const stmts[] = {
        "param g = 9.81\n",
        "coord a\n",
        "frame N\n",
        "gravity [0, 0, -g]\n",
        "frame A from N about z by a\n",
        "param r = 0.4\n",
        "coord b\n",
        "frame B from A about [1, 1, 0] by b\n",
        "param m = 2, I = 0.1\n",
        "coord x, y\n",
        "body arm mass m at [x, y, 0] + r*B.z frame B inertia [I, 2*I, "
        "3*I, 0.01, 0.02, 0.03]\n",
        "coord z\n",
        "param mp = 0.5\n",
        "particle P mass mp at [x + r*cos(a), y, z]\n",
        "speed u\n",
        "param F = 1\n",
        "force arm at [x, y, 0] + r*B.x = [F, 2, 3]\n",
        "torque arm = [0.1, -0.2, 0.3]\n",
        "force P = [0, F, -F]\n",
        "constraint c: velocity([x, y, 0] + r*B.x, arm) = [0, 0, 0]\n",
        "let spin = on(B, omega(B))\n",
        "param k = 3\n",
        "let e = k*spin[1] + u\n",
        NULL};
    for (size_t i = 0; stmts[i]; i++)
        model_run(&m, stmts[i], NULL, 0);
    static const char *const methods[] = {"multipliers", "second_kind"};
    static const char probe[] =
        "initial a = 0.3, b = 0.7, x = 0.2, y = -0.1, z = 0.5, a' = 0.4, "
        "z' = 0.2\n"
        "print a'', b'', x'', y'', z'', lambda(c[1]), lambda(c[2]), "
        "lambda(c[3]), e\n";
    enum { NV = 9 };
    for (size_t k = 0; k < sizeof methods / sizeof *methods; k++) {
        char text[64];
        snprintf(text, sizeof text, "equations %s\n", methods[k]);
        model_run(&m, text, NULL, 0);
        double a[NV], b[NV];
        assert_int_equal(model_run(&m, probe, a, NV), NV);
        model_run(&m, "frame N\n", NULL, 0);
        assert_int_equal(model_run(&m, probe, b, NV), NV);
        for (size_t j = 0; j < NV; j++) {
            assert_true(isfinite(a[j]));
            if (memcmp(&a[j], &b[j], sizeof a[j]) != 0)
                fail_msg("%s, value %zu: extended %.17g, whole %.17g",
                         methods[k], j + 1, a[j], b[j]);
        }
    }
    model_close(&m);
}

/* Frames redeclared so that each turns from one declared after it: the
 * lowering follows the chain one frame inside another, and a chain longer
 * than the nesting limit is an error, not a stack overflow. */
static void test_frame_chain_limit(void **state)
{
    (void)state;
    FILE *out = fopen("/dev/null", "w"), *err;
    char *etext = NULL;
    size_t elen = 0;
    err = open_memstream(&etext, &elen);
    session_t *s = session_new(true, out, err);
    enum { K = 260 };
    size_t cap = 64 * K + 64, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len, "coord a\nframe N\n");
    for (int i = 1; i <= K; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "frame G%d from N about z by a\n", i);
    for (int i = 1; i < K; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "frame G%d from G%d about x by a\n", i,
                                i + 1);
    assert_int_equal(session_run_text(s, "<chain>", text, len, false),
                     RUN_ERROR);
    fflush(err);
    const char *want = "frames nested too deeply (more than 200 levels)";
    assert_non_null(strstr(etext, want));
    session_free(s);
    fclose(out);
    fclose(err);
    free(etext);
    free(text);
}

/* The size of the graph (nodes plus edges) after declaring N bodies, each
 * on its own frame of one chain (frames turned about x and y in turn,
 * each body at its frame's x axis), one statement each; and after the
 * equations (accel) when ACCEL. */
static size_t chain_work(int n, bool accel)
{
    FILE *out = fopen("/dev/null", "w");
    session_t *s = session_new(true, out, out);
    strbuf_t b;
    strbuf_init(&b);
    strbuf_add(&b, "coord q, r\nframe N\nframe F0 from N about z by q\n");
    for (int i = 1; i < n; i++)
        strbuf_addf(&b, "frame F%d from F%d about %s\n", i, i - 1,
                    i % 2 ? "y by r" : "x by q");
    for (int i = 0; i < n; i++)
        strbuf_addf(&b, "body B%d mass 1 at F%d.x frame F%d inertia [1, 2, 3]\n",
                    i, i, i);
    if (accel)
        strbuf_add(&b, "accel\n");
    assert_int_equal(session_run_text(s, "<chain>", b.data, b.len, false),
                     RUN_OK);
    diag_t err = {0};
    lower_t *lw = ctx_lowered(session_ctx(s), &err);
    expr_graph_t *g = lower_graph(lw);
    size_t size = expr_graph_count(g) + expr_graph_edges(g);
    strbuf_free(&b);
    session_free(s);
    fclose(out);
    return size;
}

/* Bodies on a chain of frames cost work in proportion to their number
 * (issue 31: each body primed its whole chain again, the composed
 * angular velocities and the sum of the energies grew by a term a body,
 * so that 4000 bodies took 51 s): the graph, which is what the work
 * makes, doubles when the bodies do, declared and derived (it grew
 * 3.4-fold a doubling).  Counted, not timed. */
static void test_chain_work_linear(void **state)
{
    (void)state;
    for (int accel = 0; accel < 2; accel++) {
        size_t a = chain_work(200, accel), b = chain_work(400, accel);
        print_message("bodies on a chain%s: 200: %zu, 400: %zu (%.2f)\n",
                      accel ? ", with the equations" : "", a, b,
                      (double)b / (double)a);
        assert_true((double)b < 2.1 * (double)a);
    }
}

/* ---- M, p and h of bodies -------------------------------------------------- */

/* The derivation of p, M, h0 and h through the bodies (their centres as
 * particles, their rotations by Euler's equations projected on the
 * partial angular velocities) against the derivation from L, whose
 * second derivatives read the same kinetic energy: two roads to the same
 * objects, held to each other at 20 random states.  Returns the largest
 * relative difference. */
static double body_form_agrees(const char *text, const char *what)
{
    FILE *out = fopen("/dev/null", "w");
    session_t *s = session_new(true, out, out);
    if (session_run_text(s, "<body form>", text, strlen(text), false) !=
        RUN_OK)
        fail_msg("%s: the model did not run", what);
    diag_t err = {0};
    lower_t *lw = ctx_lowered(session_ctx(s), &err);
    assert_non_null(lw);
    const nh_system_t *sys = lower_system(lw);
    assert_true(sys->T_only_bodies);
    assert_true(eom_particle_form(sys));
    double *vars = calloc(expr_graph_nvars(sys->g), sizeof *vars);
    lower_fill_vars(lw, &session_ctx(s)->model, vars);
    char where[256];
    double worst = sb_forms_differ(sys, vars, 0xb0d1e5, 20, where,
                                   sizeof where);
    if (!(worst <= 1e-12))
        fail_msg("%s: by the bodies, %s", what, where);
    free(vars);
    session_free(s);
    fclose(out);
    return worst;
}

/* examples/bicycle_model.nh up to its starting state (the model and its
 * Kane form). */
static char *bicycle_model(void)
{
    const char *dir = getenv("NH_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/bicycle_model.nh",
             dir ? dir : ".");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *text = calloc(1 << 16, 1);
    size_t got = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[got] = 0;
    char *state = strstr(text, "\n# A state to start from");
    assert_non_null(state);
    state[1] = 0;
    return text;
}

static void test_body_form(void **state)
{
    (void)state;
    char *bike = bicycle_model();
    print_message("bicycle: %g\n", body_form_agrees(bike, "bicycle"));
    free(bike);
    /* What the bicycle lacks: a frame turned with time and about an
     * oblique axis, a body on a coordinate-free frame, products of
     * inertia in every place, a particle beside the bodies, a force and a
     * torque on a body, a potential of its own. */
    static const char zoo[] =
        "param m1 = 1.3, m2 = 0.7, mp = 0.4, w = 0.9, k = 2, g = 9.81\n"
        "coord a, b, c, x\n"
        "frame N\n"
        "frame A from N about z by w*t + a\n"
        "frame B from A about [1, 2, 2] by b\n"
        "frame C from B about x by c - t^2/3\n"
        "frame D from N about y by 0.3\n"
        "let G1 = [x, 0.2*a, 0.1] + 0.5*A.x - 0.3*B.z\n"
        "let G2 = G1 + 0.4*C.y + 0.2*C.z\n"
        "body one mass m1 at G1 frame B inertia [0.3, 0.4, 0.5, 0.02, -0.03, 0.05]\n"
        "body two mass m2 at G2 frame C inertia [0.2, 0.25, 0.1]\n"
        "body still mass m2 at [x, 0, 0] frame D inertia [0.1, 0.1, 0.2, 0.01, 0, 0]\n"
        "particle P mass mp at G2 + [0, 0, c]\n"
        "gravity [0, 0, -g]\n"
        "potential V = k/2*x^2 + k*cos(b)\n"
        "force two at G2 + C.x = [0.1*x', -0.2, c]\n"
        "torque one = [0, 0.3*a', -0.1]\n";
    print_message("zoo: %g\n", body_form_agrees(zoo, "zoo"));
    /* A chain (bench/nchain.sh's, 12 bodies): its bodies share their
     * partial angular velocities, and the rotations are summed by groups
     * on the inertial axes (2 x 78 groups + 10 x 12 < 364 body pairs). */
    char *chain = malloc(1 << 14);
    size_t len = (size_t)snprintf(
        chain, 1 << 14,
        "param m = 1, l = 0.5, g = 9.81, I1 = 0.01, I2 = 0.02, I3 = 0.025\n"
        "coord x, y, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12\n"
        "frame N\nframe F1 from N about z by q1\n"
        "let P0 = [x, y, 0]\nlet P1 = P0 + l*F1.x\n"
        "body b1 mass m at P0 + l/2*F1.x frame F1 inertia [I1, I2, I3]\n");
    for (int i = 2; i <= 12; i++)
        len += (size_t)snprintf(
            chain + len, (1 << 14) - len,
            "frame F%d from F%d about %c by q%d\nlet P%d = P%d + l*F%d.x\n"
            "body b%d mass m + 0.1*%d at P%d + l/2*F%d.x frame F%d inertia "
            "[I1, I2, I3, 0.001, 0, 0.002]\n",
            i, i - 1, i % 2 ? 'x' : 'y', i, i, i - 1, i, i, i, i - 1, i, i);
    snprintf(chain + len, (1 << 14) - len,
             "gravity [0, 0, -g]\n"
             "constraint knife: dot(velocity(P0, b1), F1.y) = 0\n");
    print_message("chain: %g\n", body_form_agrees(chain, "chain"));
    free(chain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disk_body_against_hand),
        cmocka_unit_test(test_disk_contract_contact),
        cmocka_unit_test(test_extension_is_full_lowering),
        cmocka_unit_test(test_interleaved_is_full_lowering),
        cmocka_unit_test(test_frame_chain_limit),
        cmocka_unit_test(test_chain_work_linear),
        cmocka_unit_test(test_body_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
