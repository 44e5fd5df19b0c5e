/*
 * dla.h — a discrete Lagrange–d'Alembert integrator (LANGUAGE.md §6.2:
 * `integrator dla [h H]`): the variational integrator of a Lagrangian
 * system with constraints linear in the velocities, second order, at a
 * fixed step.  doc/dla.md derives the scheme and gives its references
 * and measured order.
 *
 * The step, from (q_k, q_k') on the constraints to (q_{k+1}, q_{k+1}'),
 * with the midpoint discrete Lagrangian L_d(q0, q1) = h L(m, v, t_m),
 * m = (q0 + q1)/2, v = (q1 − q0)/h, t_m = t_k + h/2:
 *
 *   p_k + D1 L_d(q_k, q_{k+1}) + (h/2) Q(m, v, t_m) = h W(q_k)ᵀ λ   (n)
 *   C(m, v, t_m) = 0  for each constraint with velocities           (r_v)
 *   f(q_{k+1}, t_{k+1}) = 0  for each holonomic one                  (r_h)
 *   p_{k+1} = D2 L_d(q_k, q_{k+1}) + (h/2) Q(m, v, t_m)
 *
 * where p = ∂L/∂q', D1 L_d = (h/2) L_q − L_q', D2 L_d = (h/2) L_q +
 * L_q' at (m, v, t_m), and the rows of W are ∂C/∂q' (∂f/∂q for a
 * holonomic one): the constraint forces act at q_k, the constraints hold
 * across the step (at the midpoint), the holonomic ones at position
 * level.  Newton's method solves for (q_{k+1}, λ) with the exact
 * Jacobian (the tapes' forward-mode derivatives, in the directions of
 * q_{k+1}: ½ on q and 1/h on q').  The velocity kept at q_{k+1} is the
 * one on the constraints whose momentum differs from p_{k+1} by a
 * constraint impulse: L_q'(q_{k+1}, q') = p_{k+1} + W(q_{k+1})ᵀ ν with
 * the constraints at velocity level — which changes nothing of the
 * positions (the impulse is absorbed by the next step's λ) and makes the
 * constraints hold at every sample to rounding.
 *
 * Ownership: dla_new borrows the system (and its graph, to which it adds
 * the derivatives' nodes); dla_free releases the tapes and buffers.
 * Must not: allocate in dla_step; print.
 */
#ifndef NH_DLA_H
#define NH_DLA_H

#include <stddef.h>

#include "interp/mech/system.h"
#include "interp/run/sim.h"
#include "lang/source.h"

typedef struct dla dla_t;

/* Prepares the scheme for SYS.  NULL with *err set (span: the
 * constraint's) when a constraint with velocities is not linear in them. */
dla_t *dla_new(const nh_system_t *sys, diag_t *err);
void dla_free(dla_t *d); /* accepts NULL */

/* One step of length H (> 0 or < 0) from the value vector VARS — q, q'
 * on the constraints, t, the parameters — which gets q, q' and t at the
 * step's end.  Returns 0, or -1 with *err set (span NONE) when Newton's
 * method does not converge or a value is not finite (VARS unchanged). */
int dla_step(dla_t *d, double *vars, double h, diag_t *err);

/* The multipliers' impulses λ of the last step (r of them; the forces
 * of the constraints are about λ, as h W(q_k)ᵀ λ is their impulse). */
const double *dla_multipliers(const dla_t *d);

/* Newton iterations of the last step (for the tests and the bench). */
size_t dla_iterations(const dla_t *d);

/* A run of the integrator from VARS to opt->t_end with steps of H (the
 * last shortened to land on t_end), samples at t0 + k·opt->step — which
 * must be a whole number of steps (doc/language.md) — completed by
 * eom_accel of E as sim_run completes its own, and the summary's
 * monitors (max |C|, the energy drift).  The contract of sim_run
 * otherwise: 0, or -1 with *err set and VARS at the last sample. */
int dla_run(eom_t *e, const nh_system_t *sys, double *vars,
            const sim_options_t *opt, double h, sim_samples_t *samples,
            sim_summary_t *summary, diag_t *err);

#endif
