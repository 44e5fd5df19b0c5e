/*
 * expr.c — the expression graph: node arena, hash-consing, simplifying
 * construction, and the reference (tree) evaluator.
 *
 * Canonical forms.  Two expressions that the rules below make equal meet at
 * one node, whatever order they were built in:
 *   - ADD and MUL are n-ary and flat: no ADD below an ADD, no MUL below a
 *     MUL.  Their children are sorted by order() below, a structural total
 *     order that does not depend on ids or on the order of building (so
 *     two sessions print the same expression the same way).
 *   - A sum holds at most one constant (never 0; it sorts first) and no two
 *     terms c1*m, c2*m with the same monomial m: they gather into
 *     (c1+c2)*m, and a term whose coefficient sums to 0 disappears.
 *   - A product holds at most one constant coefficient (never 0 or 1; it
 *     sorts first) and no two factors with the same base: x^a*x^b becomes
 *     x^(a+b) (so x*x = x^2, x/x = 1, x^2*x^-1 = x).
 *   - A product is never expanded, not even c*(a+b): distributing there
 *     would make (2*(a+b))*x and 2*((a+b)*x) different nodes.  A sum, on
 *     the other hand, expands a term that is exactly c*(a+b) into c*a + c*b
 *     (so a - (a+b) = -b and u - u = 0 for a sum u); a sum is always in
 *     that expanded form, which is why x + 0 is x for every x except
 *     x = c*(a+b), where it is c*a + c*b.
 *   - a-b is a + (-1)*b, a/b is a*b^-1, -a is (-1)*a.
 *   - a^0 = 1, a^1 = a, 1^b = 1; for an integer constant n:
 *     (x^a)^n = x^(a*n), (x*y)^n = x^n*y^n, sqrt(x)^(2k) = x^k.  An
 *     exponent is kept in sum form, so x^u*x^u and (x^u)^2 agree.
 *   - x*0 = 0, with the sign of the product of the constants.
 *   - f(-u) = -f(u) for the odd functions and f(-u) = f(u) for the even
 *     ones (cos, cosh, abs), where -u is a product with a negative
 *     coefficient or a sum that reads with a minus first (below);
 *     min(a,a) = max(a,a) = a.
 *   - The sign of a sum: a sum whose first non-constant term has a
 *     negative coefficient is never a factor of a product nor the base
 *     of an integer power: x*(-a - b) is -x*(a + b) and (-a - b)^3 is
 *     -(a + b)^3, so that x*(a + b) + x*(-a - b) cancels.  (A sum on its
 *     own keeps its terms: -a - b is still -a - b.)
 *   - sin(u)^2*k + cos(u)^2*k = k in a sum, for the same coefficient and
 *     the same other factors k (not for a bare constant k: see
 *     pythagoras()), so m*R^2*sin(phi)^2 + m*R^2*cos(phi)^2 = m*R^2.
 * None changes a finite value into another, and none changes where an
 * expression is defined: a rule that drops a part that may be undefined
 * (the x^-1 of x/x = 1, the u of sin(u)^2 + cos(u)^2) guards its result
 * with the part's domain ("domains and guards" below).
 * No rule needs a domain assumption: sqrt(x^2) stays as it is.
 *
 * Constant folding.  Constants are exact fractions where they can be
 * (rational.c, LANGUAGE.md §7.1): constants in a sum or product, and
 * integer powers of a constant, fold exactly, so (0.1+0.2)+0.3 and
 * 0.1+(0.2+0.3) are both 3/5; past the bounds of a fraction they fold
 * with IEEE arithmetic in canonical (sorted) order, as before.  A power
 * or function of constants otherwise folds only when the result is
 * finite (0^-1, log(0), sqrt(-1) stay as nodes and evaluate to inf or
 * NaN at run time, and 0/0 = 0*0^-1 is 0 guarded by 0^-1), through
 * expr_apply.  A constant is hashed by its fraction (2/5 and 0.4 are one
 * node), or by its bits when it is none: 0 and -0 are different nodes,
 * and so are NaNs with different payloads.
 *
 * Evaluation semantics (expr_apply, shared with the tape): ADD and MUL
 * fold their operands left to right in canonical order; POW computes a*a
 * for the exponent 2, a*a*a for 3, 1/a for -1, 1/(a*a) for -2 and pow()
 * otherwise (0.5 is pow(), not sqrt(): they differ at -0 and -inf);
 * sign(x) is 1, -1, or x itself for ±0 and NaN; min and max return a NaN
 * operand if there is one, and the first operand on a tie (min(-0, 0) is
 * -0); where IEEE maps a non-finite operand to a finite result (1/inf,
 * exp(-inf), atan(inf), tanh, sign, min, max, atan2, pow(1, NaN),
 * pow(NaN, 0)) the result is NaN (expr_impl.h), so that no undefined
 * value is hidden; a guard is its value where its atoms are finite, NaN
 * elsewhere.
 *
 * Must not: print, or know what a variable means.
 */
#include "interp/expr/expr.h"

#include <math.h>
#include <string.h>

#include "interp/base/util.h"
#include "interp/expr/expr_impl.h"

/* ---- op table ---------------------------------------------------------- */

static const struct {
    const char *name;
    int arity;
} op_info[EXPR_OP_COUNT] = {
#define EXPR_INFO(NAME, name, arity) {name, arity},
    EXPR_OPS(EXPR_INFO)
#undef EXPR_INFO
};

const char *expr_op_name(expr_op_t op)
{
    return (unsigned)op < EXPR_OP_COUNT ? op_info[op].name : "?";
}

int expr_op_arity(expr_op_t op)
{
    return (unsigned)op < EXPR_OP_COUNT ? op_info[op].arity : 0;
}

int expr_op_lookup(const char *name)
{
    /* the functions are the ops from SIN on */
    for (int op = EXPR_SIN; op < EXPR_OP_COUNT; op++)
        if (strcmp(op_info[op].name, name) == 0)
            return op;
    return -1;
}

/* ---- memory ------------------------------------------------------------ */

void *expr_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

void *expr_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

void *expr_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        nh_out_of_memory();
    return p;
}

struct expr_arena_block {
    expr_arena_block_t *next;
    size_t cap, used;
    max_align_t data[];
};

enum { ARENA_BLOCK = 64 * 1024 };

/* N bytes from the arena, aligned for any object. */
static void *arena_alloc(expr_graph_t *g, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) *
        sizeof(max_align_t);
    expr_arena_block_t *b = g->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = expr_xmalloc(sizeof *b + cap);
        b->cap = cap;
        b->used = 0;
        b->next = g->arena;
        g->arena = b;
    }
    void *p = (unsigned char *)b->data + b->used;
    b->used += n;
    return p;
}

/* ---- hash-consing ------------------------------------------------------ */

static uint64_t double_bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint32_t node_hash(expr_op_t op, const expr_t *const *args, uint32_t n,
                          uint64_t bits, uint32_t var)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL * ((uint64_t)op + 1);
    h = mix64(h ^ bits) + var;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ args[i]->id) * 0x100000001b3ULL + (h >> 29);
    return (uint32_t)mix64(h ^ n);
}

static bool node_same(const expr_t *e, expr_op_t op,
                      const expr_t *const *args, uint32_t n, uint64_t bits,
                      uint32_t var, const expr_q_t *q)
{
    if (e->op != op || e->nargs != n || e->var != var)
        return false;
    /* a constant is its fraction (one double may round two of them), or
     * its bits when it is none */
    if (op == EXPR_CONST &&
        (double_bits(e->value) != bits || e->den != q->den ||
         e->num != q->num))
        return false;
    for (uint32_t i = 0; i < n; i++)
        if (e->args[i] != args[i])
            return false;
    return true;
}

static void table_grow(expr_graph_t *g)
{
    size_t cap = g->table_cap ? g->table_cap * 2 : 1024;
    const expr_t **t = expr_xcalloc(cap, sizeof *t);
    for (size_t i = 0; i < g->count; i++) {
        const expr_t *e = g->nodes[i];
        size_t j = e->hash & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = e;
    }
    free(g->table);
    g->table = t;
    g->table_cap = cap;
}

static void ranks_reserve(expr_graph_t *g, size_t cap);
static void ranks_free(struct expr_ranks *rk);

/* Whether the node (op, args, value) may be undefined for some finite
 * values of its variables by its own op (EXPR_F_OWN): a power other than
 * a nonnegative integer one of a base that is not a positive constant
 * (x^-1 at 0, x^0.5 below 0), log, sqrt, asin, acos, a constant that is
 * not finite (1e999, an overflow folded), a guard.  The other ops are
 * defined for every finite operand; that they may overflow (exp(1000),
 * x*y) is not a domain: a dropped x*y needs no guard, and an overflow
 * that is computed is caught where the value is checked. */
static bool own_partial(expr_op_t op, const expr_t *const *args,
                        double value)
{
    switch (op) {
    case EXPR_CONST:
        return !isfinite(value);
    case EXPR_POW: {
        const expr_t *a = args[0], *b = args[1];
        if (b->op == EXPR_CONST && b->value >= 0 && expr_is_int(b->value))
            return false;
        return !(a->op == EXPR_CONST && a->value > 0 && isfinite(a->value));
    }
    case EXPR_LOG:
    case EXPR_SQRT:
    case EXPR_ASIN:
    case EXPR_ACOS:
    case EXPR_GUARD:
        return true;
    default:
        return false;
    }
}

/* The node (op, args, constant Q, var), created if new.  ARGS must
 * already be in canonical form; they are copied.  Q is read for CONST
 * only (NULL otherwise). */
static const expr_t *intern(expr_graph_t *g, expr_op_t op,
                            const expr_t *const *args, uint32_t n,
                            const expr_q_t *q, uint32_t var)
{
    static const expr_q_t none = {0, 0, 0.0};
    if (op != EXPR_CONST)
        q = &none;
    double value = q->value;
    uint64_t bits = op == EXPR_CONST ? double_bits(value) : 0;
    uint32_t h = node_hash(op, args, n, bits, var);
    size_t mask = g->table_cap - 1;
    size_t j = h & mask;
    for (const expr_t *e; (e = g->table[j]) != NULL; j = (j + 1) & mask)
        if (e->hash == h && node_same(e, op, args, n, bits, var, q))
            return e;

    expr_t *e = arena_alloc(g, sizeof *e + n * sizeof *args);
    const expr_t **copy = (const expr_t **)(e + 1);
    expr_dep_t dep = {{0}};
    uint8_t flags = own_partial(op, args, value)
                        ? EXPR_F_PARTIAL | EXPR_F_OWN
                        : 0;
    uint8_t rank = op == EXPR_VAR && var < g->nvars ? g->var_rank[var] : 0;
    uint32_t height = 0;
    for (uint32_t i = 0; i < n; i++) {
        copy[i] = args[i];
        if (args[i]->height > height)
            height = args[i]->height;
        const expr_dep_t *d = &g->dep[args[i]->id];
        for (int w = 0; w < EXPR_DEP_WORDS; w++)
            dep.w[w] |= d->w[w];
        flags |= g->flags[args[i]->id] & EXPR_F_PARTIAL;
        if (g->node_rank[args[i]->id] > rank)
            rank = g->node_rank[args[i]->id];
    }
    if (op == EXPR_VAR)
        expr_dep_add(&dep, var);
    e->op = op;
    e->id = (uint32_t)g->count;
    e->hash = h;
    e->nargs = n;
    e->value = op == EXPR_CONST ? value : 0.0;
    e->num = q->num;
    e->den = q->den;
    e->var = var;
    e->height = height < UINT32_MAX ? height + 1 : height;
    e->args = copy;

    if (g->count == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 1024;
        g->nodes = expr_xrealloc(g->nodes, g->cap * sizeof *g->nodes);
        g->dep = expr_xrealloc(g->dep, g->cap * sizeof *g->dep);
        g->flags = expr_xrealloc(g->flags, g->cap * sizeof *g->flags);
        g->node_rank = expr_xrealloc(g->node_rank,
                                     g->cap * sizeof *g->node_rank);
        if (g->ranks)
            ranks_reserve(g, g->cap);
    }
    g->nodes[g->count] = e;
    g->edges += n;
    g->dep[g->count] = dep;
    g->flags[g->count] = flags;
    g->node_rank[g->count] = rank;
    g->count++;
    g->table[j] = e;
    if (g->count * 2 > g->table_cap)
        table_grow(g);
    return e;
}

