/*
 * test_stability.c — `linearize`, `eigen` and `sweep` (LANGUAGE.md §7.2)
 * against published results.
 *
 * The benchmark bicycle (examples/bicycle_model.nh, Meijaard, Papadopoulos,
 * Ruina & Schwab, Proc. R. Soc. A 463 (2007) 1955–1982): running upright
 * at speed v, its motion linearized in roll phi, steer delta and their
 * rates is (their eq. 5.4, with their eq. 2)
 *
 *     d/dt [q; q'] = [0, I; −M⁻¹(g K0 + v² K2), −v M⁻¹ C1] [q; q'],
 *
 * with M, C1, K0, K2 from the parameters of their Table 1 by the formulas
 * of their Appendix A, written out below independently of nh (nh derives
 * the bicycle from its four rigid bodies and rolling constraints, with
 * no linearization anywhere).  The formulas are first checked against
 * the matrices the paper prints (§5: M = [80.81722 2.31941332208709; ...]),
 * which examples/bicycle.nh quotes.  Then, at v = 0, 1, ..., 10 m/s:
 * nh's 4×4 `linearize phi, delta, phi', delta'` equals that matrix, and
 * its `eigen` equals the eigenvalues of their Table 2 to 1e-12.
 *
 * Table 2's values are those transcribed in
 * hazelnusse/libbicycle, src/tests/benchmark_eigenvalues.h (D. L.
 * Peterson's tests of his own bicycle model against the paper), each
 * with the 14 decimals the paper prints; the weave and capsize speeds
 * (Table 2 (a), 4.29238253634111 and 6.02426201538837) as in the same
 * author's gtest of the paper's table.
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
#include "interp/cli/session.h"

/* ---- the paper's Appendix A -------------------------------------------- */

typedef struct bench_matrices {
    double M[2][2], C1[2][2], K0[2][2], K2[2][2];
} bench_matrices_t;

/* Meijaard et al. (2007) Appendix A, eqs. (A1)–(A24), for the parameters
 * of their Table 1 (the same numbers as examples/bicycle_model.nh). */
static void appendix_a(bench_matrices_t *b)
{
    const double w = 1.02, c = 0.08, lam = M_PI / 10;
    const double rR = 0.3, mR = 2, IRxx = 0.0603, IRyy = 0.12;
    const double xB = 0.3, zB = -0.9, mB = 85, IBxx = 9.2, IBzz = 2.8,
                 IBxz = 2.4;
    const double xH = 0.9, zH = -0.7, mH = 4, IHxx = 0.05892,
                 IHzz = 0.00708, IHxz = -0.00756;
    const double rF = 0.35, mF = 3, IFxx = 0.1405, IFyy = 0.28;
    double sl = sin(lam), cl = cos(lam);
    /* the whole bicycle: (A1)–(A7) */
    double mT = mR + mB + mH + mF;
    double xT = (xB * mB + xH * mH + w * mF) / mT;
    double zT = (-rR * mR + zB * mB + zH * mH - rF * mF) / mT;
    double ITxx = IRxx + IBxx + IHxx + IFxx + mR * rR * rR + mB * zB * zB +
                  mH * zH * zH + mF * rF * rF;
    double ITxz = IBxz + IHxz - mB * xB * zB - mH * xH * zH + mF * w * rF;
    double IRzz = IRxx, IFzz = IFxx;
    double ITzz = IRzz + IBzz + IHzz + IFzz + mB * xB * xB + mH * xH * xH +
                  mF * w * w;
    /* the front assembly: (A8)–(A14) */
    double mA = mH + mF;
    double xA = (xH * mH + w * mF) / mA, zA = (zH * mH - rF * mF) / mA;
    double IAxx = IHxx + IFxx + mH * (zH - zA) * (zH - zA) +
                  mF * (rF + zA) * (rF + zA);
    double IAxz = IHxz - mH * (xH - xA) * (zH - zA) +
                  mF * (w - xA) * (rF + zA);
    double IAzz = IHzz + IFzz + mH * (xH - xA) * (xH - xA) +
                  mF * (w - xA) * (w - xA);
    double uA = (xA - w - c) * cl - zA * sl;
    double IAll = mA * uA * uA + IAxx * sl * sl + 2 * IAxz * sl * cl +
                  IAzz * cl * cl;
    double IAlx = -mA * uA * zA + IAxx * sl + IAxz * cl;
    double IAlz = mA * uA * xA + IAxz * sl + IAzz * cl;
    /* (A15)–(A17) */
    double mu = c / w * cl;
    double SR = IRyy / rR, SF = IFyy / rF, ST = SR + SF;
    double SA = mA * uA + mu * mT * xT;
    /* (A18)–(A24) */
    b->M[0][0] = ITxx;
    b->M[0][1] = b->M[1][0] = IAlx + mu * ITxz;
    b->M[1][1] = IAll + 2 * mu * IAlz + mu * mu * ITzz;
    b->K0[0][0] = mT * zT;
    b->K0[0][1] = b->K0[1][0] = -SA;
    b->K0[1][1] = -SA * sl;
    b->K2[0][0] = 0;
    b->K2[0][1] = (ST - mT * zT) / w * cl;
    b->K2[1][0] = 0;
    b->K2[1][1] = (SA + SF * sl) / w * cl;
    b->C1[0][0] = 0;
    b->C1[0][1] = mu * ST + SF * cl + ITxz / w * cl - mu * mT * zT;
    b->C1[1][0] = -(mu * ST + SF * cl);
    b->C1[1][1] = IAlz / w * cl + mu * (SA + ITzz / w * cl);
}

