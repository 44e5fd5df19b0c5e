/*
 * test_tape.c — compiled tapes against the tree evaluator.
 *
 * On random DAGs over every op (fixed seed) and random points, including
 * points outside the domains and special values (±0, ±inf, NaN, huge,
 * tiny), every output of tape_eval must have exactly the bits of
 * expr_eval; a NaN must meet a NaN, whose sign and payload IEEE 754 leaves
 * open when two NaNs meet in one operation (and C lets the compiler
 * commute the operands of + and *).  Slot reuse must keep the work buffer
 * far below the length of a long chain.  Built with -DNH_TAPE_SWITCH (and
 * tape.c) this suite checks the switch dispatch as well as the computed
 * goto.
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
#include "tests/cc_load.h"

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng() >> 11) / 9007199254740992.0;
}

enum { NV = 6 };

#define N1(c) expr_num(g, (c))

static expr_graph_t *new_graph(const expr_t **v)
{
    expr_graph_t *g = expr_graph_new();
    const char *names[NV] = {"x", "y", "z", "x'", "m", "t"};
    for (int i = 0; i < NV; i++)
        v[i] = expr_var(g, expr_var_declare(g, names[i]));
    return g;
}

/* Tape and tree agree bit for bit on every output at VALS. */
static void check_bits(const expr_graph_t *g, const tape_t *t,
                       const expr_t *const *outs, size_t nout,
                       const double *vals)
{
    double *out = malloc((nout ? nout : 1) * sizeof *out);
    double *work = malloc((tape_work_size(t) + 1) * sizeof *work);
    tape_eval(t, vals, out, work);
    for (size_t k = 0; k < nout; k++) {
        double want = expr_eval(g, outs[k], vals);
        bool same = memcmp(&want, &out[k], sizeof want) == 0 ||
                    (isnan(want) && isnan(out[k]));
        if (!same) {
            char *s = expr_to_text(g, outs[k]);
            print_error("output %zu: tape %.17g, tree %.17g\n  %s\n", k,
                        out[k], want, s);
            free(s);
            free(out);
            free(work);
            fail();
        }
    }
    free(out);
    free(work);
}

static const expr_t *random_node(expr_graph_t *g, const expr_t **pool,
                                 size_t n)
{
    const expr_t *a = pool[rng() % n], *b = pool[rng() % n];
    static const expr_op_t fn1[] = {
        EXPR_SIN,  EXPR_COS,  EXPR_TAN,  EXPR_ASIN, EXPR_ACOS,
        EXPR_ATAN, EXPR_SINH, EXPR_COSH, EXPR_TANH, EXPR_EXP,
        EXPR_LOG,  EXPR_SQRT, EXPR_ABS,  EXPR_SIGN};
    static const double ex[] = {2, 3, -1, -2, 0.5, -0.5, 1.5, 4, 0.25};
    switch (rng() % 12) {
    case 0:
    case 1:
        return expr_add(g, a, b);
    case 2:
        return expr_sub(g, a, b);
    case 3:
    case 4: {
        const expr_t *f[3] = {a, b, pool[rng() % n]};
        return expr_product(g, f, 2 + rng() % 2);
    }
    case 5:
        return expr_div(g, a, b);
    case 6:
        return expr_pow(g, a, expr_num(g, ex[rng() % 9]));
    case 7:
        return expr_pow(g, a, b);
    case 8:
        return expr_call(g, EXPR_ATAN2, a, b);
    case 9:
        return expr_call(g, rng() % 2 ? EXPR_MIN : EXPR_MAX, a, b);
    default:
        return expr_call(g, fn1[rng() % 14], a, NULL);
    }
}

static double random_value(void)
{
    static const double special[] = {0.0,       -0.0, INFINITY, -INFINITY,
                                     NAN,       1e200, -1e200,  1e-200,
                                     -1e-310,   1.0,  -1.0,     2.0};
    switch (rng() % 10) {
    case 0:
        return special[rng() % 12];
    case 1:
        return uniform(-100, 100);
    default:
        return uniform(-2, 2);
    }
}

/* POOL[0..size): the variables V, three constants, then random nodes
 * over what comes before; with RECENT, mostly over the last 40 (a long
 * tape that stays finite at many points), some over anything before. */
static void random_pool(expr_graph_t *g, const expr_t *const *v,
                        const expr_t **pool, size_t size, bool recent)
{
    size_t n = 0;
    for (int i = 0; i < NV; i++)
        pool[n++] = v[i];
    pool[n++] = expr_num(g, 0.5);
    pool[n++] = expr_num(g, -3);
    pool[n++] = expr_num(g, 2);
    while (n < size) {
        size_t from = recent && rng() % 4 ? n - (n < 40 ? n : 40) : 0;
        pool[n] = random_node(g, pool + from, n - from), n++;
    }
}

static void test_random_dags(void **state)
{
    (void)state;
    rng_state = 2718281828;
    for (int round = 0; round < 300; round++) {
        const expr_t *v[NV];
        expr_graph_t *g = new_graph(v);
        enum { POOL = 80 };
        const expr_t *pool[POOL];
        random_pool(g, v, pool, POOL, false);
        /* outputs: the last nodes, some random ones, a bare variable, a
         * bare constant, and one output twice */
        const expr_t *outs[16];
        size_t nout = 0;
        for (int i = 0; i < 8; i++)
            outs[nout++] = pool[POOL - 1 - i];
        for (int i = 0; i < 5; i++)
            outs[nout++] = pool[rng() % POOL];
        outs[nout++] = v[rng() % NV];
        outs[nout++] = expr_num(g, 1.25);
        outs[nout++] = outs[0];
        tape_t *t = tape_compile(g, outs, nout, NV);
        assert_int_equal(tape_nout(t), nout);
        for (int p = 0; p < 40; p++) {
            double vals[NV];
            for (int i = 0; i < NV; i++)
                vals[i] = random_value();
            check_bits(g, t, outs, nout, vals);
        }
        tape_free(t);
        expr_graph_free(g);
    }
}

