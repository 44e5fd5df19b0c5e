/*
 * test_print.c — text and LaTeX printing, and number formatting.
 *
 * Exact strings for a table of cases; a round trip through a small reader
 * of the language's expression syntax (LANGUAGE.md §3.1: + - * / ^, unary
 * minus, calls, names with trailing primes) written here, which rebuilds
 * with the public constructors and must meet the very node that was
 * printed; numbers read back by strtod to the same bits, in the fewest
 * significant digits.
 */
#include <ctype.h>
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

/* Parameters first, as a model declares them: a product lists its
 * variables in declaration order (m*x'^2). */
enum { M, A, B, C, X, Y, Z, XD, THETA, THETADD, X1, THETA0, NV };

typedef struct fixture {
    expr_graph_t *g;
    const expr_t *v[NV];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->g = expr_graph_new();
    const char *names[NV] = {"m",  "a",     "b",       "c",  "x",
                             "y",  "z",     "x'",      "theta", "theta''",
                             "x1", "theta0"};
    for (int i = 0; i < NV; i++)
        f->v[i] = expr_var(f->g, expr_var_declare(f->g, names[i]));
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

#define N(v) expr_num(g, (v))
#define F1(op, arg) expr_call(g, op, (arg), NULL)

/* ---- a reader of the printed syntax -------------------------------------- */

/*
 *   sum    := prod (('+' | '-') prod)*
 *   prod   := unary (('*' | '/') unary)*
 *   unary  := '-' unary | power
 *   power  := atom ('^' power)?        (so x^-1 is refused: x^(-1))
 *   atom   := number | name | name '(' sum (',' sum)* ')' | '(' sum ')'
 *   name   := [A-Za-z_][A-Za-z0-9_]* '\''*
 */
typedef struct reader {
    expr_graph_t *g;
    const char *s;
    bool bad;
} reader_t;

static void skip_spaces(reader_t *r)
{
    while (*r->s == ' ')
        r->s++;
}

static const expr_t *r_sum(reader_t *r);

static const expr_t *r_atom(reader_t *r)
{
    expr_graph_t *g = r->g;
    skip_spaces(r);
    if (*r->s == '(') {
        r->s++;
        const expr_t *e = r_sum(r);
        skip_spaces(r);
        if (*r->s != ')')
            r->bad = true;
        else
            r->s++;
        return e;
    }
    if (isdigit((unsigned char)*r->s) || *r->s == '.') {
        char *end;
        double v = strtod(r->s, &end);
        r->s = end;
        return N(v);
    }
    if (isalpha((unsigned char)*r->s) || *r->s == '_') {
        const char *start = r->s;
        while (isalnum((unsigned char)*r->s) || *r->s == '_')
            r->s++;
        while (*r->s == '\'')
            r->s++;
        char name[64];
        size_t n = (size_t)(r->s - start);
        if (n >= sizeof name) {
            r->bad = true;
            return N(0);
        }
        memcpy(name, start, n);
        name[n] = '\0';
        if (*r->s == '(') {
            int op = expr_op_lookup(name);
            if (op < 0) {
                r->bad = true;
                return N(0);
            }
            r->s++;
            const expr_t *a = r_sum(r), *b = NULL;
            skip_spaces(r);
            if (*r->s == ',') {
                r->s++;
                b = r_sum(r);
                skip_spaces(r);
            }
            if (*r->s != ')' || (expr_op_arity((expr_op_t)op) == 2) != !!b)
                r->bad = true;
            else
                r->s++;
            return expr_call(g, (expr_op_t)op, a, b);
        }
        for (uint32_t v = 0; v < expr_graph_nvars(g); v++)
            if (strcmp(expr_var_name(g, v), name) == 0)
                return expr_var(g, v);
        if (strcmp(name, "pi") == 0)
            return N(M_PI); /* as the language lowers it */
        r->bad = true;
        return N(0);
    }
    r->bad = true;
    return N(0);
}

static const expr_t *r_power(reader_t *r)
{
    const expr_t *base = r_atom(r);
    skip_spaces(r);
    if (*r->s == '^') {
        r->s++;
        return expr_pow(r->g, base, r_power(r));
    }
    return base;
}

static const expr_t *r_unary(reader_t *r)
{
    skip_spaces(r);
    if (*r->s == '-') {
        r->s++;
        return expr_neg(r->g, r_unary(r));
    }
    return r_power(r);
}

static const expr_t *r_prod(reader_t *r)
{
    const expr_t *e = r_unary(r);
    for (;;) {
        skip_spaces(r);
        if (*r->s == '*') {
            r->s++;
            e = expr_mul(r->g, e, r_unary(r));
        } else if (*r->s == '/') {
            r->s++;
            e = expr_div(r->g, e, r_unary(r));
        } else {
            return e;
        }
    }
}

static const expr_t *r_sum(reader_t *r)
{
    const expr_t *e = r_prod(r);
    for (;;) {
        skip_spaces(r);
        if (*r->s == '+') {
            r->s++;
            e = expr_add(r->g, e, r_prod(r));
        } else if (*r->s == '-') {
            r->s++;
            e = expr_sub(r->g, e, r_prod(r));
        } else {
            return e;
        }
    }
}

/* The node TEXT denotes, or NULL when it does not parse. */
static const expr_t *read_text(expr_graph_t *g, const char *text)
{
    reader_t r = {g, text, false};
    const expr_t *e = r_sum(&r);
    skip_spaces(&r);
    return r.bad || *r.s ? NULL : e;
}

static void test_reader_itself(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *a = f->v[A], *b = f->v[B], *x = f->v[X];
    assert_ptr_equal(read_text(g, "-x^2"), expr_neg(g, expr_pow(g, x, N(2))));
    assert_ptr_equal(read_text(g, "2^3^2"), N(512));
    assert_ptr_equal(read_text(g, "a - b - a"), expr_neg(g, b));
    assert_ptr_equal(read_text(g, "a/b*a"),
                     expr_mul(g, expr_pow(g, a, N(2)), expr_pow(g, b, N(-1))));
    assert_ptr_equal(read_text(g, "x'"), f->v[XD]);
    assert_ptr_equal(read_text(g, "atan2(a, b)"),
                     expr_call(g, EXPR_ATAN2, a, b));
    assert_null(read_text(g, "x^-1"));
    assert_null(read_text(g, "a +"));
    assert_null(read_text(g, "q"));
    assert_null(read_text(g, "sin(a, b)"));
}

/* ---- exact strings -------------------------------------------------------- */

static void expect_text(expr_graph_t *g, const expr_t *e, const char *want)
{
    char *s = expr_to_text(g, e);
    if (strcmp(s, want) != 0) {
        print_error("printed \"%s\", expected \"%s\"\n", s, want);
        free(s);
        fail();
    }
    /* and it reads back as the same node */
    const expr_t *back = read_text(g, s);
    if (back != e) {
        print_error("\"%s\" does not read back as the same node\n", s);
        free(s);
        fail();
    }
    free(s);
}

static void expect_latex(expr_graph_t *g, const expr_t *e, const char *want)
{
    char *s = expr_to_latex(g, e);
    if (strcmp(s, want) != 0) {
        print_error("LaTeX \"%s\", expected \"%s\"\n", s, want);
        free(s);
        fail();
    }
    free(s);
}

static void test_text_table(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *a = f->v[A], *b = f->v[B], *c = f->v[C], *x = f->v[X],
                 *y = f->v[Y], *z = f->v[Z], *xd = f->v[XD], *m = f->v[M];
    const expr_t *two = N(2);
    expect_text(g, expr_neg(g, expr_pow(g, x, two)), "-x^2");
    expect_text(g, expr_pow(g, expr_neg(g, x), N(0.5)), "(-x)^0.5");
    expect_text(g, expr_pow(g, N(-2), x), "(-2)^x");
    expect_text(g, expr_pow(g, two, x), "2^x");
    expect_text(g, expr_sub(g, a, expr_mul(g, two, b)), "a - 2*b");
    expect_text(g, expr_sub(g, expr_mul(g, two, b), a), "2*b - a");
    expect_text(g, expr_div(g, N(1), expr_pow(g, x, two)), "1/x^2");
    expect_text(g, expr_pow(g, a, expr_pow(g, b, c)), "a^b^c");
    expect_text(g, expr_pow(g, expr_pow(g, a, b), c), "(a^b)^c");
    expect_text(g, expr_mul(g, expr_add(g, a, b), c), "c*(a + b)");
    expect_text(g, expr_mul(g, expr_add(g, a, b), expr_sub(g, a, c)),
                "(a + b)*(a - c)");
    expect_text(g, expr_div(g, a, expr_mul(g, b, c)), "a/(b*c)");
    expect_text(g, expr_div(g, x, expr_add(g, a, b)), "x/(a + b)");
    expect_text(g, expr_div(g, expr_add(g, a, b), x), "(a + b)/x");
    expect_text(g, expr_div(g, x, expr_pow(g, expr_add(g, a, b), two)),
                "x/(a + b)^2");
    expect_text(g, expr_mul(g, x, expr_div(g, N(1), expr_mul(g, y, z))),
                "x/(y*z)");
    expect_text(g, expr_div(g, x, expr_mul(g, y, expr_pow(g, z, two))),
                "x/(y*z^2)");
    expect_text(g, expr_div(g, N(-1), x), "-1/x");
    expect_text(g, expr_div(g, N(1), F1(EXPR_SQRT, x)), "1/sqrt(x)");
    expect_text(g, expr_div(g, expr_mul(g, m, expr_pow(g, xd, two)), two),
                "m*x'^2/2");
    expect_text(g, expr_div(g, expr_mul(g, two, x), N(3)), "2*x/3");
    expect_text(g, expr_div(g, x, N(3)), "x/3");
    expect_text(g, expr_div(g, x, expr_mul(g, two, y)), "x/(2*y)");
    expect_text(g, expr_mul(g, N(0.1), x), "x/10");
    expect_text(g, expr_mul(g, N(0.3), x), "0.3*x");
    expect_text(g, expr_mul(g, N(1.5), x), "3*x/2");
    expect_text(g, expr_mul(g, N(-2.5), x), "-5*x/2");
    expect_text(g, expr_mul(g, N(1e-12), x), "1e-12*x");
    expect_text(g, expr_sub(g, x, N(1)), "x - 1");
    expect_text(g, expr_add(g, x, N(1)), "x + 1");
    expect_text(g, expr_sub(g, expr_neg(g, x), N(1)), "-x - 1");
    expect_text(g, expr_sub(g, N(1), x), "1 - x");
    expect_text(g, expr_neg(g, expr_add(g, a, b)), "-(a + b)");
    expect_text(g, expr_sub(g, x, expr_add(g, a, b)), "x - a - b");
    expect_text(g, expr_mul(g, two, expr_add(g, a, b)), "2*(a + b)");
    expect_text(g, expr_pow(g, x, expr_neg(g, y)), "x^(-y)");
    expect_text(g, expr_pow(g, x, expr_mul(g, a, b)), "x^(a*b)");
    expect_text(g, expr_pow(g, x, expr_add(g, a, b)), "x^(a + b)");
    expect_text(g, expr_pow(g, x, expr_div(g, N(1), y)), "x^(1/y)");
    expect_text(g, expr_pow(g, expr_pow(g, x, two), N(0.5)), "(x^2)^0.5");
    expect_text(g, expr_pow(g, x, N(-0.5)), "1/x^0.5");
    expect_text(g, expr_pow(g, F1(EXPR_SIN, x), two), "sin(x)^2");
    expect_text(g, F1(EXPR_SQRT, expr_add(g, expr_pow(g, x, two),
                                          expr_pow(g, y, two))),
                "sqrt(x^2 + y^2)");
    expect_text(g, expr_call(g, EXPR_ATAN2, y, x), "atan2(y, x)");
    expect_text(g, expr_call(g, EXPR_MIN, expr_neg(g, x), expr_add(g, a, b)),
                "min(-x, a + b)");
    expect_text(g, F1(EXPR_SIN, expr_neg(g, x)), "-sin(x)");
    expect_text(g, expr_mul(g, expr_mul(g, m, f->v[THETADD]),
                            F1(EXPR_COS, f->v[THETA])),
                "m*theta''*cos(theta)");
    expect_text(g, expr_mul(g, f->v[X1], f->v[THETA0]), "x1*theta0");
    expect_text(g, N(0.1), "0.1");
    expect_text(g, N(-3), "-3");
    expect_text(g, N(1.0 / 3.0), "0.3333333333333333");
    expect_text(g, expr_pow(g, N(0), N(-1)), "0^(-1)");
    expect_text(g, F1(EXPR_LOG, N(0)), "log(0)");
    expect_text(g, expr_sub(g, F1(EXPR_LOG, N(0)), x), "log(0) - x");
}

static void test_latex_table(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *a = f->v[A], *b = f->v[B], *x = f->v[X], *xd = f->v[XD],
                 *th = f->v[THETA], *m = f->v[M];
    const expr_t *two = N(2);
    expect_latex(g, expr_pow(g, xd, two), "\\dot{x}^{2}");
    expect_latex(g, f->v[THETADD], "\\ddot{\\theta}");
    expect_latex(g, f->v[X1], "x_{1}");
    expect_latex(g, f->v[THETA0], "\\theta_{0}");
    expect_latex(g, expr_div(g, F1(EXPR_SIN, th), two),
                 "\\frac{1}{2} \\sin{\\theta}");
    expect_latex(g, expr_pow(g, F1(EXPR_SIN, th), two), "\\sin^{2}{\\theta}");
    expect_latex(g, F1(EXPR_COS, expr_add(g, th, x)),
                 "\\cos\\left(x + \\theta\\right)");
    expect_latex(g, F1(EXPR_SQRT, x), "\\sqrt{x}");
    expect_latex(g, F1(EXPR_ABS, x), "\\left|x\\right|");
    expect_latex(g, expr_sub(g, a, expr_mul(g, two, b)), "a - 2 b");
    expect_latex(g, expr_mul(g, two, expr_pow(g, N(3), x)),
                 "2 \\cdot 3^{x}");
    expect_latex(g, expr_neg(g, expr_add(g, a, b)),
                 "-\\left(a + b\\right)");
    expect_latex(g, expr_pow(g, expr_add(g, a, b), two),
                 "\\left(a + b\\right)^{2}");
    expect_latex(g, expr_div(g, x, expr_add(g, a, b)), "\\frac{x}{a + b}");
    expect_latex(g, expr_div(g, expr_mul(g, m, expr_pow(g, xd, two)), two),
                 "\\frac{1}{2} m \\dot{x}^{2}");
    expect_latex(g, expr_mul(g, N(1e-12), x), "10^{-12} x");
    expect_latex(g, expr_mul(g, N(2.5e-12), x), "2.5 \\cdot 10^{-12} x");
    expect_latex(g, expr_pow(g, N(1e-12), x),
                 "\\left(10^{-12}\\right)^{x}");
    expect_latex(g, expr_pow(g, x, expr_add(g, a, b)), "x^{a + b}");
    expect_latex(g, expr_call(g, EXPR_ATAN2, a, b),
                 "\\operatorname{atan2}\\left(a, b\\right)");
    expect_latex(g, F1(EXPR_LOG, x), "\\ln{x}");
    expect_latex(g, expr_div(g, N(1), expr_mul(g, a, b)),
                 "\\frac{1}{a b}");
    expect_latex(g, expr_neg(g, expr_div(g, x, two)), "-\\frac{1}{2} x");
    /* names */
    const char *names[][2] = {{"Phi", "\\Phi"},       {"omega_z", "\\omega_{z}"},
                              {"k12", "k_{12}"},      {"mass", "\\mathrm{mass}"},
                              {"psi'", "\\dot{\\psi}"}, {"x_tip''", "\\ddot{x}_{tip}"},
                              {"phi1'", "\\dot{\\phi}_{1}"},
                              {"lambda(roll_x)", "\\lambda_{\\mathrm{roll\\_x}}"},
                              {"lambda(roll[2])", "\\lambda_{\\mathrm{roll},2}"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        uint32_t v = expr_var_declare(g, names[i][0]);
        expect_latex(g, expr_var(g, v), names[i][1]);
    }
}

/* LANGUAGE.md §7.1: exact numbers print as fractions, and factors in the
 * order of their variables' ranks. */
static void test_fractions_and_order(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *m = f->v[M], *a = f->v[A], *x = f->v[X];
    const expr_t *two5 = expr_div(g, N(2), N(5));
    expect_text(g, expr_mul(g, expr_mul(g, two5, two5), m), "4*m/25");
    expect_text(g, expr_add(g, expr_mul(g, expr_div(g, m, N(5)), N(2)), m),
                "7*m/5");
    expect_text(g, expr_mul(g, N(0.16), m), "4*m/25");
    expect_text(g, expr_ratio(g, 1, 3), "1/3");
    expect_text(g, expr_ratio(g, -7, 5), "-7/5");
    expect_text(g, expr_sub(g, a, expr_mul(g, two5, m)), "a - 2*m/5");
    expect_text(g, expr_div(g, m, expr_mul(g, N(3), x)), "m/(3*x)");
    expect_text(g, expr_pow(g, x, expr_ratio(g, 1, 3)), "x^(1/3)");
    expect_text(g, expr_pow(g, x, expr_ratio(g, -1, 3)), "1/x^(1/3)");
    expect_text(g, expr_pow(g, expr_ratio(g, 2, 3), x), "(2/3)^x");
    expect_text(g, expr_mul(g, N(9.81), m), "9.81*m");  /* shorter */
    expect_text(g, expr_mul(g, N(0.001), m), "m/1000");
    expect_text(g, expr_pow(g, expr_ratio(g, 1, 3), N(40)),
                "8.22526333996994e-20"); /* beyond 2^53: a double */
    expect_latex(g, expr_mul(g, expr_ratio(g, 7, 5), m), "\\frac{7}{5} m");
    expect_latex(g, expr_ratio(g, -2, 5), "-\\frac{2}{5}");
    expect_latex(g, expr_div(g, expr_mul(g, N(2), m), expr_mul(g, N(5), x)),
                 "\\frac{2 m}{5 x}");
    expect_latex(g, expr_pow(g, x, expr_ratio(g, 1, 3)), "x^{1/3}");
    /* pi stays a symbol (§7.1): `pi` is the fraction of its decimal, and
     * small multiples of it fold exactly */
    const expr_t *pi = N(M_PI);
    expect_text(g, pi, "pi");
    expect_text(g, expr_mul(g, N(2), pi), "2*pi");
    expect_text(g, expr_mul(g, expr_div(g, pi, N(2)), x), "pi*x/2");
    expect_text(g, expr_div(g, x, expr_mul(g, N(2), pi)), "x/(2*pi)");
    expect_text(g, expr_div(g, N(2), pi), "2/pi");
    expect_latex(g, expr_mul(g, expr_div(g, pi, N(2)), x), "\\frac{\\pi}{2} x");
    expect_latex(g, expr_div(g, x, expr_mul(g, N(2), pi)),
                 "\\frac{1}{2 \\pi} x");
    /* -x*(a - c) reads x*(c - a): the sign into the sum (the canonical
     * form moves it out of a sum that reads with a minus first) */
    expect_text(g, expr_mul(g, x, expr_sub(g, f->v[C], a)), "x*(c - a)");
    expect_text(g, expr_mul(g, x, expr_neg(g, expr_add(g, f->v[C], a))),
                "-x*(a + c)");
    /* ranks: parameters 1, coordinates 2, velocities 3, accelerations 4
     * (in a graph of its own: a node takes its rank when built) */
    const expr_t *th = f->v[THETA], *thdd = f->v[THETADD], *xd = f->v[XD];
    const expr_t *e = expr_mul(g, expr_mul(g, thdd, m),
                               expr_mul(g, F1(EXPR_COS, th), xd));
    expect_text(g, e, "m*x'*theta''*cos(theta)");
    g = expr_graph_new();
    const char *nm[4] = {"m", "theta", "x'", "theta''"};
    const expr_t *v4[4];
    for (unsigned i = 0; i < 4; i++) {
        uint32_t var = expr_var_declare(g, nm[i]);
        expr_var_set_rank(g, var, i + 1);
        v4[i] = expr_var(g, var);
    }
    m = v4[0], th = v4[1], xd = v4[2], thdd = v4[3];
    e = expr_mul(g, expr_mul(g, thdd, m), expr_mul(g, F1(EXPR_COS, th), xd));
    expect_text(g, e, "m*cos(theta)*x'*theta''");
    expect_text(g, expr_div(g, thdd, expr_mul(g, xd, m)), "theta''/(m*x')");
    /* a thin space after a function written as an operator: \cos{\theta}
     * \dot{x} would read cos(theta x') (LANGUAGE.md §7.1, issue 29) */
    expect_latex(g, e, "m \\cos{\\theta}\\, \\dot{x} \\ddot{\\theta}");
    expr_graph_free(g);
}

/* ---- random round trip ---------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static const expr_t *random_expr(expr_graph_t *g, const expr_t *const *v,
                                 int nv, int depth)
{
    static const double k[] = {1,   2,    3,     -1,     -2,   0.5,  0.1,
                               0.3, 2.5,  1e-7,  1.0 / 3, 7,   123456.789,
                               -0.25, 1e12, 0.75};
    uint64_t r = rng();
    if (depth == 0 || r % 7 == 0) {
        if (r % 3 == 0)
            return expr_num(g, k[rng() % (sizeof k / sizeof *k)]);
        return v[rng() % (uint64_t)nv];
    }
    const expr_t *a = random_expr(g, v, nv, depth - 1);
    uint64_t op = rng() % 16;
    if (op < 8) {
        const expr_t *b = random_expr(g, v, nv, depth - 1);
        switch (op) {
        case 0:
            return expr_add(g, a, b);
        case 1:
            return expr_sub(g, a, b);
        case 2:
        case 3:
            return expr_mul(g, a, b);
        case 4:
            return expr_div(g, a, b);
        case 5:
            return expr_pow(g, a, b);
        case 6:
            return expr_call(g, EXPR_ATAN2, a, b);
        default:
            return expr_call(g, rng() % 2 ? EXPR_MIN : EXPR_MAX, a, b);
        }
    }
    switch (op) {
    case 8:
        return expr_neg(g, a);
    case 9:
    case 10: {
        static const double e[] = {2, 3, -1, -2, 0.5, -0.5, 1.5, 4};
        return expr_pow(g, a, expr_num(g, e[rng() % 8]));
    }
    default: {
        static const expr_op_t fn[] = {
            EXPR_SIN,  EXPR_COS,  EXPR_TAN, EXPR_ASIN, EXPR_ACOS,
            EXPR_ATAN, EXPR_SINH, EXPR_COSH, EXPR_TANH, EXPR_EXP,
            EXPR_LOG,  EXPR_SQRT, EXPR_ABS, EXPR_SIGN};
        return expr_call(g, fn[rng() % 14], a, NULL);
    }
    }
}

static void test_round_trip_random(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    rng_state = 31337;
    int done = 0;
    for (int i = 0; i < 1500; i++) {
        const expr_t *e = random_expr(g, f->v, NV, 1 + i % 8);
        char *s = expr_to_text(g, e);
        if (strstr(s, "inf") || strstr(s, "nan")) {
            free(s); /* not in the language's syntax */
            continue;
        }
        const expr_t *back = read_text(g, s);
        if (back != expr_unguarded(e)) { /* a guard prints as its value */
            char *t = back ? expr_to_text(g, back) : NULL;
            print_error("round trip failed:\n  printed: %s\n  read:    %s\n",
                        s, t ? t : "(parse error)");
            free(t);
            free(s);
            fail();
        }
        /* LaTeX of the same expression is produced without trouble and
         * balanced */
        char *l = expr_to_latex(g, e);
        int depth = 0;
        for (const char *p = l; *p; p++) {
            depth += *p == '{';
            depth -= *p == '}';
            assert_true(depth >= 0);
        }
        assert_int_equal(depth, 0);
        free(l);
        free(s);
        done++;
    }
    assert_true(done > 1000);
}

