/*
 * test_simplify.c — the display simplifier (interp/expr/simplify.c,
 * LANGUAGE.md §7.1): identities it must find, written as their textbook
 * forms; expressions it must leave alone or show with the condition under
 * which they hold (§3.4.1); symbolic solves checked against their
 * definition; and, on random expressions over every op, the display form
 * equal to the input at random points wherever the input is defined.
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

#include "interp/expr/expr.h"
#include "interp/expr/simplify.h"

/* Ranks as lower.c gives them: parameters 1, coordinates 3, velocities
 * 4, accelerations 5. */
enum { M, G, R, A, X, Y, TH, PHI, XD, THD, PHD, V, W, XDD, THDD, VD, NV };

typedef struct fixture {
    expr_graph_t *g;
    const expr_t *v[NV];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->g = expr_graph_new();
    static const char *const names[NV] = {
        "m",  "g",      "R",    "alpha", "x",  "y",  "theta", "phi",
        "x'", "theta'", "phi'", "v",     "w",  "x''", "theta''", "v'"};
    static const unsigned rank[NV] = {1, 1, 1, 1, 3, 3, 3, 3,
                                      4, 4, 4, 4, 4, 5, 5, 5};
    for (int i = 0; i < NV; i++) {
        uint32_t v = expr_var_declare(f->g, names[i]);
        expr_var_set_rank(f->g, v, rank[i]);
        f->v[i] = expr_var(f->g, v);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    expr_graph_free(f->g);
    free(f);
    return 0;
}

#define N(x) expr_num(g, (x))
#define F1(op, a) expr_call(g, op, (a), NULL)
#define ADD(a, b) expr_add(g, (a), (b))
#define SUB(a, b) expr_sub(g, (a), (b))
#define MUL(a, b) expr_mul(g, (a), (b))
#define DIV(a, b) expr_div(g, (a), (b))
#define POW(a, b) expr_pow(g, (a), (b))

/* E's display form as text (with its conditions) is WANT. */
static void expect_shown(expr_graph_t *g, const expr_t *e, const char *want)
{
    simp_t *s = simp_new(g);
    char *t = simp_format(s, simp_simplify(s, simp_import(s, e)), false);
    if (strcmp(t, want) != 0) {
        print_error("shown \"%s\", expected \"%s\"\n", t, want);
        free(t);
        simp_free(s);
        fail();
    }
    free(t);
    simp_free(s);
}

/* The row l = r shown as WANT. */
static void expect_row(expr_graph_t *g, const expr_t *l, const expr_t *r,
                       const char *want)
{
    simp_t *s = simp_new(g);
    const expr_t *L, *R, *c;
    simp_row(s, simp_import(s, l), simp_import(s, r), 5, &L, &R, &c);
    char *t = simp_format_row(s, L, R, c, false);
    if (strcmp(t, want) != 0) {
        print_error("row \"%s\", expected \"%s\"\n", t, want);
        free(t);
        simp_free(s);
        fail();
    }
    free(t);
    simp_free(s);
}

static void test_identities(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *const *v = f->v;
    const expr_t *x = v[X], *th = v[TH], *phi = v[PHI];
    const expr_t *s2 = POW(F1(EXPR_SIN, th), N(2)),
                 *c2 = POW(F1(EXPR_COS, th), N(2));
    expect_shown(g, SUB(SUB(POW(ADD(x, N(1)), N(2)), POW(x, N(2))),
                        MUL(N(2), x)),
                 "1");
    expect_shown(g, ADD(s2, c2), "1");
    expect_shown(g, ADD(MUL(N(2), s2), MUL(N(2), c2)), "2");
    expect_shown(g, SUB(N(1), s2), "cos(theta)^2");
    expect_shown(g, SUB(MUL(v[M], c2), v[M]), "-m*sin(theta)^2");
    /* exact numbers: 2/5*2/5*m and m/5*2 + m (LANGUAGE.md §7.1) */
    expect_shown(g, MUL(MUL(DIV(N(2), N(5)), DIV(N(2), N(5))), v[M]),
                 "4*m/25");
    expect_shown(g, ADD(MUL(DIV(v[M], N(5)), N(2)), v[M]), "7*m/5");
    /* the content taken out, factors in rank order */
    const expr_t *k = MUL(MUL(DIV(N(7), N(5)), v[M]), POW(v[R], N(2)));
    expect_shown(g, ADD(MUL(k, v[THDD]),
                        MUL(MUL(k, F1(EXPR_SIN, th)), MUL(v[PHD], v[XD]))),
                 "7*m*R^2*(sin(theta)*x'*phi' + theta'')/5");
    /* products of sums that cancel: Lemos's theta row, by hand */
    const expr_t *sp = F1(EXPR_SIN, phi), *cp = F1(EXPR_COS, phi);
    const expr_t *u = ADD(MUL(v[THD], cp), MUL(v[PHD], sp));
    const expr_t *w = SUB(MUL(v[THD], sp), MUL(v[PHD], cp));
    expect_shown(g, ADD(MUL(sp, u), MUL(MUL(N(-1), cp), w)), "phi'");
    /* pi stays a symbol, also where IEEE made the number (3*pi is past
     * the bounds of an exact fraction; asin(-1) folds to a double) */
    const expr_t *pi = N(M_PI);
    expect_shown(g, MUL(DIV(MUL(N(3), pi), N(4)), x), "3*pi*x/4");
    expect_shown(g, MUL(F1(EXPR_ASIN, N(-1)), x), "-pi*x/2");
    expect_shown(g, SUB(th, DIV(pi, N(2))), "theta - pi/2");
    /* a common denominator where it is shorter */
    const expr_t *xy = MUL(x, v[Y]);
    expect_shown(g, ADD(ADD(DIV(v[M], xy), DIV(v[G], xy)), DIV(v[R], xy)),
                 "(m + g + R)/(x*y)");
}

/* The skate on an incline under maggi, as nh derived it before it had a
 * display (issue 16): m v' = cos(phi)*(v*w*m*sin(phi) + m*g*sin(alpha))
 * - v*w*m*sin(phi)*cos(phi), which is m v' = m g sin(alpha) cos(phi). */
static void test_rows(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *const *v = f->v;
    const expr_t *sp = F1(EXPR_SIN, v[PHI]), *cp = F1(EXPR_COS, v[PHI]);
    const expr_t *vw = MUL(MUL(v[V], v[W]), v[M]);
    const expr_t *r =
        SUB(MUL(cp, ADD(MUL(vw, sp),
                        MUL(MUL(v[M], v[G]), F1(EXPR_SIN, v[A])))),
            MUL(MUL(vw, sp), cp));
    expect_row(g, MUL(v[VD], v[M]), r, "m*v' = m*g*sin(alpha)*cos(phi)");
    /* accelerations left, the rest right, signs out of the left */
    expect_row(g, ADD(MUL(N(-1), MUL(v[M], v[XDD])), v[G]), N(0),
               "m*x'' = g");
    expect_row(g, v[XD], MUL(v[V], ADD(v[M], v[M])), "x' = 2*m*v");
}

/* What must stay, or say where it holds (LANGUAGE.md §3.4.1). */
static void test_domains(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->v[X];
    expect_shown(g, DIV(x, x), "1  (where x != 0)");
    expect_shown(g, DIV(SUB(x, N(1)), SUB(x, N(1))), "1  (where x - 1 != 0)");
    expect_shown(g, POW(F1(EXPR_SQRT, x), N(2)), "x  (where x >= 0)");
    expect_shown(g, F1(EXPR_SQRT, POW(x, N(2))), "sqrt(x^2)");
    expect_shown(g, SUB(F1(EXPR_LOG, x), F1(EXPR_LOG, x)), "0  (where x > 0)");
    /* no factor that may vanish is divided out without a word */
    expect_shown(g, DIV(SUB(POW(x, N(2)), N(1)), SUB(x, N(1))),
                 "(x^2 - 1)/(x - 1)");
    /* a form that keeps the division needs no condition */
    expect_shown(g, ADD(DIV(N(1), x), DIV(N(1), x)), "2/x");
}

/* simp_solve against its definition: A x = b at random points. */
static void test_solve(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *const *v = f->v;
    const expr_t *st = F1(EXPR_SIN, v[TH]), *ct = F1(EXPR_COS, v[TH]);
    const expr_t *mr2 = MUL(v[M], POW(v[R], N(2)));
    /* the rolling sphere's Voronec matrix (Lemos eq. 16's system): its
     * determinant is 98/125 m^3 R^6 sin(theta)^2 once cos^2 = 1 - sin^2 */
    const expr_t *A[9] = {
        MUL(DIV(N(2), N(5)), mr2), N(0), MUL(MUL(DIV(N(2), N(5)), mr2), ct),
        N(0), MUL(DIV(N(7), N(5)), mr2), N(0),
        MUL(MUL(DIV(N(2), N(5)), mr2), ct), N(0),
        MUL(mr2, ADD(DIV(N(2), N(5)), POW(st, N(2))))};
    const expr_t *b[3] = {v[X], MUL(v[Y], st), ADD(v[G], ct)};
    simp_t *s = simp_new(g);
    expr_graph_t *dg = simp_graph(s);
    const expr_t *Ad[9], *bd[3], *x[3];
    for (int i = 0; i < 9; i++)
        Ad[i] = simp_import(s, A[i]);
    for (int i = 0; i < 3; i++)
        bd[i] = simp_import(s, b[i]);
    assert_int_equal(simp_solve(s, Ad, bd, 3, x), 0);
    /* x_2 = 5 y sin(theta) / (7 m R^2): no determinant left over */
    char *t = expr_to_text(dg, x[1]);
    assert_string_equal(t, "5*y*sin(theta)/(7*m*R^2)");
    free(t);
    uint64_t seed = 12345;
    for (int trial = 0; trial < 50; trial++) {
        double vals[NV];
        for (int i = 0; i < NV; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            vals[i] = 0.3 + (double)(seed >> 11) * 0x1.0p-53 * 2.0;
        }
        double xv[3];
        for (int i = 0; i < 3; i++)
            xv[i] = expr_eval(dg, x[i], vals);
        for (int i = 0; i < 3; i++) {
            double lhs = 0;
            for (int j = 0; j < 3; j++)
                lhs += expr_eval(g, A[i * 3 + j], vals) * xv[j];
            double rhs = expr_eval(g, b[i], vals);
            assert_true(fabs(lhs - rhs) <= 1e-12 * fmax(1, fabs(rhs)));
        }
    }
    /* singular everywhere: refused */
    const expr_t *S[4] = {Ad[0], Ad[0], Ad[0], Ad[0]};
    assert_int_equal(simp_solve(s, S, bd, 2, x), -1);
    simp_free(s);
}

/* ---- random expressions: the display form equals the input ---------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static const expr_t *random_expr(expr_graph_t *g, const expr_t *const *v,
                                 int depth)
{
    static const double k[] = {1, 2, 3, -1, -2, 0.5, 0.4, 1.5, 7};
    uint64_t r = rng();
    if (depth == 0 || r % 6 == 0) {
        if (r % 4 == 0)
            return N(k[rng() % (sizeof k / sizeof *k)]);
        return v[rng() % 8 + 4]; /* x .. v */
    }
    const expr_t *a = random_expr(g, v, depth - 1);
    switch (rng() % 14) {
    case 12:
        return MUL(POW(F1(EXPR_SIN, a), N(2)), random_expr(g, v, depth - 1));
    case 13:
        return ADD(POW(F1(EXPR_COS, a), N(2)), random_expr(g, v, depth - 1));
    case 0:
    case 1:
        return ADD(a, random_expr(g, v, depth - 1));
    case 2:
        return SUB(a, random_expr(g, v, depth - 1));
    case 3:
    case 4:
        return MUL(a, random_expr(g, v, depth - 1));
    case 5:
        return DIV(a, random_expr(g, v, depth - 1));
    case 6:
        return POW(a, N((double)(rng() % 3 + 2)));
    case 7:
        return F1(EXPR_SIN, a);
    case 8:
        return F1(EXPR_COS, a);
    case 9:
        return F1(EXPR_SQRT, a);
    case 10:
        return F1(EXPR_LOG, a);
    default:
        return POW(ADD(a, random_expr(g, v, depth - 1)), N(2));
    }
}

