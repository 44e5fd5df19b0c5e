/*
 * sim.h — integrating the equations of motion with GSL's odeiv2 steppers
 * (LANGUAGE.md §6): samples, monitors (constraint residual, energy drift),
 * projection onto the constraints, and diagnostics for failures.
 *
 * A run starts from a full value vector (state, parameters, t), records a
 * sample at t0 + k·step for k = 0, 1, … and at the final time — each the
 * full value vector completed by eom_accel, so that velocities,
 * accelerations and multipliers are there for `table` — and leaves the
 * final state in the vector.  A failure (singular state, non-finite
 * value, a step the integrator cannot take) stops the run with an error
 * that gives the time, the state and the cause; the samples recorded
 * before it stay, and the value vector is left at the last of them
 * (LANGUAGE.md §6: the next run continues the same trajectory, samples
 * in increasing t), or as it was when this run recorded none.
 *
 * Events (LANGUAGE.md §6.1, sim_event_t): `until` ends the run at the
 * first time the event function changes sign, located on the
 * integrator's solution (event.h), which becomes the last sample and the
 * final state; `sample at` records the crossings instead of the grid.
 *
 * Ownership: sim_samples_t is the caller's; sim_run appends to it
 * (sim_samples_free releases it).  The eom_t and system are borrowed.
 * Must not: print, except progress on the stream given in the options;
 * change the system (deriving the constraint Jacobians adds nodes to its
 * graph, as any derivation does, but declares no variable).
 */
#ifndef NH_SIM_H
#define NH_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "interp/eom/eom.h"
#include "interp/mech/system.h"
#include "interp/base/util.h"
#include "lang/source.h"

/* The limit on recorded samples when sim_options_t.max_samples is 0. */
#define SIM_DEFAULT_MAX_SAMPLES ((size_t)1000000)
/* The memory the recorded samples may take, all runs together. */
#define SIM_MAX_SAMPLE_BYTES ((size_t)64 << 20)
/* The limit on integrator steps of one run when max_steps is 0 (about a
 * second of work for a small model): a run asked for by mistake (simulate
 * to 1e9, or towards a singular state it can only crawl to) ends with an
 * error in seconds, not hours; `set max_steps` raises it. */
#define SIM_DEFAULT_MAX_STEPS ((size_t)1000000)

/* An event of LANGUAGE.md §6.1: the times at which G changes sign (in
 * the direction DIR only, when not 0), in the order the run meets them. */
typedef struct sim_event {
    const expr_t *g;    /* EXPR − VALUE: a scalar node of the system's
                           graph, of the state, t, the parameters, and
                           what eom_accel completes */
    int dir;            /* +1 rising (− to +), −1 falling, 0 either */
    bool section;       /* `sample at`: every crossing is a sample and
                           only they are (no grid; sim_options_t.step is
                           not used); else `until`: the run ends at the
                           first crossing, after the grid's samples
                           before it */
} sim_event_t;

typedef struct sim_options {
    double t_end;           /* may lie before t (integrates backwards) */
    double step;            /* sampling interval (> 0) */
    double rtol, atol;      /* >= 0, not both 0 */
    const char *integrator; /* rk2 rk4 rkf45 rkck rk8pd msadams rk1imp
                               rk2imp rk4imp bsimp msbdf; NULL: rk8pd */
    bool project;
    FILE *progress;         /* shown only when this is a terminal; NULL:
                               never */
    size_t max_samples;     /* limit on the rows the samples may hold after
                               the run (0: SIM_DEFAULT_MAX_SAMPLES); a run
                               that would exceed it is an error before
                               anything is allocated or integrated */
    size_t max_steps;       /* limit on the integrator steps of this run
                               (0: SIM_DEFAULT_MAX_STEPS); reaching it is
                               an error with the time and the state */
    const nh_stop_t *stop;  /* looked at before every evaluation of the
                               right-hand side; when due, the run ends in
                               an error with the time and the state of
                               the last completed step (NULL: runs to the
                               end) */
    bool jacobian_differences; /* the implicit integrators' Jacobian by
                               central differences of the right-hand side
                               instead of exactly (for the benchmark that
                               compares them) */
    const sim_event_t *event; /* NULL: none */
} sim_options_t;

typedef struct sim_samples {
    size_t n, cap;
    size_t width;  /* doubles per sample: expr_graph_nvars of the system */
    double *data;  /* n rows of width */
    char *section; /* what the rows are crossings of (`sample at`, set by
                      the caller, malloc'ed), NULL for a grid: a run of
                      another kind starts the samples afresh */
} sim_samples_t;

