/*
 * test_diff.c — partial and total derivatives, substitution, dependency
 * and degree.
 *
 * Every op's derivative is checked against a central finite difference of
 * the tree evaluator at many pseudo-random points inside its domain (a
 * second method, independent of the symbolic rules), first and second
 * derivatives; exact symbolic results are compared as nodes built
 * independently with the constructors.  Deep and shared graphs are
 * differentiated and compiled with work linear in their size.
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

#include "interp/expr/expr.h"
#include "interp/expr/tape.h"

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [lo, hi). */
static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng() >> 11) / 9007199254740992.0;
}

enum { X, Y, XD, XDD, YD, M, T, NV };

typedef struct fixture {
    expr_graph_t *g;
    const expr_t *v[NV];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->g = expr_graph_new();
    const char *names[NV] = {"x", "y", "x'", "x''", "y'", "m", "t"};
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

/* ---- finite differences --------------------------------------------------- */

/* A test function of x and y, and the box its points are drawn from (with
 * points too close to a kink, |kink(x,y)| < 0.02, skipped). */
typedef struct fcase {
    const char *name;
    const expr_t *(*build)(expr_graph_t *g, const expr_t *x,
                           const expr_t *y);
    double xlo, xhi, ylo, yhi;
    const expr_t *(*kink)(expr_graph_t *g, const expr_t *x,
                          const expr_t *y);
} fcase_t;

#define F1(op, arg) expr_call(g, op, (arg), NULL)
#define F2(op, a, b) expr_call(g, op, (a), (b))

static const expr_t *c_add(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    const expr_t *t[4] = {expr_pow(g, x, N(2)), y, expr_mul(g, x, y), N(2)};
    return expr_sum(g, t, 4);
}
static const expr_t *c_mul(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    const expr_t *f[4] = {x, y, F1(EXPR_SIN, x), F1(EXPR_EXP, y)};
    return expr_product(g, f, 4);
}
static const expr_t *c_pow_int(expr_graph_t *g, const expr_t *x,
                               const expr_t *y)
{
    return expr_pow(g, expr_add(g, x, y), N(3));
}
static const expr_t *c_pow_neg(expr_graph_t *g, const expr_t *x,
                               const expr_t *y)
{
    return expr_mul(g, y, expr_pow(g, x, N(-2.5)));
}
static const expr_t *c_pow_half(expr_graph_t *g, const expr_t *x,
                                const expr_t *y)
{
    return expr_pow(g, expr_mul(g, x, y), N(0.5));
}
static const expr_t *c_pow_var(expr_graph_t *g, const expr_t *x,
                               const expr_t *y)
{
    return expr_pow(g, x, y);
}
static const expr_t *c_pow_both(expr_graph_t *g, const expr_t *x,
                                const expr_t *y)
{
    return expr_pow(g, expr_add(g, N(1), x), expr_mul(g, x, y));
}
static const expr_t *c_pow_cbase(expr_graph_t *g, const expr_t *x,
                                 const expr_t *y)
{
    return expr_pow(g, N(2), expr_add(g, x, y));
}
static const expr_t *c_sin(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return F1(EXPR_SIN, expr_mul(g, x, y));
}
static const expr_t *c_cos(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return F1(EXPR_COS, expr_add(g, expr_pow(g, x, N(2)), y));
}
static const expr_t *c_tan(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return F1(EXPR_TAN, expr_mul(g, N(0.5), expr_mul(g, x, y)));
}
static const expr_t *c_asin(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return F1(EXPR_ASIN, expr_mul(g, N(0.5), expr_mul(g, x, y)));
}
static const expr_t *c_acos(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return F1(EXPR_ACOS,
              expr_sub(g, expr_mul(g, N(0.5), expr_mul(g, x, y)), N(0.1)));
}
static const expr_t *c_atan(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return F1(EXPR_ATAN, expr_sub(g, x, expr_mul(g, N(2), y)));
}
static const expr_t *c_atan2(expr_graph_t *g, const expr_t *x,
                             const expr_t *y)
{
    /* numerator stays positive: no crossing of the branch cut */
    return F2(EXPR_ATAN2, expr_add(g, y, expr_mul(g, N(0.1), x)),
              expr_sub(g, x, N(0.8)));
}
static const expr_t *c_sinh(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return F1(EXPR_SINH, expr_mul(g, x, y));
}
static const expr_t *c_cosh(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return F1(EXPR_COSH, expr_sub(g, x, y));
}
static const expr_t *c_tanh(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return F1(EXPR_TANH, expr_add(g, x, y));
}
static const expr_t *c_exp(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return F1(EXPR_EXP, expr_mul(g, x, y));
}
static const expr_t *c_log(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return F1(EXPR_LOG, expr_add(g, x, expr_mul(g, y, y)));
}
static const expr_t *c_sqrt(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return F1(EXPR_SQRT, expr_add(g, x, y));
}
static const expr_t *c_abs(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return expr_mul(g, y, F1(EXPR_ABS, expr_sub(g, x, y)));
}
static const expr_t *c_sign(expr_graph_t *g, const expr_t *x,
                            const expr_t *y)
{
    return expr_mul(g, expr_pow(g, x, N(2)), F1(EXPR_SIGN, expr_sub(g, x, y)));
}
static const expr_t *k_xy(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return expr_sub(g, x, y);
}
static const expr_t *c_min(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return F2(EXPR_MIN, x, expr_pow(g, y, N(2)));
}
static const expr_t *k_min(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return expr_sub(g, x, expr_pow(g, y, N(2)));
}
static const expr_t *c_max(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return F2(EXPR_MAX, expr_mul(g, x, y), N(0.5));
}
static const expr_t *k_max(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    return expr_sub(g, expr_mul(g, x, y), N(0.5));
}
static const expr_t *c_mix(expr_graph_t *g, const expr_t *x, const expr_t *y)
{
    /* a composite of several rules at once */
    const expr_t *u = expr_div(g, F1(EXPR_SIN, x), expr_add(g, N(2), y));
    const expr_t *w = F1(EXPR_LOG, expr_add(g, N(1), expr_mul(g, u, u)));
    return expr_sub(g, expr_mul(g, w, F1(EXPR_COS, expr_mul(g, x, y))),
                    F1(EXPR_SQRT, expr_add(g, x, expr_pow(g, y, N(3)))));
}

static const expr_t *c_guard(expr_graph_t *g, const expr_t *x,
                             const expr_t *y)
{
    /* x^2*y/x: x*y where x != 0 (a GUARD node) */
    return expr_div(g, expr_mul(g, expr_pow(g, x, N(2)), F1(EXPR_SIN, y)), x);
}

static const fcase_t cases[] = {
    {"add", c_add, -1.5, 1.5, -1.5, 1.5, NULL},
    {"mul", c_mul, -1.5, 1.5, -1.5, 1.5, NULL},
    {"pow int", c_pow_int, -1.5, 1.5, -1.5, 1.5, NULL},
    {"pow neg", c_pow_neg, 0.2, 2, -1, 1, NULL},
    {"pow half", c_pow_half, 0.2, 2, 0.2, 2, NULL},
    {"pow var", c_pow_var, 0.2, 2, -2, 2, NULL},
    {"pow both", c_pow_both, 0.1, 2, -1, 1, NULL},
    {"pow const base", c_pow_cbase, -2, 2, -2, 2, NULL},
    {"sin", c_sin, -2, 2, -2, 2, NULL},
    {"cos", c_cos, -2, 2, -2, 2, NULL},
    {"tan", c_tan, -1.5, 1.5, -1.5, 1.5, NULL},
    {"asin", c_asin, -1.2, 1.2, -1.2, 1.2, NULL},
    {"acos", c_acos, -1.2, 1.2, -1.2, 1.2, NULL},
    {"atan", c_atan, -2, 2, -2, 2, NULL},
    {"atan2", c_atan2, -2, 2, 0.3, 2, NULL},
    {"sinh", c_sinh, -1.5, 1.5, -1.5, 1.5, NULL},
    {"cosh", c_cosh, -1.5, 1.5, -1.5, 1.5, NULL},
    {"tanh", c_tanh, -1.5, 1.5, -1.5, 1.5, NULL},
    {"exp", c_exp, -1.5, 1.5, -1.5, 1.5, NULL},
    {"log", c_log, 0.1, 2, -2, 2, NULL},
    {"sqrt", c_sqrt, 0.1, 2, 0.1, 2, NULL},
    {"abs", c_abs, -2, 2, -2, 2, k_xy},
    {"sign", c_sign, -2, 2, -2, 2, k_xy},
    {"min", c_min, -1.5, 1.5, -1.5, 1.5, k_min},
    {"max", c_max, -1.5, 1.5, -1.5, 1.5, k_max},
    {"mix", c_mix, 0.1, 1.5, 0.1, 1.5, NULL},
    {"guard", c_guard, 0.2, 2, -2, 2, NULL},
};

/* Central difference of E along variable V at VALS. */
static double central(const expr_graph_t *g, const expr_t *e, double *vals,
                      int v)
{
    double x0 = vals[v];
    double h = 1e-5 * (1 + fabs(x0));
    vals[v] = x0 + h;
    double fp = expr_eval(g, e, vals);
    vals[v] = x0 - h;
    double fm = expr_eval(g, e, vals);
    vals[v] = x0;
    return (fp - fm) / (2 * h);
}

static void check_case(fixture_t *f, const fcase_t *c, int order)
{
    expr_graph_t *g = f->g;
    const expr_t *e = c->build(g, f->v[X], f->v[Y]);
    const expr_t *k = c->kink ? c->kink(g, f->v[X], f->v[Y]) : NULL;
    int vars[2] = {X, Y};
    int checked = 0;
    for (int i = 0; i < 200; i++) {
        double vals[NV] = {0};
        vals[X] = uniform(c->xlo, c->xhi);
        vals[Y] = uniform(c->ylo, c->yhi);
        if (k && fabs(expr_eval(g, k, vals)) < 0.02)
            continue;
        for (int j = 0; j < 2; j++) {
            int v = vars[j];
            const expr_t *d = expr_diff(g, e, (uint32_t)v);
            const expr_t *target = e;
            if (order == 2) {
                /* d/dv d/dx e against the difference of d/dx e */
                target = expr_diff(g, e, X);
                d = expr_diff(g, target, (uint32_t)v);
            }
            double sym = expr_eval(g, d, vals);
            double num = central(g, target, vals, v);
            double tol = 1e-6 * (1 + fabs(num));
            if (!(fabs(sym - num) <= tol)) {
                char *s = expr_to_text(g, d);
                print_error("%s (order %d) d/d%s at (%.17g, %.17g): "
                            "symbolic %.17g, finite difference %.17g\n"
                            "  derivative: %s\n",
                            c->name, order, j ? "y" : "x", vals[X], vals[Y],
                            sym, num, s);
                free(s);
                fail();
            }
            checked++;
        }
    }
    assert_true(checked > 200);
}

static void test_every_op_first(void **state)
{
    rng_state = 20240611;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_case(*state, &cases[i], 1);
}

static void test_every_op_second(void **state)
{
    rng_state = 777001;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_case(*state, &cases[i], 2);
}

/* Every function op appears in the table above (so a new op without a
 * finite-difference case fails here). */
static void test_table_covers_ops(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    bool seen[EXPR_OP_COUNT] = {false};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const expr_t *e = cases[i].build(g, f->v[X], f->v[Y]);
        /* mark every op below e */
        const expr_t *stack[256];
        int top = 0;
        stack[top++] = e;
        while (top) {
            const expr_t *n = stack[--top];
            seen[n->op] = true;
            for (uint32_t j = 0; j < n->nargs && top < 256; j++)
                stack[top++] = n->args[j];
        }
    }
    for (int op = 0; op < EXPR_OP_COUNT; op++)
        if (!seen[op]) {
            print_error("op %s has no derivative case\n",
                        expr_op_name((expr_op_t)op));
            fail();
        }
}

