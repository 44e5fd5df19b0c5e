/*
 * simplify.h — expressions as `show` prints them (LANGUAGE.md §7.1): the
 * shortest of several equivalent forms found by expanding, cancelling,
 * collecting, putting over a common denominator and using
 * sin(u)^2 + cos(u)^2 = 1; rows of equations with the accelerations on
 * the left; small linear systems solved symbolically.
 *
 * The display works in a graph of its own (the display graph), with the
 * variables of the graph it reads, by number, name and print rank: the
 * graph it reads gains no node and no tape changes.  Expressions enter it
 * through simp_import and are printed from it.
 *
 * Where defined.  A display form is equal to its input wherever the input
 * is defined (LANGUAGE.md §3.4.1), and says where that is: when the form
 * has lost a part of the input that may be undefined (x/x is 1, sqrt(x)^2
 * is x), the form is a GUARD node of the display graph whose atoms are
 * the conditions, and simp_format prints them: "1  (where x != 0)".
 * simp_solve's results hold where the system is regular (its matrix
 * invertible): the factors of its determinant cancel freely.
 *
 * Ownership: simp_new returns a context the caller frees with simp_free,
 * which frees the display graph and every node in it; the graph read is
 * borrowed and must outlive the context.  Strings returned are malloc'ed
 * and owned by the caller.
 * Must not: change the graph it reads; print to a stream; know what a
 * variable means beyond its rank.
 */
#ifndef NH_SIMPLIFY_H
#define NH_SIMPLIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/expr/expr.h"

typedef struct simp simp_t;

/* A display context for expressions of SRC. */
simp_t *simp_new(const expr_graph_t *src);
void simp_free(simp_t *s); /* accepts NULL */

/* The display graph: its variables are SRC's (same numbers), and nodes
 * built in it by the caller may be passed to the functions below. */
expr_graph_t *simp_graph(simp_t *s);

/* E, a node of SRC, as a node of the display graph (the same expression,
 * guards and all). */
const expr_t *simp_import(simp_t *s, const expr_t *e);

/* A symbol of the display: a new variable of the display graph named
 * NAME (text) and LATEX, at the rank of the variables in E; every later
 * simp_import of E (a node of SRC) gives the symbol instead, so a long
 * subexpression can be shown by name. */
const expr_t *simp_symbol(simp_t *s, const expr_t *e, const char *name,
                          const char *latex);

/* Makes E (a display node) an atom of the simplifications that follow:
 * they rewrite around it but not inside it, as if it were a variable —
 * for named subexpressions (where.h), whose insides are shown apart.
 * Forms found before stay valid (an atom changes the shape a form takes,
 * never its value). */
void simp_opaque(simp_t *s, const expr_t *e);

/* Whether E written out as a tree, each atom of simp_opaque one node,
 * has at most LIMIT nodes. */
bool simp_small(const simp_t *s, const expr_t *e, size_t limit);

/* In LIGHT mode the simplifications that follow multiply out no sum past
 * a few dozen terms and try no common denominator: for the many pieces
 * of one large output (where.h), each of which is short. */
void simp_light(simp_t *s, bool light);

/* Lets the next simplifications multiply out WORK more terms (the
 * context's budget, SIMP_WORK_MAX in all, is otherwise spent once):
 * for a caller that simplifies many small pieces of one large output
 * (where.h), each within a bound of its own. */
void simp_allow_work(simp_t *s, size_t work);

/* X (a display node) with the pairs of its terms that make an angle sum
 * contracted: sin a cos b + cos a sin b = sin(a + b), cos a cos b −
 * sin a sin b = cos(a + b), and the differences; X when there is none. */
const expr_t *simp_angle_sums(simp_t *s, const expr_t *x);

/* X (a display node) with the factors that several of its terms share
 * taken out, a multivariate Horner scheme (a*b*c + a*b*d + a*e =
 * a*(b*(c + d) + e)), when that prints shorter; X otherwise. */
