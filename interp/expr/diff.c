/*
 * diff.c — transformations of the expression graph: the partial derivative
 * (one rule per op, memoised in the graph by node and variable), the total
 * time derivative, substitution, dependency tests and polynomial degree.
 *
 * Every result is built with the simplifying constructors of expr.c, so a
 * derivative is as canonical as anything else in the graph (d/dx x^3 is
 * the very node 3*x^2).  Dependency tests use the per-node sets of
 * variables (expr_impl.h), exact up to 256 variables, and walk the graph
 * only when the graph has more and the sets cannot decide.
 *
 * Must not: print; evaluate other than through the constructors' folding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/expr/expr.h"
#include "interp/expr/expr_impl.h"

/* ---- dependency -------------------------------------------------------- */

/* The variables' sets are exact up to this many variables. */
#define DEP_EXACT (64 * EXPR_DEP_WORDS)

static expr_dep_t mask_set(const expr_graph_t *g, const bool *mask)
{
    expr_dep_t d = {{0}};
    for (uint32_t v = 0; v < g->nvars; v++)
        if (mask[v])
            expr_dep_add(&d, v);
    return d;
}

static bool has_var(const expr_graph_t *g, const expr_t *e, uint32_t v)
{
    return g->dep[e->id].w[(v >> 6) % EXPR_DEP_WORDS] >> (v & 63) & 1;
}

/* Exact walk for graphs with more than DEP_EXACT variables, where a bit
 * is shared by several variables (an explicit stack: no recursion).  SEEN
 * marks the nodes visited. */
static bool depends_walk(const expr_graph_t *g, const expr_t *e,
                         const expr_dep_t *bits, const bool *mask,
                         unsigned char *seen)
{
    size_t cap = 64, top = 0;
    const expr_t **st = expr_xmalloc(cap * sizeof *st);
    bool found = false;
    st[top++] = e;
    seen[e->id] = 1;
    while (top && !found) {
        const expr_t *x = st[--top];
        if (x->op == EXPR_VAR) {
            found = x->var < g->nvars && mask[x->var];
            continue;
        }
        for (uint32_t i = 0; i < x->nargs; i++) {
            const expr_t *a = x->args[i];
            if (seen[a->id] || !expr_dep_meets(&g->dep[a->id], bits))
                continue;
            seen[a->id] = 1;
            if (top == cap) {
                cap *= 2;
                st = expr_xrealloc(st, cap * sizeof *st);
            }
            st[top++] = a;
        }
    }
    free(st);
    return found;
}

bool expr_depends_any(const expr_graph_t *g, const expr_t *e,
                      const bool *mask)
{
    expr_dep_t bits = mask_set(g, mask);
    if (!expr_dep_meets(&g->dep[e->id], &bits))
        return false;
    if (g->nvars <= DEP_EXACT)
        return true;
    unsigned char *seen = expr_xcalloc(g->count, 1);
    bool r = depends_walk(g, e, &bits, mask, seen);
    free(seen);
    return r;
}

bool expr_depends(const expr_graph_t *g, const expr_t *e, uint32_t var)
{
    if (!has_var(g, e, var))
        return false;
    if (g->nvars <= DEP_EXACT)
        return true;
    bool *mask = expr_xcalloc(g->nvars, sizeof *mask);
    if (var < g->nvars)
        mask[var] = true;
    bool r = expr_depends_any(g, e, mask);
    free(mask);
    return r;
}

/* ---- partial derivative ------------------------------------------------ */

static const expr_t *mul3(expr_graph_t *g, const expr_t *a, const expr_t *b,
                          const expr_t *c)
{
    const expr_t *f[3] = {a, b, c};
    return expr_product(g, f, 3);
}

static const expr_t *call1(expr_graph_t *g, expr_op_t op, const expr_t *a)
{
    return expr_call(g, op, a, NULL);
}

