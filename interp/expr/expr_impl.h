/*
 * expr_impl.h — internals of the expression graph, shared by the files of
 * the expression module only (expr.c, diff.c, print.c, tape.c).  Every
 * other module uses expr.h and nothing else.
 *
 * Ownership: as in expr.h; everything here belongs to the graph.
 * Must not: be included outside interp/expr/.
 */
#ifndef NH_EXPR_IMPL_H
#define NH_EXPR_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "interp/expr/expr.h"

typedef struct expr_arena_block expr_arena_block_t;
/* Ranks of nodes in the canonical order, for fast comparisons of deep
 * nodes (expr.c); NULL until the first deep comparison. */
struct expr_ranks;

/* The variables below a node, as a bit set: variable v is bit v % 64 of
 * word (v / 64) % EXPR_DEP_WORDS, exact for up to 64 * EXPR_DEP_WORDS
 * variables (a model with n coordinates has over 3n), a superset beyond. */
enum { EXPR_DEP_WORDS = 4 };
typedef struct expr_dep {
    uint64_t w[EXPR_DEP_WORDS];
} expr_dep_t;

static inline void expr_dep_add(expr_dep_t *d, uint32_t v)
{
    d->w[(v >> 6) % EXPR_DEP_WORDS] |= (uint64_t)1 << (v & 63);
}

/* Whether the sets A and B may meet (they do when the variables are few
 * enough for the sets to be exact). */
static inline int expr_dep_meets(const expr_dep_t *a, const expr_dep_t *b)
{
    uint64_t r = 0;
    for (int i = 0; i < EXPR_DEP_WORDS; i++)
        r |= a->w[i] & b->w[i];
    return r != 0;
}

/* One memoised derivative: key = node id << 32 | variable.  The
 * variable EXPR_MEMO_NEG keys the negation of a sum (sum_negate). */
typedef struct expr_memo_entry {
    uint64_t key;
    const expr_t *val;
} expr_memo_entry_t;

#define EXPR_MEMO_NEG UINT32_MAX
/* ... and EXPR_MEMO_SPLIT_A / _B the two products a long product was
 * built from (expr_split). */
#define EXPR_MEMO_SPLIT_A (UINT32_MAX - 1)
#define EXPR_MEMO_SPLIT_B (UINT32_MAX - 2)

/* The slot of KEY in a table of MASK + 1 entries: a full mix, so that the
 * ids spread over every bit of a small table (a multiplication alone left
 * the low bits to the variable: all the derivatives by one variable fell
 * into one run of the table). */
static inline size_t expr_memo_slot(uint64_t key, size_t mask)
{
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ULL;
    key ^= key >> 29;
    return (size_t)key & mask;
}

struct expr_graph {
    expr_arena_block_t *arena;  /* nodes and their child arrays */
    const expr_t **nodes;       /* by id */
    expr_dep_t *dep;            /* by id: the variables below the node */
    uint8_t *flags;             /* by id: EXPR_F_* */
    uint8_t *node_rank;         /* by id: expr_rank */
    size_t count, cap;
    const expr_t **table;       /* hash-consing, open addressing */
    size_t table_cap;           /* power of two, at least 2 * count */
    char **names;               /* variable names */
    uint64_t *var_key;          /* by variable: its place in the order */
    uint8_t *var_rank;          /* by variable: expr_var_set_rank */
    char **var_latex;           /* by variable: expr_var_set_latex, or NULL */
    uint32_t nvars, names_cap;
    expr_memo_entry_t *memo;    /* expr_diff results, open addressing */
    size_t memo_count, memo_cap;
    const expr_t *zero, *one, *minus_one;
    struct expr_ranks *ranks;
    bool no_domains;            /* expr_graph_keep_domains(g, false) */
    bool display;               /* expr_graph_set_display */
    /* prime_sums (diff.c): the variables the last priming wanted
     * (prime_want, prime_nvars entries), and by node id whether every
     * long sum below the node is primed for them (primed, primed_cap
     * entries): a later priming for the same variables skips what is
     * done (a body on a chain of frames primed the whole chain again). */
    bool *prime_want;
    uint32_t prime_nvars;
    unsigned char *primed;
    size_t primed_cap;
    /* edges so far (the children of every node) and expr_diff's budget
     * (expr_graph_set_budget): the counts when set, the limits, the
     * stop, and whether it ran out */
    size_t edges;
    size_t budget_nodes0, budget_edges0, budget_nodes, budget_edges;
    const struct nh_stop *budget_stop;
    unsigned budget_tick;
    bool budget_on, budget_over;
};

