/*
 * simplify.c — the display forms of LANGUAGE.md §7.1 (simplify.h).
 *
 * The graph's constructors already keep every expression in a canonical
 * form: sums and products flat and sorted, like terms gathered with exact
 * rational coefficients, like factors gathered into powers.  A product of
 * sums, though, stays a product (expr.c: expanding on construction would
 * break canonical forms), so terms that cancel across factors stay: the
 * rolling sphere's Voronec row for theta holds eight products whose
 * expansion is 7/5 m R^2 (theta'' + phi' psi' sin(theta)).  This module
 * works on a copy in a graph of its own, where nothing it builds can
 * reach a tape, and offers, for every expression, several equivalent
 * forms, keeping the one that prints shortest:
 *
 *   as given     the canonical form, with the insides of its functions
 *                and powers in their own shortest forms;
 *   expanded     products and positive integer powers of sums multiplied
 *                out (up to SIMP_MAX_TERMS terms a sum), so the graph's
 *                gathering cancels what cancels; then, for each u whose
 *                sin(u) or cos(u) appears squared, the rewriting
 *                sin(u)^2 = 1 - cos(u)^2, or its mirror, or neither,
 *                whichever prints shorter;
 *   factored     the expanded sum with its content taken out: the gcd of
 *                its rational coefficients and the common powers of its
 *                factors (7*m*R^2*(theta'' + ...)/5);
 *   collected    the terms grouped by their factors of one rank (the
 *                velocities, or the accelerations: (a + b)*x''), each
 *                group's coefficient factored;
 *   over a common denominator
 *                the sum times the product of its denominators, over it.
 *
 * Every rewriting is an identity of real functions where both sides are
 * defined; the display graph drops domains freely while it works
 * (expr_graph_keep_domains off) and the final form is guarded by the
 * domain of the input (expr_guard), so a condition shows exactly when
 * the form lost a part that may be undefined: x/x is 1 "where x != 0",
 * sqrt(x)^2 is x "where x >= 0" (LANGUAGE.md §3.4.1).
 *
 * Linear systems (simp_solve): Cramer's rule, every determinant expanded
 * by minors over column subsets (no division, so exact in any ring), and
 * each quotient simplified with the Pythagorean rewriting that makes the
 * determinant shortest (the rolling sphere's is 98/125 m^3 R^6
 * sin(theta)^2 once cos^2 = 1 - sin^2), its common factors cancelled.
 *
 * Must not: change the graph it reads; print to a stream.
 */
#include "interp/expr/simplify.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/base/util.h"

/* Work (terms built by multiplying out) a context may spend: beyond it,
 * products stay as they are, so a huge model shows in bounded time. */
#define SIMP_WORK_MAX 400000
/* An expression of more nodes than this, written out as a tree, is
 * shown as it is: no reader follows it (it prints to some 20000
 * characters), and trying its forms would cost more than they could
 * save (the N-trailer's rows at N = 64). */
#define SIMP_MAX_NODES 3000
/* simp_light: sums multiplied out up to this many terms. */
#define SIMP_LIGHT_TERMS 64

/* ---- a map from node ids to nodes ------------------------------------- */

typedef struct nmap {
    uint64_t *key; /* id + 1; 0 = empty */
    const expr_t **val;
    size_t cap, n;
} nmap_t;

static size_t nmap_slot(uint64_t k, size_t mask)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ULL;
    k ^= k >> 29;
    return (size_t)k & mask;
}

static const expr_t *nmap_get(const nmap_t *m, uint64_t id)
{
    if (!m->cap)
        return NULL;
    uint64_t k = id + 1;
    for (size_t j = nmap_slot(k, m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (m->key[j] == k)
            return m->val[j];
        if (!m->key[j])
            return NULL;
    }
}

static void nmap_put(nmap_t *m, uint64_t id, const expr_t *v)
{
    if (2 * (m->n + 1) > m->cap) {
        nmap_t big = {NULL, NULL, m->cap ? 2 * m->cap : 256, 0};
        big.key = xcalloc(big.cap, sizeof *big.key);
        big.val = xcalloc(big.cap, sizeof *big.val);
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i])
                nmap_put(&big, m->key[i] - 1, m->val[i]);
        free(m->key);
        free(m->val);
        *m = big;
    }
    uint64_t k = id + 1;
    size_t j = nmap_slot(k, m->cap - 1);
    while (m->key[j] && m->key[j] != k)
        j = (j + 1) & (m->cap - 1);
    if (!m->key[j])
        m->n++;
    m->key[j] = k;
    m->val[j] = v;
}

static void nmap_free(nmap_t *m)
{
    free(m->key);
    free(m->val);
}

/* ---- the context ------------------------------------------------------- */

struct simp {
    const expr_graph_t *src;
    expr_graph_t *g;
    nmap_t imp;   /* source id -> display node */
    nmap_t exp;   /* display id -> expanded */
    nmap_t best;  /* display id -> shortest form */
    nmap_t pretty; /* display id -> with the insides in shortest form */
    nmap_t len;   /* display id -> printed length (as a CONST's bits) */
    nmap_t opaque; /* display id -> itself: an atom (simp_opaque) */
    size_t work;
    bool light;   /* simp_light */
};

simp_t *simp_new(const expr_graph_t *src)
{
    simp_t *s = xcalloc(1, sizeof *s);
    s->src = src;
    s->g = expr_graph_new();
    expr_graph_set_display(s->g);
    uint32_t nv = expr_graph_nvars(src);
    for (uint32_t v = 0; v < nv; v++) {
        expr_var_declare(s->g, expr_var_name(src, v));
        expr_var_set_rank(s->g, v, expr_var_rank(src, v));
    }
    /* forms are compared and rewritten freely; the domain of the input
     * is put back on the result (simp_simplify) */
    expr_graph_keep_domains(s->g, false);
    return s;
}

void simp_free(simp_t *s)
{
    if (!s)
        return;
    nmap_free(&s->imp);
    nmap_free(&s->exp);
    nmap_free(&s->best);
    nmap_free(&s->pretty);
    nmap_free(&s->len);
    nmap_free(&s->opaque);
    expr_graph_free(s->g);
    free(s);
}

expr_graph_t *simp_graph(simp_t *s)
{
    return s->g;
}

void simp_opaque(simp_t *s, const expr_t *e)
{
    if (e->op != EXPR_CONST && e->op != EXPR_VAR)
        nmap_put(&s->opaque, e->id, e);
}

static bool is_opaque(const simp_t *s, const expr_t *e)
{
    return s->opaque.n && nmap_get(&s->opaque, e->id) != NULL;
}

void simp_light(simp_t *s, bool light)
{
    s->light = light;
}

void simp_allow_work(simp_t *s, size_t work)
{
    s->work = work >= SIMP_WORK_MAX ? 0 : SIMP_WORK_MAX - work;
}

/* E, a sum or a product, rebuilt in the display graph from F of each of
 * its children: as a sum, or by PRODUCT (expr_product, or one that
 * multiplies out). */
typedef const expr_t *(*simp_map_fn)(simp_t *s, const expr_t *e);
static const expr_t *rebuild(simp_t *s, const expr_t *e, simp_map_fn f,
                             const expr_t *(*product)(simp_t *s,
                                                      const expr_t *const *a,
                                                      size_t n))
{
    const expr_t **a = xmalloc(e->nargs * sizeof *a);
    for (uint32_t i = 0; i < e->nargs; i++)
        a[i] = f(s, e->args[i]);
    const expr_t *r = e->op == EXPR_ADD ? expr_sum(s->g, a, e->nargs)
                                        : product(s, a, e->nargs);
    free(a);
    return r;
}

static const expr_t *plain_product(simp_t *s, const expr_t *const *a,
                                   size_t n)
{
    return expr_product(s->g, a, n);
}