/* The special cases of POW at the values where shortcuts could differ. */
static void test_pow_special_values(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const double ex[] = {2, 3, -1, -2, 0.5, -0.5, 0.25, 1.5, 7, -3};
    const expr_t *outs[12];
    size_t nout = 0;
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++)
        outs[nout++] = expr_pow(g, v[0], expr_num(g, ex[i]));
    outs[nout++] = expr_pow(g, v[0], v[1]);
    outs[nout++] = expr_call(g, EXPR_SIGN, v[0], NULL);
    tape_t *t = tape_compile(g, outs, nout, NV);
    const double xs[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-200,
                         -1e-200, 1e200, -1e200, 5e-324, 1.1, -1.1, 3.0};
    const double ys[] = {2, 3, -1, -2, 0.5, 0, NAN, -0.0, 1e300};
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++)
        for (size_t j = 0; j < sizeof ys / sizeof *ys; j++) {
            double vals[NV] = {xs[i], ys[j], 0, 0, 0, 0};
            check_bits(g, t, outs, nout, vals);
        }
    /* x^2 is x*x, x^-1 is 1/x, x^0.5 is pow (not sqrt) */
    double vals[NV] = {-0.0, 0, 0, 0, 0, 0};
    double out[12], work[64];
    assert_true(tape_work_size(t) <= 64);
    tape_eval(t, vals, out, work);
    assert_true(out[0] == 0 && !signbit(out[0])); /* (-0)*(-0) = +0 */
    assert_true(out[2] == -INFINITY);              /* 1/-0 */
    assert_true(out[4] == 0 && !signbit(out[4])); /* pow(-0, 0.5) = +0 */
    vals[0] = -INFINITY;
    tape_eval(t, vals, out, work);
    assert_true(out[4] == INFINITY); /* pow(-inf, 0.5), sqrt would be NaN */
    tape_free(t);
    expr_graph_free(g);
}

/* A long chain: every node is read only by the next, so two or three
 * slots serve the whole tape. */
static void test_slot_reuse(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const expr_t *e = v[0];
    double want = 0.3;
    for (int i = 0; i < 1000; i++) {
        e = expr_call(g, EXPR_SIN, expr_add(g, e, v[1]), NULL);
        want = sin(want + 0.1);
    }
    tape_t *t = tape_compile(g, &e, 1, NV);
    assert_int_equal(tape_length(t), 2000);
    assert_true(tape_work_size(t) <= 4);
    double vals[NV] = {0.3, 0.1, 0, 0, 0, 0}, out[1], work[4];
    tape_eval(t, vals, out, work);
    assert_true(out[0] == want);
    check_bits(g, t, &e, 1, vals);
    tape_free(t);

    /* a wide sum of products: each term is folded in as soon as it is
     * computed, so the work size stays at the few values alive at once
     * (the accumulator, s_i, s_i*x'), not the 200 terms */
    const expr_t *terms[200];
    const expr_t *si = v[2];
    for (int i = 0; i < 200; i++) {
        si = expr_call(g, EXPR_SIN, si, NULL);
        terms[i] = expr_mul(g, si, v[3]);
    }
    const expr_t *s = expr_sum(g, terms, 200);
    t = tape_compile(g, &s, 1, NV);
    assert_true(tape_length(t) >= 400);
    assert_true(tape_work_size(t) <= 4);
    double vals2[NV] = {0, 0, 0.7, 1.3, 0, 0};
    check_bits(g, t, &s, 1, vals2);
    tape_free(t);

    /* fused chain steps release their operands too: in
     * u = x*y*sin(cos(u))*cos(u) the last two factors are folded by one
     * instruction, cos(u) having been computed inside sin(cos(u)); and
     * x*y, the prefix every level shares, is computed once */
    const expr_t *u = v[0];
    for (int i = 0; i < 50; i++) {
        const expr_t *cu = expr_call(g, EXPR_COS, u, NULL);
        const expr_t *f[4] = {v[0], v[1], cu,
                              expr_call(g, EXPR_SIN, cu, NULL)};
        u = expr_product(g, f, 4);
    }
    t = tape_compile(g, &u, 1, NV);
    /* MUL x*y once, then COS, SIN, (x*y*sin)*cos per level */
    assert_int_equal(tape_length(t), 1 + 50 * 3);
    assert_true(tape_work_size(t) <= 4);
    double vals3[NV] = {0.9, 1.1, 0, 0, 0, 0};
    check_bits(g, t, &u, 1, vals3);
    tape_free(t);
    expr_graph_free(g);
}

/* The compiler's rewrites are exact: a product with a negative
 * coefficient is the negation of the product without it, a sum subtracts
 * it, sin and cos of one operand come from one SINCOS, shared prefixes of
 * products are computed once and fused instructions round twice — at the
 * values where a sign or a NaN could tell (±0, ±inf, NaN, huge, tiny). */