/* d/dx of a product f1*...*fn: sum over i of f1*..*fi'*..*fn. */
static const expr_t *diff_product(expr_graph_t *g, const expr_t *e,
                                  uint32_t var)
{
    uint32_t n = e->nargs;
    const expr_t **f = expr_xmalloc((size_t)n * sizeof *f);
    const expr_t **terms = expr_xmalloc((size_t)n * sizeof *terms);
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const expr_t *d = expr_diff(g, e->args[i], var);
        if (d == g->zero)
            continue;
        memcpy(f, e->args, (size_t)n * sizeof *f);
        f[i] = d;
        terms[k++] = expr_product(g, f, n);
    }
    const expr_t *r = expr_sum(g, terms, k);
    free(f);
    free(terms);
    return r;
}

/* d/dx a^b.  Constant exponent: b*a^(b-1)*a'.  Constant base:
 * a^b*log(a)*b'.  Otherwise a^b*(b'*log(a) + b*a'/a). */
static const expr_t *diff_pow(expr_graph_t *g, const expr_t *e, uint32_t var)
{
    const expr_t *a = e->args[0], *b = e->args[1];
    const expr_t *da = expr_diff(g, a, var), *db = expr_diff(g, b, var);
    if (db == g->zero) {
        const expr_t *bm1 = expr_add(g, b, g->minus_one);
        return mul3(g, b, expr_pow(g, a, bm1), da);
    }
    const expr_t *loga = call1(g, EXPR_LOG, a);
    if (da == g->zero)
        return mul3(g, e, loga, db);
    const expr_t *inner =
        expr_add(g, expr_mul(g, db, loga),
                 mul3(g, b, da, expr_pow(g, a, g->minus_one)));
    return expr_mul(g, e, inner);
}

static const expr_t *diff_rule(expr_graph_t *g, const expr_t *e,
                               uint32_t var)
{
    const expr_t *a = e->nargs > 0 ? e->args[0] : NULL;
    const expr_t *b = e->nargs > 1 ? e->args[1] : NULL;
    const expr_t *da, *db, *t;
    switch (e->op) {
    case EXPR_CONST:
    case EXPR_VAR:
    case EXPR_OP_COUNT:
        return g->zero; /* handled by expr_diff */
    case EXPR_ADD: {
        const expr_t **d = expr_xmalloc(e->nargs * sizeof *d);
        size_t k = 0;
        for (uint32_t i = 0; i < e->nargs; i++) {
            const expr_t *di = expr_diff(g, e->args[i], var);
            if (di != g->zero)
                d[k++] = di;
        }
        t = expr_sum(g, d, k);
        free(d);
        return t;
    }
    case EXPR_MUL:
        return diff_product(g, e, var);
    case EXPR_POW:
        return diff_pow(g, e, var);
    case EXPR_SIGN:
        return g->zero; /* piecewise constant */
    case EXPR_GUARD: /* (v where d)' = v' where d */
        return expr_guard_same(g, expr_diff(g, a, var), e);
    default:
        break;
    }
    da = expr_diff(g, a, var);
    switch (e->op) {
    case EXPR_SIN: /* cos(a) a' */
        return expr_mul(g, call1(g, EXPR_COS, a), da);
    case EXPR_COS: /* -sin(a) a' */
        return mul3(g, g->minus_one, call1(g, EXPR_SIN, a), da);
    case EXPR_TAN: /* (1 + tan(a)^2) a' */
        t = expr_pow(g, e, expr_num(g, 2));
        return expr_mul(g, expr_add(g, g->one, t), da);
    case EXPR_ASIN: /* a' / sqrt(1 - a^2) */
    case EXPR_ACOS: /* -a' / sqrt(1 - a^2) */
        t = expr_sub(g, g->one, expr_pow(g, a, expr_num(g, 2)));
        t = expr_pow(g, call1(g, EXPR_SQRT, t), g->minus_one);
        return mul3(g, e->op == EXPR_ACOS ? g->minus_one : g->one, t, da);
    case EXPR_ATAN: /* a' / (1 + a^2) */
        t = expr_add(g, g->one, expr_pow(g, a, expr_num(g, 2)));
        return expr_mul(g, expr_pow(g, t, g->minus_one), da);
    case EXPR_ATAN2: { /* atan2(y, x)' = (x y' - y x') / (x^2 + y^2) */
        db = expr_diff(g, b, var);
        const expr_t *num = expr_sub(g, expr_mul(g, b, da),
                                     expr_mul(g, a, db));
        const expr_t *two = expr_num(g, 2);
        const expr_t *den = expr_add(g, expr_pow(g, a, two),
                                     expr_pow(g, b, two));
        return expr_div(g, num, den);
    }
    case EXPR_SINH: /* cosh(a) a' */
        return expr_mul(g, call1(g, EXPR_COSH, a), da);
    case EXPR_COSH: /* sinh(a) a' */
        return expr_mul(g, call1(g, EXPR_SINH, a), da);
    case EXPR_TANH: /* (1 - tanh(a)^2) a' */
        t = expr_sub(g, g->one, expr_pow(g, e, expr_num(g, 2)));
        return expr_mul(g, t, da);
    case EXPR_EXP: /* exp(a) a' */
        return expr_mul(g, e, da);
    case EXPR_LOG: /* a' / a */
        return expr_div(g, da, a);
    case EXPR_SQRT: /* a' / (2 sqrt(a)) */
        return mul3(g, expr_num(g, 0.5), da, expr_pow(g, e, g->minus_one));
    case EXPR_ABS: /* sign(a) a' */
        return expr_mul(g, call1(g, EXPR_SIGN, a), da);
    case EXPR_MIN: /* (a'+b')/2 - sign(a-b) (a'-b')/2 */
    case EXPR_MAX: /* (a'+b')/2 + sign(a-b) (a'-b')/2 */
    {
        db = expr_diff(g, b, var);
        const expr_t *half = expr_num(g, e->op == EXPR_MIN ? -0.5 : 0.5);
        const expr_t *mean = expr_mul(g, expr_num(g, 0.5),
                                      expr_add(g, da, db));
        const expr_t *s = call1(g, EXPR_SIGN, expr_sub(g, a, b));
        return expr_add(g, mean, mul3(g, half, s, expr_sub(g, da, db)));
    }
    default:
        return g->zero;
    }
}