/* ---- graph ------------------------------------------------------------- */

expr_graph_t *expr_graph_new(void)
{
    expr_graph_t *g = expr_xcalloc(1, sizeof *g);
    table_grow(g);
    g->zero = expr_num(g, 0.0);
    g->one = expr_num(g, 1.0);
    g->minus_one = expr_num(g, -1.0);
    return g;
}

void expr_graph_free(expr_graph_t *g)
{
    if (!g)
        return;
    for (expr_arena_block_t *b = g->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    for (uint32_t i = 0; i < g->nvars; i++)
        free(g->names[i]);
    free(g->names);
    free(g->var_key);
    free(g->var_rank);
    if (g->var_latex)
        for (uint32_t i = 0; i < g->nvars; i++)
            free(g->var_latex[i]);
    free(g->var_latex);
    free(g->nodes);
    free(g->dep);
    free(g->flags);
    free(g->node_rank);
    free(g->table);
    free(g->memo);
    free(g->prime_want);
    free(g->primed);
    ranks_free(g->ranks);
    free(g);
}

size_t expr_graph_count(const expr_graph_t *g)
{
    return g->count;
}

size_t expr_graph_edges(const expr_graph_t *g)
{
    return g->edges;
}

void expr_graph_set_budget(expr_graph_t *g, size_t max_nodes,
                           size_t max_edges, const nh_stop_t *stop)
{
    g->budget_on = max_nodes || max_edges || stop;
    g->budget_over = false;
    g->budget_nodes0 = g->count;
    g->budget_edges0 = g->edges;
    g->budget_nodes = max_nodes ? max_nodes : SIZE_MAX;
    g->budget_edges = max_edges ? max_edges : SIZE_MAX;
    g->budget_stop = stop;
    g->budget_tick = 0;
}

bool expr_graph_over_budget(const expr_graph_t *g)
{
    return g->budget_over;
}

bool expr_budget_spent(expr_graph_t *g)
{
    if (!g->budget_on)
        return false;
    if (!g->budget_over &&
        (g->count - g->budget_nodes0 > g->budget_nodes ||
         g->edges - g->budget_edges0 > g->budget_edges ||
         (++g->budget_tick % 64 == 0 && nh_stop_due(g->budget_stop))))
        g->budget_over = true;
    return g->budget_over;
}

uint32_t expr_var_declare(expr_graph_t *g, const char *name)
{
    if (g->nvars == g->names_cap) {
        g->names_cap = g->names_cap ? g->names_cap * 2 : 16;
        g->names = expr_xrealloc(g->names, g->names_cap * sizeof *g->names);
        g->var_key =
            expr_xrealloc(g->var_key, g->names_cap * sizeof *g->var_key);
        g->var_rank = expr_xrealloc(g->var_rank,
                                    g->names_cap * sizeof *g->var_rank);
        if (g->var_latex)
            g->var_latex = expr_xrealloc(g->var_latex,
                                         g->names_cap * sizeof *g->var_latex);
    }
    g->var_key[g->nvars] = g->nvars;
    if (g->var_latex)
        g->var_latex[g->nvars] = NULL;
    g->var_rank[g->nvars] = 0;
    size_t len = strlen(name);
    char *copy = expr_xmalloc(len + 1);
    memcpy(copy, name, len + 1);
    g->names[g->nvars] = copy;
    return g->nvars++;
}

void expr_var_set_order(expr_graph_t *g, uint32_t var, uint64_t key)
{
    if (var < g->nvars)
        g->var_key[var] = key;
}

uint32_t expr_graph_nvars(const expr_graph_t *g)
{
    return g->nvars;
}

const char *expr_var_name(const expr_graph_t *g, uint32_t var)
{
    return var < g->nvars ? g->names[var] : "?";
}

void expr_var_set_rank(expr_graph_t *g, uint32_t var, unsigned rank)
{
    if (var >= g->nvars)
        return;
    g->var_rank[var] = (uint8_t)(rank > 255 ? 255 : rank);
    /* the variable's own node, if built already (nodes above it keep the
     * rank they were built with) */
    const expr_t *v = expr_var(g, var); /* (may grow node_rank) */
    g->node_rank[v->id] = g->var_rank[var];
}

unsigned expr_rank(const expr_graph_t *g, const expr_t *e)
{
    return g->node_rank[e->id];
}

void expr_var_set_latex(expr_graph_t *g, uint32_t var, const char *latex)
{
    if (var >= g->nvars)
        return;
    if (!g->var_latex)
        g->var_latex = expr_xcalloc(g->names_cap, sizeof *g->var_latex);
    free(g->var_latex[var]);
    size_t n = strlen(latex);
    g->var_latex[var] = expr_xmalloc(n + 1);
    memcpy(g->var_latex[var], latex, n + 1);
}

const char *expr_var_latex(const expr_graph_t *g, uint32_t var)
{
    return g->var_latex && var < g->nvars ? g->var_latex[var] : NULL;
}

unsigned expr_var_rank(const expr_graph_t *g, uint32_t var)
{
    return var < g->nvars ? g->var_rank[var] : 0;
}

/* ---- the canonical order ----------------------------------------------- */

/*
 * order(a, b) sorts nodes by a key that depends on structure only:
 * a node is read as coefficient * (f1 * f2 * ... * fk), each factor as
 * base^exponent (exponent 1 when the factor is not a power); nodes compare
 * by their factor lists, factor by factor (base first, then exponent; a
 * shorter list first), then by coefficient.  Bases compare by op rank
 * (constant, variable by index, functions, sum, product, power), then by
 * their children.  So constants come first, x < x^2 < y, x*y after x, and
 * products read in declaration order of their variables.
 *
 * The key is injective on canonical nodes, so two distinct nodes never
 * compare equal, and a comparison descends along one path only: children
 * that are the same node are skipped in O(1).  That path can still be as
 * long as the expressions are deep (sin(sin(...sin(x)...)) against
 * sin(sin(...sin(y)...))), and the same deep comparisons come back as a
 * chain is built.  A comparison can also be long without being deep:
 * two sums that share a long run of terms (a chain's velocities V_k and
 * V_(k+1), which differ by one term) are read term by term up to where
 * they differ, and sorting the N products m_k V_k does that O(N log N)
 * times.  So a comparison that goes deeper than ORDER_DEPTH, or reads
 * more than ORDER_STEPS children and factors, stops, and its two nodes
 * get ranks instead: their places in the order of all the ranked nodes
 * (an order-maintenance list, with a treap to find a new node's place),
 * after which they compare in O(1).  A node is
 * ranked once, after the nodes its comparison reads (which then compare
 * by rank), so ranking costs O(log n) shallow comparisons per node.  The
 * ranks are the same order as the structural comparison, only faster: the
 * order of a sum's terms does not depend on what was ranked when.
 */

enum { ORDER_DEPTH = 24, ORDER_STEPS = 16 };

/* The order-maintenance list: labels increase along the list, which is
 * the order of the ranked nodes; a treap over the same nodes (priority:
 * the node's hash) finds where a new node goes.  All arrays by node id,
 * allocated on the first ranking and grown with the graph. */
struct expr_ranks {
    uint64_t *label;          /* 0: not ranked */
    uint32_t *prev, *next;    /* the list */
    uint32_t *left, *right;   /* the treap */
    uint32_t root, head;
    size_t cap;
};

#define RANK_NONE UINT32_MAX
/* Labels live in [1, 2^62): 0 means "not ranked". */
#define RANK_SPACE_BITS 62

typedef struct order_ctx {
    expr_graph_t *g;
    unsigned depth;
    bool deep;      /* went deeper than ORDER_DEPTH, or longer than limit */
    unsigned steps; /* children and factors stepped over so far */
    unsigned limit; /* 0: no limit (ranks_insert) */
} order_ctx_t;

/* One more child or factor read; past the limit the comparison gives up
 * as a deep one does. */
static bool order_step(order_ctx_t *c)
{
    if (c->limit && ++c->steps > c->limit) {
        c->deep = true;
        return true;
    }
    return false;
}

static int order_num(double a, double b)
{
    if (a < b)
        return -1;
    if (a > b)
        return 1;
    uint64_t ua = double_bits(a), ub = double_bits(b);
    return ua < ub ? -1 : ua > ub;
}

/* Two constants by value; two fractions that round to one double (1/3
 * and 0.3333333333333333) by their terms. */
static int order_const(const expr_t *a, const expr_t *b)
{
    int r = order_num(a->value, b->value);
    if (r || a == b)
        return r;
    if (a->den != b->den)
        return a->den < b->den ? -1 : 1;
    return a->num < b->num ? -1 : a->num > b->num;
}

/* Coefficients, NULL standing for 1. */
static int order_coef(const expr_t *a, const expr_t *b)
{
    if (a == b)
        return 0;
    if (!a || !b)
        return order_num(a ? a->value : 1.0, b ? b->value : 1.0);
    return order_const(a, b);
}

static int op_rank(expr_op_t op)
{
    switch (op) {
    case EXPR_CONST:
        return 0;
    case EXPR_VAR:
        return 1;
    case EXPR_ADD:
        return EXPR_OP_COUNT + 1;
    case EXPR_MUL:
        return EXPR_OP_COUNT + 2;
    case EXPR_POW:
        return EXPR_OP_COUNT + 3;
    default:
        return 2 + (int)op;
    }
}

static uint64_t rank_of(const expr_graph_t *g, const expr_t *e)
{
    return g->ranks && e->id < g->ranks->cap ? g->ranks->label[e->id] : 0;
}

static int order(order_ctx_t *c, const expr_t *a, const expr_t *b);

static int order_atom(order_ctx_t *c, const expr_t *a, const expr_t *b)
{
    if (a == b)
        return 0;
    int ra = op_rank(a->op), rb = op_rank(b->op);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (a->op == EXPR_CONST)
        return order_const(a, b);
    if (a->op == EXPR_VAR) {
        uint64_t ka = c->g->var_key[a->var], kb = c->g->var_key[b->var];
        if (ka != kb)
            return ka < kb ? -1 : 1;
        return a->var < b->var ? -1 : a->var > b->var;
    }
    /* a base that is neither a product nor a power is ordered as order()
     * orders it, so by its rank when both have one */
    if (a->op != EXPR_MUL && a->op != EXPR_POW && b->op != EXPR_MUL &&
        b->op != EXPR_POW) {
        uint64_t ra = rank_of(c->g, a), rb = rank_of(c->g, b);
        if (ra && rb)
            return ra < rb ? -1 : 1;
    }
    uint32_t n = a->nargs < b->nargs ? a->nargs : b->nargs;
    for (uint32_t i = 0; i < n; i++) {
        if (order_step(c))
            return 0;
        int r = order(c, a->args[i], b->args[i]);
        if (r || c->deep)
            return r;
    }
    if (a->nargs != b->nargs)
        return a->nargs < b->nargs ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id; /* unreachable */
}

/* Order of exponents, NULL standing for the constant 1. */
static int order_exp(order_ctx_t *c, const expr_t *a, const expr_t *b)
{
    if (a == b)
        return 0;
    if (!a)
        return b->op == EXPR_CONST ? order_num(1.0, b->value) : -1;
    if (!b)
        return a->op == EXPR_CONST ? order_num(a->value, 1.0) : 1;
    return order(c, a, b);
}

static void split_factor(const expr_t *f, const expr_t **base,
                         const expr_t **exp)
{
    if (f->op == EXPR_POW) {
        *base = f->args[0];
        *exp = f->args[1];
    } else {
        *base = f;
        *exp = NULL;
    }
}

static int order_seq(order_ctx_t *c, const expr_t *const *a, size_t na,
                     const expr_t *const *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        if (order_step(c))
            return 0;
        if (a[i] == b[i])
            continue;
        const expr_t *ba, *ea, *bb, *eb;
        split_factor(a[i], &ba, &ea);
        split_factor(b[i], &bb, &eb);
        int r = order_atom(c, ba, bb);
        if (!r && !c->deep)
            r = order_exp(c, ea, eb);
        if (r || c->deep)
            return r;
    }
    return na < nb ? -1 : na > nb;
}

