/*
 * display.h — a block of output rows, as `show eom`, `show accel`, `show
 * kane` print them (LANGUAGE.md §7.1): headings, rows L = R and labelled
 * objects, in text or in LaTeX, laid out so that nothing runs off the
 * right margin, and shown with named subexpressions (where.h) when a row
 * is too long for a line.
 *
 * The caller adds the items in order and takes the text at the end:
 * display_finish decides, for the block as a whole, whether it is shown
 * as it is or with `where` rows (when a row cannot be laid out on lines of
 * a page, breaking it between its terms, or is too large to write out);
 * text and LaTeX make the same decision, so they show the same names.
 *
 * Text: headings as they are, rows "L = R" one a line (with named
 * subexpressions: after the headings that precede the first row, a line
 * "where", the rows "  k1 = …" in dependency order, long ones continued
 * on lines that end in an operator, then the rows).  LaTeX: one align*
 * with the headings as comments and each row broken between terms where
 * it would be wider than a line; with named subexpressions or more than
 * a page of lines, inside a group that allows page breaks
 * (\allowdisplaybreaks), the `where` rows packed several to a line in an
 * align* of their own before the rows'.
 *
 * Ownership: the display borrows the display context S (simplify.h),
 * which must outlive it; display_finish returns a malloc'ed string and
 * frees the display.
 * Must not: print to a stream; change the source graph.
 */
#ifndef NH_DISPLAY_H
#define NH_DISPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/expr/expr.h"
#include "interp/expr/simplify.h"

typedef struct display display_t;

display_t *display_new(simp_t *s, bool latex);

/* A heading: its own line in text, a comment in LaTeX. */
void display_heading(display_t *d, const char *text);
/* The row L = R (display nodes, as simp_row makes them), with the
 * conditions COND (NULL, or a GUARD node) after it. */
void display_row(display_t *d, const expr_t *L, const expr_t *R,
                 const expr_t *cond);
/* The row LABEL = R for a named object (TEXT "F_u1", LATEX "F_{u_{1}}"),
 * R a display node in its display form, guarded by its conditions. */
void display_object(display_t *d, const char *text, const char *latex,
                    const expr_t *R);
/* Offers VAR to be set to 0 in named subexpressions when no row depends
 * on it (where_may_drop): the coordinates a model is symmetric in. */
void display_may_drop(display_t *d, uint32_t var);
/* Whether the block will be shown with named subexpressions (decided on
 * the rows added so far). */
bool display_needs_names(display_t *d);

/* The block's text; the display freed. */
char *display_finish(display_t *d);

#endif