/* ---- numbers -------------------------------------------------------------- */

static void expect_number(double v, const char *want)
{
    char buf[40];
    const char *s = expr_format_number(v, buf, sizeof buf);
    assert_ptr_equal(s, buf);
    if (strcmp(s, want) != 0) {
        print_error("%.17g formatted as \"%s\", expected \"%s\"\n", v, s,
                    want);
        fail();
    }
}

static void test_number_table(void **state)
{
    (void)state;
    expect_number(0.1, "0.1");
    expect_number(0.0, "0");
    expect_number(-0.0, "-0");
    expect_number(1.0, "1");
    expect_number(-3.0, "-3");
    expect_number(2.5, "2.5");
    expect_number(100.0, "100");
    expect_number(1e6, "1000000");
    expect_number(1e-12, "1e-12");
    expect_number(1e-5, "1e-5");
    expect_number(1e20, "1e20");
    expect_number(1.5e300, "1.5e300");
    expect_number(1e-300, "1e-300");
    expect_number(5e-324, "5e-324");
    expect_number(1.7976931348623157e308, "1.7976931348623157e308");
    expect_number(0.1 + 0.2, "0.30000000000000004");
    expect_number(1.0 / 3.0, "0.3333333333333333");
    expect_number(123456.789, "123456.789");
    expect_number(INFINITY, "inf");
    expect_number(-INFINITY, "-inf");
    expect_number(NAN, "nan");
}

static uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* Significant digits in a %g-style mantissa. */
static int sig_digits(const char *s)
{
    int n = 0;
    bool started = false;
    for (; *s && *s != 'e'; s++) {
        if (!isdigit((unsigned char)*s))
            continue;
        if (*s != '0')
            started = true;
        if (started)
            n++;
    }
    return n;
}

static void check_number(double v)
{
    char buf[40];
    expr_format_number(v, buf, sizeof buf);
    double back = strtod(buf, NULL);
    if (dbits(back) != dbits(v)) {
        print_error("%.17g -> \"%s\" -> %.17g\n", v, buf, back);
        fail();
    }
    /* shortest: one digit fewer does not read back (outside the plain
     * integer form, which is exact by construction) */
    if (!(fabs(v) < 1e15 && v == trunc(v))) {
        int d = sig_digits(buf);
        if (d > 1) {
            char shorter[400];
            snprintf(shorter, sizeof shorter, "%.*g", d - 1, v);
            if (strtod(shorter, NULL) == v) {
                print_error("%.17g printed as \"%s\" but \"%s\" suffices\n",
                            v, buf, shorter);
                fail();
            }
        }
    }
}

static void test_number_round_trip(void **state)
{
    (void)state;
    const double edge[] = {0.1,      1e-300,  5e-324, 1.7976931348623157e308,
                           -0.0,     2.2250738585072014e-308,
                           4.9406564584124654e-324, 9007199254740993.0,
                           1e15,     999999999999999.0, 1e16, 0.5, -1e-7,
                           123.456,  3.14159265358979311600};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        check_number(edge[i]);
        check_number(-edge[i]);
    }
    rng_state = 8;
    for (int i = 0; i < 200000; i++) {
        uint64_t u = rng();
        double v;
        memcpy(&v, &u, sizeof v);
        if (!isfinite(v))
            continue;
        check_number(v);
        /* and values of a everyday magnitude */
        check_number((double)(int64_t)(u >> 40) / 1000.0);
        check_number(ldexp((double)(u >> 11), -53) * 10.0);
    }
}

