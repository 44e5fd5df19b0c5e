/*
 * test_expr.c — the expression graph: hash-consing, canonical order,
 * simplification on construction, folding, and the evaluation semantics.
 *
 * Expected nodes are built independently of the rule under test (e.g.
 * x+x against the product 2*x, checked also field by field), and values
 * are checked against C arithmetic written out in the test.
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

typedef struct fixture {
    expr_graph_t *g;
    const expr_t *x, *y, *z, *a, *b, *c;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->g = expr_graph_new();
    const char *names[] = {"x", "y", "z", "a", "b", "c"};
    const expr_t **v[] = {&f->x, &f->y, &f->z, &f->a, &f->b, &f->c};
    for (int i = 0; i < 6; i++)
        *v[i] = expr_var(f->g, expr_var_declare(f->g, names[i]));
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

static uint64_t bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* E is VALUE where ATOM is defined: GUARD(value, atom). */
static void assert_guard(const expr_t *e, const expr_t *value,
                         const expr_t *atom)
{
    assert_int_equal(e->op, EXPR_GUARD);
    assert_int_equal(e->nargs, 2);
    assert_ptr_equal(e->args[0], value);
    assert_ptr_equal(e->args[1], atom);
}

/* E is VALUE where A and B are defined (atoms in either order: they sort
 * by id, and C leaves open which argument of a call is built first). */
static void assert_guard2(const expr_t *e, const expr_t *value,
                          const expr_t *a, const expr_t *b)
{
    assert_int_equal(e->op, EXPR_GUARD);
    assert_int_equal(e->nargs, 3);
    assert_ptr_equal(e->args[0], value);
    assert_true((e->args[1] == a && e->args[2] == b) ||
                (e->args[1] == b && e->args[2] == a));
}

/* ---- ops table ---------------------------------------------------------- */

static void test_op_table(void **state)
{
    (void)state;
    assert_int_equal(expr_op_lookup("sin"), EXPR_SIN);
    assert_int_equal(expr_op_lookup("atan2"), EXPR_ATAN2);
    assert_int_equal(expr_op_lookup("max"), EXPR_MAX);
    assert_int_equal(expr_op_lookup("sqrt"), EXPR_SQRT);
    assert_int_equal(expr_op_lookup("foo"), -1);
    assert_int_equal(expr_op_lookup("+"), -1);
    assert_int_equal(expr_op_lookup("const"), -1);
    assert_string_equal(expr_op_name(EXPR_COSH), "cosh");
    assert_int_equal(expr_op_arity(EXPR_ATAN2), 2);
    assert_int_equal(expr_op_arity(EXPR_EXP), 1);
    assert_int_equal(expr_op_arity(EXPR_ADD), -1);
    assert_int_equal(expr_op_arity(EXPR_POW), 2);
}

static void test_variables(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    assert_int_equal(expr_graph_nvars(g), 6);
    uint32_t v = expr_var_declare(g, "x'");
    assert_int_equal(v, 6);
    assert_string_equal(expr_var_name(g, v), "x'");
    assert_string_equal(expr_var_name(g, 0), "x");
    assert_int_equal(f->x->op, EXPR_VAR);
    assert_int_equal(f->x->var, 0);
    assert_int_equal(f->c->var, 5);
}

/* ---- hash-consing ------------------------------------------------------- */

static void test_hash_consing(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    assert_ptr_equal(N(2.5), N(2.5));
    assert_ptr_not_equal(N(2.5), N(2.0));
    assert_ptr_equal(expr_var(g, 1), f->y);
    assert_ptr_not_equal(f->x, f->y);
    const expr_t *s1 = expr_call(g, EXPR_SIN, f->x, NULL);
    assert_ptr_equal(s1, expr_call(g, EXPR_SIN, f->x, NULL));
    assert_ptr_not_equal(s1, expr_call(g, EXPR_COS, f->x, NULL));
    assert_ptr_not_equal(s1, expr_call(g, EXPR_SIN, f->y, NULL));
    const expr_t *p1 = expr_pow(g, f->x, f->y);
    assert_ptr_equal(p1, expr_pow(g, f->x, f->y));
    assert_ptr_not_equal(p1, expr_pow(g, f->y, f->x));
    const expr_t *at = expr_call(g, EXPR_ATAN2, f->y, f->x);
    assert_ptr_equal(at, expr_call(g, EXPR_ATAN2, f->y, f->x));
    assert_ptr_not_equal(at, expr_call(g, EXPR_ATAN2, f->x, f->y));
    /* deeper structure */
    const expr_t *e1 = expr_mul(g, expr_add(g, s1, f->z), p1);
    const expr_t *e2 = expr_mul(g, p1, expr_add(g, f->z, s1));
    assert_ptr_equal(e1, e2);
}

static void test_constants_by_bits(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    assert_ptr_not_equal(N(0.0), N(-0.0));
    assert_true(signbit(N(-0.0)->value));
    assert_ptr_equal(N(NAN), N(NAN));
    assert_ptr_not_equal(N(0.1 + 0.2), N(0.3));
    assert_true(expr_is_const(N(3), 3));
    assert_false(expr_is_const(N(3), 4));
    assert_false(expr_is_const(f->x, 0));
}

static void test_ids_dense(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    size_t before = expr_graph_count(g);
    const expr_t *e = expr_call(g, EXPR_TANH, f->z, NULL);
    assert_int_equal(expr_graph_count(g), before + 1);
    assert_int_equal(e->id, before);
    /* an existing node adds nothing */
    expr_call(g, EXPR_TANH, f->z, NULL);
    assert_int_equal(expr_graph_count(g), before + 1);
    /* ids of the fixture's variables are below the count and distinct */
    const expr_t *v[] = {f->x, f->y, f->z, f->a, f->b, f->c};
    for (int i = 0; i < 6; i++) {
        assert_true(v[i]->id < expr_graph_count(g));
        for (int j = 0; j < i; j++)
            assert_int_not_equal(v[i]->id, v[j]->id);
    }
}

static void test_commutative_associative(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *a = f->a, *b = f->b, *c = f->c;
    assert_ptr_equal(expr_add(g, a, b), expr_add(g, b, a));
    assert_ptr_equal(expr_mul(g, a, b), expr_mul(g, b, a));
    const expr_t *s = expr_add(g, expr_add(g, a, b), c);
    assert_ptr_equal(s, expr_add(g, a, expr_add(g, b, c)));
    assert_ptr_equal(s, expr_add(g, expr_add(g, c, a), b));
    assert_int_equal(s->op, EXPR_ADD);
    assert_int_equal(s->nargs, 3); /* flat */
    const expr_t *p = expr_mul(g, expr_mul(g, a, b), c);
    assert_ptr_equal(p, expr_mul(g, a, expr_mul(g, c, b)));
    assert_int_equal(p->op, EXPR_MUL);
    assert_int_equal(p->nargs, 3);
    const expr_t *t[3] = {c, b, a};
    assert_ptr_equal(expr_sum(g, t, 3), s);
    assert_ptr_equal(expr_product(g, t, 3), p);
}

/* A fixed pseudo-random generator (xorshift64*). */
static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

/* Sums and products of many terms in shuffled orders meet at one node. */
static void test_shuffled_orders(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    rng_state = 12345;
    const expr_t *vars[] = {f->x, f->y, f->z, f->a, f->b, f->c};
    enum { NT = 24 };
    const expr_t *terms[NT];
    for (int i = 0; i < NT; i++) {
        const expr_t *m = N((double)(i % 7) + 1);
        for (int k = 0; k < 3; k++)
            m = expr_mul(g, m, vars[rng() % 6]);
        if (i % 5 == 0)
            m = expr_call(g, EXPR_SIN, m, NULL);
        terms[i] = m;
    }
    const expr_t *ref = expr_sum(g, terms, NT);
    for (int round = 0; round < 20; round++) {
        for (int i = NT - 1; i > 0; i--) {
            int j = (int)(rng() % (uint64_t)(i + 1));
            const expr_t *t = terms[i];
            terms[i] = terms[j];
            terms[j] = t;
        }
        /* left fold with expr_add, in this order */
        const expr_t *s = terms[0];
        for (int i = 1; i < NT; i++)
            s = expr_add(g, s, terms[i]);
        assert_ptr_equal(s, ref);
        /* right fold */
        s = terms[NT - 1];
        for (int i = NT - 2; i >= 0; i--)
            s = expr_add(g, terms[i], s);
        assert_ptr_equal(s, ref);
    }
    /* products of 8 factors */
    const expr_t *fac[8] = {f->x, expr_call(g, EXPR_COS, f->y, NULL), N(3),
                            expr_pow(g, f->z, N(2.5)),
                            expr_add(g, f->a, f->b), f->c, N(0.5),
                            expr_pow(g, f->x, f->y)};
    const expr_t *pref = expr_product(g, fac, 8);
    for (int round = 0; round < 20; round++) {
        for (int i = 7; i > 0; i--) {
            int j = (int)(rng() % (uint64_t)(i + 1));
            const expr_t *t = fac[i];
            fac[i] = fac[j];
            fac[j] = t;
        }
        const expr_t *p = fac[0];
        for (int i = 1; i < 8; i++)
            p = expr_mul(g, p, fac[i]);
        assert_ptr_equal(p, pref);
    }
}

