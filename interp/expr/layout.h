/*
 * layout.h — rows of output laid out on lines (LANGUAGE.md §7.1, v3:
 * "nothing runs off the right margin"): the width LaTeX will set a
 * formula at, and a row broken between its terms so that each line fits.
 *
 * Widths are estimates, in points, of what TeX sets in display style at
 * 10 pt with Computer Modern (the fonts of a plain `article`), made from
 * the LaTeX that print.c writes and meant to err on the wide side: a row
 * laid out to LAYOUT_LINE_PT fits the 345 pt text width of an A4 or
 * letter `article` at 10 pt (tests/latex.sh compiles every example's
 * output and fails on an overfull box).
 *
 * Ownership: strings returned are malloc'ed and owned by the caller.
 * Must not: change the graph; print to a stream.
 */
#ifndef NH_LAYOUT_H
#define NH_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/expr/expr.h"

/* The width rows are laid out to, in points: an `article`'s text width
 * at 10 pt (345 pt) less a margin for the estimate. */
#define LAYOUT_LINE_PT 335.0
/* The indent of a row's continuation lines ("&\quad + …", 10 pt after
 * the alignment point, with its operator). */
#define LAYOUT_INDENT_PT 10.0

/* The estimated width in points of the math-mode LaTeX S. */
double layout_width(const char *s);

/* The LaTeX of E, a node of G, broken into lines of at most WIDTH points
 * (the first line has FIRST points less: what precedes it on that
 * line): the lines joined by " \\\\\n&\\quad", so that the result
 * continues an align* row ("L &= " before it).  Breaks fall between the
 * top-level terms of E.  *FITS tells whether every line fits; the
 * lines are made either way. */
char *layout_latex_lines(const expr_graph_t *g, const expr_t *e,
                         double first, double width, bool *fits);
/* The same with the fractions inline (expr_to_latex_inline). */
char *layout_latex_lines_inline(const expr_graph_t *g, const expr_t *e,
                                double first, double width, bool *fits);

/* Whether E's LaTeX, broken as layout_latex_lines breaks it, fits lines
 * of WIDTH points with FIRST points taken from the first. */
bool layout_latex_fits(const expr_graph_t *g, const expr_t *e, double first,
                       double width);

/* The text of E broken after an operator into lines of about WIDTH
 * characters (each continuation line begins with INDENT), between E's
 * top-level terms: the language reads a line that ends in an operator
 * as continued, so the text still reads back (LANGUAGE.md §2). */
char *layout_text_lines(const expr_graph_t *g, const expr_t *e,
                        size_t first, size_t width, const char *indent);

/* Prose (UTF-8, a worksheet's titles: "ψ_α = [∂ψ^i/∂z^α], one row per
 * speed") as LaTeX for a math display: ASCII in \text{…} (\textbf when
 * BOLD), Greek letters and the symbols nh's texts use as math (\psi,
 * \partial), "_x" and "^x" as scripts, TeX's special characters escaped;
 * an unknown character as "?".  It compiles in pdflatex and typesets in
 * MathJax alike. */
char *layout_prose(const char *utf8, bool bold);
/* The same broken between words into lines of at most WIDTH points,
 * joined by " \\\\\n&" (rows of an align* after their first "&"). */
char *layout_prose_lines(const char *utf8, bool bold, double width);

#endif
