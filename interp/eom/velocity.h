/*
 * velocity.h — the velocities and speeds that the constraints and the
 * kinematic equations determine: LANGUAGE.md §6 `initial`, and the
 * random states of `compare`.
 *
 * Ownership: the functions borrow the system and write into the caller's
 * value vector; a velsolver owns its tape and buffers.
 * Must not: print; change the system.
 */
#ifndef NH_EOM_VELOCITY_H
#define NH_EOM_VELOCITY_H

#include <stdbool.h>

#include "interp/eom/eom.h"
#include "interp/expr/tape.h"

/* The tolerance of LANGUAGE.md §6: a constraint off by more than this,
 * relative to its scale (see eom_velsolver_violation), is violated. */
#define EOM_STATE_RTOL 1e-9

/* Velocities from the constraints (LANGUAGE.md §6 `initial`): VARS holds
 * coordinates, parameters, t and the velocities the user gave (given[i]
 * true for q_i').  The velocities not given that the constraints determine
 * are solved for (linear constraints exactly, nonlinear ones by Newton);
 * the rest stay as they are (0).  Which ones: up to r velocities not
 * given whose columns of B are independent at the state, taken from the
 * last declared coordinate backwards (the sphere: x', y').  A constraint still violated by more than
 * 1e-9 (relative) is an error naming it and its residual (span: its
 * declaration). */
int eom_solve_velocities(const nh_system_t *sys, double *vars,
                         const bool *given, diag_t *err);

/* The same solve prepared once for many states (compare's random states,
 * `initial` run again by `reset`): eom_velsolver_new derives and compiles
 * the constraint rows (and the holonomic constraints' gradients),
 * eom_velsolver_run is eom_solve_velocities on VARS with them.  The
 * solver keeps SYS and writes its own buffers: one state at a time. */
typedef struct eom_velsolver eom_velsolver_t;
eom_velsolver_t *eom_velsolver_new(const nh_system_t *sys);
int eom_velsolver_run(eom_velsolver_t *vs, double *vars, const bool *given,
                      diag_t *err);
/* eom_velsolver_run with starting guesses: GUESSED[i] (may be NULL) marks
 * a velocity not given whose value in VARS is a starting value for
 * Newton; such velocities are taken first as the ones solved for. */
int eom_velsolver_solve(eom_velsolver_t *vs, double *vars, const bool *given,
                        const bool *guessed, diag_t *err);
void eom_velsolver_free(eom_velsolver_t *vs);

/* Coordinates from the holonomic constraints f(q, t) = 0 (LANGUAGE.md §6
 * `initial`): VARS holds the coordinates given (GIVEN[i]) and the starting
 * values of the others — 0, or a guess (GUESSED[i], may be NULL: `initial
 * theta ~ 0.1`).  As many coordinates not given as the constraints
 * determine are solved for — those whose columns of J = ∂f/∂q are
 * independent, chosen as the velocities are (guessed ones first, then
 * from the last declared backwards) — by Levenberg–Marquardt
 * (Gauss–Newton steps, damped when they do not reduce |f|²) from the
 * starting values; when J has no such columns at the start (x² + y² = 1
 * at y = 0) the choice is made, and Newton started, with the unguessed
 * unknowns at 1.  Only the chosen coordinates move.  A holonomic
 * constraint still violated by more than 1e-9 (relative to Σ|∂f/∂q_i q_i|,
 * at least 1) is an error naming it and its residual (span: its
 * declaration). */
int eom_velsolver_positions(eom_velsolver_t *vs, double *vars,
                            const bool *given, const bool *guessed,
                            diag_t *err);

/* The coordinates (COORDINATES) or velocities the last
 * eom_velsolver_positions / eom_velsolver_solve solved for: their count,
 * and their indices in *WHICH (borrowed from the solver). */
size_t eom_velsolver_solved(const eom_velsolver_t *vs, bool coordinates,
                            const size_t **which);

/* How far VARS (coordinates, velocities, parameters, t) is off the
 * constraints: the largest residual over every constraint at velocity
 * level (C, or f' for a holonomic f) and the holonomic ones at position
 * level (f), each relative to its scale as above.  Each constraint off by
 * more than 1e-9 is listed in NAMES ("rod (residual 0.2), c2 (residual
 * …)"; empty when none; SIZE bytes at most). */
double eom_velsolver_violation(eom_velsolver_t *vs, const double *vars,
                               char *names, size_t size);
/* The same, one-off (derives and compiles on each call). */
double eom_constraint_violation(const nh_system_t *sys, const double *vars,
                                char *names, size_t size);

/* The constraints' derivatives at VARS: J = ∂f/∂q of the holonomic
 * ones (eom_velsolver_holonomic of them, nh×n, in declaration order),
 * Cq = ∂Ceff/∂q and B = ∂Ceff/∂q' of every constraint at velocity
 * level (r×n; Ceff is C, or f' for a holonomic f).  Exact: Cq by
 * forward-mode derivatives of the constraints' tape.  With E (may be
 * NULL) compiled (eom_set_native_constraints), its functions run instead
 * of the tapes, with the same numbers.  Allocates its buffers on its
 * first call only (kept with VS), and on the first with E compiled. */