/* E as coefficient * factors; *COEF is the constant node, NULL for 1.
 * *E stays addressable: a lone factor is read through it. */
static void split_term(const expr_t *const *e, const expr_t *const **fac,
                       size_t *n, const expr_t **coef)
{
    const expr_t *t = *e;
    if (t->op == EXPR_CONST) {
        *fac = NULL;
        *n = 0;
        *coef = t;
    } else if (t->op == EXPR_MUL && t->args[0]->op == EXPR_CONST) {
        *fac = t->args + 1;
        *n = t->nargs - 1;
        *coef = t->args[0];
    } else if (t->op == EXPR_MUL) {
        *fac = t->args;
        *n = t->nargs;
        *coef = NULL;
    } else {
        *fac = e;
        *n = 1;
        *coef = NULL;
    }
}

/* The structural comparison, below the top: by rank when both nodes have
 * one, else by structure, giving up (c->deep) past ORDER_DEPTH. */
static int order(order_ctx_t *c, const expr_t *a, const expr_t *b)
{
    if (a == b)
        return 0;
    uint64_t ra = rank_of(c->g, a), rb = rank_of(c->g, b);
    if (ra && rb)
        return ra < rb ? -1 : 1;
    if (++c->depth > ORDER_DEPTH) {
        c->deep = true;
        return 0;
    }
    const expr_t *const *fa, *const *fb;
    size_t na, nb;
    const expr_t *ca, *cb;
    split_term(&a, &fa, &na, &ca);
    split_term(&b, &fb, &nb, &cb);
    int r = order_seq(c, fa, na, fb, nb);
    if (!r && !c->deep)
        r = order_coef(ca, cb);
    c->depth--;
    return r;
}

/* ---- ranks ------------------------------------------------------------- */

static void ranks_free(struct expr_ranks *rk)
{
    if (!rk)
        return;
    free(rk->label);
    free(rk->prev);
    free(rk->next);
    free(rk->left);
    free(rk->right);
    free(rk);
}

static void ranks_reserve(expr_graph_t *g, size_t cap)
{
    struct expr_ranks *rk = g->ranks;
    if (cap <= rk->cap)
        return;
    rk->label = expr_xrealloc(rk->label, cap * sizeof *rk->label);
    rk->prev = expr_xrealloc(rk->prev, cap * sizeof *rk->prev);
    rk->next = expr_xrealloc(rk->next, cap * sizeof *rk->next);
    rk->left = expr_xrealloc(rk->left, cap * sizeof *rk->left);
    rk->right = expr_xrealloc(rk->right, cap * sizeof *rk->right);
    memset(rk->label + rk->cap, 0, (cap - rk->cap) * sizeof *rk->label);
    rk->cap = cap;
}

/* Respaces the labels of the list run FIRST..LAST (COUNT nodes) evenly
 * over [lo, lo + span). */
static void ranks_spread(struct expr_ranks *rk, uint32_t first, size_t count,
                         uint64_t lo, uint64_t span)
{
    uint64_t gap = span / (count + 1);
    uint32_t v = first;
    for (size_t k = 1; k <= count; k++, v = rk->next[v])
        rk->label[v] = lo + gap * k;
}

/* Gives V, already linked into the list, a label between its neighbours,
 * relabelling a neighbourhood when there is no room (Bender, Cole,
 * Demaine, Farach-Colton, Zito, "Two simplified algorithms for
 * maintaining order in a list", 2002: the smallest enclosing aligned
 * range of labels whose density is below T^-i, T = 1.25, is respaced;
 * O(log n) amortised). */
static void ranks_label(struct expr_ranks *rk, uint32_t v)
{
    uint32_t p = rk->prev[v], n = rk->next[v];
    uint64_t lp = p == RANK_NONE ? 0 : rk->label[p];
    uint64_t ln = n == RANK_NONE ? (uint64_t)1 << RANK_SPACE_BITS
                                 : rk->label[n];
    if (ln - lp >= 2) {
        rk->label[v] = lp + (ln - lp) / 2;
        return;
    }
    /* the anchor: a labelled neighbour */
    uint32_t x = p != RANK_NONE ? p : n;
    uint64_t lx = rk->label[x];
    uint32_t first = v, last = v;
    size_t count = 1;
    double limit = 1.0; /* 2^i / T^i */
    for (unsigned i = 1; i <= RANK_SPACE_BITS; i++) {
        limit *= 2.0 / 1.25;
        uint64_t size = (uint64_t)1 << i;
        uint64_t lo = lx & ~(size - 1), hi = lo + size - 1;
        if (lo == 0)
            lo = 1;
        while (rk->prev[first] != RANK_NONE &&
               rk->label[rk->prev[first]] >= lo &&
               rk->label[rk->prev[first]] <= hi) {
            first = rk->prev[first];
            count++;
        }
        while (rk->next[last] != RANK_NONE &&
               rk->label[rk->next[last]] >= lo &&
               rk->label[rk->next[last]] <= hi) {
            last = rk->next[last];
            count++;
        }
        if ((double)count < limit && count + 1 < hi - lo + 1) {
            ranks_spread(rk, first, count, lo - 1, hi - lo + 2);
            return;
        }
    }
    /* the whole space */
    first = v;
    while (rk->prev[first] != RANK_NONE)
        first = rk->prev[first];
    count = 0;
    for (uint32_t w = first; w != RANK_NONE; w = rk->next[w])
        count++;
    ranks_spread(rk, first, count, 0, (uint64_t)1 << RANK_SPACE_BITS);
}

/* Inserts V (whose comparison reads only ranked nodes) into the treap
 * and the list. */
static void ranks_insert(expr_graph_t *g, const expr_t *v)
{
    struct expr_ranks *rk = g->ranks;
    order_ctx_t c = {g, 0, false, 0, 0}; /* no limit: deps ranked */
    uint32_t id = v->id;
    rk->left[id] = rk->right[id] = RANK_NONE;
    /* descend, remembering the path for the rotations */
    uint32_t pathl[128];
    uint32_t *path = pathl;
    size_t depth = 0, cap = 128;
    uint32_t pred = RANK_NONE, succ = RANK_NONE;
    for (uint32_t t = rk->root; t != RANK_NONE;) {
        if (depth == cap) {
            cap *= 2;
            uint32_t *np = expr_xmalloc(cap * sizeof *np);
            memcpy(np, path, depth * sizeof *np);
            if (path != pathl)
                free(path);
            path = np;
        }
        path[depth++] = t;
        c.depth = 0;
        int r = order(&c, v, g->nodes[t]);
        if (r < 0) {
            succ = t;
            t = rk->left[t];
        } else {
            pred = t;
            t = rk->right[t];
        }
    }
    /* link as a leaf, then rotate up while the priority is higher */
    if (depth == 0) {
        rk->root = id;
    } else {
        uint32_t parent = path[depth - 1];
        if (succ == parent)
            rk->left[parent] = id;
        else
            rk->right[parent] = id;
    }
    while (depth > 0) {
        uint32_t parent = path[depth - 1];
        if (g->nodes[parent]->hash >= v->hash)
            break;
        if (rk->left[parent] == id) {
            rk->left[parent] = rk->right[id];
            rk->right[id] = parent;
        } else {
            rk->right[parent] = rk->left[id];
            rk->left[id] = parent;
        }
        depth--;
        if (depth == 0)
            rk->root = id;
        else if (rk->left[path[depth - 1]] == parent)
            rk->left[path[depth - 1]] = id;
        else
            rk->right[path[depth - 1]] = id;
    }
    if (path != pathl)
        free(path);
    /* the list: between pred and succ */
    rk->prev[id] = pred;
    rk->next[id] = succ;
    if (pred != RANK_NONE)
        rk->next[pred] = id;
    else
        rk->head = id;
    if (succ != RANK_NONE)
        rk->prev[succ] = id;
    ranks_label(rk, id);
}

/* Pushes onto the stack the unranked nodes that comparing E reads: the
 * exponents of its factors and the children of their bases. */
static size_t rank_deps(const expr_graph_t *g, const expr_t *e,
                        const expr_t **out)
{
    const expr_t *const *f;
    size_t n, k = 0;
    const expr_t *coef;
    split_term(&e, &f, &n, &coef);
    for (size_t i = 0; i < n; i++) {
        const expr_t *base, *exp;
        split_factor(f[i], &base, &exp);
        if (exp && !rank_of(g, exp))
            out[k++] = exp;
        for (uint32_t j = 0; j < base->nargs; j++)
            if (!rank_of(g, base->args[j]))
                out[k++] = base->args[j];
    }
    return k;
}