/* The formulas give the matrices printed in the paper's §5 (quoted by
 * examples/bicycle.nh: M11, M12, ..., L22 there; K2 is its L). */
static void test_appendix_a_matches_the_paper(void **state)
{
    (void)state;
    bench_matrices_t b;
    appendix_a(&b);
    const double want[][3] = {
        {b.M[0][0], 80.81722, 0},
        {b.M[0][1], 2.31941332208709, 0},
        {b.M[1][1], 0.29784188199686, 0},
        {b.C1[0][1], 33.86641391492494, 0},
        {b.C1[1][0], -0.85035641456978, 0},
        {b.C1[1][1], 1.68540397397560, 0},
        {b.K0[0][0], -80.95, 0},
        {b.K0[0][1], -2.59951685249872, 0},
        {b.K0[1][1], -0.80329488458618, 0},
        {b.K2[0][1], 76.59734589573222, 0},
        {b.K2[1][1], 2.65431523794604, 0},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        if (!(fabs(want[k][0] - want[k][1]) <= 1e-13 * fmax(1, fabs(want[k][1]))))
            fail_msg("entry %zu: formula %.17g, paper %.17g", k, want[k][0],
                     want[k][1]);
}

/* ---- nh ----------------------------------------------------------------- */

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

/* Runs TEXT; what it printed (from the run's output, up to its end). */
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

/* The numbers of line P (up to its newline) into X, at most N; their
 * count.  "[a, b]" and "eig2 = a - b*i" both read as numbers in order,
 * with the sign of the imaginary part. */
static size_t line_numbers(const char *p, double *x, size_t n)
{
    size_t k = 0;
    const char *end = strchr(p, '\n');
    if (!end)
        end = p + strlen(p);
    if (strncmp(p, "eig", 3) == 0)
        p = strstr(p, " = ") + 3;
    double sign = 1;
    while (p < end && k < n) {
        char *q;
        double v = strtod(p, &q);
        if (q == p) {
            if (*p == '-' && p[1] == ' ')
                sign = -1;
            p++;
            continue;
        }
        x[k++] = sign * v;
        sign = 1;
        p = q;
    }
    return k;
}

static const char *next_line(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? nl + 1 : p + strlen(p);
}

/* Table 2 (b, c) of the paper: the eigenvalues at v = 0, ..., 10 (real,
 * imaginary), in the order of LANGUAGE.md §7.2 (decreasing real part,
 * then decreasing imaginary part). */
static const double table2[11][4][2] = {
    {{5.53094371765393, 0}, {3.13164324790656, 0},
     {-3.13164324790656, 0}, {-5.53094371765393, 0}},
    {{3.52696170990070, 0.80774027519930}, {3.52696170990070, -0.80774027519930},
     {-3.13423125066578, 0}, {-7.11008014637442, 0}},
    {{2.68234517512745, 1.68066296590675}, {2.68234517512745, -1.68066296590675},
     {-3.07158645641514, 0}, {-8.67387984831735, 0}},
    {{1.70675605663975, 2.31582447384325}, {1.70675605663975, -2.31582447384325},
     {-2.63366137253667, 0}, {-10.35101467245920, 0}},
    {{0.41325331521125, 3.07910818603206}, {0.41325331521125, -3.07910818603206},
     {-1.42944427361326, 0}, {-12.15861426576450, 0}},
    {{-0.32286642900409, 0}, {-0.77534188219585, 4.46486771378823},
     {-0.77534188219585, -4.46486771378823}, {-14.07838969279820, 0}},
    {{-0.00406690076970, 0}, {-1.52644486584142, 5.87673060598709},
     {-1.52644486584142, -5.87673060598709}, {-16.08537123098030, 0}},
    {{0.10268170574766, 0}, {-2.13875644258362, 7.19525913329805},
     {-2.13875644258362, -7.19525913329805}, {-18.15788466125262, 0}},
    {{0.14327879765713, 0}, {-2.69348683581097, 8.46037971396931},
     {-2.69348683581097, -8.46037971396931}, {-20.27940894394569, 0}},
    {{0.15790184030917, 0}, {-3.21675402252485, 9.69377351531791},
     {-3.21675402252485, -9.69377351531791}, {-22.43788559040858, 0}},
    {{0.16105338653172, 0}, {-3.72016840437287, 10.90681139476287},
     {-3.72016840437287, -10.90681139476287}, {-24.62459635017404, 0}},
};

/* The same eigenvalues to 17 digits, from the Appendix A matrices in
 * 40-digit arithmetic (mpmath, mp.dps = 40: the formulas of appendix_a,
 * then mpmath.eig of [0, I; −M⁻¹(g K0 + v² K2), −v M⁻¹ C1]).  The
 * paper's own values agree with them to 6e-13 (v = 7, castering:
 * −18.15788466125262 printed, −18.157884661252021 exact): these pin nh
 * closer than the printed table can. */
static const double exact[11][4][2] = {
    {{5.5309437176539342, 0}, {3.1316432479065557, 0}, {-3.1316432479065557, 0}, {-5.5309437176539342, 0}},
    {{3.5269617099006942, 0.80774027519931002}, {3.5269617099006942, -0.80774027519931002}, {-3.1342312506657843, 0}, {-7.1100801463744077, 0}},
    {{2.6823451751274536, 1.6806629659067578}, {2.6823451751274536, -1.6806629659067578}, {-3.0715864564151425, 0}, {-8.6738798483173714, 0}},
    {{1.7067560566397351, 2.3158244738432434}, {1.7067560566397351, -2.3158244738432434}, {-2.6336613725366531, 0}, {-10.351014672459229, 0}},
    {{0.41325331521124131, 3.0791081860320535}, {0.41325331521124131, -3.0791081860320535}, {-1.4294442736132575, 0}, {-12.15861426576444, 0}},
    {{-0.32286642900408707, 0}, {-0.77534188219584188, 4.4648677137882249}, {-0.77534188219584188, -4.4648677137882249}, {-14.078389692798247, 0}},
    {{-0.0040669007697033627, 0}, {-1.5264448658414171, 5.8767306059870839}, {-1.5264448658414171, -5.8767306059870839}, {-16.085371230980282, 0}},
    {{0.10268170574766416, 0}, {-2.1387564425836341, 7.1952591332980429}, {-2.1387564425836341, -7.1952591332980429}, {-18.157884661252019, 0}},
    {{0.1432787976571295, 0}, {-2.6934868358109476, 8.4603797139693366}, {-2.6934868358109476, -8.4603797139693366}, {-20.279408943945661, 0}},
    {{0.15790184030917298, 0}, {-3.2167540225249076, 9.6937735153178224}, {-3.2167540225249076, -9.6937735153178224}, {-22.437885590408591, 0}},
    {{0.16105338653171555, 0}, {-3.7201684043728758, 10.906811394762881}, {-3.7201684043728758, -10.906811394762881}, {-24.624596350173999, 0}},
};

/* The upright bicycle at speed v: the given rates are roll, steer and the
 * rear wheel's (so the others are the dependent ones), the pitch theta
 * is the coordinate the pitch constraint determines (`~`). */
#define UPRIGHT "initial theta ~ 0, phi' = 0, delta' = 0, thR' = -v/rR"

static void test_bicycle_against_the_benchmark(void **state)
{
    (void)state;
    bench_matrices_t b;
    appendix_a(&b);
    const double g = 9.81;
    run_t r;
    run_open(&r, "bicycle_model.nh");
    run_text(&r, "param v = 5\n");
    double worst_a = 0, worst_eig = 0, worst_exact = 0;
    for (int v = 0; v <= 10; v++) {
        char text[512];
        snprintf(text, sizeof text,
                 "set v = %d\n" UPRIGHT "\n"
                 "linearize phi, delta, phi', delta'\n"
                 "eigen phi, delta, phi', delta'\n",
                 v);
        const char *p = run_text(&r, text);
        assert_true(strncmp(p, "dependent: theta, ", 18) == 0);
        p = next_line(p);
        assert_true(strncmp(p, "variables: phi, delta, phi', delta'\n",
                            36) == 0);
        p = next_line(p);
        /* A's rows, against [0, I; −M⁻¹(g K0 + v² K2), −v M⁻¹ C1] */
        double A[4][4];
        for (int i = 0; i < 4; i++) {
            assert_int_equal(line_numbers(p, A[i], 4), 4);
            p = next_line(p);
        }
        double det = b.M[0][0] * b.M[1][1] - b.M[0][1] * b.M[1][0];
        double Mi[2][2] = {{b.M[1][1] / det, -b.M[0][1] / det},
                           {-b.M[1][0] / det, b.M[0][0] / det}};
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                double k = 0, c = 0;
                for (int l = 0; l < 2; l++) {
                    k -= Mi[i][l] * (g * b.K0[l][j] + v * v * b.K2[l][j]);
                    c -= Mi[i][l] * v * b.C1[l][j];
                }
                /* the first two rows: exactly q' */
                assert_true(A[i][j] == 0 && A[i][2 + j] == (i == j));
                double ek = fabs(A[2 + i][j] - k) / fmax(1, fabs(k));
                double ec = fabs(A[2 + i][2 + j] - c) / fmax(1, fabs(c));
                worst_a = fmax(worst_a, fmax(ek, ec));
            }
        /* the eigenvalues, against Table 2 */
        for (int k = 0; k < 4; k++) {
            double e[2] = {0, 0};
            size_t ne = line_numbers(p, e, 2);
            assert_true(ne >= 1);
            for (int c = 0; c < 2; c++)
            {
                worst_eig = fmax(worst_eig, fabs(e[c] - table2[v][k][c]));
                worst_exact = fmax(worst_exact, fabs(e[c] - exact[v][k][c]) /
                                                    fmax(1, fabs(exact[v][k][c])));
            }
            p = next_line(p);
        }
        /* the verdict: unstable below the weave speed and above the
         * capsize speed, asymptotically stable between (Table 2 (a)) */
        bool stable = v >= 5 && v <= 6;
        assert_true(strncmp(p, stable ? "asymptotically stable" : "unstable",
                            stable ? 21 : 8) == 0);
    }
    print_message("  worst relative error of A: %.3g; of the eigenvalues: "
                  "%.3g against Table 2, %.3g relative against the exact "
                  "ones\n",
                  worst_a, worst_eig, worst_exact);
    assert_true(worst_a <= 1e-12);
    assert_true(worst_eig <= 1e-12);
    assert_true(worst_exact <= 1e-13);
    run_close(&r);
}

