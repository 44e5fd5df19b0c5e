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

/* The same solve prepared once for many states (compare's random states):
 * eom_velsolver_new derives and compiles the constraint rows,
 * eom_velsolver_run is eom_solve_velocities on VARS with them.  The
 * solver keeps SYS and writes its own buffers: one state at a time. */
typedef struct eom_velsolver eom_velsolver_t;
eom_velsolver_t *eom_velsolver_new(const nh_system_t *sys);
int eom_velsolver_run(eom_velsolver_t *vs, double *vars, const bool *given,
                      diag_t *err);
void eom_velsolver_free(eom_velsolver_t *vs);

/* For a system with kinematic equations: the speeds z that give the
 * velocities already in VARS through q' = psi(q, z, t) (Gauss–Newton on
 * the n equations in m unknowns, starting from the z in VARS); written
 * into VARS.  An error when no z reproduces q' within 1e-9 (relative).
 * Used by `compare` to put methods with different states on one state. */
int eom_speeds_from_velocities(const nh_system_t *sys, double *vars,
                               diag_t *err);

#endif
