/*
 * test_steady.c — steady motions and their families (LANGUAGE.md §7.3;
 * interp/analysis/steady.c, follow.c, and the statements of
 * interp/cli/families.c) against closed forms and independent results.
 *
 *   - lin_directions (the derivatives of the motion along any direction,
 *     which Newton's method and the continuation use) equals lin_matrix
 *     on the unit directions, and its derivative along a parameter that
 *     the constraints hold (the bicycle's front wheel radius) equals central
 *     differences of the motion on the constraint manifold;
 *   - the cyclic coordinates are the largest set closed under "their
 *     columns are zero outside their rows", two coordinates that feed
 *     only each other included;
 *   - the bicycle's steady turn is the same under every method that
 *     applies (the speeds of Kane's form named through `thR' = u3`);
 *   - follow on the conical pendulum (ph'^2 cos(th) = g/l) over a
 *     coordinate and over a parameter that a given value holds: every row
 *     on the closed form, the ends exactly at A and B;
 *   - follow on the benchmark bicycle's handlebar-forward family: the
 *     branch point is straight running at the capsize speed of Meijaard
 *     et al. (2007), 6.0242620153883589 m/s; the folds are the extremes of
 *     the lean, at the lean of OBD's fold; the static equilibrium it
 *     reaches has the steer of tests/bicycle_steady_reference.py; the
 *     state is restored;
 *   - on the handlebar-reversed family, its two folds at OBD's leans, and
 *     the rows marked `stable` and `hopf` just past OBD's stability change
 *     and Hopf point.
 * OBD: D. L. Peterson's Open Bicycle Dynamics, github.com/hazelnusse/OBD
 * commit b9e7a27fac335efb11dcec9884e3b4b0fd4cee3b, whose steady-turn
 * equations (whipple/src/whipple_al_steady.cpp lines 146, 177) and
 * equations of motion tests/obd_steady.cc evaluates (see there, and
 * tests/lang/steady_bicycle_obd.nh for the turns themselves).
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

#include "interp/analysis/linearize.h"
#include "interp/analysis/steady.h"
#include "interp/cli/context.h"
#include "interp/cli/session.h"
#include "interp/eom/velocity.h"

typedef struct run {
    session_t *s;
    char *out, *err;
    size_t out_len, err_len;
    FILE *fout, *ferr;
} run_t;

static void run_open(run_t *r, const char *example)
{
    memset(r, 0, sizeof *r);
    r->fout = open_memstream(&r->out, &r->out_len);
    r->ferr = open_memstream(&r->err, &r->err_len);
    r->s = session_new(true, r->fout, r->ferr);
    if (!example)
        return;
    const char *dir = getenv("NH_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/%s", dir ? dir : ".", example);
    if (session_run_file(r->s, path) != RUN_OK) {
        fflush(r->ferr);
        fail_msg("%s: %s", example, r->err);
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

/* A follow's CSV: the header's columns and up to MAXROWS rows of numbers
 * (the point column as text). */
typedef struct table {
    size_t ncols, nrows;
    char titles[16][64];
    double v[4000][16];
    char point[4000][32];
} table_t;

static void parse_table(const char *p, table_t *t)
{
    memset(t, 0, sizeof *t);
    const char *nl = strchr(p, '\n');
    assert_non_null(nl);
    for (const char *c = p; c < nl; t->ncols++) {
        const char *e = memchr(c, ',', (size_t)(nl - c));
        if (!e)
            e = nl;
        snprintf(t->titles[t->ncols], 64, "%.*s", (int)(e - c), c);
        c = e < nl ? e + 1 : nl;
    }
    assert_string_equal(t->titles[t->ncols - 1], "point");
    for (p = nl + 1; *p && t->nrows < 4000; t->nrows++) {
        nl = strchr(p, '\n');
        assert_non_null(nl);
        const char *c = p;
        for (size_t k = 0; k + 1 < t->ncols; k++) {
            char *e;
            t->v[t->nrows][k] = strtod(c, &e);
            assert_true(*e == ',');
            c = e + 1;
        }
        snprintf(t->point[t->nrows], 32, "%.*s", (int)(nl - c), c);
        p = nl + 1;
    }
}

