/*
 * expr.h — the expression graph: hash-consed scalar nodes, simplified on
 * construction, differentiated as a graph transformation, printed as text
 * and LaTeX, and evaluated.
 *
 * A node is identified by its address: building the same op over the same
 * children (and, for constants, the same bits; for variables, the same
 * index) returns the same node, so equality is pointer equality and common
 * subexpressions are shared.  Construction simplifies: constants fold,
 * x+0, x*1, x*0, x-x, x/x, --x vanish, like terms gather (x+x = 2*x,
 * x*x = x^2).  Subtraction and division are not ops of their own: a-b is
 * a + (-1)*b and a/b is a*b^-1; the printer shows them as - and /.
 *
 * Simplification never changes where an expression is defined (LANGUAGE.md
 * §3.4.1): when a rule drops a part that may be undefined somewhere (the
 * x^-1 of x/x, the log(y) of 0*log(y)), the result is a GUARD node that
 * keeps that part's domain: GUARD(v, d1, ..., dk) is v where every di is
 * finite and NaN elsewhere.  A guard is only ever the top of an
 * expression: v and the di hold none, and every constructor given a
 * guarded operand builds on its value and guards the result with the
 * union of the domains.  Parts that are defined for every finite input
 * (variables, sums, products, integer powers, sin, exp, ...) are dropped
 * without a guard, so x - x is 0 for a variable x.
 *
 * Variables are numbered inputs 0..nvars-1 with a name used only for
 * printing ("x", "x'", "x''", "m", "t"): this module knows nothing of
 * mechanics.  The time derivative takes the derivative of each variable
 * from the caller.
 *
 * Ownership: the graph owns every node; nodes are never freed one by one,
 * only with the graph.  Strings returned by the printers are malloc'ed and
 * owned by the caller.  Out of memory aborts (the one fatal case).
 * Must not: print, or know what a variable means.
 */
#ifndef NH_EXPR_H
#define NH_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(NAME, name, arity): every op once.  arity -1 = n-ary (ADD, MUL).
 * Function ops are named as the language spells them. */
#define EXPR_OPS(X)            \
    X(CONST, "const", 0)       \
    X(VAR, "var", 0)           \
    X(ADD, "+", -1)            \
    X(MUL, "*", -1)            \
    X(POW, "^", 2)             \
    X(GUARD, "guard", -1)      \
    X(SIN, "sin", 1)           \
    X(COS, "cos", 1)           \
    X(TAN, "tan", 1)           \
    X(ASIN, "asin", 1)         \
    X(ACOS, "acos", 1)         \
    X(ATAN, "atan", 1)         \
    X(ATAN2, "atan2", 2)       \
    X(SINH, "sinh", 1)         \
    X(COSH, "cosh", 1)         \
    X(TANH, "tanh", 1)         \
    X(EXP, "exp", 1)           \
    X(LOG, "log", 1)           \
    X(SQRT, "sqrt", 1)         \
    X(ABS, "abs", 1)           \
    X(SIGN, "sign", 1)         \
    X(MIN, "min", 2)           \
    X(MAX, "max", 2)

typedef enum expr_op {
#define EXPR_ENUM(NAME, name, arity) EXPR_##NAME,
    EXPR_OPS(EXPR_ENUM)
#undef EXPR_ENUM
    EXPR_OP_COUNT
} expr_op_t;

/* Name and arity of an op (arity -1: n-ary). */
const char *expr_op_name(expr_op_t op);
int expr_op_arity(expr_op_t op);
/* The op of a function name of LANGUAGE.md §3.4 ("sin", "atan2", ...), or
 * -1 when NAME is not one of them. */
int expr_op_lookup(const char *name);

typedef struct expr_graph expr_graph_t;

/* A node, read-only for users of the graph. */
typedef struct expr expr_t;
struct expr {
    expr_op_t op;
    uint32_t id;            /* dense: 0..expr_graph_count()-1, for memo tables */
    uint32_t hash;
    uint32_t nargs;
    double value;           /* EXPR_CONST: the double it evaluates to */
    int64_t num, den;       /* EXPR_CONST: exactly num/den (den > 0), or
                               den == 0 when it is no such fraction */
    uint32_t var;           /* EXPR_VAR */
    uint32_t height;        /* 1 for a leaf, else 1 + its tallest argument's
                               (saturating): the depth a recursion through
                               the node takes, which printers bound */
    const expr_t *const *args; /* nargs children; ADD/MUL: canonical order */
};

