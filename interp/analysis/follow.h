/*
 * follow.h — a one-parameter family of steady motions by
 * pseudo-arclength continuation (LANGUAGE.md §7.3 `follow`).
 *
 * The family's points u = (the unknowns of `steady`, λ) solve the steady
 * equations F_R(u) = 0 (steady.h), λ being NAME: a parameter, or an
 * independent variable given a value.  From a point and its unit tangent
 * t (the null vector of the scaled Jacobian [∂F_R/∂u], oriented as the
 * previous one), the next is the predictor u + h t corrected by Newton's
 * method on the bordered system
 *
 *     F_R(u) = 0,    t · (u − u_predicted) = 0
 *
 * (Keller's pseudo-arclength condition), so that the family is followed
 * round folds, where λ turns back.  The variables are scaled (each
 * unknown by the size of its value at the first point, λ by 1) so that
 * the arclength, and the step S that bounds it, is in NAME's units
 * nearly everywhere.  The step adapts: it grows after a corrector that
 * converged at once and halves after one that did not, or that turned
 * the tangent by more than FOLLOW_MAX_TURN.  Marks: a fold where t's λ
 * component changes sign, a branch point where the determinant of the
 * bordered Jacobian changes sign (another family crosses); both located
 * (secant steps on the arclength) and returned as points of their own.
 * It ends when λ leaves [A, B] (the last point at A or B exactly), when
 * the family closes on itself, after FOLLOW_MAX_POINTS points, or when
 * the stop request is raised (an error).
 *
 * Ownership: follow_new borrows the steady_t (after steady_begin, whose
 * unknowns and rows it uses) and the nodes of SPEC; follow_free releases
 * what it owns.
 * Must not: print; change the system.
 */
#ifndef NH_FOLLOW_H
#define NH_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/analysis/steady.h"
#include "interp/base/util.h"
#include "interp/expr/expr.h"

/* The points one follow returns at most (doc/limits.md). */
#define FOLLOW_MAX_POINTS 10000
/* The largest turn of the tangent in one step (its cosine). */
#define FOLLOW_MAX_TURN 0.9
/* The step may shrink to this fraction of S before the follow gives up. */
#define FOLLOW_MIN_STEP 1e-8

typedef struct follow_spec {
    uint32_t var;      /* NAME: a parameter, or a variable given (STEADY_GIVEN) */
    bool param;        /* NAME is a parameter */
    double from, to;   /* A, B */
    double step;       /* S > 0, the largest arclength step */
    /* The given variables' values as nodes of the parameters, NULL where
     * a value does not depend on NAME (nvars entries; NULL when none
     * does): when NAME is a parameter, the values written `thR' =
     * -v/rR` move with it along the family. */
    const expr_t *const *given;
    const nh_stop_t *stop; /* may be NULL */
} follow_spec_t;

/* What a point is. */
enum {
    FOLLOW_FOLD = 1,   /* λ turns back */
    FOLLOW_BRANCH = 2, /* another family crosses */
};

/* Why the family ended (after the last point). */
typedef enum follow_end {
    FOLLOW_GOING = 0,
    FOLLOW_LEFT,       /* λ reached A or B: the last point is there */
    FOLLOW_CLOSED,     /* the family came back to its first point */
    FOLLOW_LIMIT       /* FOLLOW_MAX_POINTS points */
} follow_end_t;

typedef struct follow_point {
    double lambda;
    unsigned marks;    /* FOLLOW_FOLD | FOLLOW_BRANCH */
    follow_end_t end;  /* FOLLOW_GOING but for the last point */
} follow_point_t;

typedef struct follow follow_t;

follow_t *follow_new(const nh_system_t *sys, steady_t *st,
                     const follow_spec_t *spec);
void follow_free(follow_t *f); /* accepts NULL */

/* The first point: VARS is the steady motion steady_solve found at
 * NAME = A.  Computes the tangent there (oriented towards B); fills *P.
 * Returns 0, or -1 with *err set (span NONE): the family has more than
 * one parameter there, or the equations fail. */
int follow_first(follow_t *f, const double *vars, follow_point_t *p,
                 diag_t *err);
/* The next point into VARS (nvars doubles) and *P.  Returns 1 with a
 * point, 0 when the family has ended (nothing written; the last point
 * returned said why), or -1 with *err set (span NONE): the step
 * shrank below FOLLOW_MIN_STEP · S, the equations failed, or the stop
 * request was raised. */
int follow_next(follow_t *f, double *vars, follow_point_t *p, diag_t *err);

#endif