/* ---- exact symbolic results --------------------------------------------- */

static void test_symbolic(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->v[X], *xd = f->v[XD], *xdd = f->v[XDD],
                 *m = f->v[M];
    /* d/dx x^3 = 3*x^2 */
    const expr_t *d = expr_diff(g, expr_pow(g, x, N(3)), X);
    assert_ptr_equal(d, expr_mul(g, N(3), expr_pow(g, x, N(2))));
    assert_int_equal(d->op, EXPR_MUL);
    assert_ptr_equal(d->args[0], N(3));
    /* d/dx sin(x)*x'' = cos(x)*x'' */
    d = expr_diff(g, expr_mul(g, F1(EXPR_SIN, x), xdd), X);
    assert_ptr_equal(d, expr_mul(g, F1(EXPR_COS, x), xdd));
    /* d/dx' m*x'^2/2 = m*x' */
    const expr_t *ke = expr_div(g, expr_mul(g, m, expr_pow(g, xd, N(2))),
                                N(2));
    assert_ptr_equal(expr_diff(g, ke, XD), expr_mul(g, m, xd));
    assert_ptr_equal(expr_diff(g, ke, X), N(0));
    /* d/dx cos(x) = -sin(x); exp; log; sqrt */
    assert_ptr_equal(expr_diff(g, F1(EXPR_COS, x), X),
                     expr_neg(g, F1(EXPR_SIN, x)));
    assert_ptr_equal(expr_diff(g, F1(EXPR_EXP, x), X), F1(EXPR_EXP, x));
    assert_ptr_equal(expr_diff(g, F1(EXPR_LOG, x), X),
                     expr_div(g, N(1), x));
    assert_ptr_equal(expr_diff(g, F1(EXPR_SQRT, x), X),
                     expr_div(g, N(1), expr_mul(g, N(2), F1(EXPR_SQRT, x))));
    /* d/dx abs(x) = sign(x); d/dx sign(x) = 0 */
    assert_ptr_equal(expr_diff(g, F1(EXPR_ABS, x), X), F1(EXPR_SIGN, x));
    assert_ptr_equal(expr_diff(g, F1(EXPR_SIGN, x), X), N(0));
    /* x^n with a symbolic constant exponent: n*x^(n-1) */
    assert_ptr_equal(expr_diff(g, expr_pow(g, x, m), X),
                     expr_mul(g, m, expr_pow(g, x, expr_sub(g, m, N(1)))));
    /* 2^x: 2^x*log(2) (log(2) folds) */
    assert_ptr_equal(expr_diff(g, expr_pow(g, N(2), x), X),
                     expr_mul(g, expr_pow(g, N(2), x), N(log(2.0))));
    /* a variable and an unrelated variable */
    assert_ptr_equal(expr_diff(g, x, X), N(1));
    assert_ptr_equal(expr_diff(g, x, Y), N(0));
    assert_ptr_equal(expr_diff(g, N(3), X), N(0));
}