static size_t column(const table_t *t, const char *title)
{
    for (size_t k = 0; k < t->ncols; k++)
        if (strcmp(t->titles[k], title) == 0)
            return k;
    fail_msg("no column %s", title);
    return 0;
}

/* ---- lin_directions ------------------------------------------------------ */

/* The independent variables' rates at VARS with the dependent ones solved
 * from the constraints (given the independent ones: coordinates first,
 * then velocities, as `initial`), into RATE; -1 when that fails. */
static int manifold_rates(const nh_system_t *sys, eom_t *e, lin_t *l,
                          eom_velsolver_t *vs, double *vars, double *rate)
{
    size_t n = sys->n;
    const uint32_t *dep;
    size_t nd = lin_dependent(l, &dep);
    bool *gq = calloc(2 * n + 2, sizeof *gq), *gv = gq + n + 1;
    assert_non_null(gq);
    for (size_t i = 0; i < n; i++) {
        gq[i] = gv[i] = true;
        for (size_t k = 0; k < nd; k++) {
            if (dep[k] == sys->q[i])
                gq[i] = false;
            if (dep[k] == sys->qd[i])
                gv[i] = false;
        }
    }
    diag_t err = {0};
    int rc = eom_velsolver_positions(vs, vars, gq, gq, &err) != 0 ||
                     eom_velsolver_solve(vs, vars, gv, NULL, &err) != 0 ||
                     eom_accel(e, vars, &err) != 0
                 ? -1
                 : 0;
    free(gq);
    if (rc == 0)
        lin_rates(l, vars, rate);
    return rc;
}

static void test_directions(void **state)
{
    (void)state;
    const char *examples[] = {"bicycle_model.nh", "rolling_disk.nh",
                              "chaplygin_sleigh.nh", "spherical_pendulum.nh",
                              "rolling_sphere.nh", "bipendulum.nh"};
    for (size_t x = 0; x < sizeof examples / sizeof *examples; x++) {
        run_t r;
        run_open(&r, examples[x]);
        ctx_t *c = session_ctx(r.s);
        diag_t err = {0};
        lower_t *lw = ctx_lowered(c, &err);
        const nh_system_t *sys = lower_system(lw);
        lin_t *l = ctx_lin(c, SRC_SPAN_NONE, &err);
        assert_non_null(l);
        size_t nv = expr_graph_nvars(sys->g);
        double *vars = calloc(nv + 1, sizeof *vars);
        lower_fill_vars(lw, &c->model, vars);
        assert_int_equal(lin_choose(l, vars, NULL, NULL, NULL, NULL, &err), 0);
        size_t N = lin_size(l);
        const uint32_t *ind = lin_vars(l);
        double *A = calloc(N * N + 1, sizeof *A), *R = calloc(N * N + 1, sizeof *R);
        double *d = calloc(nv * N + 1, sizeof *d);
        assert_int_equal(lin_matrix(l, vars, A, &err), 0);
        for (size_t j = 0; j < N; j++)
            d[(size_t)ind[j] * N + j] = 1;
        assert_int_equal(lin_directions(l, vars, d, N, R, &err), 0);
        double worst = 0, scale = 1;
        for (size_t k = 0; k < N * N; k++)
            scale = fmax(scale, fabs(A[k]));
        for (size_t k = 0; k < N * N; k++)
            worst = fmax(worst, fabs(A[k] - R[k]) / scale);
        if (worst > 1e-13)
            fail_msg("%s: lin_directions differs from lin_matrix by %g",
                     examples[x], worst);
        free(A);
        free(R);
        free(d);
        free(vars);
        run_close(&r);
    }
}

/* Along a parameter that the constraints hold: the bicycle's front wheel
 * radius rF (its contact point moves with it, so do the pitch and the
 * dependent rates), at bicycle_model.nh's leaning state, against central differences
 * of the motion with the dependent variables solved again. */
