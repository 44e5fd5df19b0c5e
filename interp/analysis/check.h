/*
 * check.h — the analysis behind the `check` statement (LANGUAGE.md §7):
 * what kind of constraint each C^a(q, q', t) = 0 of a system is, whether
 * the Pfaffian ones are integrable (holonomic in disguise), the rank of
 * B = ∂C/∂q' at the current state, the degrees of freedom, whether
 * the energy is conserved by Benenti's Theorem 11.6, and, with speeds,
 * which velocities the constraints determine for the kinematic equations
 * (doc/language.md, Kane's form).
 *
 * Every verdict is decided structurally on the expression graph when the
 * simplifier settles it (a derivative that folds to 0, a variable that
 * does not occur), and otherwise numerically at pseudo-random points near
 * the current state (coordinates, velocities, t and parameters perturbed;
 * a quantity is zero when it is below 1e-8 of the size of the terms that
 * make it).  Each verdict records which of the two decided it.  The
 * points come from a fixed seed: the same system gives the same report.
 *
 * Time and affine constraints: a linear or affine constraint
 * Σ a_i(q,t) q_i' + b(q,t) = 0 is read as the Pfaffian form
 * ω = Σ a_i dq_i + b dt on the space of (q, t) (Castellano eq. 11, with
 * a_t = b), so a time-dependent coefficient enters dω through dt ∧ dq_i
 * and an affine term is one more coefficient.  A holonomic constraint
 * f(q, t) = 0 contributes ω = df to the system's test.
 *
 * Ownership: check_analyse fills a caller-owned check_report_t whose
 * arrays it allocates; check_report_free releases them (the struct itself
 * stays the caller's).  The report borrows nothing from the system except
 * for check_format, which takes the system again for names and texts.
 * check_format returns a malloc'ed string the caller frees.  The analysis
 * adds nodes (derivatives) to the system's graph, as any derivation does,
 * but declares no variable and changes nothing else.
 * Must not: print; change the system, its values or its variables.
 */
#ifndef NH_CHECK_H
#define NH_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "interp/mech/system.h"
#include "lang/source.h"

typedef enum check_kind {
    CHECK_HOLONOMIC, /* no velocity: f(q, t) = 0 */
    CHECK_LINEAR,    /* Σ a_i(q,t) q_i' */
    CHECK_AFFINE,    /* Σ a_i(q,t) q_i' + b(q,t), b ≠ 0 */
    CHECK_NONLINEAR  /* anything else in the velocities */
} check_kind_t;

typedef enum check_tri {
    CHECK_UNKNOWN = 0, /* not decided (no valid sample point, borderline) */
    CHECK_NO,
    CHECK_YES,
    CHECK_NA           /* the question does not apply to this constraint */
} check_tri_t;

/* How a verdict was reached. */
typedef enum check_how {
    CHECK_BY_NONE = 0,
    CHECK_BY_SYMBOLIC, /* the simplified expressions settle it */
    CHECK_BY_NUMERIC   /* at check_constraint_t.points sample points */
} check_how_t;

typedef struct check_constraint {
    check_kind_t kind;
    check_how_t kind_how;    /* numeric: the kind rests on a cancellation
                              * seen only at sample points (∂²C/∂q'∂q' or
                              * b vanishing there) */
    int poly_degree;         /* expr_degree in the velocities; -1: none */
    check_tri_t homogeneous; /* C(q, s q', t) = s^k C(q, q', t), s > 0 */
    check_how_t homogeneous_how;
    double degree;           /* k, when homogeneous */
    bool time_dependent;     /* ∂C/∂t ≠ 0 */
    bool t_cancels;          /* t occurs but ∂C/∂t = 0 at every point */

    /* Pfaffian constraints only (linear, affine), else CHECK_NA: */
    check_tri_t integrable;  /* alone: dω ∧ ω = 0 */
    check_how_t integrable_how;
    check_tri_t exact;       /* dω = 0: ∂a_i/∂q_j symmetric */
    check_how_t exact_how;
    check_tri_t in_system;   /* dω ∧ ω^1 ∧ … ∧ ω^R = 0 over all the
                              * system's Pfaffian and holonomic forms */
    size_t points;           /* sample points behind the numeric verdicts */
} check_constraint_t;