const expr_t *simp_import(simp_t *s, const expr_t *e)
{
    const expr_t *r = nmap_get(&s->imp, e->id);
    if (r)
        return r;
    expr_graph_t *g = s->g;
    int64_t p, q;
    switch (e->op) {
    case EXPR_CONST:
        /* -0 is 0 in print: a sign of zero a constructor kept (-1*0)
         * is no part of the mathematics */
        r = expr_rational(e, &p, &q) ? expr_ratio(g, p, q)
                                     : expr_num(g, e->value == 0 ? 0.0
                                                                 : e->value);
        break;
    case EXPR_VAR:
        r = expr_var(g, e->var);
        break;
    case EXPR_ADD:
    case EXPR_MUL:
        r = rebuild(s, e, simp_import, plain_product);
        break;
    case EXPR_POW:
        r = expr_pow(g, simp_import(s, e->args[0]),
                     simp_import(s, e->args[1]));
        break;
    case EXPR_GUARD:
        r = simp_import(s, e->args[0]);
        for (uint32_t i = 1; i < e->nargs; i++)
            r = expr_guard(g, r, simp_import(s, e->args[i]));
        break;
    default:
        r = expr_call(g, e->op, simp_import(s, e->args[0]),
                      e->nargs > 1 ? simp_import(s, e->args[1]) : NULL);
        break;
    }
    nmap_put(&s->imp, e->id, r);
    return r;
}

const expr_t *simp_symbol(simp_t *s, const expr_t *e, const char *name,
                          const char *latex)
{
    uint32_t v = expr_var_declare(s->g, name);
    expr_var_set_latex(s->g, v, latex);
    expr_var_set_rank(s->g, v, expr_rank(s->src, e));
    const expr_t *r = expr_var(s->g, v);
    nmap_put(&s->imp, e->id, r);
    return r;
}

/* ---- reading terms and factors ----------------------------------------- */

/* The terms of E: its children when it is a sum, else E alone. */
static const expr_t *const *terms_of(const expr_t *const *e, size_t *n)
{
    if ((*e)->op == EXPR_ADD) {
        *n = (*e)->nargs;
        return (*e)->args;
    }
    *n = 1;
    return e;
}

/* The factors of a term, its constant coefficient apart (NULL for 1). */
static const expr_t *const *factors_of(const expr_t *const *t, size_t *n,
                                       const expr_t **coef)
{
    const expr_t *e = *t;
    *coef = NULL;
    if (e->op == EXPR_CONST) {
        *coef = e;
        *n = 0;
        return NULL;
    }
    if (e->op == EXPR_MUL) {
        if (e->args[0]->op == EXPR_CONST) {
            *coef = e->args[0];
            *n = e->nargs - 1;
            return e->args + 1;
        }
        *n = e->nargs;
        return e->args;
    }
    *n = 1;
    return t;
}

/* A factor as base^k with an integer k (k = 1 for anything else). */
static const expr_t *base_exp(const expr_t *f, int64_t *k)
{
    int64_t p, q;
    if (f->op == EXPR_POW && expr_rational(f->args[1], &p, &q) && q == 1 &&
        p >= -64 && p <= 64) {
        *k = p;
        return f->args[0];
    }
    *k = 1;
    return f;
}

static bool is_negative_term(const expr_t *t)
{
    const expr_t *c;
    size_t n;
    factors_of(&t, &n, &c);
    return c && c->value < 0;
}

/* ---- size ---------------------------------------------------------------- */

/* Whether E written out as a tree has more than LIMIT nodes (*COUNT so
 * far): a count that stops there, so O(LIMIT) however large E is. */
static bool larger_than(const expr_t *e, size_t limit, size_t *count)
{
    const expr_t *st[64];
    size_t top = 0;
    st[top++] = e;
    while (top) {
        const expr_t *x = st[--top];
        if (++*count > limit)
            return true;
        for (uint32_t i = 0; i < x->nargs; i++) {
            if (top < 64)
                st[top++] = x->args[i];
            else if (larger_than(x->args[i], limit, count)) /* wide */
                return true;
        }
    }
    return false;
}

/* larger_than with the atoms of simp_opaque counting one node each. */
static bool larger_than_in(const simp_t *s, const expr_t *e, size_t limit,
                           size_t *count)
{
    if (++*count > limit)
        return true;
    if (is_opaque(s, e))
        return false;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (larger_than_in(s, e->args[i], limit, count))
            return true;
    return false;
}

static bool too_big_in(const simp_t *s, const expr_t *e)
{
    size_t count = 0;
    if (!s->opaque.n)
        return larger_than(e, SIMP_MAX_NODES, &count);
    return larger_than_in(s, e, SIMP_MAX_NODES, &count);
}
#define too_big(e) too_big_in(s, (e))

bool simp_small(const simp_t *s, const expr_t *e, size_t limit)
{
    size_t count = 0;
    return !larger_than_in(s, e, limit, &count);
}

/* ---- printed length ---------------------------------------------------- */

/* An atom of text_length: an opaque node below the one measured (that
 * one prints in full: it is what is being measured). */
typedef struct atom_ctx {
    const simp_t *s;
    const expr_t *root;
} atom_ctx_t;

static bool atom_of(void *ctx, const expr_t *e)
{
    const atom_ctx_t *a = ctx;
    return e != a->root && is_opaque(a->s, e);
}

static size_t text_length(simp_t *s, const expr_t *e)
{
    const expr_t *m = nmap_get(&s->len, e->id);
    if (m)
        return (size_t)m->value;
    atom_ctx_t actx = {s, e};
    char *t = s->opaque.n ? expr_to_text_atoms(s->g, e, atom_of, &actx)
                          : expr_to_text(s->g, e);
    size_t n = strlen(t);
    free(t);
    nmap_put(&s->len, e->id, expr_num(s->g, (double)n));
    return n;
}

/* The shorter of A and B (A on a tie; NULL counts as longest). */
static const expr_t *shorter(simp_t *s, const expr_t *a, const expr_t *b)
{
    if (!a)
        return b;
    if (!b || a == b)
        return a;
    return text_length(s, b) < text_length(s, a) ? b : a;
}

/* ---- multiplying out ---------------------------------------------------- */

static const expr_t *expand(simp_t *s, const expr_t *e);
typedef struct pyth_choice pyth_choice_t;
static const expr_t *pyth_best(simp_t *s, const expr_t *x, bool by_terms,
                               pyth_choice_t *c);

/* The product of the N expanded factors F, multiplied out when the
 * result has at most SIMP_MAX_TERMS terms and the work allows. */
static const expr_t *expand_product(simp_t *s, const expr_t *const *f,
                                    size_t n)
{
    expr_graph_t *g = s->g;
    double count = 1;
    size_t nsum = 0;
    for (size_t i = 0; i < n; i++)
        if (f[i]->op == EXPR_ADD) {
            count *= f[i]->nargs;
            nsum++;
        }
    if (nsum == 0 || count > (s->light ? SIMP_LIGHT_TERMS : SIMP_MAX_TERMS) ||
        s->work + (size_t)count > SIMP_WORK_MAX)
        return expr_product(g, f, n);
    s->work += (size_t)count;
    /* the product of the factors that are not sums, then each sum */
    const expr_t **plain = xmalloc((n + 1) * sizeof *plain);
    size_t np = 0;
    for (size_t i = 0; i < n; i++)
        if (f[i]->op != EXPR_ADD)
            plain[np++] = f[i];
    size_t cap = (size_t)count, k = 1;
    const expr_t **acc = xmalloc(cap * sizeof *acc);
    const expr_t **nxt = xmalloc(cap * sizeof *nxt);
    acc[0] = expr_product(g, plain, np);
    for (size_t i = 0; i < n; i++) {
        if (f[i]->op != EXPR_ADD)
            continue;
        size_t m = 0;
        for (size_t a = 0; a < k; a++)
            for (uint32_t b = 0; b < f[i]->nargs; b++)
                nxt[m++] = expr_mul(g, acc[a], f[i]->args[b]);
        const expr_t **t = acc;
        acc = nxt;
        nxt = t;
        k = m;
    }
    const expr_t *r = expr_sum(g, acc, k);
    free(plain);
    free(acc);
    free(nxt);
    return r;
}