static void test_parameter_direction(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, "bicycle_model.nh");
    ctx_t *c = session_ctx(r.s);
    diag_t err = {0};
    lower_t *lw = ctx_lowered(c, &err);
    const nh_system_t *sys = lower_system(lw);
    eom_t *e = ctx_eom(c, SRC_SPAN_NONE, &err);
    lin_t *l = ctx_lin(c, SRC_SPAN_NONE, &err);
    eom_velsolver_t *vs = ctx_velsolver(c, &err);
    size_t nv = expr_graph_nvars(sys->g);
    double *vars = calloc(nv + 1, sizeof *vars);
    lower_fill_vars(lw, &c->model, vars);
    assert_int_equal(lin_choose(l, vars, NULL, NULL, NULL, NULL, &err), 0);
    uint32_t pc = UINT32_MAX;
    for (size_t j = 0; j < sys->np; j++)
        if (strcmp(sys->pname[j], "rF") == 0)
            pc = sys->p[j];
    assert_true(pc != UINT32_MAX);
    size_t N = lin_size(l);
    double *d = calloc(nv + 1, sizeof *d), *exact = calloc(N + 1, sizeof *exact);
    d[pc] = 1;
    assert_int_equal(lin_directions(l, vars, d, 1, exact, &err), 0);
    double *v = calloc(nv + 1, sizeof *v), *r1 = calloc(N + 1, sizeof *r1);
    double *r2 = calloc(N + 1, sizeof *r2), *fd = calloc(N + 1, sizeof *fd);
    double c0 = vars[pc];
    for (int half = 0; half < 2; half++) {
        double h = 1e-4 / (1 + half);
        memcpy(v, vars, nv * sizeof *v);
        v[pc] = c0 + h;
        assert_int_equal(manifold_rates(sys, e, l, vs, v, r1), 0);
        memcpy(v, vars, nv * sizeof *v);
        v[pc] = c0 - h;
        assert_int_equal(manifold_rates(sys, e, l, vs, v, r2), 0);
        for (size_t i = 0; i < N; i++) {
            double dd = (r1[i] - r2[i]) / (2 * h);
            fd[i] = half ? (4 * dd - fd[i]) / 3 : dd;
        }
    }
    double scale = 1, worst = 0;
    for (size_t i = 0; i < N; i++)
        scale = fmax(scale, fabs(exact[i]));
    for (size_t i = 0; i < N; i++)
        worst = fmax(worst, fabs(exact[i] - fd[i]) / scale);
    if (worst > 1e-7)
        fail_msg("d(rates)/drF: exact and differences differ by %g", worst);
    /* and the radius matters: the derivative is not trivially zero */
    double big = 0;
    for (size_t i = 0; i < N; i++)
        big = fmax(big, fabs(exact[i]));
    if (!(big > 1e-2))
        fail_msg("d(rates)/drF is only %g", big);
    free(d);
    free(exact);
    free(v);
    free(r1);
    free(r2);
    free(fd);
    free(vars);
    run_close(&r);
}

/* ---- the cyclic coordinates -------------------------------------------------- */

static void test_cyclic_pruning(void **state)
{
    (void)state;
    /* coordinates a, b, c and a velocity w: a and b feed only each other's
     * rows (a' = b, b' = a: both cyclic, though neither column is zero);
     * c feeds w's row (not cyclic); w feeds c's row */
    uint32_t q[3] = {0, 1, 2};
    nh_system_t sys = {0};
    sys.n = 3;
    sys.q = q;
    uint32_t ind[4] = {0, 1, 2, 7};
    double A[16] = {
        0, 1, 0, 0, /* a' */
        1, 0, 0, 0, /* b' */
        0, 0, 0, 1, /* c' */
        0, 0, 3, 0, /* w' */
    };
    bool cyc[4];
    steady_cyclic(&sys, ind, 4, A, cyc);
    assert_true(cyc[0] && cyc[1] && !cyc[2] && !cyc[3]);
    /* a feeds w too: then b, which a's row holds... a is not cyclic, and
     * b feeds a's row (outside the set): not cyclic either */
    A[3 * 4 + 0] = 0.5;
    steady_cyclic(&sys, ind, 4, A, cyc);
    assert_true(!cyc[0] && !cyc[1] && !cyc[2] && !cyc[3]);
    /* rounding in a column (1e-17 of its row) is zero */
    A[3 * 4 + 0] = 3e-17;
    steady_cyclic(&sys, ind, 4, A, cyc);
    assert_true(cyc[0] && cyc[1]);
}