static size_t rank_deps_count(const expr_t *e)
{
    const expr_t *const *f;
    size_t n, k = 0;
    const expr_t *coef;
    split_term(&e, &f, &n, &coef);
    for (size_t i = 0; i < n; i++) {
        const expr_t *base, *exp;
        split_factor(f[i], &base, &exp);
        k += (exp != NULL) + base->nargs;
    }
    return k;
}

/* Ranks E and, first, everything its comparison reads (an explicit
 * stack: no recursion, however deep E is). */
static void rank_node(expr_graph_t *g, const expr_t *e)
{
    if (rank_of(g, e))
        return;
    if (!g->ranks) {
        g->ranks = expr_xcalloc(1, sizeof *g->ranks);
        g->ranks->root = g->ranks->head = RANK_NONE;
    }
    ranks_reserve(g, g->cap);
    size_t cap = 64, top = 0;
    const expr_t **st = expr_xmalloc(cap * sizeof *st);
    st[top++] = e;
    while (top) {
        const expr_t *v = st[top - 1];
        if (rank_of(g, v)) {
            top--;
            continue;
        }
        size_t need = rank_deps_count(v);
        if (top + need > cap) {
            while (top + need > cap)
                cap *= 2;
            st = expr_xrealloc(st, cap * sizeof *st);
        }
        size_t k = rank_deps(g, v, st + top);
        if (k > 0) {
            top += k;
            continue;
        }
        ranks_insert(g, v);
        top--;
    }
    free(st);
}

/* The order of A and B at the top of a comparison: by rank, by structure,
 * or — when the structure is deep — by ranks given now. */
static int order_top(expr_graph_t *g, const expr_t *a, const expr_t *b)
{
    if (a == b)
        return 0;
    order_ctx_t c = {g, 0, false, 0, ORDER_STEPS};
    int r = order(&c, a, b);
    if (!c.deep)
        return r;
    rank_node(g, a);
    rank_node(g, b);
    return rank_of(g, a) < rank_of(g, b) ? -1 : 1;
}

/* ---- construction ------------------------------------------------------ */

const expr_t *expr_q_node(expr_graph_t *g, expr_q_t q)
{
    return intern(g, EXPR_CONST, NULL, 0, &q, 0);
}

const expr_t *expr_num(expr_graph_t *g, double v)
{
    return expr_q_node(g, expr_q_double(v));
}

const expr_t *expr_ratio(expr_graph_t *g, int64_t num, int64_t den)
{
    expr_q_t a = expr_q_double((double)num), b;
    if (!expr_q_pow(expr_q_double((double)den), -1, &b))
        b = expr_q_double(1.0 / (double)den);
    return expr_q_node(g, expr_q_mul(a, b));
}

bool expr_rational(const expr_t *e, int64_t *num, int64_t *den)
{
    if (e->op != EXPR_CONST || e->den == 0)
        return false;
    *num = e->num;
    *den = e->den;
    return true;
}

const expr_t *expr_var(expr_graph_t *g, uint32_t var)
{
    return intern(g, EXPR_VAR, NULL, 0, NULL, var);
}

/* Numeric comparison: expr_is_const(e, 0) holds for the constant -0 too. */
bool expr_is_const(const expr_t *e, double v)
{
    return e->op == EXPR_CONST && e->value == v;
}

/* A sum term read as coef * monomial (monomial = factor list). */
typedef struct term_item {
    const expr_t *const *fac;
    size_t n;
    const expr_t *coef; /* NULL for 1 */
    const expr_t *node;
} term_item_t;

/* The order of two terms is order() of their nodes; the split made while
 * collecting them saves redoing it. */
static int term_cmp(expr_graph_t *g, const void *pa, const void *pb)
{
    const term_item_t *a = pa, *b = pb;
    if (a->node == b->node)
        return 0;
    uint64_t ra = rank_of(g, a->node), rb = rank_of(g, b->node);
    if (ra && rb)
        return ra < rb ? -1 : 1;
    order_ctx_t c = {g, 0, false, 0, ORDER_STEPS};
    int r = order_seq(&c, a->fac, a->n, b->fac, b->n);
    if (!r && !c.deep)
        r = order_coef(a->coef, b->coef);
    return c.deep ? order_top(g, a->node, b->node) : r;
}

/* A product factor read as base^exp (exp NULL for 1). */
typedef struct factor_item {
    const expr_t *base, *exp, *node;
} factor_item_t;

/* For a factor (never a product or a constant) this is order() too. */
static int factor_cmp(expr_graph_t *g, const void *pa, const void *pb)
{
    const factor_item_t *a = pa, *b = pb;
    if (a->node == b->node)
        return 0;
    uint64_t ra = rank_of(g, a->node), rb = rank_of(g, b->node);
    if (ra && rb)
        return ra < rb ? -1 : 1;
    order_ctx_t c = {g, 0, false, 0, ORDER_STEPS};
    int r = order_atom(&c, a->base, b->base);
    if (!r && !c.deep)
        r = order_exp(&c, a->exp, b->exp);
    return c.deep ? order_top(g, a->node, b->node) : r;
}

static int num_cmp(expr_graph_t *g, const void *pa, const void *pb)
{
    (void)g;
    return order_const(*(const expr_t *const *)pa,
                       *(const expr_t *const *)pb);
}

typedef int (*item_cmp_fn)(expr_graph_t *g, const void *a, const void *b);

/* Merges the sorted runs A = BASE[lo, mid) and B = BASE[mid, hi) through
 * BUF, stably (A first among equals).  When one run is much shorter, each
 * of its elements finds its place in the other by binary search, so a
 * node joining a long sorted list costs O(log n) comparisons. */
static void merge_runs(expr_graph_t *g, unsigned char *a, unsigned char *buf,
                       size_t lo, size_t mid, size_t hi, size_t size,
                       item_cmp_fn cmp)
{
#define AT(p, i) ((p) + (i) * size)
    size_t na = mid - lo, nb = hi - mid, o = lo;
    size_t i = lo, j = mid;
    size_t shorter = na < nb ? na : nb, longer = na + nb - shorter;
    unsigned lg = 0;
    while (((size_t)1 << lg) < longer)
        lg++;
    if (shorter * (lg + 1) < na + nb) {
        if (na <= nb) {
            for (; i < mid; i++) {
                /* the B elements before A[i]: those < A[i] */
                size_t l = j, h = hi;
                while (l < h) {
                    size_t m = l + (h - l) / 2;
                    if (cmp(g, AT(a, m), AT(a, i)) < 0)
                        l = m + 1;
                    else
                        h = m;
                }
                memcpy(AT(buf, o), AT(a, j), (l - j) * size);
                o += l - j;
                j = l;
                memcpy(AT(buf, o++), AT(a, i), size);
            }
        } else {
            for (; j < hi; j++) {
                /* the A elements before B[j]: those <= B[j] */
                size_t l = i, h = mid;
                while (l < h) {
                    size_t m = l + (h - l) / 2;
                    if (cmp(g, AT(a, j), AT(a, m)) < 0)
                        h = m;
                    else
                        l = m + 1;
                }
                memcpy(AT(buf, o), AT(a, i), (l - i) * size);
                o += l - i;
                i = l;
                memcpy(AT(buf, o++), AT(a, j), size);
            }
        }
    } else {
        while (i < mid && j < hi) {
            if (cmp(g, AT(a, j), AT(a, i)) < 0)
                memcpy(AT(buf, o++), AT(a, j++), size);
            else
                memcpy(AT(buf, o++), AT(a, i++), size);
        }
    }
    memcpy(AT(buf, o), AT(a, i), (mid - i) * size);
    o += mid - i;
    memcpy(AT(buf, o), AT(a, j), (hi - j) * size);
    memcpy(AT(a, lo), AT(buf, lo), (hi - lo) * size);
#undef AT
}

/* Sorts N elements of SIZE (<= 64) bytes that come as NRUNS runs already
 * sorted, starting at RUNS[0] = 0, RUNS[1], ... (the operands of a sum or
 * product being flattened are sorted already): insertion sort when
 * short (the usual case on the construction hot path), else a merge of
 * the runs, pairwise.  RUNS is clobbered.  Stable. */
static void sort_small(expr_graph_t *g, void *base, size_t n, size_t size,
                       item_cmp_fn cmp, size_t *runs, size_t nruns)
{
    unsigned char *a = base, tmp[64];
    if (n <= 12) {
        for (size_t i = 1; i < n; i++) {
            memcpy(tmp, a + i * size, size);
            size_t j = i;
            while (j > 0 && cmp(g, a + (j - 1) * size, tmp) > 0) {
                memcpy(a + j * size, a + (j - 1) * size, size);
                j--;
            }
            memcpy(a + j * size, tmp, size);
        }
        return;
    }
    unsigned char *buf = expr_xmalloc(n * size);
    while (nruns > 1) {
        size_t k = 0;
        for (size_t r = 0; r < nruns; r += 2) {
            size_t lo = runs[r];
            size_t mid = r + 1 < nruns ? runs[r + 1] : n;
            size_t hi = r + 2 < nruns ? runs[r + 2] : n;
            /* runs in order already (one comparison) need no merge */
            if (mid < hi && cmp(g, a + (mid - 1) * size, a + mid * size) > 0)
                merge_runs(g, a, buf, lo, mid, hi, size, cmp);
            runs[k++] = lo;
        }
        nruns = k;
    }
    free(buf);
}

enum { LOCAL_ITEMS = 16 };

/* ---- domains and guards ------------------------------------------------ */

/*
 * A rule that drops a part of an expression (x/x = 1 drops x^-1, 0*e = 0
 * drops e, x^0 = 1 drops x, x - x = 0, sqrt(x)^2 = x drops sqrt(x),
 * (x^(1/3))^3 = x, sin(u)^2 + cos(u)^2 = 1 drops u) records the dropped
 * part's domain in a dom_t, and the constructor guards its result with
 * it (guard_make).  The domain of a part is the set of its outermost
 * nodes that are partial by their own op (EXPR_F_OWN): since evaluation
 * lets no non-finite value be hidden (expr_apply), the part is defined
 * exactly where those nodes evaluate to finite numbers.  A part that is
 * total (EXPR_F_PARTIAL unset: a variable, a polynomial, sin(x)) adds
 * nothing, so the common case builds no guard.
 */

typedef struct dom {
    const expr_t **a;
    size_t n, cap;
    const expr_t *local[8];
} dom_t;

static void dom_init(dom_t *d)
{
    d->a = d->local;
    d->n = 0;
    d->cap = sizeof d->local / sizeof *d->local;
}

static void dom_free(dom_t *d)
{
    if (d->a != d->local)
        free(d->a);
}

static void dom_push(dom_t *d, const expr_t *e)
{
    if (d->n == d->cap) {
        d->cap *= 2;
        if (d->a == d->local) {
            d->a = expr_xmalloc(d->cap * sizeof *d->a);
            memcpy(d->a, d->local, d->n * sizeof *d->a);
        } else {
            d->a = expr_xrealloc(d->a, d->cap * sizeof *d->a);
        }
    }
    d->a[d->n++] = e;
}