/* A sweep from 0 to 10 m/s in steps of 0.01 brackets the weave speed
 * (where the weave pair's real part falls through 0) and the capsize
 * speed (where the capsize eigenvalue rises through 0) between
 * consecutive values: the largest real part changes sign there and
 * nowhere else above the castering bifurcation. */
static void test_bicycle_sweep_brackets_the_speeds(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, "bicycle_model.nh");
    run_text(&r, "param v = 5\n");
    const char *p = run_text(
        &r, "sweep v from 0 to 10 step 0.01: " UPRIGHT
            "; eigen phi, delta, phi', delta'\n");
    assert_true(strncmp(p, "v,re(eig1),im(eig1),", 20) == 0);
    p = next_line(p);
    double prev_v = 0, prev_max = 0, weave = -1, capsize = -1;
    size_t rows = 0, changes = 0;
    while (*p) {
        double x[9];
        assert_int_equal(line_numbers(p, x, 9), 9);
        double mx = fmax(fmax(x[1], x[3]), fmax(x[5], x[7]));
        assert_true(mx == x[1]); /* the first is the largest */
        if (rows > 0 && (mx > 0) != (prev_max > 0)) {
            changes++;
            if (mx < 0)
                weave = prev_v;
            else
                capsize = prev_v;
        }
        prev_v = x[0];
        prev_max = mx;
        rows++;
        p = next_line(p);
    }
    assert_int_equal(rows, 1001);
    assert_int_equal(changes, 2);
    assert_true(fabs(weave - 4.29) < 1e-9 && fabs(capsize - 6.02) < 1e-9);
    assert_true(4.29 < 4.29238253634111 && 4.29238253634111 < 4.30);
    assert_true(6.02 < 6.02426201538837 && 6.02426201538837 < 6.03);
    /* the sweep put v and the state back */
    p = run_text(&r, "print v\n");
    assert_string_equal(p, "v = 5\n");
    run_close(&r);
}