/* The derivative of E by VAR when it is known without applying a rule:
 * 0 for a node without VAR, 0 or 1 for a variable, or the memo's; NULL
 * when a rule must make it. */
static const expr_t *diff_known(expr_graph_t *g, const expr_t *e,
                                uint32_t var)
{
    if (!has_var(g, e, var) && e->op != EXPR_GUARD)
        return g->zero;
    if (e->op == EXPR_VAR)
        return e->var == var ? g->one : g->zero;
    return expr_memo_get(g, (uint64_t)e->id << 32 | var);
}

/* How many of E's arguments diff_rule differentiates: the first of a
 * guard (its domain's are not needed), none of sign(), all the others. */
static uint32_t diff_needs(const expr_t *e)
{
    if (e->op == EXPR_SIGN)
        return 0;
    if (e->op == EXPR_GUARD)
        return e->nargs ? 1 : 0;
    return e->nargs;
}

/* Differentiation does not recurse by the depth of the graph (issue 31:
 * a chain of 30 000 frames made expressions 145 000 nodes deep, and the
 * recursion of diff_rule through expr_diff overflowed the stack): the
 * nodes are visited in post order by an explicit stack, each argument's
 * derivative made and memoised before its node's, so that when diff_rule
 * asks expr_diff for an argument's, the memo answers at once.  The nodes
 * and the order of their construction are those of the recursion, so the
 * derivatives are the very same nodes. */