typedef struct sim_summary {
    size_t samples;       /* recorded by this run */
    size_t steps;         /* accepted integrator steps */
    size_t evaluations;   /* right-hand-side calls (those of a
                             finite-difference Jacobian included) */
    size_t jacobians;     /* exact Jacobians (implicit integrators) */
    double max_residual;  /* max |C| along the run (position level for
                             holonomic constraints, velocity level for all),
                             after projection when it is on */
    bool energy_conserved; /* Benenti Thm 11.6 applies: drift is reported */
    double energy0;       /* E = Σ q_i' ∂L/∂q_i' − L at the start */
    double energy_drift;  /* max |E − E0| / S over the samples, with S =
                             |E0|, or Σ|q_i' ∂L/∂q_i'| + |L| at the start
                             when |E0| is below 1e-8 of that (E0 ≈ 0), or
                             1 when both vanish.  Computed in every run;
                             meaningful only when energy_conserved */
    double t_reached;     /* how far the integration came: the end, or the
                             last accepted step of a run that failed */
    /* the event (sim_options_t.event) */
    bool event_hit;       /* until: the run ended at it */
    double event_t;       /* its time */
    int event_dir;        /* how it crossed: +1 rising, −1 falling */
    size_t crossings;     /* sample at: the crossings recorded */
    size_t event_probes;  /* steps integrated again to locate them */
    bool event_failed;    /* the error is that the event function is not
                             finite (or its value vector cannot be
                             completed) at the time it gives */
} sim_summary_t;

/* Names of the integrators, NULL-terminated; sim_integrator_known says
 * whether NAME is one. */
extern const char *const sim_integrators[];
bool sim_integrator_known(const char *name);
/* Whether integrator NAME (NULL: the default) needs the Jacobian: GSL's
 * implicit steppers (eom_tangent's derivatives). */
bool sim_integrator_implicit(const char *name);

/* Integrates from VARS to opt->t_end.  SAMPLES must be empty or have
 * width expr_graph_nvars(sys->g); the first sample (at the start) is not
 * recorded again when the last row already holds that time.  Returns 0,
 * or -1 with *err set (span NONE: the caller adds the statement's place)
 * and VARS at the last sample this run recorded (summary->samples > 0)
 * or unchanged; SUMMARY (may be NULL) is filled in both cases with what
 * was done. */
int sim_run(eom_t *e, const nh_system_t *sys, double *vars,
            const sim_options_t *opt, sim_samples_t *samples,
            sim_summary_t *summary, diag_t *err);

/* The default sampling interval of a run from T0 to T_END (LANGUAGE.md
 * §6: (T − t)/1000), but no finer than the times can tell apart (`simulate
 * to 5e-324` from 0 would make it 0) and no coarser than the span. */
double sim_default_step(double t0, double t_end);

void sim_samples_free(sim_samples_t *s);
void sim_samples_clear(sim_samples_t *s); /* n = 0, no section */

/* The constraint residual max_a |C^a| at VARS (holonomic ones at position
 * level and velocity level; VARS must hold all the velocities).  Compiles
 * its tape on each call: for one-off use (sim_run prepares it once). */
double sim_residual(const nh_system_t *sys, const double *vars);

/* Pulls VARS back onto the constraints: holonomic ones at position level
 * by Newton with the least-norm correction Δq = −Jᵀ(JJᵀ)⁻¹f, J = ∂f/∂q;
 * then every constraint at velocity level by the correction of least
 * kinetic-energy norm Δq' = −M⁻¹Bᵀ(BM⁻¹Bᵀ)⁻¹C (Newton iterations for
 * nonlinear constraints).  Returns 0, or -1 with *err set when the
 * constraint Jacobian is rank-deficient or a value is not finite.
 * One-off use, as sim_residual. */
int sim_project(const nh_system_t *sys, double *vars, diag_t *err);

/* The same projection prepared once for many states (compare's random
 * states): sim_projector_new derives and compiles, sim_projector_run is
 * sim_project on VARS.  One state at a time. */
typedef struct sim_projector sim_projector_t;
sim_projector_t *sim_projector_new(const nh_system_t *sys);
int sim_projector_run(sim_projector_t *p, double *vars, diag_t *err);
void sim_projector_free(sim_projector_t *p);

#endif