const expr_t *simp_horner(simp_t *s, const expr_t *x);

/* The display form of D (a display node): the shortest equivalent form,
 * guarded by the conditions under which it equals D (see above). */
const expr_t *simp_simplify(simp_t *s, const expr_t *d);
/* The same, guarded by the conditions of DOM's domain instead of D's
 * (none when DOM is NULL): for D built from forms whose domain is stated
 * otherwise, such as solved accelerations put into an expression. */
const expr_t *simp_simplify_within(simp_t *s, const expr_t *d,
                                   const expr_t *dom);

/* The row L = R for the equation l = r (display nodes): l - r expanded
 * and simplified, the terms with a factor of rank SPLIT_RANK (the
 * accelerations) on the left and the others on the right, each side in its
 * shortest form (the left collected by those variables: (a + b)*x'').
 * When l is a single variable, or no term has such a variable, L and R
 * are l and r simplified.  *COND is NULL, or a GUARD node whose atoms
 * are the conditions under which the row is the equation given. */
void simp_row(simp_t *s, const expr_t *l, const expr_t *r,
              unsigned split_rank, const expr_t **L, const expr_t **R,
              const expr_t **cond);

/* Solves A x = b symbolically for the N unknowns (A row-major N×N, b N
 * entries: display nodes, polynomial in what they hold): Cramer's rule
 * with determinants expanded by minors, then each x_i simplified
 * (sin^2 + cos^2 chosen so the determinant becomes a monomial where it
 * can, common factors cancelled).  Returns 0 with X filled, or -1 when N
 * is above SIMP_SOLVE_MAX, a determinant grows beyond SIMP_MAX_TERMS
 * terms, or the determinant is identically 0 (X untouched then). */
#define SIMP_SOLVE_MAX 8
int simp_solve(simp_t *s, const expr_t *const *A, const expr_t *const *b,
               size_t n, const expr_t **x);

/* The same by Cramer's rule over the entries as atoms: each distinct
 * entry of A and b is a symbol while the system is solved, and put back
 * in the result, where it is then a shared subexpression (for a display
 * with named subexpressions, where.h: the bicycle's 3×3 system of Kane's
 * form, whose entries are too long to multiply out).  N up to
 * SIMP_SOLVE_NAMED_MAX; -1 beyond, or when the determinant is 0. */
#define SIMP_SOLVE_NAMED_MAX 4
int simp_solve_named(simp_t *s, const expr_t *const *A,
                     const expr_t *const *b, size_t n, const expr_t **x);

/* Sums larger than this are not multiplied out further (the product is
 * kept as it is), and a determinant beyond it gives up. */
#define SIMP_MAX_TERMS 4000

/* An expression larger than this written out as a tree is not printed
 * by the formatters below: "(too large to show: more than 10000 terms
 * written out)" stands in its place (doc/limits.md). */
#define SIMP_SHOW_MAX_NODES 10000
#define SIMP_SHOW_MAX_TEXT "10000"
/* LaTeX of one side of a row (or one expression) longer than this is
 * replaced by "\text{(too long to typeset: N characters of LaTeX; show
 * prints it as text)}": TeX cannot set a line wider than 16384 pt, some
 * 3000 glyphs, and an align* row is one line. */
#define SIMP_LATEX_MAX_CHARS 3000

/* D as text or LaTeX, followed by its conditions when it is guarded:
 * "1  (where x != 0)", "1 \quad (x \neq 0)". */
char *simp_format(simp_t *s, const expr_t *d, bool latex);
/* The row "L = R" (LaTeX "L &= R"), with the conditions of COND (may be
 * NULL) after it; no newline. */
char *simp_format_row(simp_t *s, const expr_t *L, const expr_t *R,
                      const expr_t *cond, bool latex);
/* The conditions of a guard (NULL or a GUARD node) alone: "" when none,
 * else "  (where x != 0, y >= 0)" or its LaTeX. */
char *simp_format_conditions(simp_t *s, const expr_t *guard, bool latex);

#endif