/* A derivative is defined where its expression is: the derivative of a
 * guarded value keeps the guard, also when the value's derivative is 0
 * (diff(0/0, t) is undefined, not 0), and so does the time derivative;
 * substitution and degree see through it. */
static void test_guard(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->v[X], *y = f->v[Y], *t = f->v[T];
    const expr_t *inv0 = expr_div(g, N(1), N(0));
    const expr_t *nan = expr_mul(g, N(0), inv0); /* 0/0 */
    assert_int_equal(nan->op, EXPR_GUARD);
    const expr_t *d = expr_diff(g, nan, T);
    assert_int_equal(d->op, EXPR_GUARD);
    assert_ptr_equal(d->args[0], N(0));
    assert_ptr_equal(d->args[1], inv0);
    assert_true(isnan(expr_eval(g, d, (double[NV]){0})));
    /* d/dx (x^2*y/x) = y where x != 0 */
    const expr_t *xinv = expr_pow(g, x, N(-1));
    const expr_t *e = expr_div(g, expr_mul(g, expr_pow(g, x, N(2)), y), x);
    d = expr_diff(g, e, X);
    assert_int_equal(d->op, EXPR_GUARD);
    assert_ptr_equal(d->args[0], y);
    assert_ptr_equal(d->args[1], xinv);
    /* d/dt (x*log(y)/log(y)) = x' where y > 0 and y != 1 */
    const expr_t *dvar[NV] = {NULL};
    dvar[X] = f->v[XD];
    dvar[Y] = f->v[YD];
    dvar[T] = N(1);
    const expr_t *ly = F1(EXPR_LOG, y);
    e = expr_div(g, expr_mul(g, x, ly), ly);
    assert_int_equal(e->op, EXPR_GUARD);
    d = expr_dt(g, e, dvar);
    assert_int_equal(d->op, EXPR_GUARD);
    assert_ptr_equal(d->args[0], f->v[XD]);
    double at_y1[NV] = {[X] = 2, [Y] = 1, [XD] = 3};
    assert_true(isnan(expr_eval(g, d, at_y1)));
    double at_y2[NV] = {[X] = 2, [Y] = 2, [XD] = 3};
    assert_true(expr_eval(g, d, at_y2) == 3);
    /* 0*x/t = 0 where t != 0, and so is its time derivative */
    e = expr_div(g, expr_mul(g, N(0), x), t);
    assert_int_equal(e->op, EXPR_GUARD);
    assert_int_equal(expr_dt(g, e, dvar)->op, EXPR_GUARD);
    /* substitution reaches value and domain: y := 2 makes log(y) a
     * finite constant (no guard left), y := x + 1 keeps log(x + 1) */
    const expr_t *repl[NV] = {NULL};
    repl[Y] = N(2);
    const expr_t *s = expr_subst(g, expr_div(g, expr_mul(g, x, ly), ly), repl);
    assert_ptr_equal(s, x); /* log(2) is a finite constant: no guard */
    repl[Y] = expr_add(g, x, N(1));
    s = expr_subst(g, expr_div(g, expr_mul(g, y, ly), ly), repl);
    assert_int_equal(s->op, EXPR_GUARD);
    assert_ptr_equal(s->args[0], expr_add(g, x, N(1)));
    assert_ptr_equal(s->args[1], F1(EXPR_LOG, expr_add(g, x, N(1))));
    /* degree: the value's, unless the domain reads the variables */
    bool mask[NV] = {false};
    mask[XD] = true;
    const expr_t *q = expr_div(g, expr_mul(g, expr_pow(g, f->v[XD], N(2)), x),
                               x);
    assert_int_equal(q->op, EXPR_GUARD);
    assert_int_equal(expr_degree(g, q, mask), 2);
    q = expr_div(g, expr_mul(g, expr_pow(g, f->v[XD], N(2)), x), f->v[XD]);
    assert_int_equal(expr_degree(g, q, mask), -1);
}

