/*
 * linearize.h — the motion of the chosen equations linearized on the
 * constraint manifold (LANGUAGE.md §7.2: `linearize`, `eigen`): the
 * matrix A of x_ind' ≈ A·δx_ind in the independent variables, with the
 * dependent ones (the coordinates the holonomic constraints determine,
 * the velocities the constraints at velocity level determine) entering
 * through implicit differentiation of the constraints; its eigenvalues
 * (GSL's gsl_eigen_nonsymmv) in the order of §7.2; and the verdict on
 * stability.
 *
 * The derivatives are exact: the equations' tapes are differentiated in
 * forward mode and their dense solves by implicit differentiation
 * (eom_tangent), the constraints' the same way (eom_velsolver_jacobians).
 * doc/stability.md says why this road and not symbolic derivatives.
 *
 * Ownership: lin_new borrows the system and the equations (which must
 * outlive the lin_t) and owns its buffers; lin_free releases them.
 * Must not: print; change the system or the equations' results beyond
 * what eom_accel writes into the caller's value vector.
 */
#ifndef NH_LINEARIZE_H
#define NH_LINEARIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/eom/eom.h"
#include "interp/mech/system.h"
#include "lang/source.h"

typedef struct lin lin_t;

lin_t *lin_new(const nh_system_t *sys, eom_t *e);
void lin_free(lin_t *l); /* accepts NULL */

/* Chooses the dependent variables at VARS (a state on the constraints):
 * the coordinates and, for the methods whose state holds every velocity
 * (lagrange, multipliers, second_kind), the velocities that `initial`
 * solves for, from how the last `initial` gave each (GIVEN_*, GUESS_*:
 * n entries each, may be NULL) — eom_velsolver_choose.  The other
 * methods' velocity states (Voronec's independent velocities, Maggi's
 * speeds) are independent already.  Returns 0, or -1 with *err set
 * (span NONE) when the constraints are not independent at VARS. */
int lin_choose(lin_t *l, const double *vars, const bool *given_q,
               const bool *guess_q, const bool *given_v,
               const bool *guess_v, diag_t *err);

/* After lin_choose: the independent variables (graph variables, in the
 * order of A's rows and columns: coordinates in declaration order, then
 * the velocities or speeds of the state), and the dependent ones. */
size_t lin_size(const lin_t *l);
const uint32_t *lin_vars(const lin_t *l);
size_t lin_dependent(const lin_t *l, const uint32_t **vars);

/* A (lin_size² doubles, row-major) at VARS, the state of the last
 * lin_choose (whose constraint Jacobians it reuses): VARS is completed
 * as eom_accel completes it.  Returns 0, or -1 with *err set as eom_accel
 * (span NONE). */
int lin_matrix(lin_t *l, double *vars, double *a, diag_t *err);

/* lin_matrix at VARS, any state on the constraints (a point of a run:
 * `lyapunov`), the constraints' Jacobians taken there, with the dependent
 * variables of the last lin_choose.  Allocates nothing (the buffers are
 * lin_choose's).  Returns as lin_matrix. */
int lin_matrix_at(lin_t *l, double *vars, double *a, diag_t *err);

/* How well the constraints determine the dependent variables at the
 * state of the last lin_matrix or lin_matrix_at: the smallest pivot of
 * their blocks of J and B relative to those matrices' size (1: no
 * dependent variables; near 0: the choice is about to fail there, as
 * y' = x' tan(th) of a sleigh whose heading turns through 90°). */
double lin_chart_quality(const lin_t *l);

/* Chooses the dependent variables anew at VARS (a state on the
 * constraints): those the constraints determine best there (QR with
 * column pivoting on J, then B), as many as before, when they are
 * determined clearly better than the current ones (four times, by
 * lin_chart_quality).  When the choice changes (*CHANGED), lin_vars
 * changes too and CHANGE (lin_size², row-
 * major) receives the new independent variables' derivatives along the
 * old ones on the manifold: a tangent vector δx_old is δx_new = CHANGE
 * δx_old.  Returns 0, or -1 with *err set (span NONE) when the
 * constraints are not independent at VARS. */
int lin_rechoose(lin_t *l, double *vars, double *change, bool *changed,
                 diag_t *err);

/* The derivatives of the motion along K directions on the manifold of
 * the constraints (steady motions and their families, steady.h): DVARS
 * holds one row of K doubles per graph variable — on entry the
 * directions' components on the independent variables (lin_vars) and on
 * parameters and t; every other row is overwritten.  The dependent
 * variables of the last lin_choose follow the constraints (implicit
 * differentiation, with the constraints' own dependence on parameters
 * and t), their Jacobians taken at VARS (which must be on the
 * constraints; it need not be lin_choose's state).  On return DVARS
 * holds the derivatives of every variable eom_accel reads or writes, and
 * RATES (lin_size × K, row-major) those of the independent variables'
 * rates; VARS is completed as eom_accel completes it.  With the unit
 * directions on the independent variables, RATES is lin_matrix's A.
 * Returns 0, or -1 with *err set (span NONE) when the constraints do not
 * determine the dependent variables there or the equations fail. */
int lin_directions(lin_t *l, double *vars, double *dvars, size_t k,
                   double *rates, diag_t *err);

/* After lin_matrix: the rates of the independent variables at VARS (as
 * lin_matrix left it), lin_size of them, into RATE. */
void lin_rates(const lin_t *l, const double *vars, double *rate);
/* Whether the equations depend on t explicitly (the Lagrangian, a force,
 * a constraint or a kinematic equation holds t): then A is that of one
 * instant, whatever the state. */
bool lin_time_dependent(const lin_t *l);

/* The eigenvalues of the n×n matrix A (not changed) into RE, IM, ordered
 * by decreasing real part, then decreasing imaginary part (a complex
 * pair: a + b i first), with real parts within LIN_AXIS_RTOL of
 * max(1, largest |A_ij|) of each other — or both that close to 0 — taken
 * as equal, so that rounding noise in them does not decide the order.
 * Returns 0, or -1 when GSL's QR iteration does not converge. */
int lin_eigen(const double *a, size_t n, double *re, double *im);

/* The verdict of §7.2 on eigenvalues RE[0..n) of a matrix whose largest
 * entry is SCALE: an eigenvalue whose real part is within LIN_AXIS_RTOL
 * of max(1, SCALE) of 0 is on the imaginary axis (the rounding of a
 * zero eigenvalue of a Jordan block — a cyclic coordinate and its
 * velocity — is of the order of √ε·SCALE). */
#define LIN_AXIS_RTOL 1e-7

typedef enum lin_verdict {
    LIN_STABLE,   /* every real part negative */
    LIN_UNSTABLE, /* some positive (ONE[k] marks them) */
    LIN_NEITHER   /* none positive, some on the axis (ONE[k] marks them) */
} lin_verdict_t;
lin_verdict_t lin_classify(const double *re, size_t n, double scale,
                           bool *one);

#endif