static bool partial(const expr_graph_t *g, const expr_t *e)
{
    return g->flags[e->id] & EXPR_F_PARTIAL;
}

static bool own_partial_node(const expr_graph_t *g, const expr_t *e)
{
    return g->flags[e->id] & EXPR_F_OWN;
}

/* How many nodes dom_drop and guard_make read below one part before they
 * settle for the part itself (a domain that is larger, but as exact). */
enum { DOM_VISIT = 64 };

/* Records the domain of P (a guard's atoms, then its value's outermost
 * partial nodes). */
static void dom_domain(const expr_graph_t *g, dom_t *d, const expr_t *p)
{
    if (p->op == EXPR_GUARD) {
        for (uint32_t i = 1; i < p->nargs; i++)
            dom_push(d, p->args[i]);
        p = p->args[0];
    }
    if (!partial(g, p))
        return;
    const expr_t *st[DOM_VISIT];
    size_t top = 0, visits = 0, n0 = d->n;
    st[top++] = p;
    while (top) {
        const expr_t *x = st[--top];
        if (own_partial_node(g, x)) {
            dom_push(d, x);
            continue;
        }
        for (uint32_t i = 0; i < x->nargs; i++) {
            if (!partial(g, x->args[i]))
                continue;
            if (++visits > DOM_VISIT || top == DOM_VISIT) {
                d->n = n0; /* too big to take apart: P itself */
                dom_push(d, p);
                return;
            }
            st[top++] = x->args[i];
        }
    }
}

static int id_cmp(const void *pa, const void *pb)
{
    const expr_t *a = *(const expr_t *const *)pa;
    const expr_t *b = *(const expr_t *const *)pb;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Records the domain of P, a part a rule drops, unless the graph keeps
 * no domains (expr_graph_keep_domains). */
static void dom_drop(const expr_graph_t *g, dom_t *d, const expr_t *p)
{
    if (!g->no_domains)
        dom_domain(g, d, p);
}

/* x^c defined implies x^a defined, for a finite real x and constants a,
 * c: x^a needs x != 0 when a < 0, and x >= 0 when a is not an integer. */
static bool power_covers(double c, double a)
{
    return isfinite(a) && isfinite(c) && (a >= 0 || c < 0) &&
           (expr_is_int(a) || !expr_is_int(c));
}

/* Whether Y, evaluated, shows the failure of the partial node X: Y is X,
 * or a power of X's base whose domain holds X's (x^-2 for x^-1). */
static bool dom_covers(const expr_t *y, const expr_t *x)
{
    if (y == x)
        return true;
    return x->op == EXPR_POW && y->op == EXPR_POW &&
           x->args[0] == y->args[0] && x->args[1]->op == EXPR_CONST &&
           y->args[1]->op == EXPR_CONST &&
           power_covers(y->args[1]->value, x->args[1]->value);
}

/* Whether V evaluates something that shows the failure of the partial
 * node X (dom_covers), so that a guard on X adds nothing to V: a bounded
 * search among V's partial nodes, false when not found in DOM_VISIT of
 * them. */
static bool dom_inside(const expr_graph_t *g, const expr_t *x,
                       const expr_t *v)
{
    const expr_t *st[DOM_VISIT];
    size_t top = 0, visits = 0;
    st[top++] = v;
    while (top) {
        const expr_t *y = st[--top];
        if (dom_covers(y, x))
            return true;
        for (uint32_t i = 0; i < y->nargs; i++) {
            if (!partial(g, y->args[i]))
                continue;
            if (++visits > DOM_VISIT || top == DOM_VISIT)
                return false;
            st[top++] = y->args[i];
        }
    }
    return false;
}

/* The exponent of the power with the same domain as x^C that guards
 * use: -1 for every negative integer (x != 0), 0.5 for a positive
 * fraction (x >= 0), -0.5 for a negative one (x > 0); C itself for the
 * others. */
static double atom_exponent(double c)
{
    if (!isfinite(c) || (c >= 0 && expr_is_int(c)))
        return c;
    if (expr_is_int(c))
        return -1;
    return c > 0 ? 0.5 : -0.5;
}

/* Rewrites the powers among D's atoms to atom_exponent's: x^-2 and x^-1
 * keep the same domain, so x/x^2*x and x*x/x^2 get the same guard. */
static void dom_canonical(expr_graph_t *g, dom_t *d)
{
    size_t n = d->n, k = 0;
    for (size_t i = 0; i < n; i++) {
        const expr_t *a = d->a[i];
        double c = a->op == EXPR_POW && a->args[1]->op == EXPR_CONST
                       ? a->args[1]->value
                       : 0;
        if (atom_exponent(c) == c) {
            d->a[k++] = a;
            continue;
        }
        /* x^k, which may come out as a product ((x*y)^-1 = x^-1*y^-1);
         * its atoms go to the end, and are canonical */
        dom_domain(g, d,
                   expr_pow(g, a->args[0], expr_num(g, atom_exponent(c))));
    }
    /* close the gap between the kept atoms and the new ones */
    memmove(d->a + k, d->a + n, (d->n - n) * sizeof *d->a);
    d->n = k + (d->n - n);
}

/* V (guarded or not) guarded by the domain D as well: GUARD(v, atoms)
 * with the atoms in canonical form (dom_canonical), sorted by id, each
 * once, and none that V already evaluates (whose failure V would show
 * anyway).  D is left empty. */
static const expr_t *guard_build(expr_graph_t *g, const expr_t *v, dom_t *d);

static inline const expr_t *guard_make(expr_graph_t *g, const expr_t *v,
                                       dom_t *d)
{
    /* nothing dropped, nothing lifted (the usual case): V as it is, a
     * guard already canonical or none */
    return d->n == 0 ? v : guard_build(g, v, d);
}

static const expr_t *guard_build(expr_graph_t *g, const expr_t *v, dom_t *d)
{
    if (v->op == EXPR_GUARD) {
        for (uint32_t i = 1; i < v->nargs; i++)
            dom_push(d, v->args[i]);
        v = v->args[0];
    }
    if (d->n == 0)
        return v;
    dom_canonical(g, d);
    qsort(d->a, d->n, sizeof *d->a, id_cmp);
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        if ((k == 0 || d->a[i] != d->a[k - 1]) && !dom_inside(g, d->a[i], v))
            d->a[k++] = d->a[i];
    d->n = 0;
    if (k == 0)
        return v;
    const expr_t *al[LOCAL_ITEMS + 1];
    const expr_t **args = k < LOCAL_ITEMS ? al
                                          : expr_xmalloc((k + 1) * sizeof *args);
    args[0] = v;
    memcpy(args + 1, d->a, k * sizeof *args);
    const expr_t *r = intern(g, EXPR_GUARD, args, (uint32_t)(k + 1), NULL, 0);
    if (args != al)
        free(args);
    return r;
}

/* Whether any of A[0..n) is a guard. */
static bool any_guard(const expr_t *const *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i]->op == EXPR_GUARD)
            return true;
    return false;
}

/* VALS[i] = the value of A[i], its guard's atoms into D. */
static void split_guards(const expr_t *const *a, size_t n,
                         const expr_t **vals, dom_t *d)
{
    for (size_t i = 0; i < n; i++) {
        vals[i] = a[i];
        if (a[i]->op == EXPR_GUARD) {
            for (uint32_t j = 1; j < a[i]->nargs; j++)
                dom_push(d, a[i]->args[j]);
            vals[i] = a[i]->args[0];
        }
    }
}

const expr_t *expr_guard(expr_graph_t *g, const expr_t *value,
                         const expr_t *cond)
{
    dom_t d;
    dom_init(&d);
    dom_domain(g, &d, cond);
    const expr_t *r = guard_make(g, value, &d);
    dom_free(&d);
    return r;
}

const expr_t *expr_guard_same(expr_graph_t *g, const expr_t *v,
                              const expr_t *guard)
{
    dom_t d;
    dom_init(&d);
    for (uint32_t i = 1; guard->op == EXPR_GUARD && i < guard->nargs; i++)
        dom_push(&d, guard->args[i]);
    const expr_t *r = guard_make(g, v, &d);
    dom_free(&d);
    return r;
}

bool expr_holds_domain(const expr_graph_t *g, const expr_t *v,
                       const expr_t *x)
{
    return dom_inside(g, x, expr_unguarded(v));
}

const expr_t *expr_unguarded(const expr_t *e)
{
    return e->op == EXPR_GUARD ? e->args[0] : e;
}

bool expr_partial(const expr_graph_t *g, const expr_t *e)
{
    return partial(g, e);
}

void expr_graph_set_display(expr_graph_t *g)
{
    g->display = true;
}

bool expr_graph_is_display(const expr_graph_t *g)
{
    return g->display;
}

bool expr_graph_keep_domains(expr_graph_t *g, bool keep)
{
    bool was = !g->no_domains;
    g->no_domains = !keep;
    return was;
}

/* Whether T is c*(a+b+...): a sum expands it into c*a + c*b + ... */
static bool scaled_sum(const expr_t *t)
{
    return t->op == EXPR_MUL && t->nargs == 2 &&
           t->args[0]->op == EXPR_CONST && t->args[1]->op == EXPR_ADD;
}

/* Whether the sum S reads with a minus first: its first term that is
 * not a constant has a negative coefficient.  Of S and -S exactly one
 * does (negating keeps the order of the terms, which sort by monomial
 * first), so "not negative" is the canonical sign of a sum wherever a
 * sign can move out of it: a factor of a product, the base of an integer
 * power, the argument of an odd or even function. */
static bool sum_negative(const expr_t *s)
{
    if (s->op != EXPR_ADD)
        return false;
    const expr_t *t = s->args[0]->op == EXPR_CONST ? s->args[1] : s->args[0];
    return t->op == EXPR_MUL && t->args[0]->op == EXPR_CONST &&
           t->args[0]->value < 0;
}

/* ---- the memo --------------------------------------------------------- */

const expr_t *expr_memo_get(const expr_graph_t *g, uint64_t key)
{
    if (!g->memo_cap)
        return NULL;
    size_t mask = g->memo_cap - 1;
    for (size_t j = expr_memo_slot(key, mask); g->memo[j].val; j = (j + 1) & mask)
        if (g->memo[j].key == key)
            return g->memo[j].val;
    return NULL;
}

static void memo_insert(expr_memo_entry_t *tab, size_t cap, uint64_t key,
                        const expr_t *val)
{
    size_t mask = cap - 1;
    size_t j = expr_memo_slot(key, mask);
    while (tab[j].val && tab[j].key != key)
        j = (j + 1) & mask;
    tab[j].key = key;
    tab[j].val = val;
}

