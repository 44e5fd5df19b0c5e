/*
 * slips.h — likely slips in a kinetic energy or a Lagrangian, for the
 * warnings that point at its declaration (LANGUAGE.md §4: the statement
 * still takes effect).  At the declaration (slip_energy):
 *
 *   - a coordinate that appears in the kinetic energy while its velocity
 *     appears nowhere in it (I/2*th^2 written for I/2*th'^2);
 *   - an energy that is not a quadratic form in the velocities: a second
 *     derivative by velocities that still depends on a velocity
 *     (sin(x'), x'^4).
 *
 * When the equations are first evaluated (slip_indefinite), at that state:
 * a quadratic part whose matrix M = ∂²E/∂q'∂q' has a negative
 * eigenvalue — a direction of negative kinetic energy, which no method
 * reports (M stays invertible).  Not at the declaration: the model may
 * not be complete yet (particles declared after `kinetic` add to T), and
 * a singular M is no slip by itself — Euler angles are singular at
 * θ = 0, the default state, and a method that meets a singular matrix
 * says so.
 *
 * Both need M, n² second derivatives: they are made for models of up to
 * SLIP_MAX_COORDS coordinates (beyond, only the first check).
 *
 * Ownership: the caller's buffers; derivative nodes go into the system's
 * graph, as any derivation's do.  Must not: print; change the system.
 */
#ifndef NH_SLIPS_H
#define NH_SLIPS_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/mech/system.h"

#define SLIP_MAX_COORDS 64
#define SLIP_MSG_MAX 320

/* The slips of energy E of SYS, named NAME ("the kinetic energy T");
 * KINETIC: E is a kinetic energy (a Lagrangian may hold coordinates
 * without their velocities: its potential).  Writes up to MAX messages
 * into MSGS and returns how many. */
size_t slip_energy(const nh_system_t *sys, const expr_t *e, const char *name,
                   bool kinetic, char (*msgs)[SLIP_MSG_MAX], size_t max);

/* 1 when ∂²E/∂q'∂q' has a negative eigenvalue (beyond 1e-9 of its
 * largest entry) at the value vector VARS, else 0 (also when it is not
 * finite there, or the model is too large). */
int slip_indefinite(const nh_system_t *sys, const expr_t *e,
                    const double *vars);

/* 1 when ∂²E/∂q'∂q' is singular at VARS but not at a state near it (the
 * coordinates moved by 0.3 to 0.8): a singularity of the coordinates, as
 * Euler angles have at θ = 0, not of the model.  Else 0. */
int slip_singular_here(const nh_system_t *sys, const expr_t *e,
                       const double *vars);

#endif