static void test_memoised(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *e = c_mix(g, f->v[X], f->v[Y]);
    const expr_t *d1 = expr_diff(g, e, X);
    size_t count = expr_graph_count(g);
    const expr_t *d2 = expr_diff(g, e, X);
    assert_ptr_equal(d1, d2);
    assert_int_equal(expr_graph_count(g), count);
    /* nothing is built for a variable e does not depend on */
    assert_ptr_equal(expr_diff(g, e, M), N(0));
    assert_int_equal(expr_graph_count(g), count);
}

static void test_dt(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->v[X], *xd = f->v[XD], *xdd = f->v[XDD],
                 *t = f->v[T], *m = f->v[M];
    const expr_t *dvar[NV] = {NULL};
    dvar[X] = xd;
    dvar[XD] = xdd;
    dvar[T] = N(1);
    dvar[Y] = f->v[YD];
    /* (x^2)' = 2*x*x' */
    const expr_t *d = expr_dt(g, expr_pow(g, x, N(2)), dvar);
    assert_ptr_equal(d, expr_mul(g, expr_mul(g, N(2), x), xd));
    assert_int_equal(d->op, EXPR_MUL);
    assert_int_equal(d->nargs, 3);
    /* (sin(t)*x)' = cos(t)*x + sin(t)*x' */
    d = expr_dt(g, expr_mul(g, F1(EXPR_SIN, t), x), dvar);
    assert_ptr_equal(d, expr_add(g, expr_mul(g, F1(EXPR_COS, t), x),
                                 expr_mul(g, F1(EXPR_SIN, t), xd)));
    /* (m*x')' = m*x'' : m is constant in time */
    assert_ptr_equal(expr_dt(g, expr_mul(g, m, xd), dvar),
                     expr_mul(g, m, xdd));
    assert_ptr_equal(expr_dt(g, m, dvar), N(0));
    /* numerically: d/dt along a path equals the chain rule value */
    const expr_t *e = expr_mul(g, F1(EXPR_COS, expr_mul(g, x, f->v[Y])),
                               expr_pow(g, xd, N(2)));
    d = expr_dt(g, e, dvar);
    double vals[NV] = {0.3, -0.7, 1.1, 0.4, 0.9, 2.0, 0.0};
    double want = -sin(0.3 * -0.7) * (1.1 * -0.7 + 0.3 * 0.9) * 1.1 * 1.1 +
                  cos(0.3 * -0.7) * 2 * 1.1 * 0.4;
    assert_true(fabs(expr_eval(g, d, vals) - want) < 1e-14);
}