/* ---- one steady turn, every method ------------------------------------------ */

static void test_bicycle_methods_agree(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, "bicycle_model.nh");
    const char *methods[] = {"multipliers", "second_kind", "maggi",
                             "gibbs_appell"};
    double ref[2] = {0, 0};
    for (size_t k = 0; k < 4; k++) {
        char text[256];
        snprintf(text, sizeof text,
                 "equations %s\nsteady phi = 0.1, delta ~ 0.05, thR' ~ -20\n"
                 "print delta, thR', phi'', delta''\n",
                 methods[k]);
        const char *p = run_text(&r, text);
        double v[4];
        for (int i = 0; i < 4; i++) {
            p = strstr(p, " = ") + 3;
            v[i] = strtod(p, NULL);
        }
        assert_true(fabs(v[2]) < 1e-11 && fabs(v[3]) < 1e-11);
        if (k == 0) {
            ref[0] = v[0];
            ref[1] = v[1];
            /* the turn near the capsize speed, steering into the lean */
            assert_true(v[0] > 0.02 && v[0] < 0.04);
            assert_true(-v[1] * 0.3 > 5.9 && -v[1] * 0.3 < 6.03);
        } else if (fabs(v[0] - ref[0]) > 1e-10 * fabs(ref[0]) ||
                   fabs(v[1] - ref[1]) > 1e-10 * fabs(ref[1])) {
            fail_msg("%s: delta %.17g, thR' %.17g; multipliers %.17g, %.17g",
                     methods[k], v[0], v[1], ref[0], ref[1]);
        }
    }
    run_close(&r);
}

/* ---- follow ------------------------------------------------------------------- */

#define PENDULUM                                                          \
    "param m = 1, l = 1, g = 9.81, Om = 3.5\ncoord th, ph\n"              \
    "kinetic T = m*l^2/2*(th'^2 + sin(th)^2*ph'^2)\n"                     \
    "potential V = -m*g*l*cos(th)\n"

static void test_follow_conical(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, NULL);
    run_text(&r, PENDULUM "steady th = 0.2, ph' ~ 3\n");
    table_t *t = malloc(sizeof *t);
    /* over a coordinate */
    parse_table(run_text(&r, "follow th from 0.2 to 1.2 step 0.05: steady "
                             "ph' ~ 3; print ph'^2*cos(th) - g/l\n"),
                t);
    assert_true(t->nrows >= 20);
    size_t cth = column(t, "th"), cph = column(t, "ph'");
    assert_true(t->v[0][cth] == 0.2 && t->v[t->nrows - 1][cth] == 1.2);
    for (size_t k = 0; k < t->nrows; k++) {
        double th = t->v[k][cth], want = sqrt(9.81 / cos(th));
        assert_true(fabs(t->v[k][cph] - want) <= 1e-12 * want);
        assert_true(fabs(t->v[k][2]) <= 1e-11);
        assert_true(k == 0 || th > t->v[k - 1][cth]);
        /* arclength steps of at most 0.05 in (th, ph'/3.13): the chord
         * between two points is the step along the tangent and the
         * corrector's move across it, a few percent more */
        if (k > 0) {
            double dth = th - t->v[k - 1][cth];
            double dph = (t->v[k][cph] - t->v[k - 1][cph]) /
                         fabs(t->v[0][cph]);
            assert_true(hypot(dth, dph) <= 0.05 * 1.05);
        }
        assert_string_equal(t->point[k], "");
    }
    /* over a parameter that a given value holds: the cone at heading
     * rate Om, cos(th) = g/(l Om^2) */
    parse_table(run_text(&r, "follow Om from 3.5 to 6 step 0.1: steady ph' "
                             "= Om, th ~ 0.5; print th''\n"),
                t);
    size_t com = column(t, "Om");
    cth = column(t, "th");
    assert_true(t->v[0][com] == 3.5 && t->v[t->nrows - 1][com] == 6);
    for (size_t k = 0; k < t->nrows; k++) {
        double om = t->v[k][com], want = acos(9.81 / (om * om));
        assert_true(fabs(t->v[k][cth] - want) <= 1e-12);
    }
    /* the state and Om are as they were */
    const char *p = run_text(&r, "print th, ph', Om\n");
    assert_true(strncmp(p, "th = 0.2\nph' = ", 15) == 0);
    assert_true(fabs(strtod(p + 15, NULL) - sqrt(9.81 / cos(0.2))) < 1e-12);
    assert_non_null(strstr(p, "\nOm = 3.5\n"));
    free(t);
    run_close(&r);
}