/* The eigenvalues do not depend on the method (doc/stability.md: charts
 * of the same motion, at a steady motion): multipliers, second_kind,
 * maggi and gibbs_appell (the last two on the speeds u1 = phi',
 * u2 = delta', u3 = thR') agree at 5 m/s, the whole A's 10 eigenvalues
 * too (six zeros: the cyclic coordinates and the rear wheel's rate). */
static void test_bicycle_methods_agree(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, "bicycle_model.nh");
    run_text(&r, "param v = 5\n");
    static const char *const runs[] = {
        "equations multipliers\n" UPRIGHT "\neigen phi, delta, phi', delta'\n",
        "equations second_kind\n" UPRIGHT "\neigen phi, delta, phi', delta'\n",
        "equations maggi\ninitial theta ~ 0, u3 = -v/rR\n"
        "eigen phi, delta, u1, u2\n",
        "equations gibbs_appell\ninitial theta ~ 0, u3 = -v/rR\n"
        "eigen phi, delta, u1, u2\n",
    };
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
        const char *p = run_text(&r, runs[k]);
        for (int j = 0; j < 4; j++) {
            double e[2] = {0, 0};
            line_numbers(p, e, 2);
            for (int c = 0; c < 2; c++)
                if (!(fabs(e[c] - exact[5][j][c]) <= 1e-12 * fmax(1, fabs(exact[5][j][c]))))
                    fail_msg("%s eig%d: %.17g, exact %.17g", runs[k], j + 1,
                             e[c], exact[5][j][c]);
            p = next_line(p);
        }
    }
    /* the whole motion: the four, and 0 for the others */
    const char *p = run_text(&r, "equations multipliers\n" UPRIGHT "\neigen\n");
    size_t zeros = 0, found = 0;
    for (int j = 0; j < 10; j++) {
        double e[2] = {0, 0};
        line_numbers(p, e, 2);
        if (hypot(e[0], e[1]) < 1e-6)
            zeros++;
        for (int k = 0; k < 4; k++)
            found += fabs(e[0] - exact[5][k][0]) < 1e-12 * 15 &&
                     fabs(e[1] - exact[5][k][1]) < 1e-12 * 15;
        p = next_line(p);
    }
    assert_int_equal(zeros, 6);
    assert_int_equal(found, 4);
    run_close(&r);
}