/* ---- substitution, dependency, degree ----------------------------------- */

static void test_subst(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->v[X], *y = f->v[Y];
    const expr_t *repl[NV] = {NULL};
    const expr_t *e = expr_add(g, expr_pow(g, x, N(2)), y);
    repl[X] = expr_add(g, y, N(1));
    assert_ptr_equal(expr_subst(g, e, repl),
                     expr_add(g, expr_pow(g, expr_add(g, y, N(1)), N(2)), y));
    /* simultaneous: swap x and y */
    repl[X] = y;
    repl[Y] = x;
    assert_ptr_equal(expr_subst(g, expr_sub(g, x, expr_mul(g, N(2), y)), repl),
                     expr_sub(g, y, expr_mul(g, N(2), x)));
    /* nothing to replace: the same node */
    const expr_t *other = expr_mul(g, f->v[M], F1(EXPR_SIN, f->v[T]));
    assert_ptr_equal(expr_subst(g, other, repl), other);
    /* the result simplifies */
    const expr_t *zero_x[NV] = {NULL};
    zero_x[X] = N(0);
    assert_ptr_equal(expr_subst(g, expr_mul(g, x, y), zero_x), N(0));
    assert_ptr_equal(expr_subst(g, F1(EXPR_COS, x), zero_x), N(1));
    /* inside a shared DAG */
    const expr_t *d = F1(EXPR_SIN, expr_mul(g, x, y));
    for (int i = 0; i < 40; i++)
        d = expr_add(g, F1(EXPR_SIN, d), F1(EXPR_COS, d));
    const expr_t *one_y[NV] = {NULL};
    one_y[Y] = N(1);
    const expr_t *r = expr_subst(g, d, one_y);
    double vals[NV] = {0.3, 1.0};
    assert_true(expr_eval(g, r, vals) == expr_eval(g, d, vals));
    assert_false(expr_depends(g, r, Y));
}