/* The fewest digits by every p in turn, printed by printf's "%.*g" with
 * its exponent's '+' and leading zeros removed, as nh formatted numbers
 * before the bisection and its own rounding (rational.c): the same text
 * for every double. */
static void linear_shortest(double v, char *buf, size_t size)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, size, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    char *e = strchr(buf, 'e');
    if (!e)
        return;
    int x = atoi(e + 1);
    snprintf(e, size - (size_t)(e - buf), "e%d", x);
}

static void same_as_linear(double v)
{
    if (!isfinite(v) || v == 0 || (fabs(v) < 1e15 && v == trunc(v)))
        return;
    char a[64], b[64];
    expr_format_number(v, a, sizeof a);
    linear_shortest(v, b, sizeof b);
    if (strcmp(a, b) != 0) {
        print_error("%.17g: \"%s\" against the linear search's \"%s\"\n",
                    v, a, b);
        fail();
    }
}

/* The bisection over the digits, rounded from one snprintf's 17, gives
 * the text that printf gives trying every count in turn: random doubles,
 * everyday decimals, every power of two (whose rounding interval is
 * narrower below) and its neighbours, and decimal midpoints (k + 1/2)
 * 10^j whose 17 digits end in 5000… (where rounding twice could differ
 * from rounding once) with their neighbours. */