/* ---- the warning of §7.2 ------------------------------------------------ */

/* A restriction that leaves out a variable feeding the kept ones: x' is
 * left out but feeds the variables kept: the eigenvalues of the
 * restriction are not eigenvalues of the motion.  (The pendulum's x'
 * feeds x, whose rate it is.) */
static void test_left_out_variable_warns(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, NULL);
    const char *p = run_text(&r, "param m = 1, g = 9.81, l = 2\n"
                                 "coord x, y\n"
                                 "particle P mass m at [x, y]\n"
                                 "potential V = m*g*y\n"
                                 "constraint rod: x^2 + y^2 = l^2\n"
                                 "initial x = 0, y = -l\n"
                                 "eigen x\n");
    assert_string_equal(p, "eig1 = 0\nneither asymptotically stable nor "
                           "unstable: eig1 is on the imaginary axis, where "
                           "the linearization does not decide\n");
    fflush(r.ferr);
    assert_non_null(strstr(r.err,
                           "warning: x' is left out but feeds the variables "
                           "kept: the eigenvalues of the restriction are "
                           "not eigenvalues of the motion"));
    /* the whole state: no warning */
    size_t mark = r.err_len;
    run_text(&r, "eigen x, x'\n");
    fflush(r.ferr);
    assert_int_equal(r.err_len, mark);
    run_close(&r);
}