static void test_rewrites_exact(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const expr_t *x = v[0], *y = v[1], *z = v[2];
    const expr_t *sx = expr_call(g, EXPR_SIN, x, NULL);
    const expr_t *cx = expr_call(g, EXPR_COS, x, NULL);
    const expr_t *outs[] = {
        expr_neg(g, expr_mul(g, x, y)),                          /* -x*y */
        expr_sub(g, expr_mul(g, x, y), expr_mul(g, x, z)),       /* x*y - x*z */
        expr_sub(g, expr_neg(g, expr_mul(g, x, y)), z),          /* -x*y - z */
        expr_add(g, expr_mul(g, expr_num(g, -2.5), expr_mul(g, x, y)), z),
        expr_sub(g, expr_neg(g, x), y),                          /* -x - y */
        expr_mul(g, expr_sub(g, x, y), z),                       /* (x-y)*z */
        expr_product(g, (const expr_t *[]){x, y, z, sx}, 4),
        expr_product(g, (const expr_t *[]){x, y, z, cx}, 4),
        expr_add(g, expr_mul(g, sx, y), expr_mul(g, cx, z)),
        sx, cx, expr_mul(g, sx, cx),
        expr_sum(g, (const expr_t *[]){x, expr_mul(g, y, z),
                                      expr_neg(g, expr_mul(g, z, x)),
                                      expr_mul(g, expr_num(g, -1e300), y)},
                 4),
    };
    size_t nout = sizeof outs / sizeof *outs;
    tape_t *t = tape_compile(g, outs, nout, NV);
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN,
                                     1e308, -1e-310, 1.5, -2.25, 3e-300};
    enum { S = sizeof special / sizeof *special };
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++)
            for (int k = 0; k < S; k += 3) {
                double vals[NV] = {special[i], special[j], special[k], 0, 0, 0};
                check_bits(g, t, outs, nout, vals);
            }
    /* sin and cos of x are one instruction: with them, the products and
     * sums above take at most this many */
    assert_true(tape_length(t) <= 21);
    tape_free(t);
    expr_graph_free(g);
}

/* Outputs that are variables or constants only: no instructions. */
static void test_trivial_outputs(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const expr_t *outs[3] = {v[2], expr_num(g, -7.5), v[2]};
    tape_t *t = tape_compile(g, outs, 3, NV);
    assert_int_equal(tape_length(t), 0);
    assert_int_equal(tape_nout(t), 3);
    double vals[NV] = {1, 2, 3, 4, 5, 6}, out[3], work[2];
    tape_eval(t, vals, out, work);
    assert_true(out[0] == 3 && out[1] == -7.5 && out[2] == 3);
    tape_free(t);
    t = tape_compile(g, NULL, 0, NV);
    assert_int_equal(tape_nout(t), 0);
    tape_eval(t, vals, out, work);
    tape_free(t);
    tape_free(NULL);
    expr_graph_free(g);
}

/* The tape does not reference the graph after compilation. */
static void test_outlives_graph(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const expr_t *e = expr_add(g, expr_mul(g, v[0], v[1]),
                               expr_call(g, EXPR_EXP, v[2], NULL));
    tape_t *t = tape_compile(g, &e, 1, NV);
    double vals[NV] = {1.5, 2, 0.5, 0, 0, 0};
    double want = expr_eval(g, e, vals);
    expr_graph_free(g);
    double out[1], work[16];
    assert_true(tape_work_size(t) <= 16);
    tape_eval(t, vals, out, work);
    assert_memory_equal(out, &want, sizeof want);
    tape_free(t);
}

/* Derivatives of a rolling-sphere Lagrangian: a realistic tape. */
static void test_lagrangian_tape(void **state)
{
    (void)state;
    expr_graph_t *g = expr_graph_new();
    const char *names[] = {"m", "R", "phi", "theta", "psi", "x", "y",
                           "phi'", "theta'", "psi'", "x'", "y'"};
    const expr_t *v[12];
    for (int i = 0; i < 12; i++)
        v[i] = expr_var(g, expr_var_declare(g, names[i]));
    const expr_t *two = expr_num(g, 2);
    const expr_t *sq[5];
    for (int i = 0; i < 5; i++)
        sq[i] = expr_pow(g, v[7 + i], two);
    const expr_t *rot[4] = {sq[0], sq[1], sq[2],
                            expr_product(g, (const expr_t *[]){two, v[7], v[9],
                                                               expr_call(g, EXPR_COS, v[3], NULL)},
                                         4)};
    const expr_t *T = expr_add(
        g, expr_mul(g, expr_div(g, v[0], two), expr_add(g, sq[3], sq[4])),
        expr_mul(g, expr_div(g, expr_mul(g, v[0], expr_pow(g, v[1], two)),
                             expr_num(g, 5)),
                 expr_sum(g, rot, 4)));
    const expr_t *outs[25];
    size_t nout = 0;
    for (uint32_t q = 2; q < 12; q++)
        outs[nout++] = expr_diff(g, T, q);
    for (uint32_t q = 7; q < 12; q++)
        for (uint32_t r = 7; r <= q; r++)
            outs[nout++] = expr_diff(g, expr_diff(g, T, q), r);
    tape_t *t = tape_compile(g, outs, nout, 12);
    rng_state = 5;
    for (int p = 0; p < 1000; p++) {
        double vals[12];
        for (int i = 0; i < 12; i++)
            vals[i] = uniform(-2, 2);
        check_bits(g, t, outs, nout, vals);
    }
    tape_free(t);
    expr_graph_free(g);
}