void expr_memo_put(expr_graph_t *g, uint64_t key, const expr_t *val)
{
    if ((g->memo_count + 1) * 2 > g->memo_cap) {
        size_t cap = g->memo_cap ? g->memo_cap * 2 : 1024;
        expr_memo_entry_t *t = expr_xcalloc(cap, sizeof *t);
        for (size_t i = 0; i < g->memo_cap; i++)
            if (g->memo[i].val)
                memo_insert(t, cap, g->memo[i].key, g->memo[i].val);
        free(g->memo);
        g->memo = t;
        g->memo_cap = cap;
    }
    memo_insert(g->memo, g->memo_cap, key, val);
    g->memo_count++;
}


/* -S for a sum S, as a sum (term by term). */
static const expr_t *sum_negate(expr_graph_t *g, const expr_t *s)
{
    /* Memoised: a big sum is negated again each time it joins a product
     * (the maggi equations' Ψᵀ(−h − Mβ) on the N-trailer). */
    uint64_t key = (uint64_t)s->id << 32 | EXPR_MEMO_NEG;
    const expr_t *memo = expr_memo_get(g, key);
    if (memo)
        return memo;
    const expr_t *tl[LOCAL_ITEMS] = {NULL};
    const expr_t **t = s->nargs <= LOCAL_ITEMS
                           ? tl
                           : expr_xmalloc(s->nargs * sizeof *t);
    for (uint32_t i = 0; i < s->nargs; i++)
        t[i] = expr_neg(g, s->args[i]);
    const expr_t *r = expr_sum(g, t, s->nargs);
    if (t != tl)
        free(t);
    expr_memo_put(g, key, r);
    return r;
}

/* Whether F is sin(u)^2 (OP = EXPR_SIN) or cos(u)^2 (EXPR_COS). */
static bool trig_square(const expr_t *f, expr_op_t op)
{
    return f->op == EXPR_POW && f->args[0]->op == op &&
           expr_is_const(f->args[1], 2.0);
}

/* Whether the factor lists A (without A[skip_a]) and B (without B[skip_b])
 * are the same. */
static bool same_factors_but(const expr_t *const *a, size_t skip_a,
                             const expr_t *const *b, size_t skip_b, size_t n)
{
    for (size_t i = 0, j = 0; i < n; i++, j++) {
        i += i == skip_a;
        j += j == skip_b;
        if (i < n && a[i] != b[j])
            return false;
    }
    return true;
}

/* sin(u)^2*k + cos(u)^2*k = k, for the same coefficient and the same
 * other factors k (the Pythagorean identity, valid for every finite u).
 * k must hold a factor besides the coefficient: a bare c*sin(u)^2 +
 * c*cos(u)^2 is left as it is, because tests/test_check.c uses
 * sin(t)^2 + cos(t)^2 - 1 as its example of an expression that vanishes
 * only numerically (drop the condition when that test moves to another
 * example).  Rewrites the terms OUT[0..*K) in place, the pair becoming k; returns
 * whether anything changed (the caller builds the sum again, as the new
 * term may gather with others).  The domain of each u dropped goes to D
 * (the identity holds where u is defined).  Terms are canonical, so their factor
 * lists are sorted and two lists match when equal element by element. */
static bool pythagoras(expr_graph_t *g, const expr_t **out, size_t *k,
                       dom_t *d)
{
    bool any_sin = false, any_cos = false;
    for (size_t i = 0; i < *k; i++) {
        const expr_t *const *f;
        size_t n;
        const expr_t *c;
        split_term(&out[i], &f, &n, &c);
        for (size_t p = 0; p < n; p++) {
            any_sin |= trig_square(f[p], EXPR_SIN);
            any_cos |= trig_square(f[p], EXPR_COS);
        }
    }
    if (!any_sin || !any_cos)
        return false;
    bool changed = false;
    for (size_t i = 0; i < *k; i++) {
        const expr_t *const *fi;
        size_t ni;
        const expr_t *ci;
        if (!out[i])
            continue; /* the partner of an earlier term */
        split_term(&out[i], &fi, &ni, &ci);
        for (size_t p = 0; p < ni && ni > 1; p++) {
            if (!trig_square(fi[p], EXPR_SIN))
                continue;
            const expr_t *u = fi[p]->args[0]->args[0];
            size_t j = 0, q = 0;
            for (; j < *k; j++) {
                const expr_t *const *fj;
                size_t nj;
                const expr_t *cj;
                if (j == i || !out[j])
                    continue;
                split_term(&out[j], &fj, &nj, &cj);
                if (nj != ni || cj != ci)
                    continue;
                for (q = 0; q < nj; q++)
                    if (trig_square(fj[q], EXPR_COS) &&
                        fj[q]->args[0]->args[0] == u)
                        break;
                if (q < nj && same_factors_but(fi, p, fj, q, ni))
                    break;
            }
            if (j == *k)
                continue;
            /* out[i] = ci * (fi without fi[p]) */
            const expr_t *fl[LOCAL_ITEMS + 1];
            const expr_t **f = ni < LOCAL_ITEMS
                                   ? fl
                                   : expr_xmalloc((ni + 1) * sizeof *f);
            size_t nf = 0;
            f[nf++] = ci ? ci : g->one;
            for (size_t r = 0; r < ni; r++)
                if (r != p)
                    f[nf++] = fi[r];
            out[i] = expr_product(g, f, nf);
            if (f != fl)
                free(f);
            out[j] = NULL;
            dom_drop(g, d, u);
            changed = true;
            break; /* out[i] changed: its factors are read no more */
        }
    }
    if (changed) {
        size_t m = 0;
        for (size_t i = 0; i < *k; i++)
            if (out[i])
                out[m++] = out[i];
        *k = m;
    }
    return changed;
}

/* The sum of TERMS, with guards (expr_sum's worker): the domains of the
 * terms that cancel go to D. */
static const expr_t *sum_core(expr_graph_t *g, const expr_t *const *terms,
                              size_t n, dom_t *d);

const expr_t *expr_sum(expr_graph_t *g, const expr_t *const *terms, size_t n)
{
    if (n == 0)
        return g->zero;
    if (n == 1 && !scaled_sum(expr_unguarded(terms[0])))
        return terms[0];
    dom_t d;
    dom_init(&d);
    const expr_t *r;
    if (any_guard(terms, n)) {
        const expr_t **v = expr_xmalloc(n * sizeof *v);
        split_guards(terms, n, v, &d);
        r = sum_core(g, v, n, &d);
        free(v);
    } else {
        r = sum_core(g, terms, n, &d);
    }
    r = guard_make(g, r, &d);
    dom_free(&d);
    return r;
}

static const expr_t *sum_core(expr_graph_t *g, const expr_t *const *terms,
                              size_t n, dom_t *d)
{
    if (n == 1 && !scaled_sum(terms[0]))
        return terms[0];

    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += terms[i]->op == EXPR_ADD ? terms[i]->nargs
                 : scaled_sum(terms[i])   ? terms[i]->args[1]->nargs
                                          : 1;
    term_item_t local[LOCAL_ITEMS];
    term_item_t *it = total <= LOCAL_ITEMS ? local
                                           : expr_xmalloc(total * sizeof *it);
    const expr_t *el[LOCAL_ITEMS];
    const expr_t **ex = total <= LOCAL_ITEMS
                            ? el
                            : expr_xmalloc(total * sizeof *ex);
    size_t rl[LOCAL_ITEMS];
    size_t *runs = total <= LOCAL_ITEMS ? rl
                                        : expr_xmalloc(total * sizeof *runs);
    size_t m = 0, nruns = 0;
    for (size_t i = 0; i < n; i++) {
        const expr_t *t = terms[i];
        const expr_t *const *src = &terms[i];
        size_t k = 1;
        runs[nruns++] = m; /* the terms of a sum are in order already */
        if (t->op == EXPR_ADD) {
            src = t->args;
            k = t->nargs;
        } else if (scaled_sum(t)) {
            /* c*a + c*b + ...: in order too, unless c*a underflows to a
             * constant, so each is a run of its own */
            const expr_t *s = t->args[1];
            for (uint32_t j = 0; j < s->nargs; j++) {
                /* (a guard only if c*a underflows to 0) */
                const expr_t *cj = expr_mul(g, t->args[0], s->args[j]);
                split_guards(&cj, 1, &ex[m + j], d);
            }
            for (uint32_t j = 1; j < s->nargs; j++)
                runs[nruns++] = m + j;
            src = ex + m;
            k = s->nargs;
        }
        for (size_t j = 0; j < k; j++, m++) {
            /* fac may point at src[j] itself: src must outlive the sort,
             * so it is never the item array */
            it[m].node = src[j];
            split_term(&src[j], &it[m].fac, &it[m].n, &it[m].coef);
        }
    }
    sort_small(g, it, m, sizeof *it, term_cmp, runs, nruns);
    if (runs != rl)
        free(runs);

    /* Gather runs with the same monomial, in place. */
    const expr_t *outl[LOCAL_ITEMS];
    const expr_t **out = m <= LOCAL_ITEMS ? outl
                                          : expr_xmalloc(m * sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i + 1;
        expr_q_t cq = it[i].coef ? expr_q_of(it[i].coef)
                                 : (expr_q_t){1, 1, 1.0};
        while (j < m && it[j].n == it[i].n &&
               (it[i].n == 0 ||
                memcmp(it[j].fac, it[i].fac,
                       it[i].n * sizeof *it[i].fac) == 0)) {
            cq = expr_q_add(cq, it[j].coef ? expr_q_of(it[j].coef)
                                           : (expr_q_t){1, 1, 1.0});
            j++;
        }
        double c = cq.value;
        if (it[i].n == 0) {
            /* The constant term (it sorts first): kept unless it is zero
             * and other terms follow. */
            if (c != 0 || j == m)
                out[k++] = j == i + 1 ? it[i].node : expr_q_node(g, cq);
        } else if (c == 0) {
            /* c*m - c*m: gone, but only where m is defined */
            dom_drop(g, d, it[i].node);
        } else {
            if (j == i + 1) {
                out[k++] = it[i].node;
            } else if (c == 1 && it[i].n == 1) {
                out[k++] = it[i].fac[0];
            } else {
                const expr_t *fl[LOCAL_ITEMS + 1];
                const expr_t **f = it[i].n < LOCAL_ITEMS
                                       ? fl
                                       : expr_xmalloc((it[i].n + 1) *
                                                      sizeof *f);
                size_t nf = 0;
                if (c != 1)
                    f[nf++] = expr_q_node(g, cq);
                memcpy(f + nf, it[i].fac, it[i].n * sizeof *f);
                out[k++] = intern(g, EXPR_MUL, f, (uint32_t)(nf + it[i].n),
                                  NULL, 0);
                if (f != fl)
                    free(f);
            }
        }
        i = j;
    }
    const expr_t *r;
    if (k > 1 && pythagoras(g, out, &k, d))
        r = expr_sum(g, out, k); /* the new terms may gather further */
    else if (k == 0)
        r = g->zero;
    else if (k == 1)
        r = out[0];
    else
        r = intern(g, EXPR_ADD, out, (uint32_t)k, NULL, 0);
    if (it != local)
        free(it);
    if (ex != el)
        free(ex);
    if (out != outl)
        free(out);
    return r;
}

