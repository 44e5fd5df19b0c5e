/*
 * stability.h — the linearization at the current state as the
 * statements of LANGUAGE.md §7.2 and §7.2.1 read it: stability.c's
 * linearize and eigen, and control.c's transfer and bode, which need
 * the same A, with B, C and D.
 *
 * Ownership: stability_compute fills a stab_t whose arrays it allocates
 * and stability_free releases; SYS, ALL and DEP are borrowed from the
 * session's lowering and linearization (valid until the next statement).
 * Must not: print (the warnings are the callers').
 */
#ifndef NH_CLI_STABILITY_H
#define NH_CLI_STABILITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/cli/context.h"

/* The linearization at the current state, restricted to VARS. */
typedef struct stab {
    const nh_system_t *sys;
    size_t nfull, m;     /* all independent variables, those kept */
    const uint32_t *all; /* lin_vars */
    size_t *keep;        /* m indices into all */
    double *A;           /* m×m, the kept rows and columns */
    double scale;        /* the largest |entry| of the whole A */
    bool *feeds;         /* nfull: left out, and feeds a kept one */
    size_t nfeeds;
    double *rate;        /* nfull: the independent variables' rates */
    bool *drifts;        /* nfull: moves, and the motion depends on it */
    size_t ndrifts;
    bool time_dependent; /* lin_time_dependent */
    const uint32_t *dep;
    size_t ndep;
    /* With IO (§7.2.1): the model's ni inputs and nout outputs, and
     * B, C, D whole (Af: nfull×nfull, Bf: nfull×ni, Cf: nout×nfull, Df:
     * nout×ni) and restricted to VARS (B: m×ni, C: nout×m, D as Df). */
    bool io;
    size_t ni, nout;
    double *Af, *Bf, *Cf, *Df;
    double *B, *C, *D;
} stab_t;

/* The linearization of the chosen equations at the current state,
 * restricted to VARS[0..NVARS) (every independent variable when none),
 * with B, C and D when IO.  ST is the statement (errors are at its
 * place, or at a VARS entry's).  Returns 0, or -1 with *err set. */
int stability_compute(ctx_t *s, const ast_stmt_t *st,
                      ast_expr_t *const *vars, size_t nvars, bool io,
                      stab_t *r, diag_t *err);
void stability_free(stab_t *r);

/* The warnings of linearize and eigen at ST: A is that of an instant
 * (the equations depend on t, or the state is no equilibrium and no
 * steady motion), and left-out variables feed the kept ones. */
void stability_warn_state(ctx_t *s, const ast_stmt_t *st, const stab_t *r);
void stability_warn_feeds(ctx_t *s, const ast_stmt_t *st, const stab_t *r);

#endif