static const expr_t *expand(simp_t *s, const expr_t *e)
{
    if (e->op == EXPR_CONST || e->op == EXPR_VAR || is_opaque(s, e))
        return e;
    const expr_t *r = nmap_get(&s->exp, e->id);
    if (r)
        return r;
    expr_graph_t *g = s->g;
    switch (e->op) {
    case EXPR_GUARD:
        r = expand(s, e->args[0]);
        break;
    case EXPR_ADD:
    case EXPR_MUL:
        r = rebuild(s, e, expand, expand_product);
        break;
    case EXPR_POW: {
        const expr_t *b = expand(s, e->args[0]);
        const expr_t *x = expand(s, e->args[1]);
        int64_t p, q;
        bool npos = expr_rational(x, &p, &q) && q == 1 && p >= 2 && p <= 64;
        if (npos && b->op == EXPR_ADD) {
            /* (a + b)^n multiplied out one factor at a time, so the
             * terms gather as they go */
            r = b;
            for (int64_t i = 1; i < p; i++) {
                const expr_t *two[2] = {r, b};
                r = expand_product(s, two, 2);
            }
        } else if (npos && b->op == EXPR_MUL) {
            const expr_t **f = xmalloc(b->nargs * sizeof *f);
            for (uint32_t i = 0; i < b->nargs; i++)
                f[i] = expand(s, expr_pow(g, b->args[i], x));
            r = expand_product(s, f, b->nargs);
            free(f);
        } else {
            /* a sum below the line in the Pythagorean form that makes it
             * shortest: a determinant that is a monomial in disguise
             * (4/25 m^2 R^4 (1 - cos^2)) cancels against the numerator */
            if (b->op == EXPR_ADD && expr_rational(x, &p, &q) && q == 1 &&
                p < 0)
                b = pyth_best(s, b, true, NULL);
            r = expr_pow(g, b, x);
            if (r->op == EXPR_MUL && b->op != EXPR_ADD)
                r = expand(s, r);
        }
        break;
    }
    default:
        r = expr_call(g, e->op, expand(s, e->args[0]),
                      e->nargs > 1 ? expand(s, e->args[1]) : NULL);
        break;
    }
    nmap_put(&s->exp, e->id, r);
    return r;
}

/* ---- sin^2 + cos^2 = 1 -------------------------------------------------- */

/* Whether factor F is sin(u)^k or cos(u)^k (OP) with k >= 2; *K = k. */
static bool trig_power(const expr_t *f, expr_op_t op, const expr_t **u,
                       int64_t *k)
{
    const expr_t *b = base_exp(f, k);
    if (*k < 2 || b->op != op)
        return false;
    *u = b->args[0];
    return true;
}

/* X with every sin(u)^k (k >= 2; cos(u)^k when !SIN) of its terms
 * written as sin(u)^(k mod 2) (1 - cos(u)^2)^(k div 2), multiplied out. */
static const expr_t *pyth_rewrite(simp_t *s, const expr_t *x,
                                  const expr_t *u, bool sin)
{
    expr_graph_t *g = s->g;
    expr_op_t from = sin ? EXPR_SIN : EXPR_COS, to = sin ? EXPR_COS : EXPR_SIN;
    size_t nt;
    const expr_t *const *t = terms_of(&x, &nt);
    const expr_t **out = xmalloc(nt * sizeof *out);
    const expr_t *one_minus =
        expr_sub(g, expr_num(g, 1),
                 expr_pow(g, expr_call(g, to, u, NULL), expr_num(g, 2)));
    bool any = false;
    for (size_t i = 0; i < nt; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *f = factors_of(&t[i], &nf, &c);
        size_t at = nf;
        int64_t k = 0;
        for (size_t j = 0; j < nf && at == nf; j++) {
            const expr_t *v;
            if (trig_power(f[j], from, &v, &k) && v == u)
                at = j;
        }
        if (at == nf) {
            out[i] = t[i];
            continue;
        }
        any = true;
        const expr_t **h = xmalloc((nf + 2 + (size_t)k) * sizeof *h);
        size_t m = 0;
        if (c)
            h[m++] = c;
        for (size_t j = 0; j < nf; j++)
            if (j != at)
                h[m++] = f[j];
        if (k % 2)
            h[m++] = expr_call(g, from, u, NULL);
        for (int64_t j = 0; j < k / 2; j++)
            h[m++] = one_minus;
        out[i] = expand_product(s, h, m);
        free(h);
    }
    const expr_t *r = any ? expr_sum(g, out, nt) : x;
    free(out);
    return r;
}

/* The arguments u of the sin(u)^k, cos(u)^k (k >= 2) in X's terms, each
 * once, in the order met: into U (at most MAX), the count returned. */
static size_t pyth_args(const expr_t *x, const expr_t **u, size_t max)
{
    size_t nt, n = 0;
    const expr_t *const *t = terms_of(&x, &nt);
    for (size_t i = 0; i < nt; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *f = factors_of(&t[i], &nf, &c);
        for (size_t j = 0; j < nf; j++) {
            const expr_t *v;
            int64_t k;
            if (!trig_power(f[j], EXPR_SIN, &v, &k) &&
                !trig_power(f[j], EXPR_COS, &v, &k))
                continue;
            size_t a = 0;
            while (a < n && u[a] != v)
                a++;
            if (a == n && n < max)
                u[n++] = v;
        }
    }
    return n;
}

static size_t term_count(const expr_t *x)
{
    return x->op == EXPR_ADD ? x->nargs : 1;
}

/* A choice of rewriting per argument: 0 none, 1 sin^2 -> 1 - cos^2,
 * 2 cos^2 -> 1 - sin^2. */
#define PYTH_MAX 16
struct pyth_choice {
    const expr_t *u[PYTH_MAX];
    int dir[PYTH_MAX];
    size_t n;
};

/* X rewritten by the choice C. */
static const expr_t *pyth_apply(simp_t *s, const expr_t *x,
                                const pyth_choice_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->dir[i])
            x = pyth_rewrite(s, x, c->u[i], c->dir[i] == 1);
    return x;
}

/* The rewriting of X, argument by argument, that makes X shortest: by
 * printed length, or by number of terms when BY_TERMS (a denominator is
 * best a monomial); the choice into *C when not NULL. */
static const expr_t *pyth_best(simp_t *s, const expr_t *x, bool by_terms,
                               pyth_choice_t *c)
{
    pyth_choice_t own;
    if (!c)
        c = &own;
    c->n = too_big(x) ? 0 : pyth_args(x, c->u, PYTH_MAX);
    for (size_t i = 0; i < c->n; i++) {
        const expr_t *best = x;
        c->dir[i] = 0;
        for (int d = 1; d <= 2; d++) {
            const expr_t *y = pyth_rewrite(s, x, c->u[i], d == 1);
            bool better = by_terms
                              ? term_count(y) < term_count(best) ||
                                    (term_count(y) == term_count(best) &&
                                     text_length(s, y) < text_length(s, best))
                              : shorter(s, best, y) == y && y != best;
            if (better) {
                best = y;
                c->dir[i] = d;
            }
        }
        x = best;
    }
    return x;
}

/* ---- content, collection, common denominator ---------------------------- */