void eom_velsolver_jacobians(eom_velsolver_t *vs, const eom_t *e,
                             const double *vars, double *J, double *Cq,
                             double *B);
/* The tapes eom_velsolver_jacobians evaluates (made on first use, owned
 * by VS): TJAC gives J then B (nh×n, r×n), TCEFF gives Ceff, whose
 * derivatives it takes along the coordinates TCEFF reads, in the order
 * of the coordinates (direction d moves the d-th of them alone), for
 * the C text of cgen.c. */
void eom_velsolver_jacobian_tapes(eom_velsolver_t *vs, const tape_t **tjac,
                                  const tape_t **tceff);
/* The constraints at VARS and, along K directions, their derivatives
 * (steady motions and their families, interp/analysis/steady.c: Newton
 * on the dependent variables, and their derivatives along a direction
 * that moves a parameter as well as the state).  DVARS has one row of K
 * doubles per variable of the graph (NULL when K is 0): the directions'
 * components on every variable the constraints read (coordinates,
 * velocities, parameters, t).
 *   positions: F (nh) the holonomic constraints' values, J (nh×n) their
 *     gradients ∂f/∂q, DF (nh×K) their derivatives along the directions;
 *   velocities: CEFF (r) every constraint at velocity level (C, or f'
 *     for a holonomic f), B (r×n) = ∂Ceff/∂q', DCEFF (r×K).
 * Any output may be NULL. */
void eom_velsolver_pos_tangent(eom_velsolver_t *vs, const double *vars,
                               const double *dvars, size_t k, double *f,
                               double *J, double *df);
void eom_velsolver_vel_tangent(eom_velsolver_t *vs, const double *vars,
                               const double *dvars, size_t k, double *ceff,
                               double *B, double *dceff);
/* The number of holonomic constraints, and the index of each among the
 * constraints (borrowed). */
size_t eom_velsolver_holonomic(const eom_velsolver_t *vs, const size_t **which);

/* The variables the constraints determine at a state (LANGUAGE.md §7.2:
 * the dependent ones of `linearize`): coordinate indices Q[0..NQ) that
 * the holonomic constraints determine, and velocity indices V[0..NV) that
 * the constraints at velocity level determine, each in declaration order.
 * The arrays have room for n entries (the caller's). */
typedef struct eom_dependent {
    size_t *q, nq;
    size_t *v, nv;
} eom_dependent_t;

/* The choice `initial` makes (eom_velsolver_positions, _solve): from the
 * last declared coordinate backwards, those not given (GIVEN_Q, GIVEN_V;
 * NULL: none given) whose columns of ∂f/∂q (of B) raise the rank, the
 * guessed ones (GUESS_Q, GUESS_V, may be NULL) first — made at VARS, and
 * completed from the given ones where the columns of those not given
 * fall short there (a pendulum whose x and y were both given).
 * VELOCITIES false: only the coordinates (the methods whose state holds
 * no dependent velocity).  Returns 0, or -1 with *err set when the
 * constraints are not independent at VARS (naming them, span NONE). */
int eom_velsolver_choose(eom_velsolver_t *vs, const double *vars,
                         const bool *given_q, const bool *guess_q,
                         const bool *given_v, const bool *guess_v,
                         bool velocities, eom_dependent_t *dep, diag_t *err);
/* The same from the Jacobians J, Cq, B at the state (as
 * eom_velsolver_jacobians gives them), for a caller that needs them too. */
int eom_velsolver_choose_from(eom_velsolver_t *vs, const double *J,
                              const double *B, const bool *given_q,
                              const bool *guess_q, const bool *given_v,
                              const bool *guess_v, bool velocities,
                              eom_dependent_t *dep, diag_t *err);

/* For a system with kinematic equations: the speeds z that give the
 * velocities already in VARS through q' = psi(q, z, t) (Gauss–Newton on
 * the equations given, in m unknowns, starting from the z in VARS; a
 * velocity without one is the constraints' to match); written into
 * VARS.  An error when no z reproduces q' within 1e-9 (relative).
 * Used by `compare` to put methods with different states on one state. */
int eom_speeds_from_velocities(const nh_system_t *sys, double *vars,
                               diag_t *err);
/* The same with the solver's tape, compiled once (`initial` in a sweep). */
int eom_velsolver_speeds(eom_velsolver_t *vs, double *vars, diag_t *err);

/* Under the methods whose state holds the velocities (all but maggi and
 * gibbs_appell) the speeds of a model with kinematic equations are no
 * part of the state: they follow from it (doc/language.md), z from q'
 * as eom_velsolver_speeds finds them, and with RATES z' from q'' — the
 * kinematic equations differentiated along the motion, q'' = Σ_j ∂ψ/∂q_j
 * q_j' + Ψ z' + ∂ψ/∂t, solved for z' by least squares over the
 * coordinates that have an equation.  VARS: a full value vector, with
 * q'' when RATES; z (and z') written into it.  0, or -1 with *err set
 * (span NONE) when no speeds reproduce the velocities, Ψ = ∂ψ/∂z is
 * singular, or no z' reproduces the accelerations. */
int eom_velsolver_speed_rates(eom_velsolver_t *vs, double *vars, bool rates,
                              diag_t *err);

#endif