/* The canonical order is structural: two graphs that build the same
 * expression with variables and subexpressions created in different
 * orders produce the same child order (compared through the variables'
 * indices and ops). */
static void same_shape(const expr_t *p, const expr_t *q)
{
    assert_int_equal(p->op, q->op);
    assert_int_equal(p->nargs, q->nargs);
    if (p->op == EXPR_CONST)
        assert_memory_equal(&p->value, &q->value, sizeof p->value);
    if (p->op == EXPR_VAR)
        assert_int_equal(p->var, q->var);
    for (uint32_t i = 0; i < p->nargs; i++)
        same_shape(p->args[i], q->args[i]);
}

static void test_order_history_independent(void **state)
{
    (void)state;
    expr_graph_t *g1 = expr_graph_new(), *g2 = expr_graph_new();
    for (int i = 0; i < 4; i++) {
        char name[8] = {(char)('p' + i), 0};
        expr_var_declare(g1, name);
        expr_var_declare(g2, name);
    }
    expr_graph_t *g = g1;
    const expr_t *p = expr_var(g, 0), *q = expr_var(g, 1),
                 *r = expr_var(g, 2), *s = expr_var(g, 3);
    const expr_t *e1 = expr_add(
        g,
        expr_add(g, expr_mul(g, p, expr_call(g, EXPR_SIN, q, NULL)),
                 expr_pow(g, r, N(2))),
        expr_add(g, expr_mul(g, N(3), expr_mul(g, s, p)),
                 expr_call(g, EXPR_EXP, expr_add(g, p, r), NULL)));
    /* second graph: build the leaves in reverse order first */
    g = g2;
    const expr_t *S = expr_var(g, 3), *R = expr_var(g, 2),
                 *Q = expr_var(g, 1), *P = expr_var(g, 0);
    const expr_t *ex = expr_call(g, EXPR_EXP, expr_add(g, R, P), NULL);
    const expr_t *sp = expr_mul(g, expr_mul(g, P, S), N(3));
    const expr_t *e2 = expr_add(
        g, ex,
        expr_add(g, sp,
                 expr_add(g, expr_pow(g, R, N(2)),
                          expr_mul(g, expr_call(g, EXPR_SIN, Q, NULL), P))));
    same_shape(e1, e2);
    expr_graph_free(g1);
    expr_graph_free(g2);
}

/* ---- simplification ----------------------------------------------------- */

static void test_identities(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x;
    assert_ptr_equal(expr_add(g, x, N(0)), x);
    assert_ptr_equal(expr_add(g, N(0), x), x);
    assert_ptr_equal(expr_add(g, x, N(-0.0)), x);
    assert_ptr_equal(expr_mul(g, x, N(1)), x);
    assert_ptr_equal(expr_mul(g, N(1), x), x);
    assert_ptr_equal(expr_mul(g, x, N(0)), N(0));
    assert_ptr_equal(expr_mul(g, x, N(-0.0)), N(-0.0));
    assert_ptr_equal(expr_mul(g, expr_mul(g, x, N(0)), N(-1)),
                     expr_mul(g, expr_mul(g, x, N(-1)), N(0)));
    assert_ptr_equal(expr_mul(g, expr_call(g, EXPR_SIN, x, NULL), N(0)),
                     N(0));
    assert_ptr_equal(expr_sub(g, x, x), N(0));
    /* x/x = 1 only where x != 0 (LANGUAGE.md §3.4.1) */
    assert_guard(expr_div(g, x, x), N(1), expr_pow(g, x, N(-1)));
    assert_ptr_equal(expr_neg(g, expr_neg(g, x)), x);
    assert_ptr_equal(expr_pow(g, x, N(1)), x);
    assert_ptr_equal(expr_pow(g, x, N(0)), N(1));
    assert_ptr_equal(expr_pow(g, N(1), x), N(1));
    assert_ptr_equal(expr_sum(g, NULL, 0), N(0));
    assert_ptr_equal(expr_product(g, NULL, 0), N(1));
    /* a compound x as well */
    const expr_t *u = expr_add(g, expr_call(g, EXPR_COS, x, NULL), f->y);
    assert_ptr_equal(expr_sub(g, u, u), N(0));
    assert_guard(expr_div(g, u, u), N(1), expr_pow(g, u, N(-1)));
    assert_ptr_equal(expr_neg(g, expr_neg(g, u)), u);
}

static void test_like_terms(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x, *a = f->a, *b = f->b;
    const expr_t *two_x = expr_add(g, x, x);
    assert_ptr_equal(two_x, expr_mul(g, N(2), x));
    assert_int_equal(two_x->op, EXPR_MUL);
    assert_int_equal(two_x->nargs, 2);
    assert_ptr_equal(two_x->args[0], N(2));
    assert_ptr_equal(two_x->args[1], x);
    assert_ptr_equal(expr_sub(g, two_x, x), x);
    /* a*b + 3*b*a = 4*a*b */
    const expr_t *e = expr_add(g, expr_mul(g, a, b),
                               expr_mul(g, expr_mul(g, N(3), b), a));
    assert_int_equal(e->op, EXPR_MUL);
    assert_int_equal(e->nargs, 3);
    assert_ptr_equal(e->args[0], N(4));
    assert_ptr_equal(e, expr_mul(g, N(4), expr_mul(g, a, b)));
    /* 2*x + 3*y - 2*x = 3*y */
    const expr_t *y3 = expr_mul(g, N(3), f->y);
    assert_ptr_equal(expr_sub(g, expr_add(g, two_x, y3), two_x), y3);
    /* constants gather into one, first */
    const expr_t *s = expr_add(g, expr_add(g, N(2), x), expr_add(g, N(5), a));
    assert_int_equal(s->op, EXPR_ADD);
    assert_int_equal(s->nargs, 3);
    assert_ptr_equal(s->args[0], N(7));
    assert_ptr_equal(expr_sub(g, s, N(7)), expr_add(g, x, a));
}