typedef struct check_report {
    size_t n, r;
    check_constraint_t *c;   /* r entries, in the system's order */

    /* The system's Pfaffian forms (linear, affine, holonomic df)
     * together: integrable when dω^a ∧ Ω = 0 for every linear or affine
     * ω^a, Ω = ω^1 ∧ … ∧ ω^R.  CHECK_NA when no constraint is linear or
     * affine. */
    size_t npfaff;           /* linear + affine constraints */
    size_t nforms;           /* R: npfaff + holonomic */
    check_tri_t system_integrable;
    check_how_t system_how;
    size_t system_culprit;   /* a constraint whose dω^a ∧ Ω ≠ 0 */

    /* B at the current state (the row of a holonomic f is ∂f/∂q, the row
     * of f' = 0 that the equations use). */
    bool b_finite;
    size_t b_culprit;        /* !b_finite: a constraint whose row is not */
    size_t rank;
    bool singular;           /* rank < r */
    double sigma_max, sigma_min; /* largest, r-th singular value */
    double *dependency;      /* singular: r weights, the part of each
                              * row of B in the dependencies among the
                              * rows (norm of its component in the left
                              * null space of B; > 0: involved), else NULL */
    bool dependent_everywhere; /* singular, and so at every sample state
                              * (dependent_points of them): the constraints
                              * are not independent (LANGUAGE.md §4) */
    size_t dependent_points;
    long dof;                /* n − r */

    /* Energy E = Σ q_i' ∂L/∂q_i' − L (Benenti Thm 11.6). */
    bool energy_conserved;
    size_t force_culprit;    /* a coordinate with Q_i ≠ 0, or SIZE_MAX */
    bool forces_workless;    /* Q ≠ 0 but Σ Q_i q_i' = 0 identically */
    bool L_time_dependent;
    size_t time_culprit;     /* a time-dependent constraint, or SIZE_MAX */
    size_t inhomog_culprit;  /* a constraint not (known) homogeneous, or
                              * SIZE_MAX */

    /* With speeds declared: how maggi and gibbs_appell complete the
     * kinematic equations from the constraints (eom/kinematics.h). */
    bool kin;                /* speeds declared */
    char kin_error[DIAG_MSG_MAX]; /* why they cannot ("": they can) */
    int kin_mode;            /* eom_kin_mode_t */
    size_t kin_k;            /* velocities without a kinematic equation */
    size_t *kin_dep;         /* their coordinates (kin_k) */
    size_t *kin_rows;        /* the constraints solved for them (kin_k) */
    size_t kin_samples, kin_largest, kin_nblocks;
    size_t *kin_order, *kin_sizes; /* symbolic: the blocks, in order of
                              * solution (kin_order: indices into kin_dep) */
    size_t *kin_row_of;      /* symbolic: the constraint of each (kin_k) */
} check_report_t;

/* Analyses SYS at the full value vector VARS (current state and parameter
 * values; expr_graph_nvars(sys->g) entries, only read).  Fills *OUT
 * (zeroed first).  Returns 0, or -1 with *err set for a malformed system
 * (a NULL constraint or L); *out then holds nothing to free. */
int check_analyse(const nh_system_t *sys, const double *vars,
                  check_report_t *out, diag_t *err);

void check_report_free(check_report_t *rep); /* accepts NULL, idempotent */

/* The report as lines of text, one fact per line, each ending in '\n'
 * (malloc'ed; the caller frees). */
char *check_format(const nh_system_t *sys, const check_report_t *rep);

#endif