/* LANGUAGE.md §3.4.1: no operation hides a value that is not finite.
 * For every op, when an operand it reads is ±inf or NaN, the tape's
 * result is not finite either (and the tree's, bit for bit): 1/inf,
 * 1/inf^2, pow(inf, -0.5), pow(0.5, inf), pow(1, NaN), pow(NaN, 0) (x^y
 * at y = 0), exp(-inf), atan(inf), tanh(inf), sign(inf), atan2 with an
 * infinite operand, min(inf, 1) and max(-inf, 1) included, which IEEE
 * makes finite. */
static void test_no_value_hidden(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const expr_t *x = v[0], *y = v[1];
    static const double ex[] = {2, 3, -1, -2, 0.5, -0.5, 1.5, 7, -3};
    static const expr_op_t fn1[] = {
        EXPR_SIN,  EXPR_COS,  EXPR_TAN,  EXPR_ASIN, EXPR_ACOS,
        EXPR_ATAN, EXPR_SINH, EXPR_COSH, EXPR_TANH, EXPR_EXP,
        EXPR_LOG,  EXPR_SQRT, EXPR_ABS,  EXPR_SIGN};
    enum { NX = sizeof ex / sizeof *ex + sizeof fn1 / sizeof *fn1 };
    /* outputs that read x alone, then outputs that read x and y */
    const expr_t *outs[NX + 12];
    size_t nout = 0;
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++)
        outs[nout++] = expr_pow(g, x, expr_num(g, ex[i]));
    for (size_t i = 0; i < sizeof fn1 / sizeof *fn1; i++)
        outs[nout++] = expr_call(g, fn1[i], x, NULL);
    size_t nx = nout;
    outs[nout++] = expr_add(g, x, y);
    outs[nout++] = expr_sub(g, x, y);
    outs[nout++] = expr_mul(g, x, y);
    outs[nout++] = expr_div(g, x, y);
    outs[nout++] = expr_div(g, y, x);
    outs[nout++] = expr_pow(g, x, y);
    outs[nout++] = expr_pow(g, y, x);
    outs[nout++] = expr_call(g, EXPR_ATAN2, x, y);
    outs[nout++] = expr_call(g, EXPR_ATAN2, y, x);
    outs[nout++] = expr_call(g, EXPR_MIN, x, y);
    outs[nout++] = expr_call(g, EXPR_MAX, y, x);
    outs[nout++] = expr_mul(g, expr_mul(g, x, y), expr_pow(g, y, N1(-1)));
    tape_t *t = tape_compile(g, outs, nout, NV);
    static const double bad[] = {INFINITY, -INFINITY, NAN};
    static const double any[] = {INFINITY, -INFINITY, NAN, 0.0, -0.0, 1.0,
                                 -1.0, 0.5, 2.0, 1e300, -1e-300};
    double out[NX + 12], *work = malloc(tape_work_size(t) * sizeof *work);
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < sizeof any / sizeof *any; j++) {
            double vals[NV] = {bad[i], any[j], 0, 0, 0, 0};
            tape_eval(t, vals, out, work);
            check_bits(g, t, outs, nout, vals);
            for (size_t k = 0; k < nout; k++)
                if (isfinite(out[k])) {
                    char *txt = expr_to_text(g, outs[k]);
                    print_error("%s = %g at x = %g, y = %g\n", txt, out[k],
                                vals[0], vals[1]);
                    free(txt);
                    fail();
                }
            /* and y not finite: the outputs that read y */
            vals[0] = any[j];
            vals[1] = bad[i];
            tape_eval(t, vals, out, work);
            check_bits(g, t, outs, nout, vals);
            for (size_t k = nx; k < nout; k++)
                assert_false(isfinite(out[k]));
        }
    free(work);
    tape_free(t);
    expr_graph_free(g);
}

/* A guard (expr.h) runs as GUARD instructions: x*y/x is y where x != 0,
 * NaN at x = 0 (one reciprocal, one guard); x - x and 0*y are 0 with no
 * guard and no instruction, y being a variable; a guard of two atoms is
 * a chain of two. */
static void test_guard(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const expr_t *x = v[0], *y = v[1], *z = v[2];
    const expr_t *outs[] = {
        expr_div(g, expr_mul(g, x, y), x),
        expr_sub(g, x, x),
        expr_mul(g, N1(0), y),
        expr_div(g, expr_mul(g, expr_mul(g, x, z), y), expr_mul(g, x, z)),
    };
    assert_int_equal(outs[0]->op, EXPR_GUARD);
    assert_int_equal(outs[3]->op, EXPR_GUARD);
    tape_t *t = tape_compile(g, outs, 2, NV);
    assert_int_equal(tape_length(t), 2); /* 1/x, guard */
    tape_free(t);
    t = tape_compile(g, outs + 1, 2, NV);
    assert_int_equal(tape_length(t), 0);
    tape_free(t);
    t = tape_compile(g, outs + 3, 1, NV);
    assert_int_equal(tape_length(t), 4); /* 1/x, 1/z, two guards */
    tape_free(t);
    t = tape_compile(g, outs, 4, NV);
    double out[4], *work = malloc(tape_work_size(t) * sizeof *work);
    double at[][NV] = {{2, 3, 5}, {0, 3, 5}, {2, 3, 0}, {-0.0, 3, 1}};
    for (size_t i = 0; i < 4; i++) {
        tape_eval(t, at[i], out, work);
        check_bits(g, t, outs, 4, at[i]);
        assert_true(isnan(out[0]) == (at[i][0] == 0));
        assert_true(out[0] == 3 || at[i][0] == 0);
        assert_true(out[1] == 0 && out[2] == 0);
        assert_true(isnan(out[3]) == (at[i][0] == 0 || at[i][2] == 0));
        assert_true(out[3] == 3 || isnan(out[3]));
    }
    free(work);
    tape_free(t);
    expr_graph_free(g);
}

