/*
 * react.h — the reactions of the components of vector constraints that
 * the lowering dropped (LANGUAGE.md §4, v3): lambda(NAME[k]) of a dropped
 * component is the force along it — the normal force of a rolling
 * contact whose height the coordinates hold — found without changing the
 * equations of motion.
 *
 * The method (lower.h, lower_translated): the whole system moved by a
 * translation s, three auxiliary coordinates that are 0 on the motion.
 * Lagrange's equations for s with the multiplier rule of §5,
 *
 *     E_d = d/dt ∂L/∂s_d' − ∂L/∂s_d − Q_s_d = Σ_a λ_a ∂C_a/∂s_d'   (d = 1..3),
 *
 * the momentum balance of the whole system, hold at the model's q'' and
 * the multipliers of its rows (which the translation leaves as they
 * are), with the reactions of the dropped components as the unknowns:
 * at most three equations, solved by least squares with a rank-revealing
 * SVD.  A reaction the translation does not move, or one it moves only
 * together with another (two normal forces side by side, which the
 * momentum balance gives only as a sum), is not determined, and asking
 * for it is an error that says so.
 *
 * Ownership: react_new borrows LW, which must outlive the react_t, and
 * owns the translated lowering and its tape; react_free releases them.
 * Must not: print; change LW, or the values it is given beyond the
 * dropped components' reactions.
 */
#ifndef NH_REACT_H
#define NH_REACT_H

#include <stdbool.h>

#include "interp/mech/lower.h"

typedef struct react react_t;

/* The reactions of LW's dropped components (lower_dropped_reactions);
 * NULL with *err set (span NONE) when the translated lowering fails. */
react_t *react_new(lower_t *lw, diag_t *err);
void react_free(react_t *r); /* accepts NULL */

/* VARS: LW's value vector at a state, with q'' and the rows' multipliers
 * as `multipliers` or `second_kind` wrote them.  Writes into VARS the
 * reaction of every dropped component whose variable WANT marks (WANT
 * indexed by LW's variables; NULL: all), NaN for one not determined.
 * Returns 0, or -1 with *err set (span NONE) when one that WANT marks is
 * not determined or not finite, or when a body or particle does not move
 * as one with the translation (its position built from two moving
 * ones). */
int react_fill(react_t *r, double *vars, const bool *want, diag_t *err);

#endif