/* The warnings of a state where A holds at one instant only: the
 * spherical pendulum's conical motion in Cartesian coordinates (y and x'
 * change, and no coordinate is cyclic: the constraint holds them all), and a bead on a rod turning at
 * a given rate (the constraint holds t).  At a steady motion — the
 * bicycle upright, whose moving coordinates have zero columns — none. */
static void test_state_warnings(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, "spherical_pendulum.nh");
    run_text(&r, "initial x = l*sin(alpha), z = -l*cos(alpha), "
                 "y' = l*sin(alpha)*Omega\neigen\n");
    fflush(r.ferr);
    assert_non_null(strstr(r.err, "warning: the state is neither an "
                                  "equilibrium nor a steady motion: y (rate "
                                  "2.75"));
    assert_non_null(strstr(r.err, "change, and in a steady motion only the "
                                  "cyclic coordinates move; A changes along "
                                  "the motion and its eigenvalues need not "
                                  "decide stability"));
    run_close(&r);
    run_open(&r, NULL);
    run_text(&r, "param w = 2, m = 1\ncoord x, y\n"
                 "particle P mass m at [x, y]\n"
                 "constraint rod: x*sin(w*t) = y*cos(w*t)\n"
                 "initial x = 1, t = 0.3\nlinearize\n");
    fflush(r.ferr);
    assert_non_null(strstr(r.err, "warning: the equations depend on t: A is "
                                  "the linearization at this instant, and "
                                  "its eigenvalues need not decide "
                                  "stability"));
    run_close(&r);
    run_open(&r, "bicycle_model.nh");
    run_text(&r, "param v = 5\n" UPRIGHT "\neigen\n");
    fflush(r.ferr);
    assert_int_equal(r.err_len, 0);
    run_close(&r);
}

/* The rolling disc of PyDy's and SymPy's examples: yaw q0, lean q1 from
 * the vertical, spin q2 about its axis L.y, (x, y) the contact. */
static const char pydy_disc[] =
    "param m = 1, r = 0.5, g = 9.81\n"
    "coord q0, q1, q2, x, y\n"
    "frame N\n"
    "frame Y from N about z by q0\n"
    "frame L from Y about x by q1\n"
    "frame R from L about y by q2\n"
    "let C = [x, y, 0]\n"
    "body disc mass m at C + r*L.z frame R inertia [m*r^2/4, m*r^2/2, "
    "m*r^2/4]\n"
    "gravity [0, 0, -g]\n"
    "constraint roll: velocity(C, disc) = [0, 0, 0]\n";

/* The disc turning steadily at lean 0.3 and yaw rate 2: q1'' is affine
 * in the spin rate, so two evaluations give the rate where it is 0. */
static void pydy_steady_turn(run_t *r)
{
    run_text(r, pydy_disc);
    double a, b;
    const char *p = run_text(r, "initial q1 = 0.3, q0' = 2, q2' = 0\n"
                                "print q1''\n");
    assert_int_equal(line_numbers(p + strlen("q1'' = "), &a, 1), 1);
    p = run_text(r, "initial q1 = 0.3, q0' = 2, q2' = 1\nprint q1''\n");
    assert_int_equal(line_numbers(p + strlen("q1'' = "), &b, 1), 1);
    char text[256];
    snprintf(text, sizeof text,
             "initial q1 = 0.3, q0' = 2, q2' = %.17g\nprint q1''\n",
             -a / (b - a));
    p = run_text(r, text);
    double q1dd;
    assert_int_equal(line_numbers(p + strlen("q1'' = "), &q1dd, 1), 1);
    assert_true(fabs(q1dd) < 1e-12);
}

/* §7.2 (doc/stability.md): real parts equal to within the tolerance of
 * the verdict count as equal, and the imaginary parts order them, so the
 * order does not follow rounding noise.  A matrix whose eigenvalues are
 * 1e-15 ± 3i, -1e-15 and 0: by real part alone, 1e-15 - 3i would come
 * second. */