static void test_depends(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *e = expr_mul(g, f->v[X], F1(EXPR_SIN, f->v[XD]));
    assert_true(expr_depends(g, e, X));
    assert_true(expr_depends(g, e, XD));
    assert_false(expr_depends(g, e, Y));
    assert_false(expr_depends(g, N(1), X));
    bool mask[NV] = {false};
    assert_false(expr_depends_any(g, e, mask));
    mask[Y] = mask[M] = true;
    assert_false(expr_depends_any(g, e, mask));
    mask[XD] = true;
    assert_true(expr_depends_any(g, e, mask));
}

/* More than 64 variables: the masks alias, the answers must not. */
static void test_depends_many_vars(void **state)
{
    (void)state;
    expr_graph_t *g = expr_graph_new();
    const expr_t *v[100];
    for (int i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        v[i] = expr_var(g, expr_var_declare(g, name));
    }
    const expr_t *e = expr_mul(g, v[6], expr_pow(g, v[7], N(2)));
    assert_true(expr_depends(g, e, 6));
    assert_false(expr_depends(g, e, 70)); /* same mask bit as 6 */
    assert_false(expr_depends(g, e, 71));
    bool mask[100] = {false};
    mask[70] = mask[71] = true;
    assert_false(expr_depends_any(g, e, mask));
    assert_int_equal(expr_degree(g, e, mask), 0);
    mask[7] = true;
    assert_true(expr_depends_any(g, e, mask));
    assert_int_equal(expr_degree(g, e, mask), 2);
    assert_ptr_equal(expr_diff(g, e, 70), expr_num(g, 0));
    assert_ptr_equal(expr_diff(g, e, 6), expr_pow(g, v[7], expr_num(g, 2)));
    const expr_t *repl[100] = {NULL};
    repl[70] = expr_num(g, 5);
    assert_ptr_equal(expr_subst(g, e, repl), e);
    expr_graph_free(g);
}

/* Beyond the exact sets (more than 256 variables) the sets alias: the
 * answers must not. */
static void test_depends_aliasing(void **state)
{
    (void)state;
    expr_graph_t *g = expr_graph_new();
    enum { NVAR = 600 };
    const expr_t **v = malloc(NVAR * sizeof *v);
    for (int i = 0; i < NVAR; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        v[i] = expr_var(g, expr_var_declare(g, name));
    }
    const expr_t *e = expr_mul(g, v[6], expr_pow(g, v[7], N(2)));
    assert_true(expr_depends(g, e, 6));
    assert_false(expr_depends(g, e, 518)); /* the same bit as 6 */
    assert_false(expr_depends(g, e, 519));
    bool *mask = calloc(NVAR, sizeof *mask);
    mask[518] = mask[519] = true;
    assert_false(expr_depends_any(g, e, mask));
    assert_int_equal(expr_degree(g, e, mask), 0);
    mask[7] = true;
    assert_true(expr_depends_any(g, e, mask));
    assert_int_equal(expr_degree(g, e, mask), 2);
    assert_ptr_equal(expr_diff(g, e, 518), expr_num(g, 0));
    assert_ptr_equal(expr_diff(g, e, 6), expr_pow(g, v[7], expr_num(g, 2)));
    /* the total derivative takes every variable once, aliased or not */
    const expr_t **dv = calloc(NVAR, sizeof *dv);
    dv[6] = v[400];
    dv[7] = v[401];
    dv[518] = v[402];
    const expr_t *d = expr_dt(g, e, dv);
    const expr_t *want = expr_add(
        g, expr_mul(g, expr_pow(g, v[7], N(2)), v[400]),
        expr_product(g, (const expr_t *[]){N(2), v[6], v[7], v[401]}, 4));
    assert_ptr_equal(d, want);
    free(dv);
    free(mask);
    free(v);
    expr_graph_free(g);
}