static int64_t lcm_bounded(int64_t a, int64_t b)
{
    int64_t g = 1, x = a, y = b;
    while (y) {
        int64_t t = x % y;
        x = y;
        y = t;
    }
    g = x;
    __int128 l = (__int128)(a / g) * b;
    return l > ((int64_t)1 << 53) ? 0 : (int64_t)l;
}

/* The content of the sum X: the gcd of its exact coefficients over the
 * lcm of their denominators, times the powers of the bases common to
 * every term (the least exponent of each); 1 when there is none. */
static const expr_t *content(simp_t *s, const expr_t *x)
{
    expr_graph_t *g = s->g;
    size_t nt;
    const expr_t *const *t = terms_of(&x, &nt);
    int64_t gn = 0, ld = 1;
    bool exact = true;
    for (size_t i = 0; i < nt && exact; i++) {
        size_t nf;
        const expr_t *c;
        factors_of(&t[i], &nf, &c);
        int64_t p = 1, q = 1;
        if (c && !expr_rational(c, &p, &q)) {
            exact = false;
            break;
        }
        int64_t a = p < 0 ? -p : p, b = gn;
        while (b) {
            int64_t r = a % b;
            a = b;
            b = r;
        }
        gn = a;
        ld = lcm_bounded(ld, q);
        if (!ld)
            exact = false;
    }
    const expr_t *coef = exact && gn ? expr_ratio(g, gn, ld) : expr_num(g, 1);
    /* the bases of the first term, with the least exponent over all */
    size_t n0;
    const expr_t *c0;
    const expr_t *const *f0 = factors_of(&t[0], &n0, &c0);
    const expr_t **keep = xmalloc((n0 + 1) * sizeof *keep);
    size_t nk = 0;
    keep[nk++] = coef;
    for (size_t j = 0; j < n0; j++) {
        int64_t k0;
        const expr_t *b = base_exp(f0[j], &k0);
        int64_t least = k0;
        for (size_t i = 1; i < nt && least; i++) {
            size_t nf;
            const expr_t *c;
            const expr_t *const *f = factors_of(&t[i], &nf, &c);
            size_t a = 0;
            int64_t k = 0;
            for (; a < nf; a++)
                if (base_exp(f[a], &k) == b)
                    break;
            if (a == nf || (k > 0) != (k0 > 0))
                least = 0;
            else if ((k0 > 0 && k < least) || (k0 < 0 && k > least))
                least = k;
        }
        if (least)
            keep[nk++] = expr_pow(g, b, expr_num(g, (double)least));
    }
    const expr_t *r = expr_product(g, keep, nk);
    free(keep);
    return r;
}

/* X with its content taken out, C*(X/C), or NULL when it has none. */
static const expr_t *factored(simp_t *s, const expr_t *x)
{
    if (x->op != EXPR_ADD)
        return NULL;
    expr_graph_t *g = s->g;
    const expr_t *c = content(s, x);
    if (expr_is_const(c, 1))
        return NULL;
    const expr_t *inv = expr_pow(g, c, expr_num(g, -1));
    const expr_t **t = xmalloc(x->nargs * sizeof *t);
    for (uint32_t i = 0; i < x->nargs; i++)
        t[i] = expr_mul(g, x->args[i], inv);
    const expr_t *rest = expr_sum(g, t, x->nargs);
    free(t);
    /* the sign that leaves fewer minus signs inside: theta'*(psi' -
     * cos(theta)*phi'), not -theta'*(cos(theta)*phi' - psi') */
    size_t neg = 0;
    for (uint32_t i = 0; i < rest->nargs; i++)
        neg += is_negative_term(rest->args[i]);
    if (rest->op == EXPR_ADD && 2 * neg > rest->nargs) {
        c = expr_neg(g, c);
        rest = expand(s, expr_neg(g, rest));
    }
    return expr_mul(g, c, rest);
}

/* X with its terms grouped by their factors of rank RANK or above, each
 * group's coefficient factored: (a + b)*x''; NULL when no two terms share
 * those factors. */
static const expr_t *collected(simp_t *s, const expr_t *x, unsigned rank)
{
    if (x->op != EXPR_ADD)
        return NULL;
    expr_graph_t *g = s->g;
    size_t nt = x->nargs;
    const expr_t **key = xmalloc(nt * sizeof *key);
    const expr_t **low = xmalloc(nt * sizeof *low);
    for (size_t i = 0; i < nt; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *f = factors_of(&x->args[i], &nf, &c);
        const expr_t **hi = xmalloc((nf + 1) * sizeof *hi);
        const expr_t **lo = xmalloc((nf + 1) * sizeof *lo);
        size_t nh = 0, nl = 0;
        if (c)
            lo[nl++] = c;
        for (size_t j = 0; j < nf; j++) {
            if (expr_rank(g, f[j]) >= rank)
                hi[nh++] = f[j];
            else
                lo[nl++] = f[j];
        }
        key[i] = expr_product(g, hi, nh);
        low[i] = expr_product(g, lo, nl);
        free(hi);
        free(lo);
    }
    bool shared = false;
    for (size_t i = 0; i < nt && !shared; i++)
        for (size_t j = i + 1; j < nt && !shared; j++)
            shared = key[i] == key[j] && !expr_is_const(key[i], 1);
    const expr_t *r = NULL;
    if (shared) {
        const expr_t **out = xmalloc(nt * sizeof *out);
        const expr_t **grp = xmalloc(nt * sizeof *grp);
        bool *done = xcalloc(nt, sizeof *done);
        size_t no = 0;
        for (size_t i = 0; i < nt; i++) {
            if (done[i])
                continue;
            if (expr_is_const(key[i], 1)) {
                out[no++] = x->args[i];
                continue;
            }
            size_t ng = 0;
            for (size_t j = i; j < nt; j++)
                if (!done[j] && key[j] == key[i]) {
                    grp[ng++] = low[j];
                    done[j] = true;
                }
            if (ng == 1) {
                out[no++] = x->args[i];
                continue;
            }
            const expr_t *co = expr_sum(g, grp, ng);
            const expr_t *cf = factored(s, co);
            co = shorter(s, co, cf);
            out[no++] = expr_mul(g, co, key[i]);
        }
        r = expr_sum(g, out, no);
        free(out);
        free(grp);
        free(done);
    }
    free(key);
    free(low);
    return r;
}

/* X over the common denominator of its terms (the product of every base
 * raised to a negative integer power, at its most negative), or NULL
 * when no term has one. */
static const expr_t *common_denominator(simp_t *s, const expr_t *x)
{
    if (x->op != EXPR_ADD)
        return NULL;
    expr_graph_t *g = s->g;
    size_t cap = 16, nb = 0;
    const expr_t **base = xmalloc(cap * sizeof *base);
    int64_t *most = xmalloc(cap * sizeof *most);
    for (uint32_t i = 0; i < x->nargs; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *f = factors_of(&x->args[i], &nf, &c);
        for (size_t j = 0; j < nf; j++) {
            int64_t k;
            const expr_t *b = base_exp(f[j], &k);
            if (k >= 0)
                continue;
            size_t a = 0;
            while (a < nb && base[a] != b)
                a++;
            if (a == nb) {
                if (nb == cap) {
                    cap *= 2;
                    base = xrealloc(base, cap * sizeof *base);
                    most = xrealloc(most, cap * sizeof *most);
                }
                base[nb] = b;
                most[nb++] = 0;
            }
            if (-k > most[a])
                most[a] = -k;
        }
    }
    const expr_t *r = NULL;
    if (nb > 0) {
        const expr_t **d = xmalloc(nb * sizeof *d);
        for (size_t a = 0; a < nb; a++)
            d[a] = expr_pow(g, base[a], expr_num(g, (double)most[a]));
        const expr_t *den = expr_product(g, d, nb);
        const expr_t **t = xmalloc(x->nargs * sizeof *t);
        for (uint32_t i = 0; i < x->nargs; i++)
            t[i] = expand(s, expr_mul(g, x->args[i], den));
        const expr_t *num = pyth_best(s, expr_sum(g, t, x->nargs), false,
                                      NULL);
        num = shorter(s, num, factored(s, num));
        r = expr_mul(g, num, expr_pow(g, den, expr_num(g, -1)));
        free(d);
        free(t);
    }
    free(base);
    free(most);
    return r;
}