static void test_random_equal(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    int compared = 0;
    for (int trial = 0; trial < 400; trial++) {
        const expr_t *e = random_expr(g, f->v, 4);
        simp_t *s = simp_new(g);
        const expr_t *d = simp_simplify(s, simp_import(s, e));
        for (int p = 0; p < 5; p++) {
            double vals[NV];
            for (int i = 0; i < NV; i++)
                vals[i] = ((double)(rng() >> 11) * 0x1.0p-53 - 0.3) * 3;
            double a = expr_eval(g, e, vals);
            double b = expr_eval(simp_graph(s), d, vals);
            if (!isfinite(a)) {
                /* where the input is undefined, so is its display form
                 * (its guard holds the input's domain) */
                assert_false(isfinite(b));
                continue;
            }
            if (fabs(a) > 1e6)
                continue; /* cancellation in the written form itself */
            if (!(fabs(a - b) <= 1e-9 * fmax(1, fabs(a)))) {
                char *t = expr_to_text(g, e);
                char *u = simp_format(s, d, false);
                print_error("%s\n  shown %s\n  %.17g != %.17g\n", t, u, a, b);
                free(t);
                free(u);
                fail();
            }
            compared++;
        }
        simp_free(s);
    }
    assert_true(compared > 500);
}

int main(void)
{
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_identities), T_(test_rows),         T_(test_domains),
        T_(test_solve),      T_(test_random_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