/* Deep and shared: sin(sin(...sin(x)...)) 2000 deep, and e = e*e + e
 * thirty times (a DAG of linear size, exponential as a tree), built,
 * differentiated, compiled and evaluated.  The work stays linear — the
 * graph holds a few nodes per level, the tape a few instructions — and
 * the values are those of the same recurrences in C. */
static void test_deep_and_shared(void **state)
{
    (void)state;
    expr_graph_t *g = expr_graph_new();
    uint32_t x = expr_var_declare(g, "x");
    enum { DEPTH = 2000 };
    const expr_t *e = expr_var(g, x);
    for (int i = 0; i < DEPTH; i++)
        e = expr_call(g, EXPR_SIN, e, NULL);
    size_t built = expr_graph_count(g);
    assert_true(built <= DEPTH + 8);
    const expr_t *d = expr_diff(g, e, x);
    /* per level: sin, cos of it, the product of the cosines so far */
    assert_true(expr_graph_count(g) <= 3 * DEPTH + 8);
    assert_int_equal(d->op, EXPR_MUL);
    assert_int_equal(d->nargs, DEPTH);
    assert_ptr_equal(expr_diff(g, e, x), d); /* memoised */
    const expr_t *outs[2] = {e, d};
    tape_t *t = tape_compile(g, outs, 2, 1);
    /* sin and cos of each level share one SINCOS; the product folds
     * two cosines per instruction */
    assert_true(tape_length(t) <= DEPTH + DEPTH / 2 + 8);
    double vars[1] = {0.7}, out[2];
    double *work = malloc(tape_work_size(t) * sizeof *work);
    tape_eval(t, vars, out, work);
    double v = 0.7, dv = 1.0;
    for (int i = 0; i < DEPTH; i++) {
        dv *= cos(v);
        v = sin(v);
    }
    assert_true(out[0] == v);
    assert_true(fabs(out[1] - dv) <= 1e-12 * fabs(dv));
    free(work);
    tape_free(t);
    expr_graph_free(g);

    g = expr_graph_new();
    x = expr_var_declare(g, "x");
    e = expr_var(g, x);
    enum { LEVELS = 30 };
    for (int i = 0; i < LEVELS; i++)
        e = expr_add(g, expr_mul(g, e, e), e);
    /* each level: the square and the sum (the sum has the level's terms,
     * so the arguments grow, the nodes do not) */
    assert_true(expr_graph_count(g) <= 4 * LEVELS + 8);
    d = expr_diff(g, e, x);
    assert_true(expr_graph_count(g) <= 20 * LEVELS + 8);
    outs[0] = e;
    outs[1] = d;
    t = tape_compile(g, outs, 2, 1);
    assert_true(tape_length(t) <= 20 * LEVELS);
    vars[0] = 0.01;
    work = malloc(tape_work_size(t) * sizeof *work);
    tape_eval(t, vars, out, work);
    v = 0.01;
    dv = 1.0;
    for (int i = 0; i < LEVELS; i++) {
        dv = 2 * v * dv + dv;
        v = v * v + v;
    }
    assert_true(fabs(out[0] - v) <= 1e-13 * v);
    assert_true(fabs(out[1] - dv) <= 1e-12 * dv);
    assert_true(out[0] == expr_eval(g, e, vars));
    assert_true(out[1] == expr_eval(g, d, vars));
    free(work);
    tape_free(t);
    expr_graph_free(g);
}

/* Very deep: e = x*sin(e) 200 000 times, 400 000 nodes deep (a chain of
 * 30 000 frames made expressions 145 000 deep, issue 31).  Derivative,
 * substitution, degree, evaluation and compilation visit the graph by
 * explicit stacks: by recursion this overflowed an 8 MiB stack.  The
 * values are those of the recurrences in C. */