/* Product of FACTORS (none of them a MUL or a constant) and COEF; the
 * worker of expr_product after flattening.  The domains of the factors
 * dropped go to D. */
static const expr_t *product_core(expr_graph_t *g, expr_q_t cq,
                                  factor_item_t *it, size_t m, size_t *runs,
                                  size_t nruns, dom_t *d)
{
    double coef = cq.value;
    /* x*0 = 0, with the sign of the product of the constants (so that
     * the result does not depend on the grouping), where x is defined */
    if (m > 0 && coef == 0) {
        for (size_t i = 0; i < m; i++)
            dom_drop(g, d, it[i].node);
        return expr_q_node(g, cq);
    }
    sort_small(g, it, m, sizeof *it, factor_cmp, runs, nruns);

    /* Gather runs with the same base: x^a*x^b = x^(a+b). */
    bool again = false;
    size_t k = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i + 1;
        while (j < m && it[j].base == it[i].base)
            j++;
        if (j == i + 1) {
            it[k++] = it[i];
        } else {
            const expr_t *el[LOCAL_ITEMS];
            const expr_t **e = j - i <= LOCAL_ITEMS
                                   ? el
                                   : expr_xmalloc((j - i) * sizeof *e);
            for (size_t q = i; q < j; q++)
                e[q - i] = it[q].exp ? it[q].exp : g->one;
            const expr_t *sum = expr_sum(g, e, j - i);
            if (e != el)
                free(e);
            /* x^a dropped for x^(a+b): its domain is kept unless x^(a+b)
             * has it too (x^2*x^-1 = x needs x != 0) */
            const expr_t *c = expr_unguarded(sum);
            for (size_t q = i; q < j; q++)
                if (it[q].exp && own_partial_node(g, it[q].node) &&
                    !(c->op == EXPR_CONST &&
                      it[q].exp->op == EXPR_CONST &&
                      power_covers(c->value, it[q].exp->value)))
                    dom_drop(g, d, it[q].node);
            const expr_t *p = expr_pow(g, it[i].base, sum);
            split_guards(&p, 1, &p, d);
            if (p->op == EXPR_CONST) {
                cq = expr_q_mul(cq, expr_q_of(p));
                coef = cq.value;
            } else {
                factor_item_t f = {NULL, NULL, p};
                split_factor(p, &f.base, &f.exp);
                if (f.base != it[i].base || p->op == EXPR_MUL)
                    again = true; /* the power simplified into new bases */
                it[k++] = f;
            }
        }
        i = j;
    }
    m = k;
    if (again) {
        const expr_t *fl[LOCAL_ITEMS + 1];
        const expr_t **f = m < LOCAL_ITEMS
                               ? fl
                               : expr_xmalloc((m + 1) * sizeof *f);
        f[0] = expr_q_node(g, cq);
        for (size_t i = 0; i < m; i++)
            f[i + 1] = it[i].node;
        const expr_t *r = expr_product(g, f, m + 1);
        if (f != fl)
            free(f);
        return r; /* guarded, maybe: expr_product's caller merges */
    }
    if (m == 0 || coef == 0)
        return expr_q_node(g, cq);
    if (m == 1 && coef == 1)
        return it[0].node;
    const expr_t *fl[LOCAL_ITEMS + 1];
    const expr_t **f = m < LOCAL_ITEMS ? fl
                                       : expr_xmalloc((m + 1) * sizeof *f);
    size_t nf = 0;
    if (coef != 1)
        f[nf++] = expr_q_node(g, cq);
    for (size_t i = 0; i < m; i++)
        f[nf++] = it[i].node;
    const expr_t *r = intern(g, EXPR_MUL, f, (uint32_t)nf, NULL, 0);
    if (f != fl)
        free(f);
    return r;
}

const expr_t *expr_product(expr_graph_t *g, const expr_t *const *f, size_t n)
{
    if (n == 0)
        return g->one;
    if (n == 1)
        return f[0];
    dom_t d;
    dom_init(&d);
    size_t total = 0, nconst = 0;
    bool guarded = false;
    for (size_t i = 0; i < n; i++) {
        total += f[i]->op == EXPR_MUL ? f[i]->nargs : 1;
        nconst += f[i]->op == EXPR_CONST ||
                  (f[i]->op == EXPR_MUL && f[i]->args[0]->op == EXPR_CONST);
        guarded |= f[i]->op == EXPR_GUARD;
    }
    if (guarded) {
        const expr_t **v = expr_xmalloc(n * sizeof *v);
        split_guards(f, n, v, &d);
        const expr_t *r = guard_make(g, expr_product(g, v, n), &d);
        free(v);
        dom_free(&d);
        return r;
    }
    factor_item_t local[LOCAL_ITEMS];
    factor_item_t *it = total <= LOCAL_ITEMS
                            ? local
                            : expr_xmalloc(total * sizeof *it);
    const expr_t *cl[LOCAL_ITEMS];
    const expr_t **cs = nconst <= LOCAL_ITEMS
                            ? cl
                            : expr_xmalloc(nconst * sizeof *cs);
    size_t rl[LOCAL_ITEMS];
    size_t *runs = n <= LOCAL_ITEMS ? rl : expr_xmalloc(n * sizeof *runs);
    size_t m = 0, nc = 0, nruns = 0;
    bool neg = false;
    for (size_t i = 0; i < n; i++) {
        const expr_t *t = f[i];
        const expr_t *const *src = t->op == EXPR_MUL ? t->args : &f[i];
        size_t k = t->op == EXPR_MUL ? t->nargs : 1;
        if (t->op != EXPR_CONST)
            runs[nruns++] = m; /* a product's factors are in order */
        for (size_t j = 0; j < k; j++) {
            if (src[j]->op == EXPR_CONST) {
                cs[nc++] = src[j];
            } else if (sum_negative(src[j])) {
                /* x*(-a - b) = -x*(a + b): the sign joins the
                 * coefficient, so that x*(a + b) + x*(-a - b) cancels */
                it[m].node = sum_negate(g, src[j]);
                it[m].base = it[m].node;
                it[m].exp = NULL;
                m++;
                neg = !neg;
            } else {
                it[m].node = src[j];
                split_factor(src[j], &it[m].base, &it[m].exp);
                m++;
            }
        }
    }
    /* Fold the constants in sorted order, so the result does not depend
     * on the order they came in. */
    expr_q_t coef = {1, 1, 1.0};
    if (nc > 0) {
        size_t *cr = expr_xmalloc(nc * sizeof *cr);
        for (size_t i = 0; i < nc; i++)
            cr[i] = i;
        sort_small(g, cs, nc, sizeof *cs, num_cmp, cr, nc);
        free(cr);
        coef = expr_q_of(cs[0]);
        for (size_t i = 1; i < nc; i++)
            coef = expr_q_mul(coef, expr_q_of(cs[i]));
    }
    if (neg)
        coef = expr_q_mul(coef, (expr_q_t){-1, 1, -1.0});
    const expr_t *r = guard_make(g, product_core(g, coef, it, m, runs,
                                                 nruns, &d),
                                 &d);
    dom_free(&d);
    if (runs != rl)
        free(runs);
    if (it != local)
        free(it);
    if (cs != cl)
        free(cs);
    return r;
}

const expr_t *expr_add(expr_graph_t *g, const expr_t *a, const expr_t *b)
{
    /* (a guarded c*(a+b) is expanded as a bare one is) */
    if (a == g->zero && !scaled_sum(expr_unguarded(b)))
        return b;
    if (b == g->zero && !scaled_sum(expr_unguarded(a)))
        return a;
    const expr_t *t[2] = {a, b};
    return expr_sum(g, t, 2);
}

/* Products at least this long remember a split (expr_split). */
enum { SPLIT_MIN_FACTORS = 8 };

/* The non-constant factors of E as a product. */
static uint32_t split_factors(const expr_t *e)
{
    if (e->op == EXPR_CONST)
        return 0;
    if (e->op != EXPR_MUL)
        return 1;
    return e->nargs - (e->args[0]->op == EXPR_CONST);
}

const expr_t *expr_mul(expr_graph_t *g, const expr_t *a, const expr_t *b)
{
    if (a == g->one)
        return b;
    if (b == g->one)
        return a;
    const expr_t *f[2] = {a, b};
    const expr_t *r = expr_product(g, f, 2);
    /* A long product built from two, with no factor merged (x^3 * x^-1
     * would not qualify: its split would differentiate into 1/x where
     * x^2 has none), remembers them, once. */
    if (r->op == EXPR_MUL && r->nargs >= SPLIT_MIN_FACTORS &&
        split_factors(r) == split_factors(a) + split_factors(b) &&
        split_factors(a) > 0 && split_factors(b) > 0) {
        uint64_t key = (uint64_t)r->id << 32 | EXPR_MEMO_SPLIT_A;
        if (!expr_memo_get(g, key)) {
            expr_memo_put(g, key, a);
            expr_memo_put(g, (uint64_t)r->id << 32 | EXPR_MEMO_SPLIT_B, b);
        }
    }
    return r;
}

bool expr_split(const expr_graph_t *g, const expr_t *e, const expr_t **a,
                const expr_t **b)
{
    if (e->op != EXPR_MUL || e->nargs < SPLIT_MIN_FACTORS)
        return false;
    *a = expr_memo_get(g, (uint64_t)e->id << 32 | EXPR_MEMO_SPLIT_A);
    *b = *a ? expr_memo_get(g, (uint64_t)e->id << 32 | EXPR_MEMO_SPLIT_B)
            : NULL;
    return *a != NULL;
}

const expr_t *expr_neg(expr_graph_t *g, const expr_t *a)
{
    return expr_mul(g, g->minus_one, a);
}

const expr_t *expr_sub(expr_graph_t *g, const expr_t *a, const expr_t *b)
{
    return expr_add(g, a, expr_neg(g, b));
}

const expr_t *expr_div(expr_graph_t *g, const expr_t *a, const expr_t *b)
{
    return expr_mul(g, a, expr_pow(g, b, g->minus_one));
}

/* The constant op(x) when it is finite, else NULL. */
static const expr_t *fold(expr_graph_t *g, expr_op_t op, const double *x,
                          size_t n)
{
    double v = expr_apply(op, x, n);
    return isfinite(v) ? expr_num(g, v) : NULL;
}

/* a^b for guard-free a and b (expr_pow's worker): the domains of what
 * the rules drop go to D. */
