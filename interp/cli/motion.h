/*
 * motion.h — expressions evaluated at every recorded sample: what `table`
 * and `plot` print and draw, and `animate` shows (motion.c).
 *
 * A sample row is the full value vector of the lowering that recorded
 * it, so any expression of the state, its derivatives, the multipliers
 * and the reactions is evaluated on it with one tape per statement.
 *
 * Ownership: motion_columns fills the caller's motion_columns_t, which
 * motion_columns_free empties; the items are borrowed.
 */
#ifndef NH_CLI_MOTION_H
#define NH_CLI_MOTION_H

#include "interp/cli/context.h"

/* An expression to evaluate and the shape it must have: DIM 0 a scalar,
 * 3 a 3-vector.  WHAT names it in the error when its shape differs ("the
 * centre of a disk"); NULL: a column of table or plot (a scalar). */
typedef struct motion_item {
    const ast_expr_t *e;
    unsigned dim;
    const char *what;
} motion_item_t;

/* Columns of samples.n values each: one per scalar item, one per
 * component of a vector item, in the items' order; titles[c] the
 * expression's text (a component's with [k] after it). */
typedef struct motion_columns {
    size_t n;
    char **titles;
    double **col;
} motion_columns_t;

/* ITEM lowered against LW (LOWER_QUERY), its shape checked: 0, or -1 with
 * *err set at the expression. */
int motion_lower_item(lower_t *lw, const motion_item_t *item, value_t *v,
                      diag_t *err);

/* ITEMS evaluated at every recorded sample, for the statement at SPAN:
 * 0, or -1 with *err set (no samples; a shape; an expression that needs
 * multipliers the samples' method has none of; a value that is not
 * finite, with the sample and its state). */
int motion_columns(ctx_t *s, src_span_t span, const motion_item_t *items,
                   size_t nitems, motion_columns_t *out, diag_t *err);
void motion_columns_free(motion_columns_t *c);

#endif
