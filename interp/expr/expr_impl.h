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
    size_t count, cap;
    const expr_t **table;       /* hash-consing, open addressing */
    size_t table_cap;           /* power of two, at least 2 * count */
    char **names;               /* variable names */
    uint64_t *var_key;          /* by variable: its place in the order */
    uint32_t nvars, names_cap;
    expr_memo_entry_t *memo;    /* expr_diff results, open addressing */
    size_t memo_count, memo_cap;
    const expr_t *zero, *one, *minus_one;
    struct expr_ranks *ranks;
    bool no_domains;            /* expr_graph_keep_domains(g, false) */
};

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