static void test_eigen_order_ignores_noise(void **state)
{
    (void)state;
    const double A[16] = {1e-15, 3, 0, 0,  -3, 1e-15, 0, 0,
                          0,     0, -1e-15, 0, 0, 0, 0, 0};
    double re[4], im[4];
    assert_int_equal(lin_eigen(A, 4, re, im), 0);
    assert_true(im[0] > 2.9 && fabs(im[1]) == 0 && fabs(im[2]) == 0 &&
                im[3] < -2.9);
    assert_true(re[1] >= re[2]); /* 0, then -1e-15 */
    /* far apart, the real parts still decide */
    const double B[4] = {-1, 3, -3, -1};
    const double C[16] = {-1, 3, 0, 0, -3, -1, 0, 0, 0, 0, 2, 0, 0, 0, 0, -5};
    assert_int_equal(lin_eigen(B, 2, re, im), 0);
    assert_true(im[0] > 0 && im[1] < 0);
    assert_int_equal(lin_eigen(C, 4, re, im), 0);
    assert_true(fabs(re[0] - 2) < 1e-14 && im[1] > 0 && im[2] < 0 &&
                fabs(re[3] + 5) < 1e-14);
    /* the disc's steady turn: its lean mode's pair 0 ± 0.17i and two
     * zeros, real parts all rounding noise: the pair at both ends */
    run_t r;
    run_open(&r, NULL);
    pydy_steady_turn(&r);
    const char *p = run_text(&r, "eigen q1, q1', q0', q2'\n");
    double x[4][2];
    for (int k = 0; k < 4; k++, p = next_line(p)) {
        size_t got = line_numbers(p, x[k], 2);
        if (got == 1)
            x[k][1] = 0;
    }
    assert_true(x[0][1] > 0.1);
    assert_true(x[1][1] == 0 && x[2][1] == 0);
    assert_true(x[3][1] < -0.1);
    run_close(&r);
    /* the upright disk at its critical spin sqrt(g/(3 r)): every real
     * part 0 in exact arithmetic, of order 1e-7 as computed (a Jordan
     * block), all on the axis: ordered by the imaginary parts alone */
    run_open(&r, "rolling_disk.nh");
    p = run_text(&r, "equations multipliers\n"
                     "initial theta = pi/2, psi' = sqrt(g/(3*r))\n"
                     "eigen\n");
    double prev = INFINITY;
    int count = 0;
    for (; strncmp(p, "eig", 3) == 0; p = next_line(p), count++) {
        double e[2] = {0, 0};
        line_numbers(p, e, 2);
        double imag = strstr(p, "*i") && strchr(p, '\n') > strstr(p, "*i")
                          ? e[1]
                          : 0.0;
        if (!(imag <= prev))
            fail_msg("eig%d out of order: %.*s", count + 1,
                     (int)(strchr(p, '\n') - p), p);
        prev = imag;
    }
    assert_int_equal(count, 8);
    run_close(&r);
}

/* §7.2 and §7.3: the warning that the state is no steady motion is
 * judged on the variables kept, and with §7.3's notion (one for steady
 * and eigen): the cyclic coordinates may move.  The disc's steady turn:
 * restricted to its lean, lean rate, yaw rate and spin rate, no warning;
 * the whole state, no warning either — the yaw q0 moves, but only the
 * rates of x and y (cyclic) depend on it, so it is cyclic too.  Off the
 * steady spin rate the lean rate changes: the warning names q1'. */
static void test_steady_judged_on_kept(void **state)
{
    (void)state;
    run_t r;
    run_open(&r, NULL);
    pydy_steady_turn(&r);
    fflush(r.ferr);
    size_t mark = r.err_len;
    run_text(&r, "eigen q1, q1', q0', q2'\n");
    fflush(r.ferr);
    if (r.err_len != mark)
        fail_msg("a warning for the restriction: %s", r.err + mark);
    run_text(&r, "eigen\n");
    fflush(r.ferr);
    if (r.err_len != mark)
        fail_msg("a warning for the steady turn: %s", r.err + mark);
    run_text(&r, "initial q1 = 0.3, q0' = 2, q2' = 0\neigen\n");
    fflush(r.ferr);
    assert_non_null(strstr(r.err + mark,
                           "warning: the state is neither an equilibrium "
                           "nor a steady motion: q1' (rate "));
    assert_null(strstr(r.err + mark, "q0 (rate"));
    run_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appendix_a_matches_the_paper),
        cmocka_unit_test(test_bicycle_against_the_benchmark),
        cmocka_unit_test(test_bicycle_sweep_brackets_the_speeds),
        cmocka_unit_test(test_bicycle_methods_agree),
        cmocka_unit_test(test_left_out_variable_warns),
        cmocka_unit_test(test_state_warnings),
        cmocka_unit_test(test_eigen_order_ignores_noise),
        cmocka_unit_test(test_steady_judged_on_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