/* Meijaard et al. (2007), Table 2 (a) / bicycle_steady_reference.py */
#define CAPSIZE 6.0242620153883589
/* tests/bicycle_steady_reference.py: the static equilibrium's steer */
#define STATIC_STEER 1.3397399114909643
/* The folds of Basu-Mandal et al.'s families, printed by tests/obd_steady.cc
 * from OBD b9e7a27 (the lean where the extreme over the steer of OBD's
 * steer torque Ts_s, whipple_al_steady.cpp line 177, is 0; the steer there
 * is the extreme's, good to 1e-8, as a fold's is): the handlebar-forward
 * family's largest lean ... */
#define OBD_FORWARD_FOLD 0.42008925082061233
#define OBD_FORWARD_FOLD_STEER 0.21899397566172785
/* ... and the handlebar-reversed family's largest and, after it, smallest */
#define OBD_REVERSED_FOLD_MAX 0.75375108080259268
#define OBD_REVERSED_FOLD_MAX_STEER 3.3110715511203579
#define OBD_REVERSED_FOLD_MIN 0.62418321110868979
#define OBD_REVERSED_FOLD_MIN_STEER 3.4966475276276627
/* the reversed family's stability change (the least energy along it,
 * where a real eigenvalue crosses 0, to 2e-8) and Hopf point (its complex
 * pair's real part 0, to 1e-9), same source */
#define OBD_REVERSED_STABLE 0.62586974707507292
#define OBD_REVERSED_HOPF 0.81047751932528644

static void test_follow_bicycle(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, "bicycle_model.nh");
    run_text(&r, "let v = -thR'*rR\n");
    table_t *t = malloc(sizeof *t);
    parse_table(run_text(&r, "follow phi from 0.01 to -0.5 step -0.05: steady "
                             "delta ~ 0.003, thR' ~ -20; print v\n"),
                t);
    size_t cphi = column(t, "phi"), cdel = column(t, "delta");
    size_t cv = column(t, "v");
    size_t nbranch = 0, nfold = 0;
    for (size_t k = 0; k < t->nrows; k++) {
        double phi = t->v[k][cphi];
        if (strcmp(t->point[k], "branch") == 0) {
            /* straight running at the capsize speed (either way) */
            nbranch++;
            assert_true(fabs(phi) < 1e-8);
            if (fabs(fabs(t->v[k][cv]) - CAPSIZE) > 1e-6)
                fail_msg("branch at v = %.17g", t->v[k][cv]);
        } else if (strcmp(t->point[k], "fold") == 0) {
            /* the lean turns back: an extreme among its neighbours */
            nfold++;
            assert_true(k > 0 && k + 1 < t->nrows);
            double a = t->v[k - 1][cphi], b = t->v[k + 1][cphi];
            assert_true((phi <= a && phi <= b) || (phi >= a && phi >= b));
            if (fabs(t->v[k][cv]) < 1e-6) {
                /* the static equilibrium, upright */
                assert_true(fabs(phi) < 1e-8);
                assert_true(fabs(fabs(t->v[k][cdel]) - STATIC_STEER) < 1e-9);
            } else if (fabs(fabs(phi) - OBD_FORWARD_FOLD) > 1e-10 ||
                       fabs(fabs(t->v[k][cdel]) - OBD_FORWARD_FOLD_STEER) >
                           1e-7) {
                /* OBD's fold (on either side: the family's mirror image) */
                fail_msg("fold at phi %.17g, delta %.17g", phi,
                         t->v[k][cdel]);
            }
        } else {
            assert_string_equal(t->point[k], "");
        }
    }
    assert_int_equal(nbranch, 2);
    assert_int_equal(nfold, 3);
    /* nothing changed */
    const char *p = run_text(&r, "print phi, thR'\n");
    assert_string_equal(p, "phi = -0.2\nthR' = -15\n");
    free(t);
    run_close(&r);
}