/* Forward-mode derivatives (tape_eval_tangent) against the tape of the
 * symbolic derivatives (expr_diff), on random DAGs over every smooth op
 * at random points inside the domains: each variable's own direction and
 * one random combination of them.  The two are different formulas for
 * the same number (the symbolic one simplified), so they agree to
 * rounding, not bit for bit: within 1e-9 relative.  (min, max, abs and
 * sign are left to test_tangent_kinks: diff.c writes min and max as
 * (a' + b')/2 ∓ sign(a − b)(a' − b')/2, which cancels catastrophically
 * when the branch not taken is steep.) */
static void test_tangent_vs_diff(void **state)
{
    (void)state;
    rng_state = 1414213562;
    size_t compared = 0;
    for (int round = 0; round < 200; round++) {
        const expr_t *v[NV];
        expr_graph_t *g = new_graph(v);
        enum { POOL = 40, K = NV + 1 };
        const expr_t *pool[POOL];
        size_t n = 0;
        for (int i = 0; i < NV; i++)
            pool[n++] = v[i];
        pool[n++] = expr_num(g, 0.5);
        pool[n++] = expr_num(g, 2);
        while (n < POOL) {
            const expr_t *e = random_node(g, pool, n);
            if (e->op != EXPR_MIN && e->op != EXPR_MAX &&
                e->op != EXPR_ABS && e->op != EXPR_SIGN)
                pool[n++] = e;
        }
        enum { NOUT = 6 };
        const expr_t *outs[NOUT];
        for (int i = 0; i < NOUT; i++)
            outs[i] = pool[POOL - 1 - i];
        /* the symbolic derivatives, and a second tape of them */
        const expr_t *d[NOUT * NV];
        for (int o = 0; o < NOUT; o++)
            for (int i = 0; i < NV; i++)
                d[o * NV + i] = expr_diff(g, outs[o], (uint32_t)i);
        tape_t *t = tape_compile(g, outs, NOUT, NV);
        tape_t *td = tape_compile(g, d, NOUT * NV, NV);
        double *work = calloc(tape_work_size(t) + 1, sizeof *work);
        double *dwork = calloc((tape_work_size(t) + 1) * K, sizeof *dwork);
        double *wd = calloc(tape_work_size(td) + 1, sizeof *wd);
        for (int p = 0; p < 20; p++) {
            double vals[NV], seed[NV * K], c[NV];
            for (int i = 0; i < NV; i++) {
                vals[i] = rng() % 2 ? uniform(0.1, 0.9) : uniform(-3, 3);
                c[i] = uniform(-1, 1);
                for (int j = 0; j < K; j++)
                    seed[i * K + j] = j == i ? 1.0 : j == NV ? c[i] : 0.0;
            }
            double out[NOUT], dout[NOUT * K], want[NOUT * NV];
            double ref[NOUT];
            tape_eval_tangent(t, vals, seed, K, out, dout, work, dwork);
            tape_eval(t, vals, ref, work);
            tape_eval(td, vals, want, wd);
            for (int o = 0; o < NOUT; o++) {
                /* the values are tape_eval's, bit for bit */
                assert_true(memcmp(&out[o], &ref[o], sizeof ref[o]) == 0 ||
                            (isnan(out[o]) && isnan(ref[o])));
                if (!isfinite(out[o]) || fabs(out[o]) > 1e6)
                    continue;
                double comb = 0, scale = 1;
                bool finite = true;
                for (int i = 0; i < NV; i++) {
                    double w = want[o * NV + i];
                    finite &= isfinite(w) && fabs(w) < 1e6;
                    comb += c[i] * w;
                    scale += fabs(c[i] * w);
                }
                if (!finite)
                    continue;
                for (int i = 0; i < NV; i++) {
                    double w = want[o * NV + i], got = dout[o * K + i];
                    if (!(fabs(got - w) <= 1e-9 * fmax(1, fabs(w)))) {
                        char *s = expr_to_text(g, outs[o]);
                        print_error("d/d%s of %s: tangent %.17g, diff %.17g "
                                    "at point %d\n",
                                    expr_var_name(g, (uint32_t)i), s, got,
                                    w, p);
                        free(s);
                        fail();
                    }
                    compared++;
                }
                assert_true(fabs(dout[o * K + NV] - comb) <= 1e-9 * scale);
            }
        }
        free(work);
        free(dwork);
        free(wd);
        tape_free(t);
        tape_free(td);
        expr_graph_free(g);
    }
    assert_true(compared > 10000); /* the test saw enough derivatives */
}

/* The kinks: min and max follow the branch taken (the mean of the two
 * slopes at a tie, as diff.c's formula gives), |a|' = sign(a) a', and
 * sign is flat. */