/* ---- common factors of some terms (Horner) ---------------------------------- */

/* A base of X's terms and how many terms hold it above the line (NUM)
 * and below it (DEN). */
typedef struct base_count {
    const expr_t *base;
    size_t num, den;
} base_count_t;

/* The sum of the N terms T with the factor that most of them share taken
 * out, and so on inside and outside it (a multivariate Horner scheme):
 * a*b*c + a*b*d + a*e = a*(b*(c + d) + e).  A factor is a base to the
 * power 1 or -1 (x^2 shares x with x*y; 1/k27 is shared by terms that
 * divide by k27), and the most shared wins, the longer base on a tie. */
static const expr_t *horner_terms(simp_t *s, const expr_t **t, size_t n,
                                  int depth)
{
    expr_graph_t *g = s->g;
    if (n <= 1 || depth > 16)
        return expr_sum(g, t, n);
    size_t cap = 32, nb = 0;
    base_count_t *bc = xmalloc(cap * sizeof *bc);
    for (size_t i = 0; i < n; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *f = factors_of(&t[i], &nf, &c);
        for (size_t j = 0; j < nf; j++) {
            int64_t k;
            const expr_t *b = base_exp(f[j], &k);
            if (b->op == EXPR_CONST || k == 0)
                continue;
            size_t a = 0;
            while (a < nb && bc[a].base != b)
                a++;
            if (a == nb) {
                if (nb == cap) {
                    cap *= 2;
                    bc = xrealloc(bc, cap * sizeof *bc);
                }
                bc[nb++] = (base_count_t){b, 0, 0};
            }
            if (k > 0)
                bc[a].num++;
            else
                bc[a].den++;
        }
    }
    const expr_t *best = NULL;
    int sign = 0;
    size_t most = 1, blen = 0;
    for (size_t a = 0; a < nb; a++) {
        for (int sg = 1; sg >= -1; sg -= 2) {
            size_t cnt = sg > 0 ? bc[a].num : bc[a].den;
            if (cnt < most || cnt < 2)
                continue;
            size_t len = text_length(s, bc[a].base);
            if (cnt > most || len > blen) {
                best = bc[a].base;
                sign = sg;
                most = cnt;
                blen = len;
            }
        }
    }
    free(bc);
    if (!best)
        return expr_sum(g, t, n);
    const expr_t *f = expr_pow(g, best, expr_num(g, (double)sign));
    const expr_t *finv = expr_pow(g, best, expr_num(g, (double)-sign));
    const expr_t **with = xmalloc(n * sizeof *with);
    const expr_t **rest = xmalloc(n * sizeof *rest);
    size_t nw = 0, nr = 0;
    for (size_t i = 0; i < n; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *fs = factors_of(&t[i], &nf, &c);
        bool has = false;
        for (size_t j = 0; j < nf && !has; j++) {
            int64_t k;
            has = base_exp(fs[j], &k) == best && (sign > 0 ? k > 0 : k < 0);
        }
        if (has)
            with[nw++] = expr_mul(g, t[i], finv);
        else
            rest[nr++] = t[i];
    }
    const expr_t *inner = horner_terms(s, with, nw, depth + 1);
    const expr_t *outer = horner_terms(s, rest, nr, depth + 1);
    const expr_t *r = expr_add(g, expr_mul(g, f, inner), outer);
    free(with);
    free(rest);
    return r;
}

/* X with common factors taken out of its terms (horner_terms), when that
 * is shorter; X otherwise. */
static const expr_t *horner(simp_t *s, const expr_t *x)
{
    if (x->op != EXPR_ADD || x->nargs > 2000)
        return x;
    const expr_t **t = xmalloc(x->nargs * sizeof *t);
    memcpy(t, x->args, x->nargs * sizeof *t);
    const expr_t *h = horner_terms(s, t, x->nargs, 0);
    free(t);
    return shorter(s, x, h);
}

const expr_t *simp_horner(simp_t *s, const expr_t *x)
{
    return horner(s, x);
}

/* ---- angle sums ------------------------------------------------------------ */

/* One term's pair of trigonometric factors: the term is COEF * REST *
 * F(a) * G(b), F and G each sin or cos, a and b distinct arguments. */
typedef struct angle_pair {
    size_t term;
    const expr_t *coef, *rest, *a, *b;
    expr_op_t fa, fb;
} angle_pair_t;

static bool trig_factor(const expr_t *f)
{
    return f->op == EXPR_SIN || f->op == EXPR_COS;
}

/* The pairs of X's terms that make an angle sum, contracted (Lemos's and
 * every textbook's frames turned twice about one axis give them):
 *   sin a cos b ± cos a sin b = sin(a ± b),
 *   cos a cos b ∓ sin a sin b = cos(a ± b);
 * X itself when there is none.  Terms of more than a few trigonometric
 * factors, and sums of many terms, are left alone (the pairs are
 * quadratic in both). */
static const expr_t *angle_sums(simp_t *s, const expr_t *x)
{
    if (x->op != EXPR_ADD || x->nargs > 400)
        return x;
    expr_graph_t *g = s->g;
    size_t nt = x->nargs, cap = 64, np = 0;
    angle_pair_t *pr = xmalloc(cap * sizeof *pr);
    const expr_t *one = expr_num(g, 1);
    for (size_t i = 0; i < nt; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *f = factors_of(&x->args[i], &nf, &c);
        size_t ntrig = 0;
        for (size_t j = 0; j < nf; j++)
            ntrig += trig_factor(f[j]);
        if (ntrig < 2 || ntrig > 6)
            continue;
        const expr_t **other = xmalloc((nf + 1) * sizeof *other);
        for (size_t p = 0; p < nf; p++) {
            for (size_t q = p + 1; q < nf; q++) {
                if (!trig_factor(f[p]) || !trig_factor(f[q]) ||
                    f[p]->args[0] == f[q]->args[0])
                    continue;
                size_t no = 0;
                for (size_t j = 0; j < nf; j++)
                    if (j != p && j != q)
                        other[no++] = f[j];
                if (np == cap) {
                    cap *= 2;
                    pr = xrealloc(pr, cap * sizeof *pr);
                }
                /* a and b in a fixed order: by node id */
                const expr_t *fp = f[p], *fq = f[q];
                if (fp->args[0]->id > fq->args[0]->id) {
                    const expr_t *t = fp;
                    fp = fq;
                    fq = t;
                }
                pr[np++] = (angle_pair_t){i, c ? c : one,
                                          expr_product(g, other, no),
                                          fp->args[0], fq->args[0], fp->op,
                                          fq->op};
            }
        }
        free(other);
    }
    bool *used = xcalloc(nt, sizeof *used);
    const expr_t **out = xmalloc((nt + 1) * sizeof *out);
    size_t no = 0;
    for (size_t i = 0; i < np; i++) {
        const angle_pair_t *u = &pr[i];
        if (used[u->term])
            continue;
        for (size_t j = i + 1; j < np; j++) {
            const angle_pair_t *v = &pr[j];
            if (used[v->term] || used[u->term] || v->term == u->term ||
                v->rest != u->rest || v->a != u->a || v->b != u->b)
                continue;
            bool same = v->coef == u->coef;
            bool opposite = v->coef == expr_neg(g, u->coef);
            if (!same && !opposite)
                continue;
            const expr_t *r = NULL;
            expr_op_t sa = u->fa, sb = u->fb, ta = v->fa, tb = v->fb;
            if (sa != sb && ta != tb && sa == tb && sb == ta) {
                /* sin a cos b and cos a sin b: sin(a ± b), the sign by
                 * which one carries the coefficient U */
                const expr_t *sum = expr_add(g, u->a, u->b);
                const expr_t *dif = sa == EXPR_SIN ? expr_sub(g, u->a, u->b)
                                                   : expr_sub(g, u->b, u->a);
                r = expr_call(g, EXPR_SIN, same ? sum : dif, NULL);
            } else if (sa == sb && ta == tb && sa != ta) {
                /* cos a cos b and sin a sin b: U the cosines' coefficient */
                const expr_t *cc = sa == EXPR_COS ? u->coef : v->coef;
                const expr_t *sum = expr_add(g, u->a, u->b);
                const expr_t *dif = expr_sub(g, u->a, u->b);
                r = expr_mul(g, cc == u->coef ? one : expr_num(g, -1),
                             expr_call(g, EXPR_COS, opposite ? sum : dif,
                                       NULL));
                out[no++] = expr_product(
                    g, (const expr_t *const[]){u->coef, u->rest, r}, 3);
                used[u->term] = used[v->term] = true;
                break;
            }
            if (!r)
                continue;
            out[no++] =
                expr_product(g, (const expr_t *const[]){u->coef, u->rest, r},
                             3);
            used[u->term] = used[v->term] = true;
            break;
        }
    }
    const expr_t *res = x;
    if (no > 0) {
        for (size_t i = 0; i < nt; i++)
            if (!used[i])
                out[no++] = x->args[i];
        res = expr_sum(g, out, no);
    }
    free(used);
    free(out);
    free(pr);
    /* a contraction can make another (sin(a + b) cos c + …) */
    return res != x && res->op == EXPR_ADD ? angle_sums(s, res) : res;
}

