/*
 * steady.h — steady motions (relative equilibria) of the chosen
 * equations, LANGUAGE.md §7.3 `steady`: the cyclic coordinates, the
 * steady equations and their solution by Newton's method with the exact
 * Jacobian.
 *
 * The motion on the constraint manifold, in the independent variables x
 * of §7.2 (linearize.h), is x' = F(x).  The cyclic coordinates are the
 * largest set of independent coordinates on whose values the rates of
 * the other independent variables do not depend: from the columns of
 * A = ∂F/∂x, a coordinate is cyclic when its column is zero in every row
 * but those of cyclic coordinates (steady_cyclic).  A steady motion is a
 * fixed point of the reduced motion with the cyclic rows left out,
 *
 *     F_i(x) = 0   for every independent variable i that is not a
 *                  cyclic coordinate,
 *
 * the cyclic coordinates moving at the rates the motion gives them.
 * `steady` names values (given) and unknowns (with a starting guess); the
 * independent variables it does not name are 0, the dependent ones what
 * the constraints determine.  The unknowns are solved for by Newton's
 * method on the manifold (Gauss–Newton with a line search, the steps by
 * the SVD: minimum norm, rank revealing), with the exact Jacobian
 * lin_directions gives: each iterate satisfies the holonomic and
 * velocity constraints to rounding (the dependent variables solved by
 * Newton's method on them).  The rank of the steady equations at the
 * solution says whether the unknowns are determined (a conserved energy
 * makes one equation follow from the others), or form a family.
 * doc/steady.md says why this way.
 *
 * Ownership: steady_new borrows the system, the equations, their
 * linearization and the velocity solver (which must outlive it), and
 * owns its buffers; steady_free releases them.  The report and the
 * variable lists it returns are borrowed from the steady_t.
 * Must not: print; change the system.
 */
#ifndef NH_STEADY_H
#define NH_STEADY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/analysis/linearize.h"
#include "interp/eom/eom.h"
#include "interp/eom/velocity.h"
#include "interp/mech/system.h"
#include "lang/source.h"

/* A residual of the steady equations at most this, relative to its
 * equation's scale (steady_scales), is zero: the solution is accurate to
 * about this relative to the unknowns' influence. */
#define STEADY_RTOL 1e-12
/* A singular value of the (scaled) steady equations' Jacobian below this
 * times the largest is zero: the rank that decides a family. */
#define STEADY_RANK_RTOL 1e-9
/* Newton's iterations at most. */
#define STEADY_MAX_ITER 60

/* How `steady` names a variable of the state (one byte per graph
 * variable). */
enum {
    STEADY_FREE = 0, /* not named: 0, or what the constraints determine */
    STEADY_GIVEN,    /* NAME = VALUE */
    STEADY_UNKNOWN   /* NAME ~ GUESS */
};

/* What went wrong in steady_begin or steady_solve (their return value):
 * STEADY_OK is 0. */
typedef enum steady_fault {
    STEADY_OK = 0,
    STEADY_CONSTRAINTS, /* the values named violate a constraint, or the
                           constraints cannot be solved (*err's span: the
                           constraint's declaration, as `initial`'s) */
    STEADY_DEPENDENT,   /* a named variable is one the constraints
                           determine (steady_named_dependent says which) */
    STEADY_CYCLIC,      /* an unknown is a cyclic coordinate
                           (steady_is_cyclic) */
    STEADY_FAMILY,      /* more unknowns than independent equations */
    STEADY_FEWER,       /* fewer: a residual is left */
    STEADY_SINGULAR,    /* the Jacobian is singular where Newton stopped */
    STEADY_DIVERGED,    /* no convergence */
    STEADY_EQUATIONS    /* the equations failed (a singular state, a value
                           not finite) */
} steady_fault_t;

typedef struct steady steady_t;

steady_t *steady_new(const nh_system_t *sys, eom_t *e, lin_t *l,
                     eom_velsolver_t *vs);
void steady_free(steady_t *st); /* accepts NULL */

/* The state to start from: VARS holds the parameters, t and the values
 * of the variables HOW names (given values and guesses; HOW has one entry
 * per graph variable and names only variables of the equations' state:
 * coordinates, and the velocities or speeds the state holds), the
 * others 0.  Solves the constraints for the dependent variables as
 * `initial` does (named ones are not solved for; the velocities of the
 * coordinates the holonomic constraints determine, and of coordinates
 * the model holds nowhere but in velocities — position, heading, wheel
 * angles — are the dependent velocities first), chooses the dependent
 * variables there (lin_choose), and finds the cyclic coordinates.
 * Returns STEADY_OK, or a fault with *err set (span NONE, except
 * STEADY_CONSTRAINTS). */