expr_graph_t *expr_graph_new(void);
void expr_graph_free(expr_graph_t *g); /* accepts NULL */
size_t expr_graph_count(const expr_graph_t *g); /* nodes so far */
/* Children over all nodes so far: with the nodes, the graph's size (a sum
 * of k terms is one node and k edges). */
size_t expr_graph_edges(const expr_graph_t *g);

/* A budget for expr_diff (and expr_dt, which calls it), whose canonical
 * sums of products can grow combinatorially (diff() nested forty deep):
 * once the graph has grown by more than MAX_NODES nodes or MAX_EDGES
 * edges since the call, or STOP is due (may be NULL), expr_diff makes no
 * more derivatives and answers 0 for those it had not finished, which it
 * does not memoise (those it finished are memoised, and right), and
 * expr_graph_over_budget says so: the caller discards what it got.
 * MAX_NODES = MAX_EDGES = 0 and STOP = NULL lift the budget (the
 * default).  The lowering sets it around the derivatives a statement
 * asks for; the derivations of the equations run without one. */
struct nh_stop;
void expr_graph_set_budget(expr_graph_t *g, size_t max_nodes,
                           size_t max_edges, const struct nh_stop *stop);
bool expr_graph_over_budget(const expr_graph_t *g);

/* Whether simplification keeps the domain of the parts it drops (a GUARD
 * node; the default).  Deriving equations turns it off for its duration:
 * the equations of motion, check's tests and the worksheet's steps are
 * defined where their derived formulas are, and keep the structure they
 * have without guards (a zero entry is the node 0, a pivot that cancels
 * to 0 is 0); the guards of the model's own expressions still pass
 * through every constructor.  Derivatives are memoised either way: the
 * language's diff() keeps its expression's domain itself (expr_guard).
 * Returns the setting it replaces. */
bool expr_graph_keep_domains(expr_graph_t *g, bool keep);

/* Marks G as a display graph (interp/expr/simplify.h): its printers may
 * show a double that IEEE arithmetic made of pi and small numbers
 * (3*pi/4 past the bounds of a fraction, the folded asin(-1)) as that
 * (-3*pi/4, -pi/2), whose text reads back to the same value but not
 * always to the same node.  A graph's text otherwise always reads back
 * to the very node (a constant that is exactly K*pi prints so in
 * every graph). */
void expr_graph_set_display(expr_graph_t *g);
bool expr_graph_is_display(const expr_graph_t *g);

/* ---- variables ------------------------------------------------------ */

/* Declares variable number expr_graph_nvars(g) with NAME (copied) and
 * returns its index. */
uint32_t expr_var_declare(expr_graph_t *g, const char *name);
/* Variables take their place in the canonical order of sums and products
 * by KEY (by default their number; ties by number).  A lowering that
 * declares a variable after others it must precede (a parameter declared
 * after a constraint's multiplier) gives it the key a fresh lowering
 * would, so the nodes, their printing and their evaluation order do not
 * depend on the order of declaration.  Set before the variable is used. */
void expr_var_set_order(expr_graph_t *g, uint32_t var, uint64_t key);
uint32_t expr_graph_nvars(const expr_graph_t *g);
const char *expr_var_name(const expr_graph_t *g, uint32_t var);
/* The place of a variable's factors in a printed product (LANGUAGE.md
 * §7.1: numbers, parameters, functions of coordinates, velocities,
 * accelerations): a factor prints after those of lower rank, its rank
 * being the highest of its variables' (0 for a number); factors of one
 * rank keep the canonical order.  Display only: the graph's canonical
 * forms do not depend on it.  Every variable starts at rank 0; a node
 * takes its rank when it is built, so a variable's rank is set before
 * the first node that reads it (lower.c does it as it declares them). */
void expr_var_set_rank(expr_graph_t *g, uint32_t var, unsigned rank);
unsigned expr_var_rank(const expr_graph_t *g, uint32_t var);
/* LaTeX for a variable whose name is no identifier (a display symbol
 * such as "det(g[phi, psi])"): printed as given instead of from the name;
 * copied.  NULL when none was set. */
void expr_var_set_latex(expr_graph_t *g, uint32_t var, const char *latex);
const char *expr_var_latex(const expr_graph_t *g, uint32_t var);
/* The highest rank of the variables of E (0 for a number), as of E's
 * construction; O(1). */
unsigned expr_rank(const expr_graph_t *g, const expr_t *e);

/* ---- construction (simplifying, hash-consing) ------------------------ */