static void test_tangent_kinks(void **state)
{
    (void)state;
    const expr_t *v[NV];
    expr_graph_t *g = new_graph(v);
    const expr_t *x = v[0], *y = v[1];
    const expr_t *sq = expr_pow(g, y, expr_num(g, 2)); /* slope 2y */
    const expr_t *outs[] = {
        expr_call(g, EXPR_MIN, x, sq), expr_call(g, EXPR_MAX, x, sq),
        expr_call(g, EXPR_ABS, expr_sub(g, x, sq), NULL),
        expr_call(g, EXPR_SIGN, expr_sub(g, x, sq), NULL)};
    tape_t *t = tape_compile(g, outs, 4, NV);
    double *work = calloc(tape_work_size(t) + 1, sizeof *work);
    double *dwork = calloc((tape_work_size(t) + 1) * 2, sizeof *dwork);
    double seed[NV * 2] = {0};
    seed[0 * 2 + 0] = 1; /* d/dx */
    seed[1 * 2 + 1] = 1; /* d/dy */
    /* (x, y): x below y², above it, and at the tie x = y² = 4 */
    const double pts[3][2] = {{1, 3}, {10, 3}, {4, 2}};
    const double want[3][4][2] = {
        {{1, 0}, {0, 6}, {-1, 6}, {0, 0}},
        {{0, 6}, {1, 0}, {1, -6}, {0, 0}},
        {{0.5, 2}, {0.5, 2}, {0, 0}, {0, 0}}};
    for (int p = 0; p < 3; p++) {
        double vals[NV] = {pts[p][0], pts[p][1]}, out[4], dout[8];
        tape_eval_tangent(t, vals, seed, 2, out, dout, work, dwork);
        for (int o = 0; o < 4; o++)
            for (int j = 0; j < 2; j++)
                assert_true(dout[o * 2 + j] == want[p][o][j]);
    }
    free(work);
    free(dwork);
    tape_free(t);
    expr_graph_free(g);
}

/* tape_write_c: the C text of random tapes over every op, compiled with
 * -std=c99 -Wall -Wextra -pedantic (no warning), gives tape_eval's bits at
 * random and special points — the last tapes long enough to be written in
 * pieces, with values, inputs and sincos pairs read across them; and
 * tape_c_literal reads back exactly. */
typedef void (*tape_c_fn)(int which, const double *v, double *o);

static void test_c_text(void **state)
{
    (void)state;
    rng_state = 1414213562;
    enum { DAGS = 62, POOL = 80, BIG = 2400, NOUT = 14 };
    expr_graph_t *graphs[DAGS];
    tape_t *tapes[DAGS];
    const expr_t *outs[DAGS][NOUT];
    strbuf_t text, body;
    strbuf_init(&text);
    strbuf_init(&body);
    strbuf_add(&text, "#include <math.h>\n");
    unsigned helpers = 0;
    for (int d = 0; d < DAGS; d++) {
        const expr_t *v[NV];
        expr_graph_t *g = graphs[d] = new_graph(v);
        size_t size = d < DAGS - 2 ? POOL : BIG;
        const expr_t **pool = malloc(size * sizeof *pool);
        random_pool(g, v, pool, size, size == BIG);
        size_t k = 0;
        for (int i = 0; i < 8; i++)
            outs[d][k++] = pool[size - 1 - i];
        for (int i = 0; i < 3; i++)
            outs[d][k++] = pool[rng() % size];
        free(pool);
        outs[d][k++] = v[rng() % NV];
        outs[d][k++] = expr_num(g, -1.25);
        outs[d][k++] = expr_num(g, -0.0);
        tapes[d] = tape_compile(g, outs[d], NOUT, NV);
        if (size == BIG)
            assert_true(tape_length(tapes[d]) > 1600); /* in pieces */
        char name[32];
        snprintf(name, sizeof name, "tape%d", d);
        tape_write_c(tapes[d], &body, name, g, NULL, &helpers);
    }
    tape_write_c_helpers(&text, helpers);
    strbuf_add(&text, body.data);
    strbuf_add(&text, "void tape_c(int which, const double *v, double *o);\n"
                      "void tape_c(int which, const double *v, double *o)\n"
                      "{\n    switch (which) {\n");
    for (int d = 0; d < DAGS; d++)
        strbuf_addf(&text, "    case %d: tape%d(v, o); break;\n", d, d);
    strbuf_add(&text, "    }\n}\n");
    void *h = cc_load(text.data, CC_LOAD_STRICT);
    assert_non_null(h);
    tape_c_fn fn;
    *(void **)&fn = cc_sym(h, "tape_c");
    assert_non_null(fn);
    for (int d = 0; d < DAGS; d++) {
        double *work = malloc((tape_work_size(tapes[d]) + 1) * sizeof *work);
        for (int p = 0; p < 60; p++) {
            double vals[NV], want[NOUT], got[NOUT];
            for (int i = 0; i < NV; i++)
                vals[i] = random_value();
            tape_eval(tapes[d], vals, want, work);
            fn(d, vals, got);
            for (int k = 0; k < NOUT; k++)
                if (memcmp(&want[k], &got[k], sizeof *got) != 0 &&
                    !(isnan(want[k]) && isnan(got[k]))) {
                    char *s = expr_to_text(graphs[d], outs[d][k]);
                    print_error("tape %d output %d: C %.17g, tape %.17g\n  %s\n",
                                d, k, got[k], want[k], s);
                    free(s);
                    fail();
                }
        }
        free(work);
        tape_free(tapes[d]);
        expr_graph_free(graphs[d]);
    }
    cc_unload(h);
    strbuf_free(&text);
    strbuf_free(&body);

    /* literals: shortest, a double, read back to the same bits */
    const double lits[] = {2, -3, 0.1, -0.0, 0.0, 1e300, -5e-324, 1e15,
                           123456789012345678.0, 0.5};
    for (size_t i = 0; i < sizeof lits / sizeof *lits; i++) {
        char buf[48];
        tape_c_literal(lits[i], buf, sizeof buf);
        assert_true(strpbrk(buf, ".e") != NULL);
        const char *p = buf[0] == '(' ? buf + 1 : buf;
        double back = strtod(p, NULL);
        assert_memory_equal(&back, &lits[i], sizeof back);
    }
    char buf[48];
    tape_c_literal(NAN, buf, sizeof buf);
    assert_string_equal(buf, "NAN");
    tape_c_literal(-INFINITY, buf, sizeof buf);
    assert_string_equal(buf, "(-HUGE_VAL)");
}