const expr_t *simp_angle_sums(simp_t *s, const expr_t *x)
{
    return angle_sums(s, x);
}

/* ---- the shortest form -------------------------------------------------- */

static const expr_t *best(simp_t *s, const expr_t *e);

/* E with the insides of its functions and powers in their shortest forms
 * (its own sums and products as they are). */
static const expr_t *pretty(simp_t *s, const expr_t *e)
{
    if (e->op == EXPR_CONST || e->op == EXPR_VAR || is_opaque(s, e))
        return e;
    const expr_t *r = nmap_get(&s->pretty, e->id);
    if (r)
        return r;
    expr_graph_t *g = s->g;
    switch (e->op) {
    case EXPR_GUARD:
        r = pretty(s, e->args[0]);
        break;
    case EXPR_ADD:
    case EXPR_MUL:
        r = rebuild(s, e, pretty, plain_product);
        break;
    case EXPR_POW:
        r = expr_pow(g, best(s, e->args[0]), best(s, e->args[1]));
        break;
    default:
        r = expr_call(g, e->op, best(s, e->args[0]),
                      e->nargs > 1 ? best(s, e->args[1]) : NULL);
        break;
    }
    /* a rebuilt sum may gather what its parts now share */
    r = shorter(s, e, r);
    nmap_put(&s->pretty, e->id, r);
    return r;
}

/* The ranks of X's variables, highest first, each once; into R (at most
 * MAX), the count returned. */
static size_t ranks_of(simp_t *s, const expr_t *x, unsigned *r, size_t max)
{
    size_t nt, n = 0;
    const expr_t *const *t = terms_of(&x, &nt);
    for (size_t i = 0; i < nt; i++) {
        size_t nf;
        const expr_t *c;
        const expr_t *const *f = factors_of(&t[i], &nf, &c);
        for (size_t j = 0; j < nf; j++) {
            unsigned k = expr_rank(s->g, f[j]);
            size_t a = 0;
            while (a < n && r[a] != k)
                a++;
            if (a == n && n < max && k > 0)
                r[n++] = k;
        }
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && r[j - 1] < r[j]; j--) {
            unsigned t2 = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t2;
        }
    return n;
}

/* The shortest form of the expanded X among the factored, collected and
 * common-denominator ones (X itself included). */
static const expr_t *best_of_expanded(simp_t *s, const expr_t *x)
{
    const expr_t *b = pretty(s, x);
    if (x->op != EXPR_ADD)
        return b;
    const expr_t *f = factored(s, x);
    if (f)
        b = shorter(s, b, pretty(s, f));
    unsigned rk[8];
    size_t nr = ranks_of(s, x, rk, 8);
    for (size_t i = 0; i < nr && i < 3; i++) {
        const expr_t *c = collected(s, x, rk[i]);
        if (c)
            b = shorter(s, b, pretty(s, c));
        /* the content out, the rest collected: m*(a*x'' + (b + c)*y'') */
        if (f && f->op == EXPR_MUL) {
            /* f is content*rest (the content's sign chosen by factored) */
            const expr_t **fl = xmalloc(f->nargs * sizeof *fl);
            const expr_t *rest = NULL;
            size_t nc = 0;
            for (uint32_t j = 0; j < f->nargs; j++) {
                if (f->args[j]->op == EXPR_ADD && !rest)
                    rest = f->args[j];
                else
                    fl[nc++] = f->args[j];
            }
            const expr_t *cr = rest ? collected(s, rest, rk[i]) : NULL;
            if (cr) {
                fl[nc++] = cr;
                b = shorter(s, b, pretty(s, expr_product(s->g, fl, nc)));
            }
            free(fl);
        }
    }
    const expr_t *d = s->light ? NULL : common_denominator(s, x);
    if (d)
        b = shorter(s, b, pretty(s, d));
    /* common factors of some terms: in the pieces of named output only
     * (where.h), which are read as tables, not as textbook rows */
    if (s->light)
        b = shorter(s, b, pretty(s, horner(s, x)));
    return b;
}

static const expr_t *best(simp_t *s, const expr_t *e)
{
    if (e->op == EXPR_CONST || e->op == EXPR_VAR || is_opaque(s, e))
        return e;
    const expr_t *r = nmap_get(&s->best, e->id);
    if (r)
        return r;
    e = expr_unguarded(e);
    if (too_big(e) || s->work >= SIMP_WORK_MAX) {
        nmap_put(&s->best, e->id, e);
        return e;
    }
    const expr_t *x = pyth_best(s, expand(s, e), false, NULL);
    r = shorter(s, pretty(s, e), best_of_expanded(s, x));
    const expr_t *a = angle_sums(s, x);
    if (a != x)
        r = shorter(s, r, best_of_expanded(s, a));
    nmap_put(&s->best, e->id, r);
    return r;
}

/* ---- where defined ------------------------------------------------------ */

/* GUARD(0, the atoms of the domains of IN[0..nin) that none of the
 * FORMS[0..nf) holds), or NULL when there are none. */
static const expr_t *conditions(simp_t *s, const expr_t *const *in,
                                size_t nin, const expr_t *const *forms,
                                size_t nf)
{
    expr_graph_t *g = s->g;
    const expr_t *zero = expr_num(g, 0), *all = zero;
    for (size_t i = 0; i < nin; i++)
        all = expr_guard(g, all, in[i]);
    if (all->op != EXPR_GUARD)
        return NULL;
    const expr_t *r = zero;
    for (uint32_t i = 1; i < all->nargs; i++) {
        const expr_t *a = all->args[i];
        bool held = false;
        for (size_t j = 0; j < nf && !held; j++)
            held = expr_holds_domain(g, forms[j], a);
        if (!held)
            r = expr_guard(g, r, a);
    }
    return r->op == EXPR_GUARD ? r : NULL;
}