static void test_like_factors(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x, *y = f->y;
    const expr_t *xx = expr_mul(g, x, x);
    assert_int_equal(xx->op, EXPR_POW);
    assert_ptr_equal(xx->args[0], x);
    assert_ptr_equal(xx->args[1], N(2));
    assert_ptr_equal(xx, expr_pow(g, x, N(2)));
    assert_guard(expr_mul(g, expr_pow(g, x, N(2)), expr_pow(g, x, N(-1))), x,
                 expr_pow(g, x, N(-1)));
    /* x^2*x^-2 = 1 where x != 0, the same guard: x^-1 stands for every
     * negative integer power; x^0.5*x^0.5 = x where x >= 0 */
    assert_guard(expr_mul(g, expr_pow(g, x, N(2)), expr_pow(g, x, N(-2))),
                 N(1), expr_pow(g, x, N(-1)));
    assert_guard(expr_mul(g, expr_pow(g, x, N(0.5)), expr_pow(g, x, N(0.5))),
                 x, expr_pow(g, x, N(0.5)));
    /* ... and the merged power that has the domain needs no guard:
     * x^-1*x^-1 = x^-2, x^0.5*x = x^1.5, x^-0.5*x^-0.5 = x^-1 is not
     * enough (x > 0 is needed) */
    assert_ptr_equal(expr_mul(g, expr_pow(g, x, N(-1)), expr_pow(g, x, N(-1))),
                     expr_pow(g, x, N(-2)));
    assert_ptr_equal(expr_mul(g, expr_pow(g, x, N(0.5)), x),
                     expr_pow(g, x, N(1.5)));
    assert_guard(expr_mul(g, expr_pow(g, x, N(-0.5)), expr_pow(g, x, N(-0.5))),
                 expr_pow(g, x, N(-1)), expr_pow(g, x, N(-0.5)));
    assert_ptr_equal(expr_mul(g, xx, x), expr_pow(g, x, N(3)));
    /* x^a * x^b = x^(a+b) where x^a and x^b are defined (x = 0, a = -1,
     * b = 2) */
    assert_guard2(expr_mul(g, expr_pow(g, x, f->a), expr_pow(g, x, f->b)),
                  expr_pow(g, x, expr_add(g, f->a, f->b)),
                  expr_pow(g, x, f->a), expr_pow(g, x, f->b));
    /* constant coefficients collected in front */
    const expr_t *p = expr_mul(g, expr_mul(g, N(2), x), expr_mul(g, N(3), y));
    assert_int_equal(p->op, EXPR_MUL);
    assert_ptr_equal(p->args[0], N(6));
    assert_int_equal(p->nargs, 3);
    /* x*y/(y*x) = 1 where x, y != 0 */
    assert_guard2(expr_div(g, expr_mul(g, x, y), expr_mul(g, y, x)), N(1),
                  expr_pow(g, x, N(-1)), expr_pow(g, y, N(-1)));
    /* x/(2*x) = 1/2 where x != 0 */
    assert_guard(expr_div(g, x, expr_mul(g, N(2), x)), N(0.5),
                 expr_pow(g, x, N(-1)));
}

static void test_powers(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x, *y = f->y;
    /* (x^a)^2 = x^(2*a) where x^a is defined (x = -1, a = 1/2) */
    assert_guard(expr_pow(g, expr_pow(g, x, f->a), N(2)),
                 expr_pow(g, x, expr_mul(g, N(2), f->a)),
                 expr_pow(g, x, f->a));
    /* with a positive constant base every power is defined */
    assert_ptr_equal(expr_pow(g, expr_pow(g, N(2), f->a), N(2)),
                     expr_pow(g, N(2), expr_mul(g, N(2), f->a)));
    /* (x^2)^3 = x^6, (x^-1)^-1 = x */
    assert_ptr_equal(expr_pow(g, expr_pow(g, x, N(2)), N(3)),
                     expr_pow(g, x, N(6)));
    assert_guard(expr_pow(g, expr_pow(g, x, N(-1)), N(-1)), x,
                 expr_pow(g, x, N(-1)));
    /* (x^2)^0.5 is |x|, not x: stays */
    const expr_t *h = expr_pow(g, expr_pow(g, x, N(2)), N(0.5));
    assert_int_equal(h->op, EXPR_POW);
    assert_ptr_equal(h->args[0], expr_pow(g, x, N(2)));
    assert_ptr_equal(h->args[1], N(0.5));
    /* (x^2)^y stays too */
    const expr_t *k = expr_pow(g, expr_pow(g, x, N(2)), y);
    assert_int_equal(k->op, EXPR_POW);
    assert_ptr_equal(k->args[0], expr_pow(g, x, N(2)));
    /* (2*x*y)^2 = 4*x^2*y^2 */
    const expr_t *sq = expr_pow(g, expr_mul(g, N(2), expr_mul(g, x, y)),
                                N(2));
    assert_ptr_equal(sq, expr_mul(g, N(4), expr_mul(g, expr_pow(g, x, N(2)),
                                                    expr_pow(g, y, N(2)))));
    /* (x*y)^0.5 stays: x, y < 0 would change the value */
    const expr_t *r = expr_pow(g, expr_mul(g, x, y), N(0.5));
    assert_int_equal(r->op, EXPR_POW);
    assert_int_equal(r->args[0]->op, EXPR_MUL);
    /* sqrt(x)^2 = x where x >= 0 */
    const expr_t *s = expr_call(g, EXPR_SQRT, x, NULL);
    assert_guard(expr_pow(g, s, N(2)), x, s);
    assert_guard(expr_mul(g, s, s), x, s);
    /* (x^(1/3))^3 = x where x >= 0; (x^2)^(1/2)... stays (above) */
    assert_guard(expr_pow(g, expr_pow(g, x, N(1.0 / 3)), N(3)), x,
                 expr_pow(g, x, N(0.5)));
}

/* Rules that must not apply: they would change a value for some real
 * input. */
static void test_unsafe_rules_not_applied(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x;
    const expr_t *x2 = expr_pow(g, x, N(2));
    const expr_t *r = expr_call(g, EXPR_SQRT, x2, NULL);
    assert_int_equal(r->op, EXPR_SQRT);
    assert_ptr_equal(r->args[0], x2);
    assert_ptr_not_equal(r, x);
    const expr_t *l = expr_call(g, EXPR_LOG, expr_call(g, EXPR_EXP, x, NULL),
                                NULL);
    assert_int_equal(l->op, EXPR_LOG);
    const expr_t *e = expr_call(g, EXPR_EXP, expr_call(g, EXPR_LOG, x, NULL),
                                NULL);
    assert_int_equal(e->op, EXPR_EXP);
    const expr_t *as = expr_call(g, EXPR_ASIN, expr_call(g, EXPR_SIN, x, NULL),
                                 NULL);
    assert_int_equal(as->op, EXPR_ASIN);
    const expr_t *ab = expr_call(g, EXPR_ABS, x, NULL);
    assert_ptr_not_equal(ab, x);
    /* min(x, y) and min(y, x) are kept as written */
    assert_ptr_not_equal(expr_call(g, EXPR_MIN, x, f->y),
                         expr_call(g, EXPR_MIN, f->y, x));
}

/* Products are never expanded: distributing a constant over a sum would
 * break the associativity of *.  A sum expands a term c*(a+b). */
static void test_no_distribution(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *a = f->a, *b = f->b, *x = f->x;
    const expr_t *s = expr_add(g, a, b);
    const expr_t *p = expr_mul(g, N(2), s);
    assert_int_equal(p->op, EXPR_MUL);
    assert_int_equal(p->nargs, 2);
    assert_ptr_equal(p->args[0], N(2));
    assert_ptr_equal(p->args[1], s);
    assert_ptr_equal(expr_mul(g, p, x),
                     expr_mul(g, N(2), expr_mul(g, s, x)));
    const expr_t *n = expr_neg(g, s);
    assert_int_equal(n->op, EXPR_MUL);
    assert_ptr_equal(n->args[0], N(-1));
    /* in a sum, c*(a+b) is expanded */
    assert_ptr_equal(expr_add(g, s, n), N(0));
    assert_ptr_equal(expr_sub(g, a, s), expr_neg(g, b));
    assert_ptr_equal(expr_add(g, expr_mul(g, N(3), s), p),
                     expr_add(g, expr_mul(g, N(5), a), expr_mul(g, N(5), b)));
    assert_ptr_equal(expr_add(g, p, N(0)),
                     expr_add(g, expr_mul(g, N(2), a), expr_mul(g, N(2), b)));
    /* associativity of + with such a term */
    const expr_t *t1 = expr_add(g, expr_add(g, p, x), expr_neg(g, x));
    const expr_t *t2 = expr_add(g, p, expr_add(g, x, expr_neg(g, x)));
    assert_ptr_equal(t1, t2);
    /* a sum times a symbol is not expanded either */
    const expr_t *q = expr_mul(g, f->c, s);
    assert_int_equal(q->op, EXPR_MUL);
    assert_int_equal(q->nargs, 2);
}