const expr_t *expr_diff(expr_graph_t *g, const expr_t *e, uint32_t var)
{
    const expr_t *r = diff_known(g, e, var);
    if (r)
        return r;
    if (expr_budget_spent(g))
        return g->zero; /* not memoised: the caller discards it */
    size_t cap = 64, top = 0;
    struct diff_frame {
        const expr_t *e;
        uint32_t next; /* the next argument to look at */
    } *st = expr_xmalloc(cap * sizeof *st);
    st[top++] = (struct diff_frame){e, 0};
    while (top) {
        struct diff_frame *f = &st[top - 1];
        const expr_t *x = f->e;
        if (f->next < diff_needs(x)) {
            const expr_t *a = x->args[f->next++];
            if (diff_known(g, a, var))
                continue;
            if (top == cap) {
                cap *= 2;
                st = expr_xrealloc(st, cap * sizeof *st);
            }
            st[top++] = (struct diff_frame){a, 0};
            continue;
        }
        top--;
        /* a node reached twice (a shared argument) is made once; past the
         * budget no more is made (expr_graph_set_budget) */
        if (!diff_known(g, x, var)) {
            if (expr_budget_spent(g))
                break;
            expr_memo_put(g, (uint64_t)x->id << 32 | var,
                          diff_rule(g, x, var));
        }
    }
    free(st);
    r = diff_known(g, e, var);
    return r ? r : g->zero;
}

/* The memo of one substitution: node id → result, an open-addressing
 * table sized by the nodes the substitution visits, not by the graph (a
 * table of the graph's size per call made n substitutions into an n²
 * graph cost n³: the maggi equations' h(q, ψ) on the N-trailer). */
typedef struct subst_memo {
    expr_memo_entry_t *tab; /* key: id + 1 (0 is free) */
    size_t cap, count;
} subst_memo_t;

static const expr_t *subst_memo_get(const subst_memo_t *m, uint32_t id)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    uint64_t key = (uint64_t)id + 1;
    for (size_t j = expr_memo_slot(key, mask); m->tab[j].key; j = (j + 1) & mask)
        if (m->tab[j].key == key)
            return m->tab[j].val;
    return NULL;
}

static void subst_memo_put(subst_memo_t *m, uint32_t id, const expr_t *val)
{
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        expr_memo_entry_t *t = expr_xcalloc(cap, sizeof *t);
        for (size_t i = 0; i < m->cap; i++)
            if (m->tab[i].key) {
                size_t j = expr_memo_slot(m->tab[i].key, cap - 1);
                while (t[j].key)
                    j = (j + 1) & (cap - 1);
                t[j] = m->tab[i];
            }
        free(m->tab);
        m->tab = t;
        m->cap = cap;
    }
    uint64_t key = (uint64_t)id + 1;
    size_t mask = m->cap - 1, j = expr_memo_slot(key, mask);
    while (m->tab[j].key)
        j = (j + 1) & mask;
    m->tab[j].key = key;
    m->tab[j].val = val;
    m->count++;
}

/* ---- derivatives of long sums by many variables ----------------------- */

/* expr_diff of a sum scans all its terms for each variable, so the
 * derivatives of a k-term sum by its v variables cost k·v, cubic for the
 * N-trailer's velocities (sums of N terms in N variables).  Priming does
 * one pass instead: each term's derivatives by the variables it reads,
 * gathered by variable (in term order, the order diff_rule would use, so
 * the memoised results are the very nodes it would build) — the sum of
 * the terms' own variable counts.  Sums are primed children first, so
 * that the derivatives of an outer sum find the inner ones ready. */

/* Sums with fewer terms are left to diff_rule's scan. */
enum { PRIME_MIN_TERMS = 8 };

typedef struct prime_pair {
    uint32_t var, seq;
    const expr_t *d;
} prime_pair_t;