const expr_t *simp_simplify(simp_t *s, const expr_t *d)
{
    return simp_simplify_within(s, d, d);
}

const expr_t *simp_simplify_within(simp_t *s, const expr_t *d,
                                   const expr_t *dom)
{
    const expr_t *r = best(s, expr_unguarded(d));
    if (!dom)
        return r;
    const expr_t *c = conditions(s, &dom, 1, &r, 1);
    if (!c)
        return r;
    expr_graph_t *g = s->g;
    for (uint32_t i = 1; i < c->nargs; i++)
        r = expr_guard(g, r, c->args[i]);
    return r;
}

/* Whether the term T has a factor of rank RANK exactly. */
static bool has_rank(const expr_graph_t *g, const expr_t *t, unsigned rank)
{
    size_t nf;
    const expr_t *c;
    const expr_t *const *f = factors_of(&t, &nf, &c);
    for (size_t i = 0; i < nf; i++)
        if (expr_rank(g, f[i]) == rank)
            return true;
    return false;
}

void simp_row(simp_t *s, const expr_t *l, const expr_t *r,
              unsigned split_rank, const expr_t **L, const expr_t **R,
              const expr_t **cond)
{
    expr_graph_t *g = s->g;
    const expr_t *in[2] = {l, r};
    l = expr_unguarded(l);
    r = expr_unguarded(r);
    const expr_t *lo = NULL, *hi = NULL;
    bool huge = too_big(l) || too_big(r);
    if (l->op != EXPR_VAR && !huge && s->work < SIMP_WORK_MAX) {
        const expr_t *x = pyth_best(s, expand(s, expr_sub(g, l, r)), false,
                                    NULL);
        size_t nt;
        const expr_t *const *t = terms_of(&x, &nt);
        const expr_t **h = xmalloc((nt + 1) * sizeof *h);
        const expr_t **o = xmalloc((nt + 1) * sizeof *o);
        size_t nh = 0, no = 0;
        bool neg = true;
        for (size_t i = 0; i < nt; i++) {
            if (has_rank(g, t[i], split_rank)) {
                h[nh++] = t[i];
                neg = neg && is_negative_term(t[i]);
            } else {
                o[no++] = t[i];
            }
        }
        if (nh > 0) {
            hi = expr_sum(g, h, nh);
            lo = no ? expr_neg(g, expr_sum(g, o, no)) : expr_num(g, 0);
            if (neg) {
                hi = expr_neg(g, hi);
                lo = expr_neg(g, lo);
            }
            /* -(a + b) multiplied out: -a - b */
            hi = expand(s, hi);
            lo = expand(s, lo);
        }
        free(h);
        free(o);
    }
    *L = best(s, l);
    *R = best(s, r);
    if (hi) {
        /* the accelerations on the left, the textbook's form, unless that
         * is much longer than the row as derived (a product that
         * multiplies out into many terms) */
        const expr_t *sl = best_of_expanded(s, hi);
        const expr_t *sr = best_of_expanded(s, lo);
        if (2 * (text_length(s, sl) + text_length(s, sr)) <=
            3 * (text_length(s, *L) + text_length(s, *R)) + 20) {
            *L = sl;
            *R = sr;
        }
    }
    const expr_t *forms[2] = {*L, *R};
    *cond = conditions(s, in, 2, forms, 2);
}

/* ---- linear systems ----------------------------------------------------- */

/* The quotient N/D simplified: the rewriting of sin^2 + cos^2 that makes
 * D shortest, applied to N too; then D's monomial divided into N, or the
 * common content of N and D cancelled. */
static const expr_t *quotient(simp_t *s, const expr_t *n, const expr_t *d)
{
    expr_graph_t *g = s->g;
    pyth_choice_t c;
    d = pyth_best(s, d, true, &c);
    n = pyth_apply(s, n, &c);
    if (expr_is_const(n, 0))
        return n;
    const expr_t *inv;
    if (d->op != EXPR_ADD) {
        inv = expr_pow(g, d, expr_num(g, -1));
    } else {
        /* the common content: the content of N + D's sum is common to
         * both (a gcd of the two contents) */
        const expr_t *both[2] = {content(s, n), content(s, d)};
        const expr_t *cc = content(s, expr_sum(g, both, 2));
        const expr_t *ci = expr_pow(g, cc, expr_num(g, -1));
        n = expand(s, expr_mul(g, n, ci));
        d = expand(s, expr_mul(g, d, ci));
        /* and D's own content out of the sum: 2*(x^2 + y^2) */
        const expr_t *cd = content(s, d);
        const expr_t *rest = expand(s, expr_mul(g, d, expr_pow(g, cd,
                                                       expr_num(g, -1))));
        inv = expr_mul(g, expr_pow(g, cd, expr_num(g, -1)),
                       expr_pow(g, rest, expr_num(g, -1)));
    }
    const expr_t *q = expand(s, expr_mul(g, n, inv));
    return best(s, pyth_best(s, q, false, NULL));
}

/* Bits of a column set. */
static int popcount32(uint32_t x)
{
    return __builtin_popcount(x);
}

int simp_solve(simp_t *s, const expr_t *const *A, const expr_t *const *b,
               size_t n, const expr_t **x)
{
    if (n == 0)
        return 0;
    if (n > SIMP_SOLVE_MAX)
        return -1;
    expr_graph_t *g = s->g;
    size_t nc = n + 1; /* the columns of A, then b */
    for (size_t i = 0; i < n * n; i++)
        if (too_big(A[i]))
            return -1;
    for (size_t i = 0; i < n; i++)
        if (too_big(b[i]))
            return -1;
    const expr_t **E = xmalloc(n * nc * sizeof *E);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++)
            E[i * nc + j] = expand(s, expr_unguarded(A[i * n + j]));
        E[i * nc + n] = expand(s, expr_unguarded(b[i]));
    }
    /* minor[S]: the determinant of the last |S| rows with the columns S
     * in increasing order, built from the bottom row up (Laplace along
     * the first of those rows) */
    uint32_t full = (1u << nc) - 1;
    const expr_t **minor = xcalloc((size_t)full + 1, sizeof *minor);
    minor[0] = expr_num(g, 1);
    int status = 0;
    for (size_t k = n; k-- > 0 && status == 0;) {
        int want = (int)(n - k);
        for (uint32_t S = 1; S <= full && status == 0; S++) {
            if (popcount32(S) != want)
                continue;
            const expr_t **t = xmalloc(nc * sizeof *t);
            size_t nt = 0;
            int pos = 0;
            for (size_t j = 0; j < nc; j++) {
                if (!(S >> j & 1))
                    continue;
                const expr_t *a = E[k * nc + j];
                const expr_t *m = minor[S & ~(1u << j)];
                if (!expr_is_const(a, 0) && m && !expr_is_const(m, 0)) {
                    const expr_t *f[2] = {a, m};
                    const expr_t *p = expand_product(s, f, 2);
                    t[nt++] = pos % 2 ? expr_neg(g, p) : p;
                }
                pos++;
            }
            const expr_t *v = expr_sum(g, t, nt);
            free(t);
            /* too big, or the work ran out (a product left as it is
             * would not be a polynomial the quotient can read) */
            if (term_count(v) > SIMP_MAX_TERMS || s->work >= SIMP_WORK_MAX ||
                too_big(v))
                status = -1;
            minor[S] = v;
        }
    }
    const expr_t *det = status == 0 ? minor[full & ~(1u << n)] : NULL;
    if (det) {
        det = pyth_best(s, det, true, NULL);
        if (expr_is_const(det, 0))
            status = -1;
    }
    if (status == 0) {
        for (size_t i = 0; i < n; i++) {
            /* b in place of column i: in the set, b is the last column;
             * moving it to place i is n-1-i transpositions */
            const expr_t *num = minor[full & ~(1u << i)];
            if ((n - 1 - i) % 2)
                num = expr_neg(g, num);
            x[i] = quotient(s, num, minor[full & ~(1u << n)]);
        }
    }
    free(minor);
    free(E);
    return status;
}