static void test_number_bisection(void **state)
{
    (void)state;
    rng_state = 11;
    for (int i = 0; i < 200000; i++) {
        uint64_t u = rng();
        double v;
        memcpy(&v, &u, sizeof v);
        same_as_linear(v);
        same_as_linear((double)(int64_t)(u >> 44) / 1000.0);
        same_as_linear((double)(int64_t)(u >> 50) * 1e-7);
        same_as_linear(ldexp((double)(u >> 11), -53) * 10.0);
    }
    for (int e = -1074; e <= 1023; e++) {
        double v = ldexp(1.0, e);
        same_as_linear(v);
        same_as_linear(nextafter(v, 0));
        same_as_linear(nextafter(v, INFINITY));
        same_as_linear(-v);
    }
    for (int i = 0; i < 100000; i++) {
        uint64_t u = rng();
        int digits = 1 + (int)(u % 16), j = (int)((u >> 8) % 40) - 20;
        double k = (double)((u >> 16) % 100000000000000ULL);
        k = fmod(k, pow(10, digits - 1));
        double v = (k + 0.5) * pow(10, j);
        same_as_linear(v);
        same_as_linear(nextafter(v, 0));
        same_as_linear(nextafter(v, INFINITY));
        same_as_linear(ldexp((double)((u >> 20) | 1), -(int)(u % 60)));
    }
}

int main(void)
{
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_reader_itself),       T_(test_text_table),
        T_(test_latex_table),         T_(test_round_trip_random),
        T_(test_fractions_and_order),
        cmocka_unit_test(test_number_table),
        cmocka_unit_test(test_number_round_trip),
        cmocka_unit_test(test_number_bisection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