/* Whether expr_diff's budget is spent (expr_graph_set_budget); looks at
 * the stop's clock once in 64 calls. */
bool expr_budget_spent(expr_graph_t *g);

/* Node flags (expr_graph_t.flags).  EXPR_F_PARTIAL: the node may be
 * undefined for some finite values of its variables (expr_partial);
 * EXPR_F_OWN: it is so by its own op, not only through a child — a
 * division, log, sqrt, asin, acos, a power that is not a nonnegative
 * integer one of a base that is not a positive constant, a constant that
 * is not finite, a guard. */
enum { EXPR_F_PARTIAL = 1, EXPR_F_OWN = 2 };

/* The graph's memo (derivatives, negated sums): the value under KEY, or
 * NULL; and storing one. */
const expr_t *expr_memo_get(const expr_graph_t *g, uint64_t key);
void expr_memo_put(expr_graph_t *g, uint64_t key, const expr_t *val);

/* V guarded by the domain of GUARD (a GUARD node, or anything else for
 * none): what a transformation of GUARD's value gives, where it is
 * defined (the derivative of v where d is v' where d). */
const expr_t *expr_guard_same(expr_graph_t *g, const expr_t *v,
                              const expr_t *guard);

/* ---- exact numbers (rational.c) ----------------------------------------
 * A constant's number: num/den reduced, den > 0, |num| and den at most
 * 2^53, value the double nearest num/den; or den == 0 for a double that
 * is no such fraction (value alone). */
typedef struct expr_q {
    int64_t num, den;
    double value;
} expr_q_t;

/* The number of a double: exact when it is an integer within 2^53 or
 * its shortest decimal is a fraction within the bounds. */
expr_q_t expr_q_double(double v);
/* The number of a CONST node. */
expr_q_t expr_q_of(const expr_t *c);
/* a + b, a * b: exact when both are and the result stays within the
 * bounds, else IEEE on the values (read back by expr_q_double). */
expr_q_t expr_q_add(expr_q_t a, expr_q_t b);
expr_q_t expr_q_mul(expr_q_t a, expr_q_t b);
/* a^n exactly, for an exact a and an integer n with |n| <= 64 (a != 0
 * when n < 0); false when that leaves the bounds. */
bool expr_q_pow(expr_q_t a, double n, expr_q_t *out);
bool expr_q_is(expr_q_t a, int64_t num, int64_t den);
int64_t expr_q_gcd(int64_t a, int64_t b);

/* The CONST node of Q (expr.c). */
const expr_t *expr_q_node(expr_graph_t *g, expr_q_t q);

/* Allocation that aborts on failure (out of memory is fatal). */
void *expr_xmalloc(size_t n);
void *expr_xcalloc(size_t n, size_t size);
void *expr_xrealloc(void *p, size_t n);

/* The variables below E. */
static inline const expr_dep_t *expr_dep_mask(const expr_graph_t *g,
                                              const expr_t *e)
{
    return &g->dep[e->id];
}

/* True when V is an integer that fits a double exactly (|v| < 2^53). */
static inline int expr_is_int(double v)
{
    return v > -9007199254740992.0 && v < 9007199254740992.0 &&
           v == (double)(int64_t)v;
}

/* ---- the scalar semantics of the ops that can hide a non-finite value ---
 * IEEE maps some non-finite operands to finite results; these give NaN
 * there instead (LANGUAGE.md §3.4.1: a value that is not finite anywhere
 * in an expression is an error, also when a later operation would hide
 * it).  Shared by expr_apply and tape_eval so the two agree bit for bit;
 * the division forms test their operand (1/a is 0 only for a = ±inf),
 * the others their result. */

/* R = F(A) for an op F: R, or NaN when A is not finite and R is (so
 * F(A) may stay inf where IEEE says so, but never hides A). */
static inline double expr_keep_bad(double r, double a)
{
    return isfinite(a) || !isfinite(r) ? r : NAN;
}

/* x^-1 (1/a is 0 only for a = ±inf) */
static inline double expr_recip(double a)
{
    return isinf(a) ? NAN : 1 / a;
}

/* x^-2 */
static inline double expr_rsqr(double a)
{
    return isinf(a) ? NAN : 1 / (a * a);
}

/* pow(a, b) */
static inline double expr_pow_ieee(double a, double b)
{
    return expr_keep_bad(expr_keep_bad(pow(a, b), a), b);
}

/* GUARD: x[0] where every x[1..n) is finite, else NaN. */
static inline double expr_guard_apply(double v, double cond)
{
    return isfinite(cond) ? v : NAN;
}

#endif