int simp_solve_named(simp_t *s, const expr_t *const *A,
                     const expr_t *const *b, size_t n, const expr_t **x)
{
    if (n == 0)
        return 0;
    if (n > SIMP_SOLVE_NAMED_MAX)
        return -1;
    expr_graph_t *g = s->g;
    size_t ne = n * n + n;
    const expr_t **entry = xmalloc(ne * sizeof *entry);
    const expr_t **sym = xmalloc(ne * sizeof *sym);
    const expr_t **SA = xmalloc(n * n * sizeof *SA);
    const expr_t **Sb = xmalloc(n * sizeof *Sb);
    size_t nd = 0;
    uint32_t first = expr_graph_nvars(g);
    /* one symbol per distinct entry (a symmetric matrix shares its
     * halves), 0 and constants as they are */
    for (size_t i = 0; i < ne; i++) {
        const expr_t *e = expr_unguarded(i < n * n ? A[i] : b[i - n * n]);
        const expr_t *y = e;
        if (e->op != EXPR_CONST) {
            size_t k = 0;
            while (k < nd && entry[k] != e)
                k++;
            if (k == nd) {
                char name[32];
                snprintf(name, sizeof name, "a%zu", nd);
                uint32_t v = expr_var_declare(g, name);
                expr_var_set_rank(g, v, expr_rank(g, e));
                entry[nd] = e;
                sym[nd++] = expr_var(g, v);
            }
            y = sym[k];
        }
        if (i < n * n)
            SA[i] = y;
        else
            Sb[i - n * n] = y;
    }
    int status = simp_solve(s, SA, Sb, n, x);
    if (status == 0) {
        uint32_t nv = expr_graph_nvars(g);
        const expr_t **repl = xcalloc(nv, sizeof *repl);
        for (size_t k = 0; k < nd; k++)
            repl[sym[k]->var] = entry[k];
        for (size_t i = 0; i < n; i++)
            x[i] = expr_subst(g, expr_unguarded(x[i]), repl);
        free(repl);
    }
    (void)first;
    free(entry);
    free(sym);
    free(SA);
    free(Sb);
    return status;
}

/* ---- text -------------------------------------------------------------- */

static void append(char **buf, size_t *len, const char *t)
{
    size_t n = strlen(t);
    *buf = xrealloc(*buf, *len + n + 1);
    memcpy(*buf + *len, t, n + 1);
    *len += n;
}

/* V as text or LaTeX, or, when it is larger than SIMP_SHOW_MAX_NODES
 * written out, a note that says so: a DAG written out as a tree can be
 * exponentially larger than the graph (Kane's rows of the bicycle with
 * the kinematics substituted: gigabytes), and no reader follows a form
 * of that size — nor does TeX, whose input lines end at 200 000
 * characters. */
static char *format_node(simp_t *s, const expr_t *v, bool latex)
{
    size_t count = 0;
    if (larger_than(v, SIMP_SHOW_MAX_NODES, &count))
        return xstrdup(latex ? "\\text{(too large to show: more than "
                               SIMP_SHOW_MAX_TEXT " terms written out)}"
                             : "(too large to show: more than "
                               SIMP_SHOW_MAX_TEXT " terms written out)");
    if (!latex)
        return expr_to_text(s->g, v);
    char *t = expr_to_latex(s->g, v);
    size_t n = strlen(t);
    if (n > SIMP_LATEX_MAX_CHARS) {
        /* one line of an align* wider than TeX's largest dimension
         * (16384 pt) does not compile */
        free(t);
        t = xmalloc(160);
        snprintf(t, 160,
                 "\\text{(too long to typeset: %zu characters of LaTeX; "
                 "show prints it as text)}",
                 n);
    }
    return t;
}

/* One condition: "x != 0", "x >= 0", "x > 0", "-1 <= x <= 1", or "A is
 * defined". */
static void condition(simp_t *s, const expr_t *a, bool latex, char **buf,
                      size_t *len)
{
    const char *rel = NULL;
    const expr_t *arg = a;
    int64_t p, q;
    if (a->op == EXPR_POW && expr_rational(a->args[1], &p, &q)) {
        arg = a->args[0];
        rel = q == 1 ? (latex ? " \\neq 0" : " != 0")
              : p > 0 ? (latex ? " \\geq 0" : " >= 0")
                      : " > 0";
    } else if (a->op == EXPR_SQRT) {
        arg = a->args[0];
        rel = latex ? " \\geq 0" : " >= 0";
    } else if (a->op == EXPR_LOG) {
        arg = a->args[0];
        rel = " > 0";
    } else if (a->op == EXPR_ASIN || a->op == EXPR_ACOS) {
        char *t = format_node(s, best(s, a->args[0]), latex);
        append(buf, len, latex ? "-1 \\leq " : "-1 <= ");
        append(buf, len, t);
        append(buf, len, latex ? " \\leq 1" : " <= 1");
        free(t);
        return;
    } else if (a->op == EXPR_CONST) {
        append(buf, len, latex ? "\\text{never}" : "never");
        return;
    }
    const expr_t *shown = arg == a ? a : best(s, arg);
    char *t = format_node(s, shown, latex);
    append(buf, len, t);
    free(t);
    append(buf, len, rel ? rel : latex ? " \\text{ defined}" : " defined");
}

char *simp_format_conditions(simp_t *s, const expr_t *guard, bool latex)
{
    char *buf = xmalloc(1);
    size_t len = 0;
    buf[0] = '\0';
    if (!guard || guard->op != EXPR_GUARD)
        return buf;
    append(&buf, &len, latex ? " \\quad \\left(" : "  (where ");
    for (uint32_t i = 1; i < guard->nargs; i++) {
        if (i > 1)
            append(&buf, &len, latex ? ",\\ " : ", ");
        condition(s, guard->args[i], latex, &buf, &len);
    }
    append(&buf, &len, latex ? "\\right)" : ")");
    return buf;
}

/* The node V prints as: -0 as 0 (a sign of zero a fold kept is no
 * mathematics). */
static const expr_t *shown(simp_t *s, const expr_t *v)
{
    return v->op == EXPR_CONST && v->value == 0 ? expr_num(s->g, 0) : v;
}

char *simp_format(simp_t *s, const expr_t *d, bool latex)
{
    const expr_t *v = shown(s, expr_unguarded(d));
    char *t = format_node(s, v, latex);
    size_t len = strlen(t);
    char *c = simp_format_conditions(s, d, latex);
    append(&t, &len, c);
    free(c);
    return t;
}

char *simp_format_row(simp_t *s, const expr_t *L, const expr_t *R,
                      const expr_t *cond, bool latex)
{
    L = shown(s, L);
    R = shown(s, R);
    size_t count = 0;
    if (larger_than(L, SIMP_SHOW_MAX_NODES, &count) ||
        (count = 0, larger_than(R, SIMP_SHOW_MAX_NODES, &count)))
        cond = NULL; /* the conditions of a row not shown say nothing */
    char *t = format_node(s, L, latex);
    size_t len = strlen(t);
    append(&t, &len, latex ? " &= " : " = ");
    char *r = format_node(s, R, latex);
    append(&t, &len, r);
    free(r);
    char *c = simp_format_conditions(s, cond, latex);
    append(&t, &len, c);
    free(c);
    return t;
}