/* tape_write_c_tangent: the derivatives' C text of random tapes over
 * every op (guards among them), compiled three ways at -O1, as nh's
 * compile cache compiles them — GCC's vectors of two directions (SSE2),
 * of four (-mavx2, where this machine has AVX2, as the cache builds it
 * there), and one direction at a time (NH_NO_VECTORS, as another
 * compiler builds it), each with -std=c99 -Wall -Wextra -pedantic (no
 * warning) — gives tape_eval_tangent's bits
 * in 1 to 5 directions (so that a last group has fewer directions than
 * lanes) at random and special points, with seeds that are often 0 or
 * −0 (the rule d = f·da gives +0 where da is 0, whatever f is); the last
 * two tapes long enough to be written in many pieces. */
typedef void (*tape_tan_fn)(int which, const double *v, const double *dv,
                            long k, double *o, double *dout, double *w,
                            double *dw);

static double random_seed(void)
{
    switch (rng() % 8) {
    case 0:
        return 0.0;
    case 1:
        return -0.0;
    case 2:
        return random_value();
    default:
        return uniform(-2, 2);
    }
}

/* Whether the upper halves of the AVX registers are in use (XINUSE bit
 * 2, by XGETBV with ECX = 1), or -1 where the processor cannot say.  A
 * function that leaves them so makes every SSE instruction after it
 * slow (tape.c, NH_VEND). */
static int avx_upper_in_use(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
                     : "a"(0));
    if (a < 0xd)
        return -1;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
                     : "a"(1));
    if (!(c & (1u << 27))) /* OSXSAVE */
        return -1;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
                     : "a"(0xd), "c"(1));
    if (!(a & (1u << 2))) /* XGETBV with ECX = 1 */
        return -1;
    __asm__ volatile("xgetbv" : "=a"(a), "=d"(d) : "c"(1));
    return (int)((a >> 2) & 1);
#else
    return -1;
#endif
}

static void test_c_tangent_text(void **state)
{
    (void)state;
    rng_state = 2236067977;
    enum { DAGS = 24, POOL = 80, BIG = 1300, NOUT = 12, KMAX = 5 };
    expr_graph_t *graphs[DAGS];
    tape_t *tapes[DAGS];
    strbuf_t text, body;
    strbuf_init(&text);
    strbuf_init(&body);
    strbuf_add(&text, "#include <math.h>\n");
    unsigned helpers = 0;
    for (int d = 0; d < DAGS; d++) {
        const expr_t *v[NV], *outs[NOUT];
        expr_graph_t *g = graphs[d] = new_graph(v);
        size_t size = d < DAGS - 2 ? POOL : BIG;
        const expr_t **pool = malloc(size * sizeof *pool);
        random_pool(g, v, pool, size, size == BIG);
        size_t k = 0;
        for (int i = 0; i < 7; i++)
            outs[k++] = pool[size - 1 - i];
        /* a guard: a·b/a is b where a ≠ 0 */
        const expr_t *a = pool[rng() % size], *b = pool[rng() % size];
        outs[k++] = expr_div(g, expr_mul(g, a, b), a);
        outs[k++] = pool[rng() % size];
        outs[k++] = v[rng() % NV];
        outs[k++] = expr_num(g, -1.25);
        outs[k++] = expr_num(g, 0.0);
        free(pool);
        tapes[d] = tape_compile(g, outs, NOUT, NV);
        if (size == BIG)
            assert_true(tape_length(tapes[d]) > 400); /* many pieces */
        char name[32];
        snprintf(name, sizeof name, "tan%d", d);
        tape_write_c_tangent(tapes[d], &body, name, &helpers);
    }
    tape_write_c_helpers(&text, helpers);
    strbuf_add(&text, body.data);
    strbuf_add(&text,
               "void tan_c(int which, const double *v, const double *dv, "
               "long k,\n"
               "           double *o, double *dout, double *w, double *dw);\n"
               "void tan_c(int which, const double *v, const double *dv, "
               "long k,\n"
               "           double *o, double *dout, double *w, double *dw)\n"
               "{\n    switch (which) {\n");
    for (int d = 0; d < DAGS; d++)
        strbuf_addf(&text,
                    "    case %d: tan%d(v, dv, k, o, dout, w, dw); break;\n", d,
                    d);
    strbuf_add(&text, "    }\n}\n");
    const char *builds[3] = {CC_LOAD_STRICT_O1,
                             CC_LOAD_STRICT_O1 " -DNH_NO_VECTORS", NULL};
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        builds[2] = CC_LOAD_STRICT_O1 " -mavx2";
#endif
    size_t compared = 0;
    for (int bi = 0; bi < 3 && builds[bi]; bi++) {
        void *h = cc_load(text.data, builds[bi]);
        assert_non_null(h);
        tape_tan_fn fn;
        *(void **)&fn = cc_sym(h, "tan_c");
        assert_non_null(fn);
        for (int d = 0; d < DAGS; d++) {
            const tape_t *t = tapes[d];
            size_t ws = tape_work_size(t) + 1;
            double *work = calloc(ws, sizeof *work);
            double *dwork = calloc(ws * KMAX, sizeof *dwork);
            double *V = calloc(tape_c_tangent_values(t) + 1, sizeof *V);
            double *dw = calloc(ws * KMAX, sizeof *dw);
            for (int p = 0; p < 30; p++) {
                long k = 1 + p % KMAX;
                double vals[NV], seed[NV * KMAX];
                double want[NOUT], dwant[NOUT * KMAX];
                double got[NOUT], dgot[NOUT * KMAX];
                for (int i = 0; i < NV; i++)
                    vals[i] = rng() % 3 ? uniform(-2, 2) : random_value();
                for (int i = 0; i < NV * k; i++)
                    seed[i] = random_seed();
                tape_eval_tangent(t, vals, seed, (size_t)k, want, dwant, work,
                                  dwork);
                fn(d, vals, seed, k, got, dgot, V, dw);
                /* the AVX registers' upper halves left clear */
                if (avx_upper_in_use() == 1) {
                    print_error("build '%s', tape %d: the upper halves of "
                                "the AVX registers are left in use\n",
                                builds[bi], d);
                    fail();
                }
                for (int o = 0; o < NOUT * (1 + k); o++) {
                    double w = o < NOUT ? want[o] : dwant[o - NOUT];
                    double c = o < NOUT ? got[o] : dgot[o - NOUT];
                    if (memcmp(&w, &c, sizeof c) != 0 &&
                        !(isnan(w) && isnan(c))) {
                        print_error("build '%s', tape %d, %ld directions, "
                                    "%s %d: C %.17g, tape %.17g\n",
                                    builds[bi], d, k,
                                    o < NOUT ? "output" : "derivative",
                                    o < NOUT ? o : o - NOUT, c, w);
                        fail();
                    }
                    compared++;
                }
            }
            free(work);
            free(dwork);
            free(V);
            free(dw);
        }
        cc_unload(h);
    }
    for (int d = 0; d < DAGS; d++) {
        tape_free(tapes[d]);
        expr_graph_free(graphs[d]);
    }
    strbuf_free(&text);
    strbuf_free(&body);
    assert_true(compared > 20000);
}