steady_fault_t steady_begin(steady_t *st, double *vars,
                            const unsigned char *how, diag_t *err);
/* After a STEADY_DEPENDENT fault: whether VAR is named and dependent, and
 * (NATURAL) whether it is dependent also when nothing is named — the
 * variable the user most likely meant the constraints to solve. */
bool steady_named_dependent(const steady_t *st, uint32_t var, bool *natural);
/* After steady_begin (or steady_solve): whether VAR is a cyclic
 * coordinate. */
bool steady_is_cyclic(const steady_t *st, uint32_t var);

/* Solves the steady equations for the unknowns from the state of
 * steady_begin (VARS, as it left it).  On success VARS is the steady
 * motion (the dependent variables solved, what eom_accel writes
 * written); on failure VARS is the last iterate and *err says why (span
 * NONE): the unknowns' values there, the residual, and the equation
 * that stays unsatisfied. */
steady_fault_t steady_solve(steady_t *st, double *vars, diag_t *err);

/* What steady_solve found (borrowed; valid until the next call). */
typedef struct steady_report {
    size_t nunknown;
    const uint32_t *unknown;  /* graph variables, in the order of the state */
    double residual;          /* the largest relative residual */
    size_t nequation, rank;   /* steady equations, their rank (in every
                                 variable that is not a cyclic coordinate) */
    size_t ncyclic;
    const uint32_t *cyclic;   /* the cyclic coordinates' graph variables */
    const double *rate;       /* their rates */
    const bool *constant;     /* whether each rate is constant along the
                                 motion (x' of a disk rolling on a circle
                                 is not: it turns with the heading) */
    bool equilibrium;         /* every velocity is 0 */
} steady_report_t;
const steady_report_t *steady_report(const steady_t *st);

/* The cyclic coordinates from A (N×N, row-major) of the independent
 * variables IND (lin_vars): CYCLIC[j] for each.  An entry is zero when at
 * most STEADY_RANK_RTOL times its row's largest.  The same notion decides
 * eigen's warning (stability.c). */
void steady_cyclic(const nh_system_t *sys, const uint32_t *ind, size_t n,
                   const double *a, bool *cyclic);
/* The scale of each rate (N entries) against which a residual is
 * relative: Σ_j |A_ij| max(1, |x_j|), at least 1. */
void steady_scales(const uint32_t *ind, size_t n, const double *a,
                   const double *vars, double *scale);

/* Independent velocities that are inertial components of a cyclic
 * coordinate's motion (for `check`): q_j' independent in the chart of the
 * last lin_choose (at VARS, on the constraints), q_j cyclic, and q_j'
 * entering a constraint with a coefficient that turns with a coordinate
 * that is not cyclic — a sleigh's x' in -sin(th) x' + cos(th) y' = 0.
 * On a motion that turns, such a velocity changes, so no steady motion
 * with that heading moving holds it: speeds (`kinematic x' = v*cos(th)`)
 * make the chart where it is steady.  Fills VEL (the velocity's graph
 * variable), TURN (the coordinate its coefficient holds) and CONS (the
 * constraint's index), at most MAX; returns the count, or -1 with *err
 * set (span NONE) when the motion cannot be differentiated there. */
long steady_inertial(const nh_system_t *sys, lin_t *l, double *vars,
                     uint32_t *vel, uint32_t *turn, size_t *cons, size_t max,
                     diag_t *err);

/* ---- for follow.c: the steady equations as a map of the unknowns ---- */

/* The unknowns' graph variables (in the state's order), and the rows of
 * the steady equations (the independent variables that are not cyclic
 * coordinates, as indices into lin_vars). */
size_t steady_unknowns(const steady_t *st, const uint32_t **vars);
size_t steady_rows(const steady_t *st, const size_t **rows);
/* The dependent variables solved from the constraints at VARS (Newton
 * from their values there, to rounding): 0, or -1 when it fails. */
int steady_project(steady_t *st, double *vars);
/* At VARS (on the constraints): the residuals F (steady_rows of them) and
 * their derivatives J (rows × K) along the K directions DIRS — one row of
 * K per graph variable, on the unknowns and on parameters (NULL: K is 0).
 * Returns 0, or -1 with *err set (span NONE). */
int steady_eval(steady_t *st, double *vars, const double *dirs, size_t k,
                double *f, double *jac, diag_t *err);
/* The residuals' scales at VARS (steady_rows of them), from the full A
 * there; -1 with *err when the equations fail. */
int steady_row_scales(steady_t *st, double *vars, double *scale,
                      diag_t *err);
/* The text of row I's equation ("phi'' = 0") into BUF. */
const char *steady_equation(const steady_t *st, size_t i, char *buf,
                            size_t size);

#endif