static void test_odd_even_functions(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x, *mx = expr_neg(g, f->x);
    const expr_t *two_x = expr_mul(g, N(-2), x);
    expr_op_t odd[] = {EXPR_SIN, EXPR_TAN, EXPR_ASIN, EXPR_ATAN,
                       EXPR_SINH, EXPR_TANH, EXPR_SIGN};
    expr_op_t even[] = {EXPR_COS, EXPR_COSH, EXPR_ABS};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        const expr_t *fx = expr_call(g, odd[i], x, NULL);
        assert_ptr_equal(expr_call(g, odd[i], mx, NULL), expr_neg(g, fx));
        const expr_t *f2x = expr_call(g, odd[i], expr_mul(g, N(2), x), NULL);
        const expr_t *sum =
            expr_add(g, expr_call(g, odd[i], two_x, NULL), f2x);
        if (odd[i] == EXPR_ASIN) /* 0 where asin(2x) is defined */
            assert_guard(sum, N(0), f2x);
        else
            assert_ptr_equal(sum, N(0));
    }
    for (size_t i = 0; i < sizeof even / sizeof *even; i++)
        assert_ptr_equal(expr_call(g, even[i], mx, NULL),
                         expr_call(g, even[i], x, NULL));
    /* no rule for exp, log, sqrt, acos of -x */
    assert_int_equal(expr_call(g, EXPR_EXP, mx, NULL)->op, EXPR_EXP);
    assert_int_equal(expr_call(g, EXPR_ACOS, mx, NULL)->op, EXPR_ACOS);
    assert_ptr_equal(expr_call(g, EXPR_MIN, x, x), x);
    assert_ptr_equal(expr_call(g, EXPR_MAX, x, x), x);
}

/* LANGUAGE.md §7.1: literals are exact fractions; sums, products and
 * integer powers of them stay exact; the node's value is the double
 * nearest the fraction; the same number is one node however written. */
static void test_exact_numbers(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x;
    int64_t p, q;
    const expr_t *two5 = expr_div(g, N(2), N(5));
    assert_ptr_equal(two5, N(0.4));
    assert_true(expr_rational(two5, &p, &q) && p == 2 && q == 5);
    const expr_t *sq = expr_mul(g, two5, two5);
    assert_ptr_equal(sq, N(0.16));
    assert_ptr_equal(sq, expr_ratio(g, 4, 25));
    assert_true(sq->value == 0.16); /* IEEE 0.4*0.4 is 0.16000000000000003 */
    assert_ptr_equal(expr_pow(g, two5, N(2)), sq);
    assert_ptr_equal(expr_pow(g, two5, N(-2)), expr_ratio(g, 25, 4));
    assert_ptr_equal(expr_add(g, N(0.1), N(0.2)), N(0.3));
    assert_true(expr_rational(N(0.1), &p, &q) && p == 1 && q == 10);
    assert_true(expr_rational(N(-2.5e-3), &p, &q) && p == -1 && q == 400);
    /* gathering is exact: x/10*3 - 3*x/10 is 0 (in IEEE, 0.1*3 - 0.3
     * leaves 5.6e-17*x) */
    const expr_t *a = expr_mul(g, expr_mul(g, x, N(0.1)), N(3));
    const expr_t *b = expr_div(g, expr_mul(g, N(3), x), N(10));
    assert_ptr_equal(a, b);
    assert_ptr_equal(expr_sub(g, a, b), N(0));
    assert_ptr_equal(expr_add(g, expr_div(g, x, N(5)),
                              expr_mul(g, x, N(1.2))),
                     expr_mul(g, N(1.4), x));
    /* beyond 2^53 the number is a double: (1/3)^40 and 1e30 */
    const expr_t *tiny = expr_pow(g, expr_ratio(g, 1, 3), N(40));
    assert_false(expr_rational(tiny, &p, &q));
    assert_true(fabs(tiny->value * pow(3.0, 40) - 1) < 1e-13);
    assert_false(expr_rational(N(1e30), &p, &q));
    assert_true(expr_rational(N(9007199254740992.0), &p, &q) && q == 1);
    assert_false(expr_rational(N(INFINITY), &p, &q));
    /* 1/3 and the decimal 0.3333333333333333: one double, two numbers */
    assert_ptr_not_equal(expr_ratio(g, 1, 3), N(1.0 / 3.0));
    assert_true(expr_ratio(g, 1, 3)->value == N(1.0 / 3.0)->value);
    /* the sign of zero is IEEE's, as folding always gave */
    assert_ptr_equal(expr_mul(g, N(-1), N(0)), N(-0.0));
    assert_ptr_not_equal(N(-0.0), N(0));
}

static void test_folding(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    assert_ptr_equal(expr_add(g, N(2), N(3)), N(5));
    assert_ptr_equal(expr_mul(g, N(2), N(3)), N(6));
    assert_ptr_equal(expr_pow(g, N(2), N(10)), N(1024));
    assert_ptr_equal(expr_sub(g, N(2), N(3)), N(-1));
    assert_ptr_equal(expr_neg(g, N(2)), N(-2));
    assert_ptr_equal(expr_neg(g, N(0)), N(-0.0)); /* IEEE: -1*0 = -0 */
    /* exact (LANGUAGE.md §7.1): 1/3 is the fraction, whose value is the
     * double nearest it; the double 0.3333333333333333 read as a number
     * is the decimal it prints as, another constant of the same value */
    assert_ptr_equal(expr_div(g, N(1), N(3)), expr_ratio(g, 1, 3));
    assert_true(expr_div(g, N(1), N(3))->value == 1.0 / 3.0);
    assert_ptr_not_equal(expr_div(g, N(1), N(3)), N(1.0 / 3.0));
    assert_ptr_equal(expr_div(g, N(1), N(10)), N(0.1));
    assert_ptr_equal(expr_call(g, EXPR_SIN, N(0), NULL), N(0));
    assert_ptr_equal(expr_call(g, EXPR_COS, N(1), NULL), N(cos(1.0)));
    assert_ptr_equal(expr_call(g, EXPR_SQRT, N(2), NULL), N(sqrt(2.0)));
    assert_ptr_equal(expr_call(g, EXPR_ATAN2, N(1), N(2)), N(atan2(1, 2)));
    assert_ptr_equal(expr_call(g, EXPR_MIN, N(1), N(2)), N(1));
    /* non-finite results stay as nodes */
    const expr_t *l0 = expr_call(g, EXPR_LOG, N(0), NULL);
    assert_int_equal(l0->op, EXPR_LOG);
    const expr_t *inv0 = expr_div(g, N(1), N(0));
    assert_int_equal(inv0->op, EXPR_POW);
    const expr_t *sq = expr_call(g, EXPR_SQRT, N(-1), NULL);
    assert_int_equal(sq->op, EXPR_SQRT);
    assert_true(isnan(expr_eval(g, sq, NULL)));
    assert_true(isinf(expr_eval(g, inv0, NULL)));
    /* folding of several constants does not depend on their order */
    const expr_t *t1[] = {N(0.1), f->x, N(0.2), N(0.3)};
    const expr_t *t2[] = {N(0.3), N(0.2), f->x, N(0.1)};
    assert_ptr_equal(expr_sum(g, t1, 4), expr_sum(g, t2, 4));
    assert_ptr_equal(expr_product(g, t1, 4), expr_product(g, t2, 4));
}