static const expr_t *pow_core(expr_graph_t *g, const expr_t *a,
                              const expr_t *b, dom_t *d)
{
    if (scaled_sum(b)) { /* exponents are sums: x^u*x^u = x^(2*u) = (x^u)^2 */
        b = expr_sum(g, &b, 1);
        split_guards(&b, 1, &b, d);
    }
    if (b->op == EXPR_CONST) {
        double c = b->value;
        if (c == 0) { /* x^0 = 1 where x is defined */
            dom_drop(g, d, a);
            return g->one;
        }
        if (c == 1)
            return a;
        if (a->op == EXPR_CONST) {
            expr_q_t q;
            if (expr_q_pow(expr_q_of(a), c, &q))
                return expr_q_node(g, q); /* exact: (2/5)^2 = 4/25 */
            double x[2] = {a->value, c};
            const expr_t *r = fold(g, EXPR_POW, x, 2);
            if (r)
                return r;
        } else if (expr_is_int(c)) {
            if (a->op == EXPR_POW) { /* (x^e)^n = x^(e*n) */
                const expr_t *e = a->args[1];
                if (own_partial_node(g, a) &&
                    !(e->op == EXPR_CONST && power_covers(e->value * c,
                                                          e->value)))
                    dom_drop(g, d, a); /* (x^(1/3))^3 = x where x >= 0 */
                return expr_pow(g, a->args[0], expr_mul(g, e, b));
            }
            if (a->op == EXPR_MUL) { /* (x*y)^n = x^n*y^n */
                const expr_t *fl[LOCAL_ITEMS];
                const expr_t **f =
                    a->nargs <= LOCAL_ITEMS
                        ? fl
                        : expr_xmalloc(a->nargs * sizeof *f);
                for (uint32_t i = 0; i < a->nargs; i++)
                    f[i] = expr_pow(g, a->args[i], b);
                const expr_t *r = expr_product(g, f, a->nargs);
                if (f != fl)
                    free(f);
                return r;
            }
            if (a->op == EXPR_SQRT && fmod(c, 2.0) == 0) { /* sqrt(x)^2k */
                dom_drop(g, d, a); /* = x^k where x >= 0 */
                return expr_pow(g, a->args[0],
                                expr_mul(g, b, expr_ratio(g, 1, 2)));
            }
            if (sum_negative(a)) { /* (-S)^n = (-1)^n S^n */
                const expr_t *r = expr_pow(g, sum_negate(g, a), b);
                return fmod(c, 2.0) == 0 ? r : expr_neg(g, r);
            }
        }
    }
    if (a == g->one) { /* 1^y = 1 where y is defined */
        dom_drop(g, d, b);
        return g->one;
    }
    const expr_t *args[2] = {a, b};
    return intern(g, EXPR_POW, args, 2, NULL, 0);
}

const expr_t *expr_pow(expr_graph_t *g, const expr_t *a, const expr_t *b)
{
    dom_t d;
    dom_init(&d);
    const expr_t *v[2] = {a, b};
    if (a->op == EXPR_GUARD || b->op == EXPR_GUARD)
        split_guards(v, 2, v, &d);
    const expr_t *r = guard_make(g, pow_core(g, v[0], v[1], &d), &d);
    dom_free(&d);
    return r;
}

/* -U when U is a product with a negative coefficient or a sum that reads
 * with a minus first, else NULL. */
static const expr_t *negated(expr_graph_t *g, const expr_t *u)
{
    if (u->op == EXPR_MUL && u->args[0]->op == EXPR_CONST &&
        u->args[0]->value < 0)
        return expr_neg(g, u);
    if (sum_negative(u))
        return sum_negate(g, u);
    return NULL;
}

const expr_t *expr_call(expr_graph_t *g, expr_op_t op, const expr_t *a,
                        const expr_t *b)
{
    switch (op) {
    case EXPR_ADD:
        return expr_add(g, a, b);
    case EXPR_MUL:
        return expr_mul(g, a, b);
    case EXPR_POW:
        return expr_pow(g, a, b);
    case EXPR_GUARD:
        return expr_guard(g, a, b);
    case EXPR_CONST:
    case EXPR_VAR:
    case EXPR_OP_COUNT:
        abort(); /* not a function: a bug in the caller */
    default:
        break;
    }
    if (a->op == EXPR_GUARD || (expr_op_arity(op) == 2 && b->op == EXPR_GUARD)) {
        /* f(guarded u) = f(u), guarded alike */
        dom_t d;
        dom_init(&d);
        const expr_t *v[2] = {a, expr_op_arity(op) == 2 ? b : a};
        split_guards(v, 2, v, &d);
        const expr_t *r = guard_make(g, expr_call(g, op, v[0], v[1]), &d);
        dom_free(&d);
        return r;
    }
    switch (op) {
    case EXPR_ATAN2:
    case EXPR_MIN:
    case EXPR_MAX: {
        if (a->op == EXPR_CONST && b->op == EXPR_CONST) {
            double x[2] = {a->value, b->value};
            const expr_t *r = fold(g, op, x, 2);
            if (r)
                return r;
        }
        if (a == b && op != EXPR_ATAN2)
            return a;
        const expr_t *args[2] = {a, b};
        return intern(g, op, args, 2, NULL, 0);
    }
    default:
        break;
    }
    if (a->op == EXPR_CONST) {
        const expr_t *r = fold(g, op, &a->value, 1);
        if (r)
            return r;
    }
    const expr_t *na = negated(g, a);
    if (na) {
        switch (op) {
        case EXPR_SIN:
        case EXPR_TAN:
        case EXPR_ASIN:
        case EXPR_ATAN:
        case EXPR_SINH:
        case EXPR_TANH:
        case EXPR_SIGN: /* odd: f(-u) = -f(u) */
            return expr_neg(g, expr_call(g, op, na, NULL));
        case EXPR_COS:
        case EXPR_COSH:
        case EXPR_ABS: /* even: f(-u) = f(u) */
            return expr_call(g, op, na, NULL);
        default:
            break;
        }
    }
    return intern(g, op, &a, 1, NULL, 0);
}

/* ---- evaluation -------------------------------------------------------- */

static double apply_pow(double a, double b)
{
    if (b == 2)
        return a * a;
    if (b == 3)
        return a * a * a;
    if (b == -1)
        return expr_recip(a);
    if (b == -2)
        return expr_rsqr(a);
    return expr_pow_ieee(a, b);
}

static double apply_sign(double x)
{
    return expr_keep_bad(x > 0 ? 1.0 : x < 0 ? -1.0 : x, x);
}

/* min or max (R, one of A and B): a NaN operand if there is one, else R
 * unless an operand is infinite and R is not. */
static double apply_minmax(double r, double a, double b)
{
    if (isnan(a))
        return a;
    if (isnan(b))
        return b;
    return expr_keep_bad(expr_keep_bad(r, a), b);
}

double expr_apply(expr_op_t op, const double *x, size_t n)
{
    double acc;
    switch (op) {
    case EXPR_CONST:
    case EXPR_VAR:
        return n ? x[0] : NAN;
    case EXPR_ADD:
        if (n == 0)
            return 0.0;
        acc = x[0];
        for (size_t i = 1; i < n; i++)
            acc += x[i];
        return acc;
    case EXPR_MUL:
        if (n == 0)
            return 1.0;
        acc = x[0];
        for (size_t i = 1; i < n; i++)
            acc *= x[i];
        return acc;
    case EXPR_POW:
        return apply_pow(x[0], x[1]);
    case EXPR_SIN:
        return sin(x[0]);
    case EXPR_COS:
        return cos(x[0]);
    case EXPR_TAN:
        return tan(x[0]);
    case EXPR_ASIN:
        return asin(x[0]);
    case EXPR_ACOS:
        return acos(x[0]);
    case EXPR_GUARD:
        acc = n ? x[0] : NAN;
        for (size_t i = 1; i < n; i++)
            acc = expr_guard_apply(acc, x[i]);
        return acc;
    case EXPR_ATAN:
        return expr_keep_bad(atan(x[0]), x[0]);
    case EXPR_ATAN2:
        return expr_keep_bad(expr_keep_bad(atan2(x[0], x[1]), x[0]), x[1]);
    case EXPR_SINH:
        return sinh(x[0]);
    case EXPR_COSH:
        return cosh(x[0]);
    case EXPR_TANH:
        return expr_keep_bad(tanh(x[0]), x[0]);
    case EXPR_EXP:
        return expr_keep_bad(exp(x[0]), x[0]);
    case EXPR_LOG:
        return log(x[0]);
    case EXPR_SQRT:
        return sqrt(x[0]);
    case EXPR_ABS:
        return fabs(x[0]);
    case EXPR_SIGN:
        return apply_sign(x[0]);
    case EXPR_MIN:
        return apply_minmax(x[1] < x[0] ? x[1] : x[0], x[0], x[1]);
    case EXPR_MAX:
        return apply_minmax(x[1] > x[0] ? x[1] : x[0], x[0], x[1]);
    case EXPR_OP_COUNT:
        break;
    }
    return NAN;
}

typedef struct eval_ctx {
    const double *vars;
    double *val;
    unsigned char *done;
} eval_ctx_t;

/* Whether E's value is known: a leaf, or evaluated. */
static bool eval_known(const eval_ctx_t *c, const expr_t *e)
{
    return e->op == EXPR_CONST || e->op == EXPR_VAR || c->done[e->id];
}

static double eval_value(const eval_ctx_t *c, const expr_t *e)
{
    return e->op == EXPR_CONST ? e->value
           : e->op == EXPR_VAR ? c->vars[e->var]
                               : c->val[e->id];
}

/* The value of E (not a leaf), without recursion by the depth of the
 * graph (a chain of frames makes expressions tens of thousands of nodes
 * deep): the arguments first, in post order by an explicit stack. */
static double eval_node(eval_ctx_t *c, const expr_t *e)
{
    size_t cap = 64, top = 0;
    struct eval_frame {
        const expr_t *e;
        uint32_t next;
    } *st = expr_xmalloc(cap * sizeof *st);
    st[top++] = (struct eval_frame){e, 0};
    while (top) {
        struct eval_frame *f = &st[top - 1];
        if (f->next < f->e->nargs) {
            const expr_t *a = f->e->args[f->next++];
            if (eval_known(c, a))
                continue;
            if (top == cap) {
                cap *= 2;
                st = expr_xrealloc(st, cap * sizeof *st);
            }
            st[top++] = (struct eval_frame){a, 0};
            continue;
        }
        const expr_t *x = f->e;
        top--;
        if (c->done[x->id])
            continue;
        double local[8] = {0};
        double *v = x->nargs <= 8 ? local
                                  : expr_xmalloc(x->nargs * sizeof *v);
        for (uint32_t i = 0; i < x->nargs; i++)
            v[i] = eval_value(c, x->args[i]);
        c->val[x->id] = expr_apply(x->op, v, x->nargs);
        c->done[x->id] = 1;
        if (v != local)
            free(v);
    }
    free(st);
    return c->val[e->id];
}

double expr_eval(const expr_graph_t *g, const expr_t *e, const double *vars)
{
    if (e->op == EXPR_CONST)
        return e->value;
    if (e->op == EXPR_VAR)
        return vars[e->var];
    eval_ctx_t c = {vars, expr_xmalloc(g->count * sizeof(double)),
                    expr_xcalloc(g->count, 1)};
    double v = eval_node(&c, e);
    free(c.val);
    free(c.done);
    return v;
}