/* The handlebar-reversed family with eigen at each point: Basu-Mandal et
 * al. find a small stable section on it; the rows marked `stable` and
 * `hopf` are where eigen's verdict changes (checked on the eigenvalue
 * columns themselves: none with a positive real part from the `stable`
 * row on, a complex pair with one at the `hopf` row and not before), the
 * first rows past OBD's stability change and Hopf point; its two folds
 * are OBD's. */
static void test_follow_marks(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, "bicycle_model.nh");
    table_t *t = malloc(sizeof *t);
    parse_table(run_text(&r, "follow phi from 0.01 to 1.5 step 0.05: steady "
                             "delta ~ 3.13, thR' ~ -26; eigen phi, delta, "
                             "phi', delta', thR'\n"),
                t);
    size_t re1 = column(t, "re(eig1)");
    size_t cphi = column(t, "phi"), cdel = column(t, "delta");
    long stable = -1, hopf = -1;
    size_t nfold = 0;
    for (size_t k = 0; k < t->nrows; k++) {
        if (strstr(t->point[k], "stable") && !strstr(t->point[k], "unstable"))
            stable = (long)k;
        if (strstr(t->point[k], "hopf"))
            hopf = (long)k;
        if (strstr(t->point[k], "fold")) {
            /* the largest lean first, then the smallest */
            double want = nfold == 0 ? OBD_REVERSED_FOLD_MAX
                                     : OBD_REVERSED_FOLD_MIN;
            double want_del = nfold == 0 ? OBD_REVERSED_FOLD_MAX_STEER
                                         : OBD_REVERSED_FOLD_MIN_STEER;
            if (nfold >= 2 || fabs(t->v[k][cphi] - want) > 1e-10 ||
                fabs(t->v[k][cdel] - want_del) > 1e-7)
                fail_msg("fold %zu at phi %.17g, delta %.17g", nfold,
                         t->v[k][cphi], t->v[k][cdel]);
            nfold++;
        }
    }
    assert_int_equal(nfold, 2);
    assert_true(stable > 0 && hopf > stable);
    /* the first rows past OBD's points (a row is marked where the verdict
     * differs from the previous row's) */
    assert_true(t->v[stable - 1][cphi] < OBD_REVERSED_STABLE &&
                OBD_REVERSED_STABLE < t->v[stable][cphi]);
    assert_true(t->v[hopf - 1][cphi] < OBD_REVERSED_HOPF &&
                OBD_REVERSED_HOPF < t->v[hopf][cphi]);
    /* re(eig1) is the largest real part: positive before the stable row,
     * not after it until the Hopf row, positive there, with its pair */
    double tol = 1e-7 * 30; /* LIN_AXIS_RTOL of A's entries (tens) */
    assert_true(t->v[stable - 1][re1] > tol);
    for (long k = stable; k < hopf; k++)
        assert_true(t->v[k][re1] <= tol);
    assert_true(t->v[hopf][re1] > tol);
    assert_true(fabs(t->v[hopf][re1 + 1]) > 0); /* im(eig1): a pair */
    assert_non_null(strstr(t->point[hopf], "unstable"));
    free(t);
    run_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directions),
        cmocka_unit_test(test_parameter_direction),
        cmocka_unit_test(test_cyclic_pruning),
        cmocka_unit_test(test_bicycle_methods_agree),
        cmocka_unit_test(test_follow_conical),
        cmocka_unit_test(test_follow_bicycle),
        cmocka_unit_test(test_follow_marks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