const expr_t *expr_num(expr_graph_t *g, double v);
const expr_t *expr_var(expr_graph_t *g, uint32_t var);
const expr_t *expr_add(expr_graph_t *g, const expr_t *a, const expr_t *b);
const expr_t *expr_sub(expr_graph_t *g, const expr_t *a, const expr_t *b);
const expr_t *expr_mul(expr_graph_t *g, const expr_t *a, const expr_t *b);
const expr_t *expr_div(expr_graph_t *g, const expr_t *a, const expr_t *b);
const expr_t *expr_neg(expr_graph_t *g, const expr_t *a);
const expr_t *expr_pow(expr_graph_t *g, const expr_t *a, const expr_t *b);
/* A function op of arity 1 or 2 (b is ignored for arity 1).  EXPR_GUARD
 * is expr_guard(g, a, b): a guard of several atoms is rebuilt atom by
 * atom. */
const expr_t *expr_call(expr_graph_t *g, expr_op_t op, const expr_t *a,
                        const expr_t *b);
/* A long product E as the two products A·B it was first built from by
 * expr_mul, when it was built so with no factor merged: a derivative can
 * then follow the construction (d(AB) = dA·B + A·dB, with dA memoised)
 * instead of the flat product rule, which for a chain v_i = v_{i-1}·c_i
 * makes i terms of i factors at every link.  False for other nodes. */
bool expr_split(const expr_graph_t *g, const expr_t *e, const expr_t **a,
                const expr_t **b);

/* VALUE, defined only where COND is: VALUE where COND is finite, NaN
 * elsewhere (a GUARD node).  What is kept of COND is its domain: the
 * outermost parts of it that may be undefined (divisions, log, sqrt, asin,
 * acos, fractional powers), so expr_guard(g, v, c) is v itself when c is
 * defined for every finite input, or when v already holds those parts. */
const expr_t *expr_guard(expr_graph_t *g, const expr_t *value,
                         const expr_t *cond);
/* Whether evaluating V shows where the atom X (an atom of a guard) is
 * undefined: V holds X, or a power of X's base that needs as much (x^-2
 * for x^-1), found within a bounded search.  The atoms of E's domain
 * are those of expr_guard(g, expr_num(g, 0), e). */
bool expr_holds_domain(const expr_graph_t *g, const expr_t *v,
                       const expr_t *x);
/* E's value without its guard: E itself unless E is a GUARD node. */
const expr_t *expr_unguarded(const expr_t *e);
/* Whether E may be undefined for some finite values of its variables
 * (it holds a division, log, sqrt, asin, acos, a fractional power, a
 * constant that is not finite, or a guard). */
bool expr_partial(const expr_graph_t *g, const expr_t *e);

/* The sum / product of n terms (n = 0: 0 / 1). */
const expr_t *expr_sum(expr_graph_t *g, const expr_t *const *terms, size_t n);
const expr_t *expr_product(expr_graph_t *g, const expr_t *const *f, size_t n);

bool expr_is_const(const expr_t *e, double v); /* CONST with exactly v */

/* The constant num/den (reduced; den != 0).  Constants are exact
 * fractions (LANGUAGE.md §7.1): a double given to expr_num is the
 * fraction of its shortest decimal (0.4 is 2/5), sums, products and
 * integer powers of fractions fold exactly, and the node's value is the
 * double nearest the fraction; numerators and denominators stay within
 * 2^53, and a result beyond falls back to IEEE arithmetic (rational.c).
 * The same number is the same node however it was written. */
const expr_t *expr_ratio(expr_graph_t *g, int64_t num, int64_t den);
/* Whether E is a constant that is an exact fraction; its terms. */
bool expr_rational(const expr_t *e, int64_t *num, int64_t *den);

/* ---- transformations ------------------------------------------------ */

/* ∂e/∂var.  Memoised in the graph: asking again is O(1). */
const expr_t *expr_diff(expr_graph_t *g, const expr_t *e, uint32_t var);

/* Prepares the derivatives of e by every variable v with mask[v] set
 * (expr_graph_nvars entries): the long sums below e are differentiated
 * by all of them in one pass each, and later expr_diff calls find the
 * results memoised.  Worth it before asking for many of them (a whole
 * gradient); expr_dt does it itself. */
void expr_diff_prime(expr_graph_t *g, const expr_t *e, const bool *mask);

