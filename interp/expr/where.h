/*
 * where.h — named subexpressions for long output (LANGUAGE.md §7.1, v3):
 * an equation or solved form too long for a line is shown with `where`
 * rows k1 = …, k2 = …, each short, in dependency order, before the rows
 * that use them, chosen so that the whole prints shortest.
 *
 * The roots (the sides of the rows to show) are nodes of a display graph
 * (simplify.h).  where_solve works on the graph they make together:
 *   1. a variable that the caller offers (a coordinate) and on which no
 *      root depends is set to 0 in them (the bicycle's yaw: its rows hold
 *      sin(psi) and cos(psi) only in combinations that cancel), when a
 *      numerical test at sample points says so (mag.h: every root minus
 *      the root at 0 vanishes to rounding, and the root at 0 is defined);
 *   2. every sum has its angle sums contracted (sin a cos b + cos a sin b
 *      = sin(a + b): frames turned twice about one axis) and the factors
 *      that several of its terms share taken out (simp_horner), so that
 *      a sum met inside another as a multiple of itself is the same node;
 *   3. nodes are named where naming shortens the whole (a node shown N
 *      times costs N times its width inline, once plus N names when
 *      named), and wherever a piece would not fit on a line: a product,
 *      power or function wider than the line names its widest parts, so
 *      every row is a sum of terms that each fit, which the layout breaks
 *      between terms (layout.h).  Widths are the LaTeX's (layout_width),
 *      so the text shows the same names.
 * Names are PREFIX1, PREFIX2, … in dependency order (the caller picks a
 * prefix that no name of the model can meet).
 *
 * Ownership: where_new borrows the display context, which must outlive
 * the where_t; where_free frees what where_new made (the symbols are
 * variables of the display graph and stay with it).
 * Must not: change the source graph; print.
 */
#ifndef NH_WHERE_H
#define NH_WHERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/expr/expr.h"
#include "interp/expr/simplify.h"

typedef struct where where_t;

where_t *where_new(simp_t *s);
void where_free(where_t *w); /* accepts NULL */

/* Offers VAR (a variable of the display graph) to be set to 0 where no
 * root depends on it (step 1 above). */
void where_may_drop(where_t *w, uint32_t var);

/* Adds a root, a display node (its guard, if any, is ignored: the
 * caller prints conditions itself); returns its index. */
size_t where_add(where_t *w, const expr_t *root);

/* Chooses the names, PREFIX followed by 1, 2, …; LINE_PT is the width
 * of a line in points, which no piece may exceed (layout.h).  Returns 0,
 * or -1 when the roots hold more than WHERE_MAX_NODES distinct
 * subexpressions (the caller says the output is too large to show). */
#define WHERE_MAX_NODES 60000
int where_solve(where_t *w, const char *prefix, double line_pt);

/* After where_solve: the number of names; name K's variable node (of the
 * display graph) and its definition in terms of the names before it;
 * root I in terms of the names. */
size_t where_count(const where_t *w);
const expr_t *where_symbol(const where_t *w, size_t k);
const expr_t *where_definition(const where_t *w, size_t k);
const expr_t *where_root(const where_t *w, size_t i);
/* How display.c lays out the `where` rows in LaTeX, which the order of
 * the names follows (where_solve fills each line with the rows that fit
 * it): the first line begins with WHERE_LEAD, rows on a line are
 * separated by WHERE_SEP, and fractions are inline (a/b,
 * expr_to_latex_inline, so that the lines stay one line high); a row
 * wider than a line is alone, broken between its terms. */
#define WHERE_LEAD "&\\text{where}\\quad "
#define WHERE_SEP ",\\; "
/* A row longer than a line starts on the rest of the line before it when
 * that is this many points or more. */
#define WHERE_LONG_START 100.0

/* The variables set to 0 (step 1), their count returned. */
size_t where_dropped(const where_t *w, const uint32_t **vars);

#endif
