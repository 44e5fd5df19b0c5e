/*
 * worksheet.h — S. Benenti's worksheets ("fogli di lavoro", seeds/001
 * §12) for the `worksheet` statement (LANGUAGE.md §7): the preliminary
 * sheet, the sheet of the first kind (Maggi's equations in explicit form,
 * eq. 27), of the second kind (eqs. 43–48) and the reduced sheet of the
 * second kind for a single constraint (eq. 71).
 *
 * A sheet is a list of steps numbered as in Benenti's text.  Each step
 * holds one object (a scalar, a vector, a matrix or a labelled list)
 * symbolically, as nodes of the system's graph, and numerically at the
 * current state.  The numbers a sheet ends with are the accelerations of
 * the matching equations of motion: `first` gives what `maggi` gives,
 * `second` and `second_reduced` what `second_kind` (and `multipliers`)
 * give.
 *
 * Printing: the symbols as text (rows [a, b, c], or one named entry per
 * line when a row is too wide) or LaTeX (bmatrix), then the numbers "at
 * the state"; an object too long to be read in print is shown by its
 * numbers only, and a recurring subexpression (H, det(G)) is printed by
 * name with a line saying what it stands for.
 *
 * Ownership: worksheet_build returns a sheet the caller frees with
 * worksheet_free; the sheet borrows the system (which must outlive it)
 * and owns its steps, strings, node arrays and values.  Building adds
 * nodes (derivatives, products, inverses) to the system's graph, as any
 * derivation does, but declares no variable.
 * Must not: change the system or the caller's value vector; print
 * anywhere but the FILE it is given.
 */
#ifndef NH_WORKSHEET_H
#define NH_WORKSHEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "interp/expr/expr.h"
#include "interp/mech/system.h"
#include "lang/source.h"

/* The sheets, NULL-terminated: "preliminary", "first", "second",
 * "second_reduced" (for suggestions and completion). */
extern const char *const worksheet_names[];

typedef enum worksheet_shape {
    WORKSHEET_TEXT,   /* a remark: title and note only */
    WORKSHEET_SCALAR, /* 1×1 */
    WORKSHEET_VECTOR, /* 1×cols, printed as one row [a, b, c] */
    WORKSHEET_MATRIX, /* rows×cols, one row [a, b, c] per line */
    WORKSHEET_LIST    /* rows×1, one labelled entry per line */
} worksheet_shape_t;

/* One step of a sheet.  Vectors and matrices are indexed by the
 * coordinates, constraints or speeds in declaration order, as the sheet's
 * heading lists them.  All pointers belong to the sheet. */
typedef struct worksheet_step {
    const char *number; /* "1", "2", ... as in Benenti's text; "" continues
                           the previous step; "A", "λ", ... for objects he
                           names without a number */
    const char *key;    /* a stable short name: "g", "H", "X", "D", ... */
    const char *title;  /* what the object is, with the equation */
    const char *note;   /* NULL, or a remark printed under the title */
    worksheet_shape_t shape;
    size_t rows, cols;
    const char *const *row_names; /* MATRIX: a name per row; LIST: the
                                     label printed before each entry */
    const char *const *col_names; /* VECTOR, MATRIX: a name per column */
    const char *const *row_latex; /* LIST: the labels in LaTeX */
    const expr_t *const *sym;       /* rows*cols nodes, row-major, or NULL */
    const char *sym_absent;         /* why sym is NULL (printed instead) */
    const double *val;              /* rows*cols values at the state */
} worksheet_step_t;

typedef struct worksheet worksheet_t;

/* Builds sheet WHICH of SYS at the state VARS (a full value vector:
 * parameters, q, q', z, t; it is only read).  Returns NULL with *err set
 * (span WHERE) when WHICH is unknown (the message suggests the closest
 * name) or the sheet does not apply: `first` needs speeds and a
 * kinematic equation for every coordinate, `second` at least one
 * constraint, `second_reduced` exactly one.  A singular state (g, G or H
 * not invertible) or a non-finite value is not a build error: the sheet
 * keeps the steps up to it and worksheet_print reports it. */
worksheet_t *worksheet_build(const nh_system_t *sys, const double *vars,
                             const char *which, src_span_t where,
                             diag_t *err);
void worksheet_free(worksheet_t *ws); /* accepts NULL */

size_t worksheet_count(const worksheet_t *ws);
const worksheet_step_t *worksheet_step(const worksheet_t *ws, size_t k);
/* The first step with KEY, or NULL. */
const worksheet_step_t *worksheet_find(const worksheet_t *ws,
                                       const char *key);
/* Whether the sheet stopped early at a singular state; *why (may be
 * NULL) receives the message. */
bool worksheet_stopped(const worksheet_t *ws, const char **why);

/* Prints the sheet to OUT as text or LaTeX.  Returns 0, or -1 with *err
 * set (span WHERE of the build) when the sheet stopped at a singular
 * state: the steps before it are printed all the same. */
int worksheet_print(const worksheet_t *ws, bool latex, FILE *out,
                    diag_t *err);

/* worksheet_build, worksheet_print and worksheet_free in one call: what
 * the `worksheet` statement runs. */
int worksheet_run(const nh_system_t *sys, const double *vars,
                  const char *which, bool latex, src_span_t where, FILE *out,
                  diag_t *err);

#endif
