/*
 * event.h — the numerics of `simulate … until` and `simulate … sample at`
 * (LANGUAGE.md §6.1): the event function, an interpolant of the step just
 * taken, and the root finder that locates a change of sign in time.
 *
 * The run (sim.c) watches g = EXPR − VALUE at the end of every step; when
 * its sign changes over a step [t0, t1], the time of the change is located
 * on the integrator's own solution: event_locate drives a probe that
 * re-integrates the step from (t0, y0) to a trial time (sim.c), and
 * iterates on those probes.  The interpolant only seeds the iteration: it
 * is the Hermite interpolant of the step's ends (and of the step before,
 * when there is one) from the states and their rates, which the steppers
 * compute anyway, so that the first trial time is close enough for one
 * Newton correction to reach the tolerance (doc/language.md, "Events").
 *
 * Ownership: event_fn_new compiles its tape (freed by event_fn_free) and
 * borrows nothing after it returns; an event_interp_t owns its
 * coefficients (event_interp_free).  Nothing here allocates after the
 * constructors.
 * Must not: print; know the equations of motion (sim.c completes the
 * value vectors it evaluates on).
 */
#ifndef NH_EVENT_H
#define NH_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/mech/system.h"

/* ---- the event function ----------------------------------------------- */

typedef struct event_fn event_fn_t;

/* G (a scalar node of SYS's graph) and its total time derivative, compiled
 * into one tape over the value vector.  The state variables SV (NS of
 * them), t and the parameters are what the ODE state fills in; G reads
 * other variables — velocities the equations derive, accelerations,
 * multipliers — only on a value vector that eom_accel completed
 * (event_fn_needs_completion).  The derivative is that of LANGUAGE.md
 * §3.3 (q → q', q' → q'', z → z', t → 1); G has none when it holds an
 * acceleration or a multiplier (event_fn_has_rate false). */
event_fn_t *event_fn_new(const nh_system_t *sys, const expr_t *g,
                         const uint32_t *sv, size_t ns);
void event_fn_free(event_fn_t *f); /* accepts NULL */
bool event_fn_needs_completion(const event_fn_t *f);
bool event_fn_has_rate(const event_fn_t *f);
/* G at VARS into *G and, when DG is not NULL, its rate into *DG (NaN when
 * it has none, or on a value vector that was not completed). */
void event_fn_eval(event_fn_t *f, const double *vars, double *g, double *dg);
/* For a G that needs no completion: G at VARS and its rate along the
 * motion, ∇G·YDOT + ∂G/∂t, YDOT the rates of the state variables (what
 * the stepper computed), by forward-mode differentiation of G's tape. */
void event_fn_eval_along(event_fn_t *f, const double *vars,
                         const double *ydot, double *g, double *dg);

/* ---- the interpolant of a step ------------------------------------------ */

/* The Hermite interpolant through NODES points (2 or 3) with the states
 * and their rates there: degree 3 on two points, 5 on three.  For the
 * step [t1, t2] and the one before it, [t0, t1], the error at t in
 * [t1, t2] is y⁽⁶⁾(ξ)/6! · (t − t0)²(t − t1)²(t − t2)² (the confluent
 * Newton form of the interpolating polynomial), h⁶/5000 of y⁽⁶⁾ for equal
 * steps h; on the step alone y⁽⁴⁾(ξ)/4! (t − t1)²(t − t2)², h⁴/384. */
typedef struct event_interp {
    size_t ns;
    size_t nodes;  /* 2 or 3 */
    double z[6];   /* the node times, each twice */
    double *c;     /* ns rows of 6 divided differences */
} event_interp_t;

void event_interp_init(event_interp_t *ip, size_t ns);
void event_interp_free(event_interp_t *ip);
/* Builds it through NODES points: times T (distinct), states Y and rates
 * F (NS values each). */
void event_interp_build(event_interp_t *ip, size_t nodes, const double *t,
                        const double *const *y, const double *const *f);
/* The interpolated state at time T into Y (NS values). */
void event_interp_eval(const event_interp_t *ip, double t, double *y);

/* ---- the root finder ------------------------------------------------------ */

/* Evaluates the event function at time T: *G, and its rate *DG (NaN when
 * unknown).  Returns 0, or -1 when it cannot (the caller keeps why). */
typedef int (*event_probe_fn)(void *ctx, double t, double *g, double *dg);

typedef struct event_root {
    double t;       /* the last time probed */
    double g, dg;   /* the probe's values there */
    double newton;  /* the Newton correction −g/dg there (0 when the
                       bracket closed or g is 0, NaN without a rate) */
    size_t probes;  /* probes made */
} event_root_t;

/* Locates a zero of the probe in the bracket between TA and TB, where its
 * values GA and GB have opposite signs (neither 0), starting at GUESS
 * (when it lies strictly inside; otherwise at the regula falsi point).
 * Each probe gives a value and, when it can, a rate: the next trial is
 * the Newton point while it stays inside the bracket and its corrections
 * at least halve, else the Illinois point (regula falsi with the
 * retained end's value halved when the same end is kept twice), else the
 * midpoint — so the bracket always shrinks.  It stops when
 *   — a probe gives 0, or
 *   — the Newton correction's own error, estimated from the curvature of
 *     the last probe and the ends of the bracket, |g''/2g'|·newton² (times
 *     4), is below TOL: then the zero is t + newton to within TOL, or
 *   — the bracket is narrower than TOL: then the zero is within TOL of
 *     the last probe.
 * GTOL (>= 0) is how well the probes know g itself: once a probe gives
 * a rate dg, TOL is at least GTOL/|dg|, the time that g's uncertainty
 * leaves open (a crossing so shallow that rounding and the integrator's
 * absolute tolerance blur it is not chased below that).
 * Returns 0 with *ROOT filled, or -1 when a probe failed or MAX_PROBES
 * were spent (*ROOT then holds the last probe). */
int event_locate(event_probe_fn probe, void *ctx, double ta, double ga,
                 double tb, double gb, double guess, double tol, double gtol,
                 size_t max_probes, event_root_t *root);

/* The zero of the interpolated event function between TA and TB (values
 * GA and GB of opposite signs), by event_locate without rates to the
 * resolution of the doubles: a first trial time.  PROBE evaluates the
 * event function on the interpolant.  NaN when a probe fails. */
double event_seed(event_probe_fn probe, void *ctx, double ta, double ga,
                  double tb, double gb);

#endif