/* Structural invariants of canonical nodes, checked on random sums. */
static void check_canonical(const expr_t *e)
{
    if (e->op == EXPR_ADD || e->op == EXPR_MUL) {
        assert_true(e->nargs >= 2);
        for (uint32_t i = 0; i < e->nargs; i++) {
            assert_int_not_equal(e->args[i]->op, e->op); /* flat */
            if (i > 0)
                assert_int_not_equal(e->args[i]->op, EXPR_CONST);
            for (uint32_t j = 0; j < i; j++)
                assert_ptr_not_equal(e->args[i], e->args[j]);
        }
        if (e->args[0]->op == EXPR_CONST) {
            double c = e->args[0]->value;
            assert_false(c == 0);
            if (e->op == EXPR_MUL)
                assert_false(c == 1);
        }
    }
    if (e->op == EXPR_MUL) {
        /* no two factors with the same base */
        for (uint32_t i = 0; i < e->nargs; i++)
            for (uint32_t j = 0; j < i; j++) {
                const expr_t *bi = e->args[i]->op == EXPR_POW
                                       ? e->args[i]->args[0]
                                       : e->args[i];
                const expr_t *bj = e->args[j]->op == EXPR_POW
                                       ? e->args[j]->args[0]
                                       : e->args[j];
                assert_ptr_not_equal(bi, bj);
            }
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        check_canonical(e->args[i]);
}

static const expr_t *random_expr(expr_graph_t *g, const expr_t *const *v,
                                 int depth)
{
    uint64_t r = rng();
    if (depth == 0 || r % 8 == 0) {
        if (r % 3 == 0)
            return expr_num(g, (double)((int)(rng() % 7) - 3));
        return v[rng() % 4];
    }
    const expr_t *a = random_expr(g, v, depth - 1);
    const expr_t *b = random_expr(g, v, depth - 1);
    switch (rng() % 7) {
    case 0:
        return expr_add(g, a, b);
    case 1:
        return expr_sub(g, a, b);
    case 2:
        return expr_mul(g, a, b);
    case 3:
        return expr_div(g, a, b);
    case 4:
        return expr_pow(g, a, expr_num(g, (double)((int)(rng() % 5) - 2)));
    case 5:
        return expr_neg(g, a);
    default:
        return expr_call(g, EXPR_SIN, a, NULL);
    }
}

/* Combines E[0..n) with OP (expr_add or expr_mul) in a random tree shape
 * over a random permutation. */
static const expr_t *random_fold(expr_graph_t *g, const expr_t **e, size_t n,
                                 bool add)
{
    if (n == 1)
        return e[0];
    size_t k = 1 + (size_t)(rng() % (n - 1));
    const expr_t *l = random_fold(g, e, k, add);
    const expr_t *r = random_fold(g, e + k, n - k, add);
    if (rng() % 2) {
        const expr_t *t = l;
        l = r;
        r = t;
    }
    return add ? expr_add(g, l, r) : expr_mul(g, l, r);
}

/* Random expressions whose constants are exact in binary, so that IEEE
 * folding is associative on them. */
static const expr_t *random_dyadic(expr_graph_t *g, const expr_t *const *v,
                                   int depth)
{
    static const double k[] = {-2, -1, 0.5, 2, 4, 0.25};
    uint64_t r = rng();
    if (depth == 0 || r % 8 == 0)
        return r % 3 == 0 ? expr_num(g, k[rng() % 6]) : v[rng() % 4];
    const expr_t *a = random_dyadic(g, v, depth - 1);
    const expr_t *b = random_dyadic(g, v, depth - 1);
    switch (rng() % 7) {
    case 0:
        return expr_add(g, a, b);
    case 1:
        return expr_sub(g, a, b);
    case 2:
        return expr_mul(g, a, b);
    case 3: /* 1/c may not be exact: no division by a constant */
        return b->op == EXPR_CONST ? a : expr_div(g, a, b);
    case 4:
        return expr_pow(g, a,
                        expr_num(g, (double)(int)(rng() % 3) +
                                        (a->op == EXPR_CONST ? 0 : -2)));
    case 5:
        return expr_neg(g, a);
    default:
        return a->op == EXPR_CONST ? a : expr_call(g, EXPR_SIN, a, NULL);
    }
}

static void test_random_grouping(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    rng_state = 99;
    const expr_t *v[4] = {f->x, f->y, f->z, f->a};
    for (int round = 0; round < 300; round++) {
        enum { K = 7 };
        const expr_t *e[K];
        for (int i = 0; i < K; i++)
            e[i] = random_dyadic(g, v, 3);
        bool add = round % 2 == 0;
        const expr_t *ref = random_fold(g, e, K, add);
        for (int rep = 0; rep < 8; rep++) {
            for (int i = K - 1; i > 0; i--) {
                int j = (int)(rng() % (uint64_t)(i + 1));
                const expr_t *t = e[i];
                e[i] = e[j];
                e[j] = t;
            }
            assert_ptr_equal(random_fold(g, e, K, add), ref);
        }
    }
}

static void test_canonical_invariants(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    rng_state = 777;
    const expr_t *v[4] = {f->x, f->y, f->z, f->a};
    for (int i = 0; i < 500; i++)
        check_canonical(random_expr(g, v, 5));
}

/* Building is value-preserving: a random expression evaluates as the
 * same formula written in C, wherever the C value is finite (the rules
 * may turn a NaN or an infinity into a number, never a number into
 * another). */
/* A random expression and its value computed as written, operation by
 * operation in IEEE arithmetic; BAD when some operation on the way gave
 * a value that is not finite (the expression is undefined there, even if
 * a later operation hides it: LANGUAGE.md §3.4.1); BIG the largest
 * magnitude on the way (cos(1e8*u) keeps few digits of u's rounding). */
typedef struct rexpr {
    const expr_t *e;
    double v;
    bool bad;
    double big;
} rexpr_t;

static rexpr_t rpair2(const expr_t *e, double v, rexpr_t a, rexpr_t b)
{
    double big = fmax(fabs(v), fmax(a.big, b.big));
    return (rexpr_t){e, v, a.bad || b.bad || !isfinite(v), big};
}

static rexpr_t rpair(const expr_t *e, double v, rexpr_t a)
{
    return rpair2(e, v, a, a);
}

/* Over the ops whose rules drop or fold parts: + - * / integer and
 * fractional powers, sqrt, log, cos, atan, exp (atan and exp can hide an
 * infinity). */
static rexpr_t random_pair(expr_graph_t *g, const expr_t *const *var,
                           const double *val, int depth)
{
    uint64_t r = rng();
    if (depth == 0 || r % 6 == 0) {
        rexpr_t leaf = {NULL, 0, false, 0};
        if (r % 3 == 0) {
            double c = (double)((int)(rng() % 9) - 4) / 2;
            return rpair(expr_num(g, c), c, leaf);
        }
        int k = (int)(rng() % 3);
        return rpair(var[k], val[k], leaf);
    }
    rexpr_t a = random_pair(g, var, val, depth - 1);
    rexpr_t b = random_pair(g, var, val, depth - 1);
    switch (rng() % 12) {
    case 0:
        return rpair2(expr_add(g, a.e, b.e), a.v + b.v, a, b);
    case 1:
        return rpair2(expr_sub(g, a.e, b.e), a.v - b.v, a, b);
    case 2:
        return rpair2(expr_mul(g, a.e, b.e), a.v * b.v, a, b);
    case 3:
        return rpair2(expr_div(g, a.e, b.e), a.v / b.v, a, b);
    case 4: {
        double k = (double)(int)(rng() % 7) - 2; /* -2 .. 4 */
        return rpair(expr_pow(g, a.e, expr_num(g, k)), pow(a.v, k), a);
    }
    case 5: {
        static const double k[] = {0.5, 1.0 / 3, -0.5, 1.5};
        double c = k[rng() % 4];
        return rpair(expr_pow(g, a.e, expr_num(g, c)), pow(a.v, c), a);
    }
    case 6:
        return rpair(expr_neg(g, a.e), -a.v, a);
    case 7:
        return rpair(expr_call(g, EXPR_COS, a.e, NULL), cos(a.v), a);
    case 8:
        return rpair(expr_call(g, EXPR_SQRT, a.e, NULL), sqrt(a.v), a);
    case 9:
        return rpair(expr_call(g, EXPR_LOG, a.e, NULL), log(a.v), a);
    case 10:
        return rpair(expr_call(g, EXPR_EXP, a.e, NULL), exp(a.v), a);
    default:
        return rpair(expr_call(g, EXPR_ATAN, a.e, NULL), atan(a.v), a);
    }
}

/* Simplification changes neither a value (beyond rounding) nor where an
 * expression is defined: the simplified node evaluates to a finite
 * number exactly where the expression as written does, at points that
 * make parts 0 or negative often (the variables from -1, 0, 1/2, 1, 2,
 * the constants from -2 .. 2 in halves), and at generic points. */
static void test_simplification_preserves_value(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    rng_state = 4242;
    const expr_t *var[3] = {f->x, f->y, f->z};
    static const double grid[] = {-1, 0, 0.5, 1, 2};
    int checked = 0, undefined = 0;
    for (int i = 0; i < 6000; i++) {
        double val[6] = {0};
        for (int k = 0; k < 3; k++)
            val[k] = i % 2 ? grid[rng() % 5]
                           : (double)(rng() % 1000) / 500 - 1;
        rexpr_t p = random_pair(g, var, val, 4);
        double v = expr_eval(g, p.e, val);
        if (p.bad) {
            assert_false(isfinite(v));
            undefined++;
            continue;
        }
        if (p.big > 1e6)
            continue;
        assert_true(fabs(v - p.v) <= 1e-9 * (1 + fabs(p.v)));
        checked++;
    }
    assert_true(checked > 1000);
    assert_true(undefined > 1000);
}

/* ---- evaluation semantics ------------------------------------------------ */

static void test_eval(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const double v[6] = {0.7, -1.3, 2.0, 0.25, 3.0, -0.5};
    const expr_t *e = expr_add(g, expr_mul(g, f->x, expr_pow(g, f->y, N(2))),
                               expr_call(g, EXPR_SIN, f->z, NULL));
    double want = 0.7 * (-1.3 * -1.3) + sin(2.0);
    assert_true(fabs(expr_eval(g, e, v) - want) < 1e-15);
    assert_true(expr_eval(g, f->y, v) == -1.3);
    assert_true(expr_eval(g, N(4.5), v) == 4.5);
    const expr_t *h = expr_div(g, expr_call(g, EXPR_ATAN2, f->y, f->x),
                               expr_call(g, EXPR_SQRT, f->c, NULL));
    assert_true(isnan(expr_eval(g, h, v))); /* sqrt(-0.5) */
    const expr_t *m = expr_call(g, EXPR_MAX, f->a, f->c);
    assert_true(expr_eval(g, m, v) == 0.25);
    /* a DAG that is exponential as a tree: e_{k+1} = e_k*e_k + e_k */
    const expr_t *d = expr_add(g, f->a, N(0.5));
    double dv = 0.75;
    for (int i = 0; i < 60; i++) {
        d = expr_add(g, expr_call(g, EXPR_SIN, d, NULL),
                     expr_call(g, EXPR_COS, d, NULL));
        dv = sin(dv) + cos(dv);
    }
    assert_true(expr_eval(g, d, v) == dv);
}

/* The sign of a sum moves out of products, integer powers and odd or
 * even functions, so that a product and its negation cancel. */
static void test_sum_sign(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x, *a = f->a, *b = f->b;
    const expr_t *s = expr_add(g, a, b);                 /* a + b */
    const expr_t *ns = expr_sub(g, expr_neg(g, a), b);   /* -a - b */
    /* a sum on its own keeps its terms */
    assert_int_equal(ns->op, EXPR_ADD);
    assert_int_equal(ns->nargs, 2);
    assert_ptr_equal(ns->args[0], expr_mul(g, N(-1), a));
    /* x*(-a - b) is the node -1 * x * (a + b) */
    const expr_t *p = expr_mul(g, x, ns);
    assert_int_equal(p->op, EXPR_MUL);
    assert_int_equal(p->nargs, 3);
    assert_ptr_equal(p->args[0], N(-1));
    assert_ptr_equal(p->args[1], x);
    assert_ptr_equal(p->args[2], s);
    assert_ptr_equal(p, expr_neg(g, expr_mul(g, x, s)));
    /* so the product and its negation cancel */
    assert_ptr_equal(expr_add(g, expr_mul(g, x, s), p), N(0));
    assert_ptr_equal(expr_add(g, expr_mul(g, expr_mul(g, N(3), x), s),
                              expr_mul(g, expr_mul(g, N(3), x), ns)),
                     N(0));
    /* a constant does not decide: x*(1 - x) = -x*(x - 1) */
    assert_ptr_equal(expr_mul(g, x, expr_sub(g, N(1), x)),
                     expr_neg(g, expr_mul(g, x, expr_sub(g, x, N(1)))));
    /* integer powers: (-S)^n = (-1)^n S^n; other powers keep the sum */
    assert_ptr_equal(expr_pow(g, ns, N(2)), expr_pow(g, s, N(2)));
    assert_ptr_equal(expr_pow(g, ns, N(3)), expr_neg(g, expr_pow(g, s, N(3))));
    assert_ptr_equal(expr_div(g, x, ns), expr_neg(g, expr_div(g, x, s)));
    const expr_t *r = expr_pow(g, ns, N(0.5));
    assert_int_equal(r->op, EXPR_POW);
    assert_ptr_equal(r->args[0], ns);
    /* odd and even functions */
    assert_ptr_equal(expr_call(g, EXPR_SIN, ns, NULL),
                     expr_neg(g, expr_call(g, EXPR_SIN, s, NULL)));
    assert_ptr_equal(expr_call(g, EXPR_COS, ns, NULL),
                     expr_call(g, EXPR_COS, s, NULL));
    assert_int_equal(expr_call(g, EXPR_EXP, ns, NULL)->args[0]->op, EXPR_ADD);
    /* the values are the literal ones: x*(-a-b) at x = 1.5, a = 0.25, b =
     * -2 (exact in binary) */
    double v[6] = {1.5, 0, 0, 0.25, -2, 0};
    assert_true(expr_eval(g, p, v) == 1.5 * (-0.25 + 2));
    assert_true(expr_eval(g, expr_pow(g, ns, N(3)), v) ==
                (-0.25 + 2) * (-0.25 + 2) * (-0.25 + 2));
}

/* sin(u)^2*k + cos(u)^2*k = k, for the same coefficient and other
 * factors only. */
static void test_pythagoras(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x, *y = f->y, *a = f->a, *b = f->b;
    const expr_t *two = N(2);
    const expr_t *s2 = expr_pow(g, expr_call(g, EXPR_SIN, x, NULL), two);
    const expr_t *c2 = expr_pow(g, expr_call(g, EXPR_COS, x, NULL), two);
    assert_ptr_equal(expr_add(g, expr_mul(g, a, s2), expr_mul(g, a, c2)), a);
    const expr_t *k = expr_product(g, (const expr_t *[]){N(-2), a, y}, 3);
    assert_ptr_equal(expr_add(g, expr_mul(g, k, c2), expr_mul(g, s2, k)), k);
    /* the new term gathers with the others: a*sin^2 + a*cos^2 + a = 2*a */
    const expr_t *t3[3] = {expr_mul(g, a, s2), a, expr_mul(g, a, c2)};
    assert_ptr_equal(expr_sum(g, t3, 3), expr_mul(g, two, a));
    /* and the rule applies again: sin(x)^2*sin(y)^2 + ... = 1*a */
    const expr_t *sy2 = expr_pow(g, expr_call(g, EXPR_SIN, y, NULL), two);
    const expr_t *cy2 = expr_pow(g, expr_call(g, EXPR_COS, y, NULL), two);
    const expr_t *t4[4] = {
        expr_product(g, (const expr_t *[]){a, s2, sy2}, 3),
        expr_product(g, (const expr_t *[]){a, c2, sy2}, 3),
        expr_product(g, (const expr_t *[]){a, s2, cy2}, 3),
        expr_product(g, (const expr_t *[]){a, c2, cy2}, 3)};
    assert_ptr_equal(expr_sum(g, t4, 4), a);
    /* not applied: other coefficients, other factors, other arguments */
    const expr_t *r = expr_add(g, expr_mul(g, a, s2),
                               expr_mul(g, expr_mul(g, two, a), c2));
    assert_int_equal(r->op, EXPR_ADD);
    r = expr_add(g, expr_mul(g, a, s2), expr_mul(g, b, c2));
    assert_int_equal(r->op, EXPR_ADD);
    r = expr_add(g, expr_mul(g, a, s2), expr_mul(g, a, cy2));
    assert_int_equal(r->op, EXPR_ADD);
    r = expr_add(g, expr_mul(g, a, expr_call(g, EXPR_SIN, x, NULL)),
                 expr_mul(g, a, expr_call(g, EXPR_COS, x, NULL)));
    assert_int_equal(r->op, EXPR_ADD);
    /* and a bare sin(x)^2 + cos(x)^2 is left alone (expr.c says why) */
    assert_int_equal(expr_add(g, s2, c2)->op, EXPR_ADD);
}

/* Deep expressions: the order of sums and products is the structural one
 * whichever comparisons went deep (and gave ranks) first — two graphs
 * that build the same deep terms in opposite orders print the same. */
static const expr_t *deep_term(expr_graph_t *g, int k, int which)
{
    const expr_t *e = expr_var(g, (uint32_t)(which % 2));
    for (int i = 0; i < k; i++)
        e = expr_call(g, i % 3 == which % 3 ? EXPR_COS : EXPR_SIN, e, NULL);
    return e;
}

static char *deep_text(bool reverse)
{
    expr_graph_t *g = expr_graph_new();
    expr_var_declare(g, "x");
    expr_var_declare(g, "y");
    enum { K = 90 };
    const expr_t *t[2 * K];
    for (int j = 0; j < 2 * K; j++) {
        int i = reverse ? 2 * K - 1 - j : j;
        t[i] = expr_mul(g, deep_term(g, 1 + (i * 7) % K, i % 4),
                        expr_num(g, (double)(1 + i % 5)));
    }
    /* sums and products that compare the deep terms pairwise */
    const expr_t *s = expr_sum(g, t, 2 * K);
    const expr_t *q[8];
    for (int i = 0; i < 8; i++)
        q[i] = deep_term(g, 40 + 5 * i, i);
    const expr_t *pr = expr_product(g, q, 8);
    char *a = expr_to_text(g, s), *b = expr_to_text(g, pr);
    size_t n = strlen(a) + strlen(b) + 2;
    char *r = malloc(n);
    snprintf(r, n, "%s|%s", a, b);
    free(a);
    free(b);
    expr_graph_free(g);
    return r;
}

/* Long comparisons: sums that share long runs of terms (V_k and V_(k+1)
 * differ by one term, as a chain's velocities do) stop comparing after
 * a few children and rank their nodes; the order must still be the
 * structural one, whatever was ranked first.  Products m*V_k, powers
 * V_k^2 and sin(V_k) put the sums in every place a comparison reads. */
static char *long_text(bool reverse)
{
    enum { K = 40 };
    expr_graph_t *g = expr_graph_new();
    char name[16];
    for (int j = 0; j < K; j++) {
        snprintf(name, sizeof name, "x%d", j);
        expr_var_declare(g, name);
    }
    uint32_t m = expr_var_declare(g, "m");
    const expr_t *V[K], *t[3 * K];
    const expr_t *acc = expr_num(g, 0.0);
    for (int k = 0; k < K; k++) {
        acc = expr_add(g, acc,
                       expr_mul(g, expr_num(g, 1.0 + k % 3),
                                expr_call(g, EXPR_SIN,
                                          expr_var(g, (uint32_t)k), NULL)));
        V[k] = acc;
    }
    for (int j = 0; j < K; j++) {
        int k = reverse ? K - 1 - j : j;
        t[3 * j] = expr_mul(g, expr_var(g, m), V[k]);
        t[3 * j + 1] = expr_pow(g, V[k], expr_num(g, 2.0));
        t[3 * j + 2] = expr_call(g, EXPR_SIN, V[k], NULL);
    }
    char *r = expr_to_text(g, expr_sum(g, t, 3 * K));
    expr_graph_free(g);
    return r;
}

static void test_long_order(void **state)
{
    (void)state;
    char *a = long_text(false), *b = long_text(true);
    assert_string_equal(a, b);
    /* and the shorter sum comes first: V_1 before V_2 (m*V_k terms) */
    const char *v1 = strstr(a, "m*(");
    assert_non_null(v1);
    assert_true(strncmp(v1, "m*(sin(x0) + 2*sin(x1))", 23) == 0);
    free(a);
    free(b);
}

static void test_deep_order(void **state)
{
    (void)state;
    char *a = deep_text(false), *b = deep_text(true);
    assert_string_equal(a, b);
    free(a);
    free(b);
    /* in one graph, sums built in different orders meet */
    expr_graph_t *g = expr_graph_new();
    expr_var_declare(g, "x");
    expr_var_declare(g, "y");
    enum { K = 60 };
    const expr_t *t[K], *u[K];
    for (int i = 0; i < K; i++)
        t[i] = deep_term(g, 30 + i, i);
    for (int i = 0; i < K; i++)
        u[i] = t[(i * 37) % K];
    assert_ptr_equal(expr_sum(g, t, K), expr_sum(g, u, K));
    assert_ptr_equal(expr_product(g, t, K), expr_product(g, u, K));
    /* and the terms are in order: each pair compares as the sorted
     * product of the two says */
    const expr_t *s = expr_sum(g, t, K);
    for (uint32_t i = 1; i < s->nargs; i++) {
        const expr_t *pair = expr_add(g, s->args[i], s->args[i - 1]);
        assert_ptr_equal(pair->args[0], s->args[i - 1]);
    }
    expr_graph_free(g);
}

static void test_apply_semantics(void **state)
{
    (void)state;
    double x[4];
    /* ADD and MUL fold left to right */
    x[0] = 1e16;
    x[1] = 1.0;
    x[2] = -1e16;
    assert_true(expr_apply(EXPR_ADD, x, 3) == (1e16 + 1.0) + -1e16);
    assert_true(expr_apply(EXPR_ADD, x, 0) == 0);
    assert_true(expr_apply(EXPR_MUL, x, 0) == 1);
    /* POW: small integer exponents by multiplication */
    double p[2] = {1.1, 2};
    assert_true(expr_apply(EXPR_POW, p, 2) == 1.1 * 1.1);
    p[1] = 3;
    assert_true(expr_apply(EXPR_POW, p, 2) == 1.1 * 1.1 * 1.1);
    p[1] = -1;
    assert_true(expr_apply(EXPR_POW, p, 2) == 1 / 1.1);
    p[1] = -2;
    assert_true(expr_apply(EXPR_POW, p, 2) == 1 / (1.1 * 1.1));
    p[1] = 0.5; /* pow, not sqrt: differs at -0 and -inf */
    p[0] = -0.0;
    double r = expr_apply(EXPR_POW, p, 2);
    assert_true(r == 0 && !signbit(r));
    p[0] = -INFINITY;
    assert_true(expr_apply(EXPR_POW, p, 2) == INFINITY);
    p[0] = 2.5;
    p[1] = 1.7;
    assert_true(expr_apply(EXPR_POW, p, 2) == pow(2.5, 1.7));
    /* sign */
    x[0] = -3;
    assert_true(expr_apply(EXPR_SIGN, x, 1) == -1);
    x[0] = 1e-300;
    assert_true(expr_apply(EXPR_SIGN, x, 1) == 1);
    x[0] = -0.0;
    r = expr_apply(EXPR_SIGN, x, 1);
    assert_true(r == 0 && signbit(r));
    x[0] = NAN;
    assert_true(isnan(expr_apply(EXPR_SIGN, x, 1)));
    /* min and max propagate NaN */
    x[0] = 1;
    x[1] = NAN;
    assert_true(isnan(expr_apply(EXPR_MIN, x, 2)));
    assert_true(isnan(expr_apply(EXPR_MAX, x, 2)));
    x[1] = 2;
    assert_true(expr_apply(EXPR_MIN, x, 2) == 1);
    assert_true(expr_apply(EXPR_MAX, x, 2) == 2);
    /* on a tie the first operand: min(-0, 0) = max(-0, 0) = -0 */
    x[0] = -0.0;
    x[1] = 0.0;
    assert_true(signbit(expr_apply(EXPR_MIN, x, 2)));
    assert_true(signbit(expr_apply(EXPR_MAX, x, 2)));
    x[0] = 0.0;
    x[1] = -0.0;
    assert_false(signbit(expr_apply(EXPR_MIN, x, 2)));
    assert_false(signbit(expr_apply(EXPR_MAX, x, 2)));
    x[0] = 0.5;
    x[1] = 2;
    assert_true(expr_apply(EXPR_ATAN2, x, 2) == atan2(0.5, 2));
    assert_true(expr_apply(EXPR_TANH, x, 1) == tanh(0.5));
    assert_true(bits(expr_apply(EXPR_LOG, x, 1)) == bits(log(0.5)));
    /* no non-finite operand is hidden (LANGUAGE.md §3.4.1): IEEE's finite
     * results become NaN, its infinite ones stay */
    x[0] = INFINITY;
    x[1] = 1;
    assert_true(isnan(expr_apply(EXPR_ATAN, x, 1)));
    assert_true(isnan(expr_apply(EXPR_TANH, x, 1)));
    assert_true(isnan(expr_apply(EXPR_SIGN, x, 1)));
    assert_true(isnan(expr_apply(EXPR_MIN, x, 2)));
    assert_true(expr_apply(EXPR_MAX, x, 2) == INFINITY);
    assert_true(isnan(expr_apply(EXPR_ATAN2, x, 2)));
    assert_true(expr_apply(EXPR_EXP, x, 1) == INFINITY);
    p[0] = INFINITY;
    p[1] = -1;
    assert_true(isnan(expr_apply(EXPR_POW, p, 2))); /* 1/inf */
    p[1] = -2;
    assert_true(isnan(expr_apply(EXPR_POW, p, 2)));
    p[1] = -0.5;
    assert_true(isnan(expr_apply(EXPR_POW, p, 2)));
    p[0] = 1;
    p[1] = NAN;
    assert_true(isnan(expr_apply(EXPR_POW, p, 2))); /* pow(1, NaN) = 1 */
    p[0] = NAN;
    p[1] = 0;
    assert_true(isnan(expr_apply(EXPR_POW, p, 2))); /* pow(NaN, 0) = 1 */
    x[0] = -INFINITY;
    assert_true(isnan(expr_apply(EXPR_EXP, x, 1)));
    assert_true(expr_apply(EXPR_MIN, x, 2) == -INFINITY);
    /* a guard: its value where its atoms are finite, else NaN */
    double gv[3] = {2.5, 1, -3};
    assert_true(expr_apply(EXPR_GUARD, gv, 3) == 2.5);
    gv[2] = INFINITY;
    assert_true(isnan(expr_apply(EXPR_GUARD, gv, 3)));
}

/* Guards (expr.h): built only for a dropped part that may be undefined,
 * lifted through every constructor, canonical in their atoms, built by
 * expr_guard on request, and not built while the graph keeps no domains
 * (deriving), though the model's own guards still pass through. */
static void test_guards(void **state)
{
    fixture_t *f = *state;
    expr_graph_t *g = f->g;
    const expr_t *x = f->x, *y = f->y;
    const expr_t *xinv = expr_pow(g, x, N(-1));
    const expr_t *lx = expr_call(g, EXPR_LOG, x, NULL);
    /* what is partial: divisions, log, sqrt, asin, acos, fractional
     * powers, infinite constants; not polynomials, sin, exp, 2^x, ... */
    assert_false(expr_partial(g, x));
    assert_false(expr_partial(g, expr_mul(g, x, expr_call(g, EXPR_SIN, y, NULL))));
    assert_false(expr_partial(g, expr_call(g, EXPR_EXP, x, NULL)));
    assert_false(expr_partial(g, expr_pow(g, N(2), x)));
    assert_false(expr_partial(g, expr_call(g, EXPR_TAN, x, NULL)));
    assert_true(expr_partial(g, xinv));
    assert_true(expr_partial(g, expr_add(g, y, expr_mul(g, N(3), lx))));
    assert_true(expr_partial(g, expr_call(g, EXPR_ACOS, x, NULL)));
    assert_true(expr_partial(g, expr_pow(g, x, N(0.5))));
    assert_true(expr_partial(g, expr_pow(g, N(-2), x)));
    assert_true(expr_partial(g, N(INFINITY)));
    /* total parts drop freely: x - x, 0*x, x^0, 1^x, sin^2 + cos^2 of a
     * total u, 0*(x^2 + sin(y)) */
    assert_ptr_equal(expr_sub(g, expr_mul(g, x, y), expr_mul(g, y, x)), N(0));
    assert_ptr_equal(expr_pow(g, expr_add(g, x, y), N(0)), N(1));
    assert_ptr_equal(expr_pow(g, N(1), expr_mul(g, x, y)), N(1));
    assert_ptr_equal(
        expr_mul(g, N(0), expr_add(g, expr_pow(g, x, N(2)),
                                  expr_call(g, EXPR_SIN, y, NULL))),
        N(0));
    /* partial parts leave their domain: the outermost partial nodes */
    assert_guard(expr_mul(g, N(0), expr_add(g, y, expr_mul(g, N(3), lx))),
                 N(0), lx);
    assert_guard(expr_sub(g, lx, lx), N(0), lx);
    assert_guard(expr_pow(g, lx, N(0)), N(1), lx);
    assert_guard(expr_pow(g, N(1), lx), N(1), lx);
    const expr_t *l1 = expr_call(g, EXPR_LOG, expr_add(g, N(1), xinv), NULL);
    assert_guard(expr_mul(g, N(0), expr_call(g, EXPR_SIN, l1, NULL)), N(0),
                 l1);
    /* sin(u)^2*y + cos(u)^2*y = y where u is */
    const expr_t *s2 = expr_pow(g, expr_call(g, EXPR_SIN, xinv, NULL), N(2));
    const expr_t *c2 = expr_pow(g, expr_call(g, EXPR_COS, xinv, NULL), N(2));
    assert_guard(expr_add(g, expr_mul(g, s2, y), expr_mul(g, c2, y)), y, xinv);
    /* lifted: f(u where d) = f(u) where d, for every op */
    const expr_t *gx = expr_div(g, expr_mul(g, x, y), x); /* y where x != 0 */
    assert_guard(gx, y, xinv);
    assert_guard(expr_call(g, EXPR_SIN, gx, NULL),
                 expr_call(g, EXPR_SIN, y, NULL), xinv);
    assert_guard(expr_call(g, EXPR_ATAN2, y, gx),
                 expr_call(g, EXPR_ATAN2, y, y), xinv);
    assert_guard(expr_add(g, gx, N(1)), expr_add(g, y, N(1)), xinv);
    assert_guard(expr_pow(g, N(2), gx), expr_pow(g, N(2), y), xinv);
    /* ... and gone where the value itself holds the atom or a power of
     * its base that needs as much: (y where x != 0)/x = y/x */
    assert_ptr_equal(expr_div(g, gx, x), expr_div(g, y, x));
    assert_ptr_equal(expr_div(g, gx, expr_pow(g, x, N(2))),
                     expr_div(g, y, expr_pow(g, x, N(2))));
    /* a guarded c*(a+b) joins a sum expanded, as a bare one does */
    const expr_t *s2y = expr_mul(g, N(2), expr_add(g, x, y));
    assert_guard(expr_add(g, expr_mul(g, s2y, expr_div(g, y, y)), N(0)),
                 expr_add(g, expr_mul(g, N(2), x), expr_mul(g, N(2), y)),
                 expr_pow(g, y, N(-1)));
    /* two guards merge, each atom once */
    const expr_t *gy = expr_div(g, expr_mul(g, x, y), y); /* x where y != 0 */
    assert_guard2(expr_mul(g, gx, gy), expr_mul(g, x, y), xinv,
                  expr_pow(g, y, N(-1)));
    assert_guard(expr_mul(g, gx, gx), expr_pow(g, y, N(2)), xinv);
    /* expr_guard: total conditions leave no guard */
    assert_ptr_equal(expr_guard(g, y, expr_mul(g, x, x)), y);
    assert_guard(expr_guard(g, y, expr_add(g, N(1), lx)), y, lx);
    assert_ptr_equal(expr_guard(g, xinv, xinv), xinv);
    assert_ptr_equal(expr_unguarded(gx), y);
    assert_ptr_equal(expr_unguarded(y), y);
    /* a graph that keeps no domains drops without guards, but lifts */
    assert_true(expr_graph_keep_domains(g, false));
    assert_ptr_equal(expr_sub(g, lx, lx), N(0));
    assert_ptr_equal(expr_div(g, y, y), N(1));
    assert_guard(expr_add(g, gx, N(1)), expr_add(g, y, N(1)), xinv);
    assert_false(expr_graph_keep_domains(g, true));
    assert_guard(expr_sub(g, lx, lx), N(0), lx);
    /* evaluation: the value where defined, NaN elsewhere */
    double at[6] = {2, 3};
    assert_true(expr_eval(g, gx, at) == 3);
    at[0] = 0;
    assert_true(isnan(expr_eval(g, gx, at)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_table),
        cmocka_unit_test_setup_teardown(test_variables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash_consing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constants_by_bits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ids_dense, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commutative_associative, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shuffled_orders, setup,
                                        teardown),
        cmocka_unit_test(test_order_history_independent),
        cmocka_unit_test_setup_teardown(test_identities, setup, teardown),
        cmocka_unit_test_setup_teardown(test_like_terms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_like_factors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_powers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_rules_not_applied, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_distribution, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_odd_even_functions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_folding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_grouping, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_canonical_invariants, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_simplification_preserves_value,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_eval, setup, teardown),
        cmocka_unit_test(test_apply_semantics),
        cmocka_unit_test_setup_teardown(test_guards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sum_sign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pythagoras, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_numbers, setup,
                                        teardown),
        cmocka_unit_test(test_deep_order),
        cmocka_unit_test(test_long_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
