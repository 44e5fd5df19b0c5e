/*
 * lyapunov.h — the Lyapunov exponents of the reduced motion (LANGUAGE.md
 * §7.4, `lyapunov to T [step S] [VARS]`).
 *
 * The motion y' = f(y) of the chosen equations and its tangent flow in
 * the independent variables of §7.2, δx' = A(y(t)) δx with A the exact
 * Jacobian on the constraint manifold (linearize.h, lin_matrix_at at
 * every evaluation), are integrated together by one GSL stepper: a state
 * of ns + k² + 1 values, the last ∫ tr A dt.  Every S the k tangent
 * vectors are re-orthonormalised by QR (gsl_linalg_QR_decomp): the logs
 * of |R_jj| add up, and over the run they give the exponents
 * λ_j = Σ log|R_jj| / (T − t0) (Benettin, Galgani, Giorgilli & Strelcyn,
 * Meccanica 15 (1980) 9–20; the QR form of Eckmann & Ruelle, Rev. Mod.
 * Phys. 57 (1985) 617, §IV.B).  Their sum is the growth of the volume
 * the vectors span, log|det Δ(T)|/(T − t0), which Liouville's formula
 * makes the time average of the divergence tr A: computed on its own, it
 * checks the integration (doc/language.md, "Lyapunov exponents").
 *
 * Ownership: everything is borrowed; the caller's EXPONENTS has room for
 * k values.  Must not: print, except the progress line on the stream
 * given; change the system or the equations beyond what eom_accel
 * writes into the caller's value vector.
 */
#ifndef NH_LYAPUNOV_H
#define NH_LYAPUNOV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "interp/analysis/linearize.h"
#include "interp/base/util.h"
#include "interp/eom/eom.h"
#include "interp/mech/system.h"
#include "lang/source.h"

/* The integrator steps one run may take when max_steps is 0 (as
 * simulate's default, sim.h). */
#define LYAP_DEFAULT_MAX_STEPS ((size_t)1000000)

typedef struct lyap_options {
    double t_end;           /* after (or before) the state's t */
    double step;            /* re-orthonormalise every STEP (> 0) */
    double rtol, atol;
    const char *integrator; /* an explicit one: rk2 rk4 rkf45 rkck rk8pd
                               (NULL: rk8pd); the others need a Jacobian
                               of the tangent flow, a second derivative */
    const size_t *keep;     /* the variables kept, indices into lin_vars
                               (NULL: all of them, and the dependent
                               variables may be chosen anew on the way:
                               lyapunov.c) */
    size_t nkeep;
    FILE *progress;         /* shown only on a terminal; NULL: never */
    const nh_stop_t *stop;  /* looked at before every evaluation */
    size_t max_steps;       /* 0: LYAP_DEFAULT_MAX_STEPS */
} lyap_options_t;

typedef struct lyap_summary {
    size_t k;               /* exponents */
    double sum;             /* their sum */
    double divergence;      /* the time average of tr A along the run */
    size_t steps, evaluations, orthonormalisations;
    size_t charts;          /* changes of the dependent variables */
} lyap_summary_t;

/* Whether NAME (NULL: the default) is an integrator lyapunov can use. */
bool lyap_integrator_ok(const char *name);

/* The exponents of the motion from VARS (a state on the constraints, the
 * one of the last lin_choose on L, which fixed the dependent variables)
 * to OPT->t_end, in decreasing order, into EXPONENTS; VARS becomes the
 * final state, completed by eom_accel.  Returns 0, or -1 with *err set
 * (span NONE: the cause, the time and the state) and VARS unchanged: a
 * singular state or a non-finite value on the way, a step the integrator
 * cannot take, the step limit, or a stop (Ctrl-C, the time limit). */
int lyap_run(lin_t *l, eom_t *e, const nh_system_t *sys, double *vars,
             const lyap_options_t *opt, double *exponents,
             lyap_summary_t *summary, diag_t *err);

#endif