/* tape_write_c with many constant outputs (more than it stores one by
 * one, 256): its table gives their bits, -0 and the infinities among
 * them. */
static void test_c_const_table(void **state)
{
    (void)state;
    rng_state = 1732050807;
    strbuf_t text, body;
    unsigned helpers;
    void *h;
    /* many constant outputs (more than tape_write_c stores one by one,
     * 256): tape_write_c's table */
    enum { NK = 400 }; /* 320 of them constants */
    const expr_t *v[NV], *outs[NK];
    expr_graph_t *g = new_graph(v);
    const double lits[] = {0.0, -0.0, 1.5, -2.0, INFINITY, -5e-324};
    for (int k = 0; k < NK; k++)
        outs[k] = k % 5 == 4 ? expr_mul(g, v[k % NV], v[(k + 1) % NV])
                             : expr_num(g, lits[k % 6]);
    outs[NK - 1] = expr_num(g, -INFINITY);
    tape_t *t = tape_compile(g, outs, NK, NV);
    strbuf_init(&text);
    strbuf_init(&body);
    strbuf_add(&text, "#include <math.h>\n");
    helpers = 0;
    tape_write_c(t, &body, "consts", g, NULL, &helpers);
    assert_non_null(strstr(body.data, "static const double kv[]"));
    tape_write_c_helpers(&text, helpers);
    strbuf_add(&text, body.data);
    strbuf_add(&text, "void consts_c(const double *v, double *o);\n"
                      "void consts_c(const double *v, double *o)\n"
                      "{\n    consts(v, o);\n}\n");
    h = cc_load(text.data, CC_LOAD_STRICT);
    assert_non_null(h);
    void (*cfn)(const double *, double *);
    *(void **)&cfn = cc_sym(h, "consts_c");
    assert_non_null(cfn);
    double vals[NV], want[NK], got[NK];
    double *work = malloc((tape_work_size(t) + 1) * sizeof *work);
    for (int i = 0; i < NV; i++)
        vals[i] = random_value();
    tape_eval(t, vals, want, work);
    cfn(vals, got);
    for (int k = 0; k < NK; k++)
        assert_true(memcmp(&want[k], &got[k], sizeof got[k]) == 0 ||
                    (isnan(want[k]) && isnan(got[k])));
    free(work);
    cc_unload(h);
    tape_free(t);
    expr_graph_free(g);
    strbuf_free(&text);
    strbuf_free(&body);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_dags),
        cmocka_unit_test(test_pow_special_values),
        cmocka_unit_test(test_slot_reuse),
        cmocka_unit_test(test_rewrites_exact),
        cmocka_unit_test(test_trivial_outputs),
        cmocka_unit_test(test_outlives_graph),
        cmocka_unit_test(test_lagrangian_tape),
        cmocka_unit_test(test_no_value_hidden),
        cmocka_unit_test(test_guard),
        cmocka_unit_test(test_tangent_vs_diff),
        cmocka_unit_test(test_tangent_kinks),
        cmocka_unit_test(test_c_text),
        cmocka_unit_test(test_c_tangent_text),
        cmocka_unit_test(test_c_const_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
