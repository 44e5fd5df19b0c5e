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
 * Ownership: tape_compile returns a tape the caller frees with tape_free;
 * the tape does not reference the graph after compilation.  The work
 * buffer for tape_eval is the caller's (tape_work_size doubles), so one
 * tape can serve several threads or re-entrant callers.
 */
#ifndef NH_TAPE_H
#define NH_TAPE_H

#include <stddef.h>

#include "interp/expr/expr.h"

typedef struct tape tape_t;

/* Compiles OUTS[0..nout) over variables 0..nvars-1 of graph G. */
tape_t *tape_compile(const expr_graph_t *g, const expr_t *const *outs,
                     size_t nout, size_t nvars);
void tape_free(tape_t *tape); /* accepts NULL */

size_t tape_length(const tape_t *tape);    /* instructions */
size_t tape_work_size(const tape_t *tape); /* doubles tape_eval needs */
size_t tape_nout(const tape_t *tape);

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

#endif