/* Total time derivative: Σ_v ∂e/∂v · dvar[v], where dvar has
 * expr_graph_nvars(g) entries and dvar[v] == NULL means v is constant in
 * time (e.g. dvar[t] = 1, dvar[x] = x', dvar[x'] = x'', dvar[m] = NULL). */
const expr_t *expr_dt(expr_graph_t *g, const expr_t *e,
                      const expr_t *const *dvar);

/* e with every variable v for which repl[v] != NULL replaced by repl[v]
 * (simultaneously). */
const expr_t *expr_subst(expr_graph_t *g, const expr_t *e,
                         const expr_t *const *repl);

/* Whether e depends on var / on any var with mask[var] set. */
bool expr_depends(const expr_graph_t *g, const expr_t *e, uint32_t var);
bool expr_depends_any(const expr_graph_t *g, const expr_t *e,
                      const bool *mask);

/* Polynomial degree of e in the variables with mask[v] set, treating the
 * others as constants; -1 when e is not a polynomial in them (e.g.
 * sin(x'), 1/x', sqrt(x')). */
int expr_degree(const expr_graph_t *g, const expr_t *e, const bool *mask);

/* ---- evaluation ----------------------------------------------------- */

/* Tree evaluation with vars[v] the value of variable v.  IEEE semantics:
 * a domain error gives NaN or ±inf, which callers check; and a value
 * that is not finite anywhere below reaches the result: where IEEE would
 * map a non-finite operand to a finite result (1/inf = 0, exp(-inf) = 0,
 * atan(inf), tanh(inf), sign(inf), min and max, pow(1, NaN) = 1,
 * pow(NaN, 0) = 1, atan2 with an infinite operand) the result is NaN, so
 * a finite result means every value computed on the way was finite
 * (LANGUAGE.md §3.4.1).  This is the reference the tape (tape.h) must
 * match bit for bit. */
double expr_eval(const expr_graph_t *g, const expr_t *e, const double *vars);
/* The scalar semantics of one op, shared by the tree and the tape
 * evaluators so they agree bit for bit.  For ADD/MUL, n operands. */
double expr_apply(expr_op_t op, const double *x, size_t n);

/* ---- printing ------------------------------------------------------- */

/* Plain text in the language's own syntax with the fewest parentheses
 * that keep the meaning; parsing it back gives the same node.  Numbers in
 * the shortest form that reads back to the same double. */
char *expr_to_text(const expr_graph_t *g, const expr_t *e);
/* LaTeX (\frac, \sin, ^{...}, primes as \dot{} / \ddot{} when the variable
 * name ends in ' / ''; Greek letter names as \theta etc.). */
char *expr_to_latex(const expr_graph_t *g, const expr_t *e);
/* Text as expr_to_text writes it, but every node for which ATOM says so
 * written as a stand-in name of three characters ("k99"): the length E
 * will print at when those nodes are named (interp/expr/where.h). */
char *expr_to_text_atoms(const expr_graph_t *g, const expr_t *e,
                         bool (*atom)(void *ctx, const expr_t *e), void *ctx);
/* E (a sum, or anything else as one term) printed as text or LaTeX and
 * cut at its top-level terms: *N pieces (malloc'ed, in a malloc'ed
 * array) whose concatenation is E's printing, each but the first
 * beginning with its sign, " + b" or " - c".  For breaking a long row
 * across lines. */
typedef enum expr_form {
    EXPR_FORM_TEXT,
    EXPR_FORM_LATEX,
    EXPR_FORM_LATEX_INLINE /* expr_to_latex_inline */
} expr_form_t;
char **expr_print_terms(const expr_graph_t *g, const expr_t *e,
                        expr_form_t form, size_t *n);
/* LaTeX with fractions inline as the text writes them (a/b, a/(b c)),
 * numbers as \tfrac{2}{5}: lines one line high, for long tables of
 * named subexpressions (interp/expr/where.h). */
char *expr_to_latex_inline(const expr_graph_t *g, const expr_t *e);
/* A name as LaTeX, as the printer writes a variable of that name (theta
 * -> \\theta, x1' -> \\dot{x}_{1}, lambda(roll_x) ->
 * \\lambda_{\\mathrm{roll\\_x}}, mass -> \\mathrm{mass}); malloc'ed. */
char *expr_latex_name(const char *name);

/* Shortest "%.17g"-style text of v that strtod reads back to v exactly
 * (e.g. 0.1, 1e-12, 2.5, -0, inf, nan).  Writes into buf (>= 32 bytes). */
const char *expr_format_number(double v, char *buf, size_t size);

#endif