static int prime_pair_cmp(const void *a, const void *b)
{
    const prime_pair_t *x = a, *y = b;
    if (x->var != y->var)
        return x->var < y->var ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Whether V is wanted: DVAR[v] set, or MASK[v]. */
static bool prime_wanted(const expr_t *const *dvar, const bool *mask,
                         uint32_t v)
{
    return dvar ? dvar[v] != NULL : mask[v];
}

/* The candidate variables of E (its set's bits, every variable sharing a
 * bit beyond DEP_EXACT) that are wanted, appended to *OUT. */
static size_t prime_candidates(const expr_graph_t *g, const expr_t *e,
                               const expr_t *const *dvar, const bool *mask,
                               uint32_t *out)
{
    size_t k = 0;
    const expr_dep_t *dep = &g->dep[e->id];
    for (uint32_t base = 0; base < g->nvars; base += DEP_EXACT)
        for (uint32_t w = 0; w < EXPR_DEP_WORDS; w++)
            for (uint64_t bits = dep->w[w]; bits; bits &= bits - 1) {
                uint32_t v = base + 64 * w + (uint32_t)__builtin_ctzll(bits);
                if (v < g->nvars && prime_wanted(dvar, mask, v))
                    out[k++] = v;
            }
    return k;
}

static void prime_sum(expr_graph_t *g, const expr_t *e,
                      const expr_t *const *dvar, const bool *mask,
                      uint32_t *cand)
{
    size_t np = 0, cap = 4 * (size_t)e->nargs;
    prime_pair_t *pr = expr_xmalloc(cap * sizeof *pr);
    for (uint32_t i = 0; i < e->nargs; i++) {
        size_t nc = prime_candidates(g, e->args[i], dvar, mask, cand);
        for (size_t c = 0; c < nc; c++) {
            const expr_t *d = expr_diff(g, e->args[i], cand[c]);
            if (d == g->zero)
                continue;
            if (np == cap) {
                cap *= 2;
                pr = expr_xrealloc(pr, cap * sizeof *pr);
            }
            pr[np++] = (prime_pair_t){cand[c], i, d};
        }
    }
    qsort(pr, np, sizeof *pr, prime_pair_cmp);
    const expr_t **t = expr_xmalloc((e->nargs ? e->nargs : 1) * sizeof *t);
    /* past the budget some terms' derivatives are missing (answered 0):
     * no sum is memoised then */
    for (size_t k = g->budget_over ? np : 0; k < np;) {
        size_t m = 0, j = k;
        for (; j < np && pr[j].var == pr[k].var; j++)
            t[m++] = pr[j].d;
        uint64_t key = (uint64_t)e->id << 32 | pr[k].var;
        if (!expr_memo_get(g, key))
            expr_memo_put(g, key, expr_sum(g, t, m));
        k = j;
    }
    free(t);
    free(pr);
}

/* Whether node ID is marked primed (g->primed). */
static bool prime_done(const expr_graph_t *g, uint32_t id)
{
    return id < g->primed_cap && g->primed[id];
}

/* Marks node ID primed. */
static void prime_mark(expr_graph_t *g, uint32_t id)
{
    if (id >= g->primed_cap) {
        size_t cap = g->primed_cap ? g->primed_cap : 1024;
        while (cap <= id)
            cap *= 2;
        g->primed = expr_xrealloc(g->primed, cap);
        memset(g->primed + g->primed_cap, 0, cap - g->primed_cap);
        g->primed_cap = cap;
    }
    g->primed[id] = 1;
}

/* Makes the marks of g->primed those of the wanted variables: kept when
 * they are the last priming's, else cleared. */
static void prime_marks_for(expr_graph_t *g, const expr_t *const *dvar,
                            const bool *mask)
{
    bool same = g->prime_want && g->prime_nvars == g->nvars;
    for (uint32_t v = 0; v < g->nvars && same; v++)
        same = prime_wanted(dvar, mask, v) == g->prime_want[v];
    if (same)
        return;
    g->prime_want = expr_xrealloc(g->prime_want,
                                  (g->nvars ? g->nvars : 1) * sizeof *g->prime_want);
    for (uint32_t v = 0; v < g->nvars; v++)
        g->prime_want[v] = prime_wanted(dvar, mask, v);
    g->prime_nvars = g->nvars;
    if (g->primed_cap)
        memset(g->primed, 0, g->primed_cap);
}

/* Primes every long sum below E for the wanted variables (DVAR[v] set,
 * or MASK[v]: exactly one of them given).  What an earlier priming for
 * the same variables primed is not walked again (g->primed), so that
 * priming expression after expression of a chain costs its size once. */
static void prime_sums(expr_graph_t *g, const expr_t *e,
                       const expr_t *const *dvar, const bool *mask)
{
    expr_dep_t want = {{0}};
    for (uint32_t v = 0; v < g->nvars; v++)
        if (prime_wanted(dvar, mask, v))
            expr_dep_add(&want, v);
    if (!expr_dep_meets(&g->dep[e->id], &want) || e->op == EXPR_VAR)
        return;
    prime_marks_for(g, dvar, mask);
    if (prime_done(g, e->id))
        return;
    /* post order by an explicit stack: (node, next child) */
    subst_memo_t seen = {NULL, 0, 0};
    size_t cap = 64, top = 0;
    struct frame {
        const expr_t *e;
        uint32_t next;
    } *st = expr_xmalloc(cap * sizeof *st);
    uint32_t *cand = expr_xmalloc((g->nvars ? g->nvars : 1) * sizeof *cand);
    st[top++] = (struct frame){e, 0};
    subst_memo_put(&seen, e->id, e);
    while (top) {
        struct frame *f = &st[top - 1];
        if (f->next < f->e->nargs) {
            const expr_t *a = f->e->args[f->next++];
            if (a->nargs == 0 || subst_memo_get(&seen, a->id) ||
                prime_done(g, a->id) ||
                !expr_dep_meets(&g->dep[a->id], &want))
                continue;
            subst_memo_put(&seen, a->id, a);
            if (top == cap) {
                cap *= 2;
                st = expr_xrealloc(st, cap * sizeof *st);
            }
            st[top++] = (struct frame){a, 0};
            continue;
        }
        const expr_t *x = f->e;
        top--;
        if (x->op == EXPR_ADD && x->nargs >= PRIME_MIN_TERMS)
            prime_sum(g, x, dvar, mask, cand);
        prime_mark(g, x->id);
    }
    free(cand);
    free(st);
    free(seen.tab);
}

void expr_diff_prime(expr_graph_t *g, const expr_t *e, const bool *mask)
{
    prime_sums(g, e, NULL, mask);
}

/* ---- total time derivative --------------------------------------------- */

/* The index of the lowest set bit of X (X != 0). */
static uint32_t lowest_bit(uint64_t x)
{
#if defined(__GNUC__)
    return (uint32_t)__builtin_ctzll(x);
#else
    uint32_t k = 0;
    while (!(x & 1)) {
        x >>= 1;
        k++;
    }
    return k;
#endif
}

const expr_t *expr_dt(expr_graph_t *g, const expr_t *e,
                      const expr_t *const *dvar)
{
    if (e->op == EXPR_GUARD) /* (v where d)' = v' where d */
        return expr_guard_same(g, expr_dt(g, e->args[0], dvar), e);
    uint32_t nv = g->nvars;
    prime_sums(g, e, dvar, NULL);
    const expr_t **terms = expr_xmalloc((size_t)(nv ? nv : 1) *
                                        sizeof *terms);
    size_t k = 0;
    /* only the variables whose bit is set: v = 64*(w + EXPR_DEP_WORDS*j) + b,
     * in increasing order of v */
    const expr_dep_t dep = g->dep[e->id]; /* a copy: g->dep may move */
    for (uint32_t base = 0; base < nv; base += 64 * EXPR_DEP_WORDS)
        for (uint32_t w = 0; w < EXPR_DEP_WORDS; w++)
            for (uint64_t bits = dep.w[w]; bits; bits &= bits - 1) {
                uint32_t v = base + 64 * w + lowest_bit(bits);
                if (v >= nv || !dvar[v])
                    continue;
                const expr_t *d = expr_diff(g, e, v);
                if (d != g->zero)
                    terms[k++] = expr_mul(g, d, dvar[v]);
            }
    const expr_t *r = expr_sum(g, terms, k);
    free(terms);
    return r;
}

/* ---- substitution ------------------------------------------------------ */

typedef struct subst_ctx {
    expr_graph_t *g;
    const expr_t *const *repl;
    expr_dep_t bits;
    subst_memo_t memo;
} subst_ctx_t;

/* E substituted when that is known without a rule (a node without the
 * variables, a variable, the memo's), else NULL. */
static const expr_t *subst_known(subst_ctx_t *c, const expr_t *e)
{
    expr_graph_t *g = c->g;
    if (!expr_dep_meets(&g->dep[e->id], &c->bits))
        return e;
    if (e->op == EXPR_VAR)
        return e->var < g->nvars && c->repl[e->var] ? c->repl[e->var] : e;
    return subst_memo_get(&c->memo, e->id);
}

static const expr_t *subst_node(subst_ctx_t *c, const expr_t *e);

/* E with its arguments substituted (through subst_node), memoised. */
static const expr_t *subst_rule(subst_ctx_t *c, const expr_t *e)
{
    expr_graph_t *g = c->g;
    const expr_t *r;
    const expr_t *local[8];
    const expr_t **a = e->nargs <= 8 ? local
                                     : expr_xmalloc(e->nargs * sizeof *a);
    bool changed = false;
    for (uint32_t i = 0; i < e->nargs; i++) {
        a[i] = subst_node(c, e->args[i]);
        changed |= a[i] != e->args[i];
    }
    r = e;
    if (changed) {
        switch (e->op) {
        case EXPR_ADD:
            r = expr_sum(g, a, e->nargs);
            break;
        case EXPR_MUL:
            r = expr_product(g, a, e->nargs);
            break;
        case EXPR_GUARD:
            r = a[0];
            for (uint32_t i = 1; i < e->nargs; i++)
                r = expr_guard(g, r, a[i]);
            break;
        default:
            r = expr_call(g, e->op, a[0], e->nargs > 1 ? a[1] : NULL);
            break;
        }
    }
    if (a != local)
        free(a);
    subst_memo_put(&c->memo, e->id, r);
    return r;
}

/* subst_rule without recursion by the depth of the graph: the arguments
 * first, in post order by an explicit stack (as expr_diff). */
static const expr_t *subst_node(subst_ctx_t *c, const expr_t *e)
{
    const expr_t *r = subst_known(c, e);
    if (r)
        return r;
    size_t cap = 64, top = 0;
    struct subst_frame {
        const expr_t *e;
        uint32_t next;
    } *st = expr_xmalloc(cap * sizeof *st);
    st[top++] = (struct subst_frame){e, 0};
    while (top) {
        struct subst_frame *f = &st[top - 1];
        if (f->next < f->e->nargs) {
            const expr_t *a = f->e->args[f->next++];
            if (subst_known(c, a))
                continue;
            if (top == cap) {
                cap *= 2;
                st = expr_xrealloc(st, cap * sizeof *st);
            }
            st[top++] = (struct subst_frame){a, 0};
            continue;
        }
        const expr_t *x = f->e;
        top--;
        if (!subst_known(c, x))
            subst_rule(c, x);
    }
    free(st);
    return subst_known(c, e);
}

const expr_t *expr_subst(expr_graph_t *g, const expr_t *e,
                         const expr_t *const *repl)
{
    expr_dep_t bits = {{0}};
    for (uint32_t v = 0; v < g->nvars; v++)
        if (repl[v])
            expr_dep_add(&bits, v);
    if (!expr_dep_meets(&g->dep[e->id], &bits))
        return e;
    subst_ctx_t c = {g, repl, bits, {NULL, 0, 0}};
    const expr_t *r = subst_node(&c, e);
    free(c.memo.tab);
    return r;
}

/* ---- polynomial degree ------------------------------------------------- */

/* Degrees above this are reported as "not a polynomial" (-1) rather than
 * overflowing. */
enum { DEGREE_MAX = 1 << 20 };

typedef struct degree_ctx {
    const expr_graph_t *g;
    const bool *mask;
    expr_dep_t bits;
    int *memo; /* by id: degree + 2, 0 = not yet known */
} degree_ctx_t;

/* E's degree + 2 when it is known without a rule, else 0. */
static int degree_known(const degree_ctx_t *c, const expr_t *e)
{
    if (!expr_dep_meets(&c->g->dep[e->id], &c->bits))
        return 2;
    if (e->op == EXPR_VAR)
        return e->var < c->g->nvars && c->mask[e->var] ? 3 : 2;
    return c->memo[e->id];
}

static int degree_node(degree_ctx_t *c, const expr_t *e);

/* E's degree from its arguments' (through degree_node), memoised. */
static int degree_rule(degree_ctx_t *c, const expr_t *e)
{
    int d = 0;
    switch (e->op) {
    case EXPR_ADD:
    case EXPR_MUL:
        for (uint32_t i = 0; i < e->nargs && d >= 0; i++) {
            int di = degree_node(c, e->args[i]);
            if (di < 0)
                d = -1;
            else if (e->op == EXPR_ADD)
                d = di > d ? di : d;
            else
                d += di;
        }
        if (d > DEGREE_MAX)
            d = -1;
        break;
    case EXPR_POW: {
        int da = degree_node(c, e->args[0]);
        int db = degree_node(c, e->args[1]);
        const expr_t *b = e->args[1];
        if (da < 0 || db != 0)
            d = -1;
        else if (da == 0)
            d = 0;
        else if (b->op == EXPR_CONST && b->value > 0 &&
                 b->value <= DEGREE_MAX && expr_is_int(b->value) &&
                 (long long)da * (long long)b->value <= DEGREE_MAX)
            d = da * (int)b->value;
        else
            d = -1;
        break;
    }
    case EXPR_GUARD: /* v's degree, where its domain is not in the mask */
        d = degree_node(c, e->args[0]);
        for (uint32_t i = 1; i < e->nargs && d >= 0; i++)
            if (degree_node(c, e->args[i]) != 0)
                d = -1;
        break;
    default:
        for (uint32_t i = 0; i < e->nargs && d == 0; i++)
            if (degree_node(c, e->args[i]) != 0)
                d = -1;
        break;
    }
    c->memo[e->id] = d + 2;
    return d;
}

/* degree_rule without recursion by the depth of the graph: every
 * argument's degree first (the rule may stop early and need fewer), in
 * post order by an explicit stack. */
static int degree_node(degree_ctx_t *c, const expr_t *e)
{
    int k = degree_known(c, e);
    if (k)
        return k - 2;
    size_t cap = 64, top = 0;
    struct degree_frame {
        const expr_t *e;
        uint32_t next;
    } *st = expr_xmalloc(cap * sizeof *st);
    st[top++] = (struct degree_frame){e, 0};
    while (top) {
        struct degree_frame *f = &st[top - 1];
        if (f->next < f->e->nargs) {
            const expr_t *a = f->e->args[f->next++];
            if (degree_known(c, a))
                continue;
            if (top == cap) {
                cap *= 2;
                st = expr_xrealloc(st, cap * sizeof *st);
            }
            st[top++] = (struct degree_frame){a, 0};
            continue;
        }
        const expr_t *x = f->e;
        top--;
        if (!degree_known(c, x))
            degree_rule(c, x);
    }
    free(st);
    return c->memo[e->id] - 2;
}

int expr_degree(const expr_graph_t *g, const expr_t *e, const bool *mask)
{
    degree_ctx_t c = {g, mask, mask_set(g, mask), NULL};
    if (!expr_dep_meets(&g->dep[e->id], &c.bits))
        return 0;
    c.memo = expr_xcalloc(g->count, sizeof *c.memo);
    int d = degree_node(&c, e);
    free(c.memo);
    return d;
}
