/*
 * tape.h — a set of output nodes compiled into a flat instruction tape.
 *
 * Compilation sorts the graph below the outputs topologically, emits one
 * instruction per node that is not a variable, and assigns work slots so
 * that a slot is reused once its last reader has run.  Evaluation is a
 * single loop over the tape: no recursion, no allocation, no hashing.
 * It uses expr_apply()'s semantics, so a tape and expr_eval() agree bit
 * for bit on every output: no operation hides a value that is not finite
 * (1/inf, exp(-inf), atan(inf), ... are NaN), and a GUARD node is a chain
 * of GUARD instructions (v where its atoms are finite, else NaN), so an
 * output is finite only if everything computed for it was.  The
 * instruction format and every opcode's arithmetic are drawn in tape.c.
 *
 * tape_write_c writes a tape as C text, operation for operation, for
 * the generated C of `export c` (eom/cgen.c): the same bits as tape_eval
 * where the C compiler neither contracts a*b + c into a fused
 * multiply-add nor evaluates in extended precision (-ffp-contract=off,
 * SSE arithmetic).
 *
 * Ownership: tape_compile returns a tape the caller frees with tape_free;
 * the tape does not reference the graph after compilation.  The work
 * buffer for tape_eval is the caller's (tape_work_size doubles), so one
 * tape can serve several threads or re-entrant callers.
 */
#ifndef NH_TAPE_H
#define NH_TAPE_H

#include <stddef.h>
#include <stdint.h>

#include "interp/base/util.h"
#include "interp/expr/expr.h"

typedef struct tape tape_t;

/* Compiles OUTS[0..nout) over variables 0..nvars-1 of graph G. */
tape_t *tape_compile(const expr_graph_t *g, const expr_t *const *outs,
                     size_t nout, size_t nvars);
void tape_free(tape_t *tape); /* accepts NULL */

size_t tape_length(const tape_t *tape);    /* instructions */
size_t tape_work_size(const tape_t *tape); /* doubles tape_eval needs */
size_t tape_nout(const tape_t *tape);
/* The variables the tape reads (*N of them, each once), in no order. */
const uint32_t *tape_inputs(const tape_t *tape, size_t *n);

/* out[k] = value of output k at VARS.  WORK has tape_work_size doubles. */
void tape_eval(const tape_t *tape, const double *vars, double *out,
               double *work);

/* Forward-mode automatic differentiation: OUT as tape_eval gives it,
 * and DOUT (nout rows of K) its derivatives in K directions, given the
 * derivatives DVARS of the variables in those directions (one row of K
 * per variable of the graph; rows of variables the tape does not read
 * are not touched).  Exact to rounding: each instruction's value is
 * computed as tape_eval computes it, and its derivative by the rule of
 * its operation (diff.c's), so DOUT agrees with the tape of the
 * expr_diff of the outputs to a few ulps.  WORK has tape_work_size
 * doubles, DWORK tape_work_size × K. */
void tape_eval_tangent(const tape_t *tape, const double *vars,
                       const double *dvars, size_t k, double *out,
                       double *dout, double *work, double *dwork);

/* Appends to B the C99 text of
 *     static void NAME(const double *v, double *o)
 * which sets o[k] to output k of the tape at the value vector v, by the
 * operations of tape_eval (in its order, but for calls of libm, which
 * come as soon as their operands are known), from libm and <math.h>
 * only.  With INPUT (by variable: the C text of its value, NULL entries
 * read v) it is
 *     static void NAME(double t, const double *y, const double *v,
 *                      double *o)
 * reading each variable from its text (say "y[3]", "t").  G (may be
 * NULL) names the variables in comments.  *HELPERS collects the helper
 * functions the text calls: write them once, before the functions, with
 * tape_write_c_helpers. */
void tape_write_c(const tape_t *tape, strbuf_t *b, const char *name,
                  const expr_graph_t *g, const char *const *input,
                  unsigned *helpers);
void tape_write_c_helpers(strbuf_t *b, unsigned helpers);

/* The frame of a tape written as one function whose outputs go where
 * the caller says: HEAD is the function's first line (its type, name and
 * parameters, which must name t, y and v as tape_write_c's do), VALUE is
 * called with CTX where output K gets its C text TEXT (a value's name, an
 * input, a literal) in place of "o[K] = TEXT;", and may write statements
 * to B there (a store, a check that returns); END writes the statements
 * before the closing brace. */
typedef struct tape_c_frame {
    const char *head;
    void (*value)(void *ctx, size_t k, const char *text, strbuf_t *b);
    void (*end)(void *ctx, strbuf_t *b);
    void *ctx;
} tape_c_frame_t;

/* Whether tape_write_c_frame can write TAPE: it is one function (a tape
 * longer than a piece is written as several). */
bool tape_write_c_fits(const tape_t *tape);

/* tape_write_c, with INPUT (not NULL), in the frame F. */
void tape_write_c_frame(const tape_t *tape, strbuf_t *b,
                        const tape_c_frame_t *f, const expr_graph_t *g,
                        const char *const *input, unsigned *helpers);

/* Appends to B the C99 text of
 *     static void NAME(const double *v, const double *dv, long k,
 *                      double *o, double *dout, double *w, double *dw)
 * which does what tape_eval_tangent does, bit for bit: the outputs O and
 * their derivatives DOUT (nout rows of K) at the value vector V, given
 * the variables' derivatives DV (a row of K per variable); W has
 * tape_c_tangent_values doubles (the directions' slots among them); DW,
 * tape_work_size × K doubles, is not used.  The text
 * takes several directions at once as GCC's vectors, four with -mavx2,
 * two with SSE2, one where neither is (or NH_NO_VECTORS is defined), with
 * the same numbers.  Long tapes are written in pieces, as tape_write_c's;
 * *HELPERS as there. */
void tape_write_c_tangent(const tape_t *tape, strbuf_t *b, const char *name,
                          unsigned *helpers);
size_t tape_c_tangent_values(const tape_t *tape);

/* V as a C99 double literal that reads back to the same bits: the
 * shortest decimal, with a point or exponent; NAN, HUGE_VAL; negative
 * numbers in parentheses, so that any operator may precede them.  BUF
 * has 48 bytes or more. */
void tape_c_literal(double v, char *buf, size_t size);

#endif
