/*
 * cgen.h — the prepared equations of motion as one self-contained C99
 * file (LANGUAGE.md §8.1): what `export c` writes and what `set compile
 * = on` compiles (run/native.c).
 *
 * The text is made from the eom_t's own tapes, operation for operation
 * (tape_write_c), followed by the method's compute step written out as
 * C (the dense solves of mult.c, voronec.c, maggi.c and the fast path of
 * common.c), so that compiled without floating-point contraction it
 * gives nh's numbers bit for bit (doc/language.md states the ulps).
 *
 * The file defines, for NAME:
 *   const int NAME_nstate, NAME_nparam, NAME_ninput, NAME_nconstraint,
 *             NAME_nvalues;
 *   const char *const NAME_method;
 *   const char *const NAME_state_names[], NAME_param_names[],
 *                     NAME_input_names[], NAME_constraint_names[],
 *                     NAME_value_names[];
 *   const double NAME_param_defaults[], NAME_input_defaults[];
 * (p holds the parameters, then the inputs: LANGUAGE.md §7.2.1)
 *   void NAME_rhs(double t, const double *y, const double *p, double *dydt);
 *   int  NAME_rhs_status(double t, const double *y, const double *p,
 *                        double *dydt);
 *   void NAME_residuals(double t, const double *y, const double *p,
 *                       double *res);
 *   int  NAME_multipliers(double t, const double *y, const double *p,
 *                         double *lambda);      (methods with multipliers)
 *   int  NAME_values(double *v);
 * NAME_values works on nh's value vector (every variable of the model,
 * named by NAME_value_names): it is what eom_accel computes, and what a
 * compiled eom_t calls (eom_set_native).  The status is 0, CGEN_SINGULAR
 * or CGEN_NONFINITE.
 *
 * The derivatives of the tapes (for linearize, eigen, sweep and the
 * implicit integrators once compiled: eom_set_native_tangents) are a
 * second file, cgen_tangent_text, compiled only when they are first
 * needed (run/native.c): they take most of the compile time (the
 * bicycle's multipliers, GCC -O2: 0.6 s without them, 3.2 s with them,
 * when they were one file), and a run of `simulate` never calls them.
 * It defines
 *   const int NAME_tangent_main_work;
 *   void NAME_tangent_main(const double *v, const double *dv, long k,
 *                          double *o, double *dout, double *w, double *dw);
 * and NAME_tangent_pre, NAME_tangent_pre_work where the method has a
 * first tape (maggi); with constraints, their Jacobians as lyapunov takes
 * them at every evaluation (eom_set_native_constraints):
 *   void NAME_constraint_jacobians(const double *v, double *o);
 *   const int NAME_constraint_tangent_work;
 *   void NAME_constraint_tangent(v, dv, k, o, dout, w, dw);
 * The derivatives take several directions at once as GCC vectors (four
 * with -mavx2, which run/native.c adds where the CPU has AVX2; two with
 * SSE2), each lane the scalar arithmetic: the same numbers (tape.h).
 *
 * Ownership: cgen_text and cgen_tangent_text return a malloc'ed string
 * the caller frees.  The
 * eom_t is read, not changed (the residual tapes are compiled and freed
 * here).
 * Must not: print; write files.
 */
#ifndef NH_CGEN_H
#define NH_CGEN_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/eom/eom.h"
#include "lang/source.h"

/* The status of the generated functions. */
#define CGEN_SINGULAR 1  /* a matrix of the method is singular at the state */
#define CGEN_NONFINITE 2 /* a value is not finite */

/* The largest model written as C: the tape instructions of the text, and
 * the working memory (bytes) that one call keeps on the stack.  GCC -O2
 * takes about 0.3 ms per instruction (the 64-trailer's 22 000 in 7 s), so
 * the limit is about a minute of compiling; a thread's stack may be
 * 1 MiB (doc/limits.md). */
#define CGEN_MAX_INSTRUCTIONS ((size_t)200000)
#define CGEN_MAX_STACK ((size_t)512 << 10)

typedef struct cgen_options {
    const char *name;     /* NAME: a C identifier (cgen_name_ok) */
    const double *params; /* the parameters' default values (the model's
                             np of them), or NULL: written as 0 (the
                             compiled code takes p from its caller) */
    const double *inputs; /* the inputs' values (ni), or NULL: 0 */
    bool jacobian;        /* with the tapes' derivatives (as
                             cgen_tangent_text writes them) and
                             NAME_jacobian (cgen_jac.h): the exact
                             Jacobian of NAME_rhs (`export python`) */
    const char *version;  /* nh's version, for the head comment; NULL: none */
    size_t max_ops;       /* 0: CGEN_MAX_INSTRUCTIONS (tests set less) */
    size_t max_stack;     /* 0: CGEN_MAX_STACK */
    bool numeric_only;    /* tests: leave out the fast path of a small
                             system (the numeric path alone, as when the
                             fast path falls back) */
} cgen_options_t;

/* Whether NAME can prefix the functions: a C identifier. */
bool cgen_name_ok(const char *name);

/* NAME (SIZE bytes) from PATH: its last component without the ending EXT
 * (".c", ".py"), other characters than letters, digits and '_' made '_'
 * ("my-model.c" gives my_model).  False when that is no C name
 * (cgen_name_ok) or does not fit. */
bool cgen_name_from_path(const char *path, const char *ext, char *name,
                         size_t size);

/* The C text of E's equations, with simulate's monitors (eom.h
 * eom_monitor_tape, built on first use: E is not const).  NULL with *err
 * set (span NONE) when the model is beyond the limits above or has no
 * coordinates. */
char *cgen_text(eom_t *e, const cgen_options_t *opt, diag_t *err);

/* The C text of the derivatives of E's tapes (OPT's name, version and
 * max_ops apply); NULL with *err set as cgen_text. */
char *cgen_tangent_text(eom_t *e, const cgen_options_t *opt, diag_t *err);

#endif