static void test_very_deep(void **state)
{
    (void)state;
    expr_graph_t *g = expr_graph_new();
    uint32_t x = expr_var_declare(g, "x"), y = expr_var_declare(g, "y");
    enum { LEVELS = 200000 };
    const expr_t *vx = expr_var(g, x), *e = vx;
    for (int i = 0; i < LEVELS; i++)
        e = expr_mul(g, vx, expr_call(g, EXPR_SIN, e, NULL));
    const expr_t *d = expr_diff(g, e, x);
    /* per level: sin, the product; cos, two products and a sum */
    assert_true(expr_graph_count(g) <= 8 * (size_t)LEVELS + 16);
    double vars[2] = {0.9, 0.5};
    double v = 0.9, dv = 1.0;
    for (int i = 0; i < LEVELS; i++) {
        dv = sin(v) + 0.9 * cos(v) * dv; /* (x sin e)' = sin e + x cos e e' */
        v = 0.9 * sin(v);
    }
    assert_true(fabs(expr_eval(g, e, vars) - v) <= 1e-12 * fabs(v));
    assert_true(fabs(expr_eval(g, d, vars) - dv) <= 1e-9 * fabs(dv));
    /* x -> y: the same chain in y */
    const expr_t **repl = calloc(2, sizeof *repl);
    repl[x] = expr_var(g, y);
    const expr_t *s = expr_subst(g, e, repl);
    vars[1] = 0.9;
    assert_true(expr_eval(g, s, vars) == expr_eval(g, e, vars));
    free(repl);
    /* not a polynomial in x, of degree 0 in y */
    bool mask[2] = {true, false};
    assert_int_equal(expr_degree(g, e, mask), -1);
    mask[0] = false;
    mask[1] = true;
    assert_int_equal(expr_degree(g, e, mask), 0);
    const expr_t *outs[2] = {e, d};
    tape_t *t = tape_compile(g, outs, 2, 2);
    double out[2];
    double *work = malloc(tape_work_size(t) * sizeof *work);
    tape_eval(t, vars, out, work);
    assert_true(fabs(out[0] - v) <= 1e-12 * fabs(v));
    assert_true(fabs(out[1] - dv) <= 1e-9 * fabs(dv));
    free(work);
    tape_free(t);
    expr_graph_free(g);
}

static void test_degree(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->v[X], *xd = f->v[XD], *yd = f->v[YD], *m = f->v[M];
    bool vel[NV] = {false};
    vel[XD] = vel[YD] = true;
    const expr_t *two = N(2);
    assert_int_equal(expr_degree(g, expr_mul(g, m, expr_pow(g, xd, two)), vel),
                     2);
    assert_int_equal(
        expr_degree(g, expr_mul(g, expr_mul(g, xd, yd), F1(EXPR_SIN, x)), vel),
        2);
    assert_int_equal(expr_degree(g, F1(EXPR_SIN, xd), vel), -1);
    assert_int_equal(expr_degree(g, expr_div(g, N(1), xd), vel), -1);
    assert_int_equal(expr_degree(g, F1(EXPR_SQRT, xd), vel), -1);
    assert_int_equal(expr_degree(g, expr_pow(g, xd, N(0.5)), vel), -1);
    assert_int_equal(expr_degree(g, expr_pow(g, xd, m), vel), -1);
    assert_int_equal(expr_degree(g, expr_pow(g, expr_add(g, xd, yd), N(3)),
                                 vel),
                     3);
    assert_int_equal(expr_degree(g, expr_add(g, x, m), vel), 0);
    assert_int_equal(expr_degree(g, N(4), vel), 0);
    assert_int_equal(
        expr_degree(g, expr_add(g, expr_mul(g, F1(EXPR_EXP, x), xd), N(1)),
                    vel),
        1);
    /* a sum takes the largest degree */
    assert_int_equal(
        expr_degree(g, expr_add(g, xd, expr_mul(g, yd, expr_pow(g, xd, two))),
                    vel),
        3);
    /* x/m is a polynomial in x with m constant */
    bool pos[NV] = {false};
    pos[X] = true;
    assert_int_equal(expr_degree(g, expr_div(g, x, m), pos), 1);
}

int main(void)
{
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T_(test_every_op_first), T_(test_every_op_second), T_(test_guard),
        T_(test_table_covers_ops), T_(test_symbolic), T_(test_memoised),
        T_(test_dt), T_(test_subst), T_(test_depends),
        cmocka_unit_test(test_depends_many_vars), T_(test_degree),
        cmocka_unit_test(test_depends_aliasing),
        cmocka_unit_test(test_deep_and_shared),
        cmocka_unit_test(test_very_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
